package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import dev.rlockd.redisson.RlockdRedisson;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/** The README's example, as it is printed there (less the package line). */
@ExtendWith(RlockdExtension.class)           // one server per class; RlockdExtension.perTest() for one per test
class LockTest {
    @Test
    void leaseRunsOut(RlockdServer srv) {    // or (@RlockdUrl String url)
        RedissonClient redisson = RlockdRedisson.client(srv);
        try {
            RLock lock = redisson.getLock("orders");
            lock.lock(30, TimeUnit.SECONDS);                 // an explicit lease: no watchdog renews it
            assertEquals("reentrant", srv.locks().get(0).kind());
            srv.advanceClock(30_000);                        // no sleeping: the lease is over now
            assertFalse(lock.isLocked());
            assertEquals(List.of("acquired", "expired"),
                    srv.lockEvents("orders").stream().map(LockEvent::event).collect(Collectors.toList()));
            srv.assertLocksSafe();                           // no two holders at once, no queue jumped
        } finally {
            redisson.shutdown();
        }
    }
}
