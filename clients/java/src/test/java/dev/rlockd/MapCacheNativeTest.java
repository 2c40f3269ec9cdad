package dev.rlockd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.rlockd.redisson.RlockdRedisson;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.redisson.api.RMapCacheNative;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;

/**
 * Redisson's RMapCacheNative (hash field expiration, Redis 7.4's HPEXPIRE
 * family) against rlockd answering as Redis 8.2.3: entries put with a TTL,
 * their remaining time, and their expiry when the virtual clock moves.
 */
class MapCacheNativeTest {
    @Test
    void entriesExpireWithTheClock() {
        try (RlockdServer srv = RlockdServer.builder().arg("--redis-version", "8.2.3").start()) {
            RedissonClient redisson = RlockdRedisson.client(srv);
            try {
                srv.command("RLOCKD", "CLOCK", "FREEZE");
                RMapCacheNative<String, String> map = redisson.getMapCacheNative("sessions", StringCodec.INSTANCE);
                map.put("alice", "1", Duration.ofSeconds(10));
                map.put("bob", "2", Duration.ofSeconds(30));
                map.put("carol", "3");
                assertEquals(10_000L, map.remainTimeToLive("alice"));
                assertEquals(-1L, map.remainTimeToLive("carol"));
                assertEquals("listpackex", srv.commandString("OBJECT", "ENCODING", "sessions"));
                srv.advanceClock(10_000);
                assertNull(map.get("alice"));
                assertEquals("2", map.get("bob"));
                assertEquals(20_000L, map.remainTimeToLive("bob"));
                assertEquals(2, map.size());
                srv.advanceClock(20_000);
                assertNull(map.get("bob"));
                assertEquals(1, map.size());
                assertTrue(map.containsKey("carol"));
            } finally {
                redisson.shutdown();
            }
        }
    }
}
