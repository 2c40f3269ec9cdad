-- Read-write lock: release one read hold (RReadWriteLock).
--
-- KEYS[1]  lock name
-- KEYS[2]  channel "redisson_rwlock:{<lock name>}"
-- KEYS[3]  this holder's timeout prefix "{<lock name>}:<holder id>:rwlock_timeout"
-- KEYS[4]  key prefix "{<lock name>}" (to find every holder's timeouts)
-- ARGV[1]  unlock message
-- ARGV[2]  holder id "<uuid>:<threadId>"
--
-- Returns nil if the caller holds no read hold, 0 if the lock stays held
-- (by others, or by a writer), 1 when the lock was released.

local lock, channel, prefix, keyprefix = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local message, holder = ARGV[1], ARGV[2]

local mode = redis.call('hget', lock, 'mode')
if mode == false then
    redis.call('publish', channel, message)
    return 1
end
if redis.call('hexists', lock, holder) == 0 then
    return nil
end
local n = redis.call('hincrby', lock, holder, -1)
if n == 0 then
    redis.call('hdel', lock, holder)
end
redis.call('del', prefix .. ':' .. (n + 1))

if redis.call('hlen', lock) > 1 then
    -- Other holds remain: keep the lock alive as long as the longest one.
    local longest = -3
    for _, field in ipairs(redis.call('hkeys', lock)) do
        local count = tonumber(redis.call('hget', lock, field))
        if type(count) == 'number' then
            for i = count, 1, -1 do
                local left = redis.call('pttl', keyprefix .. ':' .. field .. ':rwlock_timeout:' .. i)
                longest = math.max(left, longest)
            end
        end
    end
    if longest > 0 then
        redis.call('pexpire', lock, longest)
        return 0
    end
    if mode == 'write' then
        return 0
    end
end
redis.call('del', lock)
redis.call('publish', channel, message)
return 1
