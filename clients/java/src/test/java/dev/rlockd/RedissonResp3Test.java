package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;

/** Redisson speaking RESP3 (HELLO 3): locks, and the unlock message that wakes a waiter. */
class RedissonResp3Test {
    @RegisterExtension
    static final RlockdExtension RLOCKD = RlockdExtension.perClass();

    static RedissonClient resp3(String url) throws Exception {
        // YAML keeps this file compiling against Redisson lines without the protocol setter.
        return Redisson.create(Config.fromYAML("singleServerConfig:\n  address: \"" + url + "\"\nprotocol: RESP3\n"));
    }

    @Test
    void lockContentionAndWakeUpOverResp3() throws Exception {
        RlockdServer srv = RLOCKD.server();
        RedissonClient a = resp3(srv.url());
        RedissonClient b = resp3(srv.url());
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            assertEquals(0L, a.getKeys().count()); // a first command over RESP3
            String clients = new String((byte[]) srv.command("CLIENT", "LIST"), StandardCharsets.UTF_8);
            assertTrue(clients.contains("resp=3"), clients);

            RLock la = a.getLock("resp3-lock");
            la.lock();
            Future<Boolean> waiter = pool.submit(() -> {
                RLock lb = b.getLock("resp3-lock");
                boolean got = lb.tryLock(10, 30, TimeUnit.SECONDS);
                if (got) {
                    lb.unlock();
                }
                return got;
            });
            Thread.sleep(200);
            assertFalse(waiter.isDone());
            la.unlock();
            assertTrue(waiter.get(20, TimeUnit.SECONDS));
        } finally {
            pool.shutdownNow();
            a.shutdown();
            b.shutdown();
        }
    }
}
