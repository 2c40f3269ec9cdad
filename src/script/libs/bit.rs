//! `bit`: LuaBitOp 1.0.2 as Redis 7.0 bundles it — 32-bit operations on Lua
//! numbers. Every argument is normalised to 32 bits the way LuaBitOp does it
//! (adding 2^52+2^51 to the double and keeping the low word of the result,
//! so fractions round to nearest-even and everything wraps modulo 2^32), and
//! every result is returned as a signed 32-bit number.

use std::ffi::{c_int, CStr};

use mlua::ffi::{self, lua_State};

use super::{run, set_funcs, Fail, Ret};

/// An argument as a 32-bit value. A non-number (a numeric string converts)
/// is a type error — detected, as in LuaBitOp, only when the bits are zero.
unsafe fn barg(l: *mut lua_State, idx: c_int) -> Result<u32, Fail> {
    let n = ffi::lua_tonumber(l, idx);
    let bits = (n + 6_755_399_441_055_744.0).to_bits() as u32;
    if bits == 0 && ffi::lua_isnumber(l, idx) == 0 {
        return Err(Fail::Type(idx, c"number"));
    }
    Ok(bits)
}

unsafe fn ret(l: *mut lua_State, b: u32) -> Ret {
    ffi::lua_pushnumber(l, b as i32 as f64);
    Ok(1)
}

unsafe extern "C-unwind" fn tobit(l: *mut lua_State) -> c_int {
    run(l, || ret(l, barg(l, 1)?))
}

unsafe extern "C-unwind" fn bnot(l: *mut lua_State) -> c_int {
    run(l, || ret(l, !barg(l, 1)?))
}

/// The variadic operations read argument 1, then the others from the last
/// one down (which decides which bad argument is reported).
unsafe fn fold(l: *mut lua_State, op: fn(u32, u32) -> u32) -> Ret {
    let mut b = barg(l, 1)?;
    let mut i = ffi::lua_gettop(l);
    while i > 1 {
        b = op(b, barg(l, i)?);
        i -= 1;
    }
    ret(l, b)
}

unsafe extern "C-unwind" fn band(l: *mut lua_State) -> c_int {
    run(l, || fold(l, |a, b| a & b))
}

unsafe extern "C-unwind" fn bor(l: *mut lua_State) -> c_int {
    run(l, || fold(l, |a, b| a | b))
}

unsafe extern "C-unwind" fn bxor(l: *mut lua_State) -> c_int {
    run(l, || fold(l, |a, b| a ^ b))
}

unsafe fn shift(l: *mut lua_State, op: fn(u32, u32) -> u32) -> Ret {
    let b = barg(l, 1)?;
    let n = barg(l, 2)? & 31;
    ret(l, op(b, n))
}

unsafe extern "C-unwind" fn lshift(l: *mut lua_State) -> c_int {
    run(l, || shift(l, |b, n| b << n))
}

unsafe extern "C-unwind" fn rshift(l: *mut lua_State) -> c_int {
    run(l, || shift(l, |b, n| b >> n))
}

unsafe extern "C-unwind" fn arshift(l: *mut lua_State) -> c_int {
    run(l, || shift(l, |b, n| ((b as i32) >> n) as u32))
}

unsafe extern "C-unwind" fn rol(l: *mut lua_State) -> c_int {
    run(l, || shift(l, u32::rotate_left))
}

unsafe extern "C-unwind" fn ror(l: *mut lua_State) -> c_int {
    run(l, || shift(l, u32::rotate_right))
}

unsafe extern "C-unwind" fn bswap(l: *mut lua_State) -> c_int {
    run(l, || ret(l, barg(l, 1)?.swap_bytes()))
}

unsafe extern "C-unwind" fn tohex(l: *mut lua_State) -> c_int {
    run(l, || {
        let mut b = barg(l, 1)?;
        let mut n: i32 = if ffi::lua_type(l, 2) == ffi::LUA_TNONE { 8 } else { barg(l, 2)? as i32 };
        let mut digits: &[u8; 16] = b"0123456789abcdef";
        if n < 0 {
            n = n.wrapping_neg();
            digits = b"0123456789ABCDEF";
        }
        // -INT_MIN overflows; Redis's build treats it as more than 8 digits.
        let n = if n < 0 { 8 } else { n.min(8) as usize };
        let mut buf = [0u8; 8];
        for slot in buf[..n].iter_mut().rev() {
            *slot = digits[(b & 15) as usize];
            b >>= 4;
        }
        super::push_bytes(l, &buf[..n]);
        Ok(1)
    })
}

const FUNCS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"tobit", tobit),
    (c"bnot", bnot),
    (c"band", band),
    (c"bor", bor),
    (c"bxor", bxor),
    (c"lshift", lshift),
    (c"rshift", rshift),
    (c"arshift", arshift),
    (c"rol", rol),
    (c"ror", ror),
    (c"bswap", bswap),
    (c"tohex", tohex),
];

/// Returns the `bit` table.
pub(crate) unsafe extern "C-unwind" fn open(l: *mut lua_State) -> c_int {
    ffi::lua_createtable(l, 0, FUNCS.len() as c_int);
    set_funcs(l, FUNCS, None);
    1
}

#[cfg(test)]
mod tests {
    use super::super::testutil::check;

    /// Every function, its edge cases and its error messages.
    /// Expected values were taken from redis-server 7.0.15: the same
    /// snippets run there with EVAL, serialized by the same Lua code
    /// (`testutil::PRELUDE`).
    #[test]
    fn matches_redis() {
        check(&[
            (r#"bit.tobit(0xffffffff)"#, r#"ok|-1"#),
            (r#"bit.tobit(0xffffffff + 1)"#, r#"ok|0"#),
            (r#"bit.tobit(2^40 + 5)"#, r#"ok|5"#),
            (r#"bit.tobit(-1)"#, r#"ok|-1"#),
            (r#"bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1.5), bit.tobit(0.5)"#, r#"ok|2 2 -2 0"#),
            (r#"bit.tobit('12')"#, r#"ok|12"#),
            (r#"bit.tobit('0x10')"#, r#"ok|16"#),
            (r#"bit.tobit('abc')"#, r#"err|user_script:1: bad argument #1 to 'tobit' (number expected, got string)"#),
            (r#"bit.tobit()"#, r#"err|user_script:1: bad argument #1 to 'tobit' (number expected, got no value)"#),
            (r#"bit.tobit(nil)"#, r#"err|user_script:1: bad argument #1 to 'tobit' (number expected, got nil)"#),
            (r#"bit.tobit({})"#, r#"err|user_script:1: bad argument #1 to 'tobit' (number expected, got table)"#),
            (r#"bit.tobit(1/0), bit.tobit(-1/0), bit.tobit(0/0)"#, r#"ok|0 0 0"#),
            (r#"bit.tobit(2^53), bit.tobit(2^52+0.5), bit.tobit(-2^63)"#, r#"ok|0 0 0"#),
            (r#"bit.bnot(0), bit.bnot(-1), bit.bnot(12345)"#, r#"ok|-1 0 -12346"#),
            (r#"bit.band(0xff, 0x0f), bit.band(1), bit.band(-1, 0xf0f0, 0xff00)"#, r#"ok|15 1 61440"#),
            (r#"bit.bor(1, 2, 4, 8), bit.bxor(0xff, 0x0f), bit.bxor(1,1,1)"#, r#"ok|15 240 1"#),
            (r#"bit.band()"#, r#"err|user_script:1: bad argument #1 to 'band' (number expected, got no value)"#),
            (
                r#"bit.band(1, 'a', 'b')"#,
                r#"err|user_script:1: bad argument #3 to 'band' (number expected, got string)"#,
            ),
            (r#"bit.band('x', 'y')"#, r#"err|user_script:1: bad argument #1 to 'band' (number expected, got string)"#),
            (r#"bit.bor(1, 2, nil)"#, r#"err|user_script:1: bad argument #3 to 'bor' (number expected, got nil)"#),
            (
                r#"bit.lshift(1, 31), bit.lshift(1, 32), bit.lshift(1, 33), bit.lshift(1, -1)"#,
                r#"ok|-2147483648 1 2 -2147483648"#,
            ),
            (r#"bit.rshift(-1, 28), bit.rshift(0x80000000, 31), bit.rshift(1, 0)"#, r#"ok|15 1 1"#),
            (r#"bit.arshift(-256, 4), bit.arshift(0x80000000, 31), bit.arshift(256, 4)"#, r#"ok|-16 -1 16"#),
            (
                r#"bit.rol(0x12345678, 12), bit.ror(0x12345678, 12), bit.rol(1, 0), bit.ror(1, 0), bit.rol(1, 32)"#,
                r#"ok|1164411171 1736516421 1 1 1"#,
            ),
            (r#"bit.bswap(0x12345678), bit.bswap(-1), bit.bswap(0xff)"#, r#"ok|2018915346 -1 -16777216"#),
            (
                r#"bit.tohex(1), bit.tohex(-1), bit.tohex(0x12345678, 4), bit.tohex(0xabcdef, -6), bit.tohex(255, 0), bit.tohex(255, 20), bit.tohex(255, -20)"#,
                r#"ok|"00000001" "ffffffff" "5678" "ABCDEF" "" "000000ff" "000000FF""#,
            ),
            (
                r#"bit.tohex(255, -2^31), bit.tohex(0xabc, 2^31), bit.tohex(1, nil)"#,
                r#"err|user_script:1: bad argument #2 to 'tohex' (number expected, got nil)"#,
            ),
            (r#"bit.tohex()"#, r#"err|user_script:1: bad argument #1 to 'tohex' (number expected, got no value)"#),
            (r#"bit.tohex(1, 'z')"#, r#"err|user_script:1: bad argument #2 to 'tohex' (number expected, got string)"#),
            (r#"bit.lshift(1)"#, r#"err|user_script:1: bad argument #2 to 'lshift' (number expected, got no value)"#),
            (r#"bit.lshift()"#, r#"err|user_script:1: bad argument #1 to 'lshift' (number expected, got no value)"#),
            (
                r#"bit.rshift('a', 1)"#,
                r#"err|user_script:1: bad argument #1 to 'rshift' (number expected, got string)"#,
            ),
            (r#"bit.ror(1, 'x')"#, r#"err|user_script:1: bad argument #2 to 'ror' (number expected, got string)"#),
            (r#"pcall(bit.band, 'x')"#, r#"ok|false "bad argument #1 to '?' (number expected, got string)""#),
        ]);
    }
}
