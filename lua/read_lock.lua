-- Read-write lock: acquire a read hold (Redisson RReadWriteLock protocol).
--
-- The lock hash holds "mode" ("read" or "write") and one counter per holder.
-- Each read hold also gets its own key carrying that hold's lease, so the
-- lock can be kept alive as long as any hold is.
--
-- KEYS[1]  lock name
-- KEYS[2]  this holder's timeout prefix "{<lock name>}:<holder id>:rwlock_timeout"
-- ARGV[1]  lease time in milliseconds
-- ARGV[2]  holder id "<uuid>:<threadId>"
-- ARGV[3]  the same holder's write id "<uuid>:<threadId>:write"
--
-- Returns nil when the read hold was taken, else the lock's pttl.

local lock, prefix = KEYS[1], KEYS[2]
local lease, holder, writer = ARGV[1], ARGV[2], ARGV[3]

local mode = redis.call('hget', lock, 'mode')
if mode == false then
    redis.call('hset', lock, 'mode', 'read')
    redis.call('hset', lock, holder, 1)
    redis.call('set', prefix .. ':1', 1, 'px', lease)
    redis.call('pexpire', lock, lease)
    return nil
end
-- Readers share; a writer may also take read holds on its own lock.
if mode == 'read' or (mode == 'write' and redis.call('hexists', lock, writer) == 1) then
    local n = redis.call('hincrby', lock, holder, 1)
    redis.call('set', prefix .. ':' .. n, 1, 'px', lease)
    local remaining = redis.call('pttl', lock)
    redis.call('pexpire', lock, math.max(remaining, tonumber(lease)))
    return nil
end
return redis.call('pttl', lock)
