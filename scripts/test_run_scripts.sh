#!/usr/bin/env bash
# scripts/test_run_scripts.sh — CPU test of the multi-GPU run scripts: syntax, the commands they would run (DRY_RUN=1)
# for mpirun on one node, by hand over TCP without mpirun, mpirun over a hostfile, and srun; and their one-line errors.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
. scripts/test_lib.sh
check() {  # name, expected substring, command...
    local name=$1 want=$2
    shift 2
    local out
    out=$("$@" 2>&1)
    if [[ "$out" == *"$want"* ]]; then pass "$name"; else fail "$name" "wanted '$want', got: $out"; fi
}
for s in scripts/run_gpt_fp8_1node.sh scripts/run_gpt_fp8_multinode.sh scripts/run_gpt_fp8_slurm.sh; do
    if bash -n "$s"; then pass "syntax_$(basename "$s" .sh)"; else fail "syntax_$(basename "$s" .sh)" "bash -n"; fi
done
# one node, no mpirun: 4 ranks by hand, rank 0 started last, global batch 4 x 16 x 1024, a later -x wins
out=$(NO_MPIRUN=1 DRY_RUN=1 scripts/run_gpt_fp8_1node.sh 4 -- -x 10)
n=$(echo "$out" | grep -c -- "-pi tcp -ps 127.0.0.1")
last=$(echo "$out" | tail -n 1)
if [ "$n" = 4 ] && [[ "$last" == *"-pn 4 -pr 0 -pi tcp"* ]] && [[ "$last" == *"-d 65536 "* ]] && [[ "$last" == *"-x 10"* ]]; then
    pass "1node_by_hand"
else
    fail "1node_by_hand" "$out"
fi
check 1node_bad_count "NUM_GPUS must be a positive integer" env DRY_RUN=1 scripts/run_gpt_fp8_1node.sh two
# several nodes: slots summed from the hostfile, NCCL_ variables exported
printf 'node1 slots=8\n# a comment\nnode2 slots=8\nnode3\n' >"$TMP/hosts"
check multinode_command "mpirun -np 17 --hostfile $TMP/hosts --bind-to none -x NCCL_SOCKET_IFNAME ./train_gpt_fp8" \
    env NCCL_SOCKET_IFNAME=eth0 DRY_RUN=1 scripts/run_gpt_fp8_multinode.sh "$TMP/hosts"
check multinode_batch "-d 278528 " env DRY_RUN=1 scripts/run_gpt_fp8_multinode.sh "$TMP/hosts"
check multinode_usage "usage: scripts/run_gpt_fp8_multinode.sh HOSTFILE" scripts/run_gpt_fp8_multinode.sh
check multinode_missing "cannot read hostfile" scripts/run_gpt_fp8_multinode.sh "$TMP/none"
# Slurm: srun, id file through the shared folder
check slurm_command "srun --kill-on-bad-exit=1 ./train_gpt_fp8" \
    env SLURM_NTASKS=16 SLURM_JOB_ID=77 OUT="$TMP/slurm" DRY_RUN=1 scripts/run_gpt_fp8_slurm.sh -- -x 5
check slurm_fs "-d 262144 -l 6e-4 -u 50 -q 0.1 -v 50 -s 0 -precision fp8 -o $TMP/slurm -pi fs -pf $TMP/slurm -x 5" \
    env SLURM_NTASKS=16 SLURM_JOB_ID=77 OUT="$TMP/slurm" DRY_RUN=1 scripts/run_gpt_fp8_slurm.sh -- -x 5
check slurm_outside "not inside a Slurm allocation" env -u SLURM_NTASKS scripts/run_gpt_fp8_slurm.sh
finish run-scripts
