//! `unixsocket` / `unixsocketperm`: the server also listens on a Unix-domain
//! socket and serves its clients as TCP ones, showing them as Redis 7.0 does
//! (compared with a real redis-server listening on a Unix socket too).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::common::binary::Binary;
use crate::common::oracle::Oracle;
use crate::common::resp::{pretty, RawConn, Value};

/// A fresh socket path for this test (removed first if left over).
fn sock_path(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("rlockd-{}-{name}.sock", std::process::id()));
    let _ = std::fs::remove_file(&p);
    p
}

fn bulk(v: Value) -> String {
    match v {
        Value::Bulk(Some(b)) => String::from_utf8(b).expect("utf-8"),
        other => panic!("not a bulk string: {other:?}"),
    }
}

/// `CLIENT INFO` with the socket's path replaced by `PATH` and the fields
/// that differ between any two servers (ids, descriptors, buffer
/// allocations, ages) left out.
fn client_info(c: &mut RawConn, path: &Path) -> String {
    let line = bulk(c.cmd(&["CLIENT", "INFO"]));
    let line = line.trim_end().replace(path.to_str().expect("path"), "PATH");
    let volatile = ["id", "fd", "age", "idle", "qbuf-free", "rbs", "rbp", "tot-mem"];
    line.split(' ')
        .filter(|kv| !volatile.iter().any(|v| kv.starts_with(&format!("{v}="))))
        .collect::<Vec<_>>()
        .join(" ")
}

fn server_with_socket(path: &Path, perm: &str) -> rlockd::Server {
    let mut cfg = rlockd::Config::default().unixsocket(path.to_str().expect("path"));
    cfg.params.push(("unixsocketperm".into(), perm.into()));
    rlockd::Server::start_with(cfg).expect("start")
}

/// A Unix client is shown as Redis shows it (`addr=PATH:0 laddr=PATH:0`,
/// flag `U`, `[0 unix:PATH]` in MONITOR, killable by that address), the two
/// parameters read back and refuse `CONFIG SET` alike, the file gets
/// `unixsocketperm`'s mode, and `SHUTDOWN` removes it.
#[test]
fn unix_socket_clients_are_shown_and_served_as_redis() {
    let redis_path = sock_path("oracle");
    let Some(mut oracle) =
        Oracle::start_with(&["--unixsocket", redis_path.to_str().unwrap(), "--unixsocketperm", "700"])
    else {
        return;
    };
    let ours = sock_path("server");
    let srv = server_with_socket(&ours, "700");
    assert_eq!(srv.unix_path(), Some(ours.as_path()));
    for path in [&ours, &redis_path] {
        let mode = std::fs::metadata(path).expect("socket file").permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{}", path.display());
    }
    let mut answers = Vec::new();
    for path in [&ours, &redis_path] {
        let mut c = RawConn::connect_unix(path);
        let p = path.to_str().unwrap();
        let mut a = vec![client_info(&mut c, path)];
        a.push(pretty(&c.cmd(&["CONFIG", "GET", "unixsocket"])).replace(p, "PATH"));
        a.push(pretty(&c.cmd(&["CONFIG", "GET", "unixsocketperm"])));
        a.push(pretty(&c.cmd(&["CONFIG", "SET", "unixsocket", "/tmp/elsewhere.sock"])));
        a.push(pretty(&c.cmd(&["CONFIG", "SET", "unixsocketperm", "777"])));
        // The same commands over TCP and over the socket.
        a.push(pretty(&c.cmd(&["SET", "k", "v", "PX", "100000", "NX"])));
        a.push(pretty(&c.cmd(&["EVAL", "return redis.call('GET', KEYS[1])", "1", "k"])));
        // MONITOR names a Unix client `unix:<path>`.
        let mut mon = RawConn::connect_unix(path);
        assert_eq!(mon.cmd(&["MONITOR"]), Value::Simple(b"OK".to_vec()));
        c.cmd(&["GET", "k"]);
        let Some(Value::Simple(line)) = mon.read() else { panic!("MONITOR line") };
        let line = String::from_utf8(line).unwrap();
        a.push(line.split_once(' ').expect("timestamp").1.replace(p, "PATH"));
        // CLIENT LIST by the address Redis prints, and CLIENT KILL by it.
        let list = bulk(c.cmd(&["CLIENT", "LIST"]));
        assert_eq!(list.lines().filter(|l| l.contains(&format!("addr={p}:0 laddr={p}:0 "))).count(), 2, "{list}");
        a.push(pretty(&c.cmd(&["CLIENT", "KILL", "ADDR", &format!("{p}:0"), "SKIPME", "yes"])));
        answers.push(a);
    }
    assert_eq!(answers[0], answers[1]);
    assert!(answers[0][0].contains("addr=PATH:0 laddr=PATH:0 name= flags=U db=0 "), "{}", answers[0][0]);

    // SHUTDOWN removes the file (redis-server's too).
    for path in [&ours, &redis_path] {
        let mut c = RawConn::connect_unix(path);
        c.send(&[b"SHUTDOWN".to_vec(), b"NOSAVE".to_vec()]);
        assert_eq!(c.read(), None);
    }
    assert!(oracle.wait_exit());
    srv.join();
    assert!(!ours.exists() && !redis_path.exists());
}

/// The `redis` crate over the socket sees what a TCP client sees; protected
/// mode lets Unix clients in; the file goes when the server stops; a second
/// server given the same path refuses to start instead of taking it over.
#[test]
fn redis_crate_over_the_unix_socket() {
    let path = sock_path("crate");
    let srv = server_with_socket(&path, "0");
    let client = redis::Client::open(format!("unix://{}", path.display())).expect("client");
    let mut unix = client.get_connection().expect("connect over the socket");
    let mut tcp = crate::common::conn(&srv);
    let script = redis::Script::new(
        "if redis.call('exists', KEYS[1]) == 0 then redis.call('hincrby', KEYS[1], ARGV[2], 1); \
         redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; return redis.call('pttl', KEYS[1]);",
    );
    let got: Option<i64> = script.key("lock").arg(30000).arg("owner:1").invoke(&mut unix).expect("lock");
    assert_eq!(got, None);
    let held: i64 = redis::cmd("HGET").arg("lock").arg("owner:1").query(&mut tcp).expect("HGET");
    assert_eq!(held, 1);
    let ttl: i64 = script.key("lock").arg(30000).arg("owner:2").invoke(&mut tcp).expect("contended");
    assert!(ttl > 0 && ttl <= 30000);
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut tcp).expect("CLIENT LIST");
    assert!(list.lines().any(|l| l.contains(" flags=U ")), "{list}");
    assert!(list.lines().any(|l| l.contains(" flags=N ")), "{list}");

    let second = rlockd::Server::start_with(rlockd::Config::default().unixsocket(path.to_str().unwrap()));
    assert!(matches!(second, Err(rlockd::Error::Bind { .. })), "{second:?}");
    let pong: String = redis::cmd("PING").query(&mut unix).expect("still served");
    assert_eq!(pong, "PONG");
    // CONFIG SET port moves the TCP listener only: the socket stays.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let _: () = redis::cmd("CONFIG").arg("SET").arg("port").arg(port).query(&mut unix).expect("CONFIG SET port");
    assert_eq!(srv.port(), port);
    let mut fresh = client.get_connection().expect("a new connection over the socket");
    let pong: String = redis::cmd("PING").query(&mut fresh).expect("PING");
    assert_eq!(pong, "PONG");
    drop(fresh);

    drop(unix);
    srv.stop();
    assert!(!path.exists());
}

/// The binary: `--unixsocket` on the command line, `redis-cli -s` against
/// it, and the file removed on SIGTERM.
#[test]
fn binary_listens_on_unixsocket_and_removes_it() {
    let path = sock_path("binary");
    let p = path.to_str().unwrap();
    let mut bin = Binary::start(&["--port", "0", "--unixsocket", p, "--unixsocketperm", "770"]);
    assert_eq!(std::fs::metadata(&path).expect("socket").permissions().mode() & 0o777, 0o770);
    let mut c = RawConn::connect_unix(&path);
    assert_eq!(c.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    if let Ok(out) = std::process::Command::new("redis-cli").args(["-s", p, "SET", "via", "cli"]).output() {
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "OK");
        assert_eq!(c.cmd(&["GET", "via"]), Value::Bulk(Some(b"cli".to_vec())));
    }
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(bin.pid() as i32, libc::SIGTERM) };
    assert!(bin.wait_exit(Duration::from_secs(10)).success());
    assert!(!path.exists());
    assert!(bin.stderr().contains("The server is now ready to accept connections at "), "{}", bin.stderr());
}
