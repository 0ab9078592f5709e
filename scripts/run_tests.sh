#!/usr/bin/env bash
# scripts/run_tests.sh — runs every test command given as an argument (each one a shell command line), even after one
# fails, and adds up the "<suite>: N passed, M failed" lines they print into one closing "N passed, M failed" line.
# A command that exits non-zero without reporting a failure counts as one failure, so a crash cannot pass. Each
# command's wall time is printed after it, and the slowest at the end, so CI's time budget can be watched.
#   --built-not-run "PROGRAMS" --gpu 0|1   (first, both optional): the GPU programs that were built but that these
#   tests do not run; the summary names them, and says whether that is because no GPU answers.
#   --jobs N   runs up to N commands at once (default 1: one after the other, each one's output as it comes). With
#   more, each command's output is held back and printed whole when it ends (its "=== CMD" block never mixes with
#   another's), in the order they end; commands start in the order given, so the longest should come first. The suites
#   keep their files in their own temporary folders, which is what makes this safe.
#   --then CMD (after the commands, repeatable): runs once every command before it has ended, e.g. a check of what
#   they all left behind.
set -u
built_not_run=
have_gpu=
jobs=1
while [ $# -gt 0 ]; do
    case $1 in
        --built-not-run) built_not_run=$2; gpu_note=1; shift 2 ;;
        --gpu) have_gpu=$2; shift 2 ;;
        --jobs) jobs=$2; shift 2 ;;
        *) break ;;
    esac
done
case $jobs in
    '' | *[!0-9]* | 0) echo "run_tests: --jobs must be a positive whole number, not '$jobs'" >&2; exit 2 ;;
esac
# the commands in stages: --then starts a new one, which waits for every command of the stages before it
stages=()  # each a list of commands, newline-separated (a command line holds no newline)
current=
while [ $# -gt 0 ]; do
    if [ "$1" = --then ]; then
        [ $# -ge 2 ] || { echo "run_tests: --then needs a command" >&2; exit 2; }
        stages+=("$current")
        current=$2
        shift 2
    else
        current=${current:+$current$'\n'}$1
        shift
    fi
done
stages+=("$current")

total_passed=0
total_failed=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
times=$work/times
: >"$times"
start_all=$SECONDS

# count CMD LOG RC SECONDS: print how long CMD took and add its summary line (the last one in LOG) to the totals
count() {
    local cmd=$1 log=$2 rc=$3 took=$4 summary passed failed
    echo "=== $cmd took $took s"
    printf '%s\t%s\n' "$took" "$cmd" >>"$times"
    summary=$(grep -E '^[A-Za-z0-9_.-]+: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -z "$summary" ]; then
        echo "=== $cmd printed no summary line (exit code $rc): counted as 1 failed"
        total_failed=$((total_failed + 1))
        return
    fi
    passed=$(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\1/' <<<"$summary")
    failed=$(sed -E 's/.*: ([0-9]+) passed, ([0-9]+) failed.*/\2/' <<<"$summary")
    if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
        echo "=== $cmd exited with $rc but reported no failure: counted as 1 failed"
        failed=1
    fi
    total_passed=$((total_passed + passed))
    total_failed=$((total_failed + failed))
}

# one after the other: each command's output as it comes
run_serial() {
    local cmd=$1 log=$work/serial.log start rc
    echo "=== $cmd"
    start=$SECONDS
    bash -c "$cmd" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    count "$cmd" "$log" "$rc" $((SECONDS - start))
}

# several at once: a command runs in the background with its output in work/N.log, and writes its exit code and time
# to work/N.done last (so a .done file that exists is whole); finished ones are printed and counted in the order they
# end
declare -A running=() running_pid=()  # number -> command, its background process
finish_one() {  # number
    local n=$1 rc=255 took='?'
    # (no .done: the background shell itself was killed; its command counts as failed)
    [ -f "$work/$n.done" ] && read -r rc took <"$work/$n.done"
    echo "=== ${running[$n]}"
    cat "$work/$n.log"
    count "${running[$n]}" "$work/$n.log" "$rc" "$took"
    unset "running[$n]" "running_pid[$n]"
}
wait_for_one() {  # returns once at least one running command has ended and been printed
    local n ended=0
    while :; do
        for n in "${!running[@]}"; do
            # (.done looked at again after the process is seen gone: it writes .done, then ends)
            if [ -f "$work/$n.done" ] || ! kill -0 "${running_pid[$n]}" 2>/dev/null; then finish_one "$n"; ended=1; fi
        done
        [ "$ended" -eq 1 ] && return
        wait -n 2>/dev/null || sleep 0.2  # a child ended (or none is left to wait for: its .done is about to appear)
    done
}
number=0
for stage in "${stages[@]}"; do
    while IFS= read -r cmd; do
        [ -n "$cmd" ] || continue
        if [ "$jobs" -eq 1 ]; then
            run_serial "$cmd"
            continue
        fi
        while [ "${#running[@]}" -ge "$jobs" ]; do wait_for_one; done
        number=$((number + 1))
        running[$number]=$cmd
        (
            start=$SECONDS
            bash -c "$cmd" >"$work/$number.log" 2>&1 </dev/null
            rc=$?
            echo "$rc $((SECONDS - start))" >"$work/$number.tmp" && mv "$work/$number.tmp" "$work/$number.done"
        ) &
        running_pid[$number]=$!
    done <<<"$stage"
    while [ "${#running[@]}" -gt 0 ]; do wait_for_one; done
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
echo "all took $((SECONDS - start_all)) s$([ "$jobs" -gt 1 ] && echo " ($jobs at a time)")"
echo "$total_passed passed, $total_failed failed"
[ "$total_failed" -eq 0 ]
