#!/usr/bin/env python3
"""fp8/test_fp8_ml_dtypes.py — cross-checks fp8.h's codec (through the fp8_codec filter) against the ml_dtypes
package (float8_e4m3fn, float8_e5m2, bfloat16): a third implementation, written by other people.

ml_dtypes rounds to nearest even like cvt.rn but does not saturate (overflow gives NaN for e4m3fn and inf for e5m2),
so in-range values are compared bit for bit and out-of-range ones are checked separately to give +-max. Last, a
stdout that cannot be written must end fp8_codec with 1.
Skips (exit 0, saying so) when ml_dtypes is not importable; `make deps` installs it.
Usage: test_fp8_ml_dtypes.py path/to/fp8_codec
"""
import os
import subprocess
import sys

from test_report import Report, import_or_skip

ml_dtypes, np = import_or_skip("test_fp8_ml_dtypes", "fp8-ml_dtypes")
report = Report("fp8-ml_dtypes")
check = report.check

codec = sys.argv[1]


def run_codec(args, data):
    return subprocess.run([codec] + args, input=data, stdout=subprocess.PIPE, check=True).stdout


rng = np.random.default_rng(20240520)
# every bf16 pattern, a million random bit patterns, and a million values spread over the FP8 ranges
all_bf16 = (np.arange(65536, dtype=np.uint32) << 16).view(np.float32)
random_bits = rng.integers(0, 2**32, size=1_000_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
spread = (rng.uniform(-1, 1, 1_000_000) * np.exp2(rng.integers(-26, 17, 1_000_000))).astype(np.float32)
inputs = np.concatenate([all_bf16, random_bits, spread])

for name, dtype, fmt, fmax in [("e4m3", ml_dtypes.float8_e4m3fn, "e4m3", 448.0), ("e5m2", ml_dtypes.float8_e5m2, "e5m2", 57344.0)]:
    ours = np.frombuffer(run_codec(["encode", fmt], inputs.tobytes()), dtype=np.uint8)
    with np.errstate(over="ignore", invalid="ignore"):
        theirs = inputs.astype(dtype)
    theirs_bits = theirs.view(np.uint8)
    theirs_val = theirs.astype(np.float32)
    finite_theirs = np.isfinite(theirs_val)
    nan_in = np.isnan(inputs)
    # in range: ml_dtypes produced a finite value -> identical bytes
    in_range = finite_theirs & ~nan_in
    bad = np.nonzero(ours[in_range] != theirs_bits[in_range])[0]
    check(f"{name}_in_range_bitexact ({in_range.sum()} values)", bad.size == 0,
          f"first mismatches at inputs {inputs[in_range][bad[:5]]}: ours {ours[in_range][bad[:5]]} theirs {theirs_bits[in_range][bad[:5]]}")
    # out of range (ml_dtypes overflowed): we saturate to +-max with the input's sign
    over = ~finite_theirs & ~nan_in
    max_code = 0x7E if fmt == "e4m3" else 0x7B
    want = np.where(np.signbit(inputs[over]), 0x80 | max_code, max_code).astype(np.uint8)
    check(f"{name}_saturation ({over.sum()} values)", over.sum() > 0 and np.array_equal(ours[over], want))
    check(f"{name}_nan", np.all(ours[nan_in] == 0x7F) and nan_in.sum() > 0)
    # decode: all 256 codes
    codes = np.arange(256, dtype=np.uint8)
    dec = np.frombuffer(run_codec(["decode", fmt], codes.tobytes()), dtype=np.float32)
    ref = codes.view(dtype).astype(np.float32)
    same = (dec.view(np.uint32) == ref.view(np.uint32)) | (np.isnan(dec) & np.isnan(ref))
    check(f"{name}_decode_all_codes", bool(np.all(same)), f"mismatch at codes {codes[~same][:5]}")

ours_bf16 = np.frombuffer(run_codec(["bf16"], inputs.tobytes()), dtype=np.uint16)
with np.errstate(invalid="ignore"):
    theirs_bf16 = inputs.astype(ml_dtypes.bfloat16).view(np.uint16)
not_nan = ~np.isnan(inputs)
check("bf16_rne_bitexact", np.array_equal(ours_bf16[not_nan], theirs_bf16[not_nan]))
check("bf16_nan_stays_nan", bool(np.all(np.isnan(ours_bf16[~not_nan].view(ml_dtypes.bfloat16).astype(np.float32)))))

# stdout that cannot take the bytes (/dev/full fails every write): fp8_codec must exit 1 and say so, not 0 with a cut
# output. 400 bytes fit in stdio's buffer, so the failure comes only when the buffer is flushed at the end.
if os.path.exists("/dev/full"):
    with open("/dev/full", "wb") as full:
        result = subprocess.run([codec, "encode", "e4m3"], input=bytes(400), stdout=full, stderr=subprocess.PIPE)
    check("write_failure_exits_1", result.returncode == 1 and b"fp8_codec: write" in result.stderr,
          f"exit {result.returncode}, stderr {result.stderr!r}")

report.finish()
