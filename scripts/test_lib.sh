# scripts/test_lib.sh — sourced by the shell tests: PASS/FAIL lines, a temporary folder removed on exit, and the
# closing "<suite>: N passed, M failed" line that scripts/run_tests.sh adds up.
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
# finish SUITE: print the summary and exit non-zero if anything failed
finish() {
    echo "$1: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
