#!/usr/bin/env bash
# dev/data/prepare_dataset.sh — makes a named dataset from your own text: data/NAME/ with our BPE tokenizer trained on
# it (tokenizer.bin + tokenizer.merges) and llm.c data shards NAME_val.bin, NAME_train_000001.bin, ... that the
# trainers read with -i "data/NAME/NAME_train_*.bin" -j data/NAME/NAME_val.bin -tk data/NAME/tokenizer.bin
# (`make train DATA=NAME` passes those). `make data NAME=... INPUT=...` runs it; -h says how.
#
# The corpus is streamed (dev/data/tokenizer.c says how): a multi-GB one prepares in time proportional to its size, in
# bounded memory, with a progress line. Everything is made in data/NAME.tmp.PID and moved to data/NAME when complete,
# so a failed run leaves the earlier data/NAME as it was; data/tinyshakespeare, the default corpus, is never a NAME
# (`make data` prepares it, dev/data/prepare_tinyshakespeare.sh). Quick and idempotent: a dataset already made from the
# same inputs (paths, sizes, modification times) and options is kept.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tool="$repo/dev/data/tokenizer"

usage() {
    cat <<'EOF'
usage: dev/data/prepare_dataset.sh NAME INPUT [INPUT ...] [options]
       make data NAME=mytext INPUT=path [VOCAB=N] [VAL_FRACTION=F] [SHARD_TOKENS=N] [SAMPLE_MB=N] [TOKENIZER=file]

Makes data/NAME/ from INPUT: a text file, or a folder of .txt files (its subfolders too, in byte order of their
paths); several INPUTs are one corpus, in the order given, each file a document (each starts with the eot token).
  data/NAME/tokenizer.bin, tokenizer.merges   our byte-level BPE, trained on a sample of the corpus
  data/NAME/NAME_val.bin                      the first VAL_FRACTION of the text (at most one shard)
  data/NAME/NAME_train_000001.bin, ...        the rest, SHARD_TOKENS tokens per shard (llm.c's data file format)
Options:
  --vocab N            vocabulary size, 257..65535 (tokens are uint16 in the shards)       default 1024
  --val-fraction F     the val split's share of the text, [0, 1)                             default 0.1
  --shard-tokens N     tokens per train shard, 1024..1073741824 (llm.c's: 100M)              default 100000000
  --sample-mb N        MB of text the BPE is trained on (the corpus whole when smaller)      default 64
  --tokenizer FILE     encode with this tokenizer.bin (and its .merges) instead of training one:
                       to fine-tune a model on new text in the vocabulary it was trained with
  --data-root DIR      make DIR/NAME instead of the repository's data/NAME                   default data
Then: make train DATA=NAME, or the trainers with
  -i "data/NAME/NAME_train_*.bin" -j data/NAME/NAME_val.bin -tk data/NAME/tokenizer.bin
EOF
}

die() { echo "prepare_dataset: error: $*" >&2; exit 1; }

name=
inputs=()
vocab=1024
val_fraction=0.1
shard_tokens=100000000
sample_mb=64
tokenizer=
data_root="$repo/data"
while [ $# -gt 0 ]; do
    case $1 in
        -h | --help) usage; exit 0 ;;
        --vocab | --val-fraction | --shard-tokens | --sample-mb | --tokenizer | --data-root)
            [ $# -ge 2 ] || die "$1 needs a value (-h for help)"
            case $1 in
                --vocab) vocab=$2 ;;
                --val-fraction) val_fraction=$2 ;;
                --shard-tokens) shard_tokens=$2 ;;
                --sample-mb) sample_mb=$2 ;;
                --tokenizer) tokenizer=$2 ;;
                --data-root) data_root=$(realpath -m -- "$2") ;;
            esac
            shift 2
            ;;
        -*) die "unknown option $1 (-h for help)" ;;
        *)
            if [ -z "$name" ]; then name=$1; else inputs+=("$1"); fi
            shift
            ;;
    esac
done
[ -n "$name" ] || die "no NAME given (make data NAME=mytext INPUT=path/to/text; -h for help)"
[[ $name =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ ]] ||
    die "NAME '$name': letters, digits, '_', '-' and '.' only (it names data/NAME and the shards' files)"
[ "$name" != tinyshakespeare ] || [ "$data_root" != "$repo/data" ] ||
    die "data/tinyshakespeare is the default corpus, made by 'make data': give your corpus another NAME"
[ ${#inputs[@]} -gt 0 ] || die "no INPUT given for $name (make data NAME=$name INPUT=path/to/text, a file or a folder of .txt files)"
# the tool checks every value's range again and names the flag; these say it with the option's name
[[ $vocab =~ ^[0-9]+$ ]] && [ "$vocab" -ge 257 ] && [ "$vocab" -le 65535 ] ||
    die "--vocab $vocab: expected an integer in [257, 65535] (tokens are stored as uint16)"
[[ $shard_tokens =~ ^[0-9]+$ ]] && [ "${#shard_tokens}" -le 10 ] && [ "$shard_tokens" -ge 1024 ] &&
    [ "$shard_tokens" -le 1073741824 ] || die "--shard-tokens $shard_tokens: expected an integer in [1024, 1073741824]"
[[ $sample_mb =~ ^[0-9]+$ ]] && [ "${#sample_mb}" -le 7 ] && [ "$sample_mb" -ge 1 ] && [ "$sample_mb" -le 1048576 ] ||
    die "--sample-mb $sample_mb: expected an integer in [1, 1048576]"
awk -v f="$val_fraction" 'BEGIN { exit !(f ~ /^[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?$/ && f + 0 >= 0 && f + 0 < 1) }' ||
    die "--val-fraction $val_fraction: expected a number in [0, 1)"
for input in "${inputs[@]}"; do
    [ -e "$input" ] || die "$input does not exist"
done
if [ -n "$tokenizer" ]; then
    [ -f "$tokenizer" ] || die "--tokenizer $tokenizer does not exist"
    [ -f "${tokenizer%.bin}.merges" ] ||
        die "--tokenizer $tokenizer has no ${tokenizer%.bin}.merges beside it (only tokenizers made here can encode)"
fi

make -s -C "$repo" dev/data/tokenizer
[ -d "$data_root" ] || mkdir -p "$data_root" || die "cannot make the folder $data_root"
out="$data_root/$name"

# What the dataset is made from: every input file's path, size and modification time (a folder's .txt files as the
# tool will take them), the options and the tool itself. Cheap even for a large corpus: nothing is read.
describe_inputs() {
    local input
    for input in "${inputs[@]}"; do
        if [ -d "$input" ]; then
            find "$input" -name '.*' -prune -o -type f -name '*?.txt' -printf '%p %s %T@\n' | LC_ALL=C sort
        else
            stat -L -c '%n %s %Y' "$input"
        fi
    done
    echo "vocab=$vocab val_fraction=$val_fraction shard_tokens=$shard_tokens sample_mb=$sample_mb"
    [ -z "$tokenizer" ] || { echo "tokenizer=$tokenizer"; cksum <"$tokenizer"; }
    cksum <"$tool"
}
want=$(describe_inputs)
if [ -f "$out/.made_from" ] && [ "$(cat "$out/.made_from")" = "$want" ]; then
    echo "prepare_dataset: $out is up to date (remove $out/.made_from to make it again)"
    exit 0
fi

work="$data_root/$name.tmp.$$"
rm -rf "$work"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
input_flags=()
for input in "${inputs[@]}"; do input_flags+=(-i "$input"); done
if [ -n "$tokenizer" ]; then
    cp "$tokenizer" "$work/tokenizer.bin"
    cp "${tokenizer%.bin}.merges" "$work/tokenizer.merges"
    echo "prepare_dataset: encoding with $tokenizer"
else
    "$tool" train "${input_flags[@]}" -o "$work" -v "$vocab" -m "$sample_mb"
fi
"$tool" encode "${input_flags[@]}" -k "$work/tokenizer.bin" -o "$work/$name" -f "$val_fraction" -s "$shard_tokens"
printf '%s\n' "$want" >"$work/.made_from"
# the earlier dataset goes only once the new one is complete
if [ -e "$out" ]; then
    rm -rf "$out.old.$$"
    mv "$out" "$out.old.$$"
    mv "$work" "$out"
    rm -rf "$out.old.$$"
else
    mv "$work" "$out"
fi
trap - EXIT
shards=("$out/${name}_train_"*.bin)
echo "prepare_dataset: done: $out (${#shards[@]} train shard$([ ${#shards[@]} -eq 1 ] || echo s))"
echo "prepare_dataset: train on it: $([ "$data_root" = "$repo/data" ] && echo "make train DATA=$name, or ")-i \"$out/${name}_train_*.bin\" -j $out/${name}_val.bin -tk $out/tokenizer.bin"
