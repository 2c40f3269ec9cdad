# shellcheck shell=bash
# The README blocks marked to run, run as written; sourced by clients/test.sh (which defines
# root, scratch, staged, say, count) and run per language in the scratch projects its README
# steps built.
#
# Every fenced block of README.md and clients/*/README.md has a marker on the line before it,
# `<!-- readme-test: KIND[; option: value]... -->` or `<!-- illustrative: REASON -->`;
# tests/it/readme.rs checks that without any toolchain, and blocks_extract refuses an
# unmarked block too. The kinds run here:
#   sh         bash -eo pipefail, with rlockd (the binary under test) and redis-cli on PATH;
#   python     a file run by the Python README project's venv (rlockd, redis, pytest in it);
#   pytest     a test file run by that venv's pytest;
#   node       an ES module (.mjs) run by node in the Node README project (rlockd, ioredis,
#              redlock 5, installed by the README's own lines);
#   node-test  a test file run by node --test there;
#   go-test    a test file run by go test in a module of its own with the Go README module's
#              go.mod and go.sum (rlockd, go-redis, redsync, from the README's own lines);
#   java-test  a JUnit test class (its first line names its file), run by mvn -o test in a
#              project with the Java README's pom.xml (rlockd from ~/.m2 as the README's install
#              line put it there, JUnit, Redisson); all of them in one Maven run.
# `project` blocks are the language sections' install lines and test files, which the
# *_readme functions of clients/test.sh run; `rust` blocks are in tests/it/readme_rust.rs;
# `fresh-machine` is .ci/fresh-machine.sh's.
# Each block runs in a private network and process namespace (unshare -r -n -p -f), so the
# README's fixed ports (6379, 7000, 26379...) are free whatever else runs on the machine, and
# whatever the block started ends with it; an sh block also gets a private /tmp. Options:
#   server: CMD   started first, in the namespace; the block runs once it is ready;
#   expect: TEXT  must be in the block's output, in the order given (repeatable).
# rlockd and redis-cli are wrappers: redis-cli waits (10 s at most) until every rlockd the block
# started has printed its ready line (a cluster's first port answers before its replicas are
# attached) and the port or socket it names answers, as a person typing the next line after
# `rlockd ... &` would, then runs `redis-cli -e`, so an error reply fails the block.
# /path/to/rlockd reads as this checkout.

blocks=$scratch/blocks

# Splits every README into $blocks/NNN (the body) and $blocks/index.tsv (NNN, file, line,
# marker); fails on a block without a marker.
blocks_extract() {
    mkdir -p "$blocks"
    (cd "$root" && awk -v dir="$blocks" '
        FNR == 1 { marker = "" }
        /^```/ {
            if (!inb) {
                inb = 1; n++; body = sprintf("%s/%03d", dir, n); printf "" > body
                printf "%03d\t%s\t%d\t%s\n", n, FILENAME, FNR, marker >> (dir "/index.tsv")
            } else { inb = 0; close(body); marker = "" }
            next
        }
        inb { print > body; next }
        /^<!-- .* -->$/ { marker = substr($0, 6, length($0) - 9); next }
        /[^ \t]/ { marker = "" }
    ' README.md clients/*/README.md) || return 1
    local f
    for f in "$blocks"/[0-9][0-9][0-9]; do
        sed -i "s#/path/to/rlockd#$root#g" "$f"
    done
    local unmarked
    unmarked=$(awk -F'\t' '$4 !~ /^(readme-test|illustrative):/ { print "  " $2 ":" $3 }' "$blocks/index.tsv")
    if [ -n "$unmarked" ]; then
        say "README blocks without a readme-test or illustrative marker:"
        echo "$unmarked"
        return 1
    fi
    # A `project` block is one the language sections' steps in clients/test.sh read (by its
    # first line); one they do not read would go unrun.
    local id first known ok
    for id in $(blocks_of project); do
        first=$(head -n 1 "$blocks/$id") ok=0
        for known in "# test_lock.py" "python3 -m venv .venv" "// lock.test.mjs" "npm pack $root/clients/node" \
            "mvn -q -f $root/clients/java/pom.xml install" "<!-- pom.xml -->" "// src/test/java/LockTest.java" \
            "go mod edit -require=rlockd.dev/rlockd" "// lock_test.go"; do
            [[ $first == "$known"* ]] && ok=1
        done
        if [ "$ok" = 0 ]; then
            say "$(block_where "$id") is marked project, but no step of clients/test.sh reads it: $first"
            return 1
        fi
    done
    # The wrapper redis-cli, and rlockd, first on the blocks' PATH.
    mkdir -p "$scratch/readme-bin"
    # rlockd marks itself starting until its ready line, for redis-cli to wait on.
    cat >"$scratch/readme-bin/rlockd" <<EOF
#!/usr/bin/env bash
starting=\${NS:-/nonexistent}/starting.\$\$
touch "\$starting" 2>/dev/null
"$staged" "\$@" 2>&1 | while IFS= read -r line; do
    printf '%s\\n' "\$line"
    [[ \$line == *"Ready to accept connections"* ]] && rm -f "\$starting"
done
rm -f "\$starting"
EOF
    chmod +x "$scratch/readme-bin/rlockd"
    cat >"$scratch/readme-bin/redis-cli" <<EOF
#!/usr/bin/env bash
host=127.0.0.1 port=6379 sock=
args=("\$@")
for ((i = 0; i < \${#args[@]}; i++)); do
    case \${args[i]} in
    -h) host=\${args[i+1]} ;;
    -p) port=\${args[i+1]} ;;
    -s) sock=\${args[i+1]} ;;
    esac
done
shopt -s nullglob
for ((i = 0; i < 100; i++)); do
    starting=(\${NS:-/nonexistent}/starting.*)
    if [ "\${#starting[@]}" = 0 ]; then
        if [ -n "\$sock" ]; then [ -S "\$sock" ] && break
        elif (exec 3<>"/dev/tcp/\$host/\$port") 2>/dev/null; then break; fi
    fi
    sleep 0.1
done
exec $(command -v redis-cli || echo redis-cli) -e "\$@"
EOF
    chmod +x "$scratch/readme-bin/redis-cli"
}

# The ids of the blocks of one kind.
blocks_of() { awk -F'\t' -v k="$1" '{ split($4, a, ";"); sub(/^readme-test: */, "", a[1]) } a[1] == k { print $1 }' "$blocks/index.tsv"; }
block_where() { awk -F'\t' -v id="$1" '$1 == id { print $2 ":" $3 }' "$blocks/index.tsv"; }
# The values of option $2 in block $1's marker, one a line.
block_opt() {
    awk -F'\t' -v id="$1" '$1 == id { print $4 }' "$blocks/index.tsv" | tr ';' '\n' | tail -n +2 |
        sed -n "s/^ *$2: *//p"
}

# Runs block $1 with the command "${@:2}" in its namespaces, in the current directory; the
# block's file is "$BLOCK" there. Prints one line per block, the output of a failed one.
block_run() {
    local id=$1 where server out rc
    shift
    where=${BLOCK_LABEL:-$(block_where "$id")}
    server=$(block_opt "$id" server)
    out=$blocks/$id.out
    mkdir -p "$blocks/$id.ns"
    BLOCK=$blocks/$id SERVER=$server NS=$blocks/$id.ns PRIVATE_TMP=${PRIVATE_TMP:-0} SCRATCH=$scratch \
        PATH="$scratch/readme-bin:$PATH" timeout 300 unshare -r -n -p -f --kill-child -m bash -c '
        ip link set lo up || exit 1
        if [ "$PRIVATE_TMP" = 1 ]; then
            mount --bind "$SCRATCH" /mnt && mount -t tmpfs tmpfs /tmp &&
                mkdir -p "$SCRATCH" && mount --bind /mnt "$SCRATCH" || exit 1
        fi
        if [ -n "$SERVER" ]; then
            $SERVER >"$NS/server.log" 2>&1 &
            for ((i = 0; i < 100; i++)); do
                grep -qs "Ready to accept connections" "$NS/server.log" && break
                sleep 0.1
            done
        fi
        "$@"; rc=$?
        if [ "$rc" != 0 ] && [ -s "$NS/server.log" ]; then echo "--- $SERVER:"; tail -n 40 "$NS/server.log"; fi
        exit "$rc"' block "$@" >"$out" 2>&1
    rc=$?
    local e rest
    rest=$(cat "$out")
    while IFS= read -r e; do
        [ -n "$e" ] || continue
        if [[ "$rest" == *"$e"* ]]; then
            rest=${rest#*"$e"}
        else
            echo "expected in the output: $e" >>"$out"
            rc=1
        fi
    done < <(block_opt "$id" expect)
    if [ "$rc" = 0 ]; then
        say "readme block $where: ok"
    else
        say "readme block $where: FAILED ($*)"
        sed 's/^/    /' "$out" | tail -n 60
    fi
    return "$rc"
}

# Whether blocks can run here: their namespaces, and redis-cli for the sh blocks.
blocks_can_run() {
    command -v unshare >/dev/null && command -v ip >/dev/null &&
        unshare -r -n -p -f true 2>/dev/null
}

run_readme() {
    if ! blocks_extract; then count 0 1 0 "readme blocks (markers)"; blocks_ok=0; return; fi
    if ! blocks_can_run; then
        blocks_ok=0
        skipped=$((skipped + 1)); note "readme blocks: SKIPPED (no unshare/ip, or user namespaces not allowed)"; return
    fi
    blocks_ok=1
    if ! command -v redis-cli >/dev/null; then
        skipped=$((skipped + 1)); note "readme sh blocks: SKIPPED (redis-cli not found)"; return
    fi
    local id p=0 f=0 t0=$SECONDS
    for id in $(blocks_of sh); do
        # shellcheck disable=SC2016
        if (cd "$scratch" && PRIVATE_TMP=1 block_run "$id" bash -c 'cd /tmp && bash -eo pipefail "$BLOCK"'); then
            p=$((p + 1))
        else f=$((f + 1)); fi
    done
    count "$p" "$f" 0 "readme sh blocks ($((SECONDS - t0)) s)"
}

# Python blocks, in the venv python_readme made.
blocks_python() {
    local proj=$scratch/python-readme id p=0 f=0 t0=$SECONDS
    [ "$blocks_ok" = 1 ] || return 0
    [ -x "$proj/.venv/bin/python" ] || { count 0 1 0 "readme python blocks (no README venv)"; return 1; }
    for id in $(blocks_of python); do
        cp "$blocks/$id" "$proj/block_$id.py"
        if (cd "$proj" && block_run "$id" env -u RLOCKD_BINARY .venv/bin/python "block_$id.py"); then
            p=$((p + 1))
        else f=$((f + 1)); fi
    done
    for id in $(blocks_of pytest); do
        cp "$blocks/$id" "$proj/test_block_$id.py"
        if (cd "$proj" && block_run "$id" env -u RLOCKD_BINARY .venv/bin/pytest -p no:cacheprovider -q "test_block_$id.py"); then
            p=$((p + 1))
        else f=$((f + 1)); fi
    done
    count "$p" "$f" 0 "readme python blocks ($((SECONDS - t0)) s)"
    [ "$f" = 0 ]
}

# Node blocks, in the project node_readme installed with the README's lines.
blocks_node() {
    local proj=$scratch/node-readme id p=0 f=0 t0=$SECONDS
    [ "$blocks_ok" = 1 ] || return 0
    [ -d "$proj/node_modules/rlockd" ] || { count 0 1 0 "readme node blocks (no README project)"; return 1; }
    for id in $(blocks_of node); do
        cp "$blocks/$id" "$proj/block_$id.mjs"
        if (cd "$proj" && block_run "$id" env -u RLOCKD_BINARY node "block_$id.mjs"); then
            p=$((p + 1))
        else f=$((f + 1)); fi
    done
    for id in $(blocks_of node-test); do
        cp "$blocks/$id" "$proj/block_$id.test.mjs"
        if (cd "$proj" && block_run "$id" env -u RLOCKD_BINARY node --test --test-reporter=spec "block_$id.test.mjs"); then
            p=$((p + 1))
        else f=$((f + 1)); fi
    done
    count "$p" "$f" 0 "readme node blocks ($((SECONDS - t0)) s)"
    [ "$f" = 0 ]
}

# Go blocks, each in a module of its own with the go.mod the README's lines made (go_readme).
blocks_go() {
    local proj=$scratch/go-readme id p=0 f=0 t0=$SECONDS dir
    [ "$blocks_ok" = 1 ] || return 0
    [ -f "$proj/go.sum" ] || { count 0 1 0 "readme go blocks (no README module)"; return 1; }
    for id in $(blocks_of go-test); do
        dir=$scratch/go-block-$id
        mkdir -p "$dir" && cp "$proj/go.mod" "$proj/go.sum" "$dir/" && cp "$blocks/$id" "$dir/block_test.go"
        if (cd "$dir" && block_run "$id" env RLOCKD_BINARY="$staged" GOPROXY=off GOFLAGS=-mod=readonly go test -count=1 .); then
            p=$((p + 1))
        else f=$((f + 1)); fi
    done
    count "$p" "$f" 0 "readme go blocks ($((SECONDS - t0)) s)"
    [ "$f" = 0 ]
}

# Java blocks: one project with the README's pom (java_readme's JUnit 5.12.2 copy), one
# offline Maven run in the first block's namespaces, each block's class counted from its
# Surefire report.
blocks_java() {
    local pom=$scratch/java-readme-5.12.2/pom.xml proj=$scratch/java-blocks id p=0 f=0 t0=$SECONDS file ids=()
    [ "$blocks_ok" = 1 ] || return 0
    [ -f "$pom" ] || { count 0 1 0 "readme java blocks (no README project)"; return 1; }
    mkdir -p "$proj/src/test/java" && cp "$pom" "$proj/"
    for id in $(blocks_of java-test); do
        file=$(sed -n '1s#^// \(src/test/java/[A-Za-z0-9_/]*\.java\)$#\1#p' "$blocks/$id")
        if [ -z "$file" ]; then
            say "$(block_where "$id"): a java-test block's first line names its file (// src/test/java/X.java)"
            f=$((f + 1))
            continue
        fi
        cp "$blocks/$id" "$proj/$file"
        ids+=("$id:$(basename "$file" .java)")
    done
    if [ "${#ids[@]}" -gt 0 ]; then
        (cd "$proj" && BLOCK_LABEL="the java blocks' Maven run" block_run "${ids[0]%%:*}" env -u RLOCKD_BINARY mvn -o -q -B -Dstyle.color=never test)
        local entry report good bad
        for entry in "${ids[@]}"; do
            report=$proj/target/surefire-reports/TEST-${entry#*:}.xml
            if [ -f "$report" ] && read -r good bad _ < <(xml_counts "$report") && [ "$good" -gt 0 ] && [ "$bad" = 0 ]; then
                say "readme block $(block_where "${entry%%:*}"): ok"
                p=$((p + 1))
            else
                say "readme block $(block_where "${entry%%:*}"): FAILED (see the Maven run above)"
                f=$((f + 1))
            fi
        done
    fi
    count "$p" "$f" 0 "readme java blocks ($((SECONDS - t0)) s)"
    [ "$f" = 0 ]
}
