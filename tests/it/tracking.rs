//! Client-side caching (`CLIENT TRACKING`): each scenario runs the same
//! commands, over several connections, against rlockd and a real
//! redis-server, and the two transcripts of raw bytes (replies and pushes)
//! must be equal. Client ids differ between the servers, so a scenario
//! names them (`<id:N>` in the transcript). Every scenario also checks its
//! own transcript for the bytes Redis 7.0 sends, so it fails without
//! redis-server too.
//!
//! "Nothing was sent" is checked with a `PING` on the connection: a message
//! queued before it would arrive before its `PONG`.

use std::time::Duration;

use super::common::oracle::Oracle;
use super::common::resp::RawConn;
use super::common::{self};

/// One scenario's connections and transcript.
struct Session {
    port: u16,
    conns: Vec<RawConn>,
    /// Client ids learnt with [`Session::id`], and their names.
    ids: Vec<(i64, String)>,
    log: String,
}

fn show(raw: &[u8]) -> String {
    String::from_utf8_lossy(raw).replace('\r', "\\r").replace('\n', "\\n")
}

impl Session {
    fn new(port: u16) -> Session {
        Session { port, conns: Vec::new(), ids: Vec::new(), log: String::new() }
    }

    /// Opens connection number `conns.len()` (RESP2).
    fn open(&mut self) -> usize {
        self.conns.push(RawConn::connect(self.port));
        self.conns.len() - 1
    }

    /// A connection switched to RESP3 (HELLO's reply is not compared).
    fn open3(&mut self) -> usize {
        let c = self.open();
        self.conns[c].cmd(&["HELLO", "3"]);
        c
    }

    /// Args with `<id:N>` replaced by the id of connection N.
    fn resolve(&self, args: &[&str]) -> Vec<String> {
        args.iter()
            .map(|a| {
                let mut s = a.to_string();
                for (id, name) in &self.ids {
                    s = s.replace(name, &id.to_string());
                }
                s
            })
            .collect()
    }

    /// Sends a command on `c`, reads one reply or push, logs both. Ids in
    /// replies are logged as their names when `norm`.
    fn exchange(&mut self, c: usize, args: &[&str], norm: bool) -> String {
        let resolved = self.resolve(args);
        let refs: Vec<&str> = resolved.iter().map(String::as_str).collect();
        self.conns[c].cmd(&refs);
        let mut raw = show(&self.conns[c].last_raw);
        if norm {
            for (id, name) in &self.ids {
                raw = raw.replace(&format!(":{id}\\r\\n"), &format!(":{name}\\r\\n"));
            }
        }
        self.log.push_str(&format!("{c}> {}\n{c}< {raw}\n", args.join(" ")));
        raw
    }

    fn cmd(&mut self, c: usize, args: &[&str]) -> String {
        self.exchange(c, args, false)
    }

    /// A command whose reply holds client ids (TRACKINGINFO, GETREDIR).
    fn cmd_ids(&mut self, c: usize, args: &[&str]) -> String {
        self.exchange(c, args, true)
    }

    /// Learns connection `c`'s id (its name is `<id:c>`).
    fn id(&mut self, c: usize) {
        let v = self.conns[c].cmd(&["CLIENT", "ID"]);
        let id = v.as_int().expect("CLIENT ID");
        self.ids.push((id, format!("<id:{c}>")));
    }

    /// Reads the next push (or reply) on `c`.
    fn read(&mut self, c: usize) -> String {
        let got = self.conns[c].read();
        let mut raw = got.map_or("<nothing>".to_string(), |_| show(&self.conns[c].last_raw));
        for (id, name) in &self.ids {
            raw = raw.replace(&format!(":{id}\\r\\n"), &format!(":{name}\\r\\n"));
        }
        self.log.push_str(&format!("{c}~ {raw}\n"));
        raw
    }

    /// Runs `INFO section` (or `CLIENT INFO`) on `c` and logs only the
    /// fields named (the rest differs between servers by nature).
    fn fields(&mut self, c: usize, args: &[&str], names: &[&str]) -> String {
        self.conns[c].cmd(args);
        let text = String::from_utf8_lossy(&self.conns[c].last_raw).into_owned();
        let picked: Vec<&str> = text
            .split(['\r', '\n', ' '])
            .filter(|f| names.iter().any(|n| f.starts_with(&format!("{n}:")) || f.starts_with(&format!("{n}="))))
            .collect();
        let line = picked.join(" ");
        self.log.push_str(&format!("{c}> {}\n{c}< {line}\n", args.join(" ")));
        line
    }

    /// `PING` on `c`: what arrives first tells whether anything was queued.
    fn quiet(&mut self, c: usize) -> String {
        self.cmd(c, &["PING"])
    }
}

/// Runs `scenario` against rlockd and, where installed, redis-server; the
/// transcripts must be equal. Returns rlockd's.
fn both(scenario: fn(&mut Session)) -> String {
    let srv = common::debug_server();
    let mut ours = Session::new(srv.port());
    scenario(&mut ours);
    if let Some(oracle) = Oracle::start() {
        let mut theirs = Session::new(oracle.port);
        scenario(&mut theirs);
        if ours.log != theirs.log {
            let diff: Vec<String> = ours
                .log
                .lines()
                .zip(theirs.log.lines())
                .filter(|(a, b)| a != b)
                .map(|(a, b)| format!("rlockd:       {a}\nredis-server: {b}"))
                .collect();
            panic!("rlockd and redis-server differ:\n{}\n\nrlockd's transcript:\n{}", diff.join("\n"), ours.log);
        }
    }
    ours.log
}

/// `>2 invalidate [keys]` as RESP3 sends it (escaped as in transcripts).
fn push(keys: &[&str]) -> String {
    let mut s = format!(">2\\r\\n$10\\r\\ninvalidate\\r\\n*{}\\r\\n", keys.len());
    for k in keys {
        s.push_str(&format!("${}\\r\\n{k}\\r\\n", k.len()));
    }
    s
}

const PONG: &str = "+PONG\\r\\n";

#[test]
fn default_mode_resp3_invalidates_readers_once() {
    let log = both(|s| {
        let (a, b) = (s.open3(), s.open());
        s.cmd(a, &["CLIENT", "TRACKING", "on"]);
        s.cmd(a, &["GET", "k"]);
        s.cmd(a, &["MGET", "x", "y"]);
        s.cmd(b, &["SET", "k", "1"]);
        s.read(a);
        // Forgotten after one invalidation.
        s.cmd(b, &["SET", "k", "2"]);
        s.quiet(a);
        s.cmd(b, &["MSET", "x", "1", "y", "2", "z", "3"]);
        s.read(a);
        s.read(a);
        s.quiet(a);
        // Its own write: the push follows the reply.
        s.cmd(a, &["GET", "k"]);
        s.cmd(a, &["SET", "k", "3"]);
        s.read(a);
        s.fields(
            a,
            &["INFO", "clients"],
            &["tracking_clients", "tracking_total_keys", "tracking_total_items", "tracking_total_prefixes"],
        );
    });
    assert!(log.contains(&format!("1> SET k 1\n1< +OK\\r\\n\n0~ {}\n", push(&["k"]))), "{log}");
    assert!(log.contains(&format!("1> SET k 2\n1< +OK\\r\\n\n0> PING\n0< {PONG}\n")), "{log}");
    assert!(log.contains(&format!("0~ {}\n0~ {}\n0> PING\n0< {PONG}", push(&["x"]), push(&["y"]))), "{log}");
    assert!(log.contains(&format!("0> SET k 3\n0< +OK\\r\\n\n0~ {}\n", push(&["k"]))), "{log}");
    assert!(log.contains("tracking_clients:1"), "{log}");
}

#[test]
fn redirect_to_a_resp2_subscriber_and_broken_redirect() {
    let log = both(|s| {
        let (a, r, b) = (s.open3(), s.open(), s.open());
        s.id(r);
        s.cmd(r, &["SUBSCRIBE", "__redis__:invalidate"]);
        s.cmd(a, &["CLIENT", "TRACKING", "on", "REDIRECT", "<id:1>"]);
        s.cmd_ids(a, &["CLIENT", "TRACKINGINFO"]);
        s.cmd_ids(a, &["CLIENT", "GETREDIR"]);
        s.cmd(a, &["GET", "k"]);
        s.cmd(b, &["SET", "k", "1"]);
        s.read(r);
        s.quiet(a);
        s.cmd(a, &["GET", "k"]);
        s.cmd(b, &["FLUSHALL"]);
        s.read(r);
        // The redirect client leaves: the next invalidation says so.
        s.cmd(a, &["GET", "k"]);
        s.cmd(a, &["GET", "j"]);
        s.conns[r].cmd(&["QUIT"]);
        std::thread::sleep(Duration::from_millis(100));
        s.quiet(a);
        s.cmd(b, &["SET", "k", "1"]);
        s.read(a);
        s.cmd(b, &["SET", "j", "1"]);
        s.read(a);
        s.cmd_ids(a, &["CLIENT", "TRACKINGINFO"]);
    });
    let msg = "*3\\r\\n$7\\r\\nmessage\\r\\n$20\\r\\n__redis__:invalidate\\r\\n";
    assert!(log.contains(&format!("1~ {msg}*1\\r\\n$1\\r\\nk\\r\\n\n0> PING\n0< {PONG}")), "{log}");
    // The null is the tracking client's (RESP3), as Redis sends it.
    assert!(log.contains(&format!("1~ {msg}_\\r\\n\n")), "{log}");
    assert!(log.contains("0~ >2\\r\\n$21\\r\\ntracking-redir-broken\\r\\n:<id:1>\\r\\n\n2> SET j 1"), "{log}");
    assert!(log.contains("$15\\r\\nbroken_redirect\\r\\n$8\\r\\nredirect\\r\\n:<id:1>\\r\\n"), "{log}");
    assert!(log.contains("0> CLIENT GETREDIR\n0< :<id:1>\\r\\n"), "{log}");
}

#[test]
fn redirect_to_resp3_and_unsubscribed_resp2_clients() {
    let log = both(|s| {
        let (r3, r2, t, b) = (s.open3(), s.open(), s.open(), s.open());
        s.id(r3);
        s.id(r2);
        s.cmd(t, &["CLIENT", "TRACKING", "on", "REDIRECT", "<id:0>"]);
        s.cmd(t, &["GET", "k"]);
        s.cmd(b, &["SET", "k", "1"]);
        s.read(r3);
        // FLUSHALL's null is the RESP2 tracking client's.
        s.cmd(b, &["FLUSHALL"]);
        s.read(r3);
        // A RESP2 redirect client not in subscribed mode gets nothing.
        s.cmd(t, &["CLIENT", "TRACKING", "on", "REDIRECT", "<id:1>"]);
        s.cmd(t, &["GET", "k"]);
        s.cmd(b, &["SET", "k", "2"]);
        s.quiet(r2);
        // Any subscription will do.
        s.cmd(r2, &["SUBSCRIBE", "other"]);
        s.cmd(t, &["GET", "k"]);
        s.cmd(b, &["SET", "k", "3"]);
        s.read(r2);
        // A RESP2 client without redirect tracks, silently.
        s.cmd(t, &["CLIENT", "TRACKING", "on"]);
        s.cmd(t, &["GET", "k"]);
        s.fields(
            b,
            &["INFO", "stats"],
            &["tracking_clients", "tracking_total_keys", "tracking_total_items", "tracking_total_prefixes"],
        );
        s.cmd(b, &["SET", "k", "4"]);
        s.quiet(t);
    });
    assert!(log.contains(&format!("0~ {}\n", push(&["k"]))), "{log}");
    assert!(log.contains("0~ >2\\r\\n$10\\r\\ninvalidate\\r\\n$-1\\r\\n\n"), "{log}");
    assert!(log.contains(&format!("3> SET k 2\n3< +OK\\r\\n\n1> PING\n1< {PONG}")), "{log}");
    assert!(
        log.contains("1~ *3\\r\\n$7\\r\\nmessage\\r\\n$20\\r\\n__redis__:invalidate\\r\\n*1\\r\\n$1\\r\\nk\\r\\n"),
        "{log}"
    );
    assert!(log.contains("tracking_total_keys:1 tracking_total_items:1 "), "{log}");
    assert!(log.contains(&format!("2> PING\n2< {PONG}")), "{log}");
}

#[test]
fn bcast_prefixes_batch_keys_per_prefix() {
    let log = both(|s| {
        let (a, b) = (s.open3(), s.open());
        s.cmd(a, &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "b", "PREFIX", "a", "NOLOOP"]);
        s.cmd(a, &["CLIENT", "TRACKINGINFO"]);
        s.fields(a, &["CLIENT", "INFO"], &["flags", "redir"]);
        s.cmd(b, &["MSET", "a2", "1", "b1", "2", "a1", "3", "zz", "4"]);
        s.read(a);
        s.read(a);
        s.quiet(a);
        // NOLOOP: its own changes are left out.
        s.cmd(a, &["SET", "a9", "1"]);
        s.quiet(a);
        // A script's writes are not its own for BCAST (Redis compares the
        // script's pseudo-client).
        s.cmd(a, &["EVAL", "redis.call('set', 'a8', '1') return 1", "0"]);
        s.read(a);
        // ON again replaces the options (NOLOOP goes) and adds prefixes.
        s.cmd(a, &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "c"]);
        s.cmd(a, &["CLIENT", "TRACKING", "on", "BCAST", "PREFIX", "cc"]);
        s.cmd(a, &["CLIENT", "TRACKINGINFO"]);
        s.cmd(a, &["SET", "c1", "1"]);
        s.read(a);
        s.cmd(b, &["MULTI"]);
        s.cmd(b, &["SET", "c2", "1"]);
        s.cmd(b, &["SET", "c1", "1"]);
        s.cmd(b, &["SET", "c2", "2"]);
        s.cmd(b, &["EXEC"]);
        s.read(a);
        s.fields(
            b,
            &["INFO", "stats"],
            &["tracking_clients", "tracking_total_keys", "tracking_total_items", "tracking_total_prefixes"],
        );
        s.cmd(b, &["FLUSHALL"]);
        s.read(a);
        s.cmd(a, &["CLIENT", "TRACKING", "off"]);
        s.fields(
            b,
            &["INFO", "stats"],
            &["tracking_clients", "tracking_total_keys", "tracking_total_items", "tracking_total_prefixes"],
        );
        s.cmd(a, &["CLIENT", "TRACKING", "on", "BCAST"]);
        s.cmd(a, &["CLIENT", "TRACKINGINFO"]);
    });
    assert!(log.contains(&format!("0~ {}\n0~ {}\n", push(&["a1", "a2"]), push(&["b1"]))), "{log}");
    assert!(log.contains(&format!("0> SET a9 1\n0< +OK\\r\\n\n0> PING\n0< {PONG}")), "{log}");
    assert!(log.contains(&format!("0< :1\\r\\n\n0~ {}\n", push(&["a8"]))), "{log}");
    assert!(log.contains("overlaps with an existing prefix 'c'"), "{log}");
    assert!(log.contains(&format!("0~ {}\n", push(&["c1", "c2"]))), "{log}");
    assert!(log.contains("0~ >2\\r\\n$10\\r\\ninvalidate\\r\\n_\\r\\n"), "{log}");
    assert!(log.contains("tracking_total_prefixes:3"), "{log}");
    assert!(log.contains("tracking_total_prefixes:0"), "{log}");
    assert!(log.contains("flags=tB redir=0\n"), "{log}");
    assert!(log.contains("$5\\r\\nbcast\\r\\n$6\\r\\nnoloop\\r\\n"), "{log}");
}

#[test]
fn optin_optout_and_caching() {
    let log = both(|s| {
        let (a, b) = (s.open3(), s.open());
        s.cmd(a, &["CLIENT", "CACHING", "yes"]);
        s.cmd(a, &["CLIENT", "TRACKING", "on", "OPTIN"]);
        s.cmd(a, &["CLIENT", "CACHING", "no"]);
        s.cmd(a, &["CLIENT", "CACHING", "maybe"]);
        s.cmd(a, &["GET", "x"]);
        s.cmd(a, &["CLIENT", "CACHING", "yes"]);
        s.cmd(a, &["CLIENT", "TRACKINGINFO"]);
        s.cmd(a, &["CLIENT", "GETNAME"]);
        s.cmd(a, &["GET", "y"]);
        s.cmd(a, &["GET", "z"]);
        s.cmd(b, &["MSET", "x", "1", "y", "1", "z", "1"]);
        s.read(a);
        s.quiet(a);
        // CACHING before MULTI covers the whole transaction.
        s.cmd(a, &["CLIENT", "CACHING", "yes"]);
        s.cmd(a, &["MULTI"]);
        s.cmd(a, &["GET", "x"]);
        s.cmd(a, &["GET", "z"]);
        s.cmd(a, &["EXEC"]);
        s.cmd(a, &["GET", "y"]);
        s.cmd(b, &["MSET", "x", "2", "y", "2", "z", "2"]);
        s.read(a);
        s.read(a);
        s.quiet(a);
        s.cmd(a, &["CLIENT", "TRACKING", "on", "OPTOUT"]);
        s.cmd(a, &["CLIENT", "TRACKING", "off"]);
        s.cmd(a, &["CLIENT", "TRACKING", "on", "OPTOUT"]);
        s.cmd(a, &["CLIENT", "CACHING", "yes"]);
        s.cmd(a, &["CLIENT", "CACHING", "no"]);
        s.cmd(a, &["CLIENT", "TRACKINGINFO"]);
        s.cmd(a, &["GET", "x"]);
        s.cmd(a, &["GET", "y"]);
        s.cmd(b, &["MSET", "x", "3", "y", "3"]);
        s.read(a);
        s.quiet(a);
    });
    assert!(log.contains("0> CLIENT CACHING yes\n0< -ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"), "{log}");
    assert!(log.contains("-ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode."), "{log}");
    assert!(log.contains("$5\\r\\noptin\\r\\n$11\\r\\ncaching-yes\\r\\n"), "{log}");
    assert!(log.contains(&format!("0~ {}\n0> PING\n0< {PONG}", push(&["y"]))), "{log}");
    assert!(log.contains(&format!("0~ {}\n0~ {}\n0> PING\n0< {PONG}", push(&["x"]), push(&["z"]))), "{log}");
    assert!(log.contains("You can't switch OPTIN/OPTOUT mode"), "{log}");
    assert!(log.contains("$6\\r\\noptout\\r\\n$10\\r\\ncaching-no\\r\\n"), "{log}");
}

#[test]
fn noloop_skips_own_writes_even_from_scripts() {
    let log = both(|s| {
        let (a, b) = (s.open3(), s.open());
        s.cmd(a, &["CLIENT", "TRACKING", "on", "NOLOOP"]);
        s.cmd(a, &["MGET", "x", "y"]);
        s.cmd(a, &["SET", "x", "1"]);
        s.cmd(a, &["EVAL", "redis.call('set', 'y', '1') return 1", "0"]);
        s.quiet(a);
        // Both were forgotten by the own writes.
        s.cmd(b, &["MSET", "x", "2", "y", "2"]);
        s.quiet(a);
    });
    assert!(
        log.contains(&format!("0> EVAL redis.call('set', 'y', '1') return 1 0\n0< :1\\r\\n\n0> PING\n0< {PONG}")),
        "{log}"
    );
    assert!(log.contains(&format!("1> MSET x 2 y 2\n1< +OK\\r\\n\n0> PING\n0< {PONG}")), "{log}");
}

#[test]
fn invalidations_from_eval_and_exec() {
    let log = both(|s| {
        let (a, b) = (s.open3(), s.open());
        s.cmd(a, &["CLIENT", "TRACKING", "on"]);
        s.cmd(a, &["MGET", "x", "y"]);
        s.cmd(b, &["EVAL", "redis.call('set', 'x', '1') redis.call('set', 'y', '1')", "0"]);
        s.read(a);
        s.read(a);
        s.cmd(a, &["MGET", "x", "y"]);
        s.cmd(b, &["MULTI"]);
        s.cmd(b, &["DEL", "x"]);
        s.cmd(b, &["SET", "y", "2"]);
        s.cmd(b, &["EXEC"]);
        s.read(a);
        s.read(a);
        // Its own EXEC and script: the pushes follow the reply.
        s.cmd(a, &["MGET", "x", "y"]);
        s.cmd(a, &["MULTI"]);
        s.cmd(a, &["SET", "x", "1"]);
        s.cmd(a, &["SET", "y", "1"]);
        s.cmd(a, &["EXEC"]);
        s.read(a);
        s.read(a);
        // A script's own reads are not tracked, EVAL_RO's keys are.
        s.cmd(a, &["EVAL", "return redis.call('get', 's1')", "0"]);
        s.cmd(a, &["EVAL_RO", "return redis.call('get', KEYS[1])", "1", "s2"]);
        s.cmd(b, &["MSET", "s1", "1", "s2", "1"]);
        s.read(a);
        s.quiet(a);
        s.cmd(a, &["GET", "x"]);
        s.cmd(a, &["EVAL", "redis.call('incr', 'x') return 7", "0"]);
        s.read(a);
    });
    assert!(log.contains(&format!("0~ {}\n0~ {}\n", push(&["x"]), push(&["y"]))), "{log}");
    assert!(
        log.contains(&format!("0> EXEC\n0< *2\\r\\n+OK\\r\\n+OK\\r\\n\n0~ {}\n0~ {}\n", push(&["x"]), push(&["y"]))),
        "{log}"
    );
    assert!(log.contains(&format!("0~ {}\n0> PING\n0< {PONG}", push(&["s2"]))), "{log}");
    assert!(log.contains(&format!("0< :7\\r\\n\n0~ {}\n", push(&["x"]))), "{log}");
}

#[test]
fn invalidations_from_active_and_lazy_expiry() {
    let log = both(|s| {
        let (a, b) = (s.open3(), s.open());
        s.cmd(a, &["CLIENT", "TRACKING", "on"]);
        s.cmd(b, &["SET", "e", "1", "PX", "150"]);
        s.cmd(a, &["GET", "e"]);
        std::thread::sleep(Duration::from_millis(600));
        s.read(a);
        s.cmd(b, &["DEBUG", "SET-ACTIVE-EXPIRE", "0"]);
        s.cmd(b, &["SET", "f", "1", "PX", "100"]);
        s.cmd(a, &["GET", "f"]);
        std::thread::sleep(Duration::from_millis(300));
        s.quiet(a);
        s.cmd(b, &["GET", "f"]);
        s.read(a);
        // Its own read expiring the key: reply, then push.
        s.cmd(b, &["SET", "g", "1", "PX", "100"]);
        s.cmd(a, &["GET", "g"]);
        std::thread::sleep(Duration::from_millis(300));
        s.cmd(a, &["GET", "g"]);
        s.read(a);
        // An expiry is nobody's write: BCAST's NOLOOP does not hold it back.
        let c = s.open3();
        s.cmd(c, &["CLIENT", "TRACKING", "on", "BCAST", "NOLOOP", "PREFIX", "h"]);
        s.cmd(c, &["SET", "h1", "1", "PX", "100"]);
        s.quiet(c);
        std::thread::sleep(Duration::from_millis(300));
        s.cmd(c, &["GET", "h1"]);
        s.read(c);
        s.cmd(b, &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]);
    });
    assert!(log.contains(&format!("0~ {}\n", push(&["e"]))), "{log}");
    assert!(log.contains(&format!("1> GET f\n1< $-1\\r\\n\n0~ {}\n", push(&["f"]))), "{log}");
    assert!(log.contains(&format!("0> GET g\n0< _\\r\\n\n0~ {}\n", push(&["g"]))), "{log}");
    assert!(log.contains(&format!("2> SET h1 1 PX 100\n2< +OK\\r\\n\n2> PING\n2< {PONG}")), "{log}");
    assert!(log.contains(&format!("2> GET h1\n2< _\\r\\n\n2~ {}\n", push(&["h1"]))), "{log}");
}

#[test]
fn flushall_and_flushdb_send_the_null_invalidation() {
    let log = both(|s| {
        let (a, b) = (s.open3(), s.open());
        s.cmd(a, &["CLIENT", "TRACKING", "on"]);
        s.cmd(a, &["GET", "k"]);
        s.cmd(b, &["SET", "k", "1"]);
        s.read(a);
        s.cmd(a, &["GET", "k"]);
        s.fields(
            b,
            &["INFO", "stats"],
            &["tracking_clients", "tracking_total_keys", "tracking_total_items", "tracking_total_prefixes"],
        );
        s.cmd(b, &["SELECT", "1"]);
        s.cmd(b, &["FLUSHDB"]);
        s.read(a);
        s.fields(
            b,
            &["INFO", "stats"],
            &["tracking_clients", "tracking_total_keys", "tracking_total_items", "tracking_total_prefixes"],
        );
        s.cmd(b, &["SET", "k", "2"]);
        s.quiet(a);
        s.cmd(a, &["FLUSHALL"]);
        s.read(a);
        s.cmd(b, &["FLUSHALL", "ASYNC"]);
        s.read(a);
    });
    let null = ">2\\r\\n$10\\r\\ninvalidate\\r\\n_\\r\\n";
    assert!(log.contains(&format!("1> FLUSHDB\n1< +OK\\r\\n\n0~ {null}\n")), "{log}");
    assert!(log.contains(&format!("0> FLUSHALL\n0< +OK\\r\\n\n0~ {null}\n")), "{log}");
    assert!(log.contains("tracking_total_keys:1 tracking_total_items:1 "), "{log}");
    assert!(log.contains("tracking_total_keys:0 tracking_total_items:0 "), "{log}");
}

#[test]
fn tracking_option_errors_and_info() {
    let log = both(|s| {
        let a = s.open3();
        for args in [
            &["on", "PREFIX", "a"][..],
            &["on", "OPTIN", "OPTOUT"],
            &["on", "BCAST", "PREFIX", "a", "PREFIX", "ab"],
            &["on", "BCAST", "PREFIX", "ab", "PREFIX", "a"],
            &["on", "BCAST", "PREFIX", "a", "PREFIX", "a"],
            &["on", "REDIRECT", "999999"],
            &["on", "REDIRECT", "x"],
            &["on", "REDIRECT", "-1"],
            &["on", "REDIRECT", "0"],
            &["on", "BCAST", "OPTIN"],
            &["on", "NOLOOP", "OPTOUT", "BCAST"],
            &["on", "foo"],
            &["maybe"],
            &["on", "PREFIX"],
            &["on", "REDIRECT"],
            &["off", "BCAST"],
            &["off", "PREFIX", "x"],
        ] {
            let mut argv = vec!["CLIENT", "TRACKING"];
            argv.extend_from_slice(args);
            s.cmd(a, &argv);
            s.cmd(a, &["CLIENT", "TRACKING", "off"]);
        }
        s.cmd(a, &["CLIENT", "TRACKINGINFO"]);
        s.cmd(a, &["CLIENT", "GETREDIR"]);
        s.cmd(a, &["CLIENT", "TRACKING", "on"]);
        s.cmd(a, &["CLIENT", "TRACKING", "on", "BCAST"]);
        s.cmd(a, &["CLIENT", "CACHING", "yes"]);
        s.cmd(a, &["CLIENT", "TRACKINGINFO"]);
        s.cmd(a, &["CLIENT", "GETREDIR"]);
        s.cmd(a, &["RESET"]);
        s.cmd(a, &["CLIENT", "TRACKINGINFO"]);
        s.cmd(a, &["CLIENT", "TRACKING", "on", "OPTIN", "NOLOOP"]);
        s.cmd(a, &["CLIENT", "TRACKINGINFO"]);
        s.fields(
            a,
            &["INFO", "clients"],
            &["tracking_clients", "tracking_total_keys", "tracking_total_items", "tracking_total_prefixes"],
        );
        // A second connection's id is needed for a double REDIRECT.
        let r = s.open();
        s.id(r);
        s.cmd(a, &["CLIENT", "TRACKING", "on", "REDIRECT", "<id:1>", "REDIRECT", "<id:1>"]);
    });
    assert!(log.contains("-ERR PREFIX option requires BCAST mode to be enabled"), "{log}");
    assert!(log.contains("-ERR You can't specify both OPTIN mode and OPTOUT mode"), "{log}");
    assert!(log.contains("-ERR Prefix 'a' overlaps with another provided prefix 'ab'. Prefixes for a single client must not overlap."), "{log}");
    assert!(
        log.contains(
            "0> CLIENT TRACKING on REDIRECT 999999\n0< -ERR The client ID you want redirect to does not exist"
        ),
        "{log}"
    );
    assert!(log.contains("-ERR OPTIN and OPTOUT are not compatible with BCAST"), "{log}");
    assert!(log.contains("-ERR You can't switch BCAST mode on/off"), "{log}");
    assert!(log.contains("-ERR A client can only redirect to a single other client"), "{log}");
    assert!(log.contains("%3\\r\\n$5\\r\\nflags\\r\\n~1\\r\\n$3\\r\\noff\\r\\n$8\\r\\nredirect\\r\\n:-1\\r\\n$8\\r\\nprefixes\\r\\n*0\\r\\n"), "{log}");
    assert!(log.contains("0> CLIENT GETREDIR\n0< :0\\r\\n"), "{log}");
    assert!(
        log.contains("*6\\r\\n$5\\r\\nflags\\r\\n*1\\r\\n$3\\r\\noff\\r\\n"),
        "RESET should turn tracking off (RESP2 again): {log}"
    );
    assert!(log.contains("$5\\r\\noptin\\r\\n$6\\r\\nnoloop\\r\\n"), "{log}");
}

/// redis-py's client-side caching (`cache_config`, RESP3) against rlockd: a
/// cached GET is served locally until another client's SET invalidates it,
/// and FLUSHALL's null invalidation empties the cache. Uses `python3` if it
/// has redis-py, else the venv `examples.rs` builds, else skips.
#[test]
fn redis_py_client_side_cache() {
    let venv = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("examples/python/venv/bin/python");
    // The oracles' venv (tests/oracles/install.sh, which CI runs) carries a
    // pinned redis-py.
    let oracles = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/oracles/venv/bin/python");
    let python = [oracles, std::path::PathBuf::from("python3"), venv].into_iter().find(|p| {
        std::process::Command::new(p)
            .args(["-c", "import redis.cache"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    });
    let Some(python) = python else {
        common::skip::skipped(
            "redis-py (5.1+, with redis.cache) is not installed in target/oracles (bash tests/oracles/install.sh), for python3, nor in the examples' venv, so its client-side cache was not tried",
        );
        return;
    };
    const SCRIPT: &str = r#"
import sys, time, redis
from redis.cache import CacheConfig
port = int(sys.argv[1])
cached = redis.Redis(port=port, protocol=3, cache_config=CacheConfig())
plain = redis.Redis(port=port)
def gets():
    info = plain.info("commandstats").get("cmdstat_get", {})
    return info.get("calls", 0)
plain.set("csc:k", "1")
assert cached.get("csc:k") == b"1"
assert cached.get("csc:k") == b"1"
assert gets() == 1, "second GET not served from the cache: %d" % gets()
plain.set("csc:k", "2")
time.sleep(0.2)
assert cached.get("csc:k") == b"2", "stale value after invalidation"
assert gets() == 2, gets()
plain.flushall()
time.sleep(0.2)
assert cached.get("csc:k") is None
print("ok")
"#;
    // redis-py 5.1+ refuses its cache below a server reporting 7.4 (HELLO's
    // version): rlockd answering as Redis 8.2.3, as a user of a current
    // redis-py runs it.
    let cfg = rlockd::Config { params: vec![("redis-version".into(), "8.2.3".into())], ..Default::default() };
    let srv = rlockd::Server::start_with(cfg).expect("start rlockd");
    let out =
        std::process::Command::new(&python).args(["-c", SCRIPT, &srv.port().to_string()]).output().expect("run python");
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "redis-py's cache against rlockd failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `tracking-table-max-keys`: keys over the limit are invalidated (which
/// ones is random in Redis, so only the counts are compared).
#[test]
fn table_limit_invalidates_keys_over_it() {
    fn run(port: u16) -> (usize, String) {
        let mut a = RawConn::connect(port);
        let mut b = RawConn::connect(port);
        a.cmd(&["HELLO", "3"]);
        b.cmd(&["CONFIG", "SET", "tracking-table-max-keys", "2"]);
        a.cmd(&["CLIENT", "TRACKING", "on"]);
        a.cmd(&["MGET", "k1", "k2", "k3", "k4", "k5"]);
        let mut keys = Vec::new();
        for _ in 0..3 {
            let v = a.read().expect("an invalidation");
            assert!(
                show(&a.last_raw).starts_with(">2\\r\\n$10\\r\\ninvalidate\\r\\n*1\\r\\n"),
                "{}",
                show(&a.last_raw)
            );
            let super::common::resp::Value::Agg(b'>', Some(parts)) = v else { panic!("not a push") };
            keys.extend(parts[1].bulks());
        }
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 3, "three different keys invalidated");
        assert_eq!(
            show(&{
                a.cmd(&["PING"]);
                a.last_raw.clone()
            }),
            PONG
        );
        let super::common::resp::Value::Bulk(Some(info)) = b.cmd(&["INFO", "stats"]) else { panic!("INFO") };
        let info = String::from_utf8_lossy(&info).into_owned();
        let line = info.lines().find(|l| l.starts_with("tracking_total_keys:")).unwrap_or_default().to_string();
        (keys.len(), line)
    }
    let srv = common::server();
    let ours = run(srv.port());
    assert_eq!(ours, (3, "tracking_total_keys:2".to_string()));
    if let Some(oracle) = Oracle::start() {
        assert_eq!(run(oracle.port), ours);
    }
}
