//! The commands a Sentinel answers, one row each (name, arity, handler),
//! and their dispatch: the lookup, the subscribed-context check, the arity
//! check, a container's subcommand (`SENTINEL …`, `CLIENT …`), with the
//! main command table's error texts (`crate::cmd::registry`).
//!
//! Handlers never touch a socket: most answer at once from the group's
//! state and the connection's [`Session`]; those that read or change the
//! servers (`INFO`, `SENTINEL MASTER`, `REPLICAS`, `FAILOVER`…) wait on
//! `nodes.rs`. The records they print are `replies.rs`'s.
//!
//! Where the current answers differ from redis-sentinel 7.0 (`COMMAND`
//! lists nothing; `QUIT` and `RESET` are answered; `AUTH` and `ROLE` take
//! any arguments; a RESP2 subscriber's refused command is refused before
//! it is looked up), the rows say so; `COMMAND COUNT` answers Redis's
//! count ([`REDIS_COMMANDS`]).

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;

use super::failover::NO_MASTER;
use super::group::Member;
use super::pubsub::Subscriptions;
use super::replies;
use super::state::Setting;
use crate::cmd::registry::{arity_ok, unknown_command_error, unknown_subcommand_error};
use crate::error::CmdError;
use crate::protocol::{Reply, Resp};

/// A connection's state, as its commands see and change it.
#[derive(Debug)]
pub(super) struct Session {
    pub id: u64,
    pub resp: Resp,
    pub name: Bytes,
    pub subs: Subscriptions,
    /// Close the connection once the reply is written (`QUIT`).
    pub close: bool,
}

impl Session {
    pub fn new(id: u64) -> Session {
        Session { id, resp: Resp::V2, name: Bytes::new(), subs: Subscriptions::default(), close: false }
    }
}

/// A reply still to come: the handler waits on the servers.
type Pending<'a> = Pin<Box<dyn Future<Output = Reply> + Send + 'a>>;

/// How a row runs.
#[derive(Clone, Copy)]
enum Run {
    /// At once.
    Now(fn(&Member, &mut Session, &[Bytes]) -> Reply),
    /// Waiting on the servers it reads or changes.
    Wait(for<'a> fn(&'a Member, &'a [Bytes]) -> Pending<'a>),
    /// A container: the row of its subcommand (`argv[1]`) runs.
    Subs(&'static [Row]),
}

/// One command, or subcommand, a Sentinel answers.
#[derive(Clone, Copy)]
struct Row {
    /// Lower case.
    name: &'static str,
    /// Redis's rule: `n` exactly `n` arguments, `-n` at least `n`.
    arity: i32,
    run: Run,
    /// A RESP2 client with subscriptions may run it.
    subscribed: bool,
}

const fn now(name: &'static str, arity: i32, f: fn(&Member, &mut Session, &[Bytes]) -> Reply) -> Row {
    Row { name, arity, run: Run::Now(f), subscribed: false }
}

const fn wait(name: &'static str, arity: i32, f: for<'a> fn(&'a Member, &'a [Bytes]) -> Pending<'a>) -> Row {
    Row { name, arity, run: Run::Wait(f), subscribed: false }
}

const fn subs(name: &'static str, arity: i32, rows: &'static [Row]) -> Row {
    Row { name, arity, run: Run::Subs(rows), subscribed: false }
}

impl Row {
    /// Allowed to a RESP2 subscriber.
    const fn subscribed(mut self) -> Row {
        self.subscribed = true;
        self
    }
}

/// The commands, by name.
static COMMANDS: &[Row] = &[
    now("ping", -1, ping).subscribed(),
    // Not in redis-sentinel 7.0's table (it answers "unknown command").
    now("quit", -1, quit).subscribed(),
    // Redis: arity -2.
    now("auth", -1, auth),
    now("hello", -1, hello),
    subs("client", -2, CLIENT),
    now("command", -1, command),
    // Redis: arity 1.
    now("role", -1, role),
    wait("info", -1, info),
    now("subscribe", -2, subscribe).subscribed(),
    now("psubscribe", -2, psubscribe).subscribed(),
    now("unsubscribe", -1, unsubscribe).subscribed(),
    now("punsubscribe", -1, punsubscribe).subscribed(),
    now("publish", 3, publish),
    subs("sentinel", -2, SENTINEL),
    now("shutdown", -1, shutdown),
    // Not in redis-sentinel 7.0's table.
    now("reset", -1, reset).subscribed(),
];

/// `SENTINEL` subcommands.
static SENTINEL: &[Row] = &[
    now("ckquorum", 3, ckquorum),
    wait("failover", 3, failover),
    now("flushconfig", 2, ok),
    now("get-master-addr-by-name", 3, get_master_addr_by_name),
    // Redis: arity 2.
    now("help", -2, sentinel_help),
    wait("master", 3, master),
    wait("masters", 2, masters),
    now("myid", 2, myid),
    now("pending-scripts", 2, pending_scripts),
    wait("replicas", 3, replicas),
    now("reset", 3, reset_masters),
    now("sentinels", 3, sentinels),
    now("set", -5, set),
    wait("slaves", 3, replicas),
];

/// `CLIENT` subcommands (Redis: `GETNAME` and `ID` take no argument).
static CLIENT: &[Row] =
    &[now("getname", -2, client_getname), now("id", -2, client_id), now("setname", -2, client_setname)];

/// The commands redis-sentinel 7.0.15 has (`COMMAND LIST`): `COMMAND
/// COUNT` answers their number. rlockd's Sentinel has no `ACL`, and answers
/// `QUIT` and `RESET` besides (a unit test holds the table to this list).
pub(super) const REDIS_COMMANDS: &[&str] = &[
    "acl",
    "auth",
    "client",
    "command",
    "hello",
    "info",
    "ping",
    "psubscribe",
    "publish",
    "punsubscribe",
    "role",
    "sentinel",
    "shutdown",
    "subscribe",
    "unsubscribe",
];

fn find(rows: &'static [Row], name: &[u8]) -> Option<&'static Row> {
    rows.iter().find(|r| r.name.as_bytes().eq_ignore_ascii_case(name))
}

fn error(e: CmdError) -> Reply {
    Reply::Error(e.to_bytes())
}

/// Runs one command line.
pub(super) async fn run(me: &Member, s: &mut Session, argv: &[Bytes]) -> Reply {
    let row = find(COMMANDS, &argv[0]);
    // A RESP2 subscriber may only (un)subscribe, ping, quit and reset.
    if s.resp == Resp::V2 && s.subs.count() > 0 && !row.is_some_and(|r| r.subscribed) {
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        return Reply::error(format!("ERR Can't execute '{name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"));
    }
    let Some(mut row) = row else { return error(unknown_command_error(argv)) };
    if !arity_ok(row.arity, argv.len()) {
        return error(CmdError::WrongArity(row.name.into()));
    }
    if let Run::Subs(rows) = row.run {
        let Some(sub) = find(rows, &argv[1]) else { return error(unknown_subcommand_error(argv)) };
        if !arity_ok(sub.arity, argv.len()) {
            return error(CmdError::WrongArity(format!("{}|{}", row.name, sub.name)));
        }
        row = sub;
    }
    match row.run {
        Run::Now(f) => f(me, s, argv),
        Run::Wait(f) => f(me, argv).await,
        // Containers are not nested (a unit test holds the tables to it).
        Run::Subs(_) => error(unknown_subcommand_error(argv)),
    }
}

fn ping(_: &Member, s: &mut Session, argv: &[Bytes]) -> Reply {
    if argv.len() > 2 {
        return error(CmdError::WrongArity("ping".into()));
    }
    if s.subs.count() > 0 && s.resp == Resp::V2 {
        return Reply::Array(vec![
            Reply::bulk_str("pong"),
            argv.get(1).cloned().map_or(Reply::bulk_str(""), Reply::Bulk),
        ]);
    }
    argv.get(1).cloned().map_or(Reply::status("PONG"), Reply::Bulk)
}

fn quit(_: &Member, s: &mut Session, _: &[Bytes]) -> Reply {
    s.close = true;
    Reply::ok()
}

fn auth(_: &Member, _: &mut Session, _: &[Bytes]) -> Reply {
    Reply::error("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?")
}

fn hello(_: &Member, s: &mut Session, argv: &[Bytes]) -> Reply {
    if let Some(v) = argv.get(1) {
        match v.as_ref() {
            b"2" => s.resp = Resp::V2,
            b"3" => s.resp = Resp::V3,
            _ => return Reply::error("NOPROTO unsupported protocol version"),
        }
    }
    let mut i = 2;
    while i < argv.len() {
        if argv[i].eq_ignore_ascii_case(b"setname") && i + 1 < argv.len() {
            s.name = argv[i + 1].clone();
            i += 2;
        } else if argv[i].eq_ignore_ascii_case(b"auth") && i + 2 < argv.len() {
            i += 3;
        } else {
            return Reply::error(format!("ERR Syntax error in HELLO option '{}'", String::from_utf8_lossy(&argv[i])));
        }
    }
    Reply::Map(vec![
        (Reply::bulk_str("server"), Reply::bulk_str("redis")),
        (Reply::bulk_str("version"), Reply::bulk_str(crate::version::REDIS_VERSION)),
        (Reply::bulk_str("proto"), Reply::Int(if s.resp == Resp::V3 { 3 } else { 2 })),
        (Reply::bulk_str("id"), Reply::Int(s.id as i64)),
        (Reply::bulk_str("mode"), Reply::bulk_str("sentinel")),
        (Reply::bulk_str("modules"), Reply::Array(vec![])),
    ])
}

fn client_getname(_: &Member, s: &mut Session, _: &[Bytes]) -> Reply {
    if s.name.is_empty() {
        Reply::Nil
    } else {
        Reply::Bulk(s.name.clone())
    }
}

fn client_id(_: &Member, s: &mut Session, _: &[Bytes]) -> Reply {
    Reply::Int(s.id as i64)
}

fn client_setname(_: &Member, s: &mut Session, argv: &[Bytes]) -> Reply {
    // Any other number of arguments is an unknown subcommand here (Redis:
    // a wrong number of arguments).
    if argv.len() != 3 {
        return error(unknown_subcommand_error(argv));
    }
    s.name = argv[2].clone();
    Reply::ok()
}

fn command(_: &Member, _: &mut Session, argv: &[Bytes]) -> Reply {
    match argv.get(1) {
        Some(a) if a.eq_ignore_ascii_case(b"count") => Reply::Int(REDIS_COMMANDS.len() as i64),
        _ => Reply::Array(Vec::new()),
    }
}

fn role(me: &Member, _: &mut Session, _: &[Bytes]) -> Reply {
    let names = me.group.state.lock().masters.iter().map(|m| Reply::bulk_str(&m.name)).collect();
    Reply::Array(vec![Reply::bulk_str("sentinel"), Reply::Array(names)])
}

fn info<'a>(me: &'a Member, argv: &'a [Bytes]) -> Pending<'a> {
    Box::pin(async move { Reply::Verbatim("txt", Bytes::from(replies::info(me, argv.get(1)).await)) })
}

fn subscribe(_: &Member, s: &mut Session, argv: &[Bytes]) -> Reply {
    s.subs.subscribe(false, &argv[1..], s.resp)
}

fn psubscribe(_: &Member, s: &mut Session, argv: &[Bytes]) -> Reply {
    s.subs.subscribe(true, &argv[1..], s.resp)
}

fn unsubscribe(_: &Member, s: &mut Session, argv: &[Bytes]) -> Reply {
    s.subs.unsubscribe(false, &argv[1..], s.resp)
}

fn punsubscribe(_: &Member, s: &mut Session, argv: &[Bytes]) -> Reply {
    s.subs.unsubscribe(true, &argv[1..], s.resp)
}

fn publish(_: &Member, _: &mut Session, _: &[Bytes]) -> Reply {
    Reply::Int(0)
}

fn shutdown(_: &Member, _: &mut Session, _: &[Bytes]) -> Reply {
    Reply::error("ERR rlockd's Sentinels stop with the process")
}

fn reset(_: &Member, s: &mut Session, _: &[Bytes]) -> Reply {
    s.subs.clear();
    s.resp = Resp::V2;
    Reply::status("RESET")
}

fn ok(_: &Member, _: &mut Session, _: &[Bytes]) -> Reply {
    Reply::ok()
}

fn get_master_addr_by_name(me: &Member, _: &mut Session, argv: &[Bytes]) -> Reply {
    match me.group.state.lock().master(&argv[2]) {
        Some(m) => {
            Reply::Array(vec![Reply::bulk_str(&m.addr.ip().to_string()), Reply::bulk_str(&m.addr.port().to_string())])
        }
        None => Reply::NilArray,
    }
}

fn masters<'a>(me: &'a Member, _: &'a [Bytes]) -> Pending<'a> {
    Box::pin(async move {
        let all = me.group.state.lock().masters.clone();
        let mut out = Vec::new();
        for m in &all {
            out.push(replies::master(me, m).await);
        }
        Reply::Array(out)
    })
}

fn master<'a>(me: &'a Member, argv: &'a [Bytes]) -> Pending<'a> {
    Box::pin(async move {
        let Some(m) = me.group.state.lock().master(&argv[2]).cloned() else { return Reply::error(NO_MASTER) };
        replies::master(me, &m).await
    })
}

fn replicas<'a>(me: &'a Member, argv: &'a [Bytes]) -> Pending<'a> {
    Box::pin(async move {
        let Some(m) = me.group.state.lock().master(&argv[2]).cloned() else { return Reply::error(NO_MASTER) };
        replies::replicas(me, &m).await
    })
}

fn sentinels(me: &Member, _: &mut Session, argv: &[Bytes]) -> Reply {
    if me.group.state.lock().master(&argv[2]).is_none() {
        return Reply::error(NO_MASTER);
    }
    replies::sentinels(me)
}

fn ckquorum(me: &Member, _: &mut Session, argv: &[Bytes]) -> Reply {
    let st = me.group.state.lock();
    let Some(m) = st.master(&argv[2]) else { return Reply::error(NO_MASTER) };
    let usable = st.sentinels.len() as u32;
    if usable < m.quorum {
        Reply::error(format!("NOQUORUM {usable} usable Sentinels. Not enough available Sentinels to reach the specified quorum for this master"))
    } else if usable < usable / 2 + 1 {
        Reply::error(format!("NOQUORUM {usable} usable Sentinels. Not enough available Sentinels to reach the majority and authorize a failover"))
    } else {
        Reply::Status(Bytes::from(format!(
            "OK {usable} usable Sentinels. Quorum and failover authorization can be reached"
        )))
    }
}

fn myid(me: &Member, _: &mut Session, _: &[Bytes]) -> Reply {
    Reply::bulk_str(&me.id)
}

/// `SENTINEL RESET pattern`: how many primaries match (nothing is reset:
/// the group reads the servers each time).
fn reset_masters(me: &Member, _: &mut Session, argv: &[Bytes]) -> Reply {
    let st = me.group.state.lock();
    Reply::Int(st.masters.iter().filter(|m| crate::glob::matches(&argv[2], m.name.as_bytes(), false)).count() as i64)
}

/// `SENTINEL SET name option value [option value …]`: the options apply in
/// order, for the whole group, up to the first bad one (as in Redis).
fn set(me: &Member, _: &mut Session, argv: &[Bytes]) -> Reply {
    let mut st = me.group.state.lock();
    let Some(m) = st.master_mut(&argv[2]) else { return Reply::error(NO_MASTER) };
    for pair in argv[3..].chunks(2) {
        let option = String::from_utf8_lossy(&pair[0]);
        let (Some(setting), [_, value]) = (Setting::named(&option.to_ascii_lowercase()), pair) else {
            return Reply::error(format!("ERR Unknown option or number of arguments for SENTINEL SET '{option}'"));
        };
        let Some(v) = crate::num::parse_i64_strict(value).filter(|v| *v > 0) else {
            return Reply::error(format!(
                "ERR Invalid argument '{}' for SENTINEL SET '{option}'",
                String::from_utf8_lossy(value)
            ));
        };
        m.set(setting, v as u64);
    }
    Reply::ok()
}

fn pending_scripts(_: &Member, _: &mut Session, _: &[Bytes]) -> Reply {
    Reply::Array(Vec::new())
}

fn failover<'a>(me: &'a Member, argv: &'a [Bytes]) -> Pending<'a> {
    Box::pin(async move {
        if me.group.state.lock().master(&argv[2]).is_none() {
            return Reply::error(NO_MASTER);
        }
        match super::nodes::failover(&me.group, &argv[2]).await {
            Ok(()) => Reply::ok(),
            Err(e) => Reply::error(e),
        }
    })
}

fn sentinel_help(_: &Member, _: &mut Session, _: &[Bytes]) -> Reply {
    Reply::Array(replies::SENTINEL_HELP.iter().map(|l| Reply::Status(Bytes::from_static(l.as_bytes()))).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_redis_commands_but_quit_and_reset() {
        for row in COMMANDS {
            assert_eq!(REDIS_COMMANDS.contains(&row.name), !["quit", "reset"].contains(&row.name), "{}", row.name);
        }
        let missing: Vec<&str> =
            REDIS_COMMANDS.iter().copied().filter(|n| find(COMMANDS, n.as_bytes()).is_none()).collect();
        assert_eq!(missing, ["acl"]);
        assert_eq!(REDIS_COMMANDS.len(), 15, "redis-sentinel 7.0's COMMAND COUNT");
    }

    #[test]
    fn names_are_lower_case_and_unique() {
        for rows in [COMMANDS, SENTINEL, CLIENT] {
            for (i, r) in rows.iter().enumerate() {
                assert_eq!(r.name, r.name.to_ascii_lowercase());
                assert!(rows[..i].iter().all(|o| o.name != r.name), "{} twice", r.name);
                assert!(
                    matches!(r.run, Run::Now(_) | Run::Wait(_)) || std::ptr::eq(rows, COMMANDS),
                    "{} nested",
                    r.name
                );
            }
        }
        assert_eq!(find(COMMANDS, b"SeNtInEl").map(|r| r.name), Some("sentinel"));
    }
}
