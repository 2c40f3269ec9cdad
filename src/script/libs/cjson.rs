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
            // A read-only library table encodes as the table it stands for.
            if ffi::lua_checkstack(l, 4) != 0 {
                crate::script::lua::unproxy(l, -1);
            }
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
        // SAFETY: `pos` is within the text (at most its length: the NUL).
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
        // SAFETY: `l` is the live state the decoder runs in.
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

#[cfg(test)]
mod tests {
    use super::super::testutil::check;

    /// Encoding and the settings functions.
    /// Expected values were taken from redis-server 7.0.15: the same
    /// snippets run there with EVAL, serialized by the same Lua code
    /// (`testutil::PRELUDE`).
    #[test]
    fn encode_and_settings_match_redis() {
        check(&[
            (r#"cjson.encode({1,2,{a=1}})"#, r#"ok|"[1,2,{\"a\":1}]""#),
            (
                r#"cjson.encode(1), cjson.encode(-1), cjson.encode(0.1), cjson.encode(1/3), cjson.encode(-0.0), cjson.encode(1e100), cjson.encode(123456789012345678), cjson.encode(2^53), cjson.encode(1e15), cjson.encode(1e14), cjson.encode(0.00001), cjson.encode(0.0001), cjson.encode(3.14159265358979)"#,
                r#"ok|"1" "-1" "0.1" "0.33333333333333" "-0" "1e+100" "1.2345678901235e+17" "9.007199254741e+15" "1e+15" "1e+14" "1e-05" "0.0001" "3.1415926535898""#,
            ),
            (
                r#"cjson.encode('abc'), cjson.encode('a/b'), cjson.encode('q"b\\s'), cjson.encode('\0\1\2\7\8\9\10\11\12\13\14\31\127\128\255'), cjson.encode('é'), cjson.encode('')"#,
                r#"ok|"\"abc\"" "\"a\\/b\"" "\"q\\\"b\\\\s\"" "\"\\u0000\\u0001\\u0002\\u0007\\b\\t\\n\\u000b\\f\\r\\u000e\\u001f\\u007f\128\255\"" "\"\195\169\"" "\"\"""#,
            ),
            (
                r#"cjson.encode(true), cjson.encode(false), cjson.encode(nil), cjson.encode(cjson.null)"#,
                r#"ok|"true" "false" "null" "null""#,
            ),
            (
                r#"cjson.encode({}), cjson.encode({{}}), cjson.encode({a={}}), cjson.encode({[1]='a', [2]='b'}), cjson.encode({[2]='b'}), cjson.encode({[1]=1, [3]=3})"#,
                r#"ok|"{}" "[{}]" "{\"a\":{}}" "[\"a\",\"b\"]" "[null,\"b\"]" "[1,null,3]""#,
            ),
            (
                r#"cjson.encode({[1]=1,[2]=2,[4]=4}), cjson.encode({[10]=1}), cjson.encode({[11]=1})"#,
                r#"err|user_script:1: Cannot serialise table: excessively sparse array"#,
            ),
            (
                r#"cjson.encode({[12]=1,[1]=1})"#,
                r#"err|user_script:1: Cannot serialise table: excessively sparse array"#,
            ),
            (
                r#"cjson.encode({[1]=1,[2]=2,[3]=3,[4]=4,[5]=5,[6]=6,[20]=1})"#,
                r#"err|user_script:1: Cannot serialise table: excessively sparse array"#,
            ),
            (
                r#"cjson.encode({[0]=1}), cjson.encode({[-1]=1}), cjson.encode({[1.5]=1}), cjson.encode({a=1, [1]=2}), cjson.encode({[1]=1, ['1']=2})"#,
                r#"ok|"{\"0\":1}" "{\"-1\":1}" "{\"1.5\":1}" "{\"a\":1,\"1\":2}" "{\"1\":1,\"1\":2}""#,
            ),
            (
                r#"cjson.encode({[2^31]=1}), cjson.encode({[2^31+1]=1, [5] = 1})"#,
                r#"ok|"{\"2147483648\":1}" "[null,null,null,null,1]""#,
            ),
            (r#"cjson.encode({[1/0]=1})"#, r#"err|user_script:1: Cannot serialise number: must not be NaN or Inf"#),
            (
                r#"cjson.encode({[true]=1})"#,
                r#"err|user_script:1: Cannot serialise boolean: table key must be a number or string"#,
            ),
            (
                r#"cjson.encode({[{}]=1})"#,
                r#"err|user_script:1: Cannot serialise table: table key must be a number or string"#,
            ),
            (
                r#"cjson.encode({f=function() end})"#,
                r#"err|user_script:1: Cannot serialise function: type not supported"#,
            ),
            (r#"cjson.encode(1/0)"#, r#"err|user_script:1: Cannot serialise number: must not be NaN or Inf"#),
            (r#"cjson.encode(-1/0)"#, r#"err|user_script:1: Cannot serialise number: must not be NaN or Inf"#),
            (r#"cjson.encode(0/0)"#, r#"err|user_script:1: Cannot serialise number: must not be NaN or Inf"#),
            (r#"cjson.encode({1, 0/0})"#, r#"err|user_script:1: Cannot serialise number: must not be NaN or Inf"#),
            (r#"cjson.encode()"#, r#"err|user_script:1: bad argument #1 to 'encode' (expected 1 argument)"#),
            (r#"cjson.encode(1, 2)"#, r#"err|user_script:1: bad argument #1 to 'encode' (expected 1 argument)"#),
            (
                r#"cjson.encode({a=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9,j=10})"#,
                r#"ok|"{\"a\":1,\"c\":3,\"b\":2,\"e\":5,\"d\":4,\"g\":7,\"f\":6,\"i\":9,\"h\":8,\"j\":10}""#,
            ),
            (
                r#"cjson.encode((function() local t = {} for i=1,30 do t['key'..i]=i end return t end)())"#,
                r#"ok|"{\"key16\":16,\"key9\":9,\"key5\":5,\"key1\":1,\"key30\":30,\"key29\":29,\"key27\":27,\"key14\":14,\"key26\":26,\"key22\":22,\"key7\":7,\"key3\":3,\"key25\":25,\"key8\":8,\"key12\":12,\"key24\":24,\"key11\":11,\"key23\":23,\"key15\":15,\"key10\":10,\"key19\":19,\"key17\":17,\"key20\":20,\"key2\":2,\"key13\":13,\"key6\":6,\"key18\":18,\"key21\":21,\"key4\":4,\"key28\":28}""#,
            ),
            (
                r#"cjson.encode({name='x', list={1,2,3}, nested={deep={deeper={true,false,cjson.null}}}})"#,
                r#"ok|"{\"nested\":{\"deep\":{\"deeper\":[true,false,null]}},\"name\":\"x\",\"list\":[1,2,3]}""#,
            ),
            (
                r#"cjson.encode((function() local t = {} t.self = t return t end)())"#,
                r#"err|user_script:1: Cannot serialise, excessive nesting (1001)"#,
            ),
            (
                r#"cjson.encode((function() local t = {} local c = t for i=1,999 do c[1] = {} c = c[1] end return t end)()):len()"#,
                r#"ok|2000"#,
            ),
            (
                r#"cjson.encode((function() local t = {} local c = t for i=1,1000 do c[1] = {} c = c[1] end return t end)())"#,
                r#"err|user_script:1: Cannot serialise, excessive nesting (1001)"#,
            ),
            (
                r#"cjson.encode((function() local t = {} local c = t for i=1,1000 do c.a = {} c = c.a end return t end)())"#,
                r#"err|user_script:1: Cannot serialise, excessive nesting (1001)"#,
            ),
            (
                r#"cjson.encode_max_depth(), cjson.encode_max_depth(5), cjson.encode_max_depth(), cjson.encode({{{{{1}}}}}), cjson.encode_max_depth(1000)"#,
                r#"ok|1000 5 5 "[[[[[1]]]]]" 1000"#,
            ),
            (
                r#"cjson.encode_max_depth(3), pcall(cjson.encode, {{{{1}}}}), cjson.encode_max_depth(1000)"#,
                r#"ok|3 false 1000"#,
            ),
            (
                r#"cjson.encode_max_depth(0)"#,
                r#"err|user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)"#,
            ),
            (
                r#"cjson.encode_max_depth(-1)"#,
                r#"err|user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)"#,
            ),
            (
                r#"cjson.encode_max_depth('x')"#,
                r#"err|user_script:1: bad argument #1 to 'encode_max_depth' (number expected, got string)"#,
            ),
            (
                r#"cjson.encode_max_depth(1, 2)"#,
                r#"err|user_script:1: bad argument #2 to 'encode_max_depth' (found too many arguments)"#,
            ),
            (
                r#"cjson.encode_max_depth(2^31)"#,
                r#"err|user_script:1: bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)"#,
            ),
            (r#"cjson.encode_max_depth(2^32 + 7), cjson.encode_max_depth(1000)"#, r#"ok|7 1000"#),
            (
                r#"cjson.encode_max_depth('12'), cjson.encode_max_depth(1000.9), cjson.encode_max_depth(nil)"#,
                r#"ok|12 1000 1000"#,
            ),
            (
                r#"cjson.encode_max_depth(100000), pcall(cjson.encode, (function() local t = {} local c = t for i=1,10000 do c[1] = {} c = c[1] end return t end)()), cjson.encode_max_depth(1000)"#,
                r#"ok|100000 false 1000"#,
            ),
            (
                r#"cjson.encode_max_depth(100000), pcall(cjson.encode, (function() local t = {} local c = t for i=1,10000 do c.k = {} c = c.k end return t end)()), cjson.encode_max_depth(1000)"#,
                r#"ok|100000 false 1000"#,
            ),
            (
                r#"cjson.encode_number_precision(), cjson.encode_number_precision(3), cjson.encode(1/3), cjson.encode(12345), cjson.encode_number_precision(14)"#,
                r#"ok|14 3 "0.333" "1.23e+04" 14"#,
            ),
            (
                r#"cjson.encode_number_precision(15)"#,
                r#"err|user_script:1: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)"#,
            ),
            (
                r#"cjson.encode_number_precision(0)"#,
                r#"err|user_script:1: bad argument #1 to 'encode_number_precision' (expected integer between 1 and 14)"#,
            ),
            (
                r#"cjson.encode_keep_buffer(), cjson.encode_keep_buffer(false), cjson.encode_keep_buffer('on'), cjson.encode_keep_buffer('off'), cjson.encode_keep_buffer(true)"#,
                r#"ok|true false true false true"#,
            ),
            (
                r#"cjson.encode_keep_buffer('maybe')"#,
                r#"err|user_script:1: bad argument #1 to 'encode_keep_buffer' (invalid option 'maybe')"#,
            ),
            (
                r#"cjson.encode_keep_buffer(1)"#,
                r#"err|user_script:1: bad argument #1 to 'encode_keep_buffer' (invalid option '1')"#,
            ),
            (
                r#"cjson.encode_invalid_numbers(), cjson.encode_invalid_numbers(true), cjson.encode(1/0), cjson.encode(-1/0), cjson.encode(0/0), cjson.encode({[1/0]=1}), cjson.encode_invalid_numbers('null'), cjson.encode(1/0), cjson.encode({0/0}), cjson.encode_invalid_numbers('off'), cjson.encode_invalid_numbers('on'), cjson.encode_invalid_numbers(false)"#,
                r#"ok|false true "inf" "-inf" "nan" "{\"inf\":1}" "null" "null" "[null]" false true false"#,
            ),
            (r#"cjson.encode_invalid_numbers('null'), cjson.encode({[1/0]=1})"#, r#"ok|"null" "{\"null\":1}""#),
            (r#"cjson.encode_invalid_numbers(false)"#, r#"ok|false"#),
            (
                r#"cjson.encode_invalid_numbers('nul')"#,
                r#"err|user_script:1: bad argument #1 to 'encode_invalid_numbers' (invalid option 'nul')"#,
            ),
            (r#"cjson.encode_invalid_numbers('null\0x'), cjson.encode_invalid_numbers(false)"#, r#"ok|"null" false"#),
            (r#"cjson.encode_sparse_array()"#, r#"ok|false 2 10"#),
            (
                r#"cjson.encode_sparse_array(true), cjson.encode({[1]=1,[20]=2}), cjson.encode_sparse_array(false)"#,
                r#"ok|true "{\"1\":1,\"20\":2}" false 2 10"#,
            ),
            (
                r#"cjson.encode_sparse_array(false, 0), cjson.encode({[1]=1,[20]=2}), cjson.encode_sparse_array(false, 2, 10)"#,
                r#"ok|false "[1,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,2]" false 2 10"#,
            ),
            (
                r#"cjson.encode_sparse_array(false, 1, 0), pcall(cjson.encode, {[1]=1,[3]=2}), cjson.encode({1,2}), cjson.encode_sparse_array(false, 2, 10)"#,
                r#"ok|false false "[1,2]" false 2 10"#,
            ),
            (
                r#"cjson.encode_sparse_array(nil, nil, 50), cjson.encode({[40]=1}), cjson.encode_sparse_array(false, 2, 10)"#,
                r#"ok|false "[null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,null,1]" false 2 10"#,
            ),
            (
                r#"cjson.encode_sparse_array(false, -1)"#,
                r#"err|user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)"#,
            ),
            (
                r#"cjson.encode_sparse_array(false, 2, -1)"#,
                r#"err|user_script:1: bad argument #1 to 'encode_sparse_array' (expected integer between 0 and 2147483647)"#,
            ),
            (r#"cjson.encode_sparse_array('on', 3, 4)"#, r#"ok|true 3 4"#),
            (
                r#"cjson.encode_sparse_array('x')"#,
                r#"err|user_script:1: bad argument #1 to 'encode_sparse_array' (invalid option 'x')"#,
            ),
            (
                r#"cjson.encode_sparse_array(1, 2, 3, 4)"#,
                r#"err|user_script:1: bad argument #4 to 'encode_sparse_array' (found too many arguments)"#,
            ),
            (r#"cjson.encode_sparse_array(false, 2, 10)"#, r#"ok|false 2 10"#),
            (r#"type(cjson.new), cjson.new()._NAME, cjson.new().null == cjson.null"#, r#"ok|"function" "cjson" true"#),
            (
                r#"(function() local c = cjson.new() c.encode_max_depth(2) return pcall(c.encode, {{{1}}}), cjson.encode({{{1}}}), cjson.encode_max_depth(), c.encode_max_depth() end)()"#,
                r#"ok|false "[[[1]]]" 1000 2"#,
            ),
            (
                r#"(function() local c = cjson.new() local d = c.new() d.encode_number_precision(2) return d.encode(1/3), c.encode(1/3), cjson.encode(1/3) end)()"#,
                r#"ok|"0.33" "0.33333333333333" "0.33333333333333""#,
            ),
            (r#"cjson.new(1, 2, 3)._VERSION"#, r#"ok|"2.1.0""#),
            (
                r#"cjson._NAME, cjson._VERSION, tostring(cjson.null), type(cjson.null)"#,
                r#"ok|"cjson" "2.1.0" "userdata: (nil)" "userdata""#,
            ),
            (
                r#"(function() local out = {} for k in pairs(cjson) do out[#out+1] = k end return table.concat(out, ',') end)()"#,
                r#"ok|"_NAME,encode,decode_max_depth,_VERSION,decode_invalid_numbers,encode_keep_buffer,null,encode_number_precision,new,encode_max_depth,encode_invalid_numbers,decode,encode_sparse_array""#,
            ),
            (r#"pcall(cjson.encode)"#, r#"ok|false "bad argument #1 to '?' (expected 1 argument)""#),
            (
                r#"pcall(cjson.encode_max_depth, 'x')"#,
                r#"ok|false "bad argument #1 to '?' (number expected, got string)""#,
            ),
            (r#"cjson.encode({[1]=1,[2]=2,[3]=3,n=3})"#, r#"ok|"{\"1\":1,\"2\":2,\"3\":3,\"n\":3}""#),
            (r#"cjson.encode(setmetatable({}, {__index = function() return 1 end}))"#, r#"ok|"{}""#),
            (r#"cjson.encode(setmetatable({1,2}, {__len = function() return 9 end}))"#, r#"ok|"[1,2]""#),
            (
                r#"cjson.encode({1, nil, 3}), cjson.encode({nil, nil, 3}), cjson.encode({n=nil})"#,
                r#"ok|"[1,null,3]" "[null,null,3]" "{}""#,
            ),
            (
                r#"cjson.encode({[1]=1,[2]=2,[3]=3,[4]=4,[5]=5,[6]=6,[7]=7,[8]=8,[9]=9,[10]=10,[11]=11,[12]=12,[13]=13,[14]=14,[15]=15,[16]=16,[17]=17,[18]=18,[19]=19,[20]=20,[21]=21,[22]=22,[23]=23,[24]=24,[25]=25,[26]=26,[27]=27,[28]=28,[29]=29,[30]=30})"#,
                r#"ok|"[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30]""#,
            ),
            (
                r#"cjson.encode({10, 20, 30, x = 'y', [5] = 50})"#,
                r#"ok|"{\"1\":10,\"2\":20,\"3\":30,\"5\":50,\"x\":\"y\"}""#,
            ),
            (
                r#"(function() cjson.encode_max_depth(100000) local r = {pcall(cjson.encode, (function() local t = {} local c = t for i=1,10000 do c[1] = {} c = c[1] end return t end)())} cjson.encode_max_depth(1000) return r[2] end)()"#,
                r#"ok|"Cannot serialise, excessive nesting (7998)""#,
            ),
            (
                r#"(function() cjson.encode_max_depth(100000) local r = {pcall(cjson.encode, (function() local t = {} local c = t for i=1,10000 do c.k = {} c = c.k end return t end)())} cjson.encode_max_depth(1000) return r[2] end)()"#,
                r#"ok|"Cannot serialise, excessive nesting (4000)""#,
            ),
            (
                r#"(function() cjson.encode_max_depth(100000) local r = {pcall(cjson.encode, (function() local t = {} local c = t for i=1,10000 do if i % 2 == 0 then c.k = {} c = c.k else c[1] = {} c = c[1] end end return t end)())} cjson.encode_max_depth(1000) return r[2] end)()"#,
                r#"ok|"Cannot serialise, excessive nesting (5333)""#,
            ),
            (
                r#"select(2, pcall(cjson.encode, (function() local t = {} t.self = t return t end)()))"#,
                r#"ok|"Cannot serialise, excessive nesting (1001)""#,
            ),
            (
                r#"select(2, pcall(cjson.encode, {[1]=1,[2]=2,[4]=4})), cjson.encode({[10]=1})"#,
                r#"ok|"[1,2,null,4]" "[null,null,null,null,null,null,null,null,null,1]""#,
            ),
            (r#"select(2, pcall(cjson.encode, {[11]=1}))"#, r#"ok|"Cannot serialise table: excessively sparse array""#),
            (
                r#"select(2, pcall(cjson.encode, {[12]=1,[1]=1}))"#,
                r#"ok|"Cannot serialise table: excessively sparse array""#,
            ),
            (
                r#"cjson.encode({[1]=1,[2]=2,[3]=3,[4]=4,[5]=5,[6]=6,[11]=1}), cjson.encode({[1]=1,[2]=2,[3]=3,[4]=4,[5]=5,[6]=6,[12]=1})"#,
                r#"ok|"[1,2,3,4,5,6,null,null,null,null,1]" "[1,2,3,4,5,6,null,null,null,null,null,1]""#,
            ),
            (
                r#"select(2, pcall(cjson.encode, {[1]=1,[2]=2,[3]=3,[4]=4,[5]=5,[13]=1}))"#,
                r#"ok|"Cannot serialise table: excessively sparse array""#,
            ),
            (
                r#"(function() cjson.encode_max_depth(3) local r = {pcall(cjson.encode, {{{{1}}}})} cjson.encode_max_depth(1000) return r[2] end)()"#,
                r#"ok|"Cannot serialise, excessive nesting (4)""#,
            ),
            (
                r#"(function() cjson.encode_sparse_array(false, 1, 0) local r = {pcall(cjson.encode, {[1]=1,[3]=2})} cjson.encode_sparse_array(false, 2, 10) return r[2] end)()"#,
                r#"ok|"Cannot serialise table: excessively sparse array""#,
            ),
            (
                r#"(function() local t = {} for i = 1, 50 do t[i * 1.5] = i end return cjson.encode(t) end)()"#,
                r#"ok|"{\"27\":18,\"61.5\":41,\"75\":50,\"3\":2,\"54\":36,\"19.5\":13,\"6\":4,\"31.5\":21,\"39\":26,\"12\":8,\"63\":42,\"24\":16,\"55.5\":37,\"48\":32,\"16.5\":11,\"40.5\":27,\"64.5\":43,\"28.5\":19,\"33\":22,\"10.5\":7,\"57\":38,\"66\":44,\"21\":14,\"49.5\":33,\"42\":28,\"67.5\":45,\"34.5\":23,\"25.5\":17,\"7.5\":5,\"9\":6,\"51\":34,\"15\":10,\"18\":12,\"43.5\":29,\"70.5\":47,\"30\":20,\"36\":24,\"73.5\":49,\"60\":40,\"72\":48,\"22.5\":15,\"52.5\":35,\"69\":46,\"58.5\":39,\"45\":30,\"13.5\":9,\"46.5\":31,\"37.5\":25,\"1.5\":1,\"4.5\":3}""#,
            ),
            (
                r#"(function() local t = {} for i = 1, 20 do t[i] = i end t[5] = nil t[6] = nil return cjson.encode(t) end)()"#,
                r#"ok|"[1,2,3,4,null,null,7,8,9,10,11,12,13,14,15,16,17,18,19,20]""#,
            ),
            (
                r#"cjson.encode({[-0.0] = 1}), cjson.encode({[1e20] = 1}), cjson.encode({[2^53] = 1}), cjson.encode({[0.1] = 'x'})"#,
                r#"ok|"{\"-0\":1}" "{\"1e+20\":1}" "{\"9.007199254741e+15\":1}" "{\"0.1\":\"x\"}""#,
            ),
            (
                r#"cjson.encode(2^63), cjson.encode(-2^63), cjson.encode(1e-300), cjson.encode(5e-324), cjson.encode(123.456), cjson.encode(-1.5e-7), cjson.encode(100), cjson.encode(1e21), cjson.encode(99999999999999), cjson.encode(999999999999999)"#,
                r#"ok|"9.2233720368548e+18" "-9.2233720368548e+18" "1e-300" "4.9406564584125e-324" "123.456" "-1.5e-07" "100" "1e+21" "99999999999999" "1e+15""#,
            ),
            (
                r#"cjson.encode({a = {b = {c = {d = {}}}}}), cjson.encode({{}, {{}}, {a = {}}})"#,
                r#"ok|"{\"a\":{\"b\":{\"c\":{\"d\":{}}}}}" "[{},[{}],{\"a\":{}}]""#,
            ),
            (r#"cjson.encode(string.rep('x', 10) .. '\0' .. 'y')"#, r#"ok|"\"xxxxxxxxxx\\u0000y\"""#),
            (
                r#"cjson.encode('\226\128\168\226\128\169'), cjson.encode('<script>'), cjson.encode("'")"#,
                r#"ok|"\"\226\128\168\226\128\169\"" "\"<script>\"" "\"'\"""#,
            ),
        ]);
    }

    /// Decoding, including error positions and depth limits.
    /// Expected values were taken from redis-server 7.0.15: the same
    /// snippets run there with EVAL, serialized by the same Lua code
    /// (`testutil::PRELUDE`).
    #[test]
    fn decode_matches_redis() {
        check(&[
            (
                r#"cjson.decode_max_depth(), cjson.decode_max_depth(2), pcall(cjson.decode, '[[1]]'), pcall(cjson.decode, '[[[1]]]'), pcall(cjson.decode, '{"a":{"b":{}}}'), cjson.decode_max_depth(1000)"#,
                r#"ok|1000 2 true false false 1000"#,
            ),
            (
                r#"cjson.decode_max_depth(0)"#,
                r#"err|user_script:1: bad argument #1 to 'decode_max_depth' (expected integer between 1 and 2147483647)"#,
            ),
            (
                r#"cjson.decode_max_depth(100000), pcall(cjson.decode, string.rep('[', 10000)), pcall(cjson.decode, string.rep('{"a":', 10000)), cjson.decode_max_depth(1000)"#,
                r#"ok|100000 false false 1000"#,
            ),
            (
                r#"pcall(cjson.decode, string.rep('[', 1001)), pcall(cjson.decode, string.rep('[', 1000))"#,
                r#"ok|false false "Expected value but found T_END at character 1001""#,
            ),
            (
                r#"cjson.decode_invalid_numbers(), cjson.decode_invalid_numbers(false), pcall(cjson.decode, 'NaN'), pcall(cjson.decode, '[0x10]'), pcall(cjson.decode, '01'), pcall(cjson.decode, '+1'), pcall(cjson.decode, 'inf'), pcall(cjson.decode, '-Infinity'), cjson.decode_invalid_numbers(true)"#,
                r#"ok|true false false false false false false false true"#,
            ),
            (
                r#"cjson.decode('NaN'), cjson.decode('nan'), cjson.decode('inf'), cjson.decode('-inf'), cjson.decode('Infinity'), cjson.decode('-Infinity'), cjson.decode('0x10'), cjson.decode('0X1p4'), cjson.decode('01'), cjson.decode('+1'), cjson.decode('-0'), cjson.decode('1e400'), cjson.decode('-1e-400')"#,
                r#"ok|nan nan inf -inf inf -inf 16 16 1 1 -0 inf -0"#,
            ),
            (
                r#"cjson.decode_invalid_numbers('on'), cjson.decode_invalid_numbers('null')"#,
                r#"err|user_script:1: bad argument #1 to 'decode_invalid_numbers' (invalid option 'null')"#,
            ),
            (
                r#"cjson.decode('{"a":1,"b":[1,2,3],"c":{"d":null}}')"#,
                r#"ok|{["a"]=1,["b"]={[1]=1,[2]=2,[3]=3},["c"]={["d"]=NULL}}"#,
            ),
            (
                r#"cjson.decode('[1,"2",true,false,null]'), cjson.decode('[]'), cjson.decode('{}'), cjson.decode('  [ 1 , 2 ]  '), cjson.decode('"x"'), cjson.decode('12.5'), cjson.decode('-3e2'), cjson.decode('true'), cjson.decode('null')"#,
                r#"ok|{[1]=1,[2]="2",[3]=true,[4]=false,[5]=NULL} {} {} {[1]=1,[2]=2} "x" 12.5 -300 true NULL"#,
            ),
            (
                r#"cjson.decode('[null, null]')[2] == cjson.null, #cjson.decode('[null, null]'), type(cjson.decode('null'))"#,
                r#"ok|true 2 "userdata""#,
            ),
            (
                r#"cjson.decode('"\\u0041\\u00e9\\u4e2d\\ud83d\\ude00\\/\\b\\f\\n\\r\\t\\"\\\\"')"#,
                r#"ok|"A\195\169\228\184\173\240\159\152\128/\8\12\\10\r\9\"\\""#,
            ),
            (
                r#"cjson.decode('"\\u0000"'), cjson.decode('"\\uFFFF"'), cjson.decode('"\\uDBFF\\uDFFF"')"#,
                r#"ok|"\000" "\239\191\191" "\244\143\191\191""#,
            ),
            (
                r#"cjson.decode('"\\ud83d"')"#,
                r#"err|user_script:1: Expected value but found invalid unicode escape code at character 2"#,
            ),
            (
                r#"cjson.decode('"\\ude00"')"#,
                r#"err|user_script:1: Expected value but found invalid unicode escape code at character 2"#,
            ),
            (
                r#"cjson.decode('"\\ud83dx"')"#,
                r#"err|user_script:1: Expected value but found invalid unicode escape code at character 2"#,
            ),
            (
                r#"cjson.decode('"\\ud83d\\u0041"')"#,
                r#"err|user_script:1: Expected value but found invalid unicode escape code at character 2"#,
            ),
            (
                r#"cjson.decode('"\\u12"')"#,
                r#"err|user_script:1: Expected value but found invalid unicode escape code at character 2"#,
            ),
            (
                r#"cjson.decode('"\\u12G4"')"#,
                r#"err|user_script:1: Expected value but found invalid unicode escape code at character 2"#,
            ),
            (
                r#"cjson.decode('"\\x"')"#,
                r#"err|user_script:1: Expected value but found invalid escape code at character 2"#,
            ),
            (
                r#"cjson.decode('"abc')"#,
                r#"err|user_script:1: Expected value but found unexpected end of string at character 5"#,
            ),
            (
                r#"cjson.decode('"ab\0c"')"#,
                r#"err|user_script:1: Expected value but found unexpected end of string at character 4"#,
            ),
            (r#"cjson.decode('[1]\0garbage')"#, r#"ok|{[1]=1}"#),
            (r#"cjson.decode('\0')"#, r#"err|user_script:1: Expected value but found T_END at character 1"#),
            (r#"cjson.decode('a\0')"#, r#"err|user_script:1: JSON parser does not support UTF-16 or UTF-32"#),
            (r#"cjson.decode('1\0')"#, r#"err|user_script:1: JSON parser does not support UTF-16 or UTF-32"#),
            (r#"cjson.decode('')"#, r#"err|user_script:1: Expected value but found T_END at character 1"#),
            (r#"cjson.decode(' ')"#, r#"err|user_script:1: Expected value but found T_END at character 2"#),
            (r#"cjson.decode('x')"#, r#"err|user_script:1: Expected value but found invalid token at character 1"#),
            (r#"cjson.decode('[1,]')"#, r#"err|user_script:1: Expected value but found T_ARR_END at character 4"#),
            (
                r#"cjson.decode('[1 2]')"#,
                r#"err|user_script:1: Expected comma or array end but found T_NUMBER at character 4"#,
            ),
            (r#"cjson.decode('{"a" 1}')"#, r#"err|user_script:1: Expected colon but found T_NUMBER at character 6"#),
            (
                r#"cjson.decode('{"a":1,}')"#,
                r#"err|user_script:1: Expected object key string but found T_OBJ_END at character 8"#,
            ),
            (
                r#"cjson.decode('{"a":1 "b"}')"#,
                r#"err|user_script:1: Expected comma or object end but found T_STRING at character 8"#,
            ),
            (
                r#"cjson.decode('{1:2}')"#,
                r#"err|user_script:1: Expected object key string but found T_NUMBER at character 2"#,
            ),
            (r#"cjson.decode('{"a":}')"#, r#"err|user_script:1: Expected value but found T_OBJ_END at character 6"#),
            (r#"cjson.decode('[1]]')"#, r#"err|user_script:1: Expected the end but found T_ARR_END at character 4"#),
            (
                r#"cjson.decode('[1] x')"#,
                r#"err|user_script:1: Expected the end but found invalid token at character 5"#,
            ),
            (r#"cjson.decode('tru')"#, r#"err|user_script:1: Expected value but found invalid token at character 1"#),
            (r#"cjson.decode('nul')"#, r#"err|user_script:1: Expected value but found invalid token at character 1"#),
            (
                r#"cjson.decode('falsey')"#,
                r#"err|user_script:1: Expected the end but found invalid token at character 6"#,
            ),
            (
                r#"cjson.decode('truex')"#,
                r#"err|user_script:1: Expected the end but found invalid token at character 5"#,
            ),
            (r#"cjson.decode('-')"#, r#"err|user_script:1: Expected value but found invalid number at character 1"#),
            (r#"cjson.decode('-x')"#, r#"err|user_script:1: Expected value but found invalid number at character 1"#),
            (
                r#"cjson.decode('1.5.3')"#,
                r#"err|user_script:1: Expected the end but found invalid token at character 4"#,
            ),
            (r#"cjson.decode('.5')"#, r#"err|user_script:1: Expected value but found invalid token at character 1"#),
            (r#"cjson.decode('1e')"#, r#"err|user_script:1: Expected the end but found invalid token at character 2"#),
            (r#"cjson.decode('{')"#, r#"err|user_script:1: Expected object key string but found T_END at character 2"#),
            (r#"cjson.decode('[')"#, r#"err|user_script:1: Expected value but found T_END at character 2"#),
            (r#"cjson.decode(']')"#, r#"err|user_script:1: Expected value but found T_ARR_END at character 1"#),
            (r#"cjson.decode('}')"#, r#"err|user_script:1: Expected value but found T_OBJ_END at character 1"#),
            (r#"cjson.decode(':')"#, r#"err|user_script:1: Expected value but found T_COLON at character 1"#),
            (r#"cjson.decode(',')"#, r#"err|user_script:1: Expected value but found T_COMMA at character 1"#),
            (
                r#"cjson.decode('{"a":[1,{"b":[}]}')"#,
                r#"err|user_script:1: Expected value but found T_OBJ_END at character 15"#,
            ),
            (r#"cjson.decode('"\1\31"'), cjson.decode('"tab	here"')"#, r#"ok|"\1\31" "tab\9here""#),
            (r#"cjson.decode('\t\n\r [1]')"#, r#"ok|{[1]=1}"#),
            (r#"cjson.decode('\f[1]')"#, r#"err|user_script:1: Expected value but found invalid token at character 1"#),
            (r#"cjson.decode(12), cjson.decode(1e20)"#, r#"ok|12 1e+20"#),
            (r#"cjson.decode()"#, r#"err|user_script:1: bad argument #1 to 'decode' (expected 1 argument)"#),
            (r#"cjson.decode(nil)"#, r#"err|user_script:1: bad argument #1 to 'decode' (string expected, got nil)"#),
            (r#"cjson.decode({})"#, r#"err|user_script:1: bad argument #1 to 'decode' (string expected, got table)"#),
            (r#"cjson.decode('1', 2)"#, r#"err|user_script:1: bad argument #1 to 'decode' (expected 1 argument)"#),
            (r#"cjson.decode('{"a":1,"a":2}')"#, r#"ok|{["a"]=2}"#),
            (r#"cjson.decode('{"1":1,"2":2}')[1], cjson.decode('{"1":1,"2":2}')['1']"#, r#"ok|nil 1"#),
            (r#"cjson.decode('[1,2,3,[4,5,[6]]]')"#, r#"ok|{[1]=1,[2]=2,[3]=3,[4]={[1]=4,[2]=5,[3]={[1]=6}}}"#),
            (
                r#"cjson.decode('{"k":[{"x":1},{"y":[true,null,"s"]}]}')"#,
                r#"ok|{["k"]={[1]={["x"]=1},[2]={["y"]={[1]=true,[2]=NULL,[3]="s"}}}}"#,
            ),
            (
                r#"cjson.decode('123456789012345678901234567890'), cjson.decode('1E2'), cjson.decode('-0.0')"#,
                r#"ok|1.2345678901234568e+29 100 -0"#,
            ),
            (
                r#"cjson.decode(cjson.encode({a='\0\1é', b={1,2,3}}))"#,
                r#"ok|{["a"]="\000\1\195\169",["b"]={[1]=1,[2]=2,[3]=3}}"#,
            ),
            (r#"cjson.encode(cjson.decode('{"a":[1,2,{"b":null}]}'))"#, r#"ok|"{\"a\":[1,2,{\"b\":null}]}""#),
            (r#"pcall(cjson.decode, '[1,')"#, r#"ok|false "Expected value but found T_END at character 4""#),
            (
                r#"(function() cjson.decode_max_depth(100000) local r = {pcall(cjson.decode, string.rep('[', 10000))} cjson.decode_max_depth(1000) return r[2] end)()"#,
                r#"ok|"Found too many nested data structures (7999) at character 7999""#,
            ),
            (
                r#"(function() cjson.decode_max_depth(100000) local r = {pcall(cjson.decode, string.rep('{"a":', 10000))} cjson.decode_max_depth(1000) return r[2] end)()"#,
                r#"ok|"Found too many nested data structures (4000) at character 19996""#,
            ),
            (
                r#"(function() cjson.decode_max_depth(100000) local r = {pcall(cjson.decode, string.rep('[{"a":', 5000))} cjson.decode_max_depth(1000) return r[2] end)()"#,
                r#"ok|"Found too many nested data structures (5333) at character 15997""#,
            ),
            (
                r#"(function() cjson.decode_max_depth(100000) local r = {pcall(cjson.decode, string.rep('[', 7000) .. string.rep(']', 7000))} cjson.decode_max_depth(1000) return r[1], type(r[2]) end)()"#,
                r#"ok|true "table""#,
            ),
            (
                r#"select(2, pcall(cjson.decode, string.rep('[', 1001)))"#,
                r#"ok|"Found too many nested data structures (1001) at character 1001""#,
            ),
            (
                r#"select(2, pcall(cjson.decode, string.rep('{"x":', 1001)))"#,
                r#"ok|"Found too many nested data structures (1001) at character 5001""#,
            ),
            (
                r#"(function() cjson.decode_max_depth(2) local r = {pcall(cjson.decode, '[[[1]]]')} local s = {pcall(cjson.decode, '{"a":{"b":{}}}')} cjson.decode_max_depth(1000) return r[2], s[2] end)()"#,
                r#"ok|"Found too many nested data structures (3) at character 3" "Found too many nested data structures (3) at character 11""#,
            ),
            (
                r#"(function() cjson.decode_invalid_numbers(false) local out = {} for _, s in ipairs({'NaN', '[0x10]', '01', '+1', 'inf', '-Infinity', '-0x5', '00', '-nan', '0', '-0', '0.5', '[1,-01]'}) do out[#out+1] = select(2, pcall(cjson.decode, s)) end cjson.decode_invalid_numbers(true) return unpack(out) end)()"#,
                r#"ok|"Expected value but found invalid token at character 1" "Expected value but found invalid number at character 2" "Expected value but found invalid number at character 1" "Expected value but found invalid token at character 1" "Expected value but found invalid token at character 1" "Expected value but found invalid number at character 1" "Expected value but found invalid number at character 1" "Expected value but found invalid number at character 1" "Expected value but found invalid number at character 1" 0 -0 0.5 "Expected value but found invalid number at character 4""#,
            ),
            (
                r#"cjson.decode('[0x1g]')"#,
                r#"err|user_script:1: Expected comma or array end but found invalid token at character 5"#,
            ),
            (r#"cjson.decode('0x')"#, r#"err|user_script:1: Expected the end but found invalid token at character 2"#),
            (
                r#"cjson.decode('-0x10'), cjson.decode('+0x10'), cjson.decode('Inf'), cjson.decode('+inf'), cjson.decode('+nan'), cjson.decode('nan(123)'), cjson.decode('1.'), cjson.decode('1.e5'), cjson.decode('0e0')"#,
                r#"ok|-16 16 inf inf nan nan 1 100000 0"#,
            ),
            (r#"cjson.decode('+')"#, r#"err|user_script:1: Expected value but found invalid number at character 1"#),
            (r#"cjson.decode('+x')"#, r#"err|user_script:1: Expected value but found invalid number at character 1"#),
            (
                r#"cjson.decode('nanx')"#,
                r#"err|user_script:1: Expected the end but found invalid token at character 4"#,
            ),
            (
                r#"cjson.decode('infinit')"#,
                r#"err|user_script:1: Expected the end but found invalid token at character 4"#,
            ),
            (r#"cjson.decode('Nul')"#, r#"err|user_script:1: Expected value but found invalid token at character 1"#),
            (
                r#"cjson.decode('"\\u00"')"#,
                r#"err|user_script:1: Expected value but found invalid unicode escape code at character 2"#,
            ),
            (
                r#"cjson.decode('"\\')"#,
                r#"err|user_script:1: Expected value but found invalid escape code at character 2"#,
            ),
            (
                r#"cjson.decode('"\\u')"#,
                r#"err|user_script:1: Expected value but found invalid unicode escape code at character 2"#,
            ),
            (
                r#"cjson.decode('"\\ud800\\udbff"')"#,
                r#"err|user_script:1: Expected value but found invalid unicode escape code at character 2"#,
            ),
            (
                r#"cjson.decode('  "a" x')"#,
                r#"err|user_script:1: Expected the end but found invalid token at character 7"#,
            ),
            (
                r#"cjson.decode('[true,false,null,1.5e3,"\\u0024"]')"#,
                r#"ok|{[1]=true,[2]=false,[3]=NULL,[4]=1500,[5]="$"}"#,
            ),
            (
                r#"(function() local t = cjson.decode('{"b":1,"a":2,"c":{"z":1,"y":2}}') return cjson.encode(t) end)()"#,
                r#"ok|"{\"a\":2,\"c\":{\"y\":2,\"z\":1},\"b\":1}""#,
            ),
        ]);
    }
}
