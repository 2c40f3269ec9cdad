//! The README's "use it from your language" examples, run against the
//! `rlockd` binary with their real clients: Redisson (Java 17 + Maven),
//! redis-py (Python 3 + venv/pip) and node-redis (Node + npm), from
//! `clients/examples/<lang>/`. Their packages are installed once into the
//! target directory and reused. A missing toolchain skips its example with
//! a line that the harness does not swallow (see `common::skip`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::binary::{run_in, Binary, Run};
use crate::common::resp::{RawConn, Value};
use crate::common::skip::skipped;

/// Hang guard for one step (package downloads included); not a speed check.
const STEP_LIMIT: Duration = Duration::from_secs(900);

fn source(lang: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/examples").join(lang)
}

fn work_dir(lang: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("examples").join(lang);
    std::fs::create_dir_all(&d).expect("create the example's work directory");
    d
}

/// True if `program args` runs and exits 0.
fn runs(program: &str, args: &[&str]) -> bool {
    std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// `mvn compile exec:java` of clients/examples/java in `build` (each
/// example its own: examples may compile at the same time), running
/// `main` (the pom's default without one) with the program arguments
/// `args`.
pub(crate) fn run_java_example(build: &Path, main: Option<&str>, args: &str, limit: Duration) -> Run {
    let pom = source("java").join("pom.xml");
    let build_dir = format!("-Dexample.build.dir={}", build.join("target").display());
    let main = main.map(|m| format!("-Dexample.main={m}"));
    let exec_args = format!("-Dexec.args={args}");
    let mut argv = vec!["-B", "-q", "-Dstyle.color=never", "-f", pom.to_str().expect("utf-8 path"), &build_dir];
    argv.extend(main.as_deref());
    argv.extend(["compile", "exec:java", &exec_args]);
    run_in(None, "mvn", &argv, limit)
}

fn ok_or_panic(what: &str, r: Run) -> Run {
    assert_eq!(r.code, Some(0), "{what} failed:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    r
}

/// Runs `install` unless `marker` already holds `stamp` (what was installed).
fn install_once(marker: &Path, stamp: &str, install: impl FnOnce()) {
    if std::fs::read_to_string(marker).is_ok_and(|s| s == stamp) {
        return;
    }
    install();
    std::fs::write(marker, stamp).expect("write the install marker");
}

/// Checks what the example left in the server: its key, and the Lua
/// scripts its lock ran (EVAL or EVALSHA calls in INFO commandstats).
fn check_server_side(port: u16, key: &str) {
    let mut c = RawConn::connect(port);
    assert_eq!(c.cmd(&["GET", key]), Value::Bulk(Some(b"ok".to_vec())), "{key}");
    assert_eq!(c.cmd(&["EXISTS", "example:lock"]), Value::Int(0), "the example's lock is still held");
    let Value::Bulk(Some(stats)) = c.cmd(&["INFO", "commandstats"]) else { panic!("INFO commandstats") };
    let stats = String::from_utf8_lossy(&stats);
    assert!(
        stats.lines().any(|l| l.starts_with("cmdstat_eval:") || l.starts_with("cmdstat_evalsha:")),
        "the example ran no Lua script:\n{stats}"
    );
}

/// The Python of a venv holding the example's requirements (redis-py),
/// made once; `None` (with a visible skip saying `what` was not run) without
/// Python 3.8+ and venv.
pub(crate) fn redis_py(what: &str) -> Option<PathBuf> {
    if !runs("python3", &["-c", "import venv, ensurepip, sys; sys.exit(sys.version_info < (3, 8))"]) {
        skipped(&format!("Python 3.8+ with venv is not installed, so {what} was not run"));
        return None;
    }
    static ONE_INSTALL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = ONE_INSTALL.lock().unwrap_or_else(|e| e.into_inner());
    let src = source("python");
    let work = work_dir("python");
    let venv = work.join("venv");
    let requirements = std::fs::read_to_string(src.join("requirements.txt")).expect("requirements.txt");
    install_once(&work.join("installed"), &requirements, || {
        let venv_s = venv.to_str().expect("utf-8 path");
        ok_or_panic("python3 -m venv", run_in(None, "python3", &["-m", "venv", "--clear", venv_s], STEP_LIMIT));
        let pip = venv.join("bin/pip");
        let req = src.join("requirements.txt");
        ok_or_panic(
            "pip install",
            run_in(
                None,
                pip.to_str().expect("utf-8 path"),
                &["install", "-q", "--disable-pip-version-check", "-r", req.to_str().expect("utf-8 path")],
                STEP_LIMIT,
            ),
        );
    });
    Some(venv.join("bin/python"))
}

#[test]
fn redis_py_example() {
    let Some(python) = redis_py("the redis-py example") else { return };
    let src = source("python");
    let srv = Binary::start(&["--port", "0"]);
    let r = ok_or_panic(
        "the redis-py example",
        run_in(Some(&src), python.to_str().expect("utf-8 path"), &["example.py", &srv.port.to_string()], STEP_LIMIT),
    );
    assert_eq!(r.stdout.trim_end(), "python example: ok");
    check_server_side(srv.port, "example:python");
}

/// The paused holder with redis-py's `Lock` (`clients/examples/python/paused_holder.py`):
/// its claimed critical section outlives its lease and overlaps a second
/// holder; CHECK says so and the timeline it writes draws the violation.
#[test]
fn redis_py_paused_holder_example() {
    let Some(python) = redis_py("the redis-py paused-holder example") else { return };
    let src = source("python");
    let srv = Binary::start(&["--port", "0"]);
    let file = work_dir("python").join(format!("paused-holder-{}.html", srv.port));
    let args = ["paused_holder.py", &srv.port.to_string(), file.to_str().expect("utf-8 path")];
    let r = ok_or_panic(
        "the paused-holder example",
        run_in(Some(&src), python.to_str().expect("utf-8 path"), &args, STEP_LIMIT),
    );
    assert_eq!(r.stdout.lines().next(), Some("paused holder: second-holder=True violations=3"), "{}", r.stdout);
    assert!(r.stdout.contains("outlived its lease"), "{}", r.stdout);
    let html = std::fs::read_to_string(&file).expect("the timeline");
    assert!(html.contains("data-client-name=\"worker-a\" data-end=\"expired\""), "{html}");
    assert!(html.contains("<g class=\"violation\""));
    let _ = std::fs::remove_file(&file);
}

/// redis-py's `RedisCluster` and `Lock` on `rlockd --cluster 3`, the lock
/// held while its slot moves (`clients/examples/python/cluster_example.py`).
#[test]
fn redis_py_cluster_example() {
    let Some(python) = redis_py("the redis-py cluster example") else { return };
    let srv = Binary::start(&["--cluster", "3", "--port", "0"]);
    let r = ok_or_panic(
        "the redis-py cluster example",
        run_in(
            Some(&source("python")),
            python.to_str().expect("utf-8 path"),
            &["cluster_example.py", &srv.port.to_string()],
            STEP_LIMIT,
        ),
    );
    assert_eq!(r.stdout.trim_end(), "python cluster example: ok");
}

/// redis-py's `RedisCluster` and `Lock` through failovers on `rlockd
/// --cluster 3 --cluster-replicas 1`: one the lock survives, one with the
/// stream paused after which a second client holds it and `RLOCKD CHECK`
/// says so (`clients/examples/python/cluster_failover.py`).
#[test]
fn redis_py_cluster_failover() {
    let Some(python) = redis_py("the redis-py cluster failover example") else { return };
    let srv = Binary::start(&["--cluster", "3", "--cluster-replicas", "1", "--port", "0"]);
    let r = ok_or_panic(
        "the redis-py cluster failover example",
        run_in(
            Some(&source("python")),
            python.to_str().expect("utf-8 path"),
            &["cluster_failover.py", &srv.port.to_string()],
            STEP_LIMIT,
        ),
    );
    assert_eq!(r.stdout.trim_end(), "python cluster failover: ok");
    // The server saw it too: one violation, from any node.
    let Value::Agg(_, Some(v)) = RawConn::connect(srv.port).cmd(&["RLOCKD", "CHECK"]) else { panic!("CHECK") };
    assert_eq!(v.len(), 1, "{v:?}");
}

/// The node work directory with the example's packages installed (None,
/// after recording the skip, without Node).
pub(crate) fn node_work(what: &str) -> Option<PathBuf> {
    if !runs("node", &["--version"]) || !runs("npm", &["--version"]) {
        skipped(&format!("Node.js and npm are not installed, so {what} was not run"));
        return None;
    }
    static INSTALLING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = INSTALLING.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let src = source("node");
    let work = work_dir("node");
    for f in [
        "package.json",
        "package-lock.json",
        "example.js",
        "cluster_example.js",
        "failover.js",
        "cluster_failover.js",
        "cluster_partition.js",
        "field_ttl.js",
        "paused_holder.js",
    ] {
        std::fs::copy(src.join(f), work.join(f)).unwrap_or_else(|e| panic!("copy {f}: {e}"));
    }
    let lock = std::fs::read_to_string(src.join("package-lock.json")).expect("package-lock.json");
    install_once(&work.join("installed"), &lock, || {
        ok_or_panic(
            "npm ci",
            run_in(Some(&work), "npm", &["ci", "--no-audit", "--no-fund", "--loglevel=error"], STEP_LIMIT),
        );
    });
    Some(work)
}

/// The paused holder with Redisson's watchdog lock, its renewals lost
/// (`clients/examples/java/.../PausedHolderMain.java`): its claimed critical
/// section outlives the lease and overlaps a second holder; CHECK says so
/// and the timeline it writes draws the violation.
#[test]
fn redisson_paused_holder_example() {
    if !runs("java", &["-version"]) || !runs("mvn", &["-v"]) {
        skipped("a JDK (17+) and Maven are not installed, so the Redisson paused-holder example was not run");
        return;
    }
    let srv = Binary::start(&["--port", "0"]);
    let build = work_dir("java-paused-holder");
    let file = build.join(format!("paused-holder-{}.html", srv.port));
    let args = format!("redis://127.0.0.1:{} {}", srv.port, file.display());
    let r = ok_or_panic(
        "the Redisson paused-holder example",
        run_java_example(&build, Some("example.PausedHolderMain"), &args, STEP_LIMIT),
    );
    assert!(r.stdout.contains("paused holder: second-holder=true violations=3"), "{}", r.stdout);
    assert!(r.stdout.contains("outlived its lease"), "{}", r.stdout);
    let html = std::fs::read_to_string(&file).expect("the timeline");
    assert!(html.contains("data-end=\"expired\""), "{html}");
    assert!(html.contains("<g class=\"violation\""));
    assert!(html.contains("<g class=\"mark fault\""), "the lost renewals' fault is marked");
    let _ = std::fs::remove_file(&file);
}

/// The paused holder with ioredis and redlock (`clients/examples/node/paused_holder.js`):
/// its claimed critical section outlives its lease and overlaps a second
/// holder; CHECK says so and the timeline it writes draws the violation.
#[test]
fn node_paused_holder_example() {
    let Some(work) = node_work("the node paused-holder example") else { return };
    let srv = Binary::start(&["--port", "0"]);
    let file = work.join(format!("paused-holder-{}.html", srv.port));
    let args = ["paused_holder.js", &srv.port.to_string(), file.to_str().expect("utf-8 path")];
    let r = ok_or_panic("the node paused-holder example", run_in(Some(&work), "node", &args, STEP_LIMIT));
    assert_eq!(r.stdout.lines().next(), Some("paused holder: second-holder=true violations=3"), "{}", r.stdout);
    let html = std::fs::read_to_string(&file).expect("the timeline");
    assert!(html.contains("data-client-name=\"worker-a\" data-end=\"expired\""), "{html}");
    assert!(html.contains("<g class=\"violation\""));
    let _ = std::fs::remove_file(&file);
}

#[test]
fn node_redis_example() {
    let Some(work) = node_work("the node-redis example") else { return };
    let srv = Binary::start(&["--port", "0"]);
    let r = ok_or_panic(
        "the node-redis example",
        run_in(Some(&work), "node", &["example.js", &srv.port.to_string()], STEP_LIMIT),
    );
    assert_eq!(r.stdout.trim_end(), "node example: ok");
    check_server_side(srv.port, "example:node");
}

/// node-redis's `hExpire`/`hTTL`/`hPersist` and ioredis's `hpexpire`
/// against rlockd answering as Redis 8.2.3, a field expired by test control's
/// clock (`clients/examples/node/field_ttl.js`).
#[test]
fn node_hash_field_ttl_example() {
    let Some(work) = node_work("the node hash-field TTL example") else { return };
    let srv = Binary::start(&["--port", "0", "--redis-version", "8.2.3"]);
    let r = ok_or_panic(
        "the node hash-field TTL example",
        run_in(Some(&work), "node", &["field_ttl.js", &srv.port.to_string()], STEP_LIMIT),
    );
    assert_eq!(r.stdout.trim_end(), "node field ttl: ok");
}

/// ioredis `Redis.Cluster` with redlock and node-redis `createCluster` on
/// `rlockd --cluster 3` (`clients/examples/node/cluster_example.js`).
#[test]
fn node_cluster_example() {
    let Some(work) = node_work("the ioredis/node-redis cluster example") else { return };
    let srv = Binary::start(&["--cluster", "3", "--port", "0"]);
    let r = ok_or_panic(
        "the node cluster example",
        run_in(Some(&work), "node", &["cluster_example.js", &srv.port.to_string()], STEP_LIMIT),
    );
    assert_eq!(r.stdout.trim_end(), "node cluster example: ok");
}

/// ioredis's `Cluster` with redlock through failovers on `rlockd --cluster
/// 3 --cluster-replicas 1` (`clients/examples/node/cluster_failover.js`).
#[test]
fn node_cluster_failover() {
    let Some(work) = node_work("the ioredis cluster failover example") else { return };
    let srv = Binary::start(&["--cluster", "3", "--cluster-replicas", "1", "--port", "0"]);
    let r = ok_or_panic(
        "the node cluster failover example",
        run_in(Some(&work), "node", &["cluster_failover.js", &srv.port.to_string()], STEP_LIMIT),
    );
    assert_eq!(r.stdout.trim_end(), "node cluster failover: ok");
    let Value::Agg(_, Some(v)) = RawConn::connect(srv.port).cmd(&["RLOCKD", "CHECK"]) else { panic!("CHECK") };
    assert_eq!(v.len(), 1, "{v:?}");
}

#[test]
fn redisson_example() {
    if !runs("java", &["-version"]) || !runs("mvn", &["-v"]) {
        skipped("a JDK (17+) and Maven are not installed, so the Redisson example was not run");
        return;
    }
    let srv = Binary::start(&["--port", "0"]);
    let address = format!("redis://127.0.0.1:{}", srv.port);
    let r = ok_or_panic(
        "the Redisson example (mvn compile exec:java)",
        run_java_example(&work_dir("java"), None, &address, STEP_LIMIT),
    );
    // Maven may wrap the program's output in colour resets.
    assert!(r.stdout.contains("java example: ok"), "{}", r.stdout);
    check_server_side(srv.port, "example:java");
}

/// Redisson in cluster mode (`useClusterServers()`) on `rlockd --cluster 3`:
/// RLock, RFairLock, a MultiLock across slots and an untagged two-key
/// script refused with CROSSSLOT (`clients/examples/java/.../ClusterMain.java`).
#[test]
fn redisson_cluster_example() {
    if !runs("java", &["-version"]) || !runs("mvn", &["-v"]) {
        skipped("a JDK (17+) and Maven are not installed, so the Redisson cluster example was not run");
        return;
    }
    let srv = Binary::start(&["--cluster", "3", "--port", "0"]);
    let address = format!("redis://127.0.0.1:{}", srv.port);
    let r = ok_or_panic(
        "the Redisson cluster example (mvn compile exec:java)",
        run_java_example(&work_dir("java-cluster"), Some("example.ClusterMain"), &address, STEP_LIMIT),
    );
    assert!(r.stdout.contains("java cluster example: ok"), "{}", r.stdout);
}

/// Redisson in cluster mode on `rlockd --cluster 3 --cluster-replicas 1`:
/// an RLock held while its slot moves (half-way, then all) and released
/// after, held through a failover without loss, refused by Redisson when no
/// replica acknowledges it, and lost in a failover by a client that does not
/// check, a second client then holding it and `RLOCKD CHECK` saying so
/// (`clients/examples/java/.../ClusterFailoverMain.java`).
#[test]
fn redisson_cluster_failover() {
    if !runs("java", &["-version"]) || !runs("mvn", &["-v"]) {
        skipped("a JDK (17+) and Maven are not installed, so the Redisson cluster failover example was not run");
        return;
    }
    let srv = Binary::start(&["--cluster", "3", "--cluster-replicas", "1", "--port", "0"]);
    let address = format!("redis://127.0.0.1:{}", srv.port);
    let r = ok_or_panic(
        "the Redisson cluster failover example (mvn compile exec:java)",
        run_java_example(&work_dir("java-cluster-failover"), Some("example.ClusterFailoverMain"), &address, STEP_LIMIT),
    );
    assert!(r.stdout.contains("java cluster failover: ok"), "{}", r.stdout);
    let Value::Agg(_, Some(v)) = RawConn::connect(srv.port).cmd(&["RLOCKD", "CHECK"]) else { panic!("CHECK") };
    assert_eq!(v.len(), 1, "{v:?}");
}
