-- Read-write lock: release one write hold (RReadWriteLock).
--
-- KEYS[1]  lock name
-- KEYS[2]  channel "redisson_rwlock:{<lock name>}"
-- ARGV[1]  unlock message
-- ARGV[2]  lease time in milliseconds
-- ARGV[3]  write id "<uuid>:<threadId>:write"
--
-- Returns nil if the caller is not the writer, 0 if it still holds the
-- write lock, 1 when released (the lock turns into a read lock if the same
-- holder still has read holds).

local lock, channel = KEYS[1], KEYS[2]
local message, lease, writer = ARGV[1], ARGV[2], ARGV[3]

local mode = redis.call('hget', lock, 'mode')
if mode == false then
    redis.call('publish', channel, message)
    return 1
end
if mode ~= 'write' then
    return nil
end
if redis.call('hexists', lock, writer) == 0 then
    return nil
end
if redis.call('hincrby', lock, writer, -1) > 0 then
    redis.call('pexpire', lock, lease)
    return 0
end
redis.call('hdel', lock, writer)
if redis.call('hlen', lock) == 1 then
    redis.call('del', lock)
    redis.call('publish', channel, message)
else
    redis.call('hset', lock, 'mode', 'read')
end
return 1
