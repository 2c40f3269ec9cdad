package example;

import static org.assertj.core.api.Assertions.assertThat;

import dev.rlockd.RlockdCluster;
import dev.rlockd.spring.AutoConfigureRlockd;
import dev.rlockd.spring.AutoConfigureRlockd.Topology;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.data.redis.core.StringRedisTemplate;

/** The context asks for a Cluster with a password: both clients follow its slots. */
@SpringBootTest
@AutoConfigureRlockd(topology = Topology.CLUSTER, primaries = 3, password = "pw")
class ClusterTest {

    @Autowired
    StringRedisTemplate redis;

    @Autowired
    RedissonClient redisson;

    @Autowired
    RlockdCluster cluster;

    @Test
    void acrossTheSlots() throws InterruptedException {
        for (int i = 0; i < 20; i++) {
            redis.opsForValue().set("key:" + i, Integer.toString(i));
        }
        for (int i = 0; i < 20; i++) {
            assertThat(redis.opsForValue().get("key:" + i)).isEqualTo(Integer.toString(i));
        }
        long keys = 0;
        int nodesWithKeys = 0;
        for (var node : cluster.nodes()) {
            long n = (Long) node.command("DBSIZE");
            keys += n;
            nodesWithKeys += n > 0 ? 1 : 0;
        }
        assertThat(keys).isEqualTo(20);
        assertThat(nodesWithKeys).isEqualTo(3);
        RLock lock = redisson.getLock("jobs");
        assertThat(lock.tryLock(0, 30, TimeUnit.SECONDS)).isTrue();
        assertThat(cluster.locks()).extracting(l -> l.key()).contains("jobs");
        lock.unlock();
    }
}
