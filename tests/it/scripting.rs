//! Lua scripting over TCP: conversions, error paths, sandbox, script cache,
//! read-only scripts, functions, BUSY / SCRIPT KILL / UNKILLABLE.
//!
//! Replies are checked byte-exactly with the raw client where the exact
//! text matters, and through the `redis` crate where a real client's view
//! matters (its `Script` helper relies on the NOSCRIPT fallback).

use std::thread;
use std::time::{Duration, Instant};

use super::common::{self, resp::RawConn, resp::Value};

fn raw(srv: &rlockd::Server) -> RawConn {
    RawConn::connect(srv.port())
}

fn bulk(s: &str) -> Value {
    Value::Bulk(Some(s.as_bytes().to_vec()))
}

fn arr(items: Vec<Value>) -> Value {
    Value::Agg(b'*', Some(items))
}

fn err(s: &str) -> Value {
    Value::Error(s.as_bytes().to_vec())
}

/// `EVAL script numkeys keys... args...`.
fn eval(c: &mut RawConn, script: &str, keys: &[&str], args: &[&str]) -> Value {
    let n = keys.len().to_string();
    let mut v = vec!["EVAL", script, n.as_str()];
    v.extend_from_slice(keys);
    v.extend_from_slice(args);
    c.cmd(&v)
}

/// The error text of `script` (with the sha it is reported under).
fn eval_err(c: &mut RawConn, script: &str) -> String {
    match eval(c, script, &[], &[]) {
        Value::Error(e) => String::from_utf8(e).unwrap(),
        other => panic!("{script}: expected an error, got {other:?}"),
    }
}

fn sha(script: &str) -> String {
    rlockd::locks::sha1_hex(script.as_bytes())
}

#[test]
fn lua_values_become_redis_replies() {
    let srv = common::server();
    let mut c = raw(&srv);
    assert_eq!(eval(&mut c, "return 42", &[], &[]), Value::Int(42));
    assert_eq!(eval(&mut c, "return 3.99", &[], &[]), Value::Int(3), "numbers truncate");
    assert_eq!(eval(&mut c, "return -3.99", &[], &[]), Value::Int(-3));
    assert_eq!(eval(&mut c, "return 1e100", &[], &[]), Value::Int(i64::MIN), "C cast of out-of-range");
    assert_eq!(eval(&mut c, "return 'x'", &[], &[]), bulk("x"));
    assert_eq!(eval(&mut c, "return true", &[], &[]), Value::Int(1));
    assert_eq!(eval(&mut c, "return false", &[], &[]), Value::Bulk(None));
    assert_eq!(eval(&mut c, "return nil", &[], &[]), Value::Bulk(None));
    assert_eq!(eval(&mut c, "return function() end", &[], &[]), Value::Bulk(None));
    assert_eq!(
        eval(&mut c, "return {1, 'two', {3}, nil, 5}", &[], &[]),
        arr(vec![Value::Int(1), bulk("two"), arr(vec![Value::Int(3)])]),
        "arrays stop at the first nil"
    );
    assert_eq!(
        eval(&mut c, "return {1, false, 3}", &[], &[]),
        arr(vec![Value::Int(1), Value::Bulk(None), Value::Int(3)])
    );
    assert_eq!(eval(&mut c, "return {ok='fine'}", &[], &[]), Value::Simple(b"fine".to_vec()));
    assert_eq!(eval(&mut c, "return {err='MY problem'}", &[], &[]), err("MY problem"));
    assert_eq!(eval(&mut c, "return redis.status_reply('S')", &[], &[]), Value::Simple(b"S".to_vec()));
    assert_eq!(eval(&mut c, "return redis.error_reply('oops')", &[], &[]), err("ERR oops"));
    assert_eq!(eval(&mut c, "return redis.error_reply('-CODE text')", &[], &[]), err("CODE text"));
    assert_eq!(eval(&mut c, "return {foo='bar'}", &[], &[]), arr(vec![]), "hash part is ignored");
    assert_eq!(eval(&mut c, "return {double=1.5}", &[], &[]), bulk("1.5"), "doubles are bulk in RESP2");
    assert_eq!(eval(&mut c, "return {map={a=1}}", &[], &[]), arr(vec![bulk("a"), Value::Int(1)]));
    assert_eq!(eval(&mut c, "return {set={a=true}}", &[], &[]), arr(vec![bulk("a")]));
    assert_eq!(eval(&mut c, "return 1, 2", &[], &[]), Value::Int(1), "only the first value counts");
}

#[test]
fn redis_replies_become_lua_values() {
    let srv = common::server();
    let mut c = raw(&srv);
    c.cmd(&["SET", "s", "hello"]);
    c.cmd(&["SET", "n", "10"]);
    let probe = "local function t(v) if type(v) == 'table' then if v.ok then return 'table:ok' elseif v.err then return 'table:err' end return 'table:' .. #v end return type(v) .. ':' .. tostring(v) end \
                 return {t(redis.call('get', 's')), t(redis.call('get', 'missing')), t(redis.call('incr', 'n')), \
                 t(redis.call('set', 'x', 'y')), t(redis.pcall('incr', 's')), t(redis.call('mget', 's', 'missing'))}";
    assert_eq!(
        eval(&mut c, probe, &[], &[]),
        arr(vec![
            bulk("string:hello"),
            bulk("boolean:false"),
            bulk("number:11"),
            bulk("table:ok"),
            bulk("table:err"),
            bulk("table:2"),
        ])
    );
    assert_eq!(eval(&mut c, "return redis.call('set', 'x', 'y').ok", &[], &[]), bulk("OK"));
    assert_eq!(
        eval(&mut c, "return redis.pcall('incr', 's').err", &[], &[]),
        bulk("ERR value is not an integer or out of range")
    );
    assert_eq!(eval(&mut c, "return #redis.call('mget', 's', 'missing', 'n')", &[], &[]), Value::Int(3));
    // Numbers become arguments with %.17g.
    assert_eq!(
        eval(&mut c, "redis.call('set', 'f', 0.1) return redis.call('get', 'f')", &[], &[]),
        bulk("0.10000000000000001")
    );
    assert_eq!(eval(&mut c, "redis.call('set', 'f', 7) return redis.call('get', 'f')", &[], &[]), bulk("7"));
}

#[test]
fn resp3_scripts_and_callers() {
    let srv = common::server();
    let mut c = raw(&srv);
    c.cmd(&["HELLO", "3"]);
    assert_eq!(eval(&mut c, "return {double=1.5}", &[], &[]), Value::Double(b"1.5".to_vec()));
    assert_eq!(eval(&mut c, "return {map={a=1}}", &[], &[]), Value::Map(vec![(bulk("a"), Value::Int(1))]));
    assert_eq!(eval(&mut c, "return {set={a=true}}", &[], &[]), Value::Agg(b'~', Some(vec![bulk("a")])));
    assert_eq!(eval(&mut c, "return {big_number='123'}", &[], &[]), Value::Big(b"123".to_vec()));
    assert_eq!(eval(&mut c, "return nil", &[], &[]), Value::Null);
    assert_eq!(eval(&mut c, "return true", &[], &[]), Value::Int(1), "RESP2 script: true is 1");
    assert_eq!(eval(&mut c, "redis.setresp(3) return true", &[], &[]), Value::Bool(true));
    assert_eq!(eval(&mut c, "redis.setresp(3) return false", &[], &[]), Value::Bool(false));
    assert_eq!(eval(&mut c, "redis.setresp(3) return type(redis.call('get', 'missing'))", &[], &[]), bulk("nil"));
    let docs = "return redis.call('command', 'docs', 'get')";
    assert_eq!(
        eval(&mut c, &format!("redis.setresp(3) local r = {}.map.get.map return r.summary", &docs[7..]), &[], &[]),
        bulk("Get the value of a key")
    );
    let Value::Agg(b'*', Some(flat)) = eval(&mut c, docs, &[], &[]) else { panic!("array") };
    assert_eq!(flat[0], bulk("get"), "a RESP2 script gets maps as flat arrays, even for a RESP3 caller");
    let Value::Map(m) = eval(&mut c, &format!("redis.setresp(3) {docs}"), &[], &[]) else { panic!("map") };
    assert_eq!(m[0].0, bulk("get"));
    assert_eq!(
        eval(&mut c, "redis.setresp(4)", &[], &[]).clone(),
        err_with_sha("ERR RESP version must be 2 or 3.", "redis.setresp(4)", 1)
    );
}

fn err_with_sha(msg: &str, script: &str, line: u32) -> Value {
    err(&format!("{msg} script: {}, on @user_script:{line}.", sha(script)))
}

#[test]
fn error_replies_match_redis() {
    let srv = common::server();
    let mut c = raw(&srv);
    let cases: &[(&str, &str)] = &[
        ("return redis.call('nosuch')", "ERR Unknown Redis command called from script"),
        ("return redis.call()", "ERR Please specify at least one argument for this redis lib call"),
        ("return redis.call('get')", "ERR Wrong number of args calling Redis command from script"),
        ("return redis.call('get', {})", "ERR Lua redis lib command arguments must be strings or integers"),
        ("return redis.call('eval', 'return 1', 0)", "ERR This Redis command is not allowed from script"),
        ("return redis.call('config', 'nosuch')", "ERR Unknown Redis command called from script"),
        ("error({err='EFOO bar'})", "EFOO bar"),
        ("error('boom')", "ERR user_script:1: boom"),
        ("return x", "ERR user_script:1: Script attempted to access nonexistent global variable 'x'"),
        ("x = 1", "ERR user_script:1: Attempt to modify a readonly table"),
        ("rawset(_G, 'x', 1)", "ERR Attempt to modify a readonly table"),
        ("return redis.sha1hex()", "ERR wrong number of arguments"),
    ];
    for (script, msg) in cases {
        assert_eq!(eval(&mut c, script, &[], &[]), err_with_sha(msg, script, 1), "{script}");
    }
    c.cmd(&["SET", "str", "x"]);
    let script = "return redis.call('incr', 'str')";
    assert_eq!(eval(&mut c, script, &[], &[]), err_with_sha("ERR value is not an integer or out of range", script, 1));
    // pcall returns the error instead of raising it.
    assert_eq!(
        eval(&mut c, "return redis.pcall('nosuch')", &[], &[]),
        err("ERR Unknown Redis command called from script")
    );
    assert_eq!(
        eval(&mut c, "return {pcall(redis.call, 'nosuch')}", &[], &[]),
        arr(vec![Value::Bulk(None), bulk("ERR Unknown Redis command called from script")])
    );
    assert_eq!(eval(&mut c, "redis.pcall('nosuch') return 'went on'", &[], &[]), bulk("went on"));
    // Line numbers follow the code.
    let script = "local a = 1\nlocal b = 2\nerror('third')";
    assert_eq!(eval(&mut c, script, &[], &[]), err_with_sha("ERR user_script:3: third", script, 3));
    // Compile errors and numkeys.
    assert_eq!(
        eval(&mut c, "return +", &[], &[]),
        err("ERR Error compiling script (new function): user_script:1: unexpected symbol near '+'")
    );
    assert_eq!(c.cmd(&["EVAL", "return 1", "2", "a"]), err("ERR Number of keys can't be greater than number of args"));
    assert_eq!(c.cmd(&["EVAL", "return 1", "-1"]), err("ERR Number of keys can't be negative"));
    assert_eq!(c.cmd(&["EVAL", "return 1", "x"]), err("ERR value is not an integer or out of range"));
    // The connection is still fine after all that.
    assert_eq!(c.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
}

#[test]
fn sandbox_escapes_are_refused() {
    let srv = common::server();
    let mut c = raw(&srv);
    for lib in [
        "os", "io", "debug", "require", "loadfile", "dofile", "print", "setfenv", "getfenv", "newproxy", "module",
        "package",
    ] {
        let script = format!("return type({lib})");
        let msg = format!("ERR user_script:1: Script attempted to access nonexistent global variable '{lib}'");
        assert_eq!(eval(&mut c, &script, &[], &[]), err_with_sha(&msg, &script, 1), "{lib}");
    }
    for (script, expect) in [
        ("return type(loadstring)", "function"),
        ("return type(cjson) .. type(cmsgpack) .. type(struct) .. type(bit)", "tabletabletabletable"),
        ("return type(coroutine)", "table"),
        ("return _VERSION", "Lua 5.1"),
        ("return tostring(getmetatable('').__index == string)", "true"),
    ] {
        assert_eq!(eval(&mut c, script, &[], &[]), bulk(expect), "{script}");
    }
    // Binary chunks are parsed as text, and fail.
    assert_eq!(
        eval(&mut c, "local f, e = loadstring(string.dump(function() return 1 end)) return {tostring(f), e}", &[], &[]),
        arr(vec![bulk("nil"), bulk("[string \"\x1bLuaQ\"]:1: unexpected symbol near 'char(27)'")])
    );
    let mut body = vec![0x1bu8];
    body.extend_from_slice(b"LuaQ garbage");
    let mut args: Vec<Vec<u8>> = vec![b"EVAL".to_vec(), body, b"0".to_vec()];
    c.send(&args);
    assert_eq!(
        c.read().unwrap(),
        err("ERR Error compiling script (new function): user_script:1: unexpected symbol near 'char(27)'")
    );
    args.clear();
    // Every way of writing to protected tables fails.
    for script in [
        "x = 1",
        "_G.x = 1",
        "function f() end",
        "KEYS = {}",
        "redis.call = nil",
        "string.format = nil",
        "math.random = nil",
        "cjson.encode = nil",
        "getmetatable('').__index = {}",
        "getmetatable(_G).__index = nil",
    ] {
        let e = eval_err(&mut c, script);
        assert!(e.starts_with("ERR user_script:1: Attempt to modify a readonly table script: "), "{script}: {e}");
    }
    for script in ["rawset(_G, 'x', 1)", "setmetatable(_G, {})", "rawset(string, 'x', 1)", "setmetatable(string, nil)"]
    {
        let e = eval_err(&mut c, script);
        assert!(e.starts_with("ERR Attempt to modify a readonly table script: "), "{script}: {e}");
    }
    // Local state is fine, and raw reads see the real contents.
    assert_eq!(eval(&mut c, "local t = {} t.x = 1 return t.x", &[], &[]), Value::Int(1));
    assert_eq!(eval(&mut c, "KEYS[1] = 'changed' return KEYS[1]", &["orig"], &[]), bulk("changed"));
    assert_eq!(eval(&mut c, "return rawget(_G, 'nosuch')", &[], &[]), Value::Bulk(None));
    assert_eq!(
        eval(&mut c, "local n = 0 for k in pairs(string) do n = n + 1 end return n", &[], &[]),
        Value::Int(15),
        "pairs sees through the read-only proxy"
    );
}

/// An `EVAL` script's function reads its globals from the real globals
/// table, marked read-only inside the VM (lua/vm/patches.rs): every way its
/// code can assign a global — at top level, in a function or coroutine it
/// defines, in a loop, under `pcall`, again on a cached rerun — raises the
/// error the globals proxy raised, at the assigning line; the mark stays on
/// that one table (new tables, KEYS/ARGV, decoded JSON stay writable).
#[test]
fn script_globals_stay_read_only() {
    let srv = common::server();
    let mut c = raw(&srv);
    let readonly = "Attempt to modify a readonly table";
    for (script, line) in [
        ("cnt = 1", 1),
        ("redis = nil", 1),
        ("KEYS = {}", 1),
        ("local function f() y = 2 end f()", 1),
        ("for i = 1, 3 do cnt = i end", 1),
        ("local a = 1\nlocal b = 2\nARGV = a + b", 3),
        ("return (function() return (function() w = 1 end)() end)()", 1),
    ] {
        let want = err_with_sha(&format!("ERR user_script:{line}: {readonly}"), script, line);
        assert_eq!(eval(&mut c, script, &[], &[]), want, "{script}");
        // Run again from the cache: the same function, the same answer.
        assert_eq!(c.cmd(&["EVALSHA", &sha(script), "0"]), want, "{script} (EVALSHA)");
    }
    // A coroutine's error is re-raised by wrap with the coroutine's position.
    let script = "local co = coroutine.wrap(function() z = 3 end) co()";
    let want = format!("ERR user_script:1: user_script:1: {readonly}");
    assert_eq!(eval(&mut c, script, &[], &[]), err_with_sha(&want, script, 1));
    assert_eq!(
        eval(&mut c, "local ok, e = pcall(function() redis = 1 end) return {tostring(ok), e}", &[], &[]),
        arr(vec![bulk("false"), bulk(&format!("user_script:1: {readonly}"))])
    );
    // Reads: one table, the same values as through `_G` (the proxy).
    assert_eq!(eval(&mut c, "return tostring(rawequal(_G.redis, redis))", &[], &[]), bulk("true"));
    assert_eq!(eval(&mut c, "return tostring(rawequal(_G.KEYS, KEYS))", &["k"], &[]), bulk("true"));
    let script = "local function g() return h end return g()";
    let want = "ERR user_script:1: Script attempted to access nonexistent global variable 'h'";
    assert_eq!(eval(&mut c, script, &[], &[]), err_with_sha(want, script, 1));
    // The mark is on the globals only: tables made afterwards (many, so
    // that freed tables' memory is reused) are writable.
    for script in [
        "local t = {} for i = 1, 500 do t[i] = {} t[i].x = i end return t[500].x",
        "local t = cjson.decode('{\"a\":1}') t.b = 500 return t.b",
        "KEYS[1] = 500 return KEYS[1]",
        "local t = setmetatable({}, {}) t.x = 500 return t.x",
    ] {
        assert_eq!(eval(&mut c, script, &["k"], &[]), Value::Int(500), "{script}");
    }
    // `redis` itself is the real table, marked: every writer refuses it.
    for (script, at) in [
        ("redis.x = 1", "user_script:1: "),
        ("local r = redis r.call = nil", "user_script:1: "),
        ("rawset(redis, 'x', 1)", ""),
        ("setmetatable(redis, {})", ""),
        ("table.insert(redis, 'x')", ""),
    ] {
        let want = err_with_sha(&format!("ERR {at}{readonly}"), script, 1);
        assert_eq!(eval(&mut c, script, &[], &[]), want, "{script}");
    }
    assert_eq!(eval(&mut c, "return {tostring(rawget(redis, 'call') == redis.call), #redis}", &[], &[]), {
        arr(vec![bulk("true"), Value::Int(0)])
    });
    // Functions keep the proxy's behaviour too.
    c.cmd(&["FUNCTION", "LOAD", "#!lua name=ro\nredis.register_function('ro', function() x = 1 end)"]);
    match c.cmd(&["FCALL", "ro", "0"]) {
        Value::Error(e) => {
            let e = String::from_utf8(e).unwrap();
            assert!(e.contains(readonly), "{e}");
        }
        other => panic!("FCALL ro: {other:?}"),
    }
}

#[test]
fn scripts_never_see_each_others_state() {
    let srv = common::server();
    let mut a = raw(&srv);
    let mut b = raw(&srv);
    for script in ["table.insert(redis, 'leak')", "table.insert(_G, 'leak')", "table.insert(string, 1, 'leak')"] {
        let e = eval_err(&mut a, script);
        assert!(e.starts_with("ERR Attempt to modify a readonly table script: "), "{script}: {e}");
    }
    assert_eq!(eval(&mut b, "return {rawget(_G, 1), redis[1], string[1]}", &[], &[]), arr(vec![]));
    eval(&mut a, "math.randomseed(7) return 1", &[], &[]);
    assert!(matches!(eval(&mut b, "return y", &[], &[]), Value::Error(_)));
}

#[test]
fn evalsha_noscript_load_and_shared_cache() {
    let srv = common::server();
    let mut a = raw(&srv);
    let mut b = raw(&srv);
    let script = "return 'cached:' .. ARGV[1]";
    let s = sha(script);
    assert_eq!(a.cmd(&["EVALSHA", &s, "0", "x"]), err("NOSCRIPT No matching script. Please use EVAL."));
    assert_eq!(a.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()), "connection survives NOSCRIPT");
    assert_eq!(a.cmd(&["SCRIPT", "LOAD", script]), bulk(&s));
    assert_eq!(b.cmd(&["EVALSHA", &s, "0", "y"]), bulk("cached:y"), "cache shared by all connections");
    assert_eq!(b.cmd(&["EVALSHA", &s.to_uppercase(), "0", "z"]), bulk("cached:z"));
    assert_eq!(
        b.cmd(&["SCRIPT", "EXISTS", &s, "0000000000000000000000000000000000000000"]),
        arr(vec![Value::Int(1), Value::Int(0)])
    );
    // EVAL caches too.
    let other = "return 'via eval'";
    eval(&mut a, other, &[], &[]);
    assert_eq!(b.cmd(&["EVALSHA", &sha(other), "0"]), bulk("via eval"));
    assert_eq!(a.cmd(&["SCRIPT", "FLUSH"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(b.cmd(&["EVALSHA", &s, "0", "y"]), err("NOSCRIPT No matching script. Please use EVAL."));

    // The redis crate's Script helper falls back to EVAL on NOSCRIPT.
    let mut con = common::conn(&srv);
    let script = redis::Script::new("return redis.call('incrby', KEYS[1], ARGV[1])");
    let v: i64 = script.key("counter").arg(5).invoke(&mut con).unwrap();
    assert_eq!(v, 5);
    let v: i64 = script.key("counter").arg(5).invoke(&mut con).unwrap();
    assert_eq!(v, 10);
}

#[test]
fn command_names_in_any_case_and_from_argv() {
    let srv = common::server();
    let mut c = raw(&srv);
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(eval(&mut c, "return redis.call('GeT', KEYS[1])", &["k"], &[]), bulk("v"));
    assert_eq!(eval(&mut c, "return redis.call(ARGV[1], KEYS[1])", &["k"], &["GET"]), bulk("v"));
    assert_eq!(
        eval(&mut c, "return redis.call(ARGV[1], KEYS[1], ARGV[2])", &["k2"], &["set", "w"]),
        Value::Simple(b"OK".to_vec())
    );
    // The two-key probe: more keys declared than used is fine.
    assert_eq!(eval(&mut c, "return redis.call('get', KEYS[1])", &["k", "k2"], &[]), bulk("v"));
    assert_eq!(
        eval(&mut c, "return redis.call('mget', KEYS[1], KEYS[2])", &["k", "k2"], &[]),
        arr(vec![bulk("v"), bulk("w")])
    );
}

#[test]
fn noscript_commands_are_refused() {
    let srv = common::server();
    let mut c = raw(&srv);
    for cmd in [
        "'multi'",
        "'exec'",
        "'watch', 'k'",
        "'subscribe', 'c'",
        "'script', 'load', 'x'",
        "'function', 'list'",
        "'client', 'list'",
        "'shutdown'",
    ] {
        let script = format!("return redis.call({cmd})");
        assert_eq!(
            eval(&mut c, &script, &[], &[]),
            err_with_sha("ERR This Redis command is not allowed from script", &script, 1),
            "{cmd}"
        );
    }
}

#[test]
fn read_only_scripts() {
    let srv = common::server();
    let mut c = raw(&srv);
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(c.cmd(&["EVAL_RO", "return redis.call('get', 'k')", "0"]), bulk("v"));
    let script = "return redis.call('set', 'k', 'x')";
    assert_eq!(
        c.cmd(&["EVAL_RO", script, "0"]),
        err_with_sha("ERR Write commands are not allowed from read-only scripts.", script, 1)
    );
    let s = "#!lua flags=no-writes\nreturn redis.call('del', 'k')";
    assert_eq!(
        c.cmd(&["EVAL", s, "0"]),
        err_with_sha("ERR Write commands are not allowed from read-only scripts.", s, 2)
    );
    assert_eq!(
        c.cmd(&["EVAL_RO", "#!lua\nreturn 1", "0"]),
        err("ERR Can not execute a script with write flag using *_ro command.")
    );
    c.cmd(&["SCRIPT", "LOAD", script]);
    assert!(matches!(c.cmd(&["EVALSHA_RO", &sha(script), "0"]), Value::Error(_)));
    assert_eq!(c.cmd(&["GET", "k"]), bulk("v"));
}

#[test]
fn select_inside_a_script_moves_only_the_script() {
    let srv = common::server();
    let mut c = raw(&srv);
    assert_eq!(
        eval(&mut c, "redis.call('select', 3) return redis.call('set', 'k', 'db3')", &[], &[]),
        Value::Simple(b"OK".to_vec())
    );
    assert_eq!(c.cmd(&["GET", "k"]), Value::Bulk(None));
    c.cmd(&["SELECT", "3"]);
    assert_eq!(c.cmd(&["GET", "k"]), bulk("db3"));
    assert_eq!(
        eval(&mut c, "return redis.call('get', 'k')", &[], &[]),
        bulk("db3"),
        "scripts start in the caller's db"
    );
}

#[test]
fn time_is_frozen_while_a_script_runs() {
    let srv = common::server();
    let mut c = raw(&srv);
    let script = "redis.call('set', 'e', 'v', 'px', 1) local x = 0 for i = 1, 3000000 do x = x + i end \
                  local t1 = redis.call('time') return {redis.call('get', 'e'), redis.call('pttl', 'e')}";
    assert_eq!(eval(&mut c, script, &[], &[]), arr(vec![bulk("v"), Value::Int(1)]));
    thread::sleep(Duration::from_millis(5));
    assert_eq!(c.cmd(&["GET", "e"]), Value::Bulk(None));
}

#[test]
fn publish_from_a_script_reaches_subscribers() {
    let srv = common::server();
    let mut sub_con = common::conn(&srv);
    let mut ps = sub_con.as_pubsub();
    ps.subscribe("events").unwrap();
    ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut c = raw(&srv);
    assert_eq!(
        eval(&mut c, "local n = redis.call('publish', KEYS[1], ARGV[1]) return n", &["events"], &["hello"]),
        Value::Int(1)
    );
    let m = ps.get_message().unwrap();
    assert_eq!(m.get_channel_name(), "events");
    assert_eq!(m.get_payload::<String>().unwrap(), "hello");
}

#[test]
fn eval_inside_multi() {
    let srv = common::server();
    let mut c = raw(&srv);
    c.cmd(&["MULTI"]);
    assert_eq!(c.cmd(&["EVAL", "return redis.call('incr', KEYS[1])", "1", "n"]), Value::Simple(b"QUEUED".to_vec()));
    c.cmd(&["EVAL", "return redis.call('incr', KEYS[1])", "1", "n"]);
    assert_eq!(c.cmd(&["EXEC"]), arr(vec![Value::Int(1), Value::Int(2)]));
}

#[test]
fn functions_load_and_call() {
    let srv = common::server();
    let mut c = raw(&srv);
    let lib = "#!lua name=counters\n\
               local function incr(keys, args) return redis.call('incrby', keys[1], args[1]) end\n\
               redis.register_function('incr_by', incr)\n\
               redis.register_function{function_name='peek', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}, description='read only'}";
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", lib]), bulk("counters"));
    assert_eq!(c.cmd(&["FCALL", "incr_by", "1", "n", "5"]), Value::Int(5));
    assert_eq!(c.cmd(&["FCALL_RO", "peek", "1", "n"]), bulk("5"));
    assert_eq!(
        c.cmd(&["FCALL_RO", "incr_by", "1", "n", "1"]),
        err("ERR Can not execute a script with write flag using *_ro command.")
    );
    assert_eq!(c.cmd(&["FCALL", "nope", "0"]), err("ERR Function not found"));
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", lib]), err("ERR Library 'counters' already exists"));
    assert_eq!(c.cmd(&["FUNCTION", "LOAD", "REPLACE", lib]), bulk("counters"));
    let listed = c.cmd(&["FUNCTION", "LIST"]);
    let text = super::common::resp::pretty(&listed);
    assert!(text.contains("incr_by") && text.contains("read only") && text.contains("no-writes"), "{text}");
    // A dump restores into a fresh server.
    let Value::Bulk(Some(dump)) = c.cmd(&["FUNCTION", "DUMP"]) else { panic!("dump") };
    let srv2 = common::server();
    let mut c2 = raw(&srv2);
    c2.send(&[b"FUNCTION".to_vec(), b"RESTORE".to_vec(), dump]);
    assert_eq!(c2.read().unwrap(), Value::Simple(b"OK".to_vec()));
    assert_eq!(c2.cmd(&["FCALL", "incr_by", "1", "n", "2"]), Value::Int(2));
    assert_eq!(c.cmd(&["FUNCTION", "DELETE", "counters"]), Value::Simple(b"OK".to_vec()));
    assert_eq!(c.cmd(&["FCALL", "incr_by", "1", "n", "5"]), err("ERR Function not found"));
}

#[test]
fn function_dump_restores_into_redis_and_back() {
    let Some(oracle) = common::oracle::Oracle::start() else { return };
    let srv = common::server();
    let mut ours = raw(&srv);
    let mut theirs = RawConn::connect(oracle.port);
    let lib = "#!lua name=dumped\nredis.register_function('dumped_f', function() return 'from a dump, long enough to be compressed by redis' end)";
    ours.cmd(&["FUNCTION", "LOAD", lib]);
    theirs.cmd(&["FUNCTION", "LOAD", lib.replace("dumped", "theirs").as_str()]);
    let Value::Bulk(Some(our_dump)) = ours.cmd(&["FUNCTION", "DUMP"]) else { panic!("dump") };
    let Value::Bulk(Some(their_dump)) = theirs.cmd(&["FUNCTION", "DUMP"]) else { panic!("dump") };
    theirs.send(&[b"FUNCTION".to_vec(), b"RESTORE".to_vec(), our_dump]);
    assert_eq!(theirs.read().unwrap(), Value::Simple(b"OK".to_vec()), "redis accepts our payload");
    ours.send(&[b"FUNCTION".to_vec(), b"RESTORE".to_vec(), their_dump]);
    assert_eq!(ours.read().unwrap(), Value::Simple(b"OK".to_vec()), "we accept redis's (LZF) payload");
    assert_eq!(ours.cmd(&["FCALL", "theirs_f", "0"]), bulk("from a dump, long enough to be compressed by redis"));
    assert_eq!(theirs.cmd(&["FCALL", "dumped_f", "0"]), bulk("from a dump, long enough to be compressed by redis"));
}

/// Runs `EVAL script 0` on `c` in a thread; returns the reply.
fn eval_in_thread(mut c: RawConn, script: &'static str) -> thread::JoinHandle<(RawConn, Value)> {
    thread::spawn(move || {
        c.set_read_timeout(Duration::from_secs(30));
        let v = c.cmd(&["EVAL", script, "0"]);
        (c, v)
    })
}

/// Polls `c` with PING until it answers BUSY.
fn wait_busy(c: &mut RawConn) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let v = c.cmd(&["PING"]);
        if matches!(&v, Value::Error(e) if e.starts_with(b"BUSY")) || Instant::now() > deadline {
            return v;
        }
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn script_kill_stops_a_runaway_script() {
    let srv = common::server();
    let mut admin = raw(&srv);
    admin.cmd(&["CONFIG", "SET", "lua-time-limit", "100"]);
    let runner = raw(&srv);
    let mut other = raw(&srv);
    assert_eq!(other.cmd(&["SCRIPT", "KILL"]), err("NOTBUSY No scripts in execution right now."));
    let h = eval_in_thread(runner, "while true do end");
    assert_eq!(
        wait_busy(&mut other),
        err("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
    );
    assert_eq!(
        other.cmd(&["FUNCTION", "KILL"]),
        err("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.")
    );
    assert_eq!(other.cmd(&["SCRIPT", "KILL"]), Value::Simple(b"OK".to_vec()));
    let (mut runner, reply) = h.join().unwrap();
    assert_eq!(reply, err_with_sha("ERR Script killed by user with SCRIPT KILL...", "while true do end", 1));
    assert_eq!(other.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    assert_eq!(runner.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()), "the killed script's caller stays connected");
    // pcall cannot swallow the kill.
    let h = eval_in_thread(runner, "while true do pcall(function() while true do end end) end");
    wait_busy(&mut other);
    assert_eq!(other.cmd(&["SCRIPT", "KILL"]), Value::Simple(b"OK".to_vec()));
    let (_, reply) = h.join().unwrap();
    assert!(matches!(&reply, Value::Error(e) if e.starts_with(b"ERR Script killed by user")), "{reply:?}");
    assert_eq!(other.cmd(&["SET", "after", "1"]), Value::Simple(b"OK".to_vec()));
}

/// Regression: a connection opened while a script is busy used to wait for
/// the core lock before its first command, so `redis-cli SCRIPT KILL` hung.
#[test]
fn a_connection_opened_during_a_busy_script_can_kill_it() {
    let srv = common::server();
    let mut admin = raw(&srv);
    admin.cmd(&["CONFIG", "SET", "lua-time-limit", "100"]);
    let h = eval_in_thread(raw(&srv), "while true do end");
    assert!(matches!(wait_busy(&mut admin), Value::Error(e) if e.starts_with(b"BUSY")));
    let mut fresh = raw(&srv);
    assert!(matches!(fresh.cmd(&["GET", "k"]), Value::Error(e) if e.starts_with(b"BUSY")));
    assert_eq!(fresh.cmd(&["SCRIPT", "KILL"]), Value::Simple(b"OK".to_vec()));
    let (_, reply) = h.join().unwrap();
    assert!(matches!(&reply, Value::Error(e) if e.starts_with(b"ERR Script killed by user")), "{reply:?}");
    // Registered on its first command after the script: it shows in CLIENT LIST.
    assert_eq!(fresh.cmd(&["CLIENT", "SETNAME", "late"]), Value::Simple(b"OK".to_vec()));
    let Value::Bulk(Some(list)) = fresh.cmd(&["CLIENT", "LIST"]) else { panic!("CLIENT LIST") };
    assert!(String::from_utf8_lossy(&list).contains("name=late"));
}

/// While a script is busy, commands flagged `allow-busy` (AUTH, HELLO,
/// MULTI, DISCARD, WATCH…) still run, and every other command is refused
/// after the checks Redis makes first (unknown command, NOAUTH), as on Redis:
/// so a client library can still connect, authenticate and send SCRIPT KILL.
#[test]
fn allow_busy_commands_run_while_a_script_is_busy() {
    let srv = common::server();
    let ok = || Value::Simple(b"OK".to_vec());
    let busy = || err("BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.");
    let mut admin = raw(&srv);
    admin.cmd(&["CONFIG", "SET", "lua-time-limit", "100"]);
    let mut runner = raw(&srv);
    // Both registered (so authenticated) before the password is set.
    assert_eq!(runner.cmd(&["PING"]), Value::Simple(b"PONG".to_vec()));
    assert_eq!(admin.cmd(&["CONFIG", "SET", "requirepass", "pw"]), ok());
    let h = eval_in_thread(runner, "while true do end");
    assert_eq!(wait_busy(&mut admin), busy());

    let mut fresh = raw(&srv);
    assert_eq!(fresh.cmd(&["GET", "k"]), err("NOAUTH Authentication required."));
    let Value::Map(hello) = fresh.cmd(&["HELLO", "3", "AUTH", "default", "pw", "SETNAME", "late"]) else {
        panic!("HELLO answers its map while the script is busy")
    };
    assert!(hello.contains(&(Value::Bulk(Some(b"proto".to_vec())), Value::Int(3))), "{hello:?}");
    assert_eq!(fresh.cmd(&["PING"]), busy());
    assert!(matches!(fresh.cmd(&["NOSUCHCMD"]), Value::Error(e) if e.starts_with(b"ERR unknown command 'NOSUCHCMD'")));
    assert_eq!(fresh.cmd(&["MULTI"]), ok());
    assert_eq!(fresh.cmd(&["SET", "k", "1"]), busy());
    assert_eq!(fresh.cmd(&["WATCH", "k"]), err("ERR WATCH inside MULTI is not allowed"));
    assert_eq!(fresh.cmd(&["DISCARD"]), ok());
    assert_eq!(fresh.cmd(&["WATCH", "k"]), ok(), "WATCH registered during the busy script");
    assert_eq!(fresh.cmd(&["SHUTDOWN"]), busy(), "only SHUTDOWN NOSAVE is allowed");

    assert_eq!(admin.cmd(&["SCRIPT", "KILL"]), ok());
    let (_, reply) = h.join().unwrap();
    assert!(matches!(&reply, Value::Error(e) if e.starts_with(b"ERR Script killed by user")), "{reply:?}");

    // The WATCH taken while busy is live: another client's write aborts EXEC.
    assert_eq!(admin.cmd(&["SET", "k", "2"]), ok());
    assert_eq!(fresh.cmd(&["MULTI"]), ok());
    assert_eq!(fresh.cmd(&["SET", "k", "3"]), Value::Simple(b"QUEUED".to_vec()));
    assert_eq!(fresh.cmd(&["EXEC"]), Value::Null);
    // The client registered from the hook is listed once, with its name.
    let Value::Verbatim(list) = fresh.cmd(&["CLIENT", "LIST"]) else { panic!("CLIENT LIST in RESP3") };
    assert_eq!(String::from_utf8_lossy(&list).matches("name=late").count(), 1);
}

#[test]
fn function_kill_and_busy_wording_for_functions() {
    let srv = common::server();
    let mut admin = raw(&srv);
    admin.cmd(&["CONFIG", "SET", "busy-reply-threshold", "100"]);
    admin.cmd(&[
        "FUNCTION",
        "LOAD",
        "#!lua name=spin\nredis.register_function('spin', function() while true do end end)",
    ]);
    let mut runner = raw(&srv);
    let mut other = raw(&srv);
    other.cmd(&["PING"]);
    let h = thread::spawn(move || {
        runner.set_read_timeout(Duration::from_secs(30));
        runner.cmd(&["FCALL", "spin", "0"])
    });
    assert_eq!(
        wait_busy(&mut other),
        err("BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.")
    );
    assert_eq!(other.cmd(&["FUNCTION", "KILL"]), Value::Simple(b"OK".to_vec()));
    let reply = h.join().unwrap();
    assert_eq!(reply, err("ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2."));
}

#[test]
fn a_script_that_wrote_is_unkillable_until_shutdown_nosave() {
    let srv = common::server();
    let mut admin = raw(&srv);
    admin.cmd(&["CONFIG", "SET", "lua-time-limit", "100"]);
    let runner = raw(&srv);
    let mut other = raw(&srv);
    // Make sure both connections are fully set up before the script starts.
    other.cmd(&["PING"]);
    let h = thread::spawn(move || {
        let mut runner = runner;
        runner.set_read_timeout(Duration::from_secs(30));
        runner.send(&[
            b"EVAL".to_vec(),
            b"redis.call('set', 'written', '1') while true do end".to_vec(),
            b"0".to_vec(),
        ]);
        let reply = runner.read();
        (reply, runner.last_raw.clone())
    });
    wait_busy(&mut other);
    assert_eq!(
        other.cmd(&["SCRIPT", "KILL"]),
        err("UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
    );
    // As on Redis, the server goes away without answering either client.
    other.send(&[b"SHUTDOWN".to_vec(), b"NOSAVE".to_vec()]);
    assert_eq!(other.read(), None);
    assert!(other.last_raw.is_empty(), "SHUTDOWN NOSAVE answered {:?}", String::from_utf8_lossy(&other.last_raw));
    let (reply, raw) = h.join().unwrap();
    assert_eq!(reply, None, "the stopped script's client was answered");
    assert!(raw.is_empty());
    srv.join();
}

#[test]
fn lua_libraries_are_available() {
    let srv = common::server();
    let mut c = raw(&srv);
    assert_eq!(eval(&mut c, "return cjson.encode({a=1})", &[], &[]), bulk("{\"a\":1}"));
    assert_eq!(eval(&mut c, "return cjson.decode('[1,2,3]')[2]", &[], &[]), Value::Int(2));
    assert_eq!(eval(&mut c, "return bit.band(7, 3)", &[], &[]), Value::Int(3));
    assert_eq!(eval(&mut c, "return cmsgpack.unpack(cmsgpack.pack('x'))", &[], &[]), bulk("x"));
    assert_eq!(eval(&mut c, "return struct.unpack('>I2', struct.pack('>I2', 513))", &[], &[]), Value::Int(513));
}

#[test]
fn a_script_write_aborts_a_watching_transaction() {
    let srv = common::server();
    let mut a = raw(&srv);
    let mut b = raw(&srv);
    a.cmd(&["SET", "balance", "10"]);
    a.cmd(&["WATCH", "balance"]);
    eval(&mut b, "return redis.call('incrby', KEYS[1], 5)", &["balance"], &[]);
    a.cmd(&["MULTI"]);
    a.cmd(&["SET", "balance", "0"]);
    assert_eq!(a.cmd(&["EXEC"]), Value::Agg(b'*', None), "the script's write invalidated the WATCH");
    assert_eq!(a.cmd(&["GET", "balance"]), bulk("15"));
    // A read-only script does not.
    a.cmd(&["WATCH", "balance"]);
    eval(&mut b, "return redis.call('get', KEYS[1])", &["balance"], &[]);
    a.cmd(&["MULTI"]);
    a.cmd(&["SET", "balance", "0"]);
    assert_eq!(a.cmd(&["EXEC"]), arr(vec![Value::Simple(b"OK".to_vec())]));
}

#[test]
fn keyspace_events_from_scripts() {
    let srv = common::server();
    let mut admin = raw(&srv);
    admin.cmd(&["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let mut sub_con = common::conn(&srv);
    let mut ps = sub_con.as_pubsub();
    ps.psubscribe("__keyspace@0__:*").unwrap();
    ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    eval(&mut admin, "redis.call('set', KEYS[1], 'v') redis.call('del', KEYS[1]) return 1", &["evk"], &[]);
    let first = ps.get_message().unwrap();
    let second = ps.get_message().unwrap();
    assert_eq!(first.get_channel_name(), "__keyspace@0__:evk");
    assert_eq!(first.get_payload::<String>().unwrap(), "set");
    assert_eq!(second.get_payload::<String>().unwrap(), "del");
}

/// `INFO scriptstats` tells, per cached script, how often it ran and how its
/// time splits between Lua and the commands it called.
#[test]
fn info_scriptstats_splits_time_per_script() {
    let srv = common::server();
    let mut c = raw(&srv);
    let body = "redis.call('set', KEYS[1], ARGV[1]); return redis.call('get', KEYS[1])";
    for i in 0..5 {
        c.cmd(&["EVAL", body, "1", "k", &i.to_string()]);
    }
    c.cmd(&["EVAL", "return redis.call('nosuchcmd')", "0"]);
    let Value::Bulk(Some(info)) = c.cmd(&["INFO", "scriptstats"]) else { panic!("INFO") };
    let info = String::from_utf8(info).unwrap();
    let sha = rlockd_sha(body);
    let line = info.lines().find(|l| l.starts_with(&format!("script_{sha}:"))).expect("line for the script");
    assert!(line.contains(":calls=5,errors=0,"), "{line}");
    assert!(line.contains(",redis_calls=10,redis_calls_per_call=2.00,"), "{line}");
    assert!(info.contains(",errors=1,"), "{info}");
    // redis.call's time is the commands' own, as `INFO commandstats` counts
    // it: whole microseconds per call there, a rounded sum here.
    let field = |line: &str, name: &str| -> u64 {
        let v = line.split([',', ':']).find_map(|f| f.strip_prefix(&format!("{name}="))).expect(name);
        v.parse().expect("integer")
    };
    let redis_usec = field(line, "redis_usec");
    let Value::Bulk(Some(stats)) = c.cmd(&["INFO", "commandstats"]) else { panic!("INFO") };
    let stats = String::from_utf8(stats).unwrap();
    let usec = |cmd: &str| field(stats.lines().find(|l| l.starts_with(&format!("cmdstat_{cmd}:"))).expect(cmd), "usec");
    let commands = usec("set") + usec("get");
    assert!((commands..=commands + 11).contains(&redis_usec), "redis_usec={redis_usec}, set+get usec={commands}");
    c.cmd(&["CONFIG", "RESETSTAT"]);
    let Value::Bulk(Some(info)) = c.cmd(&["INFO", "scriptstats"]) else { panic!("INFO") };
    assert_eq!(String::from_utf8(info).unwrap(), "# Scriptstats\r\n");
}

fn rlockd_sha(body: &str) -> String {
    let mut h = sha1_smol::Sha1::new();
    h.update(body.as_bytes());
    h.digest().to_string()
}

/// `INFO errorstats`, `total_error_replies` and the call counts of SET and
/// EVAL after a script's writes refused under `maxmemory` and
/// `min-replicas-to-write`, from the server on `port`.
fn refused_script_write_stats(port: u16) -> Vec<String> {
    let mut c = RawConn::connect(port);
    let mut out = Vec::new();
    let stats = |c: &mut RawConn, out: &mut Vec<String>| {
        let text = |v: Value| match v {
            Value::Bulk(Some(b)) => String::from_utf8_lossy(&b).into_owned(),
            other => panic!("INFO answered {other:?}"),
        };
        let cmds = text(c.cmd(&["INFO", "commandstats"]));
        // Sorted: Redis lists commands in its hash table's order.
        let mut lines: Vec<String> = cmds
            .lines()
            .filter(|l| l.starts_with("cmdstat_set:") || l.starts_with("cmdstat_eval:"))
            .map(|l| l.split(',').filter(|f| !f.starts_with("usec")).collect::<Vec<_>>().join(","))
            .collect();
        lines.sort();
        out.extend(lines);
        let errors = text(c.cmd(&["INFO", "errorstats"]));
        out.extend(errors.lines().filter(|l| l.starts_with("errorstat_")).map(str::to_string));
        let info = text(c.cmd(&["INFO", "stats"]));
        out.extend(info.lines().filter(|l| l.starts_with("total_error_replies:")).map(str::to_string));
    };
    for (param, value) in [("maxmemory", "1"), ("min-replicas-to-write", "1")] {
        c.cmd(&["CONFIG", "RESETSTAT"]);
        c.cmd(&["CONFIG", "SET", param, value]);
        let err = c.cmd(&["EVAL", "return redis.call('set','x','y')", "1", "x"]);
        out.push(format!("{err:?}"));
        let err = c.cmd(&["EVAL", "return redis.pcall('set','x','y')", "1", "x"]);
        out.push(format!("{err:?}"));
        c.cmd(&["CONFIG", "SET", param, "0"]);
        stats(&mut c, &mut out);
    }
    out
}

#[test]
fn a_refused_script_write_counts_under_its_own_error_prefix() {
    let srv = common::server();
    let ours = refused_script_write_stats(srv.addr().port());
    assert!(ours.contains(&"errorstat_OOM:count=2".to_string()), "{ours:?}");
    assert!(ours.contains(&"errorstat_NOREPLICAS:count=2".to_string()), "{ours:?}");
    assert!(!ours.iter().any(|l| l.starts_with("errorstat_ERR")), "{ours:?}");
    let Some(oracle) = common::oracle::Oracle::start() else { return };
    assert_eq!(ours, refused_script_write_stats(oracle.port), "rlockd, then redis-server");
}

/// A script's KEYS and ARGV tables are refilled run after run inside the VM
/// (`lua/vm/tables.c`): strings that did not change are kept, new ones are
/// stored with the collector's write barrier. Runs that make garbage keep
/// the incremental collector stepping through every phase while the tables
/// are refilled; a missing barrier would let it free a new argument still in
/// the table, and a later run would read freed memory instead of its own
/// arguments. Every run here must see exactly the arguments it was given,
/// through `redis.call` as well.
#[test]
fn keys_and_argv_survive_the_collector() {
    let srv = common::server();
    let mut c = raw(&srv);
    let script = "local junk = {} for i = 1, 40 do junk[i] = string.rep(ARGV[1], 3) .. i end \
                  redis.call('set', KEYS[1], ARGV[1] .. '|' .. ARGV[2]) \
                  return {#KEYS, #ARGV, KEYS[1], KEYS[2] or '', ARGV[1], ARGV[2], redis.call('get', KEYS[1])}";
    let sha = match c.cmd(&["SCRIPT", "LOAD", script]) {
        Value::Bulk(Some(b)) => String::from_utf8(b).expect("sha"),
        other => panic!("SCRIPT LOAD: {other:?}"),
    };
    for i in 0..3000 {
        let key = format!("gc-key-{i}");
        let arg = format!("arg-{i}-{}", "x".repeat(i % 50));
        // Every third run has a second key and a constant second argument
        // (kept from the previous run), the others one key (a slot cleared).
        let (keys, second) = if i % 3 == 0 {
            (vec![key.as_str(), "gc-other"], "same".to_string())
        } else {
            (vec![key.as_str()], format!("c{i}"))
        };
        let n = keys.len().to_string();
        let mut argv = vec!["EVALSHA", sha.as_str(), n.as_str()];
        argv.extend_from_slice(&keys);
        argv.push(&arg);
        argv.push(&second);
        let expected = arr(vec![
            Value::Int(keys.len() as i64),
            Value::Int(2),
            bulk(&key),
            bulk(if keys.len() == 2 { "gc-other" } else { "" }),
            bulk(&arg),
            bulk(&second),
            bulk(&format!("{arg}|{second}")),
        ]);
        assert_eq!(c.cmd(&argv), expected, "run {i}");
    }
    // The collector really ran: the heap stays bounded although every run
    // made about 40 new strings.
    let info = match c.cmd(&["INFO", "memory"]) {
        Value::Bulk(Some(b)) => String::from_utf8(b).expect("info"),
        other => panic!("INFO: {other:?}"),
    };
    let lua: u64 = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory_lua:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory_lua");
    assert!(lua < 4 << 20, "used_memory_lua {lua}");
}
