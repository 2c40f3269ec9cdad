-- Token lock (redis-py Lock.reacquire): reset the TTL if still ours.
--
-- KEYS[1]  lock name
-- ARGV[1]  our token
-- ARGV[2]  new TTL in milliseconds
--
-- Returns 1 if the TTL was reset, 0 if the lock is not ours.

local owner = redis.call('get', KEYS[1])
if owner == false or owner ~= ARGV[1] then
    return 0
end
redis.call('pexpire', KEYS[1], ARGV[2])
return 1
