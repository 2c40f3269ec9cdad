"""redis-py's RedisCluster and its Lock through failovers on
`rlockd --cluster 3 --cluster-replicas 1`: a lock held while its primary
fails over to a replica that has everything (the lock survives), then a
failover with the replication stream paused (the promoted replica never got
the lock: a second client acquires it and RLOCKD CHECK reports two holders).

    pip install -r requirements.txt
    rlockd --cluster 3 --cluster-replicas 1 --port 7000 &
    python cluster_failover.py 7000
"""
import sys
import time

from redis.cluster import RedisCluster
from redis.exceptions import LockNotOwnedError

port = int(sys.argv[1]) if len(sys.argv) > 1 else 7000
rc = RedisCluster(host="127.0.0.1", port=port, decode_responses=True)


def check(cond, what):
    if not cond:
        sys.exit(f"python cluster failover: {what}")


def wait_for(what, cond, limit=30.0):
    """Waits for a state of the cluster (bounded: a hang guard)."""
    deadline = time.monotonic() + limit
    while not cond():
        check(time.monotonic() < deadline, f"timed out waiting for {what}")
        time.sleep(0.01)


def primary_of_slot(slot):
    """The address serving `slot`, as the cluster says now."""
    for start, end, primary, *_ in rc.execute_command("CLUSTER", "SLOTS", target_nodes=rc.get_random_node()):
        if start <= slot <= end:
            return f"{primary[0]}:{primary[1]}"
    return None


# A replica is listed in CLUSTER SLOTS once it has received something (as
# on Redis): one write per primary, then a client that sees them all.
for tag in ("a", "b", "c"):
    rc.set(f"{{{tag}}}:hello", "world")
wait_for(
    "every replica in CLUSTER SLOTS",
    lambda: all(len(r) == 4 for r in rc.execute_command("CLUSTER", "SLOTS", target_nodes=rc.get_random_node())),
)
rc = RedisCluster(host="127.0.0.1", port=port, decode_responses=True)
check(len(rc.get_primaries()) == 3 and len(rc.get_replicas()) == 3, "3 primaries and 3 replicas expected")

# 1. A failover the replica is ready for (CLUSTER FAILOVER sent to it
#    waits until it has all its primary wrote): the lock survives.
name = "example:failover-lock"
slot = rc.keyslot(name)
lock = rc.lock(name, timeout=30, blocking_timeout=1)
check(lock.acquire(), "lock not acquired")
owner = rc.get_node_from_key(name)
replica = next(
    n for n in rc.get_replicas() if rc.execute_command("ROLE", target_nodes=n)[2] == owner.port
)
check(rc.execute_command("CLUSTER", "FAILOVER", target_nodes=replica) == "OK", "CLUSTER FAILOVER")
wait_for("the replica to take the slot", lambda: primary_of_slot(slot) == replica.name)
check(lock.owned(), "the lock was lost in a failover without loss")
check(lock.extend(10), "extend after the failover")
lock.release()
check(not rc.exists(name), "released after the failover")

# 2. The stream from the new primary to its replica (the old primary)
#    paused, a second lock taken, and a failover right away: the promoted
#    node never got that lock.
new_owner = rc.get_node_from_key(name)
check(new_owner.name == replica.name, "the client follows the new primary")
check(rc.execute_command("RLOCKD", "REPL", "PAUSE", target_nodes=new_owner) == 1, "pause the stream")
first = rc.lock(name, timeout=30, blocking_timeout=1)
check(first.acquire(), "first holder")
other = next(n for n in rc.get_primaries() if n.name != new_owner.name)
check(rc.execute_command("RLOCKD", "CHECK", target_nodes=other) == [], "no violation yet")
new_owner_id = rc.execute_command("CLUSTER", "MYID", target_nodes=new_owner)
# Test control promotes at once, with what the replica has, and answers
# once it is done.
check(rc.execute_command("RLOCKD", "CLUSTER", "FAILOVER", new_owner_id, target_nodes=other) == "OK", "failover")
wait_for("the old primary to take the slot back", lambda: primary_of_slot(slot) == owner.name)
second = RedisCluster(host="127.0.0.1", port=port, decode_responses=True).lock(name, timeout=30)
check(second.acquire(blocking=False), "the second client gets the lock the failover lost")
violations = rc.execute_command("RLOCKD", "CHECK", target_nodes=rc.get_random_node())
check(len(violations) == 1 and name in violations[0], f"RLOCKD CHECK reports the two holders: {violations}")
check(not first.owned(), "the first holder's lock is gone")
try:
    first.release()
    sys.exit("python cluster failover: the lost lock was released")
except LockNotOwnedError:
    pass
second.release()
print("python cluster failover: ok")
