-- Read-write lock: acquire the write hold (RReadWriteLock).
--
-- KEYS[1]  lock name
-- ARGV[1]  lease time in milliseconds
-- ARGV[2]  write id "<uuid>:<threadId>:write"
--
-- Returns nil when acquired (or re-entered), else the lock's pttl.

local lock, lease, writer = KEYS[1], ARGV[1], ARGV[2]

local mode = redis.call('hget', lock, 'mode')
if mode == false then
    redis.call('hset', lock, 'mode', 'write')
    redis.call('hset', lock, writer, 1)
    redis.call('pexpire', lock, lease)
    return nil
end
if mode == 'write' and redis.call('hexists', lock, writer) == 1 then
    redis.call('hincrby', lock, writer, 1)
    local remaining = redis.call('pttl', lock)
    redis.call('pexpire', lock, remaining + tonumber(lease))
    return nil
end
return redis.call('pttl', lock)
