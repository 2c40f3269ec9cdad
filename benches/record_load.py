# The cost of recording (RLOCKD RECORD, BENCHMARKS.md "Recording"): Redisson's reentrant lock
# then unlock (EVALSHA), N pairs pipelined 100 at a time, against the server on PORT; with MODE
# "record", RLOCKD RECORD START first ("off": not). Ends the server with SHUTDOWN NOSAVE, so a
# server run under callgrind writes its counts.
#   python3 benches/record_load.py PORT N MODE REPO_ROOT      (redis-py installed)
import sys, redis
port, n, mode = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
root = sys.argv[4]
r = redis.Redis(port=port)
lock = r.script_load(open(root + "/lua/reentrant_lock.lua").read())
unlock = r.script_load(open(root + "/lua/reentrant_unlock.lua").read())
if mode == "record":
    r.execute_command("RLOCKD", "RECORD", "START", "MAXBYTES", str(1 << 30))
holder = "3a8a7f4c-0b8e-4a5e-9d0c-6f1f0c9a2b11:57"
i = 0
while i < n:
    p = r.pipeline(transaction=False)
    for j in range(i, min(n, i + 100)):
        name = f"lock:{j}"
        p.evalsha(lock, 1, name, 30000, holder)
        p.evalsha(unlock, 2, name, "redisson_lock__channel:{" + name + "}", 0, 30000, holder)
    p.execute()
    i += 100
try:
    r.execute_command("SHUTDOWN", "NOSAVE")
except redis.ConnectionError:
    pass
