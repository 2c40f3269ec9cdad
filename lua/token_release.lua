-- Token lock (redis-py Lock): release only if we still own it.
--
-- KEYS[1]  lock name (a string holding the owner's token)
-- ARGV[1]  our token
--
-- Returns 1 if the lock was ours and is now deleted, else 0.

local owner = redis.call('get', KEYS[1])
if owner == false or owner ~= ARGV[1] then
    return 0
end
redis.call('del', KEYS[1])
return 1
