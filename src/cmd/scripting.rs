//! Scripting commands: `EVAL`, `EVALSHA`, `EVAL_RO`, `EVALSHA_RO`,
//! `SCRIPT *`, `FUNCTION *`, `FCALL`, `FCALL_RO`. The engine itself is in
//! [`crate::script`].
//!
//! A script's `redis.call` reaches the same table as a TCP client: the
//! `EVAL` handler takes the engine out of the core (`Core::scripting`),
//! wraps its `Ctx` in a [`ScriptRun`] — the script host, as Redis's
//! `script.c` — and runs the script with the core lock held throughout (so
//! the script is atomic). `redis.call` converts its Lua arguments to
//! `Vec<Bytes>` and asks `ScriptHost::call`; the host looks the command up
//! in [`table`], makes the script checks (unknown command, arity,
//! `noscript`, ACL, writes in read-only scripts, limits; a refusal is a
//! `ScriptErr`, raised as an error table) and calls `call::call` with the
//! script's pseudo-client. The `Reply` goes back to Lua values with no RESP
//! in between. The hook's `interrupt` enters BUSY mode past the threshold
//! and has the server layer serve other connections (`core::ServerIo`,
//! each command through `dispatch::run_while_busy`); `end` resets the busy
//! state.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;

use super::help::subcommand_syntax;
use super::util::eq;
use super::{cmd, container, flags, CommandSpec, Ctx, Lookup};
use crate::client::{Caller, ClientState};
use crate::core::Shared;
use crate::error::{CmdError, CmdResult};
use crate::protocol::{Reply, Resp};
use crate::script::host::{CallInfo, Interrupt, RunInfo, ScriptErr, ScriptHost};
use crate::script::Scripting;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("eval", eval, -3, "noscript stale skip_monitor no_mandatory_keys movablekeys", 0, 0, 0, "@slow @scripting")
        .hidden_flags("runs_script")
        .doc("Execute a Lua script server side", "2.6.0"),
    cmd(
        "evalsha",
        evalsha,
        -3,
        "noscript stale skip_monitor no_mandatory_keys movablekeys",
        0,
        0,
        0,
        "@slow @scripting",
    )
    .hidden_flags("runs_script names_script")
    .doc("Execute a Lua script server side", "2.6.0"),
    cmd(
        "eval_ro",
        eval_ro,
        -3,
        "readonly noscript stale skip_monitor no_mandatory_keys movablekeys",
        0,
        0,
        0,
        "@slow @scripting",
    )
    .hidden_flags("runs_script")
    .doc("Execute a read-only Lua script server side", "7.0.0"),
    cmd(
        "evalsha_ro",
        evalsha_ro,
        -3,
        "readonly noscript stale skip_monitor no_mandatory_keys movablekeys",
        0,
        0,
        0,
        "@slow @scripting",
    )
    .hidden_flags("runs_script names_script")
    .doc("Execute a read-only Lua script server side", "7.0.0"),
    cmd("fcall", fcall, -3, "noscript stale skip_monitor no_mandatory_keys movablekeys", 0, 0, 0, "@slow @scripting")
        .hidden_flags("runs_script names_script")
        .doc("Invoke a function", "7.0.0"),
    cmd(
        "fcall_ro",
        fcall_ro,
        -3,
        "readonly noscript stale skip_monitor no_mandatory_keys movablekeys",
        0,
        0,
        0,
        "@slow @scripting",
    )
    .hidden_flags("runs_script names_script")
    .doc("Invoke a read-only function", "7.0.0"),
    cmd("script", container, -2, "", 0, 0, 0, "@slow")
        .subs(SCRIPT_SUBS)
        .doc("A container for Lua scripts management commands", "2.6.0"),
    cmd("function", container, -2, "", 0, 0, 0, "@slow")
        .subs(FUNCTION_SUBS)
        .doc("A container for function commands", "7.0.0"),
];

static SCRIPT_SUBS: &[CommandSpec] = &[
    cmd("debug", script_debug, 3, "noscript", 0, 0, 0, "@slow @scripting")
        .doc("Set the debug mode for executed scripts.", "3.2.0"),
    cmd("exists", script_exists, -3, "noscript", 0, 0, 0, "@slow @scripting")
        .doc("Check existence of scripts in the script cache.", "2.6.0"),
    cmd("flush", script_flush, -2, "noscript", 0, 0, 0, "@slow @scripting")
        .doc("Remove all the scripts from the script cache.", "2.6.0"),
    cmd("help", script_help, 2, "loading stale", 0, 0, 0, "@slow @scripting")
        .doc("Show helpful text about the different subcommands", "5.0.0"),
    cmd("kill", script_kill, 2, "noscript allow_busy", 0, 0, 0, "@slow @scripting")
        .doc("Kill the script currently in execution.", "2.6.0"),
    cmd("load", script_load, 3, "noscript stale", 0, 0, 0, "@slow @scripting")
        .doc("Load the specified Lua script into the script cache.", "2.6.0"),
    cmd("show", script_show, 3, "noscript", 0, 0, 0, "@slow @scripting")
        .valkey_only("Show server-side Lua script in the script cache.", "8.0.0"),
];

static FUNCTION_SUBS: &[CommandSpec] = &[
    cmd("delete", function_delete, 3, "write noscript", 0, 0, 0, "@write @slow @scripting")
        .hidden_flags("always_propagated")
        .doc("Delete a function by name", "7.0.0"),
    cmd("dump", function_dump, 2, "noscript", 0, 0, 0, "@slow @scripting")
        .doc("Dump all functions into a serialized binary payload", "7.0.0"),
    cmd("flush", function_flush, -2, "write noscript", 0, 0, 0, "@write @slow @scripting")
        .hidden_flags("always_propagated")
        .doc("Deleting all functions", "7.0.0"),
    cmd("help", function_help, 2, "loading stale", 0, 0, 0, "@slow @scripting")
        .doc("Show helpful text about the different subcommands", "7.0.0"),
    cmd("kill", function_kill, 2, "noscript allow_busy", 0, 0, 0, "@slow @scripting")
        .doc("Kill the function currently in execution.", "7.0.0"),
    cmd("list", function_list, -2, "noscript", 0, 0, 0, "@slow @scripting")
        .doc("List information about all the functions", "7.0.0"),
    cmd("load", function_load, -3, "write denyoom noscript", 0, 0, 0, "@write @slow @scripting")
        .hidden_flags("always_propagated")
        .doc("Create a function with the given arguments (name, code, description)", "7.0.0"),
    cmd("restore", function_restore, -3, "write denyoom noscript", 0, 0, 0, "@write @slow @scripting")
        .hidden_flags("always_propagated")
        .doc("Restore all the functions on the given payload", "7.0.0"),
    cmd("stats", function_stats, 2, "noscript allow_busy", 0, 0, 0, "@slow @scripting")
        .doc("Return information about the function currently running (name, description, duration)", "7.0.0"),
];

/// Runs `f` with the engine taken out of the core (so that the script can
/// reach the core through `redis.call`); puts it back even on panic.
fn with_engine<R>(ctx: &mut Ctx<'_>, f: impl FnOnce(&mut Scripting, &mut Ctx<'_>) -> R) -> Result<R, CmdError> {
    let Some(mut eng) = ctx.core.scripting.take() else {
        return Err(CmdError::custom("ERR the script engine is busy"));
    };
    let r = catch_unwind(AssertUnwindSafe(|| f(&mut eng, ctx)));
    ctx.core.scripting = Some(eng);
    r.map_err(|p| resume_unwind(p))
}

/// The server side of one script run (Redis's `script.c`, the engine being
/// `script_lua.c`): the script's pseudo-client, the checks its commands
/// pass before the shared dispatch, the busy-script state and `SCRIPT KILL`.
struct ScriptRun<'c, 'a> {
    ctx: &'c mut Ctx<'a>,
    /// The script's pseudo-client (kind Script, the caller's db).
    client: ClientState,
    /// `EVAL_RO`, `FCALL_RO`, or a `no-writes` script.
    readonly: bool,
    /// The script declared `allow-oom`.
    allow_oom: bool,
    /// The script performed a write command.
    wrote: bool,
    /// When the script started (set by `begin`): the busy threshold and
    /// the script's time in `INFO scriptstats` count from it.
    started: Option<Instant>,
    /// `busy-reply-threshold` in ms (0 = never busy).
    threshold_ms: u64,
    /// Past the threshold: others answer BUSY.
    timed_out: bool,
}

impl<'c, 'a> ScriptRun<'c, 'a> {
    fn new(ctx: &'c mut Ctx<'a>) -> Self {
        let mut client = ClientState::new(ctx.client.shared.clone(), true);
        client.caller = Caller::Script;
        client.set_db(ctx.client.db());
        client.user = ctx.client.user.clone();
        client.resp = Resp::V2;
        let threshold_ms = ctx.core.config.busy_threshold_ms;
        ScriptRun {
            ctx,
            client,
            readonly: false,
            allow_oom: false,
            wrote: false,
            started: None,
            threshold_ms,
            timed_out: false,
        }
    }

    /// The script's time since `begin`.
    fn elapsed(&self) -> std::time::Duration {
        self.started.map(|s| s.elapsed()).unwrap_or_default()
    }

    /// A refused script command counts as rejected, and as an error reply
    /// (Redis's `afterErrorReply` of the refusal): a refusal of the server's
    /// state (`-OOM`, `-NOREPLICAS`) under its own prefix, the others `ERR`.
    fn refuse(&mut self, id: Option<usize>, why: ScriptErr) -> ScriptErr {
        let stats = &mut self.ctx.core.stats;
        if let Some(id) = id {
            stats.commands[id].rejected += 1;
        }
        let counted = match &why {
            ScriptErr::Limit(text) => text.strip_prefix('-').unwrap_or("ERR"),
            _ => "ERR",
        };
        stats.count_error(counted.as_bytes());
        why
    }
}

impl ScriptHost for ScriptRun<'_, '_> {
    fn begin(&mut self, run: RunInfo) -> bool {
        self.readonly = run.readonly;
        self.allow_oom = run.allow_oom;
        let shared = self.ctx.shared;
        let st = &shared.script;
        st.kill.store(false, Ordering::Release);
        st.wrote.store(false, Ordering::Release);
        st.busy.store(false, Ordering::Release);
        st.is_function.store(run.is_function, Ordering::Release);
        st.running.store(true, Ordering::Release);
        self.started = Some(Instant::now());
        self.threshold_ms > 0
    }

    /// Redis's `scriptCall`: lookup, arity, `noscript`, read-only checks,
    /// then the shared dispatch.
    fn call(&mut self, argv: &[Bytes], resp3: bool) -> Result<(Reply, CallInfo), ScriptErr> {
        let cmd = match super::lookup(self.ctx.core, argv) {
            Lookup::Found(c) => c,
            Lookup::Unknown | Lookup::UnknownSub => return Err(self.refuse(None, ScriptErr::UnknownCommand)),
        };
        if !super::arity_ok(cmd.spec.arity, argv.len()) {
            return Err(self.refuse(Some(cmd.id), ScriptErr::WrongArity));
        }
        if cmd.has(flags::NOSCRIPT) && !(cmd.has(flags::SCRIPTS_FROM_7_2) && self.ctx.core.profile().at_least(7, 2, 0))
        {
            return Err(self.refuse(Some(cmd.id), ScriptErr::NotAllowed));
        }
        if !self.ctx.core.acl.open {
            let mut ctx = Ctx { core: &mut *self.ctx.core, client: &mut self.client, shared: self.ctx.shared };
            if let Err(d) = super::access::check(&ctx, cmd, argv) {
                super::access::refuse(&mut ctx, cmd, argv, d, "lua");
                let text = super::access::script_denial(&ctx, cmd, d);
                return Err(self.refuse(Some(cmd.id), ScriptErr::Denied(text)));
            }
        }
        if self.readonly && (cmd.has(flags::WRITE) || cmd.has(flags::MAY_REPLICATE)) {
            return Err(self.refuse(Some(cmd.id), ScriptErr::WriteInReadOnly));
        }
        let limit = {
            let ctx = Ctx { core: &mut *self.ctx.core, client: &mut self.client, shared: self.ctx.shared };
            super::limits::script_check(&ctx, cmd, self.wrote, self.allow_oom)
        };
        if let Some(refusal) = limit {
            return Err(self.refuse(Some(cmd.id), ScriptErr::Limit(refusal)));
        }
        if cmd.is_write() && !self.wrote {
            self.wrote = true;
            self.ctx.shared.script.wrote.store(true, Ordering::Release);
        }
        // Tested here: outside a cluster the check is not called at all.
        if self.ctx.core.cluster.is_some() {
            if let Some(refusal) = super::cluster::script_check(self.ctx, cmd, argv) {
                return Err(self.refuse(Some(cmd.id), ScriptErr::Limit(refusal)));
            }
        }
        self.client.resp = if resp3 { Resp::V3 } else { Resp::V2 };
        let mut ctx = Ctx { core: &mut *self.ctx.core, client: &mut self.client, shared: self.ctx.shared };
        let before = ctx.core.stats.nested_nanos;
        let reply = super::call::call(&mut ctx, cmd, argv);
        let nanos = self.ctx.core.stats.nested_nanos - before;
        let info = CallInfo { command: cmd.spec.name, keys: key_count(cmd, argv.len()), write: cmd.is_write(), nanos };
        Ok((reply, info))
    }

    /// Whether the script's user may run `argv` (not logged).
    fn acl_check(&self, argv: &[Bytes]) -> Option<bool> {
        let Lookup::Found(cmd) = super::lookup(self.ctx.core, argv) else { return None };
        if self.ctx.core.acl.open {
            return Some(true);
        }
        Some(super::access::check_as(self.ctx.core, &self.client.user, cmd, argv).is_ok())
    }

    /// Enters BUSY mode past the threshold, then serves the other
    /// connections (the script blocks the event loop), and reports whether
    /// the script must be killed.
    fn interrupt(&mut self) -> Interrupt {
        let shared: &Shared = self.ctx.shared;
        if !self.timed_out {
            if self.threshold_ms == 0 || (self.elapsed().as_millis() as u64) < self.threshold_ms {
                return Interrupt::Continue;
            }
            self.timed_out = true;
            tracing::warn!(
                "Slow script detected: still in execution after {} milliseconds. You can try killing the script using the {} command.",
                self.elapsed().as_millis(),
                if shared.script.is_function.load(Ordering::Relaxed) { "FUNCTION KILL" } else { "SCRIPT KILL" }
            );
            shared.script.busy.store(true, Ordering::Release);
        }
        // The script blocks the event loop: serve the other connections from here.
        if let Some(io) = shared.io.get() {
            io.serve_busy(self.ctx.core);
        }
        if shared.stopping() {
            Interrupt::Shutdown
        } else if shared.script.kill.load(Ordering::Acquire) {
            Interrupt::Kill
        } else {
            Interrupt::Continue
        }
    }

    fn end(&mut self, reply: &Reply, error_counted: bool) -> u64 {
        let nanos = self.elapsed().as_nanos() as u64;
        let st = &self.ctx.shared.script;
        st.running.store(false, Ordering::Release);
        st.busy.store(false, Ordering::Release);
        st.kill.store(false, Ordering::Release);
        st.wrote.store(false, Ordering::Release);
        st.is_function.store(false, Ordering::Release);
        // SELECT inside the script only moved the script's client.
        self.ctx.client.shared.db.store(self.ctx.client.db(), Ordering::Relaxed);
        if error_counted && reply.is_error() {
            self.ctx.core.stats.error_already_counted = true;
        }
        nanos
    }
}

/// How many keys a command of `argc` arguments names by its first/last/step
/// positions (cheap: no key-spec walk; movable-key commands count their
/// fixed positions only).
fn key_count(cmd: &super::Command, argc: usize) -> u32 {
    let (first, last, step) = (cmd.spec.first_key as i64, cmd.spec.last_key as i64, cmd.spec.step as i64);
    if first <= 0 || step <= 0 {
        return 0;
    }
    let last = if last < 0 { argc as i64 + last } else { last.min(argc as i64 - 1) };
    if last < first {
        return 0;
    }
    ((last - first) / step + 1) as u32
}

const NOTBUSY: &str = "NOTBUSY No scripts in execution right now.";

fn eval_generic(ctx: &mut Ctx<'_>, args: &[Bytes], evalsha: bool, ro: bool) -> CmdResult {
    if evalsha && args[1].len() != 40 {
        return Ok(Reply::error(crate::script::noscript(ctx.core.profile())));
    }
    with_engine(ctx, |e, ctx| e.eval(&mut ScriptRun::new(ctx), args, evalsha, ro))
}

fn eval(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    eval_generic(ctx, args, false, false)
}

fn evalsha(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    eval_generic(ctx, args, true, false)
}

fn eval_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    eval_generic(ctx, args, false, true)
}

fn evalsha_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    eval_generic(ctx, args, true, true)
}

fn fcall(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    with_engine(ctx, |e, ctx| e.fcall(&mut ScriptRun::new(ctx), args, false))
}

fn fcall_ro(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    with_engine(ctx, |e, ctx| e.fcall(&mut ScriptRun::new(ctx), args, true))
}

fn script_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    use super::help::{EVERY, REDIS, VALKEY_8_0};
    Ok(super::help::help_reply_in(
        ctx.core.profile(),
        "SCRIPT",
        &[
            (EVERY, "DEBUG (YES|SYNC|NO)"),
            (EVERY, "    Set the debug mode for subsequent scripts executed."),
            (EVERY, "EXISTS <sha1> [<sha1> ...]"),
            (EVERY, "    Return information about the existence of the scripts in the script cache."),
            (EVERY, "FLUSH [ASYNC|SYNC]"),
            (EVERY, "    Flush the Lua scripts cache. Very dangerous on replicas."),
            (REDIS, "    When called without the optional mode argument, the behavior is determined by the"),
            (REDIS, "    lazyfree-lazy-user-flush configuration directive. Valid modes are:"),
            (VALKEY_8_0, "    When called without the optional mode argument, the behavior is determined"),
            (VALKEY_8_0, "     by the lazyfree-lazy-user-flush configuration directive. Valid modes are:"),
            (EVERY, "    * ASYNC: Asynchronously flush the scripts cache."),
            (EVERY, "    * SYNC: Synchronously flush the scripts cache."),
            (EVERY, "KILL"),
            (EVERY, "    Kill the currently executing Lua script."),
            (EVERY, "LOAD <script>"),
            (EVERY, "    Load a script into the scripts cache without executing it."),
            (VALKEY_8_0, "SHOW <sha1>"),
            (VALKEY_8_0, "    Show a script from the scripts cache."),
        ],
    ))
}

fn script_exists(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    with_engine(ctx, |e, _| Reply::Array(args[2..].iter().map(|s| Reply::Int(e.script_exists(s) as i64)).collect()))
}

/// Valkey's `SCRIPT SHOW sha1`: the cached script's source.
fn script_show(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    match with_engine(ctx, |e, _| e.script_body(&args[2]))? {
        Some(body) => Ok(Reply::Bulk(body)),
        None => Err(CmdError::custom("NOSCRIPT No matching script.")),
    }
}

fn script_flush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let ok = args.len() == 2 || (args.len() == 3 && (eq(&args[2], "sync") || eq(&args[2], "async")));
    if !ok {
        return Err(CmdError::custom("ERR SCRIPT FLUSH only support SYNC|ASYNC option"));
    }
    with_engine(ctx, |e, _| e.flush_scripts())?;
    Ok(Reply::ok())
}

fn script_load(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let sha = with_engine(ctx, |e, _| e.create_script(&args[2]))??;
    Ok(Reply::Bulk(Bytes::from(sha)))
}

/// Reached when no script runs, or from a busy script's hook (connections
/// also answer it themselves while the script is busy).
fn script_kill(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(kill_busy_script(ctx.shared, false))
}

/// `SCRIPT KILL` (`function` false) or `FUNCTION KILL` against the running
/// script: it stops at its next hook unless it has written.
pub(crate) fn kill_busy_script(shared: &Shared, function: bool) -> Reply {
    let st = &shared.script;
    if !st.busy.load(Ordering::Acquire) {
        return Reply::error(NOTBUSY);
    }
    if st.is_function.load(Ordering::Relaxed) != function {
        return Reply::error(busy_error(shared));
    }
    if st.wrote.load(Ordering::Acquire) {
        return Reply::error(UNKILLABLE);
    }
    st.kill.store(true, Ordering::Release);
    Reply::ok()
}

/// Redis's reply to a command refused because a script is busy.
pub(crate) fn busy_error(shared: &Shared) -> &'static str {
    if shared.script.is_function.load(Ordering::Relaxed) {
        "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
    } else {
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    }
}

const UNKILLABLE: &str = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.";

fn script_debug(_ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if eq(&args[2], "no") {
        Ok(Reply::ok())
    } else if eq(&args[2], "yes") || eq(&args[2], "sync") {
        Err(CmdError::custom("ERR The Lua debugger (SCRIPT DEBUG YES/SYNC) is not supported by this server"))
    } else {
        Err(CmdError::custom("ERR Use SCRIPT DEBUG YES/SYNC/NO"))
    }
}

fn function_help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    use super::help::{BEFORE_7_2, EVERY};
    Ok(super::help::help_reply_in(
        ctx.core.profile(),
        "FUNCTION",
        &[
            (EVERY, "LOAD [REPLACE] <FUNCTION CODE>"),
            (EVERY, "    Create a new library with the given library name and code."),
            (EVERY, "DELETE <LIBRARY NAME>"),
            (EVERY, "    Delete the given library."),
            (EVERY, "LIST [LIBRARYNAME PATTERN] [WITHCODE]"),
            (EVERY, "    Return general information on all the libraries:"),
            (EVERY, "    * Library name"),
            (EVERY, "    * The engine used to run the Library"),
            (BEFORE_7_2, "    * Library description"),
            (EVERY, "    * Functions list"),
            (EVERY, "    * Library code (if WITHCODE is given)"),
            (EVERY, "    It also possible to get only function that matches a pattern using LIBRARYNAME argument."),
            (EVERY, "STATS"),
            (EVERY, "    Return information about the current function running:"),
            (EVERY, "    * Function name"),
            (EVERY, "    * Command used to run the function"),
            (EVERY, "    * Duration in MS that the function is running"),
            (EVERY, "    If no function is running, return nil"),
            (EVERY, "    In addition, returns a list of available engines."),
            (EVERY, "KILL"),
            (EVERY, "    Kill the current running function."),
            (EVERY, "FLUSH [ASYNC|SYNC]"),
            (EVERY, "    Delete all the libraries."),
            (EVERY, "    When called without the optional mode argument, the behavior is determined by the"),
            (EVERY, "    lazyfree-lazy-user-flush configuration directive. Valid modes are:"),
            (EVERY, "    * ASYNC: Asynchronously flush the libraries."),
            (EVERY, "    * SYNC: Synchronously flush the libraries."),
            (EVERY, "DUMP"),
            (EVERY, "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command"),
            (EVERY, "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]"),
            (EVERY, "    Restore the libraries represented by the given payload, it is possible to give a restore policy to"),
            (EVERY, "    control how to handle existing libraries (default APPEND):"),
            (EVERY, "    * FLUSH: delete all existing libraries."),
            (EVERY, "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort."),
            (EVERY, "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old"),
            (EVERY, "      libraries with the new libraries (notice that even on this option there is a chance of failure"),
            (EVERY, "      in case of functions name collision with another library)."),
        ],
    ))
}

fn function_load(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut replace = false;
    let mut pos = 2;
    while pos < args.len() - 1 {
        let a = &args[pos];
        pos += 1;
        if eq(a, "replace") {
            replace = true;
            continue;
        }
        return Err(CmdError::custom(format!("ERR Unknown option given: {}", String::from_utf8_lossy(a))));
    }
    if pos >= args.len() {
        return Err(CmdError::custom("ERR Function code is missing"));
    }
    let code = &args[pos];
    match with_engine(ctx, |e, _| e.function_load(code, replace))? {
        Ok(name) => {
            ctx.core.ks.sig.dirty += 1;
            Ok(Reply::Bulk(Bytes::from(name)))
        }
        Err(e) => Err(CmdError::custom(format!("ERR {e}"))),
    }
}

fn function_delete(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let name = String::from_utf8_lossy(&args[2]).into_owned();
    if with_engine(ctx, |e, _| e.function_delete(&name))? {
        ctx.core.ks.sig.dirty += 1;
        Ok(Reply::ok())
    } else {
        Err(CmdError::custom("ERR Library not found"))
    }
}

fn function_flush(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 3 {
        return Err(subcommand_syntax(args));
    }
    if args.len() == 3 && !(eq(&args[2], "sync") || eq(&args[2], "async")) {
        return Err(CmdError::custom("ERR FUNCTION FLUSH only supports SYNC|ASYNC option"));
    }
    with_engine(ctx, |e, _| e.function_flush())?;
    ctx.core.ks.sig.dirty += 1;
    Ok(Reply::ok())
}

fn function_kill(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Ok(kill_busy_script(ctx.shared, true))
}

fn function_stats(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    with_engine(ctx, |e, _| {
        let engine = Reply::Map(vec![
            (Reply::bulk_str("libraries_count"), Reply::Int(e.libraries.libs.len() as i64)),
            (Reply::bulk_str("functions_count"), Reply::Int(e.libraries.function_count() as i64)),
        ]);
        Reply::Map(vec![
            (Reply::bulk_str("running_script"), Reply::Nil),
            (Reply::bulk_str("engines"), Reply::Map(vec![(Reply::bulk_str("LUA"), engine)])),
        ])
    })
}

fn function_list(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut with_code = false;
    let mut pattern: Option<&Bytes> = None;
    let mut i = 2;
    while i < args.len() {
        let a = &args[i];
        if !with_code && eq(a, "withcode") {
            with_code = true;
            i += 1;
            continue;
        }
        if pattern.is_none() && eq(a, "libraryname") {
            if i >= args.len() - 1 {
                return Err(CmdError::custom("ERR library name argument was not given"));
            }
            pattern = Some(&args[i + 1]);
            i += 2;
            continue;
        }
        return Err(CmdError::custom(format!("ERR Unknown argument {}", String::from_utf8_lossy(a))));
    }
    with_engine(ctx, |e, _| {
        let mut out = Vec::new();
        for lib in e.libraries.libs.values() {
            if let Some(p) = pattern {
                if !crate::glob::matches(p, lib.name.as_bytes(), true) {
                    continue;
                }
            }
            let functions = lib
                .functions
                .iter()
                .map(|f| {
                    Reply::Map(vec![
                        (Reply::bulk_str("name"), Reply::bulk_str(&f.name)),
                        (Reply::bulk_str("description"), f.desc.clone().map_or(Reply::Nil, Reply::Bulk)),
                        (
                            Reply::bulk_str("flags"),
                            Reply::Set(f.flags.names().into_iter().map(Reply::status).collect()),
                        ),
                    ])
                })
                .collect();
            let mut m = vec![
                (Reply::bulk_str("library_name"), Reply::bulk_str(&lib.name)),
                (Reply::bulk_str("engine"), Reply::bulk_str("LUA")),
                (Reply::bulk_str("functions"), Reply::Array(functions)),
            ];
            if with_code {
                m.push((Reply::bulk_str("library_code"), Reply::Bulk(lib.code.clone())));
            }
            out.push(Reply::Map(m));
        }
        Reply::Array(out)
    })
}

fn function_dump(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    with_engine(ctx, |e, _| Reply::Bulk(Bytes::from(e.function_dump())))
}

fn function_restore(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    if args.len() > 4 {
        return Err(subcommand_syntax(args));
    }
    let policy = match args.get(3) {
        None => crate::script::functions::RestorePolicy::Append,
        Some(p) if eq(p, "append") => crate::script::functions::RestorePolicy::Append,
        Some(p) if eq(p, "replace") => crate::script::functions::RestorePolicy::Replace,
        Some(p) if eq(p, "flush") => crate::script::functions::RestorePolicy::Flush,
        Some(_) => {
            return Err(CmdError::custom(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            ))
        }
    };
    match with_engine(ctx, |e, _| e.function_restore(&args[2], policy))? {
        Ok(()) => {
            ctx.core.ks.sig.dirty += 1;
            Ok(Reply::ok())
        }
        Err(e) => Err(CmdError::custom(format!("ERR {e}"))),
    }
}
