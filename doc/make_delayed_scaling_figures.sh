#!/usr/bin/env bash
# doc/make_delayed_scaling_figures.sh [OUT] — regenerates every number and picture of doc/delayed_scaling.md.
#
# Trains the CPU reference trainer five times on tinyshakespeare, with the same model (2 blocks, C 64), data, seed and
# schedule (300 steps of one 8 x 64 micro-batch each) and the FP8 diagnostics written every step:
#   bf16        the baseline, no FP8
#   delayed     delayed scaling with TE's defaults (amax_history_len 1024, max, margin 0)
#   history16   delayed scaling with -fp8_amax_history_len 16
#   margin2     delayed scaling with -fp8_margin 2
#   current     current scaling (-fp8_recipe current)
# then prints the numbers the page quotes into OUT/numbers.txt (doc/delayed_scaling_figures.py: one step of layer 0's
# qkv GEMM, step 24, where its gradient spikes, and each run's mean saturation, flushing and final loss), draws the
# headroom picture, and draws the delayed run's diagnostics with scripts/plot_fp8_diag.py; the pictures the page shows
# go to doc/delayed_scaling/.
# OUT (default log_doc) keeps the runs: main.log, fp8_diag.tsv, the trainer's output, and every diagnostics picture.
# The runs go one after the other; their numbers do not depend on the thread count, and OMP_NUM_THREADS=1 is the
# fastest on a busy machine (3 min 48 s of wall clock in all on 2 cores shared with other work).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-log_doc}
figures=doc/delayed_scaling
data=data/tinyshakespeare
make -s train_gpt_fp8_cpu
[ -f "$data/tiny_shakespeare_train.bin" ] || ./dev/data/prepare_tinyshakespeare.sh
mkdir -p "$out" "$figures"
common=(-i "$data/tiny_shakespeare_train.bin" -j "$data/tiny_shakespeare_val.bin" -tk "$data/tokenizer.bin"
        -L 2 -C 64 -NH 4 -b 8 -t 64 -x 300 -v 50 -m 8 -l 4e-3 -u 20 -q 0.1 -s 0 -seed 1337 -fp8_diag_every 1)
run() {  # name, extra flags...
    local name=$1
    shift
    echo "make_delayed_scaling_figures: $name: ./train_gpt_fp8_cpu ${common[*]} $* -o $out/$name"
    ./train_gpt_fp8_cpu "${common[@]}" "$@" -o "$out/$name" >"$out/$name.out" 2>&1 ||
        { echo "make_delayed_scaling_figures: error: the $name run failed: $(tail -n 1 "$out/$name.out")" >&2; exit 1; }
}
run bf16 -precision bf16
run delayed -precision fp8
run history16 -precision fp8 -fp8_amax_history_len 16
run margin2 -precision fp8 -fp8_margin 2
run current -precision fp8 -fp8_recipe current

python3 doc/delayed_scaling_figures.py --out "$figures/headroom.png" --step 24 --module "0 qkv" \
    --slot "0 qkv grad_output" --slot "1 attproj input" --slot "1 fc weight" \
    --run "delayed, history 1024" "$out/delayed/fp8_diag.tsv" --run "delayed, history 16" "$out/history16/fp8_diag.tsv" \
    --run "delayed, margin 2" "$out/margin2/fp8_diag.tsv" --run "current" "$out/current/fp8_diag.tsv" |
    tee "$out/numbers.txt"
echo "bf16: final val loss $(grep ' tel:' "$out/bf16/main.log" | tail -n 1 | sed 's/.*tel://')" | tee -a "$out/numbers.txt"
python3 scripts/plot_fp8_diag.py "$out/delayed/fp8_diag.tsv" --out-dir "$out" --prefix delayed --dpi 60 \
    --title "delayed scaling, doc run" | tee -a "$out/numbers.txt"
python3 scripts/plot_fp8_diag.py "$out/current/fp8_diag.tsv" --out-dir "$out" --prefix current --dpi 60 \
    --title "current scaling, doc run" | tee -a "$out/numbers.txt"
cp "$out/delayed_amax.png" "$out/delayed_saturation_heatmap.png" "$figures/"
echo "make_delayed_scaling_figures: numbers in $out/numbers.txt, pictures in $figures/"
