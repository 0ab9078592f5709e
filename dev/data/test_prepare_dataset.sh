#!/usr/bin/env bash
# dev/data/test_prepare_dataset.sh — tests of your own data in: the tokenizer tool on several inputs and folders,
# streamed encoding (tokens equal to encoding each document at once, checked against a build with 4099-byte blocks),
# train shards of a fixed token count (a short last one joined, stale ones removed), the val split's cap, the bounded
# BPE sample, dev/data/prepare_dataset.sh (data/NAME made whole or not at all, idempotent by the inputs' content, never
# replaced by other inputs unless --force, a killed run's temporaries cleared or the earlier dataset put back, every bad
# input one line), tinyshakespeare never overwritten by another text, the trainer on a sharded dataset (and refusing one
# its manifest does not vouch for), and make train's INPUT checked against the data it trains on. Prints
# "prepare_dataset: N passed, M failed" last.
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
cd "$repo"
. scripts/test_lib.sh
tool=./dev/data/tokenizer
small_blocks=./dev/data/tokenizer_small_blocks
prepare=./dev/data/prepare_dataset.sh
for program in "$tool" "$small_blocks" ./train_gpt_fp8_cpu; do
    [ -x "$program" ] || { fail build "$program missing (make test builds it)"; finish prepare_dataset; }
done

# Shard reading, independent of the tool: shard_tokens PATH prints the token count after checking the header and size;
# shard_ids PATH... prints every id, one per line, of the shards in order.
shard_tokens() {
    python3 - "$1" <<'EOF'
import struct, sys, os
p = sys.argv[1]
h = struct.unpack("<256i", open(p, "rb").read(1024))
assert h[0] == 20240520 and h[1] == 1 and os.path.getsize(p) == 1024 + 2 * h[2], (p, h[:3])
print(h[2])
EOF
}
shard_ids() {
    python3 - "$@" <<'EOF'
import struct, sys
for p in sys.argv[1:]:
    d = open(p, "rb").read()
    n = struct.unpack("<i", d[8:12])[0]
    sys.stdout.write("".join(f"{t}\n" for t in struct.unpack(f"<{n}H", d[1024:])))
EOF
}
decode_all() {  # tokenizer, output, shards...: the shards' text, concatenated
    local tk=$1 out=$2 shard
    shift 2
    : >"$out"
    for shard in "$@"; do
        "$tool" decode -k "$tk" -i "$shard" -o "$TMP/decoded_one.txt" && cat "$TMP/decoded_one.txt" >>"$out"
    done
}

# ---------------------------------------------------------------------------------------------------------------------
# a corpus of several documents, with the whitespace runs, digits, punctuation and UTF-8 that piece splitting cares
# about, in a folder with a subfolder, a non-.txt file and a hidden file (neither taken)
corpus=$TMP/corpus
mkdir -p "$corpus/b_more" "$corpus/.hidden"
python3 - "$corpus" <<'EOF'
import random, sys
random.seed(7)
d = sys.argv[1]
syllables = ["th", "e", "an", "kin", "g", "sha", "ll", "spe", "ak", "ro", "me", "o", "thou", "art", "lo", "ve", "ca",
             "f\u00e9", "\u65e5\u672c", "mor", "row", "qu", "een", "st", "ing", "er", "ed", "y", "ou", "wh", "at"]
words = ["".join(random.choice(syllables) for _ in range(random.randint(1, 4))) for _ in range(2000)]
words += ["Romeo:", "1599,", "--", "to-morrow", "love!", "?!", "x\ty", "42", "3.14"]
def doc(n):
    out = []
    for _ in range(n):
        out.append(random.choice(words))
        out.append(random.choice([" ", " ", " ", "  ", "\n", "\n\n  ", " \n", "\t", "   \n "]))
    return "".join(out)
for name, n in [("a_first.txt", 40000), ("b_more/c_third.txt", 30000), ("b_more/d_fourth.txt", 50)]:
    open(f"{d}/{name}", "w").write(doc(n))
open(f"{d}/b_second.txt", "w").write(doc(20000))
open(f"{d}/b_more/e_empty.txt", "w").write("")
open(f"{d}/notes.md", "w").write("not a .txt file")
open(f"{d}/.hidden/h.txt", "w").write("hidden")
EOF
# the order the tool takes them in: byte order of paths, subfolders in place, the empty document adding nothing
order=("$corpus/a_first.txt" "$corpus/b_more/c_third.txt" "$corpus/b_more/d_fourth.txt" "$corpus/b_second.txt")
cat "${order[@]}" >"$TMP/corpus_concat.txt"

mkdir -p "$TMP/tk" "$TMP/tk_concat" "$TMP/sampled" "$TMP/sampled_again"
"$tool" train -i "$corpus" -o "$TMP/tk" -v 400 >"$TMP/train.out" 2>&1 || fail folder_train "$(tail -n 2 "$TMP/train.out")"
"$tool" train -i "$TMP/corpus_concat.txt" -o "$TMP/tk_concat" -v 400 >/dev/null 2>&1
# pieces never cross a document's end: only where a document's last piece would run into the next one's first could
# the two trainings differ, and these documents end and start with different classes of bytes or whitespace, so the
# merges are the same
if cmp -s "$TMP/tk/tokenizer.merges" "$TMP/tk_concat/tokenizer.merges"; then pass folder_train_same_merges; else fail folder_train_same_merges "a folder's documents trained otherwise than their concatenation"; fi
tk=$TMP/tk/tokenizer.bin

# one train file (no -s): the val split then every document, each starting with the eot
"$tool" encode -i "$corpus" -k "$tk" -o "$TMP/one" -f 0.1 >"$TMP/one.out" 2>&1 || fail encode_folder "$(tail -n 2 "$TMP/one.out")"
decode_all "$tk" "$TMP/one.txt" "$TMP/one_val.bin" "$TMP/one_train.bin"
if cmp -s "$TMP/one.txt" "$TMP/corpus_concat.txt"; then pass folder_round_trip_in_order; else fail folder_round_trip_in_order "decode(encode(folder)) is not its .txt files in byte order of their paths"; fi
eots=$(shard_ids "$TMP/one_val.bin" "$TMP/one_train.bin" | grep -cx 399)
# one eot per non-empty document, plus the train split's own (the split falls inside the first document)
if [ "$eots" = 5 ]; then pass eot_per_document; else fail eot_per_document "$eots eot tokens, expected 4 documents + 1 split"; fi
first_val=$(shard_ids "$TMP/one_val.bin" | head -n 1)
first_train=$(shard_ids "$TMP/one_train.bin" | head -n 1)
if [ "$first_val" = 399 ] && [ "$first_train" = 399 ]; then pass splits_start_with_eot; else fail splits_start_with_eot "first ids $first_val, $first_train"; fi

# streaming: 4099-byte blocks give the tokens of 8 MiB ones (each document here fits one 8 MiB block: encoded at once)
"$small_blocks" encode -i "$corpus" -k "$tk" -o "$TMP/small" -f 0.1 >/dev/null 2>&1
if cmp -s "$TMP/small_val.bin" "$TMP/one_val.bin" && cmp -s "$TMP/small_train.bin" "$TMP/one_train.bin"; then
    pass streamed_blocks_same_tokens
else
    fail streamed_blocks_same_tokens "4099-byte blocks encode otherwise than whole documents"
fi
# several -i: one corpus in the order given, the same as the folder
"$tool" encode -i "${order[0]}" -i "${order[1]}" -i "${order[2]}" -i "$corpus/b_more/e_empty.txt" -i "${order[3]}" \
    -k "$tk" -o "$TMP/several" -f 0.1 >/dev/null 2>&1
if cmp -s "$TMP/several_val.bin" "$TMP/one_val.bin" && cmp -s "$TMP/several_train.bin" "$TMP/one_train.bin"; then pass several_inputs_in_order; else fail several_inputs_in_order "several -i differ from their folder"; fi

# shards: -s 20000 with the val split under one shard (-f 0.02): every train shard holds 20000 tokens but the last,
# which is the rest unless under a quarter of a shard (then joined to the one before); together they are the one-file
# split
"$tool" encode -i "$corpus" -k "$tk" -o "$TMP/one2" -f 0.02 >/dev/null 2>&1
total=$(shard_tokens "$TMP/one2_train.bin")
touch "$TMP/sh_train_000099.bin"  # not next in line: left alone
"$tool" encode -i "$corpus" -k "$tk" -o "$TMP/sh" -f 0.02 -s 20000 >/dev/null 2>&1
shards=("$TMP"/sh_train_0000[0-8]*.bin)
counts=$(for s in "${shards[@]}"; do shard_tokens "$s"; done | tr '\n' ' ')
expected=$(python3 -c "
t, s = $total, 20000
full, rest = divmod(t, s)
c = [s] * full + ([rest] if rest else [])
if len(c) > 1 and c[-1] < s // 4:
    last = c.pop()
    c[-1] += last
print(' '.join(map(str, c)) + ' ')")
if [ "$counts" = "$expected" ]; then pass "shard_sizes ($counts)"; else fail shard_sizes "got '$counts', expected '$expected'"; fi
if [ "$(shard_ids "${shards[@]}" | md5sum)" = "$(shard_ids "$TMP/one2_train.bin" | md5sum)" ] && cmp -s "$TMP/sh_val.bin" "$TMP/one2_val.bin"; then
    pass shards_are_the_split
else
    fail shards_are_the_split "the shards together are not the one-file train split"
fi
# the short last shard: a size whose remainder is under a quarter is joined, one over a quarter is not
short=$(python3 -c "t = $total; print(next(s for s in range(t // 3, 1024, -1) if 0 < t % s < s // 4))")
"$tool" encode -i "$corpus" -k "$tk" -o "$TMP/short" -f 0.02 -s "$short" >/dev/null 2>&1
last=$(ls "$TMP"/short_train_*.bin | tail -n 1)
if [ "$(ls "$TMP"/short_train_*.bin | wc -l)" = $((total / short)) ] && [ "$(shard_tokens "$last")" = $((short + total % short)) ]; then
    pass short_last_shard_joined
else
    fail short_last_shard_joined "-s $short over $total tokens: $(ls "$TMP"/short_train_*.bin | wc -l) shards, last $(shard_tokens "$last")"
fi
# a second encoding into fewer shards removes the first one's higher-numbered shards (a glob would take them)
"$tool" encode -i "$corpus" -k "$tk" -o "$TMP/sh" -f 0.02 -s 60000 >/dev/null 2>&1
now=$(ls "$TMP"/sh_train_0000[0-8]*.bin | wc -l)
want=$(python3 -c "full, rest = divmod($total, 60000); print(max(1, full + (rest >= 60000 // 4)))")
if [ "$now" = "$want" ] && [ -e "$TMP/sh_train_000099.bin" ]; then pass stale_shards_removed; else fail stale_shards_removed "$now shards after re-encoding, expected $want (or an unrelated file removed)"; fi

# the val split's cap: at most one shard; the rest of its text starts the train split (with an eot); nothing is lost
"$tool" encode -i "$corpus" -k "$tk" -o "$TMP/cap" -f 0.5 -s 4096 >/dev/null 2>&1
val_tokens=$(shard_tokens "$TMP/cap_val.bin")
decode_all "$tk" "$TMP/cap.txt" "$TMP/cap_val.bin" "$TMP"/cap_train_*.bin
if [ "$val_tokens" -le 4096 ] && [ "$val_tokens" -gt 4000 ] && cmp -s "$TMP/cap.txt" "$TMP/corpus_concat.txt"; then
    pass "val_capped_at_one_shard ($val_tokens tokens)"
else
    fail val_capped_at_one_shard "val $val_tokens tokens, or the text changed"
fi

# the BPE sample: -m 1 on a 1.5 MB corpus reads 64 windows of 15625 bytes cut at line ends, and says so
big=$TMP/big.txt
for _ in 1 2 3; do cat "$TMP/corpus_concat.txt"; done >"$big"
out=$("$tool" train -i "$big" -o "$TMP/sampled" -v 400 -m 1 2>&1)
sampled=$(printf '%s' "$out" | sed -nE 's/.*learned from ([0-9]+) bytes \(a sample: 64 windows of a ([0-9.]+) MB corpus\).*/\1 \2/p')
if [ -n "$sampled" ] && [ "${sampled% *}" -le 1000000 ] && [ "${sampled% *}" -gt 900000 ]; then
    pass "bpe_sample_bounded ($sampled)"
else
    fail bpe_sample_bounded "$out"
fi
# many short documents: each window goes on through the files after it, so the sample is as large as for one file
mkdir -p "$TMP/many" "$TMP/sampled_many"
split -l 40 -d -a 4 --additional-suffix=.txt "$big" "$TMP/many/doc_"
out=$("$tool" train -i "$TMP/many" -o "$TMP/sampled_many" -v 400 -m 1 2>&1)
sampled=$(printf '%s' "$out" | sed -nE 's/.*learned from ([0-9]+) bytes \(a sample.*/\1/p')
if [ -n "$sampled" ] && [ "$sampled" -le 1000000 ] && [ "$sampled" -gt 900000 ]; then
    pass "bpe_sample_across_documents ($sampled bytes from $(ls "$TMP/many" | wc -l) documents)"
else
    fail bpe_sample_across_documents "$out"
fi
"$tool" train -i "$big" -o "$TMP/sampled_again" -v 400 -m 1 >/dev/null 2>&1
if cmp -s "$TMP/sampled/tokenizer.merges" "$TMP/sampled_again/tokenizer.merges"; then pass bpe_sample_deterministic; else fail bpe_sample_deterministic "two sampled trainings differ"; fi

# ---------------------------------------------------------------------------------------------------------------------
# dev/data/prepare_dataset.sh into a data root of the test's own
root=$TMP/data
if $prepare mine "$corpus" --vocab 400 --shard-tokens 20000 --data-root "$root" >"$TMP/prep.out" 2>&1 &&
    [ -f "$root/mine/tokenizer.bin" ] && [ -f "$root/mine/tokenizer.merges" ] && [ -f "$root/mine/mine_val.bin" ] &&
    [ -f "$root/mine/mine_train_000001.bin" ] && [ -z "$(ls -d "$root"/mine.* 2>/dev/null)" ]; then
    pass prepare_named_dataset
else
    fail prepare_named_dataset "$(tail -n 3 "$TMP/prep.out")"
fi
if $prepare mine "$corpus" --vocab 400 --shard-tokens 20000 --data-root "$root" 2>&1 | grep -q "is up to date"; then pass prepare_idempotent; else fail prepare_idempotent "a second run with the same inputs did not keep the dataset"; fi
if $prepare mine "$corpus" --vocab 400 --shard-tokens 20000 --data-root "$root" --force 2>&1 | grep -q "^prepare_dataset: done:"; then pass prepare_force_remakes; else fail prepare_force_remakes "--force kept an up-to-date dataset"; fi
# up to date only with the tool's manifest of the shards saying complete: an encoding stopped halfway, or one by an
# earlier tool (no manifest), is made again
cp "$root/mine/mine.manifest" "$TMP/mine.manifest" 2>/dev/null
sed -i 's/^status\tcomplete$/status\tincomplete/' "$root/mine/mine.manifest" 2>/dev/null
out_incomplete=$($prepare mine "$corpus" --vocab 400 --shard-tokens 20000 --data-root "$root" 2>&1)
rm -f "$root/mine/mine.manifest"
out_missing=$($prepare mine "$corpus" --vocab 400 --shard-tokens 20000 --data-root "$root" 2>&1)
if grep -qx "$(printf 'status\tcomplete')" "$TMP/mine.manifest" 2>/dev/null &&
    printf '%s' "$out_incomplete" | grep -qF "remaking $root/mine: its shards have no complete manifest" &&
    printf '%s' "$out_missing" | grep -qF "remaking $root/mine: its shards have no complete manifest" &&
    grep -qx "$(printf 'status\tcomplete')" "$root/mine/mine.manifest"; then
    pass prepare_needs_complete_manifest
else
    fail prepare_needs_complete_manifest "$(printf '%s\n' "$out_incomplete" | head -n 1); $(printf '%s\n' "$out_missing" | head -n 1)"
fi
before=$(ls "$root/mine" | wc -l)
$prepare mine "$corpus" --vocab 400 --shard-tokens 60000 --data-root "$root" >/dev/null 2>&1
after=$(ls "$root/mine"/mine_train_*.bin | wc -l)
if [ "$after" -lt "$((before - 3))" ]; then pass prepare_remade_without_stale_shards; else fail prepare_remade_without_stale_shards "$after train shards after remaking with larger shards (before: $before files)"; fi
# encoding with an existing tokenizer (fine-tuning a model on new text in its vocabulary): the same tokenizer files
$prepare more "${order[1]}" --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 1024 --data-root "$root" >/dev/null 2>&1
if cmp -s "$root/more/tokenizer.bin" "$root/mine/tokenizer.bin" && cmp -s "$root/more/tokenizer.merges" "$root/mine/tokenizer.merges" &&
    [ -f "$root/more/more_train_000001.bin" ]; then
    pass prepare_with_existing_tokenizer
else
    fail prepare_with_existing_tokenizer "data/more was not encoded with mine's tokenizer"
fi
# a failure leaves the earlier dataset as it was
cp -r "$root/mine" "$TMP/mine_before"
chmod 000 "${order[3]}"
if [ "$(id -u)" != 0 ]; then
    $prepare mine "$corpus" --vocab 401 --shard-tokens 60000 --data-root "$root" >/dev/null 2>&1
    if diff -r "$root/mine" "$TMP/mine_before" >/dev/null && [ -z "$(ls -d "$root"/mine.* 2>/dev/null)" ]; then pass failed_prepare_keeps_dataset; else fail failed_prepare_keeps_dataset "data/mine changed"; fi
else  # root reads a mode-000 file: fail the run with a tokenizer that cannot encode instead
    head -c 2000 "$root/mine/tokenizer.bin" >"$TMP/broken.bin"
    cp "$root/mine/tokenizer.merges" "$TMP/broken.merges"
    $prepare mine "$corpus" --tokenizer "$TMP/broken.bin" --shard-tokens 60000 --data-root "$root" >/dev/null 2>&1
    if diff -r "$root/mine" "$TMP/mine_before" >/dev/null && [ -z "$(ls -d "$root"/mine.* 2>/dev/null)" ]; then pass failed_prepare_keeps_dataset; else fail failed_prepare_keeps_dataset "data/mine changed"; fi
fi
chmod 644 "${order[3]}"

# a dataset is never replaced by one made from other inputs unasked: one line saying what data/NAME is (made from
# what, when, its vocabulary) and how to replace it, nothing changed; --force replaces it (make data: FORCE=1)
$prepare taken "${order[1]}" --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 1024 --data-root "$root" >/dev/null 2>&1
rm -rf "$TMP/taken_before"
cp -a "$root/taken" "$TMP/taken_before"
out=$($prepare taken "${order[3]}" --shard-tokens 1024 --data-root "$root" 2>&1 >/dev/null)
rc=$?
vocab_of_mine=$(od -An -t d4 -j 8 -N 4 "$root/mine/tokenizer.bin" | tr -d ' ')
if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] &&
    printf '%s' "$out" | grep -qF "$root/taken exists, made from ${order[1]} on $(date +%Y-%m-%d)" &&
    printf '%s' "$out" | grep -qF "vocabulary of $vocab_of_mine tokens" && printf '%s' "$out" | grep -qF -- "--force" &&
    printf '%s' "$out" | grep -qF "FORCE=1" && printf '%s' "$out" | grep -qF "another NAME" &&
    diff -r "$root/taken" "$TMP/taken_before" >/dev/null && [ -z "$(ls -d "$root"/taken.* 2>/dev/null)" ]; then
    pass other_inputs_refused
else
    fail other_inputs_refused "rc $rc: $out"
fi
if $prepare taken "${order[3]}" --force --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 1024 --data-root "$root" \
    >"$TMP/force.out" 2>&1 && grep -qxF "input ${order[3]}" "$root/taken/.made_from" &&
    ! cmp -s "$root/taken/taken_val.bin" "$TMP/taken_before/taken_val.bin"; then
    pass other_inputs_with_force
else
    fail other_inputs_with_force "$(tail -n 2 "$TMP/force.out")"
fi
# a folder there that this script did not make (no .made_from) is refused too
mkdir -p "$root/foreign"
echo "keep me" >"$root/foreign/notes.txt"
out=$($prepare foreign "${order[1]}" --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 1024 --data-root "$root" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -qF "was not made by prepare_dataset.sh" &&
    [ "$(ls -A "$root/foreign")" = notes.txt ]; then
    pass foreign_folder_refused
else
    fail foreign_folder_refused "rc $rc: $out"
fi
# make data passes FORCE=1 on as --force, and only then
if make -n data NAME=x INPUT=y FORCE=1 2>/dev/null | grep -q "prepare_dataset.sh.* --force" &&
    ! make -n data NAME=x INPUT=y 2>/dev/null | grep -q -- "--force"; then
    pass make_data_force
else
    fail make_data_force "make -n data ... FORCE=1 shows no --force: $(make -n data NAME=x INPUT=y FORCE=1 2>&1 | tail -n 1)"
fi

# the up-to-date check reads the inputs' content: a file rewritten within the same second at the same size (its
# modification time put back to the nanosecond) is remade, alone or in a folder
mkdir -p "$TMP/same_folder"
for f in "$TMP/same.txt" "$TMP/same_folder/a.txt" "$TMP/same_folder/b.txt"; do
    python3 -c "import sys; open(sys.argv[1], 'w').write('alpha beta gamma delta epsilon\n' * 400)" "$f"
done
for input in "$TMP/same.txt" "$TMP/same_folder"; do
    what=$( [ -d "$input" ] && echo folder || echo file)
    $prepare "same_$what" "$input" --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 1024 --data-root "$root" >/dev/null 2>&1
    shards_before=$(cat "$root/same_$what"/same_"${what}"_*.bin | md5sum)
    changed=$input
    [ -d "$input" ] && changed=$input/b.txt
    stat_before=$(stat -c '%s %y' "$changed")
    touch -r "$changed" "$TMP/same.ref"
    # the same bytes count, other words, written in place
    python3 -c "import sys; open(sys.argv[1], 'r+').write('omega' + 'x' * 25)" "$changed"
    touch -r "$TMP/same.ref" "$changed"
    out=$($prepare "same_$what" "$input" --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 1024 --data-root "$root" 2>&1)
    if [ "$(stat -c '%s %y' "$changed")" != "$stat_before" ]; then
        fail "same_size_same_time_rewrite_$what" "the test's rewrite changed the size or time: $stat_before -> $(stat -c '%s %y' "$changed")"
    elif ! printf '%s' "$out" | grep -q "is up to date" && [ "$(cat "$root/same_$what"/same_"${what}"_*.bin | md5sum)" != "$shards_before" ]; then
        pass "same_size_same_time_rewrite_$what"
    else
        fail "same_size_same_time_rewrite_$what" "not remade: $out"
    fi
done

# temporaries of a run that is gone: a run killed (SIGKILL, its whole process group) leaves data/NAME.tmp.PID; the
# next run removes it
setsid $prepare killed "$big" --vocab 400 --data-root "$root" >/dev/null 2>&1 &
killed_pid=$!
for _ in $(seq 1 400); do
    compgen -G "$root/killed.tmp.*" >/dev/null && break
    sleep 0.05
done
{ kill -9 -- "-$killed_pid" && wait "$killed_pid"; } 2>/dev/null  # (the shell's "Killed" notice too)
left=$(ls -d "$root"/killed.tmp.* 2>/dev/null)
out=$($prepare killed "${order[1]}" --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 1024 --data-root "$root" 2>&1)
if [ -z "$left" ]; then
    fail killed_run_temporary_removed "the killed run left no temporary (killed too early or too late?)"
elif [ -z "$(ls -d "$root"/killed.* 2>/dev/null)" ] && [ -f "$root/killed/killed_val.bin" ] &&
    printf '%s' "$out" | grep -qF "removed $left"; then
    pass killed_run_temporary_removed
else
    fail killed_run_temporary_removed "left: $(ls -d "$root"/killed.* 2>/dev/null | tr '\n' ' '); $out"
fi
# a run killed between its two renames: data/NAME gone, NAME.old.PID the earlier dataset (complete), NAME.tmp.PID the
# new one: the earlier one goes back to data/NAME (and is up to date again), the new one goes
sleep 0 &
dead=$!
wait "$dead"
rm -rf "$TMP/more_before"
cp -a "$root/more" "$TMP/more_before"
mv "$root/more" "$root/more.old.$dead"
cp -a "$TMP/more_before" "$root/more.tmp.$dead"
out=$($prepare more "${order[1]}" --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 1024 --data-root "$root" 2>&1)
if diff -r "$root/more" "$TMP/more_before" >/dev/null && [ -z "$(ls -d "$root"/more.* 2>/dev/null)" ] &&
    printf '%s' "$out" | grep -qF "restored $root/more from $root/more.old.$dead" && printf '%s' "$out" | grep -q "is up to date"; then
    pass killed_between_renames_restored
else
    fail killed_between_renames_restored "left: $(ls -d "$root"/more* 2>/dev/null | tr '\n' ' '); $out"
fi
# killed after them: data/NAME is the new one, NAME.old.PID the earlier one, which goes
cp -a "$TMP/more_before" "$root/more.old.$dead"
echo "an earlier dataset" >"$root/more.old.$dead/marker"
out=$($prepare more "${order[1]}" --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 1024 --data-root "$root" 2>&1)
if diff -r "$root/more" "$TMP/more_before" >/dev/null && [ -z "$(ls -d "$root"/more.* 2>/dev/null)" ]; then
    pass killed_after_renames_old_removed
else
    fail killed_after_renames_old_removed "left: $(ls -d "$root"/more* 2>/dev/null | tr '\n' ' '); $out"
fi
# a live run's temporaries are left alone; a PID now another program's, or a run's that started after the temporary
# was last changed (the PID reused), does not keep them
mkdir -p "$TMP/live"
printf '#!/usr/bin/env bash\nsleep 60\n' >"$TMP/live/prepare_dataset.sh"
chmod +x "$TMP/live/prepare_dataset.sh"
"$TMP/live/prepare_dataset.sh" &
live=$!
sleep 60 &
other=$!
sleep 0.2
mkdir "$root/more.tmp.$live" "$root/more.tmp.$other"
$prepare more "${order[1]}" --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 1024 --data-root "$root" >/dev/null 2>&1
if [ -d "$root/more.tmp.$live" ] && [ ! -e "$root/more.tmp.$other" ]; then
    pass live_run_temporary_kept
else
    fail live_run_temporary_kept "$(ls -d "$root"/more.* 2>/dev/null | tr '\n' ' '), live $live, other program $other"
fi
touch -d '1 hour ago' "$root/more.tmp.$live"
$prepare more "${order[1]}" --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 1024 --data-root "$root" >/dev/null 2>&1
if [ ! -e "$root/more.tmp.$live" ]; then pass reused_pid_temporary_removed; else fail reused_pid_temporary_removed "$root/more.tmp.$live kept"; fi
kill "$live" "$other" 2>/dev/null
wait "$live" "$other" 2>/dev/null
rm -rf "$root"/more.tmp.*
# a dataset the earlier script made (its record: each file's path, size and modification time, then the options): the
# same files are remade once, quietly, to have a record with checksums; other INPUTs are refused as above
{
    stat -L -c '%n %s %Y' "${order[1]}"
    echo "vocab=1024 val_fraction=0.1 shard_tokens=1024 sample_mb=64"
    echo "tokenizer=$root/mine/tokenizer.bin"
    cksum <"$root/mine/tokenizer.bin"
    cksum <"$tool"
} >"$root/more/.made_from"
out=$($prepare more "${order[3]}" --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 1024 --data-root "$root" 2>&1 >/dev/null)
if printf '%s' "$out" | grep -qF "$root/more exists, made from ${order[1]} on"; then pass earlier_record_other_inputs_refused; else fail earlier_record_other_inputs_refused "$out"; fi
out=$($prepare more "${order[1]}" --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 1024 --data-root "$root" 2>&1)
if printf '%s' "$out" | grep -qF "remaking $root/more: its record is an earlier script's" &&
    grep -qxF "input ${order[1]}" "$root/more/.made_from" && diff -r -x .made_from "$root/more" "$TMP/more_before" >/dev/null; then
    pass earlier_record_same_inputs_remade
else
    fail earlier_record_same_inputs_remade "$out"
fi

# the trainer on the sharded dataset: a glob over the train shards, batches crossing from one shard to the next
$prepare tiny "$corpus" --tokenizer "$root/mine/tokenizer.bin" --shard-tokens 4096 --data-root "$root" >/dev/null 2>&1
if ./train_gpt_fp8_cpu -i "$root/tiny/tiny_train_*.bin" -j "$root/tiny/tiny_val.bin" -tk "$root/tiny/tokenizer.bin" \
    -L 1 -C 32 -NH 2 -b 4 -t 64 -x 40 -v 20 -m 2 -s 0 >"$TMP/trainer.out" 2>&1 &&
    grep -q "^step *40/40" "$TMP/trainer.out"; then
    pass "trainer_on_shards ($(ls "$root"/tiny/tiny_train_*.bin | wc -l) shards)"
else
    fail trainer_on_shards "$(tail -n 2 "$TMP/trainer.out")"
fi

# a shard set the tool's manifest does not vouch for is refused at startup, in one line: a re-encoding that stopped
# midway (new shards 1-2, old ones after; its manifest says incomplete), and a complete set with a shard left from an
# earlier encoding beside it (not listed in the manifest)
train_refused() {  # name, expected text, train glob, val file
    local out rc
    out=$(./train_gpt_fp8_cpu -i "$3" -j "$4" -tk "$root/tiny/tokenizer.bin" -L 1 -C 32 -NH 2 -b 4 -t 64 -x 4 -v 0 -s 0 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | grep -c error)" -eq 1 ] && printf '%s' "$out" | grep -qF -- "$2"; then
        pass "$1"
    else
        fail "$1" "rc $rc: $out"
    fi
}
cp -r "$root/tiny" "$TMP/stopped"
rm "$TMP/stopped/tiny_train_000003.bin" && mkdir "$TMP/stopped/tiny_train_000003.bin"
"$tool" encode -i "${order[1]}" -k "$root/tiny/tokenizer.bin" -o "$TMP/stopped/tiny" -s 4096 >/dev/null 2>&1
rmdir "$TMP/stopped/tiny_train_000003.bin"
train_refused trainer_refuses_stopped_encoding "its dataset's encoding did not finish ($TMP/stopped/tiny.manifest says incomplete): prepare it again" \
    "$TMP/stopped/tiny_train_*.bin" "$TMP/stopped/tiny_val.bin"
cp -r "$root/tiny" "$TMP/leftover"
cp "$TMP/leftover/tiny_train_000001.bin" "$TMP/leftover/tiny_train_000099.bin"
train_refused trainer_refuses_leftover_shard "$TMP/leftover/tiny_train_000099.bin is not part of the shard set $TMP/leftover/tiny.manifest lists" \
    "$TMP/leftover/tiny_train_*.bin" "$TMP/leftover/tiny_val.bin"

# make train's comparison on a dataset of one's own (DATA: a name under data/, or a dataset folder's path); BF16 and
# delayed scaling (RUNS=fp8), whose pictures alone are drawn: the data is what is tested here (all six runs and their
# pictures took 86 s of this suite's 116 s on 2 cores; test_run_scripts.sh tests RUNS)
if DATA="$root/tiny" STEPS=10 OUT="$TMP/compare" PROGRESS=lines TRAINER=./train_gpt_fp8_cpu RUNS=fp8 \
    ./scripts/compare_bf16_fp8.sh >"$TMP/compare.out" 2>&1 && grep -q "^compare_bf16_fp8: data: $root/tiny/" "$TMP/compare.out" &&
    grep -qF "| train data            | $root/tiny/tiny_train_*.bin" "$TMP/compare/bf16.out" &&
    [ -f "$TMP/compare/bf16_vs_fp8.png" ] &&
    [ "$(cd "$TMP/compare" && LC_ALL=C ls -d -- */ *.png | paste -sd' ')" = "bf16/ bf16_vs_fp8.png fp8/ $(
        printf 'fp8_delayed_%s.png ' amax flushed saturated saturation_heatmap scale | sed 's/ $//')" ]; then
    pass compare_runs_on_own_dataset
else
    fail compare_runs_on_own_dataset "$(tail -n 3 "$TMP/compare.out"); $TMP/compare: $(ls "$TMP/compare" |
        paste -sd' ')"
fi
out=$(DATA=no_such_dataset ./scripts/compare_bf16_fp8.sh 2>&1 >/dev/null)
if [ $? -ne 0 ] && printf '%s' "$out" | grep -q "DATA=no_such_dataset: no dataset in data/no_such_dataset/ (make it with: make data NAME=no_such_dataset INPUT="; then
    pass compare_runs_missing_dataset
else
    fail compare_runs_missing_dataset "$out"
fi

# make train's INPUT is what it trains on, never ignored: tinyshakespeare's preparation runs on it (and refuses another
# text); with DATA, the dataset must have been made from it, as it is now. A stand-in trainer records its flags.
mkdir -p "$TMP/fake"
cat >"$TMP/fake/train_gpt_fp8_cpu" <<'EOF'
#!/usr/bin/env bash
printf '%s\n' "$*" >>"$(dirname "$0")/calls"
echo "error: a stand-in trainer, stopping here"
exit 1
EOF
chmod +x "$TMP/fake/train_gpt_fp8_cpu"
fake_compare() {  # INPUT, DATA: the comparison with the stand-in trainer, its output in $TMP/fake/out
    rm -f "$TMP/fake/calls"
    INPUT=$1 DATA=$2 STEPS=2 OUT="$TMP/fake/log" PROGRESS=lines TRAINER="$TMP/fake/train_gpt_fp8_cpu" \
        ./scripts/compare_bf16_fp8.sh >"$TMP/fake/out" 2>&1
}
ts=data/tinyshakespeare
ts_sums=$(cat "$ts"/tokenizer.bin "$ts"/tiny_shakespeare_*.bin 2>/dev/null | md5sum)
fake_compare "$TMP/corpus_concat.txt" ""
rc=$?
if [ "$rc" -ne 0 ] && grep -q "is not tinyshakespeare's input.txt.*make data NAME=mytext INPUT=" "$TMP/fake/out" &&
    [ ! -e "$TMP/fake/calls" ] && [ "$(cat "$ts"/tokenizer.bin "$ts"/tiny_shakespeare_*.bin 2>/dev/null | md5sum)" = "$ts_sums" ]; then
    pass train_input_other_text_refused
else
    fail train_input_other_text_refused "rc $rc, trainer called: $([ -e "$TMP/fake/calls" ] && echo yes || echo no); $(tail -n 2 "$TMP/fake/out")"
fi
ts_text=$repo/../shared/data/tinyshakespeare/input.txt
if [ -f "$ts_text" ]; then
    fake_compare "$ts_text" ""
    if grep -qF "prepare_tinyshakespeare: using $ts_text (given)" "$TMP/fake/out" &&
        grep -qF -- "-i data/tinyshakespeare/tiny_shakespeare_train.bin" "$TMP/fake/calls" 2>/dev/null; then
        pass train_input_tinyshakespeare_prepared
    else
        fail train_input_tinyshakespeare_prepared "$(head -n 3 "$TMP/fake/out")"
    fi
fi
fake_compare "${order[1]}" "$root/tiny"
rc=$?
if [ "$rc" -ne 0 ] && grep -qF "$root/tiny/ was not made from INPUT=${order[1]} (it was made from $corpus)" "$TMP/fake/out" &&
    grep -qF -- "--force" "$TMP/fake/out" && [ ! -e "$TMP/fake/calls" ]; then
    pass train_data_other_input_refused
else
    fail train_data_other_input_refused "rc $rc, trainer called: $([ -e "$TMP/fake/calls" ] && echo yes || echo no); $(tail -n 2 "$TMP/fake/out")"
fi
fake_compare "$corpus" "$root/tiny"
if grep -qF -- "-i $root/tiny/tiny_train_*.bin" "$TMP/fake/calls" 2>/dev/null; then
    pass train_data_same_input
else
    fail train_data_same_input "$(tail -n 2 "$TMP/fake/out")"
fi
printf 'and one line more\n' >>"$TMP/same.txt"
fake_compare "$TMP/same.txt" "$root/same_file"
rc=$?
if [ "$rc" -ne 0 ] && grep -qF "$TMP/same.txt changed since $root/same_file/ was made" "$TMP/fake/out" && [ ! -e "$TMP/fake/calls" ]; then
    pass train_data_changed_input_refused
else
    fail train_data_changed_input_refused "rc $rc, trainer called: $([ -e "$TMP/fake/calls" ] && echo yes || echo no); $(tail -n 2 "$TMP/fake/out")"
fi

# ---------------------------------------------------------------------------------------------------------------------
# bad input: one error line naming the problem, a non-zero exit, nothing left behind
expect_error() {  # name, expected text, command...
    local name=$1 want=$2 out rc
    shift 2
    out=$("$@" 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -qF -- "$want" &&
        [ -z "$(ls -d "$root"/*.tmp.* "$TMP"/*.tmp 2>/dev/null)" ]; then
        pass "bad_input_$name"
    else
        fail "bad_input_$name" "rc $rc, wanted one line with '$want', got: $out"
    fi
}
mkdir -p "$TMP/no_text/sub" "$TMP/empty_docs"
echo "words" >"$TMP/no_text/sub/readme.md"
: >"$TMP/empty_docs/a.txt"
: >"$TMP/empty_docs/b.txt"
expect_error folder_without_text "folder $TMP/no_text holds no .txt file" "$tool" train -i "$TMP/no_text" -o "$TMP/x"
expect_error empty_corpus "the input (2 files) is empty" "$tool" train -i "$TMP/empty_docs" -o "$TMP/x"
expect_error empty_corpus_encode "is empty: nothing to encode" "$tool" encode -i "$TMP/empty_docs" -k "$tk" -o "$TMP/x"
expect_error vocab_too_large "[257, 65535] (tokens are stored as uint16)" "$tool" train -i "$corpus" -o "$TMP/x" -v 70000
expect_error shard_tokens "for -s: expected an integer in [1024, 1073741824]" "$tool" encode -i "$corpus" -k "$tk" -o "$TMP/x" -s 100
expect_error sample_mb "for -m" "$tool" train -i "$corpus" -o "$TMP/x" -m 0
expect_error missing_input "cannot open $TMP/nothing_here" "$tool" encode -i "$TMP/nothing_here" -k "$tk" -o "$TMP/x"
expect_error prepare_no_name "no NAME given" $prepare
expect_error prepare_bad_name "NAME 'a/b'" $prepare a/b "$corpus" --data-root "$root"
expect_error prepare_dotdot_name "NAME '..': expected letters, digits, '_', '-' and '.', starting with a letter, digit or '_'" $prepare .. "$corpus" --data-root "$root"
expect_error prepare_temporary_name "NAME 'x.tmp.5': names ending in .tmp.N or .old.N are kept for a run's temporary folders" $prepare x.tmp.5 "$corpus" --data-root "$root"
name_max=$(getconf NAME_MAX "$root")
longest_name=$(printf 'n%.0s' $(seq 1 $((name_max - 21))))
expect_error prepare_long_name "NAME is $((name_max - 20)) characters long: at most $((name_max - 21)) here" $prepare "${longest_name}n" "$corpus" --data-root "$root"
# the longest one allowed is made (its shards' temporaries, the longest names, included)
if $prepare "$longest_name" "${order[1]}" --tokenizer "$tk" --shard-tokens 1024 --data-root "$root" >"$TMP/long.out" 2>&1 &&
    [ -f "$root/$longest_name/${longest_name}_train_000001.bin" ]; then
    pass "prepare_longest_name (${#longest_name} characters)"
else
    fail prepare_longest_name "$(tail -n 1 "$TMP/long.out")"
fi
rm -rf "${root:?}/$longest_name"
expect_error prepare_no_input "no INPUT given for foo" $prepare foo --data-root "$root"
expect_error prepare_missing_input "$TMP/nothing_here does not exist" $prepare foo "$TMP/nothing_here" --data-root "$root"
expect_error prepare_tinyshakespeare "data/tinyshakespeare is the default corpus" $prepare tinyshakespeare "$corpus"
expect_error prepare_vocab "--vocab 70000: expected an integer in [257, 65535]" $prepare foo "$corpus" --vocab 70000 --data-root "$root"
expect_error prepare_fraction "--val-fraction 1.5" $prepare foo "$corpus" --val-fraction 1.5 --data-root "$root"
expect_error prepare_unknown_option "unknown option --frobnicate" $prepare foo "$corpus" --frobnicate 1 --data-root "$root"
expect_error prepare_folder_without_text "holds no .txt file" $prepare foo "$TMP/no_text" --data-root "$root"
cp "$tk" "$TMP/lonely.bin"
expect_error prepare_tokenizer_without_merges "has no $TMP/lonely.merges beside it" $prepare foo "$corpus" --tokenizer "$TMP/lonely.bin" --data-root "$root"
if [ ! -e "$root/foo" ]; then pass bad_inputs_make_no_dataset; else fail bad_inputs_make_no_dataset "$root/foo exists"; fi
if $prepare -h | grep -q "^usage: dev/data/prepare_dataset.sh NAME INPUT"; then pass prepare_help; else fail prepare_help "-h shows no usage"; fi
if "$tool" -h | grep -q "^usage: tokenizer train  -i INPUT \[-i INPUT ...\]"; then pass tokenizer_help; else fail tokenizer_help "tokenizer -h shows no usage or fails"; fi

# tinyshakespeare's preparation refuses another text, leaving data/tinyshakespeare as it is
ts=data/tinyshakespeare
sums_before=$(cat "$ts"/tokenizer.bin "$ts"/tiny_shakespeare_*.bin 2>/dev/null | md5sum)
out=$(./dev/data/prepare_tinyshakespeare.sh "$TMP/corpus_concat.txt" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne 0 ] && printf '%s' "$out" | grep -q "is not tinyshakespeare's input.txt.*make data NAME=mytext INPUT=" &&
    [ "$(cat "$ts"/tokenizer.bin "$ts"/tiny_shakespeare_*.bin 2>/dev/null | md5sum)" = "$sums_before" ]; then
    pass tinyshakespeare_never_overwritten
else
    fail tinyshakespeare_never_overwritten "rc $rc: $out"
fi

finish prepare_dataset
