/*
dev/cuda/gelu_fp8.cu — GELU inside the FP8 casts (llmc/gelu_fp8.cuh) on their own, against what they replace: GELU's
own kernels (llmc/gelu.cuh) writing bf16, then the cast of that tensor.

Checks, for E4M3 forward and E5M2 backward, with scales that make values saturate and flush, and a NaN case:
  gelu_forward_fp8   the FP8 bytes, the transposed bytes and the amax are the CPU's cast (fp8_quantize_bf16) of
                     gelu_forward's bf16 output, bit for bit (R1 of llmc/tolerance.h: the same bf16 values, scale and
                     rounding; an amax is a maximum, whatever the order), so those of fp8_cast_transpose_amax on it;
                     with the diagnostics counters, the CPU's counts; with no row-major output, the same transpose
  gelu_backward_fp8  the same against gelu_backward's output (fc's grad_output), and its bias partials the CPU's
                     column sums of that output in bias_backward's order, and the bias gradient reduced from them
                     (onto a nonzero one, as in accumulation) bias_backward's own, bit for bit; without partials, the
                     same bytes
  *_amax_scale       current scaling's amax pass over the values each cast makes (gelu_forward_amax_scale,
                     gelu_backward_amax_scale): the scale, scale_inv, the GEMMs' copy and the amax are current scaling's
                     rule (fp8/current.h) on the GELU kernels' bf16 output, bit for bit (R1), with a grid of one block
                     and of many (the last block computes the scale)
  gelu_derivative    (llmc/gelu_math.h, what gelu_backward and the backward cast run per element) at every finite
                     bf16 x: within 21 u of |first term| + |second term| of its formula in double at the same float
                     argument (gelu_derivative_exact; the CPU's test_gelu_derivative_accuracy derives 17 u for glibc's
                     expf, 1 ulp; CUDA's expf has 2 ulps: e 4u, 1 + e 3u, r 4u, e r 9u, sech^2 14u, the second term
                     20u, the sum 21u), where |a| <= 43; past it, within 2^-120
Then the time of each against the kernels it replaces, at d12's fc shape (B*T = 65536 rows, 4C = 3072 columns), and its
bandwidth (bytes it reads and writes per second) against a device-to-device copy of the bf16 tensor; the backward cast
with the tanhf / coshf derivative gelu_math.h's replaced, on the same GPU in the same run, for what the one-exponential
form saves; and current scaling's fused casts (amax pass over the made values, then the cast) against GELU's kernel, the
amax pass over its output and the cast. (The launchers' refusals of bad shapes and pointers are tested without a GPU in
llmc/test_kernels_host.)

Build: make dev/cuda/gelu_fp8     Run: ./dev/cuda/gelu_fp8    (prints one line and exits 1 without a GPU)
*/
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fp8/quantize.cuh"
#include "../../fp8/quantize_cpu.h"
#include "../../llmc/bias.cuh"
#include "../../llmc/cuda_utils.cuh"
#include "../../llmc/gelu.cuh"
#include "../../llmc/gelu_fp8.cuh"
#include "../../llmc/rand.h"
#include "cast_check.h"

// fch (rows, cols) bf16, fc's output, and d_gelu_out the gradient of GELU's output: the forward cast with scale
// fwd_scale (E4M3), the backward with bwd_scale (E5M2), each against the CPU's cast of the GPU's own GELU kernels'
// output.
static void check_shape(int rows, int cols, float fwd_scale, float bwd_scale, int with_nan, Rng* rng) {
    size_t n = (size_t)rows * cols, chunks = (size_t)rows / COLUMN_SUM_ROWS;
    uint16_t* fch = random_bf16(n, rng);
    uint16_t* dout = random_bf16(n, rng);
    if (with_nan) { fch[n / 3] = 0x7FC0; }
    __nv_bfloat16 *d_fch, *d_dout, *d_gelu;
    DeviceList dev = {{NULL}, 0};
    device_alloc(&dev, &d_fch, n * 2);
    device_alloc(&dev, &d_dout, n * 2);
    device_alloc(&dev, &d_gelu, n * 2);
    cudaCheck(cudaMemcpy(d_fch, fch, n * 2, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_dout, dout, n * 2, cudaMemcpyHostToDevice));
    DeviceOutputs d = device_outputs_alloc(n, chunks, cols);
    CastResult r;
    r.out = (uint8_t*)malloc(n);
    r.out_t = (uint8_t*)malloc(n);
    uint16_t* gelu = (uint16_t*)malloc(n * 2);
    uint8_t* want = (uint8_t*)malloc(n);
    char what[200];

    // forward: gelu_forward's bf16 output, and the CPU's cast of it
    gelu_forward(d_gelu, d_fch, n, 0);
    cudaCheck(cudaMemcpy(gelu, d_gelu, n * 2, cudaMemcpyDeviceToHost));
    float want_amax = AMAX_BEFORE;
    Fp8QuantStats want_stats = {0, 0, 0};
    fp8_quantize_bf16(want, gelu, n, FP8_E4M3, fwd_scale, &want_amax, &want_stats);
    cudaCheck(cudaMemcpy(d.scale, &fwd_scale, 4, cudaMemcpyHostToDevice));
    for (int counted = 0; counted < 2; counted++) {
        reset_outputs(&d, n);
        cudaCheck(gelu_forward_fp8(d.out, d.out_t, d_fch, rows, cols, d.scale, d.amax, counted ? d.stats : NULL,
                                   FP8_E4M3, 0));
        download(&r, &d, n);
        snprintf(what, sizeof(what), "gelu_forward_fp8 e4m3 %dx%d scale %g%s%s", rows, cols, fwd_scale,
                 with_nan ? " with a NaN" : "", counted ? " with counters" : "");
        check_result(&r, want, want_amax, &want_stats, counted, 0, rows, cols, what);
    }
    reset_outputs(&d, n);
    cudaCheck(gelu_forward_fp8(NULL, d.out_t, d_fch, rows, cols, d.scale, d.amax, NULL, FP8_E4M3, 0));
    download(&r, &d, n);
    snprintf(what, sizeof(what), "gelu_forward_fp8 e4m3 %dx%d, the transpose alone", rows, cols);
    check_result(&r, want, want_amax, &want_stats, 0, 1, rows, cols, what);
    // current scaling's amax pass over the values the cast makes: one block, then many
    AmaxScaleDevice amax_pass = amax_scale_alloc(&dev);
    for (int sms = 0; sms <= 132; sms += 132) {
        Fp8CurrentScale target = amax_scale_target(&amax_pass, fwd_scale, 0);
        cudaCheck(gelu_forward_amax_scale(d_fch, n, FP8_E4M3, target, amax_pass.workspace, sms, 0));
        snprintf(what, sizeof(what), "gelu_forward_amax_scale e4m3 %dx%d%s, %s", rows, cols,
                 with_nan ? " with a NaN" : "", sms ? "a block per SM" : "one block");
        check_amax_scale(&amax_pass, gelu, n, FP8_E4M3, fwd_scale, 0, what);
    }

    // backward: gelu_backward's bf16 output (fc's grad_output), the CPU's cast of it and its column partials
    gelu_backward(d_gelu, d_fch, d_dout, n, 0);
    cudaCheck(cudaMemcpy(gelu, d_gelu, n * 2, cudaMemcpyDeviceToHost));
    want_amax = AMAX_BEFORE;
    memset(&want_stats, 0, sizeof(want_stats));
    fp8_quantize_bf16(want, gelu, n, FP8_E5M2, bwd_scale, &want_amax, &want_stats);
    float* want_partials = (float*)malloc(chunks * cols * sizeof(float));
    column_partials_cpu(want_partials, gelu, rows, cols);
    float* got_partials = (float*)malloc(chunks * cols * sizeof(float));
    float* dbias0 = (float*)malloc(cols * sizeof(float));  // an earlier micro-batch's bias gradient
    for (int c = 0; c < cols; c++) { dbias0[c] = 0.25f * (float)(c % 7) - 0.75f; }
    float* dbias_fused = (float*)malloc(cols * sizeof(float));
    float* dbias_pass = (float*)malloc(cols * sizeof(float));
    cudaCheck(cudaMemcpy(d.scale, &bwd_scale, 4, cudaMemcpyHostToDevice));
    for (int counted = 0; counted < 2; counted++) {
        reset_outputs(&d, n);
        cudaCheck(cudaMemcpy(d.dbias, dbias0, cols * sizeof(float), cudaMemcpyHostToDevice));
        cudaCheck(gelu_backward_fp8(d.out, d.out_t, d.partials, d_fch, d_dout, rows, cols, d.scale, d.amax,
                                    counted ? d.stats : NULL, FP8_E5M2, 0));
        download(&r, &d, n);
        snprintf(what, sizeof(what), "gelu_backward_fp8 e5m2 %dx%d scale %g%s%s", rows, cols, bwd_scale,
                 with_nan ? " with a NaN" : "", counted ? " with counters" : "");
        check_result(&r, want, want_amax, &want_stats, counted, 0, rows, cols, what);
        cudaCheck(cudaMemcpy(got_partials, d.partials, chunks * cols * sizeof(float), cudaMemcpyDeviceToHost));
        snprintf(what, sizeof(what), "gelu_backward_fp8 %dx%d%s: %zu x %d column partials the CPU's sums of "
                 "gelu_backward's output, bit for bit", rows, cols, counted ? " with counters" : "", chunks, cols);
        report(floats_identical(got_partials, want_partials, chunks * cols), what);
        // the bias gradient from the partials against bias_backward's own passes over gelu_backward's output
        bias_backward_reduce(d.dbias, d.partials, rows, cols, 0);
        cudaCheck(cudaMemcpy(dbias_fused, d.dbias, cols * sizeof(float), cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(d.dbias, dbias0, cols * sizeof(float), cudaMemcpyHostToDevice));
        bias_backward(d.dbias, d_gelu, rows, cols, d.partials, 0);
        cudaCheck(cudaMemcpy(dbias_pass, d.dbias, cols * sizeof(float), cudaMemcpyDeviceToHost));
        snprintf(what, sizeof(what), "gelu_backward_fp8 %dx%d%s: dbias (+= onto an earlier one) bias_backward's on "
                 "gelu_backward's output, bit for bit", rows, cols, counted ? " with counters" : "");
        report(floats_identical(dbias_fused, dbias_pass, cols), what);
    }
    reset_outputs(&d, n);
    cudaCheck(gelu_backward_fp8(d.out, d.out_t, NULL, d_fch, d_dout, rows, cols, d.scale, d.amax, NULL, FP8_E5M2, 0));
    download(&r, &d, n);
    snprintf(what, sizeof(what), "gelu_backward_fp8 e5m2 %dx%d without bias partials", rows, cols);
    check_result(&r, want, want_amax, &want_stats, 0, 0, rows, cols, what);
    for (int sms = 0; sms <= 132; sms += 132) {  // with a margin, as -fp8_margin gives current scaling
        Fp8CurrentScale target = amax_scale_target(&amax_pass, bwd_scale, 1);
        cudaCheck(gelu_backward_amax_scale(d_fch, d_dout, n, FP8_E5M2, target, amax_pass.workspace, sms, 0));
        snprintf(what, sizeof(what), "gelu_backward_amax_scale e5m2 margin 1 %dx%d%s, %s", rows, cols,
                 with_nan ? " with a NaN" : "", sms ? "a block per SM" : "one block");
        check_amax_scale(&amax_pass, gelu, n, FP8_E5M2, bwd_scale, 1, what);
    }

    free(fch);
    free(dout);
    free(gelu);
    free(want);
    free(r.out);
    free(r.out_t);
    free(want_partials);
    free(got_partials);
    free(dbias0);
    free(dbias_fused);
    free(dbias_pass);
    device_list_free(&dev);
    device_outputs_free(&d);
}

// a (n) and gelu'(x) (n) at x (n): the GPU's gelu_tanh_argument and gelu_derivative_at, as the kernels run them
__global__ void gelu_derivative_kernel(float* derivative, float* argument, const float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) { return; }
    float a = gelu_tanh_argument(x[i]);
    argument[i] = a;
    derivative[i] = gelu_derivative_at(x[i], a);
}

static void check_derivative_accuracy(void) {
    int n = 0;
    float* x = (float*)malloc(65536 * sizeof(float));
    for (int bits = 0; bits < 65536; bits++) {  // every finite bf16 value below the formula's own NaN (5.04e19)
        float v = bf16_to_float((uint16_t)bits);
        if (isfinite(v) && fabsf(v) < 5.0e19f) { x[n++] = v; }
    }
    float *d_x, *d_derivative, *d_argument;
    DeviceList dev = {{NULL}, 0};
    device_alloc(&dev, &d_x, n * sizeof(float));
    device_alloc(&dev, &d_derivative, n * sizeof(float));
    device_alloc(&dev, &d_argument, n * sizeof(float));
    cudaCheck(cudaMemcpy(d_x, x, n * sizeof(float), cudaMemcpyHostToDevice));
    gelu_derivative_kernel<<<(n + 255) / 256, 256>>>(d_derivative, d_argument, d_x, n);
    cudaCheck(cudaGetLastError());
    float* derivative = (float*)malloc(n * sizeof(float));
    float* argument = (float*)malloc(n * sizeof(float));
    cudaCheck(cudaMemcpy(derivative, d_derivative, n * sizeof(float), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(argument, d_argument, n * sizeof(float), cudaMemcpyDeviceToHost));
    int bad = 0, beyond = 0;
    double worst = 0.0;
    float worst_x = 0.0f;
    for (int i = 0; i < n; i++) {
        double magnitude;
        double error = fabs((double)derivative[i] - gelu_derivative_exact(x[i], argument[i], &magnitude));
        if (fabsf(argument[i]) > 43.0f) {
            beyond++;
            bad += !(error <= 0x1p-120);
            continue;
        }
        double in_u = error / (magnitude * 0x1p-24);
        bad += !(in_u <= 21.0);
        if (!(in_u <= worst)) {
            worst = in_u;
            worst_x = x[i];
        }
    }
    char what[256];
    snprintf(what, sizeof(what), "gelu_derivative at %d bf16 inputs (%d past |a| = 43): %d off, worst %.2f u at x = %g "
             "(bound 21 u)", n, beyond, bad, worst, worst_x);
    report(bad == 0, what);
    free(x);
    free(derivative);
    free(argument);
    device_list_free(&dev);
}

// The backward cast's input with the derivative gelu_math.h had before (1 + tanhf, 1 / coshf^2: llm.c's), for the
// timing only
struct GeluBackwardTanhCoshInput {
    const floatX* inp;
    const floatX* dout;
    __device__ __forceinline__ uint4 values(size_t offset, int, int) const {
        uint4 in_packed = *reinterpret_cast<const uint4*>(inp + offset);
        uint4 dout_packed = *reinterpret_cast<const uint4*>(dout + offset);
        const floatX* in_values = reinterpret_cast<const floatX*>(&in_packed);
        const floatX* dout_values = reinterpret_cast<const floatX*>(&dout_packed);
        uint4 dinp_packed;
        floatX* dinp_values = reinterpret_cast<floatX*>(&dinp_packed);
        for (int j = 0; j < 8; j++) {
            float x = __bfloat162float(in_values[j]), a = gelu_tanh_argument(x);
            float cosh_a = coshf(a);
            float sech2 = 1.0f / (cosh_a * cosh_a);
            float grad = 0.5f * (1.0f + tanhf(a)) +
                         x * 0.5f * sech2 * GELU_SCALING_FACTOR * (1.0f + 3.0f * 0.044715f * x * x);
            dinp_values[j] = __float2bfloat16_rn(grad * __bfloat162float(dout_values[j]));
        }
        return dinp_packed;
    }
};

int main(void) {
    require_cuda_device("gelu_fp8");
    check_derivative_accuracy();
    Rng rng;
    rng_seed(&rng, 47);
    check_shape(256, 768, 448.0f / 2.0f, 57344.0f / 8.0f, 0, &rng);
    check_shape(192, 3072, 1.0f, 4096.0f, 0, &rng);
    check_shape(128, 256, 64.0f, 1024.0f, 1, &rng);

    if (bench_emulated("gelu_fp8")) { return dev_summary("gelu_fp8", checks, failures); }

    // time at d12's fc shape, B 64: the fused cast against GELU's kernel followed by the cast it replaces
    int rows = 65536, cols = 3072;
    size_t n = (size_t)rows * cols, chunks = (size_t)rows / COLUMN_SUM_ROWS;
    __nv_bfloat16 *d_fch, *d_dout, *d_gelu, *d_copy;
    uint8_t *d_out, *d_out_t;
    float *d_scale, *d_amax, *d_partials, *d_dbias;
    DeviceList dev = {{NULL}, 0};
    device_alloc(&dev, &d_fch, n * 2);
    device_alloc(&dev, &d_dout, n * 2);
    device_alloc(&dev, &d_gelu, n * 2);
    device_alloc(&dev, &d_copy, n * 2);
    device_alloc(&dev, &d_out, n);
    device_alloc(&dev, &d_out_t, n);
    device_alloc(&dev, &d_scale, 4);
    device_alloc(&dev, &d_amax, 4);
    device_alloc(&dev, &d_partials, chunks * cols * sizeof(float));
    device_alloc(&dev, &d_dbias, cols * sizeof(float));
    uint16_t* x = random_bf16(n, &rng);  // real values: the converts and GELU do the work they do in training
    cudaCheck(cudaMemcpy(d_fch, x, n * 2, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_dout, x, n * 2, cudaMemcpyHostToDevice));
    free(x);
    float scale = 64.0f;
    cudaCheck(cudaMemcpy(d_scale, &scale, 4, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemset(d_amax, 0, 4));
    cudaCheck(cudaMemset(d_dbias, 0, cols * sizeof(float)));
    // current scaling: each cast's amax pass first, over the values the fused cast makes or the tensor GELU wrote
    AmaxScaleDevice amax_pass = amax_scale_alloc(&dev);
    Fp8CurrentScale target = amax_scale_target(&amax_pass, scale, 0);
    int sms = device_sm_count();
    BenchTimer timer;
    bench_timer_init(&timer);
    const int reps = 20;
    // copy, forward fused, forward separate, backward fused, backward separate, backward fused with the old derivative;
    // then current scaling's: forward fused, forward separate, backward fused, backward separate
    double us[10];
    GeluBackwardTanhCoshInput old_derivative = {d_fch, d_dout};
    for (int pass = 0; pass < 2; pass++) {  // the first pass untimed: module load, clocks up
        for (int which = 0; which < 10; which++) {
            bench_start(&timer);
            for (int r = 0; r < reps; r++) {
                if (which == 0) {
                    cudaCheck(cudaMemcpyAsync(d_copy, d_fch, n * 2, cudaMemcpyDeviceToDevice));
                } else if (which == 1) {
                    cudaCheck(gelu_forward_fp8(d_out, d_out_t, d_fch, rows, cols, d_scale, d_amax, NULL, FP8_E4M3, 0));
                } else if (which == 2) {
                    gelu_forward(d_gelu, d_fch, n, 0);
                    cudaCheck(fp8_cast_transpose_amax(d_out, d_out_t, d_gelu, rows, cols, d_scale, d_amax, NULL,
                                                      FP8_E4M3, 0));
                } else if (which == 3) {
                    cudaCheck(gelu_backward_fp8(d_out, d_out_t, d_partials, d_fch, d_dout, rows, cols, d_scale, d_amax,
                                                NULL, FP8_E5M2, 0));
                    bias_backward_reduce(d_dbias, d_partials, rows, cols, 0);
                } else if (which == 5) {
                    cudaCheck(fp8_cast_transpose_launch<true>(d_out, d_out_t, d_partials, old_derivative, rows, cols,
                                                              d_scale, d_amax, NULL, FP8_E5M2, 0));
                    bias_backward_reduce(d_dbias, d_partials, rows, cols, 0);
                } else if (which == 6) {
                    cudaCheck(gelu_forward_amax_scale(d_fch, n, FP8_E4M3, target, amax_pass.workspace, sms, 0));
                    cudaCheck(gelu_forward_fp8(d_out, d_out_t, d_fch, rows, cols, target.scale, d_amax, NULL, FP8_E4M3,
                                               0));
                } else if (which == 7) {
                    gelu_forward(d_gelu, d_fch, n, 0);
                    cudaCheck(fp8_amax_scale(d_gelu, n, FP8_E4M3, target, amax_pass.workspace, sms, 0));
                    cudaCheck(fp8_cast_transpose_amax(d_out, d_out_t, d_gelu, rows, cols, target.scale, d_amax, NULL,
                                                      FP8_E4M3, 0));
                } else if (which == 8) {
                    cudaCheck(gelu_backward_amax_scale(d_fch, d_dout, n, FP8_E5M2, target, amax_pass.workspace, sms,
                                                       0));
                    cudaCheck(gelu_backward_fp8(d_out, d_out_t, d_partials, d_fch, d_dout, rows, cols, target.scale,
                                                d_amax, NULL, FP8_E5M2, 0));
                    bias_backward_reduce(d_dbias, d_partials, rows, cols, 0);
                } else if (which == 9) {
                    gelu_backward(d_gelu, d_fch, d_dout, n, 0);
                    cudaCheck(fp8_amax_scale(d_gelu, n, FP8_E5M2, target, amax_pass.workspace, sms, 0));
                    cudaCheck(fp8_cast_transpose_dbias_amax(d_out, d_out_t, d_partials, d_gelu, rows, cols,
                                                            target.scale, d_amax, NULL, FP8_E5M2, 0));
                    bias_backward_reduce(d_dbias, d_partials, rows, cols, 0);
                } else {
                    gelu_backward(d_gelu, d_fch, d_dout, n, 0);
                    cudaCheck(fp8_cast_transpose_dbias_amax(d_out, d_out_t, d_partials, d_gelu, rows, cols, d_scale,
                                                            d_amax, NULL, FP8_E5M2, 0));
                    bias_backward_reduce(d_dbias, d_partials, rows, cols, 0);
                }
            }
            us[which] = 1000.0 * bench_stop_ms(&timer) / reps;
        }
    }
    double copy_gbs = 2.0 * n * 2 / (us[0] * 1e3);        // read + write
    double forward_gbs = 4.0 * n / (us[1] * 1e3);         // 2 bytes in, 1 + 1 out
    double backward_gbs = 6.0 * n / (us[3] * 1e3);        // 2 + 2 in, 1 + 1 out (the partials, 1/32 more, left out)
    printf("%d x %d: device copy %.0f GB/s | gelu_forward_fp8 %.1f us (%.0f GB/s, %.0f%% of copy), gelu_forward + "
           "cast+transpose %.1f us, fused / separate %.2f\n",
           rows, cols, copy_gbs, us[1], forward_gbs, 100 * forward_gbs / copy_gbs, us[2], us[1] / us[2]);
    printf("%d x %d: gelu_backward_fp8 + dbias reduce %.1f us (its kernel and the reduce: %.0f GB/s, %.0f%% of copy), "
           "gelu_backward + cast+transpose+dbias + reduce %.1f us, fused / separate %.2f\n",
           rows, cols, us[3], backward_gbs, 100 * backward_gbs / copy_gbs, us[4], us[3] / us[4]);
    printf("%d x %d: gelu_backward_fp8 + dbias reduce with the tanhf / coshf derivative %.1f us, "
           "this one / that %.2f\n", rows, cols, us[5], us[3] / us[5]);
    printf("%d x %d, current scaling: gelu_forward_amax_scale + gelu_forward_fp8 %.1f us, gelu_forward + amax pass + "
           "cast+transpose %.1f us, fused / separate %.2f\n", rows, cols, us[6], us[7], us[6] / us[7]);
    printf("%d x %d, current scaling: gelu_backward_amax_scale + gelu_backward_fp8 + dbias reduce %.1f us, "
           "gelu_backward + amax pass + cast+transpose+dbias + reduce %.1f us, fused / separate %.2f\n", rows, cols,
           us[8], us[9], us[8] / us[9]);
    device_list_free(&dev);
    return dev_summary("gelu_fp8", checks, failures);
}
