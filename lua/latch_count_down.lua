-- Count-down latch: count down once (RCountDownLatch).
--
-- KEYS[1]  latch name
-- KEYS[2]  channel "redisson_countdownlatch__channel__{<latch name>}"
-- ARGV[1]  "zero" message published when the count reaches 0
--
-- Returns the count after the decrement (the latch key is gone at 0).

local count = redis.call('decr', KEYS[1])
if count <= 0 then
    redis.call('del', KEYS[1])
end
if count == 0 then
    redis.call('publish', KEYS[2], ARGV[1])
end
return count
