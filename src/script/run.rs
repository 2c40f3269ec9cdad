//! The context of the script being run (Redis's `scriptRunCtx`).
//!
//! A script runs synchronously, on one thread, under the core lock, inside
//! the `EVAL`/`FCALL` handler. The raw C functions Lua calls back
//! (`redis.call`, the instruction hook, `math.random`…) find that context
//! through a thread-local pointer, set for exactly the duration of the run
//! by [`RunGuard`].

use std::any::Any;
use std::cell::Cell;
use std::sync::atomic::Ordering;
use std::time::Instant;

use bytes::Bytes;

use crate::client::ClientState;
use crate::cmd::{self, flags, Ctx, Lookup};
use crate::core::{Core, Shared};
use crate::protocol::{Reply, Resp};

/// Redis's `redisLrand48`: the 48-bit LCG of `lrand48`, seeded like Redis.
#[derive(Debug, Clone)]
pub(crate) struct Rand48 {
    x: u64,
}

impl Default for Rand48 {
    fn default() -> Self {
        Rand48 { x: 0x1234_ABCD_330E }
    }
}

impl Rand48 {
    const A: u64 = 0x5_DEEC_E66D;
    const MASK: u64 = (1 << 48) - 1;

    /// `redisLrand48()`: a value in `[0, 2^31)`.
    pub(crate) fn next(&mut self) -> i32 {
        self.x = (self.x.wrapping_mul(Self::A).wrapping_add(0xB)) & Self::MASK;
        (self.x >> 17) as i32
    }

    /// `redisSrand48(seed)`.
    pub(crate) fn seed(&mut self, seed: i32) {
        self.x = ((seed as u32 as u64) << 16) | 0x330E;
    }
}

/// What a running script needs from the outside world.
pub(crate) struct RunCtx {
    pub core: *mut Core,
    pub shared: *const Shared,
    /// The script's pseudo-client (kind Script, caller's db, own RESP).
    pub client: ClientState,
    /// `EVAL_RO`, `FCALL_RO`, or a `no-writes` script.
    pub readonly: bool,
    /// `redis.setresp(3)` was called.
    pub resp3: bool,
    pub started: Instant,
    /// `busy-reply-threshold` in ms (0 = never busy).
    pub threshold_ms: u64,
    /// Past the threshold: others answer BUSY.
    pub timed_out: bool,
    /// The script performed a write command.
    pub wrote: bool,
    /// A panic caught inside a callback, re-raised once Lua has unwound.
    pub panic: Option<Box<dyn Any + Send>>,
    /// The PRNG behind `math.random`.
    pub rng: *mut Rand48,
    /// `redis.set_repl` flags (accepted, no replication here).
    pub repl_flags: i32,
    /// The script's error reply repeats an error already counted in the
    /// error statistics (a `redis.call` error, Redis's
    /// `ignore_error_stats_update`).
    pub error_counted: bool,
}

thread_local! {
    static CURRENT: Cell<*mut RunCtx> = const { Cell::new(std::ptr::null_mut()) };
}

/// The running script's context, if a script is running on this thread.
///
/// # Safety
/// The returned reference is only valid during the run, and must not be
/// held across a call back into Lua that could re-enter it.
pub(crate) unsafe fn current<'a>() -> Option<&'a mut RunCtx> {
    CURRENT.with(|c| c.get().as_mut())
}

/// Installs a run context for the current thread; uninstalls on drop.
pub(crate) struct RunGuard {
    prev: *mut RunCtx,
}

impl RunGuard {
    /// # Safety
    /// `run` must outlive the guard.
    pub(crate) unsafe fn install(run: *mut RunCtx) -> RunGuard {
        let prev = CURRENT.with(|c| c.replace(run));
        RunGuard { prev }
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.prev));
    }
}

impl RunCtx {
    /// The shared server state.
    pub(crate) fn shared(&self) -> &Shared {
        // SAFETY: the pointer comes from the Ctx of the running EVAL/FCALL,
        // which outlives the run.
        unsafe { &*self.shared }
    }

    /// Runs one command for the script (Redis's `scriptCall`): lookup,
    /// arity, `noscript`, read-only checks, then the shared dispatch.
    /// `Err` carries the text of a refusal (raised as `ERR <text>`).
    pub(crate) fn call(&mut self, argv: &[Bytes]) -> Result<Reply, &'static str> {
        let cmd = match cmd::table().lookup(argv) {
            Lookup::Found(c) => c,
            Lookup::Unknown | Lookup::UnknownSub => {
                self.count_rejected(None);
                return Err("Unknown Redis command called from script");
            }
        };
        if !cmd::arity_ok(cmd.spec.arity, argv.len()) {
            self.count_rejected(Some(cmd.id));
            return Err("Wrong number of args calling Redis command from script");
        }
        if cmd.has(flags::NOSCRIPT) {
            self.count_rejected(Some(cmd.id));
            return Err("This Redis command is not allowed from script");
        }
        if self.readonly && (cmd.has(flags::WRITE) || cmd.has(flags::MAY_REPLICATE)) {
            self.count_rejected(Some(cmd.id));
            return Err("Write commands are not allowed from read-only scripts.");
        }
        if cmd.is_write() && !self.wrote {
            self.wrote = true;
            self.shared().script.wrote.store(true, Ordering::Release);
        }
        self.client.resp = if self.resp3 { Resp::V3 } else { Resp::V2 };
        // SAFETY: see `shared()`; the core is exclusively ours for the run
        // (the EVAL handler does not touch it while Lua runs).
        let (core, shared) = unsafe { (&mut *self.core, &*self.shared) };
        let mut ctx = Ctx { core, client: &mut self.client, shared };
        Ok(cmd::call(&mut ctx, cmd, argv))
    }

    fn count_rejected(&mut self, id: Option<usize>) {
        // SAFETY: as in `call`.
        let core = unsafe { &mut *self.core };
        if let Some(id) = id {
            core.stats.commands[id].rejected += 1;
        }
        core.stats.count_error(b"ERR");
    }

    /// Called every N instructions: enters BUSY mode past the threshold,
    /// then runs the `allow-busy` commands connections queued meanwhile,
    /// and reports whether the script must be killed.
    pub(crate) fn check_interrupt(&mut self) -> bool {
        // SAFETY: see `shared()`.
        let shared: &Shared = unsafe { &*self.shared };
        if !self.timed_out {
            if self.threshold_ms == 0 || (self.started.elapsed().as_millis() as u64) < self.threshold_ms {
                return false;
            }
            self.timed_out = true;
            tracing::warn!(
                "Slow script detected: still in execution after {} milliseconds. You can try killing the script using the {} command.",
                self.started.elapsed().as_millis(),
                if shared.script.is_function.load(Ordering::Relaxed) { "FUNCTION KILL" } else { "SCRIPT KILL" }
            );
            // Announce from another thread: this worker thread stays blocked
            // by the script, so tasks woken from here would wait in its local
            // queue. Woken from outside the runtime they go to the shared
            // queue, which also wakes an idle worker that then takes over the
            // I/O driver: other connections get their BUSY replies.
            shared.script.busy_queue.lock().open = true;
            let runtime = tokio::runtime::Handle::try_current().ok();
            std::thread::scope(|s| {
                s.spawn(|| {
                    shared.script.busy.store(true, Ordering::Release);
                    shared.script.busy_notify.notify_waiters();
                    if let Some(rt) = runtime {
                        rt.spawn(async {});
                    }
                });
            });
        }
        // SAFETY: between Lua instructions nothing else borrows the core.
        crate::cmd::scripting::serve_busy_queue(unsafe { &mut *self.core }, shared);
        shared.script.kill.load(Ordering::Acquire) || *shared.shutdown.borrow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rand48_matches_lrand48() {
        // Redis's rand.c starts from 0x1234ABCD330E (glibc starts from 0).
        let mut r = Rand48::default();
        let first: Vec<i32> = (0..3).map(|_| r.next()).collect();
        assert_eq!(first, vec![851401618, 1804928587, 758783491]);
        // After a seed both agree with glibc's srand48/lrand48.
        r.seed(1);
        assert_eq!(r.next(), 89400484);
    }
}
