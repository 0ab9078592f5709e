#!/usr/bin/env bash
# dev/cuda/emulate/test_emulated.sh — what CI can execute of the GPU code without a GPU: the emulation's own test, then
# the dev/cuda checks of our own kernels built for the CPU (make emulate; cuda_emulation.h), each in both thread orders
# (CUDA_EMULATION_ORDER: warps, and lanes within them, run between barriers first to last, then last to first). Each
# must end with its "<program>: N passed, 0 failed" line and exit 0; a failure shows its failed checks.
set -u
cd "$(dirname "$0")/../../.."
. scripts/test_lib.sh
# the longest first: fp8_block_quantize takes about 70 s an order on one core here, the others a few seconds
programs="test_cuda_emulation fp8_block_quantize fp8_update fp8_current_scaling fp8_quantize classifier gelu_fp8
          layernorm layernorm_fp8 adamw"
for p in $programs; do
    exe=dev/cuda/emulate/$p
    if [ ! -x "$exe" ]; then
        fail "$p" "not built (make $exe)"
        continue
    fi
    for order in forward reverse; do
        out=$(CUDA_EMULATION_ORDER=$order "$exe" 2>&1)
        rc=$?
        summary=$(printf '%s\n' "$out" | grep -E "^$p: [0-9]+ passed, 0 failed$" | tail -n 1)
        if [ "$rc" -eq 0 ] && [ -n "$summary" ]; then
            pass "$p, $order order (${summary#*: })"
        else
            details=$(printf '%s\n' "$out" | grep -E '^FAIL|check failed|cuda emulation|passed' | head -n 20)
            fail "$p, $order order" "exit $rc: $details"
        fi
    done
done
finish test_emulated
