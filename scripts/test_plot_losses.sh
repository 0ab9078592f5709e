#!/usr/bin/env bash
# scripts/test_plot_losses.sh — tests plot_losses.py on synthetic logs: a valid PNG, the printed gap of a run that is
# 1% worse reads +1.00% and says it is worse (within noise under --noise 1.5), after a table of numbers only; a loss spike in the baseline is reported as a spike and does not turn
# the smoothed train gap of a run that is 1% worse everywhere else negative (the gap stays within [0.5%, 1.5%], where
# the raw gap at the spike is -33%); three runs plot, each with its gap; and each bad input (missing file, a log without
# train lines, labels not matching logs, a negative warmup) exits non-zero with a message naming the problem.
# Prints "plot: N passed, M failed" last.
set -u
cd "$(dirname "$0")/.."
. scripts/test_lib.sh
tmp=$TMP
if ! python3 -c "import matplotlib" 2>/dev/null; then
    fail matplotlib "not importable; run: make deps"
    finish plot
fi
mkdir -p "$tmp/a" "$tmp/b"
python3 - "$tmp" <<'PY'
import math, sys
d = sys.argv[1]
for run, factor in (("a", 1.0), ("b", 1.01)):
    with open(f"{d}/{run}/main.log", "w") as f:
        for s in range(0, 201):
            loss = (3.0 + 4.0 * math.exp(-s / 50)) * factor
            if s % 20 == 0:
                f.write(f"s:{s} tel:{loss:.4f}\n")
            if s > 0:
                f.write(f"s:{s} trl:{loss + 0.05 * math.sin(s):.4f} lr:0.001000 norm:1.00\n")
PY
out=$(python3 scripts/plot_losses.py --out "$tmp/p.png" --label base "$tmp/a/main.log" --label worse "$tmp/b/main.log" 2>&1)
if [ "$(head -c 8 "$tmp/p.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] &&
    [ "$(stat -c %s "$tmp/p.png")" -gt 20000 ]; then
    pass png_written
else
    fail png_written "no valid PNG: $out"
fi
if printf '%s\n' "$out" | grep -q "worse vs base: final val 3.1040 vs 3.0733 (+1.00%): worse is worse than base"; then
    pass gap_printed
else
    fail gap_printed "got: $out"
fi
# a gap below --noise (the recipe's seed-to-seed spread) reads "within noise", one above it worse
out=$(python3 scripts/plot_losses.py --out "$tmp/p.png" --noise 1.5 --label base "$tmp/a/main.log" --label worse "$tmp/b/main.log" 2>&1)
if printf '%s\n' "$out" | grep -q "^worse vs base: final val 3.1040 vs 3.0733 (+1.00%): within noise (|gap| < 1.5%, the spread"; then
    pass gap_within_noise
else
    fail gap_within_noise "got: $out"
fi
out=$(python3 scripts/plot_losses.py --out "$tmp/p.png" --noise 0.5 --label base "$tmp/a/main.log" --label worse "$tmp/b/main.log" 2>&1)
if printf '%s\n' "$out" | grep -q "^worse vs base: final val 3.1040 vs 3.0733 (+1.00%): worse is worse than base"; then
    pass gap_above_noise
else
    fail gap_above_noise "got: $out"
fi

# a spike (x1.5 at steps 100 and 101) in the baseline only; the other run is 1% worse at every other step, a third
# run 2% worse
mkdir -p "$tmp/spike" "$tmp/steady" "$tmp/third"
python3 - "$tmp" <<'PY'
import math, sys
d = sys.argv[1]
for run, factor in (("spike", 1.0), ("steady", 1.01), ("third", 1.02)):
    with open(f"{d}/{run}/main.log", "w") as f:
        for s in range(1, 301):
            loss = (3.0 + 4.0 * math.exp(-s / 50) + 0.05 * math.sin(s)) * factor
            if run == "spike" and s in (100, 101):
                loss *= 1.5
            f.write(f"s:{s} trl:{loss:.4f} lr:0.001000 norm:1.00\n")
            if s % 50 == 0:
                f.write(f"s:{s} tel:{loss:.4f}\n")
PY
out=$(python3 scripts/plot_losses.py --out "$tmp/spike.png" --warmup 20 --gap-tsv "$tmp/gap.tsv" --label bf16 \
    "$tmp/spike/main.log" --label fp8 "$tmp/steady/main.log" --label third "$tmp/third/main.log" 2>&1)
if printf '%s\n' "$out" | grep -q "spikes in bf16 (train loss > 10% above its running median): steps 100, 101$" &&
    ! printf '%s\n' "$out" | grep -q "spikes in fp8"; then
    pass spike_reported
else
    fail spike_reported "got: $out"
fi
# columns: step, fp8_train_gap_pct, fp8_val_gap_pct, third_train_gap_pct, third_val_gap_pct
if [ "$(head -n 1 "$tmp/gap.tsv" 2>/dev/null)" = "$(printf 'step\tfp8_train_gap_pct\tfp8_val_gap_pct\tthird_train_gap_pct\tthird_val_gap_pct')" ] &&
    awk -F'\t' 'NR > 1 { n++; if ($2 < 0.5 || $2 > 1.5) bad++; if ($4 < 1.5 || $4 > 2.5) bad++ } END { exit !(n == 300 && bad == 0) }' "$tmp/gap.tsv"; then
    pass spike_does_not_read_as_better
else
    fail spike_does_not_read_as_better "train gaps outside [0.5, 1.5]% (fp8) / [1.5, 2.5]% (third): $(awk -F'\t' 'NR > 1 && ($2 < 0.5 || $2 > 1.5)' "$tmp/gap.tsv" | head -n 3 | tr '\n' ' ')"
fi
if [ "$(stat -c %s "$tmp/spike.png" 2>/dev/null || echo 0)" -gt 20000 ] &&
    printf '%s\n' "$out" | grep -q "^fp8 vs bf16: final val .* (+1.00%): fp8 is worse than bf16" &&
    printf '%s\n' "$out" | grep -q "^third vs bf16: final val .* (+2.00%): third is worse than bf16"; then
    pass three_runs
else
    fail three_runs "got: $out"
fi
# the table's rows are numbers only (run, final train, final val, gap), one per run, and the verdicts follow it
if printf '%s\n' "$out" | head -n 1 | grep -q '^run ' &&
    [ "$(printf '%s\n' "$out" | sed -n '2,4p' | grep -cE '^[a-z0-9]+ +[0-9.]+ +[0-9.]+( +[-+][0-9.]+%)?$')" -eq 3 ] &&
    printf '%s\n' "$out" | sed -n '5p' | grep -q '^fp8 vs bf16: ' && printf '%s\n' "$out" | sed -n '6p' | grep -q '^third vs bf16: '; then
    pass table_rows_are_data
else
    fail table_rows_are_data "got: $out"
fi
expect_error() {  # name, expected text, args...
    local name=$1 want=$2
    shift 2
    local msg
    msg=$(python3 scripts/plot_losses.py "$@" 2>&1 >/dev/null)
    if [ $? -ne 0 ] && printf '%s' "$msg" | grep -q -- "$want"; then pass "error_$name"; else fail "error_$name" "got: $msg"; fi
}
printf 's:0 tel:5.0\n' >"$tmp/empty.log"
expect_error missing_file "no_such.log does not exist" --out "$tmp/x.png" "$tmp/a/main.log" "$tmp/no_such.log"
expect_error no_train_lines "has no train-loss lines" --out "$tmp/x.png" "$tmp/a/main.log" "$tmp/empty.log"
expect_error label_mismatch "1 labels for 2 logs" --out "$tmp/x.png" --label one "$tmp/a/main.log" "$tmp/b/main.log"
expect_error negative_noise "--noise -1.0: must be 0 or more" --out "$tmp/x.png" --noise -1 "$tmp/a/main.log" "$tmp/b/main.log"
expect_error negative_warmup "--warmup -1: must be 0 or more" --out "$tmp/x.png" --warmup -1 "$tmp/a/main.log" "$tmp/b/main.log"
finish plot
