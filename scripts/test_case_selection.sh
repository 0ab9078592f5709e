#!/usr/bin/env bash
# scripts/test_case_selection.sh — tests llmc/testing.h's case selection through ./test_gpt_fp8_cpu (20 cases): NAME...
# runs only the cases whose names contain one of them, --skip NAME leaves those out (both together too), the summary
# counts only the cases that ran and says how many were not selected; a NAME that matches nothing fails the run (a
# typo cannot pass); an unknown option or --skip without a name exits 2 with one line, and so does ./test_gpt_fp8
# (the GPU test, whose sanitizer runs use --skip) before it looks for a GPU, when it is built.
# Prints "case-selection: N passed, M failed" last.
set -u
cd "$(dirname "$0")/.." || exit 1
. scripts/test_lib.sh
tmp=$TMP
program=./test_gpt_fp8_cpu
if [ ! -x "$program" ]; then
    fail built "$program is not built (make test_gpt_fp8_cpu)"
    finish case-selection
fi

# expect_run NAME WANT_RC WANT_SUMMARY WANT_NOT_SELECTED ARGS...: the exit status, the summary line, the "(N test cases
# not selected)" line (0: none printed), and PASS lines only for cases whose names hold a selected NAME
expect_run() {
    local name=$1 want_rc=$2 want_summary=$3 want_not_selected=$4
    shift 4
    "$program" "$@" >"$tmp/out" 2>&1
    local rc=$? not_selected
    not_selected=$(sed -nE 's/^\(([0-9]+) test cases not selected\)$/\1/p' "$tmp/out")
    if [ "$rc" -eq "$want_rc" ] && [ "$(tail -n 1 "$tmp/out")" = "$want_summary" ] &&
        [ "${not_selected:-0}" -eq "$want_not_selected" ]; then
        pass "$name"
    else
        fail "$name" "rc $rc: $(tail -n 3 "$tmp/out" | paste -sd '|' -)"
    fi
}
expect_run all 0 "gpt-cpu: 20 passed, 0 failed" 0
# test_bf16_storage_and_modes_differ, test_layers_read_bf16_parameters, test_gelu_bit_identical_to_naive_loop,
# test_gelu_derivative_accuracy
expect_run only_names 0 "gpt-cpu: 4 passed, 0 failed" 16 bf16 gelu
if [ "$(grep -c '^PASS ' "$tmp/out")" -eq 4 ] && ! grep -E '^PASS ' "$tmp/out" | grep -vqE 'bf16|gelu'; then
    pass only_names_ran_those
else
    fail only_names_ran_those "$(grep '^PASS ' "$tmp/out" | paste -sd ' ' -)"
fi
# the 6 cases with fp8 in their names, and test_box_rows_fit
expect_run skip_names 0 "gpt-cpu: 13 passed, 0 failed" 7 --skip fp8 --skip box
if ! grep -E '^PASS ' "$tmp/out" | grep -qE 'fp8|box'; then pass skipped_did_not_run; else fail skipped_did_not_run "$(cat "$tmp/out")"; fi
# names and --skip together: the bf16 cases but not the parameters one
expect_run only_and_skip 0 "gpt-cpu: 1 passed, 0 failed" 19 bf16 --skip parameters
expect_run typo_fails 1 "gpt-cpu: 0 passed, 1 failed" 20 bf61
if grep -qxF "FAIL selection: no test case of gpt-cpu matches 'bf61'" "$tmp/out"; then pass typo_named; else fail typo_named "$(cat "$tmp/out")"; fi
expect_run skip_typo_fails 1 "gpt-cpu: 20 passed, 1 failed" 0 --skip nothing_is_called_this

# expect_usage_error NAME PROGRAM ARGS...: exit 2, one line on stderr, nothing run
expect_usage_error() {
    local name=$1 prog=$2
    shift 2
    "$prog" "$@" >"$tmp/out" 2>"$tmp/err"
    local rc=$?
    if [ "$rc" -eq 2 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "^error: " "$tmp/err"; then
        pass "$name"
    else
        fail "$name" "rc $rc: $(cat "$tmp/out" "$tmp/err")"
    fi
}
expect_usage_error unknown_option "$program" --bogus
expect_usage_error skip_without_name "$program" bf16 --skip
if [ -x ./test_gpt_fp8 ]; then
    expect_usage_error gpu_test_unknown_option ./test_gpt_fp8 --skp medium
fi
finish case-selection
