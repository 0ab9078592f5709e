#!/usr/bin/env bash
# dev/data/prepare_tinyshakespeare.sh [path/to/input.txt] — prepares the default dataset in data/tinyshakespeare/:
# our BPE tokenizer trained on it (tokenizer.bin + tokenizer.merges) and llm.c shards tiny_shakespeare_val.bin (first
# 10% of the text) and tiny_shakespeare_train.bin (the rest).
# The text comes from, in order: the argument (`make data INPUT=path/input.txt`); ../shared/data/tinyshakespeare/
# input.txt beside the repository; data/tinyshakespeare/input.txt in the repository (git-ignored: the place to put a
# copy on a machine without network, such as the GPU machine); else the public copy in karpathy/char-rnn (curl or
# wget), saved there. It says which one it used. VOCAB_SIZE (default 1024) sets the vocabulary. Quick and idempotent:
# files already made from the same text (its checksum) and vocabulary are kept.
# The text must be tinyshakespeare's (its SHA-256 below): another text is refused, pointing to `make data NAME=...`
# (dev/data/prepare_dataset.sh), so your own corpus never replaces the default one under its name.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out="$repo/data/tinyshakespeare"
vocab=${VOCAB_SIZE:-1024}
url="https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
mkdir -p "$out"

if [ $# -ge 1 ]; then
    input=$1
    [ -f "$input" ] || { echo "prepare_tinyshakespeare: error: $input does not exist (INPUT= / the argument must name the text file)" >&2; exit 1; }
    echo "prepare_tinyshakespeare: using $input (given)"
elif [ -f "$repo/../shared/data/tinyshakespeare/input.txt" ]; then
    input="$repo/../shared/data/tinyshakespeare/input.txt"
    echo "prepare_tinyshakespeare: using $input (local copy)"
else
    input="$out/input.txt"
    if [ -s "$input" ]; then
        echo "prepare_tinyshakespeare: using $input (local copy in the repository)"
    else
        no_network="pass a local copy: make data INPUT=path/to/input.txt (or put it at $input)"
        echo "prepare_tinyshakespeare: downloading $url"
        if command -v curl >/dev/null; then
            curl -fsSL "$url" -o "$input.tmp" || { rm -f "$input.tmp"; echo "prepare_tinyshakespeare: error: download failed (no network?); $no_network" >&2; exit 1; }
        elif command -v wget >/dev/null; then
            wget -q "$url" -O "$input.tmp" || { rm -f "$input.tmp"; echo "prepare_tinyshakespeare: error: download failed (no network?); $no_network" >&2; exit 1; }
        else
            echo "prepare_tinyshakespeare: error: neither curl nor wget is installed; $no_network" >&2
            exit 1
        fi
        mv "$input.tmp" "$input"
        echo "prepare_tinyshakespeare: using $input (downloaded)"
    fi
fi

# char-rnn's input.txt: 1115394 bytes
want_sha256=86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed
have_sha256=$(sha256sum <"$input" | cut -d' ' -f1)
if [ "$have_sha256" != "$want_sha256" ]; then
    echo "prepare_tinyshakespeare: error: $input is not tinyshakespeare's input.txt (SHA-256 $have_sha256); to prepare your own text: make data NAME=mytext INPUT=$input" >&2
    exit 1
fi

tool="$repo/dev/data/tokenizer"
make -s -C "$repo" dev/data/tokenizer

# skip the work when the outputs were made from this very text (its XXH3 checksum and size, `tokenizer hash`, as
# prepare_dataset.sh records its inputs) and vocabulary, and the shards' manifest (written last by `tokenizer encode`)
# says their encoding finished: files encoded by an earlier tool, without one, are made once more
stamp="$out/.made_from"
want="$("$tool" hash "$input" | cut -d' ' -f1,2) vocab=$vocab"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -f "$out/tiny_shakespeare_train.bin" ] &&
    [ -f "$out/tiny_shakespeare_val.bin" ] && [ -f "$out/tokenizer.bin" ] && [ -f "$out/tokenizer.merges" ] &&
    grep -qx $'status\tcomplete' "$out/tiny_shakespeare.manifest" 2>/dev/null; then
    echo "prepare_tinyshakespeare: $out is up to date"
    exit 0
fi
# the files are remade in place: the record goes first, so a run stopped halfway never leaves an earlier record
# vouching for a new tokenizer beside old shards
rm -f "$stamp"
"$tool" train -i "$input" -o "$out" -v "$vocab"
"$tool" encode -i "$input" -k "$out/tokenizer.bin" -o "$out/tiny_shakespeare" -f 0.1
echo "$want" >"$stamp"
echo "prepare_tinyshakespeare: done: $out"
