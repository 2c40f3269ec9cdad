//! The `redis` Lua library and Redis's replacements of `pcall` and
//! `math.random`, as raw C functions (Redis 7.0 `script_lua.c` semantics:
//! the same checks, in the same order, with the same error texts).

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use mlua::ffi;

use super::convert::{push_reply, push_slots};
use super::host::Interrupt;
use super::lua::{
    cstr, get_field_raw, push_bytes, push_error_table, push_where_msg, raise, set_field_raw, set_fn, set_num, State,
};
use super::run::current;
use crate::protocol::Reply;

/// Pushes `{err=...}` and raises it.
unsafe fn raise_err(l: State, msg: &'static str) -> ! {
    push_error_table(l, msg.as_bytes());
    raise(l)
}

/// Words of the running script's server that differ (the default
/// profile's outside a run): Valkey calls the library `server` and leaves
/// out "redis lib"; Redis 7.2 reworded two errors.
struct Words {
    valkey: bool,
    v72: bool,
}

impl Words {
    fn of(p: crate::version::Profile) -> Words {
        Words { valkey: p.is_valkey(), v72: p.at_least(7, 2, 0) }
    }

    /// [`Words::of`] the running script's server, for a callback that holds
    /// no reference from `current` (the default profile's outside a run).
    unsafe fn now() -> Words {
        Words::of(current().map_or_else(crate::version::Profile::default, |r| r.server))
    }
    fn no_args(&self) -> &'static str {
        match self.valkey {
            true => "Please specify at least one argument for this call",
            false => "Please specify at least one argument for this redis lib call",
        }
    }
    fn bad_args(&self) -> &'static str {
        match self.valkey {
            true => "Command arguments must be strings or integers",
            false => "Lua redis lib command arguments must be strings or integers",
        }
    }
    /// `name` (`redis.x()`, or `server.x()` in Valkey) then `rest`.
    fn named(&self, redis: &'static str, server: &'static str) -> &'static str {
        if self.valkey {
            server
        } else {
            redis
        }
    }
}

extern "C" {
    /// Reads arguments 1..n of the running C function in one call: a
    /// string's bytes, or a number's value (null pointer); returns 0, or
    /// i + 1 for the first argument i that is neither (lua/vm/args.c).
    fn rlockd_lua_call_args(
        l: State,
        n: c_int,
        ptrs: *mut *const std::ffi::c_char,
        lens: *mut usize,
        nums: *mut ffi::lua_Number,
    ) -> c_int;
}

/// Calls with at most this many arguments are read in one call into the VM
/// (more go through the C API, one argument at a time).
const READ_AT_ONCE: usize = 32;

/// Collects the call arguments (`luaArgsToRedisArgv`): numbers become
/// `%.17g` (Redis 7.2 on: `num::fmt_short_into`), strings are taken as
/// they are, anything else is refused. The
/// arguments are written one after the other into `args.buf` and handed
/// out as slices of it (see [`CallArgs`](super::run::CallArgs)).
/// `short`: numbers as Redis 7.2 writes them (an integer, else the
/// shortest digits: `num::fmt_short_into`).
unsafe fn collect_args(l: State, argc: c_int, args: &mut super::run::CallArgs, short: bool) -> bool {
    // Emptied after the previous call (`CallArgs::clear`).
    debug_assert!(args.argv.is_empty());
    let buf = &mut args.buf;
    let push_number = |buf: &mut bytes::BytesMut, n: ffi::lua_Number| {
        let mut num = [0u8; 64];
        let len = match short {
            // Redis 7.2: a whole number (minus zero too) as an integer,
            // else the shortest digits.
            true if n == 0.0 => crate::num::fmt_short_into(0.0, &mut num),
            true => crate::num::fmt_short_into(n, &mut num),
            false => crate::num::fmt_g17_into(n, &mut num),
        };
        buf.extend_from_slice(&num[..len]);
    };
    let n = argc as usize;
    if n <= READ_AT_ONCE {
        let mut ptrs = std::mem::MaybeUninit::<[*const std::ffi::c_char; READ_AT_ONCE]>::uninit();
        let mut lens = std::mem::MaybeUninit::<[usize; READ_AT_ONCE]>::uninit();
        let mut nums = std::mem::MaybeUninit::<[ffi::lua_Number; READ_AT_ONCE]>::uninit();
        let (p, ln, nm) = (ptrs.as_mut_ptr().cast(), lens.as_mut_ptr().cast::<usize>(), nums.as_mut_ptr().cast());
        if rlockd_lua_call_args(l, argc, p, ln, nm) != 0 {
            buf.clear();
            return false;
        }
        // The helper wrote slots 0..n of each array it was asked to fill.
        let p: *const *const std::ffi::c_char = p;
        let lens = std::slice::from_raw_parts_mut(ln, n);
        // Room for every string and a formatted number (at most 24 bytes)
        // at once: one capacity check for the call.
        let room: usize = (0..n).map(|i| if (*p.add(i)).is_null() { 24 } else { lens[i] }).sum();
        buf.reserve(room);
        for (i, len) in lens.iter_mut().enumerate() {
            let ptr = *p.add(i);
            if ptr.is_null() {
                let before = buf.len();
                push_number(buf, *nm.cast::<ffi::lua_Number>().add(i));
                *len = buf.len() - before;
            } else {
                buf.extend_from_slice(std::slice::from_raw_parts(ptr.cast::<u8>(), *len));
            }
        }
        split_args(buf, lens, &mut args.argv);
    } else {
        args.ends.clear();
        for j in 1..=argc {
            let before = buf.len();
            match ffi::lua_type(l, j) {
                ffi::LUA_TNUMBER => push_number(buf, ffi::lua_tonumber(l, j)),
                ffi::LUA_TSTRING => buf.extend_from_slice(super::lua::to_bytes(l, j).unwrap_or(b"")),
                _ => {
                    buf.clear();
                    return false;
                }
            }
            args.ends.push(buf.len() - before);
        }
        split_args(buf, &args.ends, &mut args.argv);
    }
    true
}

/// Hands out `buf`'s bytes as one `Bytes` per length in `lens` (slices of
/// one shared buffer; the last argument is the buffer itself).
fn split_args(buf: &mut bytes::BytesMut, lens: &[usize], argv: &mut Vec<bytes::Bytes>) {
    let mut all = buf.split().freeze();
    argv.reserve(lens.len());
    if let Some((_, init)) = lens.split_last() {
        for &len in init {
            argv.push(all.split_to(len));
        }
        argv.push(all);
    }
}

/// A reply pushed as more than one level of Lua values.
fn nests(r: &Reply) -> bool {
    matches!(
        r,
        Reply::Array(_)
            | Reply::Push(_)
            | Reply::Set(_)
            | Reply::Map(_)
            | Reply::AfterPushes(..)
            | Reply::ThenPushes(..)
    )
}

/// `redis.call` / `redis.pcall` (`luaRedisGenericCommand`).
unsafe fn generic_command(l: State, raise_error: bool) -> c_int {
    let Some(run) = current() else { raise_err(l, "redis.call/pcall can only be called inside a script invocation") };
    let argc = ffi::lua_gettop(l);
    if argc == 0 {
        push_error_table(l, Words::of(run.server).no_args().as_bytes());
        if raise_error {
            raise(l);
        }
        return 1;
    }
    // The run's arguments (a script cannot run two calls at once), emptied
    // again before any error is raised.
    let collected = collect_args(l, argc, run.args, run.server.at_least(7, 2, 0));
    ffi::lua_pop(l, argc);
    let (is_error, panicked) = match collected {
        false => {
            push_error_table(l, Words::of(run.server).bad_args().as_bytes());
            (true, false)
        }
        true => match catch_unwind(AssertUnwindSafe(|| run.call())) {
            // Room for the whole reply is made before anything is pushed; a
            // stack that cannot grow that far gets Redis's stack-limit error
            // instead of writes past its end (CVE-2021-32626). A C function
            // always has LUA_MINSTACK (20) free slots, more than a reply
            // that is not an aggregate needs (3).
            Ok(Ok(reply)) if nests(&reply) && ffi::lua_checkstack(l, push_slots(&reply)) == 0 => {
                push_error_table(l, b"ERR reached lua stack limit");
                (true, false)
            }
            Ok(Ok(reply)) => {
                push_reply(l, &reply, run.resp3);
                (matches!(reply, Reply::Error(_)), false)
            }
            Ok(Err(refused)) => {
                push_error_table(l, refused.message(run.server.is_valkey()).as_bytes());
                ffi::lua_pushboolean(l, 1);
                set_field_raw(l, -2, "ignore_error_stats_update");
                (true, false)
            }
            Err(payload) => {
                run.panic = Some(payload);
                push_error_table(l, b"ERR internal error while running a command from script");
                (true, true)
            }
        },
    };
    run.args.clear();
    if (raise_error && is_error) || panicked {
        raise(l);
    }
    1
}

unsafe extern "C-unwind" fn redis_call(l: State) -> c_int {
    generic_command(l, true)
}

unsafe extern "C-unwind" fn redis_pcall(l: State) -> c_int {
    generic_command(l, false)
}

/// The root message of an error raised by an `mlua` callback (a Rust
/// function registered with the safe API), if the value at `idx` is one.
pub(crate) unsafe fn mlua_error_text(l: State, idx: c_int) -> Option<String> {
    if ffi::lua_type(l, idx) != ffi::LUA_TUSERDATA {
        return None;
    }
    let lua = mlua::Lua::get_or_init_from_ptr(l);
    ffi::lua_pushvalue(l, idx);
    let v = lua.exec_raw_lua(|raw| if raw.state() == l { Some(raw.pop_value()) } else { None });
    match v {
        None => {
            ffi::lua_pop(l, 1);
            None
        }
        Some(mlua::Value::Error(e)) => {
            let mut e: &mlua::Error = &e;
            loop {
                match e {
                    mlua::Error::CallbackError { cause, .. } => e = cause,
                    mlua::Error::RuntimeError(m) => return Some(m.clone()),
                    other => return Some(other.to_string()),
                }
            }
        }
        Some(_) => None,
    }
}

/// Redis's `pcall`: like Lua's, but an error table `{err=...}` is returned
/// as its message string.
unsafe extern "C-unwind" fn lua_pcall_redis(l: State) -> c_int {
    let argc = ffi::lua_gettop(l);
    if argc == 0 {
        ffi::lua_pushboolean(l, 0);
        push_bytes(l, b"attempt to call a boolean value");
        return 2;
    }
    ffi::lua_pushboolean(l, 1);
    ffi::lua_insert(l, 1);
    if ffi::lua_pcall(l, argc - 1, ffi::LUA_MULTRET, 0) != 0 {
        ffi::lua_remove(l, 1);
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            ffi::lua_getfield(l, -1, cstr!("err"));
            if ffi::lua_isstring(l, -1) != 0 {
                ffi::lua_replace(l, -2);
            }
        } else if let Some(msg) = mlua_error_text(l, -1) {
            push_bytes(l, msg.as_bytes());
            drop(msg);
            ffi::lua_replace(l, -2);
        }
        ffi::lua_pushboolean(l, 0);
        ffi::lua_insert(l, 1);
    }
    ffi::lua_gettop(l)
}

/// `redis.sha1hex(s)`.
unsafe extern "C-unwind" fn sha1hex(l: State) -> c_int {
    if ffi::lua_gettop(l) != 1 {
        raise_err(l, "wrong number of arguments");
    }
    let hex = sha1_hex(super::lua::to_bytes(l, 1).unwrap_or(b""));
    push_bytes(l, hex.as_bytes());
    1
}

/// Lower-case hex SHA1 of `b` (script ids, `redis.sha1hex`).
pub fn sha1_hex(b: &[u8]) -> String {
    sha1_smol::Sha1::from(b).digest().to_string()
}

/// `redis.error_reply(msg)`: `{err=msg}` with an `ERR` code unless `msg`
/// starts with `-CODE`.
unsafe extern "C-unwind" fn error_reply(l: State) -> c_int {
    if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
        push_error_table(l, b"wrong number or type of arguments");
        return 1;
    }
    let s = c_prefix(super::lua::to_bytes(l, -1).unwrap_or(b""));
    let mut buf = Vec::with_capacity(s.len() + 1);
    if s.first() != Some(&b'-') {
        buf.push(b'-');
    }
    buf.extend_from_slice(s);
    push_error_table(l, &buf);
    1
}

/// A string as C sees it: up to the first NUL.
fn c_prefix(b: &[u8]) -> &[u8] {
    &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]
}

/// `redis.status_reply(msg)`: `{ok=msg}`.
unsafe extern "C-unwind" fn status_reply(l: State) -> c_int {
    if ffi::lua_gettop(l) != 1 || ffi::lua_type(l, -1) != ffi::LUA_TSTRING {
        push_error_table(l, b"wrong number or type of arguments");
        return 1;
    }
    ffi::lua_createtable(l, 0, 1);
    ffi::lua_pushvalue(l, -2);
    set_field_raw(l, -2, "ok");
    1
}

/// `redis.set_repl(flags)`: validated and remembered (no replication here).
unsafe extern "C-unwind" fn set_repl(l: State) -> c_int {
    let Some(run) = current() else { raise_err(l, "redis.set_repl can only be called inside a script invocation") };
    if ffi::lua_gettop(l) != 1 {
        let w = Words::of(run.server);
        raise_err(
            l,
            match (w.valkey, w.v72) {
                (true, _) => "server.set_repl() requires one argument.",
                (false, true) => "redis.set_repl() requires one argument.",
                (false, false) => "redis.set_repl() requires two arguments.",
            },
        );
    }
    let flags = ffi::lua_tonumber(l, -1) as i32;
    if flags & !3 != 0 {
        raise_err(l, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.");
    }
    run.repl_flags = flags;
    0
}

/// `redis.acl_check_cmd(cmd, ...)`: whether the script's user may run the
/// command; unknown commands raise as in Redis.
unsafe extern "C-unwind" fn acl_check_cmd(l: State) -> c_int {
    let Some(run) = current() else {
        raise_err(l, "redis.acl_check_cmd can only be called inside a script invocation")
    };
    let argc = ffi::lua_gettop(l);
    if argc == 0 {
        raise_err(l, Words::of(run.server).no_args());
    }
    let mut args = super::run::CallArgs::default();
    let collected = collect_args(l, argc, &mut args, run.server.at_least(7, 2, 0));
    ffi::lua_pop(l, argc);
    if !collected {
        drop(args);
        raise_err(l, Words::of(run.server).bad_args());
    }
    // Dropped before anything is raised (a raise does not unwind Rust frames).
    let allowed = run.host.acl_check(&args.argv);
    drop(args);
    match allowed {
        None => raise_err(
            l,
            Words::of(run.server).named(
                "Invalid command passed to redis.acl_check_cmd()",
                "Invalid command passed to server.acl_check_cmd()",
            ),
        ),
        Some(allowed) => {
            ffi::lua_pushboolean(l, c_int::from(allowed));
            1
        }
    }
}

/// `redis.log(level, ...)`, into `tracing`.
unsafe extern "C-unwind" fn log(l: State) -> c_int {
    let argc = ffi::lua_gettop(l);
    if argc < 2 {
        raise_err(
            l,
            Words::now()
                .named("redis.log() requires two arguments or more.", "server.log() requires two arguments or more."),
        );
    }
    if ffi::lua_isnumber(l, 1) == 0 {
        raise_err(l, "First argument must be a number (log level).");
    }
    let level = ffi::lua_tonumber(l, 1) as i32;
    if !(0..=3).contains(&level) {
        raise_err(l, if Words::now().v72 { "Invalid log level." } else { "Invalid debug level." });
    }
    let mut msg = Vec::new();
    for j in 2..=argc {
        if let Some(s) = super::lua::to_bytes(l, j) {
            if j != 2 {
                msg.push(b' ');
            }
            msg.extend_from_slice(s);
        }
    }
    let text = String::from_utf8_lossy(&msg);
    match level {
        // LOG_DEBUG and LOG_VERBOSE: the binary's `debug` and `verbose` levels.
        0 => tracing::trace!(target: "rlockd::lua", "{text}"),
        1 => tracing::debug!(target: "rlockd::lua", "{text}"),
        2 => tracing::info!(target: "rlockd::lua", "{text}"),
        _ => tracing::warn!(target: "rlockd::lua", "{text}"),
    }
    0
}

/// `redis.setresp(2|3)`.
unsafe extern "C-unwind" fn setresp(l: State) -> c_int {
    let Some(run) = current() else { raise_err(l, "redis.setresp can only be called inside a script invocation") };
    if ffi::lua_gettop(l) != 1 {
        raise_err(
            l,
            Words::of(run.server)
                .named("redis.setresp() requires one argument.", "server.setresp() requires one argument."),
        );
    }
    let resp = ffi::lua_tonumber(l, 1) as i32;
    if resp != 2 && resp != 3 {
        raise_err(l, "RESP version must be 2 or 3.");
    }
    run.resp3 = resp == 3;
    0
}

/// `redis.breakpoint()`: false outside a debugging session (always here).
unsafe extern "C-unwind" fn breakpoint(l: State) -> c_int {
    ffi::lua_pushboolean(l, 0);
    1
}

/// `redis.debug(...)`: nothing outside a debugging session.
unsafe extern "C-unwind" fn debug(_l: State) -> c_int {
    0
}

/// `redis.replicate_commands()`: deprecated, always true.
unsafe extern "C-unwind" fn replicate_commands(l: State) -> c_int {
    ffi::lua_pushboolean(l, 1);
    1
}

/// Raises `msg` the way `luaL_error` does (with the caller's position).
unsafe fn raise_where(l: State, msg: &'static str) -> ! {
    push_where_msg(l, 1, msg.as_bytes());
    raise(l)
}

/// `math.random` on Redis's own PRNG (same sequence as Redis).
unsafe extern "C-unwind" fn math_random(l: State) -> c_int {
    let Some(run) = current() else { raise_where(l, "math.random can only be called inside a script invocation") };
    let max = i32::MAX as f64;
    let r = (run.rng.next() as f64 % max) / max;
    match ffi::lua_gettop(l) {
        0 => ffi::lua_pushnumber(l, r),
        1 => {
            let u = ffi::luaL_checkinteger(l, 1) as i32;
            if u < 1 {
                ffi::luaL_argerror(l, 1, cstr!("interval is empty"));
            }
            ffi::lua_pushnumber(l, (r * u as f64).floor() + 1.0);
        }
        2 => {
            let lo = ffi::luaL_checkinteger(l, 1) as i32;
            let u = ffi::luaL_checkinteger(l, 2) as i32;
            if lo > u {
                ffi::luaL_argerror(l, 2, cstr!("interval is empty"));
            }
            ffi::lua_pushnumber(l, (r * (u as f64 - lo as f64 + 1.0)).floor() + lo as f64);
        }
        _ => raise_where(l, "wrong number of arguments"),
    }
    1
}

/// `math.randomseed(n)`.
unsafe extern "C-unwind" fn math_randomseed(l: State) -> c_int {
    let Some(run) = current() else { raise_where(l, "math.randomseed can only be called inside a script invocation") };
    let seed = ffi::luaL_checkinteger(l, 1) as i32;
    run.rng.seed(seed);
    0
}

/// The registry's list of the tables that carry the version fields (the
/// `redis` table, and the loading API of a functions VM), so a change of
/// profile reaches each ([`set_profile`]).
const REG_VERSION_TABLES: &str = "rlockd.versiontables";

/// Pushes the `LOG_*` fields into the table on top, and the version
/// fields of the default profile (a VM's owner sets its own with
/// [`set_profile`]).
pub(crate) unsafe fn push_version_and_log(l: State) {
    set_fn(l, "log", log);
    set_num(l, "LOG_DEBUG", 0.0);
    set_num(l, "LOG_VERBOSE", 1.0);
    set_num(l, "LOG_NOTICE", 2.0);
    set_num(l, "LOG_WARNING", 3.0);
    set_version_fields(l, ffi::lua_gettop(l), crate::version::Profile::default());
    // Remember the table for a later change of profile.
    ffi::lua_checkstack(l, 4);
    if get_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_VERSION_TABLES) == ffi::LUA_TNIL {
        ffi::lua_pop(l, 1);
        ffi::lua_newtable(l);
        ffi::lua_pushvalue(l, -1);
        set_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_VERSION_TABLES);
    }
    ffi::lua_pushvalue(l, -2);
    ffi::lua_rawseti(l, -2, ffi::lua_objlen(l, -2) as i64 + 1);
    ffi::lua_pop(l, 1);
}

/// The version fields of `profile` in the table at `t`: Redis's
/// `REDIS_VERSION` and `REDIS_VERSION_NUM` (for Valkey, the Redis it
/// forked from), and Valkey's own `SERVER_NAME`, `VALKEY_VERSION` and
/// `VALKEY_VERSION_NUM` (nil under a Redis profile).
unsafe fn set_version_fields(l: State, t: c_int, profile: crate::version::Profile) {
    ffi::lua_checkstack(l, 4);
    let redis = profile.redis_version();
    ffi::lua_pushnumber(l, f64::from(redis.num()));
    set_field_raw(l, t, "REDIS_VERSION_NUM");
    push_bytes(l, redis.to_string().as_bytes());
    set_field_raw(l, t, "REDIS_VERSION");
    let valkey = profile.is_valkey().then(|| profile.version());
    match valkey {
        Some(_) => push_bytes(l, b"valkey"),
        None => ffi::lua_pushnil(l),
    }
    set_field_raw(l, t, "SERVER_NAME");
    match valkey {
        Some(v) => push_bytes(l, v.to_string().as_bytes()),
        None => ffi::lua_pushnil(l),
    }
    set_field_raw(l, t, "VALKEY_VERSION");
    match valkey {
        Some(v) => ffi::lua_pushnumber(l, f64::from(v.num())),
        None => ffi::lua_pushnil(l),
    }
    set_field_raw(l, t, "VALKEY_VERSION_NUM");
}

/// Sets the version fields of every table that carries them to
/// `profile`'s, and the global `server` (Valkey's name for the `redis`
/// table) in `globals` (the real globals table's index) while the profile
/// is Valkey's.
pub(crate) unsafe fn set_profile(l: State, globals: c_int, profile: crate::version::Profile) {
    ffi::lua_checkstack(l, 6);
    if get_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_VERSION_TABLES) != ffi::LUA_TNIL {
        let list = ffi::lua_gettop(l);
        for i in 1..=ffi::lua_objlen(l, list) as i64 {
            ffi::lua_rawgeti(l, list, i);
            set_version_fields(l, ffi::lua_gettop(l), profile);
            ffi::lua_pop(l, 1);
        }
    }
    ffi::lua_pop(l, 1);
    if profile.is_valkey() {
        get_field_raw(l, globals, "redis");
    } else {
        ffi::lua_pushnil(l);
    }
    set_field_raw(l, globals, "server");
    // Valkey's error handler has its own name beside Redis's (EVAL's VM).
    if get_field_raw(l, globals, "__redis__err__handler") != ffi::LUA_TNIL && profile.is_valkey() {
        set_field_raw(l, globals, "__server__err__handler");
    } else {
        ffi::lua_pop(l, 1);
        ffi::lua_pushnil(l);
        set_field_raw(l, globals, "__server__err__handler");
    }
    // cmsgpack's copyright line names the project's owner of the day.
    if get_field_raw(l, globals, "cmsgpack") == ffi::LUA_TTABLE {
        let owner: &[u8] = if profile.is_valkey() {
            b"Copyright (C) 2012, Redis Ltd."
        } else {
            b"Copyright (C) 2012, Salvatore Sanfilippo"
        };
        push_bytes(l, owner);
        set_field_raw(l, ffi::lua_gettop(l) - 1, "_COPYRIGHT");
    }
    ffi::lua_pop(l, 1);
}

/// Pushes the full `redis` table of a script engine. `eval` adds the
/// debugging helpers only `EVAL` scripts have.
pub(crate) unsafe fn push_redis_table(l: State, eval: bool) {
    ffi::lua_createtable(l, 0, 32);
    set_fn(l, "call", redis_call);
    set_fn(l, "pcall", redis_pcall);
    push_version_and_log(l);
    set_fn(l, "setresp", setresp);
    set_fn(l, "sha1hex", sha1hex);
    set_fn(l, "error_reply", error_reply);
    set_fn(l, "status_reply", status_reply);
    set_fn(l, "set_repl", set_repl);
    set_num(l, "REPL_NONE", 0.0);
    set_num(l, "REPL_AOF", 1.0);
    set_num(l, "REPL_SLAVE", 2.0);
    set_num(l, "REPL_REPLICA", 2.0);
    set_num(l, "REPL_ALL", 3.0);
    set_fn(l, "acl_check_cmd", acl_check_cmd);
    if eval {
        set_fn(l, "breakpoint", breakpoint);
        set_fn(l, "debug", debug);
        set_fn(l, "replicate_commands", replicate_commands);
    }
}

/// Installs Redis's `pcall`, `math.random` and `math.randomseed` into the
/// globals table at `g`.
pub(crate) unsafe fn install_overrides(l: State, g: c_int) {
    let g = ffi::lua_absindex(l, g);
    ffi::lua_pushcfunction(l, lua_pcall_redis);
    set_field_raw(l, g, "pcall");
    super::lua::get_field_raw(l, g, "math");
    set_fn(l, "random", math_random);
    set_fn(l, "randomseed", math_randomseed);
    ffi::lua_pop(l, 1);
}

/// The instruction-count hook: BUSY detection and `SCRIPT KILL`.
pub(crate) unsafe extern "C-unwind" fn count_hook(l: State, ar: *mut ffi::lua_Debug) {
    let Some(run) = current() else { return };
    // SAFETY: Lua passes the hook a valid activation record.
    if !ar.is_null() && unsafe { (*ar).event } == ffi::LUA_HOOKCOUNT {
        run.hook_fires += 1;
    }
    if !run.interrupts {
        return;
    }
    let stop = run.host.interrupt();
    if stop != Interrupt::Continue {
        if stop == Interrupt::Kill {
            tracing::warn!("Lua script killed by user with SCRIPT KILL.");
        }
        // From now on fire at every line, so pcall cannot swallow the kill.
        ffi::lua_sethook(l, Some(count_hook), ffi::LUA_MASKLINE, 0);
        push_error_table(l, b"Script killed by user with SCRIPT KILL...");
        raise(l);
    }
}
