#!/usr/bin/env bash
# doc/make_four_recipes_numbers.sh [OUT] — regenerates every number of doc/four_recipes.md.
#
# 1. Trains the CPU reference trainer five times on tinyshakespeare with make train's CPU model (2 blocks, C 128: the
#    width blockwise's blocks of 128 need), 300 steps of one 8 x 64 micro-batch, the FP8 diagnostics every step:
#    bf16, and FP8 with each recipe (delayed, current, blockwise, mxfp8). Prints each run's final val loss and its gap
#    to BF16, and the mean and worst saturated and flushed fractions of its casts (every row of its fp8_diag.tsv).
# 2. Picks the step of the delayed run, among the first 100, where one of its gradient casts saturated most (the
#    spike doc/delayed_scaling.md is about), trains the delayed run again to the step before it (stopped there, after
#    its checkpoint: the same 300-step run, whose learning-rate schedule depends on -x), and
#    casts three tensors of that step with all four recipes (dev/cast_one_tensor): the spiking grad_output, block 1's
#    fcproj input (GELU's output: many small values) and block 1's fc weight.
# Everything goes to OUT (default log_doc_recipes); the numbers to OUT/numbers.txt. The runs' numbers do not depend on
# the thread count.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-log_doc_recipes}
data=data/tinyshakespeare
make -s train_gpt_fp8_cpu dev/cast_one_tensor
[ -f "$data/tiny_shakespeare_train.bin" ] || ./dev/data/prepare_tinyshakespeare.sh
mkdir -p "$out"
common=(-i "$data/tiny_shakespeare_train.bin" -j "$data/tiny_shakespeare_val.bin" -tk "$data/tokenizer.bin"
        -L 2 -C 128 -NH 4 -b 8 -t 64 -v 50 -m 8 -l 4e-3 -u 20 -q 0.1 -s 0 -seed 1337 -fp8_diag_every 1)
run() {  # name, steps, extra flags...
    local name=$1 steps=$2
    shift 2
    echo "make_four_recipes_numbers: $name: ./train_gpt_fp8_cpu ${common[*]} -x $steps $* -o $out/$name" >&2
    ./train_gpt_fp8_cpu "${common[@]}" -x "$steps" "$@" -o "$out/$name" -start_over 1 >"$out/$name.out" 2>&1 ||
        { echo "make_four_recipes_numbers: error: the $name run failed: $(tail -n 1 "$out/$name.out")" >&2; exit 1; }
}
final_val() { grep ' tel:' "$1/main.log" | tail -n 1 | sed 's/.*tel://'; }

run bf16 300 -precision bf16
for recipe in delayed current blockwise mxfp8; do run "$recipe" 300 -precision fp8 -fp8_recipe "$recipe"; done
{
    echo "== 300 steps each (${common[*]})"
    bf16=$(final_val "$out/bf16")
    echo "bf16: final val loss $bf16"
    for recipe in delayed current blockwise mxfp8; do
        val=$(final_val "$out/$recipe")
        awk -F'\t' -v r="$recipe" -v v="$val" -v b="$bf16" 'NR > 1 { n++; s += $11; f += $12; if ($11 > ms) ms = $11; if ($12 > mf) mf = $12 }
            END { printf "%s: final val loss %s (%+.2f%% vs bf16); casts saturated %.4f%% on average, %.3f%% at worst; flushed %.4f%% on average, %.3f%% at worst (%d rows)\n",
                  r, v, 100 * (v - b) / b, 100 * s / n, 100 * ms, 100 * f / n, 100 * mf, n }' "$out/$recipe/fp8_diag.tsv"
    done
    # the step of the delayed run's worst gradient saturation among its first 100 steps
    read -r step layer gemm fraction < <(awk -F'\t' 'NR > 1 && $1 <= 100 && $5 == "grad_output" && $11 > best {
        best = $11; line = $1 " " $3 " " $4 " " $11 } END { print line }' "$out/delayed/fp8_diag.tsv")
    echo "== step $step of the delayed run: block $layer $gemm grad_output saturated $(awk -v f="$fraction" 'BEGIN { printf "%.4f%%", 100 * f }')"
    # the same 300-step run (the schedule depends on -x), stopped right after its checkpoint of the step before
    ckpt=$((step - 1))
    echo "make_four_recipes_numbers: delayed_to_spike: the delayed run again, stopped after its checkpoint of step $ckpt" >&2
    { ./train_gpt_fp8_cpu "${common[@]}" -x 300 -precision fp8 -fp8_recipe delayed -n "$ckpt" -debug_kill_step "$ckpt" \
        -o "$out/delayed_to_spike" -start_over 1 >"$out/delayed_to_spike.out" 2>&1; } 2>/dev/null || true
    [ -e "$out/delayed_to_spike/DONE_$(printf '%08d' "$ckpt")" ] ||
        { echo "make_four_recipes_numbers: error: no checkpoint of step $ckpt in $out/delayed_to_spike" >&2; exit 1; }
    for tensor in "$layer $gemm grad_output" "1 fcproj input" "1 fc weight"; do
        # shellcheck disable=SC2086
        ./dev/cast_one_tensor $tensor "${common[@]}" -x 300 -precision fp8 -o "$out/delayed_to_spike" -y 1 \
            -resume_step "$ckpt"
    done
} | tee "$out/numbers.txt"
echo "make_four_recipes_numbers: numbers in $out/numbers.txt" >&2
