//! `RLOCKD_STDIN_WATCHDOG=1`: the binary exits when its standard input reaches
//! end of file, as it does when the test process that started it dies (the
//! Python, Node and Java front ends under `clients/` rely on it).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts the binary with stdin, stdout and stderr on pipes; returns it and its port.
fn start(watchdog: bool) -> (Proc, u16) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_rlockd"));
    cmd.args(["--port", "0"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if watchdog {
        cmd.env("RLOCKD_STDIN_WATCHDOG", "1");
    } else {
        cmd.env_remove("RLOCKD_STDIN_WATCHDOG");
    }
    let mut child = cmd.spawn().expect("start rlockd");
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().expect("stdout")).read_line(&mut line).expect("ready line");
    let port = line
        .rsplit("(port ")
        .next()
        .and_then(|s| s.trim().trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("port in {line:?}"));
    (Proc(child), port)
}

fn ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"PING\r\n").unwrap();
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).is_ok() && line == "+PONG\r\n"
}

/// Waits (bounded, a hang guard) for the process to exit; returns its exit code.
fn exit_code(p: &mut Proc) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Some(status) = p.0.try_wait().expect("try_wait") {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    None
}

#[test]
fn watchdog_exits_when_stdin_closes() {
    let (mut p, port) = start(true);
    assert!(ping(port));
    drop(p.0.stdin.take());
    assert_eq!(exit_code(&mut p), Some(0));
    let mut err = String::new();
    std::io::Read::read_to_string(p.0.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert!(err.contains("standard input closed"), "{err}");
    assert!(!ping(port));
}

/// The parent's death closes stdin and also leaves nobody reading stdout and
/// stderr: the exit must not depend on a log write succeeding.
#[test]
fn watchdog_exits_when_nobody_reads_its_output() {
    let (mut p, _port) = start(true);
    drop(p.0.stdout.take());
    drop(p.0.stderr.take());
    drop(p.0.stdin.take());
    assert_eq!(exit_code(&mut p), Some(0));
}

#[test]
fn without_the_variable_a_closed_stdin_is_ignored() {
    let (mut p, port) = start(false);
    drop(p.0.stdin.take());
    std::thread::sleep(Duration::from_millis(300));
    assert!(p.0.try_wait().unwrap().is_none(), "server exited");
    assert!(ping(port));
}
