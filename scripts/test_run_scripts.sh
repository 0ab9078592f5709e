#!/usr/bin/env bash
# scripts/test_run_scripts.sh — CPU test of the multi-GPU run scripts: syntax, the commands they would run (DRY_RUN=1)
# for mpirun on one node, by hand over TCP without mpirun, mpirun over a hostfile, and srun; and their one-line errors.
# Also make train's script (scripts/compare_bf16_fp8.sh) with a stand-in trainer: its progress bar fits 80 columns,
# STEPS=0 and a run of no step are one line each, RUNS picks runs, runs of no diagnostics step get a line instead of
# pictures; and the Makefile's llm.c targets and help.
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

# make train's script, with a stand-in trainer that prints a GPU run's widest step lines (6-digit tok/s) and a val
# loss, on a stand-in dataset (its files are never read)
mkdir -p "$TMP/fake" "$TMP/tiny"
touch "$TMP/tiny/tiny_train_000001.bin" "$TMP/tiny/tiny_val.bin" "$TMP/tiny/tokenizer.bin"
cat >"$TMP/fake/train_gpt_fp8_cpu" <<'EOF'
#!/usr/bin/env bash
[[ " $* " == *" -x 0 "* ]] && exit 0  # -x 0: no step
out=$(sed -E 's/.* -o ([^ ]+) .*/\1/' <<<" $* ")  # every run the same losses: a gap of 0
mkdir -p "$out" && printf 's:0 tel:6.9315\ns:1 trl:6.9000 lr:0.000400 norm:1.00\ns:600 tel:4.5000\n' >"$out/main.log"
echo "${OMP_WAIT_POLICY-unset}" >"$out/omp_wait_policy"  # what libgomp would read
echo "${OMP_NUM_THREADS-unset}" >"$out/omp_num_threads"
# FAKE_FAIL=RUN: that run fails at once; the others then train slowly (a heartbeat a tenth of a second, 30 s in all)
if [ -n "${FAKE_FAIL:-}" ]; then
    if [ "$(basename "$out")" = "$FAKE_FAIL" ]; then echo "error: a planted failure"; exit 3; fi
    for i in $(seq 300); do echo "$i" >>"$out/heartbeat"; sleep 0.1; done
fi
# FAKE_DIAG=header: an fp8_diag.tsv of its header alone (a run that ended before its first diagnostics step);
# foreign: a file of a line under another header, which the picture script refuses; else none
[ "${FAKE_DIAG:-}" = header ] && printf 'step\tmodule\tlayer\tgemm\ttensor\tformat\tamax\n' >"$out/fp8_diag.tsv"
[ "${FAKE_DIAG:-}" = foreign ] && printf 'step\tx\n1\t2\n' >"$out/fp8_diag.tsv"
echo "val loss 6.931472"
for step in 1 2 300 600; do
    echo "step $(printf '%4d' $step)/600 | loss 4.123456 | norm 0.7580 | lr 4.00e-04 | 155.00 ms | 123456 tok/s | ETA 12m34s"
done
EOF
chmod +x "$TMP/fake/train_gpt_fp8_cpu"
compare() {  # VAR=value... [-- trainer flags]: the comparison with the stand-in trainer
    local vars=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do vars+=("$1"); shift; done
    env "${vars[@]}" DATA="$TMP/tiny" OUT="$TMP/compare" TRAINER="$TMP/fake/train_gpt_fp8_cpu" \
        ./scripts/compare_bf16_fp8.sh "$@"
}
compare STEPS=600 PROGRESS=bar JOBS=1 >"$TMP/bar.out" 2>&1
# every state of the bar (the text between carriage returns, its clear-to-end-of-line escape left out) of every run
bars=$(tr '\r' '\n' <"$TMP/bar.out" | sed 's/\x1b\[K//g' | grep -E '^  [a-z0-9_]+ +\[#*' || true)
wide=$(printf '%s\n' "$bars" | awk 'length($0) > 80')
if [ "$(printf '%s\n' "$bars" | grep -c .)" -ge 20 ] && [ -z "$wide" ] &&
    printf '%s\n' "$bars" | grep -q '^  fp8_blockwise \[#\+\] 600/600 loss 4.1235 val 6.9315 123456 tok/s ETA 12m34s$'; then
    pass compare_bar_fits_80_columns
else
    fail compare_bar_fits_80_columns "$(printf '%s\n' "$wide" "$bars" | head -n 3)"
fi
# runs side by side on a terminal: every running run's bar on a line of its own, redrawn in place (up over the last
# drawing, cleared to the end of the screen); each run's last bar and its done line stay, none wider than 80 columns
compare STEPS=600 PROGRESS=bar JOBS=3 >"$TMP/bars.out" 2>&1
rc=$?
# the lines as a terminal would keep them: every escape left out (a redraw: ESC[nA, CR, ESC[J; a line's ESC[K)
kept=$(sed -E 's/\x1b\[[0-9]*[AJK]//g; s/\r//g' "$TMP/bars.out")
final_bar='^  [a-z0-9_]+ +\[#+\] 600/600 loss 4.1235 val 6.9315 123456 tok/s ETA 12m34s$'
finals=$(printf '%s\n' "$kept" | grep -cE "$final_bar")
wide=$(printf '%s\n' "$kept" | awk 'length($0) > 80 && /tok\/s/')
if [ "$rc" -eq 0 ] && [ "$finals" -ge 6 ] && [ -z "$wide" ] &&
    grep -q "^compare_bf16_fp8: 6 runs (.*) of 600 steps, seed 1337, 3 at a time" "$TMP/bars.out" &&
    [ "$(grep -c "^compare_bf16_fp8: [a-z0-9_]* done in " "$TMP/bars.out")" -eq 6 ] &&
    [ -z "$(find "$TMP/compare" -maxdepth 1 -name '*.rc' -o -maxdepth 1 -name '*.bar' -o -maxdepth 1 -name '*.pid')" ]
then
    pass compare_side_by_side_bars
else
    fail compare_side_by_side_bars "rc $rc, $finals final bars, wide: $wide; $(printf '%s\n' "$kept" | tail -n 3)"
fi
# side by side, each run gets cores / JOBS OpenMP threads (at least 1), unless the caller says how many (below)
threads_given=$(cat "$TMP/compare/fp8/omp_num_threads" 2>/dev/null)
# a run that fails stops the comparison: the runs beside it are stopped too (their heartbeats end before their 300th),
# no other starts,
# and one error line names the run, with its last lines
rm -rf "$TMP/compare"
out=$(compare STEPS=10 PROGRESS=lines JOBS=3 FAKE_FAIL=fp8_current OMP_NUM_THREADS=3 2>&1)
rc=$?
beats=$(cat "$TMP/compare"/{bf16,fp8}/heartbeat 2>/dev/null | wc -l)
sleep 0.5
beats_later=$(cat "$TMP/compare"/{bf16,fp8}/heartbeat 2>/dev/null | wc -l)
threads_chosen=$(cat "$TMP/compare/fp8/omp_num_threads" 2>/dev/null)
cores=$(nproc)
if [ "$threads_given" = "$((cores / 3 > 1 ? cores / 3 : 1))" ] && [ "$threads_chosen" = 3 ]; then
    pass compare_side_by_side_threads
else
    fail compare_side_by_side_threads "$cores cores, JOBS=3: '$threads_given'; OMP_NUM_THREADS=3: '$threads_chosen'"
fi
said_failed=$(printf '%s\n' "$out" | grep -c "error: the fp8_current run failed; its last lines")
started=$(printf '%s\n' "$out" | grep -c "^compare_bf16_fp8: run [0-9]/6: ")
if [ "$rc" -ne 0 ] && [ "$said_failed" -eq 1 ] && printf '%s\n' "$out" | grep -q "error: a planted failure" &&
    [ "$beats" = "$beats_later" ] && [ "$beats" -lt 600 ] && [ "$started" -eq 3 ] &&
    [ ! -e "$TMP/compare/fp8_blockwise" ]; then
    pass compare_side_by_side_failure_stops_the_others
else
    fail compare_side_by_side_failure_stops_the_others "rc $rc, heartbeats $beats then $beats_later: $(printf '%s\n' \
        "$out" | tail -n 4)"
fi
# stopped by a signal (TERM here: a test's background command ignores SIGINT, as every script's does; Ctrl-C takes the
# same path), the comparison stops its runs too and exits 143
rm -rf "$TMP/compare"
env DATA="$TMP/tiny" OUT="$TMP/compare" TRAINER="$TMP/fake/train_gpt_fp8_cpu" STEPS=10 PROGRESS=lines JOBS=2 \
    FAKE_FAIL=none ./scripts/compare_bf16_fp8.sh >"$TMP/stopped.out" 2>&1 &
pid=$!
for i in $(seq 100); do  # until both runs beat (10 s at most)
    [ -s "$TMP/compare/bf16/heartbeat" ] && [ -s "$TMP/compare/fp8/heartbeat" ] && break
    sleep 0.1
done
kill -TERM "$pid"
wait "$pid"
rc=$?
beats=$(cat "$TMP/compare"/{bf16,fp8}/heartbeat 2>/dev/null | wc -l)
sleep 0.5
beats_later=$(cat "$TMP/compare"/{bf16,fp8}/heartbeat 2>/dev/null | wc -l)
if [ "$rc" -eq 143 ] && [ "$beats" -gt 0 ] && [ "$beats" = "$beats_later" ] && [ "$beats" -lt 600 ]; then
    pass compare_stopped_stops_its_runs
else
    fail compare_stopped_stops_its_runs "rc $rc, heartbeats $beats then $beats_later: $(tail -n 2 "$TMP/stopped.out")"
fi
check compare_jobs_0 "compare_bf16_fp8: error: JOBS=0: expected how many runs train at once, a whole number from 1" \
    compare STEPS=10 JOBS=0
# the CPU recipe's seed-to-seed spread (1%, CPU_NOISE_PCT) reaches plot_losses.py: a gap of 0 is within it
if grep -q "^fp8 delayed vs bf16: final val 4.5000 vs 4.5000 (+0.00%): within noise (|gap| < 1%" "$TMP/bar.out"; then
    pass compare_gap_within_noise
else
    fail compare_gap_within_noise "$(grep -m 3 -e ' vs bf16' -e error "$TMP/bar.out")"
fi
# the runs' OpenMP threads sleep when they wait (OMP_WAIT_POLICY=passive, the Makefile says why), unless the caller
# chose a policy; make exports the same default to every program it runs
env -u OMP_WAIT_POLICY DATA="$TMP/tiny" OUT="$TMP/policy" TRAINER="$TMP/fake/train_gpt_fp8_cpu" STEPS=10 \
    ./scripts/compare_bf16_fp8.sh >/dev/null 2>&1
policy_default=$(cat "$TMP/policy/fp8/omp_wait_policy" 2>/dev/null)
compare STEPS=10 OMP_WAIT_POLICY=active >/dev/null 2>&1
policy_chosen=$(cat "$TMP/compare/fp8/omp_wait_policy" 2>/dev/null)
policy_make=$(env -u OMP_WAIT_POLICY make -s --eval 'show_policy: ; @echo "$$OMP_WAIT_POLICY"' show_policy 2>&1)
policy_make_chosen=$(OMP_WAIT_POLICY=active make -s --eval 'show_policy: ; @echo "$$OMP_WAIT_POLICY"' show_policy 2>&1)
if [ "$policy_default" = passive ] && [ "$policy_chosen" = active ] && [ "$policy_make" = passive ] &&
    [ "$policy_make_chosen" = active ]; then
    pass omp_wait_policy_passive_unless_chosen
else
    fail omp_wait_policy_passive_unless_chosen "make train's runs: '$policy_default', chosen active: '$policy_chosen'; make: '$policy_make', chosen active: '$policy_make_chosen'"
fi
check compare_steps_0 "compare_bf16_fp8: error: STEPS=0: expected the steps of each run, a whole number from 1" compare STEPS=0
check compare_steps_word "compare_bf16_fp8: error: STEPS=many: expected" compare STEPS=many
out=$(compare STEPS=10 PROGRESS=lines -- -x 0 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | grep -c error)" -eq 1 ] &&
    printf '%s\n' "$out" |
    grep -qE "compare_bf16_fp8: error: the (bf16|fp8) run trained no step \(an -x 0 among the flags after --\?\)"; then
    pass compare_run_of_no_step
else
    fail compare_run_of_no_step "rc $rc: $out"
fi
# RUNS: those runs beside bf16, in the usual order (test_prepare_dataset.sh: their diagnostics alone, on the CPU
# trainer); a name the trainer does not run, or no FP8 run, refused in one line
out=$(env DATA="$TMP/tiny" OUT="$TMP/subset" TRAINER="$TMP/fake/train_gpt_fp8_cpu" STEPS=10 PROGRESS=lines \
    RUNS="fp8_mxfp8, fp8" ./scripts/compare_bf16_fp8.sh 2>&1)
if printf '%s\n' "$out" | grep -q "^compare_bf16_fp8: 3 runs (bf16 fp8 fp8_mxfp8) of 10 steps" &&
    [ "$(printf '%s\n' "$out" | grep -c "^compare_bf16_fp8: run [0-9]/3: ")" -eq 3 ] &&
    [ "$(find "$TMP/subset" -mindepth 1 -maxdepth 1 -type d -printf '%f ' | tr ' ' '\n' | sort | paste -sd' ')" = \
        "bf16 fp8 fp8_mxfp8" ]; then
    pass compare_runs_subset
else
    fail compare_runs_subset "$(printf '%s\n' "$out" | grep -e 'runs (' -e error); folders: $(ls "$TMP/subset")"
fi
# runs that recorded no diagnostics step (fewer steps than -fp8_diag_every's 10: make train STEPS=5; or no file, as with
# -fp8_diag_every 0) get one line each instead of their pictures, and the comparison still succeeds
for fake_diag in header none; do
    out=$(compare STEPS=5 PROGRESS=lines RUNS="fp8 fp8_current" FAKE_DIAG=$fake_diag 2>&1)
    rc=$?
    said=$(printf '%s\n' "$out" | grep -c "^compare_bf16_fp8: no FP8 diagnostics pictures for fp8\(_current\)\?: it \
recorded no diagnostics step (-fp8_diag_every is 10 unless given after --; these runs made 5 steps)$")
    if [ "$rc" -eq 0 ] && [ "$said" -eq 2 ] &&
        printf '%s\n' "$out" | grep -q "^compare_bf16_fp8: FP8 diagnostics pictures: none$"; then
        pass "compare_no_diagnostics_step_$fake_diag"
    else
        fail "compare_no_diagnostics_step_$fake_diag" "rc $rc, $said lines: $(printf '%s\n' "$out" | tail -n 3)"
    fi
done
# the runs' pictures are drawn side by side: pictures that fail (files the picture script refuses) fail the comparison
# once every run's were tried, each one's output printed whole in the runs' order, then one error line naming them,
# and nothing of the jobs left in the run folders
out=$(compare STEPS=10 PROGRESS=lines RUNS="fp8 fp8_current" FAKE_DIAG=foreign 2>&1)
rc=$?
refused=$(printf '%s\n' "$out" | grep "fp8_diag.tsv: not an fp8_diag.tsv of this version" |
    sed -E 's#.*/compare/([a-z0-9_]+)/fp8_diag\.tsv.*#\1#' | paste -sd' ')
if [ "$rc" -ne 0 ] && [ "$refused" = "fp8 fp8_current" ] && [ "$(printf '%s\n' "$out" | grep -c error:)" -eq 3 ] &&
    [ "$(printf '%s\n' "$out" | tail -n 1)" = \
        "compare_bf16_fp8: error: the FP8 diagnostics pictures of fp8 fp8_current failed (their output above)" ] &&
    [ -z "$(find "$TMP/compare" -name 'plot_fp8_diag.*')" ]; then
    pass compare_pictures_side_by_side_fail_together
else
    fail compare_pictures_side_by_side_fail_together "rc $rc, refused '$refused': $(printf '%s\n' "$out" | tail -n 4)"
fi
check compare_runs_unknown "compare_bf16_fp8: error: RUNS=fp8 fp8_e4m3: fp8_e4m3 is not one of this trainer's runs \
(bf16 fp8 fp8_current fp8_blockwise fp8_mxfp8 fp8_attention)" compare STEPS=10 RUNS="fp8 fp8_e4m3"
check compare_runs_bf16_alone "compare_bf16_fp8: error: RUNS=bf16: no FP8 run to compare with bf16" \
    compare STEPS=10 RUNS=bf16
# the CUDA trainer (a stand-in by its name): no CPU-only FP8 attention run, blockwise only on compute capability 9.0
# (none without nvidia-smi: said, not a silent exit), and RUNS refuses what it does not run
mkdir -p "$TMP/fake_gpu"
cp "$TMP/fake/train_gpt_fp8_cpu" "$TMP/fake_gpu/train_gpt_fp8"
capability=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' ')
cuda_runs="bf16 fp8 fp8_current fp8_mxfp8"
[ "$capability" = 9.0 ] && cuda_runs="bf16 fp8 fp8_current fp8_blockwise fp8_mxfp8"
out=$(env DATA="$TMP/tiny" OUT="$TMP/cuda" TRAINER="$TMP/fake_gpu/train_gpt_fp8" STEPS=10 PROGRESS=lines \
    ./scripts/compare_bf16_fp8.sh 2>&1)
if printf '%s\n' "$out" | grep -q "^compare_bf16_fp8: $(wc -w <<<"$cuda_runs") runs ($cuda_runs) of 10 steps"; then
    pass compare_cuda_trainer_runs
else
    fail compare_cuda_trainer_runs "wanted the runs $cuda_runs: $(printf '%s\n' "$out" | grep -e 'runs (' -e error |
        head -n 3)"
fi
check compare_cuda_trainer_refuses_attention_run \
    "compare_bf16_fp8: error: RUNS=fp8_attention: fp8_attention is not one of this trainer's runs ($cuda_runs)" \
    env DATA="$TMP/tiny" OUT="$TMP/cuda" TRAINER="$TMP/fake_gpu/train_gpt_fp8" STEPS=10 RUNS=fp8_attention \
    ./scripts/compare_bf16_fp8.sh
# llm.c's targets point to this project's; make help names the runs and every knob of make train (one make: its
# probes of the compilers and the GPU take seconds)
out=$(make -s help train_gpt2 2>&1)
rc=$?
if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | grep -c "llm.c's target")" -eq 1 ] &&
    printf '%s' "$out" | grep -q "^make train_gpt2: llm.c's target; here: make train_gpt_fp8_cpu (CPU), make train_gpt_fp8 (CUDA)"; then
    pass make_llmc_target
else
    fail make_llmc_target "rc $rc: $(printf '%s\n' "$out" | grep train_gpt2)"
fi
if printf '%s\n' "$out" | grep -q "BF16 and FP8 delayed, current, blockwise, mxfp8" &&
    printf '%s\n' "$out" | grep -q "a sixth run, delayed with FP8 attention" && printf '%s\n' "$out" | grep -q "STEPS OUT SEED INPUT DATA TRAINER" &&
    printf '%s\n' "$out" | grep -q "^  RUNS=fp8,fp8_current  make train: only these runs beside bf16" &&
    printf '%s\n' "$out" | grep -q "^  PROGRESS=bar|lines " && ! printf '%s\n' "$out" | grep -q "FP8 (delayed scaling) GPT"; then
    pass make_help_names_the_runs_and_knobs
else
    fail make_help_names_the_runs_and_knobs "$(printf '%s\n' "$out" | head -n 5)"
fi
finish run-scripts
