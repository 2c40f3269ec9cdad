package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.rlockd.redisson.RlockdRedisson;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/** The test-control methods with the real Redisson: leases run out by the server's clock, faults it meets. */
class RedissonControlTest {
    @RegisterExtension
    final RlockdExtension rlockd = RlockdExtension.perTest();

    RedissonClient a;
    RedissonClient b;
    final ExecutorService pool = Executors.newSingleThreadExecutor();

    @BeforeEach
    void clients() {
        a = RlockdRedisson.client(rlockd.server());
        b = RlockdRedisson.client(rlockd.server());
    }

    @AfterEach
    void shutdown() {
        pool.shutdownNow();
        a.shutdown();
        b.shutdown();
    }

    @Test
    void leaseRunsOutByAdvancingTheClock(RlockdServer srv) throws Exception {
        srv.freezeClock();
        long started = System.nanoTime();
        RLock lock = a.getLock("orders");
        lock.lock(30, TimeUnit.SECONDS);
        lock.lock(30, TimeUnit.SECONDS); // re-entered
        String holder = a.getId() + ":" + Thread.currentThread().getId();

        List<LockInfo> locks = srv.locks();
        assertEquals(1, locks.size(), locks.toString());
        LockInfo held = locks.get(0);
        assertEquals("orders", held.key());
        assertEquals("reentrant", held.kind());
        assertEquals(OptionalLong.of(30_000), held.leaseMs());
        assertEquals(1, held.holders().size());
        assertEquals(holder, held.holders().get(0).id());
        assertEquals(2, held.holders().get(0).count());
        assertEquals(List.of(), held.waiters());

        // The holder is paused (a GC pause, a stalled thread): nothing renews an explicit lease.
        srv.advanceClock(29_999);
        assertTrue(lock.isLocked());
        assertEquals(1, lock.remainTimeToLive());
        srv.advanceClock(1);
        assertFalse(lock.isLocked());
        assertEquals(List.of(), srv.locks());
        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertTrue(tookMs < 5_000, "30 s of lease passed in " + tookMs + " ms of wall time");

        List<String> events = srv.lockEvents("orders").stream().map(e -> e.event() + " " + e.holder() + " x" + e.count())
                .collect(Collectors.toList());
        assertEquals(List.of("acquired " + holder + " x1", "reentered " + holder + " x2", "expired " + holder + " x0"),
                events);
        srv.assertLocksSafe(); // nobody else took it

        // Another client takes it now: two holders at once, as far as the paused one knows.
        RLock other = b.getLock("orders");
        assertTrue(other.tryLock(0, 30, TimeUnit.SECONDS));
        LocksUnsafeError unsafe = assertThrows(LocksUnsafeError.class, srv::assertLocksSafe);
        assertEquals(1, unsafe.violations().size(), unsafe.getMessage());
        assertTrue(unsafe.violations().get(0).contains("after its lease expired while held by " + holder),
                unsafe.getMessage());
        assertThrows(IllegalMonitorStateException.class, lock::unlock);
        other.unlock();
    }

    @Test
    void aPausedHolderStillInsideItsClaimIsAViolation(RlockdServer srv) throws Exception {
        srv.freezeClock();
        RLock lock = a.getLock("orders");
        lock.lock(30, TimeUnit.SECONDS);
        String holder = a.getId() + ":" + Thread.currentThread().getId();
        try (RlockdServer.Claim inside = srv.claim("orders", holder)) {
            srv.advanceClock(31_000); // paused past its lease
            assertTrue(pool.submit(() -> b.getLock("orders").tryLock(0, 30, TimeUnit.SECONDS)).get());
        }
        String violations = String.join("\n", srv.checkLocks());
        assertTrue(violations.contains(holder + "'s claimed critical section"), violations);
        assertTrue(violations.contains("outlived its lease"), violations);
        assertTrue(violations.contains("overlaps a grant to " + b.getId() + ":"), violations);
        String html = srv.timeline();
        assertTrue(html.contains("data-holder=\"" + holder + "\""), html);
        assertTrue(html.contains("data-end=\"expired\""), html);
        assertTrue(html.contains("<g class=\"violation\""), html);
    }

    /**
     * {@code a} holds {@code name} with a lease of {@code leaseMs}, {@code b} waits for it in
     * {@code tryLock}, {@code a} unlocks. Returns when {@code b} got it, in ms after {@code a} locked.
     */
    long handOver(RlockdServer srv, String name, long leaseMs) throws Exception {
        RLock held = a.getLock(name);
        held.lock(leaseMs, TimeUnit.MILLISECONDS);
        long locked = System.nanoTime();
        Future<Long> got = pool.submit(() -> {
            assertTrue(b.getLock(name).tryLock(20, 30, TimeUnit.SECONDS));
            return System.nanoTime();
        });
        String channel = "redisson_lock__channel:{" + name + "}";
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10); // hang guard
        while (((Long) ((List<?>) srv.command("PUBSUB", "NUMSUB", channel)).get(1)) == 0) {
            assertTrue(System.nanoTime() < deadline, "the waiter never subscribed");
            Thread.sleep(5);
        }
        Thread.sleep(50); // its second try, then its wait
        held.unlock();
        return TimeUnit.NANOSECONDS.toMillis(got.get(30, TimeUnit.SECONDS) - locked);
    }

    @Test
    void droppedUnlockMessageLeavesTheWaiterToItsOwnTimer(RlockdServer srv) throws Exception {
        long woken = handOver(srv, "job-1", 10_000);
        assertTrue(woken < 9_000, "woken by the unlock message " + woken + " ms after the lock was taken");

        long id = srv.addFault(Fault.dropMessages().channel("redisson_lock__channel:*"));
        long polled = handOver(srv, "job-2", 3_000);
        // No message: the waiter sleeps for the lease it last saw (3 s from the lock), then tries again.
        assertTrue(polled >= 2_700, "got the lock " + polled + " ms after it was taken");
        List<FaultInfo> faults = srv.faults();
        assertEquals(1, faults.size());
        assertEquals(id, faults.get(0).id());
        assertEquals("dropmsg", faults.get(0).kind());
        assertEquals("redisson_lock__channel:*", faults.get(0).channel().orElseThrow());
        assertEquals(1, faults.get(0).hits(), faults.toString()); // the one unlock message
        assertEquals(1, srv.clearFault(id));
        srv.assertLocksSafe();
    }

    @Test
    void injectedErrorReachesRedisson(RlockdServer srv) throws Exception {
        srv.addFault(Fault.error("ERR injected by the test").command("eval*").key("orders").times(1));
        RLock lock = a.getLock("orders");
        RuntimeException e = assertThrows(RuntimeException.class, () -> lock.tryLock(0, 30, TimeUnit.SECONDS));
        assertTrue(String.valueOf(e.getMessage()).contains("ERR injected by the test"), e.toString());
        assertEquals(List.of(), srv.faults()); // its one time was used
        assertTrue(lock.tryLock(0, 30, TimeUnit.SECONDS));
        assertEquals("reentrant", srv.locks("orders").get(0).kind());
        lock.unlock();
        srv.assertLocksSafe();
    }
}
