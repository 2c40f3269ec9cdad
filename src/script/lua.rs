//! Thin helpers over the raw Lua 5.1 C API (`mlua::ffi`).
//!
//! The engine talks to Lua through the C API, like Redis does: it needs to
//! raise arbitrary Lua values as errors (Redis raises `{err=...}` tables),
//! walk the call stack from the error handler and install an instruction
//! hook — none of which the safe `mlua` API exposes.
//!
//! **Invariant (longjmp safety):** `lua_error` unwinds with `longjmp`, so a
//! raw function may only raise once every Rust value it owns has been dropped
//! (raise through [`raise`], which takes nothing but the state).

use std::ffi::{c_char, c_int, CStr};

use mlua::ffi;

pub(crate) type State = *mut ffi::lua_State;

/// A NUL-terminated literal as `*const c_char`.
macro_rules! cstr {
    ($s:expr) => {
        concat!($s, "\0").as_ptr() as *const std::ffi::c_char
    };
}
pub(crate) use cstr;

/// Pushes a byte string.
pub(crate) unsafe fn push_bytes(l: State, b: &[u8]) {
    ffi::lua_pushlstring(l, b.as_ptr() as *const c_char, b.len());
}

/// The bytes of the string (or number, converted in place) at `idx`.
/// The slice lives as long as the value stays on the stack.
pub(crate) unsafe fn to_bytes<'a>(l: State, idx: c_int) -> Option<&'a [u8]> {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    if p.is_null() {
        None
    } else {
        Some(std::slice::from_raw_parts(p as *const u8, len))
    }
}

/// `t[k] = top` for the table at `idx` (raw), popping the value.
pub(crate) unsafe fn set_field_raw(l: State, idx: c_int, k: &str) {
    let idx = ffi::lua_absindex(l, idx);
    push_bytes(l, k.as_bytes());
    ffi::lua_insert(l, -2);
    ffi::lua_rawset(l, idx);
}

/// Pushes `t[k]` (raw) for the table at `idx`; returns its type.
pub(crate) unsafe fn get_field_raw(l: State, idx: c_int, k: &str) -> c_int {
    let idx = ffi::lua_absindex(l, idx);
    push_bytes(l, k.as_bytes());
    ffi::lua_rawget(l, idx);
    ffi::lua_type(l, -1)
}

/// Pushes a Redis-style error table `{err = <msg>}` built the way
/// `luaPushErrorBuff` builds it: `"-CODE rest"` keeps its code, anything
/// else gets `ERR`; trailing CR/LF are trimmed.
pub(crate) unsafe fn push_error_table(l: State, err: &[u8]) {
    let text = normalize_error(err);
    ffi::lua_createtable(l, 0, 2);
    push_bytes(l, &text);
    set_field_raw(l, -2, "err");
}

/// The text `luaPushErrorBuff` stores in the `err` field.
pub(crate) fn normalize_error(err: &[u8]) -> Vec<u8> {
    let (code, msg): (&[u8], &[u8]) = if let Some(rest) = err.strip_prefix(b"-") {
        match rest.iter().position(|&c| c == b' ') {
            None => (b"ERR", rest),
            Some(p) => (&rest[..p], &rest[p + 1..]),
        }
    } else {
        (b"ERR", err)
    };
    let msg = trim_crlf(msg);
    let mut out = Vec::with_capacity(code.len() + 1 + msg.len());
    out.extend_from_slice(code);
    out.push(b' ');
    out.extend_from_slice(msg);
    out
}

/// `sdstrim(s, "\r\n")`: strips CR/LF from both ends.
fn trim_crlf(mut s: &[u8]) -> &[u8] {
    while let [b'\r' | b'\n', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b'\r' | b'\n'] = s {
        s = rest;
    }
    s
}

/// Raises the value on top of the stack. Never returns.
///
/// # Safety
/// No Rust value with a destructor may be alive in the calling frames up to
/// the enclosing `lua_pcall` (see the module invariant).
pub(crate) unsafe fn raise(l: State) -> ! {
    ffi::lua_error(l)
}

/// Pushes `luaL_where(l, level)` followed by `msg` as one string (what
/// `luaL_error` raises).
pub(crate) unsafe fn push_where_msg(l: State, level: c_int, msg: &[u8]) {
    ffi::luaL_where(l, level);
    push_bytes(l, msg);
    ffi::lua_concat(l, 2);
}

/// A C string field of `lua_Debug` as bytes.
pub(crate) unsafe fn cstr_bytes<'a>(p: *const c_char) -> &'a [u8] {
    if p.is_null() {
        b""
    } else {
        CStr::from_ptr(p).to_bytes()
    }
}

/// Registers a raw C function as `t[name]` for the table on top of the stack.
pub(crate) unsafe fn set_fn(l: State, name: &str, f: ffi::lua_CFunction) {
    ffi::lua_pushcfunction(l, f);
    set_field_raw(l, -2, name);
}

/// `t[name] = n` for the table on top of the stack.
pub(crate) unsafe fn set_num(l: State, name: &str, n: f64) {
    ffi::lua_pushnumber(l, n);
    set_field_raw(l, -2, name);
}

/// `%.17g`, exactly as C prints it (`-nan`, `inf`…): how Redis turns Lua
/// numbers into command arguments (`redis.call` writes it in place with
/// `num::fmt_g17_into`).
#[cfg(test)]
pub(crate) fn fmt_g17(d: f64) -> Vec<u8> {
    let mut buf = [0u8; 64];
    let n = crate::num::fmt_g17_into(d, &mut buf);
    buf[..n].to_vec()
}

/// C's `(long long)d` as x86-64 computes it: out-of-range and NaN give
/// `i64::MIN` (Rust's `as` would saturate instead).
pub(crate) fn c_double_to_i64(d: f64) -> i64 {
    if d.is_nan() || !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&d) {
        i64::MIN
    } else {
        d as i64
    }
}

/// Registry key of the table mapping each read-only proxy the sandbox
/// builds to the table it protects.
pub(crate) const REG_REAL: &str = "rlockd.real";

/// If the value at `idx` is a proxy, replaces it (in place) by its table.
pub(crate) unsafe fn unproxy(l: State, idx: c_int) {
    if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
        return;
    }
    let idx = ffi::lua_absindex(l, idx);
    get_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_REAL);
    if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
        // A state without the sandbox (the libraries' own tests).
        ffi::lua_pop(l, 1);
        return;
    }
    ffi::lua_pushvalue(l, idx);
    ffi::lua_rawget(l, -2);
    if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
        ffi::lua_replace(l, idx);
        ffi::lua_pop(l, 1);
    } else {
        ffi::lua_pop(l, 2);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_text_normalization_matches_redis() {
        assert_eq!(normalize_error(b"-WRONGTYPE Operation"), b"WRONGTYPE Operation");
        assert_eq!(normalize_error(b"-NOSPACE"), b"ERR NOSPACE");
        assert_eq!(normalize_error(b"plain text"), b"ERR plain text");
        assert_eq!(normalize_error(b"-ERR x\r\n"), b"ERR x");
        assert_eq!(normalize_error(b"-"), b"ERR ");
    }

    #[test]
    fn c_casts_and_g17() {
        assert_eq!(c_double_to_i64(3.99), 3);
        assert_eq!(c_double_to_i64(-3.99), -3);
        assert_eq!(c_double_to_i64(1e100), i64::MIN);
        assert_eq!(c_double_to_i64(f64::NAN), i64::MIN);
        assert_eq!(c_double_to_i64(-1e19), i64::MIN);
        assert_eq!(fmt_g17(0.1), b"0.10000000000000001");
        assert_eq!(fmt_g17(100.0), b"100");
        assert_eq!(fmt_g17(-0.0), b"-0");
        assert_eq!(fmt_g17(1e20), b"1e+20");
    }
}
