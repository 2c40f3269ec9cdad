//! A wake-up for one task: set from any thread, awaited by the task that owns
//! it (a connection's kill switch and its "look again" wake).
//!
//! A tokio `Notify` serves many waiters and keeps them in a locked list: a
//! wait registers itself when first polled and unregisters when dropped, and
//! even a wait kept armed takes that lock on every poll. A connection polls
//! its kill switch and its wake once per request, where that cost more than
//! the command (BENCHMARKS.md, "The plain I/O path"). Each of these has one
//! waiting task, so a flag and one waker slot do: polling is a flag load and
//! an [`AtomicWaker`] registration, and a wait holds nothing when dropped.

use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use atomic_waker::AtomicWaker;

/// A flag and the waker of the one task waiting for it. Every wait is from
/// the same task (its waker replaces the previous one).
#[derive(Debug, Default)]
pub struct Signal {
    set: AtomicBool,
    waker: AtomicWaker,
}

impl Signal {
    pub fn new() -> Signal {
        Signal::default()
    }

    /// Sets the flag and wakes the waiting task, if any.
    pub fn notify(&self) {
        self.set.store(true, Ordering::SeqCst);
        self.waker.wake();
    }

    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }

    /// Completes once the flag is set, and leaves it set (a kill switch).
    pub async fn wait(&self) {
        poll_fn(|cx| self.poll_until(cx, || self.is_set())).await
    }

    /// Clears the flag; true if it was set (one true per `notify` that came
    /// while nobody looked, as a `Notify` permit). Looked at before it is
    /// cleared: a swap is a locked write even when the flag is down; a load
    /// that reads false orders as that swap would.
    #[inline]
    pub fn try_take(&self) -> bool {
        self.is_set() && self.set.swap(false, Ordering::SeqCst)
    }

    /// Makes `waker` the one the next [`Self::notify`] wakes. A hand-written
    /// wait registers, then looks at the flag again (as [`Self::wait`] does).
    #[inline]
    pub fn register(&self, waker: &std::task::Waker) {
        self.waker.register(waker);
    }

    /// Ready once `seen` says the flag was set: looked at, the waker
    /// registered, and looked at again (a `notify` between the first look
    /// and the registration is seen by the second).
    #[inline]
    fn poll_until(&self, cx: &mut Context<'_>, seen: impl Fn() -> bool) -> Poll<()> {
        if seen() {
            return Poll::Ready(());
        }
        self.waker.register(cx.waker());
        if seen() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn a_wait_sees_a_notify_before_and_after_it_starts() {
        let s = Arc::new(Signal::new());
        let s2 = s.clone();
        let waiter = tokio::spawn(async move { s2.wait().await });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiter.is_finished());
        s.notify();
        tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken").expect("task");
        // Level: a later wait completes at once.
        tokio::time::timeout(Duration::from_secs(5), s.wait()).await.expect("still set");
        assert!(s.is_set());
    }

    #[tokio::test]
    async fn try_take_consumes_one_notify_and_a_registered_waker_is_woken() {
        let s = Arc::new(Signal::new());
        s.notify();
        assert!(s.try_take(), "the stored notify");
        assert!(!s.is_set() && !s.try_take(), "consumed");
        // A hand-written wait: look, register, look again.
        let s2 = s.clone();
        let waiter = tokio::spawn(async move {
            poll_fn(|cx| {
                if s2.try_take() {
                    return Poll::Ready(());
                }
                s2.register(cx.waker());
                if s2.try_take() {
                    Poll::Ready(())
                } else {
                    Poll::Pending
                }
            })
            .await
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiter.is_finished());
        s.notify();
        tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("woken").expect("task");
        assert!(!s.is_set());
    }
}
