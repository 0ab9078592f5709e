#!/usr/bin/env bash
# scripts/compare_bf16_fp8.sh [-- extra trainer flags] — trains the same model on the same data and seed in BF16, in
# FP8 with delayed scaling and in FP8 with current scaling (-fp8_recipe current), then draws the three loss curves and
# the gaps to BF16 into one PNG and prints the final losses and the gaps; and draws each FP8 run's diagnostics
# (fp8_diag.tsv: amaxes, scales, saturation, flushing) with scripts/plot_fp8_diag.py into OUT/fp8_{delayed,current}_*.png.
#
# Trainer: the CUDA one (./train_gpt_fp8, d12, B 16, T 1024) when it is built and a GPU answers, else the CPU
# reference (./train_gpt_fp8_cpu) with a small model that trains in a few minutes. Both write the same main.log.
# Environment: STEPS (run length), OUT (output folder, default log_compare), SEED (default 1337), INPUT (a local
# tinyshakespeare input.txt for the data preparation).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
extra=()
if [ $# -gt 0 ]; then
    [ "$1" = "--" ] || { echo "compare_bf16_fp8: error: extra trainer flags go after --" >&2; exit 1; }
    shift
    extra=("$@")
fi
out=${OUT:-log_compare}
seed=${SEED:-1337}

if [ -x ./train_gpt_fp8 ] && nvidia-smi -L >/dev/null 2>&1; then
    trainer=./train_gpt_fp8
    steps=${STEPS:-400}
    model=(-e d12 -b 16 -t 1024 -v 50 -m 20 -l 6e-4 -u 50 -q 0.1)
    echo "compare_bf16_fp8: CUDA trainer on $(nvidia-smi -L | head -n 1)"
else
    trainer=./train_gpt_fp8_cpu
    steps=${STEPS:-300}
    model=(-L 4 -C 128 -NH 4 -b 8 -t 64 -v 25 -m 8 -l 2e-3 -u 20 -q 0.1)
    why="no CUDA trainer built"
    [ -x ./train_gpt_fp8 ] && why="no GPU answered nvidia-smi"
    echo "compare_bf16_fp8: CPU reference trainer with a small model ($why)"
    [ -x "$trainer" ] || make -s train_gpt_fp8_cpu
fi

data=data/tinyshakespeare
if [ ! -f "$data/tiny_shakespeare_train.bin" ]; then
    ./dev/data/prepare_tinyshakespeare.sh ${INPUT:+"$INPUT"}
fi

mkdir -p "$out"
for precision in bf16 fp8 fp8_current; do  # fp8: delayed scaling (the default recipe)
    flags=(-precision "${precision%_current}")
    [ "$precision" = fp8_current ] && flags+=(-fp8_recipe current)
    echo "compare_bf16_fp8: training $precision for $steps steps -> $out/$precision (log: $out/$precision.out)"
    if ! "$trainer" -i "$data/tiny_shakespeare_train.bin" -j "$data/tiny_shakespeare_val.bin" -tk "$data/tokenizer.bin" \
        "${model[@]}" -x "$steps" -s 0 -seed "$seed" "${flags[@]}" -o "$out/$precision" ${extra[@]+"${extra[@]}"} \
        >"$out/$precision.out" 2>&1; then
        echo "compare_bf16_fp8: error: the $precision run failed: $(tail -n 1 "$out/$precision.out")" >&2
        exit 1
    fi
    grep "^step" "$out/$precision.out" | tail -n 1
    grep "^val loss" "$out/$precision.out" | tail -n 1
done
python3 scripts/plot_losses.py --out "$out/bf16_vs_fp8.png" --label bf16 "$out/bf16/main.log" \
    --label "fp8 delayed" "$out/fp8/main.log" --label "fp8 current" "$out/fp8_current/main.log" \
    --title "BF16 vs FP8 (delayed and current scaling): ${model[*]:0:6}, $steps steps, $(basename "$trainer")"
for recipe in delayed current; do
    run_dir=$out/fp8; [ "$recipe" = current ] && run_dir=$out/fp8_current
    python3 scripts/plot_fp8_diag.py "$run_dir/fp8_diag.tsv" --out-dir "$out" --prefix "fp8_$recipe" \
        --title "FP8 $recipe scaling, ${model[*]:0:6}"
done
