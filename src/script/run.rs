//! The context of the script being run (Redis's `scriptRunCtx`).
//!
//! A script runs synchronously, on one thread, inside the call of
//! `Scripting::eval`/`fcall`. The raw C functions Lua calls back
//! (`redis.call`, the instruction hook, `math.random`…) find that context
//! through a thread-local pointer, set for exactly the duration of the run
//! by [`RunGuard`]; everything on the server's side goes through the run's
//! [`ScriptHost`].

use std::any::Any;
use std::cell::Cell;

use bytes::{Bytes, BytesMut};

use super::host::{CallInfo, ScriptErr, ScriptHost};
use crate::protocol::Reply;

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

/// The engine's side of one run: the host that runs its commands, and what
/// the `redis` library remembers between calls.
pub(crate) struct RunCtx<'h> {
    /// The server side of the run (see [`ScriptHost`]).
    pub host: &'h mut dyn ScriptHost,
    /// `redis.setresp(3)` was called.
    pub resp3: bool,
    /// The server the script runs on (its error texts follow it).
    pub server: crate::version::Profile,
    /// A panic caught inside a callback, re-raised once Lua has unwound.
    pub panic: Option<Box<dyn Any + Send>>,
    /// The PRNG behind `math.random`.
    pub rng: Rand48,
    /// `redis.set_repl` flags (accepted, no replication here).
    pub repl_flags: i32,
    /// The script's error reply repeats an error already counted in the
    /// error statistics (a `redis.call` error, Redis's
    /// `ignore_error_stats_update`).
    pub error_counted: bool,
    /// Commands the host ran for the script, and their time (ns).
    pub calls: u64,
    pub call_nanos: u64,
    /// The host asked for [`ScriptHost::interrupt`] (the count hook fires
    /// anyway, to count instructions).
    pub interrupts: bool,
    /// Times the count hook fired.
    pub hook_fires: u64,
    /// The script's deterministic profile, added to by this run.
    pub profile: ScriptProfile,
    /// `redis.call`'s arguments, reused call after call and run after run
    /// (empty between calls): the engine's own, lent to the run (moving
    /// the value in and out cost a drop of the stand-in each way).
    pub args: &'h mut CallArgs,
}

/// The arguments of one `redis.call`, kept from call to call (and from run
/// to run) so that a call allocates nothing for them: the vector, and one
/// buffer that holds every argument's bytes, each argument a slice of it
/// (as the connection's parser hands a client's arguments to the commands,
/// which copy what they keep). Once the call's slices are dropped the buffer
/// is its only owner again and the next call writes over it; a command that
/// kept a slice keeps that call's buffer, and the next call starts a new one.
/// The buffer of [`CallArgs::new`] starts at [`CallArgs::FIRST_BYTES`]:
/// room for many calls before it has to be reclaimed (`BytesMut` gives a
/// new buffer the first one's size, so a small first buffer would be
/// reclaimed every call or two). `Default` allocates nothing (`redis.acl_check_cmd`'s
/// own, one call's).
#[derive(Debug, Default)]
pub(crate) struct CallArgs {
    pub argv: Vec<Bytes>,
    pub buf: BytesMut,
    /// Each argument's length in `buf` (while a call with many is collected).
    pub ends: Vec<usize>,
}

impl CallArgs {
    /// The engine's buffer's first size (see the type's docs).
    const FIRST_BYTES: usize = 1024;
    /// A call with more bytes or arguments than this does not keep its
    /// buffer or vector for good.
    const KEEP_BYTES: usize = 16 << 10;
    const KEEP_ARGS: usize = 256;

    /// The engine's own: the buffer starts at [`Self::FIRST_BYTES`].
    pub fn new() -> CallArgs {
        CallArgs { argv: Vec::new(), buf: BytesMut::with_capacity(Self::FIRST_BYTES), ends: Vec::new() }
    }

    /// Empties the vector (dropping this call's slices); lets go of a
    /// buffer or vector grown past what is worth keeping.
    pub fn clear(&mut self) {
        self.argv.clear();
        if self.argv.capacity() > Self::KEEP_ARGS {
            self.argv = Vec::new();
            self.ends = Vec::new();
        }
        if self.buf.capacity() > Self::KEEP_BYTES {
            self.buf = BytesMut::with_capacity(Self::FIRST_BYTES);
        }
    }
}

/// What a cached script costs, in figures that do not depend on the machine
/// or its load: Lua VM instructions executed, the commands it ran (by
/// name) and the keys they named. Totals over all runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ScriptProfile {
    /// Lua VM instructions executed (C functions such as `redis.call` or
    /// `string.format` count as the one instruction that calls them).
    pub instructions: u64,
    /// Keys named by the read commands it ran.
    pub keys_read: u64,
    /// Keys named by the write commands it ran.
    pub keys_written: u64,
    /// Commands it ran, by name, in the order first seen.
    pub commands: Vec<(&'static str, u64)>,
}

impl ScriptProfile {
    fn record(&mut self, info: &CallInfo) {
        if info.write {
            self.keys_written += u64::from(info.keys);
        } else {
            self.keys_read += u64::from(info.keys);
        }
        // Names come from the command table: found by address first (no
        // string comparison on the way), by content the first time.
        let same = |name: &&str| std::ptr::eq(*name, info.command);
        let at = self.commands.iter().position(|(name, _)| same(name));
        match at.or_else(|| self.commands.iter().position(|(name, _)| *name == info.command)) {
            Some(i) => self.commands[i].1 += 1,
            None => self.commands.push((info.command, 1)),
        }
    }
}

thread_local! {
    /// The run in progress on this thread. Lua's C callbacks receive only
    /// the Lua state, so this is how they find the run they belong to.
    static CURRENT: Cell<*mut RunCtx<'static>> = const { Cell::new(std::ptr::null_mut()) };
}

/// The running script's context, if a script is running on this thread.
///
/// # Safety
/// Only for Lua's callbacks while a [`RunGuard`] is installed: the returned
/// reference is valid during the callback, and must not be held across a
/// call back into Lua that could re-enter it.
pub(crate) unsafe fn current<'a>() -> Option<&'a mut RunCtx<'static>> {
    // SAFETY: the pointer is null or was installed by `RunGuard::install`
    // from a live `&mut RunCtx` that is only reached through it until the
    // guard is dropped (the caller's contract).
    CURRENT.with(|c| unsafe { c.get().as_mut() })
}

/// Installs a run context for the current thread; uninstalls on drop.
pub(crate) struct RunGuard {
    prev: *mut RunCtx<'static>,
}

impl RunGuard {
    /// # Safety
    /// `run` must outlive the guard, and be reached only through
    /// [`current`] while the guard is installed.
    pub(crate) unsafe fn install(run: &mut RunCtx<'_>) -> RunGuard {
        // The lifetime is erased: `current` hands it out only while `run`
        // is alive (the caller's contract).
        let ptr: *mut RunCtx<'_> = run;
        let ptr = ptr.cast::<RunCtx<'static>>();
        let prev = CURRENT.with(|c| c.replace(ptr));
        RunGuard { prev }
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.prev));
    }
}

impl RunCtx<'_> {
    /// Runs the command in [`args`](Self::args) for the script through the
    /// host, counting the commands that ran and their time (`INFO
    /// scriptstats`).
    #[inline]
    pub(crate) fn call(&mut self) -> Result<Reply, ScriptErr> {
        let (reply, info) = self.host.call(&self.args.argv, self.resp3)?;
        self.calls += 1;
        self.call_nanos += info.nanos;
        self.profile.record(&info);
        Ok(reply)
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
