//! Blocking commands (BLPOP, BZPOPMIN…): rows live here, grouped under
//! their type family for `COMMAND DOCS`.
//!
//! Each handler first tries to serve at once with the same pop code as its
//! non-blocking sibling; if there is nothing to pop it blocks (or answers
//! the timeout reply when it may not block: scripts, `EXEC`, and the
//! re-run of a waiter by the core, which then keeps waiting).

use bytes::Bytes;

use super::call::call;
use super::list::{self, key_and_elements, parse_end, parse_lr, parse_mpop, End};
use super::zset::{parse_minmax, zmpop_reply, zpop_first};
use super::{cmd, CommandSpec, Ctx, Lookup};
use crate::client::{BlockRequest, Caller, ClientState};
use crate::core::{Core, Shared};
use crate::error::{CmdError, CmdResult};
use crate::num;
use crate::protocol::Reply;

/// The blocking list commands (`COMMAND DOCS` group `list`).
pub static LIST_COMMANDS: &[CommandSpec] = &[
    cmd("blpop", blpop, -3, "write noscript blocking", 1, -2, 1, "@write @list @slow @blocking")
        .hidden_flags("scripts_from_7_2")
        .in_7_2("write blocking", "@write @list @slow @blocking")
        .doc("Remove and get the first element in a list, or block until one is available", "2.0.0"),
    cmd("brpop", brpop, -3, "write noscript blocking", 1, -2, 1, "@write @list @slow @blocking")
        .hidden_flags("scripts_from_7_2")
        .in_7_2("write blocking", "@write @list @slow @blocking")
        .doc("Remove and get the last element in a list, or block until one is available", "2.0.0"),
    cmd("blmove", blmove, 6, "write denyoom noscript blocking", 1, 2, 1, "@write @list @slow @blocking")
        .hidden_flags("scripts_from_7_2")
        .in_7_2("write denyoom blocking", "@write @list @slow @blocking")
        .doc(
            "Pop an element from a list, push it to another list and return it; or block until one is available",
            "6.2.0",
        ),
    cmd("brpoplpush", brpoplpush, 4, "write denyoom noscript blocking", 1, 2, 1, "@write @list @slow @blocking")
        .hidden_flags("scripts_from_7_2")
        .in_7_2("write denyoom blocking", "@write @list @slow @blocking")
        .doc(
            "Pop an element from a list, push it to another list and return it; or block until one is available",
            "2.2.0",
        ),
    cmd("blmpop", blmpop, -5, "write blocking movablekeys", 0, 0, 0, "@write @list @slow @blocking")
        .doc("Pop elements from a list, or block until one is available", "7.0.0"),
];

/// The blocking sorted-set commands (`COMMAND DOCS` group `sorted-set`).
pub static ZSET_COMMANDS: &[CommandSpec] = &[
    cmd("bzpopmin", bzpopmin, -3, "write noscript blocking fast", 1, -2, 1, "@write @sortedset @fast @blocking")
        .hidden_flags("scripts_from_7_2")
        .in_7_2("write blocking fast", "@write @sortedset @fast @blocking")
        .doc(
        "Remove and return the member with the lowest score from one or more sorted sets, or block until one is available",
        "5.0.0",
    ),
    cmd("bzpopmax", bzpopmax, -3, "write noscript blocking fast", 1, -2, 1, "@write @sortedset @fast @blocking")
        .hidden_flags("scripts_from_7_2")
        .in_7_2("write blocking fast", "@write @sortedset @fast @blocking")
        .doc(
        "Remove and return the member with the highest score from one or more sorted sets, or block until one is available",
        "5.0.0",
    ),
    cmd("bzmpop", bzmpop, -5, "write blocking movablekeys", 0, 0, 0, "@write @sortedset @slow @blocking").doc(
        "Remove and return members with scores in a sorted set or block until one is available",
        "7.0.0",
    ),
];

/// Longest wait handed to the core: ~317 years stands for "practically
/// never" without overflowing deadline arithmetic.
const MAX_WAIT_SECS: f64 = 1e10;

/// Redis's `getTimeoutFromObjectOrReply(.., UNIT_SECONDS)`: a long double
/// number of seconds rounded up to whole milliseconds (so `0.0001` waits
/// 1 ms, and `-0.0001` rounds to 0: for ever). A millisecond count that
/// does not fit a `long long` (`inf`, `1e20`) comes out negative in Redis
/// 7.0's C cast; from 7.2 it is out of range, as is any deadline past
/// `LLONG_MAX` ([`check_deadline`]).
pub(crate) fn timeout_arg(ctx: &Ctx<'_>, arg: &[u8]) -> Result<f64, CmdError> {
    let ms = timeout_ms(arg, ctx.core.profile().at_least(7, 2, 0))?;
    check_deadline(ctx, ms as i64)?;
    Ok((ms / 1000.0).min(MAX_WAIT_SECS))
}

/// [`timeout_arg`]'s parse: whole milliseconds, `later` for Redis 7.2+.
fn timeout_ms(arg: &[u8], later: bool) -> Result<f64, CmdError> {
    let too_big = || if later { CmdError::TimeoutOutOfRange } else { CmdError::NegativeTimeout };
    let ms = match num::parse_double(arg) {
        Some(v) => v * 1000.0,
        None => match num::normalize_long_double(arg).as_deref() {
            None => return Err(CmdError::TimeoutNotFloat),
            // Beyond double range: tiny ones round to 1 ms (or 0 below
            // zero), huge ones overflow.
            Some("0" | "-0") if arg.starts_with(b"-") => 0.0,
            Some("0" | "-0") => f64::MIN_POSITIVE,
            Some(s) if s.starts_with('-') => return Err(CmdError::NegativeTimeout),
            Some(_) => return Err(too_big()),
        },
    };
    // 2^63 ms and beyond: past `LLONG_MAX` (7.2), or the C cast's LLONG_MIN.
    if ms >= i64::MAX as f64 {
        return Err(too_big());
    }
    let ms = ms.ceil();
    if ms < 0.0 {
        return Err(CmdError::NegativeTimeout);
    }
    Ok(ms)
}

/// Redis 7.2+'s check on a positive timeout in milliseconds: its deadline
/// (now + timeout) must fit a `long long`. Redis 7.0 has no such check.
pub(crate) fn check_deadline(ctx: &Ctx<'_>, ms: i64) -> Result<(), CmdError> {
    if ms > 0 && ctx.core.profile().at_least(7, 2, 0) && ms > i64::MAX - ctx.shared.clock.now_ms() as i64 {
        return Err(CmdError::TimeoutOutOfRange);
    }
    Ok(())
}

fn bpop(ctx: &mut Ctx<'_>, args: &[Bytes], end: End) -> CmdResult {
    let timeout = timeout_arg(ctx, &args[args.len() - 1])?;
    let keys = &args[1..args.len() - 1];
    if let Some((k, mut v)) = list::pop_first(ctx, keys, end, 1)? {
        let e = v.pop().expect("one element");
        return Ok(Reply::Array(vec![Reply::Bulk(k), e.into()]));
    }
    if !can_block(ctx) {
        return Ok(Reply::NilArray);
    }
    block_on_keys(ctx, args, keys, timeout, Reply::NilArray)
}

fn blpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bpop(ctx, args, End::Left)
}

fn brpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bpop(ctx, args, End::Right)
}

fn bmove(ctx: &mut Ctx<'_>, args: &[Bytes], from: End, to: End, timeout: f64) -> CmdResult {
    if let Some(v) = list::move_element(ctx, &args[1], &args[2], from, to)? {
        return Ok(v.into());
    }
    if !can_block(ctx) {
        return Ok(Reply::Nil);
    }
    // Redis 7.0 times every list waiter out with a null array, BLMOVE too.
    block_on_keys(ctx, args, &args[1..2], timeout, Reply::NilArray)
}

fn blmove(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let from = parse_end(&args[3])?;
    let to = parse_end(&args[4])?;
    let timeout = timeout_arg(ctx, &args[5])?;
    bmove(ctx, args, from, to, timeout)
}

fn brpoplpush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let timeout = timeout_arg(ctx, &args[3])?;
    bmove(ctx, args, End::Right, End::Left, timeout)
}

fn blmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let p = parse_mpop(args, 2, parse_lr)?;
    let timeout = timeout_arg(ctx, &args[1])?;
    if let Some((k, elems)) = list::pop_first(ctx, &p.keys, p.where_, p.count)? {
        return Ok(key_and_elements(k, elems));
    }
    if !can_block(ctx) {
        return Ok(Reply::NilArray);
    }
    block_on_keys(ctx, args, &p.keys, timeout, Reply::NilArray)
}

fn bzpop(ctx: &mut Ctx<'_>, args: &[Bytes], max: bool) -> CmdResult {
    let timeout = timeout_arg(ctx, &args[args.len() - 1])?;
    let keys = &args[1..args.len() - 1];
    if let Some((k, mut items)) = zpop_first(ctx, keys, max, 1)? {
        let (m, s) = items.pop().expect("one member");
        return Ok(Reply::Array(vec![Reply::Bulk(k), Reply::Bulk(m), Reply::Double(s)]));
    }
    if !can_block(ctx) {
        return Ok(Reply::NilArray);
    }
    block_on_keys(ctx, args, keys, timeout, Reply::NilArray)
}

fn bzpopmin(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bzpop(ctx, args, false)
}

fn bzpopmax(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    bzpop(ctx, args, true)
}

fn bzmpop(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let p = parse_mpop(args, 2, parse_minmax)?;
    let timeout = timeout_arg(ctx, &args[1])?;
    if let Some((k, items)) = zpop_first(ctx, &p.keys, p.where_, p.count as u64)? {
        return Ok(zmpop_reply(k, items));
    }
    if !can_block(ctx) {
        return Ok(Reply::NilArray);
    }
    block_on_keys(ctx, args, &p.keys, timeout, Reply::NilArray)
}

/// True if the running command may block (not inside a script, `EXEC`, or
/// the re-run of a waiter).
pub fn can_block(ctx: &Ctx<'_>) -> bool {
    ctx.client.may_block()
}

/// Blocks the calling client, with no keys and no deadline, until another
/// task answers the returned waiter (a test-control operation that runs
/// off the event loop: a failover, a crash); `unanswered` is the error it
/// gets if the waiter is dropped unanswered.
pub(crate) fn block_until_answered(ctx: &mut Ctx<'_>, unanswered: &'static str) -> u64 {
    let (waiter, rx) = ctx.core.blocking.add_waiter(
        ctx.client.shared.clone(),
        ctx.client.db(),
        ctx.client.resp,
        Vec::new(),
        &[],
        Reply::error(unanswered),
    );
    ctx.client.block = Some(BlockRequest { waiter, rx, deadline: None });
    waiter
}

/// Blocks the calling client on `keys` (in the client's database) for
/// `timeout_secs` (0 = forever). `timeout_reply` is sent if it times out.
/// The returned reply is a placeholder the connection does not send.
pub fn block_on_keys(
    ctx: &mut Ctx<'_>,
    argv: &[Bytes],
    keys: &[Bytes],
    timeout_secs: f64,
    timeout_reply: Reply,
) -> CmdResult {
    let (id, rx) = ctx.core.blocking.add_waiter(
        ctx.client.shared.clone(),
        ctx.client.db(),
        ctx.client.resp,
        argv.to_vec(),
        keys,
        timeout_reply,
    );
    ctx.core.ks.sig.track_touches = true;
    let deadline = (timeout_secs > 0.0).then(|| ctx.shared.clock.now_ms() + (timeout_secs * 1000.0) as u64);
    ctx.client.block = Some(BlockRequest { waiter: id, rx, deadline });
    Ok(Reply::Nil)
}

/// Serves waiters of ready keys: called after a top-level command (by
/// dispatch) and after the server's own changes (active expiry).
///
/// As Redis 7.0's `handleClientsBlockedOnKeys`: pops waiting on a list or
/// sorted set are served from it, readers waiting on a stream re-read it;
/// and an `XREADGROUP` waiting on a key that no longer holds a stream
/// (deleted, overwritten by another type, flushed, swapped away) is answered
/// `-UNBLOCKED the stream key no longer exists` at once: its group went
/// with the stream. Other waiters keep waiting whatever the key became.
pub fn serve_ready(core: &mut Core, shared: &Shared) {
    if !core.blocking.begin_serving() {
        return;
    }
    let rerun_all = core.profile().at_least(7, 2, 0);
    while let Some(key) = core.blocking.ready.pop_front() {
        if rerun_all {
            serve_by_rerun(core, shared, &key);
            continue;
        }
        if serve_stream_waiters(core, shared, &key) {
            continue;
        }
        // The first pop waiting on the key (stream readers wait for a stream).
        let first_pop = |b: &crate::blocking::Blocking| {
            b.by_key.get(&key).and_then(|q| q.iter().find(|id| !is_stream_reader(&b.waiters[id].argv)).copied())
        };
        while let Some(id) = first_pop(&core.blocking) {
            // Redis serves a waiter from the key that became ready, and only
            // if it holds the type the command pops from; then any error
            // (a BLMOVE destination of the wrong type) is the answer.
            let argv = &core.blocking.waiters[&id].argv;
            let wants = if argv[0].len() > 2 && argv[0][..2].eq_ignore_ascii_case(b"bz") { "zset" } else { "list" };
            let type_ok = core.ks.dbs[key.0].peek(&key.1).is_some_and(|e| e.value.type_name() == wants);
            if !type_ok {
                break;
            }
            let argv = narrow_to_key(argv.clone(), &key.1.to_bytes());
            let Some(reply) = rerun(core, shared, id, &argv) else {
                break;
            };
            core.blocking.serve(id, reply);
        }
        unblock_group_readers(core, &key);
    }
    core.blocking.end_serving();
    core.ks.sig.track_touches = core.watches.is_active() || core.blocking.is_active();
}

/// Redis 7.2's `handleClientsBlockedOnKey`: each waiter queued on `key`
/// when it became ready (in order, once) whose command waits for the type
/// the key now holds — or any change, for `XREADGROUP`, whose group may
/// have gone with its stream — runs its whole command again, as it was
/// sent (`XREAD`'s `$` already resolved): the first of its keys with data
/// serves it, and an error is its answer. A re-run that finds nothing
/// blocks again behind the other waiters, keeping its deadline.
fn serve_by_rerun(core: &mut Core, shared: &Shared, key: &(usize, crate::db::Key)) {
    let Some(queue) = core.blocking.by_key.get(key) else {
        return;
    };
    let ids: Vec<u64> = queue.iter().copied().collect();
    for id in ids {
        let Some(w) = core.blocking.waiters.get(&id) else {
            continue;
        };
        let name = &w.argv[0];
        let on_any_change = name.eq_ignore_ascii_case(b"xreadgroup");
        let wants = if is_stream_reader(&w.argv) {
            "stream"
        } else if name.len() > 2 && name[..2].eq_ignore_ascii_case(b"bz") {
            "zset"
        } else {
            "list"
        };
        let holds = core.ks.dbs[key.0].peek(&key.1).map(|e| e.value.type_name());
        if !on_any_change && holds != Some(wants) {
            continue;
        }
        let argv = w.argv.clone();
        match rerun(core, shared, id, &argv) {
            Some(reply) => core.blocking.serve(id, reply),
            None => core.blocking.requeue(id),
        }
    }
}

/// Redis's text for an `XREADGROUP` whose stream went away while it waited.
const STREAM_GONE: &str = "UNBLOCKED the stream key no longer exists";

/// Answers every `XREADGROUP` waiting on `key` (which holds no stream now)
/// with [`STREAM_GONE`], in arrival order.
fn unblock_group_readers(core: &mut Core, key: &(usize, crate::db::Key)) {
    let Some(queue) = core.blocking.by_key.get(key) else {
        return;
    };
    let b = &core.blocking;
    let ids: Vec<u64> =
        queue.iter().copied().filter(|id| b.waiters[id].argv[0].eq_ignore_ascii_case(b"xreadgroup")).collect();
    for id in ids {
        let reply = Reply::error(STREAM_GONE);
        if let Lookup::Found(c) = super::table().lookup(&core.blocking.waiters[&id].argv) {
            super::call::count_unblocked(core, c, 0, &reply);
        }
        core.blocking.serve(id, reply);
    }
}

/// Re-runs waiter `id`'s command (`argv`, already narrowed to the key that
/// became ready) as that client: its database and protocol, as a blocked
/// re-run. Returns the reply if it serves the waiter (anything but a nil:
/// a nil leaves it waiting), the unblocked command's statistics counted
/// as Redis counts them (its call was counted when it blocked). None if
/// the command is not in the table or read nothing.
fn rerun(core: &mut Core, shared: &Shared, id: u64, argv: &[Bytes]) -> Option<Reply> {
    let Lookup::Found(c) = super::table().lookup(argv) else {
        return None;
    };
    let w = &core.blocking.waiters[&id];
    let mut state = ClientState::new(w.client.clone(), true);
    state.set_db(w.db);
    state.resp = w.resp;
    state.caller = Caller::BlockedRerun;
    let original = w.argv.clone();
    let mut sub = Ctx { core, client: &mut state, shared };
    let start = std::time::Instant::now();
    let reply = call(&mut sub, c, argv);
    if matches!(reply, Reply::Nil | Reply::NilArray) {
        return None;
    }
    let usec = start.elapsed().as_micros() as u64;
    super::call::count_unblocked(sub.core, c, usec, &reply);
    super::call::slowlog_unblocked(&mut sub, &original, usec);
    Some(reply)
}

fn is_stream_reader(argv: &[Bytes]) -> bool {
    argv[0].eq_ignore_ascii_case(b"xread") || argv[0].eq_ignore_ascii_case(b"xreadgroup")
}

/// Stream readers (XREAD, XREADGROUP) waiting on `key`, when it holds a
/// stream: each re-runs in arrival order, narrowed to that key, and is
/// served if it reads something. Unlike pops, one reader finding nothing
/// says nothing about the next (their ids differ), so every one is tried.
/// True if the key is a stream (pops waiting on it cannot be served).
fn serve_stream_waiters(core: &mut Core, shared: &Shared, key: &(usize, crate::db::Key)) -> bool {
    let is_stream = core.ks.dbs[key.0].peek(&key.1).is_some_and(|e| e.value.type_name() == "stream");
    if !is_stream {
        return false;
    }
    let Some(queue) = core.blocking.by_key.get(key) else {
        return true;
    };
    let ids: Vec<u64> = queue.iter().copied().collect();
    for id in ids {
        let Some(w) = core.blocking.waiters.get(&id) else {
            continue;
        };
        if !is_stream_reader(&w.argv) {
            continue;
        }
        let argv = narrow_streams(&w.argv, &key.1.to_bytes());
        if let Some(reply) = rerun(core, shared, id, &argv) {
            core.blocking.serve(id, reply);
        }
    }
    true
}

/// An XREAD / XREADGROUP line narrowed to the stream `key` (and its id):
/// Redis serves a blocked reader from the one stream that got data.
fn narrow_streams(argv: &[Bytes], key: &Bytes) -> Vec<Bytes> {
    // Walk the options as the command parses them (a group or consumer
    // may be named "streams").
    let mut i = 1;
    let pos = loop {
        let Some(a) = argv.get(i) else {
            return argv.to_vec();
        };
        if a.eq_ignore_ascii_case(b"streams") {
            break i;
        }
        i += if a.eq_ignore_ascii_case(b"group") {
            3
        } else if a.eq_ignore_ascii_case(b"count") || a.eq_ignore_ascii_case(b"block") {
            2
        } else {
            1
        };
    };
    let n = (argv.len() - pos - 1) / 2;
    let keys = &argv[pos + 1..pos + 1 + n];
    let Some(k) = keys.iter().position(|x| x == key) else {
        return argv.to_vec();
    };
    let mut out = argv[..=pos].to_vec();
    out.push(key.clone());
    out.push(argv[pos + 1 + n + k].clone());
    out
}

/// A blocked command's arguments with its keys narrowed to `key`, the one
/// that became ready (`BLPOP a b 0` → `BLPOP b 0`; `BLMPOP 0 2 a b LEFT` →
/// `BLMPOP 0 1 b LEFT`): the re-run pops from that key, as Redis does.
fn narrow_to_key(argv: Vec<Bytes>, key: &Bytes) -> Vec<Bytes> {
    let name = argv[0].to_ascii_lowercase();
    match &name[..] {
        b"blpop" | b"brpop" | b"bzpopmin" | b"bzpopmax" => {
            vec![argv[0].clone(), key.clone(), argv[argv.len() - 1].clone()]
        }
        b"blmpop" | b"bzmpop" => {
            let numkeys = std::str::from_utf8(&argv[2]).ok().and_then(|n| n.parse::<usize>().ok());
            match numkeys {
                Some(n) if 3 + n <= argv.len() => {
                    let mut v = vec![argv[0].clone(), argv[1].clone(), Bytes::from_static(b"1"), key.clone()];
                    v.extend_from_slice(&argv[3 + n..]);
                    v
                }
                _ => argv,
            }
        }
        _ => argv,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_round_up_to_milliseconds() {
        for later in [false, true] {
            assert_eq!(timeout_ms(b"0", later).unwrap(), 0.0);
            assert_eq!(timeout_ms(b"1.5", later).unwrap(), 1500.0);
            assert_eq!(timeout_ms(b"0.0001", later).unwrap(), 1.0);
            assert_eq!(timeout_ms(b"-0.0001", later).unwrap(), 0.0);
            assert_eq!(timeout_ms(b"1e-400", later).unwrap(), 1.0);
            assert_eq!(timeout_ms(b"-1e-400", later).unwrap(), 0.0);
            assert_eq!(timeout_ms(b"-1", later).unwrap_err(), CmdError::NegativeTimeout);
            assert_eq!(timeout_ms(b"-inf", later).unwrap_err(), CmdError::NegativeTimeout);
            assert_eq!(timeout_ms(b"-1e400", later).unwrap_err(), CmdError::NegativeTimeout);
            assert_eq!(timeout_ms(b"abc", later).unwrap_err(), CmdError::TimeoutNotFloat);
        }
        // Too large for a `long long` of milliseconds: 7.0's cast makes it
        // negative, 7.2 says so.
        for big in [&b"inf"[..], b"1e20", b"1e400"] {
            assert_eq!(timeout_ms(big, false).unwrap_err(), CmdError::NegativeTimeout);
            assert_eq!(timeout_ms(big, true).unwrap_err(), CmdError::TimeoutOutOfRange);
        }
    }
}
