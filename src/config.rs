//! Configuration: the start-up [`Config`] and the runtime parameter table
//! behind `CONFIG GET` / `CONFIG SET`.

use std::net::SocketAddr;

use bytes::Bytes;

use crate::error::CmdError;
use crate::glob;

/// How a server is started. Build with [`Config::default`] and the setters.
#[derive(Debug, Clone)]
pub struct Config {
    /// Address to listen on; port 0 picks a free port.
    pub bind: SocketAddr,
    /// The password clients must `AUTH` with (`requirepass`); none: no auth.
    pub requirepass: Option<String>,
    /// Number of databases (`SELECT 0` … `databases - 1`).
    pub databases: usize,
    /// Tokio worker threads for this server: at least 2, so a long script
    /// never stops the server from answering `BUSY` (fewer is refused with
    /// [`Error::Config`](crate::Error::Config)).
    pub worker_threads: usize,
    /// The listen backlog (`tcp-backlog`, 511 as in Redis; the kernel caps
    /// it at `net.core.somaxconn`).
    pub tcp_backlog: u32,
    /// Extra parameters applied at start (`name`, `value`), as in a
    /// redis.conf: any `CONFIG SET`-able one, and the immutable ones
    /// `CONFIG GET` reports.
    pub params: Vec<(String, String)>,
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
            worker_threads: 2,
            tcp_backlog: 511,
            params: Vec::new(),
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Bool,
    Int(i64, i64),
    /// Memory size (`100mb` accepted).
    Mem,
    Str,
    Enum(&'static [&'static str]),
    /// Validated by a dedicated check.
    Special,
}

struct Param {
    name: &'static str,
    alias: Option<&'static str>,
    default: &'static str,
    kind: Kind,
    immutable: bool,
}

const fn p(name: &'static str, default: &'static str, kind: Kind) -> Param {
    Param { name, alias: None, default, kind, immutable: false }
}
const fn alias(name: &'static str, alias: &'static str, default: &'static str, kind: Kind) -> Param {
    Param { name, alias: Some(alias), default, kind, immutable: false }
}
const fn fixed(name: &'static str, default: &'static str, kind: Kind) -> Param {
    Param { name, alias: None, default, kind, immutable: true }
}

const POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];
const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning"];
const FSYNC: &[&str] = &["always", "everysec", "no"];
const YESNO_LOCAL: &[&str] = &["yes", "no", "local"];

/// The parameters rlockd knows. Ones that steer persistence or replication
/// are accepted and reported but have no effect in an in-memory server.
static PARAMS: &[Param] = &[
    p("requirepass", "", Kind::Str),
    fixed("databases", "16", Kind::Int(1, i32::MAX as i64)),
    fixed("port", "6379", Kind::Int(0, 65535)),
    fixed("bind", "127.0.0.1", Kind::Str),
    fixed("daemonize", "no", Kind::Bool),
    // rlockd's own: the RLOCKD test-control namespace (set at start only).
    fixed("test-control", "yes", Kind::Bool),
    fixed("cluster-enabled", "no", Kind::Bool),
    fixed("unixsocket", "", Kind::Str),
    fixed("tcp-backlog", "511", Kind::Int(0, i32::MAX as i64)),
    p("maxmemory", "0", Kind::Mem),
    p("maxmemory-policy", "noeviction", Kind::Enum(POLICIES)),
    p("maxmemory-samples", "5", Kind::Int(1, 64)),
    p("notify-keyspace-events", "", Kind::Special),
    alias("busy-reply-threshold", "lua-time-limit", "5000", Kind::Int(0, i64::MAX)),
    p("timeout", "0", Kind::Int(0, i32::MAX as i64)),
    p("tcp-keepalive", "300", Kind::Int(0, i32::MAX as i64)),
    p("hz", "10", Kind::Int(0, i32::MAX as i64)),
    p("maxclients", "10000", Kind::Int(1, i32::MAX as i64)),
    p("save", "", Kind::Special),
    p("appendonly", "no", Kind::Bool),
    p("appendfsync", "everysec", Kind::Enum(FSYNC)),
    p("dir", "", Kind::Str),
    p("dbfilename", "dump.rdb", Kind::Str),
    p("loglevel", "notice", Kind::Enum(LOGLEVELS)),
    p("protected-mode", "yes", Kind::Bool),
    alias("replica-read-only", "slave-read-only", "yes", Kind::Bool),
    p(
        "client-output-buffer-limit",
        "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
        Kind::Special,
    ),
    p("proto-max-bulk-len", "536870912", Kind::Mem),
    p("client-query-buffer-limit", "1073741824", Kind::Mem),
    alias("hash-max-listpack-entries", "hash-max-ziplist-entries", "512", Kind::Int(0, i64::MAX)),
    alias("hash-max-listpack-value", "hash-max-ziplist-value", "64", Kind::Int(0, i64::MAX)),
    alias("zset-max-listpack-entries", "zset-max-ziplist-entries", "128", Kind::Int(0, i64::MAX)),
    alias("zset-max-listpack-value", "zset-max-ziplist-value", "64", Kind::Int(0, i64::MAX)),
    p("set-max-intset-entries", "512", Kind::Int(0, i64::MAX)),
    p("stream-node-max-bytes", "4096", Kind::Mem),
    p("stream-node-max-entries", "100", Kind::Int(0, i64::MAX)),
    p("hll-sparse-max-bytes", "3000", Kind::Mem),
    alias("list-max-listpack-size", "list-max-ziplist-size", "-2", Kind::Int(i32::MIN as i64, i32::MAX as i64)),
    p("list-compress-depth", "0", Kind::Int(0, i32::MAX as i64)),
    p("slowlog-log-slower-than", "10000", Kind::Int(-1, i64::MAX)),
    p("slowlog-max-len", "128", Kind::Int(0, i64::MAX)),
    p("latency-monitor-threshold", "0", Kind::Int(0, i64::MAX)),
    p("latency-tracking", "yes", Kind::Bool),
    p("latency-tracking-info-percentiles", "50 99 99.9", Kind::Special),
    p("lazyfree-lazy-eviction", "no", Kind::Bool),
    p("lazyfree-lazy-expire", "no", Kind::Bool),
    p("lazyfree-lazy-server-del", "no", Kind::Bool),
    p("lazyfree-lazy-user-del", "no", Kind::Bool),
    p("lazyfree-lazy-user-flush", "no", Kind::Bool),
    p("active-expire-effort", "1", Kind::Int(1, 10)),
    p("activedefrag", "no", Kind::Bool),
    p("lua-replicate-commands", "yes", Kind::Bool),
    p("enable-debug-command", "no", Kind::Enum(YESNO_LOCAL)),
    p("enable-protected-configs", "no", Kind::Enum(YESNO_LOCAL)),
    p("stop-writes-on-bgsave-error", "yes", Kind::Bool),
    p("repl-diskless-sync", "yes", Kind::Bool),
    p("min-replicas-to-write", "0", Kind::Int(0, i32::MAX as i64)),
    p("tracking-table-max-keys", "1000000", Kind::Int(0, i64::MAX)),
];

fn find(name: &[u8]) -> Option<&'static Param> {
    PARAMS.iter().find(|p| {
        p.name.as_bytes().eq_ignore_ascii_case(name) || p.alias.is_some_and(|a| a.as_bytes().eq_ignore_ascii_case(name))
    })
}

/// Parses `100`, `1kb`, `2mb`, `1gb`, `1k` (Redis memtoull).
pub fn parse_mem(s: &str) -> Option<i64> {
    let l = s.to_ascii_lowercase();
    let (num, mul): (&str, i64) = if let Some(n) = l.strip_suffix("gb") {
        (n, 1 << 30)
    } else if let Some(n) = l.strip_suffix("mb") {
        (n, 1 << 20)
    } else if let Some(n) = l.strip_suffix("kb") {
        (n, 1 << 10)
    } else if let Some(n) = l.strip_suffix('g') {
        (n, 1_000_000_000)
    } else if let Some(n) = l.strip_suffix('m') {
        (n, 1_000_000)
    } else if let Some(n) = l.strip_suffix('k') {
        (n, 1000)
    } else if let Some(n) = l.strip_suffix('b') {
        (n, 1)
    } else {
        (&l[..], 1)
    };
    num.parse::<i64>().ok().filter(|v| *v >= 0)?.checked_mul(mul)
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferLimit {
    pub hard: u64,
    pub soft: u64,
    pub soft_secs: u64,
}

/// Runtime parameters (`CONFIG GET`/`SET`). Hot values are cached in fields.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    values: Vec<String>,
    pub requirepass: Option<Bytes>,
    pub notify_flags: u32,
    pub busy_threshold_ms: u64,
    pub pubsub_limit: BufferLimit,
    /// `client-output-buffer-limit normal` (0 0 0: none).
    pub normal_limit: BufferLimit,
    /// `client-output-buffer-limit replica`: kept for CONFIG GET (no replicas here).
    pub replica_limit: BufferLimit,
    pub proto_max_bulk: i64,
    /// `hll-sparse-max-bytes`: a sparse HyperLogLog growing past it turns dense.
    pub hll_sparse_max_bytes: usize,
    pub hz: u64,
    pub slowlog_slower_than: i64,
    pub slowlog_max_len: usize,
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
    /// `min-replicas-to-write` (there are never replicas: any value > 0
    /// refuses writes with NOREPLICAS, as on a Redis without replicas).
    pub min_replicas_to_write: i64,
    /// `maxclients`.
    pub maxclients: usize,
    /// `timeout`: idle seconds before a normal client is closed (0: never).
    pub timeout_secs: u64,
    /// `protected-mode`.
    pub protected_mode: bool,
    /// `stream-node-max-bytes` and `stream-node-max-entries`: where a
    /// stream's listpack node is closed (0: no limit).
    pub stream_node: crate::db::stream::NodeLimits,
}

impl RuntimeConfig {
    pub fn new(cfg: &Config) -> Result<Self, String> {
        let mut rc = RuntimeConfig {
            values: PARAMS.iter().map(|p| p.default.to_string()).collect(),
            requirepass: None,
            notify_flags: 0,
            busy_threshold_ms: 5000,
            pubsub_limit: BufferLimit { hard: 32 << 20, soft: 8 << 20, soft_secs: 60 },
            normal_limit: BufferLimit { hard: 0, soft: 0, soft_secs: 0 },
            replica_limit: BufferLimit { hard: 256 << 20, soft: 64 << 20, soft_secs: 60 },
            proto_max_bulk: 512 << 20,
            hll_sparse_max_bytes: 3000,
            hz: 10,
            slowlog_slower_than: 10000,
            slowlog_max_len: 128,
            latency_tracking: true,
            latency_percentiles: vec![50.0, 99.0, 99.9],
            maxmemory: 0,
            maxmemory_policy: crate::db::evict::Policy::NoEviction,
            maxmemory_samples: 5,
            min_replicas_to_write: 0,
            maxclients: 10000,
            timeout_secs: 0,
            protected_mode: true,
            stream_node: crate::db::stream::NodeLimits::default(),
        };
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
        rc.force("port", &cfg.bind.port().to_string());
        rc.force("bind", &cfg.bind.ip().to_string());
        rc.force("databases", &cfg.databases.to_string());
        rc.force("tcp-backlog", &cfg.tcp_backlog.to_string());
        if let Some(pw) = &cfg.requirepass {
            rc.set(b"requirepass", pw.as_bytes()).map_err(|e| e.to_string())?;
        }
        Ok(rc)
    }

    fn idx(name: &str) -> usize {
        PARAMS.iter().position(|p| p.name == name).expect("known parameter")
    }

    fn force(&mut self, name: &str, v: &str) {
        let i = Self::idx(name);
        self.values[i] = v.to_string();
    }

    /// Current value of a parameter by canonical name.
    pub fn get_str(&self, name: &str) -> &str {
        &self.values[Self::idx(name)]
    }

    /// `CONFIG GET pattern...`: (name, value) pairs, each parameter once.
    pub fn get(&self, patterns: &[Bytes]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (i, p) in PARAMS.iter().enumerate() {
            for name in std::iter::once(p.name).chain(p.alias) {
                if patterns.iter().any(|pat| glob::matches(pat, name.as_bytes(), true))
                    && !out.iter().any(|(n, _)| n == name)
                {
                    out.push((name.to_string(), self.values[i].clone()));
                }
            }
        }
        out
    }

    /// `CONFIG SET name value`. Errors are Redis's texts.
    pub fn set(&mut self, name: &[u8], value: &[u8]) -> Result<(), CmdError> {
        let lname = String::from_utf8_lossy(name).to_ascii_lowercase();
        self.apply(name, value, false).map_err(|e| match e {
            ApplyError::Unknown => {
                CmdError::custom(format!("ERR Unknown option or number of arguments for CONFIG SET - '{lname}'"))
            }
            ApplyError::Invalid(why) => {
                CmdError::custom(format!("ERR CONFIG SET failed (possibly related to argument '{lname}') - {why}"))
            }
        })
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

    /// True if `name` (or its alias) is a parameter rlockd knows.
    pub fn knows(name: &str) -> bool {
        find(name.as_bytes()).is_some()
    }

    fn apply(&mut self, name: &[u8], value: &[u8], at_start: bool) -> Result<(), ApplyError> {
        let Some(param) = find(name) else {
            return Err(ApplyError::Unknown);
        };
        let fail = |why: &str| ApplyError::Invalid(why.to_string());
        if param.immutable && !at_start {
            return Err(fail("can't set immutable config"));
        }
        let v = String::from_utf8_lossy(value).to_string();
        let stored = match param.kind {
            Kind::Bool => match v.to_ascii_lowercase().as_str() {
                "yes" | "no" => v.to_ascii_lowercase(),
                _ => return Err(fail("argument must be 'yes' or 'no'")),
            },
            Kind::Int(min, max) => match v.parse::<i64>() {
                Ok(n) if n >= min && n <= max => n.to_string(),
                Ok(_) => return Err(fail(&format!("argument must be between {min} and {max} inclusive"))),
                Err(_) => return Err(fail("argument couldn't be parsed into an integer")),
            },
            Kind::Mem => match parse_mem(&v) {
                Some(n) => n.to_string(),
                None => return Err(fail("argument must be a memory value")),
            },
            Kind::Enum(opts) => match opts.iter().find(|o| o.eq_ignore_ascii_case(&v)) {
                Some(o) => o.to_string(),
                None => return Err(fail(&format!("argument(s) must be one of the following: {}", opts.join(", ")))),
            },
            Kind::Str => v.clone(),
            Kind::Special => match param.name {
                "notify-keyspace-events" => match parse_notify(&v) {
                    Some(f) => {
                        self.notify_flags = f;
                        notify_to_string(f)
                    }
                    None => return Err(fail("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")),
                },
                "latency-tracking-info-percentiles" => {
                    let mut ps = Vec::new();
                    for w in v.split_whitespace() {
                        let Some(p) = crate::num::parse_double(w.as_bytes()) else {
                            return Err(fail("Invalid latency-tracking-info-percentiles parameters"));
                        };
                        if !(0.0..=100.0).contains(&p) {
                            return Err(fail(
                                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
                            ));
                        }
                        ps.push(p);
                    }
                    let stored = ps.iter().map(|p| fmt_percentile(*p)).collect::<Vec<_>>().join(" ");
                    self.latency_percentiles = ps;
                    stored
                }
                "client-output-buffer-limit" => {
                    self.apply_obuf_limits(&v).map_err(|e| fail(&e))?;
                    self.obuf_string()
                }
                _ => v.clone(),
            },
        };
        let i = PARAMS.iter().position(|p| std::ptr::eq(p, param)).expect("param in table");
        self.values[i] = stored.clone();
        match param.name {
            "requirepass" => self.requirepass = (!stored.is_empty()).then(|| Bytes::from(stored.clone())),
            "busy-reply-threshold" => self.busy_threshold_ms = stored.parse().unwrap_or(5000),
            "proto-max-bulk-len" => self.proto_max_bulk = stored.parse().unwrap_or(512 << 20),
            "hll-sparse-max-bytes" => self.hll_sparse_max_bytes = stored.parse().unwrap_or(3000),
            "hz" => self.hz = stored.parse::<u64>().unwrap_or(10).clamp(1, 500),
            "slowlog-log-slower-than" => self.slowlog_slower_than = stored.parse().unwrap_or(10000),
            "slowlog-max-len" => self.slowlog_max_len = stored.parse().unwrap_or(128),
            "latency-tracking" => self.latency_tracking = stored == "yes",
            "maxmemory" => self.maxmemory = stored.parse().unwrap_or(0),
            "maxmemory-policy" => self.maxmemory_policy = crate::db::evict::Policy::parse(&stored),
            "maxmemory-samples" => self.maxmemory_samples = stored.parse().unwrap_or(5),
            "min-replicas-to-write" => self.min_replicas_to_write = stored.parse().unwrap_or(0),
            "maxclients" => self.maxclients = stored.parse().unwrap_or(10000),
            "timeout" => self.timeout_secs = stored.parse().unwrap_or(0),
            "protected-mode" => self.protected_mode = stored == "yes",
            "stream-node-max-bytes" => self.stream_node.max_bytes = stored.parse().unwrap_or(4096),
            "stream-node-max-entries" => self.stream_node.max_entries = stored.parse().unwrap_or(100),
            _ => {}
        }
        Ok(())
    }

    fn apply_obuf_limits(&mut self, v: &str) -> Result<(), String> {
        let parts: Vec<&str> = v.split_whitespace().collect();
        if parts.is_empty() || !parts.len().is_multiple_of(4) {
            return Err("Wrong number of arguments in buffer limit configuration.".into());
        }
        let (mut normal, mut replica, mut pubsub) = (self.normal_limit, self.replica_limit, self.pubsub_limit);
        for c in parts.chunks(4) {
            let class = c[0].to_ascii_lowercase();
            if !matches!(class.as_str(), "normal" | "slave" | "replica" | "pubsub") {
                return Err("Invalid client class specified in buffer limit configuration.".into());
            }
            let (Some(hard), Some(soft), Ok(secs)) = (parse_mem(c[1]), parse_mem(c[2]), c[3].parse::<i64>()) else {
                return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".into());
            };
            if secs < 0 {
                return Err("Error in hard, soft or soft_seconds setting in buffer limit configuration.".into());
            }
            let limit = BufferLimit { hard: hard as u64, soft: soft as u64, soft_secs: secs as u64 };
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

/// A percentile as Redis prints it: `%f` without trailing zeros (`99.9`).
pub fn fmt_percentile(p: f64) -> String {
    let s = format!("{p:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(c.set(b"port", b"1").is_err());
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
}
