#!/usr/bin/env bash
# scripts/run_tests.sh — runs every test command given as an argument (each one a shell command line), even after one
# fails, and adds up the "<suite>: N passed, M failed" lines they print into one closing "N passed, M failed" line.
# A command that exits non-zero without reporting a failure counts as one failure, so a crash cannot pass. Each
# command's wall time is printed after it, and the slowest at the end, so CI's time budget can be watched.
#   --built-not-run "PROGRAMS" --gpu 0|1   (first, both optional): the GPU programs that were built but that these
#   tests do not run; the summary names them, and says whether that is because no GPU answers.
set -u
built_not_run=
have_gpu=
while [ $# -gt 0 ]; do
    case $1 in
        --built-not-run) built_not_run=$2; gpu_note=1; shift 2 ;;
        --gpu) have_gpu=$2; shift 2 ;;
        *) break ;;
    esac
done
total_passed=0
total_failed=0
times=$(mktemp)
start_all=$SECONDS
for cmd in "$@"; do
    echo "=== $cmd"
    log=$(mktemp)
    start=$SECONDS
    bash -c "$cmd" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    echo "=== $cmd took $((SECONDS - start)) s"
    printf '%s\t%s\n' "$((SECONDS - start))" "$cmd" >>"$times"
    summary=$(grep -E '^[A-Za-z0-9_.-]+: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    rm -f "$log"
    if [ -z "$summary" ]; then
        echo "=== $cmd printed no summary line (exit code $rc): counted as 1 failed"
        total_failed=$((total_failed + 1))
        continue
    fi
    passed=$(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\1/' <<<"$summary")
    failed=$(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\2/' <<<"$summary")
    if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
        echo "=== $cmd exited with $rc but reported no failure: counted as 1 failed"
        failed=1
    fi
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
done
if [ -n "${gpu_note:-}" ]; then
    programs=$(echo $built_not_run)  # one line, single spaces
    if [ -z "$programs" ]; then
        echo "GPU programs: none built (nvcc not found)"
    elif [ "$have_gpu" = 1 ]; then
        echo "GPU programs built but not run by these tests: $programs (scripts/gpu_check.sh runs them)"
    else
        echo "GPU programs built but not run on a GPU (none answers here): $programs"
    fi
fi
echo "slowest: $(sort -rn "$times" | head -n 5 | awk -F '\t' '{ printf "%s%s (%d s)", (NR > 1 ? ", " : ""), $2, $1 }')"
echo "all took $((SECONDS - start_all)) s"
rm -f "$times"
echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
