//! Shared pieces of the fuzz targets: checks that can fail (`check`), the Lua
//! script generator (`lua_gen`), and the differential runner against a real
//! redis-server (`diff`).

pub mod check;
pub mod diff;
pub mod lua_gen;

use bytes::BytesMut;
use rlockd::protocol::{Reply, RequestParser};
use rlockd::testing::Harness;

/// Commands the in-process harness must not run: they stop the process,
/// stall it, or turn its one client into something else.
pub fn skipped(argv: &[bytes::Bytes]) -> bool {
    let name = argv[0].to_ascii_lowercase();
    let sub = argv.get(1).map(|a| a.to_ascii_lowercase()).unwrap_or_default();
    matches!(&name[..], b"shutdown" | b"debug" | b"monitor")
        || (name == b"client" && (sub == b"pause" || sub == b"kill"))
}

/// Runs `f` on a thread with the stack the server gives its command threads
/// (`testing::SCRIPT_STACK`): a script's reply may nest ~8,000 levels deep,
/// which overflows the fuzzer's own thread, not the server's. A panic
/// inside is re-raised here, so libFuzzer still sees it.
fn on_server_stack<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|s| {
        std::thread::Builder::new()
            .stack_size(rlockd::testing::SCRIPT_STACK)
            .spawn_scoped(s, f)
            .expect("spawn a thread")
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p))
    })
}

/// Runs every command parsed from `data` through a fresh harness and checks
/// each reply with [`check::check_reply`]. Afterwards the server must still
/// answer, and each database's `DBSIZE` must agree with `KEYS *`.
pub fn run_dispatch(data: &[u8]) -> Result<(), String> {
    on_server_stack(|| dispatch(data))
}

fn dispatch(data: &[u8]) -> Result<(), String> {
    let mut h = Harness::new();
    let mut p = RequestParser::new();
    let mut buf = BytesMut::from(data);
    while let Ok(Some(argv)) = p.next(&mut buf) {
        if skipped(&argv) {
            continue;
        }
        let shown = format!("{:?}", argv.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect::<Vec<_>>());
        let r = h.run_argv(argv);
        check::check_reply(&r).map_err(|e| format!("{shown}: {e}"))?;
    }
    check_harness_alive(&mut h)
}

/// RESET the harness's client, then PING, and compare DBSIZE with KEYS in
/// every database (a failing SELECT, e.g. after ACL changes, ends the check).
///
/// DBSIZE counts keys whose TTL ran out but that no one reclaimed yet (as
/// Redis's does) while KEYS skips them, so the clock is frozen first and
/// every key due at that instant expired (`CLOCK ADVANCE 0`): a key with a
/// 1 ms TTL must not make the check depend on timing.
pub fn check_harness_alive(h: &mut Harness) -> Result<(), String> {
    h.run(&["RESET"]);
    match h.run(&["PING"]) {
        Reply::Status(s) if &s[..] == b"PONG" => {}
        Reply::Error(e) if e.starts_with(b"NOAUTH") => return Ok(()),
        other => return Err(format!("PING after the run answered {other:?}")),
    }
    for step in [&["RLOCKD", "CLOCK", "FREEZE"][..], &["RLOCKD", "CLOCK", "ADVANCE", "0"]] {
        if let Reply::Error(e) = h.run(step) {
            return Err(format!("{step:?} answered {}", String::from_utf8_lossy(&e)));
        }
    }
    for db in 0..16 {
        if h.run(&["SELECT", &db.to_string()]).is_error() {
            break;
        }
        let size = h.run(&["DBSIZE"]);
        let keys = h.run(&["KEYS", "*"]);
        match (&size, &keys) {
            (Reply::Int(n), Reply::Array(k)) if *n as usize == k.len() => {}
            _ => return Err(format!("db {db}: DBSIZE {size:?} but KEYS * {keys:?}")),
        }
    }
    Ok(())
}

/// Runs a script generated from `data` through EVAL on a fresh harness (in
/// RESP2 or RESP3, as the first byte says), checks the reply, and checks
/// that the server still runs scripts and answers afterwards.
pub fn run_lua(data: &[u8]) -> Result<(), String> {
    on_server_stack(|| lua(data))
}

fn lua(data: &[u8]) -> Result<(), String> {
    let (resp3, data) = match data.split_first() {
        Some((b, rest)) => (b & 1 == 1, rest),
        None => (false, data),
    };
    let mut gen = lua_gen::LuaGen::new(data);
    let script = gen.script();
    let rest = gen.rest();
    let mut argv: Vec<Vec<u8>> = vec![b"EVAL".to_vec(), script.clone().into_bytes(), b"2".to_vec()];
    let mut parts = rest.split(|&b| b == 0xff).map(<[u8]>::to_vec);
    argv.push(parts.next().unwrap_or_else(|| b"k1".to_vec()));
    argv.push(parts.next().unwrap_or_else(|| b"k2".to_vec()));
    argv.extend(parts.take(6));
    if std::env::var_os("RLOCKD_FUZZ_SHOW").is_some() {
        eprintln!("--- script ---\n{script}--- end ---");
    }
    let mut h = Harness::new();
    if resp3 {
        h.run(&["HELLO", "3"]);
    }
    let r = h.run(&argv);
    check::check_reply(&r).map_err(|e| format!("script reply: {e}\n{script}"))?;
    let ping = h.run(&["EVAL", "return redis.call('ping')", "0"]);
    if ping != Reply::status("PONG") {
        return Err(format!("after the script, EVAL of redis.call('ping') answered {ping:?}\n{script}"));
    }
    check_harness_alive(&mut h).map_err(|e| format!("{e}\n{script}"))
}
