#!/usr/bin/env bash
# Builds the static rlockd binary (or takes RLOCKD_BINARY), packs each front end
# the way a user receives it and runs its tests against that package:
#   python: a wheel carrying the binary, installed into a fresh venv, pytest;
#   node:   `npm pack`, the tarball installed into a scratch project, node --test;
#   java:   `mvn verify` (the binary packed into the jar, Surefire), then the
#           Redisson tests again against an older Redisson line.
# A missing toolchain is a visible skip. Ends with "clients: N passed, M failed"
# (tests counted from each runner's report) and exits non-zero on any failure.
# Packages come from PyPI, npm and Maven Central through each tool's own cache
# (~/.cache/pip, ~/.npm, ~/.m2).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

passed=0
failed=0
skipped=0
lines=()

say() { echo "clients: $*"; }
note() { lines+=("$*"); say "$*"; }
count() { # passed failed skipped label
    passed=$((passed + $1))
    failed=$((failed + $2))
    skipped=$((skipped + $3))
    note "$4: $1 passed, $2 failed, $3 skipped"
}

if [ -n "${RLOCKD_BINARY:-}" ]; then
    bin=$(readlink -f "$RLOCKD_BINARY")
    say "using RLOCKD_BINARY=$bin"
else
    say "building the static binary"
    RUSTFLAGS="-C target-feature=+crt-static" cargo build --release --quiet --target x86_64-unknown-linux-gnu || {
        say "static build failed"
        echo "clients: 0 passed, 1 failed"
        exit 1
    }
    bin=$root/target/x86_64-unknown-linux-gnu/release/rlockd
fi
if [ ! -x "$bin" ]; then
    say "no rlockd executable at $bin"
    echo "clients: 0 passed, 1 failed"
    exit 1
fi
if ldd "$bin" 2>&1 | grep -qE "not a dynamic executable|statically linked"; then
    say "binary is static: $bin"
else
    say "WARNING: $bin is dynamically linked; the packages would only run where its libraries are"
fi

scratch=$(mktemp -d /tmp/rlockd-clients.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/bin"
# Debug info stays in target/; the packages carry the stripped executable.
if command -v strip >/dev/null; then
    strip -o "$scratch/bin/rlockd" "$bin"
else
    cp "$bin" "$scratch/bin/rlockd"
fi
staged=$scratch/bin/rlockd

# ---------------------------------------------------------------- Python
python_tests() {
    local venv=$scratch/venv
    python3 -m venv "$venv" || return 1
    say "python: building the wheel"
    RLOCKD_BINARY=$staged "$venv/bin/pip" wheel -q --disable-pip-version-check --no-deps \
        -w "$scratch/dist" clients/python || return 1
    say "python: installing $(basename "$scratch"/dist/rlockd-*.whl) into a fresh venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "$scratch"/dist/rlockd-*.whl \
        "pytest>=8" "redis==5.2.1" || return 1
    cp -r clients/python/tests "$scratch/pytests"
    (cd "$scratch/pytests" && env -u RLOCKD_BINARY "$venv/bin/python" -m pytest -p no:cacheprovider \
        -q --junitxml="$scratch/python.xml" .)
}

# ---------------------------------------------------------------- Node
node_tests() {
    say "node: npm pack"
    (cd clients/node && RLOCKD_BINARY=$staged npm pack --silent --pack-destination "$scratch" >/dev/null) || return 1
    local proj=$scratch/node-project
    cp -r clients/node/test "$proj"
    say "node: installing $(basename "$scratch"/rlockd-*.tgz) into a scratch project"
    (cd "$proj" && npm install --silent --no-audit --no-fund "$scratch"/rlockd-*.tgz \
        ioredis@5.9.3 redlock@5.0.0-beta.2 redis@4.7.1 bullmq@5.76.0 typescript@5.9.3 @types/node@20) || return 1
    # bullmq 5.78 and later declare an optional peer redis@>=5, which node-redis 4.7.1 (tested here) does not satisfy.
    (cd "$proj" && env -u RLOCKD_BINARY node --test --test-reporter=spec --test-reporter-destination=stdout \
        --test-reporter=tap --test-reporter-destination="$scratch/node.tap") || return 1
}

node_types() {
    say "node: tsc --noEmit against index.d.ts (ESM and CommonJS)"
    (cd "$scratch/node-project" && npx --no-install tsc -p tsconfig.json)
}

# ---------------------------------------------------------------- Java
java_tests() {
    rm -rf clients/java/target/surefire-reports
    say "java: mvn verify (Redisson 3.52.0)"
    env -u RLOCKD_BINARY mvn -q -B -Dstyle.color=never -f clients/java/pom.xml -Drlockd.binary.dir="$scratch/bin" verify \
        2>&1 | plain || return 1
    say "java: the Redisson tests again with an older line (Redisson $old_redisson)"
    env -u RLOCKD_BINARY mvn -q -B -Dstyle.color=never -f clients/java/pom.xml -Drlockd.binary.dir="$scratch/bin" \
        -Drlockd.build.dir="$scratch/java-old" -Dredisson.version="$old_redisson" -Dtest=RedissonTest,RedissonControlTest test \
        2>&1 | plain
}
# Maven's quiet mode still writes colour resets; pipefail keeps its exit status.
plain() { sed 's/\x1b\[[0-9;]*m//g'; }
old_redisson=3.17.7

xml_counts() { # junit xml files -> "passed failed skipped"
    python3 - "$@" <<'PY'
import sys, xml.etree.ElementTree as ET
t = f = s = 0
for path in sys.argv[1:]:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.iter("testsuite")
    for ts in suites:
        t += int(ts.get("tests", 0)); s += int(ts.get("skipped", 0))
        f += int(ts.get("failures", 0)) + int(ts.get("errors", 0))
print(t - f - s, f, s)
PY
}

run_python() {
    if ! command -v python3 >/dev/null; then
        skipped=$((skipped + 1)); note "python: SKIPPED (python3 not found)"; return
    fi
    python_tests; local rc=$?
    if [ -f "$scratch/python.xml" ]; then
        read -r p f s < <(xml_counts "$scratch/python.xml")
        [ "$rc" != 0 ] && [ "$f" = 0 ] && f=1
        count "$p" "$f" "$s" python
    else
        count 0 1 0 "python (build/install failed)"
    fi
}

run_node() {
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        skipped=$((skipped + 1)); note "node: SKIPPED (node/npm not found)"; return
    fi
    node_tests; local rc=$?
    if [ -f "$scratch/node.tap" ]; then
        local p f s
        p=$(awk '/^# pass /{print $3}' "$scratch/node.tap" | tail -1)
        f=$(awk '/^# fail /{print $3}' "$scratch/node.tap" | tail -1)
        s=$(awk '/^# skipped /{print $3}' "$scratch/node.tap" | tail -1)
        p=${p:-0} f=${f:-0} s=${s:-0}
        [ "$rc" != 0 ] && [ "$f" = 0 ] && f=1
        count "$p" "$f" "$s" node
        if [ -d "$scratch/node-project/node_modules/typescript" ]; then
            if node_types; then count 1 0 0 "node types"; else count 0 1 0 "node types"; fi
        fi
    else
        count 0 1 0 "node (pack/install failed)"
    fi
}

run_java() {
    if ! command -v mvn >/dev/null || ! command -v java >/dev/null; then
        skipped=$((skipped + 1)); note "java: SKIPPED (mvn/java not found)"; return
    fi
    java_tests; local rc=$?
    shopt -s nullglob
    local reports=(clients/java/target/surefire-reports/TEST-*.xml "$scratch"/java-old/surefire-reports/TEST-*.xml)
    shopt -u nullglob
    if [ "${#reports[@]}" -gt 0 ]; then
        read -r p f s < <(xml_counts "${reports[@]}")
        [ "$rc" != 0 ] && [ "$f" = 0 ] && f=1
        count "$p" "$f" "$s" java
    else
        count 0 1 0 "java (build failed)"
    fi
}

only=${CLIENTS_ONLY:-python node java}
for lang in $only; do
    echo
    "run_$lang"
done

echo
for l in "${lines[@]}"; do echo "  $l"; done
if [ "$skipped" -gt 0 ]; then
    echo "clients: $passed passed, $failed failed, $skipped skipped"
else
    echo "clients: $passed passed, $failed failed"
fi
[ "$failed" = 0 ]
