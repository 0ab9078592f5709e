#!/usr/bin/env python3
"""fuzz/make_seed_corpus.py — writes the small seed corpus of the fuzz harnesses into fuzz/corpus/<reader>/: for each
reader a few tiny valid files (so the fuzzer starts from inputs that get past every check) and a few invalid ones
(wrong magic, version, sizes). Run it again after a format change; crash reproducers found by fuzzing are kept beside
these seeds by hand (named crash-*) and are never overwritten here."""
import os
import struct
import sys

import xxhash  # the state file's checksum is XXH3-64 (requirements.txt)

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def put(reader, name, data):
    os.makedirs(os.path.join(root, reader), exist_ok=True)
    with open(os.path.join(root, reader, name), "wb") as f:
        f.write(data)


def header(*values):
    h = list(values) + [0] * (256 - len(values))
    return struct.pack("<256i", *h)


# tokenizer: {20240328, version, vocab, eot}, then per token a length byte and its bytes
def tokenizer(version, tokens, eot):
    return header(20240328, version, len(tokens), eot) + b"".join(bytes([len(t)]) + t for t in tokens)


tokens = [b"a", b"b", b"ab", b"<|endoftext|>"]
put("tokenizer", "valid_v2", tokenizer(2, tokens, 3))
put("tokenizer", "bad_magic", struct.pack("<i", 12345) + tokenizer(2, tokens, 3)[4:])
put("tokenizer", "bad_version", tokenizer(3, tokens, 3))
put("tokenizer", "truncated", tokenizer(2, tokens, 3)[:-3])
put("tokenizer", "trailing_bytes", tokenizer(2, tokens, 3) + b"x")
put("tokenizer", "zero_length_token", header(20240328, 2, 2, 1) + b"\x01a\x00b")

# shard: {20240520, 1, count}, then count uint16 tokens (the harness reads B*T = 16 + 1 tokens a batch, vocab 512)
def shard(tokens, magic=20240520, version=1, count=None):
    return header(magic, version, len(tokens) if count is None else count) + struct.pack(f"<{len(tokens)}H", *tokens)


put("shard", "valid_40", shard([(7 * i) % 512 for i in range(40)]))
put("shard", "valid_17", shard(list(range(17))))
put("shard", "token_out_of_vocab", shard([1] * 10 + [600] + [1] * 29))
put("shard", "bad_magic", shard([1] * 40, magic=1))
put("shard", "bad_version", shard([1] * 40, version=2))
put("shard", "too_short", shard([1] * 10))
put("shard", "count_mismatch", shard([1] * 40, count=41))


# manifest: dev/data/tokenizer's PREFIX.manifest (llmc/shard_manifest.h), text records separated by tabs
def manifest(status="complete", files=(("d_val.bin", 20), ("d_train_000001.bin", 50)), tokenizer="2048\t0123456789abcdef\ttokenizer.bin"):
    lines = ["gptfp8 shard manifest 1", f"status\t{status}", f"tokenizer\t{tokenizer}"]
    lines += [f"file\t{1024 + 2 * t}\t{t}\t{xxhash.xxh3_64_hexdigest(n.encode())}\t{n}" for n, t in files]
    return ("\n".join(lines) + "\n").encode()


put("manifest", "valid_complete", manifest())
put("manifest", "valid_incomplete", manifest("incomplete", ()))
put("manifest", "valid_many", manifest(files=[("x_val.bin", 7)] + [(f"x_train_{i:06d}.bin", 100 + i) for i in range(1, 9)]))
put("manifest", "bad_status", manifest("done"))
put("manifest", "bad_hex", manifest(tokenizer="2048\t0123456789ABCDEF\ttokenizer.bin"))
put("manifest", "size_mismatch", manifest().replace(b"1064\t20", b"1066\t20"))
put("manifest", "twice", manifest(files=[("a_val.bin", 1), ("a_val.bin", 1)]))
put("manifest", "no_line_end", manifest()[:-1])
put("manifest", "complete_without_files", manifest(files=()))
put("manifest", "other_version", manifest().replace(b"manifest 1", b"manifest 2"))


# run_data: a run's dataset.txt (llmc/run_data.h), text records separated by tabs, the path last
def run_data(lines=None):
    h = "0123456789abcdef"
    default = ["gptfp8 run data 1", f"tokenizer\t5043\t{h}\t/data/x/tokenizer.bin", "train\t/data/x/x_train_*.bin",
               "val\t/data/x/x_val.bin", f"train_shard\t2048\t{h}\t/data/x/x_train_000001.bin",
               f"val_shard\t1048\t{h}\t/data/x/x_val.bin"]
    return ("\n".join(default if lines is None else lines) + "\n").encode()


put("run_data", "valid", run_data())
put("run_data", "valid_note_no_tokenizer", run_data(["gptfp8 run data 1", "# recorded at a resume", "train\t/t_*.bin",
                                                     "train_shard\t1\t0000000000000000\t/a path/with spaces.bin"]))
put("run_data", "bad_hex", run_data()[:-1].replace(b"0123456789abcdef", b"0123456789ABCDEF") + b"\n")
put("run_data", "no_train_shard", run_data(["gptfp8 run data 1", "train\t/t_*.bin"]))
put("run_data", "two_tokenizers", run_data() + b"tokenizer\t1\t0000000000000000\t/t.bin\n")
put("run_data", "other_version", run_data().replace(b"run data 1", b"run data 2"))


# model: {20240326, version, maxT, V, L, NH, C, Vp}, then the parameters in llm.c's order: fp32 in version 3, bf16 (the
# upper half of each fp32) in llm.c's version 5
def model(maxT, V, L, NH, C, Vp, value=0.5, version=3):
    n = Vp * C + maxT * C + L * (2 * C + 3 * C * C + 3 * C + C * C + C + 2 * C + 4 * C * C + 4 * C + 4 * C * C + C) + 2 * C
    values = struct.pack(f"<{n}f", *([value] * n))
    if version == 5:
        values = b"".join(values[i + 2 : i + 4] for i in range(0, len(values), 4))  # 0.5 and NaN are exact in bf16
    return header(20240326, version, maxT, V, L, NH, C, Vp) + values


put("model", "valid_tiny", model(2, 2, 1, 1, 1, 2))
put("model", "valid_two_layers", model(4, 3, 2, 2, 2, 4))
put("model", "nan_parameter", model(2, 2, 1, 1, 1, 2, value=float("nan")))
put("model", "bf16_version", header(20240326, 5, 2, 2, 1, 1, 1, 2))  # a bf16 header without its parameters
put("model", "valid_bf16_two_layers", model(4, 3, 2, 2, 2, 4, version=5))
put("model", "bf16_nan_parameter", model(2, 2, 1, 1, 1, 2, value=float("nan"), version=5))
put("model", "bf16_truncated", model(2, 2, 1, 1, 1, 2, version=5)[:-2])
put("model", "unknown_version", model(2, 2, 1, 1, 1, 2)[:4] + struct.pack("<i", 4) + model(2, 2, 1, 1, 1, 2)[8:])
put("model", "truncated", model(2, 2, 1, 1, 1, 2)[:-4])
put("model", "heads_do_not_divide", header(20240326, 3, 2, 2, 1, 2, 3, 2))


# state: int32 header[256], float m[n], v[n], fp8[(len + 2) * 5M], the diagnostics arrays (block recipes: the block
# scale ranges too), then XXH3-64 of every byte before it
def state(precision, modules, history_len, n, step=3, B=2, T=4, total_batch=8, version=4, scaling=0, fp8_format=1,
          epsilon=0.0, fp32_scales=0):
    h = [0] * 256
    h[0:19] = [20241122, version, 1, 0, precision, modules, history_len, 0, 1, 1, 0, 0, 0, 0, 1, 0, 0, B, T]
    h[9] = fp8_format  # 0 E4M3 (the block recipes' default), 1 HYBRID
    h[34] = scaling  # 0 delayed, 1 current, 2 blockwise, 3 mxfp8 (the last three have no amax reduction)
    h[14] = 0 if scaling else 1
    h[35] = total_batch
    h[38] = struct.unpack("<i", struct.pack("<f", epsilon))[0]  # blockwise amax_epsilon
    h[39] = fp32_scales  # blockwise: 1 when scales are not rounded to powers of two
    body = bytearray(struct.pack("<256i", *h))
    for index, value in ((20, step), (22, n), (24, 12345), (26, 0), (28, 64), (30, 0), (32, n), (36, 0x0123456789ABCDEF)):
        struct.pack_into("<q", body, index * 4, value)
    slots = 5 * modules
    body += struct.pack(f"<{2 * n}f", *([0.01] * (2 * n)))
    if modules:  # metadata (histories 0 but a few amaxes, scales 1), last and window amaxes, counters (count, saturated, flushed)
        history = [0.0] * (history_len * slots)
        history[slots - 1] = 3.5
        body += struct.pack(f"<{len(history)}f", *history) + struct.pack(f"<{2 * slots}f", *([1.0] * (2 * slots)))
        body += struct.pack(f"<{slots}f", *([2.0] * slots)) + struct.pack(f"<{slots}f", *([3.5] * slots))
        body += struct.pack(f"<{3 * slots}q", *([100, 1, 2] * slots))
        if scaling >= 2:  # per slot the smallest and largest block scale (+inf and 0: none yet)
            body += struct.pack(f"<{2 * slots}f", *([0.25, 4096.0] * (slots - 1) + [float("inf"), 0.0]))
    return bytes(body) + struct.pack("<Q", xxhash.xxh3_64_intdigest(bytes(body)))


put("state", "valid_bf16", state(1, 0, 1024, 31))
put("state", "valid_fp8", state(2, 2, 4, 31))
put("state", "valid_fp8_current", state(2, 2, 1, 31, scaling=1))
put("state", "valid_fp8_blockwise", state(2, 2, 1, 31, scaling=2, fp8_format=0, epsilon=1e-3, fp32_scales=1))
put("state", "valid_fp8_mxfp8", state(2, 2, 1, 31, scaling=3, fp8_format=0))
bad = bytearray(state(2, 2, 4, 31))
bad[2000 % len(bad)] ^= 0x40
put("state", "bad_checksum", bytes(bad))
put("state", "truncated", state(2, 2, 4, 31)[:-8])
put("state", "version_2", state(1, 0, 1024, 31, version=2))
put("state", "version_3", state(1, 0, 1024, 31, version=3))
print(f"seed corpus written to {root}", file=sys.stderr)
