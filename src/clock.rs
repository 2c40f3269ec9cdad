//! The server's one clock.
//!
//! Every semantic time read — key deadlines, `TIME`, client ages, script
//! run time — goes through [`Clock`], so time can later be driven by tests.
//! A clock belongs to one server (no process-global state).
//!
//! It can be frozen and advanced. Waits on a clock deadline (a `BLPOP`
//! timeout, `CLIENT PAUSE`) sleep for the wall time left *and* wake on
//! [`Clock::changed`], so a frozen clock never times out a wait and
//! advancing it past the deadline ends the wait at once. The busy-script
//! threshold stays on wall time: it protects the server, not the data.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
#[cfg(any(test, not(unix)))]
use std::time::{SystemTime, UNIX_EPOCH};

/// Wall clock with an adjustable offset and an optional frozen instant.
#[derive(Debug, Default)]
pub struct Clock {
    /// Added to the system time, in microseconds.
    offset_us: AtomicI64,
    /// When non-zero, time stands still at this many microseconds.
    frozen_us: AtomicU64,
    /// The system time (µs) at which the frozen instant was taken or set:
    /// [`Clock::freeze`]`(false)` catches up the real time spent frozen
    /// since then.
    anchor_us: AtomicI64,
    /// Woken when the clock is moved or frozen/unfrozen, so that waits on
    /// clock deadlines (blocking-command timeouts, CLIENT PAUSE) re-check.
    pub changed: tokio::sync::Notify,
}

impl Clock {
    /// A clock on wall time.
    pub fn new() -> Self {
        Self::default()
    }

    /// Microseconds since the unix epoch.
    pub fn now_us(&self) -> u64 {
        let frozen = self.frozen_us.load(Ordering::Relaxed);
        if frozen != 0 {
            return frozen;
        }
        self.at_system_us(system_ns() / 1000)
    }

    /// This clock's time (µs) when the system clock reads `system_us`
    /// (from [`system_ns`]): one reading serves as a command's time and as
    /// the start of its duration.
    pub fn at_system_us(&self, system_us: u64) -> u64 {
        let frozen = self.frozen_us.load(Ordering::Relaxed);
        if frozen != 0 {
            return frozen;
        }
        system_us.saturating_add_signed(self.offset_us.load(Ordering::Relaxed))
    }

    /// Milliseconds since the unix epoch.
    pub fn now_ms(&self) -> u64 {
        self.now_us() / 1000
    }

    /// Seconds since the unix epoch.
    pub fn now_secs(&self) -> u64 {
        self.now_us() / 1_000_000
    }

    /// Moves time forward (or back) by `delta_ms`.
    pub fn advance_ms(&self, delta_ms: i64) {
        let f = self.frozen_us.load(Ordering::Relaxed);
        if f != 0 {
            self.frozen_us.store(f.saturating_add_signed(delta_ms.saturating_mul(1000)), Ordering::Relaxed);
        } else {
            self.offset_us.fetch_add(delta_ms.saturating_mul(1000), Ordering::Relaxed);
        }
        self.changed.notify_waiters();
    }

    /// Jumps to `unix_ms` (forward or back); a frozen clock stays frozen there.
    pub fn set_ms(&self, unix_ms: u64) {
        let target_us = unix_ms.saturating_mul(1000);
        if self.frozen_us.load(Ordering::Relaxed) != 0 {
            self.frozen_us.store(target_us.max(1), Ordering::Relaxed);
            self.anchor_us.store(system_us(), Ordering::Relaxed);
        } else {
            self.offset_us.store(target_us as i64 - system_us(), Ordering::Relaxed);
        }
        self.changed.notify_waiters();
    }

    /// Runs `skew_ms` ahead of (or behind, if negative) the system clock,
    /// replacing any earlier offset; a frozen clock is let go.
    pub fn skew_ms(&self, skew_ms: i64) {
        self.frozen_us.store(0, Ordering::Relaxed);
        self.offset_us.store(skew_ms.saturating_mul(1000), Ordering::Relaxed);
        self.changed.notify_waiters();
    }

    /// Back on the system clock: not frozen, no offset.
    pub fn reset(&self) {
        self.frozen_us.store(0, Ordering::Relaxed);
        self.offset_us.store(0, Ordering::Relaxed);
        self.changed.notify_waiters();
    }

    /// How far this clock is from the system clock, in milliseconds.
    pub fn offset_ms(&self) -> i64 {
        (self.now_us() as i64 - system_us()) / 1000
    }

    /// True while time stands still.
    pub fn is_frozen(&self) -> bool {
        self.frozen_us.load(Ordering::Relaxed) != 0
    }

    /// Stops time at its current value (`true`) or lets it run again
    /// (`false`) as if it had never stopped: the real time spent frozen is
    /// caught up at once, and every move made while frozen (advance, set)
    /// stays applied. So a clock frozen and resumed without moves is back on
    /// its old offset from the system clock, not behind it by the pause.
    pub fn freeze(&self, frozen: bool) {
        if frozen {
            if self.frozen_us.load(Ordering::Relaxed) == 0 {
                let now = self.now_us().max(1);
                self.anchor_us.store(system_us(), Ordering::Relaxed);
                self.frozen_us.store(now, Ordering::Relaxed);
            }
        } else {
            let f = self.frozen_us.swap(0, Ordering::Relaxed);
            if f != 0 {
                self.offset_us.store(f as i64 - self.anchor_us.load(Ordering::Relaxed), Ordering::Relaxed);
            }
        }
        self.changed.notify_waiters();
    }
}

fn system_us() -> i64 {
    (system_ns() / 1000) as i64
}

/// The system's wall clock, in nanoseconds since the unix epoch (0 before
/// it): one `clock_gettime(CLOCK_REALTIME)` and nothing else. Commands are
/// timed on it, as Redis 7.0 times them on `ustime()`; unaffected by this
/// module's [`Clock`] (frozen, moved).
#[cfg(unix)]
pub fn system_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_REALTIME always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
    if ts.tv_sec < 0 {
        return 0;
    }
    (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64)
}

/// The system's wall clock, in nanoseconds since the unix epoch.
#[cfg(not(unix))]
pub fn system_ns() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos() as u64).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frozen_clock_stands_still_and_advances_on_demand() {
        let c = Clock::new();
        c.freeze(true);
        let t = c.now_ms();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(c.now_ms(), t);
        c.advance_ms(1500);
        assert_eq!(c.now_ms(), t + 1500);
        c.freeze(false);
        assert!(c.now_ms() >= t + 1500 + 5);
    }

    #[test]
    fn resume_catches_up_the_time_spent_frozen() {
        let c = Clock::new();
        c.advance_ms(-60_000);
        c.freeze(true);
        std::thread::sleep(std::time::Duration::from_millis(50));
        c.advance_ms(1000);
        c.freeze(false);
        // The minute behind stays, the second ahead is added, the pause is gone.
        let off = c.offset_ms();
        assert!((-59_010..-58_990).contains(&off), "{off}");
        c.freeze(true);
        c.set_ms(1_000_000);
        std::thread::sleep(std::time::Duration::from_millis(50));
        c.freeze(false);
        assert!(c.now_ms() >= 1_000_050 && c.now_ms() < 1_001_000, "{}", c.now_ms());
    }

    #[test]
    fn system_ns_is_the_system_time() {
        let before = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64;
        let ns = system_ns();
        let after = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64;
        assert!(before <= ns && ns <= after, "{before} {ns} {after}");
        let c = Clock::new();
        c.advance_ms(2000);
        assert_eq!(c.at_system_us(1_000_000), 3_000_000);
        c.freeze(true);
        let t = c.now_us();
        assert_eq!(c.at_system_us(5), t);
    }

    #[test]
    fn set_and_skew() {
        let c = Clock::new();
        c.freeze(true);
        c.set_ms(1_000_000);
        assert_eq!(c.now_ms(), 1_000_000);
        assert!(c.is_frozen());
        c.skew_ms(-60_000);
        assert!(!c.is_frozen());
        assert!((c.offset_ms() + 60_000).abs() < 1000);
    }
}
