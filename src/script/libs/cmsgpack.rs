//! `cmsgpack`: MessagePack for Lua (lua-cmsgpack 0.4.0) as Redis 7.0
//! bundles it.
//!
//! Packing: integral numbers take the smallest integer encoding, other
//! numbers a float32 when that is exact and a float64 otherwise; strings are
//! fixstr/str8/str16/str32; a table whose keys are exactly 1..n is an array
//! (the empty table included), any other a map in `next` order; nil,
//! functions, userdata and tables nested 16 deep are nil. Unpacking knows
//! the same types (no bin/ext) and returns every value of a stream, or with
//! `unpack_one`/`unpack_limit` the offset to continue from (-1 at the end)
//! followed by the values.

use std::ffi::{c_int, CStr};

use mlua::ffi::{self, lua_State};

use super::{
    c_i32, c_i64, check_bytes, check_integer, opt_integer, push_bytes, run, set_funcs, set_str_field, Fail, Ret,
};

/// Tables nested deeper than this are packed as nil.
const MAX_NESTING: i32 = 16;

fn encode_bytes(buf: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 32 {
        buf.push(0xa0 | len as u8);
    } else if len <= 0xff {
        buf.extend_from_slice(&[0xd9, len as u8]);
    } else if len <= 0xffff {
        buf.push(0xda);
        buf.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        buf.push(0xdb);
        buf.extend_from_slice(&(len as u32).to_be_bytes());
    }
    buf.extend_from_slice(s);
}

fn encode_double(buf: &mut Vec<u8>, d: f64) {
    let f = d as f32;
    if d == f64::from(f) {
        buf.push(0xca);
        buf.extend_from_slice(&f.to_be_bytes());
    } else {
        buf.push(0xcb);
        buf.extend_from_slice(&d.to_be_bytes());
    }
}

fn encode_int(buf: &mut Vec<u8>, n: i64) {
    if n >= 0 {
        if n <= 127 {
            buf.push(n as u8);
        } else if n <= 0xff {
            buf.extend_from_slice(&[0xcc, n as u8]);
        } else if n <= 0xffff {
            buf.push(0xcd);
            buf.extend_from_slice(&(n as u16).to_be_bytes());
        } else if n <= 0xffff_ffff {
            buf.push(0xce);
            buf.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            buf.push(0xcf);
            buf.extend_from_slice(&(n as u64).to_be_bytes());
        }
    } else if n >= -32 {
        buf.push(n as i8 as u8);
    } else if n >= -128 {
        buf.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        buf.push(0xd1);
        buf.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2_147_483_648 {
        buf.push(0xd2);
        buf.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        buf.push(0xd3);
        buf.extend_from_slice(&n.to_be_bytes());
    }
}

/// Array (`base` 0x90) or map (`base` 0x80) header.
fn encode_container(buf: &mut Vec<u8>, base: u8, n: u64) {
    if n <= 15 {
        buf.push(base | n as u8);
    } else if n <= 0xffff {
        buf.push(if base == 0x90 { 0xdc } else { 0xde });
        buf.extend_from_slice(&(n as u16).to_be_bytes());
    } else {
        buf.push(if base == 0x90 { 0xdd } else { 0xdf });
        buf.extend_from_slice(&(n as u32).to_be_bytes());
    }
}

/// `luaL_checkstack` with the library's messages.
unsafe fn need_stack(l: *mut lua_State, n: c_int, what: &str) -> Result<(), Fail> {
    if ffi::lua_checkstack(l, n) == 0 {
        return Err(Fail::msg(format!("stack overflow ({what})")));
    }
    Ok(())
}

/// True when the table on top of the stack has exactly the keys 1..n.
unsafe fn table_is_an_array(l: *mut lua_State) -> Result<bool, Fail> {
    let top = ffi::lua_gettop(l);
    need_stack(l, 2, "in function table_is_an_array")?;
    let (mut count, mut max) = (0i32, 0i32);
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        ffi::lua_settop(l, -2);
        let n = ffi::lua_tonumber(l, -1);
        let int_key =
            ffi::lua_type(l, -1) == ffi::LUA_TNUMBER && n > 0.0 && !n.is_infinite() && f64::from(c_i32(n)) == n;
        if !int_key {
            ffi::lua_settop(l, top);
            return Ok(false);
        }
        if n > f64::from(max) {
            max = n as i32;
        }
        count = count.wrapping_add(1);
    }
    ffi::lua_settop(l, top);
    Ok(max == count)
}

/// Encodes the value on top of the stack, then pops it.
unsafe fn encode_value(l: *mut lua_State, buf: &mut Vec<u8>, level: i32) -> Result<(), Fail> {
    let mut t = ffi::lua_type(l, -1);
    if t == ffi::LUA_TTABLE && level == MAX_NESTING {
        t = ffi::LUA_TNIL;
    }
    match t {
        ffi::LUA_TSTRING => encode_bytes(buf, super::to_bytes(l, -1).unwrap_or_default()),
        ffi::LUA_TBOOLEAN => buf.push(if ffi::lua_toboolean(l, -1) != 0 { 0xc3 } else { 0xc2 }),
        ffi::LUA_TNUMBER => {
            let n = ffi::lua_tonumber(l, -1);
            if !n.is_infinite() && c_i64(n) as f64 == n {
                encode_int(buf, c_i64(n));
            } else {
                encode_double(buf, n);
            }
        }
        ffi::LUA_TTABLE => {
            if table_is_an_array(l)? {
                let len = ffi::lua_objlen(l, -1);
                encode_container(buf, 0x90, len as u64);
                need_stack(l, 1, "in function mp_encode_lua_table_as_array")?;
                for j in 1..=len {
                    // Every key 1..len holds a value, so no metamethod runs.
                    ffi::lua_rawgeti_(l, -1, j as c_int);
                    encode_value(l, buf, level + 1)?;
                }
            } else {
                need_stack(l, 3, "in function mp_encode_lua_table_as_map")?;
                let mut len = 0u64;
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    ffi::lua_settop(l, -2);
                    len += 1;
                }
                encode_container(buf, 0x80, len);
                ffi::lua_pushnil(l);
                while ffi::lua_next(l, -2) != 0 {
                    ffi::lua_pushvalue(l, -2);
                    encode_value(l, buf, level + 1)?; // the key
                    encode_value(l, buf, level + 1)?; // the value
                }
            }
        }
        _ => buf.push(0xc0),
    }
    ffi::lua_settop(l, -2);
    Ok(())
}

/// `cmsgpack.pack(...)`: the concatenated encodings of all arguments.
unsafe extern "C-unwind" fn pack(l: *mut lua_State) -> c_int {
    run(l, || {
        let nargs = ffi::lua_gettop(l);
        if nargs == 0 {
            return Err(Fail::arg(0, "MessagePack pack needs input."));
        }
        if ffi::lua_checkstack(l, nargs) == 0 {
            return Err(Fail::arg(0, "Too many arguments for MessagePack pack."));
        }
        let mut buf = Vec::new();
        for i in 1..=nargs {
            need_stack(l, 1, "in function mp_check")?;
            ffi::lua_pushvalue(l, i);
            encode_value(l, &mut buf, 0)?;
            push_bytes(l, &buf);
            buf.clear();
        }
        ffi::lua_concat(l, nargs);
        Ok(1)
    })
}

/// Decoding stopped: input ended early, or an unknown type byte.
enum Stop {
    Eof,
    BadFormat,
    Lua(Fail),
}

impl From<Fail> for Stop {
    fn from(f: Fail) -> Stop {
        Stop::Lua(f)
    }
}

struct Cursor<'a> {
    s: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    fn left(&self) -> usize {
        self.s.len() - self.at
    }

    fn need(&self, n: usize) -> Result<(), Stop> {
        if self.left() < n {
            Err(Stop::Eof)
        } else {
            Ok(())
        }
    }

    /// Byte `i` from the current position (checked by `need`).
    fn at(&self, i: usize) -> u8 {
        self.s[self.at + i]
    }

    fn be(&self, from: usize, n: usize) -> u64 {
        (0..n).fold(0u64, |v, i| (v << 8) | u64::from(self.at(from + i)))
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let s = &self.s[self.at..self.at + n];
        self.at += n;
        s
    }
}

/// An integer of `len - 1` bytes after the tag, pushed as lua_pushinteger.
unsafe fn push_int(
    l: *mut lua_State,
    c: &mut Cursor<'_>,
    len: usize,
    read: fn(&Cursor<'_>) -> i64,
) -> Result<Option<Frame>, Stop> {
    c.need(len)?;
    ffi::lua_pushinteger(l, read(c));
    c.at += len;
    Ok(None)
}

/// An array or map being filled while decoding.
enum Frame {
    /// The next index to set, and how many elements are still to come.
    Array { index: u32, left: usize },
    /// Pairs still to come; `key` when the pair's key is on the stack.
    Map { left: usize, key: bool },
}

/// Starts decoding one value: a scalar is pushed whole (`None`); an array
/// or map pushes its empty table and returns its frame.
unsafe fn start_value(l: *mut lua_State, c: &mut Cursor<'_>) -> Result<Option<Frame>, Stop> {
    c.need(1)?;
    need_stack(l, 1, "too many return values at once; use unpack_one or unpack_limit instead.")?;
    let tag = c.at(0);
    let (array, n) = match tag {
        0xcc => return push_int(l, c, 2, |c| i64::from(c.at(1))),
        0xd0 => return push_int(l, c, 2, |c| i64::from(c.at(1) as i8)),
        0xcd => return push_int(l, c, 3, |c| c.be(1, 2) as i64),
        0xd1 => return push_int(l, c, 3, |c| i64::from(c.be(1, 2) as u16 as i16)),
        0xce => return push_int(l, c, 5, |c| c.be(1, 4) as i64),
        0xd2 => return push_int(l, c, 5, |c| i64::from(c.be(1, 4) as u32 as i32)),
        // lua_pushinteger of a uint64: past INT64_MAX it turns negative.
        0xcf => return push_int(l, c, 9, |c| c.be(1, 8) as i64),
        0xd3 => {
            c.need(9)?;
            ffi::lua_pushnumber(l, c.be(1, 8) as i64 as f64);
            c.at += 9;
            return Ok(None);
        }
        0xc0 => {
            ffi::lua_pushnil(l);
            c.at += 1;
            return Ok(None);
        }
        0xc2 | 0xc3 => {
            ffi::lua_pushboolean(l, c_int::from(tag == 0xc3));
            c.at += 1;
            return Ok(None);
        }
        0xca => {
            c.need(5)?;
            ffi::lua_pushnumber(l, f64::from(f32::from_bits(c.be(1, 4) as u32)));
            c.at += 5;
            return Ok(None);
        }
        0xcb => {
            c.need(9)?;
            ffi::lua_pushnumber(l, f64::from_bits(c.be(1, 8)));
            c.at += 9;
            return Ok(None);
        }
        0xd9 => {
            c.need(2)?;
            let n = usize::from(c.at(1));
            return decode_str(l, c, 2, n);
        }
        0xda => {
            c.need(3)?;
            let n = c.be(1, 2) as usize;
            return decode_str(l, c, 3, n);
        }
        0xdb => {
            c.need(5)?;
            let n = c.be(1, 4) as usize;
            c.at += 5;
            return decode_str(l, c, 0, n);
        }
        0xdc | 0xde => {
            c.need(3)?;
            let n = c.be(1, 2) as usize;
            c.at += 3;
            (tag == 0xdc, n)
        }
        0xdd | 0xdf => {
            c.need(5)?;
            let n = c.be(1, 4) as usize;
            c.at += 5;
            (tag == 0xdd, n)
        }
        _ if tag & 0x80 == 0 => {
            ffi::lua_pushinteger(l, i64::from(tag));
            c.at += 1;
            return Ok(None);
        }
        _ if tag & 0xe0 == 0xe0 => {
            ffi::lua_pushinteger(l, i64::from(tag as i8));
            c.at += 1;
            return Ok(None);
        }
        _ if tag & 0xe0 == 0xa0 => return decode_str(l, c, 1, usize::from(tag & 0x1f)),
        _ if tag & 0xf0 == 0x90 || tag & 0xf0 == 0x80 => {
            c.at += 1;
            (tag & 0xf0 == 0x90, usize::from(tag & 0xf))
        }
        _ => return Err(Stop::BadFormat),
    };
    ffi::lua_createtable(l, 0, 0);
    if array {
        need_stack(l, 1, "in function mp_decode_to_lua_array")?;
        Ok(Some(Frame::Array { index: 1, left: n }))
    } else {
        Ok(Some(Frame::Map { left: n, key: false }))
    }
}

/// A string of `n` bytes after a `hdr`-byte header.
unsafe fn decode_str(l: *mut lua_State, c: &mut Cursor<'_>, hdr: usize, n: usize) -> Result<Option<Frame>, Stop> {
    c.need(hdr.saturating_add(n))?;
    c.at += hdr;
    push_bytes(l, c.take(n));
    Ok(None)
}

/// Decodes one value, with everything nested in it, onto the stack. Nesting
/// is followed with an explicit stack of frames rather than recursion.
unsafe fn decode_value(l: *mut lua_State, c: &mut Cursor<'_>) -> Result<(), Stop> {
    let mut frames: Vec<Frame> = Vec::new();
    let mut opened = start_value(l, c)?;
    loop {
        if let Some(frame) = opened.take() {
            frames.push(frame);
        } else {
            // A value is complete on top of the stack: store it.
            match frames.last_mut() {
                None => return Ok(()),
                Some(Frame::Array { index, left }) => {
                    ffi::lua_rawset(l, -3);
                    *index = index.wrapping_add(1);
                    *left -= 1;
                }
                Some(Frame::Map { key, .. }) if !*key => *key = true,
                Some(Frame::Map { left, key }) => {
                    match ffi::lua_type(l, -2) {
                        ffi::LUA_TNIL => return Err(Fail::Raw(b"table index is nil".to_vec()).into()),
                        ffi::LUA_TNUMBER if ffi::lua_tonumber(l, -2).is_nan() => {
                            return Err(Fail::Raw(b"table index is NaN".to_vec()).into())
                        }
                        _ => ffi::lua_rawset(l, -3),
                    }
                    *left -= 1;
                    *key = false;
                }
            }
        }
        // Start the container's next element, or close it.
        match frames.last_mut().expect("an open container") {
            Frame::Array { left: 0, .. } | Frame::Map { left: 0, key: false } => {
                frames.pop();
            }
            Frame::Array { index, .. } => {
                ffi::lua_pushnumber(l, f64::from(*index as i32));
                opened = start_value(l, c)?;
            }
            Frame::Map { .. } => opened = start_value(l, c)?,
        }
    }
}

/// Decodes up to `limit` values from `offset` (everything when both are 0).
unsafe fn unpack_full(l: *mut lua_State, limit: i64, offset: i64) -> Ret {
    let s = check_bytes(l, 1)?;
    let len = s.len();
    if offset < 0 || limit < 0 {
        return Err(Fail::msg(format!(
            "Invalid request to unpack with offset of {} and limit of {}.",
            offset as i32, len as i32
        )));
    } else if offset as u64 > len as u64 {
        return Err(Fail::msg(format!("Start offset {} greater than input length {}.", offset as i32, len as i32)));
    }
    let decode_all = limit == 0 && offset == 0;
    let limit = if decode_all { i64::from(i32::MAX) } else { limit };
    let mut c = Cursor { s, at: offset as usize };
    let mut cnt: c_int = 0;
    while c.left() > 0 && i64::from(cnt) < limit {
        match decode_value(l, &mut c) {
            Ok(()) => {}
            Err(Stop::Eof) => return Err(Fail::msg("Missing bytes in input.")),
            Err(Stop::BadFormat) => return Err(Fail::msg("Bad data format in input.")),
            Err(Stop::Lua(f)) => return Err(f),
        }
        cnt += 1;
    }
    if !decode_all {
        need_stack(l, 1, "in function mp_unpack_full")?;
        let next = if c.left() == 0 { -1 } else { c.at as i64 };
        ffi::lua_pushinteger(l, next);
        ffi::lua_insert(l, 2);
        cnt += 1;
    }
    Ok(cnt)
}

/// `cmsgpack.unpack(s)`: every value in `s`.
unsafe extern "C-unwind" fn unpack(l: *mut lua_State) -> c_int {
    run(l, || unpack_full(l, 0, 0))
}

/// Drops every argument but the first (`lua_pop(L, lua_gettop(L) - 1)`).
unsafe fn keep_first_arg(l: *mut lua_State) {
    let top = ffi::lua_gettop(l);
    ffi::lua_settop(l, -(top - 1) - 1);
}

/// `cmsgpack.unpack_one(s [, offset])`: next offset, then one value.
unsafe extern "C-unwind" fn unpack_one(l: *mut lua_State) -> c_int {
    run(l, || {
        let offset = opt_integer(l, 2, 0)?;
        keep_first_arg(l);
        unpack_full(l, 1, offset)
    })
}

/// `cmsgpack.unpack_limit(s, limit [, offset])`: next offset, then up to
/// `limit` values.
unsafe extern "C-unwind" fn unpack_limit(l: *mut lua_State) -> c_int {
    run(l, || {
        let limit = check_integer(l, 2)?;
        let offset = opt_integer(l, 3, 0)?;
        keep_first_arg(l);
        unpack_full(l, limit, offset)
    })
}

const FUNCS: &[(&CStr, ffi::lua_CFunction)] =
    &[(c"pack", pack), (c"unpack", unpack), (c"unpack_one", unpack_one), (c"unpack_limit", unpack_limit)];

/// Returns the `cmsgpack` table.
pub(crate) unsafe extern "C-unwind" fn open(l: *mut lua_State) -> c_int {
    ffi::lua_createtable(l, 0, 0);
    set_funcs(l, FUNCS, None);
    set_str_field(l, c"_NAME", "cmsgpack");
    set_str_field(l, c"_VERSION", "lua-cmsgpack 0.4.0");
    set_str_field(l, c"_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo");
    set_str_field(l, c"_DESCRIPTION", "MessagePack C implementation for Lua");
    1
}
