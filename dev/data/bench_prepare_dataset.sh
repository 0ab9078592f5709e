#!/usr/bin/env bash
# dev/data/bench_prepare_dataset.sh [SIZE_MB ...] — how fast your own text becomes a dataset, and that its memory does
# not grow with the corpus: for each size (default 100 and 1000 MB) it writes a corpus of that many MB, drawn word by
# word from tinyshakespeare's word frequencies (real words and line lengths at any size, though few distinct pieces),
# runs the two steps of `make data NAME=...` apart (dev/data/tokenizer train on the default 64 MB sample, then encode,
# streamed into 100M-token shards) and prints for each the wall time, the MB/s and the maximum resident size (GNU
# time's %M). A benchmark: it prints numbers and asserts nothing. Needs about 2x the largest size in free disk space
# under BENCH_DIR (default a temporary folder, removed at the end).
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$repo"
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
    sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
fi
sizes=("$@")
for mb in ${sizes[@]+"${sizes[@]}"}; do
    [[ $mb =~ ^[1-9][0-9]{0,5}$ ]] || { echo "bench_prepare_dataset: error: size '$mb': expected MB, an integer in [1, 999999]" >&2; exit 1; }
done
[ ${#sizes[@]} -gt 0 ] || sizes=(100 1000)
[ -x /usr/bin/time ] || { echo "bench_prepare_dataset: error: needs GNU time (/usr/bin/time; Debian: apt-get install time)" >&2; exit 1; }
make -s dev/data/tokenizer
[ -f data/tinyshakespeare/tiny_shakespeare_train.bin ] || ./dev/data/prepare_tinyshakespeare.sh >/dev/null
words_from=
for candidate in ../shared/data/tinyshakespeare/input.txt data/tinyshakespeare/input.txt; do
    if [ -f "$candidate" ]; then words_from=$candidate; break; fi
done
[ -n "$words_from" ] || { echo "bench_prepare_dataset: error: no tinyshakespeare input.txt to take word frequencies from" >&2; exit 1; }
work=${BENCH_DIR:-$(mktemp -d)}
mkdir -p "$work"
[ -n "${BENCH_DIR:-}" ] || trap 'rm -rf "$work"' EXIT
echo "bench_prepare_dataset: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), in $work"
printf '%-8s %-8s %10s %10s %12s   %-8s %10s %10s %12s\n' size step seconds MB/s max_rss_MB step seconds MB/s max_rss_MB
for mb in "${sizes[@]}"; do
    corpus=$work/corpus_${mb}MB.txt
    python3 - "$words_from" "$corpus" "$mb" <<'EOF'
import collections, itertools, random, sys
words_from, path, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = open(words_from, encoding="utf-8").read().split("\n")
counts = collections.Counter(w for line in lines for w in line.split())
vocab = list(counts)
cum_weights = list(itertools.accumulate(counts.values()))  # once: choices() would sum the weights on every call
lengths = [len(line.split()) for line in lines if line.strip()]
rng = random.Random(1)
target = mb * 1000 * 1000
with open(path, "w", encoding="utf-8") as f:
    written = 0
    while written < target:
        block = []
        for _ in range(20000):  # lines as long as tinyshakespeare's, paragraphs between them now and then
            block.append(" ".join(rng.choices(vocab, cum_weights=cum_weights, k=rng.choice(lengths))))
            if rng.random() < 0.1:
                block.append("")
        text = "\n".join(block) + "\n"
        text = text[: target - written] if written + len(text) > target else text
        f.write(text)
        written += len(text.encode("utf-8"))
EOF
    rm -rf "$work/data"
    # the two steps apart, each under GNU time: what prepare_dataset.sh runs
    /usr/bin/time -f "%e %M" -o "$work/train.time" ./dev/data/tokenizer train -i "$corpus" -o "$work" -v 1024 -m 64 >/dev/null
    /usr/bin/time -f "%e %M" -o "$work/encode.time" ./dev/data/tokenizer encode -i "$corpus" -k "$work/tokenizer.bin" \
        -o "$work/bench" -s 100000000 >"$work/encode.out" 2>/dev/null
    read -r train_s train_kb <"$work/train.time"
    read -r encode_s encode_kb <"$work/encode.time"
    bytes=$(stat -c %s "$corpus")
    printf '%-8s %-8s %10.2f %10.1f %12.1f   %-8s %10.2f %10.1f %12.1f\n' "${mb}MB" train "$train_s" \
        "$(awk -v b="$bytes" -v s="$train_s" 'BEGIN { print b / 1e6 / (s > 0 ? s : 1e-9) }')" "$(awk -v k="$train_kb" 'BEGIN { print k / 1024 }')" \
        encode "$encode_s" "$(awk -v b="$bytes" -v s="$encode_s" 'BEGIN { print b / 1e6 / (s > 0 ? s : 1e-9) }')" \
        "$(awk -v k="$encode_kb" 'BEGIN { print k / 1024 }')"
    sed 's/^/  /' "$work/encode.out"
    rm -f "$corpus" "$work"/bench_*.bin
done
