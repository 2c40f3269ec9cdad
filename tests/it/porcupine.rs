//! Porcupine agrees with `RLOCKD CHECK`: the lock histories of the
//! failover and paused-holder stories, made by redis-py through rlockd's
//! Sentinels, cluster and clock, read with `RLOCKD HISTORY` (or
//! `Server::history`) and checked by the Go module's Porcupine model
//! (`clients/go/check`, `cmd/check`), whose verdict (its exit status) must
//! be CHECK's: a violation after the lossy Sentinel failover, the cluster
//! failover that loses a grant and the paused holder; none after the
//! failover that waited for the replica. Each check writes Porcupine's HTML
//! beside its history. Skipped, visibly, without Go or Python.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use crate::common::binary::{run_in, Binary};
use crate::common::resp::{RawConn, Value};
use crate::common::skip::skipped;

const LIMIT: Duration = Duration::from_secs(600);

/// The check command, built once (None, after recording the skip, without Go).
fn checker() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    let built = BUILT.get_or_init(|| {
        let go = std::process::Command::new("go").arg("version").output().is_ok_and(|o| o.status.success());
        if !go {
            if std::env::var("RLOCKD_REQUIRE_REDIS").is_ok_and(|v| v == "1") {
                panic!("Go is not installed; RLOCKD_REQUIRE_REDIS=1 requires the Porcupine check");
            }
            return None;
        }
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("porcupine");
        std::fs::create_dir_all(&out).expect("a work directory");
        let bin = out.join("check");
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/go/check");
        let r = run_in(Some(&dir), "go", &["build", "-o", bin.to_str().expect("utf-8 path"), "./cmd/check"], LIMIT);
        assert_eq!(r.code, Some(0), "go build ./cmd/check:\n{}\n{}", r.stdout, r.stderr);
        Some(bin)
    });
    if built.is_none() {
        skipped("Go is not installed, so the Porcupine check was not run");
    }
    built.clone()
}

/// Porcupine's verdict on `history`: the command's exit status (0: none,
/// 1: a violation, 2: malformed) and what it printed; its HTML is checked
/// to be written when it gave a verdict.
fn porcupine(bin: &Path, name: &str, history: &str) -> (i32, String) {
    let dir = bin.parent().expect("the work directory");
    let (json, html) = (dir.join(format!("{name}.json")), dir.join(format!("{name}.html")));
    std::fs::write(&json, history).expect("the history");
    let _ = std::fs::remove_file(&html);
    let args = ["-html", html.to_str().expect("utf-8 path"), json.to_str().expect("utf-8 path")];
    let r = run_in(None, bin.to_str().expect("utf-8 path"), &args, LIMIT);
    let code = r.code.expect("an exit status");
    if code < 2 {
        let page = std::fs::read_to_string(&html).unwrap_or_default();
        // Porcupine's page, with the model's words for the operations.
        assert!(
            page.contains("<html") && page.contains("acquire by"),
            "no visualisation at {}: {}",
            html.display(),
            r.stdout
        );
    }
    (code, r.stdout)
}

/// The verdict CHECK's violations give, as the command's exit status.
fn expected(violations: usize) -> i32 {
    i32::from(violations > 0)
}

fn check_len(port: u16) -> usize {
    let Value::Agg(_, Some(v)) = RawConn::connect(port).cmd(&["RLOCKD", "CHECK"]) else { panic!("CHECK") };
    v.len()
}

fn history(port: u16) -> String {
    let Value::Bulk(Some(b)) = RawConn::connect(port).cmd(&["RLOCKD", "HISTORY"]) else { panic!("HISTORY") };
    String::from_utf8(b).expect("utf-8")
}

#[test]
fn porcupine_agrees_on_the_lossy_sentinel_failover() {
    let Some(bin) = checker() else { return };
    let Some((out, nodes)) = crate::failover_clients::run_redis_py("lossy") else { return };
    assert!(out.starts_with("lossy: WAIT=0 second-holder=True violations=1"), "{out}");
    // The promoted replica: its own history and the grant the failover lost.
    let history = nodes[1].history(None);
    assert!(history.contains(r#""f":"lose""#), "{history}");
    let (code, said) = porcupine(&bin, "sentinel-lossy", &history);
    assert_eq!(code, expected(nodes[1].check_locks().len()), "{said}\n{history}");
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("order:42"), "{said}");
}

#[test]
fn porcupine_agrees_on_the_failover_after_wait() {
    let Some(bin) = checker() else { return };
    let Some((out, nodes)) = crate::failover_clients::run_redis_py("replicated") else { return };
    assert_eq!(out.trim_end(), "replicated: WAIT=1 second-holder=False violations=0");
    let history = nodes[1].history(None);
    // A's acquire, applied from the old primary; B's, refused.
    assert!(history.contains(r#""type":"ok", "process":0, "f":"acquire""#), "{history}");
    assert!(history.contains(r#""type":"fail", "process":1, "f":"acquire""#), "{history}");
    let (code, said) = porcupine(&bin, "sentinel-wait", &history);
    assert_eq!(code, expected(nodes[1].check_locks().len()), "{said}\n{history}");
    assert_eq!(code, 0, "{said}");
}

fn redis_py_example(what: &str, server_args: &[&str], script: &[&str]) -> Option<(Binary, String)> {
    let python = crate::examples::redis_py(what)?;
    let srv = Binary::start(server_args);
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/examples/python");
    let port = srv.port.to_string();
    let mut args = vec![script[0], &port];
    args.extend(&script[1..]);
    let r = run_in(Some(&dir), python.to_str().expect("utf-8 path"), &args, LIMIT);
    assert_eq!(r.code, Some(0), "{what}:\n{}\n{}", r.stdout, r.stderr);
    Some((srv, r.stdout))
}

#[test]
fn porcupine_agrees_on_the_cluster_failover() {
    let Some(bin) = checker() else { return };
    let Some((srv, out)) = redis_py_example(
        "the redis-py cluster failover example",
        &["--cluster", "3", "--cluster-replicas", "1", "--port", "0"],
        &["cluster_failover.py"],
    ) else {
        return;
    };
    assert_eq!(out.trim_end(), "python cluster failover: ok");
    // Any node: every primary's history, and the grant the cluster lost.
    let history = history(srv.port);
    let (code, said) = porcupine(&bin, "cluster-failover", &history);
    assert_eq!(code, expected(check_len(srv.port)), "{said}\n{history}");
    assert_eq!(code, 1, "{said}");
}

#[test]
fn porcupine_agrees_on_the_paused_holder() {
    let Some(bin) = checker() else { return };
    let file = Path::new(env!("CARGO_TARGET_TMPDIR")).join("porcupine-paused-timeline.html");
    let Some((srv, out)) = redis_py_example(
        "the redis-py paused-holder example",
        &["--port", "0"],
        &["paused_holder.py", file.to_str().expect("utf-8 path")],
    ) else {
        return;
    };
    assert!(out.starts_with("paused holder: second-holder=True violations=3"), "{out}");
    let history = history(srv.port);
    assert!(history.contains(r#""f":"leave""#) && history.contains(r#""f":"expire""#), "{history}");
    let (code, said) = porcupine(&bin, "paused-holder", &history);
    assert_eq!(code, expected(check_len(srv.port)), "{said}\n{history}");
    assert_eq!(code, 1, "{said}");
    assert!(said.contains("leave by"), "the holder left its section after its lease: {said}");
}

/// A history that cannot be right is reported as such (exit status 2),
/// whatever the server wrote: here RLOCKD HISTORY's own, with a time moved
/// back and then two entries swapped.
#[test]
fn porcupine_reports_a_wrong_time_and_an_impossible_order() {
    let Some(bin) = checker() else { return };
    let srv = Binary::start(&["--port", "0"]);
    let mut c = RawConn::connect(srv.port);
    c.cmd(&["RLOCKD", "CLOCK", "FREEZE"]);
    for (token, cmd) in [("t1", "SET"), ("t1", "DEL"), ("t2", "SET")] {
        let args: Vec<&str> =
            if cmd == "SET" { vec!["SET", "lock", token, "NX", "PX", "30000"] } else { vec!["DEL", "lock"] };
        c.cmd(&args);
        c.cmd(&["RLOCKD", "CLOCK", "ADVANCE", "5"]);
    }
    let history = history(srv.port);
    let lines: Vec<&str> = history.lines().collect();
    assert_eq!(lines.len(), 2 + 6, "{history}");
    let (code, said) = porcupine(&bin, "valid", &history);
    assert_eq!((code, check_len(srv.port)), (0, 0), "{said}");
    // The last entry's time before its predecessor's.
    let wrong_time = history.replacen(r#""index":5, "time":10000000"#, r#""index":5, "time":1"#, 1);
    assert_ne!(wrong_time, history);
    let (code, said) = porcupine(&bin, "wrong-time", &wrong_time);
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("entry 5: time 1 is before"), "{said}");
    // An acquire's completion before its invocation.
    let mut swapped = lines.clone();
    swapped.swap(1, 2);
    let (code, said) = porcupine(&bin, "swapped", &swapped.join("\n"));
    assert_eq!(code, 2, "{said}");
    assert!(said.contains("malformed history"), "{said}");
}

/// A refused acquire is in the history as an `acquire` completed by
/// `fail` (a `SET NX` answered nil, a Redisson-style script answered the
/// lock's lease), and nowhere else: EVENTS and CHECK are as before. No Go
/// needed.
#[test]
fn refused_acquires_are_failed_operations() {
    const REENTRANT_LOCK: &str = include_str!("../../lua/reentrant_lock.lua");
    let srv = Binary::start(&["--port", "0"]);
    let mut c = RawConn::connect(srv.port);
    c.cmd(&["RLOCKD", "CLOCK", "FREEZE"]);
    assert_eq!(c.cmd(&["SET", "job", "tok-a", "NX", "PX", "5000"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(c.cmd(&["SET", "job", "tok-b", "NX", "PX", "5000"]), Value::Bulk(None));
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "rl", "30000", "u1:1"]), Value::Bulk(None));
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "rl", "30000", "u2:1"]), Value::Int(30000));
    // Not refusals: its own holder again (re-entered), a SET without NX, a free key.
    assert_eq!(c.cmd(&["EVAL", REENTRANT_LOCK, "1", "rl", "30000", "u1:1"]), Value::Bulk(None));
    assert_eq!(c.cmd(&["GET", "nothing"]), Value::Bulk(None));
    let history = history(srv.port);
    let failed: Vec<&str> = history.lines().filter(|l| l.contains(r#""type":"fail""#)).collect();
    assert_eq!(failed.len(), 2, "{history}");
    assert!(
        failed[0].contains(r#""f":"acquire", "value":{"key":"job", "db":0, "holder":"tok-b", "kind":"token""#),
        "{history}"
    );
    assert!(failed[1].contains(r#""key":"rl", "db":0, "holder":"u2:1", "kind":"reentrant""#), "{history}");
    assert!(failed[1].contains(r#""command":"eval""#), "{history}");
    let Value::Agg(_, Some(events)) = c.cmd(&["RLOCKD", "EVENTS"]) else { panic!("EVENTS") };
    assert_eq!(events.len(), 3, "acquired, acquired, reentered: {events:?}");
    assert_eq!(check_len(srv.port), 0);
    assert_eq!(c.cmd(&["RLOCKD", "CHECK", "RESET"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(self::history(srv.port), "[\n]\n");
}
