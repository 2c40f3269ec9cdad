#!/bin/bash
# Commands on long string values, two rlockd builds side by side: each round
# starts each build on a free port, stores 20,000 values of 100 bytes (s:N)
# and 20,000 of 1,000 bytes (l:N), then drives reads, writes and edits of
# them with redis-benchmark (-P 32 -c 16, 300,000 requests, random keys),
# and prints kilo-requests per second per command and build: min-max
# (median), and the ratio of medians. APPEND grows its keys (a:N) by 100
# bytes a call, about 15 calls a key.
#
#   bash benches/long_string_speed.sh OLD_BIN NEW_BIN [ROUNDS]
set -euo pipefail
a=$1 b=$2 rounds=${3:-5}
# shellcheck source=common/side_by_side.sh
. "$(dirname "$0")/common/side_by_side.sh"
fill=$(make_fill <<'PY'
for i in range(20000):
    f.write(cmd(b"SET", b"s:%012d" % i, (b"%012d" % i) * 8 + b"x" * 4))
    f.write(cmd(b"SET", b"l:%012d" % i, (b"%012d" % i) * 83 + b"x" * 4))
PY
)
v100=$(printf 'v%.0s' $(seq 1 100))
cmds=(
  "GET s:__rand_int__"
  "GET l:__rand_int__"
  "MGET s:__rand_int__ s:__rand_int__ s:__rand_int__ s:__rand_int__"
  "SET s:__rand_int__ $v100"
  "GETRANGE l:__rand_int__ 500 599"
  "APPEND a:__rand_int__ $v100"
  "STRLEN l:__rand_int__"
)
names=(GET100 GET1000 MGET4x100 SET100 GETRANGE APPEND STRLEN)
server_args="--test-control no"
side_by_side
rm -f "$fill"
