#!/usr/bin/env python3
"""scripts/plot_fp8_diag.py — draws a trainer's FP8 diagnostics file (fp8_diag.tsv, written every -fp8_diag_every
steps) as pictures, and prints the worst saturation and flushing it saw.

    plot_fp8_diag.py fp8_diag.tsv --out-dir DIR [--prefix fp8] [--title "FP8 delayed scaling"] [--dpi 100]

writes, in DIR:
  PREFIX_amax.png                 per GEMM (columns) and tensor (rows), one line per layer: the step's amax (solid)
                                  and the amax its scale came from (dashed: delayed scaling's window max, current
                                  scaling's last cast), log scale
  PREFIX_scale.png                the scale every cast multiplies by, same grid, log scale; for the block recipes
                                  (blockwise, mxfp8: one scale per block) the smallest and largest block scale,
                                  the band between them shaded
  PREFIX_saturated.png            the fraction of the elements cast since the previous line that were clipped to
                                  +-fp8_max, same grid
  PREFIX_flushed.png              the fraction of non-zero elements that were cast to zero, same grid
  PREFIX_saturation_heatmap.png   layers (rows) by steps (columns): the worst saturated fraction over the layer's
                                  GEMMs and tensors

The TSV's columns (fp8/diag.h, fp8_diag_write_module): step module layer gemm tensor format amax window_amax
scale scale_inv saturated_frac flushed_frac block_scale_min block_scale_max; layer -1 is the LM head; a block recipe's
scale and scale_inv are nan (one scale does not describe the tensor).
"""
import argparse
import csv
import os
import sys

COLUMNS = ["step", "module", "layer", "gemm", "tensor", "format", "amax", "window_amax", "scale", "scale_inv",
           "saturated_frac", "flushed_frac", "block_scale_min", "block_scale_max"]
GEMM_ORDER = ["qkv", "attproj", "fc", "fcproj", "lm_head", "attention"]  # attention: -fp8_attention 1
TENSOR_ORDER = ["input", "weight", "output", "softmax_output", "grad_output", "grad_input", "dP"]


def die(message):
    print(f"plot_fp8_diag: error: {message}", file=sys.stderr)
    sys.exit(1)


def read_diag(path):
    """rows as dicts with numbers converted; dies with a message on a missing file or a foreign header"""
    if not os.path.isfile(path):
        die(f"{path} does not exist")
    with open(path, newline="") as f:
        reader = csv.reader(f, delimiter="\t")
        header = next(reader, None)
        if header != COLUMNS:
            die(f"{path}: not an fp8_diag.tsv of this version (header {header}, expected {COLUMNS})")
        rows = []
        for number, fields in enumerate(reader, start=2):
            if len(fields) != len(COLUMNS):
                die(f"{path}:{number}: {len(fields)} fields, expected {len(COLUMNS)}")
            row = dict(zip(COLUMNS, fields))
            try:
                for key in ("step", "module", "layer"):
                    row[key] = int(row[key])
                for key in COLUMNS[6:]:
                    row[key] = float(row[key])
            except ValueError as e:
                die(f"{path}:{number}: {e}")
            rows.append(row)
    if not rows:
        die(f"{path} has a header but no lines (did the run reach -fp8_diag_every steps?)")
    return rows


def series(rows):
    """{(gemm, tensor): {layer: {column: [values by step]}}} and the sorted steps"""
    steps = sorted({r["step"] for r in rows})
    index = {s: i for i, s in enumerate(steps)}
    out = {}
    for r in rows:
        per_layer = out.setdefault((r["gemm"], r["tensor"]), {})
        cols = per_layer.setdefault(r["layer"], {c: [float("nan")] * len(steps) for c in COLUMNS[6:]})
        cols["format"] = r["format"]
        for c in COLUMNS[6:]:
            cols[c][index[r["step"]]] = r[c]
    return out, steps


def layer_name(layer):
    return "LM head" if layer < 0 else f"layer {layer}"


def short_number(x):
    """a tick label: 0.004, 3.5, 2000, 1e8, 5e-6"""
    if x == 0:
        return "0"
    if 1e-3 <= abs(x) < 1e5:
        text = f"{x:.3g}"
        return f"{x:.0f}" if "e" in text else text
    mantissa, exponent = f"{x:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def short_log_formatter():
    """log-axis tick labels as short numbers, matplotlib choosing which ticks get one"""
    from matplotlib.ticker import LogFormatter

    class Short(LogFormatter):
        def _num_to_string(self, x, vmin, vmax):
            return short_number(x)

    return Short(labelOnlyBase=False, minor_thresholds=(1.5, 0.6))


def grid_figure(plt, data, steps, draw, title, ylabel, yscale, styles=()):
    """one panel per (tensor row, GEMM column) present in the data; draw(ax, per_layer, color_of) fills a panel.
    yscale: "log" or None (linear from 0). styles: extra legend entries (Line2D) saying what each line style is."""
    gemms = [g for g in GEMM_ORDER if any(k[0] == g for k in data)]
    tensors = [t for t in TENSOR_ORDER if any(k[1] == t for k in data)]
    layers = sorted({layer for per_layer in data.values() for layer in per_layer})
    cmap = plt.get_cmap("viridis")
    block_layers = [layer for layer in layers if layer >= 0]
    def color_of(layer):
        if layer < 0:
            return "tab:red"
        position = block_layers.index(layer) / max(1, len(block_layers) - 1)
        return cmap(0.9 * position)
    fig, axes = plt.subplots(len(tensors), len(gemms), figsize=(3.6 * len(gemms) + 1.6, 2.7 * len(tensors) + 1.0),
                             sharex=True, squeeze=False)
    for i, tensor in enumerate(tensors):
        for j, gemm in enumerate(gemms):
            ax = axes[i][j]
            per_layer = data.get((gemm, tensor))
            if per_layer is None:
                ax.set_axis_off()
                continue
            draw(ax, per_layer, color_of)
            if yscale == "log":
                ax.set_yscale("log")
                ax.yaxis.set_major_formatter(short_log_formatter())
                ax.yaxis.set_minor_formatter(short_log_formatter())
                ax.tick_params(axis="y", which="minor", labelsize=7)
            else:
                ax.set_ylim(bottom=0)
            if not ax.lines:
                ax.text(0.5, 0.5, "0 at every step", transform=ax.transAxes, ha="center", va="center", color="grey")
                ax.set_yticks([])
            ax.grid(alpha=0.3, which="both" if yscale == "log" else "major")
            fmt = next(iter(per_layer.values()))["format"]
            # (y given: matplotlib then skips lifting the title clear of top ticks, which the panels have none of,
            # a measurement of every panel's ticks: 1 s of a set's 8 on 2 cores, the same pixels)
            ax.set_title(f"{gemm} {tensor} ({fmt})", fontsize=10, y=1.0)
            if j == 0:
                ax.set_ylabel(ylabel)
            if i == len(tensors) - 1:
                ax.set_xlabel("step")
    handles = [plt.Line2D([], [], color=color_of(layer), linewidth=2, label=layer_name(layer)) for layer in layers]
    fig.legend(handles=handles + list(styles), loc="center right", fontsize=9)
    fig.suptitle(title, fontsize=12)
    # margins in inches (tick labels and the y label left, the legend right, the title above, the x label and a
    # footnote below): tight_layout would measure every label of every panel instead, most of a picture's time
    width, height = fig.get_size_inches()
    fig.subplots_adjust(left=0.85 / width, right=1 - 1.9 / width, bottom=0.75 / height, top=1 - 0.7 / height,
                        wspace=0.32, hspace=0.3)
    return fig


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tsv", help="a trainer's fp8_diag.tsv")
    parser.add_argument("--out-dir", required=True, help="folder for the PNGs (created if missing)")
    parser.add_argument("--prefix", default="fp8", help="file name prefix of the PNGs (default fp8)")
    parser.add_argument("--title", default="", help="what the run was, shown above every picture")
    parser.add_argument("--dpi", type=int, default=100, help="resolution of the PNGs (default 100)")
    args = parser.parse_args()
    rows = read_diag(args.tsv)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import numpy as np
        from matplotlib.colors import LogNorm
    except ImportError:
        die("matplotlib and numpy are not importable: run `make deps`")
    os.makedirs(args.out_dir, exist_ok=True)
    data, steps = series(rows)
    run = f"{args.title}: " if args.title else ""
    written = []

    def save(fig, name):
        path = os.path.join(args.out_dir, f"{args.prefix}_{name}.png")
        fig.savefig(path, dpi=args.dpi)
        plt.close(fig)
        written.append(path)

    few = len(steps) <= 40  # few diagnostics lines: mark every point, so that even a single one shows

    def draw_amax(ax, per_layer, color_of):
        for layer, cols in sorted(per_layer.items()):
            ax.plot(steps, cols["amax"], color=color_of(layer), linewidth=1.4, marker="o" if few else None,
                    markersize=3)
            ax.plot(steps, cols["window_amax"], color=color_of(layer), linewidth=1.2, linestyle="--",
                    marker="x" if few else None, markersize=4)

    styles = [plt.Line2D([], [], color="grey", linewidth=1.4, marker="o" if few else None, markersize=3,
                         label="step amax"),
              plt.Line2D([], [], color="grey", linewidth=1.2, linestyle="--", marker="x" if few else None,
                         markersize=4, label="window amax")]
    fig = grid_figure(plt, data, steps, draw_amax,
                      f"{run}amax of the step (solid) and amax the scale came from (dashed)", "amax", "log", styles)
    save(fig, "amax")

    # per-tensor recipes: the one scale; block recipes (every scale nan): the range of the block scales
    block_scaled = all(r["scale"] != r["scale"] for r in rows)

    def draw_scale(ax, per_layer, color_of):
        for layer, cols in sorted(per_layer.items()):
            if not block_scaled:
                ax.plot(steps, cols["scale"], color=color_of(layer), linewidth=1.4, marker="o" if few else None,
                        markersize=3)
                continue
            ax.plot(steps, cols["block_scale_min"], color=color_of(layer), linewidth=1.4,
                    marker="o" if few else None, markersize=3)
            ax.plot(steps, cols["block_scale_max"], color=color_of(layer), linewidth=1.2, linestyle="--",
                    marker="x" if few else None, markersize=4)
            ax.fill_between(steps, cols["block_scale_min"], cols["block_scale_max"], color=color_of(layer), alpha=0.12)

    if block_scaled:
        styles = [plt.Line2D([], [], color="grey", linewidth=1.4, marker="o" if few else None, markersize=3,
                             label="smallest block scale"),
                  plt.Line2D([], [], color="grey", linewidth=1.2, linestyle="--", marker="x" if few else None,
                             markersize=4, label="largest block scale")]
        fig = grid_figure(plt, data, steps, draw_scale,
                          f"{run}block scales (FP8 value = x * its block's scale): smallest (solid) and largest "
                          f"(dashed) over the blocks", "block scale", "log", styles)
    else:
        fig = grid_figure(plt, data, steps, draw_scale,
                          f"{run}scale (FP8 value = x * scale; scale = fp8_max / amax / 2^margin)", "scale", "log")
    save(fig, "scale")

    # fractions: mostly 0, with rare values over orders of magnitude: a log axis with a dot for each non-zero value
    # (a step without a dot had none)
    def draw_fraction(column):
        def draw(ax, per_layer, color_of):
            for layer, cols in sorted(per_layer.items()):
                points = [(s, 100 * v) for s, v in zip(steps, cols[column]) if v > 0]
                if points:
                    ax.plot(*zip(*points), color=color_of(layer), linestyle="none", marker="o", markersize=3, alpha=0.8)
        return draw

    fig = grid_figure(plt, data, steps, draw_fraction("saturated_frac"),
                      f"{run}saturated: % of the elements cast since the previous line clipped to ±fp8_max "
                      f"(no dot: none)", "% saturated", "log")
    fig.text(0.01, 0.005, "With current scaling x·scale of the largest element can round one float ulp above fp8_max "
             "and is counted here, though the clip changes nothing: the lowest row of dots, one or two elements.",
             fontsize=8, color="dimgrey")
    save(fig, "saturated")
    fig = grid_figure(plt, data, steps, draw_fraction("flushed_frac"),
                      f"{run}flushed: % of the elements cast since the previous line that were non-zero and became 0 "
                      f"(no dot: none)", "% flushed", "log")
    save(fig, "flushed")

    # heatmap: the worst saturated fraction of each layer at each diagnostics step
    layers = sorted({r["layer"] for r in rows}, key=lambda layer: (layer < 0, layer))
    worst = np.zeros((len(layers), len(steps)))
    half = (steps[1] - steps[0]) / 2 if len(steps) > 1 else 0.5
    extent = (steps[0] - half, steps[-1] + half, len(layers) - 0.5, -0.5)  # x in steps, one row per layer
    step_index = {s: i for i, s in enumerate(steps)}
    for r in rows:
        i, j = layers.index(r["layer"]), step_index[r["step"]]
        worst[i, j] = max(worst[i, j], r["saturated_frac"])
    fig, ax = plt.subplots(figsize=(min(14, max(8, 4 + 0.12 * len(steps))), 1.8 + 0.45 * len(layers)))
    percent = 100 * worst
    positive = percent[percent > 0]
    if positive.size:
        norm = LogNorm(vmin=max(positive.min(), positive.max() / 1e4), vmax=positive.max())
        shown = np.ma.masked_where(percent <= 0, percent)
        cmap = plt.get_cmap("magma_r").copy()
        cmap.set_bad("#f4f4f4")
        image = ax.imshow(shown, aspect="auto", cmap=cmap, norm=norm, interpolation="nearest", extent=extent)
        bar = fig.colorbar(image, ax=ax, label="% saturated (grey: none)")
        bar.ax.yaxis.set_major_formatter(short_log_formatter())
        bar.ax.yaxis.set_minor_formatter(short_log_formatter())
    else:
        ax.imshow(np.zeros_like(percent), aspect="auto", cmap="Greys", vmin=0, vmax=1, extent=extent)
        ax.text(0.5, 0.5, "no element saturated at any step", transform=ax.transAxes, ha="center", va="center")
    ax.set_yticks(range(len(layers)))
    ax.set_yticklabels([layer_name(layer) for layer in layers])
    ax.set_xlabel("step")
    ax.set_title(f"{run}worst saturation of each layer\n(% of a tensor's elements clipped, the worst of the layer's GEMMs "
                 f"and tensors)", fontsize=11)
    fig.tight_layout()
    save(fig, "saturation_heatmap")

    for column, what in (("saturated_frac", "saturated"), ("flushed_frac", "flushed")):
        top = max(rows, key=lambda r: r[column])
        print(f"worst {what}: {100 * top[column]:.4g}% at step {top['step']}, {layer_name(top['layer'])} "
              f"{top['gemm']} {top['tensor']} ({top['format']})")
    for path in written:
        print(f"plot: {path}")


if __name__ == "__main__":
    main()
