package example;

import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.RedissonMultiLock;
import org.redisson.api.RLock;
import org.redisson.api.RScript;
import org.redisson.api.RedissonClient;
import org.redisson.client.RedisException;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/**
 * Redisson in cluster mode on {@code rlockd --cluster 3}: RLock, RFairLock (its queue keys carry
 * the lock's hash tag), a MultiLock over locks of different slots, and a lock script over two
 * keys without a hash tag refused with CROSSSLOT, as on a real cluster.
 */
public class ClusterMain {
    static void check(boolean ok, String what) {
        if (!ok) {
            throw new IllegalStateException("java cluster example: " + what);
        }
    }

    public static void main(String[] args) throws Exception {
        String address = args.length > 0 ? args[0] : "redis://127.0.0.1:7000";
        Config config = new Config();
        config.useClusterServers().addNodeAddress(address);
        RedissonClient redisson = Redisson.create(config);
        try {
            check(redisson.getRedisNodes(org.redisson.api.redisnode.RedisNodes.CLUSTER).getMasters().size() == 3,
                    "3 masters");
            RLock lock = redisson.getLock("example:cluster:lock");
            check(lock.tryLock(1, 30, TimeUnit.SECONDS), "RLock not acquired");
            lock.lock(); // reentrant
            lock.unlock();
            lock.unlock();
            check(!lock.isLocked(), "RLock still held");

            RLock fair = redisson.getFairLock("example:cluster:fair");
            check(fair.tryLock(1, 30, TimeUnit.SECONDS), "RFairLock not acquired");
            fair.unlock();
            check(!fair.isLocked(), "RFairLock still held");

            // Three locks whose names hash to different slots, held together.
            RLock a = redisson.getLock("multi:a");
            RLock b = redisson.getLock("multi:b");
            RLock c = redisson.getLock("multi:c");
            RedissonMultiLock multi = new RedissonMultiLock(a, b, c);
            check(multi.tryLock(1, 30, TimeUnit.SECONDS), "MultiLock not acquired");
            check(a.isLocked() && b.isLocked() && c.isLocked(), "MultiLock parts held");
            multi.unlock();
            check(!a.isLocked() && !b.isLocked() && !c.isLocked(), "MultiLock parts released");

            // A lock script over two keys of different slots: CROSSSLOT.
            String crossslot = null;
            try {
                redisson.getScript(StringCodec.INSTANCE).eval("lock:a", RScript.Mode.READ_WRITE,
                        "redis.call('set', KEYS[1], '1'); return redis.call('set', KEYS[2], '1')",
                        RScript.ReturnType.STATUS, java.util.List.of("lock:a", "lock:b"));
            } catch (RedisException e) {
                crossslot = e.getMessage();
            }
            check(crossslot != null && crossslot.contains("CROSSSLOT Keys in request don't hash to the same slot"),
                    "CROSSSLOT expected: " + crossslot);
            System.out.println("java cluster example: ok");
        } finally {
            redisson.shutdown();
        }
    }
}
