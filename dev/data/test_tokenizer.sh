#!/usr/bin/env bash
# dev/data/test_tokenizer.sh — tests of the BPE tokenizer tool: training speed and determinism, encode -> decode
# round-trips the corpus byte for byte, llm.c headers on every file, the manifest listing the shard set exactly (and
# saying incomplete after an encoding stopped midway), the val split by size on text of very long lines and splits too
# small refused, a damaged tokenizer.bin refused, outputs that are devices, FIFOs or links written through and never
# replaced, every bad input (an empty input, an eot past the vocabulary included) answered with one error line, a
# non-zero exit and no output file left behind; `hash` agrees with Python's xxhash. Prints "tokenizer: N passed, M
# failed" last.
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
tool="$repo/dev/data/tokenizer"
. "$repo/scripts/test_lib.sh"
tmp=$TMP

corpus="$repo/../shared/data/tinyshakespeare/input.txt"
if [ ! -f "$corpus" ]; then  # a generated stand-in of a few hundred KB when the shared corpus is absent
    corpus="$tmp/corpus.txt"
    python3 -c "
import random
random.seed(1)
syllables = ['th', 'e', 'an', 'kin', 'g', 'sha', 'll', 'spe', 'ak', 'ro', 'me', 'o', 'thou', 'art', 'not', 'lo', 've',
             'ca', 'f\u00e9', 'mor', 'row', 'qu', 'een', 'st', 'ing', 'er', 'ed', 'y', 'ou', 'wh', 'at']
words = [''.join(random.choice(syllables) for _ in range(random.randint(1, 4))) for _ in range(3000)]
words += ['ROMEO:', '1599,', 'love!', 'to-morrow', '--']
print('\n'.join(' '.join(random.choice(words) for _ in range(random.randint(1, 12))) for _ in range(40000)))
" >"$corpus"
fi

start=$(date +%s.%N)
"$tool" train -i "$corpus" -o "$tmp" -v 768 >/dev/null
end=$(date +%s.%N)
mkdir -p "$tmp/again"
"$tool" train -i "$corpus" -o "$tmp/again" -v 768 >/dev/null
if awk -v s="$start" -v e="$end" 'BEGIN { exit !(e - s < 10) }'; then pass "train_fast ($(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }') s)"; else fail train_fast "took more than 10 s"; fi
if cmp -s "$tmp/tokenizer.bin" "$tmp/again/tokenizer.bin" && cmp -s "$tmp/tokenizer.merges" "$tmp/again/tokenizer.merges"; then
    pass deterministic
else
    fail deterministic "two trainings differ"
fi

"$tool" encode -i "$corpus" -k "$tmp/tokenizer.bin" -o "$tmp/ts" -f 0.1 >/dev/null
"$tool" decode -k "$tmp/tokenizer.bin" -i "$tmp/ts_val.bin" -o "$tmp/val.txt"
"$tool" decode -k "$tmp/tokenizer.bin" -i "$tmp/ts_train.bin" -o "$tmp/train.txt"
if cat "$tmp/val.txt" "$tmp/train.txt" | cmp -s - "$corpus"; then pass round_trip_exact; else fail round_trip_exact "decode(encode(corpus)) != corpus"; fi

# headers, read independently of the tool
if python3 - "$tmp" <<'PY'
import os, struct, sys
d = sys.argv[1]
t = open(f"{d}/tokenizer.bin", "rb").read()
h = struct.unpack("<256i", t[:1024])
assert h[0] == 20240328 and h[1] == 2 and h[2] == 768 and h[3] == 767, h[:4]
pos, tokens = 1024, []
for i in range(h[2]):
    n = t[pos]; tokens.append(t[pos + 1:pos + 1 + n]); pos += 1 + n
assert pos == len(t), "trailing bytes"
assert tokens[:256] == [bytes([i]) for i in range(256)] and tokens[767] == b"<|endoftext|>"
m = open(f"{d}/tokenizer.merges", "rb").read()
mh = struct.unpack("<3i", m[:12])
assert mh == (20241123, 1, 511), mh
for k in range(511):
    a, b = struct.unpack("<2i", m[12 + 8 * k:20 + 8 * k])
    assert tokens[a] + tokens[b] == tokens[256 + k], k
for split in ("val", "train"):
    s = open(f"{d}/ts_{split}.bin", "rb").read()
    sh = struct.unpack("<256i", s[:1024])
    assert sh[0] == 20240520 and sh[1] == 1 and len(s) == 1024 + 2 * sh[2], sh[:3]
    first = struct.unpack("<H", s[1024:1026])[0]
    assert first == 767, "each split starts with eot"
    assert max(struct.unpack(f"<{sh[2]}H", s[1024:])) < 768
PY
then pass llm_c_headers; else fail llm_c_headers "tokenizer/merges/shard headers"; fi

# bad input: one error line naming the problem, non-zero exit, no output (or .tmp) left
expect_error() {  # name, expected text, output file that must not exist afterwards, args...
    local name=$1 want=$2 must_not_exist=$3
    shift 3
    local out rc
    out=$("$tool" "$@" 2>&1 >/dev/null)
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q -- "$want" &&
        [ ! -e "$must_not_exist" ] && [ -z "$(ls "$tmp"/*.tmp 2>/dev/null)" ]; then
        pass "bad_input_$name"
    else
        fail "bad_input_$name" "rc $rc, wanted one line with '$want', got: $out"
    fi
}
expect_error missing_input "no_such.txt" "$tmp/x/tokenizer.bin" train -i "$tmp/no_such.txt" -o "$tmp"
expect_error vocab_not_numeric "invalid value 'abc' for -v" "$tmp/none" train -i "$corpus" -o "$tmp" -v abc
expect_error vocab_too_small "257, 65535" "$tmp/none" train -i "$corpus" -o "$tmp" -v 100
expect_error unknown_flag "unknown flag -z" "$tmp/none" train -i "$corpus" -o "$tmp" -z 1
expect_error unknown_command "unknown command 'frobnicate'" "$tmp/none" frobnicate -i x
expect_error fraction "for -f" "$tmp/bad_val.bin" encode -i "$corpus" -k "$tmp/tokenizer.bin" -o "$tmp/bad" -f 1.5
cp "$tmp/tokenizer.bin" "$tmp/badmagic.bin"
cp "$tmp/tokenizer.merges" "$tmp/badmagic.merges"
printf '\x01\x02\x03\x04' | dd of="$tmp/badmagic.bin" bs=1 conv=notrunc 2>/dev/null
expect_error tokenizer_magic "bad magic" "$tmp/out_val.bin" encode -i "$corpus" -k "$tmp/badmagic.bin" -o "$tmp/out"
head -c 2000 "$tmp/tokenizer.bin" >"$tmp/short.bin"
cp "$tmp/tokenizer.merges" "$tmp/short.merges"
expect_error tokenizer_truncated "truncated" "$tmp/out_val.bin" encode -i "$corpus" -k "$tmp/short.bin" -o "$tmp/out"
cp "$tmp/tokenizer.bin" "$tmp/nomerges.bin"
expect_error merges_missing "nomerges.merges" "$tmp/out_val.bin" encode -i "$corpus" -k "$tmp/nomerges.bin" -o "$tmp/out"
cp "$tmp/ts_val.bin" "$tmp/shard_magic.bin"
printf '\x00\x00\x00\x00' | dd of="$tmp/shard_magic.bin" bs=1 conv=notrunc 2>/dev/null
expect_error shard_magic "bad magic" "$tmp/dec.txt" decode -k "$tmp/tokenizer.bin" -i "$tmp/shard_magic.bin" -o "$tmp/dec.txt"
cp "$tmp/ts_val.bin" "$tmp/shard_version.bin"
printf '\x07\x00\x00\x00' | dd of="$tmp/shard_version.bin" bs=1 seek=4 conv=notrunc 2>/dev/null
expect_error shard_version "version 7" "$tmp/dec.txt" decode -k "$tmp/tokenizer.bin" -i "$tmp/shard_version.bin" -o "$tmp/dec.txt"
head -c 5000 "$tmp/ts_val.bin" >"$tmp/shard_trunc.bin"
expect_error shard_truncated "truncated" "$tmp/dec.txt" decode -k "$tmp/tokenizer.bin" -i "$tmp/shard_trunc.bin" -o "$tmp/dec.txt"
cp "$tmp/ts_val.bin" "$tmp/shard_token.bin"
printf '\xff\xff' | dd of="$tmp/shard_token.bin" bs=1 seek=1100 conv=notrunc 2>/dev/null
expect_error token_out_of_vocab "65535 at position 38 is not below the vocabulary size 768" "$tmp/dec.txt" decode -k "$tmp/tokenizer.bin" -i "$tmp/shard_token.bin" -o "$tmp/dec.txt"
: >"$tmp/empty.txt"
expect_error encode_empty_input "empty.txt is empty: nothing to encode" "$tmp/empty_val.bin" encode -i "$tmp/empty.txt" -k "$tmp/tokenizer.bin" -o "$tmp/empty"
expect_error train_empty_input "empty.txt is empty" "$tmp/x/tokenizer.bin" train -i "$tmp/empty.txt" -o "$tmp/x"
python3 - "$tmp/tokenizer.bin" "$tmp/eot.bin" <<'EOF'
import struct, sys
data = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<i", data, 12, 999999)  # header[3]: the eot token, past the vocabulary
open(sys.argv[2], "wb").write(data)
EOF
cp "$tmp/tokenizer.merges" "$tmp/eot.merges"
expect_error tokenizer_eot_outside_vocab "eot 999999" "$tmp/out_val.bin" encode -i "$corpus" -k "$tmp/eot.bin" -o "$tmp/out"

# the manifest (llmc/shard_manifest.h), read independently of the tool: its exact lines, every file's size, token count
# and XXH3-64 (Python's xxhash), val first then the train shards in order, the tokenizer's size, checksum and name
check_manifest() {  # prefix, tokenizer.bin, expected shard names...
    python3 - "$@" <<'PY'
import os, struct, sys, xxhash
prefix, tk, names = sys.argv[1], sys.argv[2], sys.argv[3:]
h = lambda p: xxhash.xxh3_64_hexdigest(open(p, "rb").read())
want = ["gptfp8 shard manifest 1", "status\tcomplete", f"tokenizer\t{os.path.getsize(tk)}\t{h(tk)}\t{os.path.basename(tk)}"]
for n in names:
    p = os.path.join(os.path.dirname(prefix), n)
    tokens = struct.unpack("<i", open(p, "rb").read(12)[8:12])[0]
    want.append(f"file\t{os.path.getsize(p)}\t{tokens}\t{h(p)}\t{n}")
got = open(prefix + ".manifest").read()
assert got == "\n".join(want) + "\n", (got, want)
PY
}
if check_manifest "$tmp/ts" "$tmp/tokenizer.bin" ts_val.bin ts_train.bin; then pass manifest_lists_the_set; else fail manifest_lists_the_set "ts.manifest"; fi
mkdir -p "$tmp/sharded"
"$tool" encode -i "$corpus" -k "$tmp/tokenizer.bin" -o "$tmp/sharded/s" -f 0.1 -s 60000 >/dev/null
n=$(ls "$tmp"/sharded/s_train_*.bin | wc -l)
if [ "$n" -ge 3 ] && check_manifest "$tmp/sharded/s" "$tmp/tokenizer.bin" s_val.bin $(cd "$tmp/sharded" && ls s_train_*.bin); then
    pass "manifest_lists_shards_in_order ($n train shards)"
else
    fail manifest_lists_shards_in_order "$n shards, or s.manifest differs"
fi
# a re-encoding that stops midway (here: shard 3's name is taken by a folder) leaves a manifest that says incomplete,
# so the trainers refuse the mix of new shards 1-2 and old ones 4.. (dev/data/test_prepare_dataset.sh trains on it)
mkdir -p "$tmp/stopped"
"$tool" encode -i "$corpus" -k "$tmp/tokenizer.bin" -o "$tmp/stopped/s" -f 0.1 -s 30000 >/dev/null
rm "$tmp/stopped/s_train_000003.bin" && mkdir "$tmp/stopped/s_train_000003.bin"
tr 'a-z' 'A-Z' <"$corpus" >"$tmp/corpus_upper.txt"
out=$("$tool" encode -i "$tmp/corpus_upper.txt" -k "$tmp/tokenizer.bin" -o "$tmp/stopped/s" -f 0.1 -s 30000 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q "s_train_000003.bin: it is a folder" &&
    [ "$(sed -n 2p "$tmp/stopped/s.manifest")" = "$(printf 'status\tincomplete')" ] && [ -e "$tmp/stopped/s_train_000004.bin" ]; then
    pass encode_stopped_midway_manifest_incomplete
else
    fail encode_stopped_midway_manifest_incomplete "rc $rc: $out; manifest: $(head -n 2 "$tmp/stopped/s.manifest" 2>&1 | tr '\n\t' '  ')"
fi
# refused before anything is written: no manifest change when an output cannot be a shard (a FIFO in its place)
cp "$tmp/sharded/s.manifest" "$tmp/manifest_before"
mkfifo "$tmp/sharded/s_val.bin.fifo"
rm "$tmp/sharded/s_val.bin" && mv "$tmp/sharded/s_val.bin.fifo" "$tmp/sharded/s_val.bin"
out=$("$tool" encode -i "$corpus" -k "$tmp/tokenizer.bin" -o "$tmp/sharded/s" -f 0.1 -s 60000 2>&1 >/dev/null)
if [ $? -ne 0 ] && printf '%s' "$out" | grep -q "s_val.bin: it is a FIFO" && cmp -s "$tmp/manifest_before" "$tmp/sharded/s.manifest" &&
    [ -p "$tmp/sharded/s_val.bin" ]; then
    pass encode_refuses_fifo_shard_before_writing
else
    fail encode_refuses_fifo_shard_before_writing "$out"
fi

# the val split on text of very long lines: the corpus on one line (its line ends made spaces) splits by size at a
# piece boundary, not at the text's end, and its two splits hold exactly the tokens of encoding it whole (-f 0); the
# same with multi-byte UTF-8 at several fractions (a split inside a character or a piece would change the tokens)
tr '\n' ' ' <"$corpus" >"$tmp/one_line.txt"
python3 - "$tmp/utf8_line.txt" <<'PY'
import random, sys
random.seed(3)
words = ["caf\u00e9", "\u65e5\u672c\u8a9e", "na\u00efve", "\U0001f642\U0001f642", "x1", "42", "--", "\u00e9t\u00e9", "the", "  ", "\t"]
open(sys.argv[1], "w").write(" ".join(random.choice(words) for _ in range(150000)))
PY
tokens_without_eot() {  # shards...: their ids but the eot (767), one per line
    python3 - "$@" <<'PY'
import struct, sys
for p in sys.argv[1:]:
    d = open(p, "rb").read()
    n = struct.unpack("<i", d[8:12])[0]
    sys.stdout.write("".join(f"{t}\n" for t in struct.unpack(f"<{n}H", d[1024:]) if t != 767))
PY
}
split_ok=1 split_info=
for case in "one_line 0.1" "utf8_line 0.13" "utf8_line 0.5" "utf8_line 0.77"; do
    set -- $case
    "$tool" encode -i "$tmp/$1.txt" -k "$tmp/tokenizer.bin" -o "$tmp/$1_whole" -f 0 >/dev/null 2>&1
    "$tool" encode -i "$tmp/$1.txt" -k "$tmp/tokenizer.bin" -o "$tmp/$1_split" -f "$2" >/dev/null || split_ok=0
    val=$(tokens_without_eot "$tmp/$1_split_val.bin" | wc -l)
    all=$(tokens_without_eot "$tmp/$1_whole_train.bin" | wc -l)
    share=$(awk -v v="$val" -v a="$all" 'BEGIN { printf "%.3f", v / a }')
    split_info="$split_info $1@$2:$share"
    # the split is by bytes, so its share of tokens is near the fraction, not all of the text
    awk -v s="$share" -v f="$2" 'BEGIN { exit !(s > f - 0.03 && s < f + 0.03) }' || split_ok=0
    [ "$(tokens_without_eot "$tmp/$1_split_val.bin" "$tmp/$1_split_train.bin" | md5sum)" = "$(tokens_without_eot "$tmp/$1_whole_train.bin" | md5sum)" ] || split_ok=0
done
if [ "$split_ok" = 1 ]; then pass "val_split_by_size_at_piece_boundary ($split_info)"; else fail val_split_by_size_at_piece_boundary "val shares$split_info, or the tokens differ from encoding whole"; fi
# splits too small for a batch of the trainers' default size (257 tokens): refused in one line, no shard left, the
# manifest saying incomplete; with -f 0 (no val split asked for) a short text is encoded, with a note
head -c 2000 "$corpus" >"$tmp/short.txt"
expect_error val_split_too_small "the val split of $tmp/short.txt holds" "$tmp/short_val.bin" encode -i "$tmp/short.txt" -k "$tmp/tokenizer.bin" -o "$tmp/short" -f 0.1
if [ ! -e "$tmp/short_train.bin" ] && [ "$(sed -n 2p "$tmp/short.manifest")" = "$(printf 'status\tincomplete')" ]; then pass split_refused_manifest_incomplete; else fail split_refused_manifest_incomplete "short_train.bin left, or the manifest does not say incomplete"; fi
expect_error train_split_too_small "the train split of $tmp/short.txt holds" "$tmp/short_val.bin" encode -i "$tmp/short.txt" -k "$tmp/tokenizer.bin" -o "$tmp/short" -f 0.99
head -c 300 "$corpus" >"$tmp/tiny.txt"
out=$("$tool" encode -i "$tmp/tiny.txt" -k "$tmp/tokenizer.bin" -o "$tmp/tiny" -f 0 2>&1 >/dev/null)
if [ $? -eq 0 ] && printf '%s' "$out" | grep -q "note: the train split holds" && [ -f "$tmp/tiny_train.bin" ]; then pass no_val_split_short_text_noted; else fail no_val_split_short_text_noted "$out"; fi

# a damaged tokenizer.bin is refused by encode and decode: one byte of the tail of the last merged token (no later
# merge holds it, so only checking the merge's right part sees it), a byte token (byte 1: in no merge), the eot's text
python3 - "$tmp/tokenizer.bin" "$tmp" <<'PY'
import struct, sys
src, d = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
offsets, pos = [], 1024
for i in range(768):
    offsets.append(pos); pos += 1 + data[pos]
def damaged(name, token, k):  # the k-th byte of token's text changed
    b = bytearray(data)
    at = offsets[token] + 1 + (k if k >= 0 else data[offsets[token]] + k)
    b[at] ^= 0x01
    open(f"{d}/{name}.bin", "wb").write(b)
    open(f"{d}/{name}.merges", "wb").write(open(src[:-4] + ".merges", "rb").read())
n = data[offsets[766]]
assert n >= 2, n
damaged("tail", 766, -1)
damaged("bytetoken", 1, 0)
damaged("eottext", 767, 3)
PY
expect_error damaged_merge_tail_encode "merge 510 (.*) does not match token 766" "$tmp/out_val.bin" encode -i "$corpus" -k "$tmp/tail.bin" -o "$tmp/out"
expect_error damaged_merge_tail_decode "merge 510 (.*) does not match token 766" "$tmp/dec.txt" decode -k "$tmp/tail.bin" -i "$tmp/ts_val.bin" -o "$tmp/dec.txt"
expect_error damaged_byte_token "token 1 is not the byte 1" "$tmp/dec.txt" decode -k "$tmp/bytetoken.bin" -i "$tmp/ts_val.bin" -o "$tmp/dec.txt"
expect_error damaged_eot_text "the eot token 767 is not <|endoftext|>" "$tmp/out_val.bin" encode -i "$corpus" -k "$tmp/eottext.bin" -o "$tmp/out"

# outputs that are not regular files are never replaced: /dev/full (written in place: it refuses, exit 1, and stays a
# device), a link to it, a FIFO (streamed to its reader), a symbolic link (followed: the link stays, its target gets
# the text, also when the target does not exist yet), a folder (refused)
out=$("$tool" decode -k "$tmp/tokenizer.bin" -i "$tmp/ts_val.bin" -o /dev/full 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne 0 ] && [ -c /dev/full ] && [ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] && printf '%s' "$out" | grep -q "No space left on device"; then
    pass output_dev_full_refused_stays_a_device
else
    fail output_dev_full_refused_stays_a_device "rc $rc: $out"
fi
ln -s /dev/full "$tmp/full_link"
out=$("$tool" decode -k "$tmp/tokenizer.bin" -i "$tmp/ts_val.bin" -o "$tmp/full_link" 2>&1 >/dev/null)
rc=$?
if [ "$rc" -ne 0 ] && [ -c /dev/full ] && [ -L "$tmp/full_link" ] && printf '%s' "$out" | grep -q "No space left on device"; then
    pass output_link_to_dev_full_refused
else
    fail output_link_to_dev_full_refused "rc $rc: $out"
fi
mkfifo "$tmp/fifo"
timeout 20 cat "$tmp/fifo" >"$tmp/fifo.out" &
reader=$!
timeout 20 "$tool" decode -k "$tmp/tokenizer.bin" -i "$tmp/ts_val.bin" -o "$tmp/fifo"
rc=$?
wait "$reader"
if [ "$rc" -eq 0 ] && [ -p "$tmp/fifo" ] && cmp -s "$tmp/fifo.out" "$tmp/val.txt"; then pass output_fifo_streamed; else fail output_fifo_streamed "rc $rc, the FIFO replaced or its reader got other text"; fi
mkdir -p "$tmp/elsewhere" "$tmp/links"
echo old >"$tmp/elsewhere/target.txt"
ln -s ../elsewhere/target.txt "$tmp/links/out.txt"
ln -s ../elsewhere/new.txt "$tmp/links/dangling.txt"
"$tool" decode -k "$tmp/tokenizer.bin" -i "$tmp/ts_val.bin" -o "$tmp/links/out.txt" &&
    "$tool" decode -k "$tmp/tokenizer.bin" -i "$tmp/ts_val.bin" -o "$tmp/links/dangling.txt"
rc=$?
if [ "$rc" -eq 0 ] && [ -L "$tmp/links/out.txt" ] && [ -L "$tmp/links/dangling.txt" ] && cmp -s "$tmp/elsewhere/target.txt" "$tmp/val.txt" &&
    cmp -s "$tmp/elsewhere/new.txt" "$tmp/val.txt" && [ -z "$(ls "$tmp/links" "$tmp/elsewhere" | grep '\.tmp$')" ]; then
    pass output_symlink_followed
else
    fail output_symlink_followed "rc $rc: the link was replaced or its target not written"
fi
# train's files and encode's shards through links too: the links stay, the manifest names the links' names
mkdir -p "$tmp/linked_tk" "$tmp/linked_data"
ln -s "$tmp/elsewhere/tk.bin" "$tmp/linked_tk/tokenizer.bin"
ln -s "$tmp/elsewhere/ld_val.bin" "$tmp/linked_data/ld_val.bin"
"$tool" train -i "$corpus" -o "$tmp/linked_tk" -v 300 >/dev/null && cp "$tmp/linked_tk/tokenizer.merges" "$tmp/linked_tk/tokenizer.merges.copy" &&
    "$tool" encode -i "$corpus" -k "$tmp/linked_tk/tokenizer.bin" -o "$tmp/linked_data/ld" >/dev/null
rc=$?
if [ "$rc" -eq 0 ] && [ -L "$tmp/linked_tk/tokenizer.bin" ] && [ -L "$tmp/linked_data/ld_val.bin" ] && [ -s "$tmp/elsewhere/tk.bin" ] &&
    check_manifest "$tmp/linked_data/ld" "$tmp/linked_tk/tokenizer.bin" ld_val.bin ld_train.bin; then
    pass outputs_through_symlinks
else
    fail outputs_through_symlinks "rc $rc"
fi
mkdir -p "$tmp/a_folder"
expect_error output_folder "cannot write $tmp/a_folder: it is a folder" "$tmp/a_folder.tmp" decode -k "$tmp/tokenizer.bin" -i "$tmp/ts_val.bin" -o "$tmp/a_folder"

# hash: "<xxh3-64> <bytes> <path>" per file in argument order, as Python's xxhash computes it (an empty file, a name
# with a space, a file over the 1 MiB read piece included); a missing file or a folder is one error line, exit 1 and
# nothing on stdout (no half list)
: >"$tmp/empty file.txt"
head -c 3000000 /dev/urandom >"$tmp/big.bin"
hash_files=("$tmp/tokenizer.bin" "$tmp/empty file.txt" "$tmp/ts_val.bin" "$tmp/big.bin" "$tmp/tokenizer.merges")
if "$tool" hash "${hash_files[@]}" >"$tmp/hash.out" && python3 - "$tmp/hash.out" "${hash_files[@]}" <<'PY'
import os, sys, xxhash
want = "".join(f"{xxhash.xxh3_64_hexdigest(open(p, 'rb').read())} {os.path.getsize(p)} {p}\n" for p in sys.argv[2:])
got = open(sys.argv[1]).read()
assert got == want, (got, want)
PY
then pass hash_matches_python_xxh3; else fail hash_matches_python_xxh3 "tokenizer hash differs from xxhash.xxh3_64_hexdigest"; fi
hash_error() {  # name, expected text, files...
    local name=$1 want=$2 out rc
    shift 2
    out=$("$tool" hash "$@" 2>"$tmp/hash.err")
    rc=$?
    if [ "$rc" -eq 1 ] && [ -z "$out" ] && [ "$(wc -l <"$tmp/hash.err")" -eq 1 ] && grep -q -- "$want" "$tmp/hash.err"; then
        pass "hash_$name"
    else
        fail "hash_$name" "rc $rc, stdout '$out', stderr: $(cat "$tmp/hash.err")"
    fi
}
hash_error missing_file "cannot open $tmp/no_such.bin" "$tmp/tokenizer.bin" "$tmp/no_such.bin"
hash_error folder "$tmp/again is not a regular file" "$tmp/tokenizer.bin" "$tmp/again"
hash_error no_file "hash needs at least one FILE"

finish tokenizer
