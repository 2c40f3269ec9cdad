//! The `rlockd` binary as a child process: started on a free port, its
//! stderr collected, killed on drop; and one-shot runs (`--version`, bad
//! options) with a hang guard.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_rlockd");

/// A running `rlockd`.
pub struct Binary {
    child: Child,
    pub port: u16,
    stderr: Arc<Mutex<Vec<u8>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Binary {
    /// Starts `rlockd args...` (give `--port 0` for a free port) and waits
    /// for its ready line.
    pub fn start(args: &[&str]) -> Binary {
        Self::start_with_env(args, &[])
    }

    /// Like [`start`](Self::start), with extra environment variables
    /// (`NO_COLOR` is removed unless given).
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> Binary {
        let mut cmd = Command::new(BIN);
        cmd.args(args).stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).env_remove("NO_COLOR");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start rlockd");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut err_pipe = child.stderr.take().expect("stderr");
        let sink = stderr.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err_pipe.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().expect("stderr buffer").extend_from_slice(&buf[..n]);
            }
        });
        // The ready line, read on a thread so a binary that never prints it
        // fails the test instead of hanging it.
        let out = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(out).lines();
            let first = lines.next().and_then(Result::ok);
            let _ = tx.send(first);
            for _ in lines {} // keep draining stdout
        });
        let line = rx.recv_timeout(Duration::from_secs(20)).ok().flatten();
        let port = line.as_deref().and_then(|l| l.rsplit("(port ").next()?.trim_end_matches(')').parse().ok());
        let mut b = Binary { child, port: 0, stderr, reader: Some(reader) };
        match port {
            Some(p) => b.port = p,
            None => {
                let _ = b.child.kill();
                let _ = b.child.wait();
                if let Some(r) = b.reader.take() {
                    let _ = r.join();
                }
                panic!("rlockd {args:?} printed no ready line ({line:?}); stderr:\n{}", b.stderr());
            }
        }
        b
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the binary wrote to stderr so far.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().expect("stderr buffer")).into_owned()
    }

    /// Waits for the process to exit (a hang guard fails the test), then
    /// for its stderr to be fully read.
    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                if let Some(r) = self.reader.take() {
                    let _ = r.join();
                }
                return status;
            }
            assert!(Instant::now() < deadline, "rlockd did not exit; stderr:\n{}", self.stderr());
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Binary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The outcome of a run that is expected to end by itself.
#[derive(Debug)]
pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `program args...` to its end (killed after 20 s: a hang guard).
pub fn run(program: &str, args: &[&str]) -> Run {
    run_in(None, program, args, Duration::from_secs(20))
}

/// Runs `program args...` in `dir` to its end, killed after `limit` (a hang
/// guard, not a speed check).
pub fn run_in(dir: Option<&std::path::Path>, program: &str, args: &[&str], limit: Duration) -> Run {
    let mut cmd = Command::new(program);
    if let Some(dir) = dir {
        cmd.current_dir(dir);
    }
    let mut child = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("run {program}: {e}"));
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{program} {args:?} did not exit");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&out_t.join().expect("stdout reader")).into_owned(),
        stderr: String::from_utf8_lossy(&err_t.join().expect("stderr reader")).into_owned(),
    }
}
