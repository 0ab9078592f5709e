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
