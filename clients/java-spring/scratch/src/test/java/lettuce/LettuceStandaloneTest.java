package lettuce;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rlockd.RlockdServer;
import dev.rlockd.spring.AutoConfigureRlockd;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

@SpringBootTest(classes = DataRedisOnly.class)
@AutoConfigureRlockd
class LettuceStandaloneTest {

    @Autowired
    StringRedisTemplate redis;

    @Autowired
    RedisConnectionFactory connections;

    @Autowired
    RlockdServer server;

    @Test
    void standalone() {
        LettuceConnectionFactory lettuce = (LettuceConnectionFactory) connections;
        assertThat(lettuce.getHostName()).isEqualTo(server.host());
        assertThat(lettuce.getPort()).isEqualTo(server.port()).isNotEqualTo(6379);
        redis.opsForValue().set("k", "v");
        assertThat(server.commandString("GET", "k")).isEqualTo("v");
    }
}
