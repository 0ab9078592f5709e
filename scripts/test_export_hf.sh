#!/usr/bin/env bash
# scripts/test_export_hf.sh — tests scripts/export_hf.py end to end: trains a small model with the CPU trainer on
# tinyshakespeare, exports it, and checks with transformers (offline, on the CPU) that
#   (a) the exported model's logits on val batches equal the trainer's own forward's (dev/model_logits) within a
#       tolerance derived below, and that an export with one weight left untransposed is caught by it;
#   (b) its mean cross-entropy over the batches the trainer evaluates equals the trainer's printed val loss;
#   (c) the exported tokenizer (AutoTokenizer) encodes the val text to exactly the val shard's ids and decodes them
#       back byte for byte, and encodes hard cases (whitespace runs, tabs, digits, non-ASCII, emoji, punctuation, a
#       random mix of every byte class) as dev/data/tokenizer does; GPT-2's own pre-tokenizer on the same vocabulary
#       does not, so the cases tell the two apart;
#   (d) a --dtype bf16 export holds the fp32 weights rounded to nearest even, bit for bit, and its logits are within a
#       bf16-derived tolerance; a version-5 (bf16) model file, written here as llm.c writes one, exports to the same
#       weights;
#   (e) bad inputs (a missing file, a file that is not a model, a truncated one, an unknown version, a NaN parameter,
#       a tokenizer of another vocabulary) each stop with one line and exit 1, leaving no output folder; a tokenizer
#       with a string learned twice or without merges is left out with one line, the model still exported;
#   (f) the output folder: one holding anything but an earlier export's files (a run folder) is refused, --force or
#       not, naming them, and left byte for byte as it was; --force replaces an earlier export, its stale tokenizer
#       files too, and a failed write (disk full, a rename failing half way) leaves it as it was; a symlink to a
#       folder is written through, a dangling one or one to a file refused;
#   (g) the run's data record (dataset.txt beside the checkpoint): its tokenizer is exported without --tokenizer, a
#       --tokenizer with other bytes is refused unless --other-tokenizer, a recorded tokenizer since changed or gone is
#       refused, no record (or one without a tokenizer) gives one warning, and a record that does not parse is an
#       error naming its line.
# Prints "export_hf: N passed, M failed" last.
set -u
cd "$(dirname "$0")/.."
. scripts/test_lib.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export TRANSFORMERS_VERBOSITY=error  # the loaders' progress bars and length warnings are not test output

# (found, not imported: importing torch and transformers takes 10 s here, and every export below does it anyway)
if ! python3 -c "import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in sys.argv[1:]))" \
    torch transformers safetensors tokenizers xxhash 2>/dev/null; then
    fail python_packages "torch, transformers, safetensors, tokenizers and xxhash must import (make deps)"
    finish export_hf
fi
# the programs come built, as for the other suites (make test builds them; a make from here would rebuild them with
# other flags under make test SANITIZE=1)
if [ ! -x ./dev/data/tokenizer ]; then fail build "./dev/data/tokenizer missing (make dev/data/tokenizer)"; finish export_hf; fi
LOGITS=./dev/model_logits
if [ ! -x "$LOGITS" ]; then fail build "$LOGITS missing (make dev/model_logits)"; finish export_hf; fi
TRAINER=./train_gpt_fp8_cpu
trainer_suite_setup export_hf
VAL=$DATA/tiny_shakespeare_val.bin

# Every export imports torch and transformers, 10-12 s of its 12 s here: after the first (the script itself, as a user
# runs it), the exports and the Pythons that import transformers run in children forked from one Python that imported
# them once (scripts/preloaded_python.py, started now so it imports while the model trains). Each is still a process
# of its own, with its own pid, exit status and files. The quick refusals (before export_hf.py's imports) run the
# script itself.
mkfifo "$TMP/requests" "$TMP/answers"
python3 scripts/preloaded_python.py "$TMP/requests" "$TMP/answers" >"$TMP/preloaded.log" 2>&1 &
exec 7>"$TMP/requests" 8<"$TMP/answers"
preloaded_requests=0
preloaded() {  # script args...: python3 SCRIPT ARGS </dev/null, its stdout, stderr and exit status this function's
    local request=$TMP/request.$((++preloaded_requests)) rc
    if [ "$preloaded_requests" -eq 1 ] && { ! read -r preloaded_ready <&8 || [ "$preloaded_ready" != ready ]; }; then
        preloaded_ready="preloaded_python.py: ${preloaded_ready:-ended}"
    fi
    [ "$preloaded_ready" = ready ] || { echo "$preloaded_ready" >&2; return 99; }
    printf '%s\0' "$request.out" "$request.err" "$@" >"$request"
    echo "$request" >&7
    read -r rc <&8 || { echo "preloaded_python.py ended" >&2; return 99; }
    cat "$request.out"
    cat "$request.err" >&2
    return "$rc"
}
EXPORT="python3 scripts/export_hf.py"  # the script itself, as a user runs it: the first export, the quick refusals
FULL_EXPORT=$EXPORT                     # the exports that get as far as torch: preloaded after the first

# the model: 40 steps of a small one (fp32, so the steps are quick; a checkpoint holds fp32 masters in any precision)
B=4
T=64
M=4  # val batches the trainer evaluates, and the HF side recomputes
if ! $TRAINER $DATA_FLAGS -L 2 -C 64 -NH 4 -b $B -t $T -x 40 -l 3e-3 -s 0 -v 0 -seed 1337 -precision fp32 \
    -o "$TMP/run" >"$TMP/train.log" 2>&1 || [ ! -f "$TMP/run/model_00000040.bin" ]; then
    fail train "$(tail -n 3 "$TMP/train.log")"
    finish export_hf
fi
MODEL=$TMP/run/model_00000040.bin

# the trainer's numbers: the logits of its M val batches (batch i from OFFSET i*B*T), and its val loss over them
for i in $(seq 0 $((M - 1))); do
    if ! $LOGITS "$MODEL" "$VAL" $B $T "$TMP/logits_$i.f32" $((i * B * T)) >"$TMP/logits_$i.log" 2>&1; then
        fail model_logits "$(cat "$TMP/logits_$i.log")"
        finish export_hf
    fi
done
val_line=$($TRAINER $DATA_FLAGS -e "$MODEL" -x 0 -precision fp32 -m $M -b $B -t $T -s 0 2>&1 | grep '^val loss ')
if [ -z "$val_line" ]; then fail trainer_val_loss "no 'val loss' line from -x 0"; finish export_hf; fi
./dev/data/tokenizer decode -k "$DATA/tokenizer.bin" -i "$VAL" -o "$TMP/val.txt" >/dev/null

# the exports
export_ok() {  # name, outdir, args...: exit 0 and the folder's files
    local name=$1 out=$2
    shift 2
    if $FULL_EXPORT "$@" "$out" >"$TMP/$name.log" 2>&1 && [ -f "$out/config.json" ] &&
        [ -f "$out/model.safetensors" ]; then
        pass "$name"
    else
        fail "$name" "$(tail -n 2 "$TMP/$name.log")"
    fi
}
export_ok export_fp32 "$TMP/hf_fp32" "$MODEL" --tokenizer "$DATA/tokenizer.bin"
[ -f "$TMP/hf_fp32/tokenizer.json" ] && [ -f "$TMP/hf_fp32/tokenizer_config.json" ] && pass tokenizer_written ||
    fail tokenizer_written "no tokenizer.json/tokenizer_config.json in $TMP/hf_fp32"
FULL_EXPORT="preloaded scripts/export_hf.py"
export_ok export_bf16 "$TMP/hf_bf16" "$MODEL" --dtype bf16

# small files written as llm.c and our tokenizer write them: the trained model as version 5 (bf16, round to nearest
# even, as train_gpt2.py's write_model); a random model of V 261; a tokenizer for it with the string "abc" learned
# twice (256 ab, 257 bc, 258 ab+c, 259 a+bc, 260 eot), and the same vocabulary without merges (as llm.c's
# gpt2_tokenizer.bin); the trained model damaged three ways (truncated, version 4, a NaN)
python3 - "$MODEL" "$TMP" <<'PY'
import struct, sys
import numpy as np
model, tmp = sys.argv[1], sys.argv[2]
raw = open(model, "rb").read()
header = np.frombuffer(raw[:1024], dtype="<i4").copy()
params = np.frombuffer(raw[1024:], dtype="<f4")
bits = params.view("<u4").astype(np.uint64)
bf16 = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")  # round to nearest even (all values finite)
header[1] = 5
open(f"{tmp}/model_v5.bin", "wb").write(header.tobytes() + bf16.tobytes())
# damaged copies of the trained model
open(f"{tmp}/truncated.bin", "wb").write(raw[:-100])
bad_version = header.copy()
bad_version[1] = 4
open(f"{tmp}/bad_version.bin", "wb").write(bad_version.tobytes() + raw[1024:])
nan = params.copy()
nan[12345] = np.nan
open(f"{tmp}/nan.bin", "wb").write(raw[:1024] + nan.tobytes())
# the V 261 model: maxT 8, L 1, NH 2, C 8, Vp 384
maxT, V, L, NH, C, Vp = 8, 261, 1, 2, 8, 384
h = np.zeros(256, dtype="<i4")
h[:8] = [20240326, 3, maxT, V, L, NH, C, Vp]
n = Vp * C + maxT * C + L * (C + C + 3 * C * C + 3 * C + C * C + C + C + C + 4 * C * C + 4 * C + 4 * C * C + C) + 2 * C
rng = np.random.default_rng(0)
open(f"{tmp}/small.bin", "wb").write(h.tobytes() + (0.02 * rng.standard_normal(n)).astype("<f4").tobytes())
tokens = [bytes([b]) for b in range(256)] + [b"ab", b"bc", b"abc", b"abc", b"<|endoftext|>"]
th = np.zeros(256, dtype="<i4")
th[:4] = [20240328, 2, len(tokens), len(tokens) - 1]
body = b"".join(bytes([len(t)]) + t for t in tokens)
for name in ("twice", "nomerges"):
    open(f"{tmp}/{name}.bin", "wb").write(th.tobytes() + body)
merges = [(97, 98), (98, 99), (256, 99), (97, 257)]
open(f"{tmp}/twice.merges", "wb").write(struct.pack("<3i", 20241123, 1, len(merges)) +
                                        b"".join(struct.pack("<2i", a, b) for a, b in merges))
PY
export_ok export_v5 "$TMP/hf_v5" "$TMP/model_v5.bin"
export_ok export_v5_to_fp32 "$TMP/hf_v5_fp32" "$TMP/model_v5.bin" --dtype fp32
# left out with one line, the model exported
note_only() {  # name, tokenizer, expected text of the note
    local name=$1 tokenizer=$2 expected=$3
    rm -rf "$TMP/hf_$name"
    out=$($FULL_EXPORT "$TMP/small.bin" "$TMP/hf_$name" --tokenizer "$tokenizer" 2>&1)
    notes=$(printf '%s\n' "$out" | grep -c 'tokenizer not exported')
    if [ "$notes" -eq 1 ] && printf '%s\n' "$out" | grep -q "$expected" &&
        [ -f "$TMP/hf_$name/model.safetensors" ] && [ ! -e "$TMP/hf_$name/tokenizer.json" ]; then
        pass "$name"
    else
        fail "$name" "expected one 'tokenizer not exported' line with '$expected' and the model alone; got: $out"
    fi
}
note_only tokenizer_string_twice "$TMP/twice.bin" "ids 258 and 259 .* are both b'abc'"
note_only tokenizer_without_merges "$TMP/nomerges.bin" 'stock tokenizer, AutoTokenizer.from_pretrained("gpt2")'

# errors: one line on stderr naming the problem, exit 1, no output folder (nor its temporary) left
expect_error() {  # name, expected text, args...
    local name=$1 expected=$2
    shift 2
    local out=$TMP/err_$name
    $EXPORT "$@" "$out" >"$TMP/err.out" 2>"$TMP/err.txt"
    local rc=$?
    if [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/err.txt")" -eq 1 ] && grep -q "^export_hf: error: .*$expected" "$TMP/err.txt" &&
        [ ! -s "$TMP/err.out" ] && [ ! -e "$out" ] && [ -z "$(ls -d "$out".* 2>/dev/null)" ]; then
        pass "error_$name"
    else
        fail "error_$name" "exit $rc, stderr: $(head -c 400 "$TMP/err.txt"), stdout: $(head -c 200 "$TMP/err.out")"
    fi
}
mkdir -p "$TMP/bare" && cp "$MODEL" "$TMP/bare/model.bin"  # the model with no run record beside it
BARE=$TMP/bare/model.bin
expect_error missing_checkpoint "cannot open model file .*: no such file" "$TMP/no_such_model.bin"
expect_error not_a_model "not a model file (magic 20240328" "$DATA/tokenizer.bin"
expect_error truncated "truncated model file" "$TMP/truncated.bin"
expect_error bad_version "model file version 4 is not supported" "$TMP/bad_version.bin"
expect_error nan_parameter "parameter 12345, wte\[12345\], is not finite" "$TMP/nan.bin"
expect_error vocab_mismatch "has 261 tokens but the model has a vocabulary of 1024" "$BARE" --tokenizer "$TMP/twice.bin"
expect_error missing_tokenizer "cannot open tokenizer" "$BARE" --tokenizer "$TMP/no_such_tokenizer.bin"
expect_error other_tokenizer_alone "--other-tokenizer goes with --tokenizer" "$BARE" --other-tokenizer

# refused EXPECTED ARGS...: exit 1, one line on stderr matching EXPECTED, nothing on stdout (else the reason in $why)
refused() {
    local expected=$1
    shift
    $EXPORT "$@" >"$TMP/refused.out" 2>"$TMP/refused.err"
    local rc=$?
    why="exit $rc, stderr: $(head -c 400 "$TMP/refused.err"), stdout: $(head -c 200 "$TMP/refused.out")"
    [ $rc -eq 1 ] && [ "$(wc -l <"$TMP/refused.err")" -eq 1 ] && [ ! -s "$TMP/refused.out" ] &&
        grep -q "^export_hf: error: .*$expected" "$TMP/refused.err"
}
# exported ARGS...: exit 0, its output in $TMP/exported.out and .err (else the reason in $why)
exported() {
    $FULL_EXPORT "$@" >"$TMP/exported.out" 2>"$TMP/exported.err"
    local rc=$?
    why="exit $rc, stderr: $(head -c 400 "$TMP/exported.err"), stdout: $(head -c 300 "$TMP/exported.out")"
    [ $rc -eq 0 ]
}
# snapshot DIR: every path under DIR, hidden ones too, and every file's checksum: equal snapshots, nothing changed
snapshot() { (cd "$1" && find . | LC_ALL=C sort && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r md5sum); }
no_siblings() { [ -z "$(ls -d "$1".?* 2>/dev/null)" ]; }  # no OUTDIR.tmp.PID or the like left beside OUTDIR

# the output folder holds only what an export writes, or it is refused, --force or not, naming what is in the way and
# changing nothing: a run folder (checkpoints, state, log, and a config.json as an earlier export's) ...
RUNDIR=$TMP/run_folder
mkdir -p "$RUNDIR" && cp "$MODEL" "$RUNDIR/model_00000040.bin" && cp "$TMP/hf_fp32/config.json" "$RUNDIR/" &&
    head -c 5000 /dev/urandom >"$RUNDIR/state_00000040_00000.bin" && echo "step 40" >"$RUNDIR/main.log" &&
    touch "$RUNDIR/DONE_00000040"
before=$(snapshot "$RUNDIR")
for flag in --force ""; do
    name=force_keeps_run_folder
    [ -z "$flag" ] && name=error_run_folder
    if refused "$RUNDIR holds 4 files an export does not write (DONE_00000040, main.log, model_00000040.bin and 1 more)" \
        "$MODEL" "$RUNDIR" $flag && [ "$(snapshot "$RUNDIR")" = "$before" ] && no_siblings "$RUNDIR"; then
        pass $name
    else
        fail $name "$why; $RUNDIR now holds: $(ls -A "$RUNDIR" | tr '\n' ' ')"
    fi
done
# ... or a folder with one file of the user's
mkdir -p "$TMP/occupied" && echo keep >"$TMP/occupied/file.txt"
if refused "holds 1 file an export does not write (file.txt)" "$MODEL" "$TMP/occupied" --force &&
    [ "$(ls -A "$TMP/occupied")" = file.txt ] && [ "$(cat "$TMP/occupied/file.txt")" = keep ] &&
    no_siblings "$TMP/occupied"; then
    pass error_outdir_not_empty
else
    fail error_outdir_not_empty "$why"
fi
# an earlier export: refused without --force; a failed export (the disk full while writing, a rename failing while
# moving the new files in) leaves it as it was; --force replaces it, and its tokenizer files go with it when the new
# export writes none (they would not belong to the new model)
EARLIER=$TMP/earlier_export
cp -r "$TMP/hf_fp32" "$EARLIER"
before=$(snapshot "$EARLIER")
if refused "$EARLIER exists and is not empty (an earlier export: --force replaces it)" "$TMP/small.bin" "$EARLIER" &&
    [ "$(snapshot "$EARLIER")" = "$before" ]; then
    pass error_earlier_export_needs_force
else
    fail error_earlier_export_needs_force "$why"
fi
cat >"$TMP/failed_writes.py" <<'PY'
import glob, os, sys
sys.path.insert(0, "scripts")
import export_hf
import safetensors.torch

model, outdir = sys.argv[1], sys.argv[2]
sys.argv = ["export_hf.py", model, outdir, "--force"]


def snapshot():  # every path under outdir and its bytes, and what lies beside it
    found = {}
    for root, dirs, files in os.walk(outdir):
        for name in dirs + files:
            path = os.path.join(root, name)
            found[os.path.relpath(path, outdir)] = open(path, "rb").read() if os.path.isfile(path) else None
    return found, sorted(glob.glob(glob.escape(outdir) + ".?*"))


def failed_export(name, cause):
    before = snapshot()
    try:
        export_hf.main()
        error = None
    except export_hf.ExportError as e:
        error = str(e)
    after = snapshot()
    ok = error is not None and f"writing {outdir} failed" in error and after == before
    print(f"PASS {name}" if ok else f"FAIL {name}: {cause}: error {error!r}, folder "
          f"{'unchanged' if after[0] == before[0] else 'CHANGED: ' + ' '.join(sorted(after[0]))}, beside it "
          f"{after[1]}", flush=True)


real_save = safetensors.torch.save_file


def disk_full(*args, **kwargs):
    raise OSError(28, "No space left on device")


safetensors.torch.save_file = disk_full
failed_export("failed_write_keeps_export", "save_file raising ENOSPC")
safetensors.torch.save_file = real_save

# the rename that puts the new model.safetensors into place fails (once): what was moved so far goes back
real_rename, fired = os.rename, []


def flaky_rename(src, dst, *args, **kwargs):
    if not fired and os.path.abspath(dst) == os.path.abspath(os.path.join(outdir, "model.safetensors")):
        fired.append(src)
        raise OSError(5, "Input/output error")
    return real_rename(src, dst, *args, **kwargs)


os.rename = flaky_rename
failed_export("failed_commit_keeps_export", f"rename into place failing (fired: {bool(fired)})")
os.rename = real_rename
PY
preloaded "$TMP/failed_writes.py" "$TMP/small.bin" "$EARLIER" >"$TMP/failed_writes.txt" 2>&1
rc=$?
grep -q '^FAIL\|^PASS' "$TMP/failed_writes.txt" || fail failed_writes "exit $rc: $(tail -n 3 "$TMP/failed_writes.txt")"
while IFS= read -r line; do
    case $line in
        "PASS "*) pass "${line#PASS }" ;;
        "FAIL "*) rest=${line#FAIL }; fail "${rest%%: *}" "${rest#*: }" ;;
    esac
done <"$TMP/failed_writes.txt"
if exported "$TMP/small.bin" "$EARLIER" --force &&
    [ "$(ls -A "$EARLIER" | tr '\n' ' ')" = "config.json generation_config.json model.safetensors " ] &&
    grep -q '"vocab_size": 261' "$EARLIER/config.json" && no_siblings "$EARLIER"; then
    pass force_replaces_export
else
    fail force_replaces_export "$why; $EARLIER now holds: $(ls -A "$EARLIER" | tr '\n' ' ')"
fi

# a symlink to a folder is that folder: the export goes into the folder, the link stays; a dangling link or one to a
# file is refused saying so, and left alone
mkdir -p "$TMP/link target"
ln -s "$TMP/link target" "$TMP/link_to_folder"
if exported "$TMP/small.bin" "$TMP/link_to_folder/" && [ -L "$TMP/link_to_folder" ] &&
    [ "$(readlink "$TMP/link_to_folder")" = "$TMP/link target" ] && [ -f "$TMP/link target/model.safetensors" ] &&
    grep -q '"vocab_size": 261' "$TMP/link target/config.json" && no_siblings "$TMP/link_to_folder" &&
    no_siblings "$TMP/link target"; then
    pass symlink_to_folder
else
    fail symlink_to_folder "$why; $TMP/link_to_folder: $(ls -ld "$TMP/link_to_folder")"
fi
ln -s "$TMP/no_such_folder" "$TMP/link_dangling"
if refused "$TMP/link_dangling is a symlink to $TMP/no_such_folder, which does not exist" "$TMP/small.bin" \
    "$TMP/link_dangling" && [ "$(readlink "$TMP/link_dangling")" = "$TMP/no_such_folder" ] &&
    [ ! -e "$TMP/no_such_folder" ] && no_siblings "$TMP/link_dangling"; then
    pass error_symlink_dangling
else
    fail error_symlink_dangling "$why"
fi
ln -s "$TMP/small.bin" "$TMP/link_to_file"
small_sum=$(md5sum <"$TMP/small.bin")
if refused "$TMP/link_to_file is a symlink to $TMP/small.bin, which is not a folder" "$MODEL" "$TMP/link_to_file" \
    --force && [ -L "$TMP/link_to_file" ] && [ "$(md5sum <"$TMP/small.bin")" = "$small_sum" ]; then
    pass error_symlink_to_file
else
    fail error_symlink_to_file "$why"
fi

# the run's record of its data (dataset.txt beside the checkpoint, as the trainers write it): the tokenizer it names
# is exported when --tokenizer is not given, and checked by its XXH3 against the one given
xxh3() { python3 -c 'import sys, xxhash; print(xxhash.xxh3_64_hexdigest(open(sys.argv[1], "rb").read()))' "$1"; }
record_line() { printf '%s\t%s\t%s\t%s\n' "$1" "$(wc -c <"$2")" "$(xxh3 "$2")" "$2"; }  # kind, absolute path
ABS_DATA=$PWD/$DATA
SHARD_LINES=$(printf 'train\t%s\nval\t%s\n' "$ABS_DATA/tiny_shakespeare_train*.bin" "$ABS_DATA/tiny_shakespeare_val*.bin"
    record_line train_shard "$ABS_DATA/tiny_shakespeare_train.bin"
    record_line val_shard "$ABS_DATA/tiny_shakespeare_val.bin")
run_with_record() {  # folder, the record's text: a run folder holding the trained model and that dataset.txt
    mkdir -p "$1" && cp "$MODEL" "$1/model_00000040.bin" && printf '%s\n' "$2" >"$1/dataset.txt"
}
tokenizer_copy() {  # folder: our tokenizer (and its merges) copied there
    mkdir -p "$1" && cp "$DATA/tokenizer.bin" "$DATA/tokenizer.merges" "$1/"
}
tokenizer_copy "$TMP/tok dir"  # a path with a space, as the record allows
GOOD_RECORD=$(printf 'gptfp8 run data 1\n# a comment\n'; record_line tokenizer "$TMP/tok dir/tokenizer.bin"; echo "$SHARD_LINES")
run_with_record "$TMP/rec_good" "$GOOD_RECORD"
# the same vocabulary and merges, a different file (an unused header field set): loads, but is not the recorded one
mkdir -p "$TMP/other_tok" && cp "$DATA/tokenizer.merges" "$TMP/other_tok/" &&
    python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[40] = 1; open(sys.argv[2], "wb").write(d)' \
        "$DATA/tokenizer.bin" "$TMP/other_tok/tokenizer.bin"  # header int 10: unused
if exported "$TMP/rec_good/model_00000040.bin" "$TMP/hf_recorded" && [ ! -s "$TMP/exported.err" ] &&
    [ "$(grep -c "tokenizer: $TMP/tok dir/tokenizer.bin, the one the run recorded in $TMP/rec_good/dataset.txt" \
        "$TMP/exported.out")" -eq 1 ] && cmp -s "$TMP/hf_recorded/tokenizer.json" "$TMP/hf_fp32/tokenizer.json"; then
    pass record_tokenizer_used
else
    fail record_tokenizer_used "$why"
fi
if exported "$TMP/rec_good/model_00000040.bin" "$TMP/hf_recorded_same" --tokenizer "$DATA/tokenizer.bin" &&
    [ ! -s "$TMP/exported.err" ] && [ -f "$TMP/hf_recorded_same/tokenizer.json" ]; then
    pass record_tokenizer_same_bytes
else
    fail record_tokenizer_same_bytes "$why"
fi
other_sum=$(xxh3 "$TMP/other_tok/tokenizer.bin")
recorded_sum=$(xxh3 "$TMP/tok dir/tokenizer.bin")
if refused "--tokenizer $TMP/other_tok/tokenizer.bin (XXH3 $other_sum) is not the tokenizer the model was trained \
with ($TMP/tok dir/tokenizer.bin, XXH3 $recorded_sum, recorded in $TMP/rec_good/dataset.txt): --other-tokenizer" \
    "$TMP/rec_good/model_00000040.bin" "$TMP/hf_other" --tokenizer "$TMP/other_tok/tokenizer.bin" &&
    [ ! -e "$TMP/hf_other" ]; then
    pass error_tokenizer_not_recorded_one
else
    fail error_tokenizer_not_recorded_one "$why"
fi
if exported "$TMP/rec_good/model_00000040.bin" "$TMP/hf_other" --tokenizer "$TMP/other_tok/tokenizer.bin" \
    --other-tokenizer && [ "$(wc -l <"$TMP/exported.err")" -eq 1 ] &&
    grep -q "^export_hf: warning: --tokenizer $TMP/other_tok/tokenizer.bin .* is not the tokenizer the model was trained with" \
        "$TMP/exported.err" && [ -f "$TMP/hf_other/tokenizer.json" ]; then
    pass other_tokenizer_flag
else
    fail other_tokenizer_flag "$why"
fi
# the recorded tokenizer changed since, or gone: refused, naming it and the flags
tokenizer_copy "$TMP/tok changed"
run_with_record "$TMP/rec_changed" "$(printf 'gptfp8 run data 1\n'; record_line tokenizer "$TMP/tok changed/tokenizer.bin")"
printf 'x' >>"$TMP/tok changed/tokenizer.bin"
expect_error record_tokenizer_changed \
    "$TMP/tok changed/tokenizer.bin has changed since the run recorded it in $TMP/rec_changed/dataset.txt .*--tokenizer .*--other-tokenizer" \
    "$TMP/rec_changed/model_00000040.bin"
tokenizer_copy "$TMP/tok gone"
run_with_record "$TMP/rec_gone" "$(printf 'gptfp8 run data 1\n'; record_line tokenizer "$TMP/tok gone/tokenizer.bin")"
rm -r "$TMP/tok gone"
expect_error record_tokenizer_gone \
    "$TMP/rec_gone/dataset.txt records the tokenizer $TMP/tok gone/tokenizer.bin, which is gone: .*--tokenizer .*--other-tokenizer" \
    "$TMP/rec_gone/model_00000040.bin"
# no record (llm.c's files, a copied model), or a run without a tokenizer: --tokenizer goes unchecked, with one warning
if exported "$BARE" "$TMP/hf_no_record" --tokenizer "$DATA/tokenizer.bin" && [ "$(wc -l <"$TMP/exported.err")" -eq 1 ] &&
    grep -q "^export_hf: warning: .*no record of the tokenizer it was trained with.*cannot check" "$TMP/exported.err" &&
    [ -f "$TMP/hf_no_record/tokenizer.json" ]; then
    pass no_record_warning
else
    fail no_record_warning "$why"
fi
run_with_record "$TMP/rec_no_tokenizer" "$(printf 'gptfp8 run data 1\n'; echo "$SHARD_LINES")"
if exported "$TMP/rec_no_tokenizer/model_00000040.bin" "$TMP/hf_rec_no_tokenizer" --tokenizer "$DATA/tokenizer.bin" &&
    [ "$(wc -l <"$TMP/exported.err")" -eq 1 ] &&
    grep -q "^export_hf: warning: $TMP/rec_no_tokenizer/dataset.txt records no tokenizer.*cannot check" "$TMP/exported.err" &&
    [ -f "$TMP/hf_rec_no_tokenizer/tokenizer.json" ]; then
    pass record_without_tokenizer_warning
else
    fail record_without_tokenizer_warning "$why"
fi
# a record that does not parse: one line naming the file and the line
bad_record() {  # name, expected, the record's text
    run_with_record "$TMP/rec_$1" "$3"
    expect_error "record_$1" "$TMP/rec_$1/dataset.txt:$2" "$TMP/rec_$1/model_00000040.bin"
}
TOK_LINE=$(record_line tokenizer "$TMP/tok dir/tokenizer.bin")
bad_record header "1: not a run's data record" "$(printf 'gptfp8 run data 2\n%s' "$TOK_LINE")"
bad_record field_count "3: tokenizer record has 3 fields, expected 4" \
    "$(printf 'gptfp8 run data 1\n# c\n%s' "$(printf '%s' "$TOK_LINE" | cut -f1,3,4)")"
bad_record extra_field "2: train record has 3 fields, expected 2" \
    "$(printf 'gptfp8 run data 1\ntrain\t/a/*.bin\t/b/*.bin')"
bad_record bad_hex "2: bad XXH3 'ABCDEF0123456789' (16 lowercase hex digits)" \
    "$(printf 'gptfp8 run data 1\ntokenizer\t10\tABCDEF0123456789\t/x/tokenizer.bin')"
bad_record bad_size "2: bad byte count '1e3'" \
    "$(printf 'gptfp8 run data 1\nval_shard\t1e3\t0123456789abcdef\t/x/val.bin')"
bad_record relative_path "2: the path 'tok/tokenizer.bin' is not absolute" \
    "$(printf 'gptfp8 run data 1\ntokenizer\t10\t0123456789abcdef\ttok/tokenizer.bin')"
bad_record unknown "3: unknown record 'shard'" "$(printf 'gptfp8 run data 1\n%s\nshard\t/x' "$TOK_LINE")"
bad_record two_tokenizers "3: a second tokenizer record" "$(printf 'gptfp8 run data 1\n%s\n%s' "$TOK_LINE" "$TOK_LINE")"

# the checks that need transformers, in one Python process (torch's import is most of its time): one line each,
# "PASS name" or "FAIL name: why", counted below
cat >"$TMP/checks.py" <<'PY'
import os, random, subprocess, sys
import numpy as np
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2LMHeadModel

tmp, B, T, M, val_path, tokenizer_bin, val_line = sys.argv[1], *map(int, sys.argv[2:5]), *sys.argv[5:8]
torch.set_num_threads(2)


def check(name, ok, why=""):
    print(f"PASS {name}" if ok else f"FAIL {name}: {why}", flush=True)


val = np.fromfile(val_path, dtype="<u2", offset=1024).astype(np.int64)


def batch(i):  # the trainer's i-th val batch (llmc/dataloader.h, one process): B*T + 1 tokens from i*B*T
    window = torch.from_numpy(val[i * B * T:(i + 1) * B * T + 1])
    return window[:-1].view(B, T), window[1:].view(B, T)


def logits_of(model, x):
    with torch.no_grad():
        return model(x).logits.float()


def reference(i):
    return torch.from_numpy(np.fromfile(f"{tmp}/logits_{i}.f32", dtype="<f4").reshape(B, T, -1))


fp32 = GPT2LMHeadModel.from_pretrained(f"{tmp}/hf_fp32").eval()
config = fp32.config
L, C = config.n_layer, config.n_embd
V = config.vocab_size

# (a) Tolerance for fp32 against fp32: the same arithmetic in other orders (our GEMMs sum each dot product serially,
# torch's in blocks; sdpa, LayerNorm's mean and variance, tanh and exp come from other code). A dot product of K
# terms summed in any order is within K * eps32 * sum |terms| of the exact one (eps32 = 2^-23, counting the rounding
# of both sides), the longest in the forward is fc projection's K = 4C (the LM head's C, attention's T <= 4C here),
# each of the L blocks and the head adds its own error to what it passes on, and every logit is a sum of terms no
# larger than the largest logit in magnitude (after LayerNorm): tol = eps32 * 4C * (L + 1) * max|logit|.
# Worst-case rounding errors add up linearly; real ones mostly cancel (they grow as sqrt(K)), so the measured
# difference must sit far below it (we ask 10x) while any wrong weight moves logits by O(1).
eps32 = 2.0 ** -23
worst_a = 0.0
ref = {i: reference(i) for i in range(M)}
scale = max(1.0, max(float(r.abs().max()) for r in ref.values()))
tol_a = eps32 * 4 * C * (L + 1) * scale
hf_logits = {i: logits_of(fp32, batch(i)[0]) for i in range(M)}
for i in range(M):
    worst_a = max(worst_a, float((hf_logits[i] - ref[i]).abs().max()))
check("logits_fp32", tuple(ref[0].shape) == (B, T, V) and worst_a <= tol_a / 10,
      f"max |HF - trainer| {worst_a:.3g}, tolerance {tol_a:.3g} / 10 (shape {tuple(ref[0].shape)})")
print(f"# (a) fp32 logits: max |HF - trainer| {worst_a:.3g} over {M} batches, tolerance {tol_a:.3g} "
      f"(max |logit| {scale:.3g})", flush=True)
# the tolerance catches a wrong export: block 0's attention projection left as (out, in) (square, so it loads)
wrong = load_file(f"{tmp}/hf_fp32/model.safetensors")
wrong["transformer.h.0.attn.c_proj.weight"] = wrong["transformer.h.0.attn.c_proj.weight"].T.contiguous()
wrong_model = GPT2LMHeadModel(config).eval()
wrong_model.load_state_dict(wrong, strict=False)  # lm_head.weight is tied to wte
wrong_model.tie_weights()
wrong_diff = float((logits_of(wrong_model, batch(0)[0]) - ref[0]).abs().max())
check("logits_catch_untransposed_weight", wrong_diff > tol_a,
      f"an untransposed attn.c_proj moved logits by {wrong_diff:.3g} only, tolerance {tol_a:.3g}")
print(f"# (a) untransposed block-0 attn.c_proj: max |HF - trainer| {wrong_diff:.3g}", flush=True)

# (b) The trainer's val loss over M batches: the mean of each batch's mean cross-entropy, which we take in double
# from the HF logits. A row's cross-entropy, logsumexp(logits) - logit[target], moves by at most 2 max|d logit|
# (logsumexp is 1-Lipschitz in the max norm), and (a) measured max|d logit| on exactly these batches: 2 worst_a.
# The trainer evaluates it in float (softmax_forward, crossentropy_forward): the sum of V exponentials in order is
# within V eps32 of itself relatively, the exponentials, the division and logf add about 3 eps32, all relative
# errors of p that -log turns into absolute ones: (V + 3) eps32. Its batch mean is stored as a float (eps32 * loss),
# and the print rounds to 6 decimals (0.5e-6).
printed = float(val_line.split()[-1])
losses = []
for i in range(M):
    y = batch(i)[1]
    losses.append(float(torch.nn.functional.cross_entropy(hf_logits[i].view(-1, V).double(), y.reshape(-1))))
hf_val = sum(losses) / M
tol_b = 2 * worst_a + (V + 3) * eps32 + eps32 * abs(printed) + 0.5e-6
check("val_loss", abs(hf_val - printed) <= tol_b,
      f"HF {hf_val:.6f}, trainer printed {printed:.6f}, tolerance {tol_b:.3g}")
print(f"# (b) val loss over {M} batches: HF {hf_val:.7f}, trainer {val_line.split()[-1]}, |diff| "
      f"{abs(hf_val - printed):.3g}, tolerance {tol_b:.3g}", flush=True)
batch_losses = []
for i in range(M):
    with open(f"{tmp}/logits_{i}.log") as f:
        batch_losses.append(float([line for line in f if line.startswith("mean loss ")][0].split()[-1]))
check("model_logits_loss", all(abs(losses[i] - batch_losses[i]) <= tol_b for i in range(M)),
      f"HF batch losses {[round(x, 6) for x in losses]}, model_logits printed {batch_losses}")

# loads through the Auto classes too
auto = AutoModelForCausalLM.from_pretrained(f"{tmp}/hf_fp32").eval()
check("auto_model", type(auto).__name__ == "GPT2LMHeadModel" and torch.equal(logits_of(auto, batch(0)[0]),
                                                                             logits_of(fp32, batch(0)[0])),
      f"AutoModelForCausalLM gave {type(auto).__name__}")
check("config", config.activation_function == "gelu_new" and config.layer_norm_epsilon == 1e-5 and
      config.tie_word_embeddings and config.eos_token_id == V - 1 and config.bos_token_id == V - 1 and
      config.n_positions == T and fp32.dtype == torch.float32,
      f"{config.activation_function} {config.layer_norm_epsilon} {config.tie_word_embeddings} {config.eos_token_id} "
      f"{config.n_positions} {fp32.dtype}")

# (c) the tokenizer
tok = AutoTokenizer.from_pretrained(f"{tmp}/hf_fp32")
check("tokenizer_loads", tok.is_fast and tok.eos_token_id == V - 1 and tok.bos_token_id == V - 1 and
      tok.unk_token_id == V - 1 and tok.eos_token == "<|endoftext|>", f"{type(tok).__name__} eos {tok.eos_token_id}")
text_bytes = open(f"{tmp}/val.txt", "rb").read()
text = text_bytes.decode("utf-8")
ids = tok(text)["input_ids"]
expected = val[1:].tolist()  # the shard starts with the eot token, which encoding the text does not add
first = next((k for k, (a, b) in enumerate(zip(ids, expected)) if a != b), min(len(ids), len(expected)))
check("tokenizer_val_text", val[0] == V - 1 and ids == expected,
      f"{len(ids)} ids vs {len(expected)} in the shard, first difference at {first}")
check("tokenizer_decode_val", tok.decode(ids).encode("utf-8") == text_bytes, "decode(encode(val text)) differs")
cases = ["\n\n  x", "a  \n b", "\tx\t\ty \t z", "a \t b", "trailing   ", "   ", " ", "\n", " \n", "\n \n  \n   x",
         "123 4567 89a x1", "café é", "日本語 日本", "emoji 🙂🙂 x🙂", "?!... -- ;;", "don't 'quoted'", "a\r\nb",
         "\v\f x", "The  quick\n\n\nbrown", "speak.\n\nAll:\nx", "x\x00y\x7f z", "\xa0a \u0085 \u2028 b",
         "  leading", "tab\t\n x", "a<|endoftext|>b"]
alphabet = [" ", " ", " ", "\t", "\n", "\r", "\v", "\f", "a", "e", "Z", "1", "7", ".", "!", "'", "é", "日", "🙂",
            "\x00", "\x7f", "\xa0", "\u0085", "\u2028", "th", "the ", " and"]
rng = random.Random(1)
cases.append("".join(rng.choice(alphabet) for _ in range(20000)))  # every class next to every other


def c_encode(s, k):  # dev/data/tokenizer encode of s, its eot tokens (split and document starts) left out
    path = f"{tmp}/case_{k}.txt"
    with open(path, "wb") as f:
        f.write(s.encode("utf-8"))
    subprocess.run(["./dev/data/tokenizer", "encode", "-i", path, "-k", tokenizer_bin, "-o", f"{tmp}/case_{k}",
                    "-f", "0"], check=True, capture_output=True)
    out = []
    for split in ("val", "train"):
        out += [t for t in np.fromfile(f"{tmp}/case_{k}_{split}.bin", dtype="<u2", offset=1024).tolist() if t != V - 1]
    return out


c_ids = [c_encode(s, k) for k, s in enumerate(cases)]
bad = [repr(s[:30]) for s, c in zip(cases, c_ids) if tok(s)["input_ids"] != c or tok.decode(c) != s]
check("tokenizer_hard_cases", not bad, f"differ from dev/data/tokenizer: {', '.join(bad[:4])}")
# the checks tell a wrong pre-tokenizer apart: GPT-2's own (its regex, on the same vocabulary and merges) splits
# "\n\nAll" as "\n", "\n", "All" where next_piece() keeps "\n\n" (a run not ending in ' ' stays whole), so it
# differs on the val text and on the cases that hold such a run
from tokenizers import Tokenizer, pre_tokenizers
gpt2_style = Tokenizer.from_file(f"{tmp}/hf_fp32/tokenizer.json")
gpt2_style.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
differ = sum(gpt2_style.encode(s).ids != c for s, c in zip(cases, c_ids))
val_differs = gpt2_style.encode(text).ids != expected
check("tokenizer_checks_catch_gpt2_regex", val_differs and differ >= 2,
      f"GPT-2's pre-tokenizer passes: val text {'differs' if val_differs else 'identical'}, {differ} cases differ")
print(f"# (c) val text: {len(ids)} tokens, {'identical' if ids == expected else 'DIFFERENT'}; "
      f"{len(cases) - len(bad)} of {len(cases)} hard cases identical; GPT-2's regex differs on {differ} and "
      f"{'on' if val_differs else 'NOT on'} the val text", flush=True)

# (d) bf16: the export holds round-to-nearest-even of the fp32 weights (torch's cast), bit for bit
w32 = load_file(f"{tmp}/hf_fp32/model.safetensors")
w16 = load_file(f"{tmp}/hf_bf16/model.safetensors")
same = w32.keys() == w16.keys() and all(w16[k].dtype == torch.bfloat16 and torch.equal(w16[k], w32[k].to(torch.bfloat16))
                                        for k in w32)
check("bf16_weights_rounded", same, "bf16 tensors are not the fp32 ones rounded to nearest even")
bf16 = GPT2LMHeadModel.from_pretrained(f"{tmp}/hf_bf16").eval()
loaded_dtype = bf16.dtype
# Tolerance: rounding to bf16 moves each weight by at most u16 = 2^-9 of itself; to first order a relative change
# d of one weight tensor moves a logit by at most d times its magnitude, and a token's logit passes through
# S = 6L + 3 weight tensors in series (wte and wpe; per block ln_1, c_attn, c_proj, ln_2, c_fc, c_proj; ln_f; the
# head): tol = u16 * (6L + 3) * max|logit| + tol_a, computed in fp32 so only the weights' rounding counts.
u16 = 2.0 ** -9
tol_d = u16 * (6 * L + 3) * scale + tol_a
bf16.float()
worst_d = max(float((logits_of(bf16, batch(i)[0]) - ref[i]).abs().max()) for i in range(M))
check("logits_bf16", loaded_dtype == torch.bfloat16 and 0 < worst_d <= tol_d,
      f"loaded as {loaded_dtype}, max |HF bf16 - trainer| {worst_d:.3g}, tolerance {tol_d:.3g}")
print(f"# (d) bf16 logits: max |HF - trainer fp32| {worst_d:.3g}, tolerance {tol_d:.3g}", flush=True)
# a version-5 file (the trained model in bf16, as llm.c writes it) exports as the same bf16 weights, and widens
# exactly to fp32
w_v5 = load_file(f"{tmp}/hf_v5/model.safetensors")
w_v5_fp32 = load_file(f"{tmp}/hf_v5_fp32/model.safetensors")
check("v5_export", w_v5.keys() == w16.keys() and all(torch.equal(w_v5[k], w16[k]) and w_v5[k].dtype == torch.bfloat16
                                                       for k in w16) and
      all(w_v5_fp32[k].dtype == torch.float32 and torch.equal(w_v5_fp32[k], w16[k].float()) for k in w16),
      "the version-5 export differs from the bf16 export of the same weights")
v5 = AutoModelForCausalLM.from_pretrained(f"{tmp}/hf_v5").eval()
check("v5_loads", v5.dtype == torch.bfloat16 and torch.isfinite(logits_of(v5, batch(0)[0])).all(),
      f"loaded as {v5.dtype}")
PY
preloaded "$TMP/checks.py" "$TMP" "$B" "$T" "$M" "$VAL" "$DATA/tokenizer.bin" "$val_line" >"$TMP/checks.txt" \
    2>"$TMP/checks.err"
rc=$?
while IFS= read -r line; do
    case $line in
        "PASS "*) pass "${line#PASS }" ;;
        "FAIL "*) rest=${line#FAIL }; fail "${rest%%: *}" "${rest#*: }" ;;
        "# "*) echo "${line#\# }" ;;
    esac
done <"$TMP/checks.txt"
if [ $rc -ne 0 ]; then fail python_checks "exit $rc: $(tail -n 3 "$TMP/checks.err")"; fi
finish export_hf
