#!/usr/bin/env bash
# dev/cuda/emulate/test_emulated.sh [kernels|trainer] — what CI can execute of the GPU code without a GPU.
#   kernels (the default; suite test_emulated): the emulation's own test, then the dev/cuda checks of our own kernels
#     built for the CPU (make emulate; cuda_emulation.h), each in both thread orders (CUDA_EMULATION_ORDER: warps, and
#     lanes within them, run between barriers first to last, then last to first);
#   trainer (suite test_emulated_trainer): test_gpt_fp8, the GPU trainer against the CPU reference, every case but
#     cuDNN's, its GEMMs on the CPU (cublas_emulation.h), in the forward order (its kernels' own checks take both). A
#     case it skips is a failure: every one of them can run here. Left out (--skip): the medium model's five FP8
#     steps and five at C 1600 (55 and 49 s of one core here, 0.4 of the suite), numeric checks for a GPU whose code
#     runs here in the medium BF16 case, the fused casts at C 384 and the FP8 cases at other shapes.
# Each program must end with its "<suite>: N passed, 0 failed" line and exit 0; a failure shows its failed checks.
set -u
cd "$(dirname "$0")/../../.."
. scripts/test_lib.sh
mode=${1:-kernels}
case $mode in
    # the longest first: fp8_block_quantize takes about 53 s an order on one core here (D12_ROWS), the others
    # a few seconds
    kernels) suite=test_emulated orders="forward reverse"
             programs="test_cuda_emulation fp8_block_quantize fp8_update fp8_current_scaling fp8_quantize classifier
                       gelu_fp8 layernorm layernorm_fp8 adamw" ;;
    trainer) suite=test_emulated_trainer orders=forward programs=test_gpt_fp8
             skip="--skip test_medium_fp8_state_after_1_and_5_steps --skip test_medium_xl_width_fp8_five_steps" ;;
    *) echo "usage: $0 [kernels|trainer]" >&2; exit 2 ;;
esac
for p in $programs; do
    exe=dev/cuda/emulate/$p
    if [ ! -x "$exe" ]; then
        fail "$p" "not built (make $exe)"
        continue
    fi
    name=$p
    [ "$p" = test_gpt_fp8 ] && name=gpt-gpu  # (test_gpt_fp8's suite name)
    for order in $orders; do
        out=$(CUDA_EMULATION_ORDER=$order "$exe" ${skip:-} 2>&1)
        rc=$?
        summary=$(printf '%s\n' "$out" | grep -a -E "^$name: [0-9]+ passed, 0 failed$" | tail -n 1)
        skipped=$(printf '%s\n' "$out" | grep -a -E '^ *SKIP' | head -n 5)
        if [ "$rc" -eq 0 ] && [ -n "$summary" ] && [ -z "$skipped" ]; then
            pass "$p, $order order (${summary#*: })"
        else
            details=$(printf '%s\n' "$out" | grep -a -E '^ *SKIP|^FAIL|check failed|cuda emulation|passed' | head -n 20)
            fail "$p, $order order" "exit $rc: $details"
        fi
    done
done
finish $suite
