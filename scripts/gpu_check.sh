#!/usr/bin/env bash
# scripts/gpu_check.sh [--append-results] LOGDIR [-- extra trainer flags] — everything a GPU machine should check, in
# one command that needs nothing but the CUDA toolkit (the Makefile finds cuDNN and NCCL itself):
#
#   gpu            nvidia-smi: GPU name, driver
#   build          make info; make -j all
#   fp8_quantize, fp8_update, fp8_gemm, attention_cudnn   the dev/cuda checks (CPU reference vs GPU, then timings;
#                  attention_cudnn: cuDNN's flash attention against the CPU and the plain attention, built with cuDNN)
#   quantize_bandwidth                   no run of its own: fp8_quantize's cast bandwidth vs a device-to-device copy
#   test_gpt_fp8   the CUDA trainer against the CPU reference
#   data           make data (tinyshakespeare into data/tinyshakespeare/; INPUT=path/input.txt to use a local copy)
#   train_bf16, train_fp8, plot   d12 on tinyshakespeare, same seed, TRAIN_STEPS steps (as scripts/compare_bf16_fp8.sh
#                  runs them, at B 8), and the PNG of both curves (LOGDIR/bf16_vs_fp8.png)
#   bench_<depth>_<precision>     d12, d24, d48 in BF16 and FP8, BENCH_STEPS steps each: mean ms and tok/s of the steps
#                  after the first 5, MFU and peak memory when the trainer prints them (else n/a)
#   fit_d48        the trainer's memory estimate (-estimate 1): the largest micro-batch of d48 at T 1024 that fits this
#                  GPU in BF16 and in FP8; bench_d48_* run the smaller of the two, with gradient accumulation to
#                  D48_TOTAL_TOKENS (default 32768) tokens per step in both
#   nccl_plain, nccl_1rank   20 FP8 steps of d12 without and with a 1-rank NCCL communicator: bit-identical logs
#   nccl_<N>ranks  with N >= 2 GPUs: N ranks (scripts/run_gpt_fp8_1node.sh) at the same global batch as one rank
#   gemm_shapes    ./dev/cuda/gemm_shapes -e d12: BF16 vs FP8 TFLOP/s of every GEMM of a step
#   memcheck, racecheck   compute-sanitizer on ./test_gpt_fp8, last: they are the slowest and least predictable, so
#                  the time budget cuts them rather than the numbers above
#
# Every step's full output goes to LOGDIR/<step>.log (its first line is the command); a failing step is recorded and
# the next one runs. Every step has a timeout, and the whole run a budget (GPU_CHECK_BUDGET seconds, default 540, so
# it ends within 9 minutes on an H100): a step gets at most what is left, and one that cannot start in time is SKIPPED.
# Last it prints one table (step | result | key number) under a header (date, GPU, driver, commit, command line), and
# saves both to LOGDIR/summary.txt; --append-results also appends them to RESULTS.md. Exit status: 0 when no step
# FAILED or timed out, 1 otherwise (and 1 at once, before building anything, when no GPU answers), 2 on bad arguments.
# Environment: GPU_CHECK_BUDGET, TRAIN_STEPS (200), BENCH_STEPS (30), BENCH_B (8), INPUT, GPU_CHECK_RESULTS (the file
# --append-results appends to, default RESULTS.md in the repository root).
#
# Sourcing this file (as scripts/test_gpu_check.sh does) defines the log parsers below and runs nothing.
set -u

GPU_CHECK_USAGE="usage: scripts/gpu_check.sh [--append-results] LOGDIR [-- extra trainer flags]"

# ---------------------------------------------------------------------------------------------------------------------
# log parsers (no GPU needed; tested by scripts/test_gpu_check.sh)

# progress_stats LOG SKIP: "mean_ms mean_tok_s steps" over the trainer's progress lines
#   step    7/30 | loss 5.123456 | norm 1.2345 | lr 3.00e-04 | 101.23 ms | 80925 tok/s | ETA 0m02s
# after the first SKIP of them, or "n/a n/a 0" when there are none.
progress_stats() {
    awk -v skip="$2" '
        /^step +[0-9]+\/[0-9]+ \|/ {
            if (++seen <= skip) { next }
            ms = ""; tok = ""
            n = split($0, field, "|")
            for (i = 1; i <= n; i++) {
                if (field[i] ~ /^ *[0-9.]+ ms *$/) { ms = field[i] + 0 }
                else if (field[i] ~ /^ *[0-9.]+ tok\/s *$/) { tok = field[i] + 0 }
            }
            if (ms != "" && tok != "") { sum_ms += ms; sum_tok += tok; count++ }
        }
        END { if (count) { printf "%.2f %.0f %d\n", sum_ms / count, sum_tok / count, count } else { print "n/a n/a 0" } }
    ' "$1" 2>/dev/null || echo "n/a n/a 0"
}

# mfu_mean LOG SKIP: the mean of the "mfu X%" values after the first SKIP ("35.2%"), or "n/a"
mfu_mean() {
    { grep -oE 'mfu:? *[0-9]+(\.[0-9]+)? *%' "$1" 2>/dev/null || true; } | grep -oE '[0-9]+(\.[0-9]+)?' |
        awk -v skip="$2" '++seen > skip { sum += $1; count++ } END { if (count) { printf "%.1f%%\n", sum / count } else { print "n/a" } }'
}

# peak_memory LOG: the largest "peak memory X GiB" ("12.34 GiB"), or "n/a"
peak_memory() {
    { grep -oE 'peak memory:? *[0-9]+(\.[0-9]+)? *GiB' "$1" 2>/dev/null || true; } | grep -oE '[0-9]+(\.[0-9]+)?' |
        awk '{ if (!count++ || $1 > max) { max = $1 } } END { if (count) { printf "%.2f GiB\n", max } else { print "n/a" } }'
}

# last_train_loss LOG / last_val_loss LOG: the last progress line's loss, the last "val loss X"; "n/a" if none
last_train_loss() {
    local v
    v=$(grep -E '^step +[0-9]+/[0-9]+ \|' "$1" 2>/dev/null | tail -n 1 | sed -nE 's/.*\| loss ([-0-9.naif]+) \|.*/\1/p')
    echo "${v:-n/a}"
}
last_val_loss() {
    local v
    v=$(grep -E '^val loss ' "$1" 2>/dev/null | tail -n 1 | awk '{ print $3 }')
    echo "${v:-n/a}"
}

# suite_result LOG: "N passed, M failed" from the last "<suite>: N passed, M failed" line, plus the FAILed cases
suite_result() {
    local summary failed_cases
    summary=$(grep -oE '^[A-Za-z0-9_.-]+: [0-9]+ passed, [0-9]+ failed' "$1" 2>/dev/null | tail -n 1 | sed -E 's/^[^:]*: //')
    failed_cases=$(grep -E '^FAIL ' "$1" 2>/dev/null | awk '{ print $2 }' | sed -E 's/:$//' | head -n 4 | paste -sd ' ' -)
    if [ -z "$summary" ]; then echo "no summary line"; return; fi
    echo "$summary${failed_cases:+ ($failed_cases)}"
}

# sanitizer_errors LOG: "N errors" from compute-sanitizer's "ERROR SUMMARY: N errors", or "no summary"
sanitizer_errors() {
    local n
    n=$(grep -oE 'ERROR SUMMARY: [0-9]+ error' "$1" 2>/dev/null | tail -n 1 | grep -oE '[0-9]+')
    if [ -n "$n" ]; then echo "$n sanitizer errors"; else echo "no summary"; fi
}

# quantize_bandwidth LOG: from fp8_quantize's lines
#   65536 x 768: device copy 2900 GB/s | cast+amax 2500 GB/s (86%) | cast+transpose+amax 2100 GB/s (72%)
# the smallest share of the copy's bandwidth of each kernel over the shapes: "cast >= 86%, cast+T >= 72% of copy"
quantize_bandwidth() {
    sed -nE 's/.*device copy ([0-9.]+) GB\/s \| cast\+amax [0-9.]+ GB\/s \(([0-9.]+)%\) \| cast\+transpose\+amax [0-9.]+ GB\/s \(([0-9.]+)%\).*/\1 \2 \3/p' \
        "$1" 2>/dev/null | awk '
        { if (!n++ || $2 < cast) { cast = $2 } if (n == 1 || $3 < tr) { tr = $3 } if (n == 1 || $1 < copy) { copy = $1 } }
        END { if (n) { printf "cast >= %s%%, cast+T >= %s%% of copy (copy >= %s GB/s)\n", cast, tr, copy } else { print "no bandwidth lines" } }'
}

# gemm_shapes_key LOG: the speedups of gemm_shapes' "step total" line
gemm_shapes_key() {
    local line
    line=$(grep -E '^step total' "$1" 2>/dev/null | tail -n 1)
    if [ -z "$line" ]; then echo "no step total line"; return; fi
    echo "$line" | sed -nE 's/.*\| BF16 [0-9.]+ ms \(([0-9.]+) TFLOP\/s\) \| FP8 [0-9.]+ ms \(([0-9.]+) TFLOP\/s\) ([0-9.]+x) \| .* ms ([0-9.]+x).*/BF16 \1, FP8 \2 TFLOP\/s: \3 (LM head BF16: \4)/p'
}

# fit_batch LOG: the smallest B of the trainer's "largest micro-batch that fits: B=N" lines (BF16's and FP8's), or
# nothing when there is none or one says 0 (nothing fits)
fit_batch() {
    { grep -oE '^largest micro-batch that fits: B=[0-9]+' "$1" 2>/dev/null || true; } | grep -oE '[0-9]+$' |
        sort -n | head -n 1 | grep -vx 0 || true
}

# plot_gap LOG: plot_losses.py's "fp8 vs bf16: final val X vs Y (+Z%)"
plot_gap() {
    local v
    v=$(grep -oE 'final val [0-9.]+ vs [0-9.]+ \([-+0-9.]+%\)' "$1" 2>/dev/null | tail -n 1)
    echo "${v:-no gap line}"
}

# bench_key LOG SKIP: "X ms/step, Y tok/s, mfu M, peak memory P"
bench_key() {
    local stats
    read -r -a stats <<<"$(progress_stats "$1" "$2")"
    echo "${stats[0]} ms/step, ${stats[1]} tok/s (${stats[2]} steps), mfu $(mfu_mean "$1" "$2"), peak mem $(peak_memory "$1")"
}

# ---------------------------------------------------------------------------------------------------------------------
# the table

# last_line LOG: the last non-empty output line of a step's log (at most 80 characters), to say why it failed
last_line() {
    grep -vE '^\[gpu_check: |^ *$' "$1" 2>/dev/null | tail -n 1 | cut -c 1-80
}

ROW_STEP=()
ROW_RESULT=()
ROW_KEY=()
add_row() { ROW_STEP+=("$1"); ROW_RESULT+=("$2"); ROW_KEY+=("$3"); }
# add_step_row NAME KEY: a row for the step run_step just ran; a failed or timed-out one also shows its last line
add_step_row() {
    local key=$2 last
    if [ "$STEP_RC" -gt 0 ]; then
        last=$(last_line "$LOGDIR/$1.log" | tr '|' '/')
        case $key in
            *" passed, "*" failed"*) ;;  # a test's own summary says enough
            n/a* | no* | "val n/a, train n/a"*) key="last: $last" ;;
            *) key="$key; last: $last" ;;
        esac
    fi
    add_row "$1" "$STEP_RESULT" "$key"
}

# print_table: the rows as one Markdown table, columns padded so that it also reads well in a terminal
print_table() {
    local w1=4 w2=6 w3=10 i
    for i in "${!ROW_STEP[@]}"; do
        [ ${#ROW_STEP[$i]} -gt "$w1" ] && w1=${#ROW_STEP[$i]}
        [ ${#ROW_RESULT[$i]} -gt "$w2" ] && w2=${#ROW_RESULT[$i]}
        [ ${#ROW_KEY[$i]} -gt "$w3" ] && w3=${#ROW_KEY[$i]}
    done
    printf "| %-${w1}s | %-${w2}s | %-${w3}s |\n" step result "key number"
    printf "| %s | %s | %s |\n" "$(printf '%*s' "$w1" '' | tr ' ' -)" "$(printf '%*s' "$w2" '' | tr ' ' -)" \
        "$(printf '%*s' "$w3" '' | tr ' ' -)"
    for i in "${!ROW_STEP[@]}"; do
        printf "| %-${w1}s | %-${w2}s | %-${w3}s |\n" "${ROW_STEP[$i]}" "${ROW_RESULT[$i]}" "${ROW_KEY[$i]}"
    done
}

# ---------------------------------------------------------------------------------------------------------------------
# running steps

# run_step NAME TIMEOUT COMMAND...: runs COMMAND with its output in LOGDIR/NAME.log under min(TIMEOUT, budget left),
# keeping 15 s of the budget for timeout's 10 s grace before SIGKILL and the table;
# sets STEP_RC and STEP_RESULT (OK / FAILED / TIMEOUT / SKIPPED, with the seconds taken). Never stops the script.
run_step() {
    local name=$1 limit=$2
    shift 2
    local log="$LOGDIR/$name.log" left=$((DEADLINE - SECONDS - 15))
    STEP_RC=-1
    if [ "$left" -lt 20 ]; then
        STEP_RESULT="SKIPPED (time budget spent)"
        echo "gpu_check: $name: skipped, the time budget is spent" >"$log"
        return
    fi
    if [[ $1 == ./* ]] && [ ! -x "$1" ]; then
        STEP_RESULT="SKIPPED ($1 not built)"
        echo "gpu_check: $name: skipped, $1 was not built (see build.log)" >"$log"
        return
    fi
    [ "$limit" -gt "$left" ] && limit=$left
    echo "gpu_check: $name (limit ${limit}s, log $log)" >&2
    local start=$SECONDS
    { printf '$'; printf ' %q' "$@"; printf '\n\n'; } >"$log"
    timeout -k 10 "$limit" "$@" >>"$log" 2>&1 </dev/null
    STEP_RC=$?
    local took=$((SECONDS - start))
    if [ "$STEP_RC" -eq 0 ]; then
        STEP_RESULT="OK (${took}s)"
    elif [ "$STEP_RC" -eq 124 ] || [ "$STEP_RC" -eq 137 ]; then
        STEP_RESULT="TIMEOUT (${limit}s)"
        ANY_FAILED=1
    else
        STEP_RESULT="FAILED (rc $STEP_RC, ${took}s)"
        ANY_FAILED=1
    fi
    printf '\n[gpu_check: %s, exit status %s]\n' "$STEP_RESULT" "$STEP_RC" >>"$log"
}

find_sanitizer() {
    if command -v compute-sanitizer >/dev/null 2>&1; then command -v compute-sanitizer; return; fi
    local home=${CUDA_HOME:-}
    if [ -z "$home" ] && command -v nvcc >/dev/null 2>&1; then home=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")"); fi
    for d in "$home" /usr/local/cuda; do
        if [ -n "$d" ] && [ -x "$d/bin/compute-sanitizer" ]; then echo "$d/bin/compute-sanitizer"; return; fi
    done
}

main() {
    local command_line append=0 logdir="" extra=()
    command_line=$(printf '%q ' "$0" "$@")
    command_line=${command_line% }
    while [ $# -gt 0 ]; do
        case $1 in
            --append-results) append=1; shift ;;
            -h | --help) echo "$GPU_CHECK_USAGE"; exit 0 ;;
            --) shift; extra=("$@"); break ;;
            -*) echo "gpu_check: error: unknown option $1 ($GPU_CHECK_USAGE)" >&2; exit 2 ;;
            *)
                if [ -n "$logdir" ]; then echo "gpu_check: error: unexpected argument $1 ($GPU_CHECK_USAGE)" >&2; exit 2; fi
                logdir=$1
                shift
                ;;
        esac
    done
    if [ -z "$logdir" ]; then echo "gpu_check: error: missing LOGDIR ($GPU_CHECK_USAGE)" >&2; exit 2; fi
    mkdir -p "$logdir" || { echo "gpu_check: error: cannot create $logdir" >&2; exit 2; }
    LOGDIR=$(cd "$logdir" && pwd)
    local repo
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    local results="$repo/RESULTS.md"
    if [ -n "${GPU_CHECK_RESULTS:-}" ]; then
        case $GPU_CHECK_RESULTS in /*) results=$GPU_CHECK_RESULTS ;; *) results="$PWD/$GPU_CHECK_RESULTS" ;; esac
    fi
    cd "$repo" || exit 2
    DEADLINE=$((SECONDS + ${GPU_CHECK_BUDGET:-540}))
    ANY_FAILED=0
    local train_steps=${TRAIN_STEPS:-200} bench_steps=${BENCH_STEPS:-30} bench_b=${BENCH_B:-8} skip=5

    # no GPU: say so and stop before building anything
    local gpu_query
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        echo "gpu_check: error: no GPU: nvidia-smi is not installed; nothing was built or run" >&2
        exit 1
    fi
    if ! gpu_query=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1) ||
        [ -z "$gpu_query" ]; then
        echo "gpu_check: error: no GPU: nvidia-smi failed ($(printf '%s' "$gpu_query" | head -n 1)); nothing was built or run" >&2
        exit 1
    fi
    local gpu_name gpu_driver gpu_memory
    gpu_name=$(echo "$gpu_query" | head -n 1 | cut -d, -f1 | sed 's/^ *//; s/ *$//')
    gpu_driver=$(echo "$gpu_query" | head -n 1 | cut -d, -f2 | sed 's/^ *//; s/ *$//')
    gpu_memory=$(echo "$gpu_query" | head -n 1 | cut -d, -f3 | sed 's/^ *//; s/ *$//')
    local commit
    commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
    if [ "$commit" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
        commit="$commit (+ uncommitted changes)"
    fi
    local started
    started=$(date -u '+%Y-%m-%d %H:%M UTC')

    # a CUDA toolkit installed but not on PATH: the Makefile finds nvcc (and with it CUDA_HOME) through PATH only
    if ! command -v nvcc >/dev/null 2>&1; then
        local d
        for d in "${CUDA_HOME:-}" /usr/local/cuda; do
            if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then PATH="$d/bin:$PATH"; break; fi
        done
    fi

    run_step gpu 30 nvidia-smi
    add_step_row gpu "$gpu_name, driver $gpu_driver, $gpu_memory"

    # gemm_shapes by name too: its pattern rule builds it even where the Makefile's DEV_CUDA does not list it
    run_step build 360 bash -c "make info && make -j$(nproc) all dev/cuda/gemm_shapes"
    local missing="" program
    for program in train_gpt_fp8 test_gpt_fp8 dev/cuda/fp8_quantize dev/cuda/fp8_update dev/cuda/fp8_gemm \
        dev/cuda/gemm_shapes dev/cuda/attention_cudnn; do
        [ -x "$program" ] || missing="$missing $program"
    done
    add_step_row build "${missing:+not built:}${missing:-every CUDA program built}"

    local p
    for p in fp8_quantize fp8_update fp8_gemm attention_cudnn; do
        run_step "$p" 120 "./dev/cuda/$p"
        add_step_row "$p" "$(suite_result "$LOGDIR/$p.log")"
        if [ "$p" = fp8_quantize ]; then
            add_row quantize_bandwidth "(in fp8_quantize)" "$(quantize_bandwidth "$LOGDIR/fp8_quantize.log")"
        fi
    done

    run_step test_gpt_fp8 180 ./test_gpt_fp8
    add_step_row test_gpt_fp8 "$(suite_result "$LOGDIR/test_gpt_fp8.log")"

    local data=data/tinyshakespeare
    if [ -n "${INPUT:-}" ]; then
        run_step data 180 ./dev/data/prepare_tinyshakespeare.sh "$INPUT"
    else
        run_step data 180 make data
    fi
    local train_tokens val_tokens
    train_tokens=$(od -An -t d4 -j 8 -N 4 "$data/tiny_shakespeare_train.bin" 2>/dev/null | tr -d ' ')
    val_tokens=$(od -An -t d4 -j 8 -N 4 "$data/tiny_shakespeare_val.bin" 2>/dev/null | tr -d ' ')
    add_step_row data "train ${train_tokens:-?} tokens, val ${val_tokens:-?} tokens"

    # the data flags of scripts/compare_bf16_fp8.sh: our tokenizer sets the vocabulary of the d12 preset
    local data_flags=(-i "$data/tiny_shakespeare_train.bin" -j "$data/tiny_shakespeare_val.bin" -tk "$data/tokenizer.bin")
    local precision stats
    for precision in bf16 fp8; do
        run_step "train_$precision" 180 ./train_gpt_fp8 "${data_flags[@]}" -e d12 -b 8 -t 1024 -v 50 -m 20 -l 6e-4 -u 50 \
            -q 0.1 -x "$train_steps" -s 0 -seed 1337 -precision "$precision" -o "$LOGDIR/train_$precision" \
            ${extra[@]+"${extra[@]}"}
        read -r -a stats <<<"$(progress_stats "$LOGDIR/train_$precision.log" "$skip")"
        add_step_row "train_$precision" "val $(last_val_loss "$LOGDIR/train_$precision.log"), train $(last_train_loss "$LOGDIR/train_$precision.log"), ${stats[0]} ms/step"
    done

    if ! python3 -c "import matplotlib" >/dev/null 2>&1; then
        echo "gpu_check: plot: skipped, matplotlib is not importable (make deps)" >"$LOGDIR/plot.log"
        add_row plot "SKIPPED (no matplotlib: make deps)" "-"
    elif [ ! -s "$LOGDIR/train_bf16/main.log" ] || [ ! -s "$LOGDIR/train_fp8/main.log" ]; then
        echo "gpu_check: plot: skipped, a training run wrote no main.log" >"$LOGDIR/plot.log"
        add_row plot "SKIPPED (no main.log)" "-"
    else
        run_step plot 60 python3 scripts/plot_losses.py --out "$LOGDIR/bf16_vs_fp8.png" --label bf16 \
            "$LOGDIR/train_bf16/main.log" --label fp8 "$LOGDIR/train_fp8/main.log" \
            --title "BF16 vs FP8 (delayed scaling): d12 -b 8 -t 1024, $train_steps steps, train_gpt_fp8"
        add_step_row plot "fp8 vs bf16 $(plot_gap "$LOGDIR/plot.log")"
    fi

    # d48: the largest micro-batch that fits by the trainer's estimate, the same in BF16 and FP8 (the smaller of the
    # two), gradient accumulation making up the same total batch
    local d48_total=${D48_TOTAL_TOKENS:-32768} d48_b
    run_step fit_d48 120 bash -c 'for p in bf16 fp8; do "$@" -precision $p || exit; done' fit ./train_gpt_fp8 \
        "${data_flags[@]}" -e d48 -t 1024 -b $((d48_total / 1024)) -d "$d48_total" -v 0 -s 0 -estimate 1 \
        ${extra[@]+"${extra[@]}"}
    d48_b=$(fit_batch "$LOGDIR/fit_d48.log")
    add_step_row fit_d48 "${d48_b:+B $d48_b of -d $d48_total tokens fits BF16 and FP8 by the estimate}${d48_b:-no estimate: B $bench_b}"
    d48_b=${d48_b:-$bench_b}
    local depth limit bf16_ms fp8_ms speedup batch_flags
    for depth in d12 d24 d48; do
        case $depth in d12) limit=90 ;; d24) limit=120 ;; *) limit=180 ;; esac
        batch_flags=(-b "$bench_b")
        [ "$depth" = d48 ] && batch_flags=(-b "$d48_b" -d "$d48_total")
        for precision in bf16 fp8; do
            run_step "bench_${depth}_$precision" "$limit" ./train_gpt_fp8 "${data_flags[@]}" -e "$depth" "${batch_flags[@]}" \
                -t 1024 -x "$bench_steps" -v 0 -s 0 -seed 1337 -precision "$precision" ${extra[@]+"${extra[@]}"}
            local key
            key=$(bench_key "$LOGDIR/bench_${depth}_$precision.log" "$skip")
            if [ "$precision" = fp8 ]; then
                bf16_ms=$(progress_stats "$LOGDIR/bench_${depth}_bf16.log" "$skip" | awk '{ print $1 }')
                fp8_ms=$(progress_stats "$LOGDIR/bench_${depth}_fp8.log" "$skip" | awk '{ print $1 }')
                speedup=$(awk -v a="$bf16_ms" -v b="$fp8_ms" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) { printf "%.2fx", a / b } else { print "n/a" } }')
                key="$key, $speedup vs bf16"
            fi
            add_step_row "bench_${depth}_$precision" "$key"
        done
    done

    # NCCL: one rank through a communicator must give the bits of the plain run (main.log compared byte for byte);
    # with several GPUs, N ranks at the same global batch must follow one rank within float-sum noise
    local nccl_flags=("${data_flags[@]}" -e d12 -b 8 -t 1024 -x 20 -v 10 -m 4 -s 0 -seed 1337 -precision fp8)
    run_step nccl_plain 90 ./train_gpt_fp8 "${nccl_flags[@]}" -o "$LOGDIR/nccl_plain"
    run_step nccl_1rank 90 ./train_gpt_fp8 "${nccl_flags[@]}" -o "$LOGDIR/nccl_1rank" -pn 1 -pr 0 -pi fs -pf "$LOGDIR"
    if [ "$STEP_RC" -eq 0 ] && cmp -s "$LOGDIR/nccl_plain/main.log" "$LOGDIR/nccl_1rank/main.log"; then
        add_step_row nccl_1rank "main.log bit-identical to the run without NCCL"
    else
        [ "$STEP_RC" -eq 0 ] && { STEP_RESULT="FAILED (logs differ)"; STEP_RC=1; ANY_FAILED=1; }
        add_step_row nccl_1rank "main.log differs from the run without NCCL (diff nccl_plain/main.log nccl_1rank/main.log)"
    fi
    local ngpus
    ngpus=$(nvidia-smi -L 2>/dev/null | wc -l)
    if [ "$ngpus" -ge 2 ]; then
        run_step "nccl_${ngpus}ranks" 120 env NO_MPIRUN=1 scripts/run_gpt_fp8_1node.sh "$ngpus" -- \
            "${nccl_flags[@]}" -b $((8 / ngpus > 0 ? 8 / ngpus : 1)) -d 8192 -o "$LOGDIR/nccl_${ngpus}ranks"
        add_step_row "nccl_${ngpus}ranks" "$(python3 - "$LOGDIR/nccl_plain/main.log" "$LOGDIR/nccl_${ngpus}ranks/main.log" <<'PY'
import sys
def losses(path):
    try:
        return [float(line.split("tel:")[1]) for line in open(path) if "tel:" in line]
    except OSError:
        return []
one, many = losses(sys.argv[1]), losses(sys.argv[2])
if not one or len(one) != len(many):
    print("val losses missing")
else:
    worst = max(abs(a - b) / a for a, b in zip(one, many))
    print(f"val losses within {100 * worst:.3f}% of 1 rank ({'ok' if worst < 0.01 else 'MORE THAN 1%'})")
PY
)"
    else
        add_row nccl_multi "SKIPPED (1 GPU)" "-"
    fi

    run_step gemm_shapes 120 ./dev/cuda/gemm_shapes -e d12
    add_step_row gemm_shapes "$(gemm_shapes_key "$LOGDIR/gemm_shapes.log")"

    local sanitizer tool
    sanitizer=$(find_sanitizer)
    for tool in memcheck racecheck; do
        if [ -z "$sanitizer" ]; then
            echo "gpu_check: $tool: skipped, compute-sanitizer is neither on PATH nor in \$CUDA_HOME/bin" >"$LOGDIR/$tool.log"
            add_row "$tool" "SKIPPED (no compute-sanitizer)" "-"
            continue
        fi
        # test_gpt_fp8 has no quick mode; it runs as is (its tiny model keeps the sanitized run short)
        run_step "$tool" 300 "$sanitizer" --tool "$tool" ./test_gpt_fp8
        add_step_row "$tool" "$(sanitizer_errors "$LOGDIR/$tool.log")"
    done

    local header table
    header=$(printf '# GPU check, %s (%ss)\nGPU: %s, driver %s, %s | commit %s\ncommand: %s\nlogs: %s' "$started" \
        "$SECONDS" "$gpu_name" "$gpu_driver" "$gpu_memory" "$commit" "$command_line" "$LOGDIR")
    table=$(print_table)
    printf '%s\n\n%s\n' "$header" "$table" | tee "$LOGDIR/summary.txt"
    if [ "$append" -eq 1 ]; then
        {
            printf '\n## %s — GPU check on %s\n\n' "${started%% *}" "$gpu_name"
            printf -- '- Machine: %s (%s), driver %s. Commit: %s. %s seconds.\n' "$gpu_name" "$gpu_memory" "$gpu_driver" \
                "$commit" "$SECONDS"
            printf -- '- Command: %s (the log of each step in %s/<step>.log, not in the repository)\n\n' "\`$command_line\`" "$LOGDIR"
            printf '%s\n' "$table"
        } >>"$results"
        echo "gpu_check: appended to $results"
    fi
    exit "$ANY_FAILED"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
