//! Cluster commands, answered as a Redis started without `cluster-enabled`
//! answers them: clients probe `CLUSTER INFO` / `READONLY` and switch to
//! cluster mode only if they succeed.

use bytes::Bytes;

use super::{cmd, container, CommandSpec, Ctx};
use crate::error::{CmdError, CmdResult};

pub static COMMANDS: &[CommandSpec] = &[
    cmd("cluster", container, -2, "", 0, 0, 0, "@slow")
        .subs(CLUSTER_SUBS)
        .doc("A container for cluster commands", "3.0.0"),
    cmd("asking", disabled, 1, "fast", 0, 0, 0, "@fast @connection")
        .doc("Sent by cluster clients after an -ASK redirect", "3.0.0"),
    cmd("readonly", disabled, 1, "loading stale fast", 0, 0, 0, "@fast @connection")
        .doc("Enables read queries for a connection to a cluster replica node", "3.0.0"),
    cmd("readwrite", disabled, 1, "loading stale fast", 0, 0, 0, "@fast @connection")
        .doc("Disables read queries for a connection to a cluster replica node", "3.0.0"),
];

static CLUSTER_SUBS: &[CommandSpec] = &[
    cmd("addslotsrange", disabled, -4, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Assign new hash slots to receiving node", "7.0.0"),
    cmd("addslots", disabled, -3, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Assign new hash slots to receiving node", "3.0.0"),
    cmd("bumpepoch", disabled, 2, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Advance the cluster config epoch", "3.0.0"),
    cmd("count-failure-reports", disabled, 3, "admin stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Return the number of failure reports active for a given node", "3.0.0"),
    cmd("countkeysinslot", disabled, 3, "stale", 0, 0, 0, "@slow")
        .doc("Return the number of local keys in the specified hash slot", "3.0.0"),
    cmd("delslotsrange", disabled, -4, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Set hash slots as unbound in receiving node", "7.0.0"),
    cmd("delslots", disabled, -3, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Set hash slots as unbound in receiving node", "3.0.0"),
    cmd("failover", disabled, -2, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Forces a replica to perform a manual failover of its master.", "3.0.0"),
    cmd("flushslots", disabled, 2, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Delete a node's own slots information", "3.0.0"),
    cmd("forget", disabled, 3, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Remove a node from the nodes table", "3.0.0"),
    cmd("getkeysinslot", disabled, 4, "stale", 0, 0, 0, "@slow")
        .doc("Return local key names in the specified hash slot", "3.0.0"),
    cmd("help", disabled, 2, "loading stale", 0, 0, 0, "@slow")
        .doc("Show helpful text about the different subcommands", "5.0.0"),
    cmd("info", disabled, 2, "stale", 0, 0, 0, "@slow").doc("Provides info about Redis Cluster node state", "3.0.0"),
    cmd("keyslot", disabled, 3, "stale", 0, 0, 0, "@slow").doc("Returns the hash slot of the specified key", "3.0.0"),
    cmd("links", disabled, 2, "stale", 0, 0, 0, "@slow")
        .doc("Returns a list of all TCP links to and from peer nodes in cluster", "7.0.0"),
    cmd("meet", disabled, -4, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Force a node cluster to handshake with another node", "3.0.0"),
    cmd("myid", disabled, 2, "stale", 0, 0, 0, "@slow").doc("Return the node id", "3.0.0"),
    cmd("nodes", disabled, 2, "stale", 0, 0, 0, "@slow").doc("Get Cluster config for the node", "3.0.0"),
    cmd("replicas", disabled, 3, "admin stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("List replica nodes of the specified master node", "5.0.0"),
    cmd("replicate", disabled, 3, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Reconfigure a node as a replica of the specified master node", "3.0.0"),
    cmd("reset", disabled, -2, "admin noscript stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Reset a Redis Cluster node", "3.0.0"),
    cmd("saveconfig", disabled, 2, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Forces the node to save cluster state on disk", "3.0.0"),
    cmd("set-config-epoch", disabled, 3, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Set the configuration epoch in a new node", "3.0.0"),
    cmd("setslot", disabled, -4, "admin stale no_async_loading", 0, 0, 0, "@admin @slow @dangerous")
        .doc("Bind a hash slot to a specific node", "3.0.0"),
    cmd("shards", disabled, 2, "stale", 0, 0, 0, "@slow").doc("Get array of cluster slots to node mappings", "7.0.0"),
    cmd("slaves", disabled, 3, "admin stale", 0, 0, 0, "@admin @slow @dangerous")
        .doc("List replica nodes of the specified master node", "3.0.0"),
    cmd("slots", disabled, 2, "stale", 0, 0, 0, "@slow").doc("Get array of Cluster slot to node mappings", "3.0.0"),
];

/// Every cluster command (even `CLUSTER HELP`) on a non-cluster server.
fn disabled(_ctx: &mut Ctx<'_>, _args: &[Bytes]) -> CmdResult {
    Err(CmdError::custom("ERR This instance has cluster support disabled"))
}
