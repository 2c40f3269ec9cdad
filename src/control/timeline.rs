//! A lock timeline (`RLOCKD TIMELINE`, `Server::timeline`) and the
//! application's claimed critical sections (`RLOCKD CLAIM`).
//!
//! The timeline is built from facts kept elsewhere: the lock history's
//! events and violations (one per node: [`super::history`]), the locks as
//! they are now (waiters), the topology's ledger (lost grants, failover
//! violations and the [`Marks`] test control leaves: clock moves, faults,
//! crashes, failovers, slot moves) and the claims. [`build`] turns them
//! into lanes — one per lock, each holder a bar from grant to release or
//! expiry — and [`Timeline::to_html`] draws them as one self-contained
//! HTML document (inline SVG, CSS and a small script; no external asset),
//! [`Timeline::to_json`] gives the same data for tools.
//!
//! A claim is what the application says about itself: `CLAIM ENTER` when
//! its code believes it is inside the critical section guarded by a lock,
//! `CLAIM LEAVE` when it leaves. [`Claims::violations`] compares each
//! claimed section with the history: entered without holding the lock, a
//! grant to another owner while inside, its own hold expired or released
//! while inside. Claims are read only by `CHECK` and `TIMELINE`: unused,
//! they cost nothing.
//!
//! The DOM is meant to be read by tests: every lane is `<g class="lane"
//! data-lock=… data-db=…>`, a hold `<rect class="hold" data-holder=…
//! data-client=… data-end=…>`, a claim `class="claim"`, a mark `class="mark
//! <kind>"`, a violation `class="violation"`; the script sets
//! `data-ready="1"` on `<body>` once it ran.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt::Write;

use bytes::Bytes;

use super::history::{owner, LockEvent};
use super::locks::LockView;

/// The most marks (and lost grants, and claims) kept; past it the oldest go.
pub const MAX_MARKS: usize = 10_000;

/// Something test control did at a moment, drawn on the time axis.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// Server time, unix ms.
    pub time_ms: u64,
    /// `clock`, `fault`, `crash`, `failover` or `slot`.
    pub kind: &'static str,
    /// What was done (the command, or what the failover lost).
    pub text: String,
}

/// The newest [`MAX_MARKS`] marks.
#[derive(Debug, Default, Clone)]
pub struct Marks(VecDeque<Mark>);

impl Marks {
    /// Records a mark.
    pub fn push(&mut self, time_ms: u64, kind: &'static str, text: String) {
        // The recording of the run, when on, has the same marks.
        super::record::mark(time_ms, kind, &text);
        if self.0.len() >= MAX_MARKS {
            self.0.pop_front();
        }
        self.0.push_back(Mark { time_ms, kind, text });
    }

    /// The marks, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Mark> {
        self.0.iter()
    }
}

/// One claimed critical section.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    pub db: usize,
    /// The lock's key.
    pub key: Bytes,
    /// The holder as the lock's script writes it.
    pub holder: Bytes,
    /// The client that sent `CLAIM ENTER`.
    pub client: u64,
    /// When it entered and left (unix ms; `None`: still inside).
    pub enter_ms: u64,
    pub leave_ms: Option<u64>,
    /// The history's newest event id at entry and exit: the events between
    /// happened inside.
    enter_id: u64,
    leave_id: Option<u64>,
    /// The lock's holders when it entered (empty: the lock was free).
    holders_at_enter: Vec<Bytes>,
}

impl Claim {
    /// The history's newest event id when it entered and when it left:
    /// where the claim falls among the node's events.
    pub fn event_ids(&self) -> (u64, Option<u64>) {
        (self.enter_id, self.leave_id)
    }
}

/// A violation placed on the timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub time_ms: u64,
    pub db: usize,
    pub key: Bytes,
    /// The explanation, as `RLOCKD CHECK` gives it.
    pub text: String,
}

/// The claims of one node, the newest [`MAX_MARKS`].
#[derive(Debug, Default)]
pub struct Claims(VecDeque<Claim>);

impl Claims {
    /// `CLAIM ENTER`: `holders` are the lock's holders now.
    #[allow(clippy::too_many_arguments)]
    pub fn enter(
        &mut self,
        db: usize,
        key: Bytes,
        holder: Bytes,
        client: u64,
        now_ms: u64,
        last_id: u64,
        holders: Vec<Bytes>,
    ) {
        if self.0.len() >= MAX_MARKS {
            self.0.pop_front();
        }
        self.0.push_back(Claim {
            db,
            key,
            holder,
            client,
            enter_ms: now_ms,
            leave_ms: None,
            enter_id: last_id,
            leave_id: None,
            holders_at_enter: holders,
        });
    }

    /// `CLAIM LEAVE`: closes the newest open claim of `holder` on the lock;
    /// false if there is none.
    pub fn leave(&mut self, db: usize, key: &[u8], holder: &[u8], now_ms: u64, last_id: u64) -> bool {
        let open =
            self.0.iter_mut().rev().find(|c| c.leave_ms.is_none() && c.db == db && c.key == key && c.holder == holder);
        match open {
            Some(c) => {
                c.leave_ms = Some(now_ms);
                c.leave_id = Some(last_id);
                true
            }
            None => false,
        }
    }

    /// True when no claim was made.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The claims, oldest first.
    pub fn iter(&self) -> impl Iterator<Item = &Claim> {
        self.0.iter()
    }

    /// Forgets every claim (`RLOCKD CHECK RESET`).
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// The claimed sections that were unsafe, judged by `events` (this
    /// node's history, oldest first): entered without holding the lock,
    /// another owner granted the lock while inside, its own hold expired
    /// or released while inside.
    pub fn violations(&self, events: &[LockEvent]) -> Vec<Violation> {
        let mut out = Vec::new();
        if self.0.is_empty() {
            return out;
        }
        let mut by_lock: HashMap<(usize, &[u8]), Vec<&LockEvent>> = HashMap::new();
        for e in events {
            by_lock.entry((e.db, &e.key[..])).or_default().push(e);
        }
        for c in &self.0 {
            let name = format!("db{} {}", c.db, lossy(&c.key));
            let who = lossy(&c.holder);
            if !c.holders_at_enter.iter().any(|h| owner(h) == owner(&c.holder)) {
                let now = if c.holders_at_enter.is_empty() {
                    "the lock was free".to_string()
                } else {
                    format!("held by {}", c.holders_at_enter.iter().map(|h| lossy(h)).collect::<Vec<_>>().join(", "))
                };
                out.push(Violation {
                    time_ms: c.enter_ms,
                    db: c.db,
                    key: c.key.clone(),
                    text: format!(
                        "{name}: {who} claimed its critical section at {} without holding the lock ({now})",
                        c.enter_ms
                    ),
                });
            }
            let Some(evs) = by_lock.get(&(c.db, &c.key[..])) else { continue };
            let start = evs.partition_point(|e| e.id <= c.enter_id);
            let inside = evs[start..].iter().take_while(|e| c.leave_id.is_none_or(|l| e.id <= l));
            let exclusive = |other: &[u8]| !other.is_empty();
            for e in inside {
                let mine = owner(&e.holder) == owner(&c.holder);
                let text = match e.event {
                    "acquired" if !mine && exclusive(&e.holder) && conflicts(e.kind, &e.holder, &c.holder) => format!(
                        "{name}: {who}'s claimed critical section (entered at {}) overlaps a grant to {} at {} (client {}, {})",
                        c.enter_ms,
                        lossy(&e.holder),
                        e.time_ms,
                        e.client,
                        e.command
                    ),
                    "expired" if mine => format!(
                        "{name}: {who}'s claimed critical section (entered at {}) outlived its lease: the lock expired at {} while it was inside",
                        c.enter_ms, e.time_ms
                    ),
                    "released" if mine => format!(
                        "{name}: {who}'s claimed critical section (entered at {}) outlived its hold: released at {} while it was inside",
                        c.enter_ms, e.time_ms
                    ),
                    _ => continue,
                };
                out.push(Violation { time_ms: e.time_ms, db: c.db, key: c.key.clone(), text });
            }
        }
        out
    }
}

/// Whether a grant of `kind` to `other` excludes `claimer`: always but
/// between two readers of a read-write lock, and between permits of a
/// semaphore.
fn conflicts(kind: &str, other: &[u8], claimer: &[u8]) -> bool {
    match kind {
        "read-write" => other.ends_with(b":write") || claimer.ends_with(b":write"),
        "counter" | "zset-semaphore" => false,
        _ => true,
    }
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// What one node contributes to a timeline.
#[derive(Debug, Default)]
pub struct NodeFacts {
    pub events: Vec<LockEvent>,
    pub violations: Vec<Violation>,
    pub claims: Vec<Claim>,
    pub locks: Vec<LockView>,
    /// Connected clients: id, name, `CLIENT SETINFO` library.
    pub clients: Vec<ClientInfo>,
}

/// A client as the timeline names it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientInfo {
    pub id: u64,
    pub name: String,
    /// `lib-name lib-ver` (empty when not set).
    pub lib: String,
}

/// What the topology shares: its marks, lost grants and the violations
/// of its ledger.
#[derive(Debug, Default)]
pub struct TopologyFacts {
    pub marks: Vec<Mark>,
    pub lost: Vec<LostHold>,
    pub violations: Vec<Violation>,
}

/// A grant a failover lost: held by its client on the old primary, the
/// new primary never heard of it.
#[derive(Debug, Clone, PartialEq)]
pub struct LostHold {
    pub db: usize,
    pub key: Bytes,
    pub holder: Bytes,
    /// The client that acquired it on the old primary (0: unknown).
    pub client: u64,
    /// When it was granted (or, unknown, when it was lost), unix ms.
    pub start_ms: u64,
    /// When its lease ends (`None`: no lease).
    pub until_ms: Option<u64>,
    /// When the failover lost it, unix ms.
    pub lost_ms: u64,
}

/// Which part of the history a timeline shows.
#[derive(Debug, Clone, Default)]
pub struct Range {
    /// Only locks whose key matches this glob pattern.
    pub pattern: Option<Bytes>,
    /// From and to (unix ms, server time); default: the first fact, now.
    pub from_ms: Option<u64>,
    /// See `from_ms`.
    pub to_ms: Option<u64>,
}

/// One holder's hold of a lock.
#[derive(Debug, Clone, PartialEq)]
pub struct Hold {
    pub holder: Bytes,
    /// The client whose command granted it (0: unknown).
    pub client: u64,
    pub start_ms: u64,
    pub end_ms: u64,
    /// `released`, `expired`, `held` (still at the end of the range) or
    /// `lost` (a grant a failover lost, held by its client on the old
    /// primary until its lease ends).
    pub end: &'static str,
    /// The hold count from each change on (re-entry depth).
    pub depth: Vec<(u64, i64)>,
    /// When it was renewed.
    pub renewals: Vec<u64>,
}

/// One lock's lane.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    pub db: usize,
    pub key: Bytes,
    pub kind: &'static str,
    pub holds: Vec<Hold>,
    pub claims: Vec<Claim>,
    /// Waiting now (a fair lock's queue), in order.
    pub waiters: Vec<Bytes>,
    /// The violations of this lock.
    pub violations: Vec<Violation>,
}

/// A whole timeline.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    /// The time shown, unix ms (server time).
    pub from_ms: u64,
    /// See `from_ms`.
    pub to_ms: u64,
    /// One per lock, by database and key.
    pub lanes: Vec<Lane>,
    /// What test control did, oldest first.
    pub marks: Vec<Mark>,
    /// Every violation (also each in its lane).
    pub violations: Vec<Violation>,
    /// The clients connected when it was made, by id.
    pub clients: Vec<ClientInfo>,
    /// How many events it was built from.
    pub events: usize,
}

/// Builds the timeline of `nodes` (every node's facts: a cluster's
/// primaries, or the one node) and their topology at `now_ms`.
pub fn build(nodes: Vec<NodeFacts>, topo: TopologyFacts, range: &Range, now_ms: u64) -> Timeline {
    let wanted = |key: &[u8]| range.pattern.as_deref().is_none_or(|p| crate::glob::matches(p, key, false));
    let mut events: Vec<LockEvent> = Vec::new();
    let mut violations: Vec<Violation> = topo.violations;
    let mut claims: Vec<Claim> = Vec::new();
    let mut locks: Vec<LockView> = Vec::new();
    let mut clients: BTreeMap<u64, ClientInfo> = BTreeMap::new();
    for n in nodes {
        events.extend(n.events.into_iter().filter(|e| wanted(&e.key)));
        violations.extend(n.violations);
        claims.extend(n.claims.into_iter().filter(|c| wanted(&c.key)));
        locks.extend(n.locks.into_iter().filter(|l| wanted(&l.key)));
        for c in n.clients {
            clients.insert(c.id, c);
        }
    }
    violations.retain(|v| wanted(&v.key));
    events.sort_by_key(|e| e.time_ms);
    let first = events
        .iter()
        .map(|e| e.time_ms)
        .chain(claims.iter().map(|c| c.enter_ms))
        .chain(topo.marks.iter().map(|m| m.time_ms))
        .chain(topo.lost.iter().map(|g| g.start_ms))
        .min()
        .unwrap_or(now_ms);
    let from_ms = range.from_ms.unwrap_or(first);
    let to_ms = range.to_ms.unwrap_or(now_ms).max(from_ms);
    let mut lanes: BTreeMap<(usize, Bytes), Lane> = BTreeMap::new();
    fn lane<'a>(
        lanes: &'a mut BTreeMap<(usize, Bytes), Lane>,
        db: usize,
        key: &Bytes,
        kind: &'static str,
    ) -> &'a mut Lane {
        let l = lanes.entry((db, key.clone())).or_insert_with(|| Lane {
            db,
            key: key.clone(),
            kind,
            holds: Vec::new(),
            claims: Vec::new(),
            waiters: Vec::new(),
            violations: Vec::new(),
        });
        if l.kind.is_empty() {
            l.kind = kind;
        }
        l
    }
    // Holds, from the events: the open hold of each holder per lock.
    let mut open: HashMap<(usize, Bytes, Bytes), usize> = HashMap::new();
    let n_events = events.len();
    for e in events.into_iter().filter(|e| e.time_ms <= to_ms) {
        let l = lane(&mut lanes, e.db, &e.key, e.kind);
        if e.event == "counter" {
            continue;
        }
        let slot = (e.db, e.key.clone(), e.holder.clone());
        let index = match (open.get(&slot), e.event) {
            (Some(&i), "acquired") => {
                // Acquired again without a release seen: the old one ends.
                l.holds[i].end_ms = e.time_ms;
                l.holds[i].end = "released";
                None
            }
            (Some(&i), _) => Some(i),
            (None, _) => None,
        };
        let i = match index {
            Some(i) => i,
            None => {
                let start = if e.event == "acquired" { e.time_ms } else { from_ms.min(e.time_ms) };
                l.holds.push(Hold {
                    holder: e.holder.clone(),
                    client: e.client,
                    start_ms: start,
                    end_ms: to_ms,
                    end: "held",
                    depth: vec![(start, e.count.max(1))],
                    renewals: Vec::new(),
                });
                open.insert(slot.clone(), l.holds.len() - 1);
                if e.event == "acquired" {
                    continue;
                }
                l.holds.len() - 1
            }
        };
        let h = &mut l.holds[i];
        match e.event {
            "reentered" => h.depth.push((e.time_ms, e.count)),
            "renewed" => h.renewals.push(e.time_ms),
            // A reentrant lock released once of several: the depth falls.
            "released" if e.count > 0 => h.depth.push((e.time_ms, e.count)),
            "released" | "expired" => {
                h.end_ms = e.time_ms;
                h.end = e.event;
                open.remove(&slot);
            }
            _ => {}
        }
    }
    for g in &topo.lost {
        if !wanted(&g.key) {
            continue;
        }
        let (start, client) = (g.start_ms, g.client);
        let l = lane(&mut lanes, g.db, &g.key, "");
        l.holds.push(Hold {
            holder: g.holder.clone(),
            client,
            start_ms: start,
            end_ms: g.until_ms.unwrap_or(to_ms).min(to_ms).max(start),
            end: "lost",
            depth: vec![(start, 1)],
            renewals: Vec::new(),
        });
    }
    for c in claims {
        lane(&mut lanes, c.db, &c.key, "").claims.push(c);
    }
    for lv in locks {
        lane(&mut lanes, lv.db, &lv.key, lv.kind).waiters = lv.waiters.into_iter().map(|w| w.id).collect();
    }
    violations.sort_by_key(|v| v.time_ms);
    for v in &violations {
        lane(&mut lanes, v.db, &v.key, "").violations.push(v.clone());
    }
    let in_range = |s: u64, e: u64| e >= from_ms && s <= to_ms;
    let mut lanes: Vec<Lane> = lanes.into_values().collect();
    for l in &mut lanes {
        l.holds.retain(|h| in_range(h.start_ms, h.end_ms));
        l.holds.sort_by_key(|h| h.start_ms);
        l.claims.retain(|c| in_range(c.enter_ms, c.leave_ms.unwrap_or(to_ms)));
        if l.kind.is_empty() {
            l.kind = "lock";
        }
    }
    let mut marks: Vec<Mark> = topo.marks.into_iter().filter(|m| in_range(m.time_ms, m.time_ms)).collect();
    // The same move sent to each node of a topology (a front end moves
    // every node's clock) is one mark.
    marks.dedup();
    Timeline { from_ms, to_ms, lanes, marks, violations, clients: clients.into_values().collect(), events: n_events }
}

/// HTML text (`&`, `<`, `>`, quotes escaped), for both text and attributes.
fn esc(out: &mut String, s: &str) {
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if (c as u32) < 0x20 && c != '\n' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
}

fn esc_b(out: &mut String, b: &[u8]) {
    esc(out, &lossy(b));
}

/// A JSON string.
fn json_str(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A byte string as a JSON string (`\"`, `\\`, `\uXXXX`), lossily as UTF-8;
/// EDN reads the same escapes.
pub(super) fn json_b(out: &mut String, b: &[u8]) {
    json_str(out, &lossy(b));
}

fn json_opt(out: &mut String, v: Option<u64>) {
    match v {
        Some(v) => {
            let _ = write!(out, "{v}");
        }
        None => out.push_str("null"),
    }
}

/// The width of the plot, in SVG units.
const PLOT_W: f64 = 1200.0;
/// The width of the lock names' column.
const LABEL_W: f64 = 240.0;
/// The height of one row of holds.
const ROW_H: f64 = 18.0;
/// The height of the axis above the lanes.
const AXIS_H: f64 = 34.0;

impl Timeline {
    fn client(&self, id: u64) -> Option<&ClientInfo> {
        self.clients.binary_search_by_key(&id, |c| c.id).ok().map(|i| &self.clients[i])
    }

    fn x(&self, t: u64) -> f64 {
        let span = (self.to_ms - self.from_ms).max(1) as f64;
        LABEL_W + (t.clamp(self.from_ms, self.to_ms) - self.from_ms) as f64 * PLOT_W / span
    }

    /// The data as JSON: `from_ms`, `to_ms`, `lanes` (each with `holds`,
    /// `claims`, `waiters`, `violations`), `marks`, `violations`, `clients`.
    pub fn to_json(&self) -> String {
        let mut o = String::with_capacity(256 + self.events * 96);
        let _ =
            write!(o, "{{\"from_ms\":{},\"to_ms\":{},\"events\":{},\"lanes\":[", self.from_ms, self.to_ms, self.events);
        for (i, l) in self.lanes.iter().enumerate() {
            if i > 0 {
                o.push(',');
            }
            let _ = write!(o, "{{\"db\":{},\"key\":", l.db);
            json_b(&mut o, &l.key);
            o.push_str(",\"kind\":");
            json_str(&mut o, l.kind);
            o.push_str(",\"holds\":[");
            for (j, h) in l.holds.iter().enumerate() {
                if j > 0 {
                    o.push(',');
                }
                o.push_str("{\"holder\":");
                json_b(&mut o, &h.holder);
                let _ = write!(
                    o,
                    ",\"client\":{},\"start_ms\":{},\"end_ms\":{},\"end\":\"{}\",\"depth\":[",
                    h.client, h.start_ms, h.end_ms, h.end
                );
                for (k, (t, d)) in h.depth.iter().enumerate() {
                    let _ = write!(o, "{}[{t},{d}]", if k > 0 { "," } else { "" });
                }
                o.push_str("],\"renewals\":[");
                for (k, t) in h.renewals.iter().enumerate() {
                    let _ = write!(o, "{}{t}", if k > 0 { "," } else { "" });
                }
                o.push_str("]}");
            }
            o.push_str("],\"claims\":[");
            for (j, c) in l.claims.iter().enumerate() {
                if j > 0 {
                    o.push(',');
                }
                o.push_str("{\"holder\":");
                json_b(&mut o, &c.holder);
                let _ = write!(o, ",\"client\":{},\"enter_ms\":{},\"leave_ms\":", c.client, c.enter_ms);
                json_opt(&mut o, c.leave_ms);
                o.push('}');
            }
            o.push_str("],\"waiters\":[");
            for (j, w) in l.waiters.iter().enumerate() {
                if j > 0 {
                    o.push(',');
                }
                json_b(&mut o, w);
            }
            o.push_str("],\"violations\":");
            violations_json(&mut o, &l.violations);
            o.push('}');
        }
        o.push_str("],\"marks\":[");
        for (i, m) in self.marks.iter().enumerate() {
            let _ = write!(
                o,
                "{}{{\"time_ms\":{},\"kind\":\"{}\",\"text\":",
                if i > 0 { "," } else { "" },
                m.time_ms,
                m.kind
            );
            json_str(&mut o, &m.text);
            o.push('}');
        }
        o.push_str("],\"violations\":");
        violations_json(&mut o, &self.violations);
        o.push_str(",\"clients\":[");
        for (i, c) in self.clients.iter().enumerate() {
            let _ = write!(o, "{}{{\"id\":{},\"name\":", if i > 0 { "," } else { "" }, c.id);
            json_str(&mut o, &c.name);
            o.push_str(",\"lib\":");
            json_str(&mut o, &c.lib);
            o.push('}');
        }
        o.push_str("]}");
        o
    }

    /// The timeline as one self-contained HTML document (see the module docs).
    pub fn to_html(&self) -> String {
        // Rows: each lane stacks its holds so that overlapping ones show
        // side by side (first free row), then a row of claims, then its
        // waiters' line.
        struct Placed {
            rows: Vec<usize>,
            n_rows: usize,
            y: f64,
            h: f64,
        }
        let mut placed = Vec::with_capacity(self.lanes.len());
        let mut y = AXIS_H;
        for l in &self.lanes {
            let mut ends: Vec<u64> = Vec::new();
            let mut rows = Vec::with_capacity(l.holds.len());
            for h in &l.holds {
                let r = match ends.iter().position(|&e| e <= h.start_ms) {
                    Some(r) => r,
                    None => {
                        ends.push(0);
                        ends.len() - 1
                    }
                };
                ends[r] = h.end_ms.max(h.start_ms + 1);
                rows.push(r);
            }
            let n_rows = ends.len().max(1);
            let extra = usize::from(!l.claims.is_empty()) + usize::from(!l.waiters.is_empty());
            let h = (n_rows + extra) as f64 * ROW_H + 10.0;
            placed.push(Placed { rows, n_rows, y, h });
            y += h;
        }
        let height = y + 10.0;
        let width = LABEL_W + PLOT_W + 20.0;
        let mut o = String::with_capacity(4096 + self.events * 160);
        o.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rlockd lock timeline</title>\n<style>");
        o.push_str(CSS);
        o.push_str("</style></head>\n<body data-ready=\"0\">\n<h1>Lock timeline</h1>\n");
        let _ = writeln!(
            o,
            "<p class=\"summary\" data-from=\"{}\" data-to=\"{}\">{} lock(s), {} event(s), {} mark(s), <span class=\"{}\">{} violation(s)</span>, server time {} – {} ms (unix)</p>",
            self.from_ms,
            self.to_ms,
            self.lanes.len(),
            self.events,
            self.marks.len(),
            if self.violations.is_empty() { "ok" } else { "bad" },
            self.violations.len(),
            self.from_ms,
            self.to_ms
        );
        o.push_str("<p><input id=\"filter\" placeholder=\"filter locks\"> <span id=\"info\"></span></p>\n");
        let _ = writeln!(
            o,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" id=\"timeline\" width=\"{width}\" height=\"{height:.0}\" viewBox=\"0 0 {width} {height:.0}\">"
        );
        // The axis: ticks at round steps of time.
        o.push_str("<g class=\"axis\">");
        let span = (self.to_ms - self.from_ms).max(1);
        let step = [1u64, 2, 5]
            .iter()
            .flat_map(|m| (0..12).map(move |e| m * 10u64.pow(e)))
            .filter(|s| span / s <= 10)
            .min()
            .unwrap_or(span);
        // Offsets from the start, in round steps.
        let mut t = self.from_ms;
        while t <= self.to_ms {
            let x = self.x(t);
            let _ = write!(
                o,
                "<line x1=\"{x:.1}\" y1=\"{:.0}\" x2=\"{x:.1}\" y2=\"{height:.0}\" class=\"tick\"/><text x=\"{x:.1}\" y=\"14\">+{} ms</text>",
                AXIS_H - 6.0,
                t - self.from_ms
            );
            t += step;
        }
        o.push_str("</g>\n");
        let mut colours: HashMap<Vec<u8>, u32> = HashMap::new();
        for (l, p) in self.lanes.iter().zip(&placed) {
            o.push_str("<g class=\"lane\" data-lock=\"");
            esc_b(&mut o, &l.key);
            let _ = write!(
                o,
                "\" data-db=\"{}\" data-kind=\"{}\" data-holds=\"{}\"><rect class=\"lane-bg\" x=\"0\" y=\"{:.1}\" width=\"{width}\" height=\"{:.1}\"/>",
                l.db,
                l.kind,
                l.holds.len(),
                p.y,
                p.h
            );
            let _ = write!(o, "<text class=\"label\" x=\"4\" y=\"{:.1}\">", p.y + 14.0);
            esc_b(&mut o, &l.key);
            let _ = write!(o, "<title>db{} ", l.db);
            esc_b(&mut o, &l.key);
            let _ = write!(o, " ({})</title></text>", l.kind);
            let _ = write!(o, "<text class=\"kind\" x=\"4\" y=\"{:.1}\">{} · db{}</text>", p.y + 26.0, l.kind, l.db);
            for (h, &row) in l.holds.iter().zip(&p.rows) {
                self.hold_svg(&mut o, h, p.y + 4.0 + row as f64 * ROW_H, &mut colours);
            }
            let mut row_y = p.y + 4.0 + p.n_rows as f64 * ROW_H;
            if !l.claims.is_empty() {
                for c in &l.claims {
                    let (x1, x2) = (self.x(c.enter_ms), self.x(c.leave_ms.unwrap_or(self.to_ms)));
                    let _ = write!(
                        o,
                        "<rect class=\"claim\" data-holder=\"{}\" data-client=\"{}\" data-open=\"{}\" x=\"{x1:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"8\"><title>claimed critical section of {} (client {}) from {} to {}</title></rect>",
                        attr(&c.holder),
                        c.client,
                        u8::from(c.leave_ms.is_none()),
                        row_y + 3.0,
                        (x2 - x1).max(2.0),
                        attr(&c.holder),
                        c.client,
                        c.enter_ms,
                        c.leave_ms.map_or("(still inside)".to_string(), |t| t.to_string())
                    );
                }
                row_y += ROW_H;
            }
            if !l.waiters.is_empty() {
                let _ = write!(
                    o,
                    "<text class=\"waiters\" x=\"{:.1}\" y=\"{:.1}\">waiting now:",
                    LABEL_W + 4.0,
                    row_y + 12.0
                );
                for (i, w) in l.waiters.iter().enumerate() {
                    let _ = write!(
                        o,
                        " <tspan class=\"waiter\" data-waiter=\"{}\">#{} {}</tspan>",
                        attr(w),
                        i + 1,
                        attr(w)
                    );
                }
                o.push_str("</text>");
            }
            for v in &l.violations {
                let x = self.x(v.time_ms);
                let _ = write!(
                    o,
                    "<g class=\"violation\" data-time=\"{}\"><line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/><circle cx=\"{x:.1}\" cy=\"{:.1}\" r=\"5\"/><title>",
                    v.time_ms,
                    p.y,
                    p.y + p.h,
                    p.y + 8.0
                );
                esc(&mut o, &v.text);
                o.push_str("</title></g>");
            }
            o.push_str("</g>\n");
        }
        for m in &self.marks {
            let x = self.x(m.time_ms);
            let _ = write!(
                o,
                "<g class=\"mark {}\" data-time=\"{}\"><line x1=\"{x:.1}\" y1=\"{:.0}\" x2=\"{x:.1}\" y2=\"{height:.0}\"/><text x=\"{x:.1}\" y=\"28\">{}</text><title>{} at {}: ",
                m.kind,
                m.time_ms,
                AXIS_H - 10.0,
                m.kind,
                m.kind,
                m.time_ms
            );
            esc(&mut o, &m.text);
            o.push_str("</title></g>\n");
        }
        o.push_str("</svg>\n");
        if !self.violations.is_empty() {
            o.push_str("<h2>Violations</h2>\n<ol class=\"violations\">\n");
            for v in &self.violations {
                let _ = write!(o, "<li class=\"violation-item\" data-time=\"{}\">", v.time_ms);
                esc(&mut o, &v.text);
                o.push_str("</li>\n");
            }
            o.push_str("</ol>\n");
        }
        if !self.marks.is_empty() {
            o.push_str("<h2>Marks</h2>\n<ol class=\"marks\">\n");
            for m in &self.marks {
                let _ = write!(o, "<li class=\"mark-item {}\">{} ms: {}: ", m.kind, m.time_ms, m.kind);
                esc(&mut o, &m.text);
                o.push_str("</li>\n");
            }
            o.push_str("</ol>\n");
        }
        o.push_str("<script>");
        o.push_str(SCRIPT);
        o.push_str("</script>\n</body></html>\n");
        o
    }

    /// The colour of a hold: one per client name, or per holder for
    /// unnamed clients, spread around the wheel in order of appearance.
    fn colour_key<'a>(&'a self, h: &'a Hold) -> &'a [u8] {
        match self.client(h.client) {
            Some(c) if !c.name.is_empty() => c.name.as_bytes(),
            _ => owner(&h.holder),
        }
    }

    fn hold_svg(&self, o: &mut String, h: &Hold, y: f64, colours: &mut HashMap<Vec<u8>, u32>) {
        let (x1, x2) = (self.x(h.start_ms), self.x(h.end_ms));
        let c = self.client(h.client);
        let name = c.map_or("", |c| c.name.as_str());
        let n = colours.len() as u32;
        let colour = *colours.entry(self.colour_key(h).to_vec()).or_insert((n * 137 + 210) % 360);
        let _ = write!(
            o,
            "<g class=\"hold-group\"><rect class=\"hold {}\" data-holder=\"{}\" data-client=\"{}\" data-client-name=\"{}\" data-end=\"{}\" data-start-ms=\"{}\" data-end-ms=\"{}\" x=\"{x1:.1}\" y=\"{y:.1}\" width=\"{:.1}\" height=\"{:.0}\" style=\"fill:hsl({colour},65%,62%)\"><title>{} held by client {}",
            h.end,
            attr(&h.holder),
            h.client,
            attr(name.as_bytes()),
            h.end,
            h.start_ms,
            h.end_ms,
            (x2 - x1).max(2.0),
            ROW_H - 4.0,
            attr(&h.holder),
            h.client,
        );
        if let Some(c) = c {
            if !c.name.is_empty() {
                let _ = write!(o, " ({})", attr(c.name.as_bytes()));
            }
            if !c.lib.is_empty() {
                let _ = write!(o, ", library {}", attr(c.lib.as_bytes()));
            }
        }
        let _ = write!(o, " from {} to {} ({}", h.start_ms, h.end_ms, h.end);
        let max_depth = h.depth.iter().map(|d| d.1).max().unwrap_or(1);
        if max_depth > 1 {
            let _ = write!(o, ", re-entered up to {max_depth}");
        }
        if !h.renewals.is_empty() {
            let _ = write!(o, ", renewed {} time(s)", h.renewals.len());
        }
        o.push_str(")</title></rect>");
        // Re-entry: a darker band while the depth is above one.
        for (i, &(t, d)) in h.depth.iter().enumerate() {
            if d > 1 {
                let end = h.depth.get(i + 1).map_or(h.end_ms, |n| n.0);
                let (a, b) = (self.x(t), self.x(end));
                let _ = write!(
                    o,
                    "<rect class=\"depth\" data-depth=\"{d}\" x=\"{a:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"4\"/>",
                    y + ROW_H - 8.0,
                    (b - a).max(1.0)
                );
            }
        }
        for &t in &h.renewals {
            let x = self.x(t);
            let _ = write!(
                o,
                "<line class=\"renewal\" x1=\"{x:.1}\" y1=\"{y:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\"/>",
                y + ROW_H - 4.0
            );
        }
        o.push_str("</g>");
    }
}

/// `b` escaped for HTML, as a `String`.
fn attr(b: &[u8]) -> String {
    let mut s = String::new();
    esc_b(&mut s, b);
    s
}

fn violations_json(o: &mut String, vs: &[Violation]) {
    o.push('[');
    for (i, v) in vs.iter().enumerate() {
        let _ = write!(o, "{}{{\"time_ms\":{},\"db\":{},\"key\":", if i > 0 { "," } else { "" }, v.time_ms, v.db);
        json_b(o, &v.key);
        o.push_str(",\"text\":");
        json_str(o, &v.text);
        o.push('}');
    }
    o.push(']');
}

const CSS: &str = "body{font:13px system-ui,sans-serif;margin:12px;color:#222}\
h1{font-size:18px;margin:0 0 6px}h2{font-size:15px}\
.bad{color:#c00;font-weight:bold}.ok{color:#080}\
svg{border:1px solid #ccc;background:#fff}\
.lane-bg{fill:#fafafa;stroke:#e4e4e4}.lane:nth-of-type(even) .lane-bg{fill:#f2f4f7}\
.label{font-weight:600;font-size:12px}.kind{fill:#777;font-size:10px}\
.tick{stroke:#eee}.axis text{font-size:10px;fill:#555;text-anchor:middle}\
.hold{stroke:#333;stroke-width:.5}.hold.expired{stroke:#c00;stroke-width:1.5;stroke-dasharray:3 2}\
.hold.lost{fill-opacity:.45;stroke:#c00;stroke-dasharray:2 2}.hold.held{stroke-width:1.5}\
.depth{fill:#000;fill-opacity:.35}.renewal{stroke:#000;stroke-width:1.5}\
.claim{fill:#246;fill-opacity:.75}.waiters{font-size:11px;fill:#555}\
.violation line{stroke:#d00;stroke-width:2}.violation circle{fill:#d00}\
.mark line{stroke-width:1.5;stroke-dasharray:4 3}.mark text{font-size:10px}\
.mark.fault line{stroke:#e67e00}.mark.clock line{stroke:#06c}.mark.crash line{stroke:#000}\
.mark.failover line{stroke:#90c;stroke-width:2.5}.mark.slot line{stroke:#088}\
.violations li{color:#c00}.hidden{display:none}.hi .hold{stroke:#000;stroke-width:2}";

/// Hover shows what is under the pointer in a line (the `<title>`s also
/// show natively); the filter hides lanes by lock name; clicking a hold
/// outlines every hold of the same holder. Sets `data-ready` when done,
/// and `data-layout-ms`: the milliseconds from the start of navigation to
/// the end of the document's first layout (forced here), as the page's
/// clock (`performance.now()`) reads them.
const SCRIPT: &str = r#"(function(){
var info=document.getElementById('info'),svg=document.getElementById('timeline');
svg.addEventListener('mousemove',function(e){var t=e.target.closest('[class]');var ti=t&&t.querySelector&&t.querySelector('title');info.textContent=ti?ti.textContent:'';});
svg.addEventListener('click',function(e){var h=e.target.closest('.hold');if(!h)return;var who=h.getAttribute('data-holder');
document.querySelectorAll('.hold').forEach(function(x){x.style.strokeWidth=x.getAttribute('data-holder')===who?'3':'';});});
document.getElementById('filter').addEventListener('input',function(e){var q=e.target.value;
document.querySelectorAll('.lane').forEach(function(l){l.classList.toggle('hidden',q!==''&&l.getAttribute('data-lock').indexOf(q)<0);});});
var lanes=document.querySelectorAll('.lane').length,holds=document.querySelectorAll('.hold').length;
document.body.setAttribute('data-lanes',lanes);document.body.setAttribute('data-holds',holds);
document.body.setAttribute('data-violations',document.querySelectorAll('g.violation').length);
document.body.offsetHeight;svg.getBoundingClientRect();
document.body.setAttribute('data-layout-ms',Math.round(performance.now()));
document.body.setAttribute('data-ready','1');})();"#;

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(id: u64, t: u64, key: &str, event: &'static str, holder: &str, count: i64) -> LockEvent {
        LockEvent {
            id,
            time_ms: t,
            db: 0,
            key: Bytes::copy_from_slice(key.as_bytes()),
            kind: "reentrant",
            event,
            holder: Bytes::copy_from_slice(holder.as_bytes()),
            count,
            client: 7,
            command: "evalsha x".into(),
        }
    }

    #[test]
    fn holds_are_built_from_events() {
        let events = vec![
            ev(1, 100, "l", "acquired", "a:1", 1),
            ev(2, 110, "l", "reentered", "a:1", 2),
            ev(3, 120, "l", "renewed", "a:1", 2),
            ev(4, 125, "l", "released", "a:1", 1),
            ev(5, 130, "l", "expired", "a:1", 0),
            ev(6, 140, "l", "acquired", "b:1", 1),
        ];
        let node = NodeFacts { events, ..Default::default() };
        let t = build(vec![node], TopologyFacts::default(), &Range::default(), 200);
        assert_eq!((t.from_ms, t.to_ms, t.lanes.len()), (100, 200, 1));
        let holds: Vec<(&[u8], u64, u64, &str)> =
            t.lanes[0].holds.iter().map(|h| (&h.holder[..], h.start_ms, h.end_ms, h.end)).collect();
        assert_eq!(holds, [(&b"a:1"[..], 100, 130, "expired"), (b"b:1", 140, 200, "held")]);
        assert_eq!(t.lanes[0].holds[0].depth, [(100, 1), (110, 2), (125, 1)]);
        assert_eq!(t.lanes[0].holds[0].renewals, [120]);
        let html = t.to_html();
        assert!(html.contains("class=\"lane\" data-lock=\"l\""));
        assert_eq!(html.matches("<rect class=\"hold ").count(), 2);
        assert!(!html.contains("http://") || html.matches("http://").count() == 1, "only the SVG namespace");
        assert!(t.to_json().starts_with("{\"from_ms\":100,\"to_ms\":200,"));
    }

    #[test]
    fn a_claim_past_its_lease_overlapping_another_grant_is_a_violation() {
        let events = vec![
            ev(1, 100, "l", "acquired", "a:1", 1),
            ev(2, 130, "l", "expired", "a:1", 0),
            ev(3, 140, "l", "acquired", "b:1", 1),
            ev(4, 150, "l", "released", "b:1", 0),
            ev(5, 160, "l", "acquired", "a:1", 1),
            ev(6, 170, "l", "released", "a:1", 0),
        ];
        let mut claims = Claims::default();
        let key = Bytes::from_static(b"l");
        claims.enter(0, key.clone(), Bytes::from_static(b"a:1"), 9, 101, 1, vec![Bytes::from_static(b"a:1")]);
        assert!(claims.leave(0, b"l", b"a:1", 145, 3));
        // A correct section: entered while held, left before the release.
        claims.enter(0, key.clone(), Bytes::from_static(b"a:1"), 9, 161, 5, vec![Bytes::from_static(b"a:1")]);
        assert!(claims.leave(0, b"l", b"a:1", 165, 5));
        assert!(!claims.leave(0, b"l", b"a:1", 166, 5));
        // Entered without holding.
        claims.enter(0, key, Bytes::from_static(b"c:1"), 9, 180, 6, vec![]);
        let v: Vec<String> = claims.violations(&events).into_iter().map(|v| v.text).collect();
        assert_eq!(v.len(), 3, "{v:?}");
        assert!(v[0].contains("outlived its lease: the lock expired at 130"), "{v:?}");
        assert!(v[1].contains("overlaps a grant to b:1 at 140"), "{v:?}");
        assert!(v[2].contains("c:1 claimed its critical section at 180 without holding the lock (the lock was free)"));
    }
}
