#!/usr/bin/env bash
# dev/data/test_llmc_formats.sh — the files llm.c users bring, made here in Python in exactly llm.c's layouts, through
# the CPU trainer:
#   a. GPT-2-tokenized shards as llm.c's dev/data/fineweb.py writes them (header 20240520 v1, uint16 tokens, each
#      document after an eot 50256, shard 0 the val split, the rest train, fineweb_{val,train}_%06d.bin) and a tokenizer
#      in the layout of train_gpt2.py's gpt2_tokenizer.bin (20240328 v2, 50257 tokens, eot 50256; the token strings are
#      synthetic: the 256 bytes, then generated words, then <|endoftext|>): a small model trains from scratch on the
#      two train shards with V 50257 padded to 50304, its loss falls, it samples words of that tokenizer, and its
#      checkpoint resumes; llm.c's LLaMA-3 shards are refused in one line;
#   b. model files in train_gpt2.py's write_model layout (V 50257 padded to Vp 50304 with zero rows), fp32 (version 3)
#      and bf16 (version 5), on TinyStories-named shards (tinystories.py's TinyStories_{train,val}.bin): -e FILE -x 0
#      evaluates both to the val loss an independent numpy forward pass computes from the same weights (the bf16 file's
#      rounded); a version-5 file runs bit for bit as a version-3 file of its bf16-rounded weights, and in FP8 as the
#      fp32 file it was rounded from (FP8 runs read bf16-rounded weights); it fine-tunes in FP8 (delayed scaling) with
#      the loss falling and a checkpoint written; a model whose V is not the tokenizer's, a truncated version-5 file
#      and a version-5 file in place of a checkpoint's model file are each refused in one line.
# Prints PASS/FAIL per case and "llmc_formats: N passed, M failed" last. About 30 s on 2 cores.
set -u
cd "$(dirname "$0")/../.."
TRAINER=${TRAINER:-./train_gpt_fp8_cpu}
. scripts/test_lib.sh
if [ ! -x "$TRAINER" ]; then fail build "$TRAINER missing (make $(basename "$TRAINER"))"; finish llmc_formats; fi
if ! python3 -c "import numpy, ml_dtypes" 2>/dev/null; then
    fail python "numpy and ml_dtypes are needed to write the files (make deps)"
    finish llmc_formats
fi

last_log() { grep -E "^s:$2 $3:" "$1" | tail -n 1 | sed -E "s/.*$3:([0-9.naif-]+).*/\1/"; }  # main.log, step, trl|tel
# the sampled text: the lines between "generating:\n---" and the next "---"
sample_of() { awk '/^generating:$/ { getline; on = 1; next } on && /^---$/ { on = 0 } on' "$1"; }
# llm.c's model files carry no record of their tokenizer and data: -e FILE warns so, once (llmc/run_data.h)
NO_RECORD="^warning: -e .*: no dataset.txt beside it (an llm.c model file"
# One error line naming the problem, a non-zero exit (after that warning, for -e with an llm.c model file).
expect_error() {  # name, expected text, trainer args...
    local name=$1 want=$2
    shift 2
    local out rc
    out=$($TRAINER "$@" 2>&1 >/dev/null)
    rc=$?
    out=$(printf '%s\n' "$out" | grep -v -- "$NO_RECORD")
    if [ "$rc" -ne 0 ] && [ "$(printf '%s\n' "$out" | grep -c .)" -eq 1 ] && printf '%s' "$out" | grep -q -- "$want"; then
        pass "$name"
    else
        fail "$name" "rc $rc, wanted one error line with '$want', got: $out"
    fi
}

# ---------------------------------------------------------------------------------------------------------------------
# the files: the tokenizer, fineweb.py's shards, tinystories.py's two files, train_gpt2.py's model files
python3 - "$TMP" <<'EOF'
import os, struct, sys
import numpy as np
from ml_dtypes import bfloat16

d = sys.argv[1]
rng = np.random.default_rng(20240520)
V, EOT = 50257, 50256

# tokenizer, train_gpt2.py's write_tokenizer layout: {20240328, 2, n, eot}, then per token a uint8 length and its bytes.
# Its first 256 tokens are the single bytes in GPT-2's order (the printable ones first, as its byte-level BPE ranks
# them), then generated words, each a space and letters (a GPT-2 token's most common shape), the eot last.
printable = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
byte_tokens = [bytes([b]) for b in printable + [b for b in range(256) if b not in printable]]
syllables = [c + v for c in "bcdfghjklmnprstvwz" for v in "aeiou"] + ["th", "st", "ng", "er", "an", "in", "on", "qu"]
words, seen = [], set()
while len(words) < V - 257:
    w = "".join(syllables[i] for i in rng.integers(0, len(syllables), rng.integers(1, 5)))
    if rng.random() < 0.1:
        w = w.capitalize()
    if w not in seen:
        seen.add(w)
        words.append(b" " + w.encode())
tokens = byte_tokens + words + [b"<|endoftext|>"]
assert len(tokens) == V and all(0 < len(t) < 256 for t in tokens)
with open(f"{d}/gpt2_tokenizer.bin", "wb") as f:
    f.write(struct.pack("<256i", *([20240328, 2, V, EOT] + [0] * 252)))
    for t in tokens:
        f.write(bytes([len(t)]) + t)
with open(f"{d}/words.txt", "w") as f:  # what a sample through this tokenizer is made of
    f.write("\n".join(w.decode().strip() for w in words) + "\n")

# documents of a small language a model learns from in a few steps: 3000 word types with Zipf frequencies (ids across
# the whole vocabulary, the largest ones included), each followed by its own successor half of the time
types = np.concatenate([rng.choice(np.arange(256, EOT), 2998, replace=False), [EOT - 1, ord(".") - 33]])
zipf = 1.0 / np.arange(1, len(types) + 1)
zipf /= zipf.sum()
successor = rng.integers(0, len(types), len(types))
def document():
    n = int(rng.integers(20, 200))
    out = [EOT]  # llm.c's scripts put the eot before every document
    k = int(rng.choice(len(types), p=zipf))
    for _ in range(n):
        out.append(int(types[k]))
        k = int(successor[k]) if rng.random() < 0.5 else int(rng.choice(len(types), p=zipf))
    return out
stream = []
while len(stream) < 15000:
    stream += document()
stream = np.array(stream, dtype=np.uint16)

# data_common.py's write_datafile: int32 header[256] = {20240520, 1, count}, then the uint16 tokens
def write_datafile(path, toks):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *([20240520, 1, len(toks)] + [0] * 253)))
        f.write(np.asarray(toks, dtype=np.uint16).tobytes())

# fineweb.py: the token stream cut into shards of shard_size tokens (a document crossing a boundary continues in the
# next shard), shard 0 is the val split, the others train; the last shard holds the remainder
shard_size = 3000
shards = [stream[i:min(i + shard_size, 8500)] for i in range(0, 8500, shard_size)]  # 3000, 3000, 2500
for i, s in enumerate(shards):
    write_datafile(f"{d}/fineweb10B/fineweb_{'val' if i == 0 else 'train'}_{i:06d}.bin", s)
# tinystories.py: one val file and one train file of whole documents, in tinystories/
write_datafile(f"{d}/tinystories/TinyStories_val.bin", stream[8500:11000])
write_datafile(f"{d}/tinystories/TinyStories_train.bin", stream[11000:])

# model files, train_gpt2.py's write_model: {20240326, 3 (fp32) or 5 (bf16), maxT, V, L, NH, C, Vp}, then the tensors in
# llm.c's order, wte padded from V to Vp rows with zeros; bf16 is torch's round to nearest even
L, C, NH, maxT, Vp = 2, 64, 4, 64, 50304
std, resid = 0.02, 0.02 / np.sqrt(2 * L)
g = lambda *shape, s=std: rng.normal(0.0, s, shape).astype(np.float32)
# GPT-2's initial scale, with biases and LayerNorm parameters not at their initial 0 and 1, so that a tensor read in
# the wrong place changes the loss
params = {
    "wte": g(V, C), "wpe": g(maxT, C), "ln1w": 1 + g(L, C, s=0.1), "ln1b": g(L, C), "qkvw": g(L, 3 * C, C),
    "qkvb": g(L, 3 * C), "attprojw": g(L, C, C, s=resid), "attprojb": g(L, C), "ln2w": 1 + g(L, C, s=0.1),
    "ln2b": g(L, C), "fcw": g(L, 4 * C, C), "fcb": g(L, 4 * C), "fcprojw": g(L, C, 4 * C, s=resid), "fcprojb": g(L, C),
    "lnfw": 1 + g(C, s=0.1), "lnfb": g(C),
}
def write_model(path, p, version, vocab=V):
    header = [20240326, version, maxT, vocab, L, NH, C, Vp if vocab == V else vocab] + [0] * 248
    wte = np.zeros((header[7], C), np.float32)
    wte[:vocab] = p["wte"][:vocab]
    with open(path, "wb") as f:
        f.write(struct.pack("<256i", *header))
        for name, t in p.items():
            t = wte if name == "wte" else t
            f.write(t.astype(np.float32 if version == 3 else bfloat16).tobytes())
rounded = {k: v.astype(bfloat16).astype(np.float32) for k, v in params.items()}
write_model(f"{d}/gpt2_tiny.bin", params, 3)
write_model(f"{d}/gpt2_tiny_bf16.bin", params, 5)
write_model(f"{d}/gpt2_tiny_rounded.bin", rounded, 3)  # version 3 holding the bf16 file's values
write_model(f"{d}/gpt2_tiny_v1024_bf16.bin", params, 5, vocab=1024)
np.savez(f"{d}/weights.npz", **{"fp32_" + k: v for k, v in params.items()}, **{"bf16_" + k: v for k, v in rounded.items()})
EOF
[ $? -eq 0 ] || { fail files "writing the llm.c-format files failed"; finish llmc_formats; }

# ---------------------------------------------------------------------------------------------------------------------
# a. fineweb.py's shards and a GPT-2-sized tokenizer: trains from scratch, samples through it, its checkpoint resumes
# the globs reach the trainer as they are (it globs them, as llm.c does)
FW=(-i "$TMP/fineweb10B/fineweb_train_*.bin" -j "$TMP/fineweb10B/fineweb_val_*.bin" -tk "$TMP/gpt2_tokenizer.bin")
$TRAINER "${FW[@]}" -L 2 -C 64 -NH 4 -b 4 -t 64 -x -1 -l 2e-3 -v 20 -m 4 -s 20 -g 48 -o "$TMP/fw" >"$TMP/fw.out" 2>&1
fw_rc=$?
v0=$(last_log "$TMP/fw/main.log" 0 tel)
v20=$(last_log "$TMP/fw/main.log" 20 tel)
# the start-up box: GPT-2's vocabulary padded as llm.c pads it, and both train shards in the glob: -x -1 is one epoch,
# 11 batches of 256 tokens (and the next one's target) in the first shard's 3000 tokens and 9 in the second's 2500
if [ "$fw_rc" -eq 0 ] && grep -q "V 50257 (Vp 50304)" "$TMP/fw.out" && grep -q "^| *| 20 steps" "$TMP/fw.out" &&
    [ -n "$(last_log "$TMP/fw/main.log" 20 trl)" ]; then
    pass "fineweb_shards_train (V 50257, Vp 50304, 20 steps: both shards)"
else
    fail "fineweb_shards_train" "rc $fw_rc: $(grep -m 1 -E 'error|model ' "$TMP/fw.out")"
fi
# ln(50257) = 10.82 at the start; the language's unigram entropy alone is far lower, so 20 steps must show it
# (measured: 10.83 -> 8.4)
if [ -n "$v0" ] && [ -n "$v20" ] && awk -v a="$v0" -v b="$v20" 'BEGIN { exit !(a > 10.5 && b < a - 1.0) }'; then
    pass "fineweb_loss_falls (val $v0 -> $v20)"
else
    fail "fineweb_loss_falls" "val '$v0' -> '$v20', wanted a fall of more than 1.0 from about ln(50257)"
fi
# the sample is words of this tokenizer: each generated token is a space and a word of words.txt, so nearly every
# word of a sample drawn through it is one (not so for token ids printed, or another tokenizer's strings)
sample_of "$TMP/fw.out" >"$TMP/fw_sample.txt"
known=$(tr ' ' '\n' <"$TMP/fw_sample.txt" | grep . | grep -c -x -F -f "$TMP/words.txt")
if [ "$known" -ge 40 ]; then
    pass "fineweb_sample_through_tokenizer ($known of 48 tokens are its words)"
else
    fail "fineweb_sample_through_tokenizer" "$known of 48 sampled tokens are the tokenizer's words: $(head -c 200 "$TMP/fw_sample.txt")"
fi
# the checkpoint reads back: a resume continues from it (model file, FP8 state and data position) for 2 more steps
$TRAINER "${FW[@]}" -L 2 -C 64 -NH 4 -b 4 -t 64 -x 22 -l 2e-3 -v 20 -m 4 -s 0 -y 1 -o "$TMP/fw" >"$TMP/fw_resume.out" 2>&1
fw_resume_rc=$?
if [ "$fw_rc" -eq 0 ] && [ "$fw_resume_rc" -eq 0 ] && grep -q "resumed from .*/model_00000020.bin at step 20" "$TMP/fw_resume.out" &&
    [ -n "$(last_log "$TMP/fw/main.log" 22 trl)" ] && [ -e "$TMP/fw/DONE_00000022" ]; then
    pass "fineweb_checkpoint_resumes"
else
    fail "fineweb_checkpoint_resumes" "rc $fw_rc/$fw_resume_rc: $(tail -n 1 "$TMP/fw_resume.out")"
fi

# llm.c's LLaMA-3 shards (fineweb.py -m llama-3: magic 20240801, version 7, uint32 tokens) are refused by name
python3 - "$TMP/fineweb10B/fineweb_val_000000.bin" "$TMP/llama3_val_000000.bin" <<'EOF'
import struct, sys
import numpy as np
tokens = np.fromfile(sys.argv[1], dtype=np.uint16, offset=1024).astype(np.uint32)
open(sys.argv[2], "wb").write(struct.pack("<256i", *([20240801, 7, len(tokens)] + [0] * 253)) + tokens.tobytes())
EOF
expect_error "llama3_shard_refused" "llama3_val_000000.bin is llm.c's LLaMA-3 format" \
    -i "$TMP/llama3_val_000000.bin" -j "$TMP/llama3_val_000000.bin" -tk "$TMP/gpt2_tokenizer.bin" -L 2 -C 64 -NH 4 -x 1

# ---------------------------------------------------------------------------------------------------------------------
# b. train_gpt2.py's model files on tinystories.py's shards
TS=(-i "$TMP/tinystories/TinyStories_train.bin" -j "$TMP/tinystories/TinyStories_val.bin" -tk "$TMP/gpt2_tokenizer.bin")
EVAL=("${TS[@]}" -b 4 -t 64 -x 0 -v 1 -m 2 -g 24 -seed 5)
for m in gpt2_tiny gpt2_tiny_bf16 gpt2_tiny_rounded; do
    for p in fp32 fp8; do $TRAINER "${EVAL[@]}" -e "$TMP/$m.bin" -precision $p >"$TMP/eval_${m}_$p.out" 2>&1; done
done
val_of() { grep -m 1 "^val loss" "$1" | awk '{ print $3 }'; }
# the val loss numpy computes from the same weights (float64, llm.c's GPT-2: tanh GELU, LayerNorm eps 1e-5, softmax
# over the V real tokens) over the first 2 val batches
ref=$(python3 - "$TMP" <<'EOF'
import sys
import numpy as np
d = sys.argv[1]
w = np.load(f"{d}/weights.npz")
val = np.fromfile(f"{d}/tinystories/TinyStories_val.bin", dtype=np.uint16, offset=1024).astype(np.int64)
B, T, L, C, NH = 4, 64, 2, 64, 4
def layernorm(x, g, b):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + 1e-5) * g + b
def loss(p, inputs, targets):
    x = p["wte"][inputs] + p["wpe"][:T]
    hs = C // NH
    mask = np.triu(np.full((T, T), -np.inf), 1)
    for l in range(L):
        h = layernorm(x, p["ln1w"][l], p["ln1b"][l])
        q, k, v = np.split(h @ p["qkvw"][l].T + p["qkvb"][l], 3, axis=-1)  # (B, T, C) each, heads side by side
        q, k, v = (t.reshape(B, T, NH, hs).transpose(0, 2, 1, 3) for t in (q, k, v))
        a = q @ k.transpose(0, 1, 3, 2) / np.sqrt(hs) + mask
        a = np.exp(a - a.max(-1, keepdims=True))
        a /= a.sum(-1, keepdims=True)
        y = (a @ v).transpose(0, 2, 1, 3).reshape(B, T, C)
        x = x + y @ p["attprojw"][l].T + p["attprojb"][l]
        h = layernorm(x, p["ln2w"][l], p["ln2b"][l])
        u = h @ p["fcw"][l].T + p["fcb"][l]
        u = 0.5 * u * (1 + np.tanh(np.sqrt(2 / np.pi) * (u + 0.044715 * u ** 3)))
        x = x + u @ p["fcprojw"][l].T + p["fcprojb"][l]
    logits = layernorm(x, p["lnfw"], p["lnfb"]) @ p["wte"].T
    logits -= logits.max(-1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return -np.take_along_axis(logp, targets[..., None], -1).mean()
for kind in ("fp32", "bf16"):
    p = {k[5:]: w[k].astype(np.float64) for k in w.files if k.startswith(kind + "_")}
    batches = [val[i * B * T:(i + 1) * B * T + 1] for i in range(2)]
    print(np.mean([loss(p, b[:-1].reshape(B, T), b[1:].reshape(B, T)) for b in batches]), end=" ")
EOF
)
ref_fp32=${ref%% *}
ref_bf16=$(echo "$ref" | awk '{ print $2 }')
for m in gpt2_tiny:"$ref_fp32" gpt2_tiny_bf16:"$ref_bf16"; do
    name=${m%%:*} want=${m#*:} got=$(val_of "$TMP/eval_${name}_fp32.out")
    version=$([ "$name" = gpt2_tiny ] && echo 3 || echo 5)
    # fp32 against float64: the printed 6 decimals (5e-7) and the fp32 sums' rounding (measured: within 1e-6 in all);
    # one bf16 ulp flipped in every weight moves the loss by 1e-4
    if [ -n "$got" ] && [ -n "$want" ] && awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d < 1e-5) }'; then
        pass "model_v${version}_evaluates_as_numpy (val $got, numpy $want)"
    else
        fail "model_v${version}_evaluates_as_numpy" "val '$got', numpy '$want': $(grep -m 1 error "$TMP/eval_${name}_fp32.out")"
    fi
done
# version 5 is its bf16 values widened exactly: everything it prints (the val loss, the sample) is what a version-3
# file of the rounded weights prints, in fp32 and in FP8; and it is not the unrounded model's
for p in fp32 fp8; do
    if [ -n "$(val_of "$TMP/eval_gpt2_tiny_bf16_$p.out")" ] && grep -q "^generating:" "$TMP/eval_gpt2_tiny_bf16_$p.out" &&
        [ "$(grep -c -- "$NO_RECORD" "$TMP/eval_gpt2_tiny_bf16_$p.out")" -eq 1 ] &&
        cmp -s <(grep -v -e "^| output" -e "$NO_RECORD" "$TMP/eval_gpt2_tiny_bf16_$p.out") \
            <(grep -v -e "^| output" -e "$NO_RECORD" "$TMP/eval_gpt2_tiny_rounded_$p.out"); then
        pass "model_v5_bit_identical_to_rounded_v3_$p (val $(val_of "$TMP/eval_gpt2_tiny_bf16_$p.out"))"
    else
        fail "model_v5_bit_identical_to_rounded_v3_$p" "$(diff "$TMP/eval_gpt2_tiny_bf16_$p.out" "$TMP/eval_gpt2_tiny_rounded_$p.out" | head -n 4 | tr '\n' ' ')"
    fi
done
if [ "$(val_of "$TMP/eval_gpt2_tiny_fp32.out")" != "$(val_of "$TMP/eval_gpt2_tiny_bf16_fp32.out")" ]; then
    pass "model_v3_and_v5_differ_by_the_rounding_in_fp32"
else
    fail "model_v3_and_v5_differ_by_the_rounding_in_fp32" "the fp32 file and its bf16 rounding evaluate the same: is the rounding lost?"
fi
# in FP8 (and bf16) every layer reads its weights rounded to bf16 to nearest even, as train_gpt2.py rounds them into
# the version-5 file: there the two files of one model are one model, bit for bit
if [ -n "$(val_of "$TMP/eval_gpt2_tiny_fp8.out")" ] &&
    cmp -s <(grep -v -e "^| output" -e "$NO_RECORD" "$TMP/eval_gpt2_tiny_bf16_fp8.out") \
        <(grep -v -e "^| output" -e "$NO_RECORD" "$TMP/eval_gpt2_tiny_fp8.out"); then
    pass "model_v5_is_its_fp32_source_in_fp8"
else
    fail "model_v5_is_its_fp32_source_in_fp8" "$(diff "$TMP/eval_gpt2_tiny_bf16_fp8.out" "$TMP/eval_gpt2_tiny_fp8.out" | head -n 4 | tr '\n' ' ')"
fi
# fine-tuning the bf16 file in FP8 (delayed scaling, the default recipe): the loss falls, a version-3 checkpoint of
# step 10 is written (measured: val 10.83 -> 9.7)
$TRAINER "${TS[@]}" -e "$TMP/gpt2_tiny_bf16.bin" -precision fp8 -b 4 -t 64 -x 10 -l 2e-3 -v 10 -m 2 -s 0 -o "$TMP/ft" >"$TMP/ft.out" 2>&1
ft_rc=$?
f0=$(last_log "$TMP/ft/main.log" 0 tel)
f10=$(last_log "$TMP/ft/main.log" 10 tel)
if [ "$ft_rc" -eq 0 ] && grep -q "DelayedScaling(" "$TMP/ft.out" && [ "$f0" = "$(printf '%.4f' "$(val_of "$TMP/eval_gpt2_tiny_bf16_fp8.out")")" ] &&
    awk -v a="$f0" -v b="$f10" 'BEGIN { exit !(b < a - 0.5) }'; then
    pass "model_v5_finetunes_in_fp8 (val $f0 -> $f10)"
else
    fail "model_v5_finetunes_in_fp8" "rc $ft_rc, val '$f0' -> '$f10': $(grep -m 1 error "$TMP/ft.out")"
fi
if [ -e "$TMP/ft/DONE_00000010" ] && [ -e "$TMP/ft/state_00000010_00000.bin" ] &&
    [ "$(od -An -t d4 -j 4 -N 4 "$TMP/ft/model_00000010.bin" | tr -d ' ')" = 3 ] &&
    $TRAINER "${TS[@]}" -e "$TMP/ft/model_00000010.bin" -b 4 -t 64 -x 0 -v 1 -m 2 -s 0 >/dev/null 2>&1; then
    pass "model_v5_finetune_checkpoint (version 3, loads)"
else
    fail "model_v5_finetune_checkpoint" "no complete version-3 checkpoint of step 10 in $TMP/ft: $(ls "$TMP/ft" | tr '\n' ' ')"
fi

# refused in one line: a vocabulary that is not the tokenizer's, a truncated bf16 file, and a bf16 file in place of a
# checkpoint's model file (a resume continues our fp32 masters, which a bf16 file has lost; -e starts from it instead)
expect_error "model_vocab_not_tokenizers" "tokenizer .* has 50257 tokens but the model has a vocabulary of 1024" \
    "${EVAL[@]}" -e "$TMP/gpt2_tiny_v1024_bf16.bin"
head -c 100000 "$TMP/gpt2_tiny_bf16.bin" >"$TMP/gpt2_tiny_bf16_truncated.bin"
expect_error "model_v5_truncated" "truncated model file (version 5, bf16 parameters: 100000 bytes" \
    "${EVAL[@]}" -e "$TMP/gpt2_tiny_bf16_truncated.bin"
if [ "$ft_rc" -eq 0 ]; then
    cp -r "$TMP/ft" "$TMP/ft_bf16"
    python3 - "$TMP/ft_bf16/model_00000010.bin" <<'EOF'
import struct, sys
import numpy as np
from ml_dtypes import bfloat16
data = open(sys.argv[1], "rb").read()
header = list(struct.unpack("<256i", data[:1024]))
header[1] = 5  # what llm.c's train_gpt2cu writes for the same weights, the step left in header[8]
weights = np.frombuffer(data[1024:], dtype=np.float32).astype(bfloat16)
open(sys.argv[1], "wb").write(struct.pack("<256i", *header) + weights.tobytes())
EOF
    expect_error "resume_refuses_v5_model_file" "model_00000010.bin: a bf16 model file (version 5" \
        "${TS[@]}" -e "$TMP/gpt2_tiny_bf16.bin" -precision fp8 -b 4 -t 64 -x 12 -v 0 -s 0 -y 1 -o "$TMP/ft_bf16"
else
    fail "resume_refuses_v5_model_file" "no fine-tuning checkpoint to try it on"
fi

finish llmc_formats
