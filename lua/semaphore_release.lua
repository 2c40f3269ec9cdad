-- Semaphore: give permits back and wake waiters (RSemaphore).
--
-- KEYS[1]  semaphore name
-- KEYS[2]  channel "redisson_sc:{<semaphore name>}"
-- ARGV[1]  permits to release
--
-- Returns the permits now available.

local available = redis.call('incrby', KEYS[1], ARGV[1])
redis.call('publish', KEYS[2], available)
return available
