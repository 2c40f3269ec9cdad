//! Running commands without sockets, for unit tests, fuzzing and benches.
//!
//! A [`Harness`] is a server's whole state plus one client, driven
//! synchronously: `h.run(&["SET", "k", "v"])` goes through the same
//! dispatch (`cmd::dispatch::process`) as a TCP client, minus the network.
//!
//! ```
//! let mut h = rlockd::testing::Harness::new();
//! assert_eq!(h.run(&["SET", "k", "v"]), rlockd::protocol::Reply::ok());
//! assert_eq!(h.run(&["GET", "k"]), rlockd::protocol::Reply::bulk_str("v"));
//! ```

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::client::{ClientShared, ClientState, Outbound};
use crate::cmd::{self, Ctx};
use crate::config::Config;
use crate::core::Shared;
use crate::protocol::Reply;

/// The hash behind `HSET`, `HGET`…, for the benches.
pub use crate::db::hash_value::HashValue;
/// The list behind `RPUSH`, `LRANGE`…, for the benches.
pub use crate::db::list_value::ListValue;
/// The set behind `SADD`, `SISMEMBER`…, for the benches.
pub use crate::db::set_value::SetValue;
/// The sorted set behind `ZADD`, `ZRANGE`…, for the benches.
pub use crate::db::zset::{ScoreBound, ZSet};
/// Redis's `string2ll` (strict base-10 integers), for the fuzz checks.
pub use crate::num::parse_i64_strict;

/// The stack the server gives the threads that run commands and scripts. A
/// script's reply may nest as deep as Redis allows (about 8,000 levels) and
/// is converted recursively: run a [`Harness`] that evaluates arbitrary
/// scripts on a thread with this much stack (a test thread's default 2 MiB
/// is not enough for the deepest replies).
pub const SCRIPT_STACK: usize = crate::script::SCRIPT_THREAD_STACK;

/// A server state and one connected client, without sockets.
pub struct Harness {
    pub(crate) shared: Arc<Shared>,
    pub(crate) client: ClientState,
    /// Keeps the client's push channel open, as a connection does
    /// (pub/sub messages and unblocked replies are queued to it).
    _pushes: mpsc::UnboundedReceiver<Outbound>,
}

impl Default for Harness {
    fn default() -> Self {
        Self::new()
    }
}

impl Harness {
    /// A server state with the default configuration, and its client.
    pub fn new() -> Harness {
        Self::with_config(Config::default())
    }

    /// A server state configured by `config`, and its client.
    pub fn with_config(config: Config) -> Harness {
        let shared = Arc::new(Shared::new(&config, crate::cmd::access::catalog).expect("valid config"));
        let (tx, pushes) = mpsc::unbounded_channel();
        let addr: SocketAddr = config.bind;
        let cs = Arc::new(ClientShared::new(shared.next_id(), addr, addr, shared.clock.now_ms(), tx));
        let authenticated = config.requirepass.is_none();
        shared.core.blocking_lock().clients.insert(cs.id, crate::client::ClientRecord::new(cs.clone()));
        Harness { client: ClientState::new(cs, authenticated), shared, _pushes: pushes }
    }

    /// Runs one command line as a client would send it. The arguments are
    /// slices of one buffer, as the connection's parser hands them out of
    /// its read buffer (no allocation per argument).
    pub fn run<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Reply {
        let mut buf = bytes::BytesMut::with_capacity(args.iter().map(|a| a.as_ref().len()).sum());
        let mut argv: Vec<Bytes> = Vec::with_capacity(args.len());
        for a in args {
            buf.extend_from_slice(a.as_ref());
            argv.push(buf.split().freeze());
        }
        self.run_argv(argv)
    }

    /// Runs one already-split command.
    pub fn run_argv(&mut self, mut argv: Vec<Bytes>) -> Reply {
        if argv.is_empty() {
            return Reply::NilArray;
        }
        let shared = self.shared.clone();
        let mut core = shared.core.blocking_lock();
        let mut ctx = Ctx { core: &mut core, client: &mut self.client, shared: &shared };
        let reply = cmd::dispatch::process(&mut ctx, &mut argv);
        core.before_sleep();
        // A blocking command cannot wait here: give up at once, like a timeout.
        if let Some(req) = self.client.block.take() {
            return core.blocking.cancel(req.waiter).unwrap_or(Reply::NilArray);
        }
        reply
    }
}

/// Fuzz / regression check of the request parser: parsing `data` in one
/// piece and in chunks of every size gives the same commands and the same
/// error, and never panics.
pub fn check_parser(data: &[u8]) {
    use crate::protocol::RequestParser;
    use bytes::BytesMut;
    fn all(data: &[u8], chunk: usize) -> (Vec<Vec<Bytes>>, Option<String>) {
        let mut p = RequestParser::new();
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        for piece in data.chunks(chunk.max(1)) {
            buf.extend_from_slice(piece);
            loop {
                match p.next(&mut buf) {
                    Ok(Some(c)) => out.push(c),
                    Ok(None) => break,
                    Err(e) => return (out, Some(e.0)),
                }
            }
        }
        (out, None)
    }
    let whole = all(data, data.len().max(1));
    for chunk in [1, 2, 3, 7, 64] {
        assert_eq!(all(data, chunk), whole, "chunk size {chunk} changes the parse");
    }
}

/// Fuzz / regression check of dispatch: every command parsed from `data` runs
/// through a fresh [`Harness`] without panicking, and every reply encodes.
/// Commands that stop or stall the server (SHUTDOWN, DEBUG, CLIENT PAUSE…)
/// are skipped.
pub fn check_dispatch(data: &[u8]) -> Vec<Reply> {
    use crate::protocol::{RequestParser, Resp};
    use bytes::BytesMut;
    let mut h = Harness::new();
    let mut p = RequestParser::new();
    let mut buf = BytesMut::from(data);
    let mut replies = Vec::new();
    while let Ok(Some(argv)) = p.next(&mut buf) {
        let name = argv[0].to_ascii_lowercase();
        let sub = argv.get(1).map(|a| a.to_ascii_lowercase()).unwrap_or_default();
        let skip = matches!(&name[..], b"shutdown" | b"debug" | b"monitor")
            || (name == b"client" && (sub == b"pause" || sub == b"kill"));
        if skip {
            continue;
        }
        let r = h.run_argv(argv);
        let _ = r.to_bytes(Resp::V2);
        let _ = r.to_bytes(Resp::V3);
        replies.push(r);
    }
    replies
}

#[cfg(test)]
mod tests {
    use super::Harness;
    use crate::protocol::Reply;

    #[test]
    fn without_an_accept_loop_port_is_refused_at_once() {
        let mut h = Harness::new();
        let start = std::time::Instant::now();
        let r = h.run(&["CONFIG", "SET", "maxmemory", "1mb", "port", "1234"]);
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
        let Reply::Error(e) = r else { panic!("{r:?}") };
        let e = String::from_utf8_lossy(&e);
        assert!(e.ends_with("argument 'port') - Unable to listen on this port. Check server logs."), "{e}");
        let Reply::Map(pairs) = h.run(&["CONFIG", "GET", "maxmemory"]) else { panic!("map") };
        assert_eq!(pairs[0].1, Reply::bulk_str("0"));
    }

    /// The keys with a fair lock's queue prefix are counted exactly (lock
    /// reading skips the queue's look-up while there are none) whatever
    /// path stores or deletes them: each command here is followed by a
    /// recount of every database.
    #[test]
    fn fair_queue_keys_are_counted_on_every_write_path() {
        use crate::db::FAIR_QUEUE_PREFIX;
        let mut h = Harness::new();
        let check = |h: &Harness, after: &[&str]| {
            let core = h.shared.core.blocking_lock();
            for (i, db) in core.ks.dbs.iter().enumerate() {
                let n = db.keys().filter(|k| k.starts_with(FAIR_QUEUE_PREFIX)).count();
                assert_eq!(db.fair_queue_keys(), n, "db{i} after {after:?}");
                assert_eq!(db.has_fair_queues(), n > 0);
            }
        };
        let run = |h: &mut Harness, args: &[&str]| {
            let r = h.run(args);
            check(h, args);
            r
        };
        let (q, q2) = ("redisson_lock_queue:{a}", "redisson_lock_queue:{b}");
        let dump = {
            run(&mut h, &["RPUSH", "plain", "w"]);
            let Reply::Bulk(b) = run(&mut h, &["DUMP", "plain"]) else { panic!("dump") };
            String::from_utf8_lossy(&b).into_owned()
        };
        let lines: &[&[&str]] = &[
            &["RPUSH", q, "w1"],
            &["RPUSH", q, "w2"],
            &["LPOP", q],
            &["LPOP", q],
            &["SET", q, "v"],
            &["SET", q, "v2"],
            &["SET", "redisson_lock_queue:", "short"],
            &["DEL", q, "redisson_lock_queue:"],
            &["SETNX", q, "v"],
            &["RENAME", q, "other"],
            &["RENAME", "other", q],
            &["RENAMENX", q, q2],
            &["COPY", q2, q],
            &["COPY", q2, q, "REPLACE"],
            &["MOVE", q, "1"],
            &["SWAPDB", "0", "1"],
            &["SWAPDB", "0", "1"],
            &["UNLINK", q2],
            &["GETDEL", "plain"],
            &["SELECT", "1"],
            &["MOVE", q, "0"],
            &["SELECT", "0"],
            &["SET", q2, "v", "PX", "5"],
            &["RLOCKD", "CLOCK", "ADVANCE", "10"],
            &["GET", q2],
            &["SET", q2, "v", "PX", "5"],
            &["RLOCKD", "CLOCK", "FREEZE"],
            &["SET", q, "v", "PX", "5"],
            &["RLOCKD", "CLOCK", "ADVANCE", "10"],
            &["GET", q],
            &["RLOCKD", "CLOCK", "RESUME"],
            // Lazy expiry: the clock runs, nothing expires the key until it is read.
            &["SET", q, "v", "PX", "1"],
            &["sleep"],
            &["GET", q],
            &["SET", q, "v", "PX", "1"],
            &["sleep"],
            &["SET", q, "v2"],
            &["SET", q, "v"],
            &["PEXPIREAT", q, "1"],
            &["RESTORE", q, "0", &dump],
            &["RESTORE", q, "0", &dump, "REPLACE"],
            &["RLOCKD", "SNAPSHOT", "s"],
            &["FLUSHDB"],
            &["RLOCKD", "RESTORE", "s"],
            &["LMOVE", q, q2, "LEFT", "RIGHT"],
            &["RPOPLPUSH", q2, q],
            &["SADD", "s", "x"],
            &["SUNIONSTORE", q2, "s"],
            &["SINTERSTORE", q2, "s", "nothing"],
            &["ZADD", q2, "1", "m"],
            &["ZREM", q2, "m"],
            &["HSET", q2, "f", "1"],
            &["HDEL", q2, "f"],
            &["SORT", "s", "ALPHA", "STORE", q2],
            &["EVAL", "redis.call('del', KEYS[1]); redis.call('set', KEYS[2], 'x'); return 1", "2", q, q2],
            &["MULTI"],
            &["SET", q, "1"],
            &["DEL", q2],
            &["EXEC"],
            &["SET", "redisson_lock_queue:{c}", "1"],
            &["FLUSHALL"],
        ];
        for line in lines {
            if line == &["sleep"] {
                std::thread::sleep(std::time::Duration::from_millis(5));
            } else {
                run(&mut h, line);
            }
        }
        // Eviction: past maxmemory, keys go to make room.
        for i in 0..200 {
            run(&mut h, &["SET", &format!("redisson_lock_queue:{{{i}}}"), "x"]);
        }
        run(&mut h, &["CONFIG", "SET", "maxmemory-policy", "allkeys-random"]);
        run(&mut h, &["CONFIG", "SET", "maxmemory", "1"]);
        run(&mut h, &["SET", "k", "v"]);
        run(&mut h, &["CONFIG", "SET", "maxmemory", "0"]);
        let evicted = h.shared.core.blocking_lock().ks.dbs[0].fair_queue_keys();
        assert!(evicted < 200, "{evicted}");
        run(&mut h, &["FLUSHALL"]);
        assert!(!h.shared.core.blocking_lock().ks.dbs[0].has_fair_queues());
    }
}
