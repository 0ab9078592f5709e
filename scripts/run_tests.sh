#!/usr/bin/env bash
# scripts/run_tests.sh — runs every test command given as an argument (each one a shell command line), even after one
# fails, and adds up the "<suite>: N passed, M failed" lines they print into one closing "N passed, M failed" line.
# A command that exits non-zero without reporting a failure counts as one failure, so a crash cannot pass.
set -u
total_passed=0
total_failed=0
for cmd in "$@"; do
    echo "=== $cmd"
    log=$(mktemp)
    bash -c "$cmd" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
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
echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
