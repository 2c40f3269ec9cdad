//! CONFIG against redis-server's parameter list, and the reported Redis
//! version (`redis-version`) over TCP. The value-by-value comparison with
//! Redis is the differential scenario `tests/diff/config.redis`.

use std::collections::BTreeSet;

use rlockd::{Config, Server};

use super::common::{oracle::Oracle, resp::RawConn, resp::Value};

/// rlockd's own parameters: hidden as Redis's debugging parameters are
/// (read and set by exact name, never listed by a pattern).
const RLOCKD_ONLY: &[&str] = &["redis-version", "test-control"];

fn names(conn: &mut RawConn) -> BTreeSet<String> {
    let all = conn.cmd(&["CONFIG", "GET", "*"]).bulks();
    assert!(all.len().is_multiple_of(2) && all.len() > 300, "CONFIG GET *: {} items", all.len());
    all.chunks(2).map(|kv| String::from_utf8(kv[0].clone()).expect("utf-8 name")).collect()
}

#[test]
fn config_get_star_lists_the_names_redis_lists() {
    let Some(oracle) = Oracle::start() else { return };
    let srv = Server::start().expect("rlockd");
    let theirs = names(&mut RawConn::connect(oracle.port));
    let ours = names(&mut RawConn::connect(srv.port()));
    let missing: Vec<_> = theirs.difference(&ours).collect();
    let extra: Vec<_> = ours.difference(&theirs).map(String::as_str).collect();
    assert!(missing.is_empty(), "redis-server lists parameters rlockd does not: {missing:?}");
    assert!(extra.is_empty(), "rlockd lists parameters redis-server does not: {extra:?}");
    let mut o = RawConn::connect(srv.port());
    for name in RLOCKD_ONLY {
        assert!(o.cmd(&["CONFIG", "GET", &format!("{name}*")]).bulks().is_empty(), "{name} matched by a pattern");
        assert_eq!(o.cmd(&["CONFIG", "GET", name]).bulks()[0], name.as_bytes(), "{name} by its exact name");
    }
    // Every listed name can be read back alone, under that name, on both.
    let (mut o, mut t) = (RawConn::connect(srv.port()), RawConn::connect(oracle.port));
    for name in &theirs {
        let (ov, tv) = (o.cmd(&["CONFIG", "GET", name]).bulks(), t.cmd(&["CONFIG", "GET", name]).bulks());
        assert_eq!((ov.len(), tv.len()), (2, 2), "{name}");
        assert_eq!(ov[0], tv[0], "{name}");
    }
}

fn hello_version(conn: &mut RawConn) -> String {
    let reply = conn.cmd(&["HELLO", "2"]).bulks();
    let i = reply.iter().position(|b| b == b"version").expect("version in HELLO");
    String::from_utf8(reply[i + 1].clone()).expect("utf-8")
}

fn info_version(conn: &mut RawConn) -> String {
    let Value::Bulk(Some(info)) = conn.cmd(&["INFO", "server"]) else { panic!("INFO server") };
    let info = String::from_utf8(info).expect("utf-8");
    let line = info.lines().find(|l| l.starts_with("redis_version:")).expect("redis_version line");
    line["redis_version:".len()..].to_string()
}

#[test]
fn reported_version_follows_the_parameter() {
    // The default is the version rlockd follows.
    let srv = Server::start().expect("rlockd");
    let mut c = RawConn::connect(srv.port());
    assert_eq!(info_version(&mut c), "7.0.15");
    assert_eq!(hello_version(&mut c), "7.0.15");

    // At start, as `--redis-version 7.2.4` sets it.
    let cfg = Config { params: vec![("redis-version".into(), "7.2.4".into())], ..Default::default() };
    let srv = Server::start_with(cfg).expect("rlockd");
    let mut c = RawConn::connect(srv.port());
    assert_eq!(info_version(&mut c), "7.2.4");
    assert_eq!(hello_version(&mut c), "7.2.4");
    assert_eq!(c.cmd(&["CONFIG", "GET", "redis-version"]).bulks(), [b"redis-version".to_vec(), b"7.2.4".to_vec()]);

    // At run time, for every client (a new connection sees it too).
    assert_eq!(c.cmd(&["CONFIG", "SET", "redis-version", "6.2.14"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(info_version(&mut c), "6.2.14");
    assert_eq!(hello_version(&mut RawConn::connect(srv.port())), "6.2.14");

    // Validated as X.Y.Z; a refused value changes nothing.
    for bad in ["7.2", "7.2.4.1", "7.x.4", "", "7..4", "256.0.0", "v7.2.4", "7.2.4 "] {
        match c.cmd(&["CONFIG", "SET", "redis-version", bad]) {
            Value::Error(e) => assert!(
                String::from_utf8_lossy(&e).starts_with(
                    "ERR CONFIG SET failed (possibly related to argument 'redis-version') - argument must be"
                ),
                "{bad:?}: {}",
                String::from_utf8_lossy(&e)
            ),
            other => panic!("{bad:?} accepted: {other:?}"),
        }
    }
    assert_eq!(info_version(&mut c), "6.2.14");
    // Leading zeros are read as numbers and printed without them.
    c.cmd(&["CONFIG", "SET", "redis-version", "07.02.004"]);
    assert_eq!(hello_version(&mut c), "7.2.4");

    // A bad start-up value is refused with the parameter's error.
    let cfg = Config { params: vec![("redis-version".into(), "seven".into())], ..Default::default() };
    let err = Server::start_with(cfg).expect_err("bad version accepted").to_string();
    assert!(err.contains("redis-version") && err.contains("major.minor.patch"), "{err}");
}

/// The binary's `--redis-version`, through the same parameter table (and
/// the same check: a bad value is refused with the parameter's reason).
#[test]
fn binary_reports_the_version_given_on_its_command_line() {
    use super::common::binary::{run, Binary, BIN};
    let b = Binary::start(&["--port", "0", "--redis-version", "7.2.4"]);
    let mut c = RawConn::connect(b.port);
    assert_eq!(info_version(&mut c), "7.2.4");
    assert_eq!(hello_version(&mut c), "7.2.4");
    let r = run(BIN, &["--port", "0", "--redis-version", "7.2"]);
    assert_eq!(r.code, Some(1), "{r:?}");
    assert!(r.stderr.contains("argument must be a version as major.minor.patch"), "{}", r.stderr);
}

/// A multi-parameter SET that fails applies nothing, over TCP.
#[test]
fn multi_parameter_set_is_all_or_nothing() {
    let srv = Server::start().expect("rlockd");
    let mut c = RawConn::connect(srv.port());
    let err = c.cmd(&["CONFIG", "SET", "maxmemory", "10mb", "timeout", "5", "redis-version", "x"]);
    assert!(matches!(err, Value::Error(_)), "{err:?}");
    assert_eq!(c.cmd(&["CONFIG", "GET", "maxmemory"]).bulks()[1], b"0");
    assert_eq!(c.cmd(&["CONFIG", "GET", "timeout"]).bulks()[1], b"0");
    assert_eq!(info_version(&mut c), "7.0.15");
    let ok = c.cmd(&["CONFIG", "SET", "maxmemory", "10mb", "timeout", "5", "redis-version", "7.2.0"]);
    assert_eq!(ok, Value::Simple(b"OK".to_vec()));
    assert_eq!(c.cmd(&["CONFIG", "GET", "maxmemory"]).bulks()[1], b"10485760");
    assert_eq!(info_version(&mut c), "7.2.0");
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

fn ok(v: Value) {
    assert_eq!(v, Value::Simple(b"OK".to_vec()));
}

fn err(v: Value) -> String {
    match v {
        Value::Error(e) => String::from_utf8_lossy(&e).into_owned(),
        other => panic!("expected an error, got {other:?}"),
    }
}

/// `CONFIG SET port` and `bind` move the listener: new clients connect at
/// the new address, the old one is closed, connected clients stay; a port
/// or address that cannot be had is refused with Redis's text and the
/// server keeps listening where it was.
#[test]
fn config_set_port_and_bind_move_the_listener() {
    let srv = Server::start().expect("rlockd");
    let old = srv.port();
    let mut c = RawConn::connect(old);
    let new = free_port();
    ok(c.cmd(&["CONFIG", "SET", "port", &new.to_string()]));
    assert_eq!(c.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()), "the connected client stays");
    assert_eq!(srv.port(), new);
    assert!(std::net::TcpStream::connect(("127.0.0.1", old)).is_err(), "the old port still accepts");
    let mut d = RawConn::connect(new);
    assert_eq!(d.cmd(&["CONFIG", "GET", "port"]).bulks()[1], new.to_string().into_bytes());
    let Value::Bulk(Some(info)) = d.cmd(&["INFO", "server"]) else { panic!("INFO") };
    assert!(String::from_utf8_lossy(&info).contains(&format!("tcp_port:{new}\r\n")));

    // A port another server holds: refused, and nothing moves.
    let other = Server::start().expect("rlockd");
    let e = err(d.cmd(&["CONFIG", "SET", "port", &other.port().to_string()]));
    assert_eq!(e, "ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.");
    assert_eq!(d.cmd(&["CONFIG", "GET", "port"]).bulks()[1], new.to_string().into_bytes());
    assert_eq!(RawConn::connect(new).cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    // With other parameters in the same SET: none of them applies either.
    let e = err(d.cmd(&["CONFIG", "SET", "maxmemory", "1mb", "port", &other.port().to_string()]));
    assert!(e.contains("argument 'port'"), "{e}");
    assert_eq!(d.cmd(&["CONFIG", "GET", "maxmemory"]).bulks()[1], b"0");

    // Port 0 picks a free port, and CONFIG GET tells which.
    ok(d.cmd(&["CONFIG", "SET", "port", "0"]));
    let picked = srv.port();
    assert!(picked != 0 && picked != new);
    assert_eq!(RawConn::connect(picked).cmd(&["CONFIG", "GET", "port"]).bulks()[1], picked.to_string().into_bytes());

    // bind: an address this host does not have is refused; optional ones
    // (a leading `-`) are skipped; more than 16 are refused.
    let mut e_conn = RawConn::connect(picked);
    let e = err(e_conn.cmd(&["CONFIG", "SET", "bind", "10.255.255.1"]));
    assert_eq!(
        e,
        "ERR CONFIG SET failed (possibly related to argument 'bind') - Failed to bind to specified addresses."
    );
    assert_eq!(RawConn::connect(picked).cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    ok(e_conn.cmd(&["CONFIG", "SET", "bind", "-10.255.255.1 127.0.0.1"]));
    assert_eq!(e_conn.cmd(&["CONFIG", "GET", "bind"]).bulks()[1], b"-10.255.255.1 127.0.0.1");
    assert_eq!(RawConn::connect(picked).cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    let many: Vec<String> = (1..=17).map(|i| format!("127.0.0.{i}")).collect();
    let e = err(e_conn.cmd(&["CONFIG", "SET", "bind", &many.join(" ")]));
    assert!(e.ends_with("- Too many bind addresses specified."), "{e}");
    // Two addresses: both listen, on the same port.
    ok(e_conn.cmd(&["CONFIG", "SET", "bind", "127.0.0.1 127.0.0.2"]));
    assert_eq!(srv.port(), picked);
    for ip in ["127.0.0.1", "127.0.0.2"] {
        let s = std::net::TcpStream::connect((ip, picked)).unwrap_or_else(|e| panic!("{ip}:{picked}: {e}"));
        drop(s);
    }
}

/// Redis's own `CONFIG sanity` test (unit/introspection): every parameter
/// `CONFIG GET *` lists, but for the test's list of immutable, protected
/// and awkward ones, is set to its own value, and `CONFIG GET *` reads the
/// same after. Run on rlockd, and on redis-server to show the test is
/// Redis's (on 7.0.15, `dir` is protected and `socket-mark-id` immutable,
/// as the test's list has them).
#[test]
fn config_sanity_as_redis_runs_it() {
    const SKIP: &[&str] = &[
        "rdbchecksum",
        "daemonize",
        "io-threads-do-reads",
        "tcp-backlog",
        "always-show-logo",
        "syslog-enabled",
        "cluster-enabled",
        "disable-thp",
        "aclfile",
        "unixsocket",
        "pidfile",
        "syslog-ident",
        "appendfilename",
        "appenddirname",
        "supervised",
        "syslog-facility",
        "databases",
        "io-threads",
        "logfile",
        "unixsocketperm",
        "replicaof",
        "slaveof",
        "requirepass",
        "server_cpulist",
        "bio_cpulist",
        "aof_rewrite_cpulist",
        "bgsave_cpulist",
        "set-proc-title",
        "cluster-config-file",
        "cluster-port",
        "oom-score-adj",
        "oom-score-adj-values",
        "enable-protected-configs",
        "enable-debug-command",
        "enable-module-command",
        "dbfilename",
        "logfile",
        "dir",
        "socket-mark-id",
        "req-res-logfile",
        "client-default-resp",
        // Without TLS, as the test runs by default.
        "tls-prefer-server-ciphers",
        "tls-session-cache-timeout",
        "tls-session-cache-size",
        "tls-session-caching",
        "tls-cert-file",
        "tls-key-file",
        "tls-client-cert-file",
        "tls-client-key-file",
        "tls-dh-params-file",
        "tls-ca-cert-file",
        "tls-ca-cert-dir",
        "tls-protocols",
        "tls-ciphers",
        "tls-ciphersuites",
        "tls-port",
    ];
    let sanity = |port: u16| {
        let mut c = RawConn::connect(port);
        let all = |c: &mut RawConn| -> Vec<(String, Vec<u8>)> {
            let kv = c.cmd(&["CONFIG", "GET", "*"]).bulks();
            kv.chunks(2)
                .map(|p| (String::from_utf8(p[0].clone()).unwrap(), p[1].clone()))
                .filter(|(k, _)| !SKIP.contains(&k.as_str()))
                .collect()
        };
        let before = all(&mut c);
        for (k, v) in &before {
            c.send(&[b"CONFIG".to_vec(), b"SET".to_vec(), k.clone().into_bytes(), v.clone()]);
            let reply = c.read().expect("reply");
            assert_eq!(reply, Value::Simple(b"OK".to_vec()), "CONFIG SET {k} {}", String::from_utf8_lossy(v));
        }
        let mut after = all(&mut c);
        let mut before = before;
        before.sort();
        after.sort();
        assert_eq!(before, after);
        before.len()
    };
    let srv = Server::start().expect("rlockd");
    let ours = sanity(srv.port());
    if let Some(oracle) = Oracle::start() {
        assert_eq!(ours, sanity(oracle.port), "both servers list the same parameters");
    }
}
