#!/usr/bin/env bash
# dev/bench_cpu.sh — how fast the CPU reference trainer (train_gpt_fp8_cpu) trains, per precision, and, given an
# llm.c checkout, how that compares with llm.c's CPU trainer (train_gpt2.c, fp32) on the same model file and data.
#
#   dev/bench_cpu.sh [-n steps] [-t threads] [-shapes "small d12"] [-precs "fp32 bf16 fp8"] [-cpu] [-load N]
#                    [-r rounds] [-bin trainer] [path/to/llm.c]
#
#   -n       steps per run (default 6); the first is dropped (warm-up), the mean of the others printed
#   -t       OpenMP threads for both programs (default 2)
#   -shapes  small = L 6, C 384, NH 6; d12 = L 12, C 768, NH 12 (GPT-2 small's blocks); both B 4, T 64 (what llm.c's
#            train_gpt2 hard-codes) and our tokenizer's vocabulary, V 1024 (default: both shapes)
#   -cpu     report CPU time per step (user + system of the process, read from /proc when step 1 and step n are
#            printed) instead of each program's own wall-clock step time: on a machine others are using, CPU time
#            moves far less than wall time (use it with -t 1: with more threads it counts their spin-waiting too)
#   -load    run N competing OpenMP programs (dev/omp_load.c: short parallel loops back to back, as a second training
#            run has, each with the -t threads and libgomp's default wait policy) for the whole benchmark: the machine
#            a shared box is (default 0: none)
#   -r       rounds (default 1): every round times llm.c, then ours in each precision, so the programs alternate and a
#            spell of someone else's load falls on both; one table row per round
#   -bin     the trainer timed as "ours" (default ./train_gpt_fp8_cpu, built here): an older build, or a script that
#            sets an environment and execs one, to compare
#
# For each shape a model file is written once by our trainer (one fp32 step, llm.c's file format), then every run
# starts from it: ours with -e for fp32, bf16 and fp8, and llm.c's train_gpt2, built by llm.c's own Makefile (its
# flags: -Ofast -march=native -fopenmp) in a temporary copy, run in a temporary folder where the paths it hard-codes
# (gpt2_124M.bin, dev/data/tinyshakespeare/*.bin) are links to that model file and to our shards. llm.c shuffles its
# batches, so the tokens differ; the shapes and the arithmetic do not. llm.c's train_gpt2 would go on to 40 steps and
# sample; it is stopped once it has printed enough steps. Nothing here checks a time: it prints numbers, and the ratio
# ours / llm.c (RESULTS.md records them).
set -euo pipefail
cd "$(dirname "$0")/.."

STEPS=6
THREADS=2
SHAPES="small d12"
PRECS="fp32 bf16 fp8"
CPU_TIME=0
LOAD=0
ROUNDS=1
OURS=./train_gpt_fp8_cpu
LLMC=""
while [ $# -gt 0 ]; do
    case "$1" in
        -n) STEPS=${2:-}; shift 2 ;;
        -t) THREADS=${2:-}; shift 2 ;;
        -shapes) SHAPES=${2:-}; shift 2 ;;
        -precs) PRECS=${2:-}; shift 2 ;;
        -cpu) CPU_TIME=1; shift ;;
        -load) LOAD=${2:-}; shift 2 ;;
        -r) ROUNDS=${2:-}; shift 2 ;;
        -bin) OURS=${2:-}; shift 2 ;;
        -h | --help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "bench_cpu: unknown option $1 (-h for help)" >&2; exit 1 ;;
        *) LLMC=$1; shift ;;
    esac
done
case "$STEPS" in '' | *[!0-9]*) echo "bench_cpu: -n wants a number of steps, got '$STEPS'" >&2; exit 1 ;; esac
[ "$STEPS" -ge 2 ] || { echo "bench_cpu: -n wants at least 2 steps (the first is dropped), got $STEPS" >&2; exit 1; }
case "$THREADS" in '' | *[!0-9]* | 0) echo "bench_cpu: -t wants a thread count >= 1, got '$THREADS'" >&2; exit 1 ;; esac
case "$LOAD" in '' | *[!0-9]*) echo "bench_cpu: -load wants a number of programs >= 0, got '$LOAD'" >&2; exit 1 ;; esac
case "$ROUNDS" in '' | *[!0-9]* | 0) echo "bench_cpu: -r wants a number of rounds >= 1, got '$ROUNDS'" >&2; exit 1 ;; esac
if [ "$OURS" != ./train_gpt_fp8_cpu ] && [ ! -x "$OURS" ]; then
    echo "bench_cpu: -bin $OURS is not an executable file" >&2
    exit 1
fi
for p in $PRECS; do
    case "$p" in fp32 | bf16 | fp8) ;; *) echo "bench_cpu: unknown precision '$p' (fp32, bf16, fp8)" >&2; exit 1 ;; esac
done
if [ -n "$LLMC" ] && [ ! -f "$LLMC/train_gpt2.c" ]; then
    echo "bench_cpu: $LLMC is not an llm.c checkout (no train_gpt2.c there)" >&2
    exit 1
fi

DATA=data/tinyshakespeare
make -s train_gpt_fp8_cpu >/dev/null
if [ ! -f "$DATA/tiny_shakespeare_train.bin" ]; then ./dev/data/prepare_tinyshakespeare.sh >/dev/null; fi
TRAIN="$PWD/$DATA/tiny_shakespeare_train.bin"
VAL="$PWD/$DATA/tiny_shakespeare_val.bin"
TMP=$(mktemp -d)
LOAD_PIDS=""
# the competing programs stop with the benchmark, however it ends (each also stops by itself after an hour)
stop_load() {
    local pid
    for pid in $LOAD_PIDS; do kill "$pid" 2>/dev/null || true; done
    for pid in $LOAD_PIDS; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$TMP"
}
trap stop_load EXIT
export OMP_NUM_THREADS=$THREADS
TICKS=$(getconf CLK_TCK)

# CPU seconds (user + system) of a running process
cpu_seconds() { awk -v t="$TICKS" '{ print ($14 + $15) / t }' "/proc/$1/stat"; }

# measure REGEX SED command...: run the command until it has printed STEPS lines matching REGEX (its step lines), then
# stop it, and print its mean ms per step over steps 2..STEPS: the wall-clock times the program printed (SED turns a
# step line into its ms), or with -cpu the CPU time it used between its first and its last counted step line.
measure() {
    local regex=$1 to_ms=$2 out="$TMP/measure.out" pid lines cpu_first="" cpu_last=""
    shift 2
    : >"$out"
    "$@" >"$out" 2>&1 &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        lines=$(grep -cE "$regex" "$out" || true)
        if [ "$lines" -ge 1 ] && [ -z "$cpu_first" ]; then cpu_first=$(cpu_seconds "$pid"); fi
        if [ "$lines" -ge "$STEPS" ]; then
            cpu_last=$(cpu_seconds "$pid")
            kill "$pid" 2>/dev/null || true
            break
        fi
        sleep 0.02
    done
    wait "$pid" 2>/dev/null || true
    if [ -z "$cpu_last" ]; then
        echo "bench_cpu: '$*' stopped before $STEPS steps: $(tail -n 2 "$out" | tr '\n' ' ')" >&2
        echo "n/a"
    elif [ "$CPU_TIME" -eq 1 ]; then
        awk -v a="$cpu_first" -v b="$cpu_last" -v n="$STEPS" 'BEGIN { printf "%.1f", (b - a) * 1000 / (n - 1) }'
    else
        grep -E "$regex" "$out" | head -n "$STEPS" | sed -nE "$to_ms" |
            awk 'NR > 1 { s += $1; n++ } END { printf "%.1f", s / n }'
    fi
}

if [ -n "$LLMC" ]; then
    mkdir -p "$TMP/llmc"
    cp -r "$LLMC/Makefile" "$LLMC/train_gpt2.c" "$LLMC/llmc" "$TMP/llmc/"
    make -C "$TMP/llmc" train_gpt2 >"$TMP/llmc_build.log" 2>&1 || { cat "$TMP/llmc_build.log" >&2; exit 1; }
    echo "llm.c $(git -C "$LLMC" rev-parse --short HEAD 2>/dev/null || echo "(not a git checkout)"): $(grep -E 'train_gpt2\.c' "$TMP/llmc_build.log" | head -n 1)"
fi
if [ "$LOAD" -gt 0 ]; then
    cc -O2 -std=c11 -Wall -Wextra -Werror -fopenmp dev/omp_load.c -o "$TMP/omp_load"
    for _ in $(seq "$LOAD"); do
        # a fixed load: libgomp's default wait policy whatever this shell's environment says
        env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$TMP/omp_load" 3600 &
        LOAD_PIDS="$LOAD_PIDS $!"
    done
fi
echo "ours $([ "$OURS" = ./train_gpt_fp8_cpu ] || echo "-bin $OURS, this tree ")$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)'): $(grep -m 1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(getconf _NPROCESSORS_ONLN) cores, load average $(cut -d ' ' -f 1-3 /proc/loadavg)"
echo "load: $([ "$LOAD" -gt 0 ] && echo "$LOAD competing OpenMP programs (dev/omp_load.c, $THREADS threads each, parallel loops of 65536 floats back to back)" || echo "none started here")"
echo "OMP_WAIT_POLICY of both programs: ${OMP_WAIT_POLICY:-unset (the libgomp default: spin a while, then sleep)}"
echo "$THREADS threads, mean of steps 2..$STEPS, $([ "$CPU_TIME" -eq 1 ] && echo "CPU time per step" || echo "wall clock per step, as each program prints it")"
printf "%-6s %-5s %5s %12s %12s %8s\n" shape prec round "ours ms" "llm.c ms" ratio

for shape in $SHAPES; do
    case "$shape" in
        small) SIZE="-L 6 -C 384 -NH 6" ;;
        d12) SIZE="-L 12 -C 768 -NH 12" ;;
        *) echo "bench_cpu: unknown shape '$shape' (small, d12)" >&2; exit 1 ;;
    esac
    "$OURS" -i "$TRAIN" -j "$VAL" $SIZE -b 4 -t 64 -x 1 -v 0 -s 0 -precision fp32 \
        -o "$TMP/model_$shape" >"$TMP/model_$shape.out" 2>&1 || { cat "$TMP/model_$shape.out" >&2; exit 1; }
    MODEL="$TMP/model_$shape/model_00000001.bin"

    run="$TMP/llmc_run_$shape"
    if [ -n "$LLMC" ]; then
        mkdir -p "$run/dev/data/tinyshakespeare"
        ln -s "$MODEL" "$run/gpt2_124M.bin"
        ln -s "$TRAIN" "$run/dev/data/tinyshakespeare/tiny_shakespeare_train.bin"
        ln -s "$VAL" "$run/dev/data/tinyshakespeare/tiny_shakespeare_val.bin"
    fi
    for round in $(seq "$ROUNDS"); do
        llmc_ms=""
        if [ -n "$LLMC" ]; then
            # stdbuf: llm.c's stdout is a file here, line-buffered so its step lines show as they happen
            llmc_ms=$(cd "$run" && measure '^step [0-9]+: train loss .* \(took [0-9.]+ ms\)' 's/.*\(took ([0-9.]+) ms\).*/\1/p' \
                stdbuf -oL "$TMP/llmc/train_gpt2")
        fi
        for p in $PRECS; do
            ours_ms=$(measure '^step +[0-9]+/[0-9]+ \|' 's/.*\| ([0-9.]+) ms \|.*/\1/p' \
                "$OURS" -i "$TRAIN" -j "$VAL" -e "$MODEL" -b 4 -t 64 -x $((STEPS + 100)) -v 0 -s 0 -precision "$p")
            ratio=$(awk -v a="$ours_ms" -v b="${llmc_ms:-0}" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else printf "-" }')
            printf "%-6s %-5s %5s %12s %12s %8s\n" "$shape" "$p" "$round" "$ours_ms" "${llmc_ms:--}" "$ratio"
        done
    done
done
