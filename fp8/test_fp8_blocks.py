#!/usr/bin/env python3
"""fp8/test_fp8_blocks.py — cross-checks fp8/block.h's block-scaled FP8 casts (Transformer Engine's Float8BlockScaling,
"blockwise", and MXFP8BlockScaling, "mxfp8"), through the fp8_codec filter's `blocks` and `columnwise` commands,
against an INDEPENDENT implementation written here from the rules in block.h's header comment: numpy float32
arithmetic and integer bit manipulation for the scales, ml_dtypes (float8_e4m3fn, float8_e5m2) for the round to
nearest even of the codes. Nothing here calls or copies the C code.

Codes are compared exactly; scale_inv and dequantized values as float32 bit patterns (any NaN matches any NaN).
Cases: random tensors for every recipe/format/block shape (edge blocks cut short, tiny and multi-threaded sizes), the
columnwise command, partial blocks at the trainers' widths (C 96, 160, 1600; a partial block's scale from its own
elements, worked out by hand), and edge cases (zeros, inf, NaN, subnormals, powers of two and their neighbours, extreme and
overflowing scales, the E8M0 boundary at 2^-127, epsilon above the amax), each its own check.
Skips (exit 0, saying so) when numpy or ml_dtypes is not importable; `make deps` installs them.
Usage: test_fp8_blocks.py path/to/fp8_codec
"""
import subprocess
import sys

from test_report import Report, import_or_skip

ml_dtypes, np = import_or_skip("test_fp8_blocks", "fp8-blocks")
report = Report("fp8-blocks")
check = report.check

codec = sys.argv[1]
F32, U32 = np.float32, np.uint32
FORMATS = {"e4m3": (ml_dtypes.float8_e4m3fn, 448.0), "e5m2": (ml_dtypes.float8_e5m2, 57344.0)}
FLT_MAX = np.finfo(F32).max


def bits_f32(bits):
    return np.asarray(bits, dtype=np.uint64).astype(U32).view(F32)


def f32_bits(x):
    return np.asarray(x, dtype=F32).view(U32)


# ----------------------------------------------------------------------------
# the reference


def block_amax(x, bh, bw):
    """max |x| of every bh x bw block (edge blocks short) over its elements that are not NaN (TE's fmaxf skips NaN;
    0 for a block of NaNs): a (ceil(R/bh), ceil(C/bw)) grid."""
    rows, cols = x.shape
    gr, gc = -(-rows // bh), -(-cols // bw)
    padded = np.zeros((gr * bh, gc * bw), F32)  # padding with 0 changes no max |x|
    padded[:rows, :cols] = np.where(np.isnan(x), F32(0), np.abs(x))
    return padded.reshape(gr, bh, gc, bw).max(axis=(1, 3))


def blockwise_scales(amax, fmax, eps, pow2):
    """(multiplier, scale_inv) grids of the blockwise recipe."""
    with np.errstate(all="ignore"):
        a = np.where(amax < eps, F32(eps), amax).astype(F32)  # NaN < eps is False: a NaN amax stays NaN
        scale = (F32(fmax) / a).astype(F32)
        scale = np.where(np.isinf(scale), FLT_MAX, scale).astype(F32)
        scale = np.where((a == 0) | np.isinf(a) | np.isnan(a), F32(1), scale).astype(F32)
        if pow2:
            scale = bits_f32(f32_bits(scale) & 0xFF800000)
        return scale, (F32(1) / scale).astype(F32)


def mxfp8_scales(amax, fmt):
    """(multiplier, scale_inv, e8m0) grids of the mxfp8 recipe."""
    with np.errstate(all="ignore"):
        v = (amax.astype(F32) * F32(1.0 / FORMATS[fmt][1])).astype(F32)
    bits = f32_bits(v).astype(np.int64)
    exp, man = (bits >> 23) & 0xFF, bits & 0x7FFFFF
    e = exp + ((man != 0) & (exp != 0xFE) & ~((exp == 0) & (man <= 0x400000)))
    e = np.where(np.isnan(v), 0xFF, np.where(np.isinf(v), 0xFE, np.where(v == 0, 0, e)))
    # the cast's multiplier 2^(127 - e) (TE's exp2f_rcp since February 2026: 2^127 for e = 0, the subnormal 2^-127 for
    # e = 0xFE), NaN for e = 0xFF
    with np.errstate(all="ignore"):
        mult = np.where(e == 0xFF, F32(np.nan), np.ldexp(F32(1), (127 - e).astype(np.int32)).astype(F32))
    scale_inv = np.where(e == 0, bits_f32(0x00400000), bits_f32(e << 23))
    scale_inv = np.where(e == 0xFF, F32(np.nan), scale_inv)
    return mult.astype(F32), scale_inv.astype(F32), e


def encode(y, fmt):
    """fp8 codes of float32 y: round to nearest even, saturating, NaN -> 0x7F."""
    dtype, fmax = FORMATS[fmt]
    codes = np.clip(y, F32(-fmax), F32(fmax)).astype(dtype).view(np.uint8)
    return np.where(np.isnan(y), np.uint8(0x7F), codes).astype(np.uint8)


def reference(x, recipe, fmt, bh, bw, eps=0.0, pow2=1):
    """(codes (R, C), scale_inv grid, dequantized (R, C)) of the block cast of x."""
    amax = block_amax(x, bh, bw)
    if recipe == "blockwise":
        mult, scale_inv = blockwise_scales(amax, FORMATS[fmt][1], eps, pow2)
    else:
        mult, scale_inv, _ = mxfp8_scales(amax, fmt)
    rows, cols = x.shape
    expand = lambda g: np.repeat(np.repeat(g, bh, axis=0), bw, axis=1)[:rows, :cols]
    with np.errstate(all="ignore"):
        codes = encode((x * expand(mult)).astype(F32), fmt)
        deq = (codes.view(FORMATS[fmt][0]).astype(F32) * expand(scale_inv)).astype(F32)
    return codes, scale_inv, deq


# ----------------------------------------------------------------------------
# the C side and the comparison


def eps_arg(eps):
    return float(F32(eps)).hex()  # exact: strtof reads hex floats, so both sides use the same float32 epsilon


def run_blocks(x, recipe, fmt, bh, bw, eps=0.0, pow2=1):
    rows, cols = x.shape
    out = subprocess.run([codec, "blocks", recipe, fmt, str(rows), str(cols), str(bh), str(bw), eps_arg(eps),
                          str(pow2)], input=np.ascontiguousarray(x, F32).tobytes(), stdout=subprocess.PIPE,
                         check=True).stdout
    gr, gc, n = -(-rows // bh), -(-cols // bw), rows * cols
    codes = np.frombuffer(out, np.uint8, n).reshape(rows, cols)
    scale_inv = np.frombuffer(out, F32, gr * gc, n).reshape(gr, gc)
    deq = np.frombuffer(out, F32, n, n + 4 * gr * gc).reshape(rows, cols)
    assert len(out) == n + 4 * gr * gc + 4 * n, "fp8_codec wrote the wrong number of bytes"
    return codes, scale_inv, deq


def run_columnwise(x, recipe, fmt, length, eps=0.0, pow2=1):
    rows, cols = x.shape
    out = subprocess.run([codec, "columnwise", recipe, fmt, str(rows), str(cols), str(length), eps_arg(eps),
                          str(pow2)], input=np.ascontiguousarray(x, F32).tobytes(), stdout=subprocess.PIPE,
                         check=True).stdout
    nb, n = -(-rows // length), rows * cols
    codes_t = np.frombuffer(out, np.uint8, n).reshape(cols, rows)
    scale_inv = np.frombuffer(out, F32, cols * nb, n).reshape(cols, nb)
    deq = np.frombuffer(out, F32, n, n + 4 * cols * nb).reshape(rows, cols)
    assert len(out) == n + 4 * cols * nb + 4 * n, "fp8_codec wrote the wrong number of bytes"
    return codes_t, scale_inv, deq


def same_f32(a, b):
    return (f32_bits(a) == f32_bits(b)) | (np.isnan(a) & np.isnan(b))


def mismatch(x, got, want, where=""):
    """'' when (codes, scale_inv, dequantized) agree bit for bit, else a description of the first difference."""
    for name, g, w in zip(("codes", "scale_inv", "dequantized"), got, want):
        bad = np.argwhere(g != w) if name == "codes" else np.argwhere(~same_f32(g, w))
        if bad.size:
            i = tuple(int(k) for k in bad[0])
            gv, wv = (f"0x{g[i]:02x}", f"0x{w[i]:02x}") if name == "codes" else \
                (f"0x{int(f32_bits(g[i])):08x}", f"0x{int(f32_bits(w[i])):08x}")
            xv = f" input{list(i)}=0x{int(f32_bits(x[i])):08x} ({float(x[i]):.9g})" if name != "scale_inv" else ""
            return f"{where}{name}: {bad.shape[0]} differ, first at {i}:{xv} C {gv} expected {wv}"
    return ""


def compare(x, recipe, fmt, bh, bw, eps=0.0, pow2=1):
    return mismatch(x, run_blocks(x, recipe, fmt, bh, bw, eps, pow2), reference(x, recipe, fmt, bh, bw, eps, pow2))


# ----------------------------------------------------------------------------
# 1. random tensors

rng = np.random.default_rng(20250611)


def distributions(rows, cols):
    yield "normal", rng.standard_normal((rows, cols))
    yield "normal*1e-3", rng.standard_normal((rows, cols)) * 1e-3
    yield "normal*1e4", rng.standard_normal((rows, cols)) * 1e4
    yield "normal*2^row", rng.standard_normal((rows, cols)) * np.exp2(rng.integers(-30, 31, (rows, 1)))
    yield "loguniform_2^-40..2^40", rng.choice([-1.0, 1.0], (rows, cols)) * np.exp2(rng.uniform(-40, 40, (rows, cols)))


SHAPES = [(1, 1), (3, 129), (200, 300), (129, 33), (300, 600)]  # 300 x 600 > CPU_PARALLEL_MIN_ELEMENTS: threaded
CONFIGS = [("blockwise", "e4m3", blk, eps, pow2) for blk in [(1, 128), (128, 128), (128, 1)]
           for pow2 in (1, 0) for eps in (0.0, 1e-3)]
CONFIGS += [("blockwise", "e5m2", blk, 0.0, pow2) for blk in [(1, 128), (128, 1)] for pow2 in (1, 0)]
CONFIGS += [("mxfp8", fmt, blk, 0.0, 1) for fmt in ("e4m3", "e5m2") for blk in [(1, 32), (32, 1)]]

for recipe, fmt, (bh, bw), eps, pow2 in CONFIGS:
    problems = []
    for rows, cols in SHAPES:
        for dist, values in distributions(rows, cols):
            err = compare(values.astype(F32), recipe, fmt, bh, bw, eps, pow2)
            if err:
                problems.append(f"[{rows}x{cols} {dist}] {err}")
    name = f"random_{recipe}_{fmt}_{bh}x{bw}" + (f"_eps{eps:g}_pow2{pow2}" if recipe == "blockwise" else "")
    check(name, not problems, "; ".join(problems[:3]))

# ----------------------------------------------------------------------------
# 2. the columnwise command: against the reference, and against `blocks` with BLOCK_LEN x 1 blocks

for recipe, fmt, length, eps, pow2 in [("blockwise", "e4m3", 128, 0.0, 1), ("blockwise", "e4m3", 128, 1e-3, 0),
                                       ("blockwise", "e5m2", 128, 0.0, 1), ("mxfp8", "e4m3", 32, 0.0, 1),
                                       ("mxfp8", "e5m2", 32, 0.0, 1)]:
    ref_problems, blocks_problems = [], []
    for rows, cols in [(1, 1), (200, 300), (3, 129), (300, 7), (257, 300)]:
        for dist, values in distributions(rows, cols):
            x, where = values.astype(F32), f"[{rows}x{cols} {dist}] "
            codes_t, scale_inv, deq = run_columnwise(x, recipe, fmt, length, eps, pow2)
            got = (codes_t.T, scale_inv.T, deq)
            ref_problems.append(mismatch(x, got, reference(x, recipe, fmt, length, 1, eps, pow2), where))
            blocks_problems.append(mismatch(x, got, run_blocks(x, recipe, fmt, length, 1, eps, pow2), where))
    name = f"columnwise_{recipe}_{fmt}_{length}" + (f"_eps{eps:g}_pow2{pow2}" if recipe == "blockwise" else "")
    check(f"{name}_vs_reference", not any(ref_problems), "; ".join(p for p in ref_problems if p)[:600])
    check(f"{name}_vs_blocks_transposed", not any(blocks_problems), "; ".join(p for p in blocks_problems if p)[:600])

# ----------------------------------------------------------------------------
# 2b. partial blocks at the trainers' widths (llmc/linear.h: any width): (200, 96) is B*T 200 by C 96 (one partial
# 1x128 block per row; 200 rows: one whole and one partial 128-row block), (160, 1600) C 160 by d48's 1600 (12.5
# blocks of 128), (130, 33) partial every way for both recipes; rowwise, columnwise (the `blocks` command's 128x1 /
# 32x1 and the `columnwise` command) and 128x128 tiles, against the reference

for recipe, fmt, blocks, length in [("blockwise", "e4m3", [(1, 128), (128, 1), (128, 128)], 128),
                                    ("blockwise", "e5m2", [(1, 128), (128, 1)], 128),
                                    ("mxfp8", "e4m3", [(1, 32), (32, 1)], 32), ("mxfp8", "e5m2", [(1, 32), (32, 1)], 32)]:
    problems = []
    for rows, cols in [(200, 96), (160, 1600), (130, 33)]:
        x = (rng.standard_normal((rows, cols)) * np.exp2(rng.integers(-20, 21, (rows, 1)))).astype(F32)
        for bh, bw in blocks:
            problems.append(compare(x, recipe, fmt, bh, bw, 0.0, 1))
            problems[-1] = problems[-1] and f"[{rows}x{cols} {bh}x{bw}] {problems[-1]}"
        codes_t, scale_inv, deq = run_columnwise(x, recipe, fmt, length)
        err = mismatch(x, (codes_t.T, scale_inv.T, deq), reference(x, recipe, fmt, length, 1))
        problems.append(err and f"[{rows}x{cols} columnwise {length}] {err}")
    check(f"partial_blocks_trainer_widths_{recipe}_{fmt}", not any(problems), "; ".join(p for p in problems if p)[:600])

# A block cut short by the tensor's edge takes its amax, so its scale, from the elements it has, nothing past the
# edge: a (2, 130) tensor whose rows end in partial blocks [3, -1] and [0.5], the next row (in memory) starting with
# 1000s; the 128x1 copy of its transpose (130, 2) likewise, down the columns. Worked out by hand: blockwise with
# power-of-two scales, scale_inv = 1 / 2^floor(log2(448 / amax)): amax 1000 -> 4 (448 / 1000 = 0.448: scale
# 2^-2), 3 -> 2^-7, 0.5 -> 2^-9; read past the edge, a partial block would get the 1000s' 4.
partial = np.zeros((2, 130), F32)
partial[0, :128], partial[0, 128:] = 1000.0, [3.0, -1.0]
partial[1, :128], partial[1, 128:] = -1000.0, [0.5, 0.0]
want_partial = [[4.0, 2.0**-7], [4.0, 2.0**-9]]
for name, x, bh, bw in [("rowwise", partial, 1, 128), ("columnwise", partial.T.copy(), 128, 1)]:
    got = run_blocks(x, "blockwise", "e4m3", bh, bw)
    err = mismatch(x, got, reference(x, "blockwise", "e4m3", bh, bw))
    grid = got[1] if bw == 128 else got[1].T
    if not err and not np.array_equal(grid, np.asarray(want_partial, F32)):
        err = f"scale_inv {grid.tolist()}, worked out {want_partial}"
    check(f"partial_block_scale_from_its_own_elements_{name}", not err, err)

# ----------------------------------------------------------------------------
# 3. edge cases: each compared with the reference, and some with values worked out by hand


def edge(name, rows_of_blocks, recipe, fmt, eps=0.0, pow2=1, expect=None):
    """rows_of_blocks: one 1 x L block per row (L = 128 blockwise, 32 mxfp8; cut to L), padded with +0."""
    length = 128 if recipe == "blockwise" else 32
    x = np.zeros((len(rows_of_blocks), length), F32)
    for r, block in enumerate(rows_of_blocks):
        block = np.asarray(block, F32)[:length]
        x[r, :block.size] = block
    got = run_blocks(x, recipe, fmt, 1, length, eps, pow2)
    err = mismatch(x, got, reference(x, recipe, fmt, 1, length, eps, pow2))
    if not err and expect is not None:
        err = expect(*got)
    check(f"edge_{name}", not err, err)


def scale_inv_bits(*want):
    def expect(codes, scale_inv, deq):
        got = [int(b) for b in f32_bits(scale_inv[:, 0])]
        return "" if got == list(want) else f"scale_inv bits {[hex(b) for b in got]}, worked out {[hex(b) for b in want]}"
    return expect


def ulps(center, n=2):
    """center (float32) and its n float32 neighbours either side."""
    return bits_f32(int(f32_bits(F32(center))) + np.arange(-n, n + 1))


def with_fillers(amax, count=31):
    """a block whose amax is `amax`: it, its negation and smaller random values."""
    return np.concatenate([[amax, -amax], (rng.uniform(-1, 1, count - 2) * amax).astype(F32)])


zeros, neg_zeros = np.zeros(128, F32), np.full(128, -0.0, F32)
for recipe, fmt in [("blockwise", "e4m3"), ("blockwise", "e5m2"), ("mxfp8", "e4m3"), ("mxfp8", "e5m2")]:
    tag = f"{recipe}_{fmt}"
    zero_scale_inv = 0x3F800000 if recipe == "blockwise" else 0x00400000  # scale 1; E8M0 0 = 2^-127

    def zero_codes(codes, scale_inv, deq, z=zero_scale_inv):
        if not (np.all(codes[0] == 0) and np.all(codes[1] == 0x80) and np.all(f32_bits(deq[1]) == 0x80000000)):
            return "zeros must code 0x00, -0.0 0x80 and dequantize to -0.0"
        return scale_inv_bits(z, z)(codes, scale_inv, deq)

    edge(f"zeros_{tag}", [zeros, neg_zeros], recipe, fmt, expect=zero_codes)
    edge(f"inf_{tag}", [[1.0, np.inf, -3.0, 0.0, -0.0, 2.5e-3], [np.inf] * 3, [-np.inf, 5.0, 1e-30]], recipe, fmt)
    edge(f"nan_{tag}", [[1.0, np.nan, -3.0, 0.0, -0.0, 1e3], [bits_f32(0xFFC00000), -2.0, np.inf],
                        [np.nan] * 4, [bits_f32(0x7F800001), 1e-40]], recipe, fmt)
    edge(f"subnormal_inputs_{tag}", [(rng.uniform(-1, 1, 32) * 1e-40).astype(F32), [1e-45, -1e-45],
                                     [bits_f32(0x007FFFFF), 1e-39], (rng.uniform(-1, 1, 32) * 1e-44).astype(F32)],
         recipe, fmt, pow2=0)
    fmax = FORMATS[fmt][1]
    edge(f"amax_near_2^-127*fmax_{tag}", [with_fillers(a) for a in ulps(F32(2.0**-127 * fmax), 3)], recipe, fmt)
    edge(f"pow2_amax_and_ulps_{tag}",
         [with_fillers(a) for k in (-20, -1, 0, 7) for base in (fmax * 2.0**k, 2.0**k) for a in ulps(base, 1)],
         recipe, fmt, pow2=0)
    if recipe == "blockwise":
        edge(f"pow2_amax_and_ulps_{tag}_pow2", [with_fillers(a) for k in (-20, 0, 7)
                                               for base in (fmax * 2.0**k, 2.0**k) for a in ulps(base, 1)],
             recipe, fmt, pow2=1)
    edge(f"largest_smallest_amax_{tag}", [with_fillers(FLT_MAX), [FLT_MAX, -FLT_MAX], [1e-45], [-1e-45, 0.0]],
         recipe, fmt, pow2=0)

# blockwise scale overflow: fp8_max / amax is inf -> FLT_MAX (scale_inv 1/FLT_MAX = 2^-128, subnormal 0x00200000);
# pow2 -> 2^127 (scale_inv 2^-127, 0x00400000)
tiny = [with_fillers(F32(1e-38)), [1e-45, -1e-45], (rng.uniform(-1, 1, 128) * 1e-40).astype(F32)]
assert int(f32_bits(F32(1) / FLT_MAX)) == 0x00200000
edge("blockwise_scale_overflow_flt_max", tiny, "blockwise", "e4m3", pow2=0, expect=scale_inv_bits(*[0x00200000] * 3))
edge("blockwise_scale_overflow_pow2", tiny, "blockwise", "e4m3", pow2=1, expect=scale_inv_bits(*[0x00400000] * 3))
edge("blockwise_e5m2_scale_overflow", tiny, "blockwise", "e5m2", pow2=0, expect=scale_inv_bits(*[0x00200000] * 3))
# fp8_max / amax just at the overflow edge: amax the float32 values around fp8_max / FLT_MAX
edge("blockwise_scale_overflow_boundary", [[a] for a in ulps(F32(448.0) / FLT_MAX, 4)], "blockwise", "e4m3", pow2=0)

# mxfp8: v = amax * float32(1/fp8_max) landing exactly on 2^-127 (subnormal, mantissa 0x400000: E8M0 0, scale_inv
# 2^-127) and one subnormal ulp above (E8M0 1, scale_inv 2^-126); found by scanning amax's float32 neighbourhood
for fmt in ("e4m3", "e5m2"):
    recip = F32(1.0 / FORMATS[fmt][1])
    cand = ulps(F32(2.0**-127 * FORMATS[fmt][1]), 64)
    v_bits = f32_bits((cand * recip).astype(F32))
    at, above = cand[v_bits == 0x00400000], cand[v_bits == 0x00400001]
    if at.size == 0 or above.size == 0:
        check(f"edge_mxfp8_{fmt}_v_at_2^-127", False, "no amax gives v = 2^-127 exactly / just above")
        continue
    edge(f"mxfp8_{fmt}_v_exactly_2^-127", [with_fillers(a) for a in at], "mxfp8", fmt,
         expect=scale_inv_bits(*[0x00400000] * at.size))
    edge(f"mxfp8_{fmt}_v_just_above_2^-127", [with_fillers(a) for a in above[:1]], "mxfp8", fmt,
         expect=scale_inv_bits(0x00800000))

# epsilon above the block amax (and a zero block, now scaled by fp8_max / epsilon, as is a block of a NaN and 0.1)
for pow2 in (0, 1):
    eps = 0.25
    want = int(f32_bits(F32(1) / blockwise_scales(np.array([eps], F32), 448.0, eps, pow2)[0][0]))
    edge(f"blockwise_epsilon_above_amax_pow2{pow2}", [with_fillers(F32(0.01)), zeros, [0.2, -0.1], [eps, 1e-3],
                                                      [np.nan, 0.1]], "blockwise", "e4m3", eps=eps, pow2=pow2,
         expect=scale_inv_bits(*[want] * 5))  # the NaN is skipped: the block's amax is 0.1, below epsilon
edge("blockwise_epsilon_below_amax", [with_fillers(F32(3.0)), [0.5]], "blockwise", "e5m2", eps=1e-3, pow2=0)

# TE's current edge rules (fp8/block.h names the TE commit), each worked out by hand:
# 1. mxfp8's E8M0 byte 0 multiplies by 2^127 in the cast: a block whose amax is at most 2^-127 * fp8_max keeps its
#    values (here exact in E4M3 once scaled, so they dequantize to themselves), where the older rule (multiplier 1)
#    flushed them to zero.
tiny_block = [2.0**-130, -(2.0**-133), 3 * 2.0**-135, 2.0**-136, 0.0]


def kept_exactly(codes, scale_inv, deq):
    x = np.zeros(32, F32)
    x[:len(tiny_block)] = tiny_block
    if int(f32_bits(scale_inv[0, 0])) != 0x00400000:
        return f"scale_inv 0x{int(f32_bits(scale_inv[0, 0])):08x}, worked out 0x00400000 (E8M0 0)"
    if not np.array_equal(f32_bits(deq[0]), f32_bits(x)):
        return f"dequantized {deq[0][:5]}, worked out {x[:5]}: the block's values were not kept"
    return ""


edge("mxfp8_e8m0_0_keeps_tiny_values", [tiny_block], "mxfp8", "e4m3", expect=kept_exactly)

# 2. an inf in an mxfp8 block: amax inf gives E8M0 0xFE, the cast multiplies by 2^-127 (inf stays inf, then clips
#    to fp8_max's code) and the GEMM by 2^127, so the inf dequantizes to inf again (the older rule multiplied by 0:
#    NaN); the block's finite values, scaled by 2^-127, flush.
for fmt in ("e4m3", "e5m2"):
    max_code = 0x7E if fmt == "e4m3" else 0x7B

    def inf_stays_inf(codes, scale_inv, deq, max_code=max_code):
        want_codes = [max_code, 0x80 | max_code, 0x00, 0x80]
        got = [int(c) for c in codes[0, :4]]
        if got != want_codes or int(f32_bits(scale_inv[0, 0])) != 0x7F000000:
            return f"codes {[hex(c) for c in got]} scale_inv 0x{int(f32_bits(scale_inv[0, 0])):08x}, worked out " \
                   f"{[hex(c) for c in want_codes]} and 0x7f000000 (2^127)"
        if not (deq[0, 0] == np.inf and deq[0, 1] == -np.inf and not np.isnan(deq).any()):
            return f"dequantized {deq[0, :4]}: the infs must come back as infs, nothing as NaN"
        return ""

    edge(f"mxfp8_{fmt}_inf_stays_inf", [[np.inf, -np.inf, 1.0, -3.0]], "mxfp8", fmt, expect=inf_stays_inf)

# 3. the block amax skips NaN (TE's fmaxf): a block with a NaN is scaled as the block without it, the NaN casts to
#    the NaN code; a block of NaNs only has amax 0 (blockwise scale 1; mxfp8 E8M0 0).
for recipe, fmt in [("blockwise", "e4m3"), ("blockwise", "e5m2"), ("mxfp8", "e4m3"), ("mxfp8", "e5m2")]:
    fmax = FORMATS[fmt][1]
    if recipe == "blockwise":  # power_2_scale: fp8_max / 3 rounded down to a power of two; a NaN-only block scale 1
        want_nan_only = 0x3F800000
        want_with_three = int(f32_bits(F32(1) / bits_f32(int(f32_bits(F32(fmax) / F32(3.0))) & 0xFF800000)))
    else:  # amax 3: E8M0 exponent of 3 / fp8_max rounded up
        want_with_three = int(f32_bits(F32(2.0) ** int(np.ceil(np.log2(3.0 / fmax)))))
        want_nan_only = 0x00400000

    def nan_skipped(codes, scale_inv, deq, w3=want_with_three, wn=want_nan_only):
        got = [int(b) for b in f32_bits(scale_inv[:, 0])]
        if got != [w3, w3, wn]:
            return f"scale_inv bits {[hex(b) for b in got]}, worked out {[hex(w3), hex(w3), hex(wn)]}"
        if not (codes[0, 0] == 0x7F and codes[0, 1] == codes[1, 0] and codes[2, 0] == 0x7F):
            return "the NaN must code 0x7F and 3.0 code as in the block without the NaN"
        return ""

    edge(f"nan_skipped_by_block_amax_{recipe}_{fmt}", [[np.nan, 3.0, -1.0], [3.0, -1.0], [np.nan] * 4], recipe, fmt,
         expect=nan_skipped)

report.finish()
