//! Configuration: the start-up [`Config`] and the runtime parameter table
//! behind `CONFIG GET` / `CONFIG SET`.
//!
//! `PARAMS` is the one parameter table: every redis-server 7.0 parameter,
//! its aliases, default, kind and access, then rlockd's own, with Redis's
//! value parsers. [`RuntimeConfig`] holds the values as `CONFIG GET` prints
//! them plus parsed copies of the hot ones; `set_many` is `CONFIG SET`'s
//! all-or-nothing, and `load` reads a start-up configuration through the
//! same table (immutable parameters allowed). `EFFECTIVE` names the
//! parameters rlockd acts on (the binary notes the others as having no
//! effect). `CONFIG SET port`/`bind` have the server layer close its
//! listeners and bind the new addresses, or the old ones again on failure,
//! before the reply (`core::ServerIo::relisten`).

use std::net::SocketAddr;

use bytes::Bytes;

use crate::error::CmdError;
use crate::glob;
use crate::version::{Profile, Version};

/// How a server is started. Build with [`Config::default`] and the setters.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on; port 0 picks a free port.
    pub bind: SocketAddr,
    /// The password clients must `AUTH` with (`requirepass`); none: no auth.
    pub requirepass: Option<String>,
    /// Number of databases (`SELECT 0` … `databases - 1`).
    pub databases: usize,
    /// The listen backlog (`tcp-backlog`, 511 as in Redis; the kernel caps
    /// it at `net.core.somaxconn`).
    pub tcp_backlog: u32,
    /// Extra parameters applied at start (`name`, `value`), as in a
    /// redis.conf: any `CONFIG SET`-able one, and the immutable ones
    /// `CONFIG GET` reports.
    pub params: Vec<(String, String)>,
}

impl Config {
    /// Also listen on a Unix-domain socket at `path` (the `unixsocket`
    /// parameter; `unixsocketperm` in [`params`](Config::params) sets its mode).
    pub fn unixsocket(mut self, path: impl Into<String>) -> Config {
        self.params.push(("unixsocket".to_string(), path.into()));
        self
    }
}

/// Checks configuration directives as the server does at start (a
/// redis.conf line or a `--name value` option), with the server's own
/// parameter table: the `rlockd` binary validates its command line with it.
#[derive(Debug)]
pub struct ParamCheck(RuntimeConfig);

impl ParamCheck {
    /// A check starting from the default configuration.
    pub fn new() -> ParamCheck {
        ParamCheck(RuntimeConfig::new(&Config::default()).expect("the default configuration is valid"))
    }

    /// True if `name` (or its alias) is a parameter rlockd knows.
    pub fn knows(name: &str) -> bool {
        RuntimeConfig::knows(name)
    }

    /// True if `name` (or its alias) changes what rlockd does; the other
    /// parameters are accepted and reported with no effect.
    pub fn has_effect(name: &str) -> bool {
        find_any(name.as_bytes()).is_some_and(|p| EFFECTIVE.contains(&p.name))
    }

    /// Applies `name value` as a start-up directive (later ones win). The
    /// error is the reason Redis gives when it refuses the line, or `None`
    /// for a name rlockd does not know.
    pub fn load(&mut self, name: &str, value: &str) -> Result<(), Option<String>> {
        self.0.load(name, value)
    }
}

impl Default for ParamCheck {
    fn default() -> Self {
        Self::new()
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            requirepass: None,
            databases: 16,
            tcp_backlog: 511,
            params: Vec::new(),
        }
    }
}

/// How a parameter's value is checked and printed.
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// `yes` / `no` (any case).
    Bool,
    /// A base-10 integer (Redis's strict `string2ll`) within the bounds.
    Int(i64, i64),
    /// An octal number within the bounds (`unixsocketperm`).
    Octal(i64, i64),
    /// A memory value (`100`, `1kb`, `2mb`, `1g`…) within the bounds.
    Mem(u64, u64),
    Str,
    /// One of the listed words (any case), printed as listed.
    Enum(&'static [&'static str]),
    /// Validated by a dedicated check in [`RuntimeConfig::apply`].
    Special,
}

/// Who may change a parameter, and whether `CONFIG GET *` lists it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    Mutable,
    /// Set at start only (`can't set immutable config`).
    Immutable,
    /// Refused by `CONFIG SET` unless `enable-protected-configs` allows it.
    Protected,
    /// Settable and readable by exact name, never matched by a pattern
    /// (Redis's debugging parameters).
    Hidden,
}

struct Param {
    name: &'static str,
    alias: Option<&'static str>,
    default: &'static str,
    kind: Kind,
    access: Access,
    /// The profiles that have the parameter: from these versions (Redis's,
    /// Valkey's own; `Profile::has`) and before `until`.
    since: [Version; 2],
    until: [Version; 2],
    /// The profiles where `alias` answers.
    alias_since: [Version; 2],
    /// The profiles where a pattern no longer lists it (the name still
    /// answers: Redis's deprecated parameters).
    hidden_since: [Version; 2],
    /// Valkey's default where it differs from Redis's.
    valkey_default: Option<&'static str>,
    /// A negative value is refused as an unsigned one (`argument must be
    /// greater or equal to 0`) from Redis 8.2 on.
    unsigned: bool,
}

impl Param {
    /// The same parameter also answers to `alias` (the pre-5.0 `slave-*`
    /// and pre-7.0 `*-ziplist-*` names).
    const fn alias(self, alias: &'static str) -> Param {
        Param { alias: Some(alias), ..self }
    }

    /// An alias only some profiles know (Valkey's `primaryauth`, 7.2's
    /// `server-cpulist`).
    const fn alias_in(self, alias: &'static str, since: [Version; 2]) -> Param {
        Param { alias: Some(alias), alias_since: since, ..self }
    }

    /// A parameter that came with a later version.
    const fn since(self, since: [Version; 2]) -> Param {
        Param { since, ..self }
    }

    /// A parameter a later version removed.
    const fn until(self, until: [Version; 2]) -> Param {
        Param { until, ..self }
    }

    /// A parameter a later version stopped listing.
    const fn hidden_in(self, since: [Version; 2]) -> Param {
        Param { hidden_since: since, ..self }
    }

    const fn valkey_default(self, default: &'static str) -> Param {
        Param { valkey_default: Some(default), ..self }
    }

    const fn unsigned(self) -> Param {
        Param { unsigned: true, ..self }
    }

    fn in_profile(&self, profile: Profile) -> bool {
        profile.has(&self.since) && !profile.has(&self.until)
    }

    /// The names the parameter answers to under `profile`.
    fn names(&self, profile: Profile) -> impl Iterator<Item = (&'static str, bool)> {
        let alias = self.alias.filter(|_| profile.has(&self.alias_since));
        [Some((self.name, false)), alias.map(|a| (a, true))].into_iter().flatten()
    }

    fn default_in(&self, profile: Profile) -> &'static str {
        match self.valkey_default {
            Some(d) if profile.is_valkey() => d,
            _ => self.default,
        }
    }
}

const V0: Version = Version::new(0, 0, 0);
const NEVER: Version = Version::NEVER;
/// Every profile.
const ALWAYS: [Version; 2] = [V0, V0];
/// No profile.
const NOWHERE: [Version; 2] = [NEVER, NEVER];
/// Redis from 7.2 and every Valkey: what both Redis 8.2 and Valkey 8 have
/// is dated to the 7.2 line Valkey forked from.
const FROM_7_2: [Version; 2] = [Version::new(7, 2, 0), V0];
/// Redis from 8.2 (not Valkey).
const REDIS_8_2: [Version; 2] = [Version::new(8, 2, 0), NEVER];
/// Valkey from 8.0, Valkey from 8.1 (not Redis).
const VALKEY_8_0: [Version; 2] = [NEVER, Version::new(8, 0, 0)];
const VALKEY_8_1: [Version; 2] = [NEVER, Version::new(8, 1, 0)];
/// Valkey 8 (gone there).
const IN_VALKEY: [Version; 2] = [NEVER, V0];
/// Redis from 8.0 (not Valkey).
const REDIS_8_0: [Version; 2] = [Version::new(8, 0, 0), NEVER];
/// Redis from 8.0 and Valkey from 8.0.
const REDIS_8_0_VALKEY_8_0: [Version; 2] = [Version::new(8, 0, 0), Version::new(8, 0, 0)];
/// Redis from 8.2 and Valkey from 8.0.
const REDIS_8_2_VALKEY_8_0: [Version; 2] = [Version::new(8, 2, 0), Version::new(8, 0, 0)];

const fn param(name: &'static str, default: &'static str, kind: Kind, access: Access) -> Param {
    Param {
        name,
        alias: None,
        default,
        kind,
        access,
        since: ALWAYS,
        until: NOWHERE,
        alias_since: ALWAYS,
        hidden_since: NOWHERE,
        valkey_default: None,
        unsigned: false,
    }
}
const fn p(name: &'static str, default: &'static str, kind: Kind) -> Param {
    param(name, default, kind, Access::Mutable)
}
const fn fixed(name: &'static str, default: &'static str, kind: Kind) -> Param {
    param(name, default, kind, Access::Immutable)
}
const fn protected(name: &'static str, default: &'static str, kind: Kind) -> Param {
    param(name, default, kind, Access::Protected)
}
const fn hidden(name: &'static str, default: &'static str, kind: Kind) -> Param {
    param(name, default, kind, Access::Hidden)
}

const I32: i64 = i32::MAX as i64;
const I32_MIN: i64 = i32::MIN as i64;
const I64: i64 = i64::MAX;
/// Memory bounds: a `long long` parameter's maximum, and an unsigned one's.
const LL: u64 = i64::MAX as u64;
const ULL: u64 = u64::MAX;

// Enum words in Redis's order (its error text lists them so).
const ACL_PUBSUB_DEFAULT: &[&str] = &["allchannels", "resetchannels"];
const APPENDFSYNC: &[&str] = &["everysec", "always", "no"];
const CLUSTER_PREFERRED_ENDPOINT_TYPE: &[&str] = &["ip", "hostname", "unknown-endpoint"];
const LOGLEVEL: &[&str] = &["debug", "verbose", "notice", "warning"];
const MAXMEMORY_POLICY: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];
const OOM_SCORE_ADJ: &[&str] = &["no", "yes", "relative", "absolute"];
const PROPAGATION_ERROR_BEHAVIOR: &[&str] = &["ignore", "panic", "panic-on-replicas"];
const REPL_DISKLESS_LOAD: &[&str] = &["disabled", "on-empty-db", "swapdb"];
const SANITIZE_DUMP_PAYLOAD: &[&str] = &["no", "yes", "clients"];
const SHUTDOWN_ON: &[&str] = &["default", "save", "nosave", "now", "force"];
const TLS_AUTH_CLIENTS: &[&str] = &["no", "yes", "optional"];
const PROTECTED_ACTION: &[&str] = &["no", "yes", "local"];
const SUPERVISED: &[&str] = &["upstart", "systemd", "auto", "no"];
const LOG_FORMAT: &[&str] = &["legacy", "logfmt"];
const LOG_TIMESTAMP_FORMAT: &[&str] = &["legacy", "iso8601", "milliseconds"];
const RDB_VERSION_CHECK: &[&str] = &["strict", "relaxed"];
const SYSLOG_FACILITY: &[&str] =
    &["user", "local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"];

/// Every parameter of redis-server 7.0 (its `CONFIG GET *` names, defaults,
/// bounds and enum lists as 7.0.15 answers them), then rlockd's own. Most
/// steer persistence, replication, cluster, TLS or process management and
/// are accepted and reported with no effect in rlockd (README lists the
/// ones that act).
#[rustfmt::skip]
static PARAMS: &[Param] = &[
    p("acl-pubsub-default", "resetchannels", Kind::Enum(ACL_PUBSUB_DEFAULT)),
    fixed("aclfile", "", Kind::Str),
    p("acllog-max-len", "128", Kind::Int(0, I64)),
    p("active-defrag-cycle-max", "25", Kind::Int(1, 99)),
    p("active-defrag-cycle-min", "1", Kind::Int(1, 99)),
    p("active-defrag-ignore-bytes", "104857600", Kind::Mem(1, LL)),
    p("active-defrag-max-scan-fields", "1000", Kind::Int(1, I64)),
    p("active-defrag-threshold-lower", "10", Kind::Int(0, 1000)),
    p("active-defrag-threshold-upper", "100", Kind::Int(0, 1000)),
    p("active-expire-effort", "1", Kind::Int(1, 10)),
    p("activedefrag", "no", Kind::Bool),
    p("activerehashing", "yes", Kind::Bool),
    fixed("always-show-logo", "no", Kind::Bool),
    p("aof-disable-auto-gc", "no", Kind::Bool).hidden_in(FROM_7_2),
    p("aof-load-truncated", "yes", Kind::Bool),
    p("aof-rewrite-incremental-fsync", "yes", Kind::Bool),
    p("aof-timestamp-enabled", "no", Kind::Bool),
    p("aof-use-rdb-preamble", "yes", Kind::Bool),
    fixed("aof_rewrite_cpulist", "", Kind::Str).alias_in("aof-rewrite-cpulist", FROM_7_2),
    fixed("appenddirname", "appendonlydir", Kind::Str),
    fixed("appendfilename", "appendonly.aof", Kind::Str),
    p("appendfsync", "everysec", Kind::Enum(APPENDFSYNC)),
    p("appendonly", "no", Kind::Bool),
    p("auto-aof-rewrite-min-size", "67108864", Kind::Mem(0, LL)),
    p("auto-aof-rewrite-percentage", "100", Kind::Int(0, I32)),
    fixed("bgsave_cpulist", "", Kind::Str).alias_in("bgsave-cpulist", FROM_7_2),
    p("bind", "* -::*", Kind::Special),
    p("bind-source-addr", "", Kind::Str),
    fixed("bio_cpulist", "", Kind::Str).alias_in("bio-cpulist", FROM_7_2),
    p("busy-reply-threshold", "5000", Kind::Int(0, I64)).alias("lua-time-limit"),
    p("client-output-buffer-limit", "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60", Kind::Special),
    p("client-query-buffer-limit", "1073741824", Kind::Mem(1048576, LL)),
    p("cluster-allow-pubsubshard-when-down", "yes", Kind::Bool),
    p("cluster-allow-reads-when-down", "no", Kind::Bool),
    p("cluster-allow-replica-migration", "yes", Kind::Bool),
    p("cluster-announce-bus-port", "0", Kind::Int(0, 65535)),
    p("cluster-announce-hostname", "", Kind::Special),
    p("cluster-announce-ip", "", Kind::Str),
    p("cluster-announce-port", "0", Kind::Int(0, 65535)),
    p("cluster-announce-tls-port", "0", Kind::Int(0, 65535)),
    fixed("cluster-config-file", "nodes.conf", Kind::Str),
    fixed("cluster-enabled", "no", Kind::Bool),
    p("cluster-link-sendbuf-limit", "0", Kind::Mem(0, ULL)),
    p("cluster-migration-barrier", "1", Kind::Int(0, I32)),
    p("cluster-node-timeout", "15000", Kind::Int(0, I64)),
    fixed("cluster-port", "0", Kind::Int(0, 65535)),
    p("cluster-preferred-endpoint-type", "ip", Kind::Enum(CLUSTER_PREFERRED_ENDPOINT_TYPE)),
    p("cluster-replica-no-failover", "no", Kind::Bool).alias("cluster-slave-no-failover"),
    p("cluster-replica-validity-factor", "10", Kind::Int(0, I32)).alias("cluster-slave-validity-factor"),
    p("cluster-require-full-coverage", "yes", Kind::Bool),
    p("crash-log-enabled", "yes", Kind::Bool),
    p("crash-memcheck-enabled", "yes", Kind::Bool),
    fixed("daemonize", "no", Kind::Bool),
    fixed("databases", "16", Kind::Int(1, I32)),
    protected("dbfilename", "dump.rdb", Kind::Str),
    protected("dir", "", Kind::Special),
    fixed("disable-thp", "yes", Kind::Bool),
    p("dynamic-hz", "yes", Kind::Bool).until(IN_VALKEY),
    fixed("enable-debug-command", "no", Kind::Enum(PROTECTED_ACTION)),
    fixed("enable-module-command", "no", Kind::Enum(PROTECTED_ACTION)),
    fixed("enable-protected-configs", "no", Kind::Enum(PROTECTED_ACTION)),
    p("hash-max-listpack-entries", "512", Kind::Int(0, I64)).unsigned().alias("hash-max-ziplist-entries"),
    p("hash-max-listpack-value", "64", Kind::Mem(0, LL)).alias("hash-max-ziplist-value"),
    p("hll-sparse-max-bytes", "3000", Kind::Mem(0, LL)),
    p("hz", "10", Kind::Int(0, I32)),
    p("ignore-warnings", "", Kind::Str),
    fixed("io-threads", "1", Kind::Int(1, 128)),
    fixed("io-threads-do-reads", "no", Kind::Bool).until(REDIS_8_0_VALKEY_8_0),
    p("jemalloc-bg-thread", "yes", Kind::Bool),
    hidden("key-load-delay", "0", Kind::Int(I32_MIN, I32)),
    p("latency-monitor-threshold", "0", Kind::Int(0, I64)),
    p("latency-tracking", "yes", Kind::Bool),
    p("latency-tracking-info-percentiles", "50 99 99.9", Kind::Special),
    p("lazyfree-lazy-eviction", "no", Kind::Bool).valkey_default("yes"),
    p("lazyfree-lazy-expire", "no", Kind::Bool).valkey_default("yes"),
    p("lazyfree-lazy-server-del", "no", Kind::Bool).valkey_default("yes"),
    p("lazyfree-lazy-user-del", "no", Kind::Bool).valkey_default("yes"),
    p("lazyfree-lazy-user-flush", "no", Kind::Bool).valkey_default("yes"),
    p("lfu-decay-time", "1", Kind::Int(0, I32)),
    p("lfu-log-factor", "10", Kind::Int(0, I32)),
    p("list-compress-depth", "0", Kind::Int(0, I32)),
    p("list-max-listpack-size", "-2", Kind::Int(I32_MIN, I32)).alias("list-max-ziplist-size"),
    hidden("loading-process-events-interval-bytes", "2097152", Kind::Int(1024, I32)),
    fixed("logfile", "", Kind::Str),
    p("loglevel", "notice", Kind::Enum(LOGLEVEL)),
    p("masterauth", "", Kind::Str).alias_in("primaryauth", VALKEY_8_0),
    p("masteruser", "", Kind::Str).alias_in("primaryuser", VALKEY_8_0),
    p("maxclients", "10000", Kind::Int(1, 4294967295)),
    p("maxmemory", "0", Kind::Mem(0, ULL)),
    p("maxmemory-clients", "0", Kind::Special),
    p("maxmemory-eviction-tenacity", "10", Kind::Int(0, 100)),
    p("maxmemory-policy", "noeviction", Kind::Enum(MAXMEMORY_POLICY)),
    p("maxmemory-samples", "5", Kind::Int(1, I32)),
    p("min-replicas-max-lag", "10", Kind::Int(0, I32)).alias("min-slaves-max-lag"),
    p("min-replicas-to-write", "0", Kind::Int(0, I32)).alias("min-slaves-to-write"),
    p("no-appendfsync-on-rewrite", "no", Kind::Bool),
    p("notify-keyspace-events", "", Kind::Special),
    p("oom-score-adj", "no", Kind::Special),
    p("oom-score-adj-values", "0 200 800", Kind::Special),
    fixed("pidfile", "", Kind::Str),
    p("port", "6379", Kind::Int(0, 65535)),
    p("proc-title-template", "{title} {listen-addr} {server-mode}", Kind::Special),
    p("propagation-error-behavior", "ignore", Kind::Enum(PROPAGATION_ERROR_BEHAVIOR)),
    p("protected-mode", "yes", Kind::Bool),
    p("proto-max-bulk-len", "536870912", Kind::Mem(1048576, LL)),
    p("rdb-del-sync-files", "no", Kind::Bool),
    hidden("rdb-key-save-delay", "0", Kind::Int(I32_MIN, I32)),
    p("rdb-save-incremental-fsync", "yes", Kind::Bool),
    fixed("rdbchecksum", "yes", Kind::Bool),
    p("rdbcompression", "yes", Kind::Bool),
    p("repl-backlog-size", "1048576", Kind::Mem(1, LL)).valkey_default("10485760"),
    p("repl-backlog-ttl", "3600", Kind::Int(0, I64)),
    p("repl-disable-tcp-nodelay", "no", Kind::Bool),
    p("repl-diskless-load", "disabled", Kind::Enum(REPL_DISKLESS_LOAD)),
    p("repl-diskless-sync", "yes", Kind::Bool),
    p("repl-diskless-sync-delay", "5", Kind::Int(0, I32)),
    p("repl-diskless-sync-max-replicas", "0", Kind::Int(0, I32)),
    p("repl-ping-replica-period", "10", Kind::Int(1, I32)).alias("repl-ping-slave-period"),
    p("repl-timeout", "60", Kind::Int(1, I32)),
    p("replica-announce-ip", "", Kind::Str).alias("slave-announce-ip"),
    p("replica-announce-port", "0", Kind::Int(0, 65535)).alias("slave-announce-port"),
    p("replica-announced", "yes", Kind::Bool),
    p("replica-ignore-disk-write-errors", "no", Kind::Bool),
    p("replica-ignore-maxmemory", "yes", Kind::Bool).alias("slave-ignore-maxmemory"),
    p("replica-lazy-flush", "no", Kind::Bool).alias("slave-lazy-flush").valkey_default("yes"),
    p("replica-priority", "100", Kind::Int(0, I32)).alias("slave-priority"),
    p("replica-read-only", "yes", Kind::Bool).alias("slave-read-only"),
    p("replica-serve-stale-data", "yes", Kind::Bool).alias("slave-serve-stale-data"),
    fixed("replicaof", "", Kind::Special).alias("slaveof"),
    p("requirepass", "", Kind::Str),
    p("sanitize-dump-payload", "no", Kind::Enum(SANITIZE_DUMP_PAYLOAD)),
    p("save", "", Kind::Special),
    fixed("server_cpulist", "", Kind::Str).alias_in("server-cpulist", FROM_7_2),
    p("set-max-intset-entries", "512", Kind::Int(0, I64)).unsigned(),
    fixed("set-proc-title", "yes", Kind::Bool),
    p("shutdown-on-sigint", "default", Kind::Special),
    p("shutdown-on-sigterm", "default", Kind::Special),
    p("shutdown-timeout", "10", Kind::Int(0, I32)),
    p("slowlog-log-slower-than", "10000", Kind::Int(-1, I64)).alias_in("commandlog-execution-slower-than", VALKEY_8_1),
    p("slowlog-max-len", "128", Kind::Int(0, I64)).alias_in("commandlog-slow-execution-max-len", VALKEY_8_1),
    fixed("socket-mark-id", "0", Kind::Int(0, 4294967295)),
    p("stop-writes-on-bgsave-error", "yes", Kind::Bool),
    p("stream-node-max-bytes", "4096", Kind::Mem(0, LL)),
    p("stream-node-max-entries", "100", Kind::Int(0, I64)),
    fixed("supervised", "no", Kind::Enum(SUPERVISED)),
    fixed("syslog-enabled", "no", Kind::Bool),
    fixed("syslog-facility", "local0", Kind::Enum(SYSLOG_FACILITY)),
    fixed("syslog-ident", "redis", Kind::Str).valkey_default("valkey"),
    fixed("tcp-backlog", "511", Kind::Int(0, I32)),
    p("tcp-keepalive", "300", Kind::Int(0, I32)),
    p("timeout", "0", Kind::Int(0, I32)),
    p("tls-auth-clients", "yes", Kind::Enum(TLS_AUTH_CLIENTS)),
    p("tls-ca-cert-dir", "", Kind::Str),
    p("tls-ca-cert-file", "", Kind::Str),
    p("tls-cert-file", "", Kind::Str),
    p("tls-ciphers", "", Kind::Str),
    p("tls-ciphersuites", "", Kind::Str),
    p("tls-client-cert-file", "", Kind::Str),
    p("tls-client-key-file", "", Kind::Str),
    p("tls-client-key-file-pass", "", Kind::Str),
    p("tls-cluster", "no", Kind::Bool),
    p("tls-dh-params-file", "", Kind::Str),
    p("tls-key-file", "", Kind::Str),
    p("tls-key-file-pass", "", Kind::Str),
    p("tls-port", "0", Kind::Int(0, 65535)),
    p("tls-prefer-server-ciphers", "no", Kind::Bool),
    p("tls-protocols", "", Kind::Str),
    p("tls-replication", "no", Kind::Bool),
    p("tls-session-cache-size", "20480", Kind::Int(0, I32)),
    p("tls-session-cache-timeout", "300", Kind::Int(0, I32)),
    p("tls-session-caching", "yes", Kind::Bool),
    p("tracking-table-max-keys", "1000000", Kind::Int(0, I64)).unsigned(),
    fixed("unixsocket", "", Kind::Str),
    fixed("unixsocketperm", "0", Kind::Octal(0, 0o777)),
    p("zset-max-listpack-entries", "128", Kind::Int(0, I64)).unsigned().alias("zset-max-ziplist-entries"),
    p("zset-max-listpack-value", "64", Kind::Mem(0, LL)).alias("zset-max-ziplist-value"),
    // rlockd's own parameters: settable at any time, and hidden as Redis's
    // debugging ones are (read and set by exact name only), so `CONFIG GET *`
    // lists exactly Redis 7.0's parameters.
    // The RLOCKD test-control namespace (`cmd/control.rs` acts on a change).
    hidden("test-control", "yes", Kind::Bool),
    // Parameters of later versions (README: which each profile has).
    p("active-defrag-cycle-us", "500", Kind::Int(0, 100000)).since(VALKEY_8_1),
    p("availability-zone", "", Kind::Str).since(VALKEY_8_0),
    p("cluster-announce-client-ipv4", "", Kind::Special).since(VALKEY_8_0),
    p("cluster-announce-client-ipv6", "", Kind::Special).since(VALKEY_8_0),
    p("cluster-announce-human-nodename", "", Kind::Str).since(FROM_7_2),
    p("cluster-blacklist-ttl", "60", Kind::Int(i64::MIN, I64)).since(VALKEY_8_0),
    p("cluster-compatibility-sample-ratio", "0", Kind::Int(0, 100)).since(REDIS_8_0),
    p("cluster-manual-failover-timeout", "5000", Kind::Int(1, I32)).since(VALKEY_8_0),
    p("cluster-slot-stats-enabled", "no", Kind::Bool).since(REDIS_8_2_VALKEY_8_0),
    p("commandlog-large-reply-max-len", "128", Kind::Int(0, I64)).since(VALKEY_8_1),
    p("commandlog-large-request-max-len", "128", Kind::Int(0, I64)).since(VALKEY_8_1),
    p("commandlog-reply-larger-than", "1048576", Kind::Int(-1, I64)).since(VALKEY_8_1),
    p("commandlog-request-larger-than", "1048576", Kind::Int(-1, I64)).since(VALKEY_8_1),
    p("dual-channel-replication-enabled", "no", Kind::Bool).since(VALKEY_8_0),
    p("extended-redis-compatibility", "no", Kind::Bool).since(VALKEY_8_0),
    p("hide-user-data-from-log", "no", Kind::Bool).since(FROM_7_2).valkey_default("yes"),
    p("import-mode", "no", Kind::Bool).since(VALKEY_8_1),
    p("locale-collate", "", Kind::Special).since(FROM_7_2),
    p("log-format", "legacy", Kind::Enum(LOG_FORMAT)).since(VALKEY_8_1),
    p("log-timestamp-format", "legacy", Kind::Enum(LOG_TIMESTAMP_FORMAT)).since(VALKEY_8_1),
    p("max-new-connections-per-cycle", "10", Kind::Int(1, 1000)).since(FROM_7_2).unsigned(),
    p("max-new-tls-connections-per-cycle", "1", Kind::Int(1, 1000)).since(FROM_7_2).unsigned(),
    p("prefetch-batch-max-size", "16", Kind::Int(0, 128)).since(VALKEY_8_0),
    p("rdb-version-check", "strict", Kind::Enum(RDB_VERSION_CHECK)).since(VALKEY_8_1),
    p("rdma-bind", "", Kind::Special).since(VALKEY_8_0),
    fixed("rdma-completion-vector", "-1", Kind::Int(-1, I32)).since(VALKEY_8_0),
    p("rdma-port", "0", Kind::Int(0, 65535)).since(VALKEY_8_0),
    fixed("rdma-rx-size", "1048576", Kind::Int(0, I32)).since(VALKEY_8_0),
    p("replica-full-sync-buffer-limit", "0", Kind::Mem(0, LL)).since(REDIS_8_0),
    p("set-max-listpack-entries", "128", Kind::Int(0, I64)).since(FROM_7_2).unsigned(),
    p("set-max-listpack-value", "64", Kind::Int(0, I64)).since(FROM_7_2).unsigned(),
    fixed("unixsocketgroup", "", Kind::Str).since(VALKEY_8_0),
    // The server rlockd answers as (`version::Profile`): a Redis version,
    // or a Valkey version (which takes precedence while set).
    hidden("redis-version", crate::version::REDIS_VERSION, Kind::Special),
    hidden("valkey-version", "", Kind::Special),
];

/// The parameters that change what rlockd does (README's configuration
/// notes list them); every other one is validated, stored and reported
/// like Redis but has no effect (persistence, replication, cluster, TLS,
/// process management, encodings' thresholds…).
const EFFECTIVE: &[&str] = &[
    "port",
    "bind",
    "unixsocket",
    "unixsocketperm",
    "databases",
    "tcp-backlog",
    "requirepass",
    "loglevel",
    "protected-mode",
    "maxclients",
    "timeout",
    "hz",
    "notify-keyspace-events",
    "busy-reply-threshold",
    "client-output-buffer-limit",
    "proto-max-bulk-len",
    "hll-sparse-max-bytes",
    "stream-node-max-bytes",
    "stream-node-max-entries",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "commandlog-request-larger-than",
    "commandlog-large-request-max-len",
    "commandlog-reply-larger-than",
    "commandlog-large-reply-max-len",
    "latency-tracking",
    "latency-tracking-info-percentiles",
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "lfu-log-factor",
    "lfu-decay-time",
    "hash-max-listpack-entries",
    "hash-max-listpack-value",
    "set-max-intset-entries",
    "set-max-listpack-entries",
    "set-max-listpack-value",
    "zset-max-listpack-entries",
    "zset-max-listpack-value",
    "list-max-listpack-size",
    "min-replicas-to-write",
    "replicaof",
    "masterauth",
    "masteruser",
    "repl-timeout",
    "repl-ping-replica-period",
    "repl-backlog-size",
    "replica-announce-ip",
    "replica-announce-port",
    "replica-read-only",
    "tracking-table-max-keys",
    "enable-debug-command",
    "test-control",
    "redis-version",
    "valkey-version",
];

/// The parameter `name` (or an alias) names under `profile`.
fn find(profile: Profile, name: &[u8]) -> Option<&'static Param> {
    PARAMS
        .iter()
        .filter(|p| p.in_profile(profile))
        .find(|p| p.names(profile).any(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name)))
}

/// The parameter `name` names under any profile.
fn find_any(name: &[u8]) -> Option<&'static Param> {
    PARAMS.iter().find(|p| {
        p.name.as_bytes().eq_ignore_ascii_case(name) || p.alias.is_some_and(|a| a.as_bytes().eq_ignore_ascii_case(name))
    })
}

/// Parses a memory value as Redis's `memtoull`: digits (none is 0) and an
/// optional unit `b`, `k`, `kb`, `m`, `mb`, `g`, `gb` (any case; `k` is
/// 1000, `kb` 1024). Like Redis, a number too large saturates and the unit
/// multiplication wraps.
pub fn parse_mem(s: &str) -> Option<u64> {
    let digits_end = s.bytes().position(|c| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(digits_end);
    let mul: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" => 1000,
        "kb" => 1024,
        "m" => 1000 * 1000,
        "mb" => 1024 * 1024,
        "g" => 1000 * 1000 * 1000,
        "gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    let n = num.bytes().fold(0u64, |acc, c| acc.saturating_mul(10).saturating_add(u64::from(c - b'0')));
    Some(n.wrapping_mul(mul))
}

/// C's `strtoll(s, &end, 10)` with the whole string consumed: leading
/// spaces, a sign and leading zeros allowed; `None` on junk or overflow.
/// An empty string reads as 0, as in C.
fn strtoll_full(s: &str) -> Option<i64> {
    if s.is_empty() {
        return Some(0);
    }
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    if t.is_empty() {
        return None;
    }
    let (neg, digits) = match t.as_bytes()[0] {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let v: i128 = digits.bytes().try_fold(0i128, |acc, c| {
        let n = acc * 10 + i128::from(c - b'0');
        (n <= i128::from(i64::MAX) + 1).then_some(n)
    })?;
    let v = if neg { -v } else { v };
    i64::try_from(v).ok()
}

/// Parses the `notify-keyspace-events` letters into flags.
pub fn parse_notify(s: &str) -> Option<u32> {
    use crate::db::notify::*;
    let mut f = 0;
    for c in s.chars() {
        f |= match c {
            'A' => ALL,
            'g' => GENERIC,
            '$' => STRING,
            'l' => LIST,
            's' => SET,
            'h' => HASH,
            'z' => ZSET,
            'x' => EXPIRED,
            'e' => EVICTED,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            't' => STREAM,
            'm' => KEY_MISS,
            'd' => MODULE,
            'n' => NEW,
            _ => return None,
        };
    }
    Some(f)
}

/// Prints flags back as Redis does (`keyspaceEventsFlagsToString`).
pub fn notify_to_string(f: u32) -> String {
    use crate::db::notify::*;
    let mut s = String::new();
    if f & ALL == ALL {
        s.push('A');
    } else {
        for (bit, c) in [
            (GENERIC, 'g'),
            (STRING, '$'),
            (LIST, 'l'),
            (SET, 's'),
            (HASH, 'h'),
            (ZSET, 'z'),
            (EXPIRED, 'x'),
            (EVICTED, 'e'),
            (STREAM, 't'),
            (MODULE, 'd'),
            // Redis prints `n` only here: with `A` it is silently dropped.
            (NEW, 'n'),
        ] {
            if f & bit != 0 {
                s.push(c);
            }
        }
    }
    for (bit, c) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if f & bit != 0 {
            s.push(c);
        }
    }
    s
}

/// Why a parameter could not be set.
enum ApplyError {
    Unknown,
    /// Redis's reason, without the `CONFIG SET failed` framing.
    Invalid(String),
}

/// Parsed `client-output-buffer-limit` for one class: hard, soft bytes, soft seconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BufferLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_secs: u64,
}

/// Who may run a protected command (`enable-debug-command`): Redis's
/// `PROTECTED_ACTION_ALLOWED_*`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtectedAction {
    #[default]
    No,
    Yes,
    /// Clients on the loopback interface or a Unix socket.
    Local,
}

impl ProtectedAction {
    /// The stored word (`no`, `yes`, `local`).
    fn parse(v: &str) -> ProtectedAction {
        match v {
            "yes" => ProtectedAction::Yes,
            "local" => ProtectedAction::Local,
            _ => ProtectedAction::No,
        }
    }

    /// Redis's `allowProtectedAction`.
    pub fn allows(self, local_client: bool) -> bool {
        self == ProtectedAction::Yes || (self == ProtectedAction::Local && local_client)
    }
}

/// Runtime parameters (`CONFIG GET`/`SET`): each value as `CONFIG GET`
/// prints it, and the ones rlockd acts on parsed once into typed fields
/// ([`RuntimeConfig::typed`], the one place a stored value is read as a
/// number, a flag or a word). Code outside this module reads the fields;
/// `get_str` is for what is shown as it is stored (`INFO`, aux fields).
#[derive(Debug, Clone, Default)]
pub struct RuntimeConfig {
    values: Vec<String>,
    pub requirepass: Option<Bytes>,
    pub notify_flags: u32,
    pub busy_threshold_ms: u64,
    pub pubsub_limit: BufferLimit,
    /// `client-output-buffer-limit normal` (0 0 0: none).
    pub normal_limit: BufferLimit,
    /// `client-output-buffer-limit replica`.
    pub replica_limit: BufferLimit,
    pub proto_max_bulk: i64,
    /// `hll-sparse-max-bytes`: a sparse HyperLogLog growing past it turns dense.
    pub hll_sparse_max_bytes: usize,
    pub hz: u64,
    pub slowlog_slower_than: i64,
    pub slowlog_max_len: usize,
    /// `commandlog-request-larger-than` (-1: off) and
    /// `commandlog-large-request-max-len` (Valkey 8.1).
    pub commandlog_request_larger_than: i64,
    pub commandlog_request_max_len: usize,
    /// `commandlog-reply-larger-than` (-1: off) and
    /// `commandlog-large-reply-max-len` (Valkey 8.1).
    pub commandlog_reply_larger_than: i64,
    pub commandlog_reply_max_len: usize,
    /// `latency-tracking`: per-command latency histograms.
    pub latency_tracking: bool,
    /// `latency-tracking-info-percentiles`, as parsed.
    pub latency_percentiles: Vec<f64>,
    /// `maxmemory` in bytes (0: no limit).
    pub maxmemory: u64,
    /// `maxmemory-policy`.
    pub maxmemory_policy: crate::db::evict::Policy,
    /// `maxmemory-samples`.
    pub maxmemory_samples: usize,
    /// `min-replicas-to-write`: writes are refused with NOREPLICAS unless
    /// that many replicas acknowledged within `min-replicas-max-lag`.
    pub min_replicas_to_write: i64,
    /// `min-replicas-max-lag`, seconds.
    pub min_replicas_max_lag: u64,
    /// `maxclients`.
    pub maxclients: usize,
    /// `timeout`: idle seconds before a normal client is closed (0: never).
    pub timeout_secs: u64,
    /// `protected-mode`.
    pub protected_mode: bool,
    /// `enable-debug-command` (`no`, `yes` or `local`; immutable).
    pub debug_command: ProtectedAction,
    /// `enable-protected-configs`.
    pub protected_configs: ProtectedAction,
    /// `stream-node-max-bytes` and `stream-node-max-entries`: where a
    /// stream's listpack node is closed (0: no limit).
    pub stream_node: crate::db::stream::NodeLimits,
    /// The encoding thresholds (`hash-max-listpack-entries`…,
    /// `list-max-listpack-size`).
    pub enc_limits: crate::db::EncLimits,
    /// `lfu-log-factor` and `lfu-decay-time`.
    pub lfu: crate::db::evict::Lfu,
    /// The server rlockd answers as (`redis-version`, `valkey-version`).
    pub profile: crate::version::Profile,
    /// `port` (the one the listener got, once it listens).
    pub port: u16,
    /// `tcp-backlog`.
    pub tcp_backlog: u32,
    /// `unixsocketperm`, as a mode.
    pub unixsocketperm: u32,
    /// `appendonly`.
    pub appendonly: bool,
    /// `acllog-max-len`.
    pub acllog_max_len: usize,
    /// `acl-pubsub-default allchannels`: new users may use every channel.
    pub acl_pubsub_allchannels: bool,
    /// `tracking-table-max-keys` (0: no limit).
    pub tracking_table_max_keys: usize,
    /// `repl-backlog-size`, bytes.
    pub repl_backlog_size: u64,
    /// `repl-timeout`, seconds.
    pub repl_timeout_secs: u64,
    /// `repl-ping-replica-period`, seconds.
    pub repl_ping_replica_period_secs: u64,
    /// `replica-priority`.
    pub replica_priority: i64,
    /// `replica-read-only`.
    pub replica_read_only: bool,
    /// `replica-announced`.
    pub replica_announced: bool,
    /// `replica-announce-port` (0: the listening port).
    pub replica_announce_port: u16,
    /// `cluster-node-timeout`, milliseconds.
    pub cluster_node_timeout_ms: u64,
    /// `cluster-require-full-coverage`.
    pub cluster_require_full_coverage: bool,
    /// `cluster-allow-reads-when-down`.
    pub cluster_allow_reads_when_down: bool,
    /// `cluster-allow-pubsubshard-when-down`.
    pub cluster_allow_pubsubshard_when_down: bool,
    /// The RLOCKD test-control namespace answers (`test-control`).
    pub test_control: bool,
}

impl RuntimeConfig {
    pub fn new(cfg: &Config) -> Result<Self, String> {
        // Every default comes from the parameter table, through the same
        // parsing as a CONFIG SET.
        let mut rc =
            RuntimeConfig { values: PARAMS.iter().map(|p| p.default.to_string()).collect(), ..Default::default() };
        for p in PARAMS {
            rc.typed(p.name, p.default);
        }
        // The server it answers as first: which parameters exist and their
        // defaults follow from it.
        let version = |(k, _): &&(String, String)| ["redis-version", "valkey-version"].contains(&k.as_str());
        for (k, v) in cfg.params.iter().filter(version) {
            rc.load(k, v).map_err(|why| format!("'{k} {v}': {}", why.unwrap_or_default()))?;
        }
        for (k, v) in &cfg.params {
            if ["port", "bind", "databases", "tcp-backlog"].iter().any(|f| f.eq_ignore_ascii_case(k)) {
                return Err(format!("'{k}' is set by the Config field of that name, not in params"));
            }
            rc.load(k, v).map_err(|why| match why {
                Some(why) => format!("'{k} {v}': {why}"),
                None => format!("'{k}': unknown parameter"),
            })?;
        }
        // The listener's own settings: what `Config` says is what is used.
        if rc.get_str("dir").is_empty() {
            let cwd = std::env::current_dir().map(|d| d.to_string_lossy().into_owned()).unwrap_or_default();
            rc.force("dir", &cwd);
        }
        rc.force("port", &cfg.bind.port().to_string());
        rc.force("bind", &cfg.bind.ip().to_string());
        rc.force("databases", &cfg.databases.to_string());
        rc.force("tcp-backlog", &cfg.tcp_backlog.to_string());
        if let Some(pw) = &cfg.requirepass {
            rc.set(b"requirepass", pw.as_bytes()).map_err(|e| e.to_string())?;
        }
        Ok(rc)
    }

    /// Sets the typed field of parameter `name` from `v`, its value as
    /// stored (checked and canonical, so it parses: the fallbacks are never
    /// taken). Parameters without one are only stored.
    fn typed(&mut self, name: &str, v: &str) {
        fn num<T: std::str::FromStr + Default>(v: &str) -> T {
            v.parse().unwrap_or_default()
        }
        let yes = v == "yes";
        match name {
            "requirepass" => self.requirepass = (!v.is_empty()).then(|| Bytes::from(v.to_string())),
            "notify-keyspace-events" => self.notify_flags = parse_notify(v).unwrap_or(0),
            "client-output-buffer-limit" => {
                let _ = self.apply_obuf_limits(v);
            }
            "latency-tracking-info-percentiles" => {
                self.latency_percentiles = v.split(' ').filter(|w| !w.is_empty()).map(num).collect();
            }
            "busy-reply-threshold" => self.busy_threshold_ms = num(v),
            "proto-max-bulk-len" => self.proto_max_bulk = num(v),
            "hll-sparse-max-bytes" => self.hll_sparse_max_bytes = num(v),
            "hz" => self.hz = num::<u64>(v).clamp(1, 500),
            "slowlog-log-slower-than" => self.slowlog_slower_than = num(v),
            "slowlog-max-len" => self.slowlog_max_len = num(v),
            "commandlog-request-larger-than" => self.commandlog_request_larger_than = num(v),
            "commandlog-large-request-max-len" => self.commandlog_request_max_len = num(v),
            "commandlog-reply-larger-than" => self.commandlog_reply_larger_than = num(v),
            "commandlog-large-reply-max-len" => self.commandlog_reply_max_len = num(v),
            "latency-tracking" => self.latency_tracking = yes,
            "maxmemory" => self.maxmemory = num(v),
            "maxmemory-policy" => self.maxmemory_policy = crate::db::evict::Policy::parse(v),
            "maxmemory-samples" => self.maxmemory_samples = num(v),
            "min-replicas-to-write" => self.min_replicas_to_write = num(v),
            "min-replicas-max-lag" => self.min_replicas_max_lag = num(v),
            "maxclients" => self.maxclients = num(v),
            "timeout" => self.timeout_secs = num(v),
            "protected-mode" => self.protected_mode = yes,
            "enable-debug-command" => self.debug_command = ProtectedAction::parse(v),
            "enable-protected-configs" => self.protected_configs = ProtectedAction::parse(v),
            "stream-node-max-bytes" => self.stream_node.max_bytes = num(v),
            "stream-node-max-entries" => self.stream_node.max_entries = num(v),
            "hash-max-listpack-entries" => self.enc_limits.hash_entries = num(v),
            "hash-max-listpack-value" => self.enc_limits.hash_value = num(v),
            "set-max-intset-entries" => self.enc_limits.set_intset_entries = num(v),
            "set-max-listpack-entries" => self.enc_limits.set_listpack_entries = num(v),
            "set-max-listpack-value" => self.enc_limits.set_listpack_value = num(v),
            "zset-max-listpack-entries" => self.enc_limits.zset_entries = num(v),
            "zset-max-listpack-value" => self.enc_limits.zset_value = num(v),
            "list-max-listpack-size" => self.enc_limits.list_fill = num(v),
            "lfu-log-factor" => self.lfu.log_factor = num(v),
            "lfu-decay-time" => self.lfu.decay_time = num(v),
            "redis-version" if self.get_str("valkey-version").is_empty() => {
                let profile = parse_version(v).map_or_else(|_| Profile::default(), Profile::redis);
                self.answer_as(profile);
            }
            "valkey-version" => {
                let profile = match parse_version(v) {
                    Ok(valkey) => Profile::valkey(valkey),
                    Err(_) => {
                        parse_version(self.get_str("redis-version")).map_or_else(|_| Profile::default(), Profile::redis)
                    }
                };
                self.answer_as(profile);
            }
            "port" => self.port = num(v),
            "tcp-backlog" => self.tcp_backlog = num(v),
            "unixsocketperm" => self.unixsocketperm = u32::from_str_radix(v, 8).unwrap_or(0),
            "appendonly" => self.appendonly = yes,
            "acllog-max-len" => self.acllog_max_len = num(v),
            "acl-pubsub-default" => self.acl_pubsub_allchannels = v == "allchannels",
            "tracking-table-max-keys" => self.tracking_table_max_keys = num(v),
            "repl-backlog-size" => self.repl_backlog_size = num(v),
            "repl-timeout" => self.repl_timeout_secs = num(v),
            "repl-ping-replica-period" => self.repl_ping_replica_period_secs = num(v),
            "replica-priority" => self.replica_priority = num(v),
            "replica-read-only" => self.replica_read_only = yes,
            "replica-announced" => self.replica_announced = yes,
            "replica-announce-port" => self.replica_announce_port = num(v),
            "cluster-node-timeout" => self.cluster_node_timeout_ms = num(v),
            "cluster-require-full-coverage" => self.cluster_require_full_coverage = yes,
            "cluster-allow-reads-when-down" => self.cluster_allow_reads_when_down = yes,
            "cluster-allow-pubsubshard-when-down" => self.cluster_allow_pubsubshard_when_down = yes,
            "test-control" => self.test_control = yes,
            _ => {}
        }
    }

    /// Switches the profile; a parameter still at the old server's default
    /// takes the new server's (Valkey's `lazyfree-*` are `yes`…).
    fn answer_as(&mut self, profile: Profile) {
        let old = std::mem::replace(&mut self.profile, profile);
        if old.is_valkey() == profile.is_valkey() {
            return;
        }
        for (i, p) in PARAMS.iter().enumerate() {
            if p.valkey_default.is_some() && self.values[i] == p.default_in(old) {
                let v = p.default_in(profile);
                self.values[i] = v.to_string();
                self.typed(p.name, v);
            }
        }
    }

    fn idx(name: &str) -> usize {
        PARAMS.iter().position(|p| p.name == name).expect("known parameter")
    }

    fn force(&mut self, name: &str, v: &str) {
        let i = Self::idx(name);
        self.values[i] = v.to_string();
        self.typed(name, v);
    }

    /// The port the listener got (`port 0` picks a free one).
    pub fn set_listen_port(&mut self, port: u16) {
        self.force("port", &port.to_string());
    }

    /// Current value of a parameter by canonical name.
    pub fn get_str(&self, name: &str) -> &str {
        &self.values[Self::idx(name)]
    }

    /// What the keyspace acts on: the encoding thresholds, and the LFU
    /// parameters while `maxmemory-policy` is an LFU policy.
    pub fn tuning(&self) -> crate::db::Tuning {
        let lfu = self.maxmemory_policy.is_lfu().then_some(self.lfu);
        let embed = match (self.profile.embeds_keys(), self.profile.is_valkey()) {
            (false, _) => crate::db::embed::Embed::Value,
            (true, false) => crate::db::embed::Embed::Redis8,
            (true, true) => crate::db::embed::Embed::Valkey8,
        };
        let limits = crate::db::EncLimits { sets_listpack: self.profile.at_least(7, 2, 0), embed, ..self.enc_limits };
        crate::db::Tuning { limits, lfu }
    }

    /// `CONFIG GET arg...`, as Redis 7.0 answers it: an argument without
    /// glob characters names one parameter (hidden ones too) and is
    /// answered under the name as asked; a pattern matches the listed
    /// names (and aliases) case-insensitively. Each name answers once,
    /// under the first argument that asked for it.
    pub fn get(&self, args: &[Bytes]) -> Vec<(String, String)> {
        // (parameter index, asked by its alias), key, value.
        let mut out: Vec<((usize, bool), String, String)> = Vec::new();
        let mut add = |id: (usize, bool), key: String, value: &str| {
            if !out.iter().any(|(i, _, _)| *i == id) {
                out.push((id, key, value.to_string()));
            }
        };
        for arg in args {
            let profile = self.profile;
            let known = || PARAMS.iter().enumerate().filter(move |(_, p)| p.in_profile(profile));
            if !arg.iter().any(|c| matches!(c, b'*' | b'?' | b'[')) {
                let named = known().find_map(|(i, p)| {
                    p.names(profile).find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(arg)).map(|(_, a)| (i, a))
                });
                if let Some((i, is_alias)) = named {
                    add((i, is_alias), String::from_utf8_lossy(arg).into_owned(), &self.values[i]);
                }
                continue;
            }
            for (i, p) in known() {
                if p.access == Access::Hidden || profile.has(&p.hidden_since) {
                    continue;
                }
                for (name, is_alias) in p.names(profile) {
                    if glob::matches(arg, name.as_bytes(), true) {
                        add((i, is_alias), name.to_string(), &self.values[i]);
                    }
                }
            }
        }
        out.into_iter().map(|(_, k, v)| (k, v)).collect()
    }

    /// `CONFIG SET name value` for one parameter. Errors are Redis's texts.
    pub fn set(&mut self, name: &[u8], value: &[u8]) -> Result<(), CmdError> {
        self.set_many(&[(name, value)], true).map(|_| ())
    }

    /// `CONFIG SET name value [name value ...]` as Redis 7.0 runs it: every
    /// name is looked up first (unknown, immutable, protected and repeated
    /// names refuse the whole command, in argument order), then the values
    /// are applied in order; the first invalid one leaves the configuration
    /// as it was. `protected_ok`: the client may set protected parameters
    /// (`enable-protected-configs` allows it). Returns the canonical names
    /// set, for the changes a caller must act on (the listener).
    pub fn set_many(&mut self, pairs: &[(&[u8], &[u8])], protected_ok: bool) -> Result<Vec<&'static str>, CmdError> {
        let framed = |name: &[u8], why: &str| {
            CmdError::custom(format!(
                "ERR CONFIG SET failed (possibly related to argument '{}') - {why}",
                String::from_utf8_lossy(name)
            ))
        };
        let mut params = Vec::with_capacity(pairs.len());
        for (i, (name, _)) in pairs.iter().enumerate() {
            let Some(param) = find(self.profile, name) else {
                return Err(CmdError::custom(format!(
                    "ERR Unknown option or number of arguments for CONFIG SET - '{}'",
                    String::from_utf8_lossy(name)
                )));
            };
            match param.access {
                Access::Immutable => return Err(framed(name, "can't set immutable config")),
                Access::Protected if !protected_ok => return Err(framed(name, "can't set protected config")),
                _ => {}
            }
            if pairs[..i].iter().any(|(earlier, _)| earlier.eq_ignore_ascii_case(name)) {
                return Err(framed(name, "duplicate parameter"));
            }
            params.push(param.name);
        }
        let mut trial = self.clone();
        for (name, value) in pairs {
            trial.apply(name, value, false).map_err(|e| match e {
                ApplyError::Unknown => framed(name, "unknown parameter"),
                ApplyError::Invalid(why) => framed(&name.to_ascii_lowercase(), &why),
            })?;
        }
        *self = trial;
        Ok(params)
    }

    /// Whether a client may set protected parameters (`dir`, `dbfilename`):
    /// `enable-protected-configs yes`, or `local` and the client is local.
    pub fn protected_allowed(&self, client_is_local: bool) -> bool {
        self.protected_configs.allows(client_is_local)
    }

    /// Sets a parameter at start, as a redis.conf line does: immutable
    /// parameters too. The error is the reason Redis gives when it refuses
    /// the line (`argument couldn't be parsed into an integer`…), or
    /// `None` for a name rlockd does not know.
    pub fn load(&mut self, name: &str, value: &str) -> Result<(), Option<String>> {
        self.apply(name.as_bytes(), value.as_bytes(), true).map_err(|e| match e {
            ApplyError::Unknown => None,
            ApplyError::Invalid(why) => Some(why),
        })
    }

    /// True if `name` (or its alias) is a parameter rlockd knows under
    /// some profile.
    pub fn knows(name: &str) -> bool {
        find_any(name.as_bytes()).is_some()
    }

    /// Checks `value` for `param` and returns the value as `CONFIG GET`
    /// prints it (updating the parsed fields of the special parameters).
    fn check(&mut self, param: &'static Param, v: &str, at_start: bool) -> Result<String, String> {
        let range = |min: &dyn std::fmt::Display, max: &dyn std::fmt::Display| {
            format!("argument must be between {min} and {max} inclusive")
        };
        let stored = match param.kind {
            Kind::Bool => match v.to_ascii_lowercase().as_str() {
                s @ ("yes" | "no") => s.to_string(),
                _ => return Err("argument must be 'yes' or 'no'".into()),
            },
            Kind::Int(min, max) => match crate::num::parse_i64_strict(v.as_bytes()) {
                Some(n) if n < 0 && param.unsigned && self.profile.has(&REDIS_8_2) => {
                    return Err("argument must be greater or equal to 0".into())
                }
                Some(n) if n >= min && n <= later_max(param.name, max, self.profile) => match param.name {
                    // Redis keeps hz within 1..=500 (CONFIG_MIN_HZ, CONFIG_MAX_HZ).
                    "hz" => n.clamp(1, 500).to_string(),
                    _ => n.to_string(),
                },
                Some(_) => return Err(range(&min, &later_max(param.name, max, self.profile))),
                None => return Err("argument couldn't be parsed into an integer".into()),
            },
            Kind::Octal(min, max) => match i64::from_str_radix(v.strip_prefix('-').unwrap_or(v), 8) {
                Ok(n) if !v.is_empty() && !v.starts_with('+') => {
                    let n = if v.starts_with('-') { -n } else { n };
                    if n < min || n > max {
                        return Err(range(&format!("{min:o}"), &format!("{max:o}")));
                    }
                    format!("{n:o}")
                }
                _ => return Err("argument couldn't be parsed as an octal number".into()),
            },
            Kind::Mem(min, max) => match parse_mem(v) {
                Some(n) if n >= min && n <= max => match param.name {
                    // Redis raises a smaller backlog to its 16kb minimum.
                    "repl-backlog-size" => n.max(16 * 1024).to_string(),
                    _ => n.to_string(),
                },
                Some(_) => return Err(range(&min, &max)),
                None => return Err("argument must be a memory value".into()),
            },
            Kind::Enum(opts) => {
                let words: Vec<&str> = opts.iter().copied().chain(later_words(param.name, self.profile)).collect();
                match words.iter().find(|o| o.eq_ignore_ascii_case(v)) {
                    Some(o) => o.to_string(),
                    None => return Err(format!("argument(s) must be one of the following: {}", words.join(", "))),
                }
            }
            Kind::Str => v.to_string(),
            Kind::Special => self.check_special(param.name, v, at_start)?,
        };
        refuse_what_rlockd_cannot_do(param.name, stored, at_start)
    }

    fn check_special(&mut self, name: &str, v: &str, at_start: bool) -> Result<String, String> {
        Ok(match name {
            "notify-keyspace-events" => {
                let f = parse_notify(v).ok_or("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")?;
                notify_to_string(f)
            }
            "latency-tracking-info-percentiles" => {
                let mut ps = Vec::new();
                // Split on single spaces, as Redis does: doubled ones are refused.
                for w in v.split(' ').filter(|_| !v.is_empty()) {
                    let p = crate::num::parse_double(w.as_bytes())
                        .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
                    if !(0.0..=100.0).contains(&p) {
                        return Err(
                            "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]".into()
                        );
                    }
                    ps.push(p);
                }
                let stored = ps.iter().map(|p| fmt_percentile(*p)).collect::<Vec<_>>().join(" ");
                stored
            }
            "client-output-buffer-limit" => {
                self.apply_obuf_limits(v)?;
                self.obuf_string()
            }
            "oom-score-adj" => {
                // `relative` is another name for `yes`.
                let enum_err = || format!("argument(s) must be one of the following: {}", OOM_SCORE_ADJ.join(", "));
                match OOM_SCORE_ADJ.iter().find(|o| o.eq_ignore_ascii_case(v)).ok_or_else(enum_err)? {
                    &"relative" => "yes".into(),
                    o => o.to_string(),
                }
            }
            "shutdown-on-sigint" | "shutdown-on-sigterm" => {
                // Flags, several at once (`nosave now`): `default` is none.
                let enum_err = || format!("argument(s) must be one of the following: {}", SHUTDOWN_ON.join(", "));
                let mut flags = 0usize;
                for w in v.split(' ') {
                    let i = SHUTDOWN_ON.iter().position(|o| o.eq_ignore_ascii_case(w)).ok_or_else(enum_err)?;
                    flags |= (1 << i) >> 1;
                }
                if flags & 0b11 == 0b11 {
                    return Err("shutdown options SAVE and NOSAVE can't be used simultaneously".into());
                }
                if flags == 0 {
                    "default".into()
                } else {
                    let set = SHUTDOWN_ON[1..].iter().enumerate().filter(|(i, _)| flags & (1 << i) != 0);
                    set.map(|(_, o)| *o).collect::<Vec<_>>().join(" ")
                }
            }
            "save" => {
                // Pairs of seconds (at least 1) and changes (at least 0),
                // split on single spaces as Redis does.
                if v.is_empty() {
                    return Ok(String::new());
                }
                let parts: Vec<&str> = v.split(' ').collect();
                if !parts.len().is_multiple_of(2) {
                    return Err("Invalid save parameters".into());
                }
                let mut out = Vec::new();
                for pair in parts.chunks(2) {
                    match (strtoll_full(pair[0]), strtoll_full(pair[1])) {
                        (Some(secs), Some(changes)) if secs >= 1 && changes >= 0 => {
                            out.push(format!("{secs} {}", changes as i32));
                        }
                        _ => return Err("Invalid save parameters".into()),
                    }
                }
                out.join(" ")
            }
            "oom-score-adj-values" => {
                let parts: Vec<&str> = v.split(' ').filter(|s| !s.is_empty()).collect();
                if parts.len() != 3 {
                    return Err("wrong number of arguments".into());
                }
                let mut out = Vec::new();
                for part in parts {
                    match strtoll_full(part) {
                        Some(n) if (-2000..=2000).contains(&n) && !part.is_empty() => out.push(n.to_string()),
                        _ => {
                            return Err("Invalid oom-score-adj-values, elements must be between -2000 and 2000.".into())
                        }
                    }
                }
                out.join(" ")
            }
            "maxmemory-clients" => {
                // A memory value, or a percentage of maxmemory (kept as a
                // negative number, as Redis does).
                let n: i64 = if let Some(pct) = v.strip_suffix('%') {
                    match crate::num::parse_i64_strict(pct.as_bytes()) {
                        Some(p) if p >= 0 => -p,
                        _ => return Err("argument must be a memory or percent value".into()),
                    }
                } else {
                    parse_mem(v).ok_or("argument must be a memory or percent value")? as i64
                };
                if n < -100 {
                    return Err("percentage argument must be less or equal to 100".into());
                }
                if n < 0 {
                    format!("{}%", -n)
                } else {
                    n.to_string()
                }
            }
            "bind" => {
                let addrs: Vec<&str> = v.split_whitespace().collect();
                if addrs.len() > 16 {
                    return Err("Too many bind addresses specified.".into());
                }
                addrs.join(" ")
            }
            "dir" => {
                let path = std::fs::canonicalize(v).map_err(|e| strerror(&e))?;
                if !path.is_dir() {
                    return Err(strerror(&std::io::Error::from_raw_os_error(20)));
                }
                path.to_string_lossy().into_owned()
            }
            "proc-title-template" => {
                if !proc_title_template_valid(v) {
                    return Err("template format is invalid or contains unknown variables".into());
                }
                v.to_string()
            }
            "cluster-announce-hostname" => {
                if !v.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'.') {
                    return Err("Hostnames may only contain alphanumeric characters, hyphens or dots".into());
                }
                v.to_string()
            }
            "replicaof" => {
                // Set at start only: `replicaof no one`, or a host and port
                // (the server starts as that primary's replica).
                let words: Vec<&str> = v.split_whitespace().collect();
                match words[..] {
                    [no, one] if no.eq_ignore_ascii_case("no") && one.eq_ignore_ascii_case("one") => String::new(),
                    [host, port] if at_start => format!("{host} {}", strtoll_full(port).unwrap_or(0)),
                    _ => return Err("wrong number of arguments".into()),
                }
            }
            "cluster-announce-client-ipv4" => {
                if !v.is_empty() && v.parse::<std::net::Ipv4Addr>().is_err() {
                    return Err("Invalid IPv4 address".into());
                }
                v.to_string()
            }
            "cluster-announce-client-ipv6" => {
                if !v.is_empty() && v.parse::<std::net::Ipv6Addr>().is_err() {
                    return Err("Invalid IPv6 address".into());
                }
                v.to_string()
            }
            // The locales every system has (Redis asks setlocale; rlockd
            // always collates bytewise).
            "locale-collate" => {
                if !["", "C", "POSIX", "C.UTF-8", "C.utf8"].contains(&v) {
                    return Err("Invalid locale name".into());
                }
                v.to_string()
            }
            "rdma-bind" => return Err("No RDMA building support.".into()),
            "redis-version" => parse_version(v)?.to_string(),
            "valkey-version" if v.is_empty() => String::new(),
            "valkey-version" => {
                let version = parse_version(v)?;
                if version < VALKEY_OLDEST {
                    return Err(format!("Valkey versions from {VALKEY_OLDEST} are supported"));
                }
                version.to_string()
            }
            other => unreachable!("no check for special parameter {other}"),
        })
    }

    fn apply(&mut self, name: &[u8], value: &[u8], at_start: bool) -> Result<(), ApplyError> {
        let Some(param) = find(self.profile, name) else {
            return Err(ApplyError::Unknown);
        };
        if param.access == Access::Immutable && !at_start {
            return Err(ApplyError::Invalid("can't set immutable config".into()));
        }
        let v = String::from_utf8_lossy(value).to_string();
        let stored = self.check(param, &v, at_start).map_err(ApplyError::Invalid)?;
        let i = PARAMS.iter().position(|p| std::ptr::eq(p, param)).expect("param in table");
        self.typed(param.name, &stored);
        self.values[i] = stored;
        Ok(())
    }

    fn apply_obuf_limits(&mut self, v: &str) -> Result<(), String> {
        // Split on single spaces as Redis does: doubled spaces miscount.
        let parts: Vec<&str> = if v.is_empty() { Vec::new() } else { v.split(' ').collect() };
        if !parts.len().is_multiple_of(4) {
            return Err("Wrong number of arguments in buffer limit configuration.".into());
        }
        let (mut normal, mut replica, mut pubsub) = (self.normal_limit, self.replica_limit, self.pubsub_limit);
        for c in parts.chunks(4) {
            let class = c[0].to_ascii_lowercase();
            if !matches!(class.as_str(), "normal" | "slave" | "replica" | "pubsub") {
                return Err("Invalid client class specified in buffer limit configuration.".into());
            }
            let (Some(hard), Some(soft), Some(secs)) = (parse_mem(c[1]), parse_mem(c[2]), strtoll_full(c[3])) else {
                return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".into());
            };
            if secs < 0 {
                return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".into());
            }
            let limit = BufferLimit { hard, soft, soft_secs: secs as u64 };
            match class.as_str() {
                "pubsub" => pubsub = limit,
                "normal" => normal = limit,
                _ => replica = limit,
            }
        }
        (self.normal_limit, self.replica_limit, self.pubsub_limit) = (normal, replica, pubsub);
        Ok(())
    }

    fn obuf_string(&self) -> String {
        let (n, r, p) = (self.normal_limit, self.replica_limit, self.pubsub_limit);
        format!(
            "normal {} {} {} slave {} {} {} pubsub {} {} {}",
            n.hard, n.soft, n.soft_secs, r.hard, r.soft, r.soft_secs, p.hard, p.soft, p.soft_secs
        )
    }
}

/// Values Redis refuses when it cannot do what they ask, refused the same
/// way because rlockd cannot either: active defragmentation (Redis needs
/// its own jemalloc for it), TLS (rlockd has none: Redis's answer when the
/// TLS setup fails), and more clients than the open-files limit allows.
fn refuse_what_rlockd_cannot_do(name: &str, v: String, at_start: bool) -> Result<String, String> {
    match name {
        "activedefrag" if v == "yes" => Err("Active defragmentation cannot be enabled: it requires a Redis server compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution".into()),
        "import-mode" if v == "yes" => {
            Err("rlockd has no import mode (keys that expire while importing would still expire)".into())
        }
        "tls-port" if v != "0" => Err("Unable to update TLS configuration. Check server logs.".into()),
        "tls-replication" | "tls-cluster" if v == "yes" => {
            Err("Unable to update TLS configuration. Check server logs.".into())
        }
        "maxclients" => {
            let wanted: u64 = v.parse().unwrap_or(10000);
            match raise_open_files_limit(wanted) {
                Some(max) if max < wanted && at_start => {
                    tracing::warn!("maxclients has been reduced to {max} to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'.");
                    Ok(max.to_string())
                }
                Some(max) if max < wanted => Err(format!(
                    "The operating system is not able to handle the specified number of clients, try with {max}"
                )),
                _ => Ok(v),
            }
        }
        _ => Ok(v),
    }
}

/// An integer parameter's maximum where a later version lowered it.
fn later_max(name: &str, max: i64, profile: Profile) -> i64 {
    match name {
        "maxmemory-samples" if profile.has(&FROM_7_2) => 64,
        _ => max,
    }
}

/// The words a later version added to an enum parameter.
fn later_words(name: &str, profile: Profile) -> impl Iterator<Item = &'static str> {
    let word = match name {
        "loglevel" if profile.has(&FROM_7_2) => Some("nothing"),
        "repl-diskless-load" if profile.has(&VALKEY_8_0) => Some("flush-before-load"),
        _ => None,
    };
    word.into_iter()
}

/// Redis's `adjustOpenFilesLimit`: `maxclients` needs 32 more descriptors
/// than clients; when the soft limit is lower, raise it (stepping down by
/// 16 from what is needed until the OS agrees). Returns how many clients
/// the limit then allows, or `None` if the limit could not be read.
fn raise_open_files_limit(maxclients: u64) -> Option<u64> {
    const RESERVED: u64 = 32;
    let needed = maxclients.saturating_add(RESERVED);
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return None;
    }
    let old: u64 = lim.rlim_cur;
    if old >= needed {
        return Some(maxclients);
    }
    // Redis steps down by 16 from `needed`; the steps above the hard limit
    // all fail, so start at the first one below it.
    let hard: u64 = lim.rlim_max;
    let mut best = if needed > hard { needed - (needed - hard).div_ceil(16) * 16 } else { needed };
    while best > old {
        let want = libc::rlimit { rlim_cur: best, rlim_max: lim.rlim_max };
        // SAFETY: setrlimit reads the struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &want) } == 0 {
            break;
        }
        best = best.saturating_sub(16);
    }
    let best = best.max(old);
    Some(best.saturating_sub(RESERVED).min(maxclients))
}

/// The OS's text for an I/O error, without Rust's ` (os error N)`.
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// `X.Y.Z` with each part 0 to 255 (the most a Redis version number
/// holds), printed back without leading zeros.
fn parse_version(v: &str) -> Result<Version, String> {
    Version::parse(v)
        .ok_or_else(|| "argument must be a version as major.minor.patch (numbers 0 to 255, e.g. 7.2.4)".into())
}

/// The oldest `valkey-version`: Valkey 7.2, the first release.
const VALKEY_OLDEST: Version = Version::new(7, 2, 0);

/// Redis's check of `proc-title-template`: `{name}` variables it knows,
/// balanced braces (`{{` a literal one), and a non-empty title once expanded with an empty
/// `{title}` (the variables that may be empty count as empty).
fn proc_title_template_valid(t: &str) -> bool {
    let mut expanded = String::new();
    let mut rest = t;
    while let Some(open) = rest.find('{') {
        expanded.push_str(&rest[..open]);
        // `{{` is a literal brace.
        if rest[open + 1..].starts_with('{') {
            expanded.push('{');
            rest = &rest[open + 2..];
            continue;
        }
        let Some(close) = rest[open..].find('}') else { return false };
        match &rest[open + 1..open + close] {
            "title" | "server-mode" | "unixsocket" => {}
            "listen-addr" | "port" | "tls-port" | "config-file" => expanded.push('x'),
            _ => return false,
        }
        rest = &rest[open + close + 1..];
    }
    expanded.push_str(rest);
    !expanded.trim_matches(' ').is_empty()
}

/// A percentile as Redis prints it: `%f` without trailing zeros (`99.9`).
pub fn fmt_percentile(p: f64) -> String {
    let s = format!("{p:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which parameters answer, and their defaults, follow the profile;
    /// a parameter still at one server's default takes the other's.
    #[test]
    fn parameters_follow_the_profile() {
        let mut c = RuntimeConfig::new(&Config::default()).unwrap();
        assert!(c.load("commandlog-request-larger-than", "5").is_err());
        assert_eq!(c.get_str("lazyfree-lazy-expire"), "no");
        c.set(b"repl-backlog-size", b"2mb").unwrap();
        c.set(b"valkey-version", b"8.1.8").unwrap();
        assert_eq!(c.get_str("lazyfree-lazy-expire"), "yes");
        assert_eq!(c.repl_backlog_size, 2 << 20, "a value set is kept");
        c.set(b"repl-backlog-size", b"10mb").unwrap();
        c.set(b"commandlog-request-larger-than", b"5").unwrap();
        c.set(b"primaryauth", b"pw").unwrap();
        assert_eq!(c.get_str("masterauth"), "pw");
        assert!(c.set(b"dynamic-hz", b"no").is_err());
        c.set(b"valkey-version", b"").unwrap();
        assert_eq!(c.get_str("lazyfree-lazy-expire"), "no");
        assert_eq!(c.repl_backlog_size, 1 << 20, "Valkey's default becomes Redis's");
        assert!(c.set(b"primaryauth", b"pw").is_err());
        // At start, the version is applied first wherever it stands.
        let cfg = Config {
            params: vec![("import-mode".into(), "no".into()), ("valkey-version".into(), "8.1.8".into())],
            ..Config::default()
        };
        assert_eq!(RuntimeConfig::new(&cfg).unwrap().get_str("import-mode"), "no");
        assert!(c.set(b"import-mode", b"yes").is_err(), "rlockd has no import mode");
        // 8.2's unsigned parameters refuse a negative value in their words.
        c.set(b"redis-version", b"8.2.3").unwrap();
        let err = c.set(b"set-max-intset-entries", b"-1").unwrap_err().to_string();
        assert!(err.ends_with("argument must be greater or equal to 0"), "{err}");
    }

    /// The typed fields come from the table's defaults, and storing a
    /// value again (as CONFIG SET or a config line does) parses it to the
    /// same fields: the table and `typed` agree.
    #[test]
    fn typed_fields_follow_the_stored_values() {
        let c = RuntimeConfig::new(&Config::default()).unwrap();
        assert_eq!((c.hz, c.busy_threshold_ms, c.maxclients, c.repl_backlog_size), (10, 5000, 10000, 1 << 20));
        assert_eq!((c.replica_priority, c.repl_timeout_secs, c.cluster_node_timeout_ms), (100, 60, 15000));
        assert!(c.replica_read_only && c.test_control && c.protected_mode && !c.appendonly);
        assert_eq!(c.enc_limits, crate::db::EncLimits::default());
        assert_eq!(c.latency_percentiles, vec![50.0, 99.0, 99.9]);
        assert_eq!(c.replica_limit, BufferLimit { hard: 256 << 20, soft: 64 << 20, soft_secs: 60 });
        assert_eq!(c.profile, Profile::default());
        let mut again = c.clone();
        let mut checked = 0;
        for p in PARAMS {
            // Not stored again: the ones whose check acts on the process
            // (the open-files limit) or refuses their own default at start.
            if ["maxclients", "replicaof", "dir"].contains(&p.name) || !p.in_profile(c.profile) {
                continue;
            }
            let v = c.get_str(p.name).to_string();
            again.load(p.name, &v).unwrap_or_else(|e| panic!("{} {v:?}: {e:?}", p.name));
            checked += 1;
        }
        assert_eq!(format!("{again:?}"), format!("{c:?}"));
        assert!(checked > 150);
        // And a change reaches its field.
        again.set(b"repl-timeout", b"7").unwrap();
        again.set(b"cluster-allow-reads-when-down", b"YES").unwrap();
        again.set(b"list-max-listpack-size", b"-3").unwrap();
        assert_eq!(
            (again.repl_timeout_secs, again.cluster_allow_reads_when_down, again.enc_limits.list_fill),
            (7, true, -3)
        );
        again.set(b"valkey-version", b"8.1.8").unwrap();
        assert_eq!(again.profile, Profile::valkey(Version::new(8, 1, 8)));
        again.set(b"valkey-version", b"").unwrap();
        assert_eq!(again.profile, Profile::default());
    }

    #[test]
    fn set_get_and_errors() {
        let mut c = RuntimeConfig::new(&Config::default()).unwrap();
        c.set(b"lua-time-limit", b"100").unwrap();
        assert_eq!(c.busy_threshold_ms, 100);
        assert_eq!(c.get(&[Bytes::from("busy-reply-threshold")]), vec![("busy-reply-threshold".into(), "100".into())]);
        assert_eq!(
            c.set(b"nope", b"1").unwrap_err().to_string(),
            "ERR Unknown option or number of arguments for CONFIG SET - 'nope'"
        );
        c.set(b"notify-keyspace-events", b"KEA").unwrap();
        assert_eq!(c.get_str("notify-keyspace-events"), "AKE");
        c.set(b"client-output-buffer-limit", b"pubsub 1mb 512kb 5").unwrap();
        assert_eq!(c.pubsub_limit, BufferLimit { hard: 1 << 20, soft: 512 << 10, soft_secs: 5 });
        assert!(c.set(b"daemonize", b"no").is_err());
    }

    #[test]
    fn start_up_parameters() {
        let mut c = RuntimeConfig::new(&Config::default()).unwrap();
        // Immutable parameters may be set at start, as in a redis.conf.
        assert_eq!(c.load("daemonize", "yes"), Ok(()));
        assert_eq!(
            c.load("loglevel", "chatty"),
            Err(Some("argument(s) must be one of the following: debug, verbose, notice, warning".into()))
        );
        assert_eq!(c.load("nope", "1"), Err(None));
        // The listener's settings come from Config's fields only.
        assert!(
            RuntimeConfig::new(&Config { params: vec![("port".into(), "1".into())], ..Default::default() }).is_err()
        );
        let c = RuntimeConfig::new(&Config { tcp_backlog: 7, ..Default::default() }).unwrap();
        assert_eq!(c.get_str("tcp-backlog"), "7");
    }

    #[test]
    fn value_parsers_follow_redis() {
        assert_eq!(parse_mem("1gb"), Some(1 << 30));
        assert_eq!(parse_mem("1G"), Some(1_000_000_000));
        assert_eq!(parse_mem(""), Some(0));
        assert_eq!(parse_mem("kb"), Some(0));
        assert_eq!(parse_mem("010"), Some(10));
        assert_eq!(parse_mem("18446744073709551616"), Some(u64::MAX));
        assert_eq!(parse_mem("17179869184gb"), Some(0));
        for bad in ["+5", "-0", " 5", "5 ", "1.5mb", "0x10", "1tb"] {
            assert_eq!(parse_mem(bad), None, "{bad}");
        }
        assert_eq!(strtoll_full(""), Some(0));
        assert_eq!(strtoll_full("+5"), Some(5));
        assert_eq!(strtoll_full("  010"), Some(10));
        for bad in [" ", "5 ", "a", "99999999999999999999", "-"] {
            assert_eq!(strtoll_full(bad), None, "{bad}");
        }
        assert!(proc_title_template_valid("{title} {listen-addr} {server-mode}"));
        assert!(proc_title_template_valid("{{title}}"));
        assert!(!proc_title_template_valid("{title}"));
        assert!(!proc_title_template_valid("{nope} x"));
        assert!(!proc_title_template_valid("x {title"));
        assert_eq!(parse_version("7.2.4").map(|v| v.to_string()), Ok("7.2.4".into()));
        assert_eq!(parse_version("07.02.004").map(|v| v.to_string()), Ok("7.2.4".into()));
        for bad in ["7.2", "7.2.4.1", "256.0.0", "7.-1.0", "", "7.2.x"] {
            assert!(parse_version(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn protected_parameters_and_dir() {
        let mut c = RuntimeConfig::new(&Config::default()).unwrap();
        let refused = c.set_many(&[(b"dir", b"/tmp")], c.protected_allowed(true)).unwrap_err().to_string();
        assert_eq!(refused, "ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config");
        let mut c = RuntimeConfig::new(&Config {
            params: vec![("enable-protected-configs".into(), "local".into())],
            ..Default::default()
        })
        .unwrap();
        assert!(c.protected_allowed(true) && !c.protected_allowed(false));
        c.set_many(&[(b"dir", b"/tmp/")], true).unwrap();
        let tmp = std::fs::canonicalize("/tmp").unwrap();
        assert_eq!(c.get_str("dir"), tmp.to_str().unwrap());
        let e = c.set_many(&[(b"dir", b"/nonexistent-rlockd")], true).unwrap_err().to_string();
        assert!(e.ends_with("- No such file or directory"), "{e}");
        // The process's own working directory never moves.
        assert_ne!(std::env::current_dir().unwrap(), tmp);
    }

    #[test]
    fn several_parameters_all_or_nothing() {
        let mut c = RuntimeConfig::new(&Config::default()).unwrap();
        let e = c.set_many(&[(b"maxmemory", b"1mb"), (b"hz", b"abc")], false).unwrap_err().to_string();
        assert!(e.contains("argument 'hz'"), "{e}");
        assert_eq!(c.get_str("maxmemory"), "0");
        assert_eq!(c.maxmemory, 0);
        let e = c.set_many(&[(b"hz", b"1"), (b"HZ", b"2")], false).unwrap_err().to_string();
        assert_eq!(e, "ERR CONFIG SET failed (possibly related to argument 'HZ') - duplicate parameter");
        // An alias and its parameter are two names: the later value wins.
        c.set_many(&[(b"slave-read-only", b"no"), (b"replica-read-only", b"yes")], false).unwrap();
        assert_eq!(c.get_str("replica-read-only"), "yes");
        assert_eq!(c.set_many(&[(b"maxmemory", b"2mb"), (b"hz", b"600")], false).unwrap(), ["maxmemory", "hz"]);
        assert_eq!((c.maxmemory, c.get_str("hz"), c.hz), (2 << 20, "500", 500));
    }
}
