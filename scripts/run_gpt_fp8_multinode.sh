#!/usr/bin/env bash
# scripts/run_gpt_fp8_multinode.sh HOSTFILE [-- trainer flags] — data-parallel training over several machines with
# OpenMPI's mpirun: HOSTFILE lists one "hostname slots=GPUS" line per machine, one rank runs per slot. Every machine
# needs this repository, the data and the output folder (-o) at the same path: a shared file system. NCCL picks the
# network itself; its NCCL_* variables (e.g. NCCL_SOCKET_IFNAME, NCCL_IB_HCA) are passed on to every rank.
# The flags after -- replace the defaults below (a later flag wins). DRY_RUN=1 prints the command.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
[ $# -ge 1 ] && [ "$1" != "--" ] || { echo "usage: scripts/run_gpt_fp8_multinode.sh HOSTFILE [-- trainer flags]" >&2; exit 2; }
hostfile=$1
shift
if [ $# -gt 0 ]; then
    [ "$1" = "--" ] || { echo "run_gpt_fp8_multinode: error: trainer flags go after --" >&2; exit 2; }
    shift
fi
[ -r "$hostfile" ] || { echo "run_gpt_fp8_multinode: error: cannot read hostfile $hostfile" >&2; exit 2; }
# total ranks: the sum of the slots (a host without slots= counts as one)
nranks=$(awk '!/^[[:space:]]*(#|$)/ { n = 1; for (i = 2; i <= NF; i++) if ($i ~ /^slots=/) { split($i, a, "="); n = a[2] } s += n } END { print s + 0 }' "$hostfile")
[ "$nranks" -gt 0 ] || { echo "run_gpt_fp8_multinode: error: no hosts in $hostfile" >&2; exit 2; }
data=data/tinyshakespeare
flags=(-i "$data/tiny_shakespeare_train.bin" -j "$data/tiny_shakespeare_val.bin" -e d12 -b 16 -t 1024
       -d $((16 * 1024 * nranks)) -l 6e-4 -u 50 -q 0.1 -v 50 -s 0 -precision fp8 -o log_multinode "$@")
export_nccl=()
for name in $(env | grep -o '^NCCL_[A-Z_]*' || true); do export_nccl+=(-x "$name"); done
cmd=(mpirun -np "$nranks" --hostfile "$hostfile" --bind-to none ${export_nccl[@]+"${export_nccl[@]}"} ./train_gpt_fp8 "${flags[@]}")
if [ "${DRY_RUN:-0}" = 1 ]; then echo "${cmd[*]}"; else exec "${cmd[@]}"; fi
