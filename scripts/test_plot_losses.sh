#!/usr/bin/env bash
# scripts/test_plot_losses.sh — tests plot_losses.py on synthetic logs: a valid PNG, the printed gap of a run that is
# 1% worse reads +1.00% and says it is worse (within noise under --noise 1.5), after a table of numbers only; a loss spike in the baseline is reported as a spike and does not turn
# the smoothed train gap of a run that is 1% worse everywhere else negative (the gap stays within [0.5%, 1.5%], where
# the raw gap at the spike is -33%); three runs plot, each with its gap; and each bad input (missing file, a log without
# train lines, labels not matching logs, a negative warmup, --gap-tsv with one log) exits non-zero with a message
# naming the problem.
# The legends, read off the drawn figure (the script run with matplotlib's savefig watched): with five runs, with two
# and with one, one legend holds exactly one entry per run and the line-style legends do not grow with the runs; no
# legend overlaps a panel's data area and none is cut off the saved image. Spikes, read off the drawn x marks: a steep
# first descent (step 1 is 30% above the median of its cut-off window) and a bump in the warmup are never marked,
# with --warmup and without, while a later spike is.
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
# The legends and spike marks, read off the figure plot_losses.py draws: it is run with Figure.savefig watched, and
# this prints one key=value per line: run_legends (legends whose entries are exactly the runs' labels, in order),
# other_entries (entries of every other legend), over_data (legends overlapping a panel's data area by more than a
# pixel), clipped (legends not wholly inside the saved image), panels, spikes (the steps of the drawn x marks).
inspect_plot() {  # "label,label,..." then plot_losses.py's arguments
    python3 - "$@" <<'PY'
import runpy, sys
import matplotlib
matplotlib.use("Agg")
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.transforms import Bbox
labels = sys.argv[1].split(",")
saved = []
real_savefig = Figure.savefig
def watched_savefig(fig, *a, **k):
    saved.append((fig, k))
    return real_savefig(fig, *a, **k)
Figure.savefig = watched_savefig
sys.argv = ["scripts/plot_losses.py"] + sys.argv[2:]
try:
    runpy.run_path("scripts/plot_losses.py", run_name="__main__")
except SystemExit as e:
    if e.code:
        sys.exit(e.code)
fig, kwargs = saved[-1]
renderer = fig.canvas.get_renderer()
# the part of the figure the PNG holds, in display pixels
image = fig.bbox
if kwargs.get("bbox_inches") == "tight":
    image = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)
legends = fig.findobj(Legend)
run_legends, other_entries, over_data, clipped = 0, 0, 0, 0
for leg in legends:
    entries = [t.get_text() for t in leg.get_texts()]
    if entries == labels:
        run_legends += 1
    else:
        other_entries += len(entries)
    box = leg.get_window_extent(renderer)
    for ax in fig.axes:
        both = Bbox.intersection(box, ax.get_window_extent(renderer))
        if both is not None and both.width > 1 and both.height > 1:
            over_data += 1
    if not (box.x0 >= image.x0 - 1 and box.y0 >= image.y0 - 1 and box.x1 <= image.x1 + 1 and box.y1 <= image.y1 + 1):
        clipped += 1
spikes = sorted({int(round(x)) for ax in fig.axes for line in ax.get_lines() if line.get_marker() == "x"
                 for x in line.get_xdata()})
print(f"run_legends={run_legends}\nother_entries={other_entries}\nover_data={over_data}\nclipped={clipped}")
print(f"panels={len(fig.axes)}\nspikes={','.join(map(str, spikes))}")
PY
}
# five runs 0.5% apart; step 1 is 10.2, 30% above the median of its cut-off window (a real first descent); the
# baseline has a bump of 20% at step 15, in the warmup of 20 steps, the middle run a spike of 40% at step 150
mkdir -p "$tmp/five"
python3 - "$tmp/five" <<'PY'
import math, sys
d = sys.argv[1]
for r in range(5):
    with open(f"{d}/run{r}.log", "w") as f:
        for s in range(1, 301):
            loss = (3.0 + 7.8 * math.exp(-s / 12) + 0.03 * math.sin(1.7 * s)) * (1 + 0.005 * r)
            if (r, s) in ((0, 15), (2, 150)):
                loss *= 1.2 if s == 15 else 1.4
            f.write(f"s:{s} trl:{loss:.4f} lr:0.001000 norm:1.00\n")
            if s % 25 == 0:
                f.write(f"s:{s} tel:{loss + 0.1:.4f}\n")
PY
five_labels="bf16,fp8 delayed,fp8 current,fp8 blockwise,fp8 mxfp8"
five_args=()
for r in 0 1 2 3 4; do five_args+=(--label "$(cut -d, -f$((r + 1)) <<<"$five_labels")" "$tmp/five/run$r.log"); done
five=$(inspect_plot "$five_labels" --out "$tmp/five.png" --warmup 20 "${five_args[@]}" 2>&1)
# two: the baseline and the run with the spike, so that every line style of the five runs' plot is in it too
two=$(inspect_plot "bf16,fp8 current" --out "$tmp/two.png" --warmup 20 "${five_args[@]:0:3}" "${five_args[@]:6:3}" 2>&1)
one=$(inspect_plot "fp8 current" --out "$tmp/one.png" --label "fp8 current" "$tmp/five/run2.log" 2>&1)
value() { sed -n "s/^$2=//p" <<<"$1"; }  # output, key
# one legend holds the runs, one entry each; the style legends hold as many entries with five runs as with two
if [ "$(value "$five" run_legends)" = 1 ] && [ "$(value "$two" run_legends)" = 1 ] &&
    [ "$(value "$one" run_legends)" = 1 ] && [ -n "$(value "$five" other_entries)" ] && [ "$(value "$five" other_entries)" = "$(value "$two" other_entries)" ]; then
    pass legend_one_entry_per_run
else
    fail legend_one_entry_per_run "five runs: $(tr '\n' ' ' <<<"$five"); two: $(tr '\n' ' ' <<<"$two"); one: $(tr '\n' ' ' <<<"$one")"
fi
if [ "$(value "$five" over_data)" = 0 ] && [ "$(value "$two" over_data)" = 0 ] &&
    [ "$(value "$one" over_data)" = 0 ] && [ "$(value "$five" clipped)" = 0 ] && [ "$(value "$two" clipped)" = 0 ] &&
    [ "$(value "$one" clipped)" = 0 ] && [ "$(value "$five" panels)" = 2 ] && [ "$(value "$one" panels)" = 1 ]; then
    pass legends_outside_data
else
    fail legends_outside_data "five runs: $(tr '\n' ' ' <<<"$five"); two: $(tr '\n' ' ' <<<"$two"); one: $(tr '\n' ' ' <<<"$one")"
fi
# marked: the spike at step 150 only, not the first steps nor the warmup's bump; one run, no --warmup: the first
# steps are not marked either
if [ "$(value "$five" spikes)" = 150 ] && [ "$(value "$one" spikes)" = 150 ] &&
    printf '%s\n' "$five" | grep -q "^spikes in fp8 current (train loss > 10% above its running median): steps 150$" &&
    [ "$(printf '%s\n' "$five" | grep -c "^spikes in")" = 1 ]; then
    pass spikes_not_in_first_steps
else
    fail spikes_not_in_first_steps "five runs: $(tr '\n' ' ' <<<"$five"); one: $(tr '\n' ' ' <<<"$one")"
fi
# one run: its losses, no gap
if [ "$(stat -c %s "$tmp/one.png" 2>/dev/null || echo 0)" -gt 20000 ] &&
    printf '%s\n' "$one" | grep -q "^fp8 current .* 3\.[0-9]*$" && ! printf '%s\n' "$one" | grep -q " vs "; then
    pass one_run
else
    fail one_run "got: $one"
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
expect_error gap_tsv_one_log "--gap-tsv needs two logs or more" --out "$tmp/x.png" --gap-tsv "$tmp/x.tsv" "$tmp/a/main.log"
finish plot
