#!/usr/bin/env python3
"""doc/delayed_scaling_figures.py — the numbers and the headroom picture of doc/delayed_scaling.md, from the
fp8_diag.tsv files of runs that wrote a line every step (-fp8_diag_every 1) with one micro-batch per step.
doc/make_delayed_scaling_figures.sh runs the trainings and then this.

    delayed_scaling_figures.py --out doc/delayed_scaling/headroom.png --step 24 --module "0 qkv" \\
        --slot "0 qkv grad_output" --slot "1 attproj input" \\
        --run "delayed" log/delayed/fp8_diag.tsv --run "current" log/current/fp8_diag.tsv ...

Prints, for the first run (delayed scaling) and the last (current scaling), every slot of --module at step 1, at --step
and at the step before it: the step's amax, the window amax, the scale the step's cast used, where that cast put the
largest element (amax * scale, against fp8_max) and the fractions it saturated and flushed, and the scale the end of
the step left; then a table over all runs of the mean saturated and flushed fractions per tensor and the final
validation loss (from main.log beside each TSV).
Draws, for each --slot, the headroom of every run over the steps: log2(amax * scale used / fp8_max), the binades
between the tensor's largest element, once scaled, and the top of the FP8 range (above 0: clipped).

Which scale a step's cast used: the end of step s-1 leaves the scale that casts the activations and gradients of
step s and the weights updated at the end of step s-1 (delayed scaling: the scale column of line s-1, 1.0 before
the first update); with current scaling an activation or gradient cast computes its own (line s) and a weight cast
happens at the end of step s-1 (line s-1). Line s counts (saturated, flushed) the casts made since line s-1: the
activations and gradients of step s and the weights cast at the end of step s, for step s+1.
"""
import argparse
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from plot_fp8_diag import read_diag  # noqa: E402  (one reader of fp8_diag.tsv)

FP8_MAX = {"E4M3": 448.0, "E5M2": 57344.0}


def die(message):
    print(f"delayed_scaling_figures: error: {message}", file=sys.stderr)
    sys.exit(1)


def by_slot(rows):
    """{(layer, gemm, tensor): {step: row}}"""
    out = {}
    for r in rows:
        out.setdefault((r["layer"], r["gemm"], r["tensor"]), {})[r["step"]] = r
    return out


def scale_used(lines, step, current, tensor):
    """the scale the cast of this slot at `step` multiplied by (see the module comment); None where the file cannot
    say (current scaling's first weights, cast from their own amax before step 1)"""
    if current and tensor != "weight":
        return lines[step]["scale"]
    if step - 1 in lines:
        return lines[step - 1]["scale"]
    return None if current else 1.0


def last_val_loss(tsv):
    path = os.path.join(os.path.dirname(tsv), "main.log")
    value = "n/a"
    if os.path.isfile(path):
        for line in open(path):
            if " tel:" in line:
                value = line.split("tel:")[1].split()[0]
    return value


def parse_slot(text):
    parts = text.split()
    if len(parts) != 3:
        die(f"--slot '{text}': expected 'LAYER GEMM TENSOR', e.g. '0 qkv grad_output'")
    return int(parts[0]), parts[1], parts[2]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the headroom PNG to write")
    parser.add_argument("--step", type=int, required=True, help="the step to print")
    parser.add_argument("--module", required=True, help="'LAYER GEMM' whose slots to print, e.g. '0 qkv'")
    parser.add_argument("--slot", action="append", required=True, help="'LAYER GEMM TENSOR' to draw (repeatable)")
    parser.add_argument("--run", nargs=2, action="append", required=True, metavar=("LABEL", "TSV"),
                        help="a run: its label and fp8_diag.tsv; a label containing 'current' marks current scaling")
    args = parser.parse_args()
    runs = [(label, path, "current" in label, by_slot(read_diag(path))) for label, path in args.run]
    layer, gemm = args.module.split()
    layer = int(layer)

    for label, path, current, slots in (runs[0], runs[-1]):
        print(f"== {label} ({path}), {'layer ' + str(layer)} {gemm}")
        for (l, g, tensor), lines in sorted(slots.items(), key=lambda kv: kv[0][2]):
            if (l, g) != (layer, gemm):
                continue
            for step in sorted({1, args.step - 1, args.step}):
                if step not in lines:
                    die(f"{path} has no line for step {step} of layer {l} {g} {tensor} (write one every step)")
                r = lines[step]
                used = scale_used(lines, step, current, tensor)
                fmax = FP8_MAX[r["format"]]
                cast = (f"scale used {used:.4e}  amax*scale {r['amax'] * used:.4e} "
                        f"({r['amax'] * used / fmax:.3g} of fp8_max {fmax:g})") if used else "scale used n/a"
                # the fractions of that cast: a weight's is counted in the line of the step that ended with it
                counted = lines.get(step - 1) if tensor == "weight" else r
                fractions = (f"saturated {100 * counted['saturated_frac']:.4f}%  flushed "
                             f"{100 * counted['flushed_frac']:.4f}%") if counted else "saturated, flushed: n/a"
                print(f"  step {step:4d} {tensor:<11} {r['format']} amax {r['amax']:.4e}  window_amax "
                      f"{r['window_amax']:.4e}  {cast}  {fractions}  new scale {r['scale']:.4e}")

    print("== mean over slots and steps (from step 2 on: step 1 casts with the initial scale 1.0)")
    tensors = ["input", "weight", "grad_output"]
    print(f"{'run':<26}" + "".join(f"{'sat ' + t:>17}" for t in tensors) + "".join(f"{'flush ' + t:>19}" for t in tensors)
          + f"{'final val':>11}")
    for label, path, current, slots in runs:
        cells = []
        for column in ("saturated_frac", "flushed_frac"):
            for tensor in tensors:
                values = [r[column] for (l, g, t), lines in slots.items() if t == tensor
                          for step, r in lines.items() if step >= 2]
                cells.append(100 * sum(values) / len(values) if values else float("nan"))
        print(f"{label:<26}" + "".join(f"{c:>16.4f}%" for c in cells[:3]) + "".join(f"{c:>18.4f}%" for c in cells[3:])
              + f"{last_val_loss(path):>11}")

    wanted = [parse_slot(s) for s in args.slot]
    print(f"== headroom, log2(amax * scale used / fp8_max), over steps {args.step + 1} to the end (after --step)")
    headrooms = {}
    for l, g, tensor in wanted:
        for label, path, current, slots in runs:
            lines = slots.get((l, g, tensor))
            if lines is None:
                die(f"{path} has no slot layer {l} {g} {tensor}")
            steps = [s for s in sorted(lines) if s >= 2]  # step 1 casts with the initial scale 1.0: printed, not drawn
            fmax = FP8_MAX[lines[steps[0]]["format"]]
            headroom = [math.log2(lines[s]["amax"] * scale_used(lines, s, current, tensor) / fmax)
                        if lines[s]["amax"] > 0 else float("nan") for s in steps]
            headrooms[(l, g, tensor, label)] = (steps, headroom)
            later = [h for s, h in zip(steps, headroom) if s > args.step and math.isfinite(h)]
            # clipped by more than a float rounding (current scaling's amax * scale may land one ulp above the top)
            clipped = [s for s, h in zip(steps, headroom) if h > 1e-6]
            name = f"layer {l} {g} {tensor}"
            print(f"  {name:<26} {label:<22} mean {sum(later) / len(later):+.2f}  min {min(later):+.2f}  max "
                  f"{max(later):+.2f}  steps clipping from step 2 on: {len(clipped)} of {len(steps)}"
                  + (f" ({', '.join(map(str, clipped))})" if 0 < len(clipped) <= 5 else ""))

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        die("matplotlib is not importable: run `make deps`")
    fig, axes = plt.subplots(len(wanted), 1, figsize=(9, 2.9 * len(wanted) + 0.6), sharex=True, squeeze=False)
    colors = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple"]
    for ax, (l, g, tensor) in zip(axes[:, 0], wanted):
        low, high = 0.0, 0.0
        # the last run (current scaling) first, under the others: it sits at 0 by construction
        for i, (label, path, current, slots) in reversed(list(enumerate(runs))):
            steps, headroom = headrooms[(l, g, tensor, label)]
            finite = [h for h in headroom if math.isfinite(h)]
            low, high = min([low] + finite), max([high] + finite)
            ax.plot(steps, headroom, color=colors[i % len(colors)], linewidth=2.2 if current else 1.1, label=label,
                    alpha=0.9, zorder=3 + (len(runs) - i))
        top = max(1.0, high + 0.5)
        ax.set_ylim(low - 0.5, top)
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.axhspan(0, top, color="tab:red", alpha=0.08)
        ax.axvline(args.step, color="grey", linewidth=0.8, linestyle=":")
        fmt = runs[0][3][(l, g, tensor)][min(runs[0][3][(l, g, tensor)])]["format"]
        ax.set_title(f"layer {l} {g} {tensor} ({fmt}, max {FP8_MAX[fmt]:g})", fontsize=10)
        ax.set_ylabel("binades below the top\n(log2 amax·scale / max)")
        ax.grid(alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles[::-1], labels[::-1], fontsize=9, loc="upper center", ncol=len(runs), bbox_to_anchor=(0.5, 0.955))
    axes[-1, 0].set_xlabel(f"step (dotted: step {args.step}, walked through in doc/delayed_scaling.md)")
    fig.suptitle("Where each step's largest element lands in the FP8 range (above 0, red: clipped)", fontsize=11)
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    fig.savefig(args.out, dpi=80)
    print(f"plot: {args.out}")


if __name__ == "__main__":
    main()
