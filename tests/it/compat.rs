//! Connection set-up sequences of real clients (Redisson, Lettuce, Jedis, redis-py, ioredis, node-redis, redis-rs).
