package lettuce;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rlockd.RlockdCluster;
import dev.rlockd.RlockdReplicated;
import dev.rlockd.RlockdServer;
import dev.rlockd.spring.AutoConfigureRlockd;
import dev.rlockd.spring.AutoConfigureRlockd.Topology;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.redisson.spring.starter.RedissonAutoConfigurationV2;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.annotation.Configuration;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.lettuce.LettuceConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;

/**
 * Spring Data Redis on its own (Lettuce, as an application without Redisson's starter has
 * it): Spring Boot's Redis auto-configuration builds its connection factory from the
 * RedisConnectionDetails the annotation supplies, for each topology.
 */
@SpringBootTest(classes = LettuceTest.DataRedisOnly.class)
class LettuceTest {

    /** Spring Boot's auto-configuration without Redisson's, outside the application's package (none of its beans). */
    @Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration(exclude = RedissonAutoConfigurationV2.class)
    static class DataRedisOnly {}

    @Nested
    @AutoConfigureRlockd
    class Standalone {
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

    @Nested
    @AutoConfigureRlockd(topology = Topology.SENTINEL, replicas = 1)
    class Sentinel {
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

    @Nested
    @AutoConfigureRlockd(topology = Topology.CLUSTER)
    class Cluster {
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
}
