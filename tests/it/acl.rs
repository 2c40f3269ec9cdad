//! ACL users over TCP, for what a differential scenario cannot express:
//! several connections of one user, disconnections (ACL DELUSER, CLIENT
//! KILL USER, channels taken away), and ACL LOG entries, whose ages and
//! client lines differ between two servers.

use std::collections::HashMap;
use std::time::Duration;

use super::common::resp::{RawConn, Value};
use super::common::{self};

fn ok() -> Value {
    Value::Simple(b"OK".to_vec())
}

fn bulk(s: &str) -> Value {
    Value::Bulk(Some(s.as_bytes().to_vec()))
}

fn text(v: &Value) -> String {
    match v {
        Value::Bulk(Some(b)) | Value::Simple(b) | Value::Error(b) | Value::Verbatim(b) => {
            String::from_utf8_lossy(b).into_owned()
        }
        other => format!("{other:?}"),
    }
}

/// A connection authenticated as `user`.
fn login(port: u16, user: &str, pass: &str) -> RawConn {
    let mut c = RawConn::connect(port);
    assert_eq!(c.cmd(&["AUTH", user, pass]), ok());
    c.set_read_timeout(Duration::from_secs(5));
    c
}

/// True once the server has closed `c` (a PING gets no reply).
fn closed(c: &mut RawConn) -> bool {
    c.try_send_raw(b"PING\r\n").is_err() || c.read().is_none()
}

/// The `ACL LOG` entries (RESP2: flat field/value arrays) as maps.
fn log(c: &mut RawConn, count: &str) -> Vec<HashMap<String, Value>> {
    let Value::Agg(b'*', Some(entries)) = c.cmd(&["ACL", "LOG", count]) else { panic!("ACL LOG is an array") };
    entries
        .into_iter()
        .map(|e| {
            let Value::Agg(b'*', Some(fields)) = e else { panic!("an entry is an array") };
            fields.chunks(2).map(|p| (text(&p[0]), p[1].clone())).collect()
        })
        .collect()
}

#[test]
fn deleting_a_user_disconnects_its_clients_only() {
    let srv = common::server();
    let port = srv.port();
    let mut admin = RawConn::connect(port);
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "k1", "on", ">p", "+@all", "~*", "&*"]), ok());
    let mut a = login(port, "k1", "p");
    let mut b = login(port, "k1", "p");
    assert_eq!(a.cmd(&["ACL", "WHOAMI"]), bulk("k1"));
    assert_eq!(admin.cmd(&["ACL", "DELUSER", "k1", "nobody"]), Value::Int(1));
    assert!(closed(&mut a), "a client of the deleted user stays connected");
    assert!(closed(&mut b), "a client of the deleted user stays connected");
    assert_eq!(admin.cmd(&["ACL", "WHOAMI"]), bulk("default"));

    // Deleting one's own user: the reply comes, then the connection closes.
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "k2", "on", "nopass", "+@all"]), ok());
    let mut own = login(port, "k2", "x");
    assert_eq!(own.cmd(&["ACL", "DELUSER", "k2"]), Value::Int(1));
    assert!(closed(&mut own));
    assert_eq!(admin.cmd(&["ACL", "USERS"]), Value::Agg(b'*', Some(vec![bulk("default")])));
}

#[test]
fn client_list_shows_the_user_and_client_kill_user_picks_its_clients() {
    let srv = common::server();
    let port = srv.port();
    let mut admin = RawConn::connect(port);
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "k2", "on", "nopass", "+@all"]), ok());
    let mut a = login(port, "k2", "any");
    let info = text(&a.cmd(&["CLIENT", "INFO"]));
    assert!(info.contains(" user=k2 "), "CLIENT INFO: {info}");
    let list = text(&admin.cmd(&["CLIENT", "LIST"]));
    assert_eq!(list.matches(" user=k2 ").count(), 1, "CLIENT LIST: {list}");
    assert_eq!(list.matches(" user=default ").count(), 1, "CLIENT LIST: {list}");
    assert_eq!(admin.cmd(&["CLIENT", "KILL", "USER", "nosuch"]), Value::Error(b"ERR No such user 'nosuch'".to_vec()));
    assert_eq!(admin.cmd(&["CLIENT", "KILL", "USER", "k2"]), Value::Int(1));
    assert!(closed(&mut a));
    assert_eq!(admin.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    // RESET makes the client default again.
    let mut r = login(port, "k2", "any");
    assert_eq!(r.cmd(&["RESET"]), Value::Simple(b"RESET".to_vec()));
    assert_eq!(r.cmd(&["ACL", "WHOAMI"]), bulk("default"));
}

#[test]
fn turning_a_user_off_keeps_its_connections_but_refuses_new_logins() {
    let srv = common::server();
    let port = srv.port();
    let mut admin = RawConn::connect(port);
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "k3", "on", ">p", "+@all", "~*"]), ok());
    let mut a = login(port, "k3", "p");
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "k3", "off"]), ok());
    assert_eq!(a.cmd(&["GET", "x"]), Value::Bulk(None));
    let mut b = RawConn::connect(port);
    assert_eq!(
        b.cmd(&["AUTH", "k3", "p"]),
        Value::Error(b"WRONGPASS invalid username-password pair or user is disabled.".to_vec())
    );
}

#[test]
fn subscribers_whose_channels_are_taken_away_are_disconnected() {
    let srv = common::server();
    let port = srv.port();
    let mut admin = RawConn::connect(port);
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "s", "on", "nopass", "+@all", "resetchannels", "&news*", "&other"]), ok());
    let mut news = login(port, "s", "x");
    news.cmd(&["SUBSCRIBE", "news1"]);
    let mut other = login(port, "s", "x");
    other.cmd(&["SUBSCRIBE", "other"]);
    let mut idle = login(port, "s", "x");
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "s", "resetchannels", "&other"]), ok());
    assert!(news.read().is_none(), "a subscriber to a channel no longer allowed stays connected");
    assert_eq!(other.cmd(&["PING"]), Value::Agg(b'*', Some(vec![bulk("pong"), bulk("")])));
    assert_eq!(idle.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
}

#[test]
fn acl_log_records_denials_and_failed_logins_with_redis_fields() {
    let srv = common::server();
    let port = srv.port();
    let mut admin = RawConn::connect(port);
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "u", "on", ">p", "~a*", "+get", "+eval"]), ok());
    let mut u = login(port, "u", "p");
    let noperm_key =
        Value::Error(b"NOPERM this user has no permissions to access one of the keys used as arguments".to_vec());
    assert_eq!(u.cmd(&["GET", "b"]), noperm_key);
    assert_eq!(u.cmd(&["GET", "b"]), noperm_key);
    assert_eq!(
        u.cmd(&["SET", "a", "v"]),
        Value::Error(b"NOPERM this user has no permissions to run the 'set' command".to_vec())
    );
    let script = u.cmd(&["EVAL", "return redis.call('get','zz')", "0"]);
    assert!(
        text(&script).starts_with(
            "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
        ),
        "{script:?}"
    );
    let mut bad = RawConn::connect(port);
    bad.cmd(&["AUTH", "ghost", "pw"]);

    let entries = log(&mut admin, "10");
    assert_eq!(entries.len(), 4, "{entries:?}");
    let field = |i: usize, f: &str| text(&entries[i][f]);
    // Newest first: the failed login, the script's key, SET, the two GETs.
    assert_eq!(
        (field(0, "reason"), field(0, "context"), field(0, "object")),
        ("auth".into(), "toplevel".into(), "AUTH".into())
    );
    assert_eq!(field(0, "username"), "ghost");
    assert_eq!(
        (field(1, "reason"), field(1, "context"), field(1, "object")),
        ("key".into(), "lua".into(), "zz".into())
    );
    assert!(field(1, "client-info").contains(" cmd=eval "), "{}", field(1, "client-info"));
    assert_eq!((field(2, "reason"), field(2, "object")), ("command".into(), "set".into()));
    assert_eq!((field(3, "reason"), field(3, "object"), field(3, "username")), ("key".into(), "b".into(), "u".into()));
    assert_eq!(entries[3]["count"], Value::Int(2), "equal denials are counted on one entry");
    assert!(field(3, "client-info").contains(" user=u "), "{}", field(3, "client-info"));
    let age: f64 = field(3, "age-seconds").parse().expect("age-seconds is a number");
    assert!((0.0..60.0).contains(&age), "age-seconds {age}");
    let keys: Vec<&str> = {
        let mut k: Vec<&str> = entries[3].keys().map(String::as_str).collect();
        k.sort_unstable();
        k
    };
    assert_eq!(keys, ["age-seconds", "client-info", "context", "count", "object", "reason", "username"]);

    assert_eq!(log(&mut admin, "1").len(), 1);
    assert_eq!(admin.cmd(&["ACL", "LOG", "RESET"]), ok());
    assert!(log(&mut admin, "10").is_empty());
}

/// A valid call of each `RLOCKD` subcommand (right arity; the permission
/// check comes after the arity check, as in Redis).
const RLOCKD_CALLS: &[(&str, &[&str])] = &[
    ("check", &[]),
    ("claim", &["ENTER", "k", "h"]),
    ("clock", &["GET"]),
    ("cluster", &["DOWN", "0"]),
    ("events", &[]),
    ("fault", &["KILL"]),
    ("help", &[]),
    ("history", &[]),
    ("locks", &[]),
    ("record", &["STATUS"]),
    ("repl", &["STATUS"]),
    ("restore", &["before"]),
    ("schema", &[]),
    ("scripts", &[]),
    ("snapshot", &["before"]),
    ("snapshots", &[]),
    ("timeline", &[]),
];

fn rlockd_call(sub: &str) -> Vec<&str> {
    let (_, args) = RLOCKD_CALLS.iter().find(|(s, _)| *s == sub).unwrap_or_else(|| panic!("no call for {sub}"));
    let mut argv = vec!["RLOCKD", sub];
    argv.extend_from_slice(args);
    argv
}

/// Test control obeys ACL like any command: a user restricted to a key
/// prefix and a few commands gets Redis's NOPERM for every `RLOCKD`
/// subcommand (logged, known to ACL DRYRUN), and nothing happens; granted
/// `+rlockd|clock`, it runs that one only. The default user keeps all.
#[test]
fn a_restricted_user_runs_only_the_rlockd_subcommands_it_was_granted() {
    let srv = common::server();
    let port = srv.port();
    let mut admin = RawConn::connect(port);
    // The subcommands as the server describes them: a new one needs a call above.
    let Value::Agg(_, Some(info)) = admin.cmd(&["COMMAND", "INFO", "rlockd"]) else { panic!("COMMAND INFO") };
    let Value::Agg(_, Some(row)) = &info[0] else { panic!("rlockd is known by name: {info:?}") };
    let Value::Agg(_, Some(subs)) = &row[9] else { panic!("subcommands") };
    let mut names: Vec<String> = subs
        .iter()
        .map(|s| {
            let Value::Agg(_, Some(sub)) = s else { panic!("a subcommand row") };
            let cats = format!("{:?}", sub[6]);
            let name = text(&sub[0]);
            if name != "rlockd|help" {
                for c in ["@admin", "@slow", "@dangerous"] {
                    assert!(cats.contains(&format!("{:?}", c.as_bytes())), "{name} lacks {c}: {cats}");
                }
            }
            name.strip_prefix("rlockd|").expect("rlockd|sub").to_string()
        })
        .collect();
    names.sort();
    assert_eq!(names, RLOCKD_CALLS.iter().map(|(s, _)| s.to_string()).collect::<Vec<_>>());

    assert_eq!(admin.cmd(&["SET", "other:1", "kept"]), ok());
    assert_eq!(admin.cmd(&["RLOCKD", "SNAPSHOT", "before"]), ok());
    assert_eq!(admin.cmd(&["SET", "other:2", "kept"]), ok());
    let rules = ["SETUSER", "app", "on", ">p", "~app:*", "-@all", "+get", "+set", "+eval", "+evalsha"];
    assert_eq!(admin.cmd(&[&["ACL"][..], &rules].concat()), ok());
    let mut app = login(port, "app", "p");
    let mut bystander = RawConn::connect(port);
    assert_eq!(bystander.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    assert_eq!(admin.cmd(&["ACL", "LOG", "RESET"]), ok());
    for (sub, _) in RLOCKD_CALLS {
        let want = format!("NOPERM this user has no permissions to run the 'rlockd|{sub}' command");
        assert_eq!(text(&app.cmd(&rlockd_call(sub))), want);
        let mut dry = vec!["ACL", "DRYRUN", "app"];
        dry.extend(rlockd_call(sub));
        assert_eq!(admin.cmd(&dry), bulk(&format!("This user has no permissions to run the 'rlockd|{sub}' command")));
        let entry = &log(&mut admin, "1")[0];
        assert_eq!(
            (entry["reason"].clone(), entry["object"].clone()),
            (bulk("command"), bulk(&format!("rlockd|{sub}")))
        );
        assert_eq!((entry["context"].clone(), entry["username"].clone()), (bulk("toplevel"), bulk("app")));
    }
    // Nothing was done: the keyspace outside app:* and the other client are intact.
    assert_eq!(admin.cmd(&["GET", "other:2"]), bulk("kept"));
    assert_eq!(bystander.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));

    // Granted one subcommand, the user runs that one and no other.
    assert_eq!(admin.cmd(&["ACL", "SETUSER", "app", "+rlockd|clock"]), ok());
    assert!(matches!(app.cmd(&["RLOCKD", "CLOCK", "GET"]), Value::Int(_)));
    assert_eq!(admin.cmd(&["ACL", "DRYRUN", "app", "RLOCKD", "CLOCK", "GET"]), ok());
    for (sub, _) in RLOCKD_CALLS.iter().filter(|(s, _)| *s != "clock") {
        assert!(text(&app.cmd(&rlockd_call(sub))).starts_with("NOPERM"), "{sub}");
    }
    let Value::Agg(_, Some(user)) = admin.cmd(&["ACL", "GETUSER", "app"]) else { panic!("GETUSER") };
    let commands = user.chunks(2).find(|p| text(&p[0]) == "commands").map(|p| text(&p[1])).unwrap();
    assert!(commands.contains("+rlockd|clock"), "{commands}");

    // The default user keeps full access.
    assert!(matches!(admin.cmd(&["RLOCKD", "CLOCK", "GET"]), Value::Int(_)));
    assert_eq!(admin.cmd(&["RLOCKD", "RESTORE", "before"]), ok());
    assert_eq!(admin.cmd(&["EXISTS", "other:2"]), Value::Int(0));
}

/// `LOCKS` and `EVENTS` show a user only the locks whose keys it may read.
#[test]
fn a_restricted_user_sees_only_the_locks_of_its_keys() {
    let srv = common::server();
    let port = srv.port();
    let mut admin = RawConn::connect(port);
    for key in ["app:lock", "other:lock"] {
        assert_eq!(admin.cmd(&["SET", key, "token-1", "PX", "30000"]), ok());
    }
    let rules = ["SETUSER", "app", "on", ">p", "~app:*", "-@all", "+rlockd|locks", "+rlockd|events"];
    assert_eq!(admin.cmd(&[&["ACL"][..], &rules].concat()), ok());
    let mut app = login(port, "app", "p");
    let keys = |c: &mut RawConn, sub: &str| {
        let Value::Agg(_, Some(items)) = c.cmd(&["RLOCKD", sub]) else { panic!("{sub}") };
        let mut keys: Vec<String> = items
            .iter()
            .map(|l| {
                let Value::Agg(_, Some(f)) = l else { panic!("a map (RESP2: flat)") };
                text(&f.chunks(2).find(|p| text(&p[0]) == "key").expect("key")[1])
            })
            .collect();
        keys.sort();
        keys.dedup();
        keys
    };
    assert_eq!(keys(&mut admin, "LOCKS"), ["app:lock", "other:lock"]);
    assert_eq!(keys(&mut app, "LOCKS"), ["app:lock"]);
    assert_eq!(keys(&mut admin, "EVENTS"), ["app:lock", "other:lock"]);
    assert_eq!(keys(&mut app, "EVENTS"), ["app:lock"]);
}

/// Redis 7.0 describes a user's commands from the permission bits: the
/// categories that fit, then the single commands still differing, which it
/// lists in the order of a hash table seeded per process. The categories
/// must be Redis's, and the single commands the same set.
#[test]
fn acl_list_describes_the_bits_as_redis_7_0() {
    let Some(oracle) = super::common::oracle::Oracle::start() else { return };
    let srv = common::server();
    let rules = ["+@all", "-@dangerous", "+@read", "-@hash", "+get", "-@keyspace"];
    let describe = |port: u16| {
        let mut c = RawConn::connect(port);
        let mut setuser = vec!["ACL", "SETUSER", "tu", "reset"];
        setuser.extend(rules);
        assert_eq!(c.cmd(&setuser), ok());
        let Value::Agg(b'*', Some(users)) = c.cmd(&["ACL", "LIST"]) else { panic!("ACL LIST is an array") };
        let line = users.iter().map(text).find(|u| u.starts_with("user tu ")).expect("the user is listed");
        let commands = line.split_once("resetchannels ").expect("the channels come first").1.to_string();
        let (categories, singles): (Vec<&str>, Vec<&str>) = commands.split(' ').partition(|r| r[1..].starts_with('@'));
        let mut singles: Vec<String> = singles.into_iter().map(str::to_string).collect();
        singles.sort();
        (categories.join(" "), singles)
    };
    let ours = describe(srv.port());
    let redis = describe(oracle.port);
    assert_eq!(ours, redis);
    assert_eq!(ours.0, "+@all -@admin -@keyspace -@hash");
}
