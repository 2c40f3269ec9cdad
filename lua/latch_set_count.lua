-- Count-down latch: set the count once (Redisson RCountDownLatch).
--
-- KEYS[1]  latch name (a string holding the count)
-- KEYS[2]  channel "redisson_countdownlatch__channel__{<latch name>}"
-- ARGV[1]  "new count" message published to waiters
-- ARGV[2]  count
--
-- Returns 1 if the count was set, 0 if the latch already exists.

if redis.call('exists', KEYS[1]) == 0 then
    redis.call('set', KEYS[1], ARGV[2])
    redis.call('publish', KEYS[2], ARGV[1])
    return 1
end
return 0
