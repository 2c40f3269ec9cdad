//! The four C libraries Redis 7.0 links into its Lua 5.1 — `cjson`,
//! `cmsgpack`, `struct` and `bit` — written again in Rust.
//!
//! Scripts must not be able to tell the difference, so these functions are
//! raw Lua C functions (`lua_CFunction`) working on the Lua stack exactly as
//! the originals do: same results, same stack use (so the same "stack
//! overflow" limits), and errors raised as plain Lua strings with the same
//! text and the same `chunk:line:` prefix `luaL_error` gives. mlua's safe
//! callbacks would raise userdata errors carrying Rust tracebacks instead.
//!
//! Error discipline: a library function does its work in a closure returning
//! [`Ret`]; Rust values it owns are dropped before [`run`] raises the Lua
//! error (a `longjmp`), so no Rust frame with a destructor is ever jumped
//! over. The only Lua API calls that can raise from inside a closure are
//! allocation failures, as in the C originals.

use std::ffi::{c_int, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use mlua::ffi::{self, lua_State};

pub mod bit;
pub mod cjson;
pub mod cmsgpack;
pub mod structlib;

/// Creates the globals `cjson`, `cmsgpack`, `struct` and `bit`, as Redis 7.0
/// does when it sets up its Lua interpreter.
pub fn register_all(lua: &mlua::Lua) -> mlua::Result<()> {
    let opens: [(&str, ffi::lua_CFunction); 4] =
        [("cjson", cjson::open), ("struct", structlib::open), ("cmsgpack", cmsgpack::open), ("bit", bit::open)];
    let globals = lua.globals();
    for (name, open) in opens {
        // SAFETY: each `open` is a well-formed lua_CFunction that only
        // builds and returns a table.
        let f = unsafe { lua.create_c_function(open)? };
        let t: mlua::Table = f.call(())?;
        globals.raw_set(name, t)?;
    }
    Ok(())
}

/// Why a library function fails.
pub(crate) enum Fail {
    /// `luaL_error`: the text, prefixed with the calling chunk's position.
    Msg(Vec<u8>),
    /// An error the Lua core raises by itself (no position prefix), such as
    /// "table index is nil".
    Raw(Vec<u8>),
    /// `luaL_argerror(narg, text)`: "bad argument #n to 'f' (text)".
    Arg(c_int, Vec<u8>),
    /// `luaL_typerror(narg, tname)`: "... (tname expected, got x)".
    Type(c_int, &'static CStr),
}

impl Fail {
    pub(crate) fn msg(s: impl Into<Vec<u8>>) -> Fail {
        Fail::Msg(s.into())
    }
    pub(crate) fn arg(n: c_int, s: impl Into<Vec<u8>>) -> Fail {
        Fail::Arg(n, s.into())
    }
}

/// What a library function's body returns: the number of results it left on
/// the top of the stack, or why it failed.
pub(crate) type Ret = Result<c_int, Fail>;

/// Runs a library function's body and turns a failure into a Lua error.
///
/// # Safety
/// `l` must be the state the C function was called with.
pub(crate) unsafe fn run(l: *mut lua_State, body: impl FnOnce() -> Ret) -> c_int {
    let fail = match catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(n)) => return n,
        Ok(Err(fail)) => fail,
        Err(_) => Fail::msg("internal error in Lua library"),
    };
    raise(l, fail)
}

/// Raises `fail` as a Lua error. Everything Rust owned has been dropped once
/// the message is on the Lua stack.
unsafe fn raise(l: *mut lua_State, fail: Fail) -> ! {
    if matches!(fail, Fail::Msg(_) | Fail::Raw(_)) {
        // The message does not depend on the stack, which may be full (a
        // "stack overflow" failure): the original pushes into Lua's spare
        // slots there, which Lua's API checks (on in debug builds) refuse.
        ffi::lua_settop(l, 0);
    }
    match fail {
        Fail::Msg(m) => {
            ffi::luaL_where(l, 1);
            push_bytes(l, &m);
            drop(m);
            ffi::lua_concat(l, 2);
        }
        Fail::Raw(m) => {
            push_bytes(l, &m);
            drop(m);
        }
        Fail::Arg(n, m) => {
            push_bytes(l, &m);
            drop(m);
            let text = ffi::lua_tolstring(l, -1, ptr::null_mut());
            ffi::luaL_argerror(l, n, text);
        }
        Fail::Type(n, tname) => {
            ffi::luaL_typerror(l, n, tname.as_ptr());
        }
    }
    ffi::lua_error(l)
}

// Byte-string stack helpers shared with the engine.
pub(crate) use super::lua::{push_bytes, to_bytes};

/// `luaL_checklstring`. Lua guarantees a `'\0'` after the returned bytes.
pub(crate) unsafe fn check_bytes<'a>(l: *mut lua_State, narg: c_int) -> Result<&'a [u8], Fail> {
    to_bytes(l, narg).ok_or(Fail::Type(narg, c"string"))
}

/// `luaL_checkstring` as C code sees it: the bytes up to the first `'\0'`.
pub(crate) unsafe fn check_cstr<'a>(l: *mut lua_State, narg: c_int) -> Result<&'a [u8], Fail> {
    let s = check_bytes(l, narg)?;
    Ok(s.iter().position(|&c| c == 0).map_or(s, |end| &s[..end]))
}

/// `luaL_checknumber`.
pub(crate) unsafe fn check_number(l: *mut lua_State, narg: c_int) -> Result<f64, Fail> {
    let d = ffi::lua_tonumber(l, narg);
    if d == 0.0 && ffi::lua_isnumber(l, narg) == 0 {
        return Err(Fail::Type(narg, c"number"));
    }
    Ok(d)
}

/// `luaL_checkinteger` (the number truncated as C's cast does).
pub(crate) unsafe fn check_integer(l: *mut lua_State, narg: c_int) -> Result<i64, Fail> {
    let d = ffi::lua_tointeger_(l, narg);
    if d == 0 && ffi::lua_isnumber(l, narg) == 0 {
        return Err(Fail::Type(narg, c"number"));
    }
    Ok(d)
}

/// `luaL_optinteger`.
pub(crate) unsafe fn opt_integer(l: *mut lua_State, narg: c_int, def: i64) -> Result<i64, Fail> {
    if ffi::lua_type(l, narg) <= ffi::LUA_TNIL {
        Ok(def)
    } else {
        check_integer(l, narg)
    }
}

/// Sets `t[name] = f` for the table on top of the stack, with `nup` copies
/// of the value just below the table as upvalues (`luaL_setfuncs`).
///
/// # Safety
/// The table must be on top of the stack, the upvalue (if any) below it.
pub(crate) unsafe fn set_funcs(l: *mut lua_State, funcs: &[(&CStr, ffi::lua_CFunction)], upvalue: Option<c_int>) {
    for (name, f) in funcs {
        match upvalue {
            Some(idx) => {
                ffi::lua_pushvalue(l, idx);
                ffi::lua_pushcclosure(l, *f, 1);
            }
            None => ffi::lua_pushcclosure(l, *f, 0),
        }
        ffi::lua_setfield(l, -2, name.as_ptr());
    }
}

/// Sets `t[name] = value` for the table on top of the stack.
pub(crate) unsafe fn set_str_field(l: *mut lua_State, name: &CStr, value: &str) {
    push_bytes(l, value.as_bytes());
    ffi::lua_setfield(l, -2, name.as_ptr());
}

/// C's `(int64_t)d` on x86-64 (`cvttsd2si`): truncation, and
/// `INT64_MIN` for NaN and anything out of range.
pub(crate) fn c_i64(d: f64) -> i64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    if !(-TWO63..TWO63).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// C's `(int)d` on x86-64: truncation, `INT_MIN` for NaN and out of range.
pub(crate) fn c_i32(d: f64) -> i32 {
    if !(-2_147_483_649.0 < d && d < 2_147_483_648.0) {
        i32::MIN
    } else {
        d as i32
    }
}

/// C's `(uint64_t)d` as gcc compiles it on x86-64: below 2^63 (and NaN)
/// through the signed conversion, above it by subtracting 2^63 first.
pub(crate) fn c_u64(d: f64) -> u64 {
    const TWO63: f64 = 9_223_372_036_854_775_808.0;
    if d >= TWO63 {
        (c_i64(d - TWO63) as u64) ^ (1u64 << 63)
    } else {
        c_i64(d) as u64
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! A Lua state set up like Redis's (the libraries Redis opens plus these
    //! four), and a serializer shared with the oracle runs: the same Lua code
    //! turned the values into text on redis-server 7.0.15.

    use mlua::{Lua, LuaOptions, StdLib};

    pub fn lua() -> Lua {
        let libs = StdLib::TABLE | StdLib::STRING | StdLib::MATH;
        let lua = Lua::new_with(libs, LuaOptions::default()).expect("lua state");
        super::register_all(&lua).expect("register libs");
        lua
    }

    /// Serializes every value the expression (Lua code after `return`)
    /// produces, or its error, as `ok|...` / `err|message`.
    pub const PRELUDE: &str = r#"
local function Q(v)
  local t = type(v)
  if t == 'string' then
    return (string.gsub(string.format('%q', v), '[%z\1-\31\127-\255]', function(c) return string.format('\\%d', string.byte(c)) end))
  elseif t == 'number' then return string.format('%.17g', v)
  elseif t == 'table' then
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys, function(a, b) return Q(a) < Q(b) end)
    local out = {}
    for _, k in ipairs(keys) do out[#out + 1] = '[' .. Q(k) .. ']=' .. Q(v[k]) end
    return '{' .. table.concat(out, ',') .. '}'
  elseif t == 'userdata' and v == cjson.null then return 'NULL'
  else return tostring(v) end
end
local function R(ok, ...)
  local out = {}
  for i = 1, select('#', ...) do out[i] = Q((select(i, ...))) end
  if ok then return 'ok|' .. table.concat(out, ' ') end
  return 'err|' .. tostring((...))
end
"#;

    /// Runs `return <expr>` inside pcall in a chunk named like Redis's
    /// script body (`@user_script`, all on line 1).
    pub fn eval(lua: &Lua, expr: &str) -> String {
        let code = format!("{} return R(pcall(function() return {} end))", PRELUDE.replace('\n', " "), expr);
        lua.load(code)
            .set_name("@user_script")
            .eval::<String>()
            .unwrap_or_else(|e| panic!("snippet failed: {expr}: {e}"))
    }

    /// Checks each `(expression, expected)` pair.
    pub fn check(cases: &[(&str, &str)]) {
        let lua = lua();
        let mut bad = Vec::new();
        for (expr, want) in cases {
            let got = eval(&lua, expr);
            if got != *want {
                bad.push(format!("{expr}\n  want: {want}\n  got:  {got}"));
            }
        }
        assert!(bad.is_empty(), "{} mismatches:\n{}", bad.len(), bad.join("\n"));
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::check;

    /// The globals and their fields, in Redis's table order. Expected values
    /// were taken from redis-server 7.0.15.
    #[test]
    fn globals_match_redis() {
        check(&[
            (
                r#"(function() local out = {} for k in pairs(cjson) do out[#out+1] = k end return table.concat(out, ',') end)()"#,
                r#"ok|"_NAME,encode,decode_max_depth,_VERSION,decode_invalid_numbers,encode_keep_buffer,null,encode_number_precision,new,encode_max_depth,encode_invalid_numbers,decode,encode_sparse_array""#,
            ),
            (
                r#"(function() local out = {} for k in pairs(cmsgpack) do out[#out+1] = k end return table.concat(out, ',') end)()"#,
                r#"ok|"_DESCRIPTION,pack,_NAME,unpack,_COPYRIGHT,_VERSION,unpack_one,unpack_limit""#,
            ),
            (
                r#"(function() local out = {} for k in pairs(struct) do out[#out+1] = k end return table.concat(out, ',') end)()"#,
                r#"ok|"pack,size,unpack""#,
            ),
            (
                r#"(function() local out = {} for k in pairs(bit) do out[#out+1] = k end return table.concat(out, ',') end)()"#,
                r#"ok|"band,rshift,bor,bnot,bswap,bxor,tobit,ror,lshift,tohex,rol,arshift""#,
            ),
            (
                r#"cjson._NAME, cjson._VERSION, tostring(cjson.null), type(cjson.null)"#,
                r#"ok|"cjson" "2.1.0" "userdata: (nil)" "userdata""#,
            ),
            (
                r#"cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION"#,
                r#"ok|"cmsgpack" "lua-cmsgpack 0.4.0" "Copyright (C) 2012, Salvatore Sanfilippo" "MessagePack C implementation for Lua""#,
            ),
        ]);
    }

    #[test]
    fn c_casts_match_x86() {
        use super::{c_i32, c_i64, c_u64};
        assert_eq!(c_i64(f64::NAN), i64::MIN);
        assert_eq!(c_i64(-1.9), -1);
        assert_eq!(c_i64(1e300), i64::MIN);
        assert_eq!(c_i32(2_147_483_648.0), i32::MIN);
        assert_eq!(c_i32(-2_147_483_648.5), i32::MIN);
        assert_eq!(c_u64(2f64.powi(64)), 0);
        assert_eq!(c_u64(2f64.powi(63) + 4096.0), (1 << 63) | 4096);
        assert_eq!(c_u64(f64::NAN), 1 << 63);
    }
}
