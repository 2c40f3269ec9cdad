package example;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.rlockd.testcontainers.RedisContainer;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;

/** dev.rlockd.testcontainers.RedisContainer's accessors and lifecycles. */
@Testcontainers
class RedisContainerShapeTest {

    @Container
    RedisContainer perTest = new RedisContainer("redis:7.4");

    @Test
    void containerFieldIsStartedAndMapped() throws InterruptedException {
        assertThat(perTest.isRunning()).isTrue();
        assertThat(perTest.getDockerImageName()).isEqualTo("redis:7.4");
        assertThat(perTest.getMappedPort(6379)).isEqualTo(perTest.getFirstMappedPort());
        assertThat(perTest.getRedisURI()).isEqualTo("redis://" + perTest.getHost() + ":" + perTest.getFirstMappedPort());
        assertThatThrownBy(() -> perTest.getMappedPort(6380)).isInstanceOf(IllegalArgumentException.class);
        Config config = new Config();
        config.useSingleServer().setAddress(perTest.getRedisURI());
        RedissonClient redisson = Redisson.create(config);
        try {
            RLock lock = redisson.getLock("orders");
            assertThat(lock.tryLock(0, 10, TimeUnit.SECONDS)).isTrue();
            assertThat(perTest.getServer().locks("orders")).hasSize(1);
        } finally {
            redisson.shutdown();
        }
    }

    @Test
    void startStopAndTryWithResources() {
        RedisContainer c = new RedisContainer();
        assertThatThrownBy(c::getFirstMappedPort).isInstanceOf(IllegalStateException.class);
        try (c) {
            c.start();
            assertThat(c.getServer().ping()).isTrue();
        }
        assertThat(c.isRunning()).isFalse();
    }
}
