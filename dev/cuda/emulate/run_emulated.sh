#!/usr/bin/env bash
# dev/cuda/emulate/run_emulated.sh — the GPU trainer's whole program on the CPU, for a session without a GPU: the GPU
# trainer built under the emulation (dev/cuda/emulate/train_gpt_fp8, make emulate; no cuDNN, no NCCL) through
#   - scripts/check_run_faults.sh (the run folder, checkpoints, kills and resumes byte for byte, every refusal);
#   - the GPU check's xcheck stage, against the CPU trainer within its derived tolerances, in every recipe and FP8
#     flag it runs but FP8 attention (cuDNN's);
#   - a killed and resumed run against one never interrupted, every file byte for byte, in the four FP8 recipes,
#     blockwise at C 160 (its ks zero-padded) and with gradient accumulation (resume_case, scripts/test_lib.sh;
#     -gemm_autotune 0: the runs are separate).
# About 18 minutes of two cores before the C 160 cases (its parts alone: 3.5, 6 and 8), 30 with them beside other
# work; not in make test (its checks of the same paths run there on the CPU trainer, and
# test_gpt_fp8 under the emulation). What it cannot show: what the emulation cannot (cuda_emulation.h): cuBLASLt's and
# cuDNN's bits, speed. Prints each part's PASS/FAIL lines and "run-emulated: N passed, M failed" last.
set -u
cd "$(dirname "$0")/../../.."
TRAINER=./dev/cuda/emulate/train_gpt_fp8
. scripts/test_lib.sh
for program in "$TRAINER" ./train_gpt_fp8_cpu ./dev/compare_runs; do
    if [ ! -x "$program" ]; then fail build "$program missing (make emulate train_gpt_fp8_cpu dev/compare_runs)"; fi
done
[ "$failed" -eq 0 ] || finish run-emulated
trainer_suite_setup run-emulated  # DATA, DATA_FLAGS, TINY

faults=$(./scripts/check_run_faults.sh "$TRAINER" 2>&1)
summary=$(printf '%s\n' "$faults" | grep -E '^faults: [0-9]+ passed, 0 failed$')
if [ -n "$summary" ]; then pass "check_run_faults (${summary#faults: })"; else
    fail check_run_faults "$(printf '%s\n' "$faults" | grep -E '^FAIL|passed' | head -n 10)"
fi

# the xcheck stage, sourced as scripts/test_gpu_check.sh does (sourcing the script defines its functions only)
# shellcheck source=scripts/gpu_check.sh
. scripts/gpu_check.sh
(
    # shellcheck disable=SC2034 # globals of the sourced stage
    WORK="$TMP/xcheck_work" LOGDIR="$TMP/xcheck_out" DEADLINE=$((SECONDS + 7200)) ANY_FAILED=0 ARCHIVE_OVER=0 STARTED=now
    # shellcheck disable=SC2034
    GPU_NAME=emulated GPU_DRIVER=- GPU_MEMORY=- COMMIT=- COMMAND_LINE=run_emulated STAGES=xcheck DRY_RUN=0 EXTRA=()
    ROW_STEP=() ROW_RESULT=() ROW_KEY=()
    read -r -a DATA_FLAGS <<<"$DATA_FLAGS"
    mkdir -p "$WORK" "$LOGDIR"
    XCHECK_GPU_TRAINER=$TRAINER XCHECK_STEP_SECONDS=1800 XCHECK_RECIPES=$(echo "$XCHECK_RECIPES" |
        tr ' ' '\n' | grep -v '^fp8_delayed_attention$' | tr '\n' ' ') stage_xcheck >/dev/null 2>&1
    print_table
    exit "$ANY_FAILED"
) >"$TMP/xcheck.table"
rc=$?
grep -E '^\| xcheck_' "$TMP/xcheck.table"
recipes=$(grep -cE '^\| xcheck_(bf16|fp8_[a-z0-9_]+) +\| OK' "$TMP/xcheck.table")
if [ "$rc" -eq 0 ] && [ "$recipes" -eq 10 ]; then pass "xcheck ($recipes recipes and flags)"; else
    fail xcheck "rc $rc, $recipes of 10 recipes OK"
fi

TINY="$TINY -gemm_autotune 0"
resume_case delayed -fp8_amax_history_len 16
resume_case current -fp8_recipe current
resume_case blockwise -fp8_recipe blockwise -C 128
resume_case blockwise_c160 -fp8_recipe blockwise -C 160 -NH 5  # (ks 160 and 480: zero-padded to whole 128-blocks)
resume_case mxfp8 -fp8_recipe mxfp8 -C 72 -NH 3 -t 48
resume_case delayed_accumulation -fp8_amax_history_len 16 -d 1024
resume_case blockwise_accumulation -fp8_recipe blockwise -C 128 -d 1024
finish run-emulated
