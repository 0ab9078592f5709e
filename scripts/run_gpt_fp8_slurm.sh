#!/usr/bin/env bash
# scripts/run_gpt_fp8_slurm.sh — data-parallel training under Slurm, without MPI: `sbatch scripts/run_gpt_fp8_slurm.sh`
# (edit the #SBATCH lines for your cluster), or inside an allocation `bash scripts/run_gpt_fp8_slurm.sh [-- flags]`.
# srun starts one task per GPU and sets SLURM_PROCID / SLURM_NTASKS / SLURM_LOCALID, which the trainer reads; the
# NCCL id goes through a file in SHARED_DIR (default: the output folder, which every node must see), named after the
# job and step so a file left by an earlier job is never read. The flags after -- replace the defaults (a later flag
# wins). DRY_RUN=1 prints the srun command.
#SBATCH --job-name=gptfp8
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=8
#SBATCH --gpus-per-node=8
#SBATCH --cpus-per-task=12
#SBATCH --output=gptfp8_%j.out
set -euo pipefail
repo=${SLURM_SUBMIT_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
cd "$repo"
if [ $# -gt 0 ]; then
    [ "$1" = "--" ] || { echo "run_gpt_fp8_slurm: error: trainer flags go after --" >&2; exit 2; }
    shift
fi
ntasks=${SLURM_NTASKS:-}
[ -n "$ntasks" ] || { echo "run_gpt_fp8_slurm: error: not inside a Slurm allocation (submit with sbatch)" >&2; exit 2; }
out=${OUT:-log_slurm_${SLURM_JOB_ID:-0}}
shared=${SHARED_DIR:-$out}
mkdir -p "$out" "$shared"
data=data/tinyshakespeare
flags=(-i "$data/tiny_shakespeare_train.bin" -j "$data/tiny_shakespeare_val.bin" -e d12 -b 16 -t 1024
       -d $((16 * 1024 * ntasks)) -l 6e-4 -u 50 -q 0.1 -v 50 -s 0 -precision fp8 -o "$out" -pi fs -pf "$shared" "$@")
cmd=(srun --kill-on-bad-exit=1 ./train_gpt_fp8 "${flags[@]}")
if [ "${DRY_RUN:-0}" = 1 ]; then echo "${cmd[*]}"; else exec "${cmd[@]}"; fi
