#!/bin/bash
# Commands on small values, two rlockd builds side by side (issue 40): each
# round starts each build on a free port (which goes first alternates),
# drives each command with redis-benchmark (-P 32 -c 16, 300,000 requests),
# and prints kilo-requests per second per command and build: min-max
# (median), and the ratio of medians.
#
#   bash benches/small_values_speed.sh OLD_BIN NEW_BIN [ROUNDS]
#
# A random key of 20,000 in each command, so the collections stay small
# (a sorted set reaches about 15 members in 300,000 ZADDs).
set -euo pipefail
a=$1 b=$2 rounds=${3:-3}
cmds=(
  "SET key:__rand_int__ value"
  "GET key:__rand_int__"
  "HINCRBY lock:__rand_int__ 8f2b6c1e-4a7d-4e21-9c3b-5d6e7f809a1b:1 1"
  "ZADD win:__rand_int__ __rand_int__ req:__rand_int__"
  "ZRANGEBYSCORE win:__rand_int__ -inf +inf"
  "ZSCORE win:__rand_int__ req:__rand_int__"
  "RPUSH list:__rand_int__ item"
  "LRANGE list:__rand_int__ 0 -1"
  "SADD set:__rand_int__ __rand_int__"
)
names=(SET GET HINCRBY ZADD ZRANGEBYSCORE ZSCORE RPUSH LRANGE SADD)
server_args="--bind 127.0.0.1"
# shellcheck source=common/side_by_side.sh
. "$(dirname "$0")/common/side_by_side.sh"
side_by_side
