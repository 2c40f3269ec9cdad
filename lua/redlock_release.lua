-- Redlock (and any SET NX token lock): delete the key only if it still
-- holds our token, on each node.
--
-- KEYS[1]  lock name
-- ARGV[1]  our token
--
-- Returns 1 if deleted, 0 otherwise.

if redis.call('get', KEYS[1]) == ARGV[1] then
    return redis.call('del', KEYS[1])
end
return 0
