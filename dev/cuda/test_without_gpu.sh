#!/usr/bin/env bash
# dev/cuda/test_without_gpu.sh — on a machine without a usable GPU (CI), every GPU program must say so in one line
# and exit non-zero, not crash or print garbage. On a machine with a GPU this has nothing to check and says so.
set -u
cd "$(dirname "$0")/../.."
. scripts/test_lib.sh
programs="train_gpt_fp8 test_gpt_fp8 dev/cuda/fp8_quantize dev/cuda/fp8_update dev/cuda/fp8_gemm dev/cuda/gemm_shapes"
# built only where the Makefile finds cuDNN and its frontend (make info)
if [ -x dev/cuda/attention_cudnn ]; then programs="$programs dev/cuda/attention_cudnn"; fi
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    echo "a GPU is present: the GPU programs run for real there (GPU check), nothing to test here"
    pass gpu_present
    finish gpu-programs
fi
for p in $programs; do
    out=$("./$p" 2>&1)
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q "no CUDA device found"; then
        pass "$(basename "$p")_says_no_device"
    else
        fail "$(basename "$p")_says_no_device" "rc $rc: $out"
    fi
done
finish gpu-programs
