//! The records a Sentinel prints, with redis-sentinel 7.0's fields in its
//! order: a primary (`SENTINEL MASTER`, `MASTERS`), its replicas
//! (`REPLICAS`), the other Sentinels (`SENTINELS`), `INFO`'s text and
//! `SENTINEL HELP`. The times a real Sentinel measures (pings, INFO
//! refreshes) are made up from the group's age.

use bytes::Bytes;

use super::group::Member;
use super::nodes::{self, ReplicaInfo};
use super::state::Master;
use crate::protocol::Reply;

fn fields(pairs: Vec<(&str, String)>) -> Reply {
    Reply::Map(pairs.into_iter().map(|(k, v)| (Reply::bulk_str(k), Reply::bulk_str(&v))).collect())
}

/// `SENTINEL MASTER`'s record of `m`.
pub(super) async fn master(me: &Member, m: &Master) -> Reply {
    let ms = me.group.uptime_ms();
    let flags = m.flags(nodes::is_down(m.addr));
    let others = me.group.state.lock().sentinels.len() - 1;
    let slaves = nodes::replicas(m.addr).await.len();
    let mut pairs = vec![
        ("name", m.name.clone()),
        ("ip", m.addr.ip().to_string()),
        ("port", m.addr.port().to_string()),
        ("runid", nodes::run_id(m.addr)),
        ("flags", flags.into()),
        ("link-pending-commands", "0".into()),
        ("link-refcount", "1".into()),
        ("last-ping-sent", "0".into()),
        ("last-ok-ping-reply", (ms % 1000).to_string()),
        ("last-ping-reply", (ms % 1000).to_string()),
    ];
    let now = std::time::Instant::now();
    let down_for = |since: std::time::Instant| now.saturating_duration_since(since).as_millis().to_string();
    if let Some(since) = m.sdown {
        pairs.push(("s-down-time", down_for(since)));
    }
    if let Some(since) = m.odown {
        pairs.push(("o-down-time", down_for(since)));
    }
    pairs.extend(vec![
        ("down-after-milliseconds", m.down_after_ms.to_string()),
        ("info-refresh", (ms % 10000).to_string()),
        ("role-reported", "master".into()),
        ("role-reported-time", ms.to_string()),
        ("config-epoch", m.config_epoch.to_string()),
        ("num-slaves", slaves.to_string()),
        ("num-other-sentinels", others.to_string()),
        ("quorum", m.quorum.to_string()),
        ("failover-timeout", m.failover_timeout_ms.to_string()),
        ("parallel-syncs", m.parallel_syncs.to_string()),
    ]);
    fields(pairs)
}

/// `SENTINEL REPLICAS`' records of `m`'s replicas.
pub(super) async fn replicas(me: &Member, m: &Master) -> Reply {
    let all = nodes::replicas(m.addr).await;
    Reply::Array(all.iter().map(|r| replica(me, m, r)).collect())
}

fn replica(me: &Member, m: &Master, r: &ReplicaInfo) -> Reply {
    let ms = me.group.uptime_ms();
    let flags = me.group.state.lock().replica_flags(r.addr, nodes::is_down(r.addr));
    fields(vec![
        ("name", r.addr.to_string()),
        ("ip", r.addr.ip().to_string()),
        ("port", r.addr.port().to_string()),
        ("runid", r.run_id.clone()),
        ("flags", flags.into()),
        ("link-pending-commands", "0".into()),
        ("link-refcount", "1".into()),
        ("last-ping-sent", "0".into()),
        ("last-ok-ping-reply", (ms % 1000).to_string()),
        ("last-ping-reply", (ms % 1000).to_string()),
        ("down-after-milliseconds", m.down_after_ms.to_string()),
        ("info-refresh", (ms % 10000).to_string()),
        ("role-reported", "slave".into()),
        ("role-reported-time", ms.to_string()),
        ("master-link-down-time", "0".into()),
        ("master-link-status", if r.link_up { "ok" } else { "err" }.into()),
        ("master-host", m.addr.ip().to_string()),
        ("master-port", m.addr.port().to_string()),
        ("slave-priority", r.priority.clone()),
        ("slave-repl-offset", r.offset.to_string()),
        ("replica-announced", "1".into()),
    ])
}

/// `SENTINEL SENTINELS`' records: the group's other Sentinels.
pub(super) fn sentinels(me: &Member) -> Reply {
    let ms = me.group.uptime_ms();
    let others: Vec<_> = me.group.state.lock().sentinels.iter().filter(|p| p.id != me.id).cloned().collect();
    Reply::Array(
        others
            .into_iter()
            .map(|p| {
                fields(vec![
                    ("name", p.id.clone()),
                    ("ip", p.addr.ip().to_string()),
                    ("port", p.addr.port().to_string()),
                    ("runid", p.id),
                    ("flags", "sentinel".into()),
                    ("link-pending-commands", "0".into()),
                    ("link-refcount", "1".into()),
                    ("last-ping-sent", "0".into()),
                    ("last-ok-ping-reply", (ms % 1000).to_string()),
                    ("last-ping-reply", (ms % 1000).to_string()),
                    ("down-after-milliseconds", "30000".into()),
                    ("last-hello-message", (ms % 2000).to_string()),
                    ("voted-leader", "?".into()),
                    ("voted-leader-epoch", "0".into()),
                ])
            })
            .collect(),
    )
}

/// `INFO [section]`'s text: `server` and `sentinel`.
pub(super) async fn info(me: &Member, section: Option<&Bytes>) -> String {
    let want = |s: &str| {
        section.is_none_or(|w| ["all", "default", "everything", s].iter().any(|x| w.eq_ignore_ascii_case(x.as_bytes())))
    };
    let mut out = String::new();
    if want("server") {
        out.push_str(&format!(
            "# Server\r\nredis_version:{}\r\nredis_mode:sentinel\r\nprocess_id:{}\r\nrun_id:{}\r\ntcp_port:{}\r\nuptime_in_seconds:{}\r\n\r\n",
            crate::version::REDIS_VERSION,
            std::process::id(),
            me.id,
            me.addr.port(),
            me.group.started.elapsed().as_secs()
        ));
    }
    if want("sentinel") {
        let (masters, sentinels) = {
            let st = me.group.state.lock();
            (st.masters.clone(), st.sentinels.len())
        };
        out.push_str(&format!(
            "# Sentinel\r\nsentinel_masters:{}\r\nsentinel_tilt:0\r\nsentinel_tilt_since_seconds:-1\r\nsentinel_running_scripts:0\r\nsentinel_scripts_queue_length:0\r\nsentinel_simulate_failure_flags:0\r\n",
            masters.len()
        ));
        for (i, m) in masters.iter().enumerate() {
            let slaves = nodes::replicas(m.addr).await.len();
            out.push_str(&format!(
                "master{i}:name={},status={},address={},slaves={slaves},sentinels={sentinels}\r\n",
                m.name,
                m.status(),
                m.addr
            ));
        }
    }
    while out.ends_with("\r\n\r\n") {
        out.truncate(out.len() - 2);
    }
    out
}

/// `SENTINEL HELP`'s lines (the subcommands rlockd's Sentinel has).
pub(super) const SENTINEL_HELP: &[&str] = &[
    "SENTINEL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CKQUORUM <master-name>",
    "    Check if the current Sentinel configuration is able to reach the quorum",
    "    needed to failover a master and the majority needed to authorize the",
    "    failover.",
    "FAILOVER <master-name>",
    "    Manually failover a master node without asking for agreement from other",
    "    Sentinels",
    "GET-MASTER-ADDR-BY-NAME <master-name>",
    "    Return the ip and port number of the master with that name.",
    "MASTER <master-name>",
    "    Show the state and info of the specified master.",
    "MASTERS",
    "    Show a list of monitored masters and their state.",
    "MYID",
    "    Return the ID of the Sentinel instance.",
    "REPLICAS <master-name>",
    "    Show a list of replicas for this master and their state.",
    "RESET <pattern>",
    "    Reset masters for specific master name matching this pattern.",
    "SENTINELS <master-name>",
    "    Show a list of Sentinel instances for this master and their state.",
    "SET <master-name> <option> <value> [<option> <value> ...]",
    "    Set configuration parameters for certain masters.",
    "HELP",
    "    Prints this help.",
];
