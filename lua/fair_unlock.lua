-- Fair lock: release one hold and wake the next waiter (RFairLock).
--
-- KEYS[1]  lock name
-- KEYS[2]  queue "redisson_lock_queue:{<lock name>}"
-- KEYS[3]  timeouts "redisson_lock_timeout:{<lock name>}"
-- KEYS[4]  channel prefix "redisson_lock__channel:{<lock name>}"; the next
--          waiter is told on "<prefix>:<its holder id>"
-- ARGV[1]  unlock message
-- ARGV[2]  lease time in milliseconds
-- ARGV[3]  holder id "<uuid>:<threadId>"
-- ARGV[4]  current time, unix milliseconds
--
-- Returns nil if the caller does not hold the lock, 0 if it still holds it,
-- 1 when released (or already free) and the next waiter was notified.

local lock, queue, timeouts, prefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local message, lease, holder, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])

while true do
    local head = redis.call('lindex', queue, 0)
    if head == false then
        break
    end
    if tonumber(redis.call('zscore', timeouts, head)) > now then
        break
    end
    redis.call('zrem', timeouts, head)
    redis.call('lpop', queue)
end

local function wake_next()
    local nxt = redis.call('lindex', queue, 0)
    if nxt ~= false then
        redis.call('publish', prefix .. ':' .. nxt, message)
    end
end

if redis.call('exists', lock) == 0 then
    wake_next()
    return 1
end
if redis.call('hexists', lock, holder) == 0 then
    return nil
end
if redis.call('hincrby', lock, holder, -1) > 0 then
    redis.call('pexpire', lock, lease)
    return 0
end
redis.call('del', lock)
wake_next()
return 1
