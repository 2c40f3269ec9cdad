//! Cluster commands. A standalone server answers them as Redis started
//! without `cluster-enabled` does (clients probe `CLUSTER INFO` /
//! `READONLY` and switch to cluster mode only if they succeed); a node of a
//! cluster (`crate::cluster`, `Server::start_cluster`, `rlockd --cluster N`)
//! answers them as a Redis 7.0 cluster node.
//!
//! Dispatch consults [`check`] before a command with keys runs (Redis's
//! `getNodeByQuery` in `processCommand`), a script's `redis.call`
//! [`script_check`]. `RLOCKD CLUSTER …` ([`control`]) moves slots and takes
//! nodes down for tests.

use std::sync::Arc;

use bytes::Bytes;

use super::util::{eq, int};
use super::{arg, cmd, container, op, table, Arg, Command, CommandSpec, Ctx, Lookup, OpTable};
use crate::cluster::route::{route, Query, Redirect};
use crate::cluster::{describe, key_slot, Member, SLOTS};
use crate::core::{Core, Shared};
use crate::error::{CmdError, CmdResult};
use crate::protocol::Reply;

pub static COMMANDS: &[CommandSpec] = &[
    cmd("cluster", container, -2, "", 0, 0, 0, "@slow")
        .subs(CLUSTER_SUBS)
        .doc("A container for cluster commands", "3.0.0"),
    cmd("asking", asking, 1, "fast", 0, 0, 0, "@fast @connection")
        .doc("Sent by cluster clients after an -ASK redirect", "3.0.0"),
    cmd("readonly", readonly, 1, "loading stale fast", 0, 0, 0, "@fast @connection")
        .doc("Enables read queries for a connection to a cluster replica node", "3.0.0"),
    cmd("readwrite", readwrite, 1, "loading stale fast", 0, 0, 0, "@fast @connection")
        .doc("Disables read queries for a connection to a cluster replica node", "3.0.0"),
];

static CLUSTER_SUBS: &[CommandSpec] = &[
    cmd("addslotsrange", addslots, -4, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Assign new hash slots to receiving node", "7.0.0"),
    cmd("addslots", addslots, -3, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Assign new hash slots to receiving node", "3.0.0"),
    cmd("bumpepoch", bumpepoch, 2, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Advance the cluster config epoch", "3.0.0"),
    cmd("count-failure-reports", count_failure_reports, 3, "admin stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Return the number of failure reports active for a given node", "3.0.0"),
    cmd("countkeysinslot", countkeysinslot, 3, "stale", 0, 0, 0, "@slow")
        .doc("Return the number of local keys in the specified hash slot", "3.0.0"),
    cmd("delslotsrange", addslots, -4, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Set hash slots as unbound in receiving node", "7.0.0"),
    cmd("delslots", addslots, -3, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Set hash slots as unbound in receiving node", "3.0.0"),
    cmd("failover", failover, -2, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Forces a replica to perform a manual failover of its master.", "3.0.0"),
    cmd("flushslots", flushslots, 2, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Delete a node's own slots information", "3.0.0"),
    cmd("forget", forget, 3, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Remove a node from the nodes table", "3.0.0"),
    cmd("getkeysinslot", getkeysinslot, 4, "stale", 0, 0, 0, "@slow")
        .doc("Return local key names in the specified hash slot", "3.0.0"),
    cmd("help", help, 2, "loading stale", 0, 0, 0, "@slow")
        .doc("Show helpful text about the different subcommands", "5.0.0"),
    cmd("info", info, 2, "stale", 0, 0, 0, "@slow")
        .in_valkey("loading stale")
        .doc("Provides info about Redis Cluster node state", "3.0.0"),
    cmd("keyslot", keyslot, 3, "stale", 0, 0, 0, "@slow").doc("Returns the hash slot of the specified key", "3.0.0"),
    cmd("links", links, 2, "stale", 0, 0, 0, "@slow")
        .doc("Returns a list of all TCP links to and from peer nodes in cluster", "7.0.0"),
    cmd("meet", meet, -4, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Force a node cluster to handshake with another node", "3.0.0"),
    cmd("myid", myid, 2, "stale", 0, 0, 0, "@slow").in_valkey("loading stale").doc("Return the node id", "3.0.0"),
    cmd("myshardid", myshardid, 2, "stale", 0, 0, 0, "@slow")
        .in_valkey("loading stale")
        .doc("Return the node shard id", "7.2.0"),
    cmd("nodes", nodes, 2, "stale", 0, 0, 0, "@slow")
        .in_valkey("loading stale")
        .doc("Get Cluster config for the node", "3.0.0"),
    cmd("replicas", replicas, 3, "admin stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("List replica nodes of the specified master node", "5.0.0"),
    cmd("replicate", replicate, 3, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Reconfigure a node as a replica of the specified master node", "3.0.0"),
    cmd("reset", reset, -2, "admin noscript stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Reset a Redis Cluster node", "3.0.0"),
    cmd("saveconfig", saveconfig, 2, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Forces the node to save cluster state on disk", "3.0.0"),
    cmd("set-config-epoch", set_config_epoch, 3, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Set the configuration epoch in a new node", "3.0.0"),
    cmd("setslot", setslot, -4, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Bind a hash slot to a specific node", "3.0.0"),
    cmd("shards", shards, 2, "stale", 0, 0, 0, "@slow")
        .in_7_2("loading stale", "@slow")
        .doc("Get array of cluster slots to node mappings", "7.0.0"),
    cmd("slaves", replicas, 3, "admin stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("List replica nodes of the specified master node", "3.0.0"),
    cmd("slots", slots, 2, "stale", 0, 0, 0, "@slow")
        .in_7_2("loading stale", "@slow")
        .doc("Get array of Cluster slot to node mappings", "3.0.0"),
    cmd("slot-stats", slot_stats, -4, "loading stale", 0, 0, 0, "@slow")
        .doc("Return an array of slot usage statistics for slots assigned to the current node", "8.2.0")
        .valkey_since("8.0.0"),
];

const HELP: &[&str] = &[
    "ADDSLOTS <slot> [<slot> ...]",
    "    Assign slots to current node.",
    "ADDSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Assign slots which are between <start-slot> and <end-slot> to current node.",
    "BUMPEPOCH",
    "    Advance the cluster config epoch.",
    "COUNT-FAILURE-REPORTS <node-id>",
    "    Return number of failure reports for <node-id>.",
    "COUNTKEYSINSLOT <slot>",
    "    Return the number of keys in <slot>.",
    "DELSLOTS <slot> [<slot> ...]",
    "    Delete slots information from current node.",
    "DELSLOTSRANGE <start slot> <end slot> [<start slot> <end slot> ...]",
    "    Delete slots information which are between <start-slot> and <end-slot> from current node.",
    "FAILOVER [FORCE|TAKEOVER]",
    "    Promote current replica node to being a master.",
    "FORGET <node-id>",
    "    Remove a node from the cluster.",
    "GETKEYSINSLOT <slot> <count>",
    "    Return key names stored by current node in a slot.",
    "FLUSHSLOTS",
    "    Delete current node own slots information.",
    "INFO",
    "    Return information about the cluster.",
    "KEYSLOT <key>",
    "    Return the hash slot for <key>.",
    "MEET <ip> <port> [<bus-port>]",
    "    Connect nodes into a working cluster.",
    "MYID",
    "    Return the node id.",
    "NODES",
    "    Return cluster configuration seen by node. Output format:",
    "    <id> <ip:port> <flags> <master> <pings> <pongs> <epoch> <link> <slot> ...",
    "REPLICATE <node-id>",
    "    Configure current node as replica to <node-id>.",
    "RESET [HARD|SOFT]",
    "    Reset current node (default: soft).",
    "SET-CONFIG-EPOCH <epoch>",
    "    Set config epoch of current node.",
    "SETSLOT <slot> (IMPORTING <node-id>|MIGRATING <node-id>|STABLE|NODE <node-id>)",
    "    Set slot state.",
    "REPLICAS <node-id>",
    "    Return <node-id> replicas.",
    "SAVECONFIG",
    "    Force saving cluster configuration on disk.",
    "SLOTS",
    "    Return information about slots range mappings. Each range is made of:",
    "    start, end, master and replicas IP addresses, ports and ids",
    "SHARDS",
    "    Return information about slot range mappings and the nodes associated with them.",
    "LINKS",
    "    Return information about all network links between this node and its peers.",
    "    Output format is an array where each array element is a map containing attributes of a link",
];

fn disabled_error() -> CmdError {
    CmdError::custom("ERR This instance has cluster support disabled")
}

/// This node's membership, or the standalone server's refusal.
fn member(ctx: &Ctx<'_>) -> Result<Member, CmdError> {
    ctx.core.cluster.clone().ok_or_else(disabled_error)
}

fn asking(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    member(ctx)?;
    ctx.client.asking = true;
    ctx.client.asking_spent = false;
    Ok(Reply::ok())
}

/// Valkey 8 takes `READONLY`/`READWRITE` without cluster mode too (a
/// client's reads from replicas, standalone or not).
fn read_mode(ctx: &mut Ctx<'_>, readonly: bool) -> CmdResult {
    if !ctx.core.profile().is_valkey() {
        member(ctx)?;
    }
    ctx.client.readonly = readonly;
    Ok(Reply::ok())
}

fn readonly(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    read_mode(ctx, true)
}

fn readwrite(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    read_mode(ctx, false)
}

fn is_shard_pubsub(fullname: &str) -> bool {
    matches!(fullname, "spublish" | "ssubscribe" | "sunsubscribe")
}

/// A key is here (not logically expired), for a slot being moved.
fn key_here(core: &Core, key: &[u8], now: u64) -> bool {
    core.ks.dbs[0].peek(key).is_some_and(|e| e.expire().is_none_or(|at| at > now))
}

/// The redirect check of a cluster node before `cmd` runs (Redis's
/// `processCommand` → `getNodeByQuery` → `clusterRedirectClient`): `None`
/// to go on, or the refusal. A refused `EXEC` discards the transaction and
/// answers the plain error; another refused command inside `MULTI` makes
/// `EXEC` fail.
pub(crate) fn check(ctx: &mut Ctx<'_>, cmd: &Command, argv: &[Bytes]) -> Option<CmdError> {
    let name = cmd.fullname.as_str();
    // ASKING covers the next command (a whole MULTI block).
    if ctx.client.asking_spent {
        ctx.client.asking = false;
        ctx.client.asking_spent = false;
    }
    let in_multi = ctx.client.multi.is_some();
    if name != "asking" && name != "multi" && (!in_multi || name == "exec" || name == "discard") {
        ctx.client.asking_spent = true;
    }
    let exec = name == "exec";
    let (mut write, mut shard) = (cmd.is_write(), is_shard_pubsub(name));
    let keys = if exec {
        let m = ctx.client.multi.as_ref()?;
        let mut keys = Vec::new();
        for q in &m.queue {
            if let Lookup::Found(c) = table().lookup(q) {
                keys.extend(super::command::command_keys(c, q));
                write |= c.is_write();
                shard |= is_shard_pubsub(&c.fullname);
            }
        }
        keys
    } else {
        super::command::command_keys(cmd, argv)
    };
    if keys.is_empty() {
        return None;
    }
    let member = ctx.core.cluster.clone()?;
    let asking = ctx.client.asking || cmd.has(super::flags::ASKING);
    let err =
        redirect(ctx.core, &member, &keys, write, shard, name == "migrate", asking, ctx.client.readonly, ctx.shared)?;
    Some(CmdError::custom(err))
}

/// The decision for `keys`, as an error text (`None`: serve here).
#[allow(clippy::too_many_arguments)]
fn redirect(
    core: &Core,
    member: &Member,
    keys: &[Bytes],
    write: bool,
    shard_pubsub: bool,
    migrate: bool,
    asking: bool,
    readonly: bool,
    shared: &Shared,
) -> Option<String> {
    let now = shared.clock.now_ms();
    let q = Query {
        keys,
        shard_pubsub,
        write,
        migrate,
        asking,
        readonly,
        full_coverage: core.config.cluster_require_full_coverage,
        reads_when_down: core.config.cluster_allow_reads_when_down,
        pubsubshard_when_down: core.config.cluster_allow_pubsubshard_when_down,
    };
    let state = member.view();
    match route(&state, member.me, &q, |k| key_here(core, k, now)) {
        Ok(()) => None,
        Err(r) => Some(r.message(&state)),
    }
}

/// The cluster check of a script's `redis.call` (Redis's
/// `scriptVerifyClusterState`): the error text, or `None` to run it. The
/// caller's `ASKING` and `READONLY` count.
pub(crate) fn script_check(ctx: &Ctx<'_>, cmd: &Command, argv: &[Bytes]) -> Option<&'static str> {
    let member = ctx.core.cluster.as_ref()?;
    let keys = super::command::command_keys(cmd, argv);
    if keys.is_empty() {
        return None;
    }
    let core = &*ctx.core;
    let now = ctx.shared.clock.now_ms();
    let q = Query {
        keys: &keys,
        shard_pubsub: is_shard_pubsub(&cmd.fullname),
        write: cmd.is_write(),
        migrate: cmd.fullname == "migrate",
        asking: ctx.client.asking || cmd.has(super::flags::ASKING),
        readonly: ctx.client.readonly,
        full_coverage: core.config.cluster_require_full_coverage,
        reads_when_down: core.config.cluster_allow_reads_when_down,
        pubsubshard_when_down: core.config.cluster_allow_pubsubshard_when_down,
    };
    let state = member.view();
    route(&state, member.me, &q, |k| key_here(core, k, now)).err().map(|r: Redirect| r.script_message())
}

/// `PUBLISH` reaches the subscribers of every node, as the cluster bus
/// carries it (called after the local delivery).
pub(crate) fn propagate_publish(ctx: &Ctx<'_>, channel: &Bytes, message: &Bytes) {
    if let Some(m) = &ctx.core.cluster {
        m.topo.broadcast(m.me, &crate::cluster::BusMessage::Publish(channel.clone(), message.clone()));
    }
}

/// `SELECT` of a database other than 0 on a cluster node.
pub(crate) fn select_refused(ctx: &Ctx<'_>, db: i64) -> Option<CmdError> {
    (ctx.core.cluster.is_some() && db != 0).then(|| CmdError::custom("ERR SELECT is not allowed in cluster mode"))
}

fn help(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    member(ctx)?;
    Ok(super::help::help_reply(ctx.core.profile(), "CLUSTER", HELP))
}

fn info(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let full = ctx.core.config.cluster_require_full_coverage;
    let state = m.view();
    Ok(describe::info(&state, m.me, full))
}

fn nodes(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let now = ctx.shared.clock.now_ms();
    let state = m.view();
    Ok(describe::nodes(&state, m.me, now))
}

fn slots(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let offsets = offsets(ctx, &m);
    let state = m.view();
    Ok(describe::slots(&state, &offsets))
}

/// Each node's replication offset (what gossip tells a Redis node): this
/// one's, the others' when their state is free now, else as last seen.
fn offsets(ctx: &Ctx<'_>, m: &Member) -> Vec<u64> {
    let mut seen = m.topo.offsets.lock();
    for (n, o) in seen.iter_mut().enumerate() {
        if n == m.me {
            *o = ctx.core.repl.offset;
        } else if let Some(now) = peer(m, n).ok().and_then(|p| p.core.try_lock().ok().map(|c| c.repl.offset)) {
            *o = now;
        }
    }
    seen.clone()
}

fn shards(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let offsets = offsets(ctx, &m);
    let state = m.view();
    Ok(describe::shards(&state, &offsets))
}

fn links(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let state = m.view();
    Ok(describe::links(&state, m.me, m.topo.created_ms))
}

fn myid(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let state = m.view();
    Ok(Reply::bulk_str(&state.nodes[m.me].id))
}

fn myshardid(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let state = m.view();
    Ok(Reply::bulk_str(&state.nodes[m.me].shard_id))
}

/// `CLUSTER SLOT-STATS SLOTSRANGE start end | ORDERBY metric [LIMIT n]
/// [ASC|DESC]` (Redis 8.2): each slot of this node's shard with its
/// `key-count`, by slot or ordered by the count (ties by slot). The
/// CPU and network figures come with `cluster-slot-stats-enabled`, a
/// parameter rlockd does not have: only `key-count` is served.
fn slot_stats(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let slot = |a: &Bytes| {
        crate::num::parse_i64_strict(a)
            .filter(|s| (0..SLOTS as i64).contains(s))
            .map(|s| s as u16)
            .ok_or_else(|| CmdError::custom("ERR Invalid or out of range slot"))
    };
    let mine: Vec<bool> = {
        let state = m.view();
        let shard = state.nodes[m.me].primary.unwrap_or(m.me);
        (0..SLOTS as u16).map(|s| state.owner(s) == Some(shard)).collect()
    };
    let counts = || {
        let mut n = vec![0u64; SLOTS];
        for k in ctx.core.ks.dbs[0].keys() {
            n[usize::from(key_slot(k.as_bytes()))] += 1;
        }
        n
    };
    let row = |slot: usize, keys: u64| {
        Reply::Array(vec![
            Reply::Int(slot as i64),
            Reply::Map(vec![(Reply::bulk_str("key-count"), Reply::Int(keys as i64))]),
        ])
    };
    if args.len() == 5 && eq(&args[2], "slotsrange") {
        let (first, last) = (slot(&args[3])?, slot(&args[4])?);
        if first > last {
            return Err(CmdError::custom(format!(
                "ERR Start slot number {first} is greater than end slot number {last}"
            )));
        }
        let n = counts();
        let rows = (usize::from(first)..=usize::from(last)).filter(|&s| mine[s]).map(|s| row(s, n[s]));
        return Ok(Reply::Array(rows.collect()));
    }
    if !eq(&args[2], "orderby") {
        return Err(CmdError::custom(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLUSTER HELP.",
            String::from_utf8_lossy(&args[1])
        )));
    }
    if !eq(&args[3], "key-count") {
        return Err(CmdError::custom("ERR Unrecognized sort metric for ORDERBY."));
    }
    let (mut limit, mut desc, mut limits, mut orders) = (SLOTS, true, 0, 0);
    let mut i = 4;
    while i < args.len() {
        if eq(&args[i], "limit") && i + 1 < args.len() {
            limit = crate::num::parse_i64_strict(&args[i + 1]).filter(|n| (1..=SLOTS as i64).contains(n)).ok_or_else(
                || CmdError::custom("ERR Limit has to lie in between 1 and 16384 (maximum number of slots)."),
            )? as usize;
            limits += 1;
            i += 1;
        } else if eq(&args[i], "asc") || eq(&args[i], "desc") {
            desc = eq(&args[i], "desc");
            orders += 1;
        } else {
            return Err(CmdError::Syntax);
        }
        if limits > 1 || orders > 1 {
            return Err(CmdError::custom("ERR Multiple filters of the same type are disallowed."));
        }
        i += 1;
    }
    let n = counts();
    let mut slots: Vec<usize> = (0..SLOTS).filter(|&s| mine[s]).collect();
    slots.sort_by(|&a, &b| if desc { n[b].cmp(&n[a]) } else { n[a].cmp(&n[b]) }.then(a.cmp(&b)));
    Ok(Reply::Array(slots.into_iter().take(limit).map(|s| row(s, n[s])).collect()))
}

fn keyslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    member(ctx)?;
    Ok(Reply::Int(i64::from(key_slot(&args[2]))))
}

/// The keys of db 0 in `slot`, newest first (Redis keeps each slot's keys
/// in a list it adds to at the head), at most `limit`.
fn keys_in_slot(core: &Core, slot: u16, limit: usize) -> Vec<Bytes> {
    let db = &core.ks.dbs[0];
    (0..db.len())
        .rev()
        .filter_map(|i| db.get_index(i))
        .filter(|(k, _)| key_slot(k.as_bytes()) == slot)
        .take(limit)
        .map(|(k, _)| k.to_bytes())
        .collect()
}

fn countkeysinslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    member(ctx)?;
    let slot = int(&args[2])?;
    if !(0..SLOTS as i64).contains(&slot) {
        return Err(CmdError::custom("ERR Invalid slot"));
    }
    let n = ctx.core.ks.dbs[0].keys().filter(|k| key_slot(k.as_bytes()) == slot as u16).count();
    Ok(Reply::Int(n as i64))
}

fn getkeysinslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    member(ctx)?;
    let slot = int(&args[2])?;
    let max = int(&args[3])?;
    if !(0..SLOTS as i64).contains(&slot) || max < 0 {
        return Err(CmdError::custom("ERR Invalid slot or number of keys"));
    }
    let keys = keys_in_slot(ctx.core, slot as u16, usize::try_from(max).unwrap_or(usize::MAX));
    Ok(Reply::Array(keys.into_iter().map(Reply::Bulk).collect()))
}

/// Redis's `getSlotOrReply`.
fn slot_arg(a: &[u8]) -> Result<u16, CmdError> {
    match crate::num::parse_i64_strict(a) {
        Some(s) if (0..SLOTS as i64).contains(&s) => Ok(s as u16),
        _ => Err(CmdError::custom("ERR Invalid or out of range slot")),
    }
}

/// A node named by its id (any letter case), as `clusterLookupNode`.
fn lookup(m: &Member, id: &[u8]) -> Option<usize> {
    m.view().find(id)
}

fn replicas(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let Some(n) = lookup(&m, &args[2]) else {
        return Err(CmdError::custom(format!("ERR Unknown node {}", String::from_utf8_lossy(&args[2]))));
    };
    let state = m.view();
    if !state.nodes[n].is_primary() {
        return Err(CmdError::custom("ERR The specified node is not a master"));
    }
    Ok(describe::replicas(&state, m.me, n, ctx.shared.clock.now_ms()))
}

fn count_failure_reports(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let Some(n) = lookup(&m, &args[2]) else {
        return Err(CmdError::custom(format!("ERR Unknown node {}", String::from_utf8_lossy(&args[2]))));
    };
    // Every other node that is up reports a node that is down.
    let state = m.view();
    let reports = if state.nodes[n].failed {
        state.nodes.iter().enumerate().filter(|(i, o)| *i != n && *i != m.me && !o.failed && o.is_primary()).count()
    } else {
        0
    };
    Ok(Reply::Int(reports as i64))
}

fn saveconfig(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    member(ctx)?;
    Ok(Reply::ok())
}

fn bumpepoch(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let mut state = m.view_mut();
    let bumped = state.bump_epoch(m.me);
    let epoch = state.nodes[m.me].config_epoch;
    Ok(Reply::Status(Bytes::from(format!("{} {epoch}", if bumped { "BUMPED" } else { "STILL" }))))
}

fn set_config_epoch(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let epoch = int(&args[2])?;
    if epoch < 0 {
        return Err(CmdError::custom(format!("ERR Invalid config epoch specified: {epoch}")));
    }
    if m.topo.node_count() > 1 {
        return Err(CmdError::custom(
            "ERR The user can assign a config epoch only when the node does not know any other node.",
        ));
    }
    Err(CmdError::custom("ERR Node config epoch is already non-zero"))
}

/// `ADDSLOTS`, `DELSLOTS`, `ADDSLOTSRANGE`, `DELSLOTSRANGE` (Redis's
/// checks: every argument a slot, none busy (or unassigned, to delete),
/// none twice; then all at once).
fn addslots(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let sub = String::from_utf8_lossy(&args[1]).to_ascii_lowercase();
    let del = sub.starts_with("del");
    let mut wanted: Vec<(u16, u16)> = Vec::new();
    if sub.ends_with("range") {
        if args.len() % 2 == 1 {
            return Err(CmdError::custom(format!("ERR wrong number of arguments for 'cluster|{sub}' command")));
        }
        for pair in args[2..].chunks(2) {
            let (a, b) = (slot_arg(&pair[0])?, slot_arg(&pair[1])?);
            if a > b {
                return Err(CmdError::custom(format!("ERR start slot number {a} is greater than end slot number {b}")));
            }
            wanted.push((a, b));
        }
    } else {
        for a in &args[2..] {
            slot_arg(a)?;
        }
        wanted = args[2..].iter().map(|a| slot_arg(a).map(|s| (s, s))).collect::<Result<_, _>>()?;
    }
    let mut state = m.view_mut();
    let mut seen = vec![false; SLOTS];
    for &(a, b) in &wanted {
        for s in a..=b {
            if del && state.owner(s).is_none() {
                return Err(CmdError::custom(format!("ERR Slot {s} is already unassigned")));
            } else if !del && state.owner(s).is_some() {
                return Err(CmdError::custom(format!("ERR Slot {s} is already busy")));
            }
            if std::mem::replace(&mut seen[usize::from(s)], true) {
                return Err(CmdError::custom(format!("ERR Slot {s} specified multiple times")));
            }
        }
    }
    for (s, _) in seen.iter().enumerate().filter(|(_, &w)| w) {
        let s = s as u16;
        state.nodes[m.me].importing.remove(&s);
        state.set_owner(s, if del { None } else { Some(m.me) });
    }
    Ok(Reply::ok())
}

fn flushslots(ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    if !ctx.core.ks.dbs[0].is_empty() {
        return Err(CmdError::custom("ERR DB must be empty to perform CLUSTER FLUSHSLOTS."));
    }
    let mut state = m.view_mut();
    for s in 0..SLOTS as u16 {
        if state.owner(s) == Some(m.me) {
            state.set_owner(s, None);
        }
    }
    Ok(Reply::ok())
}

fn setslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    if !m.view().nodes[m.me].is_primary() {
        return Err(CmdError::custom("ERR Please use SETSLOT only with masters."));
    }
    let slot = slot_arg(&args[2])?;
    let action = &args[3];
    let n = args.len();
    let node_arg = |unknown: &str| -> Result<usize, CmdError> {
        let Some(t) = lookup(&m, &args[4]) else {
            return Err(CmdError::custom(format!("ERR {unknown} {}", String::from_utf8_lossy(&args[4]))));
        };
        if !m.view().nodes[t].is_primary() {
            return Err(CmdError::custom("ERR Target node is not a master"));
        }
        Ok(t)
    };
    if eq(action, "migrating") && n == 5 {
        if m.view().owner(slot) != Some(m.me) {
            return Err(CmdError::custom(format!("ERR I'm not the owner of hash slot {slot}")));
        }
        let t = node_arg("I don't know about node")?;
        m.view_mut().nodes[m.me].migrating.insert(slot, t);
    } else if eq(action, "importing") && n == 5 {
        if m.view().owner(slot) == Some(m.me) {
            return Err(CmdError::custom(format!("ERR I'm already the owner of hash slot {slot}")));
        }
        let t = node_arg("I don't know about node")?;
        m.view_mut().nodes[m.me].importing.insert(slot, t);
    } else if eq(action, "stable") && n == 4 {
        let mut state = m.view_mut();
        state.nodes[m.me].importing.remove(&slot);
        state.nodes[m.me].migrating.remove(&slot);
    } else if eq(action, "node") && n == 5 {
        let t = node_arg("Unknown node")?;
        let here = ctx.core.ks.dbs[0].keys().filter(|k| key_slot(k.as_bytes()) == slot).count();
        if m.view().owner(slot) == Some(m.me) && t != m.me && here != 0 {
            return Err(CmdError::custom(format!(
                "ERR Can't assign hashslot {slot} to a different node while I still hold keys for this hash slot."
            )));
        }
        let me = m.me;
        let set = move |state: &mut crate::cluster::State| {
            if here == 0 {
                state.nodes[me].migrating.remove(&slot);
            }
            state.set_owner(slot, Some(t));
            if t == me && state.nodes[me].importing.remove(&slot).is_some() {
                state.bump_epoch(me);
            }
        };
        if t == m.me && m.view().nodes[m.me].importing.contains_key(&slot) {
            // The slot imported: a new epoch, and the others know at once.
            m.topo.change_and_spread(m.me, set);
        } else {
            set(&mut m.view_mut());
        }
    } else {
        return Err(CmdError::custom("ERR Invalid CLUSTER SETSLOT action or number of arguments. Try CLUSTER HELP"));
    }
    Ok(Reply::ok())
}

fn meet(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    if args.len() > 5 {
        return Err(CmdError::Syntax);
    }
    let port = int(&args[3]).ok().filter(|p| (0..=65535).contains(p));
    let ip = String::from_utf8_lossy(&args[2]).into_owned();
    let Some(port) = port.filter(|_| ip.parse::<std::net::IpAddr>().is_ok()) else {
        return Err(CmdError::custom(format!(
            "ERR Invalid node address specified: {ip}:{}",
            String::from_utf8_lossy(&args[3])
        )));
    };
    let state = m.view();
    if state.nodes.iter().any(|n| n.ip == ip && i64::from(n.port) == port) {
        return Ok(Reply::ok());
    }
    Err(CmdError::custom(format!(
        "ERR {ip}:{port} is not a node of this cluster: the nodes of an rlockd cluster are the ones it started with"
    )))
}

fn forget(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let Some(n) = lookup(&m, &args[2]) else {
        return Err(CmdError::custom(format!("ERR Unknown node {}", String::from_utf8_lossy(&args[2]))));
    };
    if n == m.me {
        return Err(CmdError::custom("ERR I tried hard but I can't forget myself..."));
    }
    if m.view().nodes[m.me].primary == Some(n) {
        return Err(CmdError::custom("ERR Can't forget my master!"));
    }
    Err(CmdError::custom(
        "ERR the nodes of an rlockd cluster cannot be forgotten; take one down with RLOCKD CLUSTER DOWN",
    ))
}

fn replicate(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let Some(n) = lookup(&m, &args[2]) else {
        return Err(CmdError::custom(format!("ERR Unknown node {}", String::from_utf8_lossy(&args[2]))));
    };
    if n == m.me {
        return Err(CmdError::custom("ERR Can't replicate myself"));
    }
    if !m.view().nodes[n].is_primary() {
        return Err(CmdError::custom("ERR I can only replicate a master, not a replica."));
    }
    if m.view().nodes[m.me].primary == Some(n) {
        return Ok(Reply::ok());
    }
    Err(CmdError::custom(
        "ERR the roles of an rlockd cluster's nodes change only by failover (CLUSTER FAILOVER on a replica)",
    ))
}

fn failover(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    if args.len() > 3 {
        return Err(CmdError::custom(format!(
            "ERR unknown subcommand or wrong number of arguments for '{}'. Try CLUSTER HELP.",
            String::from_utf8_lossy(&args[1])
        )));
    }
    if args.len() == 3 && !eq(&args[2], "force") && !eq(&args[2], "takeover") {
        return Err(CmdError::Syntax);
    }
    let (force, takeover) = (args.len() == 3 && eq(&args[2], "force"), args.len() == 3 && eq(&args[2], "takeover"));
    {
        let state = m.view();
        let Some(p) = state.nodes[m.me].primary else {
            return Err(CmdError::custom("ERR You should send CLUSTER FAILOVER to a replica"));
        };
        if !force && !takeover && state.nodes[p].failed {
            return Err(CmdError::custom("ERR Master is down or failed, please use CLUSTER FAILOVER FORCE"));
        }
    }
    let control = m.topo.control().ok_or_else(|| CmdError::custom("ERR the cluster is stopping"))?;
    // As in Redis, the reply comes first and the failover follows: without
    // an option once this replica has all its primary wrote (or never,
    // after 5 s), with FORCE or TAKEOVER with what it has now.
    let me = m.me;
    control.failover(
        me,
        !force && !takeover,
        Box::new(move |r| {
            if let Err(e) = r {
                tracing::warn!("CLUSTER FAILOVER of node {me}: {e}");
            }
        }),
    );
    Ok(Reply::ok())
}

fn reset(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    member(ctx)?;
    if args.len() == 3 && !eq(&args[2], "hard") && !eq(&args[2], "soft") || args.len() > 3 {
        return Err(CmdError::Syntax);
    }
    if !ctx.core.ks.dbs[0].is_empty() {
        return Err(CmdError::custom("ERR CLUSTER RESET can't be called with master nodes containing keys"));
    }
    Err(CmdError::custom("ERR an rlockd cluster node cannot leave its cluster"))
}

/// Node `n`'s running server state.
pub(crate) fn peer(m: &Member, n: usize) -> Result<Arc<Shared>, CmdError> {
    m.topo
        .peer(n)
        .and_then(|p| p.downcast::<Shared>().ok())
        .ok_or_else(|| CmdError::custom(format!("ERR node {n} is down")))
}

/// Moves up to `max` keys of `slot` from `src` to `dst` (their values,
/// deadlines and encodings); how many moved.
fn move_between(src: &mut Core, dst: &mut Core, slot: u16, max: usize) -> usize {
    let keys = keys_in_slot(src, slot, max);
    let mut moved = 0;
    for key in &keys {
        let Some((_, entry)) = src.ks.view(0).take_entry(key) else { continue };
        dst.ks.view(0).put_entry(key, entry);
        moved += 1;
    }
    moved
}

/// Moves up to `max` keys of `slot` from node `from` to node `to`, in this
/// process, now: inside `MULTI` or a script, where the client cannot wait.
/// Another node's state is taken only if it is free at once (its event
/// loop never holds it across an await, so it rarely is not).
fn move_keys_now(
    ctx: &mut Ctx<'_>,
    m: &Member,
    slot: u16,
    from: usize,
    to: usize,
    max: usize,
) -> Result<usize, CmdError> {
    if from == to {
        return Ok(0);
    }
    let busy = || CmdError::custom("ERR a node is busy: try again");
    let (src_shared, dst_shared) = (peer(m, from)?, peer(m, to)?);
    let mut src_guard = if from == m.me { None } else { Some(src_shared.core.try_lock().map_err(|_| busy())?) };
    let mut dst_guard = if to == m.me { None } else { Some(dst_shared.core.try_lock().map_err(|_| busy())?) };
    let (src, dst): (&mut Core, &mut Core) = match (src_guard.as_deref_mut(), dst_guard.as_deref_mut()) {
        (Some(s), Some(d)) => (s, d),
        (Some(s), None) => (s, &mut *ctx.core),
        (None, Some(d)) => (&mut *ctx.core, d),
        (None, None) => return Ok(0),
    };
    src.ks.now = src_shared.clock.now_ms();
    dst.ks.now = dst_shared.clock.now_ms();
    let moved = move_between(src, dst, slot, max);
    for g in [src_guard.as_deref_mut(), dst_guard.as_deref_mut()].into_iter().flatten() {
        g.after_command();
    }
    Ok(moved)
}

/// Moves up to `max` keys of `slot` from node `src` to node `dst` (`from`
/// and `to` their indexes), awaiting each node's state in index order
/// (every task that takes two does, so none waits for the other): run
/// after the handler, off the event loop's command, so no node spins
/// waiting for another.
async fn move_keys_later(src: &Arc<Shared>, dst: &Arc<Shared>, from: usize, to: usize, slot: u16, max: usize) -> usize {
    let (mut s, mut d) = if from < to {
        let s = src.core.lock().await;
        (s, dst.core.lock().await)
    } else {
        let d = dst.core.lock().await;
        (src.core.lock().await, d)
    };
    s.ks.now = src.clock.now_ms();
    d.ks.now = dst.clock.now_ms();
    let moved = move_between(&mut s, &mut d, slot, max);
    s.after_command();
    d.after_command();
    moved
}

/// Runs `f` on the state of each primary of the cluster that is up, this
/// node's own included, in node order, then `finish` on this node's state
/// with what it returned: test control's one view of the cluster's locks (a
/// replica's locks are copies of its primary's). When the client may wait,
/// a task of this event loop takes each node's state in turn (never two at
/// once) and answers it; inside `MULTI` or a script, another node's state
/// is taken only if it is free at once. `None` on a standalone server.
pub(crate) fn each_primary<R: Send + 'static>(
    ctx: &mut Ctx<'_>,
    f: impl Fn(&mut Core, u64) -> R + Send + 'static,
    finish: impl FnOnce(&mut Core, Vec<R>) -> CmdResult + Send + 'static,
) -> Option<CmdResult> {
    let m = ctx.core.cluster.clone()?;
    let primaries = m.topo.primaries_up();
    each_of(ctx, m, primaries, f, finish)
}

/// [`each_primary`] over every node of the cluster, replicas and nodes
/// down included (`RLOCKD HISTORY`: what each made as a primary).
pub(crate) fn each_node<R: Send + 'static>(
    ctx: &mut Ctx<'_>,
    f: impl Fn(&mut Core, u64) -> R + Send + 'static,
    finish: impl FnOnce(&mut Core, Vec<R>) -> CmdResult + Send + 'static,
) -> Option<CmdResult> {
    let m = ctx.core.cluster.clone()?;
    let all = (0..m.topo.node_count()).collect();
    each_of(ctx, m, all, f, finish)
}

fn each_of<R: Send + 'static>(
    ctx: &mut Ctx<'_>,
    m: Member,
    primaries: Vec<usize>,
    f: impl Fn(&mut Core, u64) -> R + Send + 'static,
    finish: impl FnOnce(&mut Core, Vec<R>) -> CmdResult + Send + 'static,
) -> Option<CmdResult> {
    if ctx.client.may_block() && tokio::runtime::Handle::try_current().is_ok() {
        let nodes: Vec<Arc<Shared>> = primaries.iter().filter_map(|&n| peer(&m, n).ok()).collect();
        let caller = match peer(&m, m.me) {
            Ok(c) => c,
            Err(e) => return Some(Err(e)),
        };
        let waiter = super::blocking::block_until_answered(ctx, "ERR the cluster's nodes did not answer");
        tokio::spawn(async move {
            let mut out = Vec::with_capacity(nodes.len());
            for shared in &nodes {
                let mut core = shared.core.lock().await;
                out.push(f(&mut core, shared.clock.now_ms()));
            }
            let mut core = caller.core.lock().await;
            let reply = finish(&mut core, out).unwrap_or_else(Reply::from);
            core.blocking.serve(waiter, reply);
        });
        return Some(Ok(Reply::Nil));
    }
    let mut out = Vec::with_capacity(primaries.len());
    for n in primaries {
        if n == m.me {
            out.push(f(ctx.core, ctx.shared.clock.now_ms()));
            continue;
        }
        let Ok(shared) = peer(&m, n) else { continue };
        let Ok(mut core) = shared.core.try_lock() else {
            return Some(Err(CmdError::custom("ERR a node is busy: try again")));
        };
        out.push(f(&mut core, shared.clock.now_ms()));
    }
    Some(finish(ctx.core, out))
}

/// A node named by index (0-based, in start order), id or announced port.
fn node_by_name(m: &Member, a: &[u8]) -> Result<usize, CmdError> {
    if let Some(i) = crate::num::parse_i64_strict(a) {
        if (0..m.topo.node_count() as i64).contains(&i) {
            return Ok(i as usize);
        }
        if let Some(n) = m.view().nodes.iter().position(|n| i64::from(n.port) == i) {
            return Ok(n);
        }
    }
    lookup(m, a).ok_or_else(|| CmdError::custom(format!("ERR Unknown node {}", String::from_utf8_lossy(a))))
}

/// `RLOCKD CLUSTER …`: slot moves and node outages for tests (a row of
/// `cmd/control.rs`'s tree).
pub(crate) static CONTROL: OpTable = OpTable {
    args: &[],
    help: &[],
    ops: &[
        op(
            "moveslot",
            &[arg("slot", "integer"), arg("node", "node"), arg("n", "integer").opt().token("KEYS")],
            moveslot,
            &[
                "CLUSTER MOVESLOT <slot> <node> [KEYS <n>]",
                "    Move a slot to <node> (its id, or its index from 0 in start order) with its keys; with KEYS,",
                "    move only <n> more of its keys and leave it MIGRATING/IMPORTING (clients get ASK); returns",
                "    how many keys moved.",
            ],
        ),
        op(
            "down",
            NODE,
            |ctx, a| set_down(ctx, a, true),
            &[
                "CLUSTER DOWN <node> | UP <node>",
                "    Stop a node (its clients are cut, its port refuses; the others answer CLUSTERDOWN) / start it",
                "    again on its port with its keys. A primary with a replica is replaced by it after",
                "    cluster-node-timeout; it comes back as its replica.",
            ],
        ),
        op("up", NODE, |ctx, a| set_down(ctx, a, false), &[]),
        op(
            "gossip",
            &[arg("action", "choice").choice(&["hold", "step", "run"])],
            gossip,
            &[
                "CLUSTER GOSSIP HOLD | STEP | RUN",
                "    Each node has its own view, which the others learn by gossip (every 100 ms while they differ).",
                "    HOLD: nothing spreads (a promotion or a slot imported included); STEP: one round, every node",
                "    that is up pinging every other, held or not (returns how many views changed); RUN: rounds",
                "    until the views agree, then on the timer again.",
            ],
        ),
        op(
            "partition",
            NODE,
            partition,
            &[
                "CLUSTER PARTITION <node> [<node> ...] | HEAL",
                "    Split the cluster bus: the nodes named (ids, indexes from 0 or ports) on one side, the others on",
                "    the other; no gossip, PUBLISH or replication crosses. After cluster-node-timeout on its own",
                "    clock (RLOCKD CLOCK) a node marks those it cannot reach fail?; a minority side refuses keys",
                "    (CLUSTERDOWN), the majority side marks a cut-off primary fail and promotes its replica there.",
                "    Replies the partition's sides. HEAL: one bus again; a replaced primary becomes a replica of its",
                "    replacement and loses what it took meanwhile (replies those nodes).",
            ],
        )
        .counts_own(),
        op(
            "failover",
            NODE,
            control_failover,
            &[
                "CLUSTER FAILOVER <node>",
                "    Promote a replica (or a primary's first replica) at once with what it has received: it takes",
                "    the slots, the primary becomes its replica. Replies once done.",
            ],
        ),
    ],
    fields: &[],
    unknown: |a| {
        CmdError::custom(format!(
            "ERR unknown subcommand or wrong number of arguments for 'cluster {}'. Try RLOCKD HELP.",
            String::from_utf8_lossy(&a[2])
        ))
    },
    check: Some(|ctx| member(ctx).map(|_| ())),
    default: None,
};

/// The argument of an operation on one node.
const NODE: &[Arg] = &[arg("node", "node")];

/// `RLOCKD CLUSTER MOVESLOT <slot> <node> [KEYS <n>]`.
fn moveslot(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let args = &args[2..];
    let slot = slot_arg(&args[1])?;
    let to = node_by_name(&m, &args[2])?;
    let limit = if args.len() == 5 {
        if !eq(&args[3], "keys") {
            return Err(CmdError::Syntax);
        }
        Some(usize::try_from(int(&args[4])?).map_err(|_| CmdError::custom("ERR KEYS must be >= 0"))?)
    } else {
        None
    };
    let Some(from) = m.topo.owner(slot) else {
        return Err(CmdError::custom(format!("ERR Slot {slot} is not served by any node")));
    };
    if from == to {
        return Ok(Reply::Int(0));
    }
    if m.topo.primary_of(to).is_some() {
        return Err(CmdError::custom("ERR Target node is not a master"));
    }
    let what = format!("slot {slot} moves from node {from} to node {to}");
    ctx.core.repl.ledger.lock().marks.push(ctx.shared.clock.now_ms(), "slot", what);
    // As `redis-cli --cluster reshard`: SETSLOT MIGRATING on the source,
    // IMPORTING on the destination, each in its own view.
    m.topo.view_mut(from).nodes[from].migrating.insert(slot, to);
    m.topo.view_mut(to).nodes[to].importing.insert(slot, from);
    let max = limit.unwrap_or(usize::MAX);
    // The slot is handed over once all its keys moved: SETSLOT NODE on the
    // source, then on the destination (a new epoch, told to every node).
    let hand_over = move |m: &Member| {
        if limit.is_none() {
            {
                let mut state = m.topo.view_mut(from);
                state.nodes[from].migrating.remove(&slot);
                state.set_owner(slot, Some(to));
            }
            m.topo.change_and_spread(to, |state| {
                state.nodes[to].importing.remove(&slot);
                state.set_owner(slot, Some(to));
                state.bump_epoch(to);
            });
        }
    };
    if ctx.client.may_block() && tokio::runtime::Handle::try_current().is_ok() {
        // The keys move in a task of this event loop, which waits for
        // the other nodes' state; the client waits for the count.
        let (src, dst, caller) = (peer(&m, from)?, peer(&m, to)?, peer(&m, m.me)?);
        let waiter = super::blocking::block_until_answered(ctx, "ERR the slot move did not finish");
        tokio::spawn(async move {
            let moved = move_keys_later(&src, &dst, from, to, slot, max).await;
            hand_over(&m);
            caller.core.lock().await.blocking.serve(waiter, Reply::Int(moved as i64));
        });
        return Ok(Reply::Nil);
    }
    let moved = move_keys_now(ctx, &m, slot, from, to, max)?;
    hand_over(&m);
    Ok(Reply::Int(moved as i64))
}

/// `RLOCKD CLUSTER GOSSIP HOLD | STEP | RUN`.
fn gossip(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let a = &args[3];
    if eq(a, "hold") {
        m.topo.hold();
        Ok(Reply::ok())
    } else if eq(a, "step") {
        Ok(Reply::Int(m.topo.step() as i64))
    } else if eq(a, "run") {
        m.topo.run();
        Ok(Reply::ok())
    } else {
        Err(CmdError::Syntax)
    }
}

/// `RLOCKD CLUSTER FAILOVER <node>`.
fn control_failover(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let n = node_by_name(&m, &args[3])?;
    let replica = if m.topo.primary_of(n).is_none() {
        m.topo
            .replicas_of(n)
            .into_iter()
            .find(|&r| !m.topo.is_down(r))
            .ok_or_else(|| CmdError::custom(format!("ERR node {n} has no replica that is up")))?
    } else if m.topo.is_down(n) {
        return Err(CmdError::custom(format!("ERR node {n} is down")));
    } else {
        n
    };
    let control = m.topo.control().ok_or_else(|| CmdError::custom("ERR the cluster is stopping"))?;
    if !ctx.client.may_block() {
        control.failover(replica, false, Box::new(|_| {}));
        return Ok(Reply::ok());
    }
    // The reply waits for the promotion (the caller's connection is
    // blocked; the promotion runs on a thread of its own).
    let me = peer(&m, m.me)?;
    let waiter = super::blocking::block_until_answered(ctx, "ERR the failover did not finish");
    control.failover(
        replica,
        false,
        Box::new(move |r| {
            let reply = match r {
                Ok(()) => Reply::ok(),
                Err(e) => Reply::error(format!("ERR {e}")),
            };
            me.core.blocking_lock().blocking.serve(waiter, reply);
        }),
    );
    Ok(Reply::Nil)
}

/// `RLOCKD CLUSTER PARTITION <node> [<node> …] | HEAL`.
fn partition(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let m = member(ctx)?;
    let words = &args[3..];
    let side = match words {
        [] => return Err((CONTROL.unknown)(args)),
        [w] if eq(w, "heal") => None,
        _ => {
            let mut side = Vec::new();
            for w in words {
                let n = node_by_name(&m, w)?;
                if !side.contains(&n) {
                    side.push(n);
                }
            }
            Some(side)
        }
    };
    let control = m.topo.control().ok_or_else(|| CmdError::custom("ERR the cluster is stopping"))?;
    if !ctx.client.may_block() {
        control.partition(side, Box::new(|_| {}));
        return Ok(Reply::ok());
    }
    // The reply waits for the links to be held or resynchronised (on a
    // thread of its own, which takes each node's state in turn).
    let me = peer(&m, m.me)?;
    let waiter = super::blocking::block_until_answered(ctx, "ERR the partition did not finish");
    control.partition(
        side,
        Box::new(move |r| {
            let reply = match r {
                Ok(text) => Reply::bulk_str(&text),
                Err(e) => Reply::error(format!("ERR {e}")),
            };
            me.core.blocking_lock().blocking.serve(waiter, reply);
        }),
    );
    Ok(Reply::Nil)
}

/// `RLOCKD CLUSTER DOWN <node>` / `UP <node>`.
fn set_down(ctx: &mut Ctx<'_>, args: &[Bytes], down: bool) -> CmdResult {
    let m = member(ctx)?;
    let n = node_by_name(&m, &args[3])?;
    let control = m.topo.control().ok_or_else(|| CmdError::custom("ERR the cluster is stopping"))?;
    // A node taken down from its own connection goes once this reply
    // is sent: the connection closes after it (as Redis closes a client
    // after its reply), so the node's shutdown, which may begin before
    // this handler returns, does not swallow it.
    control.set_down(n, down, n == m.me).map_err(|e| CmdError::custom(format!("ERR {e}")))?;
    if down && n == m.me {
        ctx.client.close = true;
    }
    Ok(Reply::ok())
}
