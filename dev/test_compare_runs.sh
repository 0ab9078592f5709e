#!/usr/bin/env bash
# dev/test_compare_runs.sh — tests dev/compare_runs (the comparison behind scripts/gpu_check.sh's xcheck stage) on real
# runs of the CPU trainer: two runs with the same flags agree on every quantity; a main.log or a state file doctored
# at one place fails with a line naming the step (or the slot and history row) and the quantity, and only that
# quantity; a tolerance passes a difference just inside it and fails one just outside; the expected skipped step must
# be skipped on both sides; a damaged state file, a missing folder, bad flags and a report stdout cannot take are
# one-line errors with exit 2.
# Prints PASS/FAIL per case and "compare-runs: N passed, M failed" last.
set -u
cd "$(dirname "$0")/.." || exit 1
. scripts/test_lib.sh
COMPARE=./dev/compare_runs
TRAINER=./train_gpt_fp8_cpu
DATA=data/tinyshakespeare
for program in "$COMPARE" "$TRAINER"; do
    if [ ! -x "$program" ]; then fail build "$program missing (make $program)"; finish compare-runs; fi
done
if [ ! -f "$DATA/tiny_shakespeare_train.bin" ] && ! ./dev/data/prepare_tinyshakespeare.sh >/dev/null; then
    fail data "could not prepare $DATA"
    finish compare-runs
fi
DATA_FLAGS=(-i "$DATA/tiny_shakespeare_train.bin" -j "$DATA/tiny_shakespeare_val.bin" -tk "$DATA/tokenizer.bin")
# the xcheck stage's run, smaller: 2 micro-steps a step, a NaN gradient at step 4, a val loss every 4 steps, FP8
# delayed scaling with a history longer than the run (rows still 0 must be 0 on both sides)
RUN_FLAGS=("${DATA_FLAGS[@]}" -L 2 -C 64 -NH 4 -b 4 -t 32 -d 256 -x 12 -v 4 -m 2 -s 0 -l 1e-3 -u 3 -seed 1337
    -debug_nan_step 3 -precision fp8 -fp8_amax_history_len 16 -fp8_diag_every 0)
for run in a b; do
    if ! $TRAINER "${RUN_FLAGS[@]}" -o "$TMP/$run" >"$TMP/$run.out" 2>&1; then
        fail "run_$run" "the trainer failed: $(tail -n 2 "$TMP/$run.out")"
        finish compare-runs
    fi
done

# compare NAME EXPECTED_RC GREP_PATTERN [FLAGS...] RUN REFERENCE: runs compare_runs; the exit code must be
# EXPECTED_RC and the output must hold a line matching GREP_PATTERN (extended regex)
compare() {
    local name=$1 want_rc=$2 pattern=$3
    shift 3
    "$COMPARE" "$@" >"$TMP/out" 2>&1
    local rc=$?
    if [ "$rc" -eq "$want_rc" ] && grep -qE "$pattern" "$TMP/out"; then
        pass "$name"
    else
        fail "$name" "exit $rc (want $want_rc), no line matching '$pattern' in: $(head -c 1500 "$TMP/out")"
    fi
}
# failed_quantities: the quantities the last comparison failed, one line
failed_quantities() { grep -E '^FAIL ' "$TMP/out" | sed -E 's/^FAIL ([^:]*):.*/\1/' | paste -sd '|' -; }

compare same_runs_agree 0 '^compare_runs: 9 passed, 0 failed$' -skipped 4 "$TMP/a" "$TMP/b"
if grep -qE '^PASS skipped steps: 4 on both sides, as -skipped 4$' "$TMP/out" &&
    grep -qE '^PASS FP8 backward slots .*largest relative difference 0 ' "$TMP/out"; then
    pass same_runs_report
else
    fail same_runs_report "$(cat "$TMP/out")"
fi
# a report that cannot be written (stdout on /dev/full) is an error (2), never a verdict: not 0, and not 1 either
if [ -w /dev/full ]; then
    "$COMPARE" -skipped 4 "$TMP/a" "$TMP/b" >/dev/full 2>"$TMP/out"
    rc=$?
    if [ "$rc" -eq 2 ] && grep -qE '^compare_runs: error: cannot write the report to stdout: ' "$TMP/out"; then
        pass report_to_full_disk
    else
        fail report_to_full_disk "exit $rc (want 2): $(cat "$TMP/out")"
    fi
fi

# doctor_log NAME SED_EXPRESSION: a copy of run b with its main.log edited, in $TMP/NAME
doctor_log() {
    rm -rf "${TMP:?}/$1" && cp -r "$TMP/b" "$TMP/$1" && sed -i -E "$2" "$TMP/$1/main.log"
}
doctor_log train7 's/^s:7 trl:[0-9.]+ /s:7 trl:9.9999 /'
compare doctored_train_loss 1 '^  FAIL train loss at step 7: 9\.9999 vs ' -skipped 4 "$TMP/train7" "$TMP/a"
if [ "$(failed_quantities)" = "train loss" ]; then pass doctored_train_loss_only; else fail doctored_train_loss_only "$(failed_quantities)"; fi
doctor_log val8 's/^s:8 tel:[0-9.]+$/s:8 tel:1.0000/'
compare doctored_val_loss 1 '^  FAIL val loss at step 8: 1 vs ' "$TMP/val8" "$TMP/a"
doctor_log first 's/^s:1 trl:[0-9.]+ /s:1 trl:1.2345 /'
compare doctored_first_train_loss 1 '^  FAIL train loss of step 1 at step 1: 1\.2345 vs ' "$TMP/first" "$TMP/a"
doctor_log norm5 's/^(s:5 trl:[0-9.]+ lr:[0-9.]+) norm:[0-9.]+$/\1 norm:99.00/'
compare doctored_norm 1 '^  FAIL gradient norm at step 5: 99 vs ' "$TMP/norm5" "$TMP/a"
doctor_log lr6 's/^(s:6 trl:[0-9.]+) lr:[0-9.]+/\1 lr:0.123456/'
compare doctored_learning_rate 1 '^  FAIL learning rate at step 6: 0\.123456 vs ' "$TMP/lr6" "$TMP/a"
doctor_log missing9 '/^s:9 trl:/d'
compare missing_step 1 '^  FAIL train loss at step 9: in REFERENCE only' "$TMP/missing9" "$TMP/a"
# a step skipped on one side only (its norm not finite), and a run that skipped no step while -skipped expects one
doctor_log skip8 's/^(s:8 trl:[0-9.]+ lr:[0-9.]+) norm:[0-9.]+$/\1 norm:nan/'
compare skipped_one_side 1 '^  FAIL step 8 skipped \(gradient norm nan vs [0-9.]+\) in RUN only' "$TMP/skip8" "$TMP/a"
doctor_log noskip 's/^(s:4 trl:[0-9.]+ lr:[0-9.]+) norm:nan$/\1 norm:1.00/'
cp "$TMP/noskip/main.log" "$TMP/noskip_main.log"
rm -rf "$TMP/noskip2" && cp -r "$TMP/a" "$TMP/noskip2" && cp "$TMP/noskip_main.log" "$TMP/noskip2/main.log"
compare expected_skip_missing 1 '^  FAIL step 4 not skipped on both sides, -skipped 4' -skipped 4 "$TMP/noskip" \
    "$TMP/noskip2"

# tolerances: train loss at step 7 moved by 1% of its value: fails at 0.9%, passes at 1.1% (the resolution 1e-4 is
# added to both)
loss7=$(sed -nE 's/^s:7 trl:([0-9.]+) .*/\1/p' "$TMP/b/main.log")
moved=$(awk -v v="$loss7" 'BEGIN { printf "%.4f", v * 1.01 }')
doctor_log moved7 "s/^s:7 trl:[0-9.]+ /s:7 trl:$moved /"
compare tolerance_just_outside 1 '^  FAIL train loss at step 7: ' -loss 0.0085 "$TMP/moved7" "$TMP/a"
compare tolerance_just_inside 0 '^PASS train loss: .*largest relative difference 0\.01 \(step 7: ' -loss 0.0115 "$TMP/moved7" "$TMP/a"

# the state file: one history entry and one scale doctored, the checksum recomputed (llmc/checkpoint.h's XXH3-64 of
# every byte before it, by xxHash's Python binding), so that the file reads and the comparison sees the values
doctor_state() {  # doctor_state NAME INDEX FACTOR [INDEX FACTOR]: meta floats multiplied, in a copy of run b
    rm -rf "${TMP:?}/$1" && cp -r "$TMP/b" "$TMP/$1"
    local name=$1
    shift
    python3 - "$TMP/$name/state_00000012_00000.bin" "$@" <<'PY'
import struct, sys, xxhash
path, edits = sys.argv[1], sys.argv[2:]
data = bytearray(open(path, "rb").read())
header = struct.unpack_from("<256i", data)
modules, rows = header[5], header[6]
opt_count = struct.unpack_from("<q", data, 32 * 4)[0]
meta = 1024 + 2 * 4 * opt_count  # after the header and the AdamW moments
for index, factor in zip(edits[0::2], edits[1::2]):
    at = meta + 4 * int(index)
    value = struct.unpack_from("<f", data, at)[0]
    struct.pack_into("<f", data, at, value * float(factor))
struct.pack_into("<Q", data, len(data) - 8, xxhash.xxh3_64_intdigest(bytes(data[:-8])))
open(path, "wb").write(bytes(data))
PY
}
# L 2: M = 9 modules, S = 45 slots; slot 12 = block 1 qkv input (module 4, forward tensor 0); row 10 of 16 (11
# updates: rows 5 to 15 hold amaxes, rows 0 to 4 are still 0); the scale
# row follows the 16 history rows; slot 27 + 8 = 35: block 1 qkv grad_output (backward slots start at 3M = 27)
doctor_state state_history $((10 * 45 + 12)) 1.5
compare doctored_history 1 '^  FAIL FP8 forward slots \(amax histories, scales\) at slot 12 \(block 1 qkv input\) history row 10: ' \
    "$TMP/state_history" "$TMP/a"
if [ "$(failed_quantities)" = "FP8 forward slots (amax histories, scales)" ]; then
    pass doctored_history_only
else
    fail doctored_history_only "$(failed_quantities)"
fi
doctor_state state_scale $((16 * 45 + 35)) 1.25
compare doctored_scale 1 '^  FAIL FP8 backward slots \(amax histories, scales\) at slot 35 \(block 1 qkv grad_output\) scale: ' \
    "$TMP/state_scale" "$TMP/a"
compare doctored_scale_within 0 '^PASS FP8 backward slots .*largest relative difference 0\.25 ' -fp8_backward 0.26 \
    "$TMP/state_scale" "$TMP/a"
# a history row that is 0 on one side only: a step recorded or rolled on one side only fails whatever the tolerance
doctor_state state_zero $((15 * 45 + 12)) 0
compare zero_on_one_side 1 'slot 12 \(block 1 qkv input\) history row 15: 0 vs [0-9.e-]+ \(0 on one side only\)' \
    -fp8_forward 1e9 "$TMP/state_zero" "$TMP/a"

# a damaged state file (a byte flipped, the checksum not recomputed): exit 2, one line naming the file
rm -rf "$TMP/damaged" && cp -r "$TMP/b" "$TMP/damaged"
printf '\x7f' | dd of="$TMP/damaged/state_00000012_00000.bin" bs=1 seek=5000 conv=notrunc 2>/dev/null
compare damaged_state 2 "^compare_runs: error: $TMP/damaged/state_00000012_00000.bin: corrupt state file \(checksum mismatch\)" \
    "$TMP/damaged" "$TMP/a"
# checkpoints of different runs: another recipe
$TRAINER "${RUN_FLAGS[@]}" -fp8_margin 1 -o "$TMP/margin" >"$TMP/margin.out" 2>&1
compare other_recipe 1 '^  FAIL .*differ in their FP8 recipe settings' "$TMP/margin" "$TMP/a"

# bad arguments: exit 2, nothing on stdout, one line on stderr
expect_usage_error() {
    local name=$1
    shift
    "$COMPARE" "$@" >"$TMP/stdout" 2>"$TMP/stderr"
    local rc=$?
    if [ "$rc" -eq 2 ] && [ ! -s "$TMP/stdout" ] && [ "$(wc -l <"$TMP/stderr")" -eq 1 ]; then
        pass "$name"
    else
        fail "$name" "exit $rc, stdout '$(cat "$TMP/stdout")', stderr '$(cat "$TMP/stderr")'"
    fi
}
expect_usage_error one_folder "$TMP/a"
expect_usage_error missing_folder "$TMP/a" "$TMP/no_such_run"
expect_usage_error bad_tolerance -loss -1 "$TMP/a" "$TMP/b"
expect_usage_error unknown_flag -bogus 1 "$TMP/a" "$TMP/b"
expect_usage_error bad_skipped -skipped 4,x "$TMP/a" "$TMP/b"
printf 's:1 trl:6.0 lr:0.1 norm:1.0\ngarbage\n' >"$TMP/garbage.log"
rm -rf "$TMP/garbage" && cp -r "$TMP/b" "$TMP/garbage" && cp "$TMP/garbage.log" "$TMP/garbage/main.log"
expect_usage_error garbage_log "$TMP/garbage" "$TMP/a"

finish compare-runs
