#!/bin/bash
# Field-TTL commands on hashes that have one, two rlockd builds side by side:
# each round starts each build on a free port under --redis-version 8.2.3,
# HSETs 20,000 one-field hashes, then drives HPEXPIRE, HPTTL, HGET and HSET on
# them with redis-benchmark (-P 32 -c 16, 300,000 requests, random keys), and
# prints kilo-requests per second per command and build: min-max (median).
#
#   bash benches/field_ttl_speed.sh OLD_BIN NEW_BIN [ROUNDS]
set -euo pipefail
a=$1 b=$2 rounds=${3:-5}
out=$(mktemp)
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
for r in $(seq 1 "$rounds"); do
  for which in A B; do
    bin=$a; [ "$which" = B ] && bin=$b
    p=$(port)
    "$bin" --port "$p" --redis-version 8.2.3 --test-control no >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 1 50); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
    redis-benchmark -p "$p" -P 32 -c 16 -n 20000 -r 20000 -q HSET 'h:__rand_int__' f v >/dev/null
    for c in "HPEXPIRE h:__rand_int__ 100000 FIELDS 1 f" "HPTTL h:__rand_int__ FIELDS 1 f" "HGET h:__rand_int__ f" "HSET h:__rand_int__ f v"; do
      # shellcheck disable=SC2086
      v=$(redis-benchmark -p "$p" -P 32 -c 16 -n 300000 -r 20000 -q $c 2>/dev/null | grep -o '[0-9.]* requests per second' | awk '{print $1}')
      echo "$which ${c%% *} $v" >> "$out"
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
done
python3 - "$out" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for line in open(sys.argv[1]):
    w, c, v = line.split()
    d[(w, c)].append(float(v) / 1000)
for c in ["HPEXPIRE", "HPTTL", "HGET", "HSET"]:
    a, b = d[("A", c)], d[("B", c)]
    f = lambda x: f"{min(x):,.0f}-{max(x):,.0f} ({statistics.median(x):,.0f})"
    print(f"{c:9} {f(a):>22} {f(b):>22}  {statistics.median(b) / statistics.median(a):.2f}")
PY
rm -f "$out"
