package lettuce;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rlockd.RlockdReplicated;
import dev.rlockd.spring.AutoConfigureRlockd;
import dev.rlockd.spring.AutoConfigureRlockd.Topology;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

@SpringBootTest(classes = DataRedisOnly.class)
@AutoConfigureRlockd(topology = Topology.SENTINEL, replicas = 1)
class LettuceSentinelTest {

    @Autowired
    StringRedisTemplate redis;

    @Autowired
    RedisConnectionFactory connections;

    @Autowired
    RlockdReplicated topology;

    @Test
    void sentinel() {
        LettuceConnectionFactory lettuce = (LettuceConnectionFactory) connections;
        assertThat(lettuce.getSentinelConfiguration()).isNotNull();
        assertThat(lettuce.getSentinelConfiguration().getMaster().getName()).isEqualTo(topology.masterName());
        assertThat(lettuce.getSentinelConfiguration().getSentinels()).hasSize(3);
        redis.opsForValue().set("k", "v");
        assertThat(topology.primary().commandString("GET", "k")).isEqualTo("v");
    }
}
