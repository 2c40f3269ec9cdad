package example;

import java.util.concurrent.TimeUnit;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.stereotype.Service;

/** The application's code under test: a Redisson lock around a Spring Data Redis write. */
@Service
public class OrderLocks {
    private final RedissonClient redisson;
    private final StringRedisTemplate redis;

    public OrderLocks(RedissonClient redisson, StringRedisTemplate redis) {
        this.redisson = redisson;
        this.redis = redis;
    }

    public boolean ship(String order) throws InterruptedException {
        RLock lock = redisson.getLock("lock:" + order);
        if (!lock.tryLock(0, 30, TimeUnit.SECONDS)) {
            return false;
        }
        try {
            redis.opsForValue().set("shipped:" + order, "yes");
            return true;
        } finally {
            lock.unlock();
        }
    }
}
