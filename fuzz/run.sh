#!/usr/bin/env bash
# Runs fuzz targets from the committed seeds (fuzz/corpus/<target>) for a fixed
# time each, with a pinned seed, and prints libFuzzer's closing figures; on a
# finding it prints the panic and the saved input, and exits non-zero.
#
#   fuzz/run.sh SECONDS [TARGET...]     default targets: all six
#
# CI runs it for 45 s per target; FUZZING.md records longer runs made with it.
# The memory limit is raised from libFuzzer's 2 GiB: diff keeps two servers,
# and a BITFIELD at bit 2^31 makes a 256 MiB string in each (ASan doubles it).
# `diff` compares with the redis-server on PATH (or the one REDIS_SERVER names).
# Targets named in FUZZ_REPLAY_ONLY (space-separated) only replay their seeds
# (-runs=0): a target still finding differences every few minutes is a
# regression check in CI while its exploratory runs are made by hand.
set -uo pipefail
cd "$(dirname "$0")"
secs="${1:-60}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(parser dispatch lua lua_grammar diff diff_redis82)
fi
status=0
for t in "${targets[@]}"; do
    echo "fuzz: $t for ${secs}s"
    work="$(mktemp -d)"
    log="$(mktemp)"
    cp -r "corpus/$t/." "$work/"
    start=$(date +%s)
    budget=(-max_total_time="$secs")
    case " ${FUZZ_REPLAY_ONLY:-} " in
        *" $t "*) budget=(-runs=0); echo "fuzz: $t replays its seeds only (FUZZ_REPLAY_ONLY)" ;;
    esac
    if RUSTC_BOOTSTRAP=1 cargo fuzz run "$t" "$work" -- \
        "${budget[@]}" -seed=1 -timeout=60 -rss_limit_mb=6144 -print_final_stats=1 >"$log" 2>&1; then
        grep -E "DONE|^Done|stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb)" "$log"
        echo "fuzz: $t clean after $(( $(date +%s) - start ))s (corpus $(ls "$work" | wc -l) inputs)"
    else
        status=1
        echo "fuzz: $t FAILED"
        # The whole panic message (a diff difference lists every command),
        # then where libFuzzer saved the input.
        sed -n '/panicked at/,/stack backtrace/p' "$log" | head -n 120
        grep -E "ERROR: libFuzzer|SUMMARY|Test unit written" "$log" | head -n 5
    fi
    rm -rf "$work" "$log"
done
exit $status
