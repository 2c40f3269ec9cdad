"""Takes and releases a redis-py lock on rlockd (its Lua scripts run unmodified).

    pip install -r requirements.txt
    python example.py 6379
"""
import sys

import redis

port = int(sys.argv[1]) if len(sys.argv) > 1 else 6379
r = redis.Redis(host="127.0.0.1", port=port, decode_responses=True)

lock = r.lock("example:lock", timeout=10, blocking_timeout=1)
if not lock.acquire():
    sys.exit("lock not acquired")
try:
    lock.extend(5)  # a Lua script too
    r.set("example:python", "ok")
finally:
    lock.release()
if r.exists("example:lock"):
    sys.exit("lock still held after release")
print("python example: ok")
