//! Connection set-up sequences of real clients (Redisson, Lettuce, Jedis,
//! redis-py, ioredis, node-redis, redis-rs), replayed with raw RESP, with and
//! without `requirepass`; and the pub/sub waiter pattern lock clients use.

use std::time::{Duration, Instant};

use rlockd::{Config, Server};

use super::common::resp::{encode, pretty, RawConn, Value};

const PASS: &str = "s3cret";

/// The shape a step's reply must have.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    /// `+OK`
    Ok,
    /// `+PONG`
    Pong,
    /// HELLO's map (RESP3 `%`, RESP2 flat array) with `proto` = the number.
    Hello(i64),
    /// A map in RESP3, a flat even array in RESP2 (CONFIG GET).
    Pairs,
    /// A non-empty array (COMMAND).
    NonEmptyArray,
    /// Bulk text in RESP2, verbatim in RESP3, containing `redis_version:`.
    Info,
    Int,
    /// A bulk string equal to this.
    Bulk(&'static str),
    /// An error starting with this.
    Err(&'static str),
}

/// `CLIENT SETINFO` is Redis 7.2's: under the default 7.0.15 profile it is an
/// unknown subcommand, as on redis-server 7.0.15 (each client here goes on:
/// they send it pipelined and ignore its error).
const SETINFO_7_0: Shape = Shape::Err("ERR unknown subcommand 'SETINFO'. Try CLIENT HELP.");

fn check(step: &str, shape: Shape, v: &Value) {
    let ok = match shape {
        Shape::Ok => *v == Value::Simple(b"OK".to_vec()),
        Shape::Pong => *v == Value::Simple(b"PONG".to_vec()),
        Shape::Hello(proto) => {
            let pairs: Vec<(Value, Value)> = match v {
                Value::Map(p) => p.clone(),
                Value::Agg(b'*', Some(items)) if items.len() % 2 == 0 => {
                    items.chunks(2).map(|c| (c[0].clone(), c[1].clone())).collect()
                }
                _ => Vec::new(),
            };
            let get =
                |k: &str| pairs.iter().find(|(a, _)| *a == Value::Bulk(Some(k.as_bytes().to_vec()))).map(|p| &p.1);
            get("proto") == Some(&Value::Int(proto))
                && get("server") == Some(&Value::Bulk(Some(b"redis".to_vec())))
                && matches!(get("version"), Some(Value::Bulk(Some(_))))
                && matches!(get("id"), Some(Value::Int(_)))
                && get("role") == Some(&Value::Bulk(Some(b"master".to_vec())))
        }
        Shape::Pairs => match v {
            Value::Map(p) => !p.is_empty(),
            Value::Agg(b'*', Some(items)) => !items.is_empty() && items.len() % 2 == 0,
            _ => false,
        },
        Shape::NonEmptyArray => matches!(v, Value::Agg(b'*', Some(items)) if !items.is_empty()),
        Shape::Info => match v {
            Value::Bulk(Some(t)) | Value::Verbatim(t) => String::from_utf8_lossy(t).contains("redis_version:"),
            _ => false,
        },
        Shape::Int => matches!(v, Value::Int(_)),
        Shape::Bulk(s) => *v == Value::Bulk(Some(s.as_bytes().to_vec())),
        Shape::Err(prefix) => matches!(v, Value::Error(e) if e.starts_with(prefix.as_bytes())),
    };
    assert!(ok, "{step}: expected {shape:?}, got {}", pretty(v));
}

/// Sends each step as its own round trip and checks the reply.
fn replay(conn: &mut RawConn, steps: &[(&str, Shape)]) {
    for (line, shape) in steps {
        let args: Vec<&str> = line.split(' ').collect();
        let v = conn.cmd(&args);
        check(line, *shape, &v);
    }
}

/// Sends all steps in one write (how Lettuce, redis-rs and node-redis
/// pipeline their handshake) and checks the replies in order.
fn replay_pipelined(conn: &mut RawConn, steps: &[(&str, Shape)]) {
    let mut batch = Vec::new();
    for (line, _) in steps {
        batch.extend(encode(&line.split(' ').map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>()));
    }
    conn.send_raw(&batch);
    for (line, shape) in steps {
        let v = conn.read().unwrap_or_else(|| panic!("{line}: no reply"));
        check(line, *shape, &v);
    }
}

/// Ends the connection the way clients do at shutdown.
fn quit(mut conn: RawConn) {
    assert_eq!(conn.cmd(&["QUIT"]), Value::Simple(b"OK".to_vec()));
    assert!(conn.read().is_none(), "connection not closed after QUIT");
}

fn servers() -> Vec<(Server, Option<&'static str>)> {
    vec![
        (Server::start().expect("start"), None),
        (
            Server::start_with(Config { requirepass: Some(PASS.into()), ..Default::default() }).expect("start"),
            Some(PASS),
        ),
    ]
}

fn auth_line(pass: Option<&str>) -> Vec<(String, Shape)> {
    pass.map(|p| vec![(format!("AUTH {p}"), Shape::Ok)]).unwrap_or_default()
}

fn owned(steps: &[(String, Shape)]) -> Vec<(&str, Shape)> {
    steps.iter().map(|(s, sh)| (s.as_str(), *sh)).collect()
}

#[test]
fn redisson_handshake() {
    for (srv, pass) in servers() {
        // RESP2: AUTH, SELECT, CLIENT SETNAME, then periodic PINGs.
        let mut c = RawConn::connect(srv.port());
        let mut steps = auth_line(pass);
        steps.extend([
            ("SELECT 2".to_string(), Shape::Ok),
            ("CLIENT SETNAME redisson-client".to_string(), Shape::Ok),
            ("PING".to_string(), Shape::Pong),
            ("CLIENT GETNAME".to_string(), Shape::Bulk("redisson-client")),
        ]);
        replay(&mut c, &owned(&steps));
        quit(c);
        // RESP3 (Redisson 3.2x `protocol: RESP3`): HELLO 3 with AUTH.
        let mut c = RawConn::connect(srv.port());
        let hello = match pass {
            Some(p) => format!("HELLO 3 AUTH default {p}"),
            None => "HELLO 3".to_string(),
        };
        replay(
            &mut c,
            &owned(&[
                (hello, Shape::Hello(3)),
                ("SELECT 0".into(), Shape::Ok),
                ("CLIENT SETNAME redisson-3".into(), Shape::Ok),
                ("PING".into(), Shape::Pong),
            ]),
        );
        quit(c);
    }
}

#[test]
fn lettuce_handshake() {
    for (srv, pass) in servers() {
        // Lettuce 6.3+: one pipelined burst — HELLO with AUTH and SETNAME,
        // CLIENT SETINFO (errors ignored by Lettuce: an unknown subcommand
        // under 7.0.15), SELECT.
        let mut c = RawConn::connect(srv.port());
        let hello = match pass {
            Some(p) => format!("HELLO 3 AUTH default {p} SETNAME lettuce"),
            None => "HELLO 3 SETNAME lettuce".to_string(),
        };
        replay_pipelined(
            &mut c,
            &owned(&[
                (hello, Shape::Hello(3)),
                ("CLIENT SETINFO lib-name Lettuce".into(), SETINFO_7_0),
                ("CLIENT SETINFO lib-ver 6.3.2.RELEASE".into(), SETINFO_7_0),
                ("SELECT 1".into(), Shape::Ok),
            ]),
        );
        replay(
            &mut c,
            &[("PING", Shape::Pong), ("CLIENT GETNAME", Shape::Bulk("lettuce")), ("COMMAND", Shape::NonEmptyArray)],
        );
        quit(c);
        // Lettuce with RESP2 forced: AUTH then commands.
        let mut c = RawConn::connect(srv.port());
        let mut steps = auth_line(pass);
        steps.extend([("CLIENT SETNAME lettuce2".to_string(), Shape::Ok), ("PING".to_string(), Shape::Pong)]);
        replay_pipelined(&mut c, &owned(&steps));
        quit(c);
    }
}

#[test]
fn jedis_handshake() {
    for (srv, pass) in servers() {
        let mut c = RawConn::connect(srv.port());
        let mut steps = auth_line(pass);
        steps.extend([
            ("CLIENT SETNAME jedis-app".to_string(), Shape::Ok),
            ("CLIENT SETINFO LIB-NAME jedis".to_string(), SETINFO_7_0),
            ("CLIENT SETINFO LIB-VER 5.1.0".to_string(), SETINFO_7_0),
            ("SELECT 3".to_string(), Shape::Ok),
            ("PING".to_string(), Shape::Pong),
            ("INFO server".to_string(), Shape::Info),
        ]);
        replay(&mut c, &owned(&steps));
        quit(c);
        // Jedis 5 with RESP3.
        let mut c = RawConn::connect(srv.port());
        let hello = match pass {
            Some(p) => format!("HELLO 3 AUTH default {p}"),
            None => "HELLO 3".to_string(),
        };
        replay(&mut c, &owned(&[(hello, Shape::Hello(3)), ("PING".into(), Shape::Pong), ("INFO".into(), Shape::Info)]));
        quit(c);
    }
}

#[test]
fn redis_py_handshake() {
    for (srv, pass) in servers() {
        // redis-py 5, RESP2: AUTH <password>, CLIENT SETINFO pipelined, SELECT.
        let mut c = RawConn::connect(srv.port());
        replay(&mut c, &owned(&auth_line(pass)));
        replay_pipelined(
            &mut c,
            &[("CLIENT SETINFO LIB-NAME redis-py", SETINFO_7_0), ("CLIENT SETINFO LIB-VER 5.0.1", SETINFO_7_0)],
        );
        replay(
            &mut c,
            &[
                ("SELECT 4", Shape::Ok),
                ("CLIENT SETNAME py", Shape::Ok),
                ("PING", Shape::Pong),
                ("CONFIG GET maxmemory", Shape::Pairs),
            ],
        );
        quit(c);
        // redis-py protocol=3: HELLO 3 AUTH <user> <pass>.
        let mut c = RawConn::connect(srv.port());
        let hello = match pass {
            Some(p) => format!("HELLO 3 AUTH default {p}"),
            None => "HELLO 3".to_string(),
        };
        replay(
            &mut c,
            &owned(&[
                (hello, Shape::Hello(3)),
                ("CONFIG GET notify-keyspace-events".into(), Shape::Pairs),
                ("INFO".into(), Shape::Info),
            ]),
        );
        quit(c);
    }
}

#[test]
fn ioredis_handshake() {
    for (srv, pass) in servers() {
        // ioredis: AUTH, SELECT, CLIENT SETNAME, then INFO as the ready check.
        let mut c = RawConn::connect(srv.port());
        let mut steps = auth_line(pass);
        steps.extend([
            ("SELECT 0".to_string(), Shape::Ok),
            ("CLIENT SETNAME ioredis".to_string(), Shape::Ok),
            ("CLIENT SETINFO LIB-NAME ioredis".to_string(), SETINFO_7_0),
            ("CLIENT SETINFO LIB-VER 5.4.1".to_string(), SETINFO_7_0),
            ("INFO".to_string(), Shape::Info),
        ]);
        replay_pipelined(&mut c, &owned(&steps));
        let Value::Bulk(Some(info)) = c.cmd(&["INFO"]) else { panic!("INFO") };
        assert!(String::from_utf8_lossy(&info).contains("loading:0"), "ioredis waits for loading:0");
        quit(c);
    }
}

#[test]
fn node_redis_handshake() {
    for (srv, pass) in servers() {
        // node-redis v4: CLIENT SETINFO first, then AUTH, SETNAME, SELECT.
        // Without a password the SETINFOs are answered (7.0.15: unknown
        // subcommand, which node-redis ignores); with one they come after AUTH.
        let mut c = RawConn::connect(srv.port());
        let mut steps = auth_line(pass);
        steps.extend([
            ("CLIENT SETINFO LIB-NAME node-redis".to_string(), SETINFO_7_0),
            ("CLIENT SETINFO LIB-VER 4.7.0".to_string(), SETINFO_7_0),
            ("CLIENT SETNAME node".to_string(), Shape::Ok),
            ("SELECT 5".to_string(), Shape::Ok),
        ]);
        replay_pipelined(&mut c, &owned(&steps));
        replay(&mut c, &[("PING", Shape::Pong), ("CLIENT ID", Shape::Int)]);
        quit(c);
    }
}

#[test]
fn redis_rs_handshake() {
    for (srv, pass) in servers() {
        let mut c = RawConn::connect(srv.port());
        let hello = match pass {
            Some(p) => format!("HELLO 3 AUTH default {p}"),
            None => "HELLO 3".to_string(),
        };
        replay(&mut c, &owned(&[(hello, Shape::Hello(3))]));
        replay_pipelined(
            &mut c,
            &[
                ("SELECT 6", Shape::Ok),
                ("CLIENT SETINFO LIB-NAME redis-rs", SETINFO_7_0),
                ("CLIENT SETINFO LIB-VER 0.32.0", SETINFO_7_0),
            ],
        );
        quit(c);
        // And the real crate, with a URL carrying the password and a db.
        let url = match pass {
            Some(p) => format!("redis://:{p}@127.0.0.1:{}/7", srv.port()),
            None => format!("redis://127.0.0.1:{}/7", srv.port()),
        };
        let mut con = redis::Client::open(url).expect("client").get_connection().expect("connect");
        let pong: String = redis::cmd("PING").query(&mut con).expect("ping");
        assert_eq!(pong, "PONG");
        let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut con).expect("client id");
        assert!(id > 0);
    }
}

#[test]
fn requirepass_rejects_until_authenticated() {
    let srv = Server::start_with(Config { requirepass: Some(PASS.into()), ..Default::default() }).expect("start");
    let mut c = RawConn::connect(srv.port());
    replay(
        &mut c,
        &[
            ("PING", Shape::Err("NOAUTH")),
            ("HELLO 3", Shape::Err("NOAUTH HELLO must be called")),
            ("HELLO 3 AUTH default wrong", Shape::Err("WRONGPASS")),
            ("AUTH wrong", Shape::Err("WRONGPASS")),
            ("SUBSCRIBE x", Shape::Err("NOAUTH")),
            ("MULTI", Shape::Err("NOAUTH")),
            ("AUTH default s3cret", Shape::Ok),
            ("PING", Shape::Pong),
        ],
    );
    quit(c);
}

/// The lock waiter pattern (Redisson, redis-py Lock with pub/sub helpers):
/// the waiter SUBSCRIBEs to the lock's channel, keeps the connection alive
/// with PINGs while subscribed, and is woken by the unlocker's PUBLISH.
#[test]
fn lock_waiter_is_woken_by_publish() {
    for (srv, pass) in servers() {
        for resp3 in [false, true] {
            let mut waiter = RawConn::connect(srv.port());
            let mut unlocker = RawConn::connect(srv.port());
            if let Some(p) = pass {
                waiter.cmd(&["AUTH", p]);
                unlocker.cmd(&["AUTH", p]);
            }
            let tag = if resp3 {
                waiter.cmd(&["HELLO", "3"]);
                b'>'
            } else {
                b'*'
            };
            let channel = "redisson_lock__channel:{x}";
            let confirm = waiter.cmd(&["SUBSCRIBE", channel]);
            assert_eq!(
                confirm,
                Value::Agg(
                    tag,
                    Some(vec![
                        Value::Bulk(Some(b"subscribe".to_vec())),
                        Value::Bulk(Some(channel.as_bytes().to_vec())),
                        Value::Int(1)
                    ])
                )
            );
            let ping = waiter.cmd(&["PING"]);
            if resp3 {
                assert_eq!(ping, Value::Simple(b"PONG".to_vec()));
            } else {
                assert_eq!(
                    ping,
                    Value::Agg(b'*', Some(vec![Value::Bulk(Some(b"pong".to_vec())), Value::Bulk(Some(Vec::new()))]))
                );
            }
            let pong = |payload: &[u8]| {
                if resp3 {
                    Value::Bulk(Some(payload.to_vec()))
                } else {
                    Value::Agg(
                        b'*',
                        Some(vec![Value::Bulk(Some(b"pong".to_vec())), Value::Bulk(Some(payload.to_vec()))]),
                    )
                }
            };
            let message = Value::Agg(
                tag,
                Some(vec![
                    Value::Bulk(Some(b"message".to_vec())),
                    Value::Bulk(Some(channel.as_bytes().to_vec())),
                    Value::Bulk(Some(b"0".to_vec())),
                ]),
            );
            let mut wakes = Vec::new();
            for round in 0..50 {
                // Keepalive PING answered while subscribed.
                assert_eq!(waiter.cmd(&["PING", "keepalive"]), pong(b"keepalive"), "round {round}");
                // The unlock: the waiter wakes on the message.
                let sent = Instant::now();
                unlocker.send(&[b"PUBLISH".to_vec(), channel.as_bytes().to_vec(), b"0".to_vec()]);
                assert_eq!(waiter.read(), Some(message.clone()), "round {round}");
                wakes.push(sent.elapsed());
                assert_eq!(unlocker.read(), Some(Value::Int(1)));
                // A message published before the waiter's PING (PUBLISH
                // answered) arrives before the PING's reply.
                assert_eq!(unlocker.cmd(&["PUBLISH", channel, "0"]), Value::Int(1));
                assert_eq!(waiter.cmd(&["PING", "after"]), message, "round {round}");
                assert_eq!(waiter.read(), Some(pong(b"after")), "round {round}");
            }
            wakes.sort();
            eprintln!(
                "waiter wake (PUBLISH sent -> message read), {} auth={}: median {:?}, p90 {:?}, max {:?}",
                if resp3 { "RESP3" } else { "RESP2" },
                pass.is_some(),
                wakes[wakes.len() / 2],
                wakes[wakes.len() * 9 / 10],
                wakes[wakes.len() - 1]
            );
            assert!(wakes[wakes.len() - 1] < Duration::from_secs(5));
            quit(waiter);
        }
    }
}
