//! `cjson`: Lua CJSON 2.1.0 as Redis 7.0 bundles it.
//!
//! Encoding: strings escaped as Lua CJSON does (`/` becomes `\/`, control
//! characters and DEL `\u00XX`), numbers with `%.14g`, a table whose keys
//! are all positive integers is an array (holes become `null`; an
//! "excessively sparse" one is an error unless converting is enabled), any
//! other table, the empty one included, an object in `next` order;
//! `cjson.null` and nil are `null`. Decoding: objects and arrays become
//! tables, `null` becomes `cjson.null` (a NULL light userdata), `\uXXXX`
//! escapes (surrogate pairs included) become UTF-8, numbers are read with
//! `strtod`. Each table from `cjson.new()` has its own settings.
//!
//! Both directions walk nested data with an explicit stack instead of
//! recursion, so depth limits raised by a script cannot overflow the thread
//! stack; the Lua stack is used exactly as the C library uses it, so the
//! "excessive nesting" points are the same.

use std::ffi::{c_char, c_int, CStr};
use std::ptr;

use mlua::ffi::{self, lua_State};

use super::{c_i32, check_bytes, check_cstr, check_integer, push_bytes, run, set_str_field, Fail, Ret};

extern "C" {
    fn snprintf(buf: *mut c_char, size: usize, fmt: *const c_char, ...) -> c_int;
    fn strtod(s: *const c_char, end: *mut *mut c_char) -> f64;
}

/// One `cjson` table's settings (the upvalue of its functions).
#[repr(C)]
#[derive(Clone, Copy)]
struct Config {
    encode_sparse_convert: c_int,
    encode_sparse_ratio: c_int,
    encode_sparse_safe: c_int,
    encode_max_depth: c_int,
    /// 0 refuse, 1 allow, 2 encode as null.
    encode_invalid_numbers: c_int,
    encode_number_precision: c_int,
    encode_keep_buffer: c_int,
    decode_invalid_numbers: c_int,
    decode_max_depth: c_int,
}

const DEFAULTS: Config = Config {
    encode_sparse_convert: 0,
    encode_sparse_ratio: 2,
    encode_sparse_safe: 10,
    encode_max_depth: 1000,
    encode_invalid_numbers: 0,
    encode_number_precision: 14,
    encode_keep_buffer: 1,
    decode_invalid_numbers: 1,
    decode_max_depth: 1000,
};

/// The settings of the table the running function belongs to.
unsafe fn config<'a>(l: *mut lua_State) -> Result<&'a mut Config, Fail> {
    let p = ffi::lua_touserdata(l, ffi::lua_upvalueindex(1)) as *mut Config;
    if p.is_null() {
        return Err(Fail::msg("BUG: Unable to fetch CJSON configuration"));
    }
    Ok(&mut *p)
}

// ---------------------------------------------------------------- settings

/// Refuses extra arguments and pads missing ones with nil.
unsafe fn arg_init<'a>(l: *mut lua_State, args: c_int) -> Result<&'a mut Config, Fail> {
    if ffi::lua_gettop(l) > args {
        return Err(Fail::arg(args + 1, "found too many arguments"));
    }
    while ffi::lua_gettop(l) < args {
        ffi::lua_pushnil(l);
    }
    config(l)
}

/// Sets an integer option from argument `idx` (if not nil) and pushes its
/// value. Range errors name argument 1 whatever `idx` is, as the original.
unsafe fn integer_option(l: *mut lua_State, idx: c_int, setting: &mut c_int, min: c_int, max: c_int) -> Ret {
    if ffi::lua_type(l, idx) != ffi::LUA_TNIL {
        let value = check_integer(l, idx)? as c_int;
        if !(min <= value && value <= max) {
            return Err(Fail::arg(1, format!("expected integer between {min} and {max}")));
        }
        *setting = value;
    }
    ffi::lua_pushinteger(l, i64::from(*setting));
    Ok(1)
}

/// Sets an enumerated option (a boolean, or one of `options`) from argument
/// `idx` (if not nil) and pushes its value.
unsafe fn enum_option(l: *mut lua_State, idx: c_int, setting: &mut c_int, options: &[&str]) -> Ret {
    if ffi::lua_type(l, idx) != ffi::LUA_TNIL {
        if ffi::lua_type(l, idx) == ffi::LUA_TBOOLEAN {
            *setting = ffi::lua_toboolean(l, idx);
        } else {
            let name = check_cstr(l, idx)?;
            match options.iter().position(|o| o.as_bytes() == name) {
                Some(i) => *setting = i as c_int,
                None => {
                    let mut m = b"invalid option '".to_vec();
                    m.extend_from_slice(name);
                    m.push(b'\'');
                    return Err(Fail::Arg(idx, m));
                }
            }
        }
    }
    if *setting == 0 || *setting == 1 {
        ffi::lua_pushboolean(l, *setting);
    } else {
        push_bytes(l, options[*setting as usize].as_bytes());
    }
    Ok(1)
}

const ON_OFF: &[&str] = &["off", "on"];

unsafe extern "C-unwind" fn cfg_encode_sparse_array(l: *mut lua_State) -> c_int {
    run(l, || {
        let cfg = arg_init(l, 3)?;
        enum_option(l, 1, &mut cfg.encode_sparse_convert, ON_OFF)?;
        integer_option(l, 2, &mut cfg.encode_sparse_ratio, 0, c_int::MAX)?;
        integer_option(l, 3, &mut cfg.encode_sparse_safe, 0, c_int::MAX)?;
        Ok(3)
    })
}

unsafe extern "C-unwind" fn cfg_encode_max_depth(l: *mut lua_State) -> c_int {
    run(l, || {
        let cfg = arg_init(l, 1)?;
        integer_option(l, 1, &mut cfg.encode_max_depth, 1, c_int::MAX)
    })
}

unsafe extern "C-unwind" fn cfg_decode_max_depth(l: *mut lua_State) -> c_int {
    run(l, || {
        let cfg = arg_init(l, 1)?;
        integer_option(l, 1, &mut cfg.decode_max_depth, 1, c_int::MAX)
    })
}

unsafe extern "C-unwind" fn cfg_encode_number_precision(l: *mut lua_State) -> c_int {
    run(l, || {
        let cfg = arg_init(l, 1)?;
        integer_option(l, 1, &mut cfg.encode_number_precision, 1, 14)
    })
}

unsafe extern "C-unwind" fn cfg_encode_keep_buffer(l: *mut lua_State) -> c_int {
    run(l, || {
        let cfg = arg_init(l, 1)?;
        enum_option(l, 1, &mut cfg.encode_keep_buffer, ON_OFF)
    })
}

unsafe extern "C-unwind" fn cfg_encode_invalid_numbers(l: *mut lua_State) -> c_int {
    run(l, || {
        let cfg = arg_init(l, 1)?;
        enum_option(l, 1, &mut cfg.encode_invalid_numbers, &["off", "on", "null"])
    })
}

unsafe extern "C-unwind" fn cfg_decode_invalid_numbers(l: *mut lua_State) -> c_int {
    run(l, || {
        let cfg = arg_init(l, 1)?;
        enum_option(l, 1, &mut cfg.decode_invalid_numbers, ON_OFF)
    })
}

// ---------------------------------------------------------------- encoding

unsafe fn type_name(l: *mut lua_State, idx: c_int) -> String {
    let name = ffi::lua_typename(l, ffi::lua_type(l, idx));
    CStr::from_ptr(name).to_string_lossy().into_owned()
}

/// "Cannot serialise <type of value at idx>: <reason>".
unsafe fn exception(l: *mut lua_State, idx: c_int, reason: &str) -> Fail {
    Fail::msg(format!("Cannot serialise {}: {}", type_name(l, idx), reason))
}

fn append_string(buf: &mut Vec<u8>, s: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    buf.reserve(s.len() + 2);
    buf.push(b'"');
    for &c in s {
        match c {
            b'"' => buf.extend_from_slice(b"\\\""),
            b'\\' => buf.extend_from_slice(b"\\\\"),
            b'/' => buf.extend_from_slice(b"\\/"),
            8 => buf.extend_from_slice(b"\\b"),
            9 => buf.extend_from_slice(b"\\t"),
            10 => buf.extend_from_slice(b"\\n"),
            12 => buf.extend_from_slice(b"\\f"),
            13 => buf.extend_from_slice(b"\\r"),
            0..=31 | 127 => {
                buf.extend_from_slice(b"\\u00");
                buf.push(HEX[usize::from(c >> 4)]);
                buf.push(HEX[usize::from(c & 15)]);
            }
            _ => buf.push(c),
        }
    }
    buf.push(b'"');
}

/// `%.<precision>g`, as the C library prints it.
fn format_number(d: f64, precision: c_int) -> Vec<u8> {
    let fmt = format!("%.{precision}g\0");
    let mut out = [0u8; 64];
    // SAFETY: the buffer is large enough for any %g of at most 14 digits
    // and snprintf never writes past the size it is given.
    let n = unsafe { snprintf(out.as_mut_ptr() as *mut c_char, out.len(), fmt.as_ptr() as *const c_char, d) };
    out[..(n.max(0) as usize).min(out.len() - 1)].to_vec()
}

unsafe fn append_number(l: *mut lua_State, cfg: &Config, buf: &mut Vec<u8>, idx: c_int) -> Result<(), Fail> {
    let num = ffi::lua_tonumber(l, idx);
    let invalid = num.is_nan() || num.is_infinite();
    match cfg.encode_invalid_numbers {
        0 if invalid => return Err(exception(l, idx, "must not be NaN or Inf")),
        0 => {}
        1 if num.is_nan() => {
            buf.extend_from_slice(b"nan");
            return Ok(());
        }
        1 => {}
        _ if invalid => {
            buf.extend_from_slice(b"null");
            return Ok(());
        }
        _ => {}
    }
    buf.extend_from_slice(&format_number(num, cfg.encode_number_precision));
    Ok(())
}

/// The array length of the table on top of the stack, or -1 when it is to
/// be an object (a non positive-integer key, or sparse and converting).
unsafe fn array_length(l: *mut lua_State, cfg: &Config) -> Result<c_int, Fail> {
    let mut max: c_int = 0;
    let mut items: c_int = 0;
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, -2) != 0 {
        let k = ffi::lua_tonumber(l, -2);
        if ffi::lua_type(l, -2) == ffi::LUA_TNUMBER && k != 0.0 && k.floor() == k && k >= 1.0 {
            if k > f64::from(max) {
                max = c_i32(k);
            }
            items = items.wrapping_add(1);
            ffi::lua_settop(l, -2);
            continue;
        }
        ffi::lua_settop(l, -3);
        return Ok(-1);
    }
    if cfg.encode_sparse_ratio > 0 && max > items.wrapping_mul(cfg.encode_sparse_ratio) && max > cfg.encode_sparse_safe
    {
        if cfg.encode_sparse_convert == 0 {
            return Err(exception(l, -1, "excessively sparse array"));
        }
        return Ok(-1);
    }
    Ok(max)
}

/// A table being written: an array with its next index, or an object.
enum EncFrame {
    Array { next: c_int, len: c_int },
    Object { first: bool },
}

/// Writes the value on top of the stack. A table opens a frame (and leaves
/// its traversal state on the stack); returns whether it did.
unsafe fn encode_one(
    l: *mut lua_State,
    cfg: &Config,
    buf: &mut Vec<u8>,
    frames: &mut Vec<EncFrame>,
) -> Result<bool, Fail> {
    match ffi::lua_type(l, -1) {
        ffi::LUA_TSTRING => append_string(buf, super::to_bytes(l, -1).unwrap_or_default()),
        ffi::LUA_TNUMBER => append_number(l, cfg, buf, -1)?,
        ffi::LUA_TBOOLEAN => buf.extend_from_slice(if ffi::lua_toboolean(l, -1) != 0 { b"true" } else { b"false" }),
        ffi::LUA_TTABLE => {
            let depth = frames.len() as c_int + 1;
            if !(depth <= cfg.encode_max_depth && ffi::lua_checkstack(l, 3) != 0) {
                return Err(Fail::msg(format!("Cannot serialise, excessive nesting ({depth})")));
            }
            let len = array_length(l, cfg)?;
            if len > 0 {
                buf.push(b'[');
                frames.push(EncFrame::Array { next: 1, len });
            } else {
                buf.push(b'{');
                ffi::lua_pushnil(l);
                frames.push(EncFrame::Object { first: true });
            }
            return Ok(true);
        }
        ffi::LUA_TNIL => buf.extend_from_slice(b"null"),
        ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(l, -1).is_null() => buf.extend_from_slice(b"null"),
        _ => return Err(exception(l, -1, "type not supported")),
    }
    Ok(false)
}

/// Encodes the value on top of the stack.
unsafe fn encode_value(l: *mut lua_State, cfg: &Config, buf: &mut Vec<u8>) -> Result<(), Fail> {
    let mut frames: Vec<EncFrame> = Vec::new();
    let mut opened = encode_one(l, cfg, buf, &mut frames)?;
    loop {
        if !opened {
            // A value is complete on top of the stack.
            if frames.is_empty() {
                return Ok(());
            }
            ffi::lua_settop(l, -2);
        }
        let frame = frames.last_mut().expect("an open table");
        match frame {
            EncFrame::Array { next, len } => {
                if *next > *len {
                    buf.push(b']');
                    frames.pop();
                    opened = false;
                    continue;
                }
                if *next > 1 {
                    buf.push(b',');
                }
                ffi::lua_rawgeti_(l, -1, *next);
                *next += 1;
            }
            EncFrame::Object { first } => {
                if ffi::lua_next(l, -2) == 0 {
                    buf.push(b'}');
                    frames.pop();
                    opened = false;
                    continue;
                }
                if !*first {
                    buf.push(b',');
                }
                *first = false;
                match ffi::lua_type(l, -2) {
                    ffi::LUA_TNUMBER => {
                        buf.push(b'"');
                        append_number(l, cfg, buf, -2)?;
                        buf.extend_from_slice(b"\":");
                    }
                    ffi::LUA_TSTRING => {
                        append_string(buf, super::to_bytes(l, -2).unwrap_or_default());
                        buf.push(b':');
                    }
                    _ => return Err(exception(l, -2, "table key must be a number or string")),
                }
            }
        }
        opened = encode_one(l, cfg, buf, &mut frames)?;
    }
}

unsafe extern "C-unwind" fn encode(l: *mut lua_State) -> c_int {
    run(l, || {
        let cfg = *config(l)?;
        if ffi::lua_gettop(l) != 1 {
            return Err(Fail::arg(1, "expected 1 argument"));
        }
        let mut buf = Vec::new();
        encode_value(l, &cfg, &mut buf)?;
        push_bytes(l, &buf);
        Ok(1)
    })
}

// ---------------------------------------------------------------- decoding

#[derive(Clone, Copy, PartialEq)]
enum Tok {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    /// The text is in the parser's `tmp`.
    Str,
    Number(f64),
    Boolean(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Tok {
    fn name(self) -> &'static str {
        match self {
            Tok::ObjBegin => "T_OBJ_BEGIN",
            Tok::ObjEnd => "T_OBJ_END",
            Tok::ArrBegin => "T_ARR_BEGIN",
            Tok::ArrEnd => "T_ARR_END",
            Tok::Str => "T_STRING",
            Tok::Number(_) => "T_NUMBER",
            Tok::Boolean(_) => "T_BOOLEAN",
            Tok::Null => "T_NULL",
            Tok::Colon => "T_COLON",
            Tok::Comma => "T_COMMA",
            Tok::End => "T_END",
            Tok::Error(what) => what,
        }
    }
}

struct Token {
    tok: Tok,
    /// 0-based offset where the token (or the error) is.
    index: usize,
}

struct Parser<'a> {
    l: *mut lua_State,
    cfg: Config,
    /// The JSON text; Lua keeps a '\0' right after it, which ends parsing
    /// as it does in C.
    data: &'a [u8],
    pos: usize,
    depth: c_int,
    tmp: Vec<u8>,
}

fn hexdigit(c: u8) -> Option<u32> {
    (c as char).to_digit(16)
}

impl Parser<'_> {
    fn ch(&self, i: usize) -> u8 {
        self.data.get(i).copied().unwrap_or(0)
    }

    fn starts_with(&self, word: &[u8]) -> bool {
        word.iter().enumerate().all(|(i, &c)| self.ch(self.pos + i) == c)
    }

    fn starts_with_ci(&self, at: usize, word: &[u8]) -> bool {
        word.iter().enumerate().all(|(i, &c)| self.ch(at + i).to_ascii_lowercase() == c)
    }

    fn error(&self, what: &'static str) -> Token {
        Token { tok: Tok::Error(what), index: self.pos }
    }

    /// Four hex digits at `at`.
    fn hex4(&self, at: usize) -> Option<u32> {
        (0..4).try_fold(0u32, |v, i| Some((v << 4) | hexdigit(self.ch(at + i))?))
    }

    /// `\uXXXX` (or a surrogate pair) at `pos`, appended to `tmp` as UTF-8.
    fn unicode_escape(&mut self) -> bool {
        let Some(mut cp) = self.hex4(self.pos + 2) else {
            return false;
        };
        let mut len = 6;
        if cp & 0xF800 == 0xD800 {
            if cp & 0x400 != 0 {
                return false;
            }
            if self.ch(self.pos + 6) != b'\\' || self.ch(self.pos + 7) != b'u' {
                return false;
            }
            let Some(low) = self.hex4(self.pos + 8) else {
                return false;
            };
            if low & 0xFC00 != 0xDC00 {
                return false;
            }
            cp = (((cp & 0x3FF) << 10) | (low & 0x3FF)) + 0x10000;
            len = 12;
        }
        let c = char::from_u32(cp).expect("a scalar value");
        let mut utf8 = [0u8; 4];
        self.tmp.extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
        self.pos += len;
        true
    }

    fn string_token(&mut self) -> Token {
        let index = self.pos;
        self.pos += 1;
        self.tmp.clear();
        loop {
            let mut c = self.ch(self.pos);
            if c == b'"' {
                break;
            }
            if c == 0 {
                return self.error("unexpected end of string");
            }
            if c == b'\\' {
                c = match self.ch(self.pos + 1) {
                    b'"' => b'"',
                    b'\\' => b'\\',
                    b'/' => b'/',
                    b'b' => 8,
                    b't' => 9,
                    b'n' => 10,
                    b'f' => 12,
                    b'r' => 13,
                    b'u' => {
                        if self.unicode_escape() {
                            continue;
                        }
                        return self.error("invalid unicode escape code");
                    }
                    _ => return self.error("invalid escape code"),
                };
                self.pos += 1;
            }
            self.tmp.push(c);
            self.pos += 1;
        }
        self.pos += 1;
        Token { tok: Tok::Str, index }
    }

    /// Numbers strict JSON refuses but strtod would take: a leading '+',
    /// hex, leading zeros, inf and nan.
    fn is_invalid_number(&self) -> bool {
        let mut p = self.pos;
        if self.ch(p) == b'+' {
            return true;
        }
        if self.ch(p) == b'-' {
            p += 1;
        }
        if self.ch(p) == b'0' {
            let c2 = self.ch(p + 1);
            return c2 | 0x20 == b'x' || c2.is_ascii_digit();
        }
        self.starts_with_ci(p, b"inf") || self.starts_with_ci(p, b"nan")
    }

    fn number_token(&mut self) -> Token {
        let index = self.pos;
        let start = unsafe { self.data.as_ptr().add(self.pos) } as *const c_char;
        let mut end: *mut c_char = ptr::null_mut();
        // SAFETY: the text is NUL-terminated (Lua strings always are).
        let n = unsafe { strtod(start, &mut end) };
        let used = end as usize - start as usize;
        if used == 0 {
            return self.error("invalid number");
        }
        self.pos += used;
        Token { tok: Tok::Number(n), index }
    }

    fn next_token(&mut self) -> Token {
        while matches!(self.ch(self.pos), b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let index = self.pos;
        let single = |tok| Token { tok, index };
        let c = self.ch(self.pos);
        let tok = match c {
            b'{' => Tok::ObjBegin,
            b'}' => Tok::ObjEnd,
            b'[' => Tok::ArrBegin,
            b']' => Tok::ArrEnd,
            b',' => Tok::Comma,
            b':' => Tok::Colon,
            0 => return single(Tok::End),
            b'"' => return self.string_token(),
            b'-' | b'0'..=b'9' => {
                if self.cfg.decode_invalid_numbers == 0 && self.is_invalid_number() {
                    return self.error("invalid number");
                }
                return self.number_token();
            }
            b'f' | b'i' | b'I' | b'n' | b'N' | b't' | b'+' => {
                if self.starts_with(b"true") {
                    self.pos += 4;
                    return single(Tok::Boolean(true));
                } else if self.starts_with(b"false") {
                    self.pos += 5;
                    return single(Tok::Boolean(false));
                } else if self.starts_with(b"null") {
                    self.pos += 4;
                    return single(Tok::Null);
                } else if self.cfg.decode_invalid_numbers != 0 && self.is_invalid_number() {
                    return self.number_token();
                }
                return self.error("invalid token");
            }
            _ => return self.error("invalid token"),
        };
        self.pos += 1;
        single(tok)
    }

    fn parse_error(&self, expected: &str, t: &Token) -> Fail {
        Fail::msg(format!("Expected {} but found {} at character {}", expected, t.tok.name(), t.index + 1))
    }

    /// Enters a nested array or object needing `slots` Lua stack slots.
    fn descend(&mut self, slots: c_int) -> Result<(), Fail> {
        self.depth += 1;
        if self.depth <= self.cfg.decode_max_depth && unsafe { ffi::lua_checkstack(self.l, slots) } != 0 {
            return Ok(());
        }
        Err(Fail::msg(format!("Found too many nested data structures ({}) at character {}", self.depth, self.pos)))
    }

    /// Starts a value with token `t`: a scalar is pushed whole; an array or
    /// object pushes its (empty) table and returns its frame.
    unsafe fn start_value(&mut self, t: &Token) -> Result<Option<DecFrame>, Fail> {
        let l = self.l;
        match t.tok {
            Tok::Str => push_bytes(l, &self.tmp),
            Tok::Number(n) => ffi::lua_pushnumber(l, n),
            Tok::Boolean(b) => ffi::lua_pushboolean(l, c_int::from(b)),
            Tok::Null => ffi::lua_pushlightuserdata(l, ptr::null_mut()),
            Tok::ObjBegin => {
                self.descend(3)?;
                ffi::lua_createtable(l, 0, 0);
                return Ok(Some(DecFrame::Object));
            }
            Tok::ArrBegin => {
                self.descend(2)?;
                ffi::lua_createtable(l, 0, 0);
                return Ok(Some(DecFrame::Array(1)));
            }
            _ => return Err(self.parse_error("value", t)),
        }
        Ok(None)
    }

    /// Reads `"key":` and pushes the key; returns the token after the colon.
    unsafe fn object_key(&mut self, t: Token) -> Result<Token, Fail> {
        if t.tok != Tok::Str {
            return Err(self.parse_error("object key string", &t));
        }
        push_bytes(self.l, &self.tmp);
        let t = self.next_token();
        if t.tok != Tok::Colon {
            return Err(self.parse_error("colon", &t));
        }
        Ok(self.next_token())
    }

    /// Parses one value (with everything nested in it) onto the stack.
    unsafe fn value(&mut self, first: Token) -> Result<(), Fail> {
        let l = self.l;
        let mut frames: Vec<DecFrame> = Vec::new();
        let mut opened = self.start_value(&first)?;
        loop {
            // A container was just opened: it may be empty, or get its first
            // element.
            if let Some(frame) = opened.take() {
                let t = self.next_token();
                let close = if let DecFrame::Object = frame { Tok::ObjEnd } else { Tok::ArrEnd };
                if t.tok == close {
                    self.depth -= 1;
                } else {
                    let t = match frame {
                        DecFrame::Object => self.object_key(t)?,
                        DecFrame::Array(_) => t,
                    };
                    frames.push(frame);
                    opened = self.start_value(&t)?;
                    continue;
                }
            }
            // A value is complete on top of the stack: store it in its
            // container, then go on to the next element or close it.
            let Some(frame) = frames.last_mut() else {
                return Ok(());
            };
            let t = self.next_token();
            let next = match frame {
                DecFrame::Array(i) => {
                    ffi::lua_rawseti_(l, -2, *i);
                    *i += 1;
                    if t.tok == Tok::ArrEnd {
                        None
                    } else if t.tok != Tok::Comma {
                        return Err(self.parse_error("comma or array end", &t));
                    } else {
                        Some(self.next_token())
                    }
                }
                DecFrame::Object => {
                    ffi::lua_rawset(l, -3);
                    if t.tok == Tok::ObjEnd {
                        None
                    } else if t.tok != Tok::Comma {
                        return Err(self.parse_error("comma or object end", &t));
                    } else {
                        let t = self.next_token();
                        Some(self.object_key(t)?)
                    }
                }
            };
            match next {
                None => {
                    frames.pop();
                    self.depth -= 1;
                }
                Some(t) => opened = self.start_value(&t)?,
            }
        }
    }
}

/// An array or object being filled: an array knows its next index.
#[derive(Clone, Copy)]
enum DecFrame {
    Array(c_int),
    Object,
}

unsafe extern "C-unwind" fn decode(l: *mut lua_State) -> c_int {
    run(l, || {
        if ffi::lua_gettop(l) != 1 {
            return Err(Fail::arg(1, "expected 1 argument"));
        }
        let cfg = *config(l)?;
        let data = check_bytes(l, 1)?;
        if data.len() >= 2 && (data[0] == 0 || data[1] == 0) {
            return Err(Fail::msg("JSON parser does not support UTF-16 or UTF-32"));
        }
        let mut p = Parser { l, cfg, data, pos: 0, depth: 0, tmp: Vec::new() };
        let first = p.next_token();
        p.value(first)?;
        let t = p.next_token();
        if t.tok != Tok::End {
            return Err(p.parse_error("the end", &t));
        }
        Ok(1)
    })
}

// ---------------------------------------------------------------- module

const FUNCS: &[(&CStr, ffi::lua_CFunction)] = &[
    (c"encode", encode),
    (c"decode", decode),
    (c"encode_sparse_array", cfg_encode_sparse_array),
    (c"encode_max_depth", cfg_encode_max_depth),
    (c"decode_max_depth", cfg_decode_max_depth),
    (c"encode_number_precision", cfg_encode_number_precision),
    (c"encode_keep_buffer", cfg_encode_keep_buffer),
    (c"encode_invalid_numbers", cfg_encode_invalid_numbers),
    (c"decode_invalid_numbers", cfg_decode_invalid_numbers),
    (c"new", open),
];

/// Returns a new `cjson` table with default settings (also `cjson.new`).
pub(crate) unsafe extern "C-unwind" fn open(l: *mut lua_State) -> c_int {
    ffi::lua_createtable(l, 0, 0);
    let cfg = ffi::lua_newuserdata(l, std::mem::size_of::<Config>()) as *mut Config;
    cfg.write(DEFAULTS);
    for (name, f) in FUNCS {
        ffi::lua_pushvalue(l, -1);
        ffi::lua_pushcclosure(l, *f, 1);
        ffi::lua_setfield(l, -3, name.as_ptr());
    }
    ffi::lua_settop(l, -2);
    ffi::lua_pushlightuserdata(l, ptr::null_mut());
    ffi::lua_setfield(l, -2, c"null".as_ptr());
    set_str_field(l, c"_NAME", "cjson");
    set_str_field(l, c"_VERSION", "2.1.0");
    1
}
