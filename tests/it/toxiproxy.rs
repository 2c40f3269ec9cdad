//! `rlockd --toxiproxy PORT`: Toxiproxy's HTTP API. First its wire shapes
//! over plain HTTP (the JSON, status codes and error bodies Toxiproxy 2.12
//! sends), then the real clients — toxiproxy-python from PyPI,
//! toxiproxy-node-client from npm, Shopify's Go client from the Go module
//! proxy, toxiproxy-java (what Testcontainers' `ToxiproxyContainer` hands
//! out) from Maven Central — each driving latency, timeout, reset_peer,
//! slicer and a proxy down (Python also bandwidth and limit_data) while a
//! real lock client (redis-py's `Lock`, ioredis + redlock, go-redis +
//! redsync, Redisson's `RLock`) goes through
//! the proxy and sees each fault (`tests/toxiproxy/`). Their packages are
//! installed once into the target directory; a missing toolchain skips
//! visibly (`common::skip`), and fails under `RLOCKD_REQUIRE_REDIS=1` (CI).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::binary::{run_in, Binary, Run};
use crate::common::resp::{RawConn, Value};
use crate::common::skip::skipped;

/// Hang guard for one step (package downloads included); not a speed check.
const STEP_LIMIT: Duration = Duration::from_secs(600);

/// rlockd with the API on a free port; `(binary, API port)`.
fn start() -> (Binary, u16) {
    let b = Binary::start(&["--port", "0", "--toxiproxy", "0"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let err = b.stderr();
        if let Some(port) = err
            .lines()
            .find(|l| l.contains("Toxiproxy HTTP API listening on"))
            .and_then(|l| l.rsplit("(port ").next()?.trim_end_matches(')').parse().ok())
        {
            return (b, port);
        }
        assert!(Instant::now() < deadline, "no Toxiproxy API line:\n{err}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// One HTTP/1.1 request on its own connection: `(status, headers, body)`.
fn http(port: u16, method: &str, path: &str, body: &str, extra: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the API");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: x\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).expect("send");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read the response");
    let (head, body) = out.split_once("\r\n\r\n").expect("a head");
    let status = head.split(' ').nth(1).expect("status").parse().expect("a number");
    (status, head.to_string(), body.to_string())
}

#[test]
fn api_answers_as_toxiproxy() {
    let (srv, api) = start();
    let node = srv.port;
    // /version, and each node listed as a proxy.
    let (st, head, body) = http(api, "GET", "/version", "", "");
    assert_eq!((st, body.as_str()), (200, "{\"version\": \"2.12.0\"}\n"));
    assert!(head.contains("Content-Type: application/json;charset=utf-8"), "{head}");
    let (_, _, list) = http(api, "GET", "/proxies", "", "");
    let prefix = format!("{{\"rlockd-{node}\":{{\"name\":\"rlockd-{node}\",\"listen\":\"127.0.0.1:");
    assert!(list.starts_with(&prefix), "{list}");
    assert!(list.ends_with(&format!("\"upstream\":\"127.0.0.1:{node}\",\"enabled\":true,\"toxics\":[]}}}}")), "{list}");

    // Create, and the errors in Toxiproxy's words (plain text, JSON, newline).
    let create = format!("{{\"name\":\"r\",\"listen\":\"127.0.0.1:0\",\"upstream\":\"127.0.0.1:{node}\"}}");
    let (st, _, proxy) = http(api, "POST", "/proxies", &create, "");
    assert_eq!(st, 201, "{proxy}");
    let listen: u16 =
        proxy.split("\"listen\":\"127.0.0.1:").nth(1).and_then(|s| s.split('"').next()).unwrap().parse().unwrap();
    let err = |status: u16, msg: &str| format!("{{\"error\":\"{msg}\",\"status\":{status}}}\n");
    let (st, head, body) = http(api, "POST", "/proxies", &create, "");
    assert_eq!((st, body), (409, err(409, "proxy already exists")));
    assert!(head.contains("Content-Type: text/plain; charset=utf-8"), "{head}");
    assert_eq!(http(api, "POST", "/proxies", "", "").2, err(400, "bad request body: EOF"));
    assert_eq!(http(api, "POST", "/proxies", "{\"name\":\"x\"}", "").2, err(400, "missing required field: upstream"));
    assert_eq!(http(api, "GET", "/proxies/nope", "", "").2, err(404, "proxy not found"));
    assert_eq!(http(api, "GET", "/proxies/r/toxics/nope", "", "").2, err(404, "toxic not found"));
    assert_eq!(http(api, "POST", "/proxies/r/toxics", "{\"type\":\"bogus\"}", "").2, err(400, "invalid toxic type"));
    assert_eq!(
        http(api, "POST", "/proxies/r/toxics", "{\"type\":\"latency\",\"stream\":\"sideways\"}", "").2,
        err(400, "stream was invalid, can be either upstream or downstream")
    );
    let (st, _, body) = http(api, "GET", "/nowhere", "", "");
    assert_eq!((st, body.as_str()), (404, "404 page not found\n"));
    assert_eq!(http(api, "PUT", "/proxies", "", "").0, 405);
    assert_eq!(http(api, "GET", "/proxies", "", "User-Agent: Mozilla/5.0\r\n").2, "User agent not allowed\n");

    // A toxic with Toxiproxy's defaults and attribute set, listed and shown.
    let (st, _, toxic) = http(api, "POST", "/proxies/r/toxics", "{\"type\":\"timeout\"}", "");
    assert_eq!(st, 200);
    let want = "{\"attributes\":{\"timeout\":0},\"name\":\"timeout_downstream\",\"type\":\"timeout\",\"stream\":\"downstream\",\"toxicity\":1}";
    assert_eq!(toxic, want);
    assert_eq!(http(api, "GET", "/proxies/r/toxics", "", "").2, format!("[{want}]"));
    assert_eq!(
        http(api, "POST", "/proxies/r/toxics", "{\"type\":\"timeout\"}", "").2,
        err(409, "toxic already exists")
    );

    // The timeout holds every reply back: a client through the proxy hears nothing.
    let mut c = TcpStream::connect(("127.0.0.1", listen)).expect("connect to the proxy");
    c.set_read_timeout(Some(Duration::from_millis(300))).unwrap();
    c.write_all(b"SET k v\r\n").unwrap();
    let mut buf = [0u8; 64];
    assert!(c.read(&mut buf).is_err(), "a reply passed the timeout toxic");
    // The command went upstream all the same.
    assert_eq!(RawConn::connect(node).cmd(&["GET", "k"]), Value::Bulk(Some(b"v".to_vec())));
    // Removing a timeout closes the connections it held, as Toxiproxy does.
    assert_eq!(http(api, "DELETE", "/proxies/r/toxics/timeout_downstream", "", "").0, 204);
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    assert_eq!(c.read(&mut buf).ok(), Some(0), "the held connection is closed");

    // Disabled: nothing listens; enabled again on the same address.
    let (st, _, body) = http(api, "POST", "/proxies/r", "{\"enabled\":false}", "");
    assert_eq!(st, 200);
    assert!(body.contains("\"enabled\":false"), "{body}");
    assert!(TcpStream::connect(("127.0.0.1", listen)).is_err(), "a disabled proxy accepted");
    let (_, _, body) = http(api, "POST", "/reset", "", "");
    assert_eq!(body, "");
    assert!(http(api, "GET", "/proxies/r", "", "").2.contains("\"enabled\":true"));
    let mut c = TcpStream::connect(("127.0.0.1", listen)).expect("enabled again by /reset");
    c.write_all(b"PING\r\n").unwrap();
    let n = c.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"+PONG\r\n");

    // slow_close: the server closes after QUIT; the client hears it 300 ms later.
    http(api, "POST", "/proxies/r/toxics", "{\"type\":\"slow_close\",\"attributes\":{\"delay\":300}}", "");
    let mut c = TcpStream::connect(("127.0.0.1", listen)).expect("connect to the proxy");
    c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let start = Instant::now();
    c.write_all(b"QUIT\r\n").unwrap();
    let n = c.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"+OK\r\n");
    assert_eq!(c.read(&mut buf).ok(), Some(0));
    assert!(start.elapsed() >= Duration::from_millis(300), "closed after {:?}", start.elapsed());
    assert_eq!(http(api, "DELETE", "/proxies/r/toxics/slow_close_downstream", "", "").0, 204);

    // The other toxics over a plain socket, each on a new connection.
    let through = |toxic: &str| {
        let (st, _, body) = http(api, "POST", "/proxies/r/toxics", toxic, "");
        assert_eq!(st, 200, "{body}");
        let c = TcpStream::connect(("127.0.0.1", listen)).expect("connect to the proxy");
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        c
    };
    let clear = || assert_eq!(http(api, "POST", "/reset", "", "").0, 204);
    // latency: the reply 200 ms after the request.
    let mut c = through("{\"type\":\"latency\",\"attributes\":{\"latency\":200}}");
    let start = Instant::now();
    c.write_all(b"PING\r\n").unwrap();
    let n = c.read(&mut buf).unwrap();
    assert_eq!(&buf[..n], b"+PONG\r\n");
    assert!(start.elapsed() >= Duration::from_millis(200), "{:?}", start.elapsed());
    clear();
    // reset_peer: an RST instead of the reply.
    let mut c = through("{\"type\":\"reset_peer\"}");
    c.write_all(b"PING\r\n").unwrap();
    let e = c.read(&mut buf).expect_err("a reply passed reset_peer");
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset);
    clear();
    // slicer: the reply in 2-byte pieces 1 ms apart (so 10 pieces take 9 ms
    // at least), read whole.
    let mut c = through("{\"type\":\"slicer\",\"attributes\":{\"average_size\":2,\"delay\":1000}}");
    let start = Instant::now();
    c.write_all(b"ECHO 01234567890\r\n").unwrap();
    let mut got = Vec::new();
    while got.len() < b"$11\r\n01234567890\r\n".len() {
        let n = c.read(&mut buf).unwrap();
        assert!(n > 0, "closed");
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"$11\r\n01234567890\r\n");
    assert!(start.elapsed() >= Duration::from_millis(9), "{:?}", start.elapsed());
    clear();
    // limit_data upstream: 6 bytes reach the server, then the connection
    // closes (the reply may be lost with it, as behind Toxiproxy).
    let pings = || {
        let Value::Bulk(Some(stats)) = RawConn::connect(node).cmd(&["INFO", "commandstats"]) else { panic!("INFO") };
        let stats = String::from_utf8_lossy(&stats).into_owned();
        stats.lines().find_map(|l| l.strip_prefix("cmdstat_ping:calls=")?.split(',').next()?.parse::<u64>().ok())
    };
    let before = pings().unwrap_or(0);
    let mut c = through("{\"type\":\"limit_data\",\"stream\":\"upstream\",\"attributes\":{\"bytes\":6}}");
    c.write_all(b"PING\r\nPING\r\n").unwrap();
    while matches!(c.read(&mut buf), Ok(n) if n > 0) {}
    // The server may serve this INFO before the proxied PING: wait for it.
    let deadline = Instant::now() + Duration::from_secs(5);
    while pings() < Some(before + 1) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(pings(), Some(before + 1), "one PING reached the server, not two");
    clear();

    // /populate: an identical proxy kept, a new one created; then deletes.
    let pop = format!(
        "[{{\"name\":\"r\",\"listen\":\"127.0.0.1:{listen}\",\"upstream\":\"127.0.0.1:{node}\"}},\
         {{\"name\":\"p2\",\"listen\":\"127.0.0.1:0\",\"upstream\":\"127.0.0.1:{node}\",\"enabled\":false}}]"
    );
    let (st, _, body) = http(api, "POST", "/populate", &pop, "");
    assert_eq!(st, 201, "{body}");
    assert!(body.starts_with("{\"proxies\":[{\"name\":\"r\""), "{body}");
    assert!(body.contains("\"name\":\"p2\",\"listen\":\"127.0.0.1:0\""), "{body}");
    let (st, _, body) = http(api, "POST", "/populate", "[{\"name\":\"x\"}]", "");
    assert_eq!(
        (st, body.as_str()),
        (400, "{\"error\":\"missing required field: upstream at proxy 1\",\"status\":400,\"proxies\":null}")
    );
    assert_eq!(http(api, "DELETE", "/proxies/p2", "", "").0, 204);
    assert_eq!(http(api, "DELETE", "/proxies/r", "", "").0, 204);
    assert!(TcpStream::connect(("127.0.0.1", listen)).is_err(), "a deleted proxy accepted");
}

fn work_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("toxiproxy").join(name);
    std::fs::create_dir_all(&d).expect("create the work directory");
    d
}

fn source() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/toxiproxy")
}

/// A toolchain is missing: a failure in CI, a visible skip elsewhere.
fn missing(reason: &str) {
    if std::env::var("RLOCKD_REQUIRE_REDIS").is_ok_and(|v| v == "1") {
        panic!("{reason} (RLOCKD_REQUIRE_REDIS=1)");
    }
    skipped(reason);
}

fn runs(program: &str, args: &[&str]) -> bool {
    std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn ok_or_panic(what: &str, r: Run) -> Run {
    assert_eq!(r.code, Some(0), "{what} failed:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    r
}

/// Runs `install` unless `marker` already holds `stamp` (the pinned
/// versions), then records it.
fn install_once(marker: &Path, stamp: &str, install: impl FnOnce()) {
    if std::fs::read_to_string(marker).is_ok_and(|s| s == stamp) {
        return;
    }
    install();
    std::fs::write(marker, stamp).expect("write the install marker");
}

/// What each client prints, the lock client's view of each fault.
fn assert_lines(out: &str, want: &[&str]) {
    let got: Vec<&str> = out.lines().collect();
    assert_eq!(got, want, "{out}");
}

#[test]
fn toxiproxy_python_drives_faults_seen_by_redis_py() {
    if !runs("python3", &["-c", "import venv, ensurepip, sys; sys.exit(sys.version_info < (3, 8))"]) {
        missing("Python 3.8+ with venv is not installed, so toxiproxy-python was not run");
        return;
    }
    let work = work_dir("python");
    let venv = work.join("venv");
    let req = source().join("requirements.txt");
    let pins = std::fs::read_to_string(&req).expect("requirements.txt");
    install_once(&work.join("installed"), &pins, || {
        let v = venv.to_str().expect("utf-8 path");
        ok_or_panic("python3 -m venv", run_in(None, "python3", &["-m", "venv", "--clear", v], STEP_LIMIT));
        let pip = venv.join("bin/pip");
        let args = ["install", "-q", "--disable-pip-version-check", "-r", req.to_str().expect("utf-8 path")];
        ok_or_panic("pip install", run_in(None, pip.to_str().expect("utf-8 path"), &args, STEP_LIMIT));
    });
    let (srv, api) = start();
    let python = venv.join("bin/python");
    let script = source().join("drive.py");
    let args = [script.to_str().expect("utf-8 path"), &api.to_string(), &srv.port.to_string()];
    let r = ok_or_panic("drive.py", run_in(None, python.to_str().expect("utf-8 path"), &args, STEP_LIMIT));
    assert_lines(
        &r.stdout,
        &[
            "latency: three replies held back 300 ms each",
            "timeout: the lock call failed with TimeoutError",
            "reset_peer: the lock call failed with ConnectionError",
            "slicer: a 2000-byte reply arrived in pieces and read whole; the lock works",
            "down: the lock call failed with ConnectionError; enabled again, it works",
            "bandwidth: 10000 bytes at 20 KB/s took at least 0.4 s",
            "limit_data: the reply past 8 bytes failed with ConnectionError",
            "reset: every toxic removed",
            "toxiproxy-python: ok",
        ],
    );
}

#[test]
fn toxiproxy_node_client_drives_faults_seen_by_redlock() {
    if !runs("node", &["--version"]) || !runs("npm", &["--version"]) {
        missing("Node.js and npm are not installed, so toxiproxy-node-client was not run");
        return;
    }
    let work = work_dir("node");
    for f in ["package.json", "package-lock.json", "drive.js"] {
        std::fs::copy(source().join(f), work.join(f)).unwrap_or_else(|e| panic!("copy {f}: {e}"));
    }
    let lock = std::fs::read_to_string(work.join("package-lock.json")).expect("package-lock.json");
    install_once(&work.join("installed"), &lock, || {
        let args = ["ci", "--no-audit", "--no-fund", "--loglevel=error"];
        ok_or_panic("npm ci", run_in(Some(&work), "npm", &args, STEP_LIMIT));
    });
    let (srv, api) = start();
    let r = ok_or_panic(
        "drive.js",
        run_in(Some(&work), "node", &["drive.js", &api.to_string(), &srv.port.to_string()], STEP_LIMIT),
    );
    assert_lines(
        &r.stdout,
        &[
            "latency: the lock and unlock replies held back 300 ms each",
            "timeout: the lock call failed (LockError)",
            "reset_peer: the call failed (Connection is closed)",
            "slicer: a 2000-byte reply arrived in pieces and read whole; the lock works",
            "down: the lock call failed (LockError); enabled again, it works",
            "reset: every toxic removed",
            "toxiproxy-node-client: ok",
        ],
    );
}

#[test]
fn toxiproxy_go_client_drives_faults_seen_by_redsync() {
    if !runs("go", &["version"]) {
        missing("Go is not installed, so Shopify's Toxiproxy Go client was not run");
        return;
    }
    let work = work_dir("go");
    for f in ["go.mod", "go.sum", "main.go"] {
        std::fs::copy(source().join("go").join(f), work.join(f)).unwrap_or_else(|e| panic!("copy {f}: {e}"));
    }
    let bin = work.join("drive");
    ok_or_panic("go build", run_in(Some(&work), "go", &["build", "-o", "drive", "."], STEP_LIMIT));
    let (srv, api) = start();
    let r = ok_or_panic(
        "the Go client",
        run_in(Some(&work), bin.to_str().expect("utf-8 path"), &[&api.to_string(), &srv.port.to_string()], STEP_LIMIT),
    );
    assert_lines(
        &r.stdout,
        &[
            "latency: the lock and unlock replies held back 300 ms each",
            "timeout: the lock call failed (i/o timeout)",
            "reset_peer: the call failed",
            "slicer: a 2000-byte reply arrived in pieces and read whole; the lock works",
            "down: the lock call failed; enabled again, it works",
            "reset: every toxic removed",
            "toxiproxy Go client: ok",
        ],
    );
}

#[test]
fn toxiproxy_java_drives_faults_seen_by_redisson() {
    if !runs("java", &["-version"]) || !runs("mvn", &["-v"]) {
        missing("a JDK (17+) and Maven are not installed, so toxiproxy-java was not run");
        return;
    }
    let work = work_dir("java");
    let pom = source().join("java/pom.xml");
    let pins = std::fs::read_to_string(&pom).expect("pom.xml");
    std::fs::copy(&pom, work.join("pom.xml")).expect("copy pom.xml");
    let classpath = work.join("classpath.txt");
    install_once(&work.join("installed"), &pins, || {
        let out = format!("-Dmdep.outputFile={}", classpath.display());
        let args = ["-B", "-q", "-Dstyle.color=never", "dependency:build-classpath", &out];
        ok_or_panic("mvn dependency:build-classpath", run_in(Some(&work), "mvn", &args, STEP_LIMIT));
    });
    let cp = std::fs::read_to_string(&classpath).expect("the classpath");
    let (srv, api) = start();
    let drive = source().join("java/Drive.java");
    let args = ["-cp", cp.trim(), drive.to_str().expect("utf-8 path"), &api.to_string(), &srv.port.to_string()];
    let r = ok_or_panic("Drive.java", run_in(Some(&work), "java", &args, STEP_LIMIT));
    assert_lines(
        &r.stdout,
        &[
            "latency: the lock and unlock replies held back 300 ms each",
            "timeout: the lock call failed (a timeout)",
            "reset_peer: the lock call failed",
            "slicer: a 2000-byte reply arrived in pieces and read whole; the lock works",
            "down: the lock call failed; enabled again, it works",
            "reset: every toxic removed",
            "toxiproxy-java: ok",
        ],
    );
}
