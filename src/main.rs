//! `rlockd` binary: a drop-in for `redis-server` in tests and CI.
//!
//! Its command line is redis-server's: an optional redis.conf, then
//! `--<directive> <args>` options, read as one configuration in which a
//! later line wins over an earlier one; bad values are refused with
//! redis-server's message. Logs go to stderr in redis-server's format.

use std::fmt::Write as _;
use std::io::{IsTerminal, Read};
use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

mod replay;
mod toxiproxy;
mod watchdog;

/// The binary allocates with jemalloc, as redis-server does: glibc malloc
/// stalls for tens of milliseconds when a mass expiry frees a million keys
/// (see BENCHMARKS.md, active expiry). The library leaves the allocator to
/// the embedding program.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: rlockd::memory::CountingAlloc<tikv_jemallocator::Jemalloc> =
    rlockd::memory::CountingAlloc(tikv_jemallocator::Jemalloc);

/// Without jemalloc the binary still counts what it allocates (`used_memory`).
#[cfg(not(feature = "jemalloc"))]
#[global_allocator]
static GLOBAL: rlockd::memory::CountingAlloc<std::alloc::System> = rlockd::memory::CountingAlloc(std::alloc::System);

/// jemalloc options: a background thread returns freed pages to the OS
/// about a second after they go idle, without waiting for further
/// allocations (so memory freed by expiry leaves RSS while the server idles).
#[cfg(feature = "jemalloc")]
#[allow(non_upper_case_globals)]
#[export_name = "_rjem_malloc_conf"]
pub static malloc_conf: &[u8; 60] = b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0";

const VERSION: &str = env!("CARGO_PKG_VERSION");
const REDIS_VERSION: &str = rlockd::REDIS_VERSION;

/// Directives of redis-server 7.0 that have no effect in rlockd: kept in
/// memory only, never forked, never replicated. Besides
/// the `CONFIG` parameters rlockd does not implement (accepted the same
/// way), these are the ones a redis.conf or a CI script commonly sets.
const NO_EFFECT: &[&str] = &[
    "save",
    "appendonly",
    "appendfilename",
    "appenddirname",
    "appendfsync",
    "dir",
    "dbfilename",
    "daemonize",
    "supervised",
    "pidfile",
    "logfile",
    "syslog-enabled",
    "protected-mode",
    "io-threads",
    "io-threads-do-reads",
    "enable-module-command",
    "enable-protected-configs",
    "always-show-logo",
    "set-proc-title",
    "rdbcompression",
    "rdbchecksum",
    "stop-writes-on-bgsave-error",
    "repl-diskless-sync",
    "rename-command",
    "user",
    "loadmodule",
];

/// Every other directive redis-server 7.0 accepts (its `CONFIG GET *`
/// names, and the ones only a file may hold). rlockd accepts them without
/// effect; anything else is refused as redis-server refuses it.
const REDIS_DIRECTIVES: &[&str] = &[
    "acl-pubsub-default",
    "aclfile",
    "acllog-max-len",
    "active-defrag-cycle-max",
    "active-defrag-cycle-min",
    "active-defrag-ignore-bytes",
    "active-defrag-max-scan-fields",
    "active-defrag-threshold-lower",
    "active-defrag-threshold-upper",
    "activerehashing",
    "aof-disable-auto-gc",
    "aof-load-truncated",
    "aof-rewrite-incremental-fsync",
    "aof-timestamp-enabled",
    "aof-use-rdb-preamble",
    "aof_rewrite_cpulist",
    "auto-aof-rewrite-min-size",
    "auto-aof-rewrite-percentage",
    "bgsave_cpulist",
    "bind-source-addr",
    "bio_cpulist",
    "cluster-allow-pubsubshard-when-down",
    "cluster-allow-reads-when-down",
    "cluster-allow-replica-migration",
    "cluster-announce-bus-port",
    "cluster-announce-hostname",
    "cluster-announce-ip",
    "cluster-announce-port",
    "cluster-announce-tls-port",
    "cluster-config-file",
    "cluster-link-sendbuf-limit",
    "cluster-migration-barrier",
    "cluster-node-timeout",
    "cluster-port",
    "cluster-preferred-endpoint-type",
    "cluster-replica-no-failover",
    "cluster-replica-validity-factor",
    "cluster-require-full-coverage",
    "cluster-slave-no-failover",
    "cluster-slave-validity-factor",
    "crash-log-enabled",
    "crash-memcheck-enabled",
    "disable-thp",
    "dynamic-hz",
    "hll-sparse-max-bytes",
    "ignore-warnings",
    "jemalloc-bg-thread",
    "lfu-decay-time",
    "lfu-log-factor",
    "masterauth",
    "masteruser",
    "maxmemory-clients",
    "maxmemory-eviction-tenacity",
    "min-replicas-max-lag",
    "min-slaves-max-lag",
    "min-slaves-to-write",
    "no-appendfsync-on-rewrite",
    "oom-score-adj",
    "oom-score-adj-values",
    "proc-title-template",
    "propagation-error-behavior",
    "rdb-del-sync-files",
    "rdb-save-incremental-fsync",
    "repl-backlog-size",
    "repl-backlog-ttl",
    "repl-disable-tcp-nodelay",
    "repl-diskless-load",
    "repl-diskless-sync-delay",
    "repl-diskless-sync-max-replicas",
    "repl-ping-replica-period",
    "repl-ping-slave-period",
    "repl-timeout",
    "replica-announce-ip",
    "replica-announce-port",
    "replica-announced",
    "replica-ignore-disk-write-errors",
    "replica-ignore-maxmemory",
    "replica-lazy-flush",
    "replica-priority",
    "replica-serve-stale-data",
    "replicaof",
    "sanitize-dump-payload",
    "server_cpulist",
    "shutdown-on-sigint",
    "shutdown-on-sigterm",
    "shutdown-timeout",
    "slave-announce-ip",
    "slave-announce-port",
    "slave-ignore-maxmemory",
    "slave-lazy-flush",
    "slave-priority",
    "slave-serve-stale-data",
    "slaveof",
    "socket-mark-id",
    "stream-node-max-bytes",
    "stream-node-max-entries",
    "syslog-facility",
    "syslog-ident",
    "tls-auth-clients",
    "tls-ca-cert-dir",
    "tls-ca-cert-file",
    "tls-cert-file",
    "tls-ciphers",
    "tls-ciphersuites",
    "tls-client-cert-file",
    "tls-client-key-file",
    "tls-client-key-file-pass",
    "tls-cluster",
    "tls-dh-params-file",
    "tls-key-file",
    "tls-key-file-pass",
    "tls-port",
    "tls-prefer-server-ciphers",
    "tls-protocols",
    "tls-replication",
    "tls-session-cache-size",
    "tls-session-cache-timeout",
    "tls-session-caching",
];

/// Directives whose arguments are one value with spaces (`save 900 1`);
/// every other one takes exactly one argument, as in redis-server.
const MULTI_ARG: &[&str] = &[
    "save",
    "bind",
    "client-output-buffer-limit",
    "latency-tracking-info-percentiles",
    "replicaof",
    "slaveof",
    "oom-score-adj-values",
    "shutdown-on-sigint",
    "shutdown-on-sigterm",
    "rename-command",
    "user",
    "loadmodule",
];

/// Values that ask for nothing rlockd would not do anyway: no note.
const OFF_VALUES: &[&str] = &["", "no", "0", "\"\""];

fn usage() -> String {
    let no_effect = NO_EFFECT.join(", ");
    format!(
        "rlockd {VERSION}: an in-memory server speaking the Redis {REDIS_VERSION} protocol, for tests and CI.

Usage: rlockd [/path/to/redis.conf] [--<option> <value>...] [-]
       rlockd - (read the configuration from stdin)
       rlockd -v or --version
       rlockd -h or --help
       rlockd replay <file> [--until <n>]   (see rlockd replay --help)

As with redis-server, a redis.conf given as first argument is read first, then
stdin (with `-`), then the command line: a later setting wins over an earlier
one, so `rlockd redis.conf --port 6400` listens on 6400. A missing file, an
unknown option or a bad value is refused with redis-server's message.

Options:
  --port <n>            TCP port (default 6379; 0 picks a free port, printed
                        on the ready line)
  --bind <addr>         address to listen on (default 127.0.0.1; * or 0.0.0.0
                        for every IPv4 address, ::* for IPv6); only the first
                        of several addresses is used
  --requirepass <pw>    clients must AUTH with this password
  --databases <n>       number of databases (default 16)
  --loglevel <level>    debug, verbose, notice (default) or warning
  --tcp-backlog <n>     listen backlog (default 511, capped by the kernel's
                        net.core.somaxconn)
  --threads <n>         accepted for compatibility (1 to 1024): every client is
                        served by one event-loop thread, as in redis-server
  --redis-version <v>   the Redis version to answer as (default {REDIS_VERSION}):
                        its commands, replies, INFO, HELLO and Lua's
                        redis.REDIS_VERSION (e.g. 8.2.3; README lists what
                        each version adds; rlockd only)
  --valkey-version <v>  answer as Valkey <v> instead (e.g. 8.1.8; rlockd only)
  --nodes <n>           serve n independent servers (own keyspace, clock and
                        test control) on ports port..port+n-1, for Redlock and
                        MultiLock tests (default 1; rlockd only; with --port 0
                        each picks a free port)
  --cluster <n>         serve a Redis Cluster of n primaries on ports
                        port..port+n-1, the slots split as redis-cli --cluster
                        create splits them (rlockd only; with --port 0 each
                        picks a free port); --cluster-announce-ip <ip> and
                        --cluster-announce-port <port> (node i: port+i) set the
                        addresses MOVED and CLUSTER SLOTS give clients;
                        --cluster-replicas <n> adds n replicas per primary on
                        the ports after the primaries' (failover: CLUSTER
                        FAILOVER, RLOCKD CLUSTER FAILOVER or DOWN)
  --replicas <n>        each node is a primary followed by n replicas of it on
                        the next ports (default 0; rlockd only): replication
                        between nodes of this process, WAIT, RLOCKD REPL …
  --sentinel <port>     a Sentinel on that port watching the primaries
                        (mymaster, mymaster2, …); repeat it, or give ports
                        separated by commas, for several (quorum: a majority;
                        rlockd only; the ready lines follow the servers')
  --sentinel-down-after <ms>
                        the Sentinels' down-after-milliseconds (default 30000
                        as in Redis): how long a primary crashed with RLOCKD
                        REPL CRASH stays unanswered before it is failed over
  --toxiproxy <port>    serve Toxiproxy's HTTP API on that port of the bind
                        address (default off; 0 picks a free port, logged):
                        its clients create proxies and toxics (latency,
                        timeout, reset_peer, slicer, bandwidth, slow_close,
                        limit_data) as on Toxiproxy; each node is listed as
                        proxy rlockd-<port> (rlockd only)
  --record <path>       record every command of every node with its reply
                        from the first, written there on exit (JSON Lines,
                        for rlockd replay; RLOCKD RECORD; rlockd only)
  --<name> <value>      any parameter CONFIG GET/SET knows, e.g.
                        --notify-keyspace-events KEA  --maxmemory 100mb
                        --busy-reply-threshold 1000  --hz 100

Accepted without effect (rlockd keeps everything in memory, never forks,
and replicates only between its own nodes), with
one note per source when the value
asks for something other than off:
  {no_effect},
  and every other directive redis-server {REDIS_VERSION} knows.

Output: the ready line on stdout; logs on stderr in redis-server's format
(`pid:M date * message`, UTC), coloured only on a terminal and never when
NO_COLOR is set; RLOCKD_LOG=<tracing filter> overrides --loglevel.
"
    )
}

fn version_line() -> String {
    format!(
        "rlockd {VERSION}, compatible with Redis server v={REDIS_VERSION} sha=00000000:0 malloc={} bits={}",
        allocator(),
        usize::BITS
    )
}

fn allocator() -> &'static str {
    if cfg!(feature = "jemalloc") {
        "jemalloc-5.3.0"
    } else {
        "libc"
    }
}

/// Where a directive came from, for notes and errors.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    File(String),
    Stdin,
    CommandLine,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::File(p) => write!(f, "config file {p}"),
            Origin::Stdin => f.write_str("config from stdin"),
            Origin::CommandLine => f.write_str("command line"),
        }
    }
}

/// One configuration line, as redis-server numbers and shows it.
#[derive(Debug, Clone)]
struct Directive {
    name: String,
    args: Vec<String>,
    line: usize,
    text: String,
    origin: Origin,
}

/// What the configuration asks for.
#[derive(Debug, Clone, PartialEq)]
struct Settings {
    port: u16,
    bind: String,
    requirepass: Option<String>,
    databases: usize,
    loglevel: String,
    threads: usize,
    /// `--nodes N`: N independent servers on consecutive ports.
    nodes: usize,
    /// `--cluster N`: a cluster of N primaries on consecutive ports (0: none).
    cluster: usize,
    /// `--cluster-replicas N`: replicas per primary.
    cluster_replicas: usize,
    /// `--replicas N`: each node is a primary followed by N replicas.
    replicas: usize,
    /// `--sentinel PORT` (repeatable): Sentinels watching the primaries.
    sentinels: Vec<u16>,
    /// `--sentinel-down-after MS`: the Sentinels' down-after-milliseconds.
    sentinel_down_after: Option<u64>,
    /// `--toxiproxy PORT`: Toxiproxy's HTTP API on that port.
    toxiproxy: Option<u16>,
    /// `--record PATH`: record every command from the first, saved there on exit.
    record: Option<String>,
    tcp_backlog: u32,
    /// Parameters for the server's `CONFIG` table, in order.
    params: Vec<(String, String)>,
    /// Notes about directives without effect, one per source.
    notes: Vec<String>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            port: 6379,
            bind: "127.0.0.1".into(),
            requirepass: None,
            databases: 16,
            loglevel: "notice".into(),
            threads: 1,
            nodes: 1,
            cluster: 0,
            cluster_replicas: 0,
            replicas: 0,
            sentinels: Vec::new(),
            sentinel_down_after: None,
            toxiproxy: None,
            record: None,
            tcp_backlog: 511,
            params: Vec::new(),
            notes: Vec::new(),
        }
    }
}

/// What the command line asks the binary to do.
#[derive(Debug, PartialEq)]
enum Action {
    Run(Box<Settings>),
    /// Print on stdout and exit 0 (`--help`, `--version`).
    Print(String),
    /// Print on stderr and exit 1.
    Fail(String),
}

/// redis-server's way of showing an argument (`sdscatrepr`).
fn repr(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x07 => out.push_str("\\a"),
            0x08 => out.push_str("\\b"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\x{b:02x}");
            }
        }
    }
    out.push('"');
    out
}

fn fatal_config(d: &Directive, why: &str) -> Action {
    Action::Fail(format!(
        "\n*** FATAL CONFIG FILE ERROR (rlockd {VERSION}, Redis {REDIS_VERSION}) ***\n\
         Reading the configuration file, at line {}\n>>> '{}'\n{why}\n",
        d.line, d.text
    ))
}

/// A log line in redis-server's format for errors before logging starts.
fn early_log_line(msg: &str) -> String {
    format!("{}:C {} # {msg}", std::process::id(), log_timestamp(std::time::SystemTime::now()))
}

/// The OS's text for an I/O error, without Rust's ` (os error N)`.
fn strerror(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Splits the configuration text into directives, numbering lines as
/// redis-server does (the file, a separating newline, then the options).
fn directives_from_text(text: &str, first_line: usize, origin: &Origin) -> Result<Vec<Directive>, Action> {
    let mut out = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut d = Directive {
            name: String::new(),
            args: Vec::new(),
            line: first_line + i,
            text: line.into(),
            origin: origin.clone(),
        };
        let Some(words) = rlockd::protocol::split_args(line.as_bytes()) else {
            return Err(fatal_config(&d, "Unbalanced quotes in configuration line"));
        };
        let mut words = words.into_iter().map(|w| String::from_utf8_lossy(&w).into_owned());
        let Some(name) = words.next() else { continue };
        d.name = name.to_ascii_lowercase();
        d.args = words.collect();
        out.push(d);
    }
    Ok(out)
}

/// Parses the command line (without the program name) into an action.
/// `read_file` and `read_stdin` are the binary's I/O (tests pass their own).
fn parse_args(
    args: &[String],
    read_file: &dyn Fn(&str) -> std::io::Result<String>,
    read_stdin: &dyn Fn() -> std::io::Result<String>,
) -> Action {
    if args.iter().any(|a| a == "-v" || a == "--version") {
        return Action::Print(version_line() + "\n");
    }
    if args.iter().any(|a| a == "-h" || a == "--help") {
        return Action::Print(usage());
    }
    let mut j = 0;
    let mut directives = Vec::new();
    let mut line = 1;
    if let Some(first) = args.first().filter(|a| !a.starts_with('-')) {
        j = 1;
        let text = match read_file(first) {
            Ok(t) => t,
            Err(e) => {
                return Action::Fail(early_log_line(&format!(
                    "Fatal error, can't open config file '{first}': {}",
                    strerror(&e)
                )))
            }
        };
        match directives_from_text(&text, line, &Origin::File(first.clone())) {
            Ok(d) => directives.extend(d),
            Err(a) => return a,
        }
        line += text.split('\n').count() - 1;
    }
    // The options, one per line: `--name arg arg...`; `-` reads stdin.
    let mut options: Vec<(String, Vec<String>)> = Vec::new();
    let mut from_stdin = false;
    while j < args.len() {
        let a = &args[j];
        if a == "-" {
            from_stdin = true;
        } else if let Some(name) = a.strip_prefix("--") {
            match name.split_once('=') {
                Some((n, v)) => options.push((n.to_string(), vec![v.to_string()])),
                None => options.push((name.to_string(), Vec::new())),
            }
        } else if let Some((_, args)) = options.last_mut() {
            args.push(a.clone());
        } else {
            return Action::Fail(format!(
                "rlockd: unexpected argument '{a}' (a config file may only come first; options are --name value)\n"
            ));
        }
        j += 1;
    }
    if from_stdin {
        let text = match read_stdin() {
            Ok(t) => t,
            Err(e) => return Action::Fail(format!("rlockd: cannot read the configuration from stdin: {e}\n")),
        };
        match directives_from_text(&text, line, &Origin::Stdin) {
            Ok(d) => directives.extend(d),
            Err(a) => return a,
        }
        line += text.split('\n').count() - 1;
    }
    line += 1; // redis-server puts a newline between the file and the options
    for (name, args) in options {
        let mut text = name.clone();
        for a in &args {
            text.push(' ');
            text.push_str(&repr(a));
        }
        directives.push(Directive { name: name.to_ascii_lowercase(), args, line, text, origin: Origin::CommandLine });
        line += 1;
    }
    match apply(directives, read_file) {
        Ok(s) => Action::Run(Box::new(s)),
        Err(a) => a,
    }
}

/// Applies the directives in order (a later one wins) and validates them.
fn apply(directives: Vec<Directive>, read_file: &dyn Fn(&str) -> std::io::Result<String>) -> Result<Settings, Action> {
    let mut s = Settings::default();
    // Validates values with the server's own parameter table.
    let mut check = rlockd::ParamCheck::new();
    let mut no_effect: Vec<(Origin, Vec<String>)> = Vec::new();
    // `save` lines add up, as in redis-server (`save ""` clears them).
    let mut save_points = String::new();
    // The server it answers as decides which parameters exist: its
    // directives are checked first, wherever they stand.
    for d in directives.iter().filter(|d| d.name == "redis-version" || d.name == "valkey-version") {
        let _ = check.load(&d.name, &d.args.join(" "));
    }
    let mut queue: std::collections::VecDeque<Directive> = directives.into();
    while let Some(d) = queue.pop_front() {
        let name = d.name.as_str();
        if name == "include" {
            let [path] = &d.args[..] else { return Err(fatal_config(&d, "wrong number of arguments")) };
            let text = read_file(path).map_err(|e| {
                Action::Fail(early_log_line(&format!("Fatal error, can't open config file '{path}': {}", strerror(&e))))
            })?;
            let included = directives_from_text(&text, 1, &Origin::File(path.clone()))?;
            for inc in included.into_iter().rev() {
                queue.push_front(inc);
            }
            continue;
        }
        if d.args.is_empty() || (d.args.len() > 1 && !MULTI_ARG.contains(&name)) {
            return Err(fatal_config(&d, "wrong number of arguments"));
        }
        let mut value = d.args.join(" ");
        if name == "save" {
            if !value.is_empty() && !save_points.is_empty() {
                value = format!("{save_points} {value}");
            }
            save_points.clone_from(&value);
        }
        if name == "nodes" {
            match value.parse::<usize>() {
                Ok(n) if (1..=64).contains(&n) => s.nodes = n,
                Ok(_) => return Err(fatal_config(&d, "argument must be between 1 and 64 inclusive")),
                Err(_) => return Err(fatal_config(&d, "argument couldn't be parsed into an integer")),
            }
            continue;
        }
        if name == "cluster" || name == "cluster-replicas" {
            let (min, max) = if name == "cluster" { (1, 1000) } else { (0, 16) };
            match value.parse::<usize>() {
                Ok(n) if (min..=max).contains(&n) => {
                    if name == "cluster" {
                        s.cluster = n;
                    } else {
                        s.cluster_replicas = n;
                    }
                }
                Ok(_) => return Err(fatal_config(&d, &format!("argument must be between {min} and {max} inclusive"))),
                Err(_) => return Err(fatal_config(&d, "argument couldn't be parsed into an integer")),
            }
            continue;
        }
        if name == "replicas" {
            match value.parse::<usize>() {
                Ok(n) if n <= 16 => s.replicas = n,
                Ok(_) => return Err(fatal_config(&d, "argument must be between 0 and 16 inclusive")),
                Err(_) => return Err(fatal_config(&d, "argument couldn't be parsed into an integer")),
            }
            continue;
        }
        if name == "record" {
            s.record = Some(value);
            continue;
        }
        if name == "sentinel-down-after" {
            match value.parse::<u64>() {
                Ok(ms) if ms > 0 => s.sentinel_down_after = Some(ms),
                _ => return Err(fatal_config(&d, "argument must be a positive number of milliseconds")),
            }
            continue;
        }
        if name == "toxiproxy" {
            match value.parse::<u16>() {
                Ok(port) => s.toxiproxy = Some(port),
                Err(_) => return Err(fatal_config(&d, "argument must be a port (0 to 65535)")),
            }
            continue;
        }
        if name == "sentinel" {
            for p in value.split([',', ' ']).filter(|p| !p.is_empty()) {
                match p.parse::<u16>() {
                    Ok(port) => s.sentinels.push(port),
                    Err(_) => {
                        return Err(fatal_config(
                            &d,
                            "argument must be a port (0 to 65535), or several separated by commas",
                        ))
                    }
                }
            }
            continue;
        }
        if name == "threads" {
            match value.parse::<usize>() {
                Ok(n) if (1..=1024).contains(&n) => s.threads = n,
                Ok(_) => return Err(fatal_config(&d, "argument must be between 1 and 1024 inclusive")),
                Err(_) => return Err(fatal_config(&d, "argument couldn't be parsed into an integer")),
            }
            continue;
        }
        let known = rlockd::ParamCheck::knows(name);
        if known {
            match check.load(name, &value) {
                Ok(()) => {}
                Err(Some(why)) => return Err(fatal_config(&d, &why)),
                Err(None) => return Err(fatal_config(&d, "Bad directive or wrong number of arguments")),
            }
        } else if !NO_EFFECT.contains(&name) && !REDIS_DIRECTIVES.contains(&name) {
            return Err(fatal_config(&d, "Bad directive or wrong number of arguments"));
        }
        if NO_EFFECT.contains(&name) || !rlockd::ParamCheck::has_effect(name) {
            if !OFF_VALUES.contains(&value.as_str()) {
                let shown = match d.origin {
                    Origin::CommandLine => {
                        format!("--{name} {}", d.args.iter().map(|a| shell_word(a)).collect::<Vec<_>>().join(" "))
                    }
                    _ => format!("{name} (line {})", d.line),
                };
                match no_effect.iter_mut().find(|(o, _)| *o == d.origin) {
                    Some((_, list)) => list.push(shown),
                    None => no_effect.push((d.origin.clone(), vec![shown])),
                }
            }
            if !known {
                continue;
            }
        }
        match name {
            "port" => s.port = value.parse().expect("validated port"),
            "bind" => s.bind = first_bind_address(&value),
            "databases" => s.databases = value.parse().expect("validated databases"),
            "tcp-backlog" => s.tcp_backlog = value.parse().expect("validated tcp-backlog"),
            "requirepass" => s.requirepass = Some(value).filter(|p| !p.is_empty()),
            _ => {
                if name == "loglevel" {
                    s.loglevel = value.to_ascii_lowercase();
                }
                s.params.push((name.to_string(), value));
            }
        }
    }
    for (origin, list) in no_effect {
        s.notes.push(format!(
            "rlockd: note: {origin}: no effect in rlockd (in memory only, no persistence, replication or daemon mode): {}",
            list.join(", ")
        ));
    }
    Ok(s)
}

/// An argument as a shell user would type it back (`''` for empty).
fn shell_word(a: &str) -> String {
    if a.is_empty() {
        "''".into()
    } else if a.contains(|c: char| c.is_whitespace() || c == '\'' || c == '"') {
        format!("'{}'", a.replace('\'', "'\\''"))
    } else {
        a.to_string()
    }
}

/// The address rlockd listens on from a `bind` list (`* -::*` → 0.0.0.0).
fn first_bind_address(list: &str) -> String {
    let first = list.split_whitespace().next().unwrap_or("127.0.0.1");
    let first = first.strip_prefix('-').unwrap_or(first);
    match first {
        "*" => "0.0.0.0".into(),
        "::*" => "::".into(),
        "localhost" => "127.0.0.1".into(),
        other => other.to_string(),
    }
}

// ---- logging ----

/// `25 Nov 2026 05:22:23.323` (UTC) from a time.
fn log_timestamp(t: std::time::SystemTime) -> String {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Days since 1970-01-01 to a civil date (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    format!(
        "{day:02} {} {year} {:02}:{:02}:{:02}.{:03}",
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Colour only on a terminal, and never with `NO_COLOR` set to anything
/// but the empty string (no-color.org).
fn use_colour(is_terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    is_terminal && no_color.is_none_or(|v| v.is_empty())
}

/// redis-server's log line: `pid:M 25 Nov 2026 05:22:23.323 * message`,
/// the symbol telling the level (`.` debug, `-` verbose, `*` notice,
/// `#` warning).
struct RedisLogFormat {
    colour: bool,
}

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for RedisLogFormat
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        use tracing::Level;
        let level = *event.metadata().level();
        let (sym, style) = match level {
            Level::TRACE => ('.', "\x1b[2m"),
            Level::DEBUG => ('-', "\x1b[2m"),
            Level::INFO => ('*', ""),
            _ => ('#', "\x1b[1;33m"),
        };
        write!(writer, "{}:M {} ", std::process::id(), log_timestamp(std::time::SystemTime::now()))?;
        if self.colour && !style.is_empty() {
            write!(writer, "{style}{sym}\x1b[0m ")?;
        } else {
            write!(writer, "{sym} ")?;
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// The tracing level for a Redis log level: debug shows everything,
/// verbose down to DEBUG, notice down to INFO, warning WARN and ERROR,
/// nothing (7.2) none.
fn tracing_level(loglevel: &str) -> &'static str {
    match loglevel {
        "debug" => "trace",
        "verbose" => "debug",
        "warning" => "warn",
        "nothing" => "off",
        _ => "info",
    }
}

fn init_logging(loglevel: &str) {
    let colour = use_colour(std::io::stderr().is_terminal(), std::env::var_os("NO_COLOR").as_deref());
    let filter = tracing_subscriber::EnvFilter::try_from_env("RLOCKD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(tracing_level(loglevel)));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(colour)
        .event_format(RedisLogFormat { colour })
        .init();
}

fn main() -> ExitCode {
    #[cfg(feature = "jemalloc")]
    rlockd::set_allocator_name("jemalloc-5.3.0");
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("replay") {
        return replay::main(&args[1..]);
    }
    let read_stdin = || {
        let mut s = String::new();
        std::io::stdin().read_to_string(&mut s).map(|_| s)
    };
    let s = match parse_args(&args, &|p| std::fs::read_to_string(p), &read_stdin) {
        Action::Run(s) => s,
        Action::Print(text) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Action::Fail(text) => {
            eprint!("{text}");
            if !text.ends_with('\n') {
                eprintln!();
            }
            return ExitCode::from(1);
        }
    };
    for note in &s.notes {
        eprintln!("{note}");
    }
    init_logging(&s.loglevel);
    if let Some(path) = &s.record {
        let _ = RECORD_PATH.set(path.clone());
        rlockd::recording::start(rlockd::recording::DEFAULT_MAX_BYTES);
    }

    let ip: IpAddr = match s.bind.parse() {
        Ok(ip) => ip,
        Err(e) => {
            eprintln!("rlockd: invalid bind address '{}': {e}", s.bind);
            return ExitCode::from(1);
        }
    };
    // The server it answers as: the last `redis-version`/`valkey-version`
    // given (Valkey's while set).
    let named = |name: &str| s.params.iter().rev().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
    let answers_as = match named("valkey-version").filter(|v| !v.is_empty()) {
        Some(v) => format!("Valkey {v}"),
        None => format!("Redis {}", named("redis-version").unwrap_or_else(|| REDIS_VERSION.to_string())),
    };
    tracing::info!(
        "rlockd {VERSION} ({answers_as} compatible), bits={}, pid={}, just started",
        usize::BITS,
        std::process::id()
    );
    if s.threads > 1 {
        tracing::info!(
            "--threads {} has no effect: every client is served by one event-loop thread, as in redis-server",
            s.threads
        );
    }
    let config = rlockd::Config {
        bind: SocketAddr::new(ip, s.port),
        requirepass: s.requirepass.clone(),
        databases: s.databases,
        tcp_backlog: s.tcp_backlog,
        params: s.params.clone(),
    };
    if s.cluster > 0 {
        if s.replicas > 0 || !s.sentinels.is_empty() {
            eprintln!("rlockd: --replicas and --sentinel do not combine with --cluster yet");
            return ExitCode::from(1);
        }
        return run_cluster(&s, config);
    }
    let started = if s.replicas == 0 {
        rlockd::Server::start_many(s.nodes, config)
    } else {
        // Node i and its replicas take the ports after node i-1's group.
        (0..s.nodes)
            .map(|i| {
                let mut c = config.clone();
                if c.bind.port() != 0 {
                    c.bind.set_port(c.bind.port().saturating_add((i * (s.replicas + 1)) as u16));
                }
                rlockd::Server::start_with_replicas(s.replicas, c)
            })
            .collect::<Result<Vec<_>, _>>()
            .map(|groups| groups.into_iter().flatten().collect())
    };
    let servers = match started {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!("{e}");
            eprintln!("rlockd: {e}");
            return ExitCode::from(1);
        }
    };
    let primaries: Vec<(String, SocketAddr)> = servers
        .iter()
        .step_by(s.replicas + 1)
        .enumerate()
        .map(|(i, srv)| (if i == 0 { "mymaster".to_string() } else { format!("mymaster{}", i + 1) }, srv.addr()))
        .collect();
    let sentinels = if s.sentinels.is_empty() {
        Vec::new()
    } else {
        let named: Vec<(&str, SocketAddr)> = primaries.iter().map(|(n, a)| (n.as_str(), *a)).collect();
        let quorum = (s.sentinels.len() / 2 + 1) as u32;
        match rlockd::Sentinel::start_group(ip, &s.sentinels, &named, quorum) {
            Ok(v) => {
                if let (Some(ms), Some(first)) = (s.sentinel_down_after, v.first()) {
                    first.set_down_after(None, ms);
                }
                v
            }
            Err(e) => {
                eprintln!("rlockd: {e}");
                return ExitCode::from(1);
            }
        }
    };
    let addrs: Vec<SocketAddr> = servers.iter().map(|srv| srv.addr()).collect();
    let _toxiproxy = match start_toxiproxy(&s, ip, &addrs) {
        Ok(api) => api,
        Err(code) => return code,
    };
    rlockd::recording::set_process(rlockd::recording::Process {
        args: replay::topology_args(&s),
        nodes: servers.iter().map(|srv| srv.addr().to_string()).collect(),
        sentinels: sentinels.iter().map(|st| st.addr().to_string()).collect(),
    });
    for (i, server) in servers.iter().enumerate() {
        let role = if s.replicas > 0 && i % (s.replicas + 1) != 0 { "replica" } else { "standalone" };
        tracing::info!("Running mode={role}, port={}.", server.port());
    }
    for (name, addr) in &primaries {
        for st in &sentinels {
            tracing::info!("Sentinel on port {} watches {name} at {addr}", st.port());
        }
    }
    tracing::info!("Ready to accept connections");
    for path in servers.iter().filter_map(|s| s.unix_path()) {
        tracing::info!("The server is now ready to accept connections at {}", path.display());
    }
    for server in &servers {
        println!("rlockd {VERSION} ready to accept connections on {} (port {})", server.addr(), server.port());
    }
    for st in &sentinels {
        println!("rlockd {VERSION} sentinel ready to accept connections on {} (port {})", st.addr(), st.port());
    }
    watchdog::start_if_requested(save_recording);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("signal runtime");
    rt.block_on(async {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        // SHUTDOWN stops its own node; the process ends with the last one.
        let mut nodes = tokio::task::JoinSet::new();
        for server in &servers {
            nodes.spawn(server.shutdown_requested());
        }
        tokio::select! {
            _ = tokio::signal::ctrl_c() => tracing::warn!("Received SIGINT scheduling shutdown..."),
            _ = term.recv() => tracing::warn!("Received SIGTERM scheduling shutdown..."),
            _ = async { while nodes.join_next().await.is_some() {} } => {}
        }
    });
    tracing::warn!("User requested shutdown...");
    for st in sentinels {
        st.stop();
    }
    for server in servers {
        server.stop();
    }
    save_recording();
    tracing::warn!("rlockd is now ready to exit, bye bye...");
    ExitCode::SUCCESS
}

/// `--toxiproxy PORT`: Toxiproxy's HTTP API, listing a proxy per node.
fn start_toxiproxy(
    s: &Settings,
    ip: IpAddr,
    nodes: &[SocketAddr],
) -> Result<Option<toxiproxy::ToxiproxyApi>, ExitCode> {
    let Some(port) = s.toxiproxy else { return Ok(None) };
    match toxiproxy::ToxiproxyApi::start(SocketAddr::new(ip, port), ip, nodes) {
        Ok(api) => {
            tracing::info!("Toxiproxy HTTP API listening on {} (port {})", api.addr(), api.addr().port());
            Ok(Some(api))
        }
        Err(e) => {
            tracing::warn!("Toxiproxy HTTP API on port {port}: {e}");
            eprintln!("rlockd: Toxiproxy HTTP API on port {port}: {e}");
            Err(ExitCode::from(1))
        }
    }
}

/// `--record PATH`: the recording, written where the command line said
/// (on exit, by a signal, the last node's `SHUTDOWN` or the watchdog).
fn save_recording() {
    use std::io::Write;
    let Some(path) = RECORD_PATH.get() else { return };
    rlockd::recording::stop();
    if let Err(e) = rlockd::recording::save(std::path::Path::new(path)) {
        let _ = writeln!(std::io::stderr(), "rlockd: cannot write the recording to '{path}': {e}");
    }
}

/// Where `--record` saves the recording.
static RECORD_PATH: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// `--cluster N`: N primaries sharing the slots, until a signal or until
/// every node got `SHUTDOWN`.
fn run_cluster(s: &Settings, config: rlockd::Config) -> ExitCode {
    let ip = config.bind.ip();
    if s.nodes > 1 {
        eprintln!("rlockd: --cluster and --nodes cannot be used together");
        return ExitCode::from(1);
    }
    let cluster = match rlockd::Cluster::start(
        rlockd::ClusterConfig::new(s.cluster).with_replicas(s.cluster_replicas).with_node(config),
    ) {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!("{e}");
            eprintln!("rlockd: {e}");
            return ExitCode::from(1);
        }
    };
    let _toxiproxy = match start_toxiproxy(s, ip, &cluster.addrs()) {
        Ok(api) => api,
        Err(code) => return code,
    };
    rlockd::recording::set_process(rlockd::recording::Process {
        args: replay::topology_args(s),
        nodes: cluster.addrs().iter().map(|a| a.to_string()).collect(),
        sentinels: Vec::new(),
    });
    for (addr, id) in cluster.addrs().iter().zip(cluster.node_ids()) {
        tracing::info!("Running mode=cluster, port={}, node id {id}.", addr.port());
    }
    tracing::info!("Ready to accept connections");
    for addr in cluster.addrs() {
        println!("rlockd {VERSION} ready to accept connections on {addr} (port {})", addr.port());
    }
    watchdog::start_if_requested(save_recording);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("signal runtime");
    rt.block_on(async {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        let all_shut = async {
            while !cluster.is_shutting_down() {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => tracing::warn!("Received SIGINT scheduling shutdown..."),
            _ = term.recv() => tracing::warn!("Received SIGTERM scheduling shutdown..."),
            _ = all_shut => {}
        }
    });
    tracing::warn!("User requested shutdown...");
    cluster.stop();
    save_recording();
    tracing::warn!("rlockd is now ready to exit, bye bye...");
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    fn parse_with_file(a: &[&str], file: &'static str) -> Action {
        let read = move |p: &str| {
            if p == "redis.conf" {
                Ok(file.to_string())
            } else {
                Err(std::io::Error::from_raw_os_error(2))
            }
        };
        parse_args(&args(a), &read, &|| Ok(String::new()))
    }

    fn settings(a: &[&str], file: &'static str) -> Settings {
        match parse_with_file(a, file) {
            Action::Run(s) => *s,
            other => panic!("expected settings, got {other:?}"),
        }
    }

    fn failure(a: &[&str], file: &'static str) -> String {
        match parse_with_file(a, file) {
            Action::Fail(t) => t,
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[test]
    fn command_line_wins_over_the_file() {
        let s = settings(&["redis.conf", "--port", "6400"], "port 7000\nbind 0.0.0.0\n");
        assert_eq!((s.port, s.bind.as_str()), (6400, "0.0.0.0"));
        assert_eq!(settings(&["redis.conf", "--port", "0"], "port 7000\n").port, 0);
        // Within the file, a later line wins too.
        assert_eq!(settings(&["redis.conf"], "port 7000\nport 7001\n").port, 7001);
        assert_eq!(settings(&["--port=6500"], "").port, 6500);
    }

    #[test]
    fn errors_name_the_line_as_redis_server_does() {
        let t = failure(&["--port", "7000", "--bind", "127.0.0.1", "--loglevel", "chatty"], "");
        assert!(t.contains("Reading the configuration file, at line 4\n>>> 'loglevel \"chatty\"'\nargument(s) must be one of the following: debug, verbose, notice, warning\n"), "{t}");
        let t = failure(&["redis.conf", "--loglevel", "chatty"], "port 7000\n# c\nsave \"\"\n");
        assert!(t.contains("at line 5\n"), "{t}");
        let t = failure(&["redis.conf"], "port 7000\nloglevel chatty\n");
        assert!(t.contains("at line 2\n>>> 'loglevel chatty'\n"), "{t}");
        assert!(failure(&["--port"], "").ends_with(">>> 'port'\nwrong number of arguments\n"));
        assert!(failure(&["--port", "1", "2"], "").ends_with(">>> 'port \"1\" \"2\"'\nwrong number of arguments\n"));
        assert!(failure(&["--foo", "bar"], "").ends_with("Bad directive or wrong number of arguments\n"));
        assert!(failure(&["--port", "abc"], "").ends_with("argument couldn't be parsed into an integer\n"));
        assert!(failure(&["--threads", "0"], "").contains("argument must be between 1 and 1024 inclusive"));
        let t = failure(&["missing.conf"], "");
        assert!(t.ends_with("# Fatal error, can't open config file 'missing.conf': No such file or directory"), "{t}");
    }

    #[test]
    fn notes_are_worded_by_origin_and_not_repeated() {
        let s = settings(
            &["redis.conf", "--save", "", "--appendonly", "yes", "--dir", "/tmp"],
            "save 900 1\nsave 300 10\nappendonly no\ndaemonize yes\nactiverehashing yes\n",
        );
        assert_eq!(s.notes.len(), 2, "{:?}", s.notes);
        assert!(s.notes[0].starts_with("rlockd: note: config file redis.conf: "), "{}", s.notes[0]);
        assert!(
            s.notes[0].ends_with("save (line 1), save (line 2), daemonize (line 4), activerehashing (line 5)"),
            "{}",
            s.notes[0]
        );
        assert!(s.notes[1].starts_with("rlockd: note: command line: "), "{}", s.notes[1]);
        assert!(s.notes[1].ends_with(": --appendonly yes, --dir /tmp"), "{}", s.notes[1]);
        // What CI scripts pass to turn persistence off needs no note.
        assert!(settings(&["--save", "", "--appendonly", "no", "--daemonize", "no"], "").notes.is_empty());
    }

    #[test]
    fn save_lines_add_up_as_in_redis_server() {
        let last_save = |conf: &'static str, args: &[&str]| {
            let mut all = vec!["redis.conf"];
            all.extend_from_slice(args);
            let s = settings(&all, conf);
            s.params.iter().rev().find(|(k, _)| k == "save").map(|(_, v)| v.clone())
        };
        assert_eq!(last_save("save 900 1\nsave 300 10\n", &[]).as_deref(), Some("900 1 300 10"));
        assert_eq!(last_save("save 900 1\n", &["--save", "60", "5"]).as_deref(), Some("900 1 60 5"));
        assert_eq!(last_save("save 900 1\n", &["--save", ""]).as_deref(), Some(""));
        assert_eq!(last_save("save \"\"\nsave 900 1\n", &[]).as_deref(), Some("900 1"));
    }

    #[test]
    fn parameters_pass_through_and_fields_are_read() {
        let s = settings(
            &["--notify-keyspace-events", "KEA", "--requirepass", "pw", "--databases", "4", "--tcp-backlog", "1024"],
            "",
        );
        assert_eq!(s.params, vec![("notify-keyspace-events".to_string(), "KEA".to_string())]);
        assert_eq!((s.requirepass.as_deref(), s.databases, s.tcp_backlog), (Some("pw"), 4, 1024));
        assert_eq!(settings(&["--bind", "*", "-::*"], "").bind, "0.0.0.0");
        assert_eq!(settings(&["--loglevel", "WARNING"], "").loglevel, "warning");
    }

    #[test]
    fn toxiproxy_port() {
        assert_eq!(settings(&[], "").toxiproxy, None);
        assert_eq!(settings(&["--toxiproxy", "8474"], "").toxiproxy, Some(8474));
        assert_eq!(settings(&["redis.conf"], "toxiproxy 0\n").toxiproxy, Some(0));
        assert!(failure(&["--toxiproxy", "http"], "").ends_with("argument must be a port (0 to 65535)\n"));
    }

    #[test]
    fn version_and_help() {
        let Action::Print(v) = parse_with_file(&["-v"], "") else { panic!() };
        assert!(v.starts_with(&format!("rlockd {VERSION}, compatible with Redis server v={REDIS_VERSION} ")), "{v}");
        let Action::Print(h) = parse_with_file(&["--help"], "") else { panic!() };
        assert!(h.contains("redis.conf") && h.contains("--<name> <value>") && h.contains("appendonly"));
    }

    #[test]
    fn timestamps_and_colour() {
        let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_795_584_143_323);
        assert_eq!(log_timestamp(t), "25 Nov 2026 05:22:23.323");
        assert_eq!(log_timestamp(std::time::UNIX_EPOCH), "01 Jan 1970 00:00:00.000");
        assert!(use_colour(true, None));
        assert!(use_colour(true, Some(std::ffi::OsStr::new(""))));
        assert!(!use_colour(true, Some(std::ffi::OsStr::new("1"))));
        assert!(!use_colour(false, None));
    }
}
