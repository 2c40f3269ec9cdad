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
        value = value.checked_shr(8).unwrap_or(0);
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
        v = v.checked_shl(8).unwrap_or(0) | u64::from(buf[i]);
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
