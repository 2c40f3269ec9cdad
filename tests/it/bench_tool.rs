//! `rlockd-bench` against an in-process server: every workload runs with
//! its reply checks (a wrong reply or two holders of one lock fail the
//! run), and the CSV/JSON reports hold a row per workload. Checks the tool,
//! not speed: the figures are only required to exist.

use std::process::Command;

use crate::common::server;

#[test]
fn every_workload_runs_and_reports() {
    let srv = server();
    let dir = std::env::temp_dir().join(format!("rlockd-bench-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("token.lua");
    std::fs::write(&script, "return redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 30000)").unwrap();
    let (csv, json) = (dir.join("out.csv"), dir.join("out.json"));
    let workloads =
        format!("ping,set,get,lock-unlock,reentrant,contended,renew,semaphore,fair,script:{}", script.display());
    let out = Command::new(env!("CARGO_BIN_EXE_rlockd-bench"))
        .arg(format!("inproc=127.0.0.1:{}", srv.port()))
        .args(["-w", &workloads, "-c", "3", "-r", "1", "-d", "0.15", "--names", "2", "--held", "30", "-q"])
        .args(["--keys", "tok:{c}:{i}", "--args", "{r}"])
        .arg("--csv")
        .arg(&csv)
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run rlockd-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let csv = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv.lines().count(), 11, "{csv}");
    for line in csv.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        let ops: f64 = f[2].parse().unwrap();
        assert!(ops > 0.0, "{line}");
        assert_eq!(f[1], "inproc");
        assert_eq!(f[9], "1.0000", "the only target is its own baseline: {line}");
    }
    let json = std::fs::read_to_string(&json).unwrap();
    assert!(json.starts_with("[{\"workload\":\"ping\"") && json.contains("\"workload\":\"contended\""), "{json}");
    assert!(stdout.contains("| lock-unlock | inproc |"), "{stdout}");
    // A bad option is refused with the usage.
    let bad = Command::new(env!("CARGO_BIN_EXE_rlockd-bench")).arg("--nope").output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("usage: rlockd-bench"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `spawn:null`, the bare responder: it answers every workload's commands
/// (PING, SET, GET, SCRIPT LOAD, EVALSHA) over TCP, is measured beside a
/// real server with its CPU time, and has no memory figures.
#[test]
fn the_bare_responder_is_a_target() {
    let srv = server();
    let out = Command::new(env!("CARGO_BIN_EXE_rlockd-bench"))
        .arg(format!("inproc=127.0.0.1:{}", srv.port()))
        .arg("spawn:null")
        .args(["-w", "ping,set,get,lock-unlock,contended,held-memory", "-c", "2", "-r", "1", "-d", "0.1"])
        .args(["--held", "10", "-q"])
        .output()
        .expect("run rlockd-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for w in ["ping", "set", "get", "lock-unlock", "contended"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {w} | null |")))
            .unwrap_or_else(|| panic!("no row for {w} on null:\n{stdout}"));
        let f: Vec<&str> = row.split('|').map(str::trim).collect();
        assert!(f[3].parse::<f64>().unwrap() > 0.0, "{row}");
        assert!(f[9].parse::<f64>().is_ok(), "the responder's CPU time is known: {row}");
    }
    assert!(stdout.contains("| null | n/a | n/a | n/a |"), "{stdout}");
}

/// Over Unix sockets: a running server by `unix:/path`, and `--unix`
/// for a spawned one (the bare responder here), every reply checked.
#[test]
fn unix_socket_targets() {
    let path = std::env::temp_dir().join(format!("rlockd-bench-unix-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    let srv = rlockd::Server::start_with(rlockd::Config::default().unixsocket(path.to_str().unwrap())).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_rlockd-bench"))
        .arg(format!("inproc=unix:{}", path.display()))
        .args(["spawn:null", "--unix", "-w", "ping,set,lock-unlock,contended", "-c", "2", "-r", "1", "-d", "0.1", "-q"])
        .output()
        .expect("run rlockd-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for target in ["inproc", "null"] {
        for w in ["ping", "set", "lock-unlock", "contended"] {
            let row = stdout.lines().find(|l| l.starts_with(&format!("| {w} | {target} |")));
            let row = row.unwrap_or_else(|| panic!("no row for {w} on {target}:\n{stdout}"));
            let f: Vec<&str> = row.split('|').map(str::trim).collect();
            assert!(f[3].parse::<f64>().unwrap() > 0.0, "{row}");
        }
    }
    // The load really went through the socket: the server saw Unix clients.
    let mut c = redis::Client::open(format!("unix://{}", path.display())).unwrap().get_connection().unwrap();
    let stats: String = redis::cmd("INFO").arg("stats").query(&mut c).unwrap();
    let conns: u64 = stats
        .lines()
        .find_map(|l| l.strip_prefix("total_connections_received:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    assert!(conns >= 4, "{stats}");
    drop(srv);
    assert!(!path.exists());
}

/// `spawn:null-uring`, the bare responder on io_uring: in a build with the
/// `io-uring` feature it answers PING/SET/GET over TCP beside a real
/// server; without it, the tool says which feature is missing and fails.
#[test]
fn the_io_uring_responder_is_a_target_or_says_why_not() {
    let srv = server();
    let out = Command::new(env!("CARGO_BIN_EXE_rlockd-bench"))
        .arg(format!("inproc=127.0.0.1:{}", srv.port()))
        .arg("spawn:null-uring")
        .args(["-w", "ping,set,get", "-c", "2", "-r", "1", "-d", "0.1", "-q"])
        .output()
        .expect("run rlockd-bench");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if cfg!(all(target_os = "linux", feature = "io-uring")) {
        assert!(out.status.success(), "{stdout}\n{stderr}");
        for w in ["ping", "set", "get"] {
            let row = stdout
                .lines()
                .find(|l| l.starts_with(&format!("| {w} | null-uring |")))
                .unwrap_or_else(|| panic!("no row for {w} on null-uring:\n{stdout}"));
            let f: Vec<&str> = row.split('|').map(str::trim).collect();
            assert!(f[3].parse::<f64>().unwrap() > 0.0, "{row}");
        }
    } else {
        assert!(!out.status.success(), "{stdout}");
        assert!(stderr.contains("--features io-uring") || stdout.contains("--features io-uring"), "{stdout}\n{stderr}");
    }
}
