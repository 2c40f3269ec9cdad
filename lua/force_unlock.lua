-- Reentrant lock: release regardless of the holder (forceUnlock).
--
-- KEYS[1]  lock name
-- KEYS[2]  unlock channel "redisson_lock__channel:{<lock name>}"
-- ARGV[1]  unlock message
--
-- Returns 1 if a lock was deleted (and waiters notified), else 0.

if redis.call('del', KEYS[1]) == 1 then
    redis.call('publish', KEYS[2], ARGV[1])
    return 1
end
return 0
