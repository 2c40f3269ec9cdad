//! `rlockd` binary: a drop-in for `redis-server` in tests and CI.

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;

use clap::Parser;

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

/// rlockd — an in-memory Redis-protocol server for lock scripts and tests.
///
/// Besides the options below, `--<name> <value>` sets any parameter
/// `CONFIG SET` knows (e.g. `--notify-keyspace-events KEA`), and the
/// redis-server options that make no sense here (`--save ''`,
/// `--appendonly no`, `--daemonize no`, `--dir`, `--logfile` …) are accepted
/// with a note. A first argument naming a file is read as a redis.conf.
#[derive(Parser, Debug)]
#[command(name = "rlockd", version, about, long_about = None)]
struct Cli {
    /// TCP port (0 picks a free port and prints it).
    #[arg(long, default_value_t = 6379)]
    port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// Require clients to AUTH with this password.
    #[arg(long)]
    requirepass: Option<String>,
    /// Number of databases.
    #[arg(long, default_value_t = 16)]
    databases: usize,
    /// debug, verbose, notice or warning.
    #[arg(long, default_value = "notice")]
    loglevel: String,
    /// Worker threads (at least 2).
    #[arg(long, default_value_t = 2)]
    threads: usize,
}

const KNOWN: &[&str] = &["port", "bind", "requirepass", "databases", "loglevel", "threads"];
/// redis-server options with no meaning for an in-memory server without
/// persistence, replication or daemonisation.
const IGNORED: &[&str] = &[
    "save",
    "appendonly",
    "daemonize",
    "dir",
    "dbfilename",
    "logfile",
    "pidfile",
    "supervised",
    "protected-mode",
    "appendfilename",
    "appendfsync",
    "io-threads",
    "io-threads-do-reads",
    "enable-debug-command",
    "enable-module-command",
    "always-show-logo",
    "unixsocket",
    "unixsocketperm",
    "tcp-backlog",
    "rdbcompression",
    "rdbchecksum",
    "stop-writes-on-bgsave-error",
    "repl-diskless-sync",
    "syslog-enabled",
    "set-proc-title",
];

/// Splits argv into what clap parses and redis-style `(name, value)` pairs.
/// Arguments for clap, and redis-style `(name, value)` settings.
type SplitArgs = (Vec<String>, Vec<(String, String)>);

fn split_args(args: Vec<String>) -> Result<SplitArgs, String> {
    let mut known = vec![args[0].clone()];
    let mut extra: Vec<(String, String)> = Vec::new();
    let mut it = args.into_iter().skip(1).peekable();
    let mut first = true;
    while let Some(a) = it.next() {
        if first && !a.starts_with('-') && std::path::Path::new(&a).is_file() {
            let text = std::fs::read_to_string(&a).map_err(|e| format!("cannot read {a}: {e}"))?;
            for line in text.lines() {
                let line = line.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (k, v) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
                extra.push((k.to_ascii_lowercase(), v.trim().trim_matches('"').to_string()));
            }
            first = false;
            continue;
        }
        first = false;
        if let Some(name) = a.strip_prefix("--") {
            let (name, inline) = match name.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (name.to_string(), None),
            };
            if KNOWN.contains(&name.as_str()) || name == "help" || name == "version" {
                known.push(a.clone());
                if inline.is_none() && name != "help" && name != "version" {
                    if let Some(v) = it.next() {
                        known.push(v);
                    }
                }
                continue;
            }
            let value = match inline {
                Some(v) => v,
                None => match it.peek() {
                    Some(v) if !v.starts_with("--") => it.next().unwrap_or_default(),
                    _ => String::new(),
                },
            };
            extra.push((name.to_ascii_lowercase(), value));
        } else {
            known.push(a);
        }
    }
    Ok((known, extra))
}

fn main() -> ExitCode {
    #[cfg(feature = "jemalloc")]
    rlockd::set_allocator_name("jemalloc-5.3.0");
    let (known, extra) = match split_args(std::env::args().collect()) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("rlockd: {e}");
            return ExitCode::from(2);
        }
    };
    let mut cli = Cli::parse_from(known);
    let mut params = Vec::new();
    for (k, v) in extra {
        match k.as_str() {
            "port" => cli.port = v.parse().unwrap_or(cli.port),
            "bind" => cli.bind = v.split_whitespace().next().unwrap_or("127.0.0.1").to_string(),
            "requirepass" => cli.requirepass = Some(v),
            "databases" => cli.databases = v.parse().unwrap_or(cli.databases),
            "loglevel" => cli.loglevel = v,
            k if IGNORED.contains(&k) => {
                eprintln!("rlockd: note: ignoring '--{k} {v}' (no effect in an in-memory server)")
            }
            _ => params.push((k, v)),
        }
    }
    let level = match cli.loglevel.as_str() {
        "debug" => "debug",
        "verbose" => "info",
        "warning" => "warn",
        _ => "info",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("RLOCKD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).init();

    let ip: IpAddr = match cli.bind.parse() {
        Ok(ip) => ip,
        Err(_) if cli.bind == "localhost" => IpAddr::from([127, 0, 0, 1]),
        Err(e) => {
            eprintln!("rlockd: invalid --bind '{}': {e}", cli.bind);
            return ExitCode::from(2);
        }
    };
    let config = rlockd::Config {
        bind: SocketAddr::new(ip, cli.port),
        requirepass: cli.requirepass.clone().filter(|p| !p.is_empty()),
        databases: cli.databases,
        worker_threads: cli.threads,
        params,
    };
    let server = match rlockd::Server::start_with(config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("rlockd: {e}");
            return ExitCode::from(1);
        }
    };
    println!(
        "rlockd {} ready to accept connections on {} (port {})",
        env!("CARGO_PKG_VERSION"),
        server.addr(),
        server.port()
    );
    watchdog::start_if_requested();
    let mut stop = server.shutdown_signal();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("signal runtime");
    rt.block_on(async {
        let mut term =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
        tokio::select! {
            _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received, shutting down"),
            _ = term.recv() => tracing::info!("SIGTERM received, shutting down"),
            _ = rlockd::core::shutdown_requested(&mut stop) => tracing::info!("SHUTDOWN received"),
        }
    });
    server.stop();
    ExitCode::SUCCESS
}
