-- Reentrant lock: acquire (Redisson RLock protocol).
--
-- The lock is a hash: field "<uuid>:<threadId>" -> hold count. The whole key
-- carries the lease as its TTL.
--
-- KEYS[1]  lock name                      e.g. "myLock"
-- ARGV[1]  lease time in milliseconds     e.g. 30000
-- ARGV[2]  holder id "<uuid>:<threadId>"
--
-- Returns nil when the caller now holds the lock (fresh or re-entered),
-- otherwise the lock's remaining time to live in milliseconds.

local lock, lease, holder = KEYS[1], ARGV[1], ARGV[2]

local free = redis.call('exists', lock) == 0
if free or redis.call('hexists', lock, holder) == 1 then
    redis.call('hincrby', lock, holder, 1)
    redis.call('pexpire', lock, lease)
    return nil
end
return redis.call('pttl', lock)
