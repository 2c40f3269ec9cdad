"""The README's example, as it is printed there."""

# test_lock.py — run with .venv/bin/pytest test_lock.py
import redis


def test_lease_runs_out(rlockd_server):            # also: rlockd_url, rlockd_session_server
    r = redis.Redis.from_url(rlockd_server.url)
    lock = r.lock("orders", timeout=30)             # a 30 s lease that nobody renews
    assert lock.acquire(blocking=False)
    [held] = rlockd_server.locks()
    assert held.holders[0].id == lock.local.token.decode()
    rlockd_server.advance_clock(30_000)             # no sleeping: the lease is over now
    assert r.exists("orders") == 0
    assert [e.event for e in rlockd_server.lock_events("orders")] == ["acquired", "expired"]
    rlockd_server.assert_locks_safe()               # no two holders at once, no queue jumped
