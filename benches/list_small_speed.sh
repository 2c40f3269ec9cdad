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
# shellcheck source=common/side_by_side.sh
. "$(dirname "$0")/common/side_by_side.sh"
fill=$(make_fill "$len" <<'PY'
n = int(sys.argv[2])
for i in range(20000):
    f.write(cmd(b"RPUSH", b"q:%012d" % i, *(b"item:%05d" % j for j in range(n))))
    f.write(cmd(b"RPUSH", b"f:%012d" % i, *(b"8f2b6c1e-4a7d-4e21-9c3b-5d6e7f809a1b:%03d" % j for j in range(n))))
PY
)
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
server_args="--test-control no"
side_by_side
rm -f "$fill"
