//! Redis 7.0 functions: libraries loaded with `FUNCTION LOAD`, whose code
//! registers named functions (`redis.register_function`) later run by
//! `FCALL`. Semantics, checks and error texts follow `functions.c` and
//! `function_lua.c`.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_int;
use std::time::Instant;

use bytes::Bytes;
use indexmap::IndexMap;
use mlua::ffi;

use super::lua::{push_error_table, raise, State};
use super::sandbox::{error_info, load_chunk, Vm};
use super::ScriptFlags;

/// Maximum time the top level of a library may run during `FUNCTION LOAD`.
const LOAD_TIMEOUT_MS: u128 = 500;

/// One registered function.
#[derive(Debug)]
pub struct FunctionInfo {
    pub name: String,
    pub desc: Option<Bytes>,
    pub flags: ScriptFlags,
    /// `luaL_ref` of the callback in the function VM's registry.
    pub(crate) fref: c_int,
}

/// One library.
#[derive(Debug)]
pub struct Library {
    pub name: String,
    /// The whole payload given to `FUNCTION LOAD`, shebang included.
    pub code: Bytes,
    pub functions: Vec<FunctionInfo>,
}

/// What `redis.register_function` appends to while a library loads.
struct LoadCtx {
    started: Instant,
    functions: Vec<FunctionInfo>,
    /// Valkey 8.1: `server.register_function` in the errors, and a bad or
    /// repeated function name refused after the load, unwrapped.
    valkey: bool,
    late_error: Option<&'static str>,
}

thread_local! {
    static LOADING: Cell<*mut LoadCtx> = const { Cell::new(std::ptr::null_mut()) };
}

/// All libraries and their functions.
#[derive(Debug, Default)]
pub struct Libraries {
    pub libs: IndexMap<String, Library>,
    /// Lower-cased function name → library name (function lookup ignores
    /// letter case, as Redis's functions dict does).
    pub index: HashMap<String, String>,
}

impl Libraries {
    pub fn find(&self, name: &[u8]) -> Option<&FunctionInfo> {
        let key = String::from_utf8_lossy(name).to_ascii_lowercase();
        let lib = self.libs.get(self.index.get(&key)?)?;
        lib.functions.iter().find(|f| f.name.eq_ignore_ascii_case(&key))
    }

    pub fn function_count(&self) -> usize {
        self.index.len()
    }

    fn link(&mut self, lib: Library) {
        for f in &lib.functions {
            self.index.insert(f.name.to_ascii_lowercase(), lib.name.clone());
        }
        self.libs.insert(lib.name.clone(), lib);
    }

    fn unlink(&mut self, name: &str) -> Option<Library> {
        let lib = self.libs.shift_remove(name)?;
        for f in &lib.functions {
            self.index.remove(&f.name.to_ascii_lowercase());
        }
        Some(lib)
    }

    /// Releases a library's callbacks.
    fn free(vm: &Vm, lib: Library) {
        for f in lib.functions {
            // SAFETY: unref of our own registry slot.
            unsafe { ffi::luaL_unref(vm.l, ffi::LUA_REGISTRYINDEX, f.fref) };
        }
    }

    /// Deletes a library.
    pub(crate) fn delete(&mut self, vm: &Vm, name: &str) -> bool {
        match self.unlink(name) {
            Some(lib) => {
                Self::free(vm, lib);
                true
            }
            None => false,
        }
    }

    /// Deletes everything.
    pub(crate) fn flush(&mut self, vm: &Vm) {
        let names: Vec<String> = self.libs.keys().cloned().collect();
        for n in names {
            self.delete(vm, &n);
        }
    }

    /// `FUNCTION LOAD [REPLACE] code`: returns the library name, or the
    /// error text (without the `ERR ` code).
    pub(crate) fn load(&mut self, vm: &Vm, code: &Bytes, replace: bool) -> Result<String, String> {
        let (engine, name, body) = extract_metadata(code)?;
        if !valid_name(name.as_bytes()) {
            return Err(
                "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long".into()
            );
        }
        if !engine.eq_ignore_ascii_case("lua") {
            return Err(format!("Engine '{engine}' not found"));
        }
        if self.libs.contains_key(&name) && !replace {
            return Err(format!("Library '{name}' already exists"));
        }
        let old = self.unlink(&name);
        let result = create(vm, &body).and_then(|functions| {
            let lib = Library { name: name.clone(), code: code.clone(), functions };
            if lib.functions.is_empty() {
                return Err(("No functions registered".to_string(), Some(lib)));
            }
            if let Some(f) = lib.functions.iter().find(|f| self.index.contains_key(&f.name.to_ascii_lowercase())) {
                return Err((format!("Function {} already exists", f.name), Some(lib)));
            }
            Ok(lib)
        });
        match result {
            Ok(lib) => {
                self.link(lib);
                if let Some(old) = old {
                    Self::free(vm, old);
                }
                Ok(name)
            }
            Err((e, new)) => {
                if let Some(new) = new {
                    Self::free(vm, new);
                }
                if let Some(old) = old {
                    self.link(old);
                }
                Err(e)
            }
        }
    }
}

type CreateError = (String, Option<Library>);

/// Runs a library's code in load mode and collects what it registers.
fn create(vm: &Vm, body: &[u8]) -> Result<Vec<FunctionInfo>, CreateError> {
    let l = vm.l;
    let valkey = vm.valkey.get();
    let mut ctx = LoadCtx { started: Instant::now(), functions: Vec::new(), valkey, late_error: None };
    vm.set_load_mode(true);
    // SAFETY: raw calls on our own VM; `ctx` outlives the load.
    let res = unsafe {
        match load_chunk(l, body, b"@user_function") {
            Err(msg) => Err(format!("Error compiling function: {}", String::from_utf8_lossy(&msg))),
            Ok(()) => {
                let prev = LOADING.with(|c| c.replace(&mut ctx));
                ffi::lua_sethook(l, Some(load_hook), ffi::LUA_MASKCOUNT, 100_000);
                let st = ffi::lua_pcall(l, 0, 0, 0);
                ffi::lua_sethook(l, None, 0, 0);
                LOADING.with(|c| c.set(prev));
                if st != 0 {
                    let info = error_info(l);
                    ffi::lua_pop(l, 1);
                    let msg = info.msg.unwrap_or_default();
                    let msg = String::from_utf8_lossy(&msg);
                    let msg = if valkey {
                        msg.replace("redis.register_function", "server.register_function")
                    } else {
                        msg.into_owned()
                    };
                    Err(format!("Error registering functions: {msg}"))
                } else if let Some(late) = ctx.late_error {
                    Err(late.to_string())
                } else {
                    Ok(())
                }
            }
        }
    };
    vm.set_load_mode(false);
    match res {
        Ok(()) => Ok(ctx.functions),
        Err(e) => {
            let lib = Library { name: String::new(), code: Bytes::new(), functions: ctx.functions };
            Err((e, Some(lib)))
        }
    }
}

/// The 500 ms budget of a library's top-level code.
unsafe extern "C-unwind" fn load_hook(l: State, _ar: *mut ffi::lua_Debug) {
    let ctx = LOADING.with(|c| c.get());
    if ctx.is_null() {
        return;
    }
    if (*ctx).started.elapsed().as_millis() > LOAD_TIMEOUT_MS {
        ffi::lua_sethook(l, Some(load_hook), ffi::LUA_MASKLINE, 0);
        push_error_table(l, b"FUNCTION LOAD timeout");
        raise(l);
    }
}

/// `[a-zA-Z0-9_]+`.
pub(crate) fn valid_name(n: &[u8]) -> bool {
    !n.is_empty() && n.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// `functionExtractLibMetaData`: `#!<engine> name=<name>\n<code>`.
fn extract_metadata(payload: &[u8]) -> Result<(String, String, Vec<u8>), String> {
    if !payload.starts_with(b"#!") {
        return Err("Missing library metadata".into());
    }
    let Some(end) = payload.iter().position(|&c| c == b'\n') else {
        return Err("Invalid library metadata".into());
    };
    let parts = match crate::protocol::parse::split_args(&payload[..end]) {
        Some(p) if !p.is_empty() => p,
        _ => return Err("Invalid library metadata".into()),
    };
    let engine = String::from_utf8_lossy(&parts[0][2.min(parts[0].len())..]).into_owned();
    let mut name: Option<String> = None;
    for part in &parts[1..] {
        if part.len() >= 5 && part[..5].eq_ignore_ascii_case(b"name=") {
            if name.is_some() {
                return Err("Invalid metadata value, name argument was given multiple times".into());
            }
            name = Some(String::from_utf8_lossy(&part[5..]).into_owned());
            continue;
        }
        return Err(format!("Invalid metadata value given: {}", String::from_utf8_lossy(part)));
    }
    let Some(name) = name else {
        return Err("Library name was not given".into());
    };
    Ok((engine, name, payload[end..].to_vec()))
}

/// Result of reading `register_function`'s arguments.
struct Registration {
    name: Vec<u8>,
    desc: Option<Vec<u8>>,
    fref: Option<c_int>,
    flags: ScriptFlags,
}

unsafe fn string_arg(l: State, idx: c_int) -> Option<Vec<u8>> {
    if ffi::lua_isstring(l, idx) == 0 {
        return None;
    }
    super::lua::to_bytes(l, idx).map(|b| b.to_vec())
}

unsafe fn read_flags(l: State) -> Option<ScriptFlags> {
    let mut flags = ScriptFlags::default();
    let mut j = 1;
    loop {
        ffi::lua_rawgeti(l, -1, j);
        j += 1;
        if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
            ffi::lua_pop(l, 1);
            return Some(flags);
        }
        if ffi::lua_isstring(l, -1) == 0 {
            ffi::lua_pop(l, 1);
            return None;
        }
        let s = super::lua::to_bytes(l, -1).unwrap_or(b"");
        let f = ScriptFlags::from_name(s, true);
        ffi::lua_pop(l, 1);
        flags = ScriptFlags(flags.0 | f?.0);
    }
}

/// Unrefs a half-read registration's callback.
unsafe fn discard(l: State, r: &Registration) {
    if let Some(f) = r.fref {
        ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, f);
    }
}

unsafe fn read_named(l: State) -> Result<Registration, &'static str> {
    let mut r = Registration { name: Vec::new(), desc: None, fref: None, flags: ScriptFlags::default() };
    let mut have_name = false;
    if ffi::lua_type(l, 1) != ffi::LUA_TTABLE {
        return Err("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).");
    }
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, 1) != 0 {
        let fail = |r: &Registration, msg: &'static str| -> Result<Registration, &'static str> {
            discard(l, r);
            Err(msg)
        };
        if ffi::lua_type(l, -2) != ffi::LUA_TSTRING && ffi::lua_type(l, -2) != ffi::LUA_TNUMBER {
            return fail(&r, "named argument key given to redis.register_function is not a string");
        }
        // Copy the key without converting it in place (lua_next needs it).
        ffi::lua_pushvalue(l, -2);
        let key = super::lua::to_bytes(l, -1).unwrap_or(b"").to_ascii_lowercase();
        ffi::lua_pop(l, 1);
        match &key[..] {
            b"function_name" => match string_arg(l, -1) {
                Some(n) => {
                    r.name = n;
                    have_name = true;
                }
                None => return fail(&r, "function_name argument given to redis.register_function must be a string"),
            },
            b"description" => match string_arg(l, -1) {
                Some(d) => r.desc = Some(d),
                None => return fail(&r, "description argument given to redis.register_function must be a string"),
            },
            b"callback" => {
                if ffi::lua_type(l, -1) != ffi::LUA_TFUNCTION {
                    return fail(&r, "callback argument given to redis.register_function must be a function");
                }
                if let Some(old) = r.fref.take() {
                    ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, old);
                }
                r.fref = Some(ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX));
                continue;
            }
            b"flags" => {
                if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
                    return fail(
                        &r,
                        "flags argument to redis.register_function must be a table representing function flags",
                    );
                }
                match read_flags(l) {
                    Some(f) => r.flags = f,
                    None => return fail(&r, "unknown flag given"),
                }
            }
            _ => return fail(&r, "unknown argument given to redis.register_function"),
        }
        ffi::lua_pop(l, 1);
    }
    if !have_name {
        discard(l, &r);
        return Err("redis.register_function must get a function name argument");
    }
    if r.fref.is_none() {
        return Err("redis.register_function must get a callback argument");
    }
    Ok(r)
}

unsafe fn read_positional(l: State) -> Result<Registration, &'static str> {
    let Some(name) = string_arg(l, 1) else {
        return Err("first argument to redis.register_function must be a string");
    };
    if ffi::lua_type(l, 2) != ffi::LUA_TFUNCTION {
        return Err("second argument to redis.register_function must be a function");
    }
    ffi::lua_settop(l, 2);
    let fref = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
    Ok(Registration { name, desc: None, fref: Some(fref), flags: ScriptFlags::default() })
}

unsafe fn register(l: State, ctx: &mut LoadCtx) -> Result<(), &'static str> {
    let argc = ffi::lua_gettop(l);
    if !(1..=2).contains(&argc) {
        return Err("wrong number of arguments to redis.register_function");
    }
    let r = if argc == 1 { read_named(l)? } else { read_positional(l)? };
    let fref = r.fref.unwrap_or(ffi::LUA_NOREF);
    let name = String::from_utf8_lossy(&r.name).into_owned();
    let refused = if !valid_name(&r.name) {
        // Redis 7.0's text names libraries here; Valkey's names functions.
        Some(if ctx.valkey {
            "Function names can only contain letters, numbers, or underscores(_) and must be at least one character long"
        } else {
            "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
        })
    } else if ctx.functions.iter().any(|f| f.name == name) {
        Some("Function already exists in the library")
    } else {
        None
    };
    if let Some(msg) = refused {
        ffi::luaL_unref(l, ffi::LUA_REGISTRYINDEX, fref);
        if ctx.valkey {
            ctx.late_error.get_or_insert(msg);
            return Ok(());
        }
        return Err(msg);
    }
    ctx.functions.push(FunctionInfo { name, desc: r.desc.map(Bytes::from), flags: r.flags, fref });
    Ok(())
}

/// `redis.register_function(name, fn)` / `redis.register_function{...}`.
pub(crate) unsafe extern "C-unwind" fn register_function(l: State) -> c_int {
    let ctx = LOADING.with(|c| c.get());
    if ctx.is_null() {
        push_error_table(l, b"redis.register_function can only be called on FUNCTION LOAD command");
        raise(l);
    }
    match register(l, &mut *ctx) {
        Ok(()) => 0,
        Err(msg) => {
            push_error_table(l, msg.as_bytes());
            raise(l)
        }
    }
}

/// `FUNCTION RESTORE` policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    Flush,
    Append,
    Replace,
}

/// RDB opcodes and version of Redis 7.0 `FUNCTION DUMP` payloads.
const RDB_OPCODE_FUNCTION2: u8 = 245;
const RDB_OPCODE_FUNCTION_PRE_GA: u8 = 246;
const RDB_VERSION: u16 = 10;

impl Libraries {
    /// `FUNCTION DUMP`: each library as `FUNCTION2 <code>`, then the RDB
    /// version and a CRC64 (strings are stored uncompressed).
    pub fn dump(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for lib in self.libs.values() {
            out.push(RDB_OPCODE_FUNCTION2);
            rdb_save_len(&mut out, lib.code.len() as u64);
            out.extend_from_slice(&lib.code);
        }
        out.extend_from_slice(&RDB_VERSION.to_le_bytes());
        let crc = crc64(0, &out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// `FUNCTION RESTORE`: the error text on failure (without `ERR `).
    pub(crate) fn restore(&mut self, vm: &Vm, payload: &[u8], policy: RestorePolicy) -> Result<(), String> {
        const BAD: &str = "DUMP payload version or checksum are wrong";
        if payload.len() < 10 {
            return Err(BAD.into());
        }
        let footer = &payload[payload.len() - 10..];
        let ver = u16::from_le_bytes([footer[0], footer[1]]);
        if ver > RDB_VERSION || crc64(0, &payload[..payload.len() - 8]).to_le_bytes() != footer[2..] {
            return Err(BAD.into());
        }
        let end = payload.len() - 10;
        let mut tmp = Libraries::default();
        let mut pos = 0;
        let mut err: Option<String> = None;
        while pos < end {
            let ty = payload[pos];
            pos += 1;
            if ty == RDB_OPCODE_FUNCTION_PRE_GA {
                err = Some("Pre-GA function format not supported".into());
                break;
            }
            if ty != RDB_OPCODE_FUNCTION2 {
                err = Some("given type is not a function".into());
                break;
            }
            let Some(code) = rdb_load_string(payload, &mut pos) else {
                err = Some("failed loading the given functions payload".into());
                break;
            };
            if let Err(e) = tmp.load(vm, &Bytes::from(code), false) {
                err = Some(e);
                break;
            }
        }
        if let Some(e) = err {
            tmp.flush(vm);
            return Err(e);
        }
        match policy {
            RestorePolicy::Flush => {
                self.flush(vm);
                *self = tmp;
                Ok(())
            }
            RestorePolicy::Append | RestorePolicy::Replace => self.join(vm, tmp, policy == RestorePolicy::Replace),
        }
    }

    /// `libraryJoin`: moves every library of `src` into `self`.
    fn join(&mut self, vm: &Vm, mut src: Libraries, replace: bool) -> Result<(), String> {
        let mut old = Vec::new();
        let mut fail: Option<String> = None;
        for name in src.libs.keys() {
            if self.libs.contains_key(name) {
                if !replace {
                    fail = Some(format!("Library {name} already exists"));
                    break;
                }
                old.push(self.unlink(name).expect("library present"));
            }
        }
        if fail.is_none() {
            if let Some(f) = src
                .libs
                .values()
                .flat_map(|l| l.functions.iter())
                .find(|f| self.index.contains_key(&f.name.to_ascii_lowercase()))
            {
                fail = Some(format!("Function {} already exists", f.name));
            }
        }
        if let Some(e) = fail {
            for lib in old {
                self.link(lib);
            }
            src.flush(vm);
            return Err(e);
        }
        let names: Vec<String> = src.libs.keys().cloned().collect();
        for n in names {
            let lib = src.unlink(&n).expect("library present");
            self.link(lib);
        }
        for lib in old {
            Self::free(vm, lib);
        }
        Ok(())
    }
}

/// `rdbSaveLen`.
fn rdb_save_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push(((len >> 8) as u8) | 0x40);
        out.push(len as u8);
    } else if len <= u32::MAX as u64 {
        out.push(0x80);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    } else {
        out.push(0x81);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// `rdbLoadLen`: `(len, is_encoded)`.
fn rdb_load_len(b: &[u8], pos: &mut usize) -> Option<(u64, bool)> {
    let first = *b.get(*pos)?;
    *pos += 1;
    match first >> 6 {
        0 => Some(((first & 0x3f) as u64, false)),
        1 => {
            let second = *b.get(*pos)?;
            *pos += 1;
            Some(((((first & 0x3f) as u64) << 8) | second as u64, false))
        }
        2 => match first {
            0x80 => {
                let v = b.get(*pos..*pos + 4)?;
                *pos += 4;
                Some((u32::from_be_bytes(v.try_into().ok()?) as u64, false))
            }
            0x81 => {
                let v = b.get(*pos..*pos + 8)?;
                *pos += 8;
                Some((u64::from_be_bytes(v.try_into().ok()?), false))
            }
            _ => None,
        },
        _ => Some(((first & 0x3f) as u64, true)),
    }
}

/// `rdbGenericLoadStringObject`: plain, integer-encoded or LZF strings.
fn rdb_load_string(b: &[u8], pos: &mut usize) -> Option<Vec<u8>> {
    let (len, encoded) = rdb_load_len(b, pos)?;
    if encoded {
        return match len {
            0 => {
                let v = *b.get(*pos)? as i8;
                *pos += 1;
                Some(v.to_string().into_bytes())
            }
            1 => {
                let v = b.get(*pos..*pos + 2)?;
                *pos += 2;
                Some(i16::from_le_bytes([v[0], v[1]]).to_string().into_bytes())
            }
            2 => {
                let v = b.get(*pos..*pos + 4)?;
                *pos += 4;
                Some(i32::from_le_bytes(v.try_into().ok()?).to_string().into_bytes())
            }
            3 => {
                let (clen, _) = rdb_load_len(b, pos)?;
                let (ulen, _) = rdb_load_len(b, pos)?;
                let c = b.get(*pos..*pos + clen as usize)?;
                *pos += clen as usize;
                lzf_decompress(c, ulen as usize)
            }
            _ => None,
        };
    }
    let s = b.get(*pos..*pos + len as usize)?.to_vec();
    *pos += len as usize;
    Some(s)
}

/// LZF decompression (the format of Redis's compressed RDB strings).
fn lzf_decompress(input: &[u8], out_len: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(out_len);
    let mut i = 0;
    while i < input.len() {
        let ctrl = input[i] as usize;
        i += 1;
        if ctrl < 32 {
            let n = ctrl + 1;
            out.extend_from_slice(input.get(i..i + n)?);
            i += n;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += *input.get(i)? as usize;
                i += 1;
            }
            let back = ((ctrl & 0x1f) << 8) + *input.get(i)? as usize + 1;
            i += 1;
            let start = out.len().checked_sub(back)?;
            for k in 0..len + 2 {
                let c = out[start + k];
                out.push(c);
            }
        }
        if out.len() > out_len {
            return None;
        }
    }
    (out.len() == out_len).then_some(out)
}

/// Redis's CRC64 (Jones polynomial, reflected, no final xor).
pub(crate) fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    const POLY: u64 = 0x95ac_9329_ac4b_c9b5;
    for &b in data {
        crc ^= b as u64;
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ POLY } else { crc >> 1 };
        }
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_matches_redis() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    }

    #[test]
    fn rdb_lengths_round_trip() {
        for len in [0u64, 63, 64, 16383, 16384, 1 << 32] {
            let mut v = Vec::new();
            rdb_save_len(&mut v, len);
            let mut pos = 0;
            assert_eq!(rdb_load_len(&v, &mut pos), Some((len, false)));
            assert_eq!(pos, v.len());
        }
    }

    #[test]
    fn lzf_literal_and_backref() {
        // "abcabcabc": literal "abc" then a back reference of 6 bytes.
        let c = [2, b'a', b'b', b'c', (4 << 5), 2];
        assert_eq!(lzf_decompress(&c, 9).unwrap(), b"abcabcabc");
    }

    #[test]
    fn metadata_parsing() {
        let (e, n, body) = extract_metadata(b"#!lua name=lib\nreturn 1").unwrap();
        assert_eq!((e.as_str(), n.as_str(), &body[..]), ("lua", "lib", &b"\nreturn 1"[..]));
        assert_eq!(extract_metadata(b"return 1").unwrap_err(), "Missing library metadata");
        assert_eq!(extract_metadata(b"#!lua name=x").unwrap_err(), "Invalid library metadata");
        assert_eq!(extract_metadata(b"#!lua\nx").unwrap_err(), "Library name was not given");
        assert_eq!(extract_metadata(b"#!lua foo=1\nx").unwrap_err(), "Invalid metadata value given: foo=1");
    }
}
