package lettuce;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rlockd.RlockdCluster;
import dev.rlockd.RlockdServer;
import dev.rlockd.spring.AutoConfigureRlockd;
import dev.rlockd.spring.AutoConfigureRlockd.Topology;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

@SpringBootTest(classes = DataRedisOnly.class)
@AutoConfigureRlockd(topology = Topology.CLUSTER)
class LettuceClusterTest {

    @Autowired
    StringRedisTemplate redis;

    @Autowired
    RedisConnectionFactory connections;

    @Autowired
    RlockdCluster cluster;

    @Test
    void cluster() {
        LettuceConnectionFactory lettuce = (LettuceConnectionFactory) connections;
        assertThat(lettuce.getClusterConfiguration()).isNotNull();
        assertThat(lettuce.getClusterConfiguration().getClusterNodes()).hasSize(3);
        for (int i = 0; i < 20; i++) {
            redis.opsForValue().set("key:" + i, Integer.toString(i));
        }
        long keys = 0;
        for (RlockdServer node : cluster.nodes()) {
            keys += (Long) node.command("DBSIZE");
        }
        assertThat(keys).isEqualTo(20);
    }
}
