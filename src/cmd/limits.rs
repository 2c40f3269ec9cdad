//! The limits Redis checks before running a command (`processCommand`) and
//! before each command a script calls (`scriptCall`): `maxmemory` with its
//! evictions and OOM refusals, and `min-replicas-to-write` (a server without
//! replicas refuses writes with NOREPLICAS while it is set).
//!
//! Dispatch checks them in `processCommand`'s order (after NOAUTH, before
//! the pub/sub-context and BUSY checks): with `maxmemory` set, keys are
//! evicted until memory fits (`db::evict`), else `deny-oom` commands (and,
//! in Redis 7.0, anything queued in MULTI but the commands flagged
//! `ends_multi`; and an EXEC of deny-oom commands) get `OOM …`. `EVAL`/`FCALL` (flagged
//! `runs_script`) count with the flags their script declares
//! (`Scripting::declared_flags`).
//!
//! Nothing here runs unless one of the two is set: the default command path
//! pays one comparison.

use bytes::Bytes;

use super::{flags, table, Command, Ctx, Lookup};
use crate::db::evict;
use crate::error::CmdError;
use crate::script::ScriptFlags;

/// Redis's `shared.oomerr`.
pub(crate) const OOM: &str = "OOM command not allowed when used memory > 'maxmemory'.";
/// Redis's `shared.noreplicaserr`.
pub(crate) const NOREPLICAS: &str = "NOREPLICAS Not enough good replicas to write.";

/// `processCommand`'s memory and replica checks for a top-level command.
/// Records whether the server was over its memory limit (a script's first
/// write is refused on that state, as in Redis).
pub(crate) fn check(ctx: &mut Ctx<'_>, cmd: &Command, argv: &[Bytes]) -> Option<CmdError> {
    let cfg = &ctx.core.config;
    if cfg.maxmemory == 0 && cfg.min_replicas_to_write <= 0 && !ctx.core.repl.is_replica() {
        ctx.core.pre_command_oom = false;
        return None;
    }
    let (write, deny_oom) = effective_flags(ctx, cmd, argv);
    if ctx.core.config.maxmemory > 0 && ctx.core.call_depth == 0 {
        let out_of_memory = !perform_evictions(ctx);
        ctx.core.pre_command_oom = out_of_memory;
        // Queuing in MULTI can grow without bound: Redis 7.0 lets only EXEC,
        // DISCARD, QUIT and RESET pass while over the limit; 7.2 refuses
        // only the deny-oom commands, queued or not.
        let queuing =
            ctx.client.multi.is_some() && !cmd.has(flags::ENDS_MULTI) && !ctx.core.profile().at_least(7, 2, 0);
        if out_of_memory && (deny_oom || queuing) {
            return Some(CmdError::custom(OOM));
        }
    } else {
        ctx.core.pre_command_oom = false;
    }
    if write && ctx.core.config.min_replicas_to_write > 0 && !super::replication::enough_good_replicas(ctx.core) {
        return Some(CmdError::custom(NOREPLICAS));
    }
    if write && super::replication::read_only_here(ctx) {
        return Some(CmdError::custom(super::replication::READONLY));
    }
    None
}

/// `scriptVerifyWriteCommandAllow` (the replica part) and `scriptVerifyOOM`
/// for a command a script calls; the text is raised in the script.
pub(crate) fn script_check(ctx: &Ctx<'_>, cmd: &Command, script_wrote: bool, allow_oom: bool) -> Option<&'static str> {
    if cmd.is_write()
        && ctx.core.config.min_replicas_to_write > 0
        && !super::replication::enough_good_replicas(ctx.core)
    {
        return Some("-NOREPLICAS Not enough good replicas to write.");
    }
    if cmd.is_write() && super::replication::read_only_here(ctx) {
        return Some("-READONLY You can't write against a read only replica.");
    }
    // Only the first write: a script that already changed data cannot stop half-way.
    if !allow_oom
        && ctx.core.config.maxmemory > 0
        && !script_wrote
        && ctx.core.pre_command_oom
        && cmd.has(flags::DENYOOM)
    {
        return Some("-OOM command not allowed when used memory > 'maxmemory'.");
    }
    None
}

/// (write, deny-oom) of what is about to run: the command's own flags; for
/// `EVAL`/`FCALL` and friends those the script declares in its shebang or
/// `flags` (Redis's `scriptFlagsToCmdFlags`; scripts without a shebang keep
/// the command's); for `EXEC` those of the queued commands.
fn effective_flags(ctx: &Ctx<'_>, cmd: &Command, argv: &[Bytes]) -> (bool, bool) {
    let mut write = cmd.has(flags::WRITE);
    let mut deny_oom = cmd.has(flags::DENYOOM);
    if cmd.has(flags::RUNS_SCRIPT) {
        let declared = ctx.core.scripting.as_ref().and_then(|s| s.declared_flags(cmd.spec.name, argv));
        if let Some(f) = declared.filter(|f| !f.has(ScriptFlags::EVAL_COMPAT)) {
            write = !f.has(ScriptFlags::NO_WRITES);
            deny_oom = !f.has(ScriptFlags::NO_WRITES) && !f.has(ScriptFlags::ALLOW_OOM);
        }
    } else if cmd.has(flags::RUNS_QUEUE) {
        if let Some(m) = ctx.client.multi.as_ref() {
            for queued in &m.queue {
                if let Lookup::Found(c) = table().lookup(queued) {
                    let (w, d) = effective_flags(ctx, c, queued);
                    write |= w;
                    deny_oom |= d;
                }
            }
        }
    }
    (write, deny_oom)
}

/// Evicts keys under `maxmemory-policy` until memory is back under
/// `maxmemory` (Redis's `performEvictions`). False when it is still over
/// the limit and nothing more can be evicted.
pub(crate) fn perform_evictions(ctx: &mut Ctx<'_>) -> bool {
    let max = ctx.core.config.maxmemory;
    let (policy, samples) = (ctx.core.config.maxmemory_policy, ctx.core.config.maxmemory_samples);
    let mut rng = rand::rng();
    let now = ctx.shared.clock.now_ms();
    let mut evicted = false;
    let ok = loop {
        if crate::memory::used_memory() <= max {
            break true;
        }
        let lfu = ctx.core.ks.tuning.lfu;
        let Some((index, key)) = evict::pick(&ctx.core.ks.dbs, policy, samples, lfu, now, &mut rng) else {
            break false;
        };
        let mut db = ctx.core.ks.view(index);
        if db.remove(&key).is_some() {
            db.sig.mark_server_touch(index, &key);
            db.notify(crate::db::notify::EVICTED, "evicted", &key);
            ctx.core.stats.evicted_keys += 1;
            evicted = true;
        }
    };
    if evicted {
        // WATCH, blocked clients and keyspace events see the evictions now,
        // whether or not the command then runs.
        ctx.core.after_command();
    }
    ok
}
