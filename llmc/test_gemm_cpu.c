/*
llmc/test_gemm_cpu.c — tests of the CPU reference's GEMM (llmc/gemm_cpu.h): every kernel the CPU can run (SSE2,
AVX2, AVX-512 on x86-64), on one and on two threads, gives exactly the bits of the naive loop

    for i, j:  for k = 0 .. K-1:  C[i][j] = C[i][j] + A[i][k] * B[k][j]

on many shapes (odd sizes, sizes around the tile, panel and k-block edges, k beyond one block) and on the three stride
patterns the trainer uses (fprop: B transposed, C starting at the bias or 0; dgrad: both row-major; wgrad: A
transposed), and the forward's start at the bias (or 0) instead of C's contents. The inputs span many
binades and C starts non-zero, so a kernel that added in another order, fused a multiply-add or dropped a starting
value would differ in many outputs: the test checks that a reversed-k sum of the same data does differ, so it can fail.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "gemm_cpu.h"
#include "rand.h"
#include "testing.h"

// Values whose magnitudes span 2^-12 .. 2^12 with random signs: sums of their products round differently in
// different orders.
static void fill_spread(float* x, size_t n, Rng* rng) {
    for (size_t i = 0; i < n; i++) { x[i] = rng_normal(rng) * ldexpf(1.0f, (int)(rng_next_u64(rng) % 25) - 12); }
}

// The reference: the naive loop, k in order (compiled for plain x86-64, where there is no FMA to fuse into).
static void naive_gemm(const GemmArgs* g, int reverse_k) {
    for (int i = 0; i < g->M; i++) {
        for (int j = 0; j < g->N; j++) {
            float c = !g->start_at_bias ? g->c[(size_t)i * g->ldc + j] : g->bias ? g->bias[j] : 0.0f;
            for (int kk = 0; kk < g->K; kk++) {
                int k = reverse_k ? g->K - 1 - kk : kk;
                c += g->a[(size_t)i * g->a_stride_i + (size_t)k * g->a_stride_k] *
                     g->b[(size_t)k * g->b_stride_k + (size_t)j * g->b_stride_j];
            }
            g->c[(size_t)i * g->ldc + j] = c;
        }
    }
}

static size_t count_bit_differences(const float* x, const float* y, size_t n) {
    size_t d = 0;
    for (size_t i = 0; i < n; i++) { d += memcmp(&x[i], &y[i], sizeof(float)) != 0; }
    return d;
}

enum { LAYOUT_FPROP, LAYOUT_DGRAD, LAYOUT_WGRAD, NUM_LAYOUTS };
static const char* layout_names[NUM_LAYOUTS] = {"fprop (B transposed)", "dgrad (row-major)", "wgrad (A transposed)"};

// A GEMM of shape M x N x K with the layout's strides, over a, b, c (sized by the caller), ldc = N.
static GemmArgs make_args(int layout, float* c, const float* a, const float* b, int M, int N, int K) {
    GemmArgs g = {c, (size_t)N, a, (size_t)K, 1, b, (size_t)N, 1, M, N, K, 0, NULL};
    if (layout == LAYOUT_FPROP) {  // B[k][j] = w[j][k]
        g.b_stride_k = 1;
        g.b_stride_j = (size_t)K;
    } else if (layout == LAYOUT_WGRAD) {  // A[i][k] = dout[k][i]
        g.a_stride_i = 1;
        g.a_stride_k = (size_t)M;
    }
    return g;
}

static void test_every_kernel_matches_naive_loop(void) {
    // around the tiles (6 rows; 8, 16, 64 columns), the panel (64 columns) and the k-block (128)
    static const int sizes_m[] = {1, 2, 5, 6, 7, 13, 33};
    static const int sizes_n[] = {1, 7, 16, 17, 33, 64, 65, 130};
    static const int sizes_k[] = {1, 3, 36, 128, 129, 300};
    Rng rng;
    rng_seed(&rng, 1234);
    int isas_run = 0, shapes_checked = 0;
    size_t order_sensitive_outputs = 0, outputs = 0;
    for (int isa = 0; isa < CPU_NUM_ISAS; isa++) {
        if (!cpu_isa_supported((CpuIsa)isa)) {
            printf("  (%s: not supported by this CPU, not run)\n", cpu_isa_name((CpuIsa)isa));
            continue;
        }
        isas_run++;
        for (size_t mi = 0; mi < sizeof(sizes_m) / sizeof(int); mi++) {
            for (size_t ni = 0; ni < sizeof(sizes_n) / sizeof(int); ni++) {
                for (size_t ki = 0; ki < sizeof(sizes_k) / sizeof(int); ki++) {
                    int M = sizes_m[mi], N = sizes_n[ni], K = sizes_k[ki];
                    int layout = (int)((mi + ni + ki) % NUM_LAYOUTS);  // every layout meets every size
                    size_t nc = (size_t)M * N;
                    float* a = malloc((size_t)M * K * sizeof(float));
                    float* b = malloc((size_t)K * N * sizeof(float));
                    float* c0 = malloc(nc * sizeof(float));
                    float* want = malloc(nc * sizeof(float));
                    float* got = malloc(nc * sizeof(float));
                    float* reversed = malloc(nc * sizeof(float));
                    fill_spread(a, (size_t)M * K, &rng);
                    fill_spread(b, (size_t)K * N, &rng);
                    fill_spread(c0, nc, &rng);
                    memcpy(want, c0, nc * sizeof(float));
                    GemmArgs g = make_args(layout, want, a, b, M, N, K);
                    if (layout == LAYOUT_FPROP && (mi + ki) % 3 != 0) {  // the forward: out starts at the bias, or 0
                        g.start_at_bias = 1;
                        g.bias = (mi + ki) % 3 == 1 ? b : NULL;  // any N floats will do
                    }
                    naive_gemm(&g, 0);
                    memcpy(reversed, c0, nc * sizeof(float));
                    g.c = reversed;
                    naive_gemm(&g, 1);
                    if (K > 2) {
                        order_sensitive_outputs += count_bit_differences(want, reversed, nc);
                        outputs += nc;
                    }
                    // two threads only where there are two panels (65+ columns) to share
                    for (int threads = 1; threads <= (N > GEMM_NB ? 2 : 1); threads++) {
#ifdef _OPENMP
                        omp_set_num_threads(threads);
#endif
                        memcpy(got, c0, nc * sizeof(float));
                        g.c = got;
                        gemm_accumulate_isa((CpuIsa)isa, &g);
                        size_t diff = count_bit_differences(want, got, nc);
                        CHECK(diff == 0, "%s, %s, M %d N %d K %d, %d threads: %zu of %zu outputs differ",
                              cpu_isa_name((CpuIsa)isa), layout_names[layout], M, N, K, threads, diff, nc);
                    }
                    shapes_checked++;
                    free(a);
                    free(b);
                    free(c0);
                    free(want);
                    free(got);
                    free(reversed);
                }
            }
        }
    }
#ifdef _OPENMP
    omp_set_num_threads(omp_get_num_procs());
#endif
    CHECK(isas_run >= 1, "the baseline kernel always runs");
    // the data is order-sensitive: a reversed sum differs in most outputs, so an order change cannot pass
    CHECK(order_sensitive_outputs * 2 > outputs, "reversed-k sums differ in only %zu of %zu outputs",
          order_sensitive_outputs, outputs);
    printf("  %d ISA(s), %d shapes each (1 thread, and 2 where N > %d); a reversed-k sum differs in %zu of %zu outputs\n",
           isas_run, shapes_checked / (isas_run ? isas_run : 1), GEMM_NB, order_sensitive_outputs, outputs);
}

// Non-finite values go through as the naive loop sends them (an inf times 0 is NaN, NaN stays NaN).
static void test_non_finite_values(void) {
    enum { M = 5, N = 19, K = 11 };
    float a[M * K], b[K * N], c[M * N], want[M * N];
    Rng rng;
    rng_seed(&rng, 99);
    fill_spread(a, M * K, &rng);
    fill_spread(b, K * N, &rng);
    fill_spread(c, M * N, &rng);
    a[3] = INFINITY;
    a[K + 2] = NAN;
    b[4 * N + 6] = 0.0f;
    b[7] = -INFINITY;
    for (int isa = 0; isa < CPU_NUM_ISAS; isa++) {
        if (!cpu_isa_supported((CpuIsa)isa)) { continue; }
        memcpy(want, c, sizeof(c));
        GemmArgs g = make_args(LAYOUT_DGRAD, want, a, b, M, N, K);
        naive_gemm(&g, 0);
        float got[M * N];
        memcpy(got, c, sizeof(c));
        g.c = got;
        gemm_accumulate_isa((CpuIsa)isa, &g);
        int nans = 0;
        for (int i = 0; i < M * N; i++) { nans += isnan(want[i]); }
        CHECK(nans > 0, "the data makes some NaN");
        for (int i = 0; i < M * N; i++) {
            CHECK((isnan(want[i]) && isnan(got[i])) || memcmp(&want[i], &got[i], sizeof(float)) == 0,
                  "%s output %d: %g vs %g", cpu_isa_name((CpuIsa)isa), i, got[i], want[i]);
        }
    }
}

// K = 0 (or an empty C) leaves C as it was.
static void test_empty_shapes(void) {
    float c[6] = {1, 2, 3, 4, 5, 6}, a[1] = {7}, b[1] = {8};
    GemmArgs g = {c, 3, a, 1, 1, b, 3, 1, 2, 3, 0, 0, NULL};
    gemm_accumulate(&g);
    CHECK(c[0] == 1 && c[5] == 6, "K = 0 leaves C");
}

int main(void) {
    printf("best kernel on this CPU: %s\n", cpu_isa_name(cpu_isa_best()));
    RUN_TEST(test_every_kernel_matches_naive_loop);
    RUN_TEST(test_non_finite_values);
    RUN_TEST(test_empty_shapes);
    return test_summary("gemm_cpu");
}
