#!/usr/bin/env bash
# fuzz/run_fuzz.sh SECONDS [READER...] — runs the libFuzzer harness of each reader (shard, model, state, tokenizer,
# manifest, run_data by default) for SECONDS, all at once, starting from its seed corpus fuzz/corpus/<reader>/ (every seed runs
# first, so a crash reproducer kept there fails at once). New inputs go to fuzz/work/<reader>/ (not in git), never into
# the seed corpus; a crash leaves its input there as crash-* and counts as a failure. `make fuzz` runs it for
# FUZZ_SECONDS, the test command for FUZZ_SMOKE_SECONDS. Prints PASS/FAIL per reader and "fuzz: N passed, M failed"
# last.
set -u
cd "$(dirname "$0")/.."
. scripts/test_lib.sh
seconds=${1:?usage: fuzz/run_fuzz.sh SECONDS [READER...]}
shift
readers=${*:-shard model state tokenizer manifest run_data}
pids=""
for r in $readers; do
    if [ ! -x "fuzz/fuzz_$r" ]; then
        fail "fuzz_$r" "fuzz/fuzz_$r not built: it needs clang with libFuzzer (apt-get install clang; make fuzz/fuzz_$r)"
        continue
    fi
    mkdir -p "fuzz/work/$r"
    rm -f "fuzz/work/$r"/crash-* "fuzz/work/$r"/leak-* "fuzz/work/$r"/timeout-* "fuzz/work/$r"/oom-*
    # -rss_limit_mb: the readers must refuse sizes the file cannot hold before allocating for them
    "fuzz/fuzz_$r" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -print_final_stats=1 \
        -artifact_prefix="fuzz/work/$r/" "fuzz/work/$r" "fuzz/corpus/$r" >"$TMP/$r.log" 2>&1 &
    pids="$pids $!:$r"
done
for entry in $pids; do
    pid=${entry%%:*}
    r=${entry#*:}
    wait "$pid"
    rc=$?
    runs=$(grep -m 1 -E '^stat::number_of_executed_units' "$TMP/$r.log" | awk '{ print $2 }')
    if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
        pass "fuzz_$r ($runs inputs in ${seconds} s)"
    else
        fail "fuzz_$r" "rc $rc, $(ls "fuzz/work/$r" | grep -E '^(crash|leak|timeout|oom)-' | head -n 3 | tr '\n' ' ')"
        grep -E 'ERROR|runtime error|SUMMARY|#[0-9]+ 0x' "$TMP/$r.log" | head -n 12
    fi
done
finish fuzz
