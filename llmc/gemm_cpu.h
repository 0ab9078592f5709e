/*
llmc/gemm_cpu.h — the CPU reference's matrix multiply, fast and bit-exact: C (M, N) += A (M, K) @ B (K, N), where
every output is summed over k in order, one product at a time, exactly as the naive loop

    for i, j:  for k = 0 .. K-1:  C[i][j] = C[i][j] + A[i][k] * B[k][j]      (a float multiply, then a float add)

computes it. The three GEMMs of a linear layer (fprop, dgrad, wgrad) are all this one operation with different strides
(see matmul_forward / matmul_backward in train_gpt_fp8.c), so the trainer's results do not change by a bit when this
replaces the naive loops, whatever the thread count or the instruction set.

Why it is fast without changing any rounding:
  - SIMD across outputs j, never across k: each vector lane holds one C[i][j] and adds that output's products in k
    order. A lane's sequence of roundings is the naive loop's, so the vector width does not matter.
  - register tiles: a tile of MR rows x NV vectors of C stays in registers while k runs, so every loaded B vector
    is used MR times and every broadcast A value NV times.
  - packing: a panel of B (GEMM_KC values of k x GEMM_NB columns) is copied into a contiguous buffer first, so the
    tile loop reads it sequentially whatever B's strides are (fprop's B is the weight transposed). Splitting k into
    blocks of GEMM_KC keeps the order: C is stored as float between blocks, exactly what the naive loop holds.
  - OpenMP over column panels: one thread owns each output, so no output depends on the thread count.
  - instruction sets picked at run time (fp8/cpu_isa.h: AVX-512, AVX2, else the build's baseline, SSE2 on x86-64):
    the same C code is compiled once per target, none fuses a*b+c into an FMA, and llmc/test_gemm_cpu checks every
    kernel the CPU has.
*/
#ifndef GPTFP8_GEMM_CPU_H
#define GPTFP8_GEMM_CPU_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fp8/cpu_isa.h"

// Full unrolling of the tile loops, so the accumulators become registers. nvcc's front end (the GPU test compiles
// the CPU trainer too) does not know GCC's pragma; there the loops stay as written and give the same bits.
#ifdef __CUDACC__
#define GEMM_UNROLL(n)
#else
#define GEMM_PRAGMA(x) _Pragma(#x)
#define GEMM_UNROLL(n) GEMM_PRAGMA(GCC unroll n)
#endif

// GCC's vector extension, so `acc += b * a` is plain C and means exactly that many independent float multiplies and
// adds. Sixteen floats fill an AVX-512 register, eight an AVX one; SSE2 has only 16-byte registers (a wider vector
// type would live in memory there), so its kernel uses four.
typedef float GemmVec8 __attribute__((vector_size(32)));
typedef float GemmVec4 __attribute__((vector_size(16)));
typedef float GemmVec16 __attribute__((vector_size(64)));
// The same, at any float's address and aliasing floats: a load or store through one is an unaligned vector access
typedef float GemmVec8u __attribute__((vector_size(32), aligned(4), may_alias));
typedef float GemmVec4u __attribute__((vector_size(16), aligned(4), may_alias));
typedef float GemmVec16u __attribute__((vector_size(64), aligned(4), may_alias));

#define GEMM_KC 128  // k values per packed panel: a tile's slice of it (GEMM_KC x 64 floats at most, 32 KB) stays in L1
#define GEMM_NB 64   // columns per panel, the unit of OpenMP work; a multiple of every tile's width below
#define GEMM_MAX_MR 6
#define GEMM_MAX_NV 4
#define GEMM_MAX_NR (GEMM_MAX_NV * 16)  // the widest tile, in floats

// The operands of one GEMM: A[i][k] = a[i * a_stride_i + k * a_stride_k], B[k][j] = b[k * b_stride_k + j *
// b_stride_j], C[i][j] = c[i * ldc + j]. With start_at_bias, C[i][j] starts at bias[j] (0.0f when bias is NULL)
// instead of its contents: a layer's forward, out = bias + inp @ W^T, with the bias as the first term of each sum.
typedef struct {
    float* c;
    size_t ldc;
    const float* a;
    size_t a_stride_i, a_stride_k;
    const float* b;
    size_t b_stride_k, b_stride_j;
    int M, N, K;
    int start_at_bias;
    const float* bias;  // (N) or NULL
} GemmArgs;

// One register tile: c (MR x NV vectors, row stride ldc) += A rows (a_rows[i][k * a_stride_k]) @ packed B (kc x NV
// vectors, row stride packed_ld), k in order. MR and NV are constants after inlining, so acc lives in registers.
// Loads and stores go through VecU, not memcpy into acc: under AddressSanitizer a memcpy'd-into array stays in the
// instrumented stack frame, which cost a sanitized 30-step run a quarter of its time (this loop is most of the
// sanitized tests' time); the same instructions otherwise. Written once, defined for each vector type.
#define GEMM_DEFINE_TILE(name, Vec, VecU)                                                                             \
    static inline __attribute__((always_inline)) void name(float* c, size_t ldc, const float* const* a_rows,        \
                                                           size_t a_stride_k, const float* packed, size_t packed_ld, \
                                                           int kc, const int MR, const int NV) {                     \
        const int VF = (int)(sizeof(Vec) / sizeof(float));                                                            \
        Vec acc[GEMM_MAX_MR][GEMM_MAX_NV];                                                                            \
        GEMM_UNROLL(8) for (int i = 0; i < MR; i++) {                                                                 \
            GEMM_UNROLL(4) for (int v = 0; v < NV; v++) { acc[i][v] = *(const VecU*)(c + i * ldc + v * VF); }        \
        }                                                                                                             \
        for (int k = 0; k < kc; k++) {                                                                                \
            Vec b[GEMM_MAX_NV];                                                                                       \
            GEMM_UNROLL(4) for (int v = 0; v < NV; v++) {                                                             \
                b[v] = *(const VecU*)(packed + (size_t)k * packed_ld + v * VF);                                       \
            }                                                                                                         \
            GEMM_UNROLL(8) for (int i = 0; i < MR; i++) {                                                             \
                float a = a_rows[i][(size_t)k * a_stride_k];                                                          \
                GEMM_UNROLL(4) for (int v = 0; v < NV; v++) { acc[i][v] += b[v] * a; }                                \
            }                                                                                                         \
        }                                                                                                             \
        GEMM_UNROLL(8) for (int i = 0; i < MR; i++) {                                                                 \
            GEMM_UNROLL(4) for (int v = 0; v < NV; v++) { *(VecU*)(c + i * ldc + v * VF) = acc[i][v]; }              \
        }                                                                                                             \
    }
GEMM_DEFINE_TILE(gemm_tile_vec8, GemmVec8, GemmVec8u)
GEMM_DEFINE_TILE(gemm_tile_vec4, GemmVec4, GemmVec4u)
GEMM_DEFINE_TILE(gemm_tile_vec16, GemmVec16, GemmVec16u)

// Copy B[k0 .. k0+kc)[j0 .. j0+nb) into packed (kc x width, row stride width), zeros beyond column nb.
static inline void gemm_pack_b(float* packed, size_t width, const GemmArgs* g, int k0, int kc, int j0, int nb) {
    if (g->b_stride_j == 1) {  // rows of B are contiguous (dgrad's weight, wgrad's input)
        for (int k = 0; k < kc; k++) {
            const float* src = g->b + (size_t)(k0 + k) * g->b_stride_k + j0;
            float* dst = packed + (size_t)k * width;
            memcpy(dst, src, (size_t)nb * sizeof(float));
            for (size_t j = (size_t)nb; j < width; j++) { dst[j] = 0.0f; }
        }
    } else {  // columns of B are contiguous (fprop: B is the weight transposed), so read along k
        for (int j = 0; j < nb; j++) {
            const float* src = g->b + (size_t)(j0 + j) * g->b_stride_j + (size_t)k0 * g->b_stride_k;
            for (int k = 0; k < kc; k++) { packed[(size_t)k * width + j] = src[(size_t)k * g->b_stride_k]; }
        }
        for (int k = 0; k < kc; k++) {
            for (size_t j = (size_t)nb; j < width; j++) { packed[(size_t)k * width + j] = 0.0f; }
        }
    }
}

// All of C's columns [j0, j0+nb) (one panel), with tiles of MR rows x NV vectors of VF (8 or 4) floats. Edge tiles
// (fewer rows or columns) go through a local tile, so the kernel always runs full width; its extra lanes see zeros
// and are not written back.
static inline __attribute__((always_inline)) void gemm_panel(const GemmArgs* g, int j0, int nb, float* packed,
                                                             const int MR, const int NV, const int VF) {
    const int NR = NV * VF;
    size_t width = (size_t)(nb + NR - 1) / NR * NR;
    // an edge tile's copy, zeroed for each edge tile only (zeroing it for every tile was 4-7% of a small model's
    // step); it and a_rows declared once here, not per tile, where AddressSanitizer would poison and unpoison them
    // each time
    float edge[GEMM_MAX_MR * GEMM_MAX_NR];
    const float* a_rows[GEMM_MAX_MR];
    if (g->start_at_bias) {
        for (int i = 0; i < g->M; i++) {
            float* c = g->c + (size_t)i * g->ldc + j0;
            for (int j = 0; j < nb; j++) { c[j] = g->bias ? g->bias[j0 + j] : 0.0f; }
        }
    }
    for (int k0 = 0; k0 < g->K; k0 += GEMM_KC) {
        int kc = g->K - k0 < GEMM_KC ? g->K - k0 : GEMM_KC;
        gemm_pack_b(packed, width, g, k0, kc, j0, nb);
        for (int jt = 0; jt < nb; jt += NR) {
            int ncols = nb - jt < NR ? nb - jt : NR;
            for (int it = 0; it < g->M; it += MR) {
                int nrows = g->M - it < MR ? g->M - it : MR;
                for (int i = 0; i < MR; i++) {  // missing rows of an edge tile repeat a real one; never written back
                    a_rows[i] = g->a + (size_t)(it + (i < nrows ? i : 0)) * g->a_stride_i + (size_t)k0 * g->a_stride_k;
                }
                float* c = g->c + (size_t)it * g->ldc + j0 + jt;
                int full = nrows == MR && ncols == NR;
                float* tile = full ? c : edge;
                size_t ld = full ? g->ldc : (size_t)NR;
                if (!full) {
                    memset(edge, 0, (size_t)MR * NR * sizeof(float));  // the tile's part of it
                    for (int i = 0; i < nrows; i++) { memcpy(edge + i * NR, c + i * g->ldc, (size_t)ncols * sizeof(float)); }
                }
                if (VF == 16) {
                    gemm_tile_vec16(tile, ld, a_rows, g->a_stride_k, packed + jt, width, kc, MR, NV);
                } else if (VF == 8) {
                    gemm_tile_vec8(tile, ld, a_rows, g->a_stride_k, packed + jt, width, kc, MR, NV);
                } else {
                    gemm_tile_vec4(tile, ld, a_rows, g->a_stride_k, packed + jt, width, kc, MR, NV);
                }
                if (!full) {
                    for (int i = 0; i < nrows; i++) { memcpy(c + i * g->ldc, edge + i * NR, (size_t)ncols * sizeof(float)); }
                }
            }
        }
    }
}

// The same panel code compiled for each instruction set, with the tile that fits its registers (measured best of a
// few on the trainer's shapes): SSE2 and AVX2 have 16 vector registers, for 6 x 2 accumulators, 2 of B, the broadcast
// A value and a product; AVX-512 has 32, for 6 x 4 accumulators of 16 floats, 4 of B and 2 more. AVX-512 (not
// avx512vl's 8-float forms) doubles the work per instruction; on CPUs with full-width AVX-512 units, the speed too.
typedef void (*GemmPanelFn)(const GemmArgs* g, int j0, int nb, float* packed);
CPU_NO_FMA static void gemm_panel_baseline(const GemmArgs* g, int j0, int nb, float* packed) {
    gemm_panel(g, j0, nb, packed, 6, 2, 4);
}
#if CPU_ISA_X86
CPU_NO_FMA CPU_TARGET_AVX2 static void gemm_panel_avx2(const GemmArgs* g, int j0, int nb, float* packed) {
    gemm_panel(g, j0, nb, packed, 6, 2, 8);
}
CPU_NO_FMA CPU_TARGET_AVX512 static void gemm_panel_avx512(const GemmArgs* g, int j0, int nb, float* packed) {
    gemm_panel(g, j0, nb, packed, 6, 4, 16);
}
static GemmPanelFn gemm_panel_for(CpuIsa isa) {
    return isa == CPU_ISA_AVX512 ? gemm_panel_avx512 : isa == CPU_ISA_AVX2 ? gemm_panel_avx2 : gemm_panel_baseline;
}
#else
static GemmPanelFn gemm_panel_for(CpuIsa isa) {
    (void)isa;
    return gemm_panel_baseline;
}
#endif

// C (M, N) += A (M, K) @ B (K, N), every output summed over k in order (see the top of this file), with the given
// instruction set (tests compare them all); gemm_accumulate picks the best the CPU has.
static inline void gemm_accumulate_isa(CpuIsa isa, const GemmArgs* g) {
    if (g->M <= 0 || g->N <= 0 || g->K < 0 || (g->K == 0 && !g->start_at_bias)) { return; }
    GemmPanelFn panel = gemm_panel_for(isa);
    int num_panels = (g->N + GEMM_NB - 1) / GEMM_NB;
    int failed = 0;
    // threads only when there are panels to share (a parallel region costs more than a small GEMM)
#pragma omp parallel reduction(| : failed) if (num_panels > 1)
    {
        float* packed = (float*)malloc((size_t)GEMM_KC * GEMM_NB * sizeof(float));
        failed = packed == NULL;
#pragma omp for schedule(static)
        for (int p = 0; p < num_panels; p++) {
            int j0 = p * GEMM_NB;
            if (packed) { panel(g, j0, g->N - j0 < GEMM_NB ? g->N - j0 : GEMM_NB, packed); }
        }
        free(packed);
    }
    if (failed) {
        fprintf(stderr, "error: out of memory for a %d x %d GEMM panel\n", GEMM_KC, GEMM_NB);
        exit(EXIT_FAILURE);
    }
}

static inline void gemm_accumulate(const GemmArgs* g) { gemm_accumulate_isa(cpu_isa_best(), g); }

#endif  // GPTFP8_GEMM_CPU_H
