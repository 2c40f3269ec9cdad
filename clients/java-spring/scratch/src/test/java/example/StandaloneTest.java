package example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rlockd.LockInfo;
import dev.rlockd.RlockdServer;
import dev.rlockd.spring.AutoConfigureRlockd;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.core.env.Environment;
import org.springframework.data.redis.core.StringRedisTemplate;

/** One annotation, no spring.data.redis property: Spring Data Redis and Redisson's starter reach rlockd. */
@SpringBootTest
@AutoConfigureRlockd
class StandaloneTest {

    @Autowired
    StringRedisTemplate redis;

    @Autowired
    RedissonClient redisson;

    @Autowired
    RlockdServer server;

    @Autowired
    Environment env;

    @Autowired
    OrderLocks orders;

    @Test
    void noRedisPropertyIsWritten() {
        assertThat(env.getProperty("spring.data.redis.host")).isNull();
        assertThat(env.getProperty("spring.data.redis.port")).isNull();
        assertThat(env.getProperty("spring.data.redis.url")).isNull();
    }

    @Test
    void stringRedisTemplateTalksToTheServer() {
        redis.opsForValue().set("greeting", "hello");
        assertThat(redis.opsForValue().get("greeting")).isEqualTo("hello");
        assertThat(server.commandString("GET", "greeting")).isEqualTo("hello");
    }

    @Test
    void redissonStarterLocksOnTheServer() throws InterruptedException {
        RLock lock = redisson.getLock("orders:42");
        assertThat(lock.tryLock(0, 30, TimeUnit.SECONDS)).isTrue();
        List<LockInfo> locks = server.locks("orders:42");
        assertThat(locks).hasSize(1);
        assertThat(locks.get(0).kind()).isEqualTo("reentrant");
        assertThat(locks.get(0).holders()).hasSize(1);
        lock.unlock();
        assertThat(server.locks("orders:42")).isEmpty();
        server.assertLocksSafe();
    }

    @Test
    void theApplicationsOwnCode() throws InterruptedException {
        RLock held = redisson.getLock("lock:7");
        assertThat(orders.ship("6")).isTrue();
        assertThat(redis.opsForValue().get("shipped:6")).isEqualTo("yes");
        // A holder in another thread: ship() must not take the lock.
        Thread t = new Thread(() -> held.lock(30, TimeUnit.SECONDS));
        t.start();
        t.join();
        assertThat(orders.ship("7")).isFalse();
        assertThat(redis.hasKey("shipped:7")).isFalse();
    }
}
