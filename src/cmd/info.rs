//! `INFO`: Redis's sections and fields, from the core's statistics.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use bytes::Bytes;

use super::util::info_text;
use super::{cmd, table, CommandSpec, Ctx};
use crate::error::CmdResult;

pub static COMMANDS: &[CommandSpec] = &[cmd("info", info, -1, "loading stale", 0, 0, 0, "@slow @dangerous")
    .doc("Get information and statistics about the server", "1.0.0")];

const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];

/// `uname`'s "sysname release machine", as Redis prints `os`.
fn os_name() -> String {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let sysname = if cfg!(target_os = "linux") { "Linux" } else { std::env::consts::OS };
    format!("{sysname} {} {}", release.trim(), std::env::consts::ARCH)
}

/// Physical memory in bytes (`/proc/meminfo`), 0 if unknown.
fn total_system_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            let line = m.lines().find(|l| l.starts_with("MemTotal:"))?.to_string();
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb * 1024)
}

/// User and system CPU seconds of this process (`/proc/self/stat`).
fn cpu_seconds() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return (0.0, 0.0) };
    // Fields after the parenthesised command name; utime and stime are 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (ticks(11), ticks(12))
}

/// Redis's `bytesToHuman`: B, K, M, G… with two decimals.
fn bytes_human(n: u64) -> String {
    let n = n as f64;
    let units = ["B", "K", "M", "G", "T", "P"];
    let mut i = 0;
    let mut v = n;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{}B", n as u64)
    } else {
        format!("{v:.2}{}", units[i])
    }
}

fn info_section(ctx: &Ctx<'_>, name: &str, out: &mut String) -> bool {
    let now = ctx.now_ms();
    let up = now.saturating_sub(ctx.shared.started_ms) / 1000;
    let core = &*ctx.core;
    macro_rules! l { ($($t:tt)*) => {{ let _ = write!(out, $($t)*); out.push_str("\r\n"); }} }
    match name {
        "server" => {
            let profile = core.profile();
            let valkey = profile.is_valkey();
            l!("# Server");
            l!("redis_version:{}", profile.redis_version());
            if valkey {
                l!("server_name:valkey");
                l!("valkey_version:{}", profile.version());
                l!("valkey_release_stage:ga");
            }
            l!("redis_git_sha1:00000000");
            l!("redis_git_dirty:0");
            l!("redis_build_id:0");
            let mode = if core.cluster.is_some() { "cluster" } else { "standalone" };
            if valkey {
                l!("server_mode:{mode}");
            } else {
                l!("redis_mode:{mode}");
            }
            l!("os:{}", os_name());
            l!("arch_bits:64");
            l!("monotonic_clock:POSIX clock_gettime");
            l!("multiplexing_api:epoll");
            if !valkey {
                l!("atomicvar_api:c11-builtin");
            }
            l!("gcc_version:0.0.0");
            l!("process_id:{}", std::process::id());
            l!("process_supervised:no");
            l!("run_id:{}", ctx.shared.run_id);
            l!("tcp_port:{}", ctx.shared.local_addr.lock().port());
            l!("server_time_usec:{}", ctx.shared.clock.now_us());
            l!("uptime_in_seconds:{up}");
            l!("uptime_in_days:{}", up / 86400);
            l!("hz:{}", core.config.hz);
            l!("configured_hz:{}", core.config.hz);
            if valkey {
                l!("clients_hz:{}", core.config.hz);
            }
            l!("lru_clock:{}", (now / 1000) & ((1 << 24) - 1));
            l!("executable:{}", std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default());
            l!("config_file:");
            l!("io_threads_active:0");
            if valkey {
                l!("availability_zone:");
            }
            if profile.at_least(7, 2, 0) {
                // The listeners (Redis 7.2's connection types).
                let binds: Vec<String> =
                    core.config.get_str("bind").split_whitespace().map(|b| format!("bind={b}")).collect();
                l!("listener0:name=tcp,{},port={}", binds.join(","), ctx.shared.local_addr.lock().port());
                let unix = core.config.get_str("unixsocket");
                if !unix.is_empty() {
                    l!("listener1:name=unix,bind={unix}");
                }
            }
        }
        "rlockd" => {
            // rlockd's own section (by name, or under `everything` as Redis
            // shows its modules' sections): the default and `all` print
            // exactly Redis's fields.
            l!("# Rlockd");
            l!("rlockd_version:{}", env!("CARGO_PKG_VERSION"));
            l!("rlockd_test_control:{}", core.config.get_str("test-control"));
        }
        "clients" => {
            let blocked = core.clients.values().filter(|r| r.shared.blocked.load(Ordering::Relaxed)).count();
            l!("# Clients");
            // Replicas' connections are not counted, as in Redis.
            let replicas = core.clients.values().filter(|r| r.shared.replica.load(Ordering::Relaxed)).count();
            l!("connected_clients:{}", core.clients.len() - replicas);
            l!("cluster_connections:0");
            l!("maxclients:{}", core.config.get_str("maxclients"));
            l!("client_recent_max_input_buffer:0");
            l!("client_recent_max_output_buffer:0");
            l!("blocked_clients:{blocked}");
            l!("tracking_clients:{}", core.tracking.clients());
            l!("clients_in_timeout_table:{blocked}");
        }
        "memory" => {
            let rss = crate::memory::rss();
            let used = crate::memory::used_memory();
            let peak = crate::memory::peak(used);
            let (lua, funcs, scripts) = core
                .scripting
                .as_ref()
                .map_or((0, 0, 0), |s| (s.eval_memory(), s.functions_memory(), s.script_count()));
            let maxmemory: u64 = core.config.maxmemory;
            let total = total_system_memory();
            l!("# Memory");
            l!("used_memory:{used}");
            l!("used_memory_human:{}", bytes_human(used));
            l!("used_memory_rss:{rss}");
            l!("used_memory_rss_human:{}", bytes_human(rss));
            l!("used_memory_peak:{peak}");
            l!("used_memory_peak_human:{}", bytes_human(peak));
            l!("used_memory_peak_perc:{:.2}%", used as f64 * 100.0 / peak.max(1) as f64);
            l!("used_memory_overhead:0");
            l!("used_memory_startup:0");
            l!("used_memory_dataset:{used}");
            l!("used_memory_dataset_perc:100.00%");
            l!("allocator_allocated:{used}");
            l!("allocator_active:{rss}");
            l!("allocator_resident:{rss}");
            l!("total_system_memory:{total}");
            l!("total_system_memory_human:{}", bytes_human(total));
            l!("used_memory_lua:{lua}");
            l!("used_memory_vm_eval:{lua}");
            l!("used_memory_lua_human:{}", bytes_human(lua as u64));
            l!("used_memory_scripts_eval:0");
            l!("number_of_cached_scripts:{scripts}");
            l!("number_of_functions:{}", core.scripting.as_ref().map_or(0, |s| s.libraries.function_count()));
            l!("number_of_libraries:{}", core.scripting.as_ref().map_or(0, |s| s.libraries.libs.len()));
            l!("used_memory_vm_functions:{funcs}");
            l!("used_memory_vm_total:{}", lua + funcs);
            l!("used_memory_vm_total_human:{}", bytes_human((lua + funcs) as u64));
            l!("used_memory_functions:0");
            l!("used_memory_scripts:0");
            l!("used_memory_scripts_human:0B");
            l!("maxmemory:{maxmemory}");
            l!("maxmemory_human:{}", bytes_human(maxmemory));
            l!("maxmemory_policy:{}", core.config.get_str("maxmemory-policy"));
            l!("allocator_frag_ratio:1.00");
            l!("allocator_frag_bytes:0");
            l!("allocator_rss_ratio:1.00");
            l!("allocator_rss_bytes:0");
            l!("rss_overhead_ratio:1.00");
            l!("rss_overhead_bytes:0");
            l!("mem_fragmentation_ratio:1.00");
            l!("mem_fragmentation_bytes:0");
            l!("mem_not_counted_for_evict:0");
            l!("mem_replication_backlog:0");
            l!("mem_total_replication_buffers:0");
            l!("mem_clients_slaves:0");
            l!("mem_clients_normal:0");
            l!("mem_cluster_links:0");
            l!("mem_aof_buffer:0");
            l!("mem_allocator:{}", crate::version::allocator_name());
            l!("active_defrag_running:0");
            l!("lazyfree_pending_objects:0");
            l!("lazyfreed_objects:0");
        }
        "persistence" => {
            l!("# Persistence");
            l!("loading:0");
            l!("async_loading:0");
            l!("current_cow_peak:0");
            l!("current_cow_size:0");
            l!("current_cow_size_age:0");
            l!("current_fork_perc:0.00");
            l!("current_save_keys_processed:0");
            l!("current_save_keys_total:0");
            l!("rdb_changes_since_last_save:{}", core.ks.sig.dirty);
            l!("rdb_bgsave_in_progress:0");
            l!("rdb_last_save_time:{}", core.lastsave);
            l!("rdb_last_bgsave_status:ok");
            l!("rdb_last_bgsave_time_sec:-1");
            l!("rdb_current_bgsave_time_sec:-1");
            l!("rdb_saves:0");
            l!("rdb_last_cow_size:0");
            l!("rdb_last_load_keys_expired:0");
            l!("rdb_last_load_keys_loaded:0");
            l!("aof_enabled:0");
            l!("aof_rewrite_in_progress:0");
            l!("aof_rewrite_scheduled:0");
            l!("aof_last_rewrite_time_sec:-1");
            l!("aof_current_rewrite_time_sec:-1");
            l!("aof_last_bgrewrite_status:ok");
            l!("aof_rewrites:0");
            l!("aof_rewrites_consecutive_failures:0");
            l!("aof_last_write_status:ok");
            l!("aof_last_cow_size:0");
            l!("module_fork_in_progress:0");
            l!("module_fork_last_cow_size:0");
        }
        "stats" => {
            let st = &core.stats;
            let net = &ctx.shared.net;
            l!("# Stats");
            l!("total_connections_received:{}", st.total_connections);
            l!("total_commands_processed:{}", st.total_commands);
            l!("instantaneous_ops_per_sec:{}", st.instantaneous_ops());
            l!("total_net_input_bytes:{}", net.input_bytes.load(Ordering::Relaxed));
            l!("total_net_output_bytes:{}", net.output_bytes.load(Ordering::Relaxed));
            l!("total_net_repl_input_bytes:0");
            l!("total_net_repl_output_bytes:0");
            l!("instantaneous_input_kbps:0.00");
            l!("instantaneous_output_kbps:0.00");
            l!("instantaneous_input_repl_kbps:0.00");
            l!("instantaneous_output_repl_kbps:0.00");
            l!("rejected_connections:{}", st.rejected_connections);
            l!("sync_full:{}", core.repl.sync_full);
            l!("sync_partial_ok:{}", core.repl.sync_partial_ok);
            l!("sync_partial_err:{}", core.repl.sync_partial_err);
            l!("expired_keys:{}", st.expired_keys);
            l!("expired_stale_perc:0.00");
            l!("expired_time_cap_reached_count:0");
            l!("expire_cycle_cpu_milliseconds:0");
            l!("evicted_keys:{}", st.evicted_keys);
            l!("evicted_clients:0");
            l!("total_eviction_exceeded_time:0");
            l!("current_eviction_exceeded_time:0");
            l!("keyspace_hits:{}", st.keyspace_hits);
            l!("keyspace_misses:{}", st.keyspace_misses);
            l!("pubsub_channels:{}", core.pubsub.channel_count());
            l!("pubsub_patterns:{}", core.pubsub.pattern_count());
            l!("pubsubshard_channels:{}", core.pubsub.shard_channel_count());
            l!("latest_fork_usec:0");
            l!("total_forks:0");
            l!("migrate_cached_sockets:0");
            l!("slave_expires_tracked_keys:0");
            l!("active_defrag_hits:0");
            l!("active_defrag_misses:0");
            l!("active_defrag_key_hits:0");
            l!("active_defrag_key_misses:0");
            l!("total_active_defrag_time:0");
            l!("current_active_defrag_time:0");
            l!("tracking_total_keys:{}", core.tracking.total_keys());
            l!("tracking_total_items:{}", core.tracking.total_items());
            l!("tracking_total_prefixes:{}", core.tracking.total_prefixes());
            l!("unexpected_error_replies:0");
            l!("total_error_replies:{}", st.total_error_replies);
            l!("dump_payload_sanitizations:0");
            l!("total_reads_processed:{}", net.reads.load(Ordering::Relaxed));
            l!("total_writes_processed:{}", net.writes.load(Ordering::Relaxed));
            l!("io_threaded_reads_processed:0");
            l!("io_threaded_writes_processed:0");
            l!("reply_buffer_shrinks:0");
            l!("reply_buffer_expands:0");
        }
        "replication" => out.push_str(&super::replication::info(ctx)),
        "cpu" => {
            let (user, sys) = cpu_seconds();
            l!("# CPU");
            l!("used_cpu_sys:{sys:.6}");
            l!("used_cpu_user:{user:.6}");
            l!("used_cpu_sys_children:0.000000");
            l!("used_cpu_user_children:0.000000");
            l!("used_cpu_sys_main_thread:{sys:.6}");
            l!("used_cpu_user_main_thread:{user:.6}");
        }
        "modules" => l!("# Modules"),
        "errorstats" => {
            l!("# Errorstats");
            for (prefix, n) in &core.stats.error_counts {
                l!("errorstat_{}:count={}", String::from_utf8_lossy(prefix), n);
            }
        }
        "cluster" => {
            l!("# Cluster");
            l!("cluster_enabled:{}", u8::from(core.cluster.is_some()));
        }
        "keyspace" => {
            l!("# Keyspace");
            for (i, db) in core.ks.dbs.iter().enumerate() {
                if !db.is_empty() {
                    l!("db{}:keys={},expires={},avg_ttl=0", i, db.len(), db.expires_len());
                }
            }
        }
        "commandstats" => {
            l!("# Commandstats");
            for (id, st) in core.stats.commands.iter().enumerate() {
                if st.calls == 0 && st.rejected == 0 && st.failed == 0 {
                    continue;
                }
                let per = if st.calls > 0 { st.usec as f64 / st.calls as f64 } else { 0.0 };
                l!(
                    "cmdstat_{}:calls={},usec={},usec_per_call={:.2},rejected_calls={},failed_calls={}",
                    table().names[id],
                    st.calls,
                    st.usec,
                    per,
                    st.rejected,
                    st.failed
                );
            }
        }
        "latencystats" => {
            l!("# Latencystats");
            let names: Vec<String> = core
                .config
                .latency_percentiles
                .iter()
                .map(|p| format!("p{}", crate::config::fmt_percentile(*p)))
                .collect();
            for (id, st) in core.stats.commands.iter().enumerate() {
                if st.latency_samples() == 0 {
                    continue;
                }
                let values: Vec<String> = core
                    .config
                    .latency_percentiles
                    .iter()
                    .zip(&names)
                    .map(|(p, n)| format!("{n}={:.3}", st.latency_percentile_ns(*p) as f64 / 1000.0))
                    .collect();
                l!("latency_percentiles_usec_{}:{}", table().names[id], values.join(","));
            }
        }
        "scriptstats" => {
            // rlockd's own section: where each cached script's time goes.
            l!("# Scriptstats");
            if let Some(scripting) = core.scripting.as_ref() {
                let profiles = scripting.script_profiles();
                for (sha, st) in scripting.script_stats() {
                    if st.calls == 0 {
                        continue;
                    }
                    let p = profiles.iter().find(|(s, _, _)| *s == sha).map(|(_, _, p)| p.clone()).unwrap_or_default();
                    let usec = st.nanos as f64 / 1000.0;
                    let redis_usec = st.redis_nanos as f64 / 1000.0;
                    l!(
                        "script_{sha}:calls={},errors={},usec={:.0},usec_per_call={:.2},redis_calls={},redis_calls_per_call={:.2},redis_usec={:.0},lua_usec={:.0},instructions_per_call={:.1},keys_read_per_call={:.2},keys_written_per_call={:.2}",
                        st.calls,
                        st.errors,
                        usec,
                        usec / st.calls as f64,
                        st.redis_calls,
                        st.redis_calls as f64 / st.calls as f64,
                        redis_usec,
                        (usec - redis_usec).max(0.0),
                        p.instructions as f64 / st.calls as f64,
                        p.keys_read as f64 / st.calls as f64,
                        p.keys_written as f64 / st.calls as f64
                    );
                }
            }
        }
        _ => return false,
    }
    true
}

fn info(ctx: &mut Ctx<'_>, args: &[Bytes]) -> CmdResult {
    let mut sections: Vec<String> = Vec::new();
    let requested: Vec<String> = args[1..].iter().map(|a| String::from_utf8_lossy(a).to_ascii_lowercase()).collect();
    if requested.is_empty() || requested.iter().any(|s| s == "default") {
        sections.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string()));
    }
    for r in &requested {
        match r.as_str() {
            "all" | "everything" => {
                sections.extend(DEFAULT_SECTIONS.iter().map(|s| s.to_string()));
                sections.push("commandstats".into());
                sections.push("latencystats".into());
                if r == "everything" {
                    // rlockd's own sections, where Redis puts its modules'.
                    sections.push("rlockd".into());
                    sections.push("scriptstats".into());
                }
            }
            "default" => {}
            other => sections.push(other.to_string()),
        }
    }
    let mut seen = Vec::new();
    let mut out = String::new();
    for s in sections {
        if seen.contains(&s) {
            continue;
        }
        let mut part = String::new();
        if info_section(ctx, &s, &mut part) {
            if !out.is_empty() {
                out.push_str("\r\n");
            }
            out.push_str(&part);
        }
        seen.push(s);
    }
    Ok(info_text(ctx, out))
}
