#!/usr/bin/env bash
# scripts/has_gpu.sh — does a GPU answer here? Exits 0 and prints nvidia-smi's first line ("GPU 0: <name> (UUID: ...)")
# when nvidia-smi runs and lists at least one GPU; else exits 1 and prints one line starting "no GPU:" that says why.
# The Makefile (what `make` and `make train` build, `make info`) and scripts/compare_bf16_fp8.sh (which trainer it
# runs) ask this one script, so they agree. Why nvidia-smi and not /dev/nvidia0: the device node can exist without a
# working driver (a container given the node but not the driver) and does not exist under WSL, whereas nvidia-smi comes
# with the driver and lists a GPU only when the driver can talk to it. Nothing here runs CUDA.
if ! command -v nvidia-smi >/dev/null 2>&1; then
    echo "no GPU: nvidia-smi is not installed (no NVIDIA driver)"
    exit 1
fi
if ! listing=$(nvidia-smi -L 2>&1); then
    echo "no GPU: nvidia-smi -L failed: $(printf '%s\n' "$listing" | head -n 1)"
    exit 1
fi
first=$(printf '%s\n' "$listing" | grep -m 1 '^GPU [0-9]')
if [ -z "$first" ]; then
    echo "no GPU: nvidia-smi -L lists none"
    exit 1
fi
echo "$first"
