#!/usr/bin/env bash
# rlockd as a new user gets it, with an empty, throwaway CARGO_HOME so that
# nothing already in a cache can hide a missing step (issue 23):
#   1. a fresh clone of HEAD: the README's first command, `cargo run --release`,
#      builds, and the server answers PING;
#   2. `cargo install --path .` gives working `rlockd` and `rlockd-bench`;
#   3. `cargo package` builds and verifies the crate crates.io would serve, and
#      it holds only what a user needs;
#   4. a scratch crate written from the README ("In-process use from Rust
#      tests": its Cargo.toml lines and its test, as printed) passes with rlockd
#      as a path, a git and a packaged-crate dependency.
# Everything happens under one temporary directory, removed at the end.
# Prints each step's wall time; ends with "fresh-machine: N passed, M failed".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/rlockd-fresh.XXXXXX")
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT

export CARGO_HOME=$work/cargo-home
export CARGO_TARGET_DIR=$work/target
mkdir -p "$CARGO_HOME"

passed=0
failed=0
say() { echo "fresh-machine: $*"; }
ok() { passed=$((passed + 1)); say "ok: $*"; }
fail() { failed=$((failed + 1)); say "FAILED: $*"; }
timed() { # label command...
    local start=$SECONDS
    if "${@:2}"; then
        ok "$1 ($((SECONDS - start)) s)"
    else
        fail "$1 ($((SECONDS - start)) s)"
        return 1
    fi
}

# Sends PING on a fresh TCP connection and checks the reply, with bash alone.
ping_port() {
    local reply
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    printf 'PING\r\n' >&3
    IFS= read -r -t 5 reply <&3 || true
    exec 3<&- 3>&-
    [ "${reply%$'\r'}" = "+PONG" ]
}

# Waits for the ready line in $1 (at most 20 minutes: it includes the build).
wait_ready() {
    local i
    for ((i = 0; i < 12000; i++)); do
        if grep -q "ready to accept connections" "$1" 2>/dev/null; then
            sed -n 's/.*(port \([0-9]*\)).*/\1/p' "$1" | head -n 1
            return 0
        fi
        if ! kill -0 "$server_pid" 2>/dev/null; then return 1; fi
        sleep 0.1
    done
    return 1
}

git clone -q "$root" "$work/rlockd"
cd "$work/rlockd"
say "clone of $(git rev-parse --short HEAD), CARGO_HOME=$CARGO_HOME (empty)"

# 1. The README's first command, as printed but on a free port.
readme_run() {
    local log=$work/run.log port
    cargo run --release -- --port 0 >"$log" 2>&1 &
    server_pid=$!
    if ! port=$(wait_ready "$log"); then
        tail -n 30 "$log"
        return 1
    fi
    ping_port "$port" || { say "no PONG from port $port"; return 1; }
    # `cargo run`'s child is the server; stop both.
    pkill -P "$server_pid" 2>/dev/null || true
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}
timed "cargo run --release -- --port 0 builds and answers PING" readme_run || true

# 2. cargo install, reusing the release build above.
install_check() {
    cargo install --quiet --locked --path . --root "$work/install" || return 1
    "$work/install/bin/rlockd" --version | grep -q "^rlockd " || return 1
    "$work/install/bin/rlockd-bench" --help >/dev/null || return 1
    local log=$work/install.log port
    "$work/install/bin/rlockd" --port 0 >"$log" 2>&1 &
    server_pid=$!
    port=$(wait_ready "$log") || return 1
    ping_port "$port" || return 1
    kill "$server_pid"
    wait "$server_pid" 2>/dev/null || true
    server_pid=""
}
timed "cargo install --path . gives rlockd and rlockd-bench" install_check || true

# 3. The packaged crate: builds on its own, and holds no tests, corpora or
# front ends.
package_check() {
    cargo package --quiet --locked || return 1
    local crate
    crate=$(ls "$CARGO_TARGET_DIR"/package/rlockd-*.crate)
    local size
    size=$(stat -c %s "$crate")
    say "$(basename "$crate"): $((size / 1024)) KiB, $(tar tzf "$crate" | wc -l) files"
    [ "$size" -lt $((2 * 1024 * 1024)) ] || { say "the crate is over 2 MiB"; return 1; }
    if tar tzf "$crate" | grep -E '^[^/]+/(tests|fuzz|clients|benches|examples|docker)/'; then
        say "the crate ships files users do not need (above)"
        return 1
    fi
}
timed "cargo package" package_check || true

# 4. A user's crate, from the README's own lines.
readme_block() { # section-heading fence-language
    awk -v head="$1" -v lang="$2" '
        $0 == head { in_section = 1; next }
        in_section && /^## / { exit }
        in_section && $0 == "```" lang { in_block = 1; next }
        in_block && $0 == "```" { exit }
        in_block { print }
    ' "$work/rlockd/README.md"
}
user_crate() { # label dependency-spec
    local dir=$work/user-$1
    mkdir -p "$dir/tests"
    {
        printf '[package]\nname = "rlockd-user-%s"\nversion = "0.0.0"\nedition = "2021"\n\n' "$1"
        readme_block "## In-process use from Rust tests" toml | sed "s|^rlockd = { path = \"[^\"]*\"|rlockd = { $2|"
        printf '\n[workspace]\n'
    } >"$dir/Cargo.toml"
    readme_block "## In-process use from Rust tests" rust >"$dir/tests/readme.rs"
    grep -q "^rlockd = { $2" "$dir/Cargo.toml" || { say "README's dependency line not found"; return 1; }
    grep -q "fn my_lock_test" "$dir/tests/readme.rs" || { say "README's test not found"; return 1; }
    (cd "$dir" && cargo test --quiet 2>&1) | tee "$work/user-$1.log" | tail -n 5
    grep -q "^test result: ok. 1 passed" "$work/user-$1.log"
}
timed "a user crate with rlockd as a path dependency passes the README's test" \
    user_crate path "path = \"$work/rlockd\"" || true
timed "a user crate with rlockd as a git dependency passes the README's test" \
    user_crate git "git = \"file://$work/rlockd\"" || true
packaged=$(ls -d "$CARGO_TARGET_DIR"/package/rlockd-*/ 2>/dev/null | head -n 1)
timed "a user crate with rlockd as the packaged crate passes the README's test" \
    user_crate crate "path = \"${packaged%/}\"" || true

echo "fresh-machine: $passed passed, $failed failed"
[ "$failed" = 0 ]
