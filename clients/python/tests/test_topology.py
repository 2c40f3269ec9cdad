"""Cluster and Sentinel topologies, through redis-py's RedisCluster and Sentinel."""

import json
import time

import pytest
import redis
from redis.cluster import RedisCluster
from redis.sentinel import Sentinel

import rlockd


def test_cluster_with_redis_py_follows_a_moved_slot(rlockd_cluster):
    c = rlockd_cluster
    assert len(c.nodes) == 3 and len(set(c.urls)) == 3
    rc = RedisCluster(startup_nodes=c.startup_nodes)
    try:
        lock = rc.lock("orders", timeout=30)
        assert lock.acquire(blocking=False)
        slot = c.key_slot("orders")
        owner = c.slot_owner(slot)
        assert c.nodes[owner].execute_command("EXISTS", "orders") == 1
        to = (owner + 1) % 3
        assert c.move_slot(slot, to) == 1                # the key went with its slot
        assert c.slot_owner(slot) == to
        assert rc.get("orders") == lock.local.token      # redis-py followed MOVED
        [held] = c.locks()
        assert held.key == "orders" and held.holders[0].id == lock.local.token.decode()
        c.advance_clock(30_000)                          # every node's clock
        assert rc.exists("orders") == 0
        # the move released it on one node and took it on the other; the lease ran out there
        # (any node answers for the whole cluster; the move's two events share a millisecond)
        events = [e.event for e in c.nodes[to].lock_events("orders")]
        assert events[0] == "acquired" and events[-1] == "expired"
        assert sorted(events) == ["acquired", "acquired", "expired", "released"]
        assert [e.event for e in c.lock_events("orders")] == events
        c.assert_locks_safe()
    finally:
        rc.close()


def test_cluster_node_down_and_up(rlockd_cluster):
    c = rlockd_cluster
    slot = c.key_slot("k")
    owner = c.slot_owner(slot)
    other = c.nodes[(owner + 1) % 3]
    c.nodes[owner].execute_command("SET", "k", "v")
    c.take_down(owner)
    with pytest.raises(ConnectionRefusedError):
        c.nodes[owner].ping()
    with pytest.raises(rlockd.ResponseError, match="^CLUSTERDOWN"):
        other.execute_command("GET", "k")
    c.advance_clock(1000)                                # the nodes that are up
    c.bring_up(owner)
    assert c.nodes[owner].execute_command("GET", "k") == b"v"


def test_cluster_replicas_are_passed_to_the_binary(rlockd_server_factory):
    try:
        c = rlockd_server_factory(rlockd.Cluster, 2, replicas=1)
    except rlockd.RlockdError as e:                      # a binary without cluster replicas
        assert "cluster-replicas" in str(e).split("--- rlockd log ---")[1]  # says so in its log
    else:
        assert len(c.nodes) == 4
        roles = sorted(rlockd.Node(c.host, p).execute_command("ROLE")[0] for p in c._ports)
        assert roles == [b"master", b"master", b"slave", b"slave"]


def test_sentinel_failover_with_redis_py_loses_the_lock(rlockd_sentinel):
    r = rlockd_sentinel
    assert r.master_name == "mymaster" and len(r.sentinels) == 3 and len(r.replicas) == 1
    s = Sentinel(r.sentinels)
    assert s.discover_master(r.master_name) == (r.primary.host, r.primary.port)
    assert s.discover_slaves(r.master_name) == [(n.host, n.port) for n in r.replicas]
    a = s.master_for(r.master_name)
    assert r.pause_replication() == 1                    # the lock will not reach the replica
    assert a.lock("order:42", timeout=30).acquire(blocking=False)
    [link] = r.replication_status()
    assert link.paused and link.pending_writes >= 1
    new = r.failover()
    assert (new.host, new.port) == (r.replicas[0].host, r.replicas[0].port)
    assert s.discover_master(r.master_name) == (new.host, new.port)
    b = s.master_for(r.master_name)
    lock_b = b.lock("order:42", timeout=30)
    assert lock_b.acquire(blocking=False)  # a second holder
    with pytest.raises(rlockd.LocksUnsafe, match="order:42"):
        r.assert_locks_safe()
    # The timeline shows both holders (A's as the grant the failover lost) and the failover.
    data = json.loads(r.timeline(format="json"))
    [lane] = data["lanes"]
    assert [h["end"] for h in lane["holds"]] == ["lost", "held"]
    assert lane["holds"][1]["holder"] == lock_b.local.token.decode()
    assert [m["kind"] for m in data["marks"]].count("failover") == 1
    assert len(lane["violations"]) == 1


def test_replication_lag_break_restore_drop(rlockd_sentinel):
    r = rlockd_sentinel
    primary = redis.Redis.from_url(r.primary.url)
    replica = redis.Redis.from_url(r.replica_urls[0])
    assert r.set_replication_lag(50) == 1
    assert r.replication_status()[0].lag_ms == 50
    assert r.set_replication_lag(0) == 1
    assert r.break_replication() == 1
    assert replica.info("replication")["master_link_status"] == "down"
    primary.set("k", "1")
    assert r.restore_replication() == 1
    assert wait_until(lambda: replica.get("k") == b"1")   # it caught up
    assert r.pause_replication() == 1
    primary.set("k", "2")
    assert r.drop_replication() == 1                     # one write lost, as in a crash
    new = r.failover()                                   # the replica, promoted with k = 1
    assert new.port == r.replicas[0].port and r.sentinel_primary() == (new.host, new.port)
    assert replica.get("k") == b"1"
    assert wait_until(lambda: primary.get("k") == b"1")  # the old primary follows it
    primary.close()
    replica.close()


def wait_until(pred, secs=10.0):
    deadline = time.monotonic() + secs  # hang guard only
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return False


def test_cluster_failover_loses_an_unreplicated_lock(rlockd_server_factory):
    # The cluster has the replicated set's controls: pause the stream, fail over, see the loss.
    c = rlockd_server_factory(rlockd.Cluster, 3, replicas=1)
    rc = RedisCluster(startup_nodes=c.startup_nodes)
    try:
        slot = c.key_slot("orders")
        owner = c.slot_owner(slot)
        assert c.pause_replication(primary=owner) == 1
        assert rc.set("orders", "client-1", nx=True, px=30_000)
        assert [link.paused for link in c.replication_status()].count(True) == 1
        new = c.failover(owner)                          # its replica takes the slots without it
        assert new.port != c.nodes[owner].port
        assert c.slot_owner(slot) == [n.port for n in c.nodes].index(new.port)
        assert new.execute_command("SET", "orders", "client-2", "NX", "PX", 30_000) == "OK"
        assert c.check_locks()                           # two holders, seen from any node
        assert c.set_replication_lag(0) == 3 and c.resume_replication() == 3
        assert c.break_replication() == 3 and c.restore_replication() == 3
        assert c.drop_replication() == 0
    finally:
        rc.close()


@pytest.mark.parametrize("cls, kwargs, text", [
    (rlockd.Server, {"prot": 6379}, "unknown option 'prot'; accepted: port, host, password, args, binary, startup_timeout"),
    (rlockd.Cluster, {"clusterReplicas": 1}, "unknown option 'clusterReplicas'; accepted: nodes, replicas, args,"),
    (rlockd.Replicated, {"sentinel": 3}, "unknown option 'sentinel'; accepted: replicas, sentinels,"),
    (rlockd.Cluster, {"replicas": "1"}, "option 'replicas' takes an int, not '1'"),
    (rlockd.Server, {"args": "--port 1"}, "option 'args' takes a list of command-line arguments"),
    (rlockd.Server, {"port": True}, "option 'port' takes an int, not True"),
])
def test_unknown_options_and_wrong_types_are_refused(cls, kwargs, text):
    with pytest.raises(TypeError) as e:
        cls(**kwargs)
    assert text in str(e.value) and "\n" not in str(e.value)


def test_a_replicated_node_taken_down_and_brought_up(rlockd_server_factory):
    r = rlockd_server_factory(rlockd.Replicated, 1, sentinels=1)
    r.take_down(1)                                   # the replica crashes: its port closes
    with pytest.raises(OSError):
        r.replicas[0].ping()
    r.bring_up(1)
    assert r.replicas[0].execute_command("PING") == "PONG"
