//! The replies that describe the cluster, as Redis 7.0 builds them:
//! `CLUSTER NODES` (`clusterGenNodesDescription`), `SLOTS`, `SHARDS`,
//! `INFO`, `LINKS`, `REPLICAS`.

use bytes::Bytes;

use super::State;
use crate::protocol::Reply;

/// One `CLUSTER NODES` line for node `n`, seen from node `me`.
pub fn node_line(state: &State, me: usize, n: usize, now_ms: u64) -> String {
    let node = &state.nodes[n];
    let mut flags: Vec<&str> = Vec::new();
    if n == me {
        flags.push("myself");
    }
    flags.push(if node.is_primary() { "master" } else { "slave" });
    if node.pfail {
        flags.push("fail?");
    }
    if node.failed {
        flags.push("fail");
    }
    let primary = node.primary.map_or_else(|| "-".to_string(), |p| state.nodes[p].id.clone());
    let (ping, pong) = if node.failed || node.pfail {
        (node.failed_ms, node.failed_ms)
    } else if n == me {
        (0, now_ms / 1000 * 1000)
    } else {
        (0, now_ms)
    };
    let link = if (node.failed || node.pfail) && n != me { "disconnected" } else { "connected" };
    let mut line = format!(
        "{} {}:{}@{} {} {} {} {} {} {}",
        node.id,
        node.ip,
        node.port,
        node.bus_port,
        flags.join(","),
        primary,
        ping,
        pong,
        state.node_epoch(n),
        link
    );
    for (a, b) in state.ranges(n) {
        if a == b {
            line.push_str(&format!(" {a}"));
        } else {
            line.push_str(&format!(" {a}-{b}"));
        }
    }
    if n == me {
        for (slot, to) in &node.migrating {
            line.push_str(&format!(" [{slot}->-{}]", state.nodes[*to].id));
        }
        for (slot, from) in &node.importing {
            line.push_str(&format!(" [{slot}-<-{}]", state.nodes[*from].id));
        }
    }
    line.push('\n');
    line
}

/// `CLUSTER NODES`.
pub fn nodes(state: &State, me: usize, now_ms: u64) -> Reply {
    let text: String = (0..state.nodes.len()).map(|n| node_line(state, me, n, now_ms)).collect();
    Reply::Verbatim("txt", Bytes::from(text))
}

/// `CLUSTER REPLICAS <id>`: the lines of `primary`'s replicas.
pub fn replicas(state: &State, me: usize, primary: usize, now_ms: u64) -> Reply {
    Reply::Array(
        state
            .replicas(primary)
            .into_iter()
            .map(|r| {
                let mut line = node_line(state, me, r, now_ms);
                line.pop();
                Reply::Bulk(Bytes::from(line))
            })
            .collect(),
    )
}

/// One node of a `CLUSTER SLOTS` range: ip, port, id, and the map of other
/// endpoints (empty: the ip is the preferred endpoint and there is no
/// hostname).
fn slots_node(state: &State, n: usize) -> Reply {
    let node = &state.nodes[n];
    Reply::Array(vec![
        Reply::bulk_str(&node.ip),
        Reply::Int(i64::from(node.port)),
        Reply::bulk_str(&node.id),
        Reply::Map(Vec::new()),
    ])
}

/// A replica that is up and has received something (Redis's
/// `isReplicaAvailable`: a replica still at offset 0 is loading).
fn available(state: &State, n: usize, offsets: &[u64]) -> bool {
    !state.nodes[n].failed && offsets.get(n).is_some_and(|&o| o != 0)
}

/// `CLUSTER SLOTS`: each range of slots with its primary, then its
/// replicas that are available (`offsets`: each node's replication offset).
pub fn slots(state: &State, offsets: &[u64]) -> Reply {
    Reply::Array(
        state
            .all_ranges()
            .into_iter()
            .map(|(a, b, n)| {
                let mut entry = vec![Reply::Int(i64::from(a)), Reply::Int(i64::from(b)), slots_node(state, n)];
                for r in state.replicas(n) {
                    if available(state, r, offsets) {
                        entry.push(slots_node(state, r));
                    }
                }
                Reply::Array(entry)
            })
            .collect(),
    )
}

fn shard_node(state: &State, n: usize, offset: u64) -> Reply {
    let node = &state.nodes[n];
    let health = if node.failed {
        "fail"
    } else if !node.is_primary() && offset == 0 {
        "loading"
    } else {
        "online"
    };
    let s = Reply::bulk_str;
    Reply::Map(vec![
        (s("id"), s(&node.id)),
        (s("port"), Reply::Int(i64::from(node.port))),
        (s("ip"), s(&node.ip)),
        (s("endpoint"), s(&node.ip)),
        (s("role"), s(if node.is_primary() { "master" } else { "replica" })),
        (s("replication-offset"), Reply::Int(offset as i64)),
        (s("health"), s(health)),
    ])
}

/// `CLUSTER SHARDS`: per primary, its slot ranges and its nodes (with
/// each node's replication offset, from `offsets`).
pub fn shards(state: &State, offsets: &[u64]) -> Reply {
    let s = Reply::bulk_str;
    Reply::Array(
        (0..state.nodes.len())
            .filter(|&n| state.nodes[n].is_primary())
            .map(|n| {
                let slots = state
                    .ranges(n)
                    .into_iter()
                    .flat_map(|(a, b)| [Reply::Int(i64::from(a)), Reply::Int(i64::from(b))])
                    .collect();
                let off = |i: usize| offsets.get(i).copied().unwrap_or(0);
                let mut nodes = vec![shard_node(state, n, off(n))];
                nodes.extend(state.replicas(n).into_iter().map(|r| shard_node(state, r, off(r))));
                Reply::Map(vec![(s("slots"), Reply::Array(slots)), (s("nodes"), Reply::Array(nodes))])
            })
            .collect(),
    )
}

/// `CLUSTER INFO` (no bus messages are exchanged in one process, so the
/// per-type message counters Redis prints only when non-zero are absent).
pub fn info(state: &State, me: usize, full_coverage: bool) -> Reply {
    let failed = state.failed_slots();
    let text = format!(
        "cluster_state:{}\r\ncluster_slots_assigned:{}\r\ncluster_slots_ok:{}\r\ncluster_slots_pfail:{}\r\n\
         cluster_slots_fail:{}\r\ncluster_known_nodes:{}\r\ncluster_size:{}\r\ncluster_current_epoch:{}\r\n\
         cluster_my_epoch:{}\r\ncluster_stats_messages_sent:0\r\ncluster_stats_messages_received:0\r\n\
         total_cluster_links_buffer_limit_exceeded:0\r\n",
        if state.healthy(full_coverage) { "ok" } else { "fail" },
        state.assigned(),
        state.assigned() - failed - state.pfail_slots(),
        state.pfail_slots(),
        failed,
        state.nodes.len(),
        state.size(),
        state.current_epoch,
        state.node_epoch(me),
    );
    Reply::Verbatim("txt", Bytes::from(text))
}

/// `CLUSTER LINKS`: a link to and a link from every other node that is up.
pub fn links(state: &State, me: usize, created_ms: u64) -> Reply {
    let s = Reply::bulk_str;
    let mut out = Vec::new();
    for (n, node) in state.nodes.iter().enumerate() {
        if n == me || node.failed || node.pfail {
            continue;
        }
        for direction in ["to", "from"] {
            out.push(Reply::Map(vec![
                (s("direction"), s(direction)),
                (s("node"), s(&node.id)),
                (s("create-time"), Reply::Int(created_ms as i64)),
                (s("events"), s("r")),
                (s("send-buffer-allocated"), Reply::Int(0)),
                (s("send-buffer-used"), Reply::Int(0)),
            ]));
        }
    }
    Reply::Array(out)
}
