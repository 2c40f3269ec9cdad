-- Reentrant lock: renew the lease (Redisson's watchdog).
--
-- KEYS[1]  lock name
-- ARGV[1]  lease time in milliseconds
-- ARGV[2]  holder id "<uuid>:<threadId>"
--
-- Returns 1 if the caller holds the lock and its lease was reset, else 0.

if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
    redis.call('pexpire', KEYS[1], ARGV[1])
    return 1
end
return 0
