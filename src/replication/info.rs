//! `INFO replication`'s section, as Redis 7.0 prints it: this node's role,
//! its primary's link (over TCP: the RDB transfer's progress), its online
//! replicas and the stream's ids, offsets and backlog. `cmd/replication.rs`
//! reads the settings it shows from the configuration.

use std::sync::atomic::Ordering;

use super::{ReplState, TcpState};

/// The configuration `INFO replication` shows or depends on.
#[derive(Debug, Clone)]
pub struct InfoSettings {
    /// `repl-backlog-size`.
    pub backlog_size: u64,
    /// `replica-priority`, as configured.
    pub priority: String,
    /// `replica-read-only yes`.
    pub read_only: bool,
    /// `replica-announced yes`.
    pub announced: bool,
    /// `min-replicas-to-write`.
    pub min_replicas_to_write: i64,
    /// `min-replicas-max-lag`, seconds.
    pub max_lag: u64,
}

impl ReplState {
    /// `INFO replication`, as Redis 7.0 prints it, at unix ms `now`.
    pub fn info(&self, settings: &InfoSettings, now: u64) -> String {
        let repl = self;
        let size = settings.backlog_size;
        let mut s = String::new();
        let mut l = |line: String| {
            s.push_str(&line);
            s.push_str("\r\n");
        };
        l("# Replication".into());
        match &repl.master {
            None => l("role:master".into()),
            Some(m) => {
                l("role:slave".into());
                l(format!("master_host:{}", m.host));
                l(format!("master_port:{}", m.port));
                let up = m.link_up();
                l(format!("master_link_status:{}", if up { "up" } else { "down" }));
                let io = if up { (now.saturating_sub(m.last_io_ms) / 1000) as i64 } else { -1 };
                l(format!("master_last_io_seconds_ago:{io}"));
                let transfer = m.tcp.as_ref().filter(|t| t.state == TcpState::Transfer);
                l(format!("master_sync_in_progress:{}", u8::from(transfer.is_some())));
                l(format!("slave_read_repl_offset:{}", repl.offset));
                l(format!("slave_repl_offset:{}", repl.offset));
                if let Some(t) = transfer {
                    let total = t.sync_total as i64;
                    let read = t.sync_read as i64;
                    let (left, perc) =
                        if total > 0 { (total - read, read as f64 * 100.0 / total as f64) } else { (-1, 0.0) };
                    l(format!("master_sync_total_bytes:{}", if total > 0 { total } else { -1 }));
                    l(format!("master_sync_read_bytes:{read}"));
                    l(format!("master_sync_left_bytes:{left}"));
                    l(format!("master_sync_perc:{perc:.2}"));
                    l(format!("master_sync_last_io_seconds_ago:{}", now.saturating_sub(t.sync_last_io_ms) / 1000));
                }
                if !up {
                    let since = match &m.tcp {
                        Some(t) if t.down_since_ms > 0 => (now.saturating_sub(t.down_since_ms) / 1000) as i64,
                        Some(_) => -1,
                        None if m.link.is_some() => 0,
                        None => -1,
                    };
                    l(format!("master_link_down_since_seconds:{since}"));
                }
                l(format!("slave_priority:{}", settings.priority));
                l(format!("slave_read_only:{}", u8::from(settings.read_only)));
                l(format!("replica_announced:{}", u8::from(settings.announced)));
            }
        }
        let online: Vec<_> = repl.replicas.iter().filter(|l| l.is_online()).collect();
        l(format!("connected_slaves:{}", online.len()));
        if settings.min_replicas_to_write > 0 && !repl.is_replica() {
            let good = online.iter().filter(|l| l.lag_secs() <= settings.max_lag).count();
            l(format!("min_slaves_good_slaves:{good}"));
        }
        for (i, link) in online.iter().enumerate() {
            l(format!(
                "slave{i}:ip={},port={},state={},offset={},lag={}",
                link.replica.ip(),
                link.replica.port(),
                if link.holding.load(Ordering::Relaxed) { "wait_bgsave" } else { "online" },
                link.acked.load(Ordering::Acquire),
                link.lag_secs()
            ));
        }
        l("master_failover_state:no-failover".into());
        l(format!("master_replid:{}", repl.replid));
        l(format!("master_replid2:{}", repl.replid2));
        l(format!("master_repl_offset:{}", repl.offset));
        l(format!("second_repl_offset:{}", repl.second_offset));
        l(format!("repl_backlog_active:{}", u8::from(repl.backlog)));
        l(format!("repl_backlog_size:{size}"));
        l(format!("repl_backlog_first_byte_offset:{}", repl.backlog_first_byte(size)));
        l(format!("repl_backlog_histlen:{}", repl.backlog_histlen(size)));
        s
    }
}
