-- Reentrant lock: release one hold (Redisson RLock protocol).
--
-- KEYS[1]  lock name
-- KEYS[2]  unlock channel "redisson_lock__channel:{<lock name>}"
-- ARGV[1]  unlock message published to waiters (Redisson uses 0)
-- ARGV[2]  lease time in milliseconds, re-armed while holds remain
-- ARGV[3]  holder id "<uuid>:<threadId>"
--
-- Returns nil if the caller does not hold the lock, 0 if it still holds it
-- (re-entered), 1 when the lock was released and waiters were notified.

local lock, channel = KEYS[1], KEYS[2]
local message, lease, holder = ARGV[1], ARGV[2], ARGV[3]

if redis.call('hexists', lock, holder) == 0 then
    return nil
end
local remaining = redis.call('hincrby', lock, holder, -1)
if remaining > 0 then
    redis.call('pexpire', lock, lease)
    return 0
end
redis.call('del', lock)
redis.call('publish', channel, message)
return 1
