//! Conversions between command replies and Lua values, exactly as Redis 7.0
//! performs them (`redisProtocolToLuaType*` and `luaReplyToRedisReply`).
//!
//! Redis → Lua (what `redis.call` returns), RESP2 script client (default):
//! integer → number, bulk → string, null → `false`, array → table,
//! status → `{ok=…}`, error → `{err=…}`; RESP3 maps, sets, doubles… arrive
//! already flattened the way RESP2 encodes them. With `redis.setresp(3)`:
//! map → `{map={k=v}}`, set → `{set={m=true}}`, double → `{double=n}`,
//! boolean → boolean, null → `nil`, big number → `{big_number=s}`,
//! verbatim → `{verbatim_string={format=f, string=s}}`.
//!
//! Lua → Redis (what a script returns): string → bulk, number → integer
//! (C cast, truncation), `true` → 1 (RESP3 scripts: boolean), `false` →
//! null (RESP3 scripts: boolean), table → `err`/`ok`/`double`/`big_number`/
//! `verbatim_string`/`map`/`set` forms or an array up to the first nil,
//! anything else → null. Tables are read raw (no metamethods), so the
//! conversion itself can never raise a Lua error.

use std::collections::HashSet;
use std::ffi::c_int;
use std::sync::{Mutex, OnceLock};

use bytes::Bytes;
use mlua::ffi;

use super::lua::{c_double_to_i64, get_field_raw, push_bytes, push_error_table, set_field_raw, State};
use crate::protocol::Reply;

/// How many Lua stack slots pushing `r` uses at most: a level holds up to
/// four values (a RESP3 map's two tables, a key and a value) while the next
/// level is pushed.
pub(crate) fn push_slots(r: &Reply) -> c_int {
    let deepest = |items: &mut dyn Iterator<Item = &Reply>| items.map(push_slots).max().unwrap_or(0);
    match r {
        Reply::Array(items) | Reply::Push(items) | Reply::Set(items) => 4 + deepest(&mut items.iter()),
        Reply::Map(pairs) => 4 + deepest(&mut pairs.iter().flat_map(|(k, v)| [k, v])),
        Reply::AfterPushes(_, r) | Reply::ThenPushes(r, _) => push_slots(r),
        _ => 3,
    }
}

/// Pushes the Lua form of a command reply.
///
/// # Safety
/// `l` is a valid state with room for [`push_slots`]`(r)` values (the
/// caller checks it with `lua_checkstack`: CVE-2021-32626).
pub(crate) unsafe fn push_reply(l: State, r: &Reply, resp3: bool) {
    match r {
        Reply::Status(s) => {
            ffi::lua_createtable(l, 0, 1);
            push_bytes(l, s);
            set_field_raw(l, -2, "ok");
        }
        Reply::Error(e) => {
            let mut buf = Vec::with_capacity(e.len() + 1);
            buf.push(b'-');
            buf.extend_from_slice(e);
            push_error_table(l, &buf);
            ffi::lua_pushboolean(l, 1);
            set_field_raw(l, -2, "ignore_error_stats_update");
        }
        Reply::Int(i) => ffi::lua_pushnumber(l, *i as f64),
        Reply::Bulk(b) => push_bytes(l, b),
        Reply::InlineBulk(b) => push_bytes(l, b.as_bytes()),
        Reply::SharedBulk(b) => push_bytes(l, b),
        Reply::Nil | Reply::NilArray => {
            if resp3 {
                ffi::lua_pushnil(l)
            } else {
                ffi::lua_pushboolean(l, 0)
            }
        }
        Reply::Array(items) | Reply::Push(items) => push_array(l, items.iter(), items.len(), resp3),
        Reply::AfterPushes(_, r) | Reply::ThenPushes(r, _) => push_reply(l, r, resp3),
        Reply::Set(items) => {
            if resp3 {
                ffi::lua_createtable(l, 0, 1);
                ffi::lua_createtable(l, 0, items.len() as c_int);
                for it in items {
                    push_reply(l, it, resp3);
                    ffi::lua_pushboolean(l, 1);
                    settable_nonnil_key(l);
                }
                set_field_raw(l, -2, "set");
            } else {
                push_array(l, items.iter(), items.len(), resp3);
            }
        }
        Reply::Map(pairs) => {
            if resp3 {
                ffi::lua_createtable(l, 0, 1);
                // Not pre-sized: Redis grows the map's table from empty, and
                // the rehashes decide the order `next` (and so the reply
                // made from the table) walks the keys in.
                ffi::lua_createtable(l, 0, 0);
                for (k, v) in pairs {
                    push_reply(l, k, resp3);
                    push_reply(l, v, resp3);
                    settable_nonnil_key(l);
                }
                set_field_raw(l, -2, "map");
            } else {
                let flat = pairs.iter().flat_map(|(k, v)| [k, v]);
                push_array(l, flat, pairs.len() * 2, resp3);
            }
        }
        Reply::Double(d) | Reply::ShortDouble(d) => {
            if resp3 {
                ffi::lua_createtable(l, 0, 1);
                ffi::lua_pushnumber(l, *d);
                set_field_raw(l, -2, "double");
            } else if matches!(r, Reply::ShortDouble(_)) {
                push_bytes(l, crate::num::fmt_short(*d).as_bytes());
            } else {
                push_bytes(l, crate::num::fmt_double(*d).as_bytes());
            }
        }
        Reply::HumanDouble(d) => {
            if resp3 {
                ffi::lua_createtable(l, 0, 1);
                ffi::lua_pushnumber(l, *d);
                set_field_raw(l, -2, "double");
            } else {
                push_bytes(l, crate::num::fmt_human_double(*d).as_bytes());
            }
        }
        Reply::Bool(b) => {
            if resp3 {
                ffi::lua_pushboolean(l, *b as c_int)
            } else {
                ffi::lua_pushnumber(l, if *b { 1.0 } else { 0.0 })
            }
        }
        Reply::Verbatim(fmt, s) => {
            if resp3 {
                ffi::lua_createtable(l, 0, 1);
                ffi::lua_createtable(l, 0, 2);
                push_bytes(l, s);
                set_field_raw(l, -2, "string");
                push_bytes(l, fmt.as_bytes());
                set_field_raw(l, -2, "format");
                set_field_raw(l, -2, "verbatim_string");
            } else {
                push_bytes(l, s);
            }
        }
        Reply::BigNumber(s) => {
            if resp3 {
                ffi::lua_createtable(l, 0, 1);
                push_bytes(l, s);
                set_field_raw(l, -2, "big_number");
            } else {
                push_bytes(l, s);
            }
        }
    }
}

/// `t[k] = v` with k, v on top of the stack; a nil key (RESP3 null used as a
/// map key) is dropped instead of raising.
unsafe fn settable_nonnil_key(l: State) {
    if ffi::lua_type(l, -2) == ffi::LUA_TNIL {
        ffi::lua_pop(l, 2);
    } else {
        ffi::lua_rawset(l, -3);
    }
}

unsafe fn push_array<'a>(l: State, items: impl Iterator<Item = &'a Reply>, len: usize, resp3: bool) {
    ffi::lua_createtable(l, len.min(1 << 20) as c_int, 0);
    for (j, it) in items.enumerate() {
        ffi::lua_pushnumber(l, (j + 1) as f64);
        push_reply(l, it, resp3);
        ffi::lua_rawset(l, -3);
    }
}

/// Converts the Lua value at `idx` into a reply (`luaReplyToRedisReply`).
/// `resp3` is the script's protocol (`redis.setresp`), which decides how
/// booleans are returned.
///
/// # Safety
/// `l` is a valid state and `idx` a valid index.
pub(crate) unsafe fn lua_to_reply(l: State, idx: c_int, resp3: bool) -> Reply {
    to_reply(l, idx, resp3, 0)
}

/// A guard far beyond where the Lua stack runs out (each level holds one
/// value on it, and `lua_checkstack` refuses past 8000), so nesting ends
/// where Redis's does: with its stack-limit error, about 7995 levels down.
/// The threads that run scripts have stacks sized for that depth
/// (`SCRIPT_THREAD_STACK`).
const MAX_DEPTH: u32 = 10_000;

unsafe fn to_reply(l: State, idx: c_int, resp3: bool, depth: u32) -> Reply {
    let idx = ffi::lua_absindex(l, idx);
    // A level pushes at most 3 values (a map's table, key and value). Asking
    // for exactly that much makes the nesting limit Redis's to the level.
    if depth >= MAX_DEPTH || ffi::lua_checkstack(l, 3) == 0 {
        return Reply::error("ERR reached lua stack limit");
    }
    match ffi::lua_type(l, idx) {
        ffi::LUA_TSTRING => Reply::Bulk(Bytes::copy_from_slice(super::lua::to_bytes(l, idx).unwrap_or(b""))),
        ffi::LUA_TBOOLEAN => {
            let b = ffi::lua_toboolean(l, idx) != 0;
            if resp3 {
                Reply::Bool(b)
            } else if b {
                Reply::Int(1)
            } else {
                Reply::Nil
            }
        }
        ffi::LUA_TNUMBER => Reply::Int(c_double_to_i64(ffi::lua_tonumber(l, idx))),
        ffi::LUA_TTABLE => table_to_reply(l, idx, resp3, depth + 1),
        _ => Reply::Nil,
    }
}

unsafe fn table_to_reply(l: State, idx: c_int, resp3: bool, depth: u32) -> Reply {
    // `err` and `ok` go through C strings in Redis: cut at the first NUL.
    if get_field_raw(l, idx, "err") == ffi::LUA_TSTRING {
        let e = Bytes::copy_from_slice(c_str(super::lua::to_bytes(l, -1).unwrap_or(b"")));
        ffi::lua_pop(l, 1);
        return Reply::Error(e);
    }
    ffi::lua_pop(l, 1);
    if get_field_raw(l, idx, "ok") == ffi::LUA_TSTRING {
        let s = Bytes::copy_from_slice(c_str(super::lua::to_bytes(l, -1).unwrap_or(b"")));
        ffi::lua_pop(l, 1);
        return Reply::Status(s);
    }
    ffi::lua_pop(l, 1);
    if get_field_raw(l, idx, "double") == ffi::LUA_TNUMBER {
        let d = ffi::lua_tonumber(l, -1);
        ffi::lua_pop(l, 1);
        return Reply::Double(d);
    }
    ffi::lua_pop(l, 1);
    if get_field_raw(l, idx, "big_number") == ffi::LUA_TSTRING {
        let s: Vec<u8> = super::lua::to_bytes(l, -1)
            .unwrap_or(b"")
            .iter()
            .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c })
            .collect();
        ffi::lua_pop(l, 1);
        return Reply::BigNumber(Bytes::from(s));
    }
    ffi::lua_pop(l, 1);
    if get_field_raw(l, idx, "verbatim_string") == ffi::LUA_TTABLE {
        let v = ffi::lua_gettop(l);
        let fmt_ok = get_field_raw(l, v, "format") == ffi::LUA_TSTRING;
        let str_ok = get_field_raw(l, v, "string") == ffi::LUA_TSTRING;
        if fmt_ok && str_ok {
            let fmt = verbatim_format(super::lua::to_bytes(l, -2).unwrap_or(b""));
            let s = Bytes::copy_from_slice(super::lua::to_bytes(l, -1).unwrap_or(b""));
            ffi::lua_pop(l, 3);
            return Reply::Verbatim(fmt, s);
        }
        ffi::lua_pop(l, 2);
    }
    ffi::lua_pop(l, 1);
    if get_field_raw(l, idx, "map") == ffi::LUA_TTABLE {
        let m = ffi::lua_gettop(l);
        let mut pairs = Vec::new();
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, m) != 0 {
            let k = to_reply(l, -2, resp3, depth);
            let v = to_reply(l, -1, resp3, depth);
            pairs.push((k, v));
            ffi::lua_pop(l, 1);
        }
        ffi::lua_pop(l, 1);
        return Reply::Map(pairs);
    }
    ffi::lua_pop(l, 1);
    if get_field_raw(l, idx, "set") == ffi::LUA_TTABLE {
        let s = ffi::lua_gettop(l);
        let mut items = Vec::new();
        ffi::lua_pushnil(l);
        while ffi::lua_next(l, s) != 0 {
            items.push(to_reply(l, -2, resp3, depth));
            ffi::lua_pop(l, 1);
        }
        ffi::lua_pop(l, 1);
        return Reply::Set(items);
    }
    ffi::lua_pop(l, 1);
    let mut items = Vec::new();
    let mut j = 1;
    loop {
        ffi::lua_rawgeti(l, idx, j);
        if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
            ffi::lua_pop(l, 1);
            break;
        }
        items.push(to_reply(l, -1, resp3, depth));
        ffi::lua_pop(l, 1);
        j += 1;
    }
    Reply::Array(items)
}

/// A string as C sees it: up to the first NUL.
pub(crate) fn c_str(b: &[u8]) -> &[u8] {
    &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]
}

/// The three-character format of a verbatim string (Redis pads with spaces
/// and truncates), as the `&'static str` [`Reply::Verbatim`] wants.
fn verbatim_format(f: &[u8]) -> &'static str {
    let mut b = [b' '; 3];
    for (i, c) in f.iter().take_while(|&&c| c != 0).take(3).enumerate() {
        b[i] = *c;
    }
    let s = String::from_utf8_lossy(&b).into_owned();
    match s.as_str() {
        "txt" => "txt",
        "mkd" => "mkd",
        _ => {
            static SEEN: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
            let mut seen = SEEN.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
            if let Some(v) = seen.get(s.as_str()) {
                return v;
            }
            let leaked: &'static str = Box::leak(s.into_boxed_str());
            seen.insert(leaked);
            leaked
        }
    }
}
