#!/usr/bin/env bash
# scripts/run_gpt_fp8_1node.sh [NUM_GPUS] [-- trainer flags] — data-parallel training on the GPUs of one machine.
# With OpenMPI's mpirun: one rank per GPU (mpirun sets the ranks, the NCCL id goes through MPI). Without mpirun, or
# with the trainer built without MPI: the same ranks started here by hand, the NCCL id through TCP on this machine.
# NUM_GPUS defaults to every GPU nvidia-smi lists. The flags after -- replace the defaults below (a later flag wins).
# DRY_RUN=1 prints the command(s) instead of running them.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
ngpus=""
if [ $# -gt 0 ] && [ "$1" != "--" ]; then ngpus=$1; shift; fi
if [ $# -gt 0 ]; then
    [ "$1" = "--" ] || { echo "run_gpt_fp8_1node: error: trainer flags go after --" >&2; exit 2; }
    shift
fi
if [ -z "$ngpus" ]; then ngpus=$(nvidia-smi -L 2>/dev/null | wc -l); fi
case "$ngpus" in ''|*[!0-9]*|0) echo "run_gpt_fp8_1node: error: NUM_GPUS must be a positive integer (got '$ngpus')" >&2; exit 2;; esac
data=data/tinyshakespeare
flags=(-i "$data/tiny_shakespeare_train.bin" -j "$data/tiny_shakespeare_val.bin" -e d12 -b 16 -t 1024
       -d $((16 * 1024 * ngpus)) -l 6e-4 -u 50 -q 0.1 -v 50 -s 0 -precision fp8 -o log_1node "$@")
run() { if [ "${DRY_RUN:-0}" = 1 ]; then echo "$*"; else "$@"; fi; }
if [ "${NO_MPIRUN:-0}" != 1 ] && command -v mpirun >/dev/null 2>&1 && ldd ./train_gpt_fp8 2>/dev/null | grep -q libmpi; then
    run mpirun -np "$ngpus" --bind-to none ./train_gpt_fp8 "${flags[@]}"
else
    pids=()
    for ((rank = ngpus - 1; rank >= 0; rank--)); do  # rank 0 last: it is the one that prints
        if [ "${DRY_RUN:-0}" = 1 ]; then
            echo ./train_gpt_fp8 "${flags[@]}" -pn "$ngpus" -pr "$rank" -pi tcp -ps 127.0.0.1
        else
            ./train_gpt_fp8 "${flags[@]}" -pn "$ngpus" -pr "$rank" -pi tcp -ps 127.0.0.1 &
            pids+=($!)
        fi
    done
    status=0
    for pid in ${pids[@]+"${pids[@]}"}; do wait "$pid" || status=1; done
    exit $status
fi
