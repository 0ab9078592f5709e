#!/usr/bin/env bash
# llmc/test_run_data.sh [TRAINER] (MODEL_LOGITS=path: another dev/model_logits) — what a run was trained on (llmc/run_data.h), end to end on the CPU trainer (the
# CUDA one shares every path: run.h, run_data.h, checkpoint.h), and the outputs written through atomic_open:
#   - a run's dataset.txt holds its tokenizer and every shard with sizes and XXH3-64s (checked with xxHash's Python
#     binding, independent of our C); the start-up box shows the tokenizer and its checksum;
#   - a model from a run folder (-e RUN/model_N.bin) is evaluated and sampled with its run's data and tokenizer when
#     -i -j -tk are not given (the val loss is the run's last one); another tokenizer, given or named by the data's
#     manifest, is refused in one line (model_logits too), -other_tokenizer 1 goes on with a warning; a model file
#     without a record is one warning;
#   - -y 1 refuses data or a tokenizer that changed since the run began (-other_data 1 resumes and records the new
#     data); a folder of a run that began before records existed gets one at the resume, saying so;
#   - the steps skipped in a row go on counting across a resume, so -max_skipped stops the resumed run where the
#     uninterrupted one stops;
#   - model_logits' output: a symlink is written through (the link stays), a character device and a FIFO are written
#     in place, a device that refuses writes is an error, a folder is refused.
# Each case failed before the change that added it. Prints PASS/FAIL per case and "run_data: N passed, M failed".
set -u
cd "$(dirname "$0")/.."
TRAINER=${1:-./train_gpt_fp8_cpu}
. scripts/test_lib.sh
trainer_suite_setup run_data  # DATA, DATA_FLAGS, TINY
SMALL="-L 2 -C 64 -NH 4 -b 4 -t 32 -s 0 -seed 1337 -m 2"
FROM_SMALL="-b 4 -t 32 -s 0 -seed 1337 -m 2"  # SMALL for a run from its model file (-e fixes the sizes: refused beside it)
xxh3() { python3 -c "import sys, xxhash; print(xxhash.xxh3_64_hexdigest(open(sys.argv[1], 'rb').read()))" "$1"; }
last_val() { grep -E '^s:[0-9]+ tel:' "$1" | tail -n 1 | sed -E 's/.*tel:([0-9.]+).*/\1/'; }

# A dataset of another text with a tokenizer of its own, of the same vocabulary size as tinyshakespeare's (1024):
# tinyshakespeare with every letter shifted by one, so the model files fit both tokenizers and only a check tells.
OTHER="$TMP/other"
mkdir -p "$OTHER"
./dev/data/tokenizer decode -k "$DATA/tokenizer.bin" -i "$DATA/tiny_shakespeare_val.bin" -o "$OTHER/in.txt" &&
    tr 'a-y' 'b-z' <"$OTHER/in.txt" >"$OTHER/shifted.txt"
./dev/data/tokenizer train -i "$OTHER/shifted.txt" -o "$OTHER" -v 1024 >/dev/null &&
    ./dev/data/tokenizer encode -i "$OTHER/shifted.txt" -k "$OTHER/tokenizer.bin" -o "$OTHER/other" >/dev/null ||
    { fail other_dataset "could not make the second dataset"; finish run_data; }
OTHER_FLAGS="-i $OTHER/other_train.bin -j $OTHER/other_val.bin"

# ---------------------------------------------------------------------------------------------------------------------
# the record: every file with its size and XXH3-64
$TRAINER $SMALL $OTHER_FLAGS -x 4 -v 4 -o "$TMP/run" >"$TMP/run.out" 2>&1
rc=$?
rec="$TMP/run/dataset.txt"
want=$(printf 'gptfp8 run data 1\ntokenizer\t%s\t%s\t%s\ntrain\t%s\nval\t%s\ntrain_shard\t%s\t%s\t%s\nval_shard\t%s\t%s\t%s' \
    "$(stat -c %s "$OTHER/tokenizer.bin")" "$(xxh3 "$OTHER/tokenizer.bin")" "$(realpath "$OTHER/tokenizer.bin")" \
    "$(realpath "$OTHER")/other_train.bin" "$(realpath "$OTHER")/other_val.bin" \
    "$(stat -c %s "$OTHER/other_train.bin")" "$(xxh3 "$OTHER/other_train.bin")" "$(realpath "$OTHER/other_train.bin")" \
    "$(stat -c %s "$OTHER/other_val.bin")" "$(xxh3 "$OTHER/other_val.bin")" "$(realpath "$OTHER/other_val.bin")")
if [ "$rc" -eq 0 ] && [ "$(cat "$rec" 2>/dev/null)" = "$want" ] &&
    grep -q "^| tokenizer  *| $OTHER/tokenizer.bin (V 1024, XXH3 $(xxh3 "$OTHER/tokenizer.bin"))" "$TMP/run.out"; then
    pass run_records_its_data_and_tokenizer
else
    fail run_records_its_data_and_tokenizer "rc $rc; $(cat "$rec" 2>/dev/null | head -n 3 | tr '\n' ' ')"
fi

# a model from the folder: evaluated and sampled on the run's data with the run's tokenizer when no flag says which
run_val=$(last_val "$TMP/run/main.log")
out=$($TRAINER $FROM_SMALL -e "$TMP/run/model_00000004.bin" -x 0 -g 16 -s 1 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && printf '%s' "$out" | grep -q "^val loss ${run_val}" &&
    printf '%s' "$out" | grep -q -- "-e $TMP/run/model_00000004.bin: -i -j -tk from its run's record $rec" &&
    ! printf '%s' "$out" | grep -q -e warning -e error; then
    pass model_from_run_folder_uses_its_data_and_tokenizer
else
    fail model_from_run_folder_uses_its_data_and_tokenizer "rc $rc, run val $run_val: $(printf '%s' "$out" | grep -e val -e error -e record | head -n 3)"
fi

# another tokenizer of the same size: refused in one line; -other_tokenizer 1 goes on with a warning
msg=$($TRAINER $FROM_SMALL -e "$TMP/run/model_00000004.bin" -x 0 -tk "$DATA/tokenizer.bin" 2>&1 >/dev/null)
rc=$?
ok_msg=$($TRAINER $FROM_SMALL -e "$TMP/run/model_00000004.bin" -x 0 -tk "$DATA/tokenizer.bin" -other_tokenizer 1 2>&1 >/dev/null)
ok_rc=$?
if [ "$rc" -eq 1 ] && [ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] &&
    printf '%s' "$msg" | grep -q "^error: tokenizer $DATA/tokenizer.bin (XXH3 [0-9a-f]*) is not the one -e $TMP/run/model_00000004.bin was trained with: $rec recorded $(realpath "$OTHER/tokenizer.bin")" &&
    printf '%s' "$msg" | grep -q -- "-other_tokenizer 1" && [ "$ok_rc" -eq 0 ] &&
    printf '%s' "$ok_msg" | grep -q "^warning: tokenizer .* (-other_tokenizer 1: going on with it)"; then
    pass model_with_another_tokenizer_refused
else
    fail model_with_another_tokenizer_refused "rc $rc/$ok_rc: $msg / $ok_msg"
fi

# fine-tuning the model on other data with that data's tokenizer: refused the same way
msg=$($TRAINER $FROM_SMALL -e "$TMP/run/model_00000004.bin" $DATA_FLAGS -x 2 -o "$TMP/finetune" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -eq 1 ] && printf '%s' "$msg" | grep -q "is not the one -e $TMP/run/model_00000004.bin was trained with" &&
    [ ! -e "$TMP/finetune/model_00000002.bin" ]; then
    pass finetune_with_another_tokenizer_refused
else
    fail finetune_with_another_tokenizer_refused "rc $rc: $msg"
fi

# data encoded with another tokenizer (its manifest names it): refused for the model, in the trainer and model_logits
mkdir -p "$TMP/reencoded"
./dev/data/tokenizer encode -i "$OTHER/shifted.txt" -k "$DATA/tokenizer.bin" -o "$TMP/reencoded/x" >/dev/null
msg=$($TRAINER $FROM_SMALL -e "$TMP/run/model_00000004.bin" -i "$TMP/reencoded/x_train.bin" -j "$TMP/reencoded/x_val.bin" \
    -x 0 2>&1 >/dev/null)
rc=$?
logits_msg=$(${MODEL_LOGITS:-./dev/model_logits} "$TMP/run/model_00000004.bin" "$TMP/reencoded/x_val.bin" 1 8 \
    "$TMP/reencoded.f32" 2>&1 >/dev/null)
logits_rc=$?
if [ "$rc" -eq 1 ] && [ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] &&
    printf '%s' "$msg" | grep -q "^error: data shard $TMP/reencoded/x_train.bin was encoded with another tokenizer ($TMP/reencoded/x.manifest records XXH3 $(xxh3 "$DATA/tokenizer.bin")) than $(realpath "$OTHER/tokenizer.bin")" &&
    [ "$logits_rc" -eq 1 ] && printf '%s' "$logits_msg" | grep -q "^error: data shard $TMP/reencoded/x_val.bin was encoded with another tokenizer" &&
    [ ! -e "$TMP/reencoded.f32" ]; then
    pass data_of_another_tokenizer_refused
else
    fail data_of_another_tokenizer_refused "rc $rc/$logits_rc: $msg / $logits_msg"
fi

# a model file without a record (llm.c's, or moved out of its folder): one warning, the flags as given
cp "$TMP/run/model_00000004.bin" "$TMP/lone.bin"
msg=$($TRAINER $FROM_SMALL $OTHER_FLAGS -tk "$OTHER/tokenizer.bin" -e "$TMP/lone.bin" -x 0 2>&1 >/dev/null)
rc=$?
if [ "$rc" -eq 0 ] && [ "$(printf '%s\n' "$msg" | wc -l)" -eq 1 ] &&
    printf '%s' "$msg" | grep -q "^warning: -e $TMP/lone.bin: no dataset.txt beside it (an llm.c model file"; then
    pass model_without_record_warns
else
    fail model_without_record_warns "rc $rc: $msg"
fi

# a damaged record: one line naming the file and the line
cp -r "$TMP/run" "$TMP/damaged"
sed -i 's/^tokenizer\t\([0-9]*\)\t[0-9a-f]*/tokenizer\t\1\tnothex/' "$TMP/damaged/dataset.txt"
msg=$($TRAINER $FROM_SMALL -e "$TMP/damaged/model_00000004.bin" -x 0 2>&1 >/dev/null)
rc=$?
if [ "$rc" -eq 1 ] && printf '%s' "$msg" | grep -q "^error: $TMP/damaged/dataset.txt: line 2: expected tokenizer<TAB>bytes<TAB>16 hex digits<TAB>path"; then
    pass damaged_record_refused
else
    fail damaged_record_refused "rc $rc: $msg"
fi

# ---------------------------------------------------------------------------------------------------------------------
# resuming: the data and the tokenizer must be the run's
cp -r "$OTHER" "$TMP/moving"
MOVING="-i $TMP/moving/other_train.bin -j $TMP/moving/other_val.bin"
{ $TRAINER $SMALL $MOVING -x 6 -v 2 -n 2 -o "$TMP/resume" -debug_kill_step 3 >/dev/null 2>&1; } 2>/dev/null
cp "$TMP/resume/dataset.txt" "$TMP/resume_record_before"
# the same size, other tokens: a re-encoded corpus that only a checksum tells apart
python3 - "$TMP/moving/other_train.bin" <<'EOF'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[1024 + 2 * 5000], data[1024 + 2 * 5001] = data[1024 + 2 * 5001], data[1024 + 2 * 5000]
if data[1024 + 2 * 5000] == data[1024 + 2 * 5001]:
    data[1024 + 2 * 5000] ^= 1
open(sys.argv[1], "wb").write(data)
EOF
msg=$($TRAINER $SMALL $MOVING -x 6 -v 2 -n 2 -o "$TMP/resume" -y 1 2>&1 >/dev/null)
rc=$?
if [ "$rc" -eq 1 ] && printf '%s' "$msg" | grep -q "^error: cannot resume: the data changed since the run began: train shard 1 was $TMP/moving/other_train.bin ([0-9]* bytes, XXH3 [0-9a-f]*), now .*-other_data 1 resumes on it" &&
    cmp -s "$TMP/resume/dataset.txt" "$TMP/resume_record_before"; then
    pass resume_on_changed_data_refused
else
    fail resume_on_changed_data_refused "rc $rc: $msg"
fi
msg=$($TRAINER $SMALL $MOVING -x 6 -v 2 -n 2 -o "$TMP/resume" -y 1 -other_data 1 2>&1 >/dev/null)
rc=$?
if [ "$rc" -eq 0 ] && printf '%s' "$msg" | grep -q "^warning: the data changed since the run began" &&
    grep -q "^# recorded anew at the resume from step 2 (-other_data 1)" "$TMP/resume/dataset.txt" &&
    grep -q "^train_shard.*$(xxh3 "$TMP/moving/other_train.bin")" "$TMP/resume/dataset.txt"; then
    pass resume_on_changed_data_with_other_data
else
    fail resume_on_changed_data_with_other_data "rc $rc: $msg"
fi

# another tokenizer at a resume: refused by the checkpoint's state file, which records the tokenizer's checksum (with
# the run's record gone too); the data here has no manifest (as llm.c's), which would name its tokenizer first
mkdir -p "$TMP/plain" && cp "$OTHER/other_train.bin" "$OTHER/other_val.bin" "$TMP/plain/"
PLAIN="-i $TMP/plain/other_train.bin -j $TMP/plain/other_val.bin"
{ $TRAINER $SMALL $PLAIN -tk "$OTHER/tokenizer.bin" -x 4 -v 2 -n 2 -o "$TMP/retok" -debug_kill_step 3 >/dev/null 2>&1; } 2>/dev/null
msg=$($TRAINER $SMALL $PLAIN -tk "$DATA/tokenizer.bin" -x 4 -v 2 -n 2 -o "$TMP/retok" -y 1 2>&1 >/dev/null)
rc=$?
rm "$TMP/retok/dataset.txt"
state_msg=$($TRAINER $SMALL $PLAIN -tk "$DATA/tokenizer.bin" -x 4 -v 2 -n 2 -o "$TMP/retok" -y 1 2>&1 >/dev/null)
state_rc=$?
if [ "$rc" -eq 1 ] && printf '%s' "$msg" | grep -q "^error: cannot resume with another tokenizer: the checkpoint's run read one of XXH3 $(xxh3 "$OTHER/tokenizer.bin"), $DATA/tokenizer.bin is XXH3" &&
    [ "$state_rc" -eq 1 ] && printf '%s' "$state_msg" | grep -q "^error: cannot resume with another tokenizer: the checkpoint's run read one of XXH3 $(xxh3 "$OTHER/tokenizer.bin"), $DATA/tokenizer.bin is XXH3"; then
    pass resume_with_another_tokenizer_refused
else
    fail resume_with_another_tokenizer_refused "rc $rc/$state_rc: $msg / $state_msg"
fi

# a folder whose run began before runs recorded their data: the resume records it, and says so
{ $TRAINER $SMALL $OTHER_FLAGS -x 4 -v 2 -n 2 -o "$TMP/old" -debug_kill_step 3 >/dev/null 2>&1; } 2>/dev/null
rm "$TMP/old/dataset.txt"
out=$($TRAINER $SMALL $OTHER_FLAGS -x 4 -v 2 -n 2 -o "$TMP/old" -y 1 2>&1)
rc=$?
if [ "$rc" -eq 0 ] && printf '%s' "$out" | grep -q "^resume: $TMP/old/dataset.txt recorded the data now" &&
    grep -q "^# recorded at the resume from step 2: the run began before runs recorded their data" "$TMP/old/dataset.txt" &&
    grep -q "^train_shard.*$(xxh3 "$OTHER/other_train.bin")" "$TMP/old/dataset.txt"; then
    pass old_folder_recorded_at_resume
else
    fail old_folder_recorded_at_resume "rc $rc: $(printf '%s' "$out" | grep -e resume -e error)"
fi

# ---------------------------------------------------------------------------------------------------------------------
# steps skipped in a row: counted across a resume as in a run never stopped. A model of huge weights makes every loss
# non-finite, so every step is skipped; the uninterrupted run stops at step 4 (4 > -max_skipped 3).
python3 - "$TMP/run/model_00000004.bin" "$TMP/huge/huge.bin" <<'EOF'
import os, struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
n = (len(data) - 1024) // 4
data[1024:] = struct.pack(f"<{n}f", *([1e30] * n))
os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True)
open(sys.argv[2], "wb").write(data)
EOF
cp "$TMP/run/dataset.txt" "$TMP/huge/dataset.txt"  # its run's record: the other dataset
straight=$($TRAINER $FROM_SMALL -e "$TMP/huge/huge.bin" -x 20 -n 2 -max_skipped 3 -v 0 -o "$TMP/skip_straight" 2>&1 >/dev/null)
{ $TRAINER $FROM_SMALL -e "$TMP/huge/huge.bin" -x 20 -n 2 -max_skipped 3 -v 0 -o "$TMP/skip_resumed" -debug_kill_step 3 >/dev/null 2>&1; } 2>/dev/null
resumed=$($TRAINER $FROM_SMALL -e "$TMP/huge/huge.bin" -x 20 -n 2 -max_skipped 3 -v 0 -o "$TMP/skip_resumed" -y 1 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne 0 ] && printf '%s' "$straight" | grep -q "^error: steps 1..4: 4 steps in a row skipped" &&
    [ "$(printf '%s' "$resumed" | grep '^error')" = "$(printf '%s' "$straight" | grep '^error')" ]; then
    pass skipped_steps_in_a_row_survive_resume
else
    fail skipped_steps_in_a_row_survive_resume "rc $rc: straight: $(printf '%s' "$straight" | grep error) / resumed: $(printf '%s' "$resumed" | grep error)"
fi

# ---------------------------------------------------------------------------------------------------------------------
# model_logits' output (llmc/checkpoint.h's atomic_open): never replaces what is not a regular file
LOGITS="${MODEL_LOGITS:-./dev/model_logits} $TMP/run/model_00000004.bin $OTHER/other_val.bin 1 8"
touch "$TMP/target.f32" && ln -s "$TMP/target.f32" "$TMP/link.f32"
$LOGITS "$TMP/link.f32" >/dev/null 2>&1
rc=$?
if [ "$rc" -eq 0 ] && [ -L "$TMP/link.f32" ] && [ "$(stat -c %s "$TMP/target.f32")" -eq $((8 * 1024 * 4)) ]; then
    pass logits_through_a_symlink
else
    fail logits_through_a_symlink "rc $rc; link $(ls -l "$TMP/link.f32")"
fi
ln -s /dev/full "$TMP/full"  # /dev/full through a link: the test can never replace the real device
msg=$($LOGITS "$TMP/full" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -eq 1 ] && [ -L "$TMP/full" ] && [ -c /dev/full ] &&
    printf '%s' "$msg" | grep -q "^error: writing /dev/full failed: No space left on device"; then
    pass logits_to_a_full_device_fails
else
    fail logits_to_a_full_device_fails "rc $rc: $msg; $(ls -l "$TMP/full")"
fi
if mknod "$TMP/null" c 1 3 2>/dev/null; then  # a /dev/null of our own (as root): must stay a device
    $LOGITS "$TMP/null" >/dev/null 2>&1
    rc=$?
    if [ "$rc" -eq 0 ] && [ -c "$TMP/null" ]; then pass logits_to_a_device_in_place; else fail logits_to_a_device_in_place "rc $rc; $(ls -l "$TMP/null")"; fi
fi
mkfifo "$TMP/fifo"
timeout 20 cat "$TMP/fifo" >"$TMP/from_fifo" &  # (a writer that replaced the FIFO never feeds it: the timeout)
reader=$!
$LOGITS "$TMP/fifo" >/dev/null 2>&1
rc=$?
wait "$reader"
if [ "$rc" -eq 0 ] && [ -p "$TMP/fifo" ] && cmp -s "$TMP/from_fifo" "$TMP/target.f32"; then
    pass logits_to_a_fifo_in_place
else
    fail logits_to_a_fifo_in_place "rc $rc; $(ls -l "$TMP/fifo")"
fi
mkdir "$TMP/folder.f32"
msg=$($LOGITS "$TMP/folder.f32" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -eq 1 ] && printf '%s' "$msg" | grep -q "^error: cannot write $TMP/folder.f32: it exists and is a folder, not a file"; then
    pass logits_to_a_folder_refused
else
    fail logits_to_a_folder_refused "rc $rc: $msg"
fi
finish run_data
