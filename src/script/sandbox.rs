//! One Lua VM set up the way Redis 7.0 sets up its scripting VMs.
//!
//! Libraries: base (with coroutine), table, string, math, plus cjson,
//! cmsgpack, struct and bit (see [`register_external_libs`]). Globals that
//! Redis 7.0.15 does not expose are removed (print, dofile, loadfile,
//! getfenv, setfenv, newproxy, debug…); `loadstring`/`load` refuse binary
//! chunks the way Redis's Lua does (they are parsed as text and fail).
//!
//! ## Read-only globals and libraries
//! Redis patches its Lua with read-only tables. Stock Lua has none, so the
//! same guarantees are built from proxies: every protected table `T` (the
//! globals, each library table, the string metatable, …) is replaced,
//! wherever a script can reach it, by an empty proxy `P` whose metatable has
//! `__index = T` and `__newindex` raising `Attempt to modify a readonly
//! table`. The globals proxy's real table has an `__index` metamethod that
//! raises `Script attempted to access nonexistent global variable`. The raw
//! accessors (`rawset`, `rawget`, `setmetatable`, `getmetatable`, `next`,
//! `pairs`, `ipairs`) see through proxies, so scripts observe the same
//! contents and the same errors as on Redis. The only other raw writer a
//! script can aim at a table it did not create, `table.insert`, refuses
//! proxies the same way, so proxies stay empty and scripts never see each
//! other's state.
//!
//! An `EVAL` script's own function skips the globals proxy: its
//! environment is the real globals table, marked read-only inside the VM
//! (our patch, `lua/vm/patches.rs`), so reading a global costs one lookup
//! and assigning one raises the same `Attempt to modify a readonly table`,
//! at the same position, as the proxy did. `_G` and chunks loaded by the
//! script still see the proxy; the script has no way to the real table.
//! Likewise the `redis` global of an `EVAL` VM is the real `redis` table,
//! marked, not its proxy (`redis.call` is one lookup): assigning a field
//! raises through the mark, and `rawset`, `setmetatable` and
//! `table.insert` refuse a marked table as they refuse a proxy. The other
//! libraries keep their proxies (the string metatable's `__index` must stay
//! the same table as the `string` global).

use std::ffi::{c_char, c_int, c_void};
use std::mem::MaybeUninit;

use bytes::Bytes;
use mlua::{ffi, Lua, LuaOptions, StdLib};

use super::lua::{
    cstr, cstr_bytes, get_field_raw, push_bytes, push_where_msg, raise, set_field_raw, set_fn, to_bytes, unproxy,
    State, REG_REAL,
};

extern "C" {
    /// Refills the table registered at `table` with the `n` strings
    /// `ptrs`/`lens` (keeping those already in place) and sets it as field
    /// `name` of `globals` (registry references), if nothing a script did
    /// to it can show; otherwise -1, nothing changed (lua/vm/tables.c).
    fn rlockd_lua_set_arg_table(
        l: State,
        globals: c_int,
        name: c_int,
        table: c_int,
        n: c_int,
        ptrs: *const *const c_char,
        lens: *const usize,
    ) -> c_int;
    /// Marks the table on top read-only for the VM's assignments (our
    /// patch, see lua/vm/patches.rs; lua/vm/tables.c).
    fn rlockd_lua_set_readonly(l: State) -> c_int;
    /// 1 if the value on top is a table marked read-only, else 0.
    fn rlockd_lua_is_readonly(l: State) -> c_int;
}

/// The most arguments a refilled table holds (`RLOCKD_REFILL_MAX`).
const REFILL_MAX: usize = 64;

/// Registry keys (and `lua::REG_REAL`).
const REG_PROXY: &str = "rlockd.proxy";
const REG_ERRH: &str = "rlockd.errh";
const REG_GLOBALS_META: &str = "rlockd.gmeta";
const REG_REAL_GLOBALS: &str = "rlockd.realglobals";
pub(crate) const REG_LIBRARY_API: &str = "rlockd.libapi";

/// Which engine a VM serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum VmKind {
    /// `EVAL`: KEYS/ARGV globals, `__redis__err__handler`, debug helpers.
    Eval,
    /// `FUNCTION`/`FCALL`: libraries register functions at load time.
    Function,
}

/// Globals Redis 7.0.15 leaves to scripts (besides those the engine adds).
const ALLOWED_GLOBALS: &[&str] = &[
    "_G",
    "_VERSION",
    "assert",
    "bit",
    "cjson",
    "cmsgpack",
    "collectgarbage",
    "coroutine",
    "error",
    "gcinfo",
    "getmetatable",
    "ipairs",
    "load",
    "loadstring",
    "math",
    "next",
    "pairs",
    "pcall",
    "rawequal",
    "rawget",
    "rawset",
    "select",
    "setmetatable",
    "string",
    "struct",
    "table",
    "tonumber",
    "tostring",
    "type",
    "unpack",
    "xpcall",
];

/// Registers the Lua libraries Redis bundles (cjson, cmsgpack, struct, bit).
///
/// The libraries live in `src/script/libs/`; this is the single place the
/// engine loads them (before the sandbox is locked down).
fn register_external_libs(lua: &Lua) -> mlua::Result<()> {
    crate::script::libs::register_all(lua)
}

/// A Lua VM owned by the engine.
pub(crate) struct Vm {
    /// Owns the state; kept alive for the raw pointer below.
    _lua: Lua,
    pub(crate) l: State,
    pub(crate) kind: VmKind,
    /// What every run reaches, held in the registry's array part
    /// (`luaL_ref`): pushed by index, without hashing a name each time.
    refs: Refs,
    /// The profile is Valkey's (words of `FUNCTION LOAD`'s errors).
    pub(crate) valkey: std::cell::Cell<bool>,
}

/// Registry references of a VM (see [`Vm::refs`]).
#[derive(Debug, Clone, Copy)]
struct Refs {
    /// The error handler.
    errh: c_int,
    /// The real globals table (behind the globals proxy).
    real_globals: c_int,
    /// The strings `"KEYS"` and `"ARGV"`.
    keys: c_int,
    argv: c_int,
}

// SAFETY: the state is only ever used by whoever holds the core lock (the
// engine is taken out of the core while a script runs), one thread at a time.
unsafe impl Send for Vm {}

impl std::fmt::Debug for Vm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vm").field("kind", &self.kind).finish()
    }
}

impl Vm {
    /// Builds a fresh, locked-down VM.
    pub(crate) fn new(kind: VmKind) -> Vm {
        Self::build(kind, None)
    }

    /// Builds a fresh, locked-down VM for `FUNCTION` libraries, whose
    /// loading API offers `register_function`.
    pub(crate) fn for_functions(register_function: ffi::lua_CFunction) -> Vm {
        Self::build(VmKind::Function, Some(register_function))
    }

    fn build(kind: VmKind, register_function: Option<ffi::lua_CFunction>) -> Vm {
        let lua = Lua::new_with(StdLib::TABLE | StdLib::STRING | StdLib::MATH, LuaOptions::default())
            .expect("create the Lua VM");
        if let Err(e) = register_external_libs(&lua) {
            tracing::error!("cannot register the Lua libraries: {e}");
        }
        let mut l: State = std::ptr::null_mut();
        // SAFETY: we only read the state pointer.
        unsafe {
            lua.exec_raw::<()>((), |st| l = st).expect("Lua state");
        }
        // SAFETY: `l` is the main state of `lua`, which we own.
        // SAFETY: as above; `setup` left the registry entries this reads.
        let refs = unsafe {
            setup(l, kind, register_function);
            let reference = |push: &dyn Fn()| {
                push();
                ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX)
            };
            Refs {
                errh: reference(&|| {
                    get_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_ERRH);
                }),
                real_globals: reference(&|| {
                    get_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_REAL_GLOBALS);
                }),
                keys: reference(&|| push_bytes(l, b"KEYS")),
                argv: reference(&|| push_bytes(l, b"ARGV")),
            }
        };
        if kind == VmKind::Eval {
            // SAFETY: a raw registry read on our own state; the mark only
            // turns the VM's assignments to the table into errors.
            unsafe {
                ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, refs.real_globals as ffi::lua_Integer);
                rlockd_lua_set_readonly(l);
                // The `redis` global, named at every `redis.call`: the real
                // table, marked, instead of its proxy (the raw writers
                // refuse marked tables as they refuse proxies).
                get_field_raw(l, -1, "redis");
                unproxy(l, -1);
                rlockd_lua_set_readonly(l);
                set_field_raw(l, -2, "redis");
                ffi::lua_pop(l, 1);
            }
        }
        Vm { _lua: lua, l, kind, refs, valkey: std::cell::Cell::new(false) }
    }

    /// Gives the `EVAL` script function on top the real globals as its
    /// environment (marked read-only in an `EVAL` VM): its globals are read
    /// with one lookup instead of through the globals proxy, and assigning
    /// one raises the proxy's error (see the module docs). Functions it
    /// defines inherit it; chunks it loads with `loadstring` get the proxy.
    pub(crate) unsafe fn set_script_env(&self) {
        debug_assert_eq!(self.kind, VmKind::Eval);
        ffi::lua_rawgeti(self.l, ffi::LUA_REGISTRYINDEX, self.refs.real_globals as ffi::lua_Integer);
        ffi::lua_setfenv(self.l, -2);
    }

    /// Makes the function VM's globals resolve to the library API (during
    /// `FUNCTION LOAD`) or to the normal globals.
    pub(crate) fn set_load_mode(&self, loading: bool) {
        // SAFETY: raw registry/table operations on our own state.
        unsafe {
            let l = self.l;
            get_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_GLOBALS_META);
            get_field_raw(l, ffi::LUA_REGISTRYINDEX, if loading { REG_LIBRARY_API } else { REG_REAL_GLOBALS });
            set_field_raw(l, -2, "__index");
            ffi::lua_pop(l, 1);
        }
    }

    /// Pushes the error handler.
    pub(crate) unsafe fn push_error_handler(&self) {
        ffi::lua_rawgeti(self.l, ffi::LUA_REGISTRYINDEX, self.refs.errh as ffi::lua_Integer);
    }

    /// Registry references to a new script's own `KEYS` and `ARGV` tables
    /// (see [`set_keys_argv`](Self::set_keys_argv)).
    pub(crate) unsafe fn new_arg_tables(&self) -> [c_int; 2] {
        [0, 1].map(|_| {
            ffi::lua_createtable(self.l, 0, 0);
            ffi::luaL_ref(self.l, ffi::LUA_REGISTRYINDEX)
        })
    }

    /// Sets the globals `KEYS` and `ARGV` (bypassing the protection) to
    /// arrays of `keys` and `argv`: the script's own tables (`tables`, from
    /// [`new_arg_tables`](Self::new_arg_tables)) refilled, when nothing the
    /// script did to them in its last run can show (see
    /// `lua/vm/tables.c`), keeping the strings that did not change;
    /// otherwise new tables, kept for the next run if small.
    pub(crate) unsafe fn set_keys_argv(&self, keys: &[Bytes], argv: &[Bytes], tables: [c_int; 2]) {
        /// Arguments past which a run's tables are not kept for the next.
        const KEEP_BYTES: usize = 1024;
        let l = self.l;
        for ((name, items), table) in [(self.refs.keys, keys), (self.refs.argv, argv)].into_iter().zip(tables) {
            let n = items.len().min(1 << 24) as c_int;
            if items.len() <= REFILL_MAX {
                // Only the first n are written and read.
                let mut ptrs = [MaybeUninit::<*const c_char>::uninit(); REFILL_MAX];
                let mut lens = [MaybeUninit::<usize>::uninit(); REFILL_MAX];
                for (i, it) in items.iter().enumerate() {
                    ptrs[i].write(it.as_ptr().cast());
                    lens[i].write(it.len());
                }
                let refilled = rlockd_lua_set_arg_table(
                    l,
                    self.refs.real_globals,
                    name,
                    table,
                    n,
                    ptrs.as_ptr().cast(),
                    lens.as_ptr().cast(),
                );
                if refilled == 0 {
                    continue;
                }
            }
            // A new table, kept for the next run if small.
            ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, self.refs.real_globals as ffi::lua_Integer);
            ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, name as ffi::lua_Integer);
            ffi::lua_createtable(l, n, 0);
            if items.len() <= REFILL_MAX && items.iter().map(|b| b.len()).sum::<usize>() <= KEEP_BYTES {
                ffi::lua_pushvalue(l, -1);
                ffi::lua_rawseti(l, ffi::LUA_REGISTRYINDEX, table as ffi::lua_Integer);
            }
            for (j, it) in items.iter().enumerate() {
                push_bytes(l, it);
                ffi::lua_rawseti(l, -2, (j + 1) as ffi::lua_Integer);
            }
            ffi::lua_rawset(l, -3);
            ffi::lua_pop(l, 1);
        }
    }

    /// Sets what the scripts of this VM read as the server's version
    /// (`redis.REDIS_VERSION`…, and Valkey's `server` table).
    pub(crate) fn set_profile(&self, profile: crate::version::Profile) {
        self.valkey.set(profile.is_valkey());
        // SAFETY: the state is ours and idle (no script runs while the
        // engine is reached through `&self` outside a run).
        unsafe {
            ffi::lua_rawgeti(self.l, ffi::LUA_REGISTRYINDEX, i64::from(self.refs.real_globals));
            let globals = ffi::lua_gettop(self.l);
            super::redis_lib::set_profile(self.l, globals, profile);
            set_os_table(self.l, globals, profile.at_least(7, 2, 0));
            ffi::lua_pop(self.l, 1);
            // What a library sees while FUNCTION LOAD runs: Valkey's
            // `server` beside `redis` there too.
            if get_field_raw(self.l, ffi::LUA_REGISTRYINDEX, REG_LIBRARY_API) == ffi::LUA_TTABLE {
                let api = ffi::lua_gettop(self.l);
                if profile.is_valkey() {
                    get_field_raw(self.l, api, "redis");
                } else {
                    ffi::lua_pushnil(self.l);
                }
                set_field_raw(self.l, api, "server");
            }
            ffi::lua_pop(self.l, 1);
        }
    }

    /// Used Lua memory in bytes.
    pub(crate) fn memory(&self) -> usize {
        // SAFETY: a GC query on our own state.
        unsafe {
            (ffi::lua_gc(self.l, ffi::LUA_GCCOUNT, 0) as usize) * 1024
                + ffi::lua_gc(self.l, ffi::LUA_GCCOUNTB, 0) as usize
        }
    }
}

/// Compiles `code` as chunk `name` (`@user_script`…) and pushes the
/// function, or returns the Lua error message. A leading binary-chunk
/// signature is parsed as text, as Redis's Lua does.
pub(crate) unsafe fn load_chunk(l: State, code: &[u8], name: &[u8]) -> Result<(), Vec<u8>> {
    let mut cname = name.to_vec();
    cname.push(0);
    let status = if code.first() == Some(&0x1b) {
        let mut v = Vec::with_capacity(code.len() + 1);
        v.push(b' ');
        v.extend_from_slice(code);
        ffi::luaL_loadbuffer(l, v.as_ptr() as *const c_char, v.len(), cname.as_ptr() as *const c_char)
    } else {
        ffi::luaL_loadbuffer(l, code.as_ptr() as *const c_char, code.len(), cname.as_ptr() as *const c_char)
    };
    if status != 0 {
        let msg = to_bytes(l, -1).unwrap_or(b"").to_vec();
        ffi::lua_pop(l, 1);
        return Err(msg);
    }
    Ok(())
}

/// Builds the whole environment on a fresh state.
unsafe fn setup(l: State, kind: VmKind, register_function: Option<ffi::lua_CFunction>) {
    ffi::lua_newtable(l);
    set_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_REAL);
    ffi::lua_newtable(l);
    set_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_PROXY);

    ffi::lua_pushvalue(l, ffi::LUA_GLOBALSINDEX);
    let g = ffi::lua_gettop(l);

    // Drop everything Redis does not expose.
    let mut remove = Vec::new();
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, g) != 0 {
        ffi::lua_pop(l, 1);
        let name = to_bytes_noconv(l, -1);
        if !ALLOWED_GLOBALS.iter().any(|a| a.as_bytes() == name) {
            remove.push(name.to_vec());
        }
    }
    for name in remove {
        push_bytes(l, &name);
        ffi::lua_pushnil(l);
        ffi::lua_rawset(l, g);
    }

    // Redis's replacements and the raw accessors that see through proxies.
    super::redis_lib::install_overrides(l, g);
    set_fn(l, "rawset", w_rawset);
    set_fn(l, "rawget", w_rawget);
    set_fn(l, "setmetatable", w_setmetatable);
    set_fn(l, "getmetatable", w_getmetatable);
    set_fn(l, "next", w_next);
    set_fn(l, "loadstring", w_loadstring);
    set_fn(l, "load", w_load);
    get_field_raw(l, g, "table");
    set_fn(l, "insert", w_tinsert);
    ffi::lua_pop(l, 1);
    get_field_raw(l, g, "next");
    ffi::lua_pushcclosure(l, w_pairs, 1);
    set_field_raw(l, g, "pairs");
    ffi::lua_pushcfunction(l, w_ipairs_aux);
    ffi::lua_pushcclosure(l, w_ipairs, 1);
    set_field_raw(l, g, "ipairs");

    super::redis_lib::push_redis_table(l, kind == VmKind::Eval);
    set_field_raw(l, g, "redis");

    ffi::lua_pushcfunction(l, error_handler);
    if kind == VmKind::Eval {
        ffi::lua_pushvalue(l, -1);
        set_field_raw(l, g, "__redis__err__handler");
    }
    set_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_ERRH);

    // Reading an undeclared global raises.
    ffi::lua_createtable(l, 0, 1);
    ffi::lua_pushcfunction(l, global_index_error);
    set_field_raw(l, -2, "__index");
    ffi::lua_setmetatable(l, g);

    ffi::lua_pushvalue(l, g);
    set_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_REAL_GLOBALS);

    if let Some(register_function) = register_function {
        // The API visible while a library loads: redis.register_function,
        // redis.log, LOG_* and the version, nothing else.
        ffi::lua_createtable(l, 0, 1);
        ffi::lua_createtable(l, 0, 8);
        set_fn(l, "register_function", register_function);
        super::redis_lib::push_version_and_log(l);
        push_error_metatable(l);
        set_field_raw(l, -2, "redis");
        push_error_metatable(l);
        ffi::lua_pushvalue(l, -1);
        set_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_LIBRARY_API);
        protect(l, ffi::lua_gettop(l));
        ffi::lua_pop(l, 2);
    }

    // The string metatable and everything reachable from the globals.
    push_bytes(l, b"");
    if ffi::lua_getmetatable(l, -1) != 0 {
        protect(l, ffi::lua_gettop(l));
        ffi::lua_pop(l, 1);
    }
    ffi::lua_pop(l, 1);
    protect(l, g); // pushes the globals proxy
                   // The proxy becomes the globals of the main thread (and of all chunks
                   // and coroutines created from now on).
    ffi::lua_getmetatable(l, -1);
    set_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_GLOBALS_META);
    ffi::lua_pushvalue(l, -1);
    set_field_raw(l, g, "_G");
    ffi::lua_replace(l, ffi::LUA_GLOBALSINDEX);
    ffi::lua_pop(l, 1); // g
}

/// Bytes of a string key without converting numbers in place (which would
/// confuse `lua_next`).
unsafe fn to_bytes_noconv<'a>(l: State, idx: c_int) -> &'a [u8] {
    if ffi::lua_type(l, idx) == ffi::LUA_TSTRING {
        to_bytes(l, idx).unwrap_or(b"")
    } else {
        b""
    }
}

/// Redis 7.2's `os` table, with `os.clock` alone (protected like the
/// other libraries), in the globals at `globals` while `on`.
unsafe fn set_os_table(l: State, globals: c_int, on: bool) {
    ffi::lua_checkstack(l, 8);
    if on {
        ffi::lua_createtable(l, 0, 1);
        set_fn(l, "clock", os_clock);
        protect(l, -1);
        ffi::lua_remove(l, -2);
    } else {
        ffi::lua_pushnil(l);
    }
    set_field_raw(l, globals, "os");
}

/// `os.clock()`: the processor time the process has used, in seconds.
unsafe extern "C-unwind" fn os_clock(l: State) -> c_int {
    // C's clock(): the process's CPU clock.
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ffi::lua_pushnumber(l, ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9);
    1
}

/// Sets on the table on top a metatable whose `__index` raises
/// `Script attempted to access nonexistent global variable`.
unsafe fn push_error_metatable(l: State) {
    ffi::lua_createtable(l, 0, 1);
    ffi::lua_pushcfunction(l, global_index_error);
    set_field_raw(l, -2, "__index");
    ffi::lua_setmetatable(l, -2);
}

/// Protects the table at `idx` (see the module docs): pushes its proxy,
/// replaces table-valued fields by their proxies, and protects its
/// metatable too.
unsafe fn protect(l: State, idx: c_int) {
    let t = ffi::lua_absindex(l, idx);
    ffi::lua_checkstack(l, 8);
    // Already protected?
    get_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_PROXY);
    ffi::lua_pushvalue(l, t);
    ffi::lua_rawget(l, -2);
    if ffi::lua_type(l, -1) != ffi::LUA_TNIL {
        ffi::lua_remove(l, -2);
        return;
    }
    ffi::lua_pop(l, 1);
    let proxies = ffi::lua_gettop(l);
    // proxy = setmetatable({}, {__index = t, __newindex = readonly})
    ffi::lua_newtable(l);
    let p = ffi::lua_gettop(l);
    ffi::lua_createtable(l, 0, 2);
    ffi::lua_pushvalue(l, t);
    set_field_raw(l, -2, "__index");
    ffi::lua_pushcfunction(l, readonly_newindex);
    set_field_raw(l, -2, "__newindex");
    ffi::lua_setmetatable(l, p);
    // proxy[t] and real[proxy]
    ffi::lua_pushvalue(l, t);
    ffi::lua_pushvalue(l, p);
    ffi::lua_rawset(l, proxies);
    get_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_REAL);
    ffi::lua_pushvalue(l, p);
    ffi::lua_pushvalue(l, t);
    ffi::lua_rawset(l, -3);
    ffi::lua_pop(l, 1);
    // Fields: tables become their proxies (assigning existing fields while
    // traversing is allowed).
    ffi::lua_pushnil(l);
    while ffi::lua_next(l, t) != 0 {
        if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
            protect(l, -1);
            ffi::lua_remove(l, -2); // the real value
            ffi::lua_pushvalue(l, -2); // key
            ffi::lua_insert(l, -2);
            ffi::lua_rawset(l, t);
        } else {
            ffi::lua_pop(l, 1);
        }
    }
    if ffi::lua_getmetatable(l, t) != 0 {
        protect(l, -1);
        ffi::lua_pop(l, 2);
    }
    ffi::lua_remove(l, proxies);
}

/// True if the value at `idx` is a proxy, or a table marked read-only in
/// the VM (an `EVAL` VM's `redis` table): the raw writers refuse both.
unsafe fn is_proxy(l: State, idx: c_int) -> bool {
    if ffi::lua_type(l, idx) != ffi::LUA_TTABLE {
        return false;
    }
    let idx = ffi::lua_absindex(l, idx);
    ffi::lua_pushvalue(l, idx);
    let marked = rlockd_lua_is_readonly(l) != 0;
    ffi::lua_pop(l, 1);
    if marked {
        return true;
    }
    get_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_REAL);
    ffi::lua_pushvalue(l, idx);
    ffi::lua_rawget(l, -2);
    let yes = ffi::lua_type(l, -1) != ffi::LUA_TNIL;
    ffi::lua_pop(l, 2);
    yes
}

/// Replaces the table on top by its proxy, if it is protected.
unsafe fn to_proxy(l: State) {
    if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
        return;
    }
    get_field_raw(l, ffi::LUA_REGISTRYINDEX, REG_PROXY);
    ffi::lua_pushvalue(l, -2);
    ffi::lua_rawget(l, -2);
    if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
        ffi::lua_replace(l, -3);
        ffi::lua_pop(l, 1);
    } else {
        ffi::lua_pop(l, 2);
    }
}

const READONLY: &[u8] = b"Attempt to modify a readonly table";

/// `__newindex` of every proxy.
unsafe extern "C-unwind" fn readonly_newindex(l: State) -> c_int {
    push_where_msg(l, 1, READONLY);
    raise(l)
}

/// `__index` of the real globals (`luaProtectedTableError`).
unsafe extern "C-unwind" fn global_index_error(l: State) -> c_int {
    if ffi::lua_gettop(l) != 2 {
        push_where_msg(l, 1, b"Wrong number of arguments to luaProtectedTableError");
        raise(l);
    }
    if ffi::lua_isstring(l, -1) == 0 {
        push_where_msg(l, 1, b"Second argument to luaProtectedTableError must be a string or number");
        raise(l);
    }
    ffi::luaL_where(l, 1);
    push_bytes(l, b"Script attempted to access nonexistent global variable '");
    ffi::lua_pushvalue(l, 2);
    push_bytes(l, b"'");
    ffi::lua_concat(l, 4);
    raise(l)
}

unsafe fn raise_readonly(l: State) -> ! {
    push_bytes(l, READONLY);
    raise(l)
}

unsafe extern "C-unwind" fn w_rawset(l: State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    ffi::luaL_checkany(l, 2);
    ffi::luaL_checkany(l, 3);
    if is_proxy(l, 1) {
        raise_readonly(l);
    }
    ffi::lua_settop(l, 3);
    ffi::lua_rawset(l, 1);
    1
}

/// `table.insert`, as Lua 5.1's `tinsert`, except that inserting into a
/// protected table raises Redis's read-only error (Redis's patched
/// `lua_rawseti` does the same). `table.remove` and `table.sort` need no
/// guard: a proxy has no array part, so they never write to one.
unsafe extern "C-unwind" fn w_tinsert(l: State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    let mut e = ffi::lua_objlen(l, 1) as c_int + 1;
    let pos = match ffi::lua_gettop(l) {
        2 => e,
        3 => {
            let pos = ffi::luaL_checkinteger(l, 2) as c_int;
            if pos > e {
                e = pos;
            }
            pos
        }
        _ => {
            push_where_msg(l, 1, b"wrong number of arguments to 'insert'");
            raise(l)
        }
    };
    if is_proxy(l, 1) {
        raise_readonly(l);
    }
    let mut i = e;
    while i > pos {
        ffi::lua_rawgeti(l, 1, (i - 1) as ffi::lua_Integer);
        ffi::lua_rawseti(l, 1, i as ffi::lua_Integer);
        i -= 1;
    }
    ffi::lua_rawseti(l, 1, pos as ffi::lua_Integer);
    0
}

unsafe extern "C-unwind" fn w_rawget(l: State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    ffi::luaL_checkany(l, 2);
    ffi::lua_settop(l, 2);
    unproxy(l, 1);
    ffi::lua_rawget(l, 1);
    1
}

unsafe extern "C-unwind" fn w_setmetatable(l: State) -> c_int {
    let t = ffi::lua_type(l, 2);
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    if t != ffi::LUA_TNIL && t != ffi::LUA_TTABLE {
        ffi::luaL_argerror(l, 2, cstr!("nil or table expected"));
    }
    if ffi::luaL_getmetafield(l, 1, cstr!("__metatable")) != 0 {
        push_where_msg(l, 1, b"cannot change a protected metatable");
        raise(l);
    }
    if is_proxy(l, 1) {
        raise_readonly(l);
    }
    ffi::lua_settop(l, 2);
    unproxy(l, 2);
    ffi::lua_setmetatable(l, 1);
    1
}

unsafe extern "C-unwind" fn w_getmetatable(l: State) -> c_int {
    ffi::luaL_checkany(l, 1);
    ffi::lua_settop(l, 1);
    unproxy(l, 1);
    if ffi::lua_getmetatable(l, 1) == 0 {
        ffi::lua_pushnil(l);
        return 1;
    }
    if ffi::luaL_getmetafield(l, 1, cstr!("__metatable")) != 0 {
        return 1;
    }
    to_proxy(l);
    1
}

unsafe extern "C-unwind" fn w_next(l: State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    ffi::lua_settop(l, 2);
    unproxy(l, 1);
    if ffi::lua_next(l, 1) != 0 {
        2
    } else {
        ffi::lua_pushnil(l);
        1
    }
}

unsafe extern "C-unwind" fn w_pairs(l: State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
    ffi::lua_pushvalue(l, 1);
    ffi::lua_pushnil(l);
    3
}

unsafe extern "C-unwind" fn w_ipairs(l: State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    ffi::lua_pushvalue(l, ffi::lua_upvalueindex(1));
    ffi::lua_pushvalue(l, 1);
    ffi::lua_pushinteger(l, 0);
    3
}

unsafe extern "C-unwind" fn w_ipairs_aux(l: State) -> c_int {
    let i = ffi::luaL_checkinteger(l, 2) as c_int;
    ffi::luaL_checktype(l, 1, ffi::LUA_TTABLE);
    unproxy(l, 1);
    let i = i.wrapping_add(1);
    ffi::lua_pushinteger(l, i as ffi::lua_Integer);
    ffi::lua_rawgeti(l, 1, i as ffi::lua_Integer);
    if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
        0
    } else {
        2
    }
}

/// `load_aux`: the function, or nil and the message.
unsafe fn load_result(l: State, status: c_int) -> c_int {
    if status == 0 {
        1
    } else {
        ffi::lua_pushnil(l);
        ffi::lua_insert(l, -2);
        2
    }
}

unsafe extern "C-unwind" fn w_loadstring(l: State) -> c_int {
    let mut len = 0usize;
    let s = ffi::luaL_checklstring(l, 1, &mut len);
    let chunkname = ffi::luaL_optlstring(l, 2, s, std::ptr::null_mut());
    let code = std::slice::from_raw_parts(s as *const u8, len);
    let status = if code.first() == Some(&0x1b) {
        // Parsed as text (and rejected) like Redis's Lua: same message,
        // same chunk name, as the signature byte stays the first token.
        ffi::lua_pushlstring(l, cstr!(" "), 1);
        ffi::lua_pushvalue(l, 1);
        ffi::lua_concat(l, 2);
        let mut n = 0usize;
        let p = ffi::lua_tolstring(l, -1, &mut n);
        let st = ffi::luaL_loadbuffer(l, p, n, chunkname);
        ffi::lua_remove(l, -2);
        st
    } else {
        ffi::luaL_loadbuffer(l, s, len, chunkname)
    };
    load_result(l, status)
}

/// Reader state for [`w_load`] (plain data: the reader may raise).
struct ReaderState {
    first: bool,
    pending: *const c_char,
    pending_len: usize,
}

unsafe extern "C-unwind" fn load_reader(l: State, ud: *mut c_void, size: *mut usize) -> *const c_char {
    let st = &mut *(ud as *mut ReaderState);
    if !st.pending.is_null() {
        let p = st.pending;
        *size = st.pending_len;
        st.pending = std::ptr::null();
        return p;
    }
    ffi::luaL_checkstack(l, 2, cstr!("too many nested functions"));
    ffi::lua_pushvalue(l, 1);
    ffi::lua_call(l, 0, 1);
    if ffi::lua_type(l, -1) == ffi::LUA_TNIL {
        *size = 0;
        return std::ptr::null();
    }
    if ffi::lua_isstring(l, -1) != 0 {
        ffi::lua_replace(l, 3);
        let p = ffi::lua_tolstring(l, 3, size);
        if st.first && *size > 0 {
            st.first = false;
            if *p as u8 == 0x1b {
                st.pending = p;
                st.pending_len = *size;
                *size = 1;
                return cstr!(" ");
            }
        }
        return p;
    }
    push_where_msg(l, 1, b"reader function must return a string");
    raise(l)
}

unsafe extern "C-unwind" fn w_load(l: State) -> c_int {
    ffi::luaL_checktype(l, 1, ffi::LUA_TFUNCTION);
    let chunkname = ffi::luaL_optlstring(l, 2, cstr!("=(load)"), std::ptr::null_mut());
    ffi::lua_settop(l, 3);
    let mut st = ReaderState { first: true, pending: std::ptr::null(), pending_len: 0 };
    let status = ffi::lua_load(l, load_reader, &mut st as *mut ReaderState as *mut c_void, chunkname);
    load_result(l, status)
}

/// The error handler of every script call (`__redis__err__handler`): turns
/// the error into `{err=..., source=..., line=...}` with the position of the
/// Lua code that raised it (skipping the C function that raised, if any).
unsafe extern "C-unwind" fn error_handler(l: State) -> c_int {
    ffi::lua_settop(l, 1);
    let mut ar: ffi::lua_Debug = std::mem::zeroed();
    let mut have = ffi::lua_getstack(l, 1, &mut ar) != 0 && ffi::lua_getinfo(l, cstr!("nSl"), &mut ar) != 0;
    let raised_by_c = have && cstr_bytes(ar.what) == b"C";
    if raised_by_c {
        have = ffi::lua_getstack(l, 2, &mut ar) != 0 && ffi::lua_getinfo(l, cstr!("nSl"), &mut ar) != 0;
    }
    if ffi::lua_type(l, 1) != ffi::LUA_TTABLE {
        push_bytes(l, b"ERR ");
        if let Some(msg) = super::redis_lib::mlua_error_text(l, 1) {
            // A Rust library function failed: add the position luaL_error
            // would have added.
            if raised_by_c && have && ar.currentline > 0 {
                let src = cstr_bytes(ar.short_src.as_ptr());
                let mut pre = src.to_vec();
                pre.extend_from_slice(format!(":{}: ", ar.currentline).as_bytes());
                push_bytes(l, &pre);
            } else {
                push_bytes(l, b"");
            }
            push_bytes(l, msg.as_bytes());
            drop(msg);
            ffi::lua_concat(l, 3);
        } else {
            let mut n = 0usize;
            ffi::luaL_tolstring(l, 1, &mut n);
            ffi::lua_concat(l, 2);
        }
        ffi::lua_createtable(l, 0, 3);
        ffi::lua_insert(l, -2);
        set_field_raw(l, -2, "err");
        ffi::lua_replace(l, 1);
    }
    if have {
        ffi::lua_pushstring(l, ar.source);
        set_field_raw(l, 1, "source");
        ffi::lua_pushnumber(l, ar.currentline as f64);
        set_field_raw(l, 1, "line");
    }
    ffi::lua_settop(l, 1);
    1
}

/// What an error value tells (`luaExtractErrorInformation`).
#[derive(Debug, Default)]
pub(crate) struct ErrorInfo {
    pub msg: Option<Vec<u8>>,
    pub source: Option<Vec<u8>>,
    pub line: Option<Vec<u8>>,
}

/// Reads the error value on top of the stack (without popping it).
pub(crate) unsafe fn error_info(l: State) -> ErrorInfo {
    let mut info = ErrorInfo::default();
    match ffi::lua_type(l, -1) {
        ffi::LUA_TSTRING | ffi::LUA_TNUMBER => {
            let mut m = b"ERR ".to_vec();
            m.extend_from_slice(super::convert::c_str(to_bytes(l, -1).unwrap_or(b"")));
            info.msg = Some(m);
        }
        ffi::LUA_TTABLE => {
            for (field, slot) in [("err", &mut info.msg), ("source", &mut info.source), ("line", &mut info.line)] {
                get_field_raw(l, -1, field);
                if ffi::lua_isstring(l, -1) != 0 {
                    *slot = to_bytes(l, -1).map(|b| super::convert::c_str(b).to_vec());
                }
                ffi::lua_pop(l, 1);
            }
        }
        _ => {
            if let Some(m) = super::redis_lib::mlua_error_text(l, -1) {
                info.msg = Some(format!("ERR {m}").into_bytes());
            }
        }
    }
    info
}
