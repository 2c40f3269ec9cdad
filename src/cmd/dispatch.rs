//! Dispatch: a client's command line from its connection to the handler.
//! [`process`] makes Redis's checks before a call, in Redis's order
//! (unknown command, arity, auth, `MULTI`-only refusals, ACL, injected
//! errors, memory, subscribed context, busy script, `MULTI` queuing), then
//! [`call`]s the command and serves the clients blocked on keys it made
//! ready. [`run_while_busy`] is the same door for a command a connection
//! sends while a script runs past `busy-reply-threshold`.

use bytes::Bytes;

use super::call::call;
use super::registry::{arity_ok, lookup, unknown_command_error, unknown_subcommand_error, Lookup};
use super::spec::{flags, Command, Ctx};
use super::{access, blocking, command, limits, scripting, session, table};
use crate::client::ClientState;
use crate::core::{Core, Shared};
use crate::error::CmdError;
use crate::protocol::Reply;

/// The refusal of a command a subscribed RESP2 client may not send.
fn pubsub_context_error(cmd: &Command) -> CmdError {
    CmdError::custom(format!(
        "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context",
        cmd.fullname
    ))
}

fn reject(ctx: &mut Ctx<'_>, cmd: Option<&Command>, err: CmdError) -> Reply {
    if let Some(m) = ctx.client.multi.as_mut() {
        m.dirty = true;
    }
    if ctx.core.tracking.active {
        session::clear_caching(ctx, cmd);
    }
    // Redis's execCommandAbort: a rejected EXEC (even outside MULTI)
    // discards the transaction and answers EXECABORT.
    let err = match cmd {
        Some(c) if c.has(flags::RUNS_QUEUE) => {
            session::discard_state(ctx);
            let text = err.to_string();
            let text = text.strip_prefix("ERR ").unwrap_or(&text);
            CmdError::custom(format!("EXECABORT Transaction discarded because of: {text}"))
        }
        _ => err,
    };
    if let Some(c) = cmd {
        ctx.core.stats.commands[c.id].rejected += 1;
    }
    let reply: Reply = err.into();
    if let Reply::Error(text) = &reply {
        ctx.core.stats.count_error(text);
    }
    reply
}

/// Runs `f` on one client command as the injected faults see it (the key
/// list is only built if a fault asks for it).
pub(crate) fn with_probe<R>(
    core: &Core,
    client_id: u64,
    cmd: &Command,
    argv: &[Bytes],
    f: impl FnOnce(&crate::control::faults::Probe<'_>) -> R,
) -> R {
    let name = core.clients.get(&client_id).map(|r| r.name.clone()).unwrap_or_default();
    let keys = || command::command_keys(cmd, argv);
    f(&crate::control::faults::Probe { command: &cmd.fullname, keys: &keys, client_id, client_name: &name })
}

/// Redis's answer to `DEBUG` while `enable-debug-command` (default `no`)
/// does not allow the client; before authentication, as in Redis.
const DEBUG_NOT_ALLOWED: &str =
    "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", \
you can run it from a local connection, otherwise you need to set this option in the configuration file, \
and then restart the server.";

/// Runs one command line from a client, with every check Redis makes before
/// calling a command (see the module docs for the order).
pub fn process(ctx: &mut Ctx<'_>, argv: &mut Vec<Bytes>) -> Reply {
    let cmd = match lookup(ctx.core, argv) {
        Lookup::Found(c) => c,
        Lookup::Unknown => return reject(ctx, None, unknown_command_error(argv)),
        Lookup::UnknownSub => return reject(ctx, None, unknown_subcommand_error(argv)),
    };
    if !arity_ok(cmd.spec.arity, argv.len()) {
        return reject(ctx, Some(cmd), CmdError::WrongArity(cmd.fullname.clone()));
    }
    if cmd.has(flags::PROTECTED) && !ctx.core.config.debug_command.allows(ctx.client.shared.addr.is_local()) {
        return reject(ctx, Some(cmd), CmdError::custom(DEBUG_NOT_ALLOWED));
    }
    if !ctx.client.authenticated && ctx.core.acl.auth_required() && !cmd.has(flags::NO_AUTH) {
        return reject(ctx, Some(cmd), CmdError::NoAuth);
    }
    // Valkey 8 also flags MULTI and WATCH `no_multi` (its row's Valkey flags).
    let no_multi = |c: &Command| {
        c.has(flags::NO_MULTI) || (!c.spec.flags_valkey.is_empty() && c.spec.flags_valkey.contains("no_multi"))
    };
    if ctx.client.multi.is_some() && no_multi(cmd) && (cmd.has(flags::NO_MULTI) || ctx.core.profile().is_valkey()) {
        return reject(ctx, Some(cmd), CmdError::custom("ERR Command not allowed inside a transaction"));
    }
    // The one branch the command path pays while `default` is the only,
    // unrestricted, user.
    if !ctx.core.acl.open {
        if let Err(d) = access::check(ctx, cmd, argv) {
            ctx.client.shared.last_cmd.store(cmd.id, std::sync::atomic::Ordering::Relaxed);
            let err = access::refuse(ctx, cmd, argv, d, "toplevel");
            return reject(ctx, Some(cmd), err);
        }
    }
    if ctx.core.cluster.is_some() {
        if let Some(err) = super::cluster::check(ctx, cmd, argv) {
            if cmd.has(flags::RUNS_QUEUE) {
                // A redirected EXEC answers the redirection itself (no
                // EXECABORT) and discards the transaction, as Redis does.
                session::discard_state(ctx);
                ctx.core.stats.commands[cmd.id].rejected += 1;
                return reject(ctx, None, err);
            }
            return reject(ctx, Some(cmd), err);
        }
    }
    // Test control itself is never faulted: a test can always clear what it set.
    if ctx.shared.faults.active() && !cmd.has(flags::TEST_CONTROL) {
        let faults = &ctx.shared.faults;
        if let Some(text) = with_probe(ctx.core, ctx.client.id, cmd, argv, |p| faults.injected_error(p)) {
            let text = String::from_utf8_lossy(&text).into_owned();
            // The timeline marks the faults that hit.
            let what = format!(
                "hit: error '{text}' on {} (client {})",
                String::from_utf8_lossy(&argv[0].to_ascii_lowercase()),
                ctx.client.id
            );
            if crate::control::record::on() {
                crate::control::record::fault_hit(*ctx.shared.local_addr.lock(), ctx.client.id, what.clone());
            }
            ctx.core.repl.ledger.lock().marks.push(ctx.shared.clock.now_ms(), "fault", what);
            return reject(ctx, Some(cmd), CmdError::custom(text));
        }
    }
    if let Some(err) = limits::check(ctx, cmd, argv) {
        return reject(ctx, Some(cmd), err);
    }
    if ctx.client.in_resp2_pubsub() && !cmd.has(flags::SUBSCRIBED_OK) {
        return reject(ctx, Some(cmd), pubsub_context_error(cmd));
    }
    // Only a busy script's hook runs commands nested in a call (see
    // [`run_while_busy`]).
    if ctx.core.call_depth > 0
        && ctx.shared.script.busy.load(std::sync::atomic::Ordering::Acquire)
        && !cmd.has(flags::ALLOW_BUSY)
    {
        return reject(ctx, Some(cmd), CmdError::custom(scripting::busy_error(ctx.shared)));
    }
    if ctx.client.multi.is_some() && !cmd.has(flags::NOT_QUEUED) {
        if let Some(m) = ctx.client.multi.as_mut() {
            let b = &ctx.client.shared.buffers;
            b.multi_len.store(m.queue.len() + 1, std::sync::atomic::Ordering::Relaxed);
            // Redis counts the arguments' bytes and a pointer per argument.
            let mem = argv.iter().map(|a| a.len() + std::mem::size_of::<usize>()).sum();
            b.multi_mem.fetch_add(mem, std::sync::atomic::Ordering::Relaxed);
            m.queue.push(std::mem::take(argv));
        }
        return Reply::status("QUEUED");
    }
    ctx.client.shared.last_cmd.store(cmd.id, std::sync::atomic::Ordering::Relaxed);
    let reply = call(ctx, cmd, argv);
    if ctx.core.call_depth == 0 && ctx.core.blocking.has_ready() {
        blocking::serve_ready(ctx.core, ctx.shared);
    }
    reply
}

/// Runs `argv`, sent by a connection while a script is busy, from the
/// script's interrupt hook (between Lua instructions). `SCRIPT KILL`,
/// `FUNCTION KILL` and `SHUTDOWN NOSAVE` from a client allowed to send them
/// act at once; everything else goes through [`process`], which applies
/// Redis's checks in Redis's order (unknown command, arity, NOAUTH,
/// subscribed context, then BUSY for commands not flagged `allow-busy`).
/// Commands run nested in the script's call, so they neither refresh the
/// script's frozen time nor trigger post-command work mid-script; the
/// script's own `redis.call` statistics are left untouched.
pub fn run_while_busy(core: &mut Core, shared: &Shared, client: &mut ClientState, mut argv: Vec<Bytes>) -> Reply {
    if client.authenticated && !client.in_resp2_pubsub() {
        if let Lookup::Found(cmd) = table().lookup(&argv) {
            if arity_ok(cmd.spec.arity, argv.len()) {
                match cmd.fullname.as_str() {
                    "script|kill" => return scripting::kill_busy_script(shared, false),
                    "function|kill" => return scripting::kill_busy_script(shared, true),
                    "shutdown" if argv[1..].iter().any(|a| a.eq_ignore_ascii_case(b"nosave")) => {
                        // As on Redis, the server goes away without a reply, to
                        // this client and to the one whose script was running.
                        tracing::info!("SHUTDOWN NOSAVE requested by client {} while a script runs", client.id);
                        shared.request_shutdown();
                        client.close = true;
                        client.reply_mode = crate::client::ReplyMode::SkipThis;
                        return Reply::ok();
                    }
                    _ => {}
                }
            }
        }
    }
    let nested = (core.stats.nested_calls, core.stats.nested_nanos);
    let reply = {
        let mut ctx = Ctx { core: &mut *core, client, shared };
        process(&mut ctx, &mut argv)
    };
    (core.stats.nested_calls, core.stats.nested_nanos) = nested;
    reply
}
