-- Token lock (redis-py Lock.extend): add time, or replace the TTL.
--
-- KEYS[1]  lock name
-- ARGV[1]  our token
-- ARGV[2]  milliseconds to add (or the new TTL)
-- ARGV[3]  "1" to replace the TTL with ARGV[2], "0" to add ARGV[2]
--
-- Returns 1 if extended, 0 if the lock is not ours or has no TTL.

local owner = redis.call('get', KEYS[1])
if owner == false or owner ~= ARGV[1] then
    return 0
end
local current = redis.call('pttl', KEYS[1])
if current < 0 then
    return 0
end
local ttl = tonumber(ARGV[2])
if ARGV[3] == '0' then
    ttl = ttl + current
end
redis.call('pexpire', KEYS[1], ttl)
return 1
