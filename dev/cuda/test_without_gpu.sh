#!/usr/bin/env bash
# dev/cuda/test_without_gpu.sh — on a machine without a usable GPU (CI), every GPU program must say "no CUDA device
# found" in one line and exit non-zero, not crash or print garbage. On a machine with a GPU that part has nothing to
# check and says so. First, on any machine: what the CUDA trainer decides from its flags before it looks for a GPU.
set -u
cd "$(dirname "$0")/../.."
. scripts/test_lib.sh
programs="train_gpt_fp8 test_gpt_fp8 dev/cuda/fp8_quantize dev/cuda/fp8_update dev/cuda/fp8_gemm dev/cuda/gemm_shapes
          dev/cuda/fp8_current_scaling dev/cuda/fp8_block_quantize dev/cuda/fp8_block_gemm dev/cuda/gelu_fp8
          dev/cuda/layernorm dev/cuda/layernorm_fp8 dev/cuda/classifier dev/cuda/adamw"
# built only where the Makefile finds cuDNN and its frontend (make info)
for p in dev/cuda/attention_cudnn dev/cuda/attention_cudnn_fp8; do
    if [ -x "$p" ]; then programs="$programs $p"; fi
done

# what the CUDA trainer decides from its flags alone, before it looks for a GPU (the same with or without one):
# -fp8 e5m2 (E5M2 x E5M2 GEMMs, which cuBLASLt lacks on Hopper) is refused in one line, -h names this program and says
# what the block recipes run on
# refused_before_gpu NAME TEXT FLAGS...: train_gpt_fp8 with FLAGS exits non-zero with one line holding TEXT, and
# never gets as far as looking for a CUDA device
refused_before_gpu() {
    local name=$1 want=$2 out rc
    shift 2
    out=$(./train_gpt_fp8 "$@" 2>&1)
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q -- "$want" &&
        ! printf '%s' "$out" | grep -q "CUDA device"; then
        pass "$name"
    else
        fail "$name" "rc $rc: $out"
    fi
}
refused_before_gpu train_gpt_fp8_refuses_e5m2 "e5m2 is CPU-only" -fp8 e5m2
refused_before_gpu train_gpt_fp8_refuses_e5m2_recipe_flag "e5m2 is CPU-only" -precision fp8 -fp8_fp8_format e5m2
# the switch of the per-tensor recipes' fused casts: a block recipe, whose casts make their tensors inside, refuses it
refused_before_gpu train_gpt_fp8_refuses_fused_casts_with_blockwise \
    "-fp8_fused_casts applies to delayed and current scaling only" -fp8_recipe blockwise -fp8_fused_casts 1
# FP8 attention runs cuDNN's FP8 graph: refused with the plain attention (below: with cuDNN's, it looks for a GPU)
refused_before_gpu train_gpt_fp8_refuses_fp8_attention_plain "-fp8_attention 1 runs cuDNN's FP8 attention, not -attn plain" \
    -fp8_attention 1 -attn plain
refused_before_gpu train_gpt_fp8_refuses_gemm_autotune_17 "invalid value '17' for -gemm_autotune: must be in \[0, 16\]" \
    -gemm_autotune 17
refused_before_gpu train_gpt_fp8_refuses_cuda_graph_2 "invalid value '2' for -cuda_graph: must be in \[0, 1\]" \
    -cuda_graph 2
refused_before_gpu train_gpt_fp8_refuses_cuda_graph_with_ranks "-cuda_graph 1 runs on one GPU: this run has 2 processes" \
    -cuda_graph 1 -pn 2 -pr 0 -pi fs -pf /tmp
out=$(./train_gpt_fp8 -h 2>&1)
if [ "$?" -eq 0 ] && printf '%s\n' "$out" | head -n 1 | grep -q "^usage: train_gpt_fp8 "; then
    pass train_gpt_fp8_help_names_it
else
    fail train_gpt_fp8_help_names_it "$(printf '%s\n' "$out" | head -n 1)"
fi
flat=$(printf '%s\n' "$out" | tr -s ' \n' '  ')  # -h wraps its text at 80 columns
if grep -q "blockwise on Hopper's block-scaled GEMMs" <<<"$flat" &&
    grep -q "it measures MXFP8's accuracy, not its speed" <<<"$flat"; then
    pass train_gpt_fp8_help_says_what_the_block_recipes_run_on
else
    fail train_gpt_fp8_help_says_what_the_block_recipes_run_on "$out"
fi

# gemm_shapes reads its flags before it looks for a GPU: -algos outside [1, 16] is refused in one line that says so
for algos in 0 17 x; do
    out=$(./dev/cuda/gemm_shapes -algos $algos 2>&1)
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
        printf '%s' "$out" | grep -q "invalid value '$algos' for -algos: expected an integer in \[1, 16\]"; then
        pass "gemm_shapes_refuses_algos_$algos"
    else
        fail "gemm_shapes_refuses_algos_$algos" "rc $rc: $out"
    fi
done

if ./scripts/has_gpu.sh >/dev/null; then
    echo "a GPU is present: the GPU programs run for real there (GPU check), nothing to test here"
    pass gpu_present
    finish gpu-programs
fi
# looks_for_a_gpu NAME FLAGS...: the trainer takes the flags and goes on to look for a GPU like any run (one line)
looks_for_a_gpu() {
    local name=$1 out rc
    shift
    out=$(./train_gpt_fp8 "$@" 2>&1)
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q "no CUDA device found"; then
        pass "train_gpt_fp8_${name}_looks_for_a_gpu"
    else
        fail "train_gpt_fp8_${name}_looks_for_a_gpu" "rc $rc: $out"
    fi
}
# the block recipes run on the GPU now
for recipe in blockwise mxfp8; do looks_for_a_gpu "$recipe" -precision fp8 -fp8_recipe "$recipe"; done
# timing the GEMMs' algorithms, or not
for n in 0 4; do looks_for_a_gpu "gemm_autotune_$n" -gemm_autotune "$n"; done
# a micro-batch's forward and backward as CUDA graphs, or kernel by kernel
for n in 0 1; do looks_for_a_gpu "cuda_graph_$n" -cuda_graph "$n"; done
# FP8 attention with cuDNN's attention (a build with cuDNN: the Makefile builds attention_cudnn_fp8 beside it)
if [ -x dev/cuda/attention_cudnn_fp8 ]; then looks_for_a_gpu fp8_attention -fp8_attention 1; fi
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
