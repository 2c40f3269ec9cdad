package example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rlockd.RlockdServer;
import dev.rlockd.spring.AutoConfigureRlockd;
import java.net.Socket;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.api.RedissonClient;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.data.redis.core.RedisCallback;
import org.springframework.data.redis.core.StringRedisTemplate;

/** A password the server requires reaches both clients through RedisConnectionDetails. */
@SpringBootTest
@AutoConfigureRlockd(password = "s3cret", args = {"--redis-version", "8.2.3"})
class PasswordTest {

    @Autowired
    StringRedisTemplate redis;

    @Autowired
    RedissonClient redisson;

    @Autowired
    RlockdServer server;

    @Test
    void clientsAuthenticate() throws Exception {
        assertThat(server.password()).isEqualTo("s3cret");
        redis.opsForValue().set("a", "1");
        assertThat(redis.opsForValue().get("a")).isEqualTo("1");
        assertThat(redisson.getLock("l").tryLock(0, 5, TimeUnit.SECONDS)).isTrue();
        // The profile asked for is the one answering.
        Properties info = redis.execute((RedisCallback<Properties>) c -> c.serverCommands().info("server"));
        assertThat(info.getProperty("redis_version")).isEqualTo("8.2.3");
        // Without the password the server refuses.
        try (Socket sock = new Socket(server.host(), server.port())) {
            sock.getOutputStream().write("GET a\r\n".getBytes());
            byte[] buf = new byte[64];
            int n = sock.getInputStream().read(buf);
            assertThat(new String(buf, 0, n)).startsWith("-NOAUTH");
        }
    }
}
