-- Semaphore: initialise the permits once (RSemaphore.trySetPermits).
--
-- KEYS[1]  semaphore name
-- KEYS[2]  channel "redisson_sc:{<semaphore name>}"
-- ARGV[1]  permits
--
-- Returns 1 if the semaphore was created, 0 if it already existed.

if redis.call('exists', KEYS[1]) == 0 then
    redis.call('set', KEYS[1], ARGV[1])
    redis.call('publish', KEYS[2], ARGV[1])
    return 1
end
return 0
