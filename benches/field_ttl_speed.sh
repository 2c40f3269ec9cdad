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
# shellcheck source=common/side_by_side.sh
. "$(dirname "$0")/common/side_by_side.sh"
fill=$(make_fill <<'PY'
for i in range(20000):
    f.write(cmd(b"HSET", b"h:%012d" % i, b"f", b"v"))
PY
)
cmds=(
  "HPEXPIRE h:__rand_int__ 100000 FIELDS 1 f"
  "HPTTL h:__rand_int__ FIELDS 1 f"
  "HGET h:__rand_int__ f"
  "HSET h:__rand_int__ f v"
)
names=(HPEXPIRE HPTTL HGET HSET)
server_args="--redis-version 8.2.3 --test-control no"
side_by_side
rm -f "$fill"
