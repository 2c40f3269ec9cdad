//! The Lua VM's security fixes (lua/vm/patches.rs), each with its public
//! reproducer: the script gets Redis's answer, the server keeps serving, and
//! what other clients stored is still there. `tests/diff/lua_vm_cves.redis`
//! runs the same reproducers against redis-server.

use crate::common::{conn, server};

/// Runs `script` and returns its error text (the script must fail).
fn eval_err(con: &mut redis::Connection, script: &str) -> String {
    let r: redis::RedisResult<redis::Value> = redis::cmd("EVAL").arg(script).arg(0).query(con);
    match r {
        Err(e) => e.to_string(),
        Ok(v) => panic!("{script}: expected an error, got {v:?}"),
    }
}

fn still_serving(con: &mut redis::Connection, other: &mut redis::Connection) {
    let pong: String = redis::cmd("PING").query(con).expect("ping");
    assert_eq!(pong, "PONG");
    let held: Option<String> = redis::cmd("GET").arg("lock").query(other).expect("get");
    assert_eq!(held.as_deref(), Some("owner-1"), "another client's lock survived");
}

#[test]
fn cve_2025_46817_unpack_with_overflowing_ranges() {
    let srv = server();
    let mut other = conn(&srv);
    let _: () = redis::cmd("SET").arg("lock").arg("owner-1").query(&mut other).unwrap();
    let mut con = conn(&srv);
    for (i, e) in [(-2i64, 2147483647i64), (0, 2147483647), (-2147483648, -2), (-2147483648, 2147483647), (1, 8000)] {
        let err = eval_err(&mut con, &format!("return {{unpack({{1,2,3}}, {i}, {e})}}"));
        assert!(err.contains("too many results to unpack"), "unpack({i}, {e}): {err}");
        still_serving(&mut con, &mut other);
    }
    // The edges of the range still work: nothing, or a few nils.
    let n: i64 = redis::cmd("EVAL")
        .arg("return select('#', unpack({1,2,3}, 2147483646, 2147483647))")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 2);
    let n: i64 = redis::cmd("EVAL").arg("return select('#', unpack({1,2,3}, -1, -2))").arg(0).query(&mut con).unwrap();
    assert_eq!(n, 0);
    let v: Vec<String> = redis::cmd("EVAL")
        .arg("local n = select('#', unpack({1,2,3}, -1, 5)) local v = {unpack({1,2,3}, -1, 5)} for k = 1, n do v[k] = v[k] or '_' end return v")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(v, ["_", "_", "1", "2", "3", "_", "_"]);
    // Through FCALL as well.
    let _: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("#!lua name=cve\nredis.register_function('big', function() return {unpack({1,2,3}, -2, 2147483647)} end)")
        .query(&mut con)
        .unwrap();
    let r: redis::RedisResult<redis::Value> = redis::cmd("FCALL").arg("big").arg(0).query(&mut con);
    assert!(r.unwrap_err().to_string().contains("too many results to unpack"));
    still_serving(&mut con, &mut other);
}

#[test]
fn cve_2025_49844_collection_during_parse() {
    let srv = server();
    let mut other = conn(&srv);
    let _: () = redis::cmd("SET").arg("lock").arg("owner-1").query(&mut other).unwrap();
    let mut con = conn(&srv);
    // `load` with a reader that collects garbage: the first read happens
    // before the parser has anything that references the chunk name.
    let sum: i64 = redis::cmd("EVAL")
        .arg(
            "local r = 0 for i = 1, 300 do local n = 0 local f = load(function() n = n + 1 \
             collectgarbage('collect') if n == 1 then return 'return ' .. i end end) r = r + f() end return r",
        )
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(sum, 300 * 301 / 2);
    let err: String = redis::cmd("EVAL")
        .arg("local n = 0 local f, e = load(function() n = n + 1 collectgarbage('collect') if n == 1 then return 'return +' end end) return e")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(err, "(load):1: unexpected symbol near '+'");
    still_serving(&mut con, &mut other);
}

#[test]
fn cve_2025_46819_lexer_bounds() {
    let srv = server();
    let mut other = conn(&srv);
    let _: () = redis::cmd("SET").arg("lock").arg("owner-1").query(&mut other).unwrap();
    let mut con = conn(&srv);
    let err = eval_err(&mut con, "return [==x");
    assert!(err.contains("invalid long string delimiter near '[=='"), "{err}");
    let n: i64 = redis::cmd("EVAL")
        .arg("local sep = string.rep('=', 100000) return #loadstring('return [' .. sep .. '[x]' .. sep .. ']')()")
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 1);
    let s: String = redis::cmd("EVAL").arg("return [[a [[ b]]").arg(0).query(&mut con).unwrap();
    assert_eq!(s, "a [[ b");
    still_serving(&mut con, &mut other);
}

#[test]
fn cve_2014_5461_vararg_with_many_fixed_parameters() {
    let srv = server();
    let mut con = conn(&srv);
    let r: Vec<i64> = redis::cmd("EVAL")
        .arg(
            "local p = {} for i = 1, 150 do p[i] = 'a' .. i end local f = loadstring('return function(' .. \
             table.concat(p, ',') .. ', ...) return 7, select(\"#\", ...) end')() return {f()}",
        )
        .arg(0)
        .query(&mut con)
        .unwrap();
    assert_eq!(r, [7, 0]);
}

#[test]
fn cve_2021_32626_replies_and_arguments_cross_the_stack_safely() {
    let srv = server();
    let mut con = conn(&srv);
    // 7999 arguments unpacked into redis.call.
    let n: i64 = redis::cmd("EVAL")
        .arg("local a = {} for i = 1, 7999 do a[i] = 1 end return redis.call('lpush', KEYS[1], unpack(a))")
        .arg(1)
        .arg("l")
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 7999);
    // A 100 000-element reply, with the stack already nearly full.
    let _: i64 = redis::cmd("EVAL")
        .arg("local t = {} for i = 1, 100000 do t[#t + 1] = i if #t == 5000 then redis.call('rpush', KEYS[1], unpack(t)) t = {} end end return 1")
        .arg(1)
        .arg("big")
        .query(&mut con)
        .unwrap();
    let n: i64 = redis::cmd("EVAL")
        .arg("local a = {} for i = 1, 7990 do a[i] = i end local function g(...) return #redis.call('lrange', KEYS[1], 0, -1) + select('#', ...) end return g(unpack(a))")
        .arg(1)
        .arg("big")
        .query(&mut con)
        .unwrap();
    assert_eq!(n, 100_000 + 7990);
    // A self-referencing table: nested as deep as Redis nests it (7995
    // arrays), then its error. Read raw: client libraries refuse such depth.
    use std::io::{Read, Write};
    let mut raw = std::net::TcpStream::connect(srv.addr()).unwrap();
    let script = "local a = {} local b = {a} a[1] = b return a";
    write!(raw, "*3\r\n$4\r\nEVAL\r\n${}\r\n{script}\r\n$1\r\n0\r\n", script.len()).unwrap();
    let want_tail = b"-ERR reached lua stack limit\r\n";
    let mut got = Vec::new();
    let mut buf = [0u8; 65536];
    while !got.ends_with(want_tail) {
        let n = raw.read(&mut buf).unwrap();
        assert!(n > 0, "connection closed");
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got.len(), 7995 * 4 + want_tail.len());
    assert!(got.chunks(4).take(7995).all(|c| c == b"*1\r\n"));
    let pong: String = redis::cmd("PING").query(&mut con).unwrap();
    assert_eq!(pong, "PONG");
}
