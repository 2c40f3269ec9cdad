#!/bin/bash
# Commands on small lists, two rlockd builds side by side: each round starts
# each build on a free port, fills 20,000 lists of LEN elements (default 8;
# q:N of 10-byte items, f:N of 40-byte fair-lock waiter ids), then drives the commands below
# with redis-benchmark (-P 32 -c 16, 300,000 requests, random keys; the
# scripts, rotating with LMOVE or pushing then popping, and LSET keep
# every list at LEN; redis-benchmark draws each __rand_int__ apart, so a
# rotation is a script of one key), and prints kilo-requests per
# second per command and build: min-max (median), and the ratio of medians.
#
#   [LEN=8] bash benches/list_small_speed.sh OLD_BIN NEW_BIN [ROUNDS]
set -euo pipefail
a=$1 b=$2 rounds=${3:-5} len=${LEN:-8}
out=$(mktemp) fill=$(mktemp)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
python3 - "$fill" "$len" <<'PY'
import sys
def cmd(*a):
    return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)
with open(sys.argv[1], "wb") as f:
    for i in range(20000):
        f.write(cmd(b"RPUSH", b"q:%012d" % i, *(b"item:%05d" % j for j in range(int(sys.argv[2])))))
        f.write(cmd(b"RPUSH", b"f:%012d" % i, *(b"8f2b6c1e-4a7d-4e21-9c3b-5d6e7f809a1b:%03d" % j for j in range(int(sys.argv[2])))))
PY
cmds=(
  "LRANGE q:__rand_int__ 0 -1"
  "LRANGE f:__rand_int__ 0 -1"
  "LINDEX q:__rand_int__ $((len * 5 / 8))"
  "LPOS f:__rand_int__ 8f2b6c1e-4a7d-4e21-9c3b-5d6e7f809a1b:$(printf %03d $((len - 2)))"
  "LSET q:__rand_int__ $((len / 2)) item:00003"
  "EVAL \"return redis.call('lmove',KEYS[1],KEYS[1],'RIGHT','LEFT')\" 1 q:__rand_int__"
  "EVAL \"redis.call('rpush',KEYS[1],'item:00009') return redis.call('lpop',KEYS[1])\" 1 q:__rand_int__"
)
names=(LRANGE LRANGE40 LINDEX LPOS40 LSET LMOVE-script RPUSH+LPOP)
for r in $(seq 1 "$rounds"); do
  for which in A B; do
    bin=$a; [ "$which" = B ] && bin=$b
    p=$(port)
    "$bin" --port "$p" --test-control no >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 50); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-cli -p "$p" --pipe < "$fill" >/dev/null
    for i in "${!cmds[@]}"; do
      v=$(eval redis-benchmark -p "$p" -P 32 -c 16 -n 300000 -r 20000 -q "${cmds[$i]}" 2>/dev/null \
        | grep -o '[0-9.]* requests per second' | awk '{print $1}')
      echo "$which ${names[$i]} $v" >> "$out"
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
done
python3 - "$out" "${names[@]}" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    w, c, v = line.split()
    d[(w, c)].append(float(v) / 1000)
for c in sys.argv[2:]:
    a, b = d[("A", c)], d[("B", c)]
    f = lambda x: f"{min(x):,.0f}-{max(x):,.0f} ({statistics.median(x):,.0f})"
    print(f"{c:11} {f(a):>22} {f(b):>22}  {statistics.median(b) / statistics.median(a):.2f}")
PY
rm -f "$out" "$fill"
