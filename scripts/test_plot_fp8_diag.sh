#!/usr/bin/env bash
# scripts/test_plot_fp8_diag.sh — tests scripts/plot_fp8_diag.py on real diagnostics: the CPU trainer writes an
# fp8_diag.tsv (tiny model, 12 steps, a line every 2 steps) with each of the four recipes (delayed, current, blockwise,
# mxfp8: the block recipes' scale picture draws the range of their block scales), and the script draws each: every PNG exists, is a PNG, is not trivial (over 15 kB, and its pixels are not one flat colour), and the
# worst-saturation line names a slot of the file. Bad input (a missing file, a file from elsewhere, a short line)
# exits non-zero with one message naming the problem. Prints "plot-fp8-diag: N passed, M failed" last.
set -u
cd "$(dirname "$0")/.."
. scripts/test_lib.sh
tmp=$TMP
TRAINER=./train_gpt_fp8_cpu
DATA=data/tinyshakespeare
if ! python3 -c "import matplotlib, numpy" 2>/dev/null; then
    fail matplotlib "matplotlib or numpy not importable; run: make deps"
    finish plot-fp8-diag
fi
if [ ! -x "$TRAINER" ]; then fail build "$TRAINER missing (make train_gpt_fp8_cpu)"; finish plot-fp8-diag; fi
if [ ! -f "$DATA/tiny_shakespeare_train.bin" ] && ! ./dev/data/prepare_tinyshakespeare.sh >/dev/null; then
    fail data "could not prepare $DATA"
    finish plot-fp8-diag
fi

pngs="amax scale saturated flushed saturation_heatmap"
for recipe in delayed current blockwise mxfp8; do
    width=64
    [ "$recipe" = blockwise ] && width=128  # whole blocks of 128 along C, 3C, 4C and B*T (any width trains)
    if ! $TRAINER -i "$DATA/tiny_shakespeare_train.bin" -j "$DATA/tiny_shakespeare_val.bin" -tk "$DATA/tokenizer.bin" \
        -L 2 -C $width -NH 4 -b 4 -t 32 -x 12 -v 0 -s 0 -l 4e-3 -fp8_diag_every 2 -fp8_recipe "$recipe" \
        -o "$tmp/run_$recipe" >"$tmp/train_$recipe.out" 2>&1; then
        fail "train_$recipe" "$(tail -n 2 "$tmp/train_$recipe.out")"
        continue
    fi
    out=$(python3 scripts/plot_fp8_diag.py "$tmp/run_$recipe/fp8_diag.tsv" --out-dir "$tmp/png" --prefix "$recipe" \
        --title "test $recipe" 2>&1)
    rc=$?
    # the PNGs with more than one colour (the standard deviation of their pixels is not ~0), one Python for the five
    # (each start imports matplotlib, a second of CI's time)
    colourful=$(python3 -c "
import sys, matplotlib.image as m
for png in sys.argv[1:]:
    try:
        if m.imread(png).std() > 0.05: print(png)
    except Exception:
        pass" $(for name in $pngs; do printf '%s ' "$tmp/png/${recipe}_$name.png"; done) 2>/dev/null)
    for name in $pngs; do
        png="$tmp/png/${recipe}_$name.png"
        # a PNG, over 15 kB, and more than one colour
        if [ "$rc" -eq 0 ] && [ "$(head -c 8 "$png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] &&
            [ "$(stat -c %s "$png")" -gt 15000 ] && printf '%s\n' "$colourful" | grep -qxF "$png"; then
            pass "${recipe}_$name"
        else
            fail "${recipe}_$name" "rc $rc, no valid non-trivial $png: $out"
        fi
    done
    # the worst-saturation line names a (layer, gemm, tensor) that the file has
    worst=$(printf '%s\n' "$out" | sed -nE 's/^worst saturated: [0-9.e+-]+% at step [0-9]+, layer ([0-9]+) ([a-z_]+) ([a-z_]+) .*/\1 \2 \3/p')
    if [ -n "$worst" ] && awk -F'\t' -v w="$worst" 'NR > 1 && ($3 " " $4 " " $5) == w { found = 1 } END { exit !found }' \
        "$tmp/run_$recipe/fp8_diag.tsv"; then
        pass "${recipe}_worst_line"
    else
        fail "${recipe}_worst_line" "no 'worst saturated' line naming a slot of the file: $out"
    fi
done

expect_error() {  # name, expected text, args...
    local name=$1 want=$2
    shift 2
    local msg
    msg=$(python3 scripts/plot_fp8_diag.py "$@" --out-dir "$tmp/bad" 2>&1 >/dev/null)
    if [ $? -ne 0 ] && [ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] && printf '%s' "$msg" | grep -q -- "$want"; then
        pass "error_$name"
    else
        fail "error_$name" "got: $msg"
    fi
}
expect_error missing_file "no_such.tsv does not exist" "$tmp/no_such.tsv"
printf 's:1 trl:5.0\n' >"$tmp/main.log"
expect_error foreign_file "not an fp8_diag.tsv of this version" "$tmp/main.log"
if [ -s "$tmp/run_delayed/fp8_diag.tsv" ]; then
    { head -n 2 "$tmp/run_delayed/fp8_diag.tsv"; printf '2\t0\t0\tqkv\tinput\n'; } >"$tmp/short.tsv"
    expect_error short_line "short.tsv:3: 5 fields, expected 14" "$tmp/short.tsv"
    head -n 1 "$tmp/run_delayed/fp8_diag.tsv" >"$tmp/header_only.tsv"
    expect_error header_only "has a header but no lines" "$tmp/header_only.tsv"
fi
finish plot-fp8-diag
