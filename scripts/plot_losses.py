#!/usr/bin/env python3
"""scripts/plot_losses.py — draws the loss curves of one or more runs from their llm.c-format main.log files into one
PNG, with (for two or more runs) the relative gap of every run to the first (the baseline), and prints the final
losses and gaps.

    plot_losses.py --out compare.png --label bf16 log_bf16/main.log --label fp8 log_fp8/main.log
                   [--title "..."] [--warmup N] [--smooth N] [--spike PCT] [--gap-tsv gap.tsv]

Top panel: each run's train loss raw (thin) and smoothed (thick: a centered running mean over --smooth steps), its
val loss (dots), and spikes marked with x: steps whose raw loss is more than --spike percent above the running median
of --smooth steps. Spikes are looked for only after the warmup (--warmup) and after the first --smooth/2 logged steps
(see find_spikes): the first losses are always far above the median. Spikes are left out of every smoothed curve.
Bottom panel (two or more runs): the gap (run - baseline) / baseline in percent. Train: the gap step by step (both
runs saw the same batches, so their noise largely cancels), leaving out steps where either run spikes, then averaged
over --smooth steps; a spike in the baseline therefore does not read as the other run being better, and the steps it
covers are shaded. Val: the gap at each evaluation. Above 0 the run's loss is higher than the baseline's: it is
worse. A dotted line marks the end of warmup. --gap-tsv writes the numbers behind the bottom panel.
Legends, right of the panels and outside them: one entry per run (its colour, in both panels), and once per panel
what each line style means.
Printed: a table of each run's final train and val loss and its final val gap (numbers only), then one verdict line
per run: worse or better than the baseline, or "within noise" when the gap is smaller than --noise percent (the spread
of the recipe's final val loss between seeds, which a gap that small cannot be told from).

Log lines read: `s:<step> trl:<loss> ...` (train loss after <step> steps) and `s:<step> tel:<loss>` (val loss);
everything else is ignored. Labels pair with logs in order; a missing label is the log's folder name.
"""
import argparse
import math
import os
import re
import sys

LINE = re.compile(r"^s:(\d+)\s+(trl|tel):([-+0-9.eEnaif]+)")


def die(message):
    print(f"plot_losses: error: {message}", file=sys.stderr)
    sys.exit(1)


def read_log(path):
    if not os.path.isfile(path):
        die(f"{path} does not exist")
    train, val = {}, {}
    with open(path) as f:
        for line in f:
            m = LINE.match(line)
            if m:
                # a resumed run may log a step twice; the last value wins
                (train if m.group(2) == "trl" else val)[int(m.group(1))] = float(m.group(3))
    if not train:
        die(f"{path} has no train-loss lines (s:<step> trl:<loss>)")
    return sorted(train.items()), sorted(val.items())


def running_median(values, window):
    """Centered running median over `window` points (fewer at the ends): a spike shorter than half the window does
    not move it, so it is the reference spikes are measured against."""
    half = window // 2
    out = []
    for i in range(len(values)):
        part = sorted(v for v in values[max(0, i - half) : i + half + 1] if math.isfinite(v))
        if not part:
            out.append(float("nan"))
        elif len(part) % 2:
            out.append(part[len(part) // 2])
        else:
            out.append(0.5 * (part[len(part) // 2 - 1] + part[len(part) // 2]))
    return out


def running_mean(series, steps, window):
    """Centered running mean over `window` steps of a {step: value} series with holes (left-out steps), at `steps`."""
    half = window // 2
    ordered = sorted(series)
    out = {}
    lo = hi = 0
    total, count = 0.0, 0
    for st in steps:  # a sliding window over the sorted keys
        while hi < len(ordered) and ordered[hi] <= st + half:
            total += series[ordered[hi]]
            count += 1
            hi += 1
        while lo < hi and ordered[lo] < st - half:
            total -= series[ordered[lo]]
            count -= 1
            lo += 1
        out[st] = total / count if count else float("nan")
    return out


def relative_gap_percent(value, base):
    return (value - base) / base * 100 if base and math.isfinite(base) and math.isfinite(value) else float("nan")


def find_spikes(steps, losses, window, percent, warmup):
    """The steps whose loss is more than `percent` above the running median of `window` steps. Not looked for in the
    warmup (steps up to `warmup`: the learning rate still rises and the loss jumps as it does) nor in the first
    window // 2 logged steps: there the centered window is cut off at the start, so the median is one of the later,
    lower losses of the initial descent and every early step would read as a spike. From then on the window is whole,
    and a loss that only falls is its own median: a steep but smooth descent is never a spike."""
    median = running_median(list(losses), window)
    return [st for i, (st, lo, m) in enumerate(zip(steps, losses, median))
            if i >= window // 2 and st > warmup and math.isfinite(lo) and math.isfinite(m)
            and lo > m * (1 + percent / 100)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="PNG to write")
    parser.add_argument("--label", action="append", default=[], help="label of the next log (in order)")
    parser.add_argument("--title", default="train and val loss")
    parser.add_argument("--warmup", type=int, default=0,
                        help="warmup steps of the runs: marked with a dotted line, no spikes looked for in them")
    parser.add_argument("--smooth", type=int, default=21, help="steps in the running mean and median (default 21)")
    parser.add_argument("--spike", type=float, default=10.0,
                        help="mark steps whose loss is this many percent above the running median (default 10)")
    parser.add_argument("--gap-tsv", help="write step and every run's train/val gap to the baseline here")
    parser.add_argument("--noise", type=float,
                        help="a final val gap smaller than this many percent reads 'within noise': the spread of the "
                             "recipe's final val loss between seeds (default: none, every gap reads better or worse)")
    parser.add_argument("logs", nargs="+", help="main.log files; the first is the baseline of the gaps")
    args = parser.parse_intermixed_args()
    if args.label and len(args.label) != len(args.logs):
        die(f"{len(args.label)} labels for {len(args.logs)} logs: give one --label per log, or none")
    if args.gap_tsv and len(args.logs) < 2:
        die("--gap-tsv needs two logs or more: the gaps are to the first log")
    if args.warmup < 0:
        die(f"--warmup {args.warmup}: must be 0 or more")
    if args.smooth < 1:
        die(f"--smooth {args.smooth}: must be 1 or more")
    if not args.spike > 0:
        die(f"--spike {args.spike}: must be above 0")
    if args.noise is not None and not args.noise >= 0:
        die(f"--noise {args.noise}: must be 0 or more")
    labels = args.label or [os.path.basename(os.path.dirname(os.path.abspath(p))) for p in args.logs]
    runs = [read_log(p) for p in args.logs]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch
    except ImportError:
        die("matplotlib is not importable: run `make deps`")

    base_label = labels[0]
    compare = len(runs) > 1
    # constrained layout leaves room right of the panels for the legends, so none covers a curve; bbox_inches="tight"
    # at the end keeps whatever still sticks out
    if compare:
        fig, (top, bottom) = plt.subplots(2, 1, figsize=(13, 8.5), sharex=True, layout="constrained",
                                          gridspec_kw={"height_ratios": [3, 2]})
    else:
        fig, top = plt.subplots(figsize=(13, 5.5), layout="constrained")
        bottom = None
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    gray = "dimgray"  # the colour of the style legends' samples: they explain a line style, not a run
    raw, spikes = [], []  # per run: {step: loss} without non-finite values; the set of spike steps
    for i, (train, val) in enumerate(runs):
        c = colors[i % len(colors)]
        steps, losses = zip(*train)
        spike_steps = find_spikes(steps, losses, args.smooth, args.spike, args.warmup)
        raw.append({st: lo for st, lo in train if math.isfinite(lo)})
        spikes.append(set(spike_steps))
        kept = {st: lo for st, lo in raw[i].items() if st not in spikes[i]}
        smooth = running_mean(kept, steps, args.smooth)
        # raw: thin and a third opaque, in the run's color, below every smoothed curve; where runs overlap their
        # colors mix rather than the last one hiding the others
        top.plot(steps, losses, color=c, alpha=0.35, linewidth=0.7, zorder=1)
        top.plot(steps, [smooth[st] for st in steps], color=c, linewidth=2.0, zorder=3)
        if val:
            vs, vl = zip(*val)
            top.plot(vs, vl, color=c, marker="o", markersize=4, linestyle="--", linewidth=1.0, zorder=4)
        if spike_steps:
            top.plot(spike_steps, [raw[i][st] for st in spike_steps], linestyle="none", marker="x", markersize=8,
                     markeredgewidth=2, color=c, zorder=5)
    top.set_ylabel("loss")
    top.set_title(args.title)
    top.grid(alpha=0.3)
    # the legends: one entry per run (its colour, the same in both panels), then once what each line style means
    run_handles = [Line2D([], [], color=colors[i % len(colors)], linewidth=2.5, label=label)
                   for i, label in enumerate(labels)]
    top_styles = [Line2D([], [], color=gray, alpha=0.5, linewidth=0.7, label="train, raw"),
                  Line2D([], [], color=gray, linewidth=2.0,
                         label=f"train, mean of {args.smooth} steps\n(spikes left out)")]
    if any(val for _, val in runs):
        top_styles.append(Line2D([], [], color=gray, marker="o", markersize=4, linestyle="--", linewidth=1.0,
                                 label="val"))
    if any(spikes):
        after = max(args.warmup, args.smooth // 2)
        top_styles.append(Line2D([], [], color=gray, marker="x", markersize=8, markeredgewidth=2, linestyle="none",
                                 label=f"spike: > {args.spike:g}% above the\nmedian of {args.smooth} steps "
                                       f"(looked\nfor after step {after})"))
    if args.warmup > 0:
        top_styles.append(Line2D([], [], color="gray", linestyle=":", linewidth=1.5,
                                 label=f"end of warmup (step {args.warmup})"))
    run_legend = top.legend(handles=run_handles, title="runs", loc="upper left", bbox_to_anchor=(1.01, 1.0),
                            borderaxespad=0.0, fontsize=9)
    top.add_artist(run_legend)  # a second legend() call replaces the first one unless it is kept as an artist
    top.legend(handles=top_styles, title="lines", loc="lower left", bbox_to_anchor=(1.01, 0.0), borderaxespad=0.0,
               fontsize=8)

    base_val = dict(runs[0][1])
    gap_columns = []  # (name, {step: gap})
    val_gaps = []  # (color, label, {step: gap}), drawn once the panel's range is known
    if compare:
        bottom.axhline(0.0, color="black", linewidth=0.8)
        print(f"{'run':<12} {'final train':>12} {'final val':>10}  gap of final val vs {base_label} (> 0: worse)")
    else:
        print(f"{'run':<12} {'final train':>12} {'final val':>10}")
    verdicts = []  # printed after the table, whose rows are numbers only
    for i, ((train, val), label) in enumerate(zip(runs, labels)):
        final_val = val[-1][1] if val else float("nan")
        line = f"{label:<12} {train[-1][1]:>12.4f} {final_val:>10.4f}"
        if i > 0:
            c = colors[i % len(colors)]
            common = sorted(set(raw[0]) & set(raw[i]))
            step_gap = {st: relative_gap_percent(raw[i][st], raw[0][st]) for st in common
                        if st not in spikes[0] and st not in spikes[i]}
            train_gap = running_mean({st: g for st, g in step_gap.items() if math.isfinite(g)}, common, args.smooth)
            if common:
                bottom.plot(common, [train_gap[st] for st in common], color=c, linewidth=1.8)
            vd = dict(val)
            val_gap = {st: relative_gap_percent(vd[st], base_val[st]) for st in sorted(set(base_val) & set(vd))}
            gap_columns += [(f"{label}_train_gap_pct", train_gap), (f"{label}_val_gap_pct", val_gap)]
            val_gaps.append((c, label, val_gap))
            if val and runs[0][1]:
                base_final = runs[0][1][-1][1]
                gap = relative_gap_percent(final_val, base_final)
                if args.noise is not None and abs(gap) < args.noise:
                    verdict = (f"within noise (|gap| < {args.noise:g}%, the spread of the final val loss between "
                               f"seeds)")
                else:
                    than = "worse than" if gap > 0 else "better than" if gap < 0 else "as good as"
                    verdict = f"{label} is {than} {base_label}"
                line += f"  {gap:+.2f}%"
                verdicts.append(f"{label} vs {base_label}: final val {final_val:.4f} vs {base_final:.4f} "
                                f"({gap:+.2f}%): {verdict}")
        print(line)
    for verdict in verdicts:
        print(verdict)
    for label, spike_set in zip(labels, spikes):
        if spike_set:
            spike_steps = sorted(spike_set)
            shown = ", ".join(str(st) for st in spike_steps[:10]) + (", ..." if len(spike_steps) > 10 else "")
            print(f"spikes in {label} (train loss > {args.spike:g}% above its running median): steps {shown}")
    if args.warmup > 0:
        for ax in (top, bottom) if compare else (top,):
            ax.axvline(args.warmup, color="gray", linestyle=":", linewidth=1.5)
    if compare:
        draw_gap_panel(bottom, args, base_label, gap_columns, val_gaps, spikes[0], gray, Line2D, Patch)
    else:
        top.set_xlabel("step")
    fig.savefig(args.out, dpi=110, bbox_inches="tight")
    print(f"plot: {args.out}")
    if args.gap_tsv:
        all_steps = sorted(set().union(*(set(col) for _, col in gap_columns)))
        with open(args.gap_tsv, "w") as f:
            f.write("\t".join(["step"] + [name for name, _ in gap_columns]) + "\n")
            for st in all_steps:
                cells = [f"{col[st]:.4f}" if st in col and math.isfinite(col[st]) else "" for _, col in gap_columns]
                f.write("\t".join([str(st)] + cells) + "\n")
        print(f"gap numbers: {args.gap_tsv}")


def draw_gap_panel(bottom, args, base_label, gap_columns, val_gaps, base_spikes, gray, Line2D, Patch):
    """The bottom panel's range, val gaps, baseline spikes, titles and its line-style legend (the train gaps are drawn
    already)."""
    # The panel's range follows the smoothed train gaps (and 0): a val gap beyond it is drawn at the border with its
    # value written beside it, so one bad evaluation does not flatten the curves that matter.
    train_values = [g for name, col in gap_columns if name.endswith("_train_gap_pct") for g in col.values()
                    if math.isfinite(g)] + [0.0]
    low, high = min(train_values), max(train_values)
    pad = max(0.5 * (high - low), 0.5)
    low, high = low - pad, high + pad
    bottom.set_ylim(low, high)
    for c, label, val_gap in val_gaps:
        if not val_gap:
            continue
        vsteps = list(val_gap)
        clipped = [min(max(g, low), high) if math.isfinite(g) else float("nan") for g in val_gap.values()]
        bottom.plot(vsteps, clipped, color=c, marker="o", markersize=4, linestyle="--", linewidth=1.0)
        for st, g, y in zip(vsteps, val_gap.values(), clipped):
            if math.isfinite(g) and g != y:
                bottom.annotate(f"{g:+.1f}%", (st, y), textcoords="offset points", xytext=(4, -10 if g > high else 4),
                                fontsize=8, color=c)
    # a spike in the baseline moves every raw gap the other way: shade it so a dip is not read as "better"
    for st in sorted(base_spikes):
        bottom.axvspan(st - 0.5, st + 0.5, color="gray", alpha=0.3)
    # which sign is worse, in the panel's title rather than on the data
    bottom.set_title(f"gap to {base_label}: (run - {base_label}) / {base_label}; above 0 the run's loss is higher "
                     f"(worse), below 0 lower (better)", fontsize=10)
    bottom.set_xlabel("step")
    bottom.set_ylabel(f"gap to {base_label} (%)")
    bottom.grid(alpha=0.3)
    styles = [Line2D([], [], color=gray, linewidth=1.8, label=f"train, mean of {args.smooth} steps\n(spikes left out)")]
    if any(val_gap for _, _, val_gap in val_gaps):
        styles.append(Line2D([], [], color=gray, marker="o", markersize=4, linestyle="--", linewidth=1.0, label="val"))
    if base_spikes:
        styles.append(Patch(color="gray", alpha=0.3, label=f"spike in {base_label}\n(the baseline)"))
    if args.warmup > 0:
        styles.append(Line2D([], [], color="gray", linestyle=":", linewidth=1.5, label="end of warmup"))
    bottom.legend(handles=styles, title="lines", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                  fontsize=8)


if __name__ == "__main__":
    main()
