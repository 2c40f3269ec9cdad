//! `struct`: Roberto Ierusalimschy's library for packing and unpacking
//! binary data, as Redis 7.0 bundles it (with its bounds and overflow
//! checks).
//!
//! Format options: `>` big endian, `<` little endian, `![n]` alignment
//! (default 8), `x` a zero byte, `b`/`B` signed/unsigned char, `h`/`H`
//! short, `l`/`L` long, `T` size_t, `i[n]`/`I[n]` an n-byte integer (default
//! 4, at most 32), `f` float, `d` double, `c[n]` n chars (`c0`: the whole
//! string when packing, the previously read number as the length when
//! unpacking), `s` a zero-terminated string, `' '` ignored. Sizes are those
//! of x86-64 Linux, where Redis runs; the default byte order is its little
//! endian.

use std::ffi::{c_char, c_int, CStr};

use mlua::ffi::{self, lua_State};

use super::{c_i64, c_u64, check_bytes, check_cstr, check_number, opt_integer, push_bytes, run, set_funcs, Fail};

/// Largest `i`/`I` size.
const MAXINTSIZE: i32 = 32;
/// Default of `!`: the alignment of a double.
const MAXALIGN: i32 = 8;

struct Header {
    little: bool,
    align: usize,
}

impl Default for Header {
    fn default() -> Self {
        Header { little: true, align: 1 }
    }
}

/// A format string being read; it ends at its first `'\0'`, as in C.
struct Fmt<'a> {
    s: &'a [u8],
    at: usize,
}

impl Fmt<'_> {
    fn next_opt(&mut self) -> Option<u8> {
        let c = *self.s.get(self.at)?;
        self.at += 1;
        Some(c)
    }

    fn digit(&self) -> Option<i32> {
        self.s.get(self.at).filter(|c| c.is_ascii_digit()).map(|c| i32::from(c - b'0'))
    }

    /// A decimal count following an option, or `df`.
    fn num(&mut self, df: i32) -> Result<i32, Fail> {
        if self.digit().is_none() {
            return Ok(df);
        }
        let mut a: i32 = 0;
        while let Some(d) = self.digit() {
            if a > i32::MAX / 10 || a * 10 > i32::MAX - d {
                return Err(Fail::msg("integral size overflow"));
            }
            a = a * 10 + d;
            self.at += 1;
        }
        Ok(a)
    }
}

/// The size of one option's item (0 for options that are not items).
fn optsize(opt: u8, fmt: &mut Fmt<'_>) -> Result<usize, Fail> {
    Ok(match opt {
        b'B' | b'b' | b'x' => 1,
        b'H' | b'h' => 2,
        b'L' | b'l' | b'T' | b'd' => 8,
        b'f' => 4,
        b'c' => fmt.num(1)? as usize,
        b'i' | b'I' => {
            let sz = fmt.num(4)?;
            if sz > MAXINTSIZE {
                return Err(Fail::msg(format!("integral size {sz} is larger than limit of {MAXINTSIZE}")));
            }
            sz as usize
        }
        _ => 0,
    })
}

/// Padding needed before an item of `size` bytes at offset `len`.
fn gettoalign(len: usize, h: &Header, opt: u8, size: usize) -> usize {
    if size == 0 || opt == b'c' {
        return 0;
    }
    let size = size.min(h.align);
    size.wrapping_sub(len & size.wrapping_sub(1)) & size.wrapping_sub(1)
}

/// Options that change byte order and alignment; anything else is invalid.
fn controloptions(opt: u8, fmt: &mut Fmt<'_>, h: &mut Header) -> Result<(), Fail> {
    match opt {
        b' ' => {}
        b'>' => h.little = false,
        b'<' => h.little = true,
        b'!' => {
            let a = fmt.num(MAXALIGN)?;
            if a <= 0 || a & (a - 1) != 0 {
                return Err(Fail::msg(format!("alignment {a} is not a power of 2")));
            }
            h.align = a as usize;
        }
        _ => {
            let mut m = b"invalid format option '".to_vec();
            m.push(opt);
            m.push(b'\'');
            return Err(Fail::Arg(1, m));
        }
    }
    Ok(())
}

fn is_integer_opt(opt: u8) -> bool {
    matches!(opt, b'b' | b'B' | b'h' | b'H' | b'l' | b'L' | b'T' | b'i' | b'I')
}

/// The `size` low-order bytes of `n` as a C `unsigned long` (bytes past the
/// eighth are zero).
fn integer_bytes(n: f64, little: bool, size: usize) -> [u8; MAXINTSIZE as usize] {
    let mut value = if n < 0.0 { c_i64(n) as u64 } else { c_u64(n) };
    let mut buf = [0u8; MAXINTSIZE as usize];
    for k in 0..size {
        let i = if little { k } else { size - 1 - k };
        buf[i] = (value & 0xff) as u8;
        value >>= 8;
    }
    buf
}

unsafe fn add(b: &mut ffi::luaL_Buffer, s: &[u8]) {
    ffi::luaL_addlstring(b, s.as_ptr() as *const c_char, s.len());
}

/// `struct.pack(fmt, ...)`.
unsafe extern "C-unwind" fn pack(l: *mut lua_State) -> c_int {
    run(l, || {
        let mut fmt = Fmt { s: check_cstr(l, 1)?, at: 0 };
        let mut h = Header::default();
        let mut arg: c_int = 2;
        let mut total = 0usize;
        // The original leaves a nil between the arguments and its string
        // buffer; it shows in "got nil" for the first missing argument.
        ffi::lua_pushnil(l);
        let mut b: ffi::luaL_Buffer = std::mem::zeroed();
        ffi::luaL_buffinit(l, &mut b);
        while let Some(opt) = fmt.next_opt() {
            let mut size = optsize(opt, &mut fmt)?;
            let toalign = gettoalign(total, &h, opt, size);
            total += toalign;
            for _ in 0..toalign {
                ffi::luaL_addchar(&mut b, 0);
            }
            match opt {
                _ if is_integer_opt(opt) => {
                    let n = check_number(l, arg)?;
                    arg += 1;
                    add(&mut b, &integer_bytes(n, h.little, size)[..size]);
                }
                b'x' => ffi::luaL_addchar(&mut b, 0),
                b'f' => {
                    let f = check_number(l, arg)? as f32;
                    arg += 1;
                    add(&mut b, &if h.little { f.to_le_bytes() } else { f.to_be_bytes() });
                }
                b'd' => {
                    let d = check_number(l, arg)?;
                    arg += 1;
                    add(&mut b, &if h.little { d.to_le_bytes() } else { d.to_be_bytes() });
                }
                b'c' | b's' => {
                    let s = check_bytes(l, arg)?;
                    arg += 1;
                    if size == 0 {
                        size = s.len();
                    }
                    if s.len() < size {
                        // The original names the argument after this one.
                        return Err(Fail::arg(arg, "string too short"));
                    }
                    add(&mut b, &s[..size]);
                    if opt == b's' {
                        ffi::luaL_addchar(&mut b, 0);
                        size += 1;
                    }
                }
                _ => controloptions(opt, &mut fmt, &mut h)?,
            }
            total += size;
        }
        ffi::luaL_pushresult(&mut b);
        Ok(1)
    })
}

/// Reads a `size`-byte integer.
fn getinteger(buf: &[u8], little: bool, signed: bool) -> f64 {
    let size = buf.len();
    let mut v: u64 = 0;
    for k in 0..size {
        let i = if little { size - 1 - k } else { k };
        v = (v << 8) | u64::from(buf[i]);
    }
    if !signed {
        return v as f64;
    }
    // x86 masks shift counts, so sizes over 8 give odd masks, as in C.
    let mask = (!0u64).wrapping_shl((size as u32).wrapping_mul(8).wrapping_sub(1));
    if v & mask != 0 {
        v |= mask;
    }
    v as i64 as f64
}

fn data_too_short(size: usize, pos: usize, ld: usize) -> Result<(), Fail> {
    if size <= ld && pos <= ld - size {
        Ok(())
    } else {
        Err(Fail::arg(2, "data string too short"))
    }
}

/// `struct.unpack(fmt, data [, pos])`: the values, then the position after
/// them.
unsafe extern "C-unwind" fn unpack(l: *mut lua_State) -> c_int {
    run(l, || {
        let mut fmt = Fmt { s: check_cstr(l, 1)?, at: 0 };
        let data = check_bytes(l, 2)?;
        let ld = data.len();
        // A size_t in C: negative offsets wrap to huge ones.
        let mut pos = opt_integer(l, 3, 1)? as u64 as usize;
        if pos == 0 {
            return Err(Fail::arg(3, "offset must be 1 or greater"));
        }
        pos -= 1;
        let mut h = Header::default();
        let mut n: c_int = 0;
        while let Some(opt) = fmt.next_opt() {
            let mut size = optsize(opt, &mut fmt)?;
            pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
            data_too_short(size, pos, ld)?;
            if ffi::lua_checkstack(l, 2) == 0 {
                return Err(Fail::msg("stack overflow (too many results)"));
            }
            match opt {
                _ if is_integer_opt(opt) => {
                    let v = getinteger(&data[pos..pos + size], h.little, opt.is_ascii_lowercase());
                    ffi::lua_pushnumber(l, v);
                    n += 1;
                }
                b'x' => {}
                b'f' => {
                    let raw: [u8; 4] = data[pos..pos + 4].try_into().expect("4 bytes");
                    let f = if h.little { f32::from_le_bytes(raw) } else { f32::from_be_bytes(raw) };
                    ffi::lua_pushnumber(l, f64::from(f));
                    n += 1;
                }
                b'd' => {
                    let raw: [u8; 8] = data[pos..pos + 8].try_into().expect("8 bytes");
                    let d = if h.little { f64::from_le_bytes(raw) } else { f64::from_be_bytes(raw) };
                    ffi::lua_pushnumber(l, d);
                    n += 1;
                }
                b'c' => {
                    if size == 0 {
                        if n == 0 || ffi::lua_isnumber(l, -1) == 0 {
                            return Err(Fail::msg("format 'c0' needs a previous size"));
                        }
                        size = c_u64(ffi::lua_tonumber(l, -1)) as usize;
                        ffi::lua_settop(l, -2);
                        n -= 1;
                        data_too_short(size, pos, ld)?;
                    }
                    push_bytes(l, &data[pos..pos + size]);
                    n += 1;
                }
                b's' => {
                    let Some(len) = data[pos..].iter().position(|&c| c == 0) else {
                        return Err(Fail::msg("unfinished string in data"));
                    };
                    push_bytes(l, &data[pos..pos + len]);
                    size = len + 1;
                    n += 1;
                }
                _ => controloptions(opt, &mut fmt, &mut h)?,
            }
            pos = pos.wrapping_add(size);
        }
        ffi::lua_pushinteger(l, pos.wrapping_add(1) as i64);
        Ok(n + 1)
    })
}

/// `struct.size(fmt)`: the packed size of a fixed-size format.
unsafe extern "C-unwind" fn size(l: *mut lua_State) -> c_int {
    run(l, || {
        let mut fmt = Fmt { s: check_cstr(l, 1)?, at: 0 };
        let mut h = Header::default();
        let mut pos = 0usize;
        while let Some(opt) = fmt.next_opt() {
            let size = optsize(opt, &mut fmt)?;
            pos = pos.wrapping_add(gettoalign(pos, &h, opt, size));
            if opt == b's' {
                return Err(Fail::arg(1, "option 's' has no fixed size"));
            } else if opt == b'c' && size == 0 {
                return Err(Fail::arg(1, "option 'c0' has no fixed size"));
            }
            if !opt.is_ascii_alphanumeric() {
                controloptions(opt, &mut fmt, &mut h)?;
            }
            pos = pos.wrapping_add(size);
        }
        ffi::lua_pushinteger(l, pos as i64);
        Ok(1)
    })
}

const FUNCS: &[(&CStr, ffi::lua_CFunction)] = &[(c"pack", pack), (c"unpack", unpack), (c"size", size)];

/// Returns the `struct` table.
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
            (
                r#"struct.pack('>I', 1), struct.pack('<I', 1), struct.pack('I', 258)"#,
                r#"ok|"\000\000\000\1" "\1\000\000\000" "\2\1\000\000""#,
            ),
            (
                r#"struct.pack('bBhHlLiI', -1, 255, -2, 65535, -3, 4, -5, 6)"#,
                r#"ok|"\255\255\254\255\255\255\253\255\255\255\255\255\255\255\4\000\000\000\000\000\000\000\251\255\255\255\6\000\000\000""#,
            ),
            (
                r#"struct.pack('>bBhHlLiIT', -1, 255, -2, 65535, -3, 4, -5, 6, 7)"#,
                r#"ok|"\255\255\255\254\255\255\255\255\255\255\255\255\255\253\000\000\000\000\000\000\000\4\255\255\255\251\000\000\000\6\000\000\000\000\000\000\000\7""#,
            ),
            (
                r#"struct.pack('>i3', -2), struct.pack('<I3', 0x123456), struct.pack('>i16', -1), struct.pack('<i16', -2), struct.pack('>I9', 1)"#,
                r#"ok|"\255\255\254" "V4\18" "\000\000\000\000\000\000\000\000\255\255\255\255\255\255\255\255" "\254\255\255\255\255\255\255\255\000\000\000\000\000\000\000\000" "\000\000\000\000\000\000\000\000\1""#,
            ),
            (
                r#"struct.pack('>L', 1e20), struct.pack('>L', 0/0), struct.pack('>l', -1e20), struct.pack('>L', 2^63), struct.pack('>L', 2^63+4096), struct.pack('>L', 2^64), struct.pack('>l', 1.9), struct.pack('>l', -1.9), struct.pack('B', 256), struct.pack('b', 200)"#,
                r#"ok|"\000\000\000\000\000\000\000\000" "\128\000\000\000\000\000\000\000" "\128\000\000\000\000\000\000\000" "\128\000\000\000\000\000\000\000" "\128\000\000\000\000\000\16\000" "\000\000\000\000\000\000\000\000" "\000\000\000\000\000\000\000\1" "\255\255\255\255\255\255\255\255" "\000" "\200""#,
            ),
            (
                r#"struct.pack('>f', 1.5), struct.pack('<f', -2.25), struct.pack('>d', 1/3), struct.pack('<d', -0.0), struct.pack('f', 1e300), struct.pack('d', 0/0)"#,
                r#"ok|"?\192\000\000" "\000\000\16\192" "?\213UUUUUU" "\000\000\000\000\000\000\000\128" "\000\000\128\127" "\000\000\000\000\000\000\248\255""#,
            ),
            (r#"struct.pack('fI', 1.5, 42)"#, r#"ok|"\000\000\192?*\000\000\000""#),
            (r#"struct.pack('Bc0I', 3, 'abc', 7)"#, r#"ok|"\3abc\7\000\000\000""#),
            (
                r#"struct.pack('c0', 'hello'), struct.pack('c3', 'hello'), struct.pack('s', 'hi'), struct.pack('s', ''), struct.pack('c0', '')"#,
                r#"ok|"hello" "hel" "hi\000" "\000" """#,
            ),
            (r#"struct.pack('c5', 'ab')"#, r#"err|user_script:1: bad argument #3 to 'pack' (string too short)"#),
            (
                r#"struct.pack('x'), struct.pack('xxBx', 1), struct.pack(' > B < H ', 1, 2)"#,
                r#"ok|"\000" "\000\000\1\000" "\1\2\000""#,
            ),
            (
                r#"struct.pack('!4 b i', 1, 2), struct.pack('!b i', 1, 2), struct.pack('!2 b d', 1, 2), struct.pack('!8 b h b i b l b d', 1,2,3,4,5,6,7,8), struct.pack('!4bc3i', 1, 'abc', 2), struct.pack('!4 b i3 b I5', 1, 2, 3, 4)"#,
                r#"ok|"\1\000\000\000\2\000\000\000" "\1\000\000\000\2\000\000\000" "\1\000\000\000\000\000\000\000\000@" "\1\000\2\000\3\000\000\000\4\000\000\000\5\000\000\000\6\000\000\000\000\000\000\000\7\000\000\000\000\000\000\000\000\000\000\000\000\000 @" "\1abc\2\000\000\000" "\1\000\000\2\000\000\3\000\4\000\000\000\000""#,
            ),
            (r#"struct.pack('!3', 1)"#, r#"err|user_script:1: alignment 3 is not a power of 2"#),
            (r#"struct.pack('!0I', 1)"#, r#"err|user_script:1: alignment 0 is not a power of 2"#),
            (r#"struct.pack('z', 1)"#, r#"err|user_script:1: bad argument #1 to 'pack' (invalid format option 'z')"#),
            (r#"struct.pack('B\0B', 1, 2)"#, r#"ok|"\1""#),
            (r#"struct.pack('i33', 1)"#, r#"err|user_script:1: integral size 33 is larger than limit of 32"#),
            (r#"struct.pack('i99999999999', 1)"#, r#"err|user_script:1: integral size overflow"#),
            (r#"struct.pack('c99999999999', 'x')"#, r#"err|user_script:1: integral size overflow"#),
            (r#"struct.pack('BB', 1)"#, r#"err|user_script:1: bad argument #3 to 'pack' (number expected, got nil)"#),
            (r#"struct.pack('BBB', 1)"#, r#"err|user_script:1: bad argument #3 to 'pack' (number expected, got nil)"#),
            (
                r#"struct.pack('B', 'x')"#,
                r#"err|user_script:1: bad argument #2 to 'pack' (number expected, got string)"#,
            ),
            (r#"struct.pack('B', '12')"#, r#"ok|"\12""#),
            (r#"struct.pack('c', 12)"#, r#"ok|"1""#),
            (r#"struct.pack('s', {})"#, r#"err|user_script:1: bad argument #2 to 'pack' (string expected, got table)"#),
            (r#"struct.pack()"#, r#"err|user_script:1: bad argument #1 to 'pack' (string expected, got no value)"#),
            (r#"struct.pack(12)"#, r#"err|user_script:1: bad argument #1 to 'pack' (invalid format option '1')"#),
            (r#"struct.pack('5', 1)"#, r#"err|user_script:1: bad argument #1 to 'pack' (invalid format option '5')"#),
            (r#"struct.pack('i0', 1), struct.pack('I0', 1)"#, r#"ok|"" """#),
            (r#"struct.unpack('>I', '\0\0\1\2')"#, r#"ok|258 5"#),
            (
                r#"struct.unpack('<i', '\255\255\255\255'), struct.unpack('>I', '\255\255\255\255')"#,
                r#"ok|-1 4294967295 5"#,
            ),
            (
                r#"struct.unpack('bBhHlLiIT', struct.pack('bBhHlLiIT', -1, 255, -2, 65535, -3, 4, -5, 6, 7))"#,
                r#"ok|-1 255 -2 65535 -3 4 -5 6 7 39"#,
            ),
            (
                r#"struct.unpack('>i3', '\255\255\254'), struct.unpack('<I3', '\1\2\3'), struct.unpack('>i9', string.rep('\255', 9)), struct.unpack('>I9', string.rep('\255', 9)), struct.unpack('<i16', string.rep('\128', 16)), struct.unpack('>i12', '\0\0\0\0\128\0\0\0\0\0\0\1')"#,
                r#"ok|-2 197121 -1 1.8446744073709552e+19 -9.1872019504357376e+18 -2147483647 13"#,
            ),
            (
                r#"struct.unpack('>L', '\255\255\255\255\255\255\255\255'), struct.unpack('>l', '\128\0\0\0\0\0\0\0'), struct.unpack('>L', '\0\32\0\0\0\0\0\1')"#,
                r#"ok|1.8446744073709552e+19 -9.2233720368547758e+18 9007199254740992 9"#,
            ),
            (
                r#"struct.unpack('>f', struct.pack('>f', 1.5)), struct.unpack('<d', struct.pack('<d', 1/3)), struct.unpack('f', struct.pack('f', 0.1))"#,
                r#"ok|1.5 0.33333333333333331 0.10000000149011612 5"#,
            ),
            (r#"struct.unpack('fI', struct.pack('fI', 1.5, 42))"#, r#"ok|1.5 42 9"#),
            (r#"struct.unpack('Bc0I', struct.pack('Bc0I', 3, 'abc', 7))"#, r#"ok|"abc" 7 9"#),
            (
                r#"struct.unpack('Bc0', '\3abc'), struct.unpack('c2c0', '3xabcdef'), struct.unpack('Bc0', '\0')"#,
                r#"err|user_script:1: format 'c0' needs a previous size"#,
            ),
            (
                r#"struct.unpack('Bc0', '\4abc')"#,
                r#"err|user_script:1: bad argument #2 to 'unpack' (data string too short)"#,
            ),
            (r#"struct.unpack('c0', 'ab')"#, r#"err|user_script:1: format 'c0' needs a previous size"#),
            (r#"struct.unpack('c0', '0')"#, r#"err|user_script:1: format 'c0' needs a previous size"#),
            (
                r#"struct.unpack('bc0', '\255ab')"#,
                r#"err|user_script:1: bad argument #2 to 'unpack' (data string too short)"#,
            ),
            (r#"struct.unpack('fc0', struct.pack('f', 2.7) .. 'abcd')"#, r#"ok|"ab" 7"#),
            (r#"struct.unpack('s', 'abc')"#, r#"err|user_script:1: unfinished string in data"#),
            (r#"struct.unpack('ss', 'ab\0\0cd\0xyz'), struct.unpack('sB', 'ab\0\7')"#, r#"ok|"ab" "ab" 7 5"#),
            (
                r#"struct.unpack('B', 'a', 0)"#,
                r#"err|user_script:1: bad argument #3 to 'unpack' (offset must be 1 or greater)"#,
            ),
            (
                r#"struct.unpack('B', 'a', -1)"#,
                r#"err|user_script:1: bad argument #2 to 'unpack' (data string too short)"#,
            ),
            (
                r#"struct.unpack('B', 'a', 2)"#,
                r#"err|user_script:1: bad argument #2 to 'unpack' (data string too short)"#,
            ),
            (r#"struct.unpack('', 'a', 3), struct.unpack('', 'a', 99), struct.unpack('', '')"#, r#"ok|3 99 1"#),
            (
                r#"struct.unpack('B', 'ab', 2), struct.unpack('B', 'ab', 2.9), struct.unpack('B', 'ab', '2')"#,
                r#"ok|98 98 98 3"#,
            ),
            (
                r#"struct.unpack('i', 'abcd', 'x')"#,
                r#"err|user_script:1: bad argument #3 to 'unpack' (number expected, got string)"#,
            ),
            (
                r#"struct.unpack('i', 'abc')"#,
                r#"err|user_script:1: bad argument #2 to 'unpack' (data string too short)"#,
            ),
            (r#"struct.unpack('x', '')"#, r#"err|user_script:1: bad argument #2 to 'unpack' (data string too short)"#),
            (
                r#"struct.unpack('xB', 'ab'), struct.unpack('!4 b i', struct.pack('!4 b i', 1, 2)), struct.unpack('!4 b i', 'a\0\0\0\1\0\0\0', 1)"#,
                r#"ok|98 1 97 1 9"#,
            ),
            (r#"struct.unpack('!4 b i', 'xa\0\0\0\1\0\0\0', 2)"#, r#"ok|97 256 9"#),
            (
                r#"struct.unpack('z', 'abc')"#,
                r#"err|user_script:1: bad argument #1 to 'unpack' (invalid format option 'z')"#,
            ),
            (r#"struct.unpack('>', 'abc'), struct.unpack(' ', '')"#, r#"ok|1 1"#),
            (
                r#"struct.unpack('B')"#,
                r#"err|user_script:1: bad argument #2 to 'unpack' (string expected, got no value)"#,
            ),
            (r#"struct.unpack()"#, r#"err|user_script:1: bad argument #1 to 'unpack' (string expected, got no value)"#),
            (
                r#"struct.unpack('B', {})"#,
                r#"err|user_script:1: bad argument #2 to 'unpack' (string expected, got table)"#,
            ),
            (
                r#"struct.unpack('B', 12), struct.unpack('c0', 5)"#,
                r#"err|user_script:1: format 'c0' needs a previous size"#,
            ),
            (
                r#"struct.unpack('B', 'a', {})"#,
                r#"err|user_script:1: bad argument #3 to 'unpack' (number expected, got table)"#,
            ),
            (
                r#"struct.unpack(string.rep('B', 9000), string.rep('a', 9000))"#,
                r#"err|user_script:1: stack overflow (too many results)"#,
            ),
            (
                r#"struct.size('>I'), struct.size('bBhHlLiIfdT'), struct.size('!4bi'), struct.size('!bhd'), struct.size('c10'), struct.size('i7'), struct.size('x')"#,
                r#"ok|4 50 8 16 10 7 1"#,
            ),
            (r#"struct.size('s')"#, r#"err|user_script:1: bad argument #1 to 'size' (option 's' has no fixed size)"#),
            (r#"struct.size('c0')"#, r#"err|user_script:1: bad argument #1 to 'size' (option 'c0' has no fixed size)"#),
            (r#"struct.size('zc'), struct.size('5'), struct.size('!\0i'), struct.size('')"#, r#"ok|1 0 0 0"#),
            (r#"struct.size('!3')"#, r#"err|user_script:1: alignment 3 is not a power of 2"#),
            (r#"struct.size('?')"#, r#"err|user_script:1: bad argument #1 to 'size' (invalid format option '?')"#),
            (r#"struct.size('i40')"#, r#"err|user_script:1: integral size 40 is larger than limit of 32"#),
            (r#"struct.size()"#, r#"err|user_script:1: bad argument #1 to 'size' (string expected, got no value)"#),
            (r#"struct.size(5)"#, r#"ok|0"#),
            (
                r#"struct.unpack('>i9', string.rep('\255', 9)), struct.unpack('<i9', '\1\0\0\0\0\0\0\0\128'), struct.unpack('>i10', '\128\0\0\0\0\0\0\0\0\1'), struct.unpack('>i17', string.rep('\128', 17)), struct.unpack('<i32', string.rep('\255', 32)), struct.unpack('>i0', ''), struct.unpack('>I0', '')"#,
                r#"ok|-1 1 1 -128 -1 0 0 1"#,
            ),
            (
                r#"struct.pack('>i32', -3), struct.pack('<I17', 2^60), struct.pack('>i9', 1/0)"#,
                r#"ok|"\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\000\255\255\255\255\255\255\255\253" "\000\000\000\000\000\000\000\16\000\000\000\000\000\000\000\000\000" "\000\000\000\000\000\000\000\000\000""#,
            ),
            (
                r#"struct.unpack('!8 b d', struct.pack('!8 b d', 1, 2.5)), struct.unpack('!2 h b h', '\1\0\2\0\3\0'), struct.size('!2 h b h'), struct.size('!16 b d'), struct.size('!1 b d'), struct.size('! b d')"#,
                r#"ok|1 1 6 16 9 16"#,
            ),
            (
                r#"struct.unpack('c3c3', 'abcdef'), struct.unpack('c3', 'abcdef', 4), struct.unpack('c3', 'abcdef', 5)"#,
                r#"err|user_script:1: bad argument #2 to 'unpack' (data string too short)"#,
            ),
            (
                r#"struct.unpack('Bc0Bc0', '\2ab\3xyz'), struct.unpack('hc0', '\2\0ab'), struct.unpack('dc0', struct.pack('d', 2.9) .. 'abc')"#,
                r#"ok|"ab" "ab" "ab" 11"#,
            ),
            (
                r#"struct.unpack('dc0', struct.pack('d', -1) .. 'abc')"#,
                r#"err|user_script:1: bad argument #2 to 'unpack' (data string too short)"#,
            ),
            (
                r#"struct.unpack('dc0', struct.pack('d', 0/0) .. 'abc')"#,
                r#"err|user_script:1: bad argument #2 to 'unpack' (data string too short)"#,
            ),
            (r#"struct.unpack('>I2c0', '\0\3abc'), struct.pack('>I2c0', 3, 'abc')"#, r#"ok|"abc" "\000\3abc""#),
        ]);
    }
}
