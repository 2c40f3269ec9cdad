-- Fair lock: acquire or queue up (Redisson RFairLock protocol).
--
-- Waiters queue in a list; a sorted set remembers, per waiter, the time by
-- which it must have retried (score, unix ms). Waiters that did not come
-- back in time are evicted from the head of the queue.
--
-- KEYS[1]  lock name (hash "<uuid>:<threadId>" -> hold count)
-- KEYS[2]  queue "redisson_lock_queue:{<lock name>}"
-- KEYS[3]  timeouts "redisson_lock_timeout:{<lock name>}"
-- ARGV[1]  lease time in milliseconds
-- ARGV[2]  holder id "<uuid>:<threadId>"
-- ARGV[3]  how long a waiter may take to retry, in milliseconds
-- ARGV[4]  current time, unix milliseconds (client clock)
--
-- Returns nil when acquired, otherwise an estimate of the wait in ms.

local lock, queue, timeouts = KEYS[1], KEYS[2], KEYS[3]
local lease, holder = ARGV[1], ARGV[2]
local wait, now = tonumber(ARGV[3]), tonumber(ARGV[4])

-- Drop waiters at the head whose retry deadline has passed.
while true do
    local head = redis.call('lindex', queue, 0)
    if head == false then
        break
    end
    local deadline = tonumber(redis.call('zscore', timeouts, head))
    if deadline > now then
        break
    end
    redis.call('zrem', timeouts, head)
    redis.call('lpop', queue)
end

-- Free, and nobody ahead of us: take it.
if redis.call('exists', lock) == 0 then
    local head = redis.call('lindex', queue, 0)
    if head == false or head == holder then
        redis.call('lpop', queue)
        redis.call('zrem', timeouts, holder)
        -- Everyone still queued moved up one slot.
        local waiters = redis.call('zrange', timeouts, 0, -1)
        for i = 1, #waiters do
            redis.call('zincrby', timeouts, -wait, waiters[i])
        end
        redis.call('hset', lock, holder, 1)
        redis.call('pexpire', lock, lease)
        return nil
    end
end

-- Re-entry.
if redis.call('hexists', lock, holder) == 1 then
    redis.call('hincrby', lock, holder, 1)
    redis.call('pexpire', lock, lease)
    return nil
end

-- Already queued: report our expected wait.
local deadline = redis.call('zscore', timeouts, holder)
if deadline ~= false then
    return tonumber(deadline) - wait - now
end

-- Join the queue behind the last waiter (or behind the holder).
local last = redis.call('lindex', queue, -1)
local ttl
if last ~= false and last ~= holder then
    ttl = tonumber(redis.call('zscore', timeouts, last)) - now
else
    ttl = redis.call('pttl', lock)
end
if redis.call('zadd', timeouts, ttl + wait + now, holder) == 1 then
    redis.call('rpush', queue, holder)
end
return ttl
