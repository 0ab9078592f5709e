#!/usr/bin/env python3
"""scripts/profile_step.py — where one training step's GPU time goes: Nsight Compute's duration of every kernel of the
step, summed by kind (GEMMs, attention, FP8 casts, LayerNorm, ...) and by kernel, for one or more runs side by side,
against each run's ms/step measured without the profiler (the difference is time the GPU spent outside kernels:
launch gaps, host work, copies and memsets; and a GPU under steady load may run its kernels at a lower clock than ncu's,
timed one by one: gpu_check's profile_clocks rows say which clock the timed steps had).

    profile_step.py [--top N] [--out FILE.md] [--brief] --label bf16 [--step-ms 114.6] [--clock-mhz 1709] bf16.csv \\
                    --label fp8 [--step-ms 110.6] [--clock-mhz 1776] fp8.csv

How a CSV is made (scripts/gpu_check.sh's profile stage does this):

    ncu --profile-from-start off --clock-control none --cache-control none \\
        --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second \\
        --force-overwrite --export fp8 ./train_gpt_fp8 ... -x 3 -profile_step 3
    ncu --import fp8.ncu-rep --csv --page raw --print-units base \\
        --metrics gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second > fp8.csv

The trainer calls cudaProfilerStart and cudaProfilerStop around step 3 only, so the report holds that step's kernels
(forward, backward, norm, update, weight casts), each run alone (ncu serializes kernels), with the GPU's clocks and
caches left as they are. CSV layout (ncu's raw page): a header row naming the columns ("Kernel Name",
"gpu__time_duration.sum", ...), a row of units ("nsecond", "usecond", "msecond" or "second" for the duration), then one
row per kernel. Values may carry thousands separators. Columns are found by name, so extra ones do no harm.

The SM clock: where the CSV has sm__cycles_elapsed.avg.per_second (each kernel's elapsed SM cycles over its duration:
the clock it ran at under ncu), each run gets its kernels' time-weighted mean clock. Given --clock-mhz, the mean SM
clock of the run's timed steps (nvidia-smi's, gpu_check's profile_clocks row), it bounds how much of "step - sum" the
clock explains: a kernel timed at f MHz under ncu takes at most t * f / F at the steps' F < f (a clock-bound kernel
exactly that, a memory-bound one less: the memory clock does not move with the SM's), so "kernels' sum at the steps'
clock, at most" is the sum of t * max(1, f / F), and step minus that is a lower bound on the time outside kernels
(launch gaps, host work, copies). F is the sampler's mean over the whole timed run, warm-up steps included: where the
clock fell as the GPU warmed up, the measured steps ran a little below F and the bound is a little short of safe, so
read a bound near 0 as "the clock explains it" and only a clear margin as idle time. A kernel without a clock value
leaves the bound out; a clock column in a unit not known here is left out with a warning on stderr.

Kinds are read off the kernel names (KINDS below: cuBLASLt's nvjet/xmma/cutlass kernels are GEMMs, cuDNN's sdpa
kernels attention, this project's kernels by their names); a kernel no pattern knows is "other" and is listed by name.
The FP8 cast kernel with GELU or LayerNorm inside (llmc/gelu_fp8.cuh, llmc/layernorm_fp8.cuh: its template argument
names the input, GeluForwardInput, GeluBackwardInput or LayerNormInput) is listed as
"fp8_cast_transpose_amax_kernel[GeluForwardInput]" and counted as "gelu + fp8 cast" or "layernorm + fp8 cast", apart
from the plain casts; so is blockwise's block cast with GELU, GELU's backward or LayerNorm inside
(fp8/block_quantize.cuh: its last template argument 1, 2 or 3), as "fp8_block_cast_kernel[GeluForwardInput]",
"[GeluBackwardInput]" or "[LayerNormInput]"; and current scaling's amax pass over such an input
(fp8_amax_scale_kernel[GeluForwardInput], beside its fused cast). The residual add in LayerNorm's pass
(residual_layernorm_forward_rows_kernel) counts as layernorm.
Prints the Markdown tables (also into --out): kinds per run with the difference to the first run, then each run's
--top kernels (default 15). --brief prints instead one line per run ("fp8: 600 kernels, 95.100 ms of 110.600
ms/step; gemm 38.000, ...": its three largest kinds) and one per run after the first with its differences to the
first ("fp8 - bf16: kernels -16.000 ms, step -4.000 ms; gemm -23.200, fp8 cast +9.300, ...": the three largest
changes); with clocks, the run's line says them and the bound: "bf16: N kernels, K ms at F MHz of S ms/step at G MHz,
>= X ms outside kernels; ...". Exit status 1 with one line on stderr for a missing file, a CSV without the columns, a
duration that is not a number, a run with no kernel rows (the profiled step was never reached), or a bad option value.
"""
import csv
import re
import sys

TIME_METRIC = "gpu__time_duration.sum"
NAME_COLUMN = "Kernel Name"
UNIT_TO_MS = {"nsecond": 1e-6, "ns": 1e-6, "usecond": 1e-3, "us": 1e-3, "msecond": 1.0, "ms": 1.0, "second": 1e3,
              "s": 1e3}
CLOCK_METRIC = "sm__cycles_elapsed.avg.per_second"
# ncu's base unit for a frequency is cycle/second; its scaled units and the Hz names as well, compared in lower case
UNIT_TO_MHZ = {"cycle/second": 1e-6, "cycle/msecond": 1e-3, "cycle/usecond": 1.0, "cycle/nsecond": 1e3, "hz": 1e-6,
               "khz": 1e-3, "mhz": 1.0, "ghz": 1e3}

# (kind, pattern searched in the kernel's base name), first match wins: the library kernels first, then ours by the
# names in fp8/*.cuh and llmc/*.cuh
KINDS = [
    ("gemm", re.compile(r"nvjet|gemm|xmma|cutlass|splitkreduce|cublas", re.I)),
    ("attention", re.compile(r"sdpa|fmha|flash|cudnn|^attention_|causal_softmax", re.I)),
    ("gelu + fp8 cast", re.compile(r"\[Gelu\w*Input\]$")),
    ("layernorm + fp8 cast", re.compile(r"\[LayerNormInput\]$")),
    ("fp8 cast", re.compile(r"^fp8_(cast|block_cast|amax_scale)")),
    ("fp8 scale update", re.compile(r"^fp8_(update|window_amax)")),
    ("layernorm", re.compile(r"^(residual_)?layernorm_")),
    ("gelu", re.compile(r"^gelu_")),
    ("residual", re.compile(r"^residual_")),
    ("bias", re.compile(r"^bias_")),
    ("column sums", re.compile(r"^column_partials")),
    ("embedding", re.compile(r"^encoder_")),
    ("classifier + loss", re.compile(r"^fused_classifier")),
    ("optimizer", re.compile(r"^(adamw|norm_squared_partials|sum_partials|float_to_bf16|restore_if_step_skipped)")),
    ("nccl", re.compile(r"nccl", re.I)),
]
OTHER = "other"
KIND_ORDER = [kind for kind, _ in KINDS] + [OTHER]


def die(message):
    print(f"profile_step: error: {message}", file=sys.stderr)
    sys.exit(1)


# the input a cast kernel's template argument names, where it is not the plain bf16 tensor (fp8/quantize.cuh's Input)
FUSED_INPUT = re.compile(r"\b(Gelu\w*Input|LayerNormInput)\b")
# fp8/block_quantize.cuh's block cast: its last template argument MADE, 1 GELU inside, 2 GELU's backward, 3 LayerNorm
BLOCK_CAST_MADE = re.compile(r"^(?:void )?fp8_block_cast_kernel<[^<>]*,\s*(?:\(int\))?([123])>")
BLOCK_CAST_MADE_INPUT = {"1": "GeluForwardInput", "2": "GeluBackwardInput", "3": "LayerNormInput"}


def base_name(name):
    """'void ns::foo_kernel<__nv_fp8_e4m3, (bool)1>(const float *, int)' -> 'ns::foo_kernel': no return type, no
    template arguments, no parameter list (cuBLASLt's and cuDNN's extern "C" names pass unchanged); a cast with GELU
    or LayerNorm inside keeps its input's name: 'fp8_cast_transpose_amax_kernel[GeluBackwardInput]', and a block cast
    with GELU, its backward or LayerNorm inside the name of the per-tensor cast's input:
    'fp8_block_cast_kernel[GeluForwardInput]'."""
    fused = FUSED_INPUT.search(name)
    base = plain_base_name(name)
    block_made = BLOCK_CAST_MADE.search(name.strip())
    if block_made:
        return f"{base}[{BLOCK_CAST_MADE_INPUT[block_made.group(1)]}]"
    return f"{base}[{fused.group(1)}]" if fused else base


def plain_base_name(name):
    name = name.replace("(anonymous namespace)", "anonymous_namespace").strip()
    out, depth = [], 0
    for ch in name:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth > 0:
            depth -= 1
        elif depth == 0:
            if ch == "(":
                break  # the parameter list
            out.append(ch)
    words = "".join(out).split()
    return words[-1] if words else name


def kind_of(base):
    for kind, pattern in KINDS:
        if pattern.search(base):
            return kind
    return OTHER


def number(text, path, line):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        die(f"{path}: row {line}: the duration '{text}' is not a number")


def clock_number(text):
    """A clock value as a positive float, or None (ncu writes "n/a" where it has none)."""
    try:
        value = float(text.replace(",", ""))
    except ValueError:
        return None
    return value if value > 0 and value != float("inf") else None


def read_profile(path):
    """[(base name, ms, SM clock MHz or None)] for every kernel row of ncu's raw-page CSV at path, in order."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError as e:
        die(f"cannot read {path}: {e.strerror}")
    # ncu may print lines of its own before the table ("==PROF==" notes): the header is the first row naming both
    header_at = next((i for i, row in enumerate(rows) if NAME_COLUMN in row and TIME_METRIC in row), None)
    if header_at is None:
        die(f"{path} has no header row with '{NAME_COLUMN}' and '{TIME_METRIC}' (ncu --csv --page raw --metrics "
            f"{TIME_METRIC})")
    header = rows[header_at]
    name_col, time_col = header.index(NAME_COLUMN), header.index(TIME_METRIC)
    if header_at + 1 >= len(rows) or len(rows[header_at + 1]) <= time_col:
        die(f"{path} has no units row under its header")
    unit = rows[header_at + 1][time_col].strip()
    if unit not in UNIT_TO_MS:
        die(f"{path}: unknown unit '{unit}' for {TIME_METRIC} (expected one of {', '.join(UNIT_TO_MS)})")
    clock_col, to_mhz = None, None
    if CLOCK_METRIC in header:
        clock_col = header.index(CLOCK_METRIC)
        clock_unit = rows[header_at + 1][clock_col].strip() if len(rows[header_at + 1]) > clock_col else ""
        to_mhz = UNIT_TO_MHZ.get(clock_unit.lower())
        if to_mhz is None:
            print(f"profile_step: warning: {path}: unknown unit '{clock_unit}' for {CLOCK_METRIC} (expected one of "
                  f"{', '.join(UNIT_TO_MHZ)}): the SM clocks are left out", file=sys.stderr)
            clock_col = None
    kernels = []
    for line, row in enumerate(rows[header_at + 2 :], start=header_at + 3):
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) <= max(name_col, time_col, clock_col if clock_col is not None else 0):
            die(f"{path}: row {line} has {len(row)} columns, the header {len(header)}")
        mhz = None
        if clock_col is not None:
            value = clock_number(row[clock_col])
            mhz = value * to_mhz if value is not None else None
        kernels.append((base_name(row[name_col]), number(row[time_col], path, line) * UNIT_TO_MS[unit], mhz))
    if not kernels:
        die(f"{path} has no kernel rows: the profiled step was never reached (-profile_step past -x?) or ncu recorded "
            "nothing (--profile-from-start off needs the trainer's -profile_step)")
    return kernels


class Run:
    def __init__(self, label, path, step_ms, clock_mhz):
        self.label, self.path, self.step_ms, self.clock_mhz = label, path, step_ms, clock_mhz
        self.kernels = read_profile(path)
        self.total_ms = sum(ms for _, ms, _ in self.kernels)
        self.by_kind, self.by_kernel = {}, {}
        for name, ms, _ in self.kernels:
            kind = kind_of(name)
            self.by_kind[kind] = self.by_kind.get(kind, 0.0) + ms
            calls, total = self.by_kernel.get(name, (0, 0.0))
            self.by_kernel[name] = (calls + 1, total + ms)
        # ncu's SM clock, time-weighted over the kernels that have one; None where none has
        clocked = [(ms, mhz) for _, ms, mhz in self.kernels if mhz is not None]
        clocked_ms = sum(ms for ms, _ in clocked)
        self.ncu_mhz = sum(ms * mhz for ms, mhz in clocked) / clocked_ms if clocked_ms > 0 else None
        # the kernels' sum at the timed steps' clock, at most (the module's docstring says why): only where every
        # kernel has its clock and the steps' clock is known
        self.bound_ms = None
        if clock_mhz is not None and len(clocked) == len(self.kernels):
            self.bound_ms = sum(ms * max(1.0, mhz / clock_mhz) for ms, mhz in clocked)

    def outside_at_least(self):
        """step - the kernels' sum at the steps' clock, at most: the time outside kernels, at least; None if unknown"""
        return self.step_ms - self.bound_ms if self.step_ms is not None and self.bound_ms is not None else None


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def share(ms, total):
    return f"{ms:.3f} ({100.0 * ms / total:.1f}%)" if total > 0 else f"{ms:.3f}"


def kinds_table(runs):
    first = runs[0]
    header = ["kind"] + [f"{r.label} ms (share)" for r in runs] + [f"{r.label} - {first.label}" for r in runs[1:]]
    seen = [k for k in KIND_ORDER if any(k in r.by_kind for r in runs)]
    rows = []
    for kind in sorted(seen, key=lambda k: -max(r.by_kind.get(k, 0.0) for r in runs)):
        row = [kind] + [share(r.by_kind.get(kind, 0.0), r.total_ms) for r in runs]
        row += [f"{r.by_kind.get(kind, 0.0) - first.by_kind.get(kind, 0.0):+.3f}" for r in runs[1:]]
        rows.append(row)
    rows.append(["**kernels' sum**"] + [f"{r.total_ms:.3f}" for r in runs] +
                [f"{r.total_ms - first.total_ms:+.3f}" for r in runs[1:]])
    rows.append(["kernels launched"] + [str(len(r.kernels)) for r in runs] +
                [f"{len(r.kernels) - len(first.kernels):+d}" for r in runs[1:]])
    timed = [r.step_ms is not None for r in runs]
    if any(timed):
        rows.append(["step without the profiler"] + [f"{r.step_ms:.3f}" if t else "-" for r, t in zip(runs, timed)] +
                    [f"{r.step_ms - first.step_ms:+.3f}" if t and timed[0] else "-"
                     for r, t in zip(runs[1:], timed[1:])])
        rows.append(["outside kernels (step - sum)"] +
                    [f"{r.step_ms - r.total_ms:.3f}" if t else "-" for r, t in zip(runs, timed)] +
                    ["" for _ in runs[1:]])
    blank = ["" for _ in runs[1:]]
    if any(r.ncu_mhz is not None for r in runs):
        rows.append(["SM clock under ncu, MHz (time-weighted)"] +
                    [f"{r.ncu_mhz:.0f}" if r.ncu_mhz is not None else "-" for r in runs] + blank)
    if any(r.clock_mhz is not None for r in runs):
        rows.append(["SM clock of the timed steps, MHz (nvidia-smi)"] +
                    [f"{r.clock_mhz:.0f}" if r.clock_mhz is not None else "-" for r in runs] + blank)
    if any(r.bound_ms is not None for r in runs):
        rows.append(["kernels' sum at the steps' clock, at most"] +
                    [f"{r.bound_ms:.3f}" if r.bound_ms is not None else "-" for r in runs] + blank)
        rows.append(["outside kernels, at least (step - that)"] +
                    [f"{r.outside_at_least():.3f}" if r.outside_at_least() is not None else "-" for r in runs] +
                    blank)
    return table(header, rows)


def top_table(run, top):
    ranked = sorted(run.by_kernel.items(), key=lambda item: -item[1][1])[:top]
    rows = [[name, kind_of(name), str(calls), f"{ms:.3f}", f"{1000.0 * ms / calls:.1f}",
             f"{100.0 * ms / run.total_ms:.1f}%"] for name, (calls, ms) in ranked]
    return table(["kernel", "kind", "calls", "ms", "mean us", "share"], rows)


def kinds_brief(amounts, signed):
    """The three kinds with the most time (signed: the largest changes), as 'gemm 61.200, attention 20.100'."""
    ranked = sorted(amounts.items(), key=lambda item: (-abs(item[1]), KIND_ORDER.index(item[0])))[:3]
    return ", ".join(f"{kind} {ms:+.3f}" if signed else f"{kind} {ms:.3f}" for kind, ms in ranked)


def brief_lines(runs):
    """One line per run, then one per run after the first with its differences to the first."""
    lines = []
    for r in runs:
        ncu_clock = f" at {r.ncu_mhz:.0f} MHz" if r.ncu_mhz is not None else ""
        step = f" of {r.step_ms:.3f} ms/step" if r.step_ms is not None else ""
        step += f" at {r.clock_mhz:.0f} MHz" if r.step_ms is not None and r.clock_mhz is not None else ""
        outside = r.outside_at_least()
        step += f", >= {outside:.3f} ms outside kernels" if outside is not None else ""
        lines.append(f"{r.label}: {len(r.kernels)} kernels, {r.total_ms:.3f} ms{ncu_clock}{step}; "
                     f"{kinds_brief(r.by_kind, False)}")
    first = runs[0]
    for r in runs[1:]:
        kinds = set(r.by_kind) | set(first.by_kind)
        diff = {k: r.by_kind.get(k, 0.0) - first.by_kind.get(k, 0.0) for k in kinds}
        step = (f", step {r.step_ms - first.step_ms:+.3f} ms" if r.step_ms is not None and first.step_ms is not None
                else "")
        lines.append(f"{r.label} - {first.label}: kernels {r.total_ms - first.total_ms:+.3f} ms{step}; "
                     f"{kinds_brief(diff, True)}")
    return lines


USAGE = ("usage: profile_step.py [--top N] [--out FILE.md] [--brief] [--label NAME] [--step-ms MS] [--clock-mhz MHZ] "
         "FILE.csv ...")


def parse_args(argv):
    """(top, out, brief, [(label, csv path, step ms or None, clock MHz or None)]): each --label, --step-ms and
    --clock-mhz describes the CSV after it."""
    top, out, brief, runs, label, step_ms, clock_mhz = 15, None, False, [], None, None, None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            print(USAGE)
            sys.exit(0)
        if arg == "--brief":
            brief = True
            i += 1
            continue
        if arg in ("--top", "--out", "--label", "--step-ms", "--clock-mhz"):
            if i + 1 >= len(argv):
                die(f"{arg} needs a value ({USAGE})")
            value = argv[i + 1]
            if arg == "--out":
                out = value
            elif arg == "--label":
                label = value
            else:
                try:
                    parsed = int(value) if arg == "--top" else float(value)
                except ValueError:
                    die(f"{arg} '{value}' is not a number")
                if not (parsed > 0 and parsed != float("inf")):
                    die(f"{arg} must be positive (got {value})")
                if arg == "--top":
                    top = parsed
                elif arg == "--step-ms":
                    step_ms = parsed
                else:
                    clock_mhz = parsed
            i += 2
            continue
        if arg.startswith("-"):
            die(f"unknown option {arg} ({USAGE})")
        runs.append((label or arg, arg, step_ms, clock_mhz))
        label, step_ms, clock_mhz = None, None, None
        i += 1
    if label is not None or step_ms is not None or clock_mhz is not None:
        die("--label, --step-ms and --clock-mhz go before the CSV they describe")
    if not runs:
        die(f"no CSV given ({USAGE})")
    return top, out, brief, runs


def main(argv):
    top, out, brief, specs = parse_args(argv)
    runs = [Run(label, path, step_ms, clock_mhz) for label, path, step_ms, clock_mhz in specs]
    parts = ["### One step's GPU time by kind (ms; share of the kernels' sum)", "", kinds_table(runs)]
    for run in runs:
        parts += ["", f"### {run.label}: the {min(top, len(run.by_kernel))} kernels with the most time (all calls "
                  "summed)", "", top_table(run, top)]
    text = "\n".join(parts) + "\n"
    print("\n".join(brief_lines(runs)) if brief else text, end="\n" if brief else "")
    if out:
        try:
            with open(out, "w") as f:
                f.write(text)
        except OSError as e:
            die(f"cannot write {out}: {e.strerror}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
