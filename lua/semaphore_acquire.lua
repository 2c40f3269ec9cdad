-- Semaphore: take permits if enough are available (Redisson RSemaphore).
--
-- KEYS[1]  semaphore name (a string holding the available permits)
-- ARGV[1]  permits to take
--
-- Returns 1 if the permits were taken, else 0.

local available = redis.call('get', KEYS[1])
if available ~= false and tonumber(available) >= tonumber(ARGV[1]) then
    redis.call('decrby', KEYS[1], ARGV[1])
    return 1
end
return 0
