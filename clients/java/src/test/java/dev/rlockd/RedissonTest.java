package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.redisson.Redisson;
import org.redisson.api.RCountDownLatch;
import org.redisson.api.RLock;
import org.redisson.api.RPermitExpirableSemaphore;
import org.redisson.api.RReadWriteLock;
import org.redisson.api.RSemaphore;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/** The real Redisson (its Lua lock scripts unmodified) against the server the extension starts. */
@ExtendWith(RlockdExtension.class)
class RedissonTest {
    static RedissonClient a;
    static RedissonClient b;
    final ExecutorService pool = Executors.newCachedThreadPool();

    static RedissonClient client(String url, long watchdogMillis) {
        Config config = new Config();
        config.setLockWatchdogTimeout(watchdogMillis);
        config.useSingleServer().setAddress(url).setConnectionMinimumIdleSize(2).setConnectionPoolSize(8)
                .setSubscriptionConnectionMinimumIdleSize(1);
        return Redisson.create(config);
    }

    @BeforeAll
    static void clients(@RlockdUrl String url) {
        a = client(url, 30_000);
        b = client(url, 30_000);
    }

    @AfterAll
    static void shutdown() {
        a.shutdown();
        b.shutdown();
    }

    @AfterEach
    void stopPool() {
        pool.shutdownNow();
    }

    <T> T on(java.util.concurrent.Callable<T> task) throws Exception {
        return pool.submit(task).get(20, TimeUnit.SECONDS); // hang guard
    }

    @Test
    void lockWithWatchdogOutlivesItsFirstLease(RlockdServer srv) throws Exception {
        RedissonClient w = client(srv.url(), 1000); // lease 1 s, renewed every ~333 ms
        try {
            RLock lock = w.getLock("watched");
            lock.lock();
            try {
                Thread.sleep(2500); // well past the first 1 s lease
                assertTrue(lock.isLocked());
                assertTrue(lock.isHeldByCurrentThread());
                long ttl = (Long) srv.command("PTTL", "watched");
                assertTrue(ttl > 0 && ttl <= 1000, "renewed lease, pttl " + ttl);
            } finally {
                lock.unlock();
            }
            assertEquals(0L, srv.command("EXISTS", "watched"));
        } finally {
            w.shutdown();
        }
    }

    @Test
    void leaseExpiryFreesTheLock() throws Exception {
        RLock la = a.getLock("lease");
        assertTrue(la.tryLock(0, 300, TimeUnit.MILLISECONDS));
        // b waits up to 5 s; the 300 ms lease runs out without an unlock
        assertTrue(on(() -> {
            RLock lb = b.getLock("lease");
            boolean got = lb.tryLock(5, 10, TimeUnit.SECONDS);
            if (got) {
                lb.unlock();
            }
            return got;
        }));
    }

    @Test
    void tryLockContentionAcrossTwoClients() throws Exception {
        RLock la = a.getLock("contended");
        la.lock();
        assertFalse(on(() -> b.getLock("contended").tryLock()));
        CountDownLatch waiting = new CountDownLatch(1);
        Future<Boolean> waiter = pool.submit(() -> {
            RLock lb = b.getLock("contended");
            waiting.countDown();
            boolean got = lb.tryLock(10, 30, TimeUnit.SECONDS); // woken by the unlock message
            if (got) {
                assertTrue(lb.isHeldByCurrentThread());
                lb.unlock();
            }
            return got;
        });
        waiting.await();
        Thread.sleep(200);
        assertFalse(waiter.isDone());
        la.unlock();
        assertTrue(waiter.get(20, TimeUnit.SECONDS));
        assertFalse(la.isLocked());
    }

    @Test
    void fairLockServesWaitersInOrder(RlockdServer srv) throws Exception {
        RLock holder = a.getFairLock("fair");
        holder.lock();
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        List<Future<?>> waiters = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            int id = i;
            RedissonClient c = i % 2 == 0 ? a : b;
            waiters.add(pool.submit(() -> {
                RLock l = c.getFairLock("fair");
                l.lock();
                order.add(id);
                l.unlock();
                return null;
            }));
            // wait until this waiter is queued before the next one asks
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while ((Long) srv.command("LLEN", "redisson_lock_queue:{fair}") < i && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertEquals((long) i, srv.command("LLEN", "redisson_lock_queue:{fair}"));
        }
        holder.unlock();
        for (Future<?> f : waiters) {
            f.get(20, TimeUnit.SECONDS);
        }
        assertEquals(List.of(1, 2, 3), order);
    }

    @Test
    void readWriteLock() throws Exception {
        RReadWriteLock rwA = a.getReadWriteLock("rw");
        RReadWriteLock rwB = b.getReadWriteLock("rw");
        rwA.readLock().lock();
        assertTrue(on(() -> {
            RLock r = rwB.readLock();
            boolean got = r.tryLock(0, 10, TimeUnit.SECONDS); // readers share
            if (got) {
                r.unlock();
            }
            return got;
        }));
        assertFalse(on(() -> rwB.writeLock().tryLock(0, 10, TimeUnit.SECONDS))); // writer excluded
        rwA.readLock().unlock();
        assertTrue(on(() -> {
            RLock w = rwB.writeLock();
            boolean got = w.tryLock(0, 10, TimeUnit.SECONDS);
            if (got) {
                boolean readerBlocked = !CompletableFuture.supplyAsync(() -> {
                    try {
                        return rwA.readLock().tryLock(0, 10, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                }).get(20, TimeUnit.SECONDS);
                w.unlock();
                return readerBlocked;
            }
            return false;
        }));
    }

    @Test
    void semaphore() throws Exception {
        RSemaphore sa = a.getSemaphore("permits");
        assertTrue(sa.trySetPermits(2));
        sa.acquire(2);
        assertEquals(0, sa.availablePermits());
        RSemaphore sb = b.getSemaphore("permits");
        assertFalse(sb.tryAcquire());
        Future<Boolean> waiter = pool.submit(() -> sb.tryAcquire(10, TimeUnit.SECONDS));
        Thread.sleep(100);
        sa.release();
        assertTrue(waiter.get(20, TimeUnit.SECONDS));
        assertEquals(0, sb.availablePermits());
        sb.release(2);
        assertEquals(2, sa.availablePermits());
    }

    @Test
    void permitExpirableSemaphore() throws Exception {
        RPermitExpirableSemaphore sa = a.getPermitExpirableSemaphore("expirable");
        assertTrue(sa.trySetPermits(1));
        String id = sa.acquire();
        assertNotNull(id);
        RPermitExpirableSemaphore sb = b.getPermitExpirableSemaphore("expirable");
        assertNull(sb.tryAcquire());
        sa.release(id);
        // a permit leased for 300 ms comes back by itself; the waiter gets it
        String leased = sb.tryAcquire(0, 300, TimeUnit.MILLISECONDS);
        assertNotNull(leased);
        assertNull(sa.tryAcquire());
        String next = on(() -> sa.tryAcquire(5, 10, TimeUnit.SECONDS));
        assertNotNull(next);
        sa.release(next);
        assertEquals(1, sa.availablePermits());
    }

    @Test
    void countDownLatch() throws Exception {
        RCountDownLatch la = a.getCountDownLatch("latch");
        assertTrue(la.trySetCount(2));
        Future<Boolean> awaiting = pool.submit(() -> b.getCountDownLatch("latch").await(10, TimeUnit.SECONDS));
        pool.submit(() -> b.getCountDownLatch("latch").countDown());
        Thread.sleep(100);
        assertFalse(awaiting.isDone());
        la.countDown();
        assertTrue(awaiting.get(20, TimeUnit.SECONDS));
        assertEquals(0, la.getCount());
    }
}
