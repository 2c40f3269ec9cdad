"""Start-to-first-PONG of the Python front end: rlockd.Server().start() until
redis-py's PING is answered, N times; prints median and p90 in ms.

    python start_to_pong.py [N]     # with the rlockd wheel and redis installed
"""
import statistics
import sys
import time

import redis

import rlockd

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20
times = []
for _ in range(n):
    t0 = time.perf_counter()
    srv = rlockd.Server().start()
    r = redis.Redis(port=srv.port)
    assert r.ping()
    times.append((time.perf_counter() - t0) * 1000)
    r.close()
    srv.stop()
times.sort()
print(f"python start-to-first-PONG over {n}: median {statistics.median(times):.1f} ms, "
      f"p90 {times[int(n * 0.9) - 1]:.1f} ms, min {times[0]:.1f} ms")
