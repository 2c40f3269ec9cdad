package example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rlockd.RlockdReplicated;
import dev.rlockd.spring.AutoConfigureRlockd;
import dev.rlockd.spring.AutoConfigureRlockd.Topology;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.data.redis.core.StringRedisTemplate;

/** The context asks for Sentinel (data nodes with a password, the Sentinels without, as rlockd has them): both clients find the primary through the Sentinels. */
@SpringBootTest
@AutoConfigureRlockd(topology = Topology.SENTINEL, replicas = 1, sentinels = 3, password = "pw")
class SentinelTest {

    @Autowired
    StringRedisTemplate redis;

    @Autowired
    RedissonClient redisson;

    @Autowired
    RlockdReplicated topology;

    @Test
    void throughTheSentinels() throws InterruptedException {
        redis.opsForValue().set("k", "v");
        assertThat(topology.primary().commandString("GET", "k")).isEqualTo("v");

        RLock lock = redisson.getLock("jobs");
        assertThat(lock.tryLock(0, 30, TimeUnit.SECONDS)).isTrue();
        assertThat(topology.primary().locks("jobs")).hasSize(1);
        lock.unlock();
    }
}
