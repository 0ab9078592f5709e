#!/usr/bin/env bash
# scripts/check_sanitizer_reports.sh DIR — the last test line of `make test SANITIZE=1`: the sanitizers wrote their
# reports (AddressSanitizer, LeakSanitizer, UndefinedBehaviorSanitizer) into DIR instead of stderr, so that a report
# from a run the tests expected to fail is not lost among its error lines. Passes when DIR holds none; otherwise prints
# the start of each and fails. Prints "sanitizers: N passed, M failed".
set -u
dir=${1:?usage: scripts/check_sanitizer_reports.sh DIR}
. "$(dirname "$0")/test_lib.sh"
# A file without an error is a note, not a report: LeakSanitizer in a child forked from a process with OpenMP
# threads (test_data_parallel's death tests) writes "Running thread N was not suspended. False leaks are possible." and
# then finds none; a leak it did find would follow as an ERROR.
reports=$(grep -l -E 'ERROR|runtime error' -r "$dir" 2>/dev/null | sort)
notes=$(grep -L -E 'ERROR|runtime error' -r "$dir" 2>/dev/null | wc -l)
if [ ! -d "$dir" ]; then
    fail no_reports "$dir does not exist (was the suite run with SANITIZE=1?)"
elif [ -z "$reports" ]; then
    pass "no_reports (address, leak, undefined behaviour; $notes notes without an error)"
else
    for report in $reports; do
        fail "report_$(basename "$report")" "$(grep -m 1 -E 'ERROR|runtime error' "$report")"
        head -n 25 "$report"
    done
fi
finish sanitizers
