package example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rlockd.RlockdServer;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.api.RedissonClient;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * No annotation: src/test/resources/spring.properties sets dev.rlockd.spring.auto-configure,
 * so this context gets the server @AutoConfigureRlockd's defaults would give (and shares
 * StandaloneTest's context, whose settings are those defaults).
 */
@SpringBootTest
class NoAnnotationTest {

    @Autowired
    StringRedisTemplate redis;

    @Autowired
    RedissonClient redisson;

    @Autowired
    RlockdServer server;

    @Test
    void theFlagAloneStartsTheServer() throws InterruptedException {
        redis.opsForValue().set("unannotated", "yes");
        assertThat(server.commandString("GET", "unannotated")).isEqualTo("yes");
        assertThat(redisson.getLock("unannotated-lock").tryLock(0, 5, TimeUnit.SECONDS)).isTrue();
        assertThat(server.locks("unannotated-lock")).hasSize(1);
    }
}
