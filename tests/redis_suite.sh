#!/usr/bin/env bash
# Runs units of Redis's own Tcl test suite against rlockd, started with its
# default configuration, in the suite's external-server mode.
#
#   tests/redis_suite.sh [unit...]          default units: unit/pubsub unit/introspection
#                                           unit/scripting unit/type/stream-cgroups
#
# The suite is not part of this repository: the Debian source package of the
# installed redis-server (`apt-get source redis`, bookworm: 7.0.15) is fetched
# at run time into a temporary directory, through a private apt configuration
# (deb-src lines for the running distribution; /etc/apt is not touched).
# Each unit runs against a freshly started server; the script prints each
# unit's passed/failed/skipped counts (skipped: by tag, e.g. external:skip,
# or by --skiptest/--only), the failing tests, and a total line, and exits
# non-zero when a test failed or a unit did not finish (a unit that makes no
# progress for REDIS_SUITE_TIMEOUT seconds is given up).
#
# Environment:
#   RLOCKD_BINARY      the server to test (default: `cargo build --release`, then
#                      $CARGO_TARGET_DIR/release/rlockd)
#   REDIS_SUITE_SERVER=redis-server  run the same units against /usr/bin/redis-server
#                      instead (the reference figures)
#   REDIS_SUITE_SRC    an already extracted Redis source tree (skips the download)
#   REDIS_SUITE_PORT   port for the server under test (default 21379)
#   REDIS_SUITE_TIMEOUT seconds without progress before the suite gives a unit up
#                      (default 120; the suite's own --timeout)
#   REDIS_SUITE_ARGS   extra arguments for ./runtest (e.g. "--tags -slow",
#                      "--only '/XREADGROUP.*'")
#   REDIS_SUITE_KEEP=1 keep the temporary directory (logs, source)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

units=("$@")
[ ${#units[@]} -gt 0 ] || units=(unit/pubsub unit/introspection unit/scripting unit/type/stream-cgroups)
port=${REDIS_SUITE_PORT:-21379}
timeout_s=${REDIS_SUITE_TIMEOUT:-120}
say() { echo "redis-suite: $*"; }

command -v tclsh8.6 >/dev/null || command -v tclsh8.5 >/dev/null || {
    say "tclsh 8.5 or newer is needed (apt-get install tcl)"
    exit 2
}

work=$(mktemp -d "${TMPDIR:-/tmp}/rlockd-redis-suite.XXXXXX")
server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; fi
    if [ "${REDIS_SUITE_KEEP:-0}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

# --- the suite -------------------------------------------------------------
fetch_source() {
    local codename version apt
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || { say "cannot tell the distribution's codename"; return 1; }
    mkdir -p "$work/apt/lists/partial" "$work/apt/archives/partial" "$work/fetch"
    {
        echo "deb-src http://deb.debian.org/debian $codename main"
        echo "deb-src http://deb.debian.org/debian $codename-updates main"
        echo "deb-src http://deb.debian.org/debian-security $codename-security main"
    } >"$work/apt/sources.list"
    apt=(apt-get -q -o "Dir::Etc::SourceList=$work/apt/sources.list"
        -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$work/apt/lists"
        -o "Dir::Cache=$work/apt" -o Debug::NoLocking=1 -o APT::Sandbox::User=root)
    "${apt[@]}" update >"$work/apt.log" 2>&1 || { say "apt-get update failed (see below)"; tail -5 "$work/apt.log"; return 1; }
    # The source of the installed redis-server when that version is published.
    version=$(dpkg-query -W -f '${Version}' redis-server 2>/dev/null || true)
    local spec=redis
    [ -n "$version" ] && spec="redis=$version"
    (cd "$work/fetch" && "${apt[@]}" source --download-only "$spec" >>"$work/apt.log" 2>&1) ||
        (cd "$work/fetch" && "${apt[@]}" source --download-only redis >>"$work/apt.log" 2>&1) ||
        { say "apt-get source redis failed (see below)"; tail -5 "$work/apt.log"; return 1; }
    if command -v dpkg-source >/dev/null; then
        (cd "$work/fetch" && dpkg-source -x ./*.dsc "$work/redis" >>"$work/apt.log" 2>&1) || return 1
    else # without dpkg-dev: the upstream tarball, without Debian's patches
        mkdir -p "$work/redis" && tar -xzf "$work"/fetch/*.orig.tar.gz -C "$work/redis" --strip-components=1 || return 1
    fi
    say "suite from $(basename "$work"/fetch/*.dsc .dsc)"
}

if [ -n "${REDIS_SUITE_SRC:-}" ]; then
    src=$REDIS_SUITE_SRC
else
    fetch_source || exit 2
    src=$work/redis
fi
[ -f "$src/tests/test_helper.tcl" ] || { say "no Redis test suite in $src"; exit 2; }

# --- the server ------------------------------------------------------------
if [ "${REDIS_SUITE_SERVER:-rlockd}" = redis-server ]; then
    server=(redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no)
    label=redis-server
else
    if [ -z "${RLOCKD_BINARY:-}" ]; then
        cargo build --release --bin rlockd -q || exit 2
        RLOCKD_BINARY=${CARGO_TARGET_DIR:-$root/target}/release/rlockd
    fi
    server=("$RLOCKD_BINARY" --port "$port")
    label=rlockd
fi

start_server() {
    (cd "$work" && exec "${server[@]}") >"$work/server-$1.log" 2>&1 &
    server_pid=$!
    local i
    for i in $(seq 1 100); do
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    say "server did not start:"; cat "$work/server-$1.log"
    return 1
}
stop_server() {
    kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
    server_pid=
}

# --- the units -------------------------------------------------------------
total_ok=0 total_err=0 total_ignored=0 unfinished=0 summary=()
for unit in "${units[@]}"; do
    name=${unit//\//_}
    start_server "$name" || exit 2
    log=$work/$name.out
    # shellcheck disable=SC2086
    (cd "$src" && exec tclsh8.6 tests/test_helper.tcl --host 127.0.0.1 --port "$port" \
        --single "$unit" --durable --timeout "$timeout_s" ${REDIS_SUITE_ARGS:-}) \
        </dev/null 2>&1 | sed -e 's/\x1b\[[0-9;]*m//g' >"$log"
    stop_server
    ok=$(grep -c '^\[ok\]: ' "$log")
    err=$(grep -c '^\[err\]: ' "$log")
    ignored=$(grep -c '^\[ignore\]: \|^\[skip\]: ' "$log")
    state=finished
    if grep -q '^\[TIMEOUT\]' "$log"; then
        state="gave up (no progress for ${timeout_s}s) in: $(grep -m1 'IN PROGRESS' "$log" | sed 's/.*(IN PROGRESS) //')"
        unfinished=$((unfinished + 1))
    elif grep -q '^\[exception\]' "$log" || ! grep -q 'All tests passed\|tests failed' "$log"; then
        state="aborted: $(grep -m1 -A2 '^\[exception\]' "$log" | tr '\n' ' ')"
        unfinished=$((unfinished + 1))
    fi
    line="$unit: $ok passed, $err failed, $ignored skipped, $state"
    summary+=("$line")
    say "$line"
    grep '^\[err\]: ' "$log" | sed 's/^/    /'
    total_ok=$((total_ok + ok)) total_err=$((total_err + err)) total_ignored=$((total_ignored + ignored))
done

say "against $label:"
for line in "${summary[@]}"; do say "  $line"; done
say "total: $total_ok passed, $total_err failed, $total_ignored skipped, $unfinished unit(s) not finished"
[ "$total_err" = 0 ] && [ "$unfinished" = 0 ]
