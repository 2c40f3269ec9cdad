//! The `rlockd` binary behaves like redis-server on its command line, in its
//! logs, on `SHUTDOWN NOSAVE` during a script, and with its listen backlog;
//! where redis-server is installed, its own answers are the expectation.

use std::io::Read;
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::binary::{run, Binary, BIN};
use crate::common::oracle::redis_server_or_skip;
use crate::common::resp::{RawConn, Value};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// A file in the temp directory, removed on drop.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(name: &str, content: &str) -> TempFile {
        let p = std::env::temp_dir().join(format!("rlockd-test-{}-{name}", std::process::id()));
        std::fs::write(&p, content).expect("write temp file");
        TempFile(p)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn config_get(port: u16, name: &str) -> String {
    let mut c = RawConn::connect(port);
    match c.cmd(&["CONFIG", "GET", name]) {
        Value::Agg(_, Some(v)) if v.len() == 2 => match &v[1] {
            Value::Bulk(Some(b)) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("CONFIG GET {name}: {other:?}"),
        },
        other => panic!("CONFIG GET {name}: {other:?}"),
    }
}

#[test]
fn command_line_options_win_over_the_config_file() {
    let file_port = free_port();
    let conf = TempFile::new("wins.conf", &format!("port {file_port}\nloglevel warning\nhz 20\n"));
    // `--port 0` after the file: a free port, not the file's.
    let srv = Binary::start(&[conf.path(), "--port", "0", "--hz", "50"]);
    assert_ne!(srv.port, file_port);
    assert_eq!(RawConn::connect(srv.port).cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    assert_eq!(config_get(srv.port, "loglevel"), "warning");
    assert_eq!(config_get(srv.port, "hz"), "50");
    drop(srv);
    // `conf --port N`: listens on N.
    let wanted = free_port();
    let srv = Binary::start(&[conf.path(), "--port", &wanted.to_string()]);
    assert_eq!(srv.port, wanted);
    assert_eq!(config_get(srv.port, "port"), wanted.to_string());
}

#[test]
fn a_missing_config_file_is_refused_as_redis_server_refuses_it() {
    let ours = run(BIN, &["/nonexistent/rlockd.conf"]);
    assert_eq!(ours.code, Some(1));
    let text = "# Fatal error, can't open config file '/nonexistent/rlockd.conf': No such file or directory";
    assert!(ours.stderr.trim_end().ends_with(text), "{ours:?}");
    let Some(redis) = redis_server_or_skip() else { return };
    let theirs = run(&redis, &["/nonexistent/rlockd.conf"]);
    assert_eq!(theirs.code, Some(1));
    assert!(theirs.stdout.trim_end().ends_with(text), "{theirs:?}");
}

/// The lines after redis-server's FATAL CONFIG FILE ERROR header.
fn fatal_lines(stderr: &str) -> Vec<String> {
    let lines: Vec<&str> = stderr.lines().collect();
    let at = lines.iter().position(|l| l.starts_with("*** FATAL CONFIG FILE ERROR")).unwrap_or_else(|| {
        panic!("no FATAL CONFIG FILE ERROR in {stderr:?}");
    });
    lines[at + 1..].iter().map(|l| l.to_string()).collect()
}

#[test]
fn bad_options_are_refused_with_redis_servers_text() {
    let conf = TempFile::new("bad.conf", "port 7000\n# comment\nsave \"\"\n");
    let cases: Vec<Vec<&str>> = vec![
        vec!["--loglevel", "chatty"],
        vec!["--loglevel", "nothing"],
        vec!["--port", "7000", "--bind", "127.0.0.1", "--loglevel", "chatty"],
        vec![conf.path(), "--loglevel", "chatty"],
        vec!["--port", "abc"],
        vec!["--port", "70000"],
        vec!["--port"],
        vec!["--port", "1", "2"],
        vec!["--no-such-option", "1"],
        vec!["--appendonly", "maybe"],
        vec!["--maxmemory-policy", "sometimes"],
    ];
    let mut ours_all = Vec::new();
    for args in &cases {
        let ours = run(BIN, args);
        assert_eq!(ours.code, Some(1), "rlockd {args:?}: {ours:?}");
        ours_all.push(fatal_lines(&ours.stderr));
    }
    assert_eq!(
        ours_all[0],
        [
            "Reading the configuration file, at line 2",
            ">>> 'loglevel \"chatty\"'",
            "argument(s) must be one of the following: debug, verbose, notice, warning"
        ]
    );
    let Some(redis) = redis_server_or_skip() else { return };
    for (args, ours) in cases.iter().zip(ours_all) {
        let theirs = run(&redis, args);
        assert_eq!(theirs.code, Some(1), "redis-server {args:?}: {theirs:?}");
        assert_eq!(ours, fatal_lines(&theirs.stderr), "{args:?}");
    }
}

#[test]
fn one_thread_is_accepted_and_still_answers_busy() {
    let r = run(BIN, &["--threads", "0"]);
    assert_eq!(r.code, Some(1));
    assert!(r.stderr.contains(">>> 'threads \"0\"'\nargument must be between 1 and 1024 inclusive"), "{r:?}");
    // One event loop: a script past the busy threshold blocks it, and its
    // hook answers the other clients, as redis-server's does.
    let mut srv = Binary::start(&["--port", "0", "--threads", "1", "--busy-reply-threshold", "50"]);
    let mut runner = RawConn::connect(srv.port);
    runner.send(&[b"EVAL".to_vec(), b"while true do end".to_vec(), b"0".to_vec()]);
    let mut other = RawConn::connect(srv.port);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match other.cmd(&["PING"]) {
            Value::Error(e) if e.starts_with(b"BUSY") => break,
            Value::Simple(p) if p == b"PONG" && Instant::now() < deadline => continue,
            v => panic!("expected BUSY, got {v:?}"),
        }
    }
    assert_eq!(other.cmd(&["SCRIPT", "KILL"]), Value::Simple(b"OK".to_vec()));
    match runner.read() {
        Some(Value::Error(e)) => {
            assert!(e.starts_with(b"ERR Script killed by user with SCRIPT KILL..."), "{}", String::from_utf8_lossy(&e))
        }
        v => panic!("expected the killed script's error, got {v:?}"),
    }
    assert_eq!(runner.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    RawConn::connect(srv.port).send(&[b"SHUTDOWN".to_vec(), b"NOSAVE".to_vec()]);
    assert_eq!(srv.wait_exit(Duration::from_secs(20)).code(), Some(0));
}

#[test]
fn version_and_help() {
    for flag in ["-v", "--version"] {
        let r = run(BIN, &[flag]);
        assert_eq!(r.code, Some(0), "{r:?}");
        let expected =
            format!("rlockd {}, compatible with Redis server v={} ", env!("CARGO_PKG_VERSION"), rlockd::REDIS_VERSION);
        assert!(r.stdout.starts_with(&expected), "{r:?}");
    }
    let help = run(BIN, &["--help"]);
    assert_eq!(help.code, Some(0));
    for needle in
        ["[/path/to/redis.conf]", "--<name> <value>", "a later setting wins", "Accepted without effect", "appendonly"]
    {
        assert!(help.stdout.contains(needle), "--help lacks {needle:?}:\n{}", help.stdout);
    }
    let Some(redis) = redis_server_or_skip() else { return };
    // Tools that read redis-server's version find the same `v=` in ours.
    let theirs = run(&redis, &["--version"]);
    let v = |s: &str| s.split_whitespace().find(|w| w.starts_with("v=")).map(str::to_string);
    assert_eq!(v(&run(BIN, &["--version"]).stdout), v(&theirs.stdout));
}

/// `pid:M 25 Nov 2026 05:22:23.323 * message`
fn is_redis_log_line(l: &str) -> bool {
    let Some((pid_role, rest)) = l.split_once(' ') else { return false };
    let Some((pid, role)) = pid_role.split_once(':') else { return false };
    let w: Vec<&str> = rest.splitn(6, ' ').collect();
    pid.parse::<u32>().is_ok()
        && matches!(role, "M" | "C")
        && w.len() == 6
        && w[0].len() == 2
        && w[1].len() == 3
        && w[2].len() == 4
        && w[3].len() == 12
        && matches!(w[4], "." | "-" | "*" | "#")
}

const LOG_SCRIPT: &str =
    "redis.log(redis.LOG_DEBUG, 'the-debug-line') redis.log(redis.LOG_VERBOSE, 'the-verbose-line') \
     redis.log(redis.LOG_NOTICE, 'the-notice-line') redis.log(redis.LOG_WARNING, 'the-warning-line') return 1";

fn logs_at(level: &str) -> String {
    let mut srv = Binary::start(&["--port", "0", "--loglevel", level]);
    let mut c = RawConn::connect(srv.port);
    assert_eq!(c.cmd(&["EVAL", LOG_SCRIPT, "0"]), Value::Int(1));
    c.send(&[b"SHUTDOWN".to_vec()]);
    assert_eq!(srv.wait_exit(Duration::from_secs(20)).code(), Some(0));
    srv.stderr()
}

#[test]
fn logs_follow_redis_levels_and_format_without_colour_off_a_terminal() {
    let debug = logs_at("debug");
    for line in ["the-debug-line", "the-verbose-line", "the-notice-line", "the-warning-line"] {
        assert!(debug.contains(line), "{debug}");
    }
    assert!(debug.contains(" . the-debug-line") && debug.contains(" - the-verbose-line"), "{debug}");
    assert!(debug.contains(" * the-notice-line") && debug.contains(" # the-warning-line"), "{debug}");
    for out in [&debug, &logs_at("verbose"), &logs_at("notice"), &logs_at("warning")] {
        assert!(!out.contains('\x1b'), "colour codes in a log that is not a terminal: {out:?}");
        for l in out.lines() {
            assert!(is_redis_log_line(l), "not a redis-server log line: {l:?}");
        }
    }
    let verbose = logs_at("verbose");
    assert!(!verbose.contains("the-debug-line") && verbose.contains("the-verbose-line"), "{verbose}");
    let notice = logs_at("notice");
    assert!(!notice.contains("the-verbose-line") && notice.contains("the-notice-line"), "{notice}");
    assert!(notice.contains(" * Ready to accept connections"), "{notice}");
    assert!(notice.contains(" # User requested shutdown...") && notice.contains("bye bye"), "{notice}");
    let warning = logs_at("warning");
    assert!(!warning.contains("the-notice-line") && warning.contains("the-warning-line"), "{warning}");
    assert!(!warning.contains("Ready to accept"), "{warning}");
}

#[test]
fn notes_about_options_without_effect_name_their_source_once() {
    let conf = TempFile::new("notes.conf", "save 900 1\nsave 300 10\ndir /var/lib/redis\nappendonly no\n");
    let mut srv = Binary::start(&[conf.path(), "--port", "0", "--save", "", "--appendonly", "yes"]);
    RawConn::connect(srv.port).send(&[b"SHUTDOWN".to_vec()]);
    assert_eq!(srv.wait_exit(Duration::from_secs(20)).code(), Some(0));
    let err = srv.stderr();
    let notes: Vec<&str> = err.lines().filter(|l| l.starts_with("rlockd: note:")).collect();
    assert_eq!(notes.len(), 2, "{err}");
    assert!(notes[0].contains(&format!("config file {}", conf.path())), "{}", notes[0]);
    assert!(notes[0].ends_with("save (line 1), save (line 2), dir (line 3)"), "{}", notes[0]);
    assert!(notes[1].contains("command line") && notes[1].ends_with("--appendonly yes"), "{}", notes[1]);
}

/// What the client of an unkillable script and the client sending
/// `SHUTDOWN NOSAVE` receive: `None` when the connection just closes.
fn shutdown_during_unkillable_script(port: u16) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let mut script = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    script.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    std::io::Write::write_all(
        &mut script,
        &crate::common::resp::encode(&[
            b"EVAL".to_vec(),
            b"redis.call('set', 'written', '1') while true do end".to_vec(),
            b"0".to_vec(),
        ]),
    )
    .expect("send EVAL");
    let mut admin = RawConn::connect(port);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match admin.cmd(&["PING"]) {
            Value::Error(e) if e.starts_with(b"BUSY") => break,
            _ => assert!(Instant::now() < deadline, "the script never became busy"),
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    match admin.cmd(&["SCRIPT", "KILL"]) {
        Value::Error(e) => assert!(e.starts_with(b"UNKILLABLE"), "{}", String::from_utf8_lossy(&e)),
        other => panic!("SCRIPT KILL: {other:?}"),
    }
    let mut shutdown = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    shutdown.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    std::io::Write::write_all(&mut shutdown, b"*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n").expect("send SHUTDOWN");
    let read_to_close = |s: &mut TcpStream| -> Option<Vec<u8>> {
        let mut got = Vec::new();
        match s.read_to_end(&mut got) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("the connection was not closed: {e}"),
        }
        (!got.is_empty()).then_some(got)
    };
    (read_to_close(&mut shutdown), read_to_close(&mut script))
}

#[test]
fn shutdown_nosave_during_an_unkillable_script_closes_without_replying() {
    let mut srv = Binary::start(&["--port", "0", "--busy-reply-threshold", "100"]);
    let (to_shutdown, to_script) = shutdown_during_unkillable_script(srv.port);
    assert_eq!(srv.wait_exit(Duration::from_secs(20)).code(), Some(0));
    let shown = |b: &Option<Vec<u8>>| b.as_ref().map(|b| String::from_utf8_lossy(b).into_owned());
    assert_eq!(shown(&to_shutdown), None, "SHUTDOWN NOSAVE was answered");
    assert_eq!(shown(&to_script), None, "the stopped script's client was answered");
    let log = srv.stderr();
    assert!(log.contains("# User requested shutdown...") && log.contains("bye bye"), "{log}");
    assert!(!log.contains("SCRIPT KILL."), "the shutdown was logged as a SCRIPT KILL: {log}");
    // redis-server does the same.
    let Some(redis) = redis_server_or_skip() else { return };
    let port = free_port();
    let mut child = std::process::Command::new(redis)
        .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
        .args(["--busy-reply-threshold", "100"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start redis-server");
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let theirs = shutdown_during_unkillable_script(port);
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!((shown(&theirs.0), shown(&theirs.1)), (None, None));
}

/// The backlog of the socket listening on `port`, from `ss` (its Send-Q).
fn listen_backlog(port: u16) -> Option<u32> {
    let out = std::process::Command::new("ss").args(["-Hltn", &format!("sport = :{port}")]).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines().next()?.split_whitespace().nth(2)?.parse().ok()
}

#[test]
fn the_listen_backlog_is_tcp_backlog() {
    let srv = rlockd::Server::start().expect("start");
    let Some(default) = listen_backlog(srv.port()) else {
        crate::common::skip::skipped("`ss` (iproute2) is not installed, so the listen backlog was not read");
        return;
    };
    assert_eq!(default, 511);
    assert_eq!(config_get(srv.port(), "tcp-backlog"), "511");
    let srv = rlockd::Server::start_with(rlockd::Config { tcp_backlog: 1000, ..Default::default() }).expect("start");
    assert_eq!(listen_backlog(srv.port()), Some(1000));
    let bin = Binary::start(&["--port", "0", "--tcp-backlog", "300"]);
    assert_eq!(listen_backlog(bin.port), Some(300));
    assert_eq!(config_get(bin.port, "tcp-backlog"), "300");
}
