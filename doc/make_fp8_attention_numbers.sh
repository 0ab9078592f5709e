#!/usr/bin/env bash
# doc/make_fp8_attention_numbers.sh [OUT] — regenerates every number of doc/fp8_attention.md.
#
# 1. Trains the CPU reference trainer on tinyshakespeare, 300 steps of one 8 x 64 micro-batch, with heads of 64 as
#    GPT-2's (2 blocks, C 128, 2 heads): BF16, FP8 (delayed scaling), and FP8 with -fp8_attention 1 and 2 (the
#    backward from the bf16 q k v, and from their E4M3 cast), with seed 1337 (whose -fp8_attention 1 run keeps its
#    checkpoints every 20 steps) and again with seed 1338, to show how far runs that differ in nothing but their seed
#    end apart. Prints each run's final val loss and its gaps.
# 2. Takes both blocks' attention apart (dev/attention_one_layer) at the first step and at the step after each of
#    those checkpoints: a summary over the 16 steps (median and largest error of each row), then the whole table of
#    block 1 at the first step, at step 201, and at the step whose dq the FP8 attention's backward got furthest off.
# 3. The first step again at GPT-2's sequence length, T 1024 (B 1): where the CPU trainer's quantization of the
#    softmax output and a flash kernel's part.
# Everything goes to OUT (default log_doc_attention); the numbers to OUT/numbers.txt. They do not depend on the
# thread count.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-log_doc_attention}
data=data/tinyshakespeare
make -s train_gpt_fp8_cpu dev/attention_one_layer
[ -f "$data/tiny_shakespeare_train.bin" ] || ./dev/data/prepare_tinyshakespeare.sh
mkdir -p "$out/tables"
common=(-i "$data/tiny_shakespeare_train.bin" -j "$data/tiny_shakespeare_val.bin" -tk "$data/tokenizer.bin"
        -L 2 -C 128 -NH 2 -b 8 -t 64 -v 50 -m 8 -l 4e-3 -u 20 -q 0.1 -s 0 -x 300)
run() {  # name, flags...
    local name=$1
    shift
    echo "make_fp8_attention_numbers: $name: ./train_gpt_fp8_cpu ${common[*]} $* -o $out/$name" >&2
    ./train_gpt_fp8_cpu "${common[@]}" "$@" -o "$out/$name" -start_over 1 >"$out/$name.out" 2>&1 ||
        { echo "make_fp8_attention_numbers: error: the $name run failed: $(tail -n 1 "$out/$name.out")" >&2; exit 1; }
}
take_apart() {  # layer, checkpoint step, table file, extra flags...
    local layer=$1 step=$2 table=$3
    shift 3
    ./dev/attention_one_layer "$layer" "${common[@]}" -seed 1337 -precision fp8 -fp8_attention 1 "$@" \
        -o "$out/fp8_attention" -y 1 -resume_step "$step" >"$table" 2>&1 || {
        echo "make_fp8_attention_numbers: error: attention_one_layer $layer at $step: $(tail -n 1 "$table")" >&2
        exit 1
    }
}

run bf16 -seed 1337 -precision bf16
run fp8 -seed 1337 -precision fp8
run fp8_attention -seed 1337 -precision fp8 -fp8_attention 1 -n 20
run fp8_attention_mha -seed 1337 -precision fp8 -fp8_attention 2
run bf16_seed1338 -seed 1338 -precision bf16
run fp8_seed1338 -seed 1338 -precision fp8
run fp8_attention_seed1338 -seed 1338 -precision fp8 -fp8_attention 1
run fp8_attention_mha_seed1338 -seed 1338 -precision fp8 -fp8_attention 2
steps="0 $(seq -s ' ' 20 20 280)"
for step in $steps; do
    for layer in 0 1; do take_apart "$layer" "$step" "$out/tables/block${layer}_step$((step + 1)).txt"; done
done
take_apart 1 0 "$out/tables/block1_step1_t1024.txt" -b 1 -t 1024

# Over tables of one block: each error row's median and largest relative error (each column: dq, dk, dv backward)
summarize() {  # tables...
    awk '/^(forward|backward),/ { on = 1; next } /^their / { on = 0 } !on { next }
         { name = $0; sub(/( +[0-9.e+-]+%?)+$/, "", name)
           if (!(name in seen)) { seen[name] = ++rows; names[rows] = name }
           r = seen[name]; c = 0; n[r]++
           for (i = 1; i <= NF; i++) if ($i ~ /%$/) { c++; cols[r] = c; v[r, c, n[r]] = $i + 0 } }
         END { for (r = 1; r <= rows; r++) {
                   printf "%-62s", names[r]
                   for (c = 1; c <= cols[r]; c++) {
                       m = n[r]; delete x
                       for (i = 1; i <= m; i++) x[i] = v[r, c, i]
                       for (i = 2; i <= m; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]
                                                  x[j + 1] = t }
                       printf "  %17s", sprintf("%.2f / %.2f", m % 2 ? x[(m + 1) / 2] : (x[m / 2] + x[m / 2 + 1]) / 2,
                                                 x[m]) }
                   printf "\n" } }' "$@"
}
val() { grep ' tel:' "$1/main.log" | tail -n 1 | sed 's/.*tel://'; }
{
    echo "== 300 steps each (${common[*]})"
    for seed in 1337 1338; do
        suffix=$([ "$seed" = 1337 ] || echo "_seed$seed")
        awk -v s="$seed" -v b="$(val "$out/bf16$suffix")" -v f="$(val "$out/fp8$suffix")" \
            -v a="$(val "$out/fp8_attention$suffix")" -v m="$(val "$out/fp8_attention_mha$suffix")" 'BEGIN {
            printf "seed %s: final val loss bf16 %s; fp8 (delayed) %s (%+.2f%% vs bf16); ", s, b, f, 100 * (f - b) / b
            printf "fp8 with -fp8_attention 1 %s (%+.2f%% vs bf16, %+.2f%% vs fp8); ", a, 100 * (a - b) / b,
                   100 * (a - f) / f
            printf "with -fp8_attention 2 %s (%+.2f%% vs bf16, %+.2f%% vs fp8)\n", m, 100 * (m - b) / b,
                   100 * (m - f) / f }'
    done
    for layer in 0 1; do
        tables=()
        for step in $steps; do tables+=("$out/tables/block${layer}_step$((step + 1)).txt"); done
        echo "== block $layer, relative L2 errors (%), median / largest over steps $(for s in $steps; do
            printf '%d ' $((s + 1)); done)of the FP8-attention run"
        echo "(the backward rows: dq, dk, dv)"
        summarize "${tables[@]}"
    done
    # the step whose dq the trainer's backward (-fp8_attention 1: the run's) got furthest off (block 1)
    worst=$(for step in $steps; do
                grep "^FP8 attention's BF16 backward, bf16" "$out/tables/block1_step$((step + 1)).txt" |
                    awk -v s=$((step + 1)) '{ for (i = 1; i <= NF; i++) if ($i ~ /%$/) { print s, $i + 0; exit } }'
            done | sort -k2,2 -g | tail -n 1 | cut -d' ' -f1)
    for table in block1_step1 block1_step201 "block1_step$worst" block1_step1_t1024; do
        echo "== $table"
        cat "$out/tables/$table.txt"
    done
} >"$out/numbers.txt"
cat "$out/numbers.txt"
