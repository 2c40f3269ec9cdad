//! Injected faults (`RLOCKD FAULT …`, [`crate::Server::add_fault`]): the
//! failures a lock client must survive, made to happen on purpose.
//!
//! A fault is a [`FaultKind`] (what goes wrong) and a [`Scope`] (to which
//! commands, keys, clients or channels), optionally for a number of
//! matches only. The store is shared by the connections (which apply the
//! connection-level kinds: latency, closing, freezing, slow or cut writes),
//! the dispatcher (which answers a matching command with an injected error)
//! and pub/sub delivery (which drops or delays messages). With no fault
//! set, each of them pays one relaxed atomic load.
//!
//! Faults are data only: this module decides *whether* a fault applies and
//! consumes its count; the layers above act on the answer.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;

use crate::glob;

/// What goes wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FaultKind {
    /// A matching command is not run; it is answered with this error
    /// (`LOADING …`, `READONLY …`, `BUSY …`, `ERR …`).
    Error(Bytes),
    /// The reply of a matching command is held back this long, plus a
    /// random extra of up to `jitter_ms`.
    Latency {
        /// Fixed delay.
        ms: u64,
        /// Upper bound of a random extra delay.
        jitter_ms: u64,
    },
    /// The connection is closed on a matching command: before it runs
    /// (`after: false`, the command is lost) or after it ran without its
    /// reply (`after: true`: the write happened, the client never hears).
    Close {
        /// After the command ran (else before).
        after: bool,
    },
    /// Matching connections answer nothing (and receive nothing) for
    /// `ms` of real time from when the fault is set, as under a long
    /// pause or a partition, while the server's clock runs on.
    Freeze {
        /// How long, in real milliseconds.
        ms: u64,
    },
    /// A matching command's reply is written `chunk` bytes at a time with
    /// `delay_ms` between writes.
    SlowWrite {
        /// Bytes per write.
        chunk: usize,
        /// Pause between writes.
        delay_ms: u64,
    },
    /// Only the first `bytes` of a matching command's reply are written,
    /// then the connection is closed mid-reply.
    CutWrite {
        /// Bytes of the reply written before the cut.
        bytes: usize,
    },
    /// Messages published on matching channels are not delivered
    /// (`PUBLISH` still counts the receivers, as if lost in transit).
    DropMessages,
    /// Messages published on matching channels are delivered this late.
    DelayMessages {
        /// The delay.
        ms: u64,
    },
}

impl FaultKind {
    /// The name `RLOCKD FAULT` uses for it.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Error(_) => "error",
            FaultKind::Latency { .. } => "latency",
            FaultKind::Close { .. } => "close",
            FaultKind::Freeze { .. } => "freeze",
            FaultKind::SlowWrite { .. } => "slowwrite",
            FaultKind::CutWrite { .. } => "cutwrite",
            FaultKind::DropMessages => "dropmsg",
            FaultKind::DelayMessages { .. } => "delaymsg",
        }
    }

    fn is_message_fault(&self) -> bool {
        matches!(self, FaultKind::DropMessages | FaultKind::DelayMessages { .. })
    }
}

/// Which commands, keys, clients or channels a fault applies to; every
/// condition given must hold (none given: everything matches). Patterns are
/// Redis glob patterns; command names match in lower case, a container's
/// subcommand as `client|setname`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Command name pattern.
    pub command: Option<Bytes>,
    /// Key pattern: the command must name a matching key.
    pub key: Option<Bytes>,
    /// Client name pattern (`CLIENT SETNAME`).
    pub client_name: Option<Bytes>,
    /// One client id.
    pub client_id: Option<u64>,
    /// Channel pattern (message faults).
    pub channel: Option<Bytes>,
}

impl Scope {
    /// True when the scope names only clients (no command, key or channel):
    /// such a freeze stops the whole connection, not single commands.
    pub fn clients_only(&self) -> bool {
        self.command.is_none() && self.key.is_none() && self.channel.is_none()
    }

    /// True for client `id` named `name`.
    pub fn client_matches(&self, id: u64, name: &[u8]) -> bool {
        self.client_id.is_none_or(|want| want == id)
            && self.client_name.as_ref().is_none_or(|p| glob::matches(p, name, false))
    }
}

/// The commands client libraries send to set a connection up (`HELLO`,
/// `AUTH`, `SELECT`, `CLIENT SETNAME`, `CLIENT SETINFO`): a fault matches
/// them only when its scope names them with a command pattern, so a fault
/// scoped to a client (by name or id) and counted with `TIMES` is spent on
/// what the client's code sends, not on its library's handshake.
pub const HANDSHAKE: &[&str] = &["hello", "auth", "select", "client|setname", "client|setinfo"];

/// A fault as set: what, where, how many more times.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The fault's kind and parameters.
    pub kind: FaultKind,
    /// What it applies to.
    pub scope: Scope,
    /// Matches left before the fault removes itself (None: until cleared).
    pub times: Option<u64>,
}

impl Fault {
    /// A fault of `kind` for everything, until cleared.
    pub fn new(kind: FaultKind) -> Fault {
        Fault { kind, scope: Scope::default(), times: None }
    }
    /// Only for commands whose name matches `pattern`.
    pub fn command(mut self, pattern: &str) -> Fault {
        self.scope.command = Some(Bytes::from(pattern.to_ascii_lowercase()));
        self
    }
    /// Only for commands naming a key that matches `pattern`.
    pub fn key(mut self, pattern: &str) -> Fault {
        self.scope.key = Some(Bytes::copy_from_slice(pattern.as_bytes()));
        self
    }
    /// Only for clients whose name matches `pattern`.
    pub fn client_name(mut self, pattern: &str) -> Fault {
        self.scope.client_name = Some(Bytes::copy_from_slice(pattern.as_bytes()));
        self
    }
    /// Only for the client with this id.
    pub fn client_id(mut self, id: u64) -> Fault {
        self.scope.client_id = Some(id);
        self
    }
    /// Only for channels matching `pattern` (message faults).
    pub fn channel(mut self, pattern: &str) -> Fault {
        self.scope.channel = Some(Bytes::copy_from_slice(pattern.as_bytes()));
        self
    }
    /// Removes itself after `n` matches.
    pub fn times(mut self, n: u64) -> Fault {
        self.times = Some(n);
        self
    }
}

/// A fault in the store, with its id and what it did so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultInfo {
    /// Id (for `RLOCKD FAULT CLEAR <id>`).
    pub id: u64,
    /// The fault.
    pub fault: Fault,
    /// How many times it applied.
    pub hits: u64,
}

/// One command as the faults see it.
pub struct Probe<'a> {
    /// Lower-case full name (`get`, `client|setname`).
    pub command: &'a str,
    /// The keys it names (only read when a fault has a key pattern).
    pub keys: &'a dyn Fn() -> Vec<Bytes>,
    /// Client id and name.
    pub client_id: u64,
    pub client_name: &'a [u8],
}

/// What the connection does to one command and its reply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConnFaults {
    /// Hold the batch's replies back this long.
    pub delay: Option<Duration>,
    /// Close instead of running the command.
    pub close_before: bool,
    /// Run it, drop its reply, close.
    pub close_after: bool,
    /// Answer nothing until then.
    pub frozen_until: Option<Instant>,
    /// Write the reply in chunks of `.0` bytes, `.1` apart.
    pub slow_write: Option<(usize, Duration)>,
    /// Write only this many bytes of the output, then close.
    pub cut_write: Option<usize>,
}

impl ConnFaults {
    /// Nothing to do.
    pub fn is_none(&self) -> bool {
        *self == ConnFaults::default()
    }

    /// The kinds that apply, by name (`latency+freeze`), for the
    /// timeline's mark of a fault that hit.
    pub fn names(&self) -> String {
        let kinds = [
            (self.delay.is_some(), "latency"),
            (self.close_before || self.close_after, "close"),
            (self.frozen_until.is_some(), "freeze"),
            (self.slow_write.is_some(), "slowwrite"),
            (self.cut_write.is_some(), "cutwrite"),
        ];
        kinds.iter().filter(|k| k.0).map(|k| k.1).collect::<Vec<_>>().join("+")
    }
}

/// What happens to one published message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MessageFate {
    Deliver,
    Drop,
    Delay(Duration),
}

#[derive(Debug)]
struct Entry {
    info: FaultInfo,
    /// Freeze deadline (real time), fixed when the fault is set.
    until: Option<Instant>,
    /// The connections a freeze stopped when it was set.
    frozen: Vec<u64>,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    entries: Vec<Entry>,
}

/// The faults of one server.
#[derive(Debug, Default)]
pub struct Faults {
    /// Any fault set (the fast path reads only this).
    active: AtomicBool,
    /// Any message fault set.
    messages: AtomicBool,
    inner: Mutex<Inner>,
}

impl Faults {
    /// True when at least one fault is set.
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    fn refresh(&self, inner: &mut Inner) {
        let now = Instant::now();
        inner.entries.retain(|e| e.info.fault.times != Some(0) && e.until.is_none_or(|u| u > now));
        self.active.store(!inner.entries.is_empty(), Ordering::Relaxed);
        self.messages.store(inner.entries.iter().any(|e| e.info.fault.kind.is_message_fault()), Ordering::Relaxed);
    }

    /// Sets a fault; returns its id.
    pub fn add(&self, fault: Fault) -> u64 {
        self.add_freezing(fault, Vec::new())
    }

    /// Sets a fault that also stops the connections `frozen` at once (a
    /// freeze: they answer nothing until it ends, even without sending a
    /// command); returns its id.
    pub fn add_freezing(&self, fault: Fault, frozen: Vec<u64>) -> u64 {
        let mut inner = self.inner.lock();
        inner.next_id += 1;
        let id = inner.next_id;
        let until = match fault.kind {
            FaultKind::Freeze { ms } => Some(Instant::now() + Duration::from_millis(ms)),
            _ => None,
        };
        inner.entries.push(Entry { info: FaultInfo { id, fault, hits: 0 }, until, frozen });
        self.refresh(&mut inner);
        id
    }

    /// Removes fault `id`, or every fault; returns how many went.
    pub fn clear(&self, id: Option<u64>) -> usize {
        let mut inner = self.inner.lock();
        let before = inner.entries.len();
        match id {
            Some(id) => inner.entries.retain(|e| e.info.id != id),
            None => inner.entries.clear(),
        }
        let removed = before - inner.entries.len();
        self.refresh(&mut inner);
        removed
    }

    /// The faults set now, oldest first.
    pub fn list(&self) -> Vec<FaultInfo> {
        let mut inner = self.inner.lock();
        self.refresh(&mut inner);
        inner.entries.iter().map(|e| e.info.clone()).collect()
    }

    /// Counts one application of entry `i`; false if it has none left.
    fn hit(e: &mut Entry) -> bool {
        match &mut e.info.fault.times {
            Some(0) => return false,
            Some(n) => *n -= 1,
            None => {}
        }
        e.info.hits += 1;
        true
    }

    fn command_matches(scope: &Scope, probe: &Probe<'_>, keys: &mut Option<Vec<Bytes>>) -> bool {
        if !scope.client_matches(probe.client_id, probe.client_name) {
            return false;
        }
        if scope.command.is_none() && HANDSHAKE.contains(&probe.command) {
            return false;
        }
        if scope.channel.is_some() {
            return false;
        }
        if let Some(p) = &scope.command {
            if !glob::matches(p, probe.command.as_bytes(), true) {
                return false;
            }
        }
        if let Some(p) = &scope.key {
            let keys = keys.get_or_insert_with(|| (probe.keys)());
            if !keys.iter().any(|k| glob::matches(p, k, false)) {
                return false;
            }
        }
        true
    }

    /// The error a matching `Error` fault puts in place of the command
    /// (its count consumed), if any.
    pub fn injected_error(&self, probe: &Probe<'_>) -> Option<Bytes> {
        let mut inner = self.inner.lock();
        let mut keys = None;
        let mut found = None;
        for e in inner.entries.iter_mut() {
            if let FaultKind::Error(text) = &e.info.fault.kind {
                let text = text.clone();
                if Self::command_matches(&e.info.fault.scope, probe, &mut keys) && Self::hit(e) {
                    found = Some(text);
                    break;
                }
            }
        }
        if found.is_some() {
            self.refresh(&mut inner);
        }
        found
    }

    /// The connection-level faults that apply to one command (their counts
    /// consumed).
    pub fn on_command(&self, probe: &Probe<'_>) -> ConnFaults {
        let mut inner = self.inner.lock();
        let mut keys = None;
        let mut out = ConnFaults::default();
        let mut hit_any = false;
        for e in inner.entries.iter_mut() {
            let kind = e.info.fault.kind.clone();
            if matches!(kind, FaultKind::Error(_)) || kind.is_message_fault() {
                continue;
            }
            if !Self::command_matches(&e.info.fault.scope, probe, &mut keys) || !Self::hit(e) {
                continue;
            }
            hit_any = true;
            match kind {
                FaultKind::Latency { ms, jitter_ms } => {
                    let extra = if jitter_ms > 0 { rand::random_range(0..=jitter_ms) } else { 0 };
                    let d = Duration::from_millis(ms + extra);
                    out.delay = Some(out.delay.map_or(d, |o| o.max(d)));
                }
                FaultKind::Close { after: false } => out.close_before = true,
                FaultKind::Close { after: true } => out.close_after = true,
                FaultKind::Freeze { .. } => {
                    out.frozen_until = match (out.frozen_until, e.until) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        (a, b) => a.or(b),
                    }
                }
                FaultKind::SlowWrite { chunk, delay_ms } => {
                    out.slow_write = Some((chunk.max(1), Duration::from_millis(delay_ms)))
                }
                FaultKind::CutWrite { bytes } => out.cut_write = Some(bytes),
                FaultKind::Error(_) | FaultKind::DropMessages | FaultKind::DelayMessages { .. } => {}
            }
        }
        if hit_any {
            self.refresh(&mut inner);
        }
        out
    }

    /// Until when a freeze set while connection `id` was open holds it.
    pub fn frozen_until(&self, id: u64) -> Option<Instant> {
        let mut inner = self.inner.lock();
        self.refresh(&mut inner);
        inner.entries.iter().filter(|e| e.frozen.contains(&id)).filter_map(|e| e.until).max()
    }

    /// What happens to a message published on `channel`.
    pub fn message_fate(&self, channel: &[u8]) -> MessageFate {
        if !self.messages.load(Ordering::Relaxed) {
            return MessageFate::Deliver;
        }
        let mut inner = self.inner.lock();
        let mut fate = MessageFate::Deliver;
        let mut hit_any = false;
        for e in inner.entries.iter_mut() {
            let scope = &e.info.fault.scope;
            if !e.info.fault.kind.is_message_fault()
                || scope.channel.as_ref().is_some_and(|p| !glob::matches(p, channel, false))
            {
                continue;
            }
            let kind = e.info.fault.kind.clone();
            if !Self::hit(e) {
                continue;
            }
            hit_any = true;
            fate = match (fate, kind) {
                (_, FaultKind::DropMessages) | (MessageFate::Drop, _) => MessageFate::Drop,
                (MessageFate::Delay(a), FaultKind::DelayMessages { ms }) => {
                    MessageFate::Delay(a.max(Duration::from_millis(ms)))
                }
                (_, FaultKind::DelayMessages { ms }) => MessageFate::Delay(Duration::from_millis(ms)),
                (f, _) => f,
            };
        }
        if hit_any {
            self.refresh(&mut inner);
        }
        fate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe<'a>(cmd: &'a str, keys: &'a dyn Fn() -> Vec<Bytes>, name: &'a [u8]) -> Probe<'a> {
        Probe { command: cmd, keys, client_id: 7, client_name: name }
    }

    #[test]
    fn error_fault_applies_to_its_scope_for_its_count() {
        let f = Faults::default();
        assert!(!f.active());
        let id = f.add(
            Fault::new(FaultKind::Error(Bytes::from_static(b"LOADING x"))).command("evalsha").key("lock:*").times(2),
        );
        assert!(f.active());
        let lock_keys = || vec![Bytes::from_static(b"lock:a")];
        let other_keys = || vec![Bytes::from_static(b"other")];
        assert_eq!(f.injected_error(&probe("get", &lock_keys, b"")), None);
        assert_eq!(f.injected_error(&probe("evalsha", &other_keys, b"")), None);
        assert_eq!(f.injected_error(&probe("EVALSHA", &lock_keys, b"")).as_deref(), Some(&b"LOADING x"[..]));
        assert_eq!(f.list()[0].hits, 1);
        assert_eq!(f.list()[0].id, id);
        assert!(f.injected_error(&probe("evalsha", &lock_keys, b"")).is_some());
        // Used up: gone.
        assert_eq!(f.injected_error(&probe("evalsha", &lock_keys, b"")), None);
        assert!(f.list().is_empty());
        assert!(!f.active());
    }

    #[test]
    fn client_scopes_and_clear() {
        let f = Faults::default();
        let a = f.add(Fault::new(FaultKind::Latency { ms: 50, jitter_ms: 0 }).client_name("worker-*"));
        let b = f.add(Fault::new(FaultKind::Close { after: true }).client_id(9));
        let none = Vec::new;
        assert_eq!(f.on_command(&probe("set", &none, b"web")), ConnFaults::default());
        let c = f.on_command(&probe("set", &none, b"worker-1"));
        assert_eq!(c.delay, Some(Duration::from_millis(50)));
        assert!(!c.close_after);
        let p = Probe { command: "set", keys: &none, client_id: 9, client_name: b"" };
        assert!(f.on_command(&p).close_after);
        assert_eq!(f.clear(Some(b)), 1);
        assert_eq!(f.clear(Some(b)), 0);
        assert_eq!(f.list().len(), 1);
        assert_eq!(f.list()[0].id, a);
        assert_eq!(f.clear(None), 1);
        assert!(!f.active());
    }

    #[test]
    fn message_faults_by_channel() {
        let f = Faults::default();
        assert_eq!(f.message_fate(b"x"), MessageFate::Deliver);
        f.add(Fault::new(FaultKind::DelayMessages { ms: 20 }).channel("redisson_lock__channel:*"));
        assert_eq!(f.message_fate(b"other"), MessageFate::Deliver);
        assert_eq!(f.message_fate(b"redisson_lock__channel:{a}"), MessageFate::Delay(Duration::from_millis(20)));
        f.add(Fault::new(FaultKind::DropMessages).times(1));
        assert_eq!(f.message_fate(b"redisson_lock__channel:{a}"), MessageFate::Drop);
        assert_eq!(f.message_fate(b"other"), MessageFate::Deliver);
        // Message faults never touch commands.
        let none = Vec::new;
        assert!(f.on_command(&probe("publish", &none, b"")).is_none());
        assert_eq!(f.injected_error(&probe("publish", &none, b"")), None);
    }

    #[test]
    fn freeze_holds_the_connections_it_stopped_until_its_deadline() {
        let f = Faults::default();
        f.add_freezing(Fault::new(FaultKind::Freeze { ms: 60_000 }).client_name("frozen"), vec![3]);
        assert!(f.frozen_until(3).is_some());
        assert!(f.frozen_until(4).is_none());
        // A later command of a matching client freezes it too.
        let none = Vec::new;
        assert!(f.on_command(&probe("get", &none, b"frozen")).frozen_until.is_some());
        assert!(f.on_command(&probe("get", &none, b"thawed")).frozen_until.is_none());
        f.add(Fault::new(FaultKind::Freeze { ms: 0 }));
        // A zero-length freeze is over at once and removes itself.
        assert_eq!(f.list().len(), 1);
    }
}
