#!/usr/bin/env bash
# scripts/test_run_tests.sh — tests of scripts/run_tests.sh, the runner `make test` hands every suite to: the totals
# added up one after the other and several at once (a crash, or a non-zero exit without a failure, counted as one);
# with --jobs N, commands really overlap but never more than N, each one's output stays one block; --then waits for
# every command before it; a background shell killed from inside counts as a failure instead of hanging the run; a bad
# --jobs is refused. Prints "run-tests: N passed, M failed" last.
set -u
cd "$(dirname "$0")/.."
. scripts/test_lib.sh
runner=$PWD/scripts/run_tests.sh

# fake suites: each prints its summary line; `suite NAME PASSED FAILED [RC]`
cat >"$TMP/suite" <<'EOF'
#!/usr/bin/env bash
echo "PASS something in $1"
echo "$1: $2 passed, $3 failed"
exit "${4:-$([ "$3" -eq 0 ] && echo 0 || echo 1)}"
EOF
chmod +x "$TMP/suite"
suite=$TMP/suite

for jobs in 1 3; do
    out=$(timeout 60 "$runner" --jobs "$jobs" "$suite a 3 0" "$suite b 2 1" "echo crashed; exit 3" "$suite c 4 0 1" \
        "$suite d 1 0" 2>&1)
    rc=$?
    # a 3 + b 2 + c 4 + d 1 passed; b's 1, the crash's 1 and c's exit 1 without a failure: 3 failed
    if [ "$rc" -eq 1 ] && [ "$(printf '%s\n' "$out" | tail -n 1)" = "10 passed, 3 failed" ] &&
        printf '%s' "$out" | grep -q "^=== echo crashed; exit 3 printed no summary line (exit code 3): counted as 1" &&
        printf '%s' "$out" | grep -q "^=== $suite c 4 0 1 exited with 1 but reported no failure: counted as 1"; then
        pass "totals_jobs_$jobs"
    else
        fail "totals_jobs_$jobs" "rc $rc: $(printf '%s\n' "$out" | tail -n 3 | tr '\n' '|')"
    fi
done
out=$(timeout 60 "$runner" --jobs 2 "$suite a 3 0" "$suite b 2 0" 2>&1)
if [ $? -eq 0 ] && [ "$(printf '%s\n' "$out" | tail -n 1)" = "5 passed, 0 failed" ] &&
    printf '%s' "$out" | grep -q "^all took [0-9]* s (2 at a time)$"; then
    pass all_passed_exit_0
else
    fail all_passed_exit_0 "$(printf '%s\n' "$out" | tail -n 2 | tr '\n' '|')"
fi

# overlap: two suites that each wait (up to 20 s) for the other to have started pass only when both run at once (then
# each sees the other running); a third may start only once one of them has ended (at most 2 at a time: no suite ever
# sees 2 others running), and each suite's lines come out as one block between its "=== CMD" and "=== CMD took" even
# though they were written interleaved
mkdir -p "$TMP/meet"
cat >"$TMP/meeting" <<'EOF'
#!/usr/bin/env bash
name=$1 other=$2 dir=$3
touch "$dir/started.$name"
running=$(ls "$dir" | grep -c '^running\.')
touch "$dir/running.$name"
echo "$running" >"$dir/others_running.$name"
for i in 1 2 3; do echo "$name line $i"; sleep 0.1; done
met=no
if [ "$other" != - ]; then
    for _ in $(seq 200); do [ -e "$dir/started.$other" ] && { met=yes; break; }; sleep 0.1; done
else
    met=yes
fi
ls "$dir" | grep -c '^running\.' | awk '{ print $1 - 1 }' >>"$dir/others_running.$name"  # (itself not counted)
sleep 0.3
rm -f "$dir/running.$name"
echo "$name: $([ "$met" = yes ] && echo 1 || echo 0) passed, $([ "$met" = yes ] && echo 0 || echo 1) failed"
EOF
chmod +x "$TMP/meeting"
meeting=$TMP/meeting
out=$(timeout 60 "$runner" --jobs 2 "$meeting x y $TMP/meet" "$meeting y x $TMP/meet" "$meeting z - $TMP/meet" 2>&1)
rc=$?
blocks_whole=$(printf '%s\n' "$out" | awk '
    /^=== .* took [0-9?]+ s$/ { if (inside == "") bad++; inside = ""; next }
    /^=== / { if (inside != "") bad++; inside = $3; next }
    / line [0-9]$/ { if ($1 != inside) bad++ }
    END { print bad ? "no" : "yes" }')
max_others=$(cat "$TMP/meet"/others_running.* 2>/dev/null | sort -n | tail -n 1)
if [ "$rc" -eq 0 ] && [ "$(printf '%s\n' "$out" | tail -n 1)" = "3 passed, 0 failed" ] && [ "$blocks_whole" = yes ] &&
    [ "$max_others" = 1 ]; then
    pass "jobs_overlap_at_most_n_blocks_whole"
else
    last=$(printf '%s\n' "$out" | tail -n 2 | tr '\n' '|')
    fail "jobs_overlap_at_most_n_blocks_whole" "rc $rc, blocks whole: $blocks_whole, most others: $max_others; $last"
fi
# one at a time (the default): the second starts after the first has ended, so neither sees the other running
rm -rf "$TMP/meet" && mkdir -p "$TMP/meet"
out=$(timeout 60 "$runner" "$meeting p - $TMP/meet" "$meeting q - $TMP/meet" 2>&1)
if [ $? -eq 0 ] && [ "$(cat "$TMP/meet"/others_running.* | sort -u)" = 0 ]; then
    pass serial_one_at_a_time
else
    fail serial_one_at_a_time "$(cat "$TMP/meet"/others_running.* 2>/dev/null | tr '\n' ' ')"
fi

# --then: the check runs after every command before it has ended (each leaves a file after a pause), alone
mkdir -p "$TMP/then"
slow_leaver() { printf '%s' "sleep $2; touch $TMP/then/$1; echo $1: 1 passed, 0 failed"; }
check_after="n=\$(ls $TMP/then | wc -l); echo after: \$([ \$n -eq 3 ] && echo 1 passed, 0 || echo 0 passed, 1) failed"
out=$(timeout 60 "$runner" --jobs 3 "$(slow_leaver a 0.6)" "$(slow_leaver b 0.2)" "$(slow_leaver c 0.4)" \
    --then "$check_after" 2>&1)
if [ $? -eq 0 ] && [ "$(printf '%s\n' "$out" | tail -n 1)" = "4 passed, 0 failed" ] &&
    [ "$(printf '%s\n' "$out" | grep '^=== ' | grep -v ' took ' | tail -n 1)" = "=== $check_after" ]; then
    pass then_runs_after_all
else
    fail then_runs_after_all "$(printf '%s\n' "$out" | tail -n 4 | tr '\n' '|')"
fi

# a command that kills the background shell it runs in: counted as failed, the run still ends
out=$(timeout 60 "$runner" --jobs 2 "$suite a 1 0" 'kill -9 $PPID' 2>&1)
rc=$?
if [ "$rc" -eq 1 ] && [ "$(printf '%s\n' "$out" | tail -n 1)" = "1 passed, 1 failed" ] &&
    printf '%s' "$out" | grep -q '^=== kill -9 \$PPID printed no summary line (exit code 255)'; then
    pass killed_background_shell_counted
else
    fail killed_background_shell_counted "rc $rc (124: hung): $(printf '%s\n' "$out" | tail -n 2 | tr '\n' '|')"
fi

for bad in 0 x -1 ""; do
    out=$("$runner" --jobs "$bad" "$suite a 1 0" 2>&1)
    rc=$?
    if [ "$rc" -eq 2 ] && [ "$out" = "run_tests: --jobs must be a positive whole number, not '$bad'" ]; then
        pass "bad_jobs_refused_${bad:-empty}"
    else
        fail "bad_jobs_refused_${bad:-empty}" "rc $rc: $out"
    fi
done
finish run-tests
