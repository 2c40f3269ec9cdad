package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.rlockd.redisson.RlockdRedisson;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;

/** The Redisson helper, against a server with a password. */
class RlockdRedissonTest {
    @RegisterExtension
    static final RlockdExtension RLOCKD = RlockdExtension.perClass(RlockdServer.builder().password("s3cret"));

    @Test
    void clientFromTheHelperTakesALock(RlockdServer srv) {
        assertEquals("redis://:s3cret@127.0.0.1:" + srv.port(), srv.url());
        RedissonClient redisson = RlockdRedisson.client(srv);
        try {
            RLock lock = redisson.getLock("helper");
            lock.lock();
            assertEquals(1L, srv.command("EXISTS", "helper"));
            lock.unlock();
            assertEquals(0L, srv.command("EXISTS", "helper"));
            assertTrue(redisson.getConfig().useSingleServer().getAddress().endsWith(":" + srv.port()));
        } finally {
            redisson.shutdown();
        }
    }
}
