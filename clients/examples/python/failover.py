"""The lock lost in a failover, with redis-py's Sentinel and Lock.

    python failover.py SENTINEL_PORT[,PORT...] lossy|replicated

Client A takes a lock through the Sentinels' primary. In `lossy` mode the
primary's replication is paused first (RLOCKD REPL PAUSE), so the write that
granted it never reaches the replica. SENTINEL FAILOVER promotes the replica;
client B, discovering the new primary through the Sentinels, asks for the
same lock. RLOCKD CHECK on the new primary says whether two clients held it.
"""

import sys

import redis
from redis.sentinel import Sentinel

ports = [int(p) for p in sys.argv[1].split(",")]
mode = sys.argv[2]
sentinel = Sentinel([("127.0.0.1", p) for p in ports], socket_timeout=5)

# Client A, through the Sentinels.
a = sentinel.master_for("mymaster", socket_timeout=5)
before = sentinel.discover_master("mymaster")
if mode == "lossy":
    a.execute_command("RLOCKD", "REPL", "PAUSE")
lock_a = a.lock("order:42", timeout=30)
assert lock_a.acquire(blocking=False), "A could not take the free lock"
# The write that granted it: acknowledged by replicas or not.
acked = a.execute_command("WAIT", 1, 100 if mode == "lossy" else 0)

redis.Redis(port=ports[0], socket_timeout=10).execute_command("SENTINEL", "FAILOVER", "mymaster")
after = sentinel.discover_master("mymaster")
assert after != before, f"the primary is still {before}"

# Client B, a new process would do the same.
b = sentinel.master_for("mymaster", socket_timeout=5)
lock_b = b.lock("order:42", timeout=30)
second = lock_b.acquire(blocking=False)
violations = b.execute_command("RLOCKD", "CHECK")
print(f"{mode}: WAIT={acked} second-holder={second} violations={len(violations)}")
for v in violations:
    print(v.decode())
