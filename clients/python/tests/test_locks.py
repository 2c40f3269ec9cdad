"""redis-py's Lock (its Lua scripts run unmodified) against the bundled server."""

import asyncio
import time

import redis
import redis.asyncio
from redis.exceptions import LockNotOwnedError


def test_lock_take_and_release(rlockd_server):
    r = redis.Redis.from_url(rlockd_server.url)
    lock = r.lock("orders", timeout=10, blocking_timeout=1)
    assert lock.acquire()
    assert r.exists("orders") == 1
    assert lock.owned()
    assert 0 < r.pttl("orders") <= 10_000
    assert lock.extend(5)  # LUA_EXTEND_SCRIPT
    assert 10_000 < r.pttl("orders") <= 15_000
    assert lock.reacquire()
    assert 0 < r.pttl("orders") <= 10_000
    lock.release()  # LUA_RELEASE_SCRIPT
    assert r.exists("orders") == 0


def test_contention_between_two_clients(rlockd_server):
    a = redis.Redis.from_url(rlockd_server.url).lock("job", timeout=10)
    b = redis.Redis.from_url(rlockd_server.url).lock("job", timeout=10)
    assert a.acquire(blocking=False)
    assert not b.acquire(blocking=False)
    assert not b.acquire(blocking=True, blocking_timeout=0.2)
    a.release()
    assert b.acquire(blocking=False)
    assert b.owned() and not a.owned()
    # a's old token no longer releases the lock (LUA_RELEASE_SCRIPT compares tokens)
    a.local.token = b"stale-token"
    try:
        a.release()
        raise AssertionError("released a lock it does not own")
    except LockNotOwnedError:
        pass
    assert b.owned()
    b.release()


def test_lease_expiry_frees_the_lock(rlockd_server):
    r = redis.Redis.from_url(rlockd_server.url)
    held = r.lock("lease", timeout=0.3)
    assert held.acquire(blocking=False)
    other = r.lock("lease", timeout=10)
    assert not other.acquire(blocking=False)
    # the waiter gets it once the 300 ms lease runs out (bounded wait, no release)
    assert other.acquire(blocking=True, blocking_timeout=5)
    try:
        held.release()
        raise AssertionError("an expired lease was released")
    except LockNotOwnedError:
        pass
    other.release()


def test_asyncio_lock(rlockd_server):
    async def scenario():
        r = redis.asyncio.Redis.from_url(rlockd_server.url)
        try:
            first = r.lock("async-job", timeout=10)
            second = r.lock("async-job", timeout=10, blocking_timeout=3)
            assert await first.acquire()
            waiter = asyncio.ensure_future(second.acquire())
            await asyncio.sleep(0.1)
            assert not waiter.done()
            started = time.monotonic()
            await first.release()
            assert await asyncio.wait_for(waiter, 5)
            assert time.monotonic() - started < 5
            assert await second.owned()
            await second.release()
            assert await r.exists("async-job") == 0
        finally:
            await r.aclose()

    asyncio.run(scenario())


def test_two_servers_in_one_test(rlockd_server, rlockd_server_factory):
    other = rlockd_server_factory()
    assert other.port != rlockd_server.port
    la = redis.Redis.from_url(rlockd_server.url).lock("same", timeout=10)
    lb = redis.Redis.from_url(other.url).lock("same", timeout=10)
    assert la.acquire(blocking=False)
    assert lb.acquire(blocking=False)  # separate keyspaces
    la.release()
    lb.release()
