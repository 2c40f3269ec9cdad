#!/bin/bash
# Commands on small values, two rlockd builds side by side (issue 40):
# each build started on a free port in turn, redis-benchmark -P 32 driving
# each command, ROUNDS rounds alternating, one line per command and build:
#
#   bash benches/small_values_speed.sh OLD_BIN NEW_BIN [ROUNDS]
#
# A random key of 20,000 in each command, so the collections stay small
# (a sorted set reaches about 15 members in 300,000 ZADDs).
A=$1; B=$2; R=${3:-3}
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
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
for r in $(seq 1 "$R"); do
  for which in A B; do
    bin=${!which}
    port=$(free_port)
    "$bin" --port "$port" --bind 127.0.0.1 >/dev/null 2>&1 &
    pid=$!
    until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
    for c in "${cmds[@]}"; do
      # shellcheck disable=SC2086 # the command's words are arguments
      v=$(redis-benchmark -p "$port" -P 32 -n 300000 -r 20000 -c 16 -q $c 2>/dev/null |
        tr '\r' '\n' | grep -o "[0-9.]* requests per second" | tail -1 | cut -d' ' -f1)
      echo "$r $which ${c%% *} $v"
    done
    kill "$pid"
    wait "$pid" 2>/dev/null
  done
done
