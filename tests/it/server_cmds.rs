//! Server and connection commands, the in-process API and the command table.

use std::time::{Duration, Instant};

use super::common::{self, oracle::Oracle, resp::RawConn, resp::Value};

/// Every command rlockd registers has the arity, flags, key positions, ACL
/// categories, tips, key specs and documentation redis-server 7.0 reports.
#[test]
fn command_table_matches_redis_metadata() {
    let Some(oracle) = Oracle::start() else { return };
    let srv = common::server();
    let mut ours = RawConn::connect(srv.port());
    let mut theirs = RawConn::connect(oracle.port);
    let names = match ours.cmd(&["COMMAND", "LIST"]) {
        Value::Agg(_, Some(v)) => v,
        other => panic!("COMMAND LIST: {other:?}"),
    };
    assert!(names.len() > 50);
    let mut checked = 0;
    let mut diffs = Vec::new();
    for n in names {
        let Value::Bulk(Some(name)) = n else { panic!("name {n:?}") };
        let name = String::from_utf8(name).unwrap();
        let t = theirs.cmd(&["COMMAND", "INFO", &name]);
        let o = ours.cmd(&["COMMAND", "INFO", &name]);
        let (Value::Agg(_, Some(t)), Value::Agg(_, Some(o))) = (t, o) else { panic!("{name}") };
        // Nothing later than 7.0 is listed under the 7.0.15 profile (CLIENT
        // SETINFO, CLIENT NO-TOUCH and WAITAOF are 7.2's).
        assert_ne!(t[0], Value::Bulk(None), "{name} unknown to redis 7.0.15");
        let (Value::Agg(_, Some(t)), Value::Agg(_, Some(o))) = (&t[0], &o[0]) else { panic!("{name}") };
        // Everything: name, arity, flags, key positions, ACL categories,
        // tips and key specs. Subcommand lists are compared as sets (Redis
        // lists them in its dict order, which varies per process).
        if t[..9] != o[..9] {
            diffs.push(format!("{name}: redis {:?}\n   rlockd {:?}", &t[..9], &o[..9]));
        }
        // Subcommands are checked one by one (COMMAND LIST names them);
        // here only which exist.
        let sub_names = |v: &Value| -> Vec<String> {
            let Value::Agg(_, Some(subs)) = v else { return Vec::new() };
            subs.iter()
                .filter_map(|s| match s {
                    Value::Agg(_, Some(e)) => match &e[0] {
                        Value::Bulk(Some(n)) => Some(String::from_utf8_lossy(n).into_owned()),
                        _ => None,
                    },
                    _ => None,
                })
                .collect()
        };
        let ours_subs = sub_names(&o[9]);
        for missing in sub_names(&t[9]).into_iter().filter(|n| !ours_subs.contains(n)) {
            if !NOT_IMPLEMENTED.contains(&missing.as_str()) {
                diffs.push(format!("{name}: subcommand {missing} missing"));
            }
        }
        // COMMAND DOCS: summary, complexity, arguments, history… as Redis.
        let docs = |c: &mut RawConn| normalize_docs(c.cmd(&["COMMAND", "DOCS", &name]));
        if docs(&mut theirs) != docs(&mut ours) {
            diffs.push(format!("COMMAND DOCS {name} differs"));
        }
        checked += 1;
    }
    assert!(diffs.is_empty(), "{} commands differ:\n{}", diffs.len(), diffs.join("\n"));
    assert!(checked > 50);
}

/// Redis 7.0 subcommands rlockd does not implement (unknown-subcommand error).
const NOT_IMPLEMENTED: &[&str] = &[];

/// A RESP2 `COMMAND DOCS` reply without its `subcommands` listing (each
/// subcommand's docs are compared on their own).
fn normalize_docs(v: Value) -> Value {
    let Value::Agg(t, Some(mut top)) = v else { return v };
    if let Some(Value::Agg(dt, Some(doc))) = top.get(1) {
        let doc: Vec<Value> = doc
            .chunks(2)
            .filter(|p| p[0] != Value::Bulk(Some(b"subcommands".to_vec())))
            .flat_map(|p| p.iter().cloned())
            .collect();
        top[1] = Value::Agg(*dt, Some(doc));
    }
    Value::Agg(t, Some(top))
}

#[test]
fn many_servers_per_process_start_fast_and_stop_on_drop() {
    let t = Instant::now();
    let servers: Vec<_> = (0..20).map(|_| rlockd::Server::start().unwrap()).collect();
    let per = t.elapsed() / 20;
    eprintln!("server start: {per:?} per server");
    let ports: Vec<u16> = servers.iter().map(|s| s.port()).collect();
    for (i, s) in servers.iter().enumerate() {
        let mut c = common::conn(s);
        let _: () = redis::cmd("SET").arg("who").arg(i).query(&mut c).unwrap();
    }
    for (i, s) in servers.iter().enumerate() {
        let mut c = common::conn(s);
        let v: usize = redis::cmd("GET").arg("who").query(&mut c).unwrap();
        assert_eq!(v, i, "servers share no state");
    }
    drop(servers);
    for p in ports {
        assert!(std::net::TcpStream::connect(("127.0.0.1", p)).is_err(), "port {p} still open after drop");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn works_from_a_current_thread_tokio_test() {
    let srv = rlockd::Server::start().unwrap();
    let mut c = common::aconn(&srv).await;
    let _: () = redis::cmd("SET").arg("a").arg("1").query_async(&mut c).await.unwrap();
    let v: String = redis::cmd("GET").arg("a").query_async(&mut c).await.unwrap();
    assert_eq!(v, "1");
}

#[test]
fn shutdown_command_stops_the_server() {
    let srv = common::server();
    let port = srv.port();
    let mut c = RawConn::connect(port);
    c.send(&[b"SHUTDOWN".to_vec(), b"NOSAVE".to_vec()]);
    assert_eq!(c.read(), None, "SHUTDOWN closes the connection without a reply");
    srv.join();
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
}

#[test]
fn client_list_setname_kill() {
    let srv = common::server();
    let mut a = common::conn(&srv);
    let mut b = RawConn::connect(srv.port());
    assert_eq!(b.cmd(&["CLIENT", "SETNAME", "victim"]), Value::Simple(b"OK".to_vec()));
    let id = b.cmd(&["CLIENT", "ID"]).as_int().unwrap();
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut a).unwrap();
    assert!(list.lines().any(|l| l.contains("name=victim") && l.contains(&format!("id={id} "))), "{list}");
    assert_eq!(list.lines().count(), 2);
    let killed: i64 = redis::cmd("CLIENT").arg("KILL").arg("ID").arg(id).query(&mut a).unwrap();
    assert_eq!(killed, 1);
    assert_eq!(b.read(), None, "killed connection is closed");
    let info: String = redis::cmd("INFO").arg("clients").query(&mut a).unwrap();
    assert!(info.contains("connected_clients:1"), "{info}");
}

#[test]
fn info_sections_are_redis_shaped() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut c).unwrap();
    let _: () = redis::cmd("EXPIRE").arg("k").arg(100).query(&mut c).unwrap();
    let info: String = redis::cmd("INFO").query(&mut c).unwrap();
    for needle in [
        "# Server\r\n",
        "redis_version:7.",
        "redis_mode:standalone",
        "# Clients",
        "# Memory",
        "# Stats",
        "# Keyspace\r\n",
    ] {
        assert!(info.contains(needle), "missing {needle:?} in INFO");
    }
    assert!(info.contains("db0:keys=1,expires=1,avg_ttl="));
    assert!(!info.contains("# Commandstats"));
    let all: String = redis::cmd("INFO").arg("all").query(&mut c).unwrap();
    assert!(all.contains("cmdstat_set:calls=1,"), "{all}");
    assert!(all.contains("cmdstat_expire:calls=1,"));
    let ks: String = redis::cmd("INFO").arg("keyspace").query(&mut c).unwrap();
    assert!(ks.starts_with("# Keyspace\r\ndb0:keys=1"));
}

#[test]
fn config_set_changes_behaviour() {
    let srv = common::server();
    let mut c = common::conn(&srv);
    let _: () = redis::cmd("CONFIG").arg("SET").arg("requirepass").arg("pw").query(&mut c).unwrap();
    // This connection stays authenticated (as in Redis); a new one is not.
    let mut fresh = RawConn::connect(srv.port());
    assert_eq!(fresh.cmd(&["PING"]), Value::Error(b"NOAUTH Authentication required.".to_vec()));
    assert_eq!(fresh.cmd(&["AUTH", "pw"]), Value::Simple(b"OK".to_vec()));
    let got: Vec<String> = redis::cmd("CONFIG").arg("GET").arg("requirepass").query(&mut c).unwrap();
    assert_eq!(got, vec!["requirepass", "pw"]);
}

#[test]
fn client_pause_delays_writes_until_unpause() {
    let srv = common::server();
    let mut admin = RawConn::connect(srv.port());
    let mut w = RawConn::connect(srv.port());
    assert_eq!(admin.cmd(&["CLIENT", "PAUSE", "10000", "WRITE"]), Value::Simple(b"OK".to_vec()));
    // Reads go through while writes wait.
    assert_eq!(w.cmd(&["GET", "k"]), Value::Bulk(None));
    w.send(&[b"SET".to_vec(), b"k".to_vec(), b"v".to_vec()]);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(admin.cmd(&["GET", "k"]), Value::Bulk(None), "write is still paused");
    assert_eq!(admin.cmd(&["CLIENT", "UNPAUSE"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(w.read(), Some(Value::Simple(b"OK".to_vec())));
    assert_eq!(admin.cmd(&["GET", "k"]), Value::Bulk(Some(b"v".to_vec())));
}

#[test]
fn slowlog_records_slow_commands() {
    let srv = common::server();
    let mut c = RawConn::connect(srv.port());
    c.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    c.cmd(&["SET", "slow", "1"]);
    let log = c.cmd(&["SLOWLOG", "GET", "1"]);
    let Value::Agg(_, Some(entries)) = log else { panic!("{log:?}") };
    let Value::Agg(_, Some(e)) = &entries[0] else { panic!() };
    assert_eq!(e[3].bulks(), vec![b"SET".to_vec(), b"slow".to_vec(), b"1".to_vec()]);
    assert!(c.cmd(&["SLOWLOG", "LEN"]).as_int().unwrap() >= 1);
}

/// `INFO stats` hit/miss counters and `INFO errorstats` count what Redis
/// counts: read lookups only, and a script's error that repeats a
/// `redis.call` error once.
#[test]
fn keyspace_hits_misses_and_error_stats() {
    let srv = common::server();
    let mut c = RawConn::connect(srv.port());
    let field = |c: &mut RawConn, section: &str, name: &str| -> Option<String> {
        let Value::Bulk(Some(info)) = c.cmd(&["INFO", section]) else { panic!("INFO {section}") };
        let info = String::from_utf8(info).unwrap();
        info.lines().find_map(|l| l.strip_prefix(&format!("{name}:")).map(str::to_string))
    };
    c.cmd(&["SET", "s", "v"]);
    c.cmd(&["CONFIG", "RESETSTAT"]);
    c.cmd(&["GET", "s"]); // hit
    c.cmd(&["MGET", "s", "nope", "nope"]); // hit, miss, miss
    c.cmd(&["SET", "nope", "v"]); // a write: not counted
    c.cmd(&["DEL", "nope"]);
    c.cmd(&["EVAL", "return redis.call('exists', 's')", "0"]); // hit
    assert_eq!(field(&mut c, "stats", "keyspace_hits").as_deref(), Some("3"));
    assert_eq!(field(&mut c, "stats", "keyspace_misses").as_deref(), Some("2"));

    c.cmd(&["HGET", "s", "f"]); // WRONGTYPE
    c.cmd(&["NOSUCH"]); // ERR
    c.cmd(&["EVAL", "return redis.call('hget', 's', 'f')", "0"]); // WRONGTYPE once, not twice
    c.cmd(&["EVAL", "return {err='MINE oops'}", "0"]); // MINE
    assert_eq!(field(&mut c, "errorstats", "errorstat_WRONGTYPE").as_deref(), Some("count=2"));
    assert_eq!(field(&mut c, "errorstats", "errorstat_ERR").as_deref(), Some("count=1"));
    assert_eq!(field(&mut c, "errorstats", "errorstat_MINE").as_deref(), Some("count=1"));
    assert_eq!(field(&mut c, "stats", "total_error_replies").as_deref(), Some("4"));
    c.cmd(&["CONFIG", "RESETSTAT"]);
    assert_eq!(field(&mut c, "errorstats", "errorstat_WRONGTYPE"), None);
}

/// MONITOR streams every command that ran, in Redis's format: scripts'
/// commands as `[db lua]` after their EVAL, commands inside EXEC before the
/// EXEC, refused and admin commands not at all, AUTH redacted.
#[test]
fn monitor_streams_commands_like_redis() {
    let srv = common::server();
    let mut mon = RawConn::connect(srv.port());
    assert_eq!(mon.cmd(&["MONITOR"]), Value::Simple(b"OK".to_vec()));
    let mut c = RawConn::connect(srv.port());
    c.cmd(&["SET", "k", "a b\"c\n"]);
    c.cmd(&["EVAL", "return redis.call('get', KEYS[1])", "1", "k"]);
    c.cmd(&["MULTI"]);
    c.cmd(&["INCR", "n"]);
    c.cmd(&["EXEC"]);
    c.cmd(&["NOSUCH"]);
    c.cmd(&["CONFIG", "GET", "maxclients"]);
    c.cmd(&["AUTH", "secret"]);
    c.cmd(&["SELECT", "2"]);
    c.cmd(&["PING"]);
    let expected = [
        "[0 ADDR] \"SET\" \"k\" \"a b\\\"c\\n\"",
        "[0 ADDR] \"EVAL\" \"return redis.call('get', KEYS[1])\" \"1\" \"k\"",
        "[0 lua] \"get\" \"k\"",
        "[0 ADDR] \"MULTI\"",
        "[0 ADDR] \"INCR\" \"n\"",
        "[0 ADDR] \"EXEC\"",
        "[0 ADDR] \"AUTH\" \"(redacted)\"",
        "[2 ADDR] \"SELECT\" \"2\"",
        "[2 ADDR] \"PING\"",
    ];
    for want in expected {
        let Some(Value::Simple(line)) = mon.read() else { panic!("monitor line for {want}") };
        let line = String::from_utf8(line).unwrap();
        let (stamp, rest) = line.split_once(' ').expect("timestamp");
        assert!(stamp.contains('.') && stamp.parse::<f64>().is_ok(), "{line}");
        let addr = rest.split(['[', ']']).nth(1).and_then(|s| s.split_once(' ')).map(|(_, a)| a).unwrap_or("");
        let rest = if addr == "lua" { rest.to_string() } else { rest.replacen(addr, "ADDR", 1) };
        assert_eq!(rest, want);
    }
    let Value::Bulk(Some(list)) = c.cmd(&["CLIENT", "LIST"]) else { panic!("CLIENT LIST") };
    assert!(String::from_utf8_lossy(&list).contains("flags=O"), "the monitor shows flag O");
    // RESET leaves monitor mode.
    assert_eq!(mon.cmd(&["RESET"]), Value::Simple(b"RESET".to_vec()));
    c.cmd(&["PING"]);
    assert_eq!(mon.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
}

/// Every INFO section lists the fields redis-server 7.0 lists, in the same
/// order (monitoring tools and client libraries read them by name); rlockd
/// adds only its own `rlockd_*` fields (version, test control).
#[test]
fn info_fields_match_redis() {
    let Some(oracle) = Oracle::start() else {
        return;
    };
    let srv = common::server();
    let fields = |port: u16, section: &str| -> Vec<String> {
        let mut c = RawConn::connect(port);
        let Value::Bulk(Some(info)) = c.cmd(&["INFO", section]) else { panic!("INFO {section}") };
        String::from_utf8(info)
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once(':').map(|(k, _)| k.to_string()))
            .filter(|k| !k.starts_with("rlockd_"))
            .collect()
    };
    for section in ["server", "clients", "memory", "persistence", "stats", "replication", "cpu", "cluster"] {
        assert_eq!(fields(srv.port(), section), fields(oracle.port, section), "INFO {section}");
    }
}

/// Per-command latency histograms: `LATENCY HISTOGRAM` gives calls and a
/// cumulative distribution, `INFO latencystats` the configured percentiles,
/// and `latency-tracking no` stops recording.
#[test]
fn latency_histograms_and_percentiles() {
    let srv = common::server();
    let mut c = RawConn::connect(srv.port());
    for _ in 0..20 {
        c.cmd(&["SET", "k", "v"]);
    }
    let Value::Agg(_, Some(h)) = c.cmd(&["LATENCY", "HISTOGRAM", "set"]) else { panic!("histogram") };
    assert_eq!(h[0], Value::Bulk(Some(b"set".to_vec())));
    let Value::Agg(_, Some(body)) = &h[1] else { panic!("body") };
    assert_eq!(body[..2], [Value::Bulk(Some(b"calls".to_vec())), Value::Int(20)]);
    let Value::Agg(_, Some(cdf)) = &body[3] else { panic!("cdf") };
    let counts: Vec<i64> = cdf.iter().skip(1).step_by(2).filter_map(Value::as_int).collect();
    assert!(counts.windows(2).all(|w| w[0] < w[1]), "cumulative: {counts:?}");
    assert_eq!(counts.last(), Some(&20));
    let Value::Bulk(Some(info)) = c.cmd(&["INFO", "latencystats"]) else { panic!("INFO") };
    let info = String::from_utf8(info).unwrap();
    let line = info.lines().find(|l| l.starts_with("latency_percentiles_usec_set:")).expect("set line");
    assert!(line.contains(":p50=") && line.contains(",p99=") && line.contains(",p99.9="), "{line}");
    c.cmd(&["CONFIG", "SET", "latency-tracking", "no"]);
    c.cmd(&["CONFIG", "RESETSTAT"]);
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(c.cmd(&["LATENCY", "HISTOGRAM", "set"]), Value::Agg(b'*', Some(vec![])));
}

/// `CLIENT INFO` / `CLIENT LIST` report the connection's buffers as Redis
/// counts them where the figure is the protocol's, not the allocator's:
/// the query buffer holding the command in progress (`qbuf=26` for
/// `client info`), its arguments' bytes, and a transaction's queued
/// commands and their bytes while `EXEC` runs them (flag `x`).
#[test]
fn client_info_reports_query_and_transaction_buffers_as_redis() {
    let Some(oracle) = Oracle::start() else { return };
    let srv = common::server();
    let fields = |line: &[u8], names: &[&str]| -> Vec<String> {
        let line = String::from_utf8_lossy(line).into_owned();
        names
            .iter()
            .map(|n| {
                line.split(' ')
                    .find_map(|kv| kv.strip_prefix(&format!("{n}=")).map(str::to_string))
                    .unwrap_or_else(|| panic!("{n} in {line}"))
            })
            .collect()
    };
    let names = ["flags", "multi", "qbuf", "argv-mem", "multi-mem", "oll", "omem"];
    for port in [srv.port(), oracle.port] {
        let mut c = RawConn::connect(port);
        let Value::Bulk(Some(line)) = c.cmd(&["CLIENT", "INFO"]) else { panic!("CLIENT INFO") };
        assert_eq!(fields(&line, &names), ["N", "-1", "26", "10", "0", "0", "0"], "port {port}");
        // 7.0 ends the line at resp= (lib-name / lib-ver are 7.2's).
        assert!(String::from_utf8_lossy(&line).trim_end().ends_with(" resp=2"), "port {port}");
        c.cmd(&["MULTI"]);
        c.cmd(&["SET", "key", "value"]);
        c.cmd(&["CLIENT", "INFO"]);
        let Value::Agg(_, Some(replies)) = c.cmd(&["EXEC"]) else { panic!("EXEC") };
        let Value::Bulk(Some(line)) = &replies[1] else { panic!("CLIENT INFO in EXEC") };
        // Two queued commands of 3+3+5 and 6+4 argument bytes, and a
        // pointer (8 bytes) per argument.
        assert_eq!(fields(line, &names), ["x", "2", "14", "4", "61", "0", "0"], "port {port}");
    }
    // Reporting 7.2 brings 7.2's fields.
    let mut c = RawConn::connect(srv.port());
    c.cmd(&["CONFIG", "SET", "redis-version", "7.2.4"]);
    c.cmd(&["CLIENT", "SETINFO", "lib-name", "redis-py"]);
    let Value::Bulk(Some(line)) = c.cmd(&["CLIENT", "INFO"]) else { panic!("CLIENT INFO") };
    assert!(String::from_utf8_lossy(&line).trim_end().ends_with(" resp=2 lib-name=redis-py lib-ver="));
}

/// LOLWUT's art versions (5 and 6, random drawings on Redis) get a clear
/// error; every other version answers Redis's version line (diff suite).
#[test]
fn lolwut_art_versions_are_refused_clearly() {
    let srv = common::server();
    let mut c = RawConn::connect(srv.port());
    for v in ["5", "6"] {
        let Value::Error(e) = c.cmd(&["LOLWUT", "VERSION", v]) else { panic!("LOLWUT VERSION {v}") };
        assert!(e.starts_with(b"ERR LOLWUT VERSION 5 and 6"), "{}", String::from_utf8_lossy(&e));
    }
    assert_eq!(c.cmd(&["LOLWUT"]), Value::Bulk(Some(b"Redis ver. 7.0.15\n".to_vec())));
}

/// Redis's answer to DEBUG under its default `enable-debug-command no`.
const DEBUG_REFUSED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";

#[test]
fn debug_is_refused_as_redis_refuses_it_until_enabled() {
    // Default: refused, even before AUTH (Redis checks it first), and
    // counted as a rejected call.
    let params = vec![("requirepass".to_string(), "pw".to_string())];
    let srv = rlockd::Server::start_with(rlockd::Config { params, ..Default::default() }).unwrap();
    let mut c = RawConn::connect(srv.port());
    assert_eq!(c.cmd(&["DEBUG", "SLEEP", "0"]), Value::Error(DEBUG_REFUSED.into()));
    assert!(matches!(c.cmd(&["GET", "k"]), Value::Error(e) if e.starts_with(b"NOAUTH")));
    assert_eq!(c.cmd(&["AUTH", "pw"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(c.cmd(&["MULTI"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(c.cmd(&["DEBUG", "SLEEP", "0"]), Value::Error(DEBUG_REFUSED.into()));
    assert!(matches!(c.cmd(&["EXEC"]), Value::Error(e) if e.starts_with(b"EXECABORT")));
    let Value::Bulk(Some(stats)) = c.cmd(&["INFO", "commandstats"]) else { panic!("INFO") };
    let stats = String::from_utf8_lossy(&stats).into_owned();
    assert!(
        stats.contains("cmdstat_debug:calls=0,usec=0,usec_per_call=0.00,rejected_calls=2,failed_calls=0"),
        "{stats}"
    );
    // Immutable, as in Redis.
    let Value::Error(e) = c.cmd(&["CONFIG", "SET", "enable-debug-command", "yes"]) else { panic!("CONFIG SET") };
    assert!(String::from_utf8_lossy(&e).contains("can't set immutable config"), "{e:?}");
    // `local` allows loopback clients; `yes` everyone.
    for allowed in ["local", "yes"] {
        let params = vec![("enable-debug-command".to_string(), allowed.to_string())];
        let srv = rlockd::Server::start_with(rlockd::Config { params, ..Default::default() }).unwrap();
        let mut c = RawConn::connect(srv.port());
        assert_eq!(c.cmd(&["DEBUG", "SLEEP", "0"]), Value::Simple(b"OK".to_vec()), "{allowed}");
    }
    // The oracle's own answer, when redis-server is there to ask.
    if let Some(path) = common::oracle::redis_server_or_skip() {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = std::process::Command::new(path)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        let answer = RawConn::connect(port).cmd(&["DEBUG", "SLEEP", "0"]);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(answer, Value::Error(DEBUG_REFUSED.into()));
    }
}
