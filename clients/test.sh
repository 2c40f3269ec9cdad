#!/usr/bin/env bash
# Builds the static rlockd binary (or takes RLOCKD_BINARY), packs each front end
# the way a user receives it and runs its tests against that package:
#   python: a wheel carrying the binary, installed into a fresh venv, pytest;
#   node:   `npm pack` of the package and its linux-x64 binary package, both
#           installed into a scratch project, node --test;
#   java:   `mvn verify` (the binary packed into the jar, Surefire), then the
#           Redisson tests again against an older Redisson line; then a Spring
#           Boot 3 project's tests with rlockd-spring-boot-test (clients/java-spring);
#   go:     the module's own tests, then its go-redis and redsync tests in a
#           scratch module that points at clients/go as a user's would.
# Then each language's section of the README, as written there, in a scratch
# project outside the checkout (/path/to/rlockd read as this checkout; Java
# twice, with the README's JUnit 5.12.2 and with 5.10.2), and every other
# README block marked to run, in those projects (clients/readme-blocks.sh).
# A missing toolchain is a visible skip. Ends with "clients: N passed, M failed"
# (tests counted from each runner's report) and exits non-zero on any failure.
# Packages come from PyPI, npm, Maven Central and the Go module proxy through
# each tool's own cache (~/.cache/pip, ~/.npm, ~/.m2, the Go module cache); the
# README's Java steps install dev.rlockd:rlockd into ~/.m2, as they tell a user to.
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
# The control surface each front end's tests check their classes against.
export RLOCKD_SURFACE=$root/clients/surface.tsv
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/bin"
# Debug info stays in target/; the packages carry the stripped executable.
if command -v strip >/dev/null; then
    strip -o "$scratch/bin/rlockd" "$bin"
else
    cp "$bin" "$scratch/bin/rlockd"
fi
staged=$scratch/bin/rlockd

# The README's fenced block whose first line starts with $1, with /path/to/rlockd
# read as this checkout; fails when there is none.
readme_block() {
    local out
    out=$(awk -v m="$1" '
        /^```/ { if (inb) exit; infence = !infence; first = infence; next }
        first { first = 0; if (index($0, m) == 1) inb = 1 }
        inb { print }
    ' "$root/README.md") || return 1
    if [ -z "$out" ]; then
        say "README.md has no block starting with: $1"
        return 1
    fi
    printf '%s\n' "${out//\/path\/to\/rlockd/$root}"
}
# The command a README test file's first line gives ("... — run with CMD").
readme_run() {
    local block
    block=$(readme_block "$1") || return 1
    sed -n 's/.* — run with //p' <<<"${block%%$'\n'*}"
}

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

python_readme() {
    local proj=$scratch/python-readme
    mkdir -p "$proj" && cd "$proj" || return 1
    say "python: the README's steps in $proj"
    readme_block "# test_lock.py" >test_lock.py || return 1
    local run
    run=$(readme_run "# test_lock.py") && [ -n "$run" ] || return 1
    RLOCKD_BINARY=$staged bash -euo pipefail -c "$(readme_block "python3 -m venv .venv")" || return 1
    env -u RLOCKD_BINARY bash -c "$run -p no:cacheprovider -q --junitxml=$scratch/python-readme.xml"
}

# ---------------------------------------------------------------- Node
node_tests() {
    say "node: npm pack (rlockd, and @rlockd/linux-x64 with the binary)"
    (cd clients/node && RLOCKD_BINARY=$staged npm pack --silent --pack-destination "$scratch" . ./platforms/linux-x64 \
        >/dev/null) || return 1
    local proj=$scratch/node-project
    cp -r clients/node/test "$proj"
    say "node: installing $(cd "$scratch" && echo rlockd-*.tgz) into a scratch project"
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

node_readme() {
    local proj=$scratch/node-readme
    mkdir -p "$proj" && cd "$proj" || return 1
    say "node: the README's steps in $proj"
    readme_block "// lock.test.mjs" >lock.test.mjs || return 1
    local run
    run=$(readme_run "// lock.test.mjs") && [ -n "$run" ] || return 1
    RLOCKD_BINARY=$staged bash -euo pipefail -c "$(readme_block "npm pack /path/to/rlockd/clients/node")" \
        >/dev/null || return 1
    env -u RLOCKD_BINARY bash -c "$run --test-reporter=spec --test-reporter-destination=stdout \
        --test-reporter=tap --test-reporter-destination=$scratch/node-readme.tap"
}

# ---------------------------------------------------------------- Java
java_tests() {
    rm -rf clients/java/target/surefire-reports
    say "java: mvn verify (Redisson 3.52.0)"
    env -u RLOCKD_BINARY mvn -q -B -Dstyle.color=never -f clients/java/pom.xml -Drlockd.binary.dir="$scratch/bin" verify \
        2>&1 | plain || return 1
    say "java: the Redisson tests again with an older line (Redisson $old_redisson)"
    env -u RLOCKD_BINARY mvn -q -B -Dstyle.color=never -f clients/java/pom.xml -Drlockd.binary.dir="$scratch/bin" \
        -Drlockd.build.dir="$scratch/java-old" -Dredisson.version="$old_redisson" -Dtest=RedissonTest,RedissonControlTest \
        -Dredisson.line.excludes='**/MapCacheNativeTest.java' test \
        2>&1 | plain
}
java_readme() {
    say "java: the README's install step"
    RLOCKD_BINARY=$staged bash -euo pipefail -c "$(readme_block "mvn -q -f /path/to/rlockd/clients/java/pom.xml install")" \
        2>&1 | plain || return 1
    local rc=0 junit proj run
    run=$(readme_run "// src/test/java/LockTest.java") && [ -n "$run" ] || return 1
    for junit in 5.12.2 5.10.2; do
        proj=$scratch/java-readme-$junit
        mkdir -p "$proj/src/test/java"
        say "java: the README's pom.xml and LockTest with JUnit $junit in $proj"
        readme_block "<!-- pom.xml -->" | sed "s#<version>5.12.2</version>#<version>$junit</version>#" >"$proj/pom.xml"
        grep -q "<version>$junit</version>" "$proj/pom.xml" || { say "java: no JUnit $junit in the pom"; rc=1; continue; }
        readme_block "// src/test/java/LockTest.java" >"$proj/src/test/java/LockTest.java" || return 1
        (cd "$proj" && env -u RLOCKD_BINARY bash -c "$run -B -Dstyle.color=never" 2>&1 | plain |
            grep -E "Tests run:|BUILD|ERROR|FAIL" | head -20; exit "${PIPESTATUS[0]}") || rc=1
        ls "$proj"/target/surefire-reports/TEST-*.xml >/dev/null 2>&1 || { say "java: no test ran with JUnit $junit"; rc=1; }
    done
    return $rc
}

# rlockd for Spring Boot tests (clients/java-spring, installed beside dev.rlockd:rlockd, which
# java_readme installs) and a Spring Boot 3 application's tests with it and no Redis property,
# in a scratch project (clients/java-spring/scratch copied outside the checkout): Spring Data
# Redis, Redisson's starter, the three topologies, the context cache, and testcontainers-redis's
# example with dev.rlockd.testcontainers.RedisContainer.
java_spring() {
    say "java: mvn install of rlockd-spring-boot-test"
    mvn -q -B -Dstyle.color=never -f clients/java-spring/pom.xml -Drlockd.spring.build.dir="$scratch/java-spring-build" install \
        2>&1 | plain || return 1
    local proj=$scratch/java-spring
    cp -r clients/java-spring/scratch "$proj"
    say "java: a Spring Boot 3 project's tests in $proj"
    (cd "$proj" && env -u RLOCKD_BINARY mvn -B -Dstyle.color=never test 2>&1 | plain |
        grep -E "Tests run:|BUILD|ERROR|FAIL" | head -30; exit "${PIPESTATUS[0]}")
}

# Maven's quiet mode still writes colour resets; pipefail keeps its exit status.
plain() { sed 's/\x1b\[[0-9;]*m//g'; }
old_redisson=3.17.7

# ---------------------------------------------------------------- Go
go_tests() {
    say "go: the module's own tests"
    (cd clients/go && RLOCKD_BINARY=$staged go test -count=1 -v ./... 2>&1) | tee "$scratch/go.log" | go_show || return 1
    say "go: the Porcupine check (clients/go/check, a module of its own)"
    (cd clients/go/check && go test -count=1 -v ./... 2>&1) | tee -a "$scratch/go.log" | go_show || return 1
    local mod=$scratch/go-module
    cp -r clients/go/test "$mod"
    say "go: go-redis and redsync tests in $mod"
    (cd "$mod" && go mod edit -replace=rlockd.dev/rlockd="$root/clients/go" &&
        RLOCKD_BINARY=$staged go test -count=1 -v ./... 2>&1) | tee -a "$scratch/go.log" | go_show
}

go_readme() {
    local proj=$scratch/go-readme
    mkdir -p "$proj" && cd "$proj" || return 1
    say "go: the README's steps in $proj"
    go mod init example.com/locks >"$scratch/go-init.log" 2>&1 || { cat "$scratch/go-init.log"; return 1; }
    readme_block "// lock_test.go" >lock_test.go || return 1
    local run
    run=$(readme_run "// lock_test.go") && [ -n "$run" ] || { say "go: no run command in the README's lock_test.go"; return 1; }
    bash -euo pipefail -c "$(readme_block "go mod edit -require=rlockd.dev/rlockd")" >"$scratch/go-get.log" 2>&1 || {
        cat "$scratch/go-get.log"
        return 1
    }
    # The README's module finds the binary as a user's would (no RLOCKD_BINARY): the checkout's
    # release build, else rlockd on PATH; here the binary under test is put on PATH.
    env -u RLOCKD_BINARY CARGO_TARGET_DIR=/nonexistent PATH="$scratch/bin:$PATH" bash -c "$run -count=1 -v 2>&1" |
        tee -a "$scratch/go.log" | go_show
}
# go test's verdicts and failures: test lines, build errors and the go command's own complaints.
go_show() { grep -E "^(--- |ok|FAIL|PASS|panic|go: |#)|\.go:[0-9]+:"; return 0; }

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
    (python_readme) || rc=1
    blocks_python || true
    if [ -f "$scratch/python.xml" ]; then
        local xs=("$scratch/python.xml")
        if [ -f "$scratch/python-readme.xml" ]; then xs+=("$scratch/python-readme.xml"); else rc=1; fi
        read -r p f s < <(xml_counts "${xs[@]}")
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
    (node_readme) || rc=1
    blocks_node || true
    if [ -f "$scratch/node.tap" ]; then
        local p=0 f=0 s=0 tap
        [ -f "$scratch/node-readme.tap" ] || rc=1
        for tap in "$scratch/node.tap" "$scratch/node-readme.tap"; do
            [ -f "$tap" ] || continue
            p=$((p + $(awk '/^# pass /{n=$3} END{print n+0}' "$tap")))
            f=$((f + $(awk '/^# fail /{n=$3} END{print n+0}' "$tap")))
            s=$((s + $(awk '/^# skipped /{n=$3} END{print n+0}' "$tap")))
        done
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
    java_readme || rc=1
    java_spring || rc=1
    blocks_java || true
    shopt -s nullglob
    local reports=(clients/java/target/surefire-reports/TEST-*.xml "$scratch"/java-old/surefire-reports/TEST-*.xml
        "$scratch"/java-readme-*/target/surefire-reports/TEST-*.xml "$scratch"/java-spring/target/surefire-reports/TEST-*.xml)
    shopt -u nullglob
    if [ "${#reports[@]}" -gt 0 ]; then
        read -r p f s < <(xml_counts "${reports[@]}")
        [ "$rc" != 0 ] && [ "$f" = 0 ] && f=1
        count "$p" "$f" "$s" java
    else
        count 0 1 0 "java (build failed)"
    fi
}

run_go() {
    if ! command -v go >/dev/null; then
        skipped=$((skipped + 1)); note "go: SKIPPED (go not found)"; return
    fi
    go_tests; local rc=$?
    (go_readme) || rc=1
    blocks_go || true
    local p f s
    p=$(grep -c '^--- PASS' "$scratch/go.log" 2>/dev/null)
    f=$(grep -c '^--- FAIL' "$scratch/go.log" 2>/dev/null)
    s=$(grep -c '^--- SKIP' "$scratch/go.log" 2>/dev/null)
    p=${p:-0} f=${f:-0} s=${s:-0}
    [ "$rc" != 0 ] && [ "$f" = 0 ] && f=1
    count "$p" "$f" "$s" go
}

# shellcheck source=clients/readme-blocks.sh
. "$root/clients/readme-blocks.sh"
blocks_ok=0
only=${CLIENTS_ONLY:-readme python node java go}
[[ " $only " == *" readme "* ]] || only="readme $only"
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
