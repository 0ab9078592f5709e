# scripts/test_lib.sh — sourced by the shell tests: PASS/FAIL lines, a temporary folder removed on exit, and the
# closing "<suite>: N passed, M failed" line that scripts/run_tests.sh adds up.
passed=0
failed=0
pass() { echo "PASS $1"; passed=$((passed + 1)); }
fail() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
# finish SUITE: print the summary and exit non-zero if anything failed
finish() {
    echo "$1: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
    exit $?
}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# make_shard PATH MAGIC VERSION NTOK VALUE [TRUNCATE]: an llm.c data shard of NTOK tokens 7, token 10 set to VALUE,
# with the header's magic and version given (and TRUNCATE bytes cut off the end), for the data tests
make_shard() {  # path, magic, version, ntok, token value, [truncate bytes]
    python3 - "$@" <<'EOF'
import struct, sys
path, magic, version, ntok, value = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
header = [0] * 256
header[0], header[1], header[2] = magic, version, ntok
tokens = [7] * ntok
tokens[10] = value  # inside the first batch
data = struct.pack("<256i", *header) + struct.pack(f"<{ntok}H", *tokens)
if len(sys.argv) > 6:
    data = data[: len(data) - int(sys.argv[6])]
open(path, "wb").write(data)
EOF
}

# trainer_suite_setup SUITE: for a suite that runs $TRAINER on the default dataset (prepared when missing): DATA, the
# flags that name its files (DATA_FLAGS) and a tiny model on them (TINY); a missing trainer or dataset ends the suite
# with one failure
trainer_suite_setup() {
    DATA=data/tinyshakespeare
    if [ ! -x "$TRAINER" ]; then fail build "$TRAINER missing (make $(basename "$TRAINER"))"; finish "$1"; fi
    if [ ! -f "$DATA/tiny_shakespeare_train.bin" ] && ! ./dev/data/prepare_tinyshakespeare.sh >/dev/null; then
        fail data "could not prepare $DATA"
        finish "$1"
    fi
    DATA_FLAGS="-i $DATA/tiny_shakespeare_train.bin -j $DATA/tiny_shakespeare_val.bin -tk $DATA/tokenizer.bin"
    TINY="$DATA_FLAGS -L 2 -C 64 -NH 4 -b 8 -t 64 -s 0 -seed 1337"
}

# resume_case NAME FLAGS...: $TRAINER on $TINY in FP8 with FLAGS, straight vs killed + resumed, every output file
# byte for byte (test_train_gpt_fp8.sh on the CPU trainer; dev/cuda/emulate/run_emulated.sh on the GPU's). The kill
# comes at the start of step 9: after the checkpoint of step 6 (whose val line is already in main.log), after the
# diagnostics block of step 8 and the train lines of steps 7..9, on neither a checkpoint nor a diagnostics step; a torn
# last line (a kill mid-write) is appended too. The resume must cut both logs back to step 6, restore the diagnostics
# state of steps 5 and 6 from the checkpoint, and end with the same files as the run never interrupted.
resume_case() {  # name, trainer flags...
    local name=$1 killed_rc resumed_rc killed_state
    shift
    local flags="$TINY -precision fp8 $* -x 20 -n 6 -v 6 -m 2 -l 1e-3 -fp8_diag_every 4"
    local a="$TMP/straight_$name" b="$TMP/resumed_$name"
    $TRAINER $flags -o "$a" >"$a.out" 2>&1
    { $TRAINER $flags -o "$b" -debug_kill_step 9 >"$TMP/killed_$name.out" 2>&1; } 2>/dev/null  # it SIGKILLs itself
    killed_rc=$?
    killed_state="latest DONE $(ls "$b" | grep DONE | tail -n 1), last train line $(grep trl "$b/main.log" | tail -n 1 | cut -d' ' -f1), last diag step $(tail -n 1 "$b/fp8_diag.tsv" | cut -f1)"
    printf 's:1' >>"$b/main.log"
    $TRAINER $flags -o "$b" -y 1 >"$b.out" 2>&1
    resumed_rc=$?
    if [ "$killed_rc" -ne 0 ] && [ "$killed_state" = "latest DONE DONE_00000006, last train line s:9, last diag step 8" ] &&
        [ "$resumed_rc" -eq 0 ] && grep -q "resumed from .*model_00000006.bin at step 6" "$b.out" &&
        [ "$(ls "$a")" = "$(ls "$b")" ] && diff -r -q "$a" "$b" >/dev/null; then
        pass "resume_every_file_byte_identical_$name ($(ls "$a" | wc -l) files)"
    else
        fail "resume_every_file_byte_identical_$name" "killed rc $killed_rc ($killed_state), resumed rc $resumed_rc; $(diff -r -q "$a" "$b" | head -n 3 | tr '\n' ' ') $(diff "$a/main.log" "$b/main.log" | head -n 4 | tr '\n' ' ')"
    fi
}
