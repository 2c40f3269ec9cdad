# Sourced by the *_speed.sh scripts.
#
# make_fill: a temporary file of commands to load, written by the Python
# code on standard input with `cmd(*args)` (a command in RESP) and the
# open file `f`; prints the file's path. Arguments are passed on as sys.argv.
make_fill() {
  local file
  file=$(mktemp)
  python3 -c '
import sys
def cmd(*a):
    return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)
with open(sys.argv[1], "wb") as f:
    exec(sys.stdin.read())
' "$file" "$@"
  echo "$file"
}

# side_by_side: two rlockd builds side by side. For
# each of $rounds rounds and each build ($a and $b, first in turns), starts the build on a
# free port (with $server_args), loads the file $fill into it with
# `redis-cli --pipe` (if set), drives each command of the array `cmds` with
# redis-benchmark (-P 32 -c 16, 300,000 requests, random keys of 20,000),
# and finally prints per name of the array `names` the kilo-requests per
# second of each build, min-max (median), and the ratio of the medians.
side_by_side() {
  local out p pid which bin i v
  out=$(mktemp)
  port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
  local r order
  for r in $(seq 1 "$rounds"); do
    # Which build goes first alternates: the second of a pair measured
    # faster than the first with the same binary on both sides.
    order="A B"; [ $((r % 2)) = 0 ] && order="B A"
    for which in $order; do
      bin=$a; [ "$which" = B ] && bin=$b
      p=$(port)
      # shellcheck disable=SC2086 # the arguments' words
      "$bin" --port "$p" ${server_args:-} >/dev/null 2>&1 &
      pid=$!
      for _ in $(seq 1 50); do redis-cli -p "$p" ping >/dev/null 2>&1 && break; sleep 0.1; done
      [ -n "${fill:-}" ] && redis-cli -p "$p" --pipe < "$fill" >/dev/null
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
  rm -f "$out"
}
