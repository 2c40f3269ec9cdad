//! The Dockerfile, where a container engine answers (`docker info`, else
//! `podman info`): the image is built from this tree, its final layer is
//! small, and a container started from it with a published port becomes
//! healthy through its own HEALTHCHECK, answers PING and a lock script from
//! the host (also when started with `--requirepass`, which the entry point
//! passes on), and stops with exit code 0 on `docker stop`. Without an
//! engine the test is a visible skip (see `common::skip`).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::binary::{run_in, Run};
use crate::common::resp::{RawConn, Value};
use crate::common::skip::skipped;

/// Hang guard for the image build (a first build compiles rlockd); not a
/// speed check.
const BUILD_LIMIT: Duration = Duration::from_secs(3600);
/// Hang guard for every other engine command and for health.
const STEP_LIMIT: Duration = Duration::from_secs(120);

/// The final image holds busybox and one static binary.
const MAX_IMAGE_BYTES: u64 = 64 << 20;

/// The first engine whose `info` succeeds (a client without a daemon fails).
fn engine() -> Option<&'static str> {
    ["docker", "podman"].into_iter().find(|e| {
        std::process::Command::new(e)
            .arg("info")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

fn ok(what: &str, r: Run) -> String {
    assert_eq!(r.code, Some(0), "{what} failed:\nstdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
    r.stdout.trim().to_string()
}

/// Removes the test's containers and image, whatever happens.
struct Cleanup {
    engine: &'static str,
    image: String,
    containers: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        for c in &self.containers {
            let _ = run_in(None, self.engine, &["rm", "-f", c], STEP_LIMIT);
        }
        let _ = run_in(None, self.engine, &["rmi", "-f", &self.image], STEP_LIMIT);
    }
}

impl Cleanup {
    fn inspect(&self, what: &str, format: &str) -> String {
        ok(
            &format!("{} inspect {what}", self.engine),
            run_in(None, self.engine, &["inspect", "-f", format, what], STEP_LIMIT),
        )
    }

    fn logs(&self, container: &str) -> String {
        let r = run_in(None, self.engine, &["logs", container], STEP_LIMIT);
        format!("{}{}", r.stdout, r.stderr)
    }

    /// Starts a container of the image with `args`, its port 6379
    /// published on a free loopback port; waits until its health check
    /// reports it healthy. Returns the container's id and the host port.
    fn start(&mut self, args: &[&str]) -> (String, u16) {
        let mut run_args = vec!["run", "-d", "-p", "127.0.0.1::6379", self.image.as_str()];
        run_args.extend_from_slice(args);
        let id = ok("run the image", run_in(None, self.engine, &run_args, STEP_LIMIT));
        self.containers.push(id.clone());
        let mapping = ok("read the published port", run_in(None, self.engine, &["port", &id, "6379/tcp"], STEP_LIMIT));
        let port = mapping
            .lines()
            .find_map(|l| l.rsplit(':').next()?.trim().parse::<u16>().ok())
            .unwrap_or_else(|| panic!("no published port in {mapping:?}"));
        let deadline = Instant::now() + STEP_LIMIT;
        loop {
            match self.inspect(&id, "{{.State.Health.Status}}").as_str() {
                "healthy" => break,
                "unhealthy" => panic!("the container is unhealthy; its logs:\n{}", self.logs(&id)),
                _ => {}
            }
            assert!(Instant::now() < deadline, "the container never became healthy; its logs:\n{}", self.logs(&id));
            std::thread::sleep(Duration::from_millis(200));
        }
        (id, port)
    }
}

const LOCK: &str = "if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', 30000) then return 1 end return 0";

#[test]
fn the_image_builds_small_starts_healthy_and_answers_from_the_host() {
    let Some(engine) = engine() else {
        skipped("no container engine answers (`docker info`, `podman info`), so the Dockerfile was not built");
        return;
    };
    let mut c =
        Cleanup { engine, image: format!("rlockd-test:{}-{}", std::process::id(), line!()), containers: Vec::new() };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut build = vec!["build", "-t", c.image.as_str()];
    if engine == "podman" {
        // Podman's default OCI format has no HEALTHCHECK.
        build.extend_from_slice(&["--format", "docker"]);
    }
    build.push(".");
    ok("build the image", run_in(Some(root), engine, &build, BUILD_LIMIT));
    let size: u64 = c.inspect(&c.image, "{{.Size}}").parse().expect("image size");
    assert!(size <= MAX_IMAGE_BYTES, "the image takes {size} bytes");

    let (id, port) = c.start(&[]);
    let mut con = RawConn::connect(port);
    assert_eq!(con.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    assert_eq!(con.cmd(&["EVAL", LOCK, "1", "lock", "me"]), Value::Int(1));
    assert_eq!(con.cmd(&["EVAL", LOCK, "1", "lock", "you"]), Value::Int(0));
    drop(con);
    ok("stop the container", run_in(None, engine, &["stop", "-t", "20", &id], STEP_LIMIT));
    assert_eq!(c.inspect(&id, "{{.State.ExitCode}}"), "0", "{}", c.logs(&id));
    let logs = c.logs(&id);
    assert!(logs.contains("Ready to accept connections") && logs.contains("bye bye"), "{logs}");

    // Options alone are rlockd's: the entry point keeps it reachable.
    let (_, port) = c.start(&["--requirepass", "secret", "--databases", "4"]);
    let mut con = RawConn::connect(port);
    assert!(matches!(con.cmd(&["PING"]), Value::Error(e) if e.starts_with(b"NOAUTH")));
    assert_eq!(con.cmd(&["AUTH", "secret"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(con.cmd(&["SELECT", "4"]), Value::Error(b"ERR DB index is out of range".to_vec()));
}
