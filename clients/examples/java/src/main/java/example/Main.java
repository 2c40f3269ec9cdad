package example;

import java.util.concurrent.TimeUnit;

import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.client.codec.StringCodec;
import org.redisson.config.Config;

/** Takes and releases a Redisson lock on rlockd (its Lua scripts and pub/sub run unmodified). */
public class Main {
    public static void main(String[] args) throws Exception {
        String address = args.length > 0 ? args[0] : "redis://127.0.0.1:6379";
        Config config = new Config();
        config.useSingleServer().setAddress(address);
        RedissonClient redisson = Redisson.create(config);
        try {
            RLock lock = redisson.getLock("example:lock");
            if (!lock.tryLock(1, 10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("lock not acquired");
            }
            try {
                lock.lock(); // reentrant: the hold count goes to 2 and back
                lock.unlock();
                redisson.getBucket("example:java", StringCodec.INSTANCE).set("ok");
            } finally {
                lock.unlock();
            }
            if (lock.isLocked()) {
                throw new IllegalStateException("lock still held after unlock");
            }
            System.out.println("java example: ok");
        } finally {
            redisson.shutdown();
        }
    }
}
