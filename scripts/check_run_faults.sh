#!/usr/bin/env bash
# scripts/check_run_faults.sh [TRAINER] — the faults that must never end with exit 0 and a wrong result, run against a
# trainer binary (default ./train_gpt_fp8_cpu; scripts/gpu_check.sh runs it on ./train_gpt_fp8, which shares every
# path checked here: llmc/run_folder.h, llmc/checkpoint.h, llmc/run.h), on a tiny model and the default dataset:
#   - a log that cannot be written (/dev/full) stops the run, and -y 1 then ends byte for byte as a run never stopped;
#   - a checkpoint's steps and checksums, checked with xxHash's Python binding (independent of our C);
#   - a damaged or mismatched newest checkpoint (zeroed tail, exponent bit, another step's model or state, a flipped
#     byte, a missing file) is refused naming the newest intact one and -resume_step, which resumes byte-identically;
#   - one run per folder: a second run stops naming the holder's pid, also once the folder's files are deleted or
#     renamed (the lock is the folder's own); the lock dies with its holder and leaves no file behind; an earlier
#     version's .lock is respected while held, then removed; stale temporary files are cleared; a new run in an old
#     run's folder (its checkpoints, or the logs of a run killed before its first) is refused, -start_over 1 replaces
#     it; -y 1 without a checkpoint starts again, keeping the earlier attempt's logs as main.log.N, fp8_diag.tsv.N;
#   - a folder the run cannot write (read-only): a finished job's -y 1 exits 0 with its one line, a run with steps
#     to train is refused at once;
#   - a run that skips every step fails (-max_skipped, and at its end); output folders of 1010 and 4000 bytes, long
#     input paths; the error when the data changed since the checkpoint names what changed.
# Each case failed before this check existed (see the commit that added it). Prints PASS/FAIL per case and
# "faults: N passed, M failed" last.
set -u
cd "$(dirname "$0")/.."
TRAINER=${1:-./train_gpt_fp8_cpu}
. scripts/test_lib.sh
trainer_suite_setup faults  # DATA, DATA_FLAGS, TINY
# the runs compared here byte for byte are separate runs, and the GPU trainer would time its GEMMs' algorithms in each
# (a timed choice can differ from run to run, and write a gemm_algos file): every run takes the heuristic's first
TINY="$TINY -gemm_autotune 0"
FAULT="$TINY -precision fp8 -v 2 -m 1 -fp8_diag_every 2"
# FAULT for a run from a model file: TINY's flags but its sizes (-e fixes -L -C -NH, and refuses them beside it)
FAULT_FROM_FILE="$DATA_FLAGS -b 8 -t 64 -s 0 -seed 1337 -precision fp8 -v 2 -m 1 -fp8_diag_every 2 -gemm_autotune 0"

# a log that cannot be written (a device that refuses every write, as a full disk does): one line, a non-zero exit,
# the checkpoint before it intact; once the log can be written again, -y 1 ends byte for byte as a run never stopped
$TRAINER $FAULT -x 6 -n 2 -o "$TMP/logfull_straight" >/dev/null 2>&1
{ $TRAINER $FAULT -x 6 -n 2 -o "$TMP/logfull" -debug_kill_step 3 >/dev/null 2>&1; } 2>/dev/null
cp "$TMP/logfull/main.log" "$TMP/logfull_main.log"
ln -sf /dev/full "$TMP/logfull/main.log"
logfull_msg=$($TRAINER $FAULT -x 6 -n 2 -o "$TMP/logfull" -y 1 2>&1 >/dev/null)
logfull_rc=$?
logfull_done=$(ls "$TMP/logfull" | grep DONE | tr '\n' ' ')
rm "$TMP/logfull/main.log" && cp "$TMP/logfull_main.log" "$TMP/logfull/main.log"
$TRAINER $FAULT -x 6 -n 2 -o "$TMP/logfull" -y 1 >"$TMP/logfull_resume.out" 2>&1
logfull_resume_rc=$?
if [ "$logfull_rc" -ne 0 ] && [ "$(printf '%s\n' "$logfull_msg" | grep -c error)" -eq 1 ] &&
    printf '%s' "$logfull_msg" | grep -q "cannot write $TMP/logfull/main.log: No space left on device; the run stops" &&
    [ "$logfull_done" = "DONE_00000002 " ] && [ "$logfull_resume_rc" -eq 0 ] &&
    grep -q "resumed from .*model_00000002.bin at step 2" "$TMP/logfull_resume.out" &&
    diff -r -q "$TMP/logfull_straight" "$TMP/logfull" >/dev/null; then
    pass "log_write_failure_stops_then_resumes_byte_identical"
else
    fail "log_write_failure_stops_then_resumes_byte_identical" "rc $logfull_rc/$logfull_resume_rc, DONE: $logfull_done, $logfull_msg $(diff -r -q "$TMP/logfull_straight" "$TMP/logfull" | head -n 2 | tr '\n' ' ')"
fi
mkdir -p "$TMP/diagfull" && ln -sf /dev/full "$TMP/diagfull/fp8_diag.tsv"
diagfull_msg=$($TRAINER $FAULT -x 4 -o "$TMP/diagfull" 2>&1 >/dev/null)
diagfull_rc=$?
if [ "$diagfull_rc" -ne 0 ] && printf '%s' "$diagfull_msg" | grep -q "cannot write $TMP/diagfull/fp8_diag.tsv: No space left on device" &&
    [ -z "$(ls "$TMP/diagfull" | grep -e model_ -e DONE_)" ]; then
    pass "diagnostics_write_failure_stops"
else
    fail "diagnostics_write_failure_stops" "rc $diagfull_rc: $diagfull_msg"
fi

# a checkpoint's parts are tied together: the steps in the state file and the model file are the name's, the state
# file holds the XXH3-64 of its model file's bytes (header[36..37]) and of its own (its last 8 bytes). Checked here with
# xxHash's Python binding, an implementation independent of ours.
$TRAINER $FAULT -x 4 -n 2 -o "$TMP/tied" >/dev/null 2>&1
if python3 - "$TMP/tied" <<'PY'
import struct, sys, xxhash
d = sys.argv[1]
for step in (2, 4):
    model = open(f"{d}/model_{step:08d}.bin", "rb").read()
    state = open(f"{d}/state_{step:08d}_00000.bin", "rb").read()
    assert struct.unpack_from("<i", model, 8 * 4)[0] == step, "model header[8]"
    assert struct.unpack_from("<q", state, 20 * 4)[0] == step, "state header[20..21]"
    assert struct.unpack_from("<Q", state, 36 * 4)[0] == xxhash.xxh3_64_intdigest(model), "model checksum"
    assert struct.unpack_from("<Q", state, len(state) - 8)[0] == xxhash.xxh3_64_intdigest(state[:-8]), "own checksum"
PY
then
    pass "checkpoint_steps_and_checksums_independently_checked"
else
    fail "checkpoint_steps_and_checksums_independently_checked" "see the Python assertion above"
fi
# damage to the newest checkpoint, each in a copy of the folder: refused with one line that names the damaged file and
# the newest intact checkpoint, nothing written; -y 1 -resume_step 2 then resumes from that one
tied_sum=$(cat "$TMP/tied"/* | md5sum)
damage_case() {  # name, expected text, shell command run in the copied folder
    local name=$1 want=$2 out rc
    rm -rf "$TMP/damaged_$name" && cp -r "$TMP/tied" "$TMP/damaged_$name"
    (cd "$TMP/damaged_$name" && eval "$3")
    local before
    before=$(ls -l --time-style=+%s.%N "$TMP/damaged_$name" && cat "$TMP/damaged_$name"/* | md5sum)
    out=$($TRAINER $FAULT -x 6 -n 2 -o "$TMP/damaged_$name" -y 1 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | grep -c error)" -eq 1 ] && printf '%s' "$out" | grep -q -- "$want" &&
        printf '%s' "$out" | grep -q "checkpoint 4 in $TMP/damaged_$name cannot be resumed; the newest intact one is step 2: -y 1 -resume_step 2 resumes from it" &&
        [ "$(ls -l --time-style=+%s.%N "$TMP/damaged_$name" && cat "$TMP/damaged_$name"/* | md5sum)" = "$before" ]; then
        pass "damaged_newest_checkpoint_$name"
    else
        fail "damaged_newest_checkpoint_$name" "rc $rc: $out"
    fi
}
damage_case model_zeroed_tail "model_00000004.bin: not the model file .*state_00000004_00000.bin recorded (checksum" \
    'size=$(stat -c %s model_00000004.bin); dd if=/dev/zero of=model_00000004.bin bs=1 seek=$((size - 4096)) count=4096 conv=notrunc 2>/dev/null'
# an exponent bit of one weight (byte 3 of a float holds the sign and 7 exponent bits): x * 2^16, still finite
damage_case model_exponent_bit "model_00000004.bin: not the model file .*recorded (checksum" \
    'python3 -c "import sys; d = bytearray(open(\"model_00000004.bin\", \"rb\").read()); d[1024 + 4 * 5000 + 3] ^= 0x08; open(\"model_00000004.bin\", \"wb\").write(d)"'
damage_case model_of_older_step "model_00000004.bin: not the model file" 'cp model_00000002.bin model_00000004.bin'
damage_case state_of_older_step "state_00000004_00000.bin: holds step 2, not 4 (another checkpoint's state file)" \
    'cp state_00000002_00000.bin state_00000004_00000.bin'
damage_case state_flipped_byte "state_00000004_00000.bin: corrupt state file (checksum mismatch)" \
    'printf "\x42" | dd of=state_00000004_00000.bin bs=1 seek=5000 conv=notrunc 2>/dev/null'
damage_case model_missing "cannot open model file .*model_00000004.bin" 'rm model_00000004.bin'
# the way out the refusal names: resume from step 2, the checkpoints after it removed first, and the run ends as one
# never interrupted (its step 4 and 6 checkpoints rewritten)
$TRAINER $FAULT -x 6 -n 2 -o "$TMP/tied_straight" >/dev/null 2>&1
$TRAINER $FAULT -x 6 -n 2 -o "$TMP/damaged_model_zeroed_tail" -y 1 -resume_step 2 >"$TMP/resume_step.out" 2>&1
resume_step_rc=$?
if [ "$resume_step_rc" -eq 0 ] && grep -q "resumed from .*model_00000002.bin at step 2" "$TMP/resume_step.out" &&
    grep -q "resume: removed the 3 checkpoint files after step 2" "$TMP/resume_step.out" &&
    diff -r -q "$TMP/tied_straight" "$TMP/damaged_model_zeroed_tail" >/dev/null; then
    pass "resume_step_from_older_intact_checkpoint_byte_identical"
else
    fail "resume_step_from_older_intact_checkpoint_byte_identical" "rc $resume_step_rc: $(grep -m 2 -e error -e removed "$TMP/resume_step.out" | tr '\n' ' ') $(diff -r -q "$TMP/tied_straight" "$TMP/damaged_model_zeroed_tail" | head -n 2 | tr '\n' ' ')"
fi
# no older checkpoint intact: the line says so and how to start over
rm -rf "$TMP/damaged_only" && mkdir -p "$TMP/damaged_only"
$TRAINER $FAULT -x 2 -o "$TMP/damaged_only" >/dev/null 2>&1
printf '\x42' | dd of="$TMP/damaged_only/state_00000002_00000.bin" bs=1 seek=5000 conv=notrunc 2>/dev/null
only_msg=$($TRAINER $FAULT -x 4 -o "$TMP/damaged_only" -y 1 2>&1 >/dev/null)
if [ "$?" -ne 0 ] && printf '%s' "$only_msg" | grep -q "checkpoint 2 in $TMP/damaged_only cannot be resumed, and no older one is intact (-start_over 1"; then
    pass "damaged_only_checkpoint_says_start_over"
else
    fail "damaged_only_checkpoint_says_start_over" "$only_msg"
fi
[ "$(cat "$TMP/tied"/* | md5sum)" = "$tied_sum" ] || fail tied_folder_untouched "the damage cases changed $TMP/tied"
resume_step_err=$($TRAINER $FAULT -x 6 -o "$TMP/tied" -y 1 -resume_step 3 2>&1 >/dev/null)
if [ "$?" -ne 0 ] && printf '%s' "$resume_step_err" | grep -q "\-resume_step 3: $TMP/tied holds no complete checkpoint of step 3 (no DONE_00000003)"; then
    pass "resume_step_without_checkpoint_refused"
else
    fail "resume_step_without_checkpoint_refused" "$resume_step_err"
fi

# one run per folder: a second run on a folder a live run holds stops at once with one line naming the folder and the
# holder's pid, and changes nothing; the lock is the folder's own, so deleting or renaming what is in it (an earlier
# version's .lock file, say) does not free it; it goes with the process, so after a SIGKILL the folder is free again,
# and no lock file is left behind
$TRAINER $FAULT -x 100000 -n 0 -o "$TMP/locked" >"$TMP/locked_first.out" 2>&1 &
first_pid=$!
for _ in $(seq 300); do [ -s "$TMP/locked/main.log" ] && break; sleep 0.1; done  # (a GPU trainer starts in seconds)
lock_msg=$($TRAINER $FAULT -x 4 -o "$TMP/locked" 2>&1 >/dev/null)
lock_rc=$?
rm -f "$TMP/locked/.lock" && mv "$TMP/locked/fp8_diag.tsv" "$TMP/locked/renamed.tsv"
lock_resume_msg=$($TRAINER $FAULT -x 4 -o "$TMP/locked" -y 1 2>&1 >/dev/null)
lock_resume_rc=$?
kill -9 "$first_pid" 2>/dev/null
wait "$first_pid" 2>/dev/null
$TRAINER $FAULT -x 2 -o "$TMP/locked" -y 1 >"$TMP/locked_after.out" 2>&1
after_rc=$?
if [ "$lock_rc" -ne 0 ] && [ "$(printf '%s\n' "$lock_msg" | wc -l)" -eq 1 ] &&
    printf '%s' "$lock_msg" | grep -q "error: $TMP/locked is in use by another run (pid $first_pid holds its lock): one run per output folder" &&
    [ "$after_rc" -eq 0 ] && [ -e "$TMP/locked/DONE_00000002" ]; then
    pass "one_run_per_folder_lock_names_pid_and_dies_with_its_holder"
else
    fail "one_run_per_folder_lock_names_pid_and_dies_with_its_holder" "rc $lock_rc/$after_rc: $lock_msg / $(tail -n 1 "$TMP/locked_after.out")"
fi
if [ "$lock_resume_rc" -ne 0 ] && [ "$(printf '%s\n' "$lock_resume_msg" | wc -l)" -eq 1 ] &&
    printf '%s' "$lock_resume_msg" | grep -q "error: $TMP/locked is in use by another run (pid $first_pid holds its lock)"; then
    pass "lock_holds_when_files_in_the_folder_are_deleted_or_renamed"
else
    fail "lock_holds_when_files_in_the_folder_are_deleted_or_renamed" "rc $lock_resume_rc: $lock_resume_msg"
fi
if [ -z "$(ls -A "$TMP/locked" | grep -e '^\.')" ]; then
    pass "no_lock_file_left_behind"
else
    fail "no_lock_file_left_behind" "$(ls -A "$TMP/locked" | tr '\n' ' ')"
fi
# an earlier version's lock: a POSIX lock on DIR/.lock, which a run of that version may still hold (it does not see
# the folder lock); such a run is refused naming that pid, and once it ends the .lock file, meaningless now, goes
mkdir -p "$TMP/old_lock"
python3 -c 'import fcntl, os, sys, time
fd = os.open(sys.argv[1] + "/.lock", os.O_RDWR | os.O_CREAT, 0o644)
fcntl.lockf(fd, fcntl.LOCK_EX)
open(sys.argv[1] + "/ready", "w").close()
time.sleep(60)' "$TMP/old_lock" &
old_holder=$!
for _ in $(seq 100); do [ -e "$TMP/old_lock/ready" ] && break; sleep 0.1; done
rm -f "$TMP/old_lock/ready"
old_lock_msg=$($TRAINER $FAULT -x 2 -o "$TMP/old_lock" 2>&1 >/dev/null)
old_lock_rc=$?
kill "$old_holder" 2>/dev/null
wait "$old_holder" 2>/dev/null
$TRAINER $FAULT -x 2 -o "$TMP/old_lock" >/dev/null 2>&1
old_lock_after_rc=$?
if [ "$old_lock_rc" -ne 0 ] && [ "$(printf '%s\n' "$old_lock_msg" | wc -l)" -eq 1 ] &&
    printf '%s' "$old_lock_msg" | grep -q "error: $TMP/old_lock is in use by another run (pid $old_holder holds $TMP/old_lock/.lock, an earlier version's lock)" &&
    [ "$old_lock_after_rc" -eq 0 ] && [ ! -e "$TMP/old_lock/.lock" ] && [ -e "$TMP/old_lock/DONE_00000002" ]; then
    pass "earlier_versions_lock_file_respected_then_removed"
else
    fail "earlier_versions_lock_file_respected_then_removed" "rc $old_lock_rc/$old_lock_after_rc: $old_lock_msg / $(ls -A "$TMP/old_lock" | tr '\n' ' ')"
fi
# temporary files are NAME.tmp.PID, and a run starting in a folder clears the ones a killed run left
rm -rf "$TMP/stale" && mkdir -p "$TMP/stale" && touch "$TMP/stale/model_00000002.bin.tmp.12345" "$TMP/stale/state_00000002_00000.bin.tmp.12345"
$TRAINER $FAULT -x 2 -o "$TMP/stale" >/dev/null 2>&1
if [ "$?" -eq 0 ] && [ -z "$(ls -a "$TMP/stale" | grep tmp)" ] && [ -e "$TMP/stale/DONE_00000002" ]; then
    pass "stale_temporary_files_cleared"
else
    fail "stale_temporary_files_cleared" "$(ls -a "$TMP/stale" | tr '\n' ' ')"
fi

# a new run in an old run's folder: refused without -y 1 (nothing changed, the old run's logs included); -start_over 1
# removes the old checkpoints first, and the folder then holds the new run alone
$TRAINER $FAULT -x 2 -o "$TMP/old_run" >/dev/null 2>&1
old_sum=$(ls -l --time-style=+%s.%N "$TMP/old_run" && cat "$TMP/old_run"/* | md5sum)
old_msg=$($TRAINER $FAULT -x 3 -o "$TMP/old_run" 2>&1 >/dev/null)
old_rc=$?
if [ "$old_rc" -ne 0 ] && [ "$(printf '%s\n' "$old_msg" | wc -l)" -eq 1 ] &&
    printf '%s' "$old_msg" | grep -q "error: $TMP/old_run holds the checkpoints of an earlier run (newest: step 2): -y 1 resumes it, -start_over 1 removes them" &&
    [ "$(ls -l --time-style=+%s.%N "$TMP/old_run" && cat "$TMP/old_run"/* | md5sum)" = "$old_sum" ]; then
    pass "new_run_in_old_folder_refused"
else
    fail "new_run_in_old_folder_refused" "rc $old_rc: $old_msg"
fi
$TRAINER $FAULT -x 3 -o "$TMP/old_run" -start_over 1 >"$TMP/start_over.out" 2>&1
start_over_rc=$?
$TRAINER $FAULT -x 3 -o "$TMP/fresh_run" >/dev/null 2>&1
if [ "$start_over_rc" -eq 0 ] && grep -q "start over: removed the 3 checkpoint files of an earlier run from $TMP/old_run (newest: step 2)" "$TMP/start_over.out" &&
    [ "$(ls "$TMP/old_run" | tr '\n' ' ')" = "DONE_00000003 dataset.txt fp8_diag.tsv main.log model_00000003.bin state_00000003_00000.bin " ] &&
    diff -r -q "$TMP/fresh_run" "$TMP/old_run" >/dev/null; then
    pass "start_over_replaces_old_run"
else
    fail "start_over_replaces_old_run" "rc $start_over_rc: $(ls "$TMP/old_run" | tr '\n' ' ') $(grep -m 1 error "$TMP/start_over.out")"
fi

# a run killed before its first checkpoint leaves its logs and no checkpoint: a new run there is refused in one line
# naming them, nothing changed; -start_over 1 removes them (the folder then holds the new run alone, fp8_diag.tsv
# included when the new run writes none); -y 1 starts that run again from step 0 with the logs of a run never
# interrupted, the killed attempts' kept whole as main.log.N and fp8_diag.tsv.N, N the first number free
for d in logs_only logs_only_resumed logs_only_bf16; do
    { $TRAINER $FAULT -x 4 -n 4 -o "$TMP/$d" -debug_kill_step 3 >/dev/null 2>&1; } 2>/dev/null
done
cp -r "$TMP/logs_only_resumed" "$TMP/logs_only_killed"
$TRAINER $FAULT -x 4 -n 4 -o "$TMP/logs_only_fresh" >/dev/null 2>&1
logs_sum=$(ls -l --time-style=+%s.%N "$TMP/logs_only" && cat "$TMP/logs_only"/* | md5sum)
logs_msg=$($TRAINER $FAULT -x 4 -n 4 -o "$TMP/logs_only" 2>&1 >/dev/null)
logs_rc=$?
if [ "$logs_rc" -ne 0 ] && [ "$(printf '%s\n' "$logs_msg" | wc -l)" -eq 1 ] &&
    printf '%s' "$logs_msg" | grep -q "error: $TMP/logs_only holds the logs of an earlier run (main.log, fp8_diag.tsv) but no checkpoint: -start_over 1 removes them" &&
    [ -s "$TMP/logs_only/main.log" ] && [ "$(ls -l --time-style=+%s.%N "$TMP/logs_only" && cat "$TMP/logs_only"/* | md5sum)" = "$logs_sum" ]; then
    pass "new_run_over_logs_without_checkpoint_refused"
else
    fail "new_run_over_logs_without_checkpoint_refused" "rc $logs_rc: $logs_msg"
fi
$TRAINER $FAULT -x 4 -n 4 -o "$TMP/logs_only" -start_over 1 >"$TMP/logs_start_over.out" 2>&1
logs_start_over_rc=$?
$TRAINER $TINY -precision bf16 -v 2 -m 1 -x 2 -o "$TMP/logs_only_bf16" -start_over 1 >/dev/null 2>&1
logs_bf16_rc=$?
if [ "$logs_start_over_rc" -eq 0 ] && grep -q "start over: removed the logs of an earlier run from $TMP/logs_only (main.log, fp8_diag.tsv)" "$TMP/logs_start_over.out" &&
    diff -r -q "$TMP/logs_only_fresh" "$TMP/logs_only" >/dev/null && [ "$logs_bf16_rc" -eq 0 ] &&
    [ "$(ls "$TMP/logs_only_bf16" | tr '\n' ' ')" = "DONE_00000002 dataset.txt main.log model_00000002.bin state_00000002_00000.bin " ]; then
    pass "start_over_removes_logs_without_checkpoint"
else
    fail "start_over_removes_logs_without_checkpoint" "rc $logs_start_over_rc/$logs_bf16_rc: $(grep -m 1 error "$TMP/logs_start_over.out") $(ls "$TMP/logs_only_bf16" | tr '\n' ' ')"
fi
$TRAINER $FAULT -x 4 -n 4 -o "$TMP/logs_only_resumed" -y 1 >"$TMP/logs_resumed.out" 2>&1
logs_resumed_rc=$?
cp -r "$TMP/logs_only_resumed" "$TMP/logs_only_resumed_once"
{ $TRAINER $FAULT -x 4 -n 4 -o "$TMP/logs_only_resumed" -start_over 1 -debug_kill_step 3 >/dev/null 2>&1; } 2>/dev/null
$TRAINER $FAULT -x 4 -n 4 -o "$TMP/logs_only_resumed" -y 1 >"$TMP/logs_resumed_again.out" 2>&1
logs_again_rc=$?
if [ "$logs_resumed_rc" -eq 0 ] && grep -q "resume: no complete checkpoint in $TMP/logs_only_resumed: the logs of the attempt before are kept as main.log.1 fp8_diag.tsv.1" "$TMP/logs_resumed.out" &&
    cmp -s "$TMP/logs_only_killed/main.log" "$TMP/logs_only_resumed_once/main.log.1" &&
    cmp -s "$TMP/logs_only_killed/fp8_diag.tsv" "$TMP/logs_only_resumed_once/fp8_diag.tsv.1" &&
    cmp -s "$TMP/logs_only_fresh/main.log" "$TMP/logs_only_resumed_once/main.log" &&
    cmp -s "$TMP/logs_only_fresh/fp8_diag.tsv" "$TMP/logs_only_resumed_once/fp8_diag.tsv" &&
    [ "$logs_again_rc" -eq 0 ] && grep -q "kept as main.log.2 fp8_diag.tsv.2" "$TMP/logs_resumed_again.out" &&
    cmp -s "$TMP/logs_only_killed/main.log" "$TMP/logs_only_resumed/main.log.2" &&
    cmp -s "$TMP/logs_only_resumed_once/main.log.1" "$TMP/logs_only_resumed/main.log.1"; then
    pass "resume_without_checkpoint_keeps_earlier_logs"
else
    fail "resume_without_checkpoint_keeps_earlier_logs" "rc $logs_resumed_rc/$logs_again_rc: $(grep -m 1 -e error -e kept "$TMP/logs_resumed.out") / $(ls "$TMP/logs_only_resumed" | tr '\n' ' ')"
fi

# a folder the run cannot write: -y 1 with nothing left to train says so in one line and exits 0 (re-submitting a
# finished job succeeds), touching nothing (an earlier version's .lock and a stale temporary file stay); one with steps
# left, or a new run, is refused at once in one line. Root ignores permission bits, so as root the folder is
# bind-mounted read-only in a private mount namespace (unshare -m), or else made immutable (chattr +i); as another user
# its write permission is taken away. Where none of these works, the cases say SKIP.
read_only() {  # DIR CMD...: runs CMD with DIR read-only to it
    local dir=$1 rc
    shift
    case $ro_method in
    mount) unshare -m bash -c 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"' _ "$dir" "$@" ;;
    chattr) chattr +i "$dir" && { "$@"; rc=$?; chattr -i "$dir"; return $rc; } ;;
    chmod) chmod a-w "$dir" && { "$@"; rc=$?; chmod u+w "$dir"; return $rc; } ;;
    esac
}
mkdir -p "$TMP/ro_probe"
ro_method=
for method in $([ "$(id -u)" -eq 0 ] && echo mount chattr || echo chmod); do
    ro_method=$method
    read_only "$TMP/ro_probe" bash -c 'echo > "$1/written"' _ "$TMP/ro_probe" 2>/dev/null
    if [ "$?" -ne 0 ] && [ ! -e "$TMP/ro_probe/written" ] && read_only "$TMP/ro_probe" true 2>/dev/null; then break; fi
    rm -f "$TMP/ro_probe/written"
    ro_method=
done
if [ -z "$ro_method" ]; then
    echo "SKIP read_only_folder_*: no way to make a folder read-only here (as root: unshare -m with mount, or chattr +i)"
else
    cp -r "$TMP/tied" "$TMP/ro_done" && touch "$TMP/ro_done/.lock" "$TMP/ro_done/model_00000006.bin.tmp.12345"
    mkdir -p "$TMP/ro_empty"
    ro_sum=$(ls -la --time-style=+%s.%N "$TMP/ro_done" "$TMP/ro_empty" && cat "$TMP/ro_done"/* | md5sum)
    ro_done_out=$(read_only "$TMP/ro_done" $TRAINER $FAULT -x 4 -n 2 -o "$TMP/ro_done" -y 1 2>&1)
    ro_done_rc=$?
    ro_left_msg=$(read_only "$TMP/ro_done" $TRAINER $FAULT -x 6 -n 2 -o "$TMP/ro_done" -y 1 2>&1 >/dev/null)
    ro_left_rc=$?
    ro_new_msg=$(read_only "$TMP/ro_empty" $TRAINER $FAULT -x 2 -o "$TMP/ro_empty" 2>&1 >/dev/null)
    ro_new_rc=$?
    ro_changed=$([ "$(ls -la --time-style=+%s.%N "$TMP/ro_done" "$TMP/ro_empty" && cat "$TMP/ro_done"/* | md5sum)" = "$ro_sum" ] || echo "the folders changed")
    if [ "$ro_done_rc" -eq 0 ] && [ -z "$ro_changed" ] &&
        [ "$ro_done_out" = "resume: the newest checkpoint in $TMP/ro_done is at step 4, the end of -x 4: nothing to train (raise -x to go on)" ]; then
        pass "read_only_folder_finished_run_exits_0 ($ro_method)"
    else
        fail "read_only_folder_finished_run_exits_0 ($ro_method)" "rc $ro_done_rc: $ro_done_out $ro_changed"
    fi
    if [ "$ro_left_rc" -ne 0 ] && [ "$(printf '%s\n' "$ro_left_msg" | wc -l)" -eq 1 ] &&
        printf '%s' "$ro_left_msg" | grep -q "error: -o $TMP/ro_done cannot be written (.*): -y 1 would train from its checkpoint of step 4 to step 6 and write its logs and checkpoints there" &&
        [ "$ro_new_rc" -ne 0 ] && [ "$(printf '%s\n' "$ro_new_msg" | wc -l)" -eq 1 ] &&
        printf '%s' "$ro_new_msg" | grep -q "error: -o $TMP/ro_empty cannot be written (.*): a run writes its logs and checkpoints there" &&
        [ -z "$ro_changed" ]; then
        pass "read_only_folder_with_steps_left_refused ($ro_method)"
    else
        fail "read_only_folder_with_steps_left_refused ($ro_method)" "rc $ro_left_rc/$ro_new_rc: $ro_left_msg / $ro_new_msg $ro_changed"
    fi
fi

# a run that trains nothing says so: a model whose weights are huge but finite (a checkpoint's, times 1e30) makes every
# loss NaN, so every step is skipped; more than -max_skipped in a row stop the run, and a run shorter than that whose
# every step was skipped stops at its end; neither writes a checkpoint
python3 - "$TMP/tied/model_00000002.bin" "$TMP/huge_weights.bin" <<'PY'
import sys
import numpy as np
data = open(sys.argv[1], "rb").read()
weights = np.frombuffer(data[1024:], dtype=np.float32) * np.float32(1e30)
assert np.isfinite(weights).all()
open(sys.argv[2], "wb").write(data[:1024] + weights.tobytes())
PY
skip_msg=$($TRAINER $FAULT_FROM_FILE -e "$TMP/huge_weights.bin" -x 20 -n 2 -max_skipped 3 -o "$TMP/all_skipped" 2>&1 >/dev/null)
skip_rc=$?
short_msg=$($TRAINER $FAULT_FROM_FILE -e "$TMP/huge_weights.bin" -x 3 -o "$TMP/all_skipped_short" 2>&1 >/dev/null)
short_rc=$?
if [ "$skip_rc" -ne 0 ] && printf '%s' "$skip_msg" | grep -q "error: steps 1..4: 4 steps in a row skipped (non-finite loss or gradient norm), more than -max_skipped 3: the run stops" &&
    [ "$short_rc" -ne 0 ] && printf '%s' "$short_msg" | grep -q "error: all 3 steps of this run were skipped" &&
    [ -z "$(ls "$TMP/all_skipped_short" | grep -e model_ -e DONE_)" ] &&
    [ "$(ls "$TMP/all_skipped" | grep DONE_ | tr '\n' ' ')" = "DONE_00000002 " ]; then
    pass "run_that_skips_every_step_fails"
else
    fail "run_that_skips_every_step_fails" "rc $skip_rc/$short_rc: $skip_msg / $short_msg / $(ls "$TMP/all_skipped" | tr '\n' ' ')"
fi

# paths of any length the system takes: an output folder of about 1010 bytes and one of about 4000 (PATH_MAX is 4096)
# get their files under their own names, and -y 1 resumes the right step; a tokenizer beside long-path shards is found,
# and an error names a long path in full
long_path() {  # prefix, bytes: a nested folder path of about that length (a name is at most 255 bytes)
    local p=$1 part
    part=$(printf 'd%.0s' $(seq 200))
    while [ ${#p} -lt $(($2 - 201)) ]; do p="$p/$part"; done
    printf '%s/%s' "$p" "$(printf 'e%.0s' $(seq $(($2 - ${#p} - 1))))"
}
for bytes in 1010 4000; do
    dir=$(long_path "$TMP/long$bytes" "$bytes")
    mkdir -p "$dir"
    $TRAINER $FAULT -x 4 -n 2 -o "$dir" >"$TMP/long$bytes.out" 2>&1
    first_rc=$?
    $TRAINER $FAULT -x 6 -n 2 -o "$dir" -y 1 >"$TMP/long${bytes}_resume.out" 2>&1
    resume_rc=$?
    if [ "${#dir}" -eq "$bytes" ] && [ "$first_rc" -eq 0 ] && [ "$resume_rc" -eq 0 ] &&
        grep -q "resumed from .*model_00000004.bin at step 4" "$TMP/long${bytes}_resume.out" &&
        [ "$(ls "$dir" | grep -c -e '^model_0000000[246].bin$' -e '^DONE_0000000[246]$')" -eq 6 ] &&
        [ "$(find "$TMP/long$bytes" -type f | grep -v "^$dir/" | wc -l)" -eq 0 ]; then
        pass "long_output_path_$bytes"
    else
        fail "long_output_path_$bytes" "rc $first_rc/$resume_rc, ${#dir} bytes: $(tail -n 1 "$TMP/long${bytes}_resume.out")"
    fi
done
data_dir=$(long_path "$TMP/longdata" 600)
mkdir -p "$data_dir" && cp "$DATA/tiny_shakespeare_train.bin" "$DATA/tokenizer.bin" "$data_dir/"
$TRAINER -i "$data_dir/tiny_shakespeare_train.bin" -j "$DATA/tiny_shakespeare_val.bin" -L 2 -C 64 -NH 4 -b 8 -t 64 \
    -x 1 -v 0 -s 1 -g 8 >"$TMP/longdata.out" 2>&1
longdata_rc=$?
make_shard "$data_dir/bad_magic.bin" 12345 1 1000 7
long_err=$($TRAINER -i "$data_dir/bad_magic.bin" -j "$DATA/tiny_shakespeare_val.bin" -tk "$DATA/tokenizer.bin" -x 1 -v 0 2>&1 >/dev/null)
if [ "$longdata_rc" -eq 0 ] && grep -q "^generating:" "$TMP/longdata.out" &&
    printf '%s' "$long_err" | grep -qF "data shard $data_dir/bad_magic.bin has bad magic 12345"; then
    pass "long_input_paths_tokenizer_found_error_not_cut"
else
    fail "long_input_paths_tokenizer_found_error_not_cut" "rc $longdata_rc: $(grep -m 1 -e error -e sample "$TMP/longdata.out") / ${long_err:0:120}..."
fi

# the data changed between save and resume: the error names what differs (a shard now shorter than the saved position)
make_shard "$TMP/changing.bin" 20240520 1 20000 7
$TRAINER -i "$TMP/changing.bin" -j "$DATA/tiny_shakespeare_val.bin" -tk "$DATA/tokenizer.bin" -L 2 -C 64 -NH 4 -b 8 -t 64 \
    -x 8 -n 8 -v 0 -s 0 -o "$TMP/changing" >/dev/null 2>&1
make_shard "$TMP/changing.bin" 20240520 1 3000 7
changed_msg=$($TRAINER -i "$TMP/changing.bin" -j "$DATA/tiny_shakespeare_val.bin" -tk "$DATA/tokenizer.bin" -L 2 -C 64 -NH 4 \
    -b 8 -t 64 -x 10 -v 0 -s 0 -o "$TMP/changing" -y 1 2>&1 >/dev/null)
if [ "$?" -ne 0 ] && printf '%s' "$changed_msg" | grep -q "cannot resume the data at token 4096 of shard 0 ($TMP/changing.bin): that shard has only 3000 tokens now"; then
    pass "data_changed_error_names_the_shorter_shard"
else
    fail "data_changed_error_names_the_shorter_shard" "$changed_msg"
fi

finish faults
