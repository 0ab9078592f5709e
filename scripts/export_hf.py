#!/usr/bin/env python3
"""scripts/export_hf.py — turns a model file of this project (or llm.c's) into a Hugging Face GPT-2 folder that
transformers loads offline (GPT2LMHeadModel / AutoModelForCausalLM.from_pretrained(OUTDIR)), so a trained model can be
evaluated by tools that speak transformers (lm-evaluation-harness) and shared.

    export_hf.py CHECKPOINT OUTDIR [--dtype fp32|bf16] [--tokenizer PATH/tokenizer.bin [--other-tokenizer]] [--force]

CHECKPOINT: llm.c's model file, int32 header[256] = {20240326, version, maxT, V, L, NH, C, Vp, ...}, then the 16
parameter tensors of llmc/gpt2.h's ParameterTensors in that order, wte padded to Vp rows; version 3 holds fp32
parameters (our trainers' checkpoints, llm.c's train_gpt2.py), version 5 bf16 (llm.c's train_gpt2.py --dtype bfloat16
and train_gpt2cu). The padded rows of wte are dropped: the HF model has V.

OUTDIR gets
  config.json             GPT2Config: GELU with the tanh approximation ("gelu_new", the trainer's gelu_value),
                          LayerNorm epsilon 1e-5 (layernorm_forward), tied embeddings (our LM head is wte), dropout 0
                          (the trainers have none, so fine-tuning the export trains the model we trained), bos = eos =
                          the end-of-text id (the tokenizer's eot; without --tokenizer V - 1, which is the eot of both
                          our tokenizers and GPT-2's), dtype of the weights.
  generation_config.json  bos/eos for generate().
  model.safetensors       HF GPT2LMHeadModel's names (transformer.wte.weight, transformer.h.N.attn.c_attn.weight, ...;
                          lm_head.weight is tied, not stored). HF's Conv1D keeps a weight as (in, out): ours are
                          (out, in), so every matmul weight is transposed. --dtype: fp32 or bf16 (round to nearest
                          even); default the file's own (fp32 for version 3, bf16 for version 5).
  tokenizer.json, tokenizer_config.json  with --tokenizer and one of OUR tokenizers (dev/data/tokenizer.c: a
                          tokenizer.merges beside the tokenizer.bin): a `tokenizers` BPE that encodes exactly as
                          dev/data/tokenizer.c does (PIECE_REGEX below reproduces next_piece(), HF's BPE applies the
                          merges in rank order as encode_piece() does), eos/bos/unk "<|endoftext|>" = the eot id; the
                          text "<|endoftext|>" is encoded as its bytes, as ours does (split_special_tokens: through
                          transformers; tokenizers' bare Tokenizer.from_file matches it as the eot, as tokenizer.json
                          cannot record that switch).
                          Not exported, with one line saying why (the model still is): a GPT-2 tokenizer file from
                          llm.c (no merge order in it: use the stock "gpt2" tokenizer), or a vocabulary where two ids
                          spell the same bytes (BPE can learn a string twice; an HF vocabulary maps a string to one id,
                          so the second could never be produced and encoding would differ).

The tokenizer the model was trained with: a run folder of our trainers records its data in dataset.txt beside the
checkpoints (RUN_DATA_FIELDS below: the tokenizer.bin's path, size and XXH3-64, the shards'). With a record that names
a tokenizer, no --tokenizer exports that one (a note says so) if it is still there with the recorded checksum, else the
export is refused; --tokenizer PATH with other bytes than the recorded ones is refused unless --other-tokenizer (then a
warning). Without a record (llm.c's files, a model copied elsewhere) or with one of a run that had no tokenizer,
--tokenizer is exported unchecked, with a warning. A record that does not parse is an error naming its line.

OUTDIR: a new folder, or an existing one (a symlink to a folder is that folder: the files go into it, the link stays)
that is empty or holds only files an export writes (EXPORT_FILES), which --force replaces; a folder holding anything
else (a run's checkpoints, logs) is refused, --force or not, naming what is in it. Everything is read and checked before
anything is written; a new folder is written as OUTDIR.tmp.PID and renamed to OUTDIR at the end, so a failed export
leaves no OUTDIR; into an existing folder, the files are written in OUTDIR/.export_hf.tmp.PID, the earlier export's
files are then moved aside (all of them: a tokenizer.json the new export does not write must not stay beside the new
model) and the new ones moved in, each a rename; a failure on the way moves them back, so the folder is as it was.
Errors: one line on stderr, exit 1; warnings: one line on stderr each.
"""
import argparse
import errno
import os
import re
import shutil
import stat
import sys

import numpy as np

MODEL_MAGIC = 20240326
MODEL_VERSIONS = {3: "fp32", 5: "bf16"}  # llmc/gpt2.h MODEL_VERSION_FP32, MODEL_VERSION_BF16
TOKENIZER_MAGIC = 20240328
MERGES_MAGIC = 20241123
EOT_TEXT = b"<|endoftext|>"
# every file an export writes: the only ones --force replaces in an existing OUTDIR
EXPORT_FILES = ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json")
# a run's record of its data, beside its checkpoints: the header line, then one record a line, its fields separated by
# one tab, the path (or glob pattern) last; lines starting with '#' are comments
RUN_DATA_FILE = "dataset.txt"
RUN_DATA_HEADER = "gptfp8 run data 1"
RUN_DATA_FIELDS = {  # record -> its fields after the first
    "tokenizer": ("bytes", "xxh3", "path"),  # absent when the run had no tokenizer
    "train": ("path",),  # the shards' glob pattern
    "val": ("path",),  # absent with -v 0, as its shards
    "train_shard": ("bytes", "xxh3", "path"),
    "val_shard": ("bytes", "xxh3", "path"),
}

# dev/data/tokenizer.c's next_piece() as a regex for the `tokenizers` Split pre-tokenizer (Oniguruma syntax). Its byte
# classes are the C locale's: isspace = space \t \n \v \f \r; letters = A-Z a-z and every byte >= 0x80, so every
# non-ASCII character (all of its UTF-8 bytes are >= 0x80) is a letter; digits 0-9; everything else "other". A piece
# is a run of one class, with one leading space joined to a following non-space run; a whitespace run followed by
# more text leaves its last character to the next piece only when the run is longer than 1 and ends in ' ' (that
# space then starts the next word). The alternatives are tried in order at each position, as the C code decides:
#   1-3: " ?" + a run of letters / digits / others: the joined leading space, or a plain run;
#   4:   a whitespace run, backtracked to stop right before a ' ' that is followed by a non-space: only possible at
#        the run's end, with at least one character before it (the run is longer than 1);
#   5:   the whole whitespace run (it ends the text, or ends in something other than ' ', or is one character).
_WS = r" \t\n\x0B\f\r"
_LETTER = r"A-Za-z\x{80}-\x{10FFFF}"
_DIGIT = r"0-9"
PIECE_REGEX = (
    rf" ?[{_LETTER}]+"
    rf"| ?[{_DIGIT}]+"
    rf"| ?[^{_WS}{_LETTER}{_DIGIT}]+"
    rf"|[{_WS}]+(?=[ ][^{_WS}])"
    rf"|[{_WS}]+"
)


class ExportError(Exception):
    """A problem with the inputs: reported in one line, exit 1."""


def note(message):
    print(f"export_hf: {message}")


def warn(message):
    print(f"export_hf: warning: {message}", file=sys.stderr)


# ---------------------------------------------------------------------------------------------------------------------
# the model file


def parameter_shapes(maxT, V, Vp, L, C):
    """llmc/gpt2.h fill_in_parameter_sizes, as shapes, in ParameterTensors order."""
    return [
        ("wte", (Vp, C)), ("wpe", (maxT, C)),
        ("ln1w", (L, C)), ("ln1b", (L, C)),
        ("qkvw", (L, 3 * C, C)), ("qkvb", (L, 3 * C)),
        ("attprojw", (L, C, C)), ("attprojb", (L, C)),
        ("ln2w", (L, C)), ("ln2b", (L, C)),
        ("fcw", (L, 4 * C, C)), ("fcb", (L, 4 * C)),
        ("fcprojw", (L, C, 4 * C)), ("fcprojb", (L, C)),
        ("lnfw", (C,)), ("lnfb", (C,)),
    ]


def read_model(path):
    """Header checks as llmc/gpt2.h model_header_parse (plus version 5), then the exact size; returns the config and
    the parameters as numpy arrays over a memory map (float32, or uint16 bf16 bits)."""
    if not os.path.isfile(path):
        raise ExportError(f"cannot open model file {path}: {'not a file' if os.path.exists(path) else 'no such file'}")
    size = os.path.getsize(path)
    if size < 1024:
        raise ExportError(f"{path}: truncated model file ({size} bytes, shorter than its 1024-byte header)")
    header = np.fromfile(path, dtype="<i4", count=256)
    if header[0] != MODEL_MAGIC:
        raise ExportError(f"{path}: not a model file (magic {header[0]}, expected {MODEL_MAGIC})")
    version = int(header[1])
    if version not in MODEL_VERSIONS:
        raise ExportError(f"{path}: model file version {version} is not supported (3: fp32 parameters, 5: bf16)")
    maxT, V, L, NH, C, Vp = (int(x) for x in header[2:8])
    if (not 1 <= maxT <= 1 << 20 or not 1 <= V <= 1 << 24 or not 1 <= L <= 1024 or NH < 1 or not 1 <= C <= 1 << 16
            or C % NH != 0 or Vp < V or Vp > V + (1 << 16)):
        raise ExportError(f"{path}: corrupt model header (maxT {maxT}, V {V}, Vp {Vp}, L {L}, NH {NH}, C {C})")
    shapes = parameter_shapes(maxT, V, Vp, L, C)
    count = sum(int(np.prod(shape)) for _, shape in shapes)
    itemsize = 4 if version == 3 else 2
    expected = 1024 + count * itemsize
    if size != expected:
        kind = "truncated" if size < expected else "corrupt"
        raise ExportError(f"{path}: {kind} model file ({size} bytes, expected {expected} for this header)")
    flat = np.memmap(path, dtype="<f4" if version == 3 else "<u2", mode="r", offset=1024, shape=(count,))
    params, offset = {}, 0
    for name, shape in shapes:
        n = int(np.prod(shape))
        params[name] = flat[offset:offset + n].reshape(shape)
        offset += n
    config = {"maxT": maxT, "V": V, "Vp": Vp, "L": L, "NH": NH, "C": C, "version": version}
    return config, params


def check_finite(path, params, version):
    """Every parameter finite, padded rows included, as the trainers' model_file_read requires."""
    offset = 0
    for name, array in params.items():
        flat = array.reshape(-1)
        for start in range(0, flat.size, 1 << 24):  # in chunks: a d48 wte is 80M values
            chunk = np.asarray(flat[start:start + (1 << 24)])
            bad = ~np.isfinite(chunk) if version == 3 else (chunk & 0x7F80) == 0x7F80  # bf16: exponent all ones
            if bad.any():
                i = start + int(np.argmax(bad))
                raise ExportError(f"{path}: corrupt model file (parameter {offset + i}, {name}[{i}], is not finite)")
        offset += flat.size


def to_torch(array, version, dtype):
    """A numpy view of the file (float32, or uint16 bf16 bits) as a torch tensor of `dtype`: bf16 -> fp32 is exact,
    fp32 -> bf16 rounds to nearest even (torch's cast, as the trainers' bf16_round)."""
    import torch
    a = np.ascontiguousarray(array)
    t = torch.from_numpy(a.copy()) if version == 3 else torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return t.to(dtype)


def hf_state_dict(model_config, params, dtype):
    """Our 16 tensors under GPT2LMHeadModel's names. Conv1D computes x @ W + b with W (in, out); our matmuls compute
    x @ W^T + b with W (out, in) (matmul_forward), so each weight is transposed. The q, k, v thirds of c_attn and the
    heads inside each third are in the same order in both (attention_forward reads q at 0, k at C, v at 2C, head h at
    h * C / NH; GPT2Attention splits at C and views (NH, C / NH))."""
    V, L, C, version = model_config["V"], model_config["L"], model_config["C"], model_config["version"]

    def t(array):
        return to_torch(array, version, dtype)

    def weight(array):  # (out, in) -> (in, out)
        return t(array).T.contiguous()

    out = {
        "transformer.wte.weight": t(params["wte"][:V]),  # the padded rows are never a target nor an input
        "transformer.wpe.weight": t(params["wpe"]),
    }
    for l in range(L):
        h = f"transformer.h.{l}."
        out[h + "ln_1.weight"] = t(params["ln1w"][l])
        out[h + "ln_1.bias"] = t(params["ln1b"][l])
        out[h + "attn.c_attn.weight"] = weight(params["qkvw"][l])
        out[h + "attn.c_attn.bias"] = t(params["qkvb"][l])
        out[h + "attn.c_proj.weight"] = weight(params["attprojw"][l])
        out[h + "attn.c_proj.bias"] = t(params["attprojb"][l])
        out[h + "ln_2.weight"] = t(params["ln2w"][l])
        out[h + "ln_2.bias"] = t(params["ln2b"][l])
        out[h + "mlp.c_fc.weight"] = weight(params["fcw"][l])
        out[h + "mlp.c_fc.bias"] = t(params["fcb"][l])
        out[h + "mlp.c_proj.weight"] = weight(params["fcprojw"][l])
        out[h + "mlp.c_proj.bias"] = t(params["fcprojb"][l])
    out["transformer.ln_f.weight"] = t(params["lnfw"])
    out["transformer.ln_f.bias"] = t(params["lnfb"])
    return out


def gpt2_config(model_config, eot, torch_dtype):
    from transformers import GPT2Config
    config = GPT2Config(
        vocab_size=model_config["V"],
        n_positions=model_config["maxT"],
        n_embd=model_config["C"],
        n_layer=model_config["L"],
        n_head=model_config["NH"],
        n_inner=None,  # 4 * n_embd, as fcw (L, 4C, C)
        activation_function="gelu_new",  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))): gelu_value
        layer_norm_epsilon=1e-5,  # layernorm_forward's eps
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        scale_attn_weights=True,  # scores / sqrt(C / NH), as attention_forward
        scale_attn_by_inverse_layer_idx=False,
        reorder_and_upcast_attn=False,
        tie_word_embeddings=True,  # the LM head is wte
        bos_token_id=eot,
        eos_token_id=eot,
        architectures=["GPT2LMHeadModel"],
    )
    config.dtype = torch_dtype
    return config


def check_names(config, state_dict):
    """The names and shapes transformers' GPT2LMHeadModel has (built on the meta device: no memory, no init), less
    the tied lm_head.weight: a transformers release that renamed something fails here, not at the user's load."""
    import torch
    from transformers import GPT2LMHeadModel
    with torch.device("meta"):
        model = GPT2LMHeadModel(config)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    tied = set(getattr(model, "_tied_weights_keys", None) or {"lm_head.weight": None})
    for key in tied:
        expected.pop(key, None)
    got = {k: tuple(v.shape) for k, v in state_dict.items()}
    if got != expected:
        missing = sorted(set(expected) - set(got))[:3]
        extra = sorted(set(got) - set(expected))[:3]
        shapes = [k for k in got if k in expected and got[k] != expected[k]][:3]
        raise ExportError(f"internal: the tensors do not match this transformers' GPT2LMHeadModel (missing {missing}, "
                          f"unexpected {extra}, other shape {shapes})")


# ---------------------------------------------------------------------------------------------------------------------
# the tokenizer


def bytes_to_unicode():
    """GPT-2's byte -> character table, which the `tokenizers` ByteLevel pre-tokenizer and decoder use: printable
    bytes map to themselves, the others to 256 + n."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars, n = printable[:], 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(printable, chars)}


def read_tokenizer(path, V):
    """Reads an llm.c tokenizer file (checks as llmc/tokenizer.h) and, beside it, our tokenizer.merges (checks as
    dev/data/tokenizer.c read_vocab). Returns (eot id, tokens, merges or None, why not exportable or None)."""
    if not os.path.isfile(path):
        raise ExportError(f"cannot open tokenizer {path}: {'not a file' if os.path.exists(path) else 'no such file'}")
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 1024:
        raise ExportError(f"tokenizer {path} is truncated (shorter than its header)")
    header = np.frombuffer(data[:1024], dtype="<i4")
    if header[0] != TOKENIZER_MAGIC:
        raise ExportError(f"tokenizer {path} has bad magic {header[0]} (expected {TOKENIZER_MAGIC})")
    version, vocab_size = int(header[1]), int(header[2])
    if version not in (1, 2):
        raise ExportError(f"tokenizer {path} has version {version} (expected 1 or 2)")
    if not 0 < vocab_size <= 1 << 24:
        raise ExportError(f"tokenizer {path} is corrupt (vocab size {vocab_size})")
    eot = 50256 if version == 1 else int(header[3])  # version 1: GPT-2's, before llm.c stored the eot
    if not 0 <= eot < vocab_size:
        raise ExportError(f"tokenizer {path} is corrupt: its eot token {eot} is outside its vocabulary of {vocab_size}")
    tokens, pos = [], 1024
    for i in range(vocab_size):
        if pos >= len(data) or pos + 1 + data[pos] > len(data):
            raise ExportError(f"tokenizer {path} is truncated or corrupt at token {i}")
        tokens.append(data[pos + 1:pos + 1 + data[pos]])
        pos += 1 + data[pos]
    if vocab_size != V:
        raise ExportError(f"tokenizer {path} has {vocab_size} tokens but the model has a vocabulary of {V}")
    merges_path = path[:-4] + ".merges" if path.endswith(".bin") else path + ".merges"
    if not os.path.isfile(merges_path):
        return eot, tokens, None, (
            f"{path} has no {os.path.basename(merges_path)} beside it, so its merge order is unknown (llm.c's GPT-2 "
            f"tokenizer file holds none; for a GPT-2 vocabulary use the stock tokenizer, "
            f"AutoTokenizer.from_pretrained(\"gpt2\"))")
    with open(merges_path, "rb") as f:
        mdata = f.read()
    if len(mdata) < 12:
        raise ExportError(f"{merges_path} is truncated")
    magic, mversion, count = (int(x) for x in np.frombuffer(mdata[:12], dtype="<i4"))
    if magic != MERGES_MAGIC or mversion != 1:
        raise ExportError(f"{merges_path} has bad magic or version")
    # our vocabulary: ids 0..255 the bytes, 256.. the merges in order, the last id the eot
    if (count != vocab_size - 257 or len(mdata) != 12 + 8 * count or eot != vocab_size - 1
            or any(tokens[b] != bytes([b]) for b in range(min(256, vocab_size)))):
        raise ExportError(f"{merges_path} does not match {path} ({count} merges for a vocabulary of {vocab_size}, "
                          f"eot {eot})")
    pairs = np.frombuffer(mdata[12:], dtype="<i4").reshape(count, 2)
    merges = []
    for k, (a, b) in enumerate(pairs.tolist()):
        if not (0 <= a < 256 + k and 0 <= b < 256 + k and tokens[a] + tokens[b] == tokens[256 + k]):
            raise ExportError(f"{merges_path}: merge {k} ({a}, {b}) does not match token {256 + k} of {path}")
        merges.append((a, b))
    first_id = {}
    for i, token in enumerate(tokens):
        if token in first_id:
            return eot, tokens, None, (
                f"ids {first_id[token]} and {i} of {path} are both {token!r} (BPE learned the string twice): an HF "
                f"vocabulary maps a string to one id, so encoding could not match dev/data/tokenizer")
        first_id[token] = i
    return eot, tokens, merges, None


def build_tokenizer(tokens, merges, eot, max_length):
    """A `tokenizers` BPE that encodes as dev/data/tokenizer.c: pieces by PIECE_REGEX, each piece's bytes as
    ByteLevel characters (its own regex off: the pieces are ours), merges applied lowest rank first (the rank of a
    merge is its index: the id it makes is 256 + rank), never the whole-word vocabulary shortcut (ignore_merges:
    a piece that spells a token need not encode to it)."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast
    byte_char = bytes_to_unicode()

    def chars(token):
        return "".join(byte_char[b] for b in token)

    vocab = {chars(token): i for i, token in enumerate(tokens)}
    bpe = models.BPE(vocab=vocab, merges=[(chars(tokens[a]), chars(tokens[b])) for a, b in merges], dropout=None,
                     unk_token=None, fuse_unk=False, byte_fallback=False, ignore_merges=False)
    tokenizer = Tokenizer(bpe)
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PIECE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)  # offsets only, as GPT-2's tokenizer.json
    eot_text = chars(tokens[eot])
    tokenizer.add_special_tokens([AddedToken(eot_text, special=True, normalized=False)])
    # PreTrainedTokenizerFast (transformers 5: TokenizersBackend) keeps tokenizer.json as built here; its
    # tokenizer_config.json names that class, so AutoTokenizer loads it as-is rather than GPT2Tokenizer, which would
    # rebuild the pre-tokenizer with GPT-2's regex. No clean-up of spaces on decode: decode must give the bytes back.
    # split_special_tokens: the text "<|endoftext|>" is encoded as its bytes, as dev/data/tokenizer does (the eot id
    # only ever comes from the data's structure, never from text); the eot id itself is still eos/bos/unk.
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=eot_text, eos_token=eot_text,
                                   unk_token=eot_text, clean_up_tokenization_spaces=False, split_special_tokens=True,
                                   model_max_length=max_length)


# ---------------------------------------------------------------------------------------------------------------------
# the run's record of the tokenizer it was trained with


def file_xxh3(path):
    """(size, XXH3-64 as 16 lowercase hex digits) of a file, as llmc/checksum.h's checksum_hex."""
    import xxhash
    digest, size = xxhash.xxh3_64(), 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 24), b""):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def read_run_record(checkpoint):
    """The dataset.txt beside CHECKPOINT: None when there is none; else (its path, the tokenizer record as
    (bytes, xxh3, path), or None when the run had no tokenizer). Every line is checked, so a damaged record is an
    error, never half read."""
    path = os.path.join(os.path.dirname(checkpoint), RUN_DATA_FILE)
    if not os.path.lexists(path):
        return None
    if not os.path.isfile(path):
        raise ExportError(f"{path}: not a file")
    with open(path, "rb") as f:
        lines = f.read().decode("utf-8", "surrogateescape").split("\n")  # a path is bytes: kept as they are
    if lines[-1] == "":
        lines.pop()
    if not lines or lines[0] != RUN_DATA_HEADER:
        first = lines[0][:40] if lines else ""
        raise ExportError(f"{path}:1: not a run's data record (first line {first!r}, expected {RUN_DATA_HEADER!r})")
    tokenizer = None
    for number, line in enumerate(lines[1:], start=2):
        if line.startswith("#"):
            continue
        fields = line.split("\t")
        kind = fields[0]
        if kind not in RUN_DATA_FIELDS:
            raise ExportError(f"{path}:{number}: unknown record {kind[:40]!r} (expected one of "
                              f"{', '.join(RUN_DATA_FIELDS)})")
        names = RUN_DATA_FIELDS[kind]
        if len(fields) != 1 + len(names):
            raise ExportError(f"{path}:{number}: {kind} record has {len(fields)} fields, expected {1 + len(names)} "
                              f"separated by single tabs")
        values = dict(zip(names, fields[1:]))
        if "bytes" in values and not re.fullmatch(r"[0-9]{1,20}", values["bytes"]):
            raise ExportError(f"{path}:{number}: bad byte count {values['bytes'][:40]!r}")
        if "xxh3" in values and not re.fullmatch(r"[0-9a-f]{16}", values["xxh3"]):
            raise ExportError(f"{path}:{number}: bad XXH3 {values['xxh3'][:40]!r} (16 lowercase hex digits)")
        if not os.path.isabs(values["path"]):
            raise ExportError(f"{path}:{number}: the path {values['path'][:80]!r} is not absolute")
        if kind == "tokenizer":
            if tokenizer is not None:
                raise ExportError(f"{path}:{number}: a second tokenizer record")
            tokenizer = (int(values["bytes"]), values["xxh3"], values["path"])
    return path, tokenizer


def choose_tokenizer(checkpoint, given, other_tokenizer):
    """The tokenizer to export (None: none) checked against the run's record, and the warnings and notes to print
    once everything is checked (a refusal is then the only line)."""
    if other_tokenizer and not given:
        raise ExportError("--other-tokenizer goes with --tokenizer PATH (it exports PATH although the run recorded "
                          "another)")
    found = read_run_record(checkpoint)
    if found is None:
        warnings = [f"{checkpoint} has no {RUN_DATA_FILE} beside it, so the model carries no record of the tokenizer "
                    f"it was trained with: the export cannot check that {given} is it"] if given else []
        return given, warnings, []
    record_path, recorded = found
    if recorded is None:
        warnings = [f"{record_path} records no tokenizer (the run had none), so the export cannot check that {given} "
                    f"is the model's"] if given else []
        return given, warnings, []
    size, digest, recorded_path = recorded
    if not given:
        if not os.path.isfile(recorded_path):
            raise ExportError(f"{record_path} records the tokenizer {recorded_path}, which is gone: --tokenizer PATH "
                              f"exports a copy of it (--other-tokenizer: a tokenizer with other bytes)")
        now = file_xxh3(recorded_path)
        if now != (size, digest):
            raise ExportError(f"{recorded_path} has changed since the run recorded it in {record_path} (now "
                              f"{now[0]} bytes, XXH3 {now[1]}; recorded {size} bytes, XXH3 {digest}): --tokenizer PATH "
                              f"exports a copy of the one the model was trained with, --other-tokenizer another")
        return recorded_path, [], [f"tokenizer: {recorded_path}, the one the run recorded in {record_path}"]
    if not os.path.isfile(given):
        return given, [], []  # read_tokenizer says what it is
    now = file_xxh3(given)
    if now == (size, digest):
        return given, [], []
    differs = (f"--tokenizer {given} (XXH3 {now[1]}) is not the tokenizer the model was trained with ({recorded_path}, "
               f"XXH3 {digest}, recorded in {record_path})")
    if not other_tokenizer:
        raise ExportError(f"{differs}: --other-tokenizer exports it anyway")
    return given, [f"{differs}; exported anyway (--other-tokenizer)"], []


# ---------------------------------------------------------------------------------------------------------------------
# the output folder


def prepare_outdir(outdir, force):
    """Checks OUTDIR before anything is read: returns False for a folder to create, True for an existing folder to
    write into (through a symlink to it too)."""
    if os.path.islink(outdir):
        target = os.readlink(outdir)
        try:
            mode = os.stat(outdir).st_mode
        except OSError as e:
            why = "does not exist" if e.errno == errno.ENOENT else f"cannot be followed ({e.strerror})"
            raise ExportError(f"{outdir} is a symlink to {target}, which {why}") from e
        if not stat.S_ISDIR(mode):
            raise ExportError(f"{outdir} is a symlink to {target}, which is not a folder")
    elif os.path.lexists(outdir) and not os.path.isdir(outdir):
        raise ExportError(f"{outdir} exists and is not a folder")
    elif not os.path.lexists(outdir):
        parent = os.path.dirname(os.path.abspath(outdir))
        if not os.path.isdir(parent):
            raise ExportError(f"cannot create {outdir}: {parent} is not a folder")
        return False
    entries = sorted(os.listdir(outdir))
    # only an earlier export's regular files are ours to replace: anything else (a run's checkpoints, a folder, a
    # link) is the user's
    others = [name + ("/" if os.path.isdir(os.path.join(outdir, name)) else "") for name in entries
              if name not in EXPORT_FILES or not stat.S_ISREG(os.lstat(os.path.join(outdir, name)).st_mode)]
    if others:
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise ExportError(f"{outdir} holds {len(others)} file{'s' if len(others) > 1 else ''} an export does not "
                          f"write ({shown}): export into a new or empty folder (--force replaces only an earlier "
                          f"export's {', '.join(EXPORT_FILES)})")
    if entries and not force:
        raise ExportError(f"{outdir} exists and is not empty (an earlier export: --force replaces it)")
    return True


def fsync_path(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def settle_files(tmp):
    """The new files on disk, readable as the user's other files."""
    umask = os.umask(0)
    os.umask(umask)
    for name in os.listdir(tmp):
        path = os.path.join(tmp, name)
        os.chmod(path, 0o666 & ~umask)  # safetensors writes its file 0600; the folder's files read alike
        fsync_path(path)
    fsync_path(tmp)


def commit_new_outdir(tmp, outdir):
    """tmp -> a new outdir, in one rename."""
    settle_files(tmp)
    os.rename(tmp, outdir)
    fsync_path(os.path.dirname(os.path.abspath(outdir)))


def commit_into_outdir(tmp, outdir):
    """tmp's files into the existing folder outdir (prepare_outdir: it holds at most an earlier export's files). The
    earlier export's files all go aside first, so none of them stays beside the new model (a tokenizer.json the new
    export does not write would look like its tokenizer), then the new ones are moved in; every step is a rename
    within the folder, and a failed one moves back what was moved, leaving the folder as it was."""
    settle_files(tmp)
    aside = os.path.join(outdir, f".export_hf.old.{os.getpid()}")
    os.mkdir(aside)
    moved_aside, moved_in = [], []
    try:
        for name in EXPORT_FILES:
            if os.path.lexists(os.path.join(outdir, name)):
                os.rename(os.path.join(outdir, name), os.path.join(aside, name))
                moved_aside.append(name)
        for name in sorted(os.listdir(tmp)):
            os.rename(os.path.join(tmp, name), os.path.join(outdir, name))
            moved_in.append(name)
        fsync_path(outdir)
    except BaseException as e:
        try:
            for name in moved_in:
                os.rename(os.path.join(outdir, name), os.path.join(tmp, name))
            for name in moved_aside:
                os.rename(os.path.join(aside, name), os.path.join(outdir, name))
            os.rmdir(aside)
        except OSError as undo:
            raise ExportError(f"writing {outdir} failed ({e}), and so did putting the earlier export back ({undo}): "
                              f"its files are in {aside}") from e
        raise
    shutil.rmtree(aside)


def main():
    parser = argparse.ArgumentParser(
        description="Export a model file (llm.c format, version 3 fp32 or 5 bf16) as a Hugging Face GPT-2 folder.",
        epilog="Loads offline with transformers: GPT2LMHeadModel.from_pretrained(OUTDIR), "
               "AutoTokenizer.from_pretrained(OUTDIR) when --tokenizer exported one.")
    parser.add_argument("checkpoint", metavar="CHECKPOINT", help="model file, e.g. log/model_00000600.bin")
    parser.add_argument("outdir", metavar="OUTDIR",
                        help="folder to create, or an empty one, or one holding only an earlier export (--force)")
    parser.add_argument("--dtype", choices=["fp32", "bf16"],
                        help="weights' dtype in model.safetensors (default: the file's own, fp32 for version 3, "
                             "bf16 for version 5)")
    parser.add_argument("--tokenizer", metavar="PATH/tokenizer.bin",
                        help="our tokenizer (tokenizer.merges beside it): also write tokenizer.json; its vocabulary "
                             "must be the model's, its bytes those the run recorded in dataset.txt beside CHECKPOINT "
                             "(default: that recorded tokenizer, if any)")
    parser.add_argument("--other-tokenizer", action="store_true",
                        help="export --tokenizer although it is not the one the run recorded (a warning)")
    parser.add_argument("--force", action="store_true",
                        help="replace an earlier export in OUTDIR (only its files: a folder holding others is refused)")
    args = parser.parse_args()
    outdir = args.outdir.rstrip("/") or args.outdir

    # everything read and checked before anything is written
    existing = prepare_outdir(outdir, args.force)
    model_config, params = read_model(args.checkpoint)
    tokenizer, warnings, notes = choose_tokenizer(args.checkpoint, args.tokenizer, args.other_tokenizer)
    eot, tokens, merges, not_exported = model_config["V"] - 1, None, None, None
    if tokenizer:
        eot, tokens, merges, not_exported = read_tokenizer(tokenizer, model_config["V"])
    check_finite(args.checkpoint, params, model_config["version"])
    for message in warnings:
        warn(message)
    for message in notes:
        note(message)

    import torch
    from transformers import GenerationConfig
    dtype_name = args.dtype or MODEL_VERSIONS[model_config["version"]]
    torch_dtype = torch.float32 if dtype_name == "fp32" else torch.bfloat16
    config = gpt2_config(model_config, eot, torch_dtype)
    state_dict = hf_state_dict(model_config, params, torch_dtype)
    check_names(config, state_dict)
    hf_tokenizer = build_tokenizer(tokens, merges, eot, model_config["maxT"]) if merges is not None else None

    from safetensors.torch import save_file
    tmp = os.path.join(outdir, f".export_hf.tmp.{os.getpid()}") if existing else f"{outdir}.tmp.{os.getpid()}"
    os.mkdir(tmp)
    try:
        config.save_pretrained(tmp)
        GenerationConfig.from_model_config(config).save_pretrained(tmp)
        save_file(state_dict, os.path.join(tmp, "model.safetensors"), metadata={"format": "pt"})
        if hf_tokenizer is not None:
            hf_tokenizer.save_pretrained(tmp)
        unknown = sorted(set(os.listdir(tmp)) - set(EXPORT_FILES))
        if unknown:  # a later export's --force would take them for the user's and refuse the folder
            raise ExportError(f"internal: this transformers wrote {unknown} too, which EXPORT_FILES lacks")
        if existing:
            commit_into_outdir(tmp, outdir)
        else:
            commit_new_outdir(tmp, outdir)
    except ExportError:
        raise
    except Exception as e:  # a full disk, a folder appearing meanwhile: one line, whichever library raised it
        raise ExportError(f"writing {outdir} failed: {e}") from e
    finally:
        if os.path.isdir(tmp):
            shutil.rmtree(tmp)

    c = model_config
    note(f"{args.checkpoint} (L {c['L']}, C {c['C']}, NH {c['NH']}, V {c['V']}, maxT {c['maxT']}, "
         f"{MODEL_VERSIONS[c['version']]} file) -> {outdir}: model.safetensors ({dtype_name}), config.json, "
         f"eos/bos {eot}" + (", tokenizer.json" if hf_tokenizer is not None else ""))
    if not_exported:
        note(f"tokenizer not exported: {not_exported}")


if __name__ == "__main__":
    try:
        main()
    except ExportError as e:
        print(f"export_hf: error: {e}", file=sys.stderr)
        sys.exit(1)
    except ImportError as e:
        print(f"export_hf: error: {e} (torch, transformers, safetensors and tokenizers: pip install -r "
              f"requirements-hf.txt; xxhash: requirements.txt; or make deps)", file=sys.stderr)
        sys.exit(1)
    except OSError as e:
        print(f"export_hf: error: {e.filename or ''}{': ' if e.filename else ''}{e.strerror or e}", file=sys.stderr)
        sys.exit(1)
