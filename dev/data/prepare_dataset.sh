#!/usr/bin/env bash
# dev/data/prepare_dataset.sh — makes a named dataset from your own text: data/NAME/ with our BPE tokenizer trained on
# it (tokenizer.bin + tokenizer.merges) and llm.c data shards NAME_val.bin, NAME_train_000001.bin, ... that the
# trainers read with -i "data/NAME/NAME_train_*.bin" -j data/NAME/NAME_val.bin -tk data/NAME/tokenizer.bin
# (`make train DATA=NAME` passes those). `make data NAME=... INPUT=...` runs it; -h says how.
#
# The corpus is streamed (dev/data/tokenizer.c says how): a multi-GB one prepares in time proportional to its size, in
# bounded memory, with a progress line. Everything is made in data/NAME.tmp.PID and moved to data/NAME when complete,
# so a failed run leaves the earlier data/NAME as it was; a run killed outright (SIGKILL) leaves its temporaries, which
# the next run of NAME clears (and, killed while swapping, puts the earlier data/NAME back). data/tinyshakespeare, the
# default corpus, is never a NAME (`make data` prepares it, dev/data/prepare_tinyshakespeare.sh).
#
# data/NAME/.made_from records what the dataset is made from, one line each: "input PATH" per INPUT (absolute), "file
# XXH3 BYTES PATH" per file read (`tokenizer hash`), "options ...", "tokenizer XXH3 BYTES PATH" (--tokenizer), "tool
# XXH3 BYTES" (dev/data/tokenizer). The same record again is "up to date" (kept: the corpus is only read once for its
# checksums, much quicker than encoding it). Other content, options or tool with the same INPUTs remake it; other INPUTs (or a data/NAME this script
# did not make) are refused unless --force, since models trained on it need its tokenizer. scripts/compare_bf16_fp8.sh
# (make train DATA=NAME INPUT=...) reads the input and file lines.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tool="$repo/dev/data/tokenizer"

usage() {
    cat <<'EOF'
usage: dev/data/prepare_dataset.sh NAME INPUT [INPUT ...] [options]
       make data NAME=mytext INPUT=path [VOCAB=N] [VAL_FRACTION=F] [SHARD_TOKENS=N] [SAMPLE_MB=N] [TOKENIZER=file]
                 [FORCE=1]

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
  --force              make data/NAME anew even when it is up to date, made from other INPUTs or not by this
                       script (models trained on it then need a copy of its tokenizer); without it, the latter two
                       are refused
NAME: letters, digits, '_', '-' and '.', starting with a letter, digit or '_', not ending in .tmp.N or .old.N (the
temporaries' names), short enough for NAME_train_000001.bin.tmp to be a file name there.
Again with the same INPUTs and options: data/NAME is kept while their content (XXH3 checksums) is the same, else remade.
Then: make train DATA=NAME, or the trainers with
  -i "data/NAME/NAME_train_*.bin" -j data/NAME/NAME_val.bin -tk data/NAME/tokenizer.bin
EOF
}

die() { echo "prepare_dataset: error: $*" >&2; exit 1; }
note() { echo "prepare_dataset: $*"; }

name=
inputs=()
vocab=1024
val_fraction=0.1
shard_tokens=100000000
sample_mb=64
tokenizer=
data_root="$repo/data"
force=0
while [ $# -gt 0 ]; do
    case $1 in
        -h | --help) usage; exit 0 ;;
        --force) force=1; shift ;;
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
    die "NAME '$name': expected letters, digits, '_', '-' and '.', starting with a letter, digit or '_' (it names data/NAME and its shards' files)"
# a run's temporaries are data/NAME.tmp.PID and NAME.old.PID: a dataset of such a name would be taken for one
[[ ! $name =~ \.(tmp|old)\.[0-9]+$ ]] ||
    die "NAME '$name': names ending in .tmp.N or .old.N are kept for a run's temporary folders (data/NAME.tmp.PID, data/NAME.old.PID): give another NAME"
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
# the longest file name a run makes is the tool's temporary of the first train shard, NAME_train_000001.bin.tmp (21
# more than NAME; data/NAME.tmp.PID is at most 12 more): checked against the data root's limit before anything is made
existing=$data_root
while [ ! -e "$existing" ]; do existing=$(dirname "$existing"); done
name_max=$(getconf NAME_MAX "$existing" 2>/dev/null) && [[ $name_max =~ ^[0-9]+$ ]] || name_max=255
[ $((${#name} + 21)) -le "$name_max" ] ||
    die "NAME is ${#name} characters long: at most $((name_max - 21)) here (file names in $existing are at most $name_max bytes, and the longest a run makes is NAME_train_000001.bin.tmp)"
abs_inputs=()
for input in "${inputs[@]}"; do
    [ -e "$input" ] || die "$input does not exist"
    [[ $input != *$'\n'* ]] || die "INPUT '$input': a path with a line break cannot be recorded in data/$name/.made_from"
    abs_inputs+=("$(realpath -s -- "$input")")
done
if [ -n "$tokenizer" ]; then
    [ -f "$tokenizer" ] || die "--tokenizer $tokenizer does not exist"
    [ -f "${tokenizer%.bin}.merges" ] ||
        die "--tokenizer $tokenizer has no ${tokenizer%.bin}.merges beside it (only tokenizers made here can encode)"
fi

make -s -C "$repo" dev/data/tokenizer
[ -d "$data_root" ] || mkdir -p "$data_root" || die "cannot make the folder $data_root"
out="$data_root/$name"
shown=$out
[ "$data_root" != "$repo/data" ] || shown="data/$name"

# ---------------------------------------------------------------------------------------------------------------------
# A killed run's temporaries. data/NAME.tmp.PID is a dataset being made (or an earlier one being deleted: it is renamed
# so first), never needed once its run is gone; data/NAME.old.PID is the earlier data/NAME, complete, while the new one
# takes its place: a run killed between the two renames leaves no data/NAME, and then it goes back there. A run counts
# as gone unless its PID is a live process that is a prepare_dataset.sh and started no later than the temporary last
# changed (60 s of slack for a file system's clock): a PID since reused by another program, or by a later run, does not
# keep a dead run's temporaries forever.
run_alive() {  # PID, temporary
    local pid=$1 temporary=$2 stat_fields boot_time started changed
    [ "$pid" != $$ ] || return 1  # this run made nothing yet: an earlier run with the same PID left it
    tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'prepare_dataset\.sh' || return 1
    # the start time: /proc/PID/stat's 22nd field, clock ticks after boot (the fields after the command's ')')
    stat_fields=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
    read -r -a stat_fields <<<"${stat_fields##*) }"
    boot_time=$(awk '$1 == "btime" { print $2 }' /proc/stat)
    started=$((boot_time + stat_fields[19] / $(getconf CLK_TCK)))
    changed=$(stat -c %Y "$temporary" 2>/dev/null) || return 1
    [ "$started" -le $((changed + 60)) ]
}
for temporary in "$out".old.* "$out".tmp.*; do  # the earlier dataset first: it may go back to data/NAME
    pid=${temporary##*.}
    [[ $pid =~ ^[0-9]+$ ]] && [ -e "$temporary" ] || continue
    run_alive "$pid" "$temporary" && continue
    if [[ $temporary == "$out.old.$pid" ]] && [ ! -e "$out" ]; then
        mv -T "$temporary" "$out"
        note "restored $out from $temporary (the run that was replacing it is gone)"
    else
        rm -rf "$temporary"
        note "removed $temporary (left by a run that is gone)"
    fi
done

# ---------------------------------------------------------------------------------------------------------------------
# What data/NAME is, and whether it may be replaced: made from the same INPUTs it is remade as needed; from other ones,
# or not by this script, only with --force.
made_from_record=$out/.made_from
want_inputs=$(for input in "${abs_inputs[@]}"; do printf 'input %s\n' "$input"; done)
# the files the tool will read, as `tokenizer hash` names them (a folder's .txt files, hidden ones left out)
list_files() {
    local input
    for input in "${abs_inputs[@]}"; do
        if [ -d "$input" ]; then
            find "$input/" -mindepth 1 -name '.*' -prune -o -type f -name '*?.txt' -print0 | LC_ALL=C sort -z
        else
            printf '%s\0' "$input"
        fi
    done
}
# A record of the earlier script (before "input" lines and checksums): "PATH SIZE MTIME" per file, then "vocab=...":
# the same INPUTs when it names the same files, its relative paths taken from here.
old_record_files() {
    local path
    sed -n '/^vocab=/q; s/ [0-9]* [0-9.]*$//p' "$made_from_record" | while IFS= read -r path; do
        realpath -s -m -- "$path"
    done | LC_ALL=C sort
}
same_inputs() {
    if grep -q '^input ' "$made_from_record"; then
        [ "$(grep '^input ' "$made_from_record")" = "$want_inputs" ]
    else
        [ "$(old_record_files)" = "$(list_files | tr '\0' '\n' | LC_ALL=C sort)" ]
    fi
}
if [ -e "$out" ]; then
    if [ ! -f "$made_from_record" ]; then
        [ "$force" = 1 ] ||
            die "$shown exists but was not made by prepare_dataset.sh (it has no .made_from): to replace it add --force (make data: FORCE=1), or give another NAME"
        note "replacing $shown (--force), which this script did not make"
    elif ! same_inputs; then
        if grep -q '^input ' "$made_from_record"; then
            had=$(grep '^input ' "$made_from_record" | cut -d' ' -f2- | paste -sd' ')
        else
            had=$(old_record_files | paste -sd' ')
        fi
        made_on=$(date -r "$made_from_record" '+%Y-%m-%d %H:%M')
        had_vocab=$(od -An -t d4 -j 8 -N 4 "$out/tokenizer.bin" 2>/dev/null | tr -d ' ')
        [ "$force" = 1 ] ||
            die "$shown exists, made from $had on $made_on (its tokenizer: a vocabulary of ${had_vocab:-?} tokens, which models trained on it need): to replace it add --force (make data: FORCE=1), or give another NAME"
        note "replacing $shown (--force), made from $had on $made_on"
    fi
fi

# What the dataset is made from: every file's XXH3 checksum and size (`tokenizer hash`: the content, not a modification
# time, so a file rewritten within a second at the same size is seen), the options, the tokenizer given and the tool
# itself. Reading the corpus once is quick beside encoding it.
describe_inputs() {
    printf '%s\n' "$want_inputs"
    list_files | xargs -0 -r "$tool" hash | sed 's/^/file /' || return 1
    echo "options vocab=$vocab val_fraction=$val_fraction shard_tokens=$shard_tokens sample_mb=$sample_mb"
    if [ -n "$tokenizer" ]; then
        "$tool" hash "$(realpath -s -- "$tokenizer")" | sed 's/^/tokenizer /' || return 1
    fi
    "$tool" hash "$tool" | cut -d' ' -f1,2 | sed 's/^/tool /'
}
want=$(describe_inputs) || exit 1
# complete: every file the trainers read there, and the tool's manifest of the shards (NAME.manifest, written last by
# `tokenizer encode`) saying the encoding finished; a dataset encoded by an earlier tool has none: made once more
manifest_complete() { grep -qx $'status\tcomplete' "$out/$name.manifest" 2>/dev/null; }
complete() {
    [ -f "$out/tokenizer.bin" ] && [ -f "$out/tokenizer.merges" ] && [ -f "$out/${name}_val.bin" ] &&
        [ -f "$out/${name}_train_000001.bin" ] && manifest_complete
}
if [ "$force" = 0 ] && [ -f "$made_from_record" ] && [ "$(cat "$made_from_record")" = "$want" ] && complete; then
    note "$out is up to date (--force makes it again; make data: FORCE=1)"
    exit 0
fi
if [ -f "$made_from_record" ] && same_inputs; then  # why it is remade, in one line
    had=$(cat "$made_from_record")
    if ! grep -q '^input ' <<<"$had"; then
        why="its record is an earlier script's, without checksums: made once more to have them"
    elif [ "$(grep '^file ' <<<"$had")" != "$(grep '^file ' <<<"$want")" ]; then
        why="its input files changed"
    elif [ "$(grep '^options ' <<<"$had")" != "$(grep '^options ' <<<"$want")" ]; then
        why="its options changed ($(grep '^options ' <<<"$had" | cut -d' ' -f2-) -> $(grep '^options ' <<<"$want" | cut -d' ' -f2-))"
    elif [ "$(grep '^tokenizer ' <<<"$had")" != "$(grep '^tokenizer ' <<<"$want")" ]; then
        why="the --tokenizer it is encoded with changed"
    elif [ "$(grep '^tool ' <<<"$had")" != "$(grep '^tool ' <<<"$want")" ]; then
        why="dev/data/tokenizer changed"
    elif complete; then
        why="--force"
    elif ! manifest_complete; then
        why="its shards have no complete manifest ($name.manifest: encoded by an earlier tokenizer, or stopped)"
    else
        why="some of its files are missing"
    fi
    note "remaking $shown: $why"
fi

work="$out.tmp.$$"
rm -rf "$work"
mkdir "$work"
# on a failure: the new dataset goes, and the earlier one is back in place if it was moved
trap 'rm -rf "$work"; if [ -e "$out.old.$$" ] && [ ! -e "$out" ]; then mv -T "$out.old.$$" "$out"; fi' EXIT
input_flags=()
for input in "${abs_inputs[@]}"; do input_flags+=(-i "$input"); done
if [ -n "$tokenizer" ]; then
    cp "$tokenizer" "$work/tokenizer.bin"
    cp "${tokenizer%.bin}.merges" "$work/tokenizer.merges"
    echo "prepare_dataset: encoding with $tokenizer"
else
    "$tool" train "${input_flags[@]}" -o "$work" -v "$vocab" -m "$sample_mb"
fi
"$tool" encode "${input_flags[@]}" -k "$work/tokenizer.bin" -o "$work/$name" -f "$val_fraction" -s "$shard_tokens"
printf '%s\n' "$want" >"$work/.made_from"
# The earlier dataset goes only once the new one is complete. NAME.old.PID gets a fresh modification time (a rename
# keeps it) for the liveness check above, and the earlier dataset is deleted as a NAME.tmp.PID: a run killed while
# deleting it leaves a temporary to clear, never a partial NAME.old.PID that a later run would put back.
if [ -e "$out" ]; then
    rm -rf "$out.old.$$"
    mv -T "$out" "$out.old.$$"
    touch "$out.old.$$"
    mv -T "$work" "$out"
    mv -T "$out.old.$$" "$work"
    rm -rf "$work"
else
    mv -T "$work" "$out"
fi
trap - EXIT
shards=("$out/${name}_train_"*.bin)
echo "prepare_dataset: done: $out (${#shards[@]} train shard$([ ${#shards[@]} -eq 1 ] || echo s))"
echo "prepare_dataset: train on it: $([ "$data_root" = "$repo/data" ] && echo "make train DATA=$name, or ")-i \"$out/${name}_train_*.bin\" -j $out/${name}_val.bin -tk $out/tokenizer.bin"
