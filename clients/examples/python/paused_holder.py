"""The paused holder, with redis-py's Lock: the application believes it is inside its critical
section (RLOCKD CLAIM) while its lease runs out and a second client takes the lock. RLOCKD CHECK
says so, and the timeline (written to TIMELINE_FILE) shows why.

    pip install -r requirements.txt
    python paused_holder.py 6379 timeline.html
"""
import sys

import redis

port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
out = sys.argv[2] if len(sys.argv) > 2 else "timeline.html"
admin = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)
a = redis.Redis(host="127.0.0.1", port=port, client_name="worker-a")
b = redis.Redis(host="127.0.0.1", port=port, client_name="worker-b")

admin.execute_command("RLOCKD", "CLOCK", "FREEZE")  # the test drives time
lock_a = a.lock("orders", timeout=30)
assert lock_a.acquire(blocking=False), "A could not take the free lock"
a.execute_command("RLOCKD", "CLAIM", "ENTER", "orders", lock_a.local.token)
# A pauses (a GC pause, a stalled thread) for longer than its lease: no renewal.
admin.execute_command("RLOCKD", "CLOCK", "ADVANCE", 31_000)
lock_b = b.lock("orders", timeout=30)
second = lock_b.acquire(blocking=False)  # B takes the lock while A still works
a.execute_command("RLOCKD", "CLAIM", "LEAVE", "orders", lock_a.local.token)
violations = admin.execute_command("RLOCKD", "CHECK")
with open(out, "w", encoding="utf-8") as f:
    f.write(admin.execute_command("RLOCKD", "TIMELINE"))
print(f"paused holder: second-holder={second} violations={len(violations)}")
for v in violations:
    print(v)
