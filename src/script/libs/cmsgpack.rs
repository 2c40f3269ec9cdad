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
            // A read-only library table packs as the table it stands for.
            if ffi::lua_checkstack(l, 4) != 0 {
                crate::script::lua::unproxy(l, -1);
            }
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
                r#"cmsgpack.pack(0), cmsgpack.pack(1), cmsgpack.pack(127), cmsgpack.pack(128), cmsgpack.pack(255), cmsgpack.pack(256), cmsgpack.pack(65535), cmsgpack.pack(65536), cmsgpack.pack(2^32-1), cmsgpack.pack(2^32), cmsgpack.pack(2^53), cmsgpack.pack(2^63)"#,
                r#"ok|"\000" "\1" "\127" "\204\128" "\204\255" "\205\1\000" "\205\255\255" "\206\000\1\000\000" "\206\255\255\255\255" "\207\000\000\000\1\000\000\000\000" "\207\000 \000\000\000\000\000\000" "\202_\000\000\000""#,
            ),
            (
                r#"cmsgpack.pack(-1), cmsgpack.pack(-32), cmsgpack.pack(-33), cmsgpack.pack(-128), cmsgpack.pack(-129), cmsgpack.pack(-32768), cmsgpack.pack(-32769), cmsgpack.pack(-2^31), cmsgpack.pack(-2^31-1), cmsgpack.pack(-2^63), cmsgpack.pack(-2^64)"#,
                r#"ok|"\255" "\224" "\208\223" "\208\128" "\209\255\127" "\209\128\000" "\210\255\255\127\255" "\210\128\000\000\000" "\211\255\255\255\255\127\255\255\255" "\211\128\000\000\000\000\000\000\000" "\202\223\128\000\000""#,
            ),
            (
                r#"cmsgpack.pack(1.5), cmsgpack.pack(0.1), cmsgpack.pack(-0.0), cmsgpack.pack(1/0), cmsgpack.pack(-1/0), cmsgpack.pack(0/0), cmsgpack.pack(1e300), cmsgpack.pack(3.4028234663852886e38), cmsgpack.pack(2^-149), cmsgpack.pack(2^64+2^12)"#,
                r#"ok|"\202?\192\000\000" "\203?\185\153\153\153\153\153\154" "\000" "\202\255\128\000\000" "\202\127\128\000\000" "\203\255\248\000\000\000\000\000\000" "\203~7\228<\136\000u\156" "\202\127\127\255\255" "\202\000\000\000\1" "\203C\240\000\000\000\000\000\1""#,
            ),
            (
                r#"cmsgpack.pack(''), cmsgpack.pack('abc'), cmsgpack.pack(string.rep('x', 31)), cmsgpack.pack(string.rep('x', 32)), #cmsgpack.pack(string.rep('x', 255)), #cmsgpack.pack(string.rep('x', 256)), string.sub(cmsgpack.pack(string.rep('x', 256)), 1, 4), string.sub(cmsgpack.pack(string.rep('x', 65536)), 1, 6)"#,
                r#"ok|"\160" "\163abc" "\191xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" "\217 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx" 257 259 "\218\1\000x" "\219\000\1\000\000x""#,
            ),
            (
                r#"cmsgpack.pack(true), cmsgpack.pack(false), cmsgpack.pack(nil), cmsgpack.pack(cjson.null), cmsgpack.pack(coroutine and coroutine.create(function() end) or nil)"#,
                r#"ok|"\195" "\194" "\192" "\192" "\192""#,
            ),
            (
                r#"cmsgpack.pack({}), cmsgpack.pack({1,2,3}), cmsgpack.pack({1,nil,3}), cmsgpack.pack({a=1}), cmsgpack.pack({[1]=1,[2]=2,[4]=4}), cmsgpack.pack({[0]=1}), cmsgpack.pack({[1.5]=1}), cmsgpack.pack({[-1]=1}), cmsgpack.pack({[2]=2})"#,
                r#"ok|"\144" "\147\1\2\3" "\130\1\1\3\3" "\129\161a\1" "\131\1\1\2\2\4\4" "\129\000\1" "\129\202?\192\000\000\1" "\129\255\1" "\129\2\2""#,
            ),
            (
                r#"cmsgpack.pack({1,2,3,4,5,6,7,8,9,10,11,12,13,14,15}), cmsgpack.pack({1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16}), string.sub(cmsgpack.pack((function() local t = {} for i=1,70000 do t[i]=i end return t end)()), 1, 5)"#,
                r#"ok|"\159\1\2\3\4\5\6\7\8\9\\10\11\12\r\14\15" "\220\000\16\1\2\3\4\5\6\7\8\9\\10\11\12\r\14\15\16" "\221\000\1\17p""#,
            ),
            (
                r#"cmsgpack.pack({a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8}), cmsgpack.pack({x={y={z={1,2}}}}), cmsgpack.pack({1, 'two', {three=3}, true})"#,
                r#"ok|"\136\161a\1\161h\8\161c\3\161b\2\161e\5\161d\4\161g\7\161f\6" "\129\161x\129\161y\129\161z\146\1\2" "\148\1\163two\129\165three\3\195""#,
            ),
            (
                r#"cmsgpack.pack((function() local t = {} for i=1,20 do t['key'..i]=i*3 end return t end)())"#,
                r#"ok|"\222\000\20\165key160\164key9\27\164key5\15\164key1\3\164key7\21\164key3\9\164key8\24\165key12$\165key11!\165key10\30\165key199\165key173\165key20<\164key2\6\165key13'\164key6\18\165key186\165key15-\164key4\12\165key14*""#,
            ),
            (
                r#"cmsgpack.pack((function() local t = {} t.self = t return t end)())"#,
                r#"ok|"\129\164self\129\164self\129\164self\129\164self\129\164self\129\164self\129\164self\129\164self\129\164self\129\164self\129\164self\129\164self\129\164self\129\164self\129\164self\129\164self\192""#,
            ),
            (
                r#"cmsgpack.pack((function() local t = {} local c = t for i=1,20 do c[1] = {} c = c[1] end return t end)())"#,
                r#"ok|"\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\145\192""#,
            ),
            (r#"cmsgpack.pack(1, 'a', {2}, nil, true)"#, r#"ok|"\1\161a\145\2\192\195""#),
            (r#"cmsgpack.pack()"#, r#"err|user_script:1: bad argument #0 to 'pack' (MessagePack pack needs input.)"#),
            (
                r#"cmsgpack.pack(unpack((function() local t = {} for i=1,5000 do t[i]=i end return t end)()))"#,
                r#"err|user_script:1: bad argument #0 to 'pack' (Too many arguments for MessagePack pack.)"#,
            ),
            (
                r#"cmsgpack.pack(setmetatable({}, {__index=function() return 1 end})), cmsgpack.pack(setmetatable({1,2}, {__len=function() return 5 end}))"#,
                r#"ok|"\144" "\146\1\2""#,
            ),
            (
                r#"cmsgpack.unpack(cmsgpack.pack(1, -1, 300, -300, 70000, -70000, 2^40, -2^40, 1.5, 0.1, 'abc', true, false))"#,
                r#"ok|1 -1 300 -300 70000 -70000 1099511627776 -1099511627776 1.5 0.10000000000000001 "abc" true false"#,
            ),
            (
                r#"cmsgpack.unpack(cmsgpack.pack({1,2,{a={b='c'}}, {}}))"#,
                r#"ok|{[1]=1,[2]=2,[3]={["a"]={["b"]="c"}},[4]={}}"#,
            ),
            (
                r#"cmsgpack.unpack('\192'), cmsgpack.unpack('\192\192'), select('#', cmsgpack.unpack('\192\192'))"#,
                r#"ok|nil nil 2"#,
            ),
            (r#"cmsgpack.unpack('')"#, r#"ok|"#),
            (r#"cmsgpack.unpack('\204')"#, r#"err|user_script:1: Missing bytes in input."#),
            (r#"cmsgpack.unpack('\193')"#, r#"err|user_script:1: Bad data format in input."#),
            (r#"cmsgpack.unpack('\196\1a')"#, r#"err|user_script:1: Bad data format in input."#),
            (r#"cmsgpack.unpack('\217\3ab')"#, r#"err|user_script:1: Missing bytes in input."#),
            (
                r#"cmsgpack.unpack('\217\3abc'), cmsgpack.unpack('\218\0\3abc'), cmsgpack.unpack('\219\0\0\0\3abc'), cmsgpack.unpack('\163abc')"#,
                r#"ok|"abc" "abc" "abc" "abc""#,
            ),
            (r#"cmsgpack.unpack('\219\0\0\0\9abc')"#, r#"err|user_script:1: Missing bytes in input."#),
            (
                r#"cmsgpack.unpack('\207\255\255\255\255\255\255\255\255'), cmsgpack.unpack('\207\127\255\255\255\255\255\255\255'), cmsgpack.unpack('\211\128\0\0\0\0\0\0\0'), cmsgpack.unpack('\211\255\255\255\255\255\255\255\254')"#,
                r#"ok|-1 9.2233720368547758e+18 -9.2233720368547758e+18 -2"#,
            ),
            (
                r#"cmsgpack.unpack('\206\255\255\255\255'), cmsgpack.unpack('\210\128\0\0\0'), cmsgpack.unpack('\205\255\255'), cmsgpack.unpack('\209\128\0'), cmsgpack.unpack('\209\255\1'), cmsgpack.unpack('\204\255'), cmsgpack.unpack('\208\128'), cmsgpack.unpack('\224'), cmsgpack.unpack('\255'), cmsgpack.unpack('\127')"#,
                r#"ok|4294967295 -2147483648 65535 -32768 -255 255 -128 -32 -1 127"#,
            ),
            (
                r#"cmsgpack.unpack('\202\127\128\0\0'), cmsgpack.unpack('\202\63\192\0\0'), cmsgpack.unpack('\203\63\248\0\0\0\0\0\0'), cmsgpack.unpack('\203\255\248\0\0\0\0\0\0')"#,
                r#"ok|inf 1.5 1.5 -nan"#,
            ),
            (r#"cmsgpack.unpack('\147\1\2'), 1"#, r#"err|user_script:1: Missing bytes in input."#),
            (r#"cmsgpack.unpack('\147\1\192\3')"#, r#"ok|{[1]=1,[3]=3}"#),
            (
                r#"cmsgpack.unpack('\130\1\2\3\4'), cmsgpack.unpack('\129\161a\192'), cmsgpack.unpack('\130\1\2\1\3')"#,
                r#"ok|{[1]=2,[3]=4} {} {[1]=3}"#,
            ),
            (r#"cmsgpack.unpack('\129\192\1')"#, r#"err|table index is nil"#),
            (r#"cmsgpack.unpack('\129\203\255\248\0\0\0\0\0\0\1')"#, r#"err|table index is NaN"#),
            (
                r#"cmsgpack.unpack('\220\0\2\1\2'), cmsgpack.unpack('\221\0\0\0\1\5'), cmsgpack.unpack('\222\0\1\1\2'), cmsgpack.unpack('\223\0\0\0\1\1\2')"#,
                r#"ok|{[1]=1,[2]=2} {[1]=5} {[1]=2} {[1]=2}"#,
            ),
            (r#"cmsgpack.unpack('\221\255\255\255\255\1')"#, r#"err|user_script:1: Missing bytes in input."#),
            (r#"cmsgpack.unpack('\145\193')"#, r#"err|user_script:1: Bad data format in input."#),
            (r#"cmsgpack.unpack(12), cmsgpack.unpack(12.5)"#, r#"ok|49 49 50 46 53"#),
            (
                r#"cmsgpack.unpack()"#,
                r#"err|user_script:1: bad argument #1 to 'unpack' (string expected, got no value)"#,
            ),
            (
                r#"cmsgpack.unpack({})"#,
                r#"err|user_script:1: bad argument #1 to 'unpack' (string expected, got table)"#,
            ),
            (r#"cmsgpack.unpack('\1', 'extra', 3)"#, r#"ok|1"#),
            (r#"cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3))"#, r#"ok|1 1"#),
            (
                r#"cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 1), cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 2), cmsgpack.unpack_one(cmsgpack.pack(1, 2, 3), 3)"#,
                r#"ok|2 -1 -1"#,
            ),
            (r#"cmsgpack.unpack_one('')"#, r#"ok|-1"#),
            (
                r#"cmsgpack.unpack_one('\1', -1)"#,
                r#"err|user_script:1: Invalid request to unpack with offset of -1 and limit of 1."#,
            ),
            (r#"cmsgpack.unpack_one('\1', 5)"#, r#"err|user_script:1: Start offset 5 greater than input length 1."#),
            (
                r#"cmsgpack.unpack_one('\1', 'x')"#,
                r#"err|user_script:1: bad argument #2 to 'unpack_one' (number expected, got string)"#,
            ),
            (
                r#"cmsgpack.unpack_one()"#,
                r#"err|user_script:1: bad argument #1 to 'unpack_one' (string expected, got no value)"#,
            ),
            (r#"cmsgpack.unpack_one('\1\2', 1.7), cmsgpack.unpack_one('\1\2', '1')"#, r#"ok|-1 -1 2"#),
            (r#"cmsgpack.unpack_one('\204', 0)"#, r#"err|user_script:1: Missing bytes in input."#),
            (r#"cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2)"#, r#"ok|2 1 2"#),
            (
                r#"cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2, 2), cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 5, 1)"#,
                r#"ok|-1 -1 2 3"#,
            ),
            (r#"cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0)"#, r#"ok|1 2 3"#),
            (r#"cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 0, 1)"#, r#"ok|1"#),
            (
                r#"cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), -1)"#,
                r#"err|user_script:1: Invalid request to unpack with offset of 0 and limit of 3."#,
            ),
            (
                r#"cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), -1, -5)"#,
                r#"err|user_script:1: Invalid request to unpack with offset of -5 and limit of 3."#,
            ),
            (
                r#"cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 1, 99)"#,
                r#"err|user_script:1: Start offset 99 greater than input length 3."#,
            ),
            (
                r#"cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 2^33, 2^32 + 1)"#,
                r#"err|user_script:1: Start offset 1 greater than input length 3."#,
            ),
            (
                r#"cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3))"#,
                r#"err|user_script:1: bad argument #2 to 'unpack_limit' (number expected, got no value)"#,
            ),
            (
                r#"cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 'a')"#,
                r#"err|user_script:1: bad argument #2 to 'unpack_limit' (number expected, got string)"#,
            ),
            (
                r#"cmsgpack.unpack_limit(cmsgpack.pack(1, 2, 3), 1, {})"#,
                r#"err|user_script:1: bad argument #3 to 'unpack_limit' (number expected, got table)"#,
            ),
            (
                r#"select('#', cmsgpack.unpack(string.rep('\1', 9000)))"#,
                r#"err|user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"#,
            ),
            (
                r#"select('#', cmsgpack.unpack(string.rep('\145', 5000) .. '\1'))"#,
                r#"err|user_script:1: stack overflow (in function mp_decode_to_lua_array)"#,
            ),
            (
                r#"select('#', cmsgpack.unpack(string.rep('\129\1', 5000) .. '\1'))"#,
                r#"err|user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"#,
            ),
            (r#"select('#', cmsgpack.unpack(string.rep('\145', 3000) .. '\1'))"#, r#"ok|1"#),
            (
                r#"cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION"#,
                r#"ok|"cmsgpack" "lua-cmsgpack 0.4.0" "Copyright (C) 2012, Salvatore Sanfilippo" "MessagePack C implementation for Lua""#,
            ),
            (
                r#"(function() local out = {} for k in pairs(cmsgpack) do out[#out+1] = k end return table.concat(out, ',') end)()"#,
                r#"ok|"_DESCRIPTION,pack,_NAME,unpack,_COPYRIGHT,_VERSION,unpack_one,unpack_limit""#,
            ),
            (r#"cmsgpack.unpack(string.rep('\129\161a', 3) .. '\1')"#, r#"ok|{["a"]={["a"]={["a"]=1}}}"#),
            (
                r#"select(2, pcall(cmsgpack.unpack, string.rep('\129\161a', 5000) .. '\1'))"#,
                r#"ok|"stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)""#,
            ),
            (
                r#"select(2, pcall(cmsgpack.unpack, string.rep('\129\1', 5000) .. '\1'))"#,
                r#"ok|"stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)""#,
            ),
            (
                r#"select(2, pcall(cmsgpack.unpack, string.rep('\145', 5000) .. '\1'))"#,
                r#"ok|"stack overflow (in function mp_decode_to_lua_array)""#,
            ),
            (r#"select('#', cmsgpack.unpack(string.rep('\145', 3900) .. '\1'))"#, r#"ok|1"#),
            (
                r#"select(2, pcall(cmsgpack.unpack, string.rep('\1', 9000)))"#,
                r#"ok|"stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)""#,
            ),
            (r#"select('#', cmsgpack.unpack(string.rep('\1', 7900)))"#, r#"ok|7900"#),
            (
                r#"(function() local ok, e = pcall(cmsgpack.pack, unpack((function() local t = {} for i=1,4500 do t[i]=i end return t end)())) return ok, e end)()"#,
                r#"ok|false "bad argument #0 to '?' (Too many arguments for MessagePack pack.)""#,
            ),
            (
                r#"select('#', cmsgpack.unpack(cmsgpack.pack(unpack((function() local t = {} for i=1,3990 do t[i]=i end return t end)()))))"#,
                r#"ok|3990"#,
            ),
            (r#"cmsgpack.unpack_limit(cmsgpack.pack(1,2,3,4,5), 2, 1)"#, r#"ok|3 2 3"#),
            (
                r#"(function() local s = cmsgpack.pack(1, 'x', {1}) local off, v = 0 local out = {} repeat off, v = cmsgpack.unpack_one(s, off) out[#out+1] = cjson.encode(v) until off == -1 return table.concat(out, ';') end)()"#,
                r#"ok|"1;\"x\";[1]""#,
            ),
        ]);
    }
}
