#!/usr/bin/env bash
# scripts/install_xxhash.sh — puts xxHash's single header (xxhash.h, BSD-2-Clause, with its LICENSE) into deps/xxhash,
# where the Makefile looks for it: the checkpoints' checksums are xxHash's XXH3-64 (llmc/checkpoint.h). The header is
# taken from the source release of the Python package requirements.txt pins (xxhash==X.Y.Z), which carries the C
# library's release in deps/xxhash/, so every machine builds against the same xxHash; without a network, a system
# copy (Debian's libxxhash-dev: /usr/include/xxhash.h, 0.8 or later: XXH3's output is fixed since 0.8.0) is used.
# The folder is git-ignored and small (about 300 KB), so it travels to a GPU machine with the rest of deps/.
# Does nothing when deps/xxhash/xxhash.h is there. Environment: PYTHON (default python3), XXHASH_SYSTEM_HEADER.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
dest=deps/xxhash
system_header=${XXHASH_SYSTEM_HEADER:-/usr/include/xxhash.h}

if [ -f "$dest/xxhash.h" ]; then
    echo "deps: xxHash header already in $dest"
    exit 0
fi
pin=$(grep -E '^xxhash==[0-9.]+' requirements.txt | head -n 1 | awk '{ print $1 }')
if [ -z "$pin" ]; then
    echo "install_xxhash: error: requirements.txt pins no xxhash==X.Y.Z" >&2
    exit 1
fi

# the C library's MAJOR.MINOR.RELEASE in an xxhash.h
header_version() {
    awk '/#define XXH_VERSION_(MAJOR|MINOR|RELEASE) / { v[$2] = $3; n++ }
         END { if (n == 3) printf "%s.%s.%s\n", v["XXH_VERSION_MAJOR"], v["XXH_VERSION_MINOR"], v["XXH_VERSION_RELEASE"] }' "$1"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if "$PYTHON" -m pip download --quiet --no-deps --no-binary=:all: -d "$tmp" "$pin" 2>"$tmp/pip.log"; then
    archive=$(ls "$tmp"/xxhash-*.tar.gz 2>/dev/null | head -n 1)
    if [ -z "$archive" ]; then
        echo "install_xxhash: error: pip downloaded no xxhash source archive for $pin" >&2
        exit 1
    fi
    top=$(basename "$archive" .tar.gz)
    tar -xzf "$archive" -C "$tmp" "$top/deps/xxhash/xxhash.h" "$top/deps/xxhash/LICENSE"
    mkdir -p "$tmp/out"
    mv "$tmp/$top/deps/xxhash/xxhash.h" "$tmp/$top/deps/xxhash/LICENSE" "$tmp/out/"
    from="$pin's source release"
elif [ -f "$system_header" ]; then
    mkdir -p "$tmp/out"
    cp "$system_header" "$tmp/out/xxhash.h"
    from="$system_header (pip could not download $pin)"
else
    echo "install_xxhash: error: pip could not download $pin and there is no $system_header: give this machine a" \
        "network, or install xxHash's header (Debian: apt-get install libxxhash-dev), or copy deps/xxhash from a" \
        "machine that has it" >&2
    tail -n 2 "$tmp/pip.log" >&2
    exit 1
fi
version=$(header_version "$tmp/out/xxhash.h")
case "$version" in
    0.8.*) ;;
    *) echo "install_xxhash: error: $from holds xxHash '${version:-?}', not 0.8.x (XXH3's output is fixed since 0.8.0)" >&2
       exit 1 ;;
esac
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp/out" "$dest"
echo "deps: xxHash $version header in $dest (from $from)"
