//! `RLOCKD …`: test control, the reason to run rlockd instead of a Redis in
//! a container. Drive the server's clock, read every lock and what happened
//! to it, inject faults, and capture and bring back the whole keyspace (a
//! failover that loses the last writes). The state lives in
//! [`crate::control`]; this family parses the arguments and shapes the
//! replies, and the in-process [`crate::Server`] methods call the same
//! functions.
//!
//! `RLOCKD` is a container row of the command table like `CLIENT` or
//! `CONFIG`, so it goes through every check of dispatch (ACL included:
//! `+rlockd|clock`, NOPERM, `ACL LOG`, `ACL DRYRUN`). Its rows carry the
//! hidden `test_control` flag: with `test-control no` the whole family
//! answers Redis's unknown-command error, and whatever enumerates the table
//! (`COMMAND`, `COMMAND COUNT/LIST/DOCS/INFO` without names, `ACL CAT
//! <category>`) leaves it out, so a Redis client counts exactly Redis
//! 7.0's commands; `COMMAND INFO rlockd` and `COMMAND DOCS rlockd` answer by
//! name. Every subcommand is `@admin @slow @dangerous` (HELP only
//! `@slow`). They take no key specs, as `KEYS`, `SCAN` and `FLUSHALL` take
//! none: `LOCKS` and `EVENTS` show a restricted user only the locks whose
//! keys it may read; `SNAPSHOT`, `RESTORE` and `CLOCK` act on the whole
//! keyspace and are granted or refused as a whole.

use bytes::Bytes;

use super::util::{eq, int};
use super::{arg, cmd, container, flag, no_ops, op, Arg, CommandSpec, Ctx, Op, OpTable};
use crate::control::faults::{Fault, FaultInfo, FaultKind};
use crate::control::locks::LockView;
use crate::core::Core;
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

/// Flags of the subcommands that act (every one but HELP).
const ACTS: &str = "admin noscript loading stale";
/// Their ACL categories.
const ACTS_ACL: &str = "@admin @slow @dangerous";
/// rlockd's own flags of every row: unknown while `test-control` is off,
/// never listed or faulted, and not held back by `CLIENT PAUSE` (a test can
/// move the clock past a pause).
const TEST_CONTROL: &str = "test_control pause_exempt";

pub static COMMANDS: &[CommandSpec] = &[cmd("rlockd", container, -2, "", 0, 0, 0, "@slow")
    .subs(RLOCKD_SUBS)
    .hidden_flags(TEST_CONTROL)
    .doc("A container for rlockd's test-control commands", "7.0.0")];

/// The `RLOCKD` tree: each subcommand is a row (name, handler, arity, flags
/// and ACL categories, as any command's), and its [`OpTable`] holds its
/// arguments or operations, each with its handler and its `RLOCKD HELP`
/// lines. `RLOCKD HELP` and `RLOCKD SCHEMA` are written from it, in this
/// order; a subcommand with operations has [`run_ops`] as its handler.
static RLOCKD_SUBS: &[CommandSpec] = &[
    cmd("clock", run_ops, -3, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Read, freeze, move or skew the server's clock", "7.0.0")
        .ops(&CLOCK),
    cmd("locks", rlockd_locks, -2, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("The locks in the keyspace: kind, holders, leases, waiters", "7.0.0")
        .ops(&LOCKS),
    cmd("events", rlockd_events, -2, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("What happened to the locks, oldest first", "7.0.0")
        .ops(&EVENTS),
    cmd("check", run_ops, -2, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Every lock-safety violation seen; RESET forgets them", "7.0.0")
        .ops(&CHECK),
    cmd("snapshot", rlockd_snapshot, 3, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Capture every database with its TTLs under a name", "7.0.0")
        .ops(&no_ops(
            &[arg("name", "text")],
            &["SNAPSHOT <name>", "    Capture every database with its TTLs under that name."],
        )),
    cmd("restore", rlockd_restore, 3, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Replace every database with a snapshot", "7.0.0")
        .ops(&no_ops(
            &[arg("name", "text")],
            &["RESTORE <name>", "    Replace every database with a snapshot (as after a failover)."],
        )),
    cmd("snapshots", rlockd_snapshots, 2, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("The snapshot names", "7.0.0")
        .ops(&no_ops(&[], &["SNAPSHOTS", "    The snapshot names."])),
    cmd("fault", run_ops, -3, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Inject, list, clear faults; close connections", "7.0.0")
        .ops(&FAULT),
    cmd("scripts", rlockd_scripts, -2, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Each cached script's machine-independent cost", "7.0.0")
        .ops(&no_ops(
            &[arg("sha", "text").opt()],
            &[
                "SCRIPTS [<sha>]",
                "    Each cached script's cost in machine-independent figures: Lua instructions, commands by",
                "    name, keys read and written (totals and per call), beside its calls, errors and time.",
            ],
        )),
    cmd("cluster", run_ops, -3, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Move a cluster slot, take a node down or bring it up", "7.0.0")
        .ops(&super::cluster::CONTROL),
    cmd("repl", run_ops, -3, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Pause, lag, drop or break replication; fail over; crash a node", "7.0.0")
        .ops(&super::replication::CONTROL),
    cmd("timeline", rlockd_timeline, -2, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("The lock history as a timeline: one self-contained HTML document, or JSON", "7.0.0")
        .ops(&TIMELINE),
    cmd("history", rlockd_history, -2, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("The lock history as Jepsen-style operations, for checkers", "7.0.0")
        .ops(&HISTORY),
    cmd("claim", run_ops, 5, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Mark the application's critical section under a lock: enter, leave", "7.0.0")
        .ops(&CLAIM),
    cmd("record", run_ops, -3, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Record every command of the process and its reply, for rlockd replay", "7.0.0")
        .ops(&RECORD),
    cmd("schema", rlockd_schema, -2, ACTS, 0, 0, 0, ACTS_ACL)
        .hidden_flags(TEST_CONTROL)
        .doc("Every subcommand's arguments or operations, as data", "7.0.0")
        .ops(&no_ops(
            &[arg("subcommand", "text").opt()],
            &[
                "SCHEMA [<subcommand>]",
                "    Each subcommand (or that one) as data: its arguments, or its operations with theirs, the",
                "    options that may follow (FAULT's kinds: their scope) and the fields of the maps they reply.",
            ],
        )),
    cmd("help", rlockd_help, 2, "loading stale", 0, 0, 0, "@slow")
        .hidden_flags(TEST_CONTROL)
        .doc("Show helpful text about the different subcommands", "7.0.0")
        .ops(&no_ops(&[], &["HELP", "    Print this help."])),
];

/// The first line of `RLOCKD HELP`.
const HELP_HEAD: &str = "RLOCKD <subcommand> [<arg> [value] [opt] ...]. Subcommands are:";

/// `RLOCKD HELP`: the rows' lines, in the rows' order.
fn rlockd_help(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Array(help_lines().map(Reply::status).collect()))
}

fn help_lines() -> impl Iterator<Item = &'static str> {
    let tables = RLOCKD_SUBS.iter().filter_map(|s| s.ops);
    std::iter::once(HELP_HEAD)
        .chain(tables.flat_map(|t| t.help.iter().chain(t.ops.iter().flat_map(|o| o.help)).copied()))
}

/// The handler of a subcommand with operations: its table's check, then the
/// operation named (or the table's default when none is), if the count of
/// its arguments fits, else the table's `unknown` error.
fn run_ops(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let Some(t) = RLOCKD_SUBS.iter().find(|s| eq(&args[1], s.name)).and_then(|s| s.ops) else {
        return Err(CmdError::Syntax);
    };
    if let Some(check) = t.check {
        check(ctx)?;
    }
    let Some(name) = args.get(2) else {
        return t.default.map_or(Err(CmdError::Syntax), |run| run(ctx, args));
    };
    match t.ops.iter().find(|o| eq(name, o.name)) {
        Some(o) if o.counts_own || o.count_fits(args.len() - 3) => (o.handler)(ctx, args),
        _ => Err((t.unknown)(args)),
    }
}

/// `RLOCKD SCHEMA [<subcommand>]`: the tree as data (RESP3 maps; flat
/// arrays in RESP2). A subcommand: `name`, `args`, `ops`, `fields`; an
/// operation: `name`, `args`, `options`, `fields`, `group` (`kind`: a
/// fault kind; nil); an argument: `name`,
/// `type`, `token` (nil when none), `optional`, `choices`.
fn rlockd_schema(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    fn words(w: &[&str]) -> Reply {
        Reply::Array(w.iter().map(|w| Reply::bulk_str(w)).collect())
    }
    fn arg_reply(a: &Arg) -> Reply {
        Reply::Map(vec![
            (Reply::bulk_str("name"), Reply::bulk_str(a.name)),
            (Reply::bulk_str("type"), Reply::bulk_str(a.kind)),
            (Reply::bulk_str("token"), if a.token.is_empty() { Reply::Nil } else { Reply::bulk_str(a.token) }),
            (Reply::bulk_str("optional"), Reply::Bool(a.optional)),
            (Reply::bulk_str("choices"), words(a.choices)),
        ])
    }
    let op_reply = |o: &Op| {
        Reply::Map(vec![
            (Reply::bulk_str("name"), Reply::bulk_str(o.name)),
            (Reply::bulk_str("args"), Reply::Array(o.args.iter().map(arg_reply).collect())),
            (Reply::bulk_str("options"), words(o.options)),
            (Reply::bulk_str("fields"), words(o.fields)),
            (Reply::bulk_str("group"), if o.group.is_empty() { Reply::Nil } else { Reply::bulk_str(o.group) }),
        ])
    };
    let sub_reply = |s: &CommandSpec, t: &OpTable| {
        Reply::Map(vec![
            (Reply::bulk_str("name"), Reply::bulk_str(s.name)),
            (Reply::bulk_str("args"), Reply::Array(t.args.iter().map(arg_reply).collect())),
            (Reply::bulk_str("ops"), Reply::Array(t.ops.iter().map(op_reply).collect())),
            (Reply::bulk_str("fields"), words(t.fields)),
        ])
    };
    let subs = RLOCKD_SUBS.iter().filter_map(|s| Some((s, s.ops?)));
    match args.get(2) {
        None => Ok(Reply::Array(subs.map(|(s, t)| sub_reply(s, t)).collect())),
        Some(name) if args.len() == 3 => match subs.clone().find(|(s, _)| eq(name, s.name)) {
            Some((s, t)) => Ok(sub_reply(s, t)),
            None => Err(CmdError::custom(format!(
                "ERR unknown subcommand '{}'. Try RLOCKD HELP.",
                String::from_utf8_lossy(name)
            ))),
        },
        Some(_) => Err(CmdError::Syntax),
    }
}

/// `RLOCKD CHECK [RESET]`. (`REPL`'s operations are in `cmd/replication.rs`,
/// with `CRASH`/`REVIVE` from `cmd/crash.rs`; `CLUSTER`'s in `cmd/cluster.rs`.)
static CHECK: OpTable = OpTable {
    args: &[],
    ops: &[op("reset", &[], check_reset, &[])],
    help: &["CHECK [RESET]", "    Every safety violation seen (empty: nothing was unsafe); RESET forgets them."],
    fields: &[],
    unknown: |_| CmdError::Syntax,
    check: None,
    default: Some(check_list),
};

static LOCKS: OpTable = OpTable {
    fields: LOCK_FIELDS,
    ..no_ops(
        &[arg("pattern", "pattern").opt(), flag("text", "TEXT")],
        &["LOCKS [<pattern>] [TEXT]", "    The locks in the keyspace: kind, holders, leases, waiters."],
    )
};

static EVENTS: OpTable = OpTable {
    fields: EVENT_FIELDS,
    ..no_ops(
        &[arg("key", "key").opt(), arg("id", "integer").opt().token("SINCE")],
        &[
            "EVENTS [<key>] [SINCE <id>]",
            "    What happened to the locks: acquired, reentered, renewed, released, expired.",
        ],
    )
};

/// The caller's user may read `key` with the subcommand `args` runs (a
/// selector grants commands and keys together); always while `default` is
/// the only, unrestricted, user. `LOCKS` and `EVENTS` show only such locks.
fn may_read(core: &Core, user: &[u8], args: &[Bytes], key: &[u8]) -> bool {
    if core.acl.open {
        return true;
    }
    let (Some(user), super::Lookup::Found(c)) = (core.acl.users.get(user), super::table().lookup(args)) else {
        return false;
    };
    let argv = [args[0].clone(), Bytes::copy_from_slice(key)];
    let keys = || vec![(1, true, false)];
    user.check(&crate::acl::Request { id: c.id, argv: &argv, no_auth: false, keys: &keys, channels: &Vec::new }).is_ok()
}

/// What the calling client may see of the keys it asks about: its user
/// and its command line (checked as `may_read` checks them), kept for a
/// reply made after the handler returned.
#[derive(Clone)]
struct Reader {
    user: Bytes,
    args: Vec<Bytes>,
}

impl Reader {
    fn of(ctx: &Ctx<'_>, args: &[Bytes]) -> Reader {
        Reader { user: ctx.client.user.clone(), args: args.to_vec() }
    }

    fn may_read(&self, core: &Core, key: &[u8]) -> bool {
        may_read(core, &self.user, &self.args, key)
    }
}

fn rlockd_locks(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut pattern = None;
    let mut text = false;
    for a in &args[2..] {
        if eq(a, "text") && !text {
            text = true;
        } else if pattern.is_none() {
            pattern = Some(a.clone());
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let reader = Reader::of(ctx, args);
    let show = move |core: &mut Core, mut found: Vec<LockView>, reader: &Reader| {
        found.retain(|l| reader.may_read(core, &l.key));
        Ok(if text { locks_text(&found) } else { Reply::Array(found.iter().map(lock_reply).collect()) })
    };
    // A cluster node shows the locks of every primary (one view).
    let of = {
        let pattern = pattern.clone();
        move |core: &mut Core, now| core.control.locks(&core.ks, pattern.as_deref(), now)
    };
    let r = reader.clone();
    if let Some(result) = super::cluster::each_primary(ctx, of, move |core, all| show(core, all.concat(), &r)) {
        return result;
    }
    let found = ctx.core.control.locks(&ctx.core.ks, pattern.as_deref(), ctx.shared.clock.now_ms());
    show(ctx.core, found, &reader)
}

fn rlockd_events(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let n = args.len();
    if n > 5 {
        return Err(CmdError::Syntax);
    }
    let mut key = None;
    let mut since = 0u64;
    let mut i = 2;
    while i < n {
        if eq(&args[i], "since") && i + 1 < n {
            since = u64::try_from(int(&args[i + 1])?).map_err(|_| CmdError::custom("ERR SINCE must be positive"))?;
            i += 2;
        } else if key.is_none() {
            key = Some(args[i].clone());
            i += 1;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let of = move |core: &mut Core, _| {
        core.control.history.as_ref().map(|h| h.events(key.as_deref(), since)).unwrap_or_default()
    };
    let show = |core: &mut Core, mut events: Vec<crate::control::history::LockEvent>, reader: &Reader| {
        events.retain(|e| reader.may_read(core, &e.key));
        Ok(Reply::Array(events.iter().map(event_reply).collect()))
    };
    let reader = Reader::of(ctx, args);
    // A cluster node shows every primary's events (ids count per node), in
    // time order.
    let r = reader.clone();
    let all = move |core: &mut Core, all: Vec<Vec<crate::control::history::LockEvent>>| {
        let mut all = all.concat();
        all.sort_by_key(|e| e.time_ms);
        show(core, all, &r)
    };
    if let Some(result) = super::cluster::each_primary(ctx, of.clone(), all) {
        return result;
    }
    let events = of(ctx.core, 0);
    show(ctx.core, events, &reader)
}

/// `RLOCKD CHECK`: this node's lock history's violations and its claims',
/// then the holders lost by a failover of its primary/replica group.
fn check_list(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let of = |core: &mut Core, _| core.control.violations();
    // A cluster node: every primary's, then the cluster's ledger.
    let show = |core: &mut Core, mut all: Vec<String>| {
        all.extend(core.repl.violations());
        Ok(Reply::Array(all.iter().map(|v| Reply::bulk_str(v)).collect()))
    };
    if let Some(result) = super::cluster::each_primary(ctx, of, move |core, all| show(core, all.concat())) {
        return result;
    }
    let all = of(ctx.core, 0);
    show(ctx.core, all)
}

/// `RLOCKD CHECK RESET`: forgets them.
fn check_reset(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let reset = |core: &mut Core, _| {
        if let Some(history) = core.control.history.as_mut() {
            history.reset();
        }
        core.control.claims.clear();
        core.control.replica_runs = Default::default();
        core.control.refusals.clear();
    };
    let done = |core: &mut Core| {
        core.repl.ledger.lock().reset_violations();
        Ok(Reply::ok())
    };
    if let Some(result) = super::cluster::each_primary(ctx, reset, move |core, _| done(core)) {
        return result;
    }
    reset(ctx.core, 0);
    done(ctx.core)
}

/// `RLOCKD TIMELINE [KEY <pattern>] [FROM <ms>] [TO <ms>] [FORMAT html|json]`.
static TIMELINE: OpTable = no_ops(
    &[
        arg("pattern", "pattern").opt().token("KEY"),
        arg("from-ms", "integer").opt().token("FROM"),
        arg("to-ms", "integer").opt().token("TO"),
        arg("format", "text").opt().token("FORMAT").choice(&["html", "json"]),
    ],
    &[
        "TIMELINE [KEY <pattern>] [FROM <ms>] [TO <ms>] [FORMAT HTML|JSON]",
        "    The lock history as one self-contained HTML document (or JSON): a lane per lock, holds,",
        "    claims, waiters, faults, clock moves, crashes, failovers, slot moves and violations.",
    ],
);

fn rlockd_timeline(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    use crate::control::timeline::{self, Range};
    let mut range = Range::default();
    let mut json = false;
    let ms = |a: &Bytes| u64::try_from(int(a)?).map_err(|_| CmdError::custom("ERR FROM and TO must be positive"));
    for pair in args[2..].chunks(2) {
        let [o, v] = pair else { return Err(CmdError::Syntax) };
        if eq(o, "key") {
            range.pattern = Some(v.clone());
        } else if eq(o, "from") {
            range.from_ms = Some(ms(v)?);
        } else if eq(o, "to") {
            range.to_ms = Some(ms(v)?);
        } else if eq(o, "format") && (eq(v, "html") || eq(v, "json")) {
            json = eq(v, "json");
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let reader = Reader::of(ctx, args);
    let pattern = range.pattern.clone();
    let of = move |core: &mut Core, now| core.control.timeline_facts(&core.ks, &core.clients, pattern.as_deref(), now);
    let finish = move |core: &mut Core, nodes: Vec<timeline::NodeFacts>, now: u64| {
        let topo = core.repl.ledger.lock().timeline_facts();
        let mut t = timeline::build(nodes, topo, &range, now);
        t.lanes.retain(|l| reader.may_read(core, &l.key));
        t.violations.retain(|v| reader.may_read(core, &v.key));
        Ok(Reply::Bulk(Bytes::from(if json { t.to_json() } else { t.to_html() })))
    };
    let now = ctx.shared.clock.now_ms();
    let of2 = of.clone();
    let finish2 = finish.clone();
    if let Some(result) = super::cluster::each_primary(ctx, of2, move |core, all| finish2(core, all, now)) {
        return result;
    }
    let mine = of(ctx.core, now);
    finish(ctx.core, vec![mine], now)
}

/// `RLOCKD HISTORY [KEY <pattern>] [FORMAT json|jepsen]`.
static HISTORY: OpTable = no_ops(
    &[
        arg("pattern", "pattern").opt().token("KEY"),
        arg("format", "text").opt().token("FORMAT").choice(&["json", "jepsen"]),
    ],
    &[
        "HISTORY [KEY <pattern>] [FORMAT JSON|JEPSEN]",
        "    The lock history as Jepsen-style operations (index, time, type, process, f, value): acquire,",
        "    renew, release, expire, grants lost in a failover, claims; a JSON array or Jepsen's EDN.",
    ],
);

fn rlockd_history(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    use crate::control::jepsen::{self, Format};
    let mut pattern = None;
    let mut format = Format::Json;
    for pair in args[2..].chunks(2) {
        let [o, v] = pair else { return Err(CmdError::Syntax) };
        if eq(o, "key") {
            pattern = Some(v.clone());
        } else if eq(o, "format") && eq(v, "json") {
            format = Format::Json;
        } else if eq(o, "format") && eq(v, "jepsen") {
            format = Format::Edn;
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let reader = Reader::of(ctx, args);
    let of = |core: &mut Core, _| core.control.history_facts();
    let finish = move |core: &mut Core, nodes: Vec<jepsen::NodeHistory>| {
        let lost = core.repl.ledger.lock().timeline_facts().lost;
        let mut ops = jepsen::operations(&nodes, &lost, pattern.as_deref());
        ops.retain(|op| reader.may_read(core, &op.key));
        Ok(Reply::Bulk(Bytes::from(jepsen::write(&ops, format))))
    };
    let finish2 = finish.clone();
    // A cluster node: every node's, each counting what it made as a primary.
    if let Some(result) = super::cluster::each_node(ctx, of, move |core, all| finish2(core, all)) {
        return result;
    }
    let mine = of(ctx.core, 0);
    finish(ctx.core, vec![mine])
}

/// `RLOCKD CLAIM ENTER | LEAVE <lock> <holder>`.
static CLAIM: OpTable = OpTable {
    args: &[],
    help: &[],
    ops: &[
        op(
            "enter",
            &[arg("lock", "key"), arg("holder", "text")],
            claim_enter,
            &[
                "CLAIM ENTER | LEAVE <lock> <holder>",
                "    The application enters / leaves its critical section under <lock> as <holder> (the",
                "    holder the lock's script writes): CHECK flags a section that overlaps another holder's",
                "    grant or outlives its own lease.",
            ],
        ),
        op("leave", &[arg("lock", "key"), arg("holder", "text")], claim_leave, &[]),
    ],
    fields: &[],
    unknown: super::help::subcommand_syntax,
    check: None,
    default: None,
};

fn claim_enter(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, now) = (ctx.client.db(), ctx.shared.clock.now_ms());
    let core = &mut *ctx.core;
    core.control.claim_enter(&core.ks, db, args[3].clone(), args[4].clone(), ctx.client.id, now);
    Ok(Reply::ok())
}

fn claim_leave(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let (db, now) = (ctx.client.db(), ctx.shared.clock.now_ms());
    if ctx.core.control.claim_leave(db, &args[3], &args[4], now) {
        Ok(Reply::ok())
    } else {
        Err(CmdError::custom("ERR no claimed critical section of this holder on this lock"))
    }
}

fn rlockd_snapshot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    ctx.core.control.snapshot(&ctx.core.ks, args[2].clone());
    Ok(Reply::ok())
}

fn rlockd_restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if ctx.core.control.restore(&mut ctx.core.ks, &args[2]) {
        Ok(Reply::ok())
    } else {
        Err(CmdError::custom(format!("ERR no snapshot named '{}'", String::from_utf8_lossy(&args[2]))))
    }
}

fn rlockd_snapshots(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Array(ctx.core.control.snapshot_names().into_iter().map(Reply::Bulk).collect()))
}

fn rlockd_scripts(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    let want = args.get(2).map(|s| s.to_ascii_lowercase());
    let profiles = ctx.core.scripting.as_ref().map(|s| s.script_profiles()).unwrap_or_default();
    Ok(Reply::Array(
        profiles
            .iter()
            .filter(|(sha, _, _)| want.as_ref().is_none_or(|w| w == sha.as_bytes()))
            .map(|(sha, st, p)| script_reply(sha, st, p))
            .collect(),
    ))
}

/// Turns test control on or off after `CONFIG SET test-control` (see
/// [`crate::control`]): off clears the faults and lets the clock run on
/// real time again, which expires what is due.
pub(crate) fn switched(ctx: &mut Ctx<'_>) {
    let on = ctx.core.config.test_control;
    if on == ctx.core.control.is_on() {
        return;
    }
    ctx.core.control.switch(on, &mut ctx.core.ks);
    if !on {
        ctx.shared.faults.clear(None);
        ctx.shared.clock.reset();
        crate::control::expire_now(&mut ctx.core.ks, ctx.shared.clock.now_ms());
    }
}

fn uint(a: &[u8]) -> Result<u64, CmdError> {
    u64::try_from(int(a)?).map_err(|_| CmdError::custom("ERR value is out of range, must be positive"))
}

/// What an `RLOCKD FAULT` kind's arguments make: the kind it sets (`None`:
/// it acts at once, as `KILL`) and the options left after its own
/// arguments.
type FaultParse = fn(&[Bytes]) -> Result<(Option<FaultKind>, &[Bytes]), CmdError>;

/// The scope a command fault takes, and a message fault's.
const COMMAND_SCOPE: &[&str] = &["command", "key", "client", "id", "times"];
const CHANNEL_SCOPE: &[&str] = &["channel", "times"];

/// `RLOCKD FAULT …`: the kinds, each with the parser of its own arguments,
/// then the operations that act on the store.
static FAULT: OpTable = OpTable {
    args: &[],
    help: &[
        "FAULT <kind> [<args>] [COMMAND <pattern>] [KEY <pattern>] [CLIENT <name-pattern>] [ID <client-id>]",
        "      [CHANNEL <pattern>] [TIMES <n>]",
        "    Inject a fault for matching commands, clients or channels (every condition given must hold;",
        "    TIMES: only that many times). Returns the fault's id. Kinds:",
    ],
    ops: &[
        op(
            "error",
            &[arg("message", "text")],
            |ctx, a| set_fault(ctx, a, parse_error),
            &["    ERROR <message>           answer with this error instead of running the command"],
        )
        .options(COMMAND_SCOPE)
        .group("kind"),
        op(
            "latency",
            &[arg("ms", "integer"), arg("jitter", "integer").opt().token("JITTER")],
            |ctx, a| set_fault(ctx, a, parse_latency),
            &["    LATENCY <ms> [JITTER <ms>] hold the reply back"],
        )
        .options(COMMAND_SCOPE)
        .group("kind"),
        op(
            "close",
            &[arg("when", "choice").choice(&["before", "after"]).opt()],
            |ctx, a| set_fault(ctx, a, parse_close),
            &["    CLOSE [BEFORE|AFTER]      close the connection before the command runs, or after it ran unanswered"],
        )
        .options(COMMAND_SCOPE)
        .group("kind"),
        op(
            "freeze",
            &[arg("ms", "integer")],
            |ctx, a| set_fault(ctx, a, parse_freeze),
            &["    FREEZE <ms>               answer nothing for that long (the clock runs on)"],
        )
        .options(COMMAND_SCOPE)
        .group("kind"),
        op(
            "slowwrite",
            &[arg("bytes", "integer"), arg("ms", "integer")],
            |ctx, a| set_fault(ctx, a, parse_slowwrite),
            &["    SLOWWRITE <bytes> <ms>    write the reply that many bytes at a time, that far apart"],
        )
        .options(COMMAND_SCOPE)
        .group("kind"),
        op(
            "cutwrite",
            &[arg("bytes", "integer")],
            |ctx, a| set_fault(ctx, a, parse_cutwrite),
            &["    CUTWRITE <bytes>          write only that much of the reply, then close"],
        )
        .options(COMMAND_SCOPE)
        .group("kind"),
        op(
            "dropmsg",
            &[],
            |ctx, a| set_fault(ctx, a, |a| Ok((Some(FaultKind::DropMessages), a))),
            &["    DROPMSG                   lose messages published on matching channels"],
        )
        .options(CHANNEL_SCOPE)
        .group("kind"),
        op(
            "delaymsg",
            &[arg("ms", "integer")],
            |ctx, a| set_fault(ctx, a, parse_delaymsg),
            &["    DELAYMSG <ms>             deliver them that much later"],
        )
        .options(CHANNEL_SCOPE)
        .group("kind"),
        op(
            "kill",
            &[],
            |ctx, a| set_fault(ctx, a, |a| Ok((None, a))),
            &[
                "FAULT KILL [CLIENT <name-pattern>] [ID <client-id>]",
                "    Close matching connections now (not this one); returns how many.",
            ],
        )
        .options(&["client", "id"]),
        op("list", &[], fault_list, &["FAULT LIST", "    The faults set, with their hits."]).fields(FAULT_FIELDS),
        op(
            "clear",
            &[arg("id", "integer").opt()],
            fault_clear,
            &["FAULT CLEAR [<id>]", "    Remove one fault, or all; returns how many."],
        ),
    ],
    fields: &[],
    unknown: |a| CmdError::custom(format!("ERR unknown fault '{}'. Try RLOCKD HELP.", String::from_utf8_lossy(&a[2]))),
    check: None,
    default: None,
};

fn parse_error(a: &[Bytes]) -> Result<(Option<FaultKind>, &[Bytes]), CmdError> {
    let text: Vec<u8> =
        a.first().ok_or(CmdError::Syntax)?.iter().map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }).collect();
    if text.is_empty() {
        return Err(CmdError::custom("ERR the error message must not be empty"));
    }
    Ok((Some(FaultKind::Error(Bytes::from(text))), &a[1..]))
}

fn parse_latency(a: &[Bytes]) -> Result<(Option<FaultKind>, &[Bytes]), CmdError> {
    let ms = uint(a.first().ok_or(CmdError::Syntax)?)?;
    if a.len() > 2 && eq(&a[1], "jitter") {
        return Ok((Some(FaultKind::Latency { ms, jitter_ms: uint(&a[2])? }), &a[3..]));
    }
    Ok((Some(FaultKind::Latency { ms, jitter_ms: 0 }), &a[1..]))
}

fn parse_close(a: &[Bytes]) -> Result<(Option<FaultKind>, &[Bytes]), CmdError> {
    match a.first() {
        Some(w) if eq(w, "before") || eq(w, "after") => Ok((Some(FaultKind::Close { after: eq(w, "after") }), &a[1..])),
        _ => Ok((Some(FaultKind::Close { after: false }), a)),
    }
}

fn parse_freeze(a: &[Bytes]) -> Result<(Option<FaultKind>, &[Bytes]), CmdError> {
    Ok((Some(FaultKind::Freeze { ms: uint(a.first().ok_or(CmdError::Syntax)?)? }), &a[1..]))
}

fn parse_slowwrite(a: &[Bytes]) -> Result<(Option<FaultKind>, &[Bytes]), CmdError> {
    if a.len() < 2 {
        return Err(CmdError::Syntax);
    }
    let chunk = usize::try_from(uint(&a[0])?.max(1)).unwrap_or(usize::MAX);
    Ok((Some(FaultKind::SlowWrite { chunk, delay_ms: uint(&a[1])? }), &a[2..]))
}

fn parse_cutwrite(a: &[Bytes]) -> Result<(Option<FaultKind>, &[Bytes]), CmdError> {
    let bytes = usize::try_from(uint(a.first().ok_or(CmdError::Syntax)?)?).unwrap_or(usize::MAX);
    Ok((Some(FaultKind::CutWrite { bytes }), &a[1..]))
}

fn parse_delaymsg(a: &[Bytes]) -> Result<(Option<FaultKind>, &[Bytes]), CmdError> {
    Ok((Some(FaultKind::DelayMessages { ms: uint(a.first().ok_or(CmdError::Syntax)?)? }), &a[1..]))
}

/// `RLOCKD FAULT LIST`.
fn fault_list(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(Reply::Array(ctx.shared.faults.list().iter().map(fault_reply).collect()))
}

/// The command line `args` without `RLOCKD`, for a timeline's mark.
fn command_text(args: &[Bytes]) -> String {
    args[1..].iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>().join(" ")
}

/// Leaves a mark of `kind` for the timeline: the command, at the server's time.
fn mark(ctx: &mut Ctx<'_>, kind: &'static str, args: &[Bytes]) {
    let now = ctx.shared.clock.now_ms();
    ctx.core.repl.ledger.lock().marks.push(now, kind, command_text(args));
}

/// `RLOCKD FAULT CLEAR [<id>]`.
fn fault_clear(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let id = args.get(3).map(|a| uint(a)).transpose()?;
    mark(ctx, "fault", args);
    Ok(Reply::Int(ctx.shared.faults.clear(id) as i64))
}

/// `RLOCKD FAULT <kind> …` and `FAULT KILL …`: the kind's arguments
/// (`parse`), then the scope.
fn set_fault(ctx: &mut Ctx<'_>, args: &[Bytes], parse: FaultParse) -> CmdResult {
    let (kind, rest) = parse(&args[3..])?;
    let is_kill = kind.is_none();
    let mut f = Fault::new(kind.unwrap_or(FaultKind::DropMessages));
    for pair in rest.chunks(2) {
        let [o, v] = pair else { return Err(CmdError::Syntax) };
        if eq(o, "command") {
            f.scope.command = Some(Bytes::from(v.to_ascii_lowercase()));
        } else if eq(o, "key") {
            f.scope.key = Some(v.clone());
        } else if eq(o, "client") {
            f.scope.client_name = Some(v.clone());
        } else if eq(o, "id") {
            f.scope.client_id = Some(uint(v)?);
        } else if eq(o, "channel") {
            f.scope.channel = Some(v.clone());
        } else if eq(o, "times") {
            f.times = Some(uint(v)?);
        } else {
            return Err(CmdError::Syntax);
        }
    }
    let clients = &ctx.core.clients;
    if is_kill {
        // KILL acts now and stays nowhere.
        if !f.scope.clients_only() || f.times.is_some() {
            return Err(CmdError::custom("ERR FAULT KILL takes only CLIENT and ID"));
        }
        let n = crate::control::kill_clients(clients, &f.scope, ctx.client.id);
        mark(ctx, "fault", args);
        return Ok(Reply::Int(n as i64));
    }
    let message_fault = matches!(f.kind, FaultKind::DropMessages | FaultKind::DelayMessages { .. });
    let s = &f.scope;
    let command_scope = s.command.is_some() || s.key.is_some() || s.client_name.is_some() || s.client_id.is_some();
    if message_fault && command_scope {
        return Err(CmdError::custom("ERR DROPMSG and DELAYMSG take CHANNEL, not COMMAND, KEY, CLIENT or ID"));
    }
    if !message_fault && s.channel.is_some() {
        return Err(CmdError::custom("ERR CHANNEL goes with DROPMSG and DELAYMSG only"));
    }
    let id = crate::control::add_fault(clients, &ctx.shared.faults, f, ctx.client.id);
    mark(ctx, "fault", args);
    Ok(Reply::Int(id as i64))
}

/// A map of `fields` (a reply's, as `RLOCKD SCHEMA` names them) and values
/// in the same order.
fn fields_map<const N: usize>(fields: &'static [&'static str], values: [Reply; N]) -> Reply {
    debug_assert_eq!(fields.len(), N);
    Reply::Map(fields.iter().map(|f| Reply::bulk_str(f)).zip(values).collect())
}

fn script_reply(sha: &str, st: &crate::script::ScriptStats, p: &crate::script::ScriptProfile) -> Reply {
    let per_call = |v: u64| Reply::Double(if st.calls == 0 { 0.0 } else { v as f64 / st.calls as f64 });
    let commands = p.commands.iter().map(|(name, n)| (Reply::bulk_str(name), Reply::Int(*n as i64))).collect();
    Reply::Map(vec![
        (Reply::bulk_str("sha"), Reply::bulk_str(sha)),
        (Reply::bulk_str("calls"), Reply::Int(st.calls as i64)),
        (Reply::bulk_str("errors"), Reply::Int(st.errors as i64)),
        (Reply::bulk_str("instructions"), Reply::Int(p.instructions as i64)),
        (Reply::bulk_str("instructions_per_call"), per_call(p.instructions)),
        (Reply::bulk_str("redis_calls"), Reply::Int(st.redis_calls as i64)),
        (Reply::bulk_str("redis_calls_per_call"), per_call(st.redis_calls)),
        (Reply::bulk_str("commands"), Reply::Map(commands)),
        (Reply::bulk_str("keys_read"), Reply::Int(p.keys_read as i64)),
        (Reply::bulk_str("keys_written"), Reply::Int(p.keys_written as i64)),
        (Reply::bulk_str("usec"), Reply::Int((st.nanos / 1000) as i64)),
    ])
}

fn fault_reply(info: &FaultInfo) -> Reply {
    let f = &info.fault;
    let params = match &f.kind {
        FaultKind::Error(t) => Reply::Bulk(t.clone()),
        FaultKind::Latency { ms, jitter_ms } => Reply::bulk_str(&format!("{ms} ms, jitter {jitter_ms} ms")),
        FaultKind::Close { after } => Reply::bulk_str(if *after { "after" } else { "before" }),
        FaultKind::Freeze { ms } | FaultKind::DelayMessages { ms } => Reply::bulk_str(&format!("{ms} ms")),
        FaultKind::SlowWrite { chunk, delay_ms } => Reply::bulk_str(&format!("{chunk} bytes every {delay_ms} ms")),
        FaultKind::CutWrite { bytes } => Reply::bulk_str(&format!("{bytes} bytes")),
        FaultKind::DropMessages => Reply::bulk_str(""),
    };
    let opt = |b: &Option<Bytes>| b.clone().map_or(Reply::Nil, Reply::Bulk);
    fields_map(
        FAULT_FIELDS,
        [
            Reply::Int(info.id as i64),
            Reply::bulk_str(f.kind.name()),
            params,
            opt(&f.scope.command),
            opt(&f.scope.key),
            opt(&f.scope.client_name),
            f.scope.client_id.map_or(Reply::Nil, |i| Reply::Int(i as i64)),
            opt(&f.scope.channel),
            f.times.map_or(Reply::Nil, |t| Reply::Int(t as i64)),
            Reply::Int(info.hits as i64),
        ],
    )
}

/// The fields of a fault (`FAULT LIST`).
const FAULT_FIELDS: &[&str] =
    &["id", "kind", "params", "command", "key", "client", "client_id", "channel", "times_left", "hits"];

/// `RLOCKD CLOCK …`.
static CLOCK: OpTable = OpTable {
    args: &[],
    help: &[],
    ops: &[
        op(
            "get",
            &[],
            |ctx, _| Ok(Reply::Int(ctx.shared.clock.now_ms() as i64)),
            &["CLOCK GET", "    The server's time in unix milliseconds."],
        ),
        op(
            "advance",
            &[arg("ms", "integer")],
            |ctx, a| {
                clock_moved(ctx, a, |c, ms| {
                    c.advance_ms(ms);
                    Ok(())
                })
            },
            &["CLOCK ADVANCE <ms>", "    Move time forward (or back, if negative): keys expire, timeouts fire."],
        ),
        op(
            "set",
            &[arg("unix-ms", "integer")],
            |ctx, a| {
                clock_moved(ctx, a, |c, ms| match u64::try_from(ms) {
                    Ok(ms) => {
                        c.set_ms(ms);
                        Ok(())
                    }
                    Err(_) => Err(CmdError::custom("ERR the time must be positive")),
                })
            },
            &["CLOCK SET <unix-ms>", "    Jump to that time."],
        ),
        op(
            "freeze",
            &[],
            |ctx, a| {
                clock_moved(ctx, a, |c, _| {
                    c.freeze(true);
                    Ok(())
                })
            },
            &[
                "CLOCK FREEZE | RESUME",
                "    Stop time / let it run again as if it had never stopped (moves made meanwhile stay).",
            ],
        ),
        op(
            "resume",
            &[],
            |ctx, a| {
                clock_moved(ctx, a, |c, _| {
                    c.freeze(false);
                    Ok(())
                })
            },
            &[],
        ),
        op(
            "skew",
            &[arg("ms", "integer")],
            |ctx, a| {
                clock_moved(ctx, a, |c, ms| {
                    c.skew_ms(ms);
                    Ok(())
                })
            },
            &["CLOCK SKEW <ms>", "    Run that far ahead of (or behind) the system clock."],
        ),
        op("info", &[], clock_info, &["CLOCK INFO", "    Time, offset from the system clock, frozen or not."])
            .fields(CLOCK_FIELDS),
    ],
    fields: &[],
    unknown: super::help::subcommand_syntax,
    check: None,
    default: None,
};

/// `RLOCKD RECORD`: the process's recording (`control/record.rs`).
static RECORD: OpTable = OpTable {
    args: &[],
    help: &[],
    ops: &[
        op(
            "start",
            &[arg("bytes", "integer").opt().token("MAXBYTES")],
            record_start,
            &[
                "RECORD START [MAXBYTES <n>] | STOP",
                "    Record every command of every node of the process with its reply (JSON Lines, at most n",
                "    bytes kept, 64 MB by default; a new START drops the last recording) / stop recording.",
            ],
        ),
        op(
            "stop",
            &[],
            |_, _| {
                crate::control::record::stop();
                Ok(Reply::ok())
            },
            &[],
        ),
        op(
            "save",
            &[arg("path", "text")],
            record_save,
            &["RECORD SAVE <path>", "    Write the recording to that file (for rlockd replay); returns its lines."],
        ),
        op(
            "status",
            &[],
            record_status,
            &["RECORD STATUS", "    Recording or not, lines, bytes, the bound, lines dropped."],
        )
        .fields(RECORD_FIELDS),
    ],
    fields: &[],
    unknown: super::help::subcommand_syntax,
    check: None,
    default: None,
};

fn record_start(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let max = match args.get(3..) {
        Some([t, n]) if eq(t, "maxbytes") => uint(n)?,
        Some([]) | None => crate::control::record::DEFAULT_MAX_BYTES as u64,
        _ => return Err(CmdError::Syntax),
    };
    crate::control::record::start(usize::try_from(max).unwrap_or(usize::MAX));
    Ok(Reply::ok())
}

fn record_save(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let path = std::path::PathBuf::from(String::from_utf8_lossy(&args[3]).into_owned());
    match crate::control::record::save(&path) {
        Ok(lines) => Ok(Reply::Int(lines as i64)),
        Err(e) => Err(CmdError::custom(format!("ERR cannot write the recording to '{}': {e}", path.display()))),
    }
}

/// The fields of `RECORD STATUS`.
const RECORD_FIELDS: &[&str] = &["recording", "lines", "bytes", "max_bytes", "dropped"];

fn record_status(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let s = crate::control::record::status();
    Ok(fields_map(
        RECORD_FIELDS,
        [
            Reply::Int(i64::from(s.recording)),
            Reply::Int(s.lines as i64),
            Reply::Int(s.bytes as i64),
            Reply::Int(s.max_bytes as i64),
            Reply::Int(s.dropped as i64),
        ],
    ))
}

/// The fields of `CLOCK INFO`.
const CLOCK_FIELDS: &[&str] = &["now_ms", "offset_ms", "frozen"];

fn clock_info(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let c = &ctx.shared.clock;
    Ok(fields_map(
        CLOCK_FIELDS,
        [Reply::Int(c.now_ms() as i64), Reply::Int(c.offset_ms()), Reply::Int(i64::from(c.is_frozen()))],
    ))
}

/// A `CLOCK` operation that moves the clock with its argument (0 if none):
/// due keys expire, the reply is the new time.
fn clock_moved(
    ctx: &mut Ctx<'_>,
    args: &[Bytes],
    f: fn(&crate::clock::Clock, i64) -> Result<(), CmdError>,
) -> CmdResult {
    let ms = args.get(3).map(|a| int(a)).transpose()?.unwrap_or(0);
    let before = ctx.shared.clock.now_ms();
    f(&ctx.shared.clock, ms)?;
    let now = ctx.shared.clock.now_ms();
    let text = format!("{} (now {now})", command_text(args));
    ctx.core.repl.ledger.lock().marks.push(before, "clock", text);
    crate::control::expire_now(&mut ctx.core.ks, now);
    Ok(Reply::Int(now as i64))
}

fn event_reply(e: &crate::control::history::LockEvent) -> Reply {
    fields_map(
        EVENT_FIELDS,
        [
            Reply::Int(e.id as i64),
            Reply::Int(e.time_ms as i64),
            Reply::Int(e.db as i64),
            Reply::Bulk(e.key.clone()),
            Reply::bulk_str(e.kind),
            Reply::bulk_str(e.event),
            Reply::Bulk(e.holder.clone()),
            Reply::Int(e.count),
            Reply::Int(e.client as i64),
            Reply::bulk_str(&e.command),
        ],
    )
}

/// The fields of a lock event (`EVENTS`).
const EVENT_FIELDS: &[&str] = &["id", "time_ms", "db", "key", "kind", "event", "holder", "count", "client", "command"];

fn opt_int(v: Option<i64>) -> Reply {
    v.map_or(Reply::Nil, Reply::Int)
}

fn lock_reply(l: &LockView) -> Reply {
    let holders = l
        .holders
        .iter()
        .map(|h| {
            Reply::Map(vec![
                (Reply::bulk_str("id"), Reply::Bulk(h.id.clone())),
                (Reply::bulk_str("count"), Reply::Int(h.count)),
                (Reply::bulk_str("lease_ms"), opt_int(h.lease_ms)),
                (Reply::bulk_str("score"), h.score.map_or(Reply::Nil, Reply::Double)),
            ])
        })
        .collect();
    let waiters = l
        .waiters
        .iter()
        .map(|w| {
            Reply::Map(vec![
                (Reply::bulk_str("id"), Reply::Bulk(w.id.clone())),
                (Reply::bulk_str("deadline_ms"), opt_int(w.deadline_ms)),
            ])
        })
        .collect();
    fields_map(
        LOCK_FIELDS,
        [
            Reply::Bulk(l.key.clone()),
            Reply::Int(l.db as i64),
            Reply::bulk_str(l.kind),
            l.mode.clone().map_or(Reply::Nil, Reply::Bulk),
            opt_int(l.lease_ms),
            opt_int(l.value),
            Reply::Array(holders),
            Reply::Array(waiters),
        ],
    )
}

/// The fields of a lock (`LOCKS`).
const LOCK_FIELDS: &[&str] = &["key", "db", "kind", "mode", "lease_ms", "value", "holders", "waiters"];

/// The readable form: one line per lock, then one per holder and waiter.
pub fn locks_text(found: &[LockView]) -> Reply {
    use std::fmt::Write;
    let mut s = String::new();
    for l in found {
        let lease = l.lease_ms.map_or("no lease".to_string(), |ms| format!("lease {ms} ms"));
        let _ = write!(s, "db{} {} {}", l.db, String::from_utf8_lossy(&l.key), l.kind);
        if let Some(m) = &l.mode {
            let _ = write!(s, " mode={}", String::from_utf8_lossy(m));
        }
        if let Some(v) = l.value {
            let _ = write!(s, " value={v}");
        }
        let _ = writeln!(s, " ({lease})");
        for h in &l.holders {
            let _ = write!(s, "  holder {} x{}", String::from_utf8_lossy(&h.id), h.count);
            if let Some(ms) = h.lease_ms {
                let _ = write!(s, " lease {ms} ms");
            }
            if let Some(score) = h.score {
                let _ = write!(s, " score {score}");
            }
            s.push('\n');
        }
        for (i, w) in l.waiters.iter().enumerate() {
            let _ = write!(s, "  waiter #{} {}", i + 1, String::from_utf8_lossy(&w.id));
            if let Some(d) = w.deadline_ms {
                let _ = write!(s, " until {d}");
            }
            s.push('\n');
        }
    }
    Reply::Verbatim("txt", Bytes::from(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every subcommand is in the tree with its lines, and a subcommand has
    /// operations exactly when the table's runner is its handler.
    #[test]
    fn every_subcommand_has_its_table_and_help() {
        for s in RLOCKD_SUBS {
            let t = s.ops.unwrap_or_else(|| panic!("rlockd|{} has no OpTable", s.name));
            assert!(!t.help.is_empty() || !t.ops.is_empty(), "rlockd|{} has no HELP lines", s.name);
            let runs_ops = std::ptr::fn_addr_eq(s.handler, run_ops as super::super::spec::Handler);
            assert_eq!(runs_ops, !t.ops.is_empty() || t.default.is_some(), "rlockd|{}", s.name);
            if let Some(first) = t.ops.first() {
                assert!(!first.help.is_empty() || !t.help.is_empty(), "rlockd|{} {}: no HELP line", s.name, first.name);
            }
            for o in t.ops {
                assert_eq!(o.name, o.name.to_ascii_lowercase());
                assert!(
                    o.counts_own || o.options.is_empty(),
                    "{} {}: options are counted by the handler",
                    s.name,
                    o.name
                );
            }
        }
        let lines: Vec<&str> = help_lines().collect();
        assert_eq!(lines.first(), Some(&HELP_HEAD));
        assert_eq!(&lines[lines.len() - 2..], ["HELP", "    Print this help."]);
    }

    #[test]
    fn a_count_fits_the_required_arguments_and_any_choice_of_the_optional_ones() {
        let moveslot = super::super::cluster::CONTROL.ops.iter().find(|o| o.name == "moveslot").unwrap();
        let fits: Vec<usize> = (0..7).filter(|&n| moveslot.count_fits(n)).collect();
        assert_eq!(fits, [2, 4]);
        let lag = super::super::replication::CONTROL.ops.iter().find(|o| o.name == "lag").unwrap();
        assert_eq!((0..5).filter(|&n| lag.count_fits(n)).collect::<Vec<_>>(), [1, 2]);
        let crash = super::super::replication::CONTROL.ops.iter().find(|o| o.name == "crash").unwrap();
        assert_eq!((0..5).filter(|&n| crash.count_fits(n)).collect::<Vec<_>>(), [0, 1, 2]);
    }

    /// Every `FaultKind` is a row of `FAULT` (`tests/it/rlockd_tree.rs`
    /// checks that each takes the options its row names).
    #[test]
    fn every_fault_kind_is_a_row() {
        let kinds = [
            FaultKind::Error(Bytes::new()),
            FaultKind::Latency { ms: 0, jitter_ms: 0 },
            FaultKind::Close { after: false },
            FaultKind::Freeze { ms: 0 },
            FaultKind::SlowWrite { chunk: 0, delay_ms: 0 },
            FaultKind::CutWrite { bytes: 0 },
            FaultKind::DropMessages,
            FaultKind::DelayMessages { ms: 0 },
        ];
        let rows: Vec<&str> = FAULT.ops.iter().filter(|o| o.group == "kind").map(|o| o.name).collect();
        assert_eq!(rows, kinds.iter().map(FaultKind::name).collect::<Vec<_>>());
    }
}
