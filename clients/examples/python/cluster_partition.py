"""redis-py's RedisCluster and its Lock through a partition of the cluster
bus on `rlockd --cluster 3 --cluster-replicas 1`: the lock's primary cut off
from the majority (RLOCKD CLUSTER PARTITION), cluster-node-timeout passed on
every node's clock (RLOCKD CLOCK ADVANCE), the majority promotes the
primary's replica and a second client asks for the same lock there.

    lossy:  client A takes the lock on the cut-off primary (WAIT finds no
            replica) and trusts it; client B gets it too, RLOCKD CHECK
            names the two holders and the partition; after HEAL the old
            primary follows the new one and A's lock is gone.
    waited: A takes the lock before the cut and trusts it only once WAIT
            says a replica has it; B does not get it; A still holds it
            after HEAL.

    pip install -r requirements.txt
    rlockd --cluster 3 --cluster-replicas 1 --port 7000 &
    python cluster_partition.py 7000 lossy
"""
import sys
import time

from redis.cluster import RedisCluster

port = int(sys.argv[1]) if len(sys.argv) > 1 else 7000
mode = sys.argv[2] if len(sys.argv) > 2 else "lossy"
rc = RedisCluster(host="127.0.0.1", port=port, decode_responses=True)


def check(cond, what):
    if not cond:
        sys.exit(f"python cluster partition: {what}")


def wait_for(what, cond, limit=30.0):
    """Waits for a state of the cluster (bounded: a hang guard)."""
    deadline = time.monotonic() + limit
    while not cond():
        check(time.monotonic() < deadline, f"timed out waiting for {what}")
        time.sleep(0.01)


def on(node, *args):
    return rc.execute_command(*args, target_nodes=node)


def field(node, section, name):
    """One field of CLUSTER INFO or INFO (redis-py parses either into a dict
    or leaves the text)."""
    reply = on(node, *section)
    if isinstance(reply, dict):
        return str(reply.get(name))
    for line in reply.splitlines():
        if line.startswith(name + ":"):
            return line.split(":", 1)[1]
    return None


# Every replica in CLUSTER SLOTS (once it has received something), then a
# client that sees them all.
for tag in ("a", "b", "c"):
    rc.set(f"{{{tag}}}:hello", "world")
wait_for("every replica in CLUSTER SLOTS", lambda: all(len(r) == 4 for r in on(rc.get_random_node(), "CLUSTER", "SLOTS")))
rc = RedisCluster(host="127.0.0.1", port=port, decode_responses=True)
nodes = rc.get_nodes()
check(len(nodes) == 6, "6 nodes expected")

name = "order:42"
slot = rc.keyslot(name)
owner = rc.get_node_from_key(name)
other = next(n for n in rc.get_primaries() if n.name != owner.name)


def slot_primary(seen_from):
    for start, end, primary, *_ in on(seen_from, "CLUSTER", "SLOTS"):
        if start <= slot <= end:
            return f"{primary[0]}:{primary[1]}"
    return None


a = rc.lock(name, timeout=120, blocking_timeout=1)
waited = None
if mode == "waited":
    check(a.acquire(), "A's lock before the cut")
    waited = on(owner, "WAIT", 1, 5000)
    check(waited == 1, f"the replica acknowledged the lock: {waited}")

cut = on(other, "RLOCKD", "CLUSTER", "PARTITION", str(owner.port))
check(cut.startswith(owner.name + " | "), f"the partition: {cut}")

if mode == "lossy":
    # The cut-off primary still grants; nothing reaches its replica.
    check(a.acquire(), "A's lock on the cut-off primary")
    waited = on(owner, "WAIT", 1, 100)

for n in nodes:
    on(n, "RLOCKD", "CLOCK", "ADVANCE", 15001)
wait_for("the majority to promote the replica", lambda: slot_primary(other) not in (None, owner.name))
wait_for(
    "the cut-off primary to refuse",
    lambda: field(owner, ("CLUSTER", "INFO"), "cluster_state") == "fail",
)

# Client B starts from the majority side.
b_client = RedisCluster(host=other.host, port=other.port, decode_responses=True)
b = b_client.lock(name, timeout=120)
second = b.acquire(blocking=False)
violations = on(other, "RLOCKD", "CHECK")
check(all("partition" in v and name in v for v in violations), f"CHECK names the partition: {violations}")

healed = on(other, "RLOCKD", "CLUSTER", "PARTITION", "HEAL")
check(healed == owner.name, f"the old primary rejoins: {healed}")
wait_for(
    "the old primary to resynchronise",
    lambda: field(owner, ("INFO", "replication"), "master_link_status") == "up",
)
after = RedisCluster(host=other.host, port=other.port, decode_responses=True)
holder = after.get(name)
a_holds = holder == a.local.token.decode() if isinstance(a.local.token, bytes) else holder == a.local.token
print(f"{mode}: WAIT={waited} second-holder={second} violations={len(violations)} a-holds-after-heal={a_holds}")
for v in violations:
    print(v)
