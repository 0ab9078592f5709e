#!/usr/bin/env bash
# scripts/install_cudnn_frontend.sh — puts the cuDNN frontend's C++ headers, at the version requirements.txt pins
# (nvidia-cudnn-frontend==X.Y.Z), into deps/cudnn_frontend/include, where the Makefile looks for them (`make deps`
# runs this). Only the wheel's include/ is kept: the frontend is header-only C++ for llmc/cudnn_attention.cpp, and
# its Python package (with CUTLASS's DSL among its dependencies) is not needed. The folder is git-ignored and small
# (about 3 MiB), so it can travel to a GPU machine that has no network.
# Does nothing when the pinned version is already there. Environment: PYTHON (default python3).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
dest=deps/cudnn_frontend/include

pin=$(grep -E '^nvidia-cudnn-frontend==[0-9.]+' requirements.txt | head -n 1 | awk '{ print $1 }')
if [ -z "$pin" ]; then
    echo "install_cudnn_frontend: error: requirements.txt pins no nvidia-cudnn-frontend==X.Y.Z" >&2
    exit 1
fi
want=${pin#*==}

# MAJOR.MINOR.PATCH of the headers in a folder, from cudnn_frontend_version.h
headers_version() {
    local header=$1/cudnn_frontend_version.h
    [ -f "$header" ] || return 0
    awk '/#define CUDNN_FRONTEND_(MAJOR|MINOR|PATCH)_VERSION/ { v[$2] = $3; n++ }
         END { if (n == 3) { printf "%s.%s.%s\n", v["CUDNN_FRONTEND_MAJOR_VERSION"],
                                            v["CUDNN_FRONTEND_MINOR_VERSION"], v["CUDNN_FRONTEND_PATCH_VERSION"] } }' "$header"
}

if [ "$(headers_version "$dest")" = "$want" ]; then
    echo "deps: cuDNN frontend $want headers already in $dest"
    exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# any wheel of the release carries the same headers: this Python's first, else the CPython 3.12 x86-64 one
if ! "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "$pin" 2>"$tmp/pip.log"; then
    "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --implementation cp --python-version 3.12 \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 -d "$tmp" "$pin" 2>>"$tmp/pip.log" || {
        echo "install_cudnn_frontend: error: pip could not download $pin:" >&2
        tail -n 3 "$tmp/pip.log" >&2
        exit 1
    }
fi
"$PYTHON" - "$tmp" <<'PY'
import glob, os, sys, zipfile
tmp = sys.argv[1]
wheels = glob.glob(os.path.join(tmp, "nvidia_cudnn_frontend-*.whl"))
if len(wheels) != 1:
    sys.exit(f"install_cudnn_frontend: error: expected one nvidia_cudnn_frontend wheel in {tmp}, found {len(wheels)}")
with zipfile.ZipFile(wheels[0]) as wheel:
    members = [m for m in wheel.namelist() if m.startswith("include/") and not m.endswith("/")]
    if not any(m == "include/cudnn_frontend.h" for m in members):
        sys.exit(f"install_cudnn_frontend: error: {os.path.basename(wheels[0])} has no include/cudnn_frontend.h")
    wheel.extractall(os.path.join(tmp, "unpacked"), members)
PY
got=$(headers_version "$tmp/unpacked/include")
if [ "$got" != "$want" ]; then
    echo "install_cudnn_frontend: error: the wheel's headers say version '${got:-?}', requirements.txt pins $want" >&2
    exit 1
fi
rm -rf "$dest"
mkdir -p "$(dirname "$dest")"
mv "$tmp/unpacked/include" "$dest"
echo "deps: cuDNN frontend $want headers in $dest"
