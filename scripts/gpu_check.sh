#!/usr/bin/env bash
# scripts/gpu_check.sh [--only STAGE,...] [--input input.txt] [--append-results] [--dry-run] LOGDIR [-- trainer flags]
# — everything a GPU machine should check, in stages, in one command that needs nothing but the CUDA toolkit (the
# Makefile finds cuDNN and NCCL itself) and no network:
#
#   build     make info; make -k -j all cuda (every target is tried; the table names the ones that failed; `cuda`
#             because a plain `make` builds only what a user runs). Always runs: with `build` selected it builds
#             everything, otherwise only the programs the selected stages run
#   dev       dev/cuda/fp8_quantize (+ quantize_bandwidth: its cast vs a device-to-device copy), fp8_update, fp8_gemm,
#             fp8_current_scaling (the current-scaling amax pass and cast, bit-exact against fp8/current.h),
#             fp8_block_quantize (the blockwise and mxfp8 casts, bit-exact against fp8/block.h, and their GB/s; +
#             block_cast_over_copy: the slowest cast's share of a device copy's bandwidth),
#             fp8_block_gemm (cuBLASLt's block-scaled GEMMs against the CPU on the dequantized operands, TFLOP/s),
#             gelu_fp8 (GELU inside the FP8 casts, bit for bit GELU's kernels then the cast; + gelu_fp8_time: fused
#             against separate), layernorm (LayerNorm both ways, the residual and the column sums against the CPU, the
#             residual in LayerNorm's pass bit for bit the two; + layernorm_time: one warp per row against one block
#             per row), layernorm_fp8 (LayerNorm inside the FP8 cast, bit for bit LayerNorm's kernel then the cast; +
#             layernorm_fp8_time: fused against separate), classifier (the fused softmax, loss and
#             gradient, both kernels, against the CPU; + classifier_time: at GPT-2's vocabulary), adamw (AdamW's
#             one launch for every tensor bit for bit one launch each, a norm that is not finite skipping it),
#             attention_cudnn (cuDNN's flash attention against the CPU and the plain attention; built with cuDNN),
#             attention_cudnn_fp8 (cuDNN's FP8 attention: which head sizes build, forward and, where built, backward
#             against the CPU within derived bounds, FP8 against BF16 time): the CPU reference vs the GPU, then timings
#   test      ./test_gpt_fp8: the CUDA trainer against the CPU reference
#   xcheck    the two real trainers against each other: train_gpt_fp8 and train_gpt_fp8_cpu from the same model file
#             (-e) and shards, with gradient accumulation and one NaN-skipped step, 20 steps of a small model in every
#             recipe (XCHECK_RECIPES, default all: bf16 fp8_delayed fp8_current fp8_blockwise fp8_mxfp8), then with the LM
#             head in FP8 and each per-GEMM override once (fp8_delayed_lm_head fp8_current_no_fprop
#             fp8_blockwise_no_wgrad fp8_mxfp8_no_dgrad), blockwise where every GEMM's k ends in a partial block
#             (fp8_blockwise_c160, its model C 160 at B*T 192, 15 steps), and FP8 attention
#             (fp8_delayed_attention, its model with heads of 64, and fp8_delayed_attention_mha: -fp8_attention 2,
#             the backward from the E4M3 q k v); dev/compare_runs compares their main.log losses,
#             norms and learning rates step by step and their final FP8 histories and scales, each within a tolerance
#             this script states with its reason (stage_xcheck), and the table shows the largest difference of each
#   train     data, then d12 on tinyshakespeare in BF16 and FP8 (delayed, then blockwise and mxfp8, then delayed with
#             -fp8_attention 1 and 2), same seed, TRAIN_STEPS steps (as scripts/compare_bf16_fp8.sh runs them, at B
#             8; with FP8 diagnostics, in the archive), and the plots LOGDIR/bf16_vs_fp8.png and (BF16, FP8, FP8 with
#             FP8 attention: issue 57's) LOGDIR/bf16_fp8_attention.png; resume (delayed), resume_current,
#             resume_blockwise, resume_mxfp8: a small FP8 run of two micro-batches a step killed between checkpoints
#             and resumed with -y 1 ends with every file byte-identical to an uninterrupted run's; nan_skip: a NaN
#             gradient at step 4 skips that step with a warning and the run ends with a finite loss; faults:
#             scripts/check_run_faults.sh on train_gpt_fp8 (logs that cannot be written, damaged checkpoints, the
#             folder lock, -start_over, -max_skipped, long paths). TRAIN_RUNS picks some of these by name, e.g.
#             TRAIN_RUNS="bf16 fp8 fp8_attention fp8_attention_mha" (issue 57's comparison alone)
#   bench     d12, d24, d48 in BF16 and FP8, BENCH_STEPS steps each: mean ms and tok/s after the first 5 steps, MFU,
#             peak memory and the mean SM clock with what held it down (timing runs: no -o, -fp8_diag_every 0;
#             nvidia-smi sampling as in profile); d12 in FP8 blockwise too, against both; d12 at B 64 as well (the
#             issues' headline shape; the d12 runs themselves when BENCH_B is 64) in BF16, FP8 and blockwise. d48 first
#             asks the trainer's memory estimate (fit_d48: -estimate 1) for the largest micro-batch of d48 at T 1024
#             that fits this GPU in BF16 and in FP8, and runs both, then blockwise, at the smaller of the two, with
#             gradient accumulation to D48_TOTAL_TOKENS (default 32768); blockwise refused by a trainer in one line
#             (one from before the zero-padded k of C 1600) is SKIPPED (refused), not a failure; FP8 with
#             -fp8_attention 1 at d12 B 64 and d48, against BF16 and FP8 without it
#   llmc      our BF16 d12 step at B 64 and GPT-2's vocabulary against llm.c's train_gpt2cu with cuDNN, built by make
#             llmc-baseline from LLMC_DIR (default third_party/llm.c, carried here, never committed; SKIPPED without
#             it), BENCH_STEPS steps each: results/latest.tsv's d12_b64_bf16_over_llmc (not run unless named in --only)
#   gemm      ./dev/cuda/gemm_shapes -e d12: BF16 vs FP8 TFLOP/s of every GEMM of a step; then at B 64 (the profile's
#             batch) with -algos 8: how far each GEMM's plan is from the fastest of cuBLASLt's first 8 heuristic
#             answers, and the step's GEMM time had each used its fastest (would autotuning pay?)
#   nccl      20 FP8 steps of d12 without and with a 1-rank NCCL communicator (bit-identical logs); with N >= 2 GPUs, N
#             ranks at the same global batch as one rank
#   sanitize  compute-sanitizer memcheck on ./test_gpt_fp8, and racecheck on it without its two medium-model cases
#             (--skip medium), in two steps (the cases named fp8, the others), with most of cuBLASLt's and cuDNN's
#             kernels left uninstrumented; a memcheck error, or a race in one of our kernels, fails the step (slow: on an
#             H200 racecheck took 115 s for 7 of its 21 cases; not run unless named in --only)
#   profile   where a d12 step's GPU time goes, at PROFILE_B (64) x 1024 (and vocabulary PROFILE_V, e.g. GPT-2's 50257
#             to set beside llm.c's train_gpt2cu, default our tokenizer's), for each of PROFILE_RUNS (default bf16 fp8
#             fp8_current; also fp8_unfused and fp8_current_unfused, with -fp8_fused_casts 0, and fp8_blockwise): its
#             ms/step without a profiler (15 steps, mean after 5; nvidia-smi samples the SM clock, power and what holds
#             the clock down meanwhile: the profile_clocks row), then Nsight Compute (ncu, or $NCU) timing every kernel
#             of step 3 alone and the SM clock it ran at (-profile_step 3, ncu --profile-from-start off, clocks and
#             caches left as they are); scripts/profile_step.py sums them by kind (GEMMs, attention, FP8 casts,
#             LayerNorm, ...) and by kernel into LOGDIR/profile_step.md, each run beside the first, and from the two
#             clocks bounds the time outside kernels from below; and each run's GPU idle time in a step, measured (the
#             trainer's -idle_step 8: CUPTI's trace; profile_idle rows; at the default shape results/latest.tsv's
#             gpu_idle_ms_bf16 and gpu_idle_ms_fp8) (not run unless named in --only)
# Default: every stage but llmc, sanitize and profile. --only picks stages, e.g. a first short call
# `--only build,dev,test,xcheck,train` with TRAIN_STEPS=20 and a later one `--only bench,gemm,nccl`.
#
# The corpus, without network: the prepared shards in data/tinyshakespeare/ when they are there (carry that folder to
# a GPU machine), else the text given by --input or INPUT=, else what dev/data/prepare_tinyshakespeare.sh finds
# (../shared beside the repository, then data/tinyshakespeare/input.txt, the git-ignored place for a local copy;
# see data/README.md), else it says how to pass one.
#
# results/latest.tsv, the headline figures one row each (name value unit gpu commit date command, tab-separated;
# issue 56), gets a row rewritten (or added) whenever a stage measures its figure, with this GPU, the commit (-dirty
# when tracked files differ) and the UTC date: the bench stage d12_b64_fp8_over_bf16, d48_fp8_over_bf16,
# blockwise_d12_b64_over_bf16 and blockwise_d48_over_bf16 (each BF16's ms/step over the other's, two runs of this
# call), the dev stage block_cast_over_copy (fp8_block_quantize's line). A figure is written only when every run it
# comes from ended OK (not failed, skipped, refused or a dry run) and no trainer flags were added after --; each
# stage's latest_tsv row says what it wrote and what not, and why.
#
# What comes back, in LOGDIR (6 files, so the whole of it fits a GPU machine's 8 files of 16 MiB): summary.txt (the
# table under a header: date, GPU, driver, commit, command line), gpu_check_logs.tar.gz (every step's full output,
# its first line the command, the training runs' main.log and fp8_diag.tsv, the profile stage's ncu reports and CSVs;
# at most 16 MiB, the longest logs cut in the middle if need be), bf16_vs_fp8.png, bf16_fp8_attention.png,
# profile_step.md and latest.tsv (a copy of results/latest.tsv once a stage has written a row: the file to bring back
# from a machine whose working tree does not come back). Both the table and the archive are rewritten after every
# step, so a run stopped from outside still leaves them. Checkpoints the runs write are deleted as soon as each run
# ends.
# Every step has a timeout, and the whole run a budget (GPU_CHECK_BUDGET seconds, default 540, so it ends within 9
# minutes): a step gets at most what is left; a step that cannot start in time, or that the budget cuts short, is
# SKIPPED (budget), which is not a failure. Exit status: 0 when no step FAILED or hit its own timeout, 1 otherwise (and
# 1 at once, before building anything, when no GPU answers), 2 on bad arguments. --dry-run writes each step's command
# into its log and the table without running it. --append-results also appends the table to RESULTS.md.
# Environment: GPU_CHECK_BUDGET, TRAIN_STEPS (200), TRAIN_RUNS (the train stage's runs, by name: stage_train),
# BENCH_STEPS (30), BENCH_B (8), PROFILE_B (64), PROFILE_RUNS, PROFILE_V, NCU, LLMC_DIR,
# INPUT, GPU_CHECK_RESULTS (the file --append-results appends to, default RESULTS.md in the repository root),
# GPU_CHECK_LATEST (the figures' file, default results/latest.tsv in the repository root), GPU_CHECK_ARCHIVE_MAX_BYTES
# (16 MiB).
#
# Sourcing this file (as scripts/test_gpu_check.sh does) defines the functions below and runs nothing.
set -u

GPU_CHECK_USAGE="usage: scripts/gpu_check.sh [--only STAGE,...] [--input input.txt] [--append-results] [--dry-run] LOGDIR [-- extra trainer flags]"
GPU_CHECK_STAGES="build dev test xcheck train bench llmc gemm nccl sanitize profile"
GPU_CHECK_DEFAULT_STAGES="build dev test xcheck train bench gemm nccl"
GPU_CHECK_ARCHIVE=gpu_check_logs.tar.gz

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

# idle_key LOG: the trainer's -idle_step line as "IDLE_MS WALL_MS rest", e.g. "0.412 78.903 busy 78.491 ms: 1842
# kernels, 6 copies, 3 memsets", from
#   idle: step 8: the GPU idle 0.412 ms of a 78.903 ms step (busy 78.491 ms: 1842 kernels, 6 copies, 3 memsets)
# or nothing when the log has no such line
idle_key() {
    sed -nE 's/^idle: step [0-9]+: the GPU idle ([0-9.]+) ms of a ([0-9.]+) ms step \((.*)\)$/\1 \2 \3/p' "$1" 2>/dev/null |
        tail -n 1
}

# flag_value FLAG WORDS...: the word after the last FLAG among WORDS (nothing when FLAG is not there)
flag_value() {
    local flag=$1 value="" previous="" word
    shift
    for word in "$@"; do
        [ "$previous" = "$flag" ] && value=$word
        previous=$word
    done
    echo "$value"
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

# sanitizer_errors LOG: "N sanitizer errors" from compute-sanitizer's last summary line, memcheck's "ERROR SUMMARY: N
# errors" or racecheck's "RACECHECK SUMMARY: H hazards displayed (N errors, W warnings)" (seen on an H100), or "no
# summary" (a run cut short prints none)
sanitizer_errors() {
    local n
    n=$(grep -oE 'ERROR SUMMARY: [0-9]+ error|RACECHECK SUMMARY: [0-9]+ hazards? displayed \([0-9]+ error' "$1" 2>/dev/null |
        tail -n 1 | grep -oE '[0-9]+ error' | grep -oE '[0-9]+')
    if [ -n "$n" ]; then echo "$n sanitizer errors"; else echo "no summary"; fi
}

# Substrings of the names of cuBLASLt's and cuDNN's kernels (none of ours has one): their asynchronous copies and
# tensor-core pipelines synchronize through hardware barriers that racecheck does not follow, so it reports hazards in
# them that are not ours to fix (on an H100, every one of 316 in cuDNN's flash attention), and instrumenting them took
# most of racecheck's time (never done within 300 s)
LIBRARY_KERNEL_SUBSTRINGS="nvjet xmma cutlass cublas cudnn sdpa"
# The ones racecheck leaves uninstrumented (--kernel-name-exclude): all but nvjet. With cuBLASLt's nvjet kernels (its
# Hopper GEMMs) uninstrumented, compute-sanitizer 2025.3.1 stopped at the first GEMM on an H200 ("Internal Sanitizer
# Error: The Sanitizer failed to handle a hardware exception", then cudaErrorIllegalAddress in the program), with any
# of the others it ran; instrumented, they run, and the hazards racecheck reports in them are counted apart
RACECHECK_UNINSTRUMENTED_SUBSTRINGS="xmma cutlass cublas cudnn sdpa"

# racecheck_hazards LOG: "OURS LIBRARY NAMES" from compute-sanitizer racecheck's reports, one per "Race reported
# between" line: LIBRARY counts those inside cuBLASLt's or cuDNN's kernels (a LIBRARY_KERNEL_SUBSTRINGS in the line),
# OURS the others, NAMES the kernels of ours named (comma-separated, "-" when none)
#   ========= Error: Race reported between Write access at fp8_block_cast_2d_kernel(...)+0x1a30 in block_quantize.cuh:210
racecheck_hazards() {
    awk -v library_pattern="${LIBRARY_KERNEL_SUBSTRINGS// /|}" '
        /Race reported between/ {
            if ($0 ~ library_pattern) { library++; next }
            ours++
            name = $0
            sub(/.*access at /, "", name)
            sub(/[(+ ].*/, "", name)
            if (name != "" && !(name in seen)) { seen[name] = 1; names = names (names == "" ? "" : ",") name }
        }
        END { printf "%d %d %s\n", ours, library, names == "" ? "-" : names }
    ' "$1" 2>/dev/null || echo "0 0 -"
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

# timing_key LOG SEPARATOR EXPR1 EXPR2: the last line each sed -E substitution (printing with /p) makes of LOG, joined
# by SEPARATOR, or "no timing lines" when either makes none
timing_key() {
    local first second
    first=$(sed -nE "$3" "$1" 2>/dev/null | tail -n 1)
    second=$(sed -nE "$4" "$1" 2>/dev/null | tail -n 1)
    if [ -z "$first" ] || [ -z "$second" ]; then echo "no timing lines"; return; fi
    echo "$first$2$second"
}

# gelu_fp8_time LOG: from gelu_fp8's timing lines
#   65536 x 3072: device copy 2900 GB/s | gelu_forward_fp8 300.0 us (2700 GB/s, 93% of copy), gelu_forward + cast+transpose 500.0 us, fused / separate 0.60
#   65536 x 3072: gelu_backward_fp8 + dbias reduce 450.0 us (its kernel ...), gelu_backward + cast+transpose+dbias + reduce 700.0 us, fused / separate 0.64
#   65536 x 3072: gelu_backward_fp8 + dbias reduce with the tanhf / coshf derivative 600.0 us, this one / that 0.75
# "forward 300.0 us (93% of copy), 0.60 of separate; backward 450.0 us, 0.64; 0.75 of the tanhf / coshf derivative's
# 600.0 us" (the last part only where the log has its line: gelu_fp8 before it had none)
gelu_fp8_time() {
    local key old_derivative
    key=$(timing_key "$1" "; " \
        's/.*gelu_forward_fp8 ([0-9.]+) us \([0-9.]+ GB\/s, ([0-9.]+)% of copy\).*fused \/ separate ([0-9.]+).*/forward \1 us (\2% of copy), \3 of separate/p' \
        's/.*gelu_backward_fp8 \+ dbias reduce ([0-9.]+) us .*fused \/ separate ([0-9.]+).*/backward \1 us, \2/p')
    old_derivative=$(sed -nE \
        "s/.*with the tanhf \/ coshf derivative ([0-9.]+) us, this one \/ that ([0-9.]+).*/\2 of the tanhf \/ coshf derivative's \1 us/p" \
        "$1" 2>/dev/null | tail -n 1)
    if [ "$key" = "no timing lines" ]; then old_derivative=""; fi
    echo "$key${old_derivative:+; $old_derivative}"
}

# layernorm_time LOG: from layernorm's timing lines
#   65536 x 768: device copy 2900 GB/s | forward: one warp per row 80.0 us (2516 GB/s, 87% of copy), one block per row 250.0 us (3.12x)
#   65536 x 768: backward: one warp per row 150.0 us (...), one block per row 270.0 us (1.80x) | parameter partials ... | column sums 5.0 us
# "forward 80.0 us (87% of copy, 3.12x), backward 150.0 us (1.80x), column sums 5.0 us"
layernorm_time() {
    timing_key "$1" ", " \
        's/.*forward: one warp per row ([0-9.]+) us \([0-9.]+ GB\/s, ([0-9.]+)% of copy\), one block per row [0-9.]+ us \(([0-9.]+x)\).*/forward \1 us (\2% of copy, \3)/p' \
        's/.*backward: one warp per row ([0-9.]+) us .*, one block per row [0-9.]+ us \(([0-9.]+x)\) \|.*\| column sums ([0-9.]+) us.*/backward \1 us (\2), column sums \3 us/p'
}

# layernorm_fp8_time LOG: from layernorm_fp8's two timing lines
#   65536 x 768: device copy 2900 GB/s | layernorm_forward_fp8 70.0 us (2876 GB/s, 99% of copy), the cast+transpose of the bf16 output 72.0 us, LayerNorm inside / bf16 cast 0.97
#   65536 x 768: before qkv and fc, residual + statistics then layernorm_forward_fp8 180.0 us (...), residual + LayerNorm then cast+transpose 230.0 us, fused / separate 0.78
# "cast 70.0 us (99% of copy), 0.97 of the bf16 cast; with the residual pass 180.0 us, 0.78 of separate"
layernorm_fp8_time() {
    timing_key "$1" "; " \
        's/.*layernorm_forward_fp8 ([0-9.]+) us \([0-9.]+ GB\/s, ([0-9.]+)% of copy\).*LayerNorm inside \/ bf16 cast ([0-9.]+).*/cast \1 us (\2% of copy), \3 of the bf16 cast/p' \
        's/.*before qkv and fc, residual \+ statistics then layernorm_forward_fp8 ([0-9.]+) us .*fused \/ separate ([0-9.]+).*/with the residual pass \1 us, \2 of separate/p'
}

# classifier_time LOG: from classifier's timing line
#   16384 x 50304: device copy 2900 GB/s | classifier, 16-byte vectors 1850.0 us (2672 GB/s, 92% of copy), element by element 6000.0 us (3.24x) | evaluation (losses only) 600.0 us (2747 GB/s)
# "1850.0 us (92% of copy), 3.24x the element-by-element kernel; evaluation 600.0 us"
classifier_time() {
    timing_key "$1" "; " \
        's/.*classifier, 16-byte vectors ([0-9.]+) us \([0-9.]+ GB\/s, ([0-9.]+)% of copy\), element by element [0-9.]+ us \(([0-9.]+x)\).*/\1 us (\2% of copy), \3 the element-by-element kernel/p' \
        's/.*evaluation \(losses only\) ([0-9.]+) us.*/evaluation \1 us/p'
}

# gemm_shapes_key LOG: the speedups of gemm_shapes' "step total" line
gemm_shapes_key() {
    local line
    line=$(grep -E '^step total' "$1" 2>/dev/null | tail -n 1)
    if [ -z "$line" ]; then echo "no step total line"; return; fi
    echo "$line" | sed -nE 's/.*\| BF16 [0-9.]+ ms \(([0-9.]+) TFLOP\/s\) \| FP8 [0-9.]+ ms \(([0-9.]+) TFLOP\/s\) ([0-9.]+x) \| .* ms ([0-9.]+x).*/BF16 \1, FP8 \2 TFLOP\/s: \3 (LM head BF16: \4)/p'
}

# gemm_algos_key LOG: gemm_shapes -algos N's totals line, and the GEMM whose fastest answer beats the heuristic's choice
# by the most
#   best of up to 8 heuristic algorithms: BF16 9.80 ms (1.3% below the heuristic's) | FP8 5.90 ms (4.4% below) 1.66x | FP8 with LM head in BF16 7.30 ms 1.34x
#   fc.dgrad ... | 1.56x | best of 8: BF16 652.0 (#0, +0.2%), best of 8: FP8 1100.5 (#3, +9.0%)
# "best of 8: BF16 1.3%, FP8 4.4% below the heuristic's choice (FP8/BF16 1.66x; LM head BF16: 1.34x); most: fc.dgrad FP8
# +9.0% (#3)"
gemm_algos_key() {
    local line totals most
    line=$(grep -E '^best of up to [0-9]+ heuristic algorithms' "$1" 2>/dev/null | tail -n 1)
    if [ -z "$line" ]; then echo "no best-of line"; return; fi
    totals=$(echo "$line" | sed -nE 's/^best of up to ([0-9]+) heuristic algorithms: BF16 [0-9.]+ ms \(([-0-9.]+)% below the heuristic.s\) \| FP8 [0-9.]+ ms \(([-0-9.]+)% below\) ([0-9.]+x) \| FP8 with LM head in BF16 [0-9.]+ ms ([0-9.]+x).*/best of \1: BF16 \2%, FP8 \3% below the heuristic'"'"'s choice (FP8\/BF16 \4; LM head BF16: \5)/p')
    most=$(awk '/ \| best of [0-9]+: BF16 / {
        rest = $0
        n = 0
        while (match(rest, /\(#[0-9]+, [-+][0-9.]+%\)/)) {
            part = substr(rest, RSTART + 1, RLENGTH - 3)  # "#3, +9.0"
            rest = substr(rest, RSTART + RLENGTH)
            n++
            rank = part; sub(/,.*/, "", rank)
            gain = part; sub(/^#[0-9]+, /, "", gain)
            if (!found || gain + 0 > best) {
                best = gain + 0; found = 1
                what = $1 " " (n == 1 ? "BF16" : "FP8") " " gain "% (" rank ")"
            }
        }
    } END { if (found) print what }' "$1")
    echo "${totals:-unreadable best-of line}${most:+; most: $most}"
}

# fit_batch LOG: the smallest B of the trainer's "largest micro-batch that fits: B=N" lines (BF16's and FP8's), or
# nothing when there is none or one says 0 (nothing fits)
fit_batch() {
    { grep -oE '^largest micro-batch that fits: B=[0-9]+' "$1" 2>/dev/null || true; } | grep -oE '[0-9]+$' |
        sort -n | head -n 1 | grep -vx 0 || true
}

# fit_d48_key B TOTAL BENCH_B: fit_d48's key number, B the micro-batch fit_batch found (empty: none)
fit_d48_key() {
    if [ -n "$1" ]; then echo "B $1 of -d $2 tokens fits BF16 and FP8 by the estimate"; else echo "no estimate: B $3"; fi
}

# plot_gap LOG: plot_losses.py's "fp8 vs bf16: final val X vs Y (+Z%)"
plot_gap() {
    local v
    v=$(grep -oE 'final val [0-9.]+ vs [0-9.]+ \([-+0-9.]+%\)' "$1" 2>/dev/null | tail -n 1)
    echo "${v:-no gap line}"
}

# plot_gaps LOG: every run's gap line, "fp8 vs bf16 (-0.52%), fp8_attention vs bf16 (+0.31%)"
plot_gaps() {
    local v
    v=$(grep -oE '^[A-Za-z0-9_]+ vs [A-Za-z0-9_]+: final val [0-9.]+ vs [0-9.]+ \([-+0-9.]+%\)' "$1" 2>/dev/null |
        sed -E 's/: final val [0-9.]+ vs [0-9.]+//' | paste -sd, - | sed 's/,/, /g')
    echo "${v:-no gap lines}"
}

# val_gap_percent LOG BASE_LOG: the last val loss of LOG relative to BASE_LOG's, "+0.31%" ("n/a" without both)
val_gap_percent() {
    awk -v a="$(last_val_loss "$1")" -v b="$(last_val_loss "$2")" \
        'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%+.2f%%\n", (a - b) / b * 100; else print "n/a" }'
}

# bench_key LOG SKIP: "X ms/step, Y tok/s, mfu M, peak memory P"
bench_key() {
    local stats
    read -r -a stats <<<"$(progress_stats "$1" "$2")"
    echo "${stats[0]} ms/step, ${stats[1]} tok/s (${stats[2]} steps), mfu $(mfu_mean "$1" "$2"), peak mem $(peak_memory "$1")"
}

# clock_reasons MASK: the names of the bits of nvidia-smi's clocks_event_reasons.active (nvml.h's
# nvmlClocksEventReason*) that hold the SM clock below its maximum while the GPU works, joined by ", "; "none" for 0.
# Bit 0x1 (GPU idle) is left out: a busy sample's window may still hold a moment of idle between steps.
clock_reasons() {
    local mask=$(($1)) names="" bit name
    for bit in 2:"application clocks" 4:"power cap" 8:"hardware slowdown" 16:"sync boost" 32:"thermal (software)" \
        64:"thermal (hardware)" 128:"power brake" 256:"display clock"; do
        name=${bit#*:}
        if (((mask & ${bit%%:*}) != 0)); then names="${names:+$names, }$name"; fi
    done
    echo "${names:-none}"
}

# clock_stats CSV: what the clock sampler saw while the GPU was busy (samples at 50% utilization or more, so the
# start-up before the first step and the exit after the last are left out), from nvidia-smi's lines
#   98, 1755, 1980, 651.20, 62, 0x0000000000000004
# (utilization %, SM clock MHz, its maximum, power W, temperature C, and, where the driver has it, the reasons mask),
# as one line "SAMPLES MEAN_MHZ LOW HIGH MAX_MHZ POWER_W TEMPERATURE_C MASK..." ("-" for a field no sample had, the
# distinct masks last: mawk has no bitwise or, the callers join them); "0" alone when no sample was busy
clock_stats() {
    awk -F', *' '
        $1 ~ /^[0-9]+$/ && $1 + 0 >= 50 && $2 ~ /^[0-9]+$/ {
            n++; sum += $2
            if (n == 1 || $2 < low) { low = $2 }
            if (n == 1 || $2 > high) { high = $2 }
            max_clock = $3
            if ($4 ~ /^[0-9.]+$/) { power += $4; powered++ }
            if ($5 ~ /^[0-9]+$/ && (temperature == "" || $5 > temperature)) { temperature = $5 }
            if (NF >= 6 && $6 ~ /^0x[0-9a-fA-F]+$/ && !($6 in seen)) { seen[$6] = 1; masks = masks " " $6 }
        }
        END {
            if (!n) { print 0; exit }
            printf "%d %.0f %d %d %s %s %s%s\n", n, sum / n, low, high, max_clock == "" ? "-" : max_clock,
                powered ? sprintf("%.0f", power / powered) : "-", temperature == "" ? "-" : temperature, masks
        }' "$1" 2>/dev/null || echo 0
}

# clock_held_down MASK...: the reasons of clock_reasons for the masks joined (nvidia-smi prints one mask per sample)
clock_held_down() {
    local mask=0 m
    for m in "$@"; do mask=$((mask | m)); done
    clock_reasons "$mask"
}

# clock_key CSV: clock_stats in words, e.g. "12 busy samples: SM clock mean 1755 MHz (1650..1980 of 1980), power mean
# 651 W, temperature max 62 C; clock held down by: power cap" (the profile stage's profile_clocks rows)
clock_key() {
    local n mean low high max power temperature masks m
    read -r n mean low high max power temperature masks <<<"$(clock_stats "$1")"
    if [ "${n:-0}" = 0 ]; then
        m=$(grep -vE '^[0-9]' "$1" 2>/dev/null | head -n 1 | cut -c 1-60)
        echo "no busy samples${m:+ (nvidia-smi: $m)}"
        return
    fi
    local key
    key="$n busy sample$([ "$n" = 1 ] || echo s): SM clock mean $mean MHz ($low..$high of $max)"
    [ "$power" != - ] && key="$key, power mean $power W"
    [ "$temperature" != - ] && key="$key, temperature max $temperature C"
    # shellcheck disable=SC2086 # the masks, one word each
    [ -n "$masks" ] && key="$key; clock held down by: $(clock_held_down $masks)"
    echo "$key"
}

# clock_brief CSV: the same in a few words for a bench row, e.g. "SM clock 1755 of 1980 MHz (power cap)", "(not held
# down)" when the reasons mask says none, nothing after the MHz where the driver has no reasons field; "SM clock n/a"
# without a busy sample; nothing at all without the file (a dry run, no nvidia-smi)
clock_brief() {
    [ -e "$1" ] || return 0
    local n mean low high max power temperature masks reasons
    read -r n mean low high max power temperature masks <<<"$(clock_stats "$1")"
    if [ "${n:-0}" = 0 ]; then echo "SM clock n/a"; return; fi
    if [ -z "$masks" ]; then echo "SM clock $mean of $max MHz"; return; fi
    # shellcheck disable=SC2086 # the masks, one word each
    reasons=$(clock_held_down $masks)
    [ "$reasons" = none ] && reasons="not held down"
    echo "SM clock $mean of $max MHz ($reasons)"
}

# failed_targets LOG: the targets `make -k` could not make, from its "make: *** [Makefile:12: target] Error 1" lines
# (also the older "make: *** [target] Error 1"), in order, each once, space-separated; empty when none failed
failed_targets() {
    sed -nE 's/.*\*\*\* \[([^]]*)\] Error.*/\1/p' "$1" 2>/dev/null | sed -E 's/^.*: //' | awk '!seen[$0]++' | paste -sd ' ' -
}

# block_cast_over_copy LOG: from fp8_block_quantize's last timing line
#   block_cast_over_copy 0.72 (the slowest cast's fraction of a device copy's bandwidth; target 0.80): activations 0.72, weights 0.80
# "0.72 activations 0.72, weights 0.80" (the value, then the two it is the smaller of), or nothing without the line
block_cast_over_copy() {
    sed -nE 's/^block_cast_over_copy ([0-9]+(\.[0-9]+)?) \(.*\): (.+)$/\1 \3/p' "$1" 2>/dev/null | tail -n 1
}

# ---------------------------------------------------------------------------------------------------------------------
# results/latest.tsv: the headline GPU figures, one row per name (issue 56), each rewritten when a stage measures it

LATEST_HEADER=$'name\tvalue\tunit\tgpu\tcommit\tdate\tcommand'
LATEST_NOTES=()
LATEST_FAILED=0
LATEST_STAGE_WROTE=0
LATEST_WROTE=0

# latest_commit: the commit a row names: git rev-parse --short HEAD, "-dirty" when a tracked file differs from it;
# results/latest.tsv itself left out (this script rewrites it: the second row of a run would call its own tree dirty)
latest_commit() {
    local commit
    commit=$(git rev-parse --short HEAD 2>/dev/null) || { echo unknown; return; }
    if [ -n "$(git status --porcelain --untracked-files=no -- ':/' ':(top,exclude)results/latest.tsv' 2>/dev/null)" ]; then
        commit="$commit-dirty"
    fi
    echo "$commit"
}

# latest_set FILE NAME VALUE UNIT GPU COMMIT DATE COMMAND: FILE with NAME's row replaced (where it was; added last if
# new), every other line as it was. Written whole to FILE.tmp.PID beside it, then renamed over FILE, so that a reader,
# or a run stopped half-way, finds the old file or the new one, never a part. A missing FILE starts with the header;
# one whose first line is another header is refused, as are a NAME that is not snake_case and a VALUE that is not a
# number (only measured numbers go in). Tabs and newlines inside a field become spaces. Returns 1 with one line on
# stderr when it writes nothing.
latest_set() {
    local file=$1 name=$2 value=$3 field row_fields=() row tmp
    shift
    if [[ ! $name =~ ^[a-z0-9]+(_[a-z0-9]+)*$ ]]; then
        echo "gpu_check: $file: the row name '$name' is not snake_case; nothing written" >&2
        return 1
    fi
    if [[ ! $value =~ ^[-+]?[0-9]+(\.[0-9]+)?$ ]]; then
        echo "gpu_check: $file: $name's value '$value' is not a number; nothing written" >&2
        return 1
    fi
    if [ -e "$file" ] && [ "$(head -n 1 "$file")" != "$LATEST_HEADER" ]; then
        echo "gpu_check: $file: its first line is not the header '${LATEST_HEADER//$'\t'/ }'; nothing written" >&2
        return 1
    fi
    for field in "$@"; do
        field=${field//$'\t'/ }
        row_fields+=("${field//$'\n'/ }")
    done
    row=$(IFS=$'\t'; echo "${row_fields[*]}")
    tmp="$file.tmp.$$"
    # the row through the environment: awk -v would read the backslashes of a command line as escapes. A name found
    # twice (a hand edit) keeps one row, the new one: one row per figure
    if mkdir -p "$(dirname "$file")" &&
        { if [ -e "$file" ]; then cat "$file"; else printf '%s\n' "$LATEST_HEADER"; fi; } |
        LATEST_ROW=$row awk -F '\t' -v name="$name" '
            NR == 1 { print; next }
            $1 == name { if (!done) { print ENVIRON["LATEST_ROW"]; done = 1 } next }
            { print }
            END { if (!done) { print ENVIRON["LATEST_ROW"] } }' >"$tmp" && mv -f "$tmp" "$file"; then
        return 0
    fi
    rm -f "$tmp"
    echo "gpu_check: $file: could not be rewritten; $name not written" >&2
    return 1
}

# latest_write NAME VALUE UNIT COMMAND: a figure a stage has just measured into LATEST_TSV (results/latest.tsv unless
# GPU_CHECK_LATEST names another), with this GPU's name, the run's commit (LATEST_COMMIT, asked once at the start) and
# the UTC date; noted for the stage's latest_tsv row. Nothing in a dry run.
latest_write() {
    [ "${DRY_RUN:-0}" = 1 ] && return 0
    local err
    if err=$(latest_set "${LATEST_TSV:-results/latest.tsv}" "$1" "$2" "$3" "$GPU_NAME" "${LATEST_COMMIT:-unknown}" \
        "$(date -u +%Y-%m-%d)" "$4" 2>&1); then
        LATEST_NOTES+=("$1 $2")
        LATEST_STAGE_WROTE=1
        LATEST_WROTE=1
    else
        LATEST_NOTES+=("$1 NOT WRITTEN: ${err#gpu_check: }")
        LATEST_FAILED=1
    fi
}

# latest_skip NAME WHY: a figure the stage measures but did not write this time, and why (noted the same way)
latest_skip() {
    [ "${DRY_RUN:-0}" = 1 ] && return 0
    LATEST_NOTES+=("$1 not written: $2")
}

# latest_table_row STAGE: a table row saying what STAGE wrote into results/latest.tsv, and what not and why (FAILED
# when a row could not be written); once a row is written, the file copied into LOGDIR, which is what comes back from
# a machine whose working tree does not
latest_table_row() {
    [ ${#LATEST_NOTES[@]} -eq 0 ] && return 0
    local result="(nothing written)" key file=${LATEST_TSV:-results/latest.tsv}
    [ "$LATEST_STAGE_WROTE" = 1 ] && result="OK"
    if [ "$LATEST_FAILED" = 1 ]; then
        result="FAILED (not written)"
        ANY_FAILED=1
    fi
    key=$(printf '%s; ' "${LATEST_NOTES[@]}")
    add_row "latest_tsv_$1" "$result" "${key%; }"
    if [ "$LATEST_WROTE" = 1 ] && [ -f "$file" ]; then cp "$file" "$LOGDIR/latest.tsv"; fi
    LATEST_NOTES=()
    LATEST_FAILED=0
    LATEST_STAGE_WROTE=0
    write_summary
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
# add_step_row NAME KEY: a row for the step run_step just ran; one that failed, timed out or was cut by the budget
# also shows its log's last line; one that never started (skipped: budget, not built) has no key number, "-" (KEY
# would be read from a log the step did not write: "no step total line", "n/a val loss")
add_step_row() {
    local key=$2 last
    if [ "$STEP_RC" -eq -1 ] && [ "${DRY_RUN:-0}" != 1 ]; then
        key="-"
    elif [ "$STEP_RC" -gt 0 ]; then
        last=$(last_line "$WORK/$1.log" | tr '|' '/')
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

# run_step NAME TIMEOUT COMMAND...: runs COMMAND with its output in WORK/NAME.log under min(TIMEOUT, budget left),
# keeping 25 s of the budget for timeout's 10 s grace before SIGKILL, the archive and the table. Sets STEP_RC (-1 not
# run, else the exit status) and STEP_RESULT: OK, FAILED, TIMEOUT (its own limit), SKIPPED (budget) when it could not
# start (less than STEP_MIN_SECONDS, default 20, left) or the budget cut it short (neither is a failure), SKIPPED (not
# built), or DRY RUN (DRY_RUN=1: the command is written, not run). Never stops the script.
run_step() {
    local name=$1 limit=$2
    shift 2
    local log="$WORK/$name.log" left=$((DEADLINE - SECONDS - 25)) cut_by_budget=0
    STEP_RC=-1
    if [ "${DRY_RUN:-0}" = 1 ]; then
        { printf '$'; printf ' %q' "$@"; printf '\n'; } >"$log"
        STEP_RESULT="DRY RUN"
        return
    fi
    if [ "$left" -lt "${STEP_MIN_SECONDS:-20}" ]; then
        STEP_RESULT="SKIPPED (budget)"
        echo "gpu_check: $name: skipped, the time budget is spent" >"$log"
        return
    fi
    if [[ $1 == ./* ]] && [ ! -x "$1" ]; then
        STEP_RESULT="SKIPPED (${1#./} not built)"
        echo "gpu_check: $name: skipped, $1 was not built (see build.log)" >"$log"
        return
    fi
    if [ "$limit" -gt "$left" ]; then limit=$left; cut_by_budget=1; fi
    echo "gpu_check: $name (limit ${limit}s, log $name.log in $GPU_CHECK_ARCHIVE)" >&2
    local start=$SECONDS
    { printf '$'; printf ' %q' "$@"; printf '\n\n'; } >"$log"
    timeout -k 10 "$limit" "$@" >>"$log" 2>&1 </dev/null
    STEP_RC=$?
    local took=$((SECONDS - start))
    if [ "$STEP_RC" -eq 0 ]; then
        STEP_RESULT="OK (${took}s)"
    elif [ "$STEP_RC" -eq 124 ] || [ "$STEP_RC" -eq 137 ]; then
        if [ "$cut_by_budget" -eq 1 ]; then
            STEP_RESULT="SKIPPED (budget: cut after ${limit}s)"
        else
            STEP_RESULT="TIMEOUT (${limit}s)"
            ANY_FAILED=1
        fi
    else
        STEP_RESULT="FAILED (rc $STEP_RC, ${took}s)"
        ANY_FAILED=1
    fi
    printf '\n[gpu_check: %s, exit status %s]\n' "$STEP_RESULT" "$STEP_RC" >>"$log"
}

# remove_checkpoints DIR: the model, state and DONE files (and any half-written NAME.tmp.PID) a training run left in DIR; its
# logs stay
remove_checkpoints() {
    rm -f "$1"/model_*.bin "$1"/model_*.bin.tmp.* "$1"/state_*.bin "$1"/state_*.bin.tmp.* "$1"/DONE_* "$1"/DONE_*.tmp.* 2>/dev/null
    return 0
}

# shrink_log FILE KEEP: a log longer than 2 * KEEP bytes keeps its first and last KEEP bytes around a note
shrink_log() {
    local size
    size=$(stat -c %s "$1" 2>/dev/null || echo 0)
    [ "$size" -le $(($2 * 2)) ] && return 0
    { head -c "$2" "$1"; printf '\n[gpu_check: %s bytes cut from the middle of this log to fit the archive]\n' \
        $((size - 2 * $2)); tail -c "$2" "$1"; } >"$1.cut" && mv "$1.cut" "$1"
}

# archive_logs WORK OUT_FILE: WORK's files (logs, training logs, pictures) as one .tar.gz of at most
# GPU_CHECK_ARCHIVE_MAX_BYTES (16 MiB): when over, the text files (.log, .tsv, .txt, .out) above 1 MiB (then 64 KiB)
# are cut in the middle and the archive made again; never a model or a picture, which a later step may still read.
# Written to a temporary name first, so OUT_FILE is always a whole archive.
archive_logs() {
    local work=$1 out=$2 max=${GPU_CHECK_ARCHIVE_MAX_BYTES:-16777216} keep f
    for keep in 0 524288 32768; do
        if [ "$keep" -gt 0 ]; then
            while IFS= read -r -d '' f; do shrink_log "$f" "$keep"; done < <(find "$work" -type f \( -name '*.log' \
                -o -name '*.tsv' -o -name '*.txt' -o -name '*.out' \) -size +$((keep * 2 / 1024))k -print0)
        fi
        tar -czf "$out.tmp" -C "$work" . 2>/dev/null || { rm -f "$out.tmp"; return 1; }
        if [ "$(stat -c %s "$out.tmp")" -le "$max" ]; then mv "$out.tmp" "$out"; return 0; fi
    done
    mv "$out.tmp" "$out"  # still over: keep it, the caller's table says so
    return 1
}

# corpus_source DATA_DIR INPUT: where the training text comes from, without network: "prepared" when DATA_DIR holds
# the shards and tokenizer, "input PATH" when INPUT names a file, else "script" (prepare_tinyshakespeare.sh looks for
# a local copy and says how to pass one when it finds none)
corpus_source() {
    if [ -s "$1/tiny_shakespeare_train.bin" ] && [ -s "$1/tiny_shakespeare_val.bin" ] && [ -s "$1/tokenizer.bin" ]; then
        echo prepared
    elif [ -n "$2" ]; then
        echo "input $2"
    else
        echo script
    fi
}

# quote_words WORD...: the words as one shell line, quoting only those that need it (printf %q would escape commas)
quote_words() {
    local word line=""
    for word in "$@"; do
        if [[ $word =~ ^[A-Za-z0-9_./,=:+@%-]+$ ]]; then line="$line $word"; else line="$line $(printf '%q' "$word")"; fi
    done
    echo "${line# }"
}

# stage_selected NAME: whether --only (or the default) picked stage NAME
stage_selected() { [[ " $STAGES " == *" $1 "* ]]; }

# parse_stages LIST: "a,b" -> "a b", every name a stage; prints the list, or an error on stderr and returns 1
parse_stages() {
    local list=${1//,/ } name
    [ -n "${list// /}" ] || { echo "gpu_check: error: --only needs at least one stage ($GPU_CHECK_STAGES)" >&2; return 1; }
    for name in $list; do
        if [[ " $GPU_CHECK_STAGES " != *" $name "* ]]; then
            echo "gpu_check: error: unknown stage '$name' (stages: $GPU_CHECK_STAGES; $GPU_CHECK_USAGE)" >&2
            return 1
        fi
    done
    echo "$list"
}

# find_ncu: Nsight Compute's command line: $NCU when set (whether or not it exists: the stage says so), else ncu on
# PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin, else the newest /opt/nvidia/nsight-compute/*/ncu; nothing if none
find_ncu() {
    if [ -n "${NCU:-}" ]; then echo "$NCU"; return; fi
    if command -v ncu >/dev/null 2>&1; then command -v ncu; return; fi
    local d
    for d in "${CUDA_HOME:-}" /usr/local/cuda; do
        if [ -n "$d" ] && [ -x "$d/bin/ncu" ]; then echo "$d/bin/ncu"; return; fi
    done
    find /opt/nvidia/nsight-compute -maxdepth 2 -name ncu -type f -perm -u+x 2>/dev/null | sort -V | tail -n 1
}

find_sanitizer() {
    if command -v compute-sanitizer >/dev/null 2>&1; then command -v compute-sanitizer; return; fi
    local home=${CUDA_HOME:-}
    if [ -z "$home" ] && command -v nvcc >/dev/null 2>&1; then home=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")"); fi
    for d in "$home" /usr/local/cuda; do
        if [ -n "$d" ] && [ -x "$d/bin/compute-sanitizer" ]; then echo "$d/bin/compute-sanitizer"; return; fi
    done
}

# process_alive PID: whether our child PID still runs: one that has ended but is not yet waited for (a zombie, state
# Z in /proc/PID/stat, after the command name in parentheses) answers kill -0 all the same
process_alive() {
    kill -0 "$1" 2>/dev/null || return 1
    [ "$(sed -E 's/.*\) ([A-Za-z]).*/\1/' "/proc/$1/stat" 2>/dev/null)" != Z ]
}

# clock_sampler_start FILE: nvidia-smi writes a sample into FILE every 100 ms in the background (CLOCK_SAMPLER_PID)
# until clock_sampler_stop. Why: ncu times each kernel of the profiled step alone, on a GPU that rests between kernels
# and so likely runs at its full clock; a step under steady load may run at a lower one (power or thermal cap). The
# step time minus the kernels' sum then holds that slowdown as well as the GPU's idle time, and these samples tell the
# two apart.
# The reasons field is clocks_event_reasons.active in drivers from 535 on, clocks_throttle_reasons.active before. GPU 0
# (-i 0) is the trainer's where CUDA_VISIBLE_DEVICES does not reorder them (nvidia-smi does not read it).
CLOCK_FIELDS="utilization.gpu,clocks.sm,clocks.max.sm,power.draw,temperature.gpu"
clock_sampler_start() {
    local fields="" reasons
    CLOCK_SAMPLER_PID=""
    if [ "${DRY_RUN:-0}" = 1 ] || ! command -v nvidia-smi >/dev/null 2>&1; then return 0; fi
    for reasons in clocks_event_reasons.active clocks_throttle_reasons.active ""; do
        fields="$CLOCK_FIELDS${reasons:+,$reasons}"
        nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits -i 0 >/dev/null 2>&1 && break
    done
    # Until it execs nvidia-smi, the background job is a copy of this shell, with its EXIT trap (rm -rf "$WORK") and
    # its handler for SIGTERM: a kill in that moment (clock_sampler_stop right after a step skipped at once) either ran
    # the trap, taking every log with it, or was taken by the handler and lost, leaving nvidia-smi sampling and `wait`
    # waiting for ever. So the subshell drops the trap, and we return only once the job's command line is no longer
    # this shell's (it has exec'd), or it has ended; 5 s at most.
    (
        trap - EXIT
        exec nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits -i 0 -lms 100 >"$1" 2>&1 </dev/null
    ) &
    CLOCK_SAMPLER_PID=$!
    for _ in $(seq 1 100); do
        process_alive "$CLOCK_SAMPLER_PID" || return 0
        [ -r "/proc/$$/cmdline" ] || { sleep 0.5; return 0; }  # no /proc: give it time instead
        cmp -s "/proc/$CLOCK_SAMPLER_PID/cmdline" "/proc/$$/cmdline" || return 0
        sleep 0.05
    done
}
# clock_sampler_stop: ends the sampler, with SIGKILL where SIGTERM has not ended it within 2 s, so that it never hangs
clock_sampler_stop() {
    if [ -n "${CLOCK_SAMPLER_PID:-}" ]; then
        kill "$CLOCK_SAMPLER_PID" 2>/dev/null
        for _ in $(seq 1 40); do
            process_alive "$CLOCK_SAMPLER_PID" || break
            sleep 0.05
        done
        kill -KILL "$CLOCK_SAMPLER_PID" 2>/dev/null
        wait "$CLOCK_SAMPLER_PID" 2>/dev/null
    fi
    CLOCK_SAMPLER_PID=""
}

# write_summary: the header and the table so far into LOGDIR/summary.txt, and the logs into the archive (after every
# step, so a run stopped from outside still leaves both)
write_summary() {
    local seconds=$SECONDS
    printf '# GPU check, %s (%ss so far)\nGPU: %s, driver %s, %s | commit %s\ncommand: %s\nstages: %s\n\n%s\n' "$STARTED" \
        "$seconds" "$GPU_NAME" "$GPU_DRIVER" "$GPU_MEMORY" "$COMMIT" "$COMMAND_LINE" "$STAGES" "$(print_table)" \
        >"$LOGDIR/summary.txt"
    archive_logs "$WORK" "$LOGDIR/$GPU_CHECK_ARCHIVE" || ARCHIVE_OVER=1
}

# row STEP KEY: the row of the step just run, then the summary and archive brought up to date
row() { add_step_row "$1" "$2"; write_summary; }

# ---------------------------------------------------------------------------------------------------------------------
# the stages

# the dev stage's programs in dev/cuda/, in the order it runs them (attention_cudnn after them where built)
DEV_PROGRAMS="fp8_quantize fp8_update fp8_gemm fp8_current_scaling fp8_block_quantize fp8_block_gemm gelu_fp8 layernorm
layernorm_fp8 classifier adamw"
dev_programs() {
    local p
    for p in $DEV_PROGRAMS; do printf 'dev/cuda/%s ' "$p"; done
    cudnn_programs
}

# the programs each stage runs (the build of a run without the build stage makes only these)
stage_programs() {
    case $1 in
        dev) dev_programs ;;
        test | sanitize) echo "test_gpt_fp8" ;;
        xcheck) echo "train_gpt_fp8 train_gpt_fp8_cpu dev/compare_runs" ;;
        train) echo "train_gpt_fp8 dev/data/tokenizer" ;;
        bench | llmc | nccl | profile) echo "train_gpt_fp8" ;;
        gemm) echo "dev/cuda/gemm_shapes" ;;
    esac
}

# " dev/cuda/attention_cudnn dev/cuda/attention_cudnn_fp8" where the Makefile builds with cuDNN (make info says so),
# else nothing; asked once, and not at all in a dry run or when the budget leaves no step to run (nothing is built then)
cudnn_programs() {
    if [ -z "${CUDNN_PROGRAMS+set}" ]; then
        CUDNN_PROGRAMS=""
        if [ "${DRY_RUN:-0}" != 1 ] && [ $((DEADLINE - SECONDS - 25)) -ge "${STEP_MIN_SECONDS:-20}" ] &&
            make -s info 2>/dev/null | grep -q 'cuDNN found'; then
            CUDNN_PROGRAMS=" dev/cuda/attention_cudnn dev/cuda/attention_cudnn_fp8"
        fi
    fi
    echo "$CUDNN_PROGRAMS"
}

stage_build() {
    local targets="all cuda dev/cuda/gemm_shapes" stage program missing="" failed
    if ! stage_selected build; then
        targets=""
        for stage in $STAGES; do targets="$targets $(stage_programs "$stage")"; done
        targets=$(echo "$targets" | tr ' ' '\n' | awk 'NF && !seen[$0]++' | paste -sd ' ' -)
    fi
    [ -z "$targets" ] && return
    # -k: one target that fails to build does not stop the others; gemm_shapes by name too (its pattern rule builds it
    # even where the Makefile's DEV_CUDA does not list it)
    run_step build 420 bash -c "make info && make -k -j$(nproc) $targets"
    for program in $targets; do
        case $program in all | cuda) continue ;; esac
        [ -x "$program" ] || missing="$missing $program"
    done
    if stage_selected build; then
        for program in train_gpt_fp8 test_gpt_fp8 train_gpt_fp8_cpu dev/compare_runs dev/cuda/gemm_shapes \
            $(dev_programs); do
            [ -x "$program" ] || missing="$missing $program"
        done
    fi
    failed=$(failed_targets "$WORK/build.log")
    local key
    if [ -n "$failed" ]; then
        key="failed to build: $failed"
    elif [ -n "$missing" ]; then
        key="not built:$missing"
    elif stage_selected build; then
        key="every target built"
    else
        key="built what the stages run: $targets"
    fi
    row build "$key"
}

stage_dev() {
    local p cast
    for p in $(dev_programs | sed 's|dev/cuda/||g'); do
        run_step "$p" 120 "./dev/cuda/$p"
        add_step_row "$p" "$(suite_result "$WORK/$p.log")"
        if [ "$p" = fp8_quantize ]; then
            add_row quantize_bandwidth "(in fp8_quantize)" "$(quantize_bandwidth "$WORK/fp8_quantize.log")"
        fi
        if [ "$p" = fp8_block_quantize ]; then
            # results/latest.tsv's block_cast_over_copy: the cast and the copy timed in this one run, written only
            # when every check of the run passed (exit 0: casts that are wrong have no bandwidth worth recording)
            cast=$(block_cast_over_copy "$WORK/fp8_block_quantize.log")
            if [ -n "$cast" ]; then
                add_row block_cast_over_copy "(in fp8_block_quantize)" \
                    "${cast%% *} of a device copy's bandwidth, the slowest block cast (${cast#* })"
            else
                add_row block_cast_over_copy "(in fp8_block_quantize)" "no block_cast_over_copy line"
            fi
            if [ "$STEP_RC" -eq 0 ] && [ -n "$cast" ]; then
                latest_write block_cast_over_copy "${cast%% *}" x "./dev/cuda/fp8_block_quantize: the slowest block\
 cast's GB/s over a device-to-device copy's of the same tensor, both timed in that run (${cast#* }); the dev stage of\
 $COMMAND_LINE"
            elif [ "$STEP_RC" -eq 0 ]; then
                latest_skip block_cast_over_copy "fp8_block_quantize printed no block_cast_over_copy line"
            else
                latest_skip block_cast_over_copy "fp8_block_quantize $STEP_RESULT"
            fi
        fi
        if [ "$p" = gelu_fp8 ]; then
            add_row gelu_fp8_time "(in gelu_fp8)" "$(gelu_fp8_time "$WORK/gelu_fp8.log")"
        fi
        if [ "$p" = layernorm ]; then
            add_row layernorm_time "(in layernorm)" "$(layernorm_time "$WORK/layernorm.log")"
        fi
        if [ "$p" = layernorm_fp8 ]; then
            add_row layernorm_fp8_time "(in layernorm_fp8)" "$(layernorm_fp8_time "$WORK/layernorm_fp8.log")"
        fi
        if [ "$p" = classifier ]; then
            add_row classifier_time "(in classifier)" "$(classifier_time "$WORK/classifier.log")"
        fi
        write_summary
    done
    latest_table_row dev
}

stage_test() {
    run_step test_gpt_fp8 240 ./test_gpt_fp8
    row test_gpt_fp8 "$(suite_result "$WORK/test_gpt_fp8.log")"
}

# The xcheck stage's recipes (XCHECK_RECIPES in the environment picks some): each name's trainer flags (a recipe the
# trainers gain joins this list and the case). After the five recipes, the paths the FP8 flags switch (issue 55): the
# LM head in FP8 (its logits-gradient cast, the kept x^T of lnf, the tied embedding's FP8 copy) and each per-GEMM
# override once, spread over the recipes. (-r and -fp8_bf16_first_last are not here: the CPU trainer refuses -r, and
# this model's two blocks would both be the BF16 ends; test_gpt_fp8's recompute test checks both against -r 0.) Then
# blockwise where every GEMM's k ends in a partial block (fp8_blockwise_c160, issue 58), and FP8 attention (cuDNN's FP8
# forward, issue 57) with each of the backward's inputs (-fp8_attention 1 and 2).
XCHECK_RECIPES=${XCHECK_RECIPES:-"bf16 fp8_delayed fp8_current fp8_blockwise fp8_mxfp8 fp8_delayed_lm_head \
fp8_current_no_fprop fp8_blockwise_no_wgrad fp8_mxfp8_no_dgrad fp8_blockwise_c160 fp8_delayed_attention \
fp8_delayed_attention_mha"}
xcheck_recipe_flags() {
    case $1 in
        bf16) echo "-precision bf16" ;;
        fp8_delayed) echo "-precision fp8 -fp8_recipe delayed -fp8_amax_history_len 32" ;;
        fp8_current) echo "-precision fp8 -fp8_recipe current" ;;
        fp8_blockwise) echo "-precision fp8 -fp8_recipe blockwise" ;;
        fp8_mxfp8) echo "-precision fp8 -fp8_recipe mxfp8" ;;
        fp8_delayed_lm_head) echo "-precision fp8 -fp8_recipe delayed -fp8_amax_history_len 32 -fp8_lm_head 1" ;;
        fp8_current_no_fprop) echo "-precision fp8 -fp8_recipe current -fp8_fprop 0" ;;
        fp8_blockwise_no_wgrad) echo "-precision fp8 -fp8_recipe blockwise -fp8_wgrad 0" ;;
        fp8_mxfp8_no_dgrad) echo "-precision fp8 -fp8_recipe mxfp8 -fp8_dgrad 0" ;;
        fp8_blockwise_c160) echo "-precision fp8 -fp8_recipe blockwise" ;;
        fp8_delayed_attention) echo "-precision fp8 -fp8_recipe delayed -fp8_amax_history_len 32 -fp8_attention 1" ;;
        fp8_delayed_attention_mha)
            echo "-precision fp8 -fp8_recipe delayed -fp8_amax_history_len 32 -fp8_attention 2" ;;
    esac
}

# The model a recipe's runs start from (each made once: one CPU step from the seed, so that both trainers load one
# model file) and the batch and steps they take: "model", heads of 32 (-b 4 -t 64, 20 steps); "hs64", heads of 64
# where cuDNN's FP8 attention runs (GPT-2's head size, the one dev/cuda/attention_cudnn_fp8 checks cuDNN builds);
# "c160", where blockwise's GEMMs reduce over ks that end in partial blocks (C 160, 3C 480 and, at -b 3, B*T 192: the
# casts pad them with zero codes to whole blocks of 128, llmc/linear.h's linear_fp8_gemm_k), 15 steps: from step 16
# on this model meets gradient spikes that magnify rounding alone past the norm's tolerance (two runs of the emulated
# GPU trainer that differ only in their GEMMs' summation order, -gemm_autotune 0 and 8, differ by 7% at step 19, and
# mxfp8, which pads nothing, misses the CPU's by 14% there; RESULTS.md, 2026-11-29)
xcheck_recipe_model() {
    case $1 in
        fp8_delayed_attention | fp8_delayed_attention_mha) echo hs64 ;;
        fp8_blockwise_c160) echo c160 ;;
        *) echo model ;;
    esac
}
xcheck_model_shape() {
    case $1 in
        hs64) echo "-L 2 -C 128 -NH 2" ;;
        c160) echo "-L 2 -C 160 -NH 5" ;;
        *) echo "-L 2 -C 128 -NH 4" ;;
    esac
}
xcheck_recipe_batch() {
    case $1 in
        fp8_blockwise_c160) echo "-b 3 -t 64 -d 384 -x 15" ;;
        *) echo "-b 4 -t 64 -d 512 -x 20" ;;
    esac
}

# xcheck_key LOG: the largest relative difference of each quantity dev/compare_runs printed, and its summary
#   "train1 0, val0 0, train 6.77e-05, val 0.000432, norm 0, fp8 fwd 0.0267, fp8 bwd 0.0632 (9 passed, 0 failed)"
xcheck_key() {
    awk '
        /^(PASS|FAIL) / {
            kind = ""
            if ($0 ~ /^.... train loss of step 1:/) { kind = "train1" }
            else if ($0 ~ /^.... val loss of step 0:/) { kind = "val0" }
            else if ($0 ~ /^.... train loss:/) { kind = "train" }
            else if ($0 ~ /^.... val loss:/) { kind = "val" }
            else if ($0 ~ /^.... gradient norm:/) { kind = "norm" }
            else if ($0 ~ /^.... FP8 forward slots/) { kind = "fp8 fwd" }
            else if ($0 ~ /^.... FP8 backward slots/) { kind = "fp8 bwd" }
            if (kind != "" && match($0, /largest relative difference [^ ]+/)) {
                value[kind] = substr($0, RSTART + 28, RLENGTH - 28)
            }
        }
        /^compare_runs: [0-9]+ passed, [0-9]+ failed/ { summary = $2 " " $3 " " $4 " " $5 }
        END {
            n = split("train1,val0,train,val,norm,fp8 fwd,fp8 bwd", kinds, ",")
            for (i = 1; i <= n; i++) { if (kinds[i] in value) { line = line (line ? ", " : "") kinds[i] " " value[kinds[i]] } }
            if (summary == "") { print "no comparison" } else { print line " (" summary ")" }
        }' "$1" 2>/dev/null
}

# xcheck: the GPU trainer and the CPU reference as whole programs (main's step order, gradient accumulation over
# micro-steps, the loss averaged over them, the NaN-skip path, the end of step, checkpoints), from one model file and
# the same shards and flags: a model the CPU trains in a second (L 2, C 128, NH 4: head size 32, which cuDNN runs;
# B 4, T 64: B*T a multiple of 64, as FP8 on the GPU needs), -d 512 = 2 micro-steps a step, a NaN gradient at step 4
# (-debug_nan_step 3), 20 steps with a val loss every 5, an amax history of 32 rows: longer than the run, so the rows
# still 0 show exactly how often each side rolled (compare_runs fails an entry that is 0 on one side only).
# XCHECK_GPU_TRAINER (default ./train_gpt_fp8) lets the CPU suite run this stage with the CPU trainer on both sides,
# and dev/cuda/emulate/run_emulated.sh with the GPU trainer built for the CPU (its steps longer: XCHECK_STEP_SECONDS,
# each recipe's limit, default 180).
#
# Tolerances, relative to the CPU's value (dev/compare_runs adds the logs' print resolution, 1e-4 for losses and 1e-2
# for norms). llmc/tolerance.h has the rules R1-R5 named here; what differs between the trainers: the order of every
# sum (cuBLASLt's GEMMs, the GPU's LayerNorm, softmax and norm reductions), expf/tanhf/rsqrtf (an fp32 ulp or two),
# cuDNN's attention (online softmax, probabilities rounded to bf16 before P V) and, in FP8, the forward GEMMs' fast
# accumulation (Hopper keeps about 14 bits of a partial sum: 2^-13 per 32 products, dev/cuda/fp8_gemm.cu). Each of
# these reaches a stored bf16 value only where the two sides' fp32 results straddle a rounding, as one ulp (R3); in
# FP8 such a neighbour can straddle an E4M3 or E5M2 rounding too, one FP8 ulp of that element (2^-3, 2^-2), which
# its GEMM's sum over k products weighs as one term of k. Counted along this model's paths (12 stored roundings a
# block, ln1 ... residual3, with the plain attention's 3; the LM head and its LayerNorm 2 more):
#   the first step's losses (train loss of step 1, val loss of step 0: the same weights on both sides): 2^-9 of the
#     loss. The logits pass 12 * 2 + 2 = 26 roundings: R5 bounds their rms difference by sqrt(26) = 5.1 ulps, 4% of a
#     logit, and logits are near 0 this early (|z| ~ 1 against a loss of 6.7); a token's loss moves by at most twice
#     its logits' change, and the 512 tokens' differences are independent, so their mean shrinks by sqrt(512) = 22:
#     2 * 4% * 1 / 22 = 0.0036 of 6.7, 2^-9 (0.2%) of the loss with a little room;
#   the later steps' losses: 2^-7 (one bf16 ulp of the loss, 0.78%). As above, with twice the roundings (each weight
#     on a path may be a neighbour after an update that rounded differently, R3): sqrt(2) * 0.0036 = 0.005; plus
#     the weights whose near-zero gradient has the other sign on the other side, moved by lr the other way, which
#     shift every token alike (no sqrt(512)) but little (a weight whose gradient is near zero barely moves the
#     loss): 2^-7 leaves them 0.003 of 6.7. A micro-step left out of the average (1-5%) or counted twice (100%) shows;
#   the gradient norm: 2^-5 (3.1%), R5 over the backward's roundings: the deepest gradient (block 0's qkv
#     grad_output) passes 26 + 21 = 47, and sqrt(47) ulps = 5.4% bounds the rms difference of single gradients; the
#     norm, the root of a sum of 600k squares, moves by the rms difference weighted by the gradients' sizes, well
#     below that; a micro-step's gradient left out or counted twice moves it by 30% to 100%;
#   the FP8 state (every amax history entry, scale and scale_inv; a scale is fp8_max / an amax, so it differs as
#     much): R4 for the largest element of a tensor, doubled for the weights on its path, each of which may be a
#     neighbour after the first update (there are no more weights on a path than roundings): forward slots 2 * 22
#     ulps = 34% (block 1's fcproj input passes 12 + 10 roundings), backward slots 2 * 47 ulps = 73%. Loose: they catch
#     a slot mixed up with another, a missing factor or scale; a step's amax recorded or a history rolled on one side
#     only is 0 against a number, which fails at any tolerance; the kernels themselves are checked tightly by
#     test_gpt_fp8 and dev/cuda.
# FP8 attention (fp8_delayed_attention, _mha) adds one difference that is not a rounding neighbour: the two sides
# quantize the softmax output at different points (the CPU the normalized weights, cuDNN each tile's exp(s - running
# max)), so each weight differs by up to two E4M3 roundings (2u4 = 2^-3 relative) and each attention output, which both
# sides then cast to E4M3 with one scale, by up to one E4M3 ulp where the two values straddle a rounding. That is the
# size of the FP8 neighbour the counts above already allow at that tensor (attproj's E4M3 input, one FP8 ulp), once more
# per element: the FP8 budget at the attention output doubles, and so do the loss and norm tolerances that carry it
# (2^-8, 2^-6, 2^-4); the FP8 state's stay (the output's amax differs by at most the same E4M3 ulp, 12.5%, inside 34%).
# A CPU run that emulated cuDNN's tile quantization against the CPU trainer (one 64-key tile at T 64; a throwaway patch,
# 2026-11-28) differed by 6e-5 (first losses), 2.4e-3 (val loss), 1.2% (norm), 10% (forward slots) and 7% (backward
# slots): within the undoubled tolerances, so the doubling is room for the GPU's roundings.
stage_xcheck() {
    local dir="$WORK/xcheck" gpu_trainer=${XCHECK_GPU_TRAINER:-./train_gpt_fp8} recipe
    # (the numbers above: 2^-9, 2^-7, 2^-5, 44 * 2^-7, 94 * 2^-7)
    local tolerances=(-loss_first 0.001953125 -loss 0.0078125 -norm 0.03125 -fp8_forward 0.34375 -fp8_backward 0.734375
        -skipped 4)
    # FP8 attention's (above: the loss and norm tolerances doubled)
    local attention_tolerances=(-loss_first 0.00390625 -loss 0.015625 -norm 0.0625 -fp8_forward 0.34375
        -fp8_backward 0.734375 -skipped 4)
    mkdir -p "$dir"
    # the starts, each model the recipes ask for (xcheck_recipe_model) made once, in the order they first ask
    local made=" " name step
    for recipe in $XCHECK_RECIPES; do
        name=$(xcheck_recipe_model "$recipe")
        [[ $made == *" $name "* ]] && continue
        made="$made$name "
        step=xcheck_model
        [ "$name" = model ] || step="xcheck_model_$name"
        # shellcheck disable=SC2046 # the shape's flags are words
        run_step "$step" 60 ./train_gpt_fp8_cpu "${DATA_FLAGS[@]}" $(xcheck_model_shape "$name") -b 4 -t 64 -x 1 -v 0 \
            -s 0 -seed 1337 -precision bf16 -o "$dir/$name"
        rm -f "$dir/$name"/state_*.bin "$dir/$name"/DONE_*  # (the runs load the model file only)
        add_step_row "$step" \
            "the start of the runs from a model $(xcheck_model_shape "$name"): $name/model_00000001.bin"
    done
    write_summary
    local recipe_model recipe_tolerances
    for recipe in $XCHECK_RECIPES; do
        recipe_model="$dir/$(xcheck_recipe_model "$recipe")/model_00000001.bin"
        recipe_tolerances=("${tolerances[@]}")
        if [[ $recipe == fp8_delayed_attention* ]]; then recipe_tolerances=("${attention_tolerances[@]}"); fi
        # shellcheck disable=SC2046 # the recipe's flags are words
        run_step "xcheck_$recipe" "${XCHECK_STEP_SECONDS:-180}" bash -c '
            gpu_trainer=$1 dir=$2 compare=$3
            shift 3
            tolerances=()
            while [ "$1" != -- ]; do tolerances+=("$1"); shift; done
            shift
            rm -rf "$dir" && mkdir -p "$dir" || exit 1
            echo "== $gpu_trainer"
            "$gpu_trainer" "$@" -o "$dir/gpu" || exit 1
            echo "== ./train_gpt_fp8_cpu"
            ./train_gpt_fp8_cpu "$@" -o "$dir/cpu" || exit 1
            echo "== $compare ${tolerances[*]} $dir/gpu $dir/cpu"
            "$compare" "${tolerances[@]}" "$dir/gpu" "$dir/cpu"' xcheck "$gpu_trainer" "$dir/$recipe" ./dev/compare_runs \
            "${recipe_tolerances[@]}" -- "${DATA_FLAGS[@]}" -e "$recipe_model" $(xcheck_recipe_batch "$recipe") \
            -v 5 -m 4 -s 0 -l 1e-3 -u 5 -seed 1337 -fp8_diag_every 0 -debug_nan_step 3 \
            $(xcheck_recipe_flags "$recipe") ${EXTRA[@]+"${EXTRA[@]}"}
        remove_checkpoints "$dir/$recipe/gpu"
        remove_checkpoints "$dir/$recipe/cpu"
        row "xcheck_$recipe" "$(xcheck_key "$WORK/xcheck_$recipe.log")"
    done
    for name in $made; do remove_checkpoints "$dir/$name"; done
}

# The train stage's runs, by the names of their steps (TRAIN_RUNS picks some: issue 57's 1000-step comparison alone is
# TRAIN_RUNS="bf16 fp8 fp8_attention fp8_attention_mha", the four the plots need, without the block recipes' runs,
# the resumes and the faults)
GPU_CHECK_TRAIN_RUNS="bf16 fp8 fp8_blockwise fp8_mxfp8 fp8_attention fp8_attention_mha resume resume_current \
resume_blockwise resume_mxfp8 nan_skip faults"
train_wants() { [[ " ${TRAIN_RUNS:-$GPU_CHECK_TRAIN_RUNS} " == *" $1 "* ]]; }

stage_train() {
    local data=data/tinyshakespeare source train_tokens val_tokens run
    source=$(corpus_source "$data" "$INPUT_TEXT")
    case $source in
        prepared) ;;  # nothing to run: the shards were carried over or made by an earlier run
        input*) run_step data 180 ./dev/data/prepare_tinyshakespeare.sh "${source#input }" ;;
        *) run_step data 180 ./dev/data/prepare_tinyshakespeare.sh ;;
    esac
    train_tokens=$(od -An -t d4 -j 8 -N 4 "$data/tiny_shakespeare_train.bin" 2>/dev/null | tr -d ' ')
    val_tokens=$(od -An -t d4 -j 8 -N 4 "$data/tiny_shakespeare_val.bin" 2>/dev/null | tr -d ' ')
    if [ "$source" = prepared ]; then
        add_row data "OK (prepared)" "train ${train_tokens:-?} tokens, val ${val_tokens:-?} tokens, already in $data"
        write_summary
    else
        row data "train ${train_tokens:-?} tokens, val ${val_tokens:-?} tokens"
    fi
    for run in ${TRAIN_RUNS:-}; do  # (a name no step has would run nothing, silently)
        if [[ " $GPU_CHECK_TRAIN_RUNS " != *" $run "* ]]; then
            echo "gpu_check: train: unknown run '$run' in TRAIN_RUNS ($GPU_CHECK_TRAIN_RUNS)" >"$WORK/train_runs.log"
            add_row train_runs "FAILED (unknown run '$run')" "TRAIN_RUNS: $GPU_CHECK_TRAIN_RUNS"
            ANY_FAILED=1
            write_summary
        fi
    done
    local precision stats run_dir recipe_flags
    # the block recipes after delayed scaling (blockwise: Hopper's block-scaled GEMMs; mxfp8: emulated, its accuracy),
    # then delayed scaling with FP8 attention (issue 57: d12's heads are 64 wide, cuDNN's FP8 forward), its BF16
    # backward from the bf16 q k v (-fp8_attention 1, TE's fp8_dpa) and from their E4M3 cast (2, TE's fp8_mha)
    for precision in bf16 fp8 fp8_blockwise fp8_mxfp8 fp8_attention fp8_attention_mha; do
        train_wants "$precision" || continue
        run_dir="$WORK/train_$precision"
        case $precision in
            fp8_attention) recipe_flags=(-precision fp8 -fp8_attention 1) ;;
            fp8_attention_mha) recipe_flags=(-precision fp8 -fp8_attention 2) ;;
            fp8_*) recipe_flags=(-precision fp8 -fp8_recipe "${precision#fp8_}") ;;
            *) recipe_flags=(-precision "$precision") ;;
        esac
        run_step "train_$precision" 240 ./train_gpt_fp8 "${DATA_FLAGS[@]}" -e d12 -b 8 -t 1024 -v 50 -m 20 -l 6e-4 \
            -u 50 -q 0.1 -x "$TRAIN_STEPS" -s 0 -seed 1337 "${recipe_flags[@]}" -o "$run_dir" \
            ${EXTRA[@]+"${EXTRA[@]}"}
        remove_checkpoints "$run_dir"
        read -r -a stats <<<"$(progress_stats "$WORK/train_$precision.log" "$SKIP")"
        row "train_$precision" "val $(last_val_loss "$WORK/train_$precision.log"), train $(last_train_loss "$WORK/train_$precision.log"), ${stats[0]} ms/step"
    done
    # resume: a small FP8 run killed at step 9 (after the checkpoint of step 6 and the diagnostics block of step 8, on
    # neither), then resumed with -y 1: its folder must end byte for byte as the uninterrupted run's (the CPU suite
    # checks the CPU trainer the same way); both folders are removed after. In every FP8 recipe (step resume: delayed
    # scaling; resume_current, resume_blockwise, resume_mxfp8), each step of two micro-batches (-d 4096 at B 8, T 256),
    # so that a resume also restores the accumulation's position in the data. The GEMMs' algorithms are timed
    # (-gemm_autotune, the default): the killed run chooses them and writes gemm_algos_00000.tsv, which the resumed run
    # must read back; the uninterrupted run starts from a copy of that file (how a run is repeated), since its own
    # timing could choose other algorithms
    local resume_recipe resume_step resume_flags
    for resume_recipe in delayed current blockwise mxfp8; do
        resume_step=resume
        resume_flags=(-fp8_recipe delayed -fp8_amax_history_len 16)
        if [ "$resume_recipe" != delayed ]; then
            resume_step=resume_$resume_recipe
            resume_flags=(-fp8_recipe "$resume_recipe")
        fi
        train_wants "$resume_step" || continue
        run_step "$resume_step" 120 bash -c '
            dir=$1
            shift
            rm -rf "$dir" && mkdir -p "$dir/straight" || exit 1
            ./train_gpt_fp8 "$@" -o "$dir/resumed" -debug_kill_step 9
            [ $? -eq 137 ] || { echo "the run to resume was not killed at step 9"; rm -rf "$dir"; exit 1; }
            if [ -f "$dir/resumed/gemm_algos_00000.tsv" ]; then  # (none with -gemm_autotune 0 or 1 in the flags)
                cp "$dir/resumed/gemm_algos_00000.tsv" "$dir/straight/" || { rm -rf "$dir"; exit 1; }
            fi
            ./train_gpt_fp8 "$@" -o "$dir/straight" || { rm -rf "$dir"; exit 1; }
            ./train_gpt_fp8 "$@" -o "$dir/resumed" -y 1 || { rm -rf "$dir"; exit 1; }
            if diff -r -q "$dir/straight" "$dir/resumed"; then
                echo "resume: every file byte-identical ($(ls "$dir/straight" | wc -l) files)"
                rc=0
            else
                echo "resume: files differ from the uninterrupted run"
                rc=1
            fi
            rm -rf "$dir"
            exit $rc' resume "$WORK/$resume_step" "${DATA_FLAGS[@]}" -L 4 -C 256 -NH 4 -b 8 -t 256 -d 4096 -x 20 -n 6 \
            -v 6 -m 2 -s 0 -seed 1337 -precision fp8 "${resume_flags[@]}" -fp8_diag_every 4 ${EXTRA[@]+"${EXTRA[@]}"}
        row "$resume_step" "$(grep -E '^resume: ' "$WORK/$resume_step.log" 2>/dev/null | tail -n 1 | sed 's/^resume: //')"
    done
    # nan_skip: a NaN poisoned into the gradient of step 4 (-debug_nan_step 3) must skip that step with a warning, and
    # the run must go on to a finite loss with its FP8 state intact (the CPU suite checks the CPU trainer the same way)
    if train_wants nan_skip; then
        run_step nan_skip 60 bash -c '
            ./train_gpt_fp8 "$@" || exit 1' nan_skip "${DATA_FLAGS[@]}" -L 4 -C 256 -NH 4 -b 8 -t 256 -x 8 -v 8 -m 2 \
            -s 0 -seed 1337 -precision fp8 -fp8_amax_history_len 16 -debug_nan_step 3 ${EXTRA[@]+"${EXTRA[@]}"}
        local nan_key=""
        if [ "$STEP_RC" -eq 0 ]; then
            if grep -qE 'step 4: loss .* not finite; step skipped' "$WORK/nan_skip.log" &&
                last_val_loss "$WORK/nan_skip.log" | grep -qE '^[0-9]+\.[0-9]+$'; then
                nan_key="step 4 skipped with a warning, then val $(last_val_loss "$WORK/nan_skip.log")"
            else
                STEP_RESULT="FAILED (no skip warning for step 4, or no finite val loss after it)"
                ANY_FAILED=1
            fi
        fi
        row nan_skip "$nan_key"
    fi
    # faults: the CPU suite's fault cases (scripts/check_run_faults.sh) on the GPU trainer, which shares their code
    # (the folder lock, checked logs, checkpoint checksums and steps, -resume_step, -start_over, -max_skipped, long paths)
    if train_wants faults; then
        run_step faults 240 ./scripts/check_run_faults.sh ./train_gpt_fp8
        row faults "$(grep -E '^faults: ' "$WORK/faults.log" 2>/dev/null | tail -n 1 | sed 's/^faults: //')"
    fi
    if [ "${DRY_RUN:-0}" = 1 ]; then return; fi
    if ! python3 -c "import matplotlib" >/dev/null 2>&1; then
        echo "gpu_check: plot: skipped, matplotlib is not importable (make deps)" >"$WORK/plot.log"
        add_row plot "SKIPPED (no matplotlib: make deps)" "-"
    elif [ ! -s "$WORK/train_bf16/main.log" ] || [ ! -s "$WORK/train_fp8/main.log" ]; then
        echo "gpu_check: plot: skipped, a training run wrote no main.log" >"$WORK/plot.log"
        add_row plot "SKIPPED (no main.log)" "-"
    else
        STEP_MIN_SECONDS=5 run_step plot 60 python3 scripts/plot_losses.py --out "$WORK/bf16_vs_fp8.png" --label bf16 \
            "$WORK/train_bf16/main.log" --label fp8 "$WORK/train_fp8/main.log" \
            --title "BF16 vs FP8 (delayed scaling): d12 -b 8 -t 1024, $TRAIN_STEPS steps, train_gpt_fp8"
        [ -s "$WORK/bf16_vs_fp8.png" ] && cp "$WORK/bf16_vs_fp8.png" "$LOGDIR/bf16_vs_fp8.png"
        add_step_row plot "fp8 vs bf16 $(plot_gap "$WORK/plot.log")"
        # issue 57's picture: BF16, FP8 and FP8 with FP8 attention (both backward inputs, where they ran) on one plot;
        # its row: each run's final val gap to BF16, and FP8 attention's to FP8, issue 57's 0.5% target
        if [ -s "$WORK/train_fp8_attention/main.log" ]; then
            local attention_logs=(--label fp8_attention "$WORK/train_fp8_attention/main.log")
            [ -s "$WORK/train_fp8_attention_mha/main.log" ] &&
                attention_logs+=(--label fp8_attention_mha "$WORK/train_fp8_attention_mha/main.log")
            STEP_MIN_SECONDS=5 run_step plot_attention 60 python3 scripts/plot_losses.py \
                --out "$WORK/bf16_fp8_attention.png" --label bf16 "$WORK/train_bf16/main.log" \
                --label fp8 "$WORK/train_fp8/main.log" "${attention_logs[@]}" \
                --title "BF16, FP8, FP8 with FP8 attention: d12 -b 8 -t 1024, $TRAIN_STEPS steps, train_gpt_fp8"
            [ -s "$WORK/bf16_fp8_attention.png" ] && cp "$WORK/bf16_fp8_attention.png" "$LOGDIR/bf16_fp8_attention.png"
            add_step_row plot_attention "$(plot_gaps "$WORK/plot_attention.log"); to fp8: fp8_attention \
$(val_gap_percent "$WORK/train_fp8_attention.log" "$WORK/train_fp8.log"), fp8_attention_mha \
$(val_gap_percent "$WORK/train_fp8_attention_mha.log" "$WORK/train_fp8.log")"
        fi
    fi
    write_summary
}

# bench_recipe_flags RECIPE: a bench run's precision flags
bench_recipe_flags() {
    case $1 in
        bf16) echo "-precision bf16" ;;
        fp8) echo "-precision fp8" ;;
        fp8_blockwise) echo "-precision fp8 -fp8_recipe blockwise" ;;
        fp8_attention) echo "-precision fp8 -fp8_attention 1" ;;
    esac
}

# bench_run NAME LIMIT RECIPE ARGS...: one timing run of ./train_gpt_fp8 ARGS with RECIPE's flags: no -o (no logs, no
# checkpoints), no FP8 diagnostics; the SM clock sampled meanwhile, so that step times from two sessions (or an H100
# and an H200) are read with the clock each ran at. Into the stage's BENCH_CMD[NAME] its command line (without the
# flags after --), BENCH_RECIPE[NAME] RECIPE, and BENCH_MS[NAME] its mean ms/step after the first SKIP steps when it
# ran to the end (exit 0) and printed step times, else BENCH_WHY[NAME] why not
bench_run() {
    local name=$1 limit=$2 recipe=$3 stats recipe_flags
    shift 3
    read -r -a recipe_flags <<<"$(bench_recipe_flags "$recipe")"
    local args=("$@" "${recipe_flags[@]}" -fp8_diag_every 0)
    clock_sampler_start "$WORK/bench_clocks_${name#bench_}.csv"
    run_step "$name" "$limit" ./train_gpt_fp8 "${args[@]}" ${EXTRA[@]+"${EXTRA[@]}"}
    clock_sampler_stop
    BENCH_CMD[$name]=$(quote_words ./train_gpt_fp8 "${args[@]}")
    BENCH_RECIPE[$name]=$recipe
    read -r -a stats <<<"$(progress_stats "$WORK/$name.log" "$SKIP")"
    if [ "$STEP_RC" -eq 0 ] && [ "${stats[2]}" -gt 0 ]; then
        BENCH_MS[$name]=${stats[0]}
        BENCH_STEPS_TIMED[$name]=${stats[2]}
    elif [ "$STEP_RC" -eq 0 ]; then
        BENCH_WHY[$name]="$name printed no step times after the first $SKIP"
    else
        BENCH_WHY[$name]="$name $STEP_RESULT"
    fi
}

# speedup BASE_MS OTHER_MS: "1.25x" (BASE over OTHER), or "n/a" without both
speedup() {
    awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) { printf "%.2fx\n", a / b } else { print "n/a" } }'
}

# bench_ratio NAME BASE OTHER: results/latest.tsv's row NAME, bench run BASE's ms/step over run OTHER's (both of this
# call: above 1, OTHER is faster), where both ran to the end; not where either failed, was skipped or refused, nor
# with trainer flags added after -- (the row's name would no longer say what ran): the stage's latest_tsv row says why
bench_ratio() {
    local name=$1 base=$2 other=$3 run ratio
    [ "${DRY_RUN:-0}" = 1 ] && return 0
    if [ ${#EXTRA[@]} -gt 0 ]; then
        latest_skip "$name" "trainer flags after -- ($(quote_words "${EXTRA[@]}"))"
        return 0
    fi
    for run in "$base" "$other"; do
        if [ -z "${BENCH_MS[$run]:-}" ]; then
            latest_skip "$name" "${BENCH_WHY[$run]:-$run did not run}"
            return 0
        fi
    done
    ratio=$(awk -v a="${BENCH_MS[$base]}" -v b="${BENCH_MS[$other]}" 'BEGIN { printf "%.3f\n", a / b }')
    local steps="steps $((SKIP + 1))-$((SKIP + BENCH_STEPS_TIMED[$base]))"
    [ "${BENCH_STEPS_TIMED[$base]}" = "${BENCH_STEPS_TIMED[$other]}" ] ||
        steps="$steps and $((SKIP + 1))-$((SKIP + BENCH_STEPS_TIMED[$other]))"
    latest_write "$name" "$ratio" x "${BENCH_CMD[$base]}, then the same with $(bench_recipe_flags \
"${BENCH_RECIPE[$other]}") in place of $(bench_recipe_flags "${BENCH_RECIPE[$base]}"): ${BENCH_MS[$base]} / \
${BENCH_MS[$other]} ms/step (means of $steps), the ratio of the two, measured in one call: the bench stage of \
$COMMAND_LINE"
}

stage_bench() {
    local run model limit recipe name key clock failed_before refusal batch_flags=() bf16_ms fp8_ms blockwise_ms
    local vs_bf16 vs_fp8
    local -A BENCH_MS=() BENCH_STEPS_TIMED=() BENCH_WHY=() BENCH_CMD=() BENCH_RECIPE=()
    # d48: the largest micro-batch that fits by the trainer's estimate, the same in BF16 and FP8 (the smaller of the
    # two), gradient accumulation making up the same total batch
    local d48_total=${D48_TOTAL_TOKENS:-32768} d48_b
    run_step fit_d48 120 bash -c 'for p in bf16 fp8; do "$@" -precision $p || exit; done' fit ./train_gpt_fp8 \
        "${DATA_FLAGS[@]}" -e d48 -t 1024 -b $((d48_total / 1024)) -d "$d48_total" -v 0 -s 0 -estimate 1 \
        ${EXTRA[@]+"${EXTRA[@]}"}
    d48_b=$(fit_batch "$WORK/fit_d48.log")
    row fit_d48 "$(fit_d48_key "$d48_b" "$d48_total" "$BENCH_B")"
    d48_b=${d48_b:-$BENCH_B}
    # each depth at BENCH_B (d48 at the batch above), and d12 at B 64 as well, the issues' headline shape (unless
    # BENCH_B is 64: then the d12 runs are those); blockwise where a figure needs it: d12 at BENCH_B (against BF16 and
    # delayed), d12 at B 64 and d48 (results/latest.tsv's blockwise rows); FP8 attention (delayed scaling with
    # -fp8_attention 1) at d12 B 64 and d48 (its rows, issue 57)
    local runs="d12 d24 d48" d12_b64=d12
    if [ "$BENCH_B" != 64 ]; then
        runs="d12 d12_b64 d24 d48"
        d12_b64=d12_b64
    fi
    for run in $runs; do
        model=${run%%_*}
        batch_flags=(-b "$BENCH_B")
        case $run in
            d12) limit=90 ;;
            d12_b64) limit=120; batch_flags=(-b 64) ;;
            d24) limit=120 ;;
            *) limit=180; batch_flags=(-b "$d48_b" -d "$d48_total") ;;
        esac
        for recipe in bf16 fp8 fp8_blockwise fp8_attention; do
            [ "$recipe" = fp8_blockwise ] && [ "$run" = d24 ] && continue
            [ "$recipe" = fp8_attention ] && [ "$run" != "$d12_b64" ] && [ "$run" != d48 ] && continue
            name="bench_${run}_$recipe"
            failed_before=$ANY_FAILED
            bench_run "$name" "$limit" "$recipe" "${DATA_FLAGS[@]}" -e "$model" "${batch_flags[@]}" -t 1024 \
                -x "$BENCH_STEPS" -v 0 -s 0 -seed 1337
            # blockwise at d48 (C 1600): a trainer from before the zero-padded k (llmc/linear.h's linear_fp8_gemm_k)
            # refuses, in one line, a GEMM whose k is not a multiple of 128. That refusal is what such a trainer must
            # do, not a failure here: the row shows it, and no figure is written
            if [ "$run" = d48 ] && [ "$recipe" = fp8_blockwise ] && [ "$STEP_RC" -eq 1 ] &&
                refusal=$(grep -m 1 -E '^error: -fp8_recipe blockwise on the GPU needs ' "$WORK/$name.log"); then
                ANY_FAILED=$failed_before
                STEP_RESULT="SKIPPED (refused)"
                BENCH_WHY[$name]="$name refused by the trainer"
                add_row "$name" "$STEP_RESULT" "${refusal#error: }"
                write_summary
                continue
            fi
            key=$(bench_key "$WORK/$name.log" "$SKIP")
            case $recipe in
                fp8)
                    bf16_ms=$(progress_stats "$WORK/bench_${run}_bf16.log" "$SKIP" | awk '{ print $1 }')
                    fp8_ms=$(progress_stats "$WORK/$name.log" "$SKIP" | awk '{ print $1 }')
                    key="$key, $(speedup "$bf16_ms" "$fp8_ms") vs bf16"
                    ;;
                fp8_blockwise | fp8_attention)  # against BF16 and FP8 delayed (without FP8 attention)
                    bf16_ms=$(progress_stats "$WORK/bench_${run}_bf16.log" "$SKIP" | awk '{ print $1 }')
                    fp8_ms=$(progress_stats "$WORK/bench_${run}_fp8.log" "$SKIP" | awk '{ print $1 }')
                    blockwise_ms=$(progress_stats "$WORK/$name.log" "$SKIP" | awk '{ print $1 }')
                    vs_bf16=$(speedup "$bf16_ms" "$blockwise_ms")
                    vs_fp8=$(speedup "$fp8_ms" "$blockwise_ms")
                    if [ "$vs_bf16" != n/a ] && [ "$vs_fp8" != n/a ]; then
                        key="$key, $vs_bf16 vs bf16, $vs_fp8 vs fp8 delayed"
                    else
                        key="$key, n/a"
                    fi
                    ;;
            esac
            clock=$(clock_brief "$WORK/bench_clocks_${run}_$recipe.csv")
            row "$name" "$key${clock:+, $clock}"
        done
    done
    # results/latest.tsv: the ratios of runs of this call (issues 56 and 58)
    bench_ratio d12_b64_fp8_over_bf16 "bench_${d12_b64}_bf16" "bench_${d12_b64}_fp8"
    bench_ratio d48_fp8_over_bf16 bench_d48_bf16 bench_d48_fp8
    bench_ratio blockwise_d12_b64_over_bf16 "bench_${d12_b64}_bf16" "bench_${d12_b64}_fp8_blockwise"
    bench_ratio blockwise_d48_over_bf16 bench_d48_bf16 bench_d48_fp8_blockwise
    bench_ratio fp8_attention_d12_b64_over_bf16 "bench_${d12_b64}_bf16" "bench_${d12_b64}_fp8_attention"
    bench_ratio fp8_attention_d48_over_bf16 bench_d48_bf16 bench_d48_fp8_attention
    latest_table_row bench
}

# llmc: our BF16 step against llm.c's train_gpt2cu with cuDNN (issue 56), on this GPU in this call: d12, B 64, T 1024,
# GPT-2's vocabulary (ours with -V 50257 on the shards without our tokenizer; llm.c reads the same shards), its
# defaults otherwise (recompute GELU), BENCH_STEPS steps each, the mean ms/step after the first SKIP of each log.
# llm.c is built by `make llmc-baseline` from LLMC_DIR (default third_party/llm.c: a checkout of karpathy/llm.c carried
# to the GPU machine, never committed; dev/build_llmc.sh says what it changes for CUDA 13); without one the stage is
# SKIPPED. results/latest.tsv: d12_b64_bf16_over_llmc, llm.c's ms over ours (above 1: ours is faster).
stage_llmc() {
    local llmc_dir=${LLMC_DIR:-third_party/llm.c} steps=$BENCH_STEPS llmc_ms ours_ms train built
    if [ ! -f "$llmc_dir/train_gpt2.cu" ] && [ "${DRY_RUN:-0}" != 1 ]; then
        echo "gpu_check: llmc: skipped, no llm.c checkout in $llmc_dir (LLMC_DIR)" >"$WORK/llmc_build.log"
        add_row llmc_build "SKIPPED (no llm.c in $llmc_dir: set LLMC_DIR)" "-"
        latest_skip d12_b64_bf16_over_llmc "no llm.c checkout in $llmc_dir"
        latest_table_row llmc
        write_summary
        return 0
    fi
    run_step llmc_build 300 make llmc-baseline LLMC_DIR="$llmc_dir"
    built=$(grep -E '^build_llmc: ' "$WORK/llmc_build.log" 2>/dev/null | tail -n 1 | sed 's/^build_llmc: //')
    row llmc_build "$built"
    profile_vocabulary_flags 50257
    train=$(flag_value -i "${PROFILE_DATA_FLAGS[@]}")
    # llm.c's -j is the train shard too: its data loader asserts that a shard holds B*T+1 tokens even for the val
    # loader (llmc/dataloader.h), and tinyshakespeare's val split has 45684 < 65537; it reads 2 batches of it at step 0
    # and at the end, outside the timed steps
    run_step llmc_train_gpt2cu 240 ./dev/llmc/train_gpt2cu -i "$train" -j "$train" -e d12 -b 64 -t 1024 \
        -x "$steps" -v 1000 -m 2 -s 0 -n 0 -h 0
    row llmc_train_gpt2cu "$(bench_key "$WORK/llmc_train_gpt2cu.log" "$SKIP")"
    run_step llmc_ours_bf16 240 ./train_gpt_fp8 "${PROFILE_DATA_FLAGS[@]}" -e d12 -b 64 -t 1024 -x "$steps" -v 0 -s 0 \
        -seed 1337 -precision bf16 -fp8_diag_every 0 ${EXTRA[@]+"${EXTRA[@]}"}
    llmc_ms=$(progress_stats "$WORK/llmc_train_gpt2cu.log" "$SKIP" | awk '{ print $1 }')
    ours_ms=$(progress_stats "$WORK/llmc_ours_bf16.log" "$SKIP" | awk '{ print $1 }')
    row llmc_ours_bf16 "$(bench_key "$WORK/llmc_ours_bf16.log" "$SKIP"), $(speedup "$llmc_ms" "$ours_ms") llm.c's time over ours"
    if [ "${DRY_RUN:-0}" != 1 ]; then
        if [ ${#EXTRA[@]} -gt 0 ]; then
            latest_skip d12_b64_bf16_over_llmc "trainer flags after -- ($(quote_words "${EXTRA[@]}"))"
        elif [[ $built == *"without cuDNN"* ]]; then  # issue 56's target is llm.c with cuDNN: carry deps/ to have it
            latest_skip d12_b64_bf16_over_llmc "llm.c built without cuDNN (no cuDNN frontend headers: make deps)"
        elif [ "$(speedup "$llmc_ms" "$ours_ms")" = n/a ]; then
            latest_skip d12_b64_bf16_over_llmc "a run printed no step times after the first $SKIP"
        else
            latest_write d12_b64_bf16_over_llmc "$(awk -v a="$llmc_ms" -v b="$ours_ms" 'BEGIN { printf "%.4f", a / b }')" \
                x "llm.c train_gpt2cu -e d12 -b 64 -t 1024 ($llmc_ms ms) over train_gpt_fp8 -e d12 -b 64 -t 1024 -V 50257 -precision bf16 ($ours_ms ms)"
        fi
    fi
    latest_table_row llmc
}

stage_gemm() {
    run_step gemm_shapes 120 ./dev/cuda/gemm_shapes -e d12
    row gemm_shapes "$(gemm_shapes_key "$WORK/gemm_shapes.log")"
    run_step gemm_algos 240 ./dev/cuda/gemm_shapes -e d12 -b 64 -algos 8
    row gemm_algos "$(gemm_algos_key "$WORK/gemm_algos.log")"
}

# NCCL: one rank through a communicator must give the bits of the plain run (main.log compared byte for byte; the
# one-rank run starts from the plain run's GEMM algorithm choices, gemm_algos_00000.tsv, as its own timing could choose
# others); with several GPUs, N ranks at the same global batch must follow one rank within float-sum noise
stage_nccl() {
    local nccl_flags=("${DATA_FLAGS[@]}" -e d12 -b 8 -t 1024 -x 20 -v 10 -m 4 -s 0 -seed 1337 -precision fp8
        -fp8_diag_every 0)
    run_step nccl_plain 90 ./train_gpt_fp8 "${nccl_flags[@]}" -o "$WORK/nccl_plain"
    remove_checkpoints "$WORK/nccl_plain"
    row nccl_plain "$(last_val_loss "$WORK/nccl_plain.log") val loss"
    mkdir -p "$WORK/nccl_id" "$WORK/nccl_1rank"
    if [ -f "$WORK/nccl_plain/gemm_algos_00000.tsv" ]; then cp "$WORK/nccl_plain/gemm_algos_00000.tsv" "$WORK/nccl_1rank/"; fi
    run_step nccl_1rank 90 ./train_gpt_fp8 "${nccl_flags[@]}" -o "$WORK/nccl_1rank" -pn 1 -pr 0 -pi fs -pf "$WORK/nccl_id"
    remove_checkpoints "$WORK/nccl_1rank"
    if [ "${DRY_RUN:-0}" = 1 ]; then
        add_step_row nccl_1rank "-"
    elif [ "$STEP_RC" -eq 0 ] && cmp -s "$WORK/nccl_plain/main.log" "$WORK/nccl_1rank/main.log"; then
        add_step_row nccl_1rank "main.log bit-identical to the run without NCCL"
    else
        [ "$STEP_RC" -eq 0 ] && { STEP_RESULT="FAILED (logs differ)"; STEP_RC=1; ANY_FAILED=1; }
        add_step_row nccl_1rank "main.log differs from the run without NCCL (diff nccl_plain/main.log nccl_1rank/main.log)"
    fi
    write_summary
    local ngpus
    ngpus=$(nvidia-smi -L 2>/dev/null | wc -l)
    if [ "$ngpus" -ge 2 ]; then
        run_step "nccl_${ngpus}ranks" 120 env NO_MPIRUN=1 scripts/run_gpt_fp8_1node.sh "$ngpus" -- \
            "${nccl_flags[@]}" -b $((8 / ngpus > 0 ? 8 / ngpus : 1)) -d 8192 -o "$WORK/nccl_${ngpus}ranks"
        remove_checkpoints "$WORK/nccl_${ngpus}ranks"
        row "nccl_${ngpus}ranks" "$(python3 - "$WORK/nccl_plain/main.log" "$WORK/nccl_${ngpus}ranks/main.log" <<'PY'
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
        write_summary
    fi
}

stage_sanitize() {
    local sanitizer tool step cases=() excludes=() substring
    sanitizer=$(find_sanitizer)
    # racecheck leaves some of the libraries' kernels uninstrumented (--kernel-name-exclude, one per substring): they
    # still run, and their hazards, which the step would only count apart, are no longer looked for
    for substring in $RACECHECK_UNINSTRUMENTED_SUBSTRINGS; do excludes+=(--kernel-name-exclude "kns=$substring"); done
    # memcheck runs every case; racecheck every case but the two medium models, whose kernels the small cases run too
    # (instrumented, they alone took most of the budget), in two steps of their own limit each: the cases with fp8 in
    # their names, then the others (on an H200, with cuBLASLt's GEMMs instrumented, the first 7 cases took 115 s: at
    # that pace all 21 would not fit one step's 300 s)
    for step in memcheck racecheck_fp8 racecheck_others; do
        if [ -z "$sanitizer" ]; then
            echo "gpu_check: $step: skipped, compute-sanitizer is neither on PATH nor in \$CUDA_HOME/bin" >"$WORK/$step.log"
            add_row "$step" "SKIPPED (no compute-sanitizer)" "-"
            write_summary
            continue
        fi
        tool=${step%%_*}
        case $step in
            memcheck) cases=() ;;
            racecheck_fp8) cases=(fp8 --skip medium) ;;
            *) cases=(--skip medium --skip fp8) ;;
        esac
        if [ "$tool" = racecheck ]; then
            run_step "$step" 300 "$sanitizer" --tool racecheck ${excludes[@]+"${excludes[@]}"} ./test_gpt_fp8 "${cases[@]}"
        else
            run_step "$step" 300 "$sanitizer" --tool memcheck ./test_gpt_fp8
        fi
        local key hazards
        key=$(sanitizer_errors "$WORK/$step.log")
        if [ "$tool" = racecheck ]; then
            read -r -a hazards <<<"$(racecheck_hazards "$WORK/$step.log")"
            key="$key: ${hazards[0]} hazard reports in our kernels (${hazards[2]}), ${hazards[1]} inside cuBLASLt/cuDNN's"
            if [ "${hazards[0]}" -gt 0 ] && [ "$STEP_RC" -ge 0 ]; then
                STEP_RESULT="FAILED (races in our kernels)"
                ANY_FAILED=1
            fi
        elif [[ $key =~ ^[1-9][0-9]*\ sanitizer ]] && [ "$STEP_RC" -ge 0 ]; then
            STEP_RESULT="FAILED (memory errors)"
            ANY_FAILED=1
        fi
        row "$step" "$key"
    done
}

# The profile stage's runs: each name's trainer flags (PROFILE_RUNS picks among them)
profile_recipe_flags() {
    case $1 in
        bf16) echo "-precision bf16" ;;
        fp8) echo "-precision fp8" ;;
        fp8_unfused) echo "-precision fp8 -fp8_fused_casts 0" ;;
        fp8_current) echo "-precision fp8 -fp8_recipe current" ;;
        fp8_current_unfused) echo "-precision fp8 -fp8_recipe current -fp8_fused_casts 0" ;;
        fp8_blockwise) echo "-precision fp8 -fp8_recipe blockwise" ;;
        bf16_graphs) echo "-precision bf16 -cuda_graph 1" ;;
        fp8_graphs) echo "-precision fp8 -cuda_graph 1" ;;
        *) return 1 ;;
    esac
}

# profile_brief CSV LABEL [STEP_MS [CLOCK_MHZ]]: profile_step.py's line for one run ("N kernels, X ms at F MHz of Y
# ms/step at G MHz, >= Z ms outside kernels; gemm ...")
profile_brief() {
    local brief
    brief=$(python3 scripts/profile_step.py --brief --label "$2" ${3:+--step-ms "$3"} ${4:+--clock-mhz "$4"} "$1" 2>&1 |
        tail -n 1)
    echo "${brief#"$2": }"
}

# clock_mean CSV: the mean SM clock (MHz) of the sampler's busy samples; nothing when none was busy
clock_mean() {
    local n mean
    read -r n mean _ <<<"$(clock_stats "$1")"
    if [ "${n:-0}" != 0 ]; then echo "$mean"; fi
}

# What ncu records of every kernel: its duration, and the SM clock it ran at (elapsed SM cycles per second), which
# profile_step.py sets beside the clock the sampler saw during the timed steps
PROFILE_METRICS="gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second"

# profile_differences LOG: the "RUN - FIRST: ..." lines of profile_step.py --brief, joined by " / "
profile_differences() {
    local lines
    lines=$(grep -E '^[A-Za-z0-9_]+ - [A-Za-z0-9_]+: kernels ' "$1" 2>/dev/null |
        awk 'NR > 1 { printf " / " } { printf "%s", $0 }')
    echo "${lines:-one run: see profile_step.md}"
}

# Where a step's GPU time goes: per run, the step's time without a profiler, then every kernel of step 3 through ncu
# (-profile_step 3: the trainer starts the profiler there and stops it after the step, so steps 1-2 warm cuBLASLt's
# plans and cuDNN's graphs unrecorded), then the kinds and kernels of all runs side by side (profile_step.md)
# profile_vocabulary_flags V: into PROFILE_DATA_FLAGS, DATA_FLAGS for a run at a vocabulary V larger than our
# tokenizer's (GPT-2's 50257, as llm.c's train_gpt2cu runs d12): the train and val shards linked into WORK/shards_vV,
# a folder without our tokenizer (read by -tk or beside the shards, it would refuse the larger -V), and -V V
profile_vocabulary_flags() {
    local dir="$WORK/shards_v$1" train val
    train=$(flag_value -i "${DATA_FLAGS[@]}")
    val=$(flag_value -j "${DATA_FLAGS[@]}")
    mkdir -p "$dir"
    ln -sf "$(realpath -m "$train")" "$dir/train.bin"
    PROFILE_DATA_FLAGS=(-i "$dir/train.bin")
    if [ -n "$val" ]; then
        ln -sf "$(realpath -m "$val")" "$dir/val.bin"
        PROFILE_DATA_FLAGS+=(-j "$dir/val.bin")
    fi
    PROFILE_DATA_FLAGS+=(-V "$1")
}

# profile_idle RUN TRAINER ARGS...: how long the GPU sat idle in a step of RUN (the trainer's -idle_step, CUPTI's trace
# of step 8 of 8: a step's wall time from the host's first call to its end on the GPU, minus the union of the kernels',
# copies' and memsets' times; Nsight Systems cannot make its reports on these machines). A trainer built without
# CUPTI refuses the flag: SKIPPED. At the default shape (PROFILE_B 64, our vocabulary) the bf16 and fp8 runs write
# results/latest.tsv's gpu_idle_ms_bf16 and gpu_idle_ms_fp8 (issue 56).
profile_idle() {
    local run=$1 trainer=$2 key failed_before=$ANY_FAILED
    shift 2
    local -a idle
    run_step "profile_idle_$run" 120 "$trainer" "$@" -x 8 -idle_step 8 ${EXTRA[@]+"${EXTRA[@]}"}
    if [ "$STEP_RC" -gt 0 ] && grep -q "built without CUPTI" "$WORK/profile_idle_$run.log" 2>/dev/null; then
        ANY_FAILED=$failed_before  # a refusal, not a failure: this trainer cannot measure it
        STEP_RESULT="SKIPPED (no CUPTI)"
    fi
    key=$(idle_key "$WORK/profile_idle_$run.log")
    read -r -a idle <<<"$key"
    row "profile_idle_$run" "${key:+${idle[0]} ms idle of a ${idle[1]} ms step (${key#* * })}"
    case $run in bf16 | fp8) ;; *) return 0 ;; esac
    [ "${DRY_RUN:-0}" = 1 ] && return 0
    if [ "${PROFILE_B:-64}" != 64 ] || [ -n "${PROFILE_V:-}" ] || [ ${#EXTRA[@]} -gt 0 ]; then
        latest_skip "gpu_idle_ms_$run" "not d12 B 64 at our vocabulary with the trainer's own flags"
    elif [ -z "$key" ]; then
        latest_skip "gpu_idle_ms_$run" "profile_idle_$run printed no idle line"
    else
        latest_write "gpu_idle_ms_$run" "${idle[0]}" ms "$(quote_words "$trainer" "$@" -x 8 -idle_step 8): step 8's GPU idle time (${idle[0]} of ${idle[1]} ms; ${key#* * })"
    fi
}

stage_profile() {
    local ncu run flags step_ms step_mhz summary_args=() b=${PROFILE_B:-64} trainer=${PROFILE_TRAINER:-./train_gpt_fp8}
    ncu=$(find_ncu)
    [ -z "$ncu" ] && [ "${DRY_RUN:-0}" = 1 ] && ncu=ncu  # a dry run shows the command wherever ncu is
    PROFILE_DATA_FLAGS=("${DATA_FLAGS[@]}")
    if [ -n "${PROFILE_V:-}" ]; then
        profile_vocabulary_flags "$PROFILE_V"
        add_row profile_vocabulary "-" "-V $PROFILE_V (the shards linked into a folder without our tokenizer)"
    fi
    local common=("${PROFILE_DATA_FLAGS[@]}" -e d12 -b "$b" -t 1024 -v 0 -s 0 -seed 1337 -fp8_diag_every 0)
    for run in ${PROFILE_RUNS:-bf16 fp8 fp8_current}; do
        if ! flags=$(profile_recipe_flags "$run"); then
            local known="bf16 fp8 fp8_unfused fp8_current fp8_current_unfused fp8_blockwise bf16_graphs fp8_graphs"
            echo "gpu_check: profile: unknown run '$run' in PROFILE_RUNS ($known)" >"$WORK/profile_$run.log"
            add_row "profile_$run" "FAILED (unknown run)" "PROFILE_RUNS: $known"
            ANY_FAILED=1
            write_summary
            continue
        fi
        # a timing run as the bench stage's: no -o, no diagnostics; the mean after the first 5 steps
        # with the SM clock sampled (clock_sampler_start says why), its row beside the step time's
        clock_sampler_start "$WORK/profile_clocks_$run.csv"
        run_step "profile_time_$run" 120 "$trainer" "${common[@]}" -x 15 $flags ${EXTRA[@]+"${EXTRA[@]}"}
        clock_sampler_stop
        step_ms=$(progress_stats "$WORK/profile_time_$run.log" "$SKIP" | awk '$1 != "n/a" { print $1 }')
        step_mhz=""
        row "profile_time_$run" "$(bench_key "$WORK/profile_time_$run.log" "$SKIP")"
        if [ "$STEP_RC" -ge 0 ]; then
            add_row "profile_clocks_$run" "-" "$(clock_key "$WORK/profile_clocks_$run.csv")"
            [ -n "$step_ms" ] && step_mhz=$(clock_mean "$WORK/profile_clocks_$run.csv")
        fi
        profile_idle "$run" "$trainer" "${common[@]}" $flags
        if [ "${DRY_RUN:-0}" != 1 ] && { [ -z "$ncu" ] || [ ! -x "$ncu" ]; }; then
            echo "gpu_check: profile_$run: skipped, no Nsight Compute:" \
                "${ncu:-ncu is neither on PATH nor in \$CUDA_HOME/bin} (NCU= names one)" >"$WORK/profile_$run.log"
            add_row "profile_$run" "SKIPPED (no ncu)" "-"
            write_summary
            continue
        fi
        run_step "profile_$run" 240 bash -c '
            ncu=$1 metrics=$2 report=$3
            shift 3
            "$ncu" --profile-from-start off --clock-control none --cache-control none --metrics "$metrics" \
                --force-overwrite --export "$report" "$@" || exit
            [ -s "$report.ncu-rep" ] || { echo "profile: ncu wrote no report: was step 3 reached?"; exit 1; }
            "$ncu" --import "$report.ncu-rep" --csv --page raw --print-units base --metrics "$metrics" \
                >"$report.csv" || exit
            python3 scripts/profile_step.py --brief --label "$(basename "$report")" "$report.csv"' profile "$ncu" \
            "$PROFILE_METRICS" "$WORK/profile_$run" "$trainer" "${common[@]}" -x 3 -profile_step 3 $flags \
            ${EXTRA[@]+"${EXTRA[@]}"}
        if [ "$STEP_RC" -eq 0 ]; then
            row "profile_$run" "$(profile_brief "$WORK/profile_$run.csv" "$run" "$step_ms" "$step_mhz")"
            summary_args+=(--label "$run" ${step_ms:+--step-ms "$step_ms"} ${step_mhz:+--clock-mhz "$step_mhz"}
                "$WORK/profile_$run.csv")
        elif [ "${DRY_RUN:-0}" = 1 ]; then
            row "profile_$run" "-"
            summary_args+=(--label "$run" --step-ms MS "$WORK/profile_$run.csv")
        else
            row "profile_$run" ""
        fi
    done
    latest_table_row profile
    [ ${#summary_args[@]} -gt 0 ] || return 0
    STEP_MIN_SECONDS=5 run_step profile_summary 60 python3 scripts/profile_step.py --brief \
        --out "$WORK/profile_step.md" "${summary_args[@]}"
    [ -s "$WORK/profile_step.md" ] && cp "$WORK/profile_step.md" "$LOGDIR/profile_step.md"
    row profile_summary "$(profile_differences "$WORK/profile_summary.log")"
}

main() {
    local append=0 logdir="" stages_arg=""
    EXTRA=()
    INPUT_TEXT=${INPUT:-}
    DRY_RUN=0
    COMMAND_LINE=$(quote_words "$0" "$@")
    while [ $# -gt 0 ]; do
        case $1 in
            --append-results) append=1; shift ;;
            --dry-run) DRY_RUN=1; shift ;;
            --only | --input)
                if [ $# -lt 2 ]; then echo "gpu_check: error: $1 needs a value ($GPU_CHECK_USAGE)" >&2; exit 2; fi
                if [ "$1" = --only ]; then stages_arg=$2; else INPUT_TEXT=$2; fi
                shift 2
                ;;
            --only=*) stages_arg=${1#--only=}; shift ;;
            -h | --help) echo "$GPU_CHECK_USAGE"; echo "stages: $GPU_CHECK_STAGES (default: $GPU_CHECK_DEFAULT_STAGES)"; exit 0 ;;
            --) shift; EXTRA=("$@"); break ;;
            -*) echo "gpu_check: error: unknown option $1 ($GPU_CHECK_USAGE)" >&2; exit 2 ;;
            *)
                if [ -n "$logdir" ]; then echo "gpu_check: error: unexpected argument $1 ($GPU_CHECK_USAGE)" >&2; exit 2; fi
                logdir=$1
                shift
                ;;
        esac
    done
    if [ -z "$logdir" ]; then echo "gpu_check: error: missing LOGDIR ($GPU_CHECK_USAGE)" >&2; exit 2; fi
    STAGES=$GPU_CHECK_DEFAULT_STAGES
    if [ -n "$stages_arg" ]; then STAGES=$(parse_stages "$stages_arg") || exit 2; fi
    if [ -n "$INPUT_TEXT" ] && [ ! -f "$INPUT_TEXT" ]; then
        echo "gpu_check: error: the corpus $INPUT_TEXT (--input / INPUT=) does not exist ($GPU_CHECK_USAGE)" >&2
        exit 2
    fi
    [ -n "$INPUT_TEXT" ] && INPUT_TEXT=$(cd "$(dirname "$INPUT_TEXT")" && pwd)/$(basename "$INPUT_TEXT")
    mkdir -p "$logdir" || { echo "gpu_check: error: cannot create $logdir" >&2; exit 2; }
    LOGDIR=$(cd "$logdir" && pwd)
    local repo
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    local results="$repo/RESULTS.md"
    if [ -n "${GPU_CHECK_RESULTS:-}" ]; then
        case $GPU_CHECK_RESULTS in /*) results=$GPU_CHECK_RESULTS ;; *) results="$PWD/$GPU_CHECK_RESULTS" ;; esac
    fi
    # results/latest.tsv (GPU_CHECK_LATEST names another file, as GPU_CHECK_RESULTS does RESULTS.md)
    LATEST_TSV="$repo/results/latest.tsv"
    if [ -n "${GPU_CHECK_LATEST:-}" ]; then
        case $GPU_CHECK_LATEST in /*) LATEST_TSV=$GPU_CHECK_LATEST ;; *) LATEST_TSV="$PWD/$GPU_CHECK_LATEST" ;; esac
    fi
    cd "$repo" || exit 2
    DEADLINE=$((SECONDS + ${GPU_CHECK_BUDGET:-540}))
    ANY_FAILED=0
    ARCHIVE_OVER=0
    TRAIN_STEPS=${TRAIN_STEPS:-200}
    BENCH_STEPS=${BENCH_STEPS:-30}
    BENCH_B=${BENCH_B:-8}
    SKIP=5

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
    GPU_NAME=$(echo "$gpu_query" | head -n 1 | cut -d, -f1 | sed 's/^ *//; s/ *$//')
    GPU_DRIVER=$(echo "$gpu_query" | head -n 1 | cut -d, -f2 | sed 's/^ *//; s/ *$//')
    GPU_MEMORY=$(echo "$gpu_query" | head -n 1 | cut -d, -f3 | sed 's/^ *//; s/ *$//')
    COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
    if [ "$COMMIT" != unknown ] && [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
        COMMIT="$COMMIT (+ uncommitted changes)"
    fi
    LATEST_COMMIT=$(latest_commit)
    STARTED=$(date -u '+%Y-%m-%d %H:%M UTC')
    # step logs and run outputs live outside LOGDIR, which gets only the table, the archive and the plot
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX") || { echo "gpu_check: error: no temporary folder" >&2; exit 2; }
    # (a background job inherits this trap until it execs: clock_sampler_start says how the sampler steers clear)
    trap 'rm -rf "$WORK"' EXIT
    rm -f "$LOGDIR/summary.txt" "$LOGDIR/$GPU_CHECK_ARCHIVE" "$LOGDIR/bf16_vs_fp8.png" \
        "$LOGDIR/bf16_fp8_attention.png" "$LOGDIR/profile_step.md" "$LOGDIR/latest.tsv"

    # a CUDA toolkit installed but not on PATH: the Makefile finds nvcc (and with it CUDA_HOME) through PATH only
    if ! command -v nvcc >/dev/null 2>&1; then
        local d
        for d in "${CUDA_HOME:-}" /usr/local/cuda; do
            if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then PATH="$d/bin:$PATH"; break; fi
        done
    fi

    # the data flags of scripts/compare_bf16_fp8.sh: our tokenizer sets the vocabulary of the d12 preset
    local data=data/tinyshakespeare
    DATA_FLAGS=(-i "$data/tiny_shakespeare_train.bin" -j "$data/tiny_shakespeare_val.bin" -tk "$data/tokenizer.bin")

    STEP_MIN_SECONDS=5 run_step gpu 30 nvidia-smi
    row gpu "$GPU_NAME, driver $GPU_DRIVER, $GPU_MEMORY"
    cudnn_programs >/dev/null  # ask make info once, here: the stages read it in subshells
    stage_build
    local stage
    for stage in dev test xcheck train bench llmc gemm nccl sanitize profile; do
        stage_selected "$stage" && "stage_$stage"
    done

    write_summary
    local header table
    header=$(printf '# GPU check, %s (%ss)\nGPU: %s, driver %s, %s | commit %s\ncommand: %s\nstages: %s\nlogs: %s/%s' \
        "$STARTED" "$SECONDS" "$GPU_NAME" "$GPU_DRIVER" "$GPU_MEMORY" "$COMMIT" "$COMMAND_LINE" "$STAGES" "$LOGDIR" \
        "$GPU_CHECK_ARCHIVE")
    table=$(print_table)
    printf '%s\n\n%s\n' "$header" "$table" | tee "$LOGDIR/summary.txt"
    if [ "$ARCHIVE_OVER" -eq 1 ]; then
        echo "gpu_check: warning: $LOGDIR/$GPU_CHECK_ARCHIVE is over ${GPU_CHECK_ARCHIVE_MAX_BYTES:-16777216} bytes even with every log cut" >&2
    fi
    if [ "$append" -eq 1 ]; then
        {
            printf '\n## %s — GPU check on %s\n\n' "${STARTED%% *}" "$GPU_NAME"
            printf -- '- Machine: %s (%s), driver %s. Commit: %s. %s seconds. Stages: %s.\n' "$GPU_NAME" "$GPU_MEMORY" \
                "$GPU_DRIVER" "$COMMIT" "$SECONDS" "$STAGES"
            printf -- '- Command: %s (the log of each step in %s, not in the repository)\n\n' "\`$COMMAND_LINE\`" \
                "$GPU_CHECK_ARCHIVE"
            printf '%s\n' "$table"
        } >>"$results"
        echo "gpu_check: appended to $results"
    fi
    exit "$ANY_FAILED"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
