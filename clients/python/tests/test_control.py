"""The test-control methods (clock, locks, events, checks, snapshots, faults) with redis-py."""

import json
import time

import pytest
import redis
from redis.exceptions import BusyLoadingError, LockNotOwnedError, ReadOnlyError

import rlockd
from rlockd import Holder, Lock, LocksUnsafe


def token(lock):
    return lock.local.token.decode()


def test_lease_expires_by_advancing_the_clock_while_the_holder_is_paused(rlockd_server):
    srv = rlockd_server
    srv.freeze_clock()
    holder = redis.Redis.from_url(srv.url).lock("orders", timeout=30)
    other = redis.Redis.from_url(srv.url).lock("orders", timeout=30)
    assert holder.acquire(blocking=False)
    paused = token(holder)
    assert srv.locks() == [Lock(key="orders", db=0, kind="token", mode=None, lease_ms=30_000,
                                value=None, waiters=(),
                                holders=(Holder(id=paused, count=1, lease_ms=30_000,
                                                score=None),))]
    assert not other.acquire(blocking=False)

    # The holder is "paused" (a GC pause, a stalled thread): it never renews. No sleeping.
    srv.advance_clock(29_999)
    assert [lock.lease_ms for lock in srv.locks()] == [1]
    assert not other.acquire(blocking=False)
    srv.advance_clock(1)
    assert srv.locks() == []
    assert other.acquire(blocking=False)
    winner = token(other)
    assert srv.locks("ord*")[0].holders[0].id == winner
    assert srv.locks("nothing*") == []
    with pytest.raises(LockNotOwnedError):
        holder.release()

    events = [(e.event, e.holder) for e in srv.lock_events("orders")]
    assert events == [("acquired", paused), ("expired", paused), ("acquired", winner)]
    expired = srv.lock_events("orders")[1]
    assert (expired.kind, expired.client, expired.command) == ("token", 0, "(expiry)")
    assert srv.lock_events("elsewhere") == []
    last = srv.lock_events()[-1].id
    assert srv.lock_events(since=last) == []

    # The server saw two holders of one lock: the paused one never knew it lost it.
    violations = srv.check_locks()
    assert len(violations) == 1, violations
    assert "orders: acquired by " + winner in violations[0]
    assert "after its lease expired while held by " + paused in violations[0]
    with pytest.raises(LocksUnsafe) as raised:
        srv.assert_locks_safe()
    assert isinstance(raised.value, AssertionError)
    assert raised.value.violations == violations
    assert violations[0] in str(raised.value)
    srv.reset_lock_checks()
    srv.assert_locks_safe()
    assert srv.lock_events() == []


def test_a_normal_run_is_safe_and_recorded(rlockd_server):
    srv = rlockd_server
    a = redis.Redis.from_url(srv.url).lock("job", timeout=10)
    b = redis.Redis.from_url(srv.url).lock("job", timeout=10)
    assert a.acquire(blocking=False)
    first = token(a)
    assert not b.acquire(blocking=False)
    assert a.extend(5)
    a.release()
    assert b.acquire(blocking=False)
    second = token(b)
    b.release()
    with redis.Redis.from_url(srv.url).lock("other", timeout=1):
        pass
    assert srv.check_locks() == []
    srv.assert_locks_safe()
    job = [(e.event, e.holder) for e in srv.lock_events("job")]
    assert job == [("acquired", first), ("renewed", first), ("released", first),
                   ("acquired", second), ("released", second)]
    ids = [e.id for e in srv.lock_events()]
    assert ids == sorted(ids) and len(ids) == 7
    assert [e.event for e in srv.lock_events(since=ids[4])] == ["acquired", "released"]


@pytest.mark.parametrize("message, error", [
    ("READONLY You can't write against a read only replica.", ReadOnlyError),
    ("LOADING Redis is loading the dataset in memory", BusyLoadingError),
])
def test_an_injected_error_reaches_redis_py_as_its_class(rlockd_server, message, error):
    srv = rlockd_server
    r = redis.Redis.from_url(srv.url)
    fid = srv.add_fault("error", message, command="set", key="orders", times=2)
    assert r.set("unrelated", 1)  # another key: not faulted
    lock = r.lock("orders", timeout=10)
    with pytest.raises(error) as raised:
        lock.acquire(blocking=False)
    assert str(raised.value) in message
    [f] = srv.faults()
    assert (f.id, f.kind, f.params, f.command, f.key, f.times_left, f.hits) == \
        (fid, "error", message, "set", "orders", 1, 1)
    assert f.client is None and f.client_id is None and f.channel is None
    assert srv.clear_faults(fid) == 1
    assert srv.faults() == []
    assert lock.acquire(blocking=False)
    lock.release()
    srv.assert_locks_safe()


def test_noscript_on_release_is_recovered_by_redis_py(rlockd_server):
    srv = rlockd_server
    r = redis.Redis.from_url(srv.url)
    lock = r.lock("orders", timeout=10)
    assert lock.acquire(blocking=False)
    srv.add_fault("error", "NOSCRIPT No matching script. Please use EVAL.", command="evalsha", times=1)
    lock.release()  # redis-py's Script loads the script again and retries
    assert r.exists("orders") == 0
    assert srv.faults() == []  # its one time was used
    assert [e.event for e in srv.lock_events("orders")] == ["acquired", "released"]


def test_latency_for_named_clients_only(rlockd_server):
    srv = rlockd_server
    fid = srv.add_fault("latency", 300, jitter=0, client="worker-*", command="get", times=1)
    worker = redis.Redis.from_url(srv.url, client_name="worker-1")
    plain = redis.Redis.from_url(srv.url)
    worker.ping()
    started = time.monotonic()
    assert plain.get("k") is None
    assert time.monotonic() - started < 0.25
    started = time.monotonic()
    assert worker.get("k") is None
    assert time.monotonic() - started >= 0.29
    assert srv.faults() == []
    started = time.monotonic()
    assert worker.get("k") is None
    assert time.monotonic() - started < 0.25
    assert srv.clear_faults(fid) == 0


def test_kill_clients_by_name_and_id(rlockd_server):
    srv = rlockd_server
    victim = redis.Redis.from_url(srv.url, client_name="victim")
    bystander = redis.Redis.from_url(srv.url, client_name="bystander")
    victim_id = victim.client_id()
    bystander.ping()
    assert srv.kill_clients(client="nobody") == 0
    assert srv.kill_clients(client="vic*") == 1

    def names():
        return sorted(c.get("name") for c in bystander.client_list())
    deadline = time.monotonic() + 5
    while "victim" in names() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert names() == ["bystander"]
    assert victim.client_id() != victim_id  # redis-py reconnected
    assert srv.kill_clients(id=bystander.client_id()) == 1


def test_clock_control(rlockd_server):
    srv = rlockd_server
    r = redis.Redis.from_url(srv.url)
    srv.freeze_clock()
    info = srv.clock_info()
    assert info.frozen
    now = srv.clock_ms()
    assert now == info.now_ms
    time.sleep(0.02)
    assert srv.clock_ms() == now
    assert srv.advance_clock(1500) == now + 1500
    assert srv.clock_ms() == now + 1500
    base = (now // 1000 - 3600) * 1000  # an hour back, on a whole second
    assert srv.set_clock(base) == base
    assert int(r.time()[0]) == base // 1000
    assert abs(srv.clock_info().offset_ms + 3_600_000) < 5000
    srv.resume_clock()
    assert not srv.clock_info().frozen
    time.sleep(0.02)
    assert srv.clock_ms() > base
    skewed = srv.skew_clock(-60_000)
    assert abs(srv.clock_info().offset_ms + 60_000) < 1000
    assert abs(skewed - (time.time() * 1000 - 60_000)) < 1000
    srv.skew_clock(0)
    assert abs(srv.clock_info().offset_ms) < 1000


def test_snapshot_and_restore_bring_a_released_lock_back(rlockd_server):
    srv = rlockd_server
    r = redis.Redis.from_url(srv.url)
    lock = r.lock("orders", timeout=30)
    assert lock.acquire(blocking=False)
    held = token(lock)
    srv.snapshot("before-failover")
    assert srv.snapshots() == ["before-failover"]
    lock.release()
    assert srv.locks() == []
    srv.restore("before-failover")  # the replica promoted had not seen the release
    assert [h.id for h in srv.locks()[0].holders] == [held]
    with pytest.raises(rlockd.ResponseError, match="no snapshot named 'missing'"):
        srv.restore("missing")


def test_fault_arguments_are_checked(rlockd_server):
    srv = rlockd_server
    with pytest.raises(ValueError, match="unknown fault kind"):
        srv.add_fault("explode")
    with pytest.raises(TypeError, match="takes 2 parameter"):
        srv.add_fault("slowwrite", 10)
    with pytest.raises(TypeError, match="jitter"):
        srv.add_fault("freeze", 10, jitter=5)
    with pytest.raises(TypeError, match=r"add_fault\(\): unknown option 'clinet'; accepted: kind, params, jitter, command"):
        srv.add_fault("latency", 10, clinet="worker-*")
    with pytest.raises(TypeError, match=r"kill_clients\(\): unknown option 'name'; accepted: client, id"):
        srv.kill_clients(name="worker-*")
    with pytest.raises(rlockd.ResponseError, match="CHANNEL goes with DROPMSG"):
        srv.add_fault("latency", 10, channel="x")
    first = srv.add_fault("dropmsg", channel="events:*")
    second = srv.add_fault("close", "after", command="eval", key="lock:*")
    third = srv.add_fault("delaymsg", 50, channel="other")
    assert [(f.id, f.kind, f.params) for f in srv.faults()] == \
        [(first, "dropmsg", ""), (second, "close", "after"), (third, "delaymsg", "50 ms")]
    assert srv.faults()[0].channel == "events:*"
    assert srv.clear_faults() == 3
    assert srv.faults() == []


def test_url_fixture_resets_test_control(rlockd_url, rlockd_session_server):
    srv = rlockd_session_server
    assert srv.faults() == [] and srv.check_locks() == [] and srv.lock_events() == []
    assert not srv.clock_info().frozen
    # left behind for the next test using rlockd_url, which finds it all reset
    srv.freeze_clock()
    srv.add_fault("latency", 1, command="nothing")
    redis.Redis.from_url(rlockd_url).set("lock", "x", px=10)
    srv.advance_clock(10)


def test_url_fixture_resets_test_control_again(rlockd_url, rlockd_session_server):
    test_url_fixture_resets_test_control(rlockd_url, rlockd_session_server)
    rlockd_session_server.skew_clock(0)
    rlockd_session_server.clear_faults()


def test_a_claim_past_the_lease_is_a_violation_and_the_timeline_shows_it(rlockd_server, tmp_path):
    srv = rlockd_server
    srv.freeze_clock()
    r = redis.Redis.from_url(srv.url, client_name="worker-a")
    lock = r.lock("orders", timeout=30)
    assert lock.acquire(blocking=False)
    with srv.claim(lock):                         # the critical section, as the test sees it
        srv.advance_clock(31_000)                 # ...paused past its lease
        other = redis.Redis.from_url(srv.url).lock("orders", timeout=30)
        assert other.acquire(blocking=False)
    violations = srv.check_locks()
    assert any("outlived its lease" in v for v in violations), violations
    assert any("overlaps a grant to " + token(other) in v for v in violations), violations
    doc = srv.timeline(tmp_path / "t.html")
    assert (tmp_path / "t.html").read_text() == doc
    assert 'class="lane" data-lock="orders"' in doc
    assert 'data-client-name="worker-a" data-end="expired"' in doc
    assert '<rect class="claim"' in doc
    assert '<g class="violation"' in doc
    data = json.loads(srv.timeline(format="json", key="ord*"))
    [lane] = data["lanes"]
    assert [h["end"] for h in lane["holds"]] == ["expired", "held"]
    assert lane["claims"][0]["holder"] == token(lock)
    with pytest.raises(rlockd.ResponseError):
        srv.claim_leave("orders", "nobody")
    srv.reset_lock_checks()
    assert srv.check_locks() == []


def test_the_history_is_jepsen_operations(rlockd_server, tmp_path):
    srv = rlockd_server
    srv.freeze_clock()
    a = redis.Redis.from_url(srv.url).lock("orders", timeout=30)
    assert a.acquire(blocking=False)
    b = redis.Redis.from_url(srv.url).lock("orders", timeout=30)
    assert not b.acquire(blocking=False)          # refused: a failed acquire
    srv.advance_clock(31_000)                     # a's lease ends: the nemesis's expire
    assert b.acquire(blocking=False)
    doc = srv.history(tmp_path / "h.json", key="ord*")
    assert (tmp_path / "h.json").read_text() == doc
    ops = json.loads(doc)
    assert [o["index"] for o in ops] == list(range(len(ops)))
    refused = ops[2]["value"]["holder"]           # redis-py draws a token per attempt
    assert refused not in (token(a), token(b))
    assert [(o["type"], o["process"], o["f"], o["value"]["holder"], o["time"] // 10**9) for o in ops] == [
        ("invoke", 0, "acquire", token(a), 0), ("ok", 0, "acquire", token(a), 0),
        ("invoke", 1, "acquire", refused, 0), ("fail", 1, "acquire", refused, 0),
        ("info", "nemesis", "expire", token(a), 31), ("info", "nemesis", "expire", token(a), 31),
        ("invoke", 2, "acquire", token(b), 31), ("ok", 2, "acquire", token(b), 31),
    ]
    assert {o["value"]["key"] for o in ops} == {"orders"}
    edn = srv.history(format="jepsen").splitlines()
    assert len(edn) == len(ops) and edn[0].startswith("{:index 0, :time 0, :type :invoke, :process 0, :f :acquire")


def test_a_claim_inside_the_lease_is_safe(rlockd_server):
    srv = rlockd_server
    lock = redis.Redis.from_url(srv.url).lock("job", timeout=30)
    with lock, srv.claim(lock):
        pass
    with lock, srv.claim("job", lock.local.token):
        pass
    srv.assert_locks_safe()
    assert json.loads(srv.timeline(format="json"))["violations"] == []
