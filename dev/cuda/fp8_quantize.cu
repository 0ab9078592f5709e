/*
dev/cuda/fp8_quantize.cu — the FP8 cast kernels (fp8/quantize.cuh) on their own: every output byte and the amax against
the CPU reference (fp8_quantize_bf16 in fp8/quantize_cpu.h, bit-exact: R1 of llmc/tolerance.h, the same bf16 values, scale and
rounding, and an amax is a maximum, whatever the order), for E4M3 and E5M2, with scales that make values saturate and
flush, a NaN case, and the transposed copy; the cast + transpose of a grad_output with its bias gradient's column
partials (fp8_cast_transpose_dbias_amax: the same bytes and amax, and partials and a bias gradient bit for bit those of
llmc/bias.cuh's own pass, bias_backward, and of the CPU's sums in that order: fp32 sums of bf16 values, R1); each cast
again with its diagnostics counters (the same bytes and amax,
and exactly the CPU's element, saturated and flushed counts: integers); the plain cast also at a size whose
grid-stride loop runs its unrolled trips and its remainder (the launchers' refusals of bad sizes and alignments are
tested without a GPU in fp8/test_fp8_cuda_host); then the achieved bandwidth at the trainer's shapes, each line next
to a device-to-device cudaMemcpy of the same bf16 tensor measured the same way (bytes read + written per second; the
target is >= 80% of the copy), the casts with counters against those without, and the grad_output's cast with its
bias partials against the cast followed by bias_backward's separate pass (what the trainer did before).

Build: make dev/cuda/fp8_quantize     Run: ./dev/cuda/fp8_quantize    (prints one line and exits 1 without a GPU)
*/
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fp8/quantize_cpu.h"
#include "../../fp8/quantize.cuh"
#include "../../llmc/bias.cuh"
#include "../../llmc/cuda_utils.cuh"
#include "../../llmc/rand.h"
#include "cast_check.h"

// The grad_output cast with its bias partials (fp8_cast_transpose_dbias_amax) on x (rows, cols), already on the
// device as d_x: the cast's bytes and amax as the CPU's (want, want_amax: R1), the partials the CPU's sums in
// bias_backward's order (R1: the same fp32 additions in the same order), and the bias gradient reduced from them
// (bias_backward_reduce, onto a nonzero dbias as in accumulation) bit for bit bias_backward's own from the bf16 tensor.
static void check_cast_transpose_dbias(const uint16_t* x, const uint8_t* want, float want_amax,
                                       const __nv_bfloat16* d_x, int rows, int cols, const float* d_scale,
                                       Fp8Format format) {
    size_t n = (size_t)rows * cols, chunks = (size_t)rows / COLUMN_SUM_ROWS;
    uint8_t *d_out, *d_out_t;
    float *d_amax, *d_partials, *d_dbias_fused, *d_dbias_pass;
    DeviceList dev = {{NULL}, 0};
    device_alloc(&dev, &d_out, n);
    device_alloc(&dev, &d_out_t, n);
    device_alloc(&dev, &d_amax, 4);
    device_alloc(&dev, &d_partials, chunks * cols * sizeof(float));
    device_alloc(&dev, &d_dbias_fused, cols * sizeof(float));
    device_alloc(&dev, &d_dbias_pass, cols * sizeof(float));
    float amax0 = 0.125f;  // as check_shape's casts start
    cudaCheck(cudaMemcpy(d_amax, &amax0, 4, cudaMemcpyHostToDevice));
    float* dbias0 = (float*)malloc(cols * sizeof(float));  // an earlier micro-batch's gradient
    for (int c = 0; c < cols; c++) { dbias0[c] = 0.25f * (float)(c % 7) - 0.75f; }
    cudaCheck(cudaMemcpy(d_dbias_fused, dbias0, cols * sizeof(float), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_dbias_pass, dbias0, cols * sizeof(float), cudaMemcpyHostToDevice));

    cudaCheck(fp8_cast_transpose_dbias_amax(d_out, d_out_t, d_partials, d_x, rows, cols, d_scale, d_amax, NULL, format, 0));
    float* got_partials = (float*)malloc(chunks * cols * sizeof(float));
    uint8_t* got = (uint8_t*)malloc(n);
    uint8_t* got_t = (uint8_t*)malloc(n);
    float got_amax;
    cudaCheck(cudaMemcpy(got_partials, d_partials, chunks * cols * sizeof(float), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(got, d_out, n, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(got_t, d_out_t, n, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(&got_amax, d_amax, 4, cudaMemcpyDeviceToHost));
    bias_backward_reduce(d_dbias_fused, d_partials, rows, cols, 0);
    // bias_backward's own two passes, through their own scratch
    float* d_pass_partials;
    device_alloc(&dev, &d_pass_partials, chunks * cols * sizeof(float));
    bias_backward(d_dbias_pass, d_x, rows, cols, d_pass_partials, 0);
    float* dbias_fused = (float*)malloc(cols * sizeof(float));
    float* dbias_pass = (float*)malloc(cols * sizeof(float));
    cudaCheck(cudaMemcpy(dbias_fused, d_dbias_fused, cols * sizeof(float), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(dbias_pass, d_dbias_pass, cols * sizeof(float), cudaMemcpyDeviceToHost));

    float* want_partials = (float*)malloc(chunks * cols * sizeof(float));
    column_partials_cpu(want_partials, x, rows, cols);
    int transposed_ok = is_transpose(got_t, want, rows, cols);
    char what[200];
    snprintf(what, sizeof(what), "cast+transpose+dbias %s %dx%d: bytes, transposed bytes and amax bit-exact",
             fp8_format_name(format), rows, cols);
    report(memcmp(got, want, n) == 0 && transposed_ok && fp8_float_bits(got_amax) == fp8_float_bits(want_amax), what);
    snprintf(what, sizeof(what), "cast+transpose+dbias %s %dx%d: %zu x %d column partials the CPU's, bit for bit",
             fp8_format_name(format), rows, cols, chunks, cols);
    report(floats_identical(got_partials, want_partials, chunks * cols), what);
    snprintf(what, sizeof(what), "cast+transpose+dbias %s %dx%d: dbias (+= onto an earlier one) bias_backward's, bit for bit",
             fp8_format_name(format), rows, cols);
    report(floats_identical(dbias_fused, dbias_pass, cols), what);

    free(dbias0);
    free(got_partials);
    free(want_partials);
    free(got);
    free(got_t);
    free(dbias_fused);
    free(dbias_pass);
    device_list_free(&dev);
}

static void check_shape(int rows, int cols, Fp8Format format, float scale, int with_nan, Rng* rng) {
    size_t n = (size_t)rows * cols;
    uint16_t* x = random_bf16(n, rng);
    if (with_nan) { x[n / 3] = 0x7FC0; }
    uint8_t* want = (uint8_t*)malloc(n);
    float want_amax = 0.125f;  // an earlier cast of the same slot this step
    Fp8QuantStats want_stats = {0, 0, 0};
    fp8_quantize_bf16(want, x, n, format, scale, &want_amax, &want_stats);

    __nv_bfloat16* d_x;
    uint8_t *d_out, *d_out_t;
    float *d_scale, *d_amax;
    unsigned long long* d_stats;
    DeviceList dev = {{NULL}, 0};
    device_alloc(&dev, &d_x, n * 2);
    device_alloc(&dev, &d_out, n);
    device_alloc(&dev, &d_out_t, n);
    device_alloc(&dev, &d_scale, 4);
    device_alloc(&dev, &d_amax, 4);
    device_alloc(&dev, &d_stats, 3 * sizeof(unsigned long long));
    cudaCheck(cudaMemcpy(d_x, x, n * 2, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_scale, &scale, 4, cudaMemcpyHostToDevice));
    float amax0 = 0.125f;
    int sms = current_device_sms();
    uint8_t* got = (uint8_t*)malloc(n);
    uint8_t* got_t = (uint8_t*)malloc(n);
    char what[160];

    // each cast without counters, then with (the COUNT kernel): the same bytes and amax, and the CPU's counts
    for (int counted = 0; counted < 2; counted++) {
        unsigned long long* stats = counted ? d_stats : NULL;
        unsigned long long got_stats[3] = {0, 0, 0};
        const char* with = counted ? " with counters" : "";
        cudaCheck(cudaMemset(d_stats, 0, 3 * sizeof(unsigned long long)));
        cudaCheck(cudaMemcpy(d_amax, &amax0, 4, cudaMemcpyHostToDevice));
        cudaCheck(fp8_cast_amax(d_out, d_x, n, d_scale, d_amax, stats, format, sms, 0));
        float got_amax;
        cudaCheck(cudaMemcpy(got, d_out, n, cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(&got_amax, d_amax, 4, cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(got_stats, d_stats, sizeof(got_stats), cudaMemcpyDeviceToHost));
        // R1: bytes and amax bit for bit; the counts are integers, equal
        int counts_ok = !counted || stats_equal(got_stats, &want_stats);
        snprintf(what, sizeof(what), "cast%s %s %dx%d scale %g%s: bytes and amax bit-exact%s", with,
                 fp8_format_name(format), rows, cols, scale, with_nan ? " with a NaN" : "",
                 counted ? ", counts the CPU's" : "");
        report(memcmp(got, want, n) == 0 && fp8_float_bits(got_amax) == fp8_float_bits(want_amax) && counts_ok, what);
        if (!counts_ok) { print_counts(got_stats, &want_stats); }

        cudaCheck(cudaMemset(d_stats, 0, 3 * sizeof(unsigned long long)));
        cudaCheck(cudaMemcpy(d_amax, &amax0, 4, cudaMemcpyHostToDevice));
        cudaCheck(fp8_cast_transpose_amax(d_out, d_out_t, d_x, rows, cols, d_scale, d_amax, stats, format, 0));
        cudaCheck(cudaMemcpy(got, d_out, n, cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(got_t, d_out_t, n, cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(&got_amax, d_amax, 4, cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(got_stats, d_stats, sizeof(got_stats), cudaMemcpyDeviceToHost));
        int transposed_ok = is_transpose(got_t, want, rows, cols);
        counts_ok = !counted || stats_equal(got_stats, &want_stats);
        snprintf(what, sizeof(what), "cast+transpose%s %s %dx%d: bytes, transposed bytes and amax bit-exact%s", with,
                 fp8_format_name(format), rows, cols, counted ? ", counts the CPU's" : "");
        report(memcmp(got, want, n) == 0 && transposed_ok && fp8_float_bits(got_amax) == fp8_float_bits(want_amax) &&
                   counts_ok,
               what);
        if (!counts_ok) { print_counts(got_stats, &want_stats); }
    }
    check_cast_transpose_dbias(x, want, want_amax, d_x, rows, cols, d_scale, format);

    free(x);
    free(want);
    free(got);
    free(got_t);
    device_list_free(&dev);
}

// The plain cast alone on n elements (n a multiple of 8 but not of the grid's stride: the kernel's unrolled trips and
// its remainder both run), bytes and amax against the CPU.
static void check_cast_only(size_t n, Fp8Format format, float scale, int sms, Rng* rng) {
    uint16_t* x = random_bf16(n, rng);
    uint8_t* want = (uint8_t*)malloc(n);
    float want_amax = 0.0f;
    Fp8QuantStats want_stats = {0, 0, 0};
    fp8_quantize_bf16(want, x, n, format, scale, &want_amax, &want_stats);
    __nv_bfloat16* d_x;
    uint8_t* d_out;
    float *d_scale, *d_amax;
    unsigned long long* d_stats;
    cudaCheck(cudaMalloc(&d_stats, 3 * sizeof(unsigned long long)));
    cudaCheck(cudaMemset(d_stats, 0, 3 * sizeof(unsigned long long)));
    DeviceList dev = {{NULL}, 0};
    device_alloc(&dev, &d_x, n * 2);
    device_alloc(&dev, &d_out, n);
    device_alloc(&dev, &d_scale, 4);
    device_alloc(&dev, &d_amax, 4);
    cudaCheck(cudaMemcpy(d_x, x, n * 2, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_scale, &scale, 4, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemset(d_amax, 0, 4));
    cudaCheck(cudaMemset(d_out, 0xAA, n));  // a byte the cast must overwrite everywhere
    cudaCheck(fp8_cast_amax(d_out, d_x, n, d_scale, d_amax, d_stats, format, sms, 0));
    uint8_t* got = (uint8_t*)malloc(n);
    float got_amax;
    unsigned long long got_stats[3];
    cudaCheck(cudaMemcpy(got, d_out, n, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(&got_amax, d_amax, 4, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(got_stats, d_stats, sizeof(got_stats), cudaMemcpyDeviceToHost));
    size_t stride = (size_t)sms * FP8_CAST_BLOCKS_PER_SM * FP8_CAST_BLOCK_SIZE;
    char what[160];
    snprintf(what, sizeof(what),
             "cast with counters %s, %zu elements (%.2f grid strides of vectors): bytes and amax bit-exact, counts the CPU's",
             fp8_format_name(format), n, (double)(n / 8) / (double)stride);
    int counts_ok = stats_equal(got_stats, &want_stats);
    report(memcmp(got, want, n) == 0 && fp8_float_bits(got_amax) == fp8_float_bits(want_amax) && counts_ok, what);
    if (!counts_ok) { print_counts(got_stats, &want_stats); }
    cudaCheck(cudaFree(d_stats));
    free(x);
    free(want);
    free(got);
    device_list_free(&dev);
}

int main(void) {
    int sms = require_cuda_device("fp8_quantize");
    Rng rng;
    rng_seed(&rng, 42);
    check_shape(256, 768, FP8_E4M3, 448.0f / 2.0f, 0, &rng);
    check_shape(256, 768, FP8_E5M2, 57344.0f / 8.0f, 0, &rng);
    check_shape(192, 3072, FP8_E4M3, 1.0f, 0, &rng);
    check_shape(128, 64, FP8_E5M2, 4096.0f, 1, &rng);
    check_cast_only((size_t)8 * (3 * (size_t)sms * FP8_CAST_BLOCKS_PER_SM * FP8_CAST_BLOCK_SIZE + 1237), FP8_E4M3, 64.0f,
                    sms, &rng);

    if (bench_emulated("fp8_quantize")) { return dev_summary("fp8_quantize", checks, failures); }

    // bandwidth at B*T = 64*1024 rows and C = 768 columns (the ln1 / atty / ln2 casts of d12), and 4C for the GELU
    BenchTimer timer;
    bench_timer_init(&timer);
    int shapes[2][2] = {{65536, 768}, {65536, 3072}};
    for (int i = 0; i < 2; i++) {
        int rows = shapes[i][0], cols = shapes[i][1];
        size_t n = (size_t)rows * cols;
        __nv_bfloat16* d_x;
        uint8_t *d_out, *d_out_t, *d_copy;
        float *d_scale, *d_amax;
        unsigned long long* d_stats;
        DeviceList dev = {{NULL}, 0};
        device_alloc(&dev, &d_stats, 3 * sizeof(unsigned long long));
        cudaCheck(cudaMemset(d_stats, 0, 3 * sizeof(unsigned long long)));
        device_alloc(&dev, &d_x, n * 2);
        device_alloc(&dev, &d_out, n);
        device_alloc(&dev, &d_out_t, n);
        device_alloc(&dev, &d_copy, n * 2);
        device_alloc(&dev, &d_scale, 4);
        device_alloc(&dev, &d_amax, 4);
        uint16_t* x = random_bf16(n, &rng);  // real values: the converts do the work they do in training
        cudaCheck(cudaMemcpy(d_x, x, n * 2, cudaMemcpyHostToDevice));
        free(x);
        float scale = 64.0f;
        cudaCheck(cudaMemcpy(d_scale, &scale, 4, cudaMemcpyHostToDevice));
        cudaCheck(cudaMemset(d_amax, 0, 4));
        const int reps = 20;
        // one untimed run of each first (module load, clocks up)
        cudaCheck(cudaMemcpyAsync(d_copy, d_x, n * 2, cudaMemcpyDeviceToDevice));
        cudaCheck(fp8_cast_amax(d_out, d_x, n, d_scale, d_amax, NULL, FP8_E4M3, sms, 0));
        cudaCheck(fp8_cast_transpose_amax(d_out, d_out_t, d_x, rows, cols, d_scale, d_amax, NULL, FP8_E4M3, 0));
        cudaCheck(fp8_cast_amax(d_out, d_x, n, d_scale, d_amax, d_stats, FP8_E4M3, sms, 0));
        cudaCheck(fp8_cast_transpose_amax(d_out, d_out_t, d_x, rows, cols, d_scale, d_amax, d_stats, FP8_E4M3, 0));
        bench_start(&timer);
        for (int r = 0; r < reps; r++) { cudaCheck(cudaMemcpyAsync(d_copy, d_x, n * 2, cudaMemcpyDeviceToDevice)); }
        double copy_gbs = 2.0 * n * 2 * reps / (bench_stop_ms(&timer) * 1e6);  // read + write
        double cast_gbs[2], transpose_gbs[2];  // without, with the diagnostics counters
        for (int counted = 0; counted < 2; counted++) {
            unsigned long long* stats = counted ? d_stats : NULL;
            bench_start(&timer);
            for (int r = 0; r < reps; r++) { cudaCheck(fp8_cast_amax(d_out, d_x, n, d_scale, d_amax, stats, FP8_E4M3, sms, 0)); }
            cast_gbs[counted] = 3.0 * n * reps / (bench_stop_ms(&timer) * 1e6);  // 2 bytes in, 1 out
            bench_start(&timer);
            for (int r = 0; r < reps; r++) {
                cudaCheck(fp8_cast_transpose_amax(d_out, d_out_t, d_x, rows, cols, d_scale, d_amax, stats, FP8_E4M3, 0));
            }
            transpose_gbs[counted] = 4.0 * n * reps / (bench_stop_ms(&timer) * 1e6);  // 2 in, 1 + 1 out
        }
        printf("%d x %d: device copy %.0f GB/s | cast+amax %.0f GB/s (%.0f%%) | cast+transpose+amax %.0f GB/s (%.0f%%) | "
               "with counters: cast %.0f GB/s (%.0f%% of without), cast+transpose %.0f GB/s (%.0f%%)\n",
               rows, cols, copy_gbs, cast_gbs[0], 100 * cast_gbs[0] / copy_gbs, transpose_gbs[0],
               100 * transpose_gbs[0] / copy_gbs, cast_gbs[1], 100 * cast_gbs[1] / cast_gbs[0], transpose_gbs[1],
               100 * transpose_gbs[1] / transpose_gbs[0]);
        // a grad_output's cast with its bias gradient: the fused pass (+ the reduction of the partials) against the
        // cast followed by bias_backward's own two passes, microseconds per call
        float *d_partials, *d_dbias;
        device_alloc(&dev, &d_partials, (size_t)rows / COLUMN_SUM_ROWS * cols * sizeof(float));
        device_alloc(&dev, &d_dbias, cols * sizeof(float));
        cudaCheck(cudaMemset(d_dbias, 0, cols * sizeof(float)));
        cudaCheck(fp8_cast_transpose_dbias_amax(d_out, d_out_t, d_partials, d_x, rows, cols, d_scale, d_amax, NULL,
                                                FP8_E5M2, 0));
        bench_start(&timer);
        for (int r = 0; r < reps; r++) {
            cudaCheck(fp8_cast_transpose_dbias_amax(d_out, d_out_t, d_partials, d_x, rows, cols, d_scale, d_amax, NULL,
                                                    FP8_E5M2, 0));
            bias_backward_reduce(d_dbias, d_partials, rows, cols, 0);
        }
        double fused_us = 1000.0 * bench_stop_ms(&timer) / reps;
        bench_start(&timer);
        for (int r = 0; r < reps; r++) {
            cudaCheck(fp8_cast_transpose_amax(d_out, d_out_t, d_x, rows, cols, d_scale, d_amax, NULL, FP8_E5M2, 0));
            bias_backward(d_dbias, d_x, rows, cols, d_partials, 0);
        }
        double separate_us = 1000.0 * bench_stop_ms(&timer) / reps;
        bench_start(&timer);
        for (int r = 0; r < reps; r++) {
            cudaCheck(fp8_cast_transpose_dbias_amax(d_out, d_out_t, d_partials, d_x, rows, cols, d_scale, d_amax, NULL,
                                                    FP8_E5M2, 0));
        }
        double dbias_kernel_gbs = 4.0 * n * reps / (bench_stop_ms(&timer) * 1e6);  // the partials are 1/32 more: left out
        printf("%d x %d: grad_output cast+transpose+dbias %.1f us (its kernel %.0f GB/s, %.0f%% of copy) | cast+transpose "
               "then bias_backward %.1f us | fused / separate %.2f\n",
               rows, cols, fused_us, dbias_kernel_gbs, 100 * dbias_kernel_gbs / copy_gbs, separate_us,
               fused_us / separate_us);
        device_list_free(&dev);
    }
    return dev_summary("fp8_quantize", checks, failures);
}
