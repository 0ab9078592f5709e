#!/usr/bin/env bash
# scripts/test_plot_losses.sh — tests plot_losses.py on synthetic logs: a valid PNG, the printed gap of a run that is
# 1% worse reads +1.00%, and each bad input (missing file, a log without train lines, labels not matching logs) exits
# non-zero with a message naming the problem. Prints "plot: N passed, M failed" last.
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
if printf '%s\n' "$out" | grep -q "worse vs base: final val 3.1040 vs 3.0733 (+1.00%)"; then
    pass gap_printed
else
    fail gap_printed "got: $out"
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
finish plot
