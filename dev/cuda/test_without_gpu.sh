#!/usr/bin/env bash
# dev/cuda/test_without_gpu.sh — on a machine without a usable GPU (CI), every GPU program must say "no CUDA device
# found" in one line and exit non-zero, not crash or print garbage. On a machine with a GPU that part has nothing to
# check and says so. First, on any machine: what the CUDA trainer decides from its flags before it looks for a GPU.
set -u
cd "$(dirname "$0")/../.."
. scripts/test_lib.sh
programs="train_gpt_fp8 test_gpt_fp8 dev/cuda/fp8_quantize dev/cuda/fp8_update dev/cuda/fp8_gemm dev/cuda/gemm_shapes
          dev/cuda/fp8_current_scaling"
# built only where the Makefile finds cuDNN and its frontend (make info)
if [ -x dev/cuda/attention_cudnn ]; then programs="$programs dev/cuda/attention_cudnn"; fi

# what the CUDA trainer decides from its flags alone, before it looks for a GPU (the same with or without one):
# -fp8 e5m2 (E5M2 x E5M2 GEMMs, which cuBLASLt lacks on Hopper) and the block recipes are refused in one line, and
# -h names this program
out=$(./train_gpt_fp8 -fp8 e5m2 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q "e5m2 is CPU-only" &&
    ! printf '%s' "$out" | grep -q "CUDA device"; then
    pass train_gpt_fp8_refuses_e5m2
else
    fail train_gpt_fp8_refuses_e5m2 "rc $rc: $out"
fi
out=$(./train_gpt_fp8 -precision fp8 -fp8_fp8_format e5m2 2>&1)
if [ "$?" -ne 0 ] && printf '%s' "$out" | grep -q "e5m2 is CPU-only"; then
    pass train_gpt_fp8_refuses_e5m2_recipe_flag
else
    fail train_gpt_fp8_refuses_e5m2_recipe_flag "$out"
fi
# the block recipes run in the CPU reference only, for now: refused in one line, before any GPU is looked for
for recipe in blockwise mxfp8; do
    out=$(./train_gpt_fp8 -fp8_recipe $recipe 2>&1)
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
        printf '%s' "$out" | grep -q -- "-fp8_recipe $recipe runs in the CPU reference trainer only (train_gpt_fp8_cpu)" &&
        ! printf '%s' "$out" | grep -q "CUDA device"; then
        pass train_gpt_fp8_refuses_$recipe
    else
        fail train_gpt_fp8_refuses_$recipe "rc $rc: $out"
    fi
done
out=$(./train_gpt_fp8 -h 2>&1)
if [ "$?" -eq 0 ] && printf '%s\n' "$out" | head -n 1 | grep -q "^usage: train_gpt_fp8 "; then
    pass train_gpt_fp8_help_names_it
else
    fail train_gpt_fp8_help_names_it "$(printf '%s\n' "$out" | head -n 1)"
fi

if ./scripts/has_gpu.sh >/dev/null; then
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
