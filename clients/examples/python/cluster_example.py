"""redis-py's RedisCluster and its Lock on `rlockd --cluster 3`: keys spread
over the nodes, a lock held while its slot moves to another node (ASK, then
MOVED), and a script over keys of two slots refused with CROSSSLOT.

    pip install -r requirements.txt
    rlockd --cluster 3 --port 7000 &
    python cluster_example.py 7000
"""
import sys

from redis.cluster import RedisCluster
from redis.exceptions import ResponseError

port = int(sys.argv[1]) if len(sys.argv) > 1 else 7000
rc = RedisCluster(host="127.0.0.1", port=port, decode_responses=True)


def check(cond, what):
    if not cond:
        sys.exit(f"python cluster example: {what}")


check(len(rc.get_primaries()) == 3, "3 primaries expected")
for i in range(100):
    rc.set(f"key:{i}", i)
check(all(int(rc.get(f"key:{i}")) == i for i in range(100)), "values read back")
sizes = [rc.execute_command("DBSIZE", target_nodes=n) for n in rc.get_primaries()]
check(all(s > 0 for s in sizes), f"keys on every node: {sizes}")

name = "example:cluster-lock"
slot = rc.keyslot(name)
lock = rc.lock(name, timeout=30, blocking_timeout=1)
check(lock.acquire(), "lock not acquired")
check(not rc.lock(name, timeout=30).acquire(blocking=False), "a second holder got the lock")

# Move the lock's slot to another node while it is held: first open the
# move without moving a key, then move the lock key (the old node answers
# ASK), then finish (MOVED). The lock keeps working throughout.
owner = rc.get_node_from_key(name)
target = next(n for n in rc.get_primaries() if n.name != owner.name)
target_id = rc.execute_command("CLUSTER", "MYID", target_nodes=target)
moved = rc.execute_command("RLOCKD", "CLUSTER", "MOVESLOT", slot, target_id, "KEYS", "0", target_nodes=owner)
check(moved == 0, f"no key moved yet: {moved}")
check(lock.extend(10), "extend while the slot is migrating")
moved = rc.execute_command("RLOCKD", "CLUSTER", "MOVESLOT", slot, target_id, "KEYS", "1", target_nodes=owner)
check(moved == 1, f"the lock key moved: {moved}")
check(lock.owned(), "still owned after its key moved (ASK)")
rc.execute_command("RLOCKD", "CLUSTER", "MOVESLOT", slot, target_id, target_nodes=owner)
check(lock.owned(), "still owned after the slot moved (MOVED)")
lock.release()
check(not rc.exists(name), "lock still held after release")
check(rc.get_node_from_key(name).name == target.name, "the client learned the new owner")

# A script over two keys of different slots: CROSSSLOT, as on a real cluster.
try:
    rc.execute_command(
        "EVAL", "return redis.call('mget', KEYS[1], KEYS[2])", 2, "a", "b", target_nodes=rc.get_node_from_key("a")
    )
    sys.exit("python cluster example: a cross-slot script ran")
except ResponseError as e:
    check(str(e).startswith("Keys in request don't hash to the same slot"), f"CROSSSLOT expected: {e}")
# With a hash tag, the same script runs.
check(rc.eval("return redis.call('mget', KEYS[1], KEYS[2])", 2, "{u}a", "{u}b") == [None, None], "tagged script")
print("python cluster example: ok")
