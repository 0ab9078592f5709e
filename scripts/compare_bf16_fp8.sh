#!/usr/bin/env bash
# scripts/compare_bf16_fp8.sh [-- extra trainer flags] — trains the same model on the same data and seed in BF16 and
# in FP8 with each of Megatron's four recipes: delayed scaling, current scaling (-fp8_recipe current), blockwise and
# mxfp8 (on the CUDA trainer: blockwise on Hopper's block-scaled GEMMs, left out on another GPU; mxfp8 emulated,
# its accuracy and not its speed), and on the CPU trainer delayed scaling with FP8 attention (-fp8_attention 1), the
# CPU trainer's runs side by side (JOBS) and the CUDA trainer's one after the other, each run's progress shown live,
# then draws the loss curves and their gaps to BF16 into one PNG,
# prints the final losses and the gaps (on the CPU trainer, a gap below CPU_NOISE_PCT reads "within noise"), and
# draws each FP8 run's diagnostics (fp8_diag.tsv: amaxes, scales or block scales, saturation, flushing) with
# scripts/plot_fp8_diag.py into OUT/fp8_{delayed,current,blockwise,mxfp8,attention}_*.png.
# `make train` runs it.
#
# Environment (the knobs; `make train STEPS=100 OUT=mine` passes them on):
#   STEPS     steps per run, from 1 (default CPU_STEPS or GPU_STEPS below, by trainer)
#   OUT       output folder (default log_compare): OUT/<run>/main.log (llm.c's log), OUT/<run>.out (everything the
#             trainer printed), OUT/bf16_vs_fp8.png and OUT/gap.tsv (the plot and the numbers behind its gap panel),
#             OUT/fp8_<recipe>_*.png (the diagnostics pictures)
#   SEED      seed of every run (default 1337)
#   INPUT     the text trained on: tinyshakespeare's input.txt, prepared (checked to be it) into data/tinyshakespeare
#             (without INPUT: the files there, else ../shared's text, else a download); with DATA, the INPUT its
#             dataset was made from, checked against its .made_from (refused when made from another or since changed)
#   DATA      a dataset made by `make data NAME=DATA INPUT=...` (data/DATA/: DATA_train_*.bin, DATA_val.bin,
#             tokenizer.bin) instead of tinyshakespeare (the default); a path with a / names a dataset's folder
#             elsewhere (dev/data/prepare_dataset.sh --data-root)
#   TRAINER   ./train_gpt_fp8 (CUDA) or ./train_gpt_fp8_cpu; default: the CUDA one when it is built and a GPU answers
#             (scripts/has_gpu.sh), else the CPU one
#   PROGRESS  bar (one updating line per run; the default on a terminal) or lines (a step line every STEPS/20 steps,
#             plus every val loss and warning; the default when the output is not a terminal)
#   RUNS      the runs to make, by name, separated by spaces or commas: bf16 (always made: the others' baseline), fp8
#             (delayed scaling), fp8_current, fp8_blockwise, fp8_mxfp8, fp8_attention (default: all this trainer runs)
#   JOBS      how many runs train at once (default: the CPU trainer's as many as there are cores, up to the number
#             of runs, each with cores / JOBS OpenMP threads unless OMP_NUM_THREADS says; the CUDA trainer's 1)
# Flags after -- go to every run and win over the defaults (a later flag wins), e.g. -- -l 1e-3.
# Each run starts anew in OUT/<run> (-start_over 1: a rerun replaces the last one's checkpoints and logs there).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
# waiting OpenMP threads sleep instead of spinning (the Makefile says why), unless the caller chose a policy
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}

# ---------------------------------------------------------------------------------------------------------------------
# The defaults, in one place. The CPU model is 128 wide so that blockwise scaling's blocks of 128 along C, 3C, 4C and
# B*T are whole, as TE's blockwise takes them (mxfp8's of 32 too; the trainers take any width, partial blocks and
# all: doc/four_recipes.md); 600 steps each (the six 2 min 44 s on 2 idle AVX2 cores, two at a time, 45 to 57 s each;
# one after the other 3 min 45 s; the five without FP8 attention 45 s with AVX-512: doc/building.md). The GPU ones
# train GPT-2 small (d12).
CPU_MODEL=(-L 2 -C 128 -NH 4 -b 8 -t 64 -v 50 -m 8 -l 4e-3 -u 20 -q 0.1)
CPU_STEPS=600
# A gap of an FP8 run's final val loss to BF16's smaller than CPU_NOISE_PCT percent reads "within noise"
# (plot_losses.py --noise): changing the seed alone moves the final val loss that much. Measured 2026-11-27 on this
# project's 2-core CPU machine, train_gpt_fp8_cpu with CPU_MODEL, -x 600 -s 0 -precision bf16 and -seed 1337, 1, 2,
# 3: final val 4.7574, 4.7310, 4.7753, 4.7557 (mean 4.7548, sd 0.0182, 0.38%); the six gaps between two seeds are
# 0.04 to 0.94%, and twice the sd of the difference of two runs is 2 x sqrt(2) x 0.38% = 1.08%: 1% lies between the
# largest gap seen and that bound. The GPU recipe's spread is not measured, so its gaps get no noise threshold.
CPU_NOISE_PCT=1.0
GPU_MODEL=(-e d12 -b 16 -t 1024 -v 50 -m 20 -l 6e-4 -u 50 -q 0.1)
GPU_STEPS=400
# The runs, in order: a name (its folder), its label in the plot and its flags. The first is the baseline of the
# plot's gaps; the FP8 runs' diagnostics are drawn too (DIAG_RUNS: run name and the prefix of its pictures). The CUDA
# trainer runs blockwise only on compute capability 9.0, where cuBLASLt has its block-scaled GEMMs; FP8 attention is
# the CPU trainer's run: the CUDA trainer's goes through cuDNN's FP8 graph, which gpu_check's xcheck and bench stages
# compare and time.
RUN_NAMES=(bf16 fp8 fp8_current fp8_blockwise fp8_mxfp8 fp8_attention)
RUN_LABELS=("bf16" "fp8 delayed" "fp8 current" "fp8 blockwise" "fp8 mxfp8" "fp8 attention")
RUN_FLAGS=("-precision bf16" "-precision fp8" "-precision fp8 -fp8_recipe current" "-precision fp8 -fp8_recipe blockwise"
           "-precision fp8 -fp8_recipe mxfp8" "-precision fp8 -fp8_attention 1")
DIAG_RUNS=("fp8 fp8_delayed" "fp8_current fp8_current" "fp8_blockwise fp8_blockwise" "fp8_mxfp8 fp8_mxfp8"
           "fp8_attention fp8_attention")
# ---------------------------------------------------------------------------------------------------------------------

drop_run() {  # name: that run left out, its flags, label and diagnostics pictures with it
    local i names=() labels=() flags=() diags=()
    for i in "${!RUN_NAMES[@]}"; do
        [ "${RUN_NAMES[i]}" = "$1" ] && continue
        names+=("${RUN_NAMES[i]}")
        labels+=("${RUN_LABELS[i]}")
        flags+=("${RUN_FLAGS[i]}")
    done
    for i in "${!DIAG_RUNS[@]}"; do
        [ "${DIAG_RUNS[i]%% *}" = "$1" ] || diags+=("${DIAG_RUNS[i]}")
    done
    RUN_NAMES=("${names[@]}")
    RUN_LABELS=("${labels[@]}")
    RUN_FLAGS=("${flags[@]}")
    DIAG_RUNS=(${diags[@]+"${diags[@]}"})
}

extra=()
if [ $# -gt 0 ]; then
    [ "$1" = "--" ] || { echo "compare_bf16_fp8: error: extra trainer flags go after --" >&2; exit 1; }
    shift
    extra=("$@")
fi
out=${OUT:-log_compare}
seed=${SEED:-1337}
progress=${PROGRESS:-}
if [ -z "$progress" ]; then
    if [ -t 1 ]; then progress=bar; else progress=lines; fi
fi
[ "$progress" = bar ] || [ "$progress" = lines ] || {
    echo "compare_bf16_fp8: error: PROGRESS=$progress: expected bar or lines" >&2
    exit 1
}

gpu=$(./scripts/has_gpu.sh 2>&1) && have_gpu=1 || have_gpu=0
trainer=${TRAINER:-}
if [ -z "$trainer" ]; then
    if [ -x ./train_gpt_fp8 ] && [ "$have_gpu" = 1 ]; then trainer=./train_gpt_fp8; else trainer=./train_gpt_fp8_cpu; fi
fi
case $(basename "$trainer") in
    train_gpt_fp8)
        model=("${GPU_MODEL[@]}")
        steps=${STEPS:-$GPU_STEPS}
        noise=()
        drop_run fp8_attention
        # (no nvidia-smi: the capability is unknown, not a silent exit under pipefail)
        capability=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' ' ||
            true)
        if [ "$capability" = 9.0 ]; then
            echo "compare_bf16_fp8: CUDA trainer ($gpu); mxfp8 is emulated there (BF16 GEMMs): its accuracy, not its speed"
        else
            echo "compare_bf16_fp8: CUDA trainer ($gpu); blockwise left out: its block-scaled GEMMs need compute" \
                "capability 9.0 (this GPU: ${capability:-unknown}); mxfp8 emulated (BF16 GEMMs)"
            drop_run fp8_blockwise
        fi
        ;;
    train_gpt_fp8_cpu)
        model=("${CPU_MODEL[@]}")
        steps=${STEPS:-$CPU_STEPS}
        noise=(--noise "$CPU_NOISE_PCT")
        if [ "$have_gpu" = 1 ]; then why="TRAINER=$trainer"; elif [ -x ./train_gpt_fp8 ]; then why=$gpu; else why="no CUDA trainer built; $gpu"; fi
        echo "compare_bf16_fp8: CPU reference trainer with a small model ($why)"
        ;;
    *)
        echo "compare_bf16_fp8: error: TRAINER=$trainer: expected ./train_gpt_fp8 or ./train_gpt_fp8_cpu" >&2
        exit 1
        ;;
esac
# RUNS: a subset of the runs this trainer makes (one it leaves out, or a name it does not know, is refused)
if [ -n "${RUNS:-}" ]; then
    read -r -a wanted <<<"${RUNS//,/ }"
    for name in "${wanted[@]}"; do
        if [[ " ${RUN_NAMES[*]} " != *" $name "* ]]; then
            echo "compare_bf16_fp8: error: RUNS=$RUNS: $name is not one of this trainer's runs (${RUN_NAMES[*]})" >&2
            exit 1
        fi
    done
    all_runs=${RUN_NAMES[*]}
    for name in "${RUN_NAMES[@]}"; do
        [ "$name" = bf16 ] || [[ " ${wanted[*]} " == *" $name "* ]] || drop_run "$name"
    done
    if [ "${#RUN_NAMES[@]}" -lt 2 ]; then
        echo "compare_bf16_fp8: error: RUNS=$RUNS: no FP8 run to compare with bf16 (this trainer's:" \
            "${all_runs#bf16 })" >&2
        exit 1
    fi
fi
# STEPS is every run's -x: 0 would train nothing (the trainer's -x 0 evaluates a model file) and compare nothing
if ! [[ $steps =~ ^[1-9][0-9]{0,8}$ ]]; then
    echo "compare_bf16_fp8: error: STEPS=$steps: expected the steps of each run, a whole number from 1 (the runs are" \
        "compared over their steps)" >&2
    exit 1
fi
if [ ! -x "$trainer" ]; then
    echo "compare_bf16_fp8: building $trainer"
    make -s "$(basename "$trainer")"
fi

dataset=${DATA:-tinyshakespeare}
if [ "$dataset" = tinyshakespeare ]; then
    data=data/tinyshakespeare
    # INPUT is the text to train on, never ignored: the preparation checks it is tinyshakespeare's (another text is
    # refused, pointing to NAME=) and keeps files already made from it; without INPUT the files there are used
    if [ -n "${INPUT:-}" ] || [ ! -f "$data/tiny_shakespeare_train.bin" ]; then
        ./dev/data/prepare_tinyshakespeare.sh ${INPUT:+"$INPUT"}
    fi
    data_flags=(-i "$data/tiny_shakespeare_train.bin" -j "$data/tiny_shakespeare_val.bin" -tk "$data/tokenizer.bin")
else
    data=data/$dataset
    elsewhere=0
    if [[ $dataset == */* ]]; then  # a dataset folder elsewhere (prepare_dataset.sh --data-root): its files are NAME_*
        data=${dataset%/}
        dataset=$(basename "$data")
        elsewhere=1
    fi
    if [ ! -f "$data/${dataset}_val.bin" ] || [ ! -f "$data/tokenizer.bin" ] ||
        ! compgen -G "$data/${dataset}_train_*.bin" >/dev/null; then
        echo "compare_bf16_fp8: error: DATA=$dataset: no dataset in $data/ (make it with: make data NAME=$dataset INPUT=path/to/text)" >&2
        exit 1
    fi
    # INPUT with DATA: the dataset must be made from it (the "input" lines of its .made_from, dev/data/prepare_dataset.sh)
    # and from its present content (the "file" lines' checksums), else the runs would silently train on other text
    if [ -n "${INPUT:-}" ]; then
        # the command that makes it from INPUT: make's, or prepare_dataset.sh's for a folder elsewhere; "options" adds
        # the ones it was made with (its .made_from's options and tokenizer lines)
        remake_command() {  # options|no-options, force|no-force
            local line vocab val_fraction shard_tokens sample_mb tokenizer
            line=$(grep -m 1 '^options ' "$data/.made_from")
            vocab=$(sed -nE 's/.* vocab=([^ ]+).*/\1/p' <<<"$line")
            val_fraction=$(sed -nE 's/.* val_fraction=([^ ]+).*/\1/p' <<<"$line")
            shard_tokens=$(sed -nE 's/.* shard_tokens=([^ ]+).*/\1/p' <<<"$line")
            sample_mb=$(sed -nE 's/.* sample_mb=([^ ]+).*/\1/p' <<<"$line")
            tokenizer=$(grep -m 1 '^tokenizer ' "$data/.made_from" | cut -d' ' -f4-)
            if [ "$elsewhere" = 0 ]; then
                printf 'make data NAME=%s INPUT="%s"' "$dataset" "$INPUT"
                [ "$1" = no-options ] ||
                    printf ' VOCAB=%s VAL_FRACTION=%s SHARD_TOKENS=%s SAMPLE_MB=%s%s' "$vocab" "$val_fraction" \
                        "$shard_tokens" "$sample_mb" "${tokenizer:+ TOKENIZER=$tokenizer}"
                [ "$2" = no-force ] || printf ' FORCE=1'
            else
                printf 'dev/data/prepare_dataset.sh %s %s --data-root %s' "$dataset" "$INPUT" "$(dirname "$data")"
                [ "$1" = no-options ] ||
                    printf ' --vocab %s --val-fraction %s --shard-tokens %s --sample-mb %s%s' "$vocab" "$val_fraction" \
                        "$shard_tokens" "$sample_mb" "${tokenizer:+ --tokenizer $tokenizer}"
                [ "$2" = no-force ] || printf ' --force'
            fi
        }
        read -r -a given <<<"$INPUT"  # make's INPUT: paths separated by spaces
        want=$(for input in "${given[@]}"; do printf 'input %s\n' "$(realpath -s -- "$input")"; done)
        have=$(grep '^input ' "$data/.made_from" 2>/dev/null) || true
        if [ "$have" != "$want" ]; then
            had="its .made_from names no INPUT"
            [ -z "$have" ] || had="it was made from $(cut -d' ' -f2- <<<"$have" | paste -sd' ')"
            echo "compare_bf16_fp8: error: DATA=$dataset: $data/ was not made from INPUT=$INPUT ($had); to make it from that instead: $(remake_command no-options force)" >&2
            exit 1
        fi
        make -s dev/data/tokenizer
        recorded=$(grep '^file ' "$data/.made_from") || true
        now=$(cut -d' ' -f4- <<<"$recorded" | tr '\n' '\0' | xargs -0 -r ./dev/data/tokenizer hash 2>/dev/null | sed 's/^/file /') || true
        if [ "$now" != "$recorded" ]; then  # which file: the first that differs
            while IFS= read -r record; do
                file=$(cut -d' ' -f4- <<<"$record")
                if [ "file $(./dev/data/tokenizer hash "$file" 2>/dev/null)" != "$record" ]; then
                    echo "compare_bf16_fp8: error: DATA=$dataset: $file changed since $data/ was made (or is gone); to make it again: $(remake_command options no-force)" >&2
                    exit 1
                fi
            done <<<"$recorded"
        fi
    fi
    data_flags=(-i "$data/${dataset}_train_*.bin" -j "$data/${dataset}_val.bin" -tk "$data/tokenizer.bin")
fi
echo "compare_bf16_fp8: data: $data/"

# the warmup the runs use (the last -u wins), for the plot's marker
warmup=0
flags=("${model[@]}" ${extra[@]+"${extra[@]}"})
for ((i = 0; i + 1 < ${#flags[@]}; i++)); do
    [ "${flags[i]}" = "-u" ] && warmup=${flags[i + 1]}
done

# seconds -> "1m05s"
duration() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

# Reads a run's output on stdin and shows its progress: PROGRESS=bar rewrites one line (step/total, loss, last val
# loss, tok/s, ETA), PROGRESS=lines prints every `every`-th step line; both print val losses (lines) and warnings.
# The bar's line fits 80 columns (a longer one wraps, and \r then rewrites only its last row): the bar takes what the
# numbers leave, up to BAR_WIDTH; the labels are padded to the longest run name, so every run's bar lines up.
BAR_COLUMNS=80
BAR_WIDTH=24
label_width=0
for name in "${RUN_NAMES[@]}"; do
    if ((${#name} > label_width)); then label_width=${#name}; fi
done
# With runs side by side (JOBS above 1) the bar goes to the file bar_file names instead, rewritten at each step, and
# the warnings to notes_file, appended: one loop draws every running run's bar (draw_bars below).
show_progress() {  # label [bar_file notes_file]
    local label=$1 bar_file=${2:-} notes_file=${3:-} line step total loss rate eta val="" every=$(((steps + 19) / 20))
    local width filled bar numbers
    while IFS= read -r line; do
        if [[ $line =~ ^step\ +([0-9]+)/([0-9]+)\ \|\ loss\ ([^ ]+)\ .*\|\ ([0-9]+)\ tok/s.*ETA\ ([0-9]+m[0-9]+s) ]]; then
            step=${BASH_REMATCH[1]} total=${BASH_REMATCH[2]} loss=${BASH_REMATCH[3]} rate=${BASH_REMATCH[4]} eta=${BASH_REMATCH[5]}
            if [ "$progress" = bar ]; then
                printf -v numbers '%d/%d loss %.4f%s %s tok/s ETA %s' "$step" "$total" "$loss" "${val:+ val $val}" \
                    "$rate" "$eta"
                width=$((BAR_COLUMNS - 2 - label_width - 4 - ${#numbers}))  # "  LABEL [BAR] NUMBERS"
                if ((width > BAR_WIDTH)); then width=$BAR_WIDTH; elif ((width < 0)); then width=0; fi
                filled=$((step * width / (total > 0 ? total : 1)))
                printf -v bar '%*s' "$filled" ''
                if [ -n "$bar_file" ]; then
                    printf '  %-*s [%-*s] %s\n' "$label_width" "$label" "$width" "${bar// /#}" "$numbers" >"$bar_file"
                else
                    printf '\r  %-*s [%-*s] %s\033[K' "$label_width" "$label" "$width" "${bar// /#}" "$numbers"
                fi
            elif [ $((step % every)) -eq 0 ] || [ "$step" -eq "$total" ] || [ "$step" -eq 1 ]; then
                echo "  [$label] $line"
            fi
        elif [[ $line =~ ^val\ loss\ ([^ ]+) ]]; then
            val=$(printf '%.4f' "${BASH_REMATCH[1]}")
            [ "$progress" = lines ] && echo "  [$label] $line"
        elif [[ $line =~ ^(warning|error) ]]; then
            if [ -n "$notes_file" ]; then
                echo "  [$label] $line" >>"$notes_file"
            else
                [ "$progress" = bar ] && printf '\n'
                echo "  [$label] $line"
            fi
        fi
    done
    [ "$progress" = bar ] && [ -z "$bar_file" ] && printf '\n'
    return 0
}

mkdir -p "$out"
n=${#RUN_NAMES[@]}
# Runs side by side: at make train's CPU size a run gains little from a second OpenMP thread (two threads take 0.73x
# one's time, doc/building.md), so two runs of one thread each on two cores finish sooner than one after the other
# with two each (bf16 and fp8, 600 steps: 46 s against 59). The CUDA trainer's share one GPU: one at a time.
cores=$(nproc 2>/dev/null || echo 1)
if [ -n "${JOBS:-}" ]; then
    [[ $JOBS =~ ^[1-9][0-9]{0,2}$ ]] || {
        echo "compare_bf16_fp8: error: JOBS=$JOBS: expected how many runs train at once, a whole number from 1" >&2
        exit 1
    }
    jobs=$JOBS
elif [ "$(basename "$trainer")" = train_gpt_fp8_cpu ]; then
    jobs=$cores
else
    jobs=1
fi
((jobs > n)) && jobs=$n
run_threads=()  # OMP_NUM_THREADS=... for each run, unless the caller chose it
if [ -z "${OMP_NUM_THREADS:-}" ] && ((jobs > 1)); then
    run_threads=("OMP_NUM_THREADS=$((cores / jobs > 1 ? cores / jobs : 1))")
fi
side_by_side=""
((jobs > 1)) && side_by_side=", $jobs at a time${run_threads[*]+ (${run_threads[*]} each)}"
echo "compare_bf16_fp8: $n runs (${RUN_NAMES[*]}) of $steps steps, seed $seed$side_by_side, into $out/:" \
    "<run>/main.log, <run>.out"

# One run in the background: its exit status into OUT/<run>.rc when it ends, and a line into the pipe the loop below
# waits on (read with a timeout: it wakes as soon as a run ends, or to redraw the bars)
declare -a run_pid run_start
pipe_dir=$(mktemp -d)  # (a pipe where pipes can be made: OUT may be on a file system without them)
mkfifo "$pipe_dir/runs_ended"
exec {ended_fd}<>"$pipe_dir/runs_ended"  # (read and write: opening it never blocks, and the read never sees an end)
rm -rf "$pipe_dir"
start_run() {  # run index
    local r=$1 name=${RUN_NAMES[$1]} run_flags bar_file="" notes_file=""
    read -r -a run_flags <<<"${RUN_FLAGS[r]}"
    echo "compare_bf16_fp8: run $((r + 1))/$n: $name (${RUN_FLAGS[r]}), output in $out/$name.out"
    rm -f "$out/$name".{rc,bar,notes,pid}
    if ((jobs > 1)) && [ "$progress" = bar ]; then bar_file=$out/$name.bar notes_file=$out/$name.notes; fi
    run_start[r]=$SECONDS
    # (the trainer's process id into OUT/<run>.pid: the pipeline's first part becomes the trainer, through env)
    { rc=0
      { echo "$BASHPID" >"$out/$name.pid"
        exec env ${run_threads[@]+"${run_threads[@]}"} "$trainer" "${data_flags[@]}" "${model[@]}" -x "$steps" -s 0 \
            -seed "$seed" "${run_flags[@]}" -o "$out/$name" -start_over 1 ${extra[@]+"${extra[@]}"}; } 2>&1 |
          tee "$out/$name.out" | show_progress "$name" "$bar_file" "$notes_file" || rc=$?
      echo "$rc" >"$out/$name.rc"
      echo "$r" >&"$ended_fd"; } &
    run_pid[r]=$!
}

# Side by side on a terminal, every running run's bar on a line of its own below what was printed, redrawn in place:
# up over the last drawing, clear to the end of the screen, the runs' new warnings, then the bars again.
running=()
drawn=0
declare -a notes_shown last_bar
draw_bars() {
    [ "$progress" = bar ] && ((jobs > 1)) || return 0
    local r name line
    ((drawn > 0)) && printf '\033[%dA\r\033[J' "$drawn"
    drawn=0
    for r in ${running[@]+"${running[@]}"}; do
        name=${RUN_NAMES[r]}
        if [ -s "$out/$name.notes" ]; then
            tail -n +"$((${notes_shown[r]:-0} + 1))" "$out/$name.notes"
            notes_shown[r]=$(grep -c . "$out/$name.notes" || true)
        fi
    done
    for r in ${running[@]+"${running[@]}"}; do
        name=${RUN_NAMES[r]}
        line=""
        [ -s "$out/$name.bar" ] && IFS= read -r line <"$out/$name.bar"
        # (a file caught between its truncation and its write reads empty: the last line drawn stays)
        [ -n "$line" ] && last_bar[r]=$line
        printf '%s\033[K\n' "${last_bar[r]:-  $name: starting}"
        drawn=$((drawn + 1))
    done
}

# Before the comparison stops: the runs still training stopped (their pipelines' processes), and waited for
stop_runs() {
    local r
    for r in ${running[@]+"${running[@]}"}; do
        kill -TERM "$(cat "$out/${RUN_NAMES[r]}.pid" 2>/dev/null)" 2>/dev/null || true
    done
    wait || true
    for r in ${running[@]+"${running[@]}"}; do rm -f "$out/${RUN_NAMES[r]}".{rc,bar,notes,pid}; done
}

# A run that ended: its last bar (side by side), then done with its final losses, or the comparison stops
finish_run() {  # run index
    local r=$1 name=${RUN_NAMES[$1]} rc final_step final_val
    wait "${run_pid[r]}" || true  # (its status file is whole once it has ended)
    rc=$(cat "$out/$name.rc")
    if ((jobs > 1)) && [ "$progress" = bar ]; then
        [ -s "$out/$name.notes" ] && tail -n +"$((${notes_shown[r]:-0} + 1))" "$out/$name.notes"
        [ -s "$out/$name.bar" ] && cat "$out/$name.bar"
        rm -f "$out/$name.bar" "$out/$name.notes"
    fi
    if [ "$rc" != 0 ]; then
        stop_runs
        echo "compare_bf16_fp8: error: the $name run failed; its last lines ($out/$name.out):" >&2
        tail -n 3 "$out/$name.out" >&2
        exit 1
    fi
    # (a run of no step, e.g. -x 0 among the extra flags, has nothing to compare: said, not a silent exit)
    final_step=$({ grep "^step" "$out/$name.out" || true; } | tail -n 1 |
        sed -E 's/^step +([0-9]+\/[0-9]+) \| loss ([^ ]+) .*/step \1, train loss \2/')
    if [ -z "$final_step" ]; then
        stop_runs
        echo "compare_bf16_fp8: error: the $name run trained no step (an -x 0 among the flags after --?), so there is" \
            "nothing to compare; its output: $out/$name.out" >&2
        exit 1
    fi
    final_val=$({ grep "^val loss" "$out/$name.out" || true; } | tail -n 1 | sed -E 's/^val loss ([^ ]+).*/, val loss \1/')
    echo "compare_bf16_fp8: $name done in $(duration $((SECONDS - run_start[r]))): ${final_step}${final_val}"
    rm -f "$out/$name.rc" "$out/$name.pid"
}

# Interrupted (Ctrl-C, or a TERM): the runs are stopped too. (Background commands of a script ignore SIGINT, so the
# trainers would not see Ctrl-C themselves.)
trap 'stop_runs; exit 130' INT
trap 'stop_runs; exit 143' TERM
start_all=$SECONDS
next=0
while ((next < n)) || ((${#running[@]} > 0)); do
    while ((next < n)) && ((${#running[@]} < jobs)); do
        start_run "$next"
        running+=("$next")
        next=$((next + 1))
    done
    draw_bars
    read -r -t 0.25 -u "$ended_fd" _ || true
    still=()
    for r in "${running[@]}"; do
        if [ -f "$out/${RUN_NAMES[r]}.rc" ]; then
            ((drawn > 0)) && printf '\033[%dA\r\033[J' "$drawn"
            drawn=0
            finish_run "$r"
        else
            still+=("$r")
        fi
    done
    running=(${still[@]+"${still[@]}"})
done
trap - INT TERM
plot_args=()
for ((r = 0; r < n; r++)); do plot_args+=(--label "${RUN_LABELS[r]}" "$out/${RUN_NAMES[r]}/main.log"); done
echo "compare_bf16_fp8: all runs done in $(duration $((SECONDS - start_all)))"

python3 scripts/plot_losses.py --out "$out/bf16_vs_fp8.png" --gap-tsv "$out/gap.tsv" --warmup "$warmup" \
    ${noise[@]+"${noise[@]}"} "${plot_args[@]}" \
    --title "$(basename "$trainer") on $dataset: ${model[*]} ${extra[*]+${extra[*]} }-x $steps -seed $seed"$'\n'"$(IFS=','; echo "${RUN_LABELS[*]}" | sed 's/,/, /g')"
# Each FP8 run's diagnostics pictures, drawn side by side: a Python each, 6-8 s of one core (one after another they
# were 40 s of make train's 4.5 minutes on 2 cores), at most as many at once as cores (4 at most). Each one's output
# is printed whole, in the runs' order, once all are done; one that failed fails the comparison, as before.
diag_pictures=""
plot_jobs=$(nproc 2>/dev/null || echo 1)
[ "$plot_jobs" -gt 4 ] && plot_jobs=4
plotted=()
for diag in ${DIAG_RUNS[@]+"${DIAG_RUNS[@]}"}; do
    read -r name prefix <<<"$diag"
    # A run that recorded no diagnostics step (it ended before the first one, STEPS below -fp8_diag_every's 10, or
    # -fp8_diag_every 0 after --) has nothing to draw: said, not an error after the comparison itself succeeded
    lines=$(grep -c . "$out/$name/fp8_diag.tsv" 2>/dev/null || true)  # (nothing when the file is missing)
    if [ "${lines:-0}" -lt 2 ]; then
        echo "compare_bf16_fp8: no FP8 diagnostics pictures for $name: it recorded no diagnostics step" \
            "(-fp8_diag_every is 10 unless given after --; these runs made $steps steps)"
        continue
    fi
    while [ "$(jobs -rp | wc -l)" -ge "$plot_jobs" ]; do wait -n || true; done
    # (its output and exit status in the run's folder until printed: a job's status, not wait's, which wait -n took)
    rm -f "$out/$name/plot_fp8_diag.out" "$out/$name/plot_fp8_diag.rc"
    { rc=0; python3 scripts/plot_fp8_diag.py "$out/$name/fp8_diag.tsv" --out-dir "$out" --prefix "$prefix" \
          --title "FP8 ${prefix#fp8_} scaling, ${model[*]:0:6}" >"$out/$name/plot_fp8_diag.out" 2>&1 || rc=$?
      echo "$rc" >"$out/$name/plot_fp8_diag.rc"; } &
    plotted+=("$name")
    diag_pictures="$diag_pictures $out/${prefix}_*.png"
done
wait
plot_failed=""
for name in ${plotted[@]+"${plotted[@]}"}; do
    cat "$out/$name/plot_fp8_diag.out"
    [ "$(cat "$out/$name/plot_fp8_diag.rc" 2>/dev/null)" = 0 ] || plot_failed="$plot_failed $name"
    rm -f "$out/$name/plot_fp8_diag.out" "$out/$name/plot_fp8_diag.rc"
done
if [ -n "$plot_failed" ]; then
    echo "compare_bf16_fp8: error: the FP8 diagnostics pictures of$plot_failed failed (their output above)" >&2
    exit 1
fi
echo "compare_bf16_fp8: logs: $(for name in "${RUN_NAMES[@]}"; do printf '%s ' "$out/$name/main.log"; done)"
echo "compare_bf16_fp8: trainer output: $(for name in "${RUN_NAMES[@]}"; do printf '%s ' "$out/$name.out"; done)"
echo "compare_bf16_fp8: plot: $out/bf16_vs_fp8.png, its gap numbers: $out/gap.tsv"
echo "compare_bf16_fp8: FP8 diagnostics pictures:${diag_pictures:- none}"
