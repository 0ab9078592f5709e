#!/usr/bin/env bash
# dev/build_llmc.sh — llm.c's CUDA trainer (train_gpt2cu) from a checkout of karpathy/llm.c, for issue 56's
# comparison of our BF16 step with llm.c's (scripts/gpu_check.sh's llmc stage; `make llmc-baseline` calls this).
# llm.c's source is brought in for the run and never committed here.
#
#   dev/build_llmc.sh LLMC_DIR OUT_DIR
#
# copies LLMC_DIR's train_gpt2.cu and llmc/ into OUT_DIR (emptied first) and builds OUT_DIR/train_gpt2cu as llm.c's
# Makefile does for one GPU (-O3 --use_fast_math, BF16, no MPI), for compute capability 9.0, with cuDNN attention
# when CUDNN_CFLAGS and CUDNN_LDLIBS say where cuDNN and its frontend are (make passes the ones it detected). Two
# lines of the copy change, each only where it is found as llm.c f1e2ace has it:
#   llmc/cuda_utils.cuh  cudaMemAdvise takes a cudaMemLocation since CUDA 13 (a device id before): the managed-memory
#                        fallback's preferred location is given as the host that way, which CUDA 13 compiles
#   llmc/mfu.h           NVML off: llm.c reads the GPU's clocks and power through it for its log, which step times do
#                        not need, and linking it needs the driver's libnvidia-ml
# Environment: NVCC (default nvcc), CUDNN_CFLAGS, CUDNN_LDLIBS (both empty: no cuDNN). Errors: one line, exit 1.
set -euo pipefail

die() { echo "build_llmc: $*" >&2; exit 1; }

[ $# -eq 2 ] || die "usage: dev/build_llmc.sh LLMC_DIR OUT_DIR"
src=$1 out=$2
if [ ! -f "$src/train_gpt2.cu" ] || [ ! -f "$src/llmc/cuda_utils.cuh" ]; then
    die "$src is not an llm.c checkout (no train_gpt2.cu and llmc/cuda_utils.cuh): git clone https://github.com/karpathy/llm.c"
fi
nvcc=${NVCC:-nvcc}
command -v "$nvcc" >/dev/null 2>&1 || die "no nvcc ($nvcc)"

rm -rf "$out"
mkdir -p "$out"
cp "$src/train_gpt2.cu" "$out/"
cp -r "$src/llmc" "$out/"

old_advise='cudaCheck_(cudaMemAdvise(*out, bytes, cudaMemAdviseSetPreferredLocation, cudaCpuDeviceId), file, line);'
new_advise='cudaMemLocation host_location = {}; host_location.type = cudaMemLocationTypeHost; cudaCheck_(cudaMemAdvise(*out, bytes, cudaMemAdviseSetPreferredLocation, host_location), file, line);'
changed=()
if grep -qF "$old_advise" "$out/llmc/cuda_utils.cuh"; then
    python3 - "$out/llmc/cuda_utils.cuh" "$old_advise" "$new_advise" <<'PY'
import sys
path, old, new = sys.argv[1:4]
text = open(path).read()
open(path, "w").write(text.replace(old, new))
PY
    changed+=("cudaMemAdvise's location")
fi
if grep -q '^#if __has_include(<nvml.h>)' "$out/llmc/mfu.h"; then
    sed -i 's|^#if __has_include(<nvml.h>)|#if 0  // dev/build_llmc.sh: NVML off|' "$out/llmc/mfu.h"
    changed+=("NVML off")
fi

flags=(-O3 --use_fast_math -std=c++17 --generate-code "arch=compute_90,code=[compute_90,sm_90]" -DENABLE_BF16
    -DNO_USE_MPI)
objects=()
attention="without cuDNN"
if [ -n "${CUDNN_CFLAGS:-}" ]; then
    # shellcheck disable=SC2206 # the flags are words
    cudnn_cflags=(${CUDNN_CFLAGS})
    (cd "$out" && "$nvcc" -c "${flags[@]}" -DENABLE_CUDNN "${cudnn_cflags[@]}" llmc/cudnn_att.cpp -o cudnn_att.o) ||
        die "llm.c's cuDNN attention (llmc/cudnn_att.cpp) did not build"
    flags+=(-DENABLE_CUDNN "${cudnn_cflags[@]}")
    objects=(cudnn_att.o)
    attention="with cuDNN"
fi
# shellcheck disable=SC2206 # the link flags are words
ldlibs=(-lcublas -lcublasLt ${CUDNN_LDLIBS:-})
(cd "$out" && "$nvcc" "${flags[@]}" train_gpt2.cu ${objects[@]+"${objects[@]}"} "${ldlibs[@]}" -o train_gpt2cu) ||
    die "llm.c's train_gpt2.cu did not build"
echo "build_llmc: $out/train_gpt2cu, llm.c from $src, $attention; changed: ${changed[*]:-nothing}"
