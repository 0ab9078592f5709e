#!/usr/bin/env bash
# dev/data/test_tokenizer.sh — tests of the BPE tokenizer tool: training speed and determinism, encode -> decode
# round-trips the corpus byte for byte, llm.c headers on every file, and every bad input (an empty input, an eot past
# the vocabulary included) answered with one error line, a non-zero exit and no output file left behind; `hash` agrees
# with Python's xxhash. Prints
# "tokenizer: N passed, M failed" last.
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
