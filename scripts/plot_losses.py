#!/usr/bin/env python3
"""scripts/plot_losses.py — draws the loss curves of two or more runs from their llm.c-format main.log files into one
PNG, with the relative gap of every run to the first (the baseline), and prints the final losses and gaps.

    plot_losses.py --out compare.png --label bf16 log_bf16/main.log --label fp8 log_fp8/main.log [--title "..."]

Log lines read: `s:<step> trl:<loss> ...` (train loss after <step> steps) and `s:<step> tel:<loss>` (val loss);
everything else is ignored. Labels pair with logs in order; a missing label is the log's folder name.
"""
import argparse
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


def ema(values, decay=0.9):
    """Exponential moving average, bias-corrected so the first points are not pulled toward 0."""
    out, avg = [], 0.0
    for i, v in enumerate(values, 1):
        avg = decay * avg + (1 - decay) * v
        out.append(avg / (1 - decay**i))
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="PNG to write")
    parser.add_argument("--label", action="append", default=[], help="label of the next log (in order)")
    parser.add_argument("--title", default="train and val loss")
    parser.add_argument("logs", nargs="+", help="main.log files; the first is the baseline")
    args = parser.parse_intermixed_args()
    if args.label and len(args.label) != len(args.logs):
        die(f"{len(args.label)} labels for {len(args.logs)} logs: give one --label per log, or none")
    if len(args.logs) < 2:
        die("need at least two logs to compare")
    labels = args.label or [os.path.basename(os.path.dirname(os.path.abspath(p))) for p in args.logs]
    runs = [read_log(p) for p in args.logs]
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        die("matplotlib is not importable: run `make deps`")

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 8), sharex=True, gridspec_kw={"height_ratios": [3, 2]})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    smoothed = []
    for i, ((train, val), label) in enumerate(zip(runs, labels)):
        c = colors[i % len(colors)]
        steps, losses = zip(*train)
        s = ema(losses)
        smoothed.append(dict(zip(steps, s)))
        top.plot(steps, losses, color=c, alpha=0.25, linewidth=0.8)
        top.plot(steps, s, color=c, linewidth=1.6, label=f"{label} train (EMA 0.9)")
        if val:
            vs, vl = zip(*val)
            top.plot(vs, vl, color=c, marker="o", markersize=4, linestyle="--", linewidth=1.2, label=f"{label} val")
    top.set_ylabel("loss")
    top.set_title(args.title)
    top.grid(alpha=0.3)
    top.legend()

    base_train, base_val = smoothed[0], dict(runs[0][1])
    bottom.axhline(0.0, color="black", linewidth=0.8)
    print(f"{'run':<12} {'final train':>12} {'final val':>10}  gap of final val vs {labels[0]}")
    for i, ((train, val), label) in enumerate(zip(runs, labels)):
        final_val = val[-1][1] if val else float("nan")
        line = f"{label:<12} {train[-1][1]:>12.4f} {final_val:>10.4f}"
        if i > 0:
            c = colors[i % len(colors)]
            common = sorted(set(base_train) & set(smoothed[i]))
            if common:
                bottom.plot(common, [(smoothed[i][s] - base_train[s]) / base_train[s] * 100 for s in common], color=c,
                            linewidth=1.4, label=f"{label} vs {labels[0]}, train (EMA)")
            vcommon = sorted(set(base_val) & set(dict(val)))
            if vcommon:
                vd = dict(val)
                bottom.plot(vcommon, [(vd[s] - base_val[s]) / base_val[s] * 100 for s in vcommon], color=c, marker="o",
                            markersize=4, linestyle="--", label=f"{label} vs {labels[0]}, val")
            if val and runs[0][1]:
                base_final = runs[0][1][-1][1]
                gap = (final_val - base_final) / base_final * 100
                line += f"  {gap:+.2f}%\n{label} vs {labels[0]}: final val {final_val:.4f} vs {base_final:.4f} ({gap:+.2f}%)"
        print(line)
    bottom.set_xlabel("step")
    bottom.set_ylabel(f"relative gap to {labels[0]} (%)")
    bottom.grid(alpha=0.3)
    bottom.legend()
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
