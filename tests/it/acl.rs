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
