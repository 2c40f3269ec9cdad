//! The Lua scripting engine, with Redis 7.0 semantics.
//!
//! * [`Scripting`] (one per server, kept in the core) owns one persistent
//!   Lua VM for `EVAL` — every script body is compiled once and kept in the
//!   Lua registry (by reference, in a vector found through an index keyed
//!   by the 40-byte sha, so `EVALSHA` looks it up once) — and a second VM for `FUNCTION`/`FCALL` libraries ([`functions`]).
//! * [`host`] is the boundary with the server: the engine asks a
//!   [`ScriptHost`] to run each `redis.call` and whether to stop; the host
//!   (the `EVAL`/`FCALL` handlers) makes the script checks and runs the
//!   command through the same table and dispatch as a TCP client.
//! * [`sandbox`] builds a VM exactly like Redis's: the same globals, the
//!   same read-only globals and libraries, the same error handler.
//! * `redis_lib` is the `redis.*` API; [`convert`] the reply ⇄ Lua rules.
//! * `run` is the engine's side of one run: the host, the RESP version set
//!   by `redis.setresp`, the PRNG, the commands' statistics.
//! * [`locks`] embeds this crate's own lock scripts (`lua/`).
//!
//! The engine knows nothing of the server beyond [`ScriptHost`]; it is
//! tested alone with a fake host. It drives Lua 5.1 (mlua's `lua-src`
//! sources with the fixes of `lua/vm/patches.rs`) through its raw C API, so
//! errors, stack limits and messages are Lua's own, as in Redis. Every
//! 100 000 instructions its count hook asks [`ScriptHost::interrupt`]
//! whether to go on (the host enters BUSY mode past
//! `busy-reply-threshold` and serves the other connections meanwhile).
//!
//! Beside time, each cached script keeps a deterministic
//! [`ScriptProfile`] (`RLOCKD SCRIPTS`): the Lua instructions it executed
//! (`lua/vm/instructions.c` reads how much of the last hook period was
//! used) and, from the `CallInfo` the host returns with each `redis.call`,
//! the commands by name and the keys they read and wrote.
//!
//! Beside `instructions.c`, `lua/vm/tables.c` is our second piece of C
//! compiled with the VM: each cached `EVAL` script keeps its own `KEYS` and
//! `ARGV` tables, and a run refills them (keeping the strings that did not
//! change) when nothing the script's last run did to them can show — no
//! metatable, nothing outside the array part, at most 64 slots — else makes
//! new ones. A script cannot keep a table past its run, since the sandbox
//! leaves it no writable global state. There is no forced collection step
//! every 50 runs (Redis's `LUA_GCSTEP`): Lua's incremental collector paces
//! itself by what is allocated.

pub mod convert;
pub mod functions;
pub mod host;
pub mod libs;
pub mod locks;
mod lua;
mod redis_lib;
mod run;
mod sandbox;

/// Stack size of the threads that run commands and scripts: converting a
/// script's reply recurses once per nesting level, and Redis allows nesting
/// until the Lua stack is full (~8000 levels). Only touched pages cost memory.
pub const SCRIPT_THREAD_STACK: usize = 64 << 20;

use std::collections::HashMap;
use std::ffi::c_int;

use bytes::Bytes;
use mlua::ffi;

pub use redis_lib::sha1_hex;

use crate::error::CmdError;
use crate::protocol::Reply;
use host::{RunInfo, ScriptHost};
use lua::State;
pub use run::ScriptProfile;
use run::{Rand48, RunCtx, RunGuard};
use sandbox::{Vm, VmKind};

/// Script flags (`#!lua flags=...` for `EVAL`, `flags={...}` for functions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptFlags(pub u32);

impl ScriptFlags {
    pub const NO_WRITES: u32 = 1;
    pub const ALLOW_OOM: u32 = 1 << 1;
    pub const ALLOW_STALE: u32 = 1 << 2;
    pub const NO_CLUSTER: u32 = 1 << 3;
    pub const ALLOW_CROSS_SLOT: u32 = 1 << 4;
    /// An `EVAL` script without shebang (backwards-compatible mode).
    pub const EVAL_COMPAT: u32 = 1 << 8;

    /// Flag names, in the order Redis lists them.
    pub const NAMES: [(&'static str, u32); 5] = [
        ("no-writes", Self::NO_WRITES),
        ("allow-oom", Self::ALLOW_OOM),
        ("allow-stale", Self::ALLOW_STALE),
        ("no-cluster", Self::NO_CLUSTER),
        ("allow-cross-slot-keys", Self::ALLOW_CROSS_SLOT),
    ];

    /// The flag called `name` (`nocase`: as functions compare them).
    pub fn from_name(name: &[u8], nocase: bool) -> Option<ScriptFlags> {
        Self::NAMES
            .iter()
            .find(|(n, _)| if nocase { n.as_bytes().eq_ignore_ascii_case(name) } else { n.as_bytes() == name })
            .map(|(_, f)| ScriptFlags(*f))
    }

    pub fn has(self, f: u32) -> bool {
        self.0 & f != 0
    }

    /// Names of the flags set.
    pub fn names(self) -> Vec<&'static str> {
        Self::NAMES.iter().filter(|(_, f)| self.has(*f)).map(|(n, _)| *n).collect()
    }
}

/// A cached `EVAL` script.
#[derive(Debug)]
struct EvalScript {
    sha: Sha,
    /// `luaL_ref` of the compiled body in the `EVAL` VM's registry.
    fref: c_int,
    /// The script's own `KEYS` and `ARGV` tables, refilled run after run
    /// (`Vm::set_keys_argv`).
    arg_tables: [c_int; 2],
    flags: ScriptFlags,
    /// The source, as `EVAL` or `SCRIPT LOAD` gave it (Valkey's `SCRIPT
    /// SHOW`; copied, so it holds no request buffer).
    body: Bytes,
    stats: ScriptStats,
    profile: ScriptProfile,
}

/// Where one cached script's time goes (`INFO scriptstats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptStats {
    /// Runs of the script (EVAL and EVALSHA).
    pub calls: u64,
    /// Runs that replied with an error.
    pub errors: u64,
    /// Total time of the runs, in nanoseconds.
    pub nanos: u64,
    /// `redis.call` / `redis.pcall` commands made by the runs.
    pub redis_calls: u64,
    /// Time spent inside those commands, in nanoseconds (the rest is Lua).
    pub redis_nanos: u64,
}

/// How to find the function to call.
enum Target {
    /// `EVAL`: a registry reference; KEYS and ARGV become globals, filled
    /// into the script's own tables.
    Eval(c_int, [c_int; 2]),
    /// `FCALL`: a registry reference.
    Function(c_int),
}

/// The Lua engine of one server.
pub struct Scripting {
    eval: Vm,
    /// The cached scripts, in the order they were created, and where each
    /// sha is in it (a run looks its script up once).
    scripts: Vec<EvalScript>,
    by_sha: HashMap<Sha, usize, crate::db::Hasher>,
    fvm: Option<Vm>,
    /// The server the scripts see (`redis.REDIS_VERSION`…), set in every
    /// VM, the ones made later too.
    profile: crate::version::Profile,
    /// `FUNCTION` libraries.
    pub libraries: functions::Libraries,
    rng: Rand48,
    /// The `redis.call` arguments, kept between calls and runs so a call
    /// allocates nothing for them.
    args: run::CallArgs,
}

impl std::fmt::Debug for Scripting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scripting")
            .field("scripts", &self.scripts.len())
            .field("libraries", &self.libraries.libs.len())
            .finish()
    }
}

impl Default for Scripting {
    fn default() -> Self {
        Self::new()
    }
}

/// The error of a refused `*_RO` call of a script that may write.
const RO_WRITE_FLAG: &str = "ERR Can not execute a script with write flag using *_ro command.";

impl Scripting {
    pub fn new() -> Self {
        Scripting {
            eval: Vm::new(VmKind::Eval),
            scripts: Vec::new(),
            by_sha: HashMap::default(),
            fvm: None,
            profile: crate::version::Profile::default(),
            libraries: functions::Libraries::default(),
            rng: Rand48::default(),
            args: run::CallArgs::new(),
        }
    }

    /// Number of cached `EVAL` scripts.
    pub fn script_count(&self) -> usize {
        self.scripts.len()
    }

    /// Memory used by the `EVAL` VM, in bytes.
    pub fn eval_memory(&self) -> usize {
        self.eval.memory()
    }

    /// Memory used by the functions VM, in bytes.
    pub fn functions_memory(&self) -> usize {
        self.fvm.as_ref().map_or(0, Vm::memory)
    }

    fn fvm(&mut self) -> &Vm {
        let profile = self.profile;
        self.fvm.get_or_insert_with(|| Self::with_profile(Vm::for_functions(functions::register_function), profile))
    }

    /// `vm` with `profile`'s version fields (a new VM has the default's).
    fn with_profile(vm: Vm, profile: crate::version::Profile) -> Vm {
        if profile != crate::version::Profile::default() {
            vm.set_profile(profile);
        }
        vm
    }

    /// Sets the server the scripts see (`redis-version`, `valkey-version`).
    pub fn set_profile(&mut self, profile: crate::version::Profile) {
        if profile == self.profile {
            return;
        }
        self.profile = profile;
        self.eval.set_profile(profile);
        if let Some(vm) = &self.fvm {
            vm.set_profile(profile);
        }
    }

    /// The source of the cached script `sha` (letter case ignored).
    pub fn script_body(&self, sha: &[u8]) -> Option<Bytes> {
        let i = *self.by_sha.get(&sha_key(sha)?)?;
        Some(self.scripts[i].body.clone())
    }

    /// `SCRIPT EXISTS` for one sha (letter case ignored).
    pub fn script_exists(&self, sha: &[u8]) -> bool {
        sha_key(sha).is_some_and(|k| self.by_sha.contains_key(&k))
    }

    /// `SCRIPT FLUSH`: a brand new `EVAL` VM and an empty cache.
    pub fn flush_scripts(&mut self) {
        self.scripts.clear();
        self.by_sha.clear();
        self.eval = Self::with_profile(Vm::new(VmKind::Eval), self.profile);
    }

    /// Compiles and caches an `EVAL` script (`luaCreateFunction`); returns
    /// its sha. Already cached: returns at once.
    pub fn create_script(&mut self, body: &Bytes) -> Result<String, CmdError> {
        self.create(body).map(|(_, sha)| sha)
    }

    /// [`create_script`](Self::create_script), also returning where the
    /// script is in the cache.
    fn create(&mut self, body: &Bytes) -> Result<(usize, String), CmdError> {
        let sha = sha1_hex(body);
        let key = sha_key(sha.as_bytes()).expect("sha1 hex is 40 bytes");
        if let Some(&i) = self.by_sha.get(&key) {
            return Ok((i, sha));
        }
        let (flags, shebang_len) = parse_shebang(body, self.profile.is_valkey())?;
        let l = self.eval.l;
        // SAFETY: raw operations on our own VM.
        unsafe {
            if let Err(msg) = sandbox::load_chunk(l, &body[shebang_len..], b"@user_script") {
                return Err(CmdError::echo("ERR Error compiling script (new function): ", c_prefix(&msg), ""));
            }
            self.eval.set_script_env();
            let fref = ffi::luaL_ref(l, ffi::LUA_REGISTRYINDEX);
            let arg_tables = self.eval.new_arg_tables();
            self.by_sha.insert(key, self.scripts.len());
            self.scripts.push(EvalScript {
                sha: key,
                fref,
                arg_tables,
                flags,
                body: Bytes::copy_from_slice(body),
                stats: ScriptStats::default(),
                profile: ScriptProfile::default(),
            });
        }
        Ok((self.scripts.len() - 1, sha))
    }

    /// `EVAL`, `EVALSHA`, `EVAL_RO`, `EVALSHA_RO` (`args` is the whole
    /// command line); the script's commands go to `host`.
    pub fn eval(&mut self, host: &mut dyn ScriptHost, args: &[Bytes], evalsha: bool, ro: bool) -> Reply {
        let numkeys = match crate::num::parse_int(&args[2]) {
            Ok(n) => n,
            Err(e) => return CmdError::from(e).into(),
        };
        if numkeys > (args.len() - 3) as i64 {
            return Reply::error("ERR Number of keys can't be greater than number of args");
        }
        if numkeys < 0 {
            return Reply::error("ERR Number of keys can't be negative");
        }
        let index = if evalsha {
            match sha_key(&args[1]).and_then(|k| self.by_sha.get(&k)) {
                Some(&i) => i,
                None => return Reply::error(noscript(self.profile)),
            }
        } else {
            match self.create(&args[1]) {
                Ok((i, _)) => i,
                Err(e) => return e.into(),
            }
        };
        let script = &mut self.scripts[index];
        let (fref, arg_tables, flags, sha) = (script.fref, script.arg_tables, script.flags, script.sha);
        let profile = std::mem::take(&mut script.profile);
        let n = numkeys as usize;
        let (keys, argv) = (&args[3..3 + n], &args[3 + n..]);
        let (reply, calls, call_nanos, nanos, profile) =
            self.run(host, Target::Eval(fref, arg_tables), &sha, keys, argv, flags, ro, profile);
        if let Some(s) = self.scripts.get_mut(index) {
            s.profile = profile;
            let st = &mut s.stats;
            st.calls += 1;
            st.errors += u64::from(reply.is_error());
            st.nanos += nanos;
            st.redis_calls += calls;
            st.redis_nanos += call_nanos;
        }
        reply
    }

    /// Per-script statistics of the cached scripts, by sha.
    pub fn script_stats(&self) -> Vec<(String, ScriptStats)> {
        let mut v: Vec<_> =
            self.scripts.iter().map(|s| (String::from_utf8_lossy(&s.sha).into_owned(), s.stats)).collect();
        v.sort_by(|a, b| b.1.nanos.cmp(&a.1.nanos).then_with(|| a.0.cmp(&b.0)));
        v
    }

    /// `CONFIG RESETSTAT`.
    pub fn reset_stats(&mut self) {
        for s in &mut self.scripts {
            s.stats = ScriptStats::default();
            s.profile = ScriptProfile::default();
        }
    }

    /// The flags a script declares, for the limits checked before it runs
    /// (Redis's `evalGetCommandFlags` / `fcallGetCommandFlags`): `argv` is
    /// the whole `EVAL*` / `FCALL*` command. `None` when unknown (an
    /// uncached sha, a missing function, a bad shebang).
    pub fn declared_flags(&self, command: &str, argv: &[Bytes]) -> Option<ScriptFlags> {
        let body = argv.get(1)?;
        match command {
            "eval" | "eval_ro" => match self.by_sha.get(&sha_key(sha1_hex(body).as_bytes())?) {
                Some(&i) => Some(self.scripts[i].flags),
                None => parse_shebang(body, self.profile.is_valkey()).ok().map(|(f, _)| f),
            },
            "evalsha" | "evalsha_ro" => self.by_sha.get(&sha_key(body)?).map(|&i| self.scripts[i].flags),
            "fcall" | "fcall_ro" => self.libraries.find(body).map(|f| f.flags),
            _ => None,
        }
    }

    /// `FCALL`, `FCALL_RO` (`args` is the whole command line); the
    /// function's commands go to `host`.
    pub fn fcall(&mut self, host: &mut dyn ScriptHost, args: &[Bytes], ro: bool) -> Reply {
        let Some(f) = self.libraries.find(&args[1]) else {
            return Reply::error("ERR Function not found");
        };
        let (fref, flags, name) = (f.fref, f.flags, f.name.clone());
        let Ok(numkeys) = crate::num::parse_int(&args[2]) else {
            return Reply::error("ERR Bad number of keys provided");
        };
        if numkeys > (args.len() - 3) as i64 {
            return Reply::error("ERR Number of keys can't be greater than number of args");
        }
        if numkeys < 0 {
            return Reply::error("ERR Number of keys can't be negative");
        }
        let n = numkeys as usize;
        self.fvm();
        self.run(
            host,
            Target::Function(fref),
            name.as_bytes(),
            &args[3..3 + n],
            &args[3 + n..],
            flags,
            ro,
            ScriptProfile::default(),
        )
        .0
    }

    /// `FUNCTION LOAD`.
    pub fn function_load(&mut self, code: &Bytes, replace: bool) -> Result<String, String> {
        self.fvm();
        let vm = self.fvm.as_ref().expect("function VM");
        self.libraries.load(vm, code, replace)
    }

    /// `FUNCTION DELETE`.
    pub fn function_delete(&mut self, name: &str) -> bool {
        self.fvm();
        let vm = self.fvm.as_ref().expect("function VM");
        self.libraries.delete(vm, name)
    }

    /// `FUNCTION FLUSH`.
    pub fn function_flush(&mut self) {
        if let Some(vm) = self.fvm.as_ref() {
            self.libraries.flush(vm);
        }
    }

    /// `FUNCTION DUMP`.
    pub fn function_dump(&self) -> Vec<u8> {
        self.libraries.dump()
    }

    /// `FUNCTION RESTORE`.
    pub fn function_restore(&mut self, payload: &[u8], policy: functions::RestorePolicy) -> Result<(), String> {
        self.fvm();
        let vm = self.fvm.as_ref().expect("function VM");
        self.libraries.restore(vm, payload, policy)
    }

    /// Runs a compiled script or function (`scriptPrepareForRun`,
    /// `luaCallFunction`, `scriptResetRun`). Returns the reply, the number
    /// and time (ns) of the commands the host ran for it, the run's time
    /// (ns, as the host measured it), and `profile` with this run added.
    #[allow(clippy::too_many_arguments)]
    fn run(
        &mut self,
        host: &mut dyn ScriptHost,
        target: Target,
        funcname: &[u8],
        keys: &[Bytes],
        argv: &[Bytes],
        flags: ScriptFlags,
        ro: bool,
        profile: ScriptProfile,
    ) -> (Reply, u64, u64, u64, ScriptProfile) {
        let compat = flags.has(ScriptFlags::EVAL_COMPAT);
        if !compat && !flags.has(ScriptFlags::NO_WRITES) && ro {
            return (Reply::error(RO_WRITE_FLAG), 0, 0, 0, profile);
        }
        let readonly = ro || (!compat && flags.has(ScriptFlags::NO_WRITES));
        let is_eval = matches!(target, Target::Eval(..));
        let allow_oom = flags.has(ScriptFlags::ALLOW_OOM);
        let interrupts = host.begin(RunInfo { is_function: !is_eval, readonly, allow_oom });
        let rng = std::mem::take(&mut self.rng);
        let args = &mut self.args;
        let vm = match target {
            Target::Eval(..) => &self.eval,
            Target::Function(_) => self.fvm.as_ref().expect("function VM"),
        };
        let mut run = RunCtx {
            host,
            resp3: false,
            server: self.profile,
            panic: None,
            rng,
            repl_flags: 3,
            error_counted: false,
            calls: 0,
            call_nanos: 0,
            interrupts,
            hook_fires: 0,
            profile,
            args,
        };
        let reply = {
            // SAFETY: `run` outlives the guard, and nothing touches it but
            // the callbacks (through `run::current`) until the guard drops.
            let _guard = unsafe { RunGuard::install(&mut run) };
            // SAFETY: raw calls on our own VM, which leave its stack as found.
            unsafe { call_in_vm(vm, &target, funcname, keys, argv) }
        };
        // No forced collection step every 50 runs, as Redis makes: with a
        // heap this small (~35 kB) each step finished a whole cycle, 2,500
        // instructions a script. Lua's incremental collector paces itself by
        // what is allocated, and keeps the heap within about twice what is
        // live.
        self.rng = run.rng;
        run.args.clear();
        let nanos = run.host.end(&reply, run.error_counted);
        if let Some(p) = run.panic.take() {
            std::panic::resume_unwind(p);
        }
        (reply, run.calls, run.call_nanos, nanos, run.profile)
    }

    /// The deterministic profile of every cached script, by sha (sorted).
    pub fn script_profiles(&self) -> Vec<(String, ScriptStats, ScriptProfile)> {
        let mut v: Vec<_> = self
            .scripts
            .iter()
            .map(|s| (String::from_utf8_lossy(&s.sha).into_owned(), s.stats, s.profile.clone()))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

/// A script cache key: a sha1 in lower-case hex.
type Sha = [u8; 40];

/// The cache key of a sha given by a client (letter case ignored); None if
/// it cannot be a sha1.
fn sha_key(sha: &[u8]) -> Option<Sha> {
    let mut k: Sha = sha.try_into().ok()?;
    k.make_ascii_lowercase();
    Some(k)
}

/// Pushes a Lua array of the given strings.
unsafe fn push_string_array(l: State, items: &[Bytes]) {
    ffi::lua_createtable(l, items.len().min(1 << 24) as c_int, 0);
    for (j, it) in items.iter().enumerate() {
        lua::push_bytes(l, it);
        ffi::lua_rawseti(l, -2, (j + 1) as ffi::lua_Integer);
    }
}

/// Instructions between two firings of the count hook (Redis's period):
/// BUSY detection and `SCRIPT KILL` are checked there, and it counts the
/// instructions a script runs.
const HOOK_PERIOD: c_int = 100_000;

extern "C" {
    /// Instructions still to go before the count hook fires
    /// (lua/vm/instructions.c, compiled with the VM).
    fn rlockd_lua_hook_remaining(l: State) -> c_int;
}

/// The call itself, on the VM's stack; always leaves the stack as found.
unsafe fn call_in_vm(vm: &Vm, target: &Target, funcname: &[u8], keys: &[Bytes], argv: &[Bytes]) -> Reply {
    let l = vm.l;
    let top = ffi::lua_gettop(l);
    ffi::lua_checkstack(l, 8);
    vm.push_error_handler();
    let status = match target {
        Target::Eval(fref, arg_tables) => {
            ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, *fref as ffi::lua_Integer);
            vm.set_keys_argv(keys, argv, *arg_tables);
            ffi::lua_sethook(l, Some(redis_lib::count_hook), ffi::LUA_MASKCOUNT, HOOK_PERIOD);
            ffi::lua_pcall(l, 0, 1, -2)
        }
        Target::Function(fref) => {
            ffi::lua_rawgeti(l, ffi::LUA_REGISTRYINDEX, *fref as ffi::lua_Integer);
            push_string_array(l, keys);
            push_string_array(l, argv);
            ffi::lua_sethook(l, Some(redis_lib::count_hook), ffi::LUA_MASKCOUNT, HOOK_PERIOD);
            ffi::lua_pcall(l, 2, 1, -4)
        }
    };
    // Instructions run: whole periods between firings, then what was used
    // of the last one (see lua/vm/instructions.c).
    let remaining = rlockd_lua_hook_remaining(l);
    if let Some(run) = run::current() {
        let used_of_last = (HOOK_PERIOD - remaining.clamp(0, HOOK_PERIOD)) as u64;
        run.profile.instructions += run.hook_fires * HOOK_PERIOD as u64 + used_of_last;
    }
    ffi::lua_sethook(l, None, 0, 0);
    if ffi::lua_type(l, -1) == ffi::LUA_TTABLE {
        lua::get_field_raw(l, -1, "ignore_error_stats_update");
        if let Some(run) = run::current() {
            run.error_counted = ffi::lua_toboolean(l, -1) != 0;
        }
        ffi::lua_pop(l, 1);
    }
    let reply = if status != 0 {
        error_reply(l, funcname)
    } else {
        let resp3 = run::current().is_some_and(|r| r.resp3);
        convert::lua_to_reply(l, -1, resp3)
    };
    ffi::lua_settop(l, top);
    reply
}

/// The reply for a failed run, built from the error on top of the stack.
unsafe fn error_reply(l: State, funcname: &[u8]) -> Reply {
    if ffi::lua_type(l, -1) != ffi::LUA_TTABLE {
        let info = sandbox::error_info(l);
        let mut msg = info.msg.unwrap_or_else(|| b"execution failure".to_vec());
        if let Some(rest) = msg.strip_prefix(b"ERR ") {
            msg = rest.to_vec();
        }
        msg.truncate(100);
        let (funcname, msg) = (String::from_utf8_lossy(funcname), String::from_utf8_lossy(&msg));
        return Reply::error(format!("ERR Error running script {funcname}, {msg}"));
    }
    let info = sandbox::error_info(l);
    let mut out = info.msg.unwrap_or_else(|| b"ERR unknown error".to_vec());
    if let (Some(source), Some(line)) = (&info.source, &info.line) {
        out.extend_from_slice(b" script: ");
        out.extend_from_slice(funcname);
        out.extend_from_slice(b", on ");
        out.extend_from_slice(source);
        out.push(b':');
        out.extend_from_slice(line);
        out.push(b'.');
    }
    let out = trim_trailing_crlf(&out).to_vec();
    Reply::Error(Bytes::from(out))
}

fn trim_trailing_crlf(mut s: &[u8]) -> &[u8] {
    while let [rest @ .., b'\r' | b'\n'] = s {
        s = rest;
    }
    s
}

/// A string as `%s` prints it: up to the first NUL.
fn c_prefix(b: &[u8]) -> &[u8] {
    &b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]
}

/// `evalExtractShebangFlags`: the script's flags and the length of its
/// shebang line (without the newline, which stays to keep line numbers).
/// `valkey`: Valkey 8.1 names an unknown engine as its engine registry does.
fn parse_shebang(body: &[u8], valkey: bool) -> Result<(ScriptFlags, usize), CmdError> {
    if !body.starts_with(b"#!") {
        return Ok((ScriptFlags(ScriptFlags::EVAL_COMPAT), 0));
    }
    let Some(end) = body.iter().position(|&c| c == b'\n') else {
        return Err(CmdError::custom("ERR Invalid script shebang"));
    };
    let parts = match crate::protocol::parse::split_args(&body[..end]) {
        Some(p) if !p.is_empty() => p,
        _ => return Err(CmdError::custom("ERR Invalid engine in script shebang")),
    };
    if &parts[0][..] != b"#!lua" {
        if valkey {
            return Err(CmdError::echo("ERR Could not find scripting engine '", &parts[0][2..], "'"));
        }
        return Err(CmdError::echo("ERR Unexpected engine in script shebang: ", &parts[0], ""));
    }
    let mut flags = ScriptFlags::default();
    for part in &parts[1..] {
        if let Some(list) = part.strip_prefix(b"flags=") {
            if list.is_empty() {
                continue;
            }
            for f in list.split(|&c| c == b',') {
                match ScriptFlags::from_name(f, false) {
                    Some(x) => flags.0 |= x.0,
                    None => return Err(CmdError::echo("ERR Unexpected flag in script shebang: ", f, "")),
                }
            }
        } else {
            return Err(CmdError::echo("ERR Unknown lua shebang option: ", part, ""));
        }
    }
    Ok((flags, end))
}

/// `EVALSHA`'s error for a sha not cached (Valkey leaves out the hint).
pub fn noscript(profile: crate::version::Profile) -> &'static str {
    if profile.is_valkey() {
        "NOSCRIPT No matching script."
    } else {
        "NOSCRIPT No matching script. Please use EVAL."
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shebang_parsing() {
        assert_eq!(parse_shebang(b"return 1", false).unwrap(), (ScriptFlags(ScriptFlags::EVAL_COMPAT), 0));
        assert_eq!(parse_shebang(b"#!lua\nreturn 1", false).unwrap(), (ScriptFlags(0), 5));
        let (f, _) = parse_shebang(b"#!lua flags=no-writes,allow-oom\nreturn 1", false).unwrap();
        assert!(f.has(ScriptFlags::NO_WRITES) && f.has(ScriptFlags::ALLOW_OOM));
        assert_eq!(parse_shebang(b"#!lua", false).unwrap_err().to_string(), "ERR Invalid script shebang");
        assert_eq!(
            parse_shebang(b"#!foo\nx", false).unwrap_err().to_string(),
            "ERR Unexpected engine in script shebang: #!foo"
        );
        assert_eq!(
            parse_shebang(b"#!lua flags=bad\nx", false).unwrap_err().to_string(),
            "ERR Unexpected flag in script shebang: bad"
        );
        assert_eq!(
            parse_shebang(b"#!lua x=1\nx", false).unwrap_err().to_string(),
            "ERR Unknown lua shebang option: x=1"
        );
        assert_eq!(
            parse_shebang(b"#!foo\nx", true).unwrap_err().to_string(),
            "ERR Could not find scripting engine 'foo'"
        );
    }

    /// A host that records what the engine asks and answers every command
    /// with its own arguments; `nope` is an unknown command.
    #[derive(Default)]
    struct FakeHost {
        began: Option<RunInfo>,
        calls: Vec<(Vec<Bytes>, bool)>,
        interrupts: u32,
        kill_at: Option<u32>,
        ended: Option<(Reply, bool)>,
    }

    impl ScriptHost for FakeHost {
        fn begin(&mut self, run: RunInfo) -> bool {
            self.began = Some(run);
            self.kill_at.is_some()
        }
        fn call(&mut self, argv: &[Bytes], resp3: bool) -> Result<(Reply, host::CallInfo), host::ScriptErr> {
            self.calls.push((argv.to_vec(), resp3));
            // `set` writes its one key, anything else reads its arguments.
            let write = &argv[0][..] == b"set";
            let name = if write { "set" } else { "echo" };
            let info =
                host::CallInfo { command: name, keys: if write { 1 } else { argv.len() as u32 - 1 }, write, nanos: 0 };
            match &argv[0][..] {
                b"nope" => Err(host::ScriptErr::UnknownCommand),
                b"fail" => Ok((Reply::error("ERR it failed"), info)),
                _ => Ok((Reply::Array(argv.iter().cloned().map(Reply::Bulk).collect()), info)),
            }
        }
        fn acl_check(&self, argv: &[Bytes]) -> Option<bool> {
            (&argv[0][..] != b"nope").then_some(true)
        }
        fn interrupt(&mut self) -> host::Interrupt {
            self.interrupts += 1;
            if self.kill_at.is_some_and(|n| self.interrupts >= n) {
                host::Interrupt::Kill
            } else {
                host::Interrupt::Continue
            }
        }
        fn end(&mut self, reply: &Reply, error_counted: bool) -> u64 {
            self.ended = Some((reply.clone(), error_counted));
            0
        }
    }

    fn args(parts: &[&str]) -> Vec<Bytes> {
        parts.iter().map(|p| Bytes::copy_from_slice(p.as_bytes())).collect()
    }

    fn bulks(parts: &[&str]) -> Reply {
        Reply::Array(parts.iter().map(|p| Reply::Bulk(Bytes::copy_from_slice(p.as_bytes()))).collect())
    }

    #[test]
    fn redis_call_goes_to_the_host() {
        let mut eng = Scripting::new();
        let mut host = FakeHost::default();
        let script = "return redis.call('echo', KEYS[1], ARGV[1], 3)";
        let reply = eng.eval(&mut host, &args(&["EVAL", script, "1", "k", "v"]), false, false);
        assert_eq!(reply, bulks(&["echo", "k", "v", "3"]));
        assert_eq!(host.calls, vec![(args(&["echo", "k", "v", "3"]), false)]);
        assert_eq!(host.began, Some(RunInfo { is_function: false, readonly: false, allow_oom: false }));
        assert_eq!(host.ended, Some((reply, false)));
        // The script is cached: EVALSHA finds it, and its statistics count the call.
        let sha = sha1_hex(script.as_bytes());
        let reply = eng.eval(&mut host, &args(&["EVALSHA", &sha, "1", "a", "b"]), true, true);
        assert_eq!(reply, bulks(&["echo", "a", "b", "3"]));
        assert_eq!(host.began, Some(RunInfo { is_function: false, readonly: true, allow_oom: false }));
        let stats = eng.script_stats();
        assert_eq!((stats[0].1.calls, stats[0].1.redis_calls), (2, 2));
    }

    /// The profile counts the same instructions for the same work on every
    /// run (across hook periods too), and the host's commands and keys.
    #[test]
    fn profile_counts_instructions_commands_and_keys() {
        let mut eng = Scripting::new();
        let mut host = FakeHost::default();
        let script = "local x = 0 for i = 1, tonumber(ARGV[1]) do x = x + i end \
                      redis.call('set', KEYS[1], x) redis.call('echo', 'a', 'b') redis.call('echo', 'c') return x";
        let sha = sha1_hex(script.as_bytes());
        let run = |eng: &mut Scripting, host: &mut FakeHost, n: &str| {
            let cmd = if eng.script_profiles().is_empty() { "EVAL" } else { "EVALSHA" };
            let body = if cmd == "EVAL" { script.to_string() } else { sha.clone() };
            eng.eval(host, &args(&[cmd, &body, "1", "k", n]), cmd == "EVALSHA", false);
            eng.script_profiles()[0].2.clone()
        };
        let one = run(&mut eng, &mut host, "10").instructions;
        let two = run(&mut eng, &mut host, "10").instructions;
        assert!(one > 20, "{one}");
        assert_eq!(two, 2 * one, "the same run costs the same");
        // A loop of a million steps crosses the hook period many times: each
        // step costs the same few instructions, so the difference between
        // two loop lengths is exact.
        let big = run(&mut eng, &mut host, "1000000").instructions - two;
        let bigger = run(&mut eng, &mut host, "2000000").instructions - two - big;
        // cost(n) = fixed + step * n, exactly.
        let step = (big - one) / (1_000_000 - 10);
        assert_eq!(step * (1_000_000 - 10), big - one, "{one} {big} {bigger}");
        assert_eq!(bigger - big, step * 1_000_000, "{one} {big} {bigger}");
        assert!(big > 1_000_000, "{big}");
        let p = eng.script_profiles()[0].2.clone();
        assert_eq!(p.commands, vec![("set", 4), ("echo", 8)]);
        assert_eq!((p.keys_written, p.keys_read), (4, 12));
        // No busy threshold: the hook counted, but never asked the host.
        assert_eq!(host.interrupts, 0);
    }

    #[test]
    fn resp3_and_acl_checks_reach_the_host() {
        let mut eng = Scripting::new();
        let mut host = FakeHost::default();
        let script = "redis.setresp(3) redis.call('x') \
                      return {redis.acl_check_cmd('get'), pcall(redis.acl_check_cmd, 'nope')}";
        let reply = eng.eval(&mut host, &args(&["EVAL", script, "0"]), false, false);
        assert_eq!(host.calls, vec![(args(&["x"]), true)]);
        // RESP3 booleans: true, then pcall's false for the unknown command.
        let Reply::Array(items) = reply else { panic!("not an array: {reply:?}") };
        assert_eq!(items[..2], [Reply::Bool(true), Reply::Bool(false)]);
    }

    #[test]
    fn refusals_and_command_errors_become_script_errors() {
        let mut eng = Scripting::new();
        let mut host = FakeHost::default();
        let reply = eng.eval(&mut host, &args(&["EVAL", "return redis.pcall('nope')", "0"]), false, false);
        assert_eq!(reply, Reply::error("ERR Unknown Redis command called from script"));
        // A refusal was counted by the host: the script's error repeats it.
        assert_eq!(host.ended, Some((reply, true)));
        let reply = eng.eval(&mut host, &args(&["EVAL", "return redis.call('fail')", "0"]), false, false);
        let Reply::Error(text) = &reply else { panic!("not an error: {reply:?}") };
        assert!(text.starts_with(b"ERR it failed script: "), "{reply:?}");
        let reply = eng.eval(&mut host, &args(&["EVAL", "return redis.pcall('fail')", "0"]), false, false);
        assert_eq!(reply, Reply::error("ERR it failed"));
    }

    #[test]
    fn the_host_can_stop_a_runaway_script() {
        let mut eng = Scripting::new();
        let mut host = FakeHost { kill_at: Some(3), ..Default::default() };
        let reply = eng.eval(&mut host, &args(&["EVAL", "while true do pcall(function() end) end", "0"]), false, false);
        let Reply::Error(text) = &reply else { panic!("not an error: {reply:?}") };
        assert!(text.starts_with(b"ERR Script killed by user with SCRIPT KILL..."), "{reply:?}");
        assert_eq!(host.interrupts, 3);
        // Without interrupts wanted, the hook is not installed at all.
        let mut host = FakeHost::default();
        let reply = eng.eval(&mut host, &args(&["EVAL", "for i = 1, 300000 do end return 1", "0"]), false, false);
        assert_eq!((reply, host.interrupts), (Reply::Int(1), 0));
    }

    #[test]
    fn sha1_of_scripts() {
        assert_eq!(sha1_hex(b"return 1"), "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
    }
}
