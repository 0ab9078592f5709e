/*
dev/cuda/layernorm_fp8.cu — LayerNorm inside the FP8 cast after it (llmc/layernorm_fp8.cuh) on its own, against what it
replaces: layernorm_forward writing the bf16 output (llmc/layernorm.cuh), then the cast of that tensor.

Checks, with E4M3 scales that make values saturate and flush, and a NaN case, for C = 768, 1600 and 320 (a multiple of
the cast's 64-wide tile but not of 256: 2 vectors on some lanes, 1 on others, when one warp per row makes the
statistics):
  layernorm_forward_fp8  from the statistics of layernorm_forward with no output (and of residual_layernorm_forward with
                         none, on a residual it makes; each the statistics layernorm_forward stores with an output, R1),
                         the FP8 bytes, the transposed bytes and the amax are the CPU's cast (fp8_quantize_bf16) of
                         layernorm_forward's bf16 output, bit for bit (R1 of llmc/tolerance.h: the same bf16 values,
                         scale and rounding; an amax is a maximum, whatever the order), so those of
                         fp8_cast_transpose_amax on it; with the diagnostics counters, the CPU's counts; with no
                         row-major output, the same transpose
  layernorm_forward_amax_scale  current scaling's amax pass over the values the cast makes: the scale, scale_inv, the
                         GEMMs' copy and the amax are current scaling's rule (fp8/current.h) on layernorm_forward's
                         bf16 output, bit for bit (R1), with a grid of one block and of many
Then at d12's shape (B*T = 65536 rows, C = 768) the time of the cast against the cast of the bf16 output, and of the
forward's two passes as the trainer runs them before qkv and fc: residual_layernorm_forward with no output then
layernorm_forward_fp8, against residual_layernorm_forward writing the output then fp8_cast_transpose_amax; each with its
bandwidth (bytes read and written per second) against a device-to-device copy; and the same two for current scaling,
with its amax pass over the values the fused cast makes, or over the bf16 output, before the cast. (The launcher's
refusals of bad shapes and pointers are tested without a GPU in llmc/test_kernels_host.)

Build: make dev/cuda/layernorm_fp8     Run: ./dev/cuda/layernorm_fp8    (prints one line and exits 1 without a GPU)
*/
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fp8/quantize.cuh"
#include "../../fp8/quantize_cpu.h"
#include "../../llmc/cuda_utils.cuh"
#include "../../llmc/layernorm.cuh"
#include "../../llmc/layernorm_fp8.cuh"
#include "../../llmc/rand.h"
#include "cast_check.h"

// x (rows, C) the LayerNorm's input, w and b its parameters: the cast with scale `scale` (E4M3, the forward's format)
// against the CPU's cast of the GPU's own layernorm_forward output.
static void check_shape(int rows, int C, float scale, int with_nan, Rng* rng) {
    size_t n = (size_t)rows * C;
    uint16_t* x = random_bf16(n, rng);  // many octaves: rows with large and tiny spreads
    uint16_t* w = random_bf16(C, rng);
    uint16_t* b = random_bf16(C, rng);
    uint16_t* branch = random_bf16(n, rng);
    if (with_nan) { x[n / 3] = 0x7FC0; }  // its row normalizes to NaN throughout
    DeviceList dev = {{NULL}, 0};
    __nv_bfloat16 *d_x = upload_bf16(&dev, x, n), *d_w = upload_bf16(&dev, w, C), *d_b = upload_bf16(&dev, b, C);
    __nv_bfloat16 *d_branch = upload_bf16(&dev, branch, n), *d_ln, *d_residual;
    device_alloc(&dev, &d_ln, n * 2);
    device_alloc(&dev, &d_residual, n * 2);
    float *d_mean, *d_rstd, *d_ref_mean, *d_ref_rstd;  // the statistics the cast reads; the reference's own
    device_alloc(&dev, &d_mean, rows * sizeof(float));
    device_alloc(&dev, &d_rstd, rows * sizeof(float));
    device_alloc(&dev, &d_ref_mean, rows * sizeof(float));
    device_alloc(&dev, &d_ref_rstd, rows * sizeof(float));
    DeviceOutputs d = device_outputs_alloc(n, 0, C);
    cudaCheck(cudaMemcpy(d.scale, &scale, 4, cudaMemcpyHostToDevice));
    AmaxScaleDevice amax_pass = amax_scale_alloc(&dev);
    CastResult r;
    r.out = (uint8_t*)malloc(n);
    r.out_t = (uint8_t*)malloc(n);
    uint16_t* ln = (uint16_t*)malloc(n * 2);
    uint8_t* want = (uint8_t*)malloc(n);
    char what[200];

    // the two ways the trainer gets the statistics: from the residual stream as it is (ln1 of block 0), and from a
    // residual the same pass makes (every other LayerNorm)
    for (int with_residual = 0; with_residual < 2; with_residual++) {
        const __nv_bfloat16* inp = d_x;
        if (with_residual) {
            residual_layernorm_forward(d_residual, NULL, d_mean, d_rstd, d_x, d_branch, d_w, d_b, 1, rows, C, 0);
            inp = d_residual;
        } else {
            layernorm_forward(NULL, d_mean, d_rstd, d_x, d_w, d_b, 1, rows, C, 0);
        }
        // the reference: layernorm_forward's bf16 output of the same input, and the CPU's cast of it
        layernorm_forward(d_ln, d_ref_mean, d_ref_rstd, inp, d_w, d_b, 1, rows, C, 0);
        cudaCheck(cudaMemcpy(ln, d_ln, n * 2, cudaMemcpyDeviceToHost));
        float want_amax = AMAX_BEFORE;
        Fp8QuantStats want_stats = {0, 0, 0};
        fp8_quantize_bf16(want, ln, n, FP8_E4M3, scale, &want_amax, &want_stats);
        const char* from = with_residual ? "residual_layernorm_forward's" : "layernorm_forward's";
        // the statistics pass with no output stored those of the pass with one (R1)
        float* stats[4];
        const float* device_stats[4] = {d_mean, d_rstd, d_ref_mean, d_ref_rstd};
        for (int k = 0; k < 4; k++) {
            stats[k] = (float*)malloc(rows * sizeof(float));
            cudaCheck(cudaMemcpy(stats[k], device_stats[k], rows * sizeof(float), cudaMemcpyDeviceToHost));
        }
        snprintf(what, sizeof(what), "%dx%d: %s statistics with no output, those of layernorm_forward with one (R1)", rows,
                 C, from);
        report(floats_identical(stats[0], stats[2], rows) && floats_identical(stats[1], stats[3], rows), what);
        for (int k = 0; k < 4; k++) { free(stats[k]); }
        for (int counted = 0; counted < 2; counted++) {
            reset_outputs(&d, n);
            cudaCheck(layernorm_forward_fp8(d.out, d.out_t, inp, d_mean, d_rstd, d_w, d_b, rows, C, d.scale, d.amax,
                                            counted ? d.stats : NULL, FP8_E4M3, 0));
            download(&r, &d, n);
            snprintf(what, sizeof(what), "layernorm_forward_fp8 %dx%d scale %g from %s statistics%s%s", rows, C, scale,
                     from, with_nan ? " with a NaN" : "", counted ? " with counters" : "");
            check_result(&r, want, want_amax, &want_stats, counted, 0, rows, C, what);
        }
        reset_outputs(&d, n);
        cudaCheck(layernorm_forward_fp8(NULL, d.out_t, inp, d_mean, d_rstd, d_w, d_b, rows, C, d.scale, d.amax, NULL,
                                        FP8_E4M3, 0));
        download(&r, &d, n);
        snprintf(what, sizeof(what), "layernorm_forward_fp8 %dx%d from %s statistics, the transpose alone", rows, C, from);
        check_result(&r, want, want_amax, &want_stats, 0, 1, rows, C, what);
        // current scaling's amax pass over the values the cast makes (one block, then many: each thread's rows and
        // columns carried across its vectors)
        for (int sms = 0; sms <= 132; sms += 132) {
            Fp8CurrentScale target = amax_scale_target(&amax_pass, scale, 0);
            cudaCheck(layernorm_forward_amax_scale(inp, d_mean, d_rstd, d_w, d_b, rows, C, FP8_E4M3, target,
                                                   amax_pass.workspace, sms, 0));
            snprintf(what, sizeof(what), "layernorm_forward_amax_scale %dx%d from %s statistics%s, %s", rows, C, from,
                     with_nan ? " with a NaN" : "", sms ? "a block per SM" : "one block");
            check_amax_scale(&amax_pass, ln, n, FP8_E4M3, scale, 0, what);
        }
    }

    free(x);
    free(w);
    free(b);
    free(branch);
    free(ln);
    free(want);
    free(r.out);
    free(r.out_t);
    device_list_free(&dev);
    device_outputs_free(&d);
}

int main(void) {
    require_cuda_device("layernorm_fp8");
    Rng rng;
    rng_seed(&rng, 67);
    check_shape(256, 768, 448.0f / 4.0f, 0, &rng);
    check_shape(128, 1600, 16.0f, 0, &rng);
    check_shape(192, 320, 448.0f, 1, &rng);

    if (bench_emulated("layernorm_fp8")) { return dev_summary("layernorm_fp8", checks, failures); }

    // time at d12's shape, B 64: the cast alone against the cast of the bf16 output, and the passes before qkv as the
    // trainer runs them, fused against separate
    int rows = 65536, C = 768;
    size_t n = (size_t)rows * C;
    uint16_t* x = random_bf16(n, &rng);  // real values: the converts do the work they do in training
    DeviceList dev = {{NULL}, 0};
    __nv_bfloat16 *d_x = upload_bf16(&dev, x, n), *d_branch = upload_bf16(&dev, x, n), *d_w = upload_bf16(&dev, x, C);
    __nv_bfloat16 *d_b = upload_bf16(&dev, x + C, C), *d_ln, *d_residual, *d_copy;
    free(x);
    device_alloc(&dev, &d_ln, n * 2);
    device_alloc(&dev, &d_residual, n * 2);
    device_alloc(&dev, &d_copy, n * 2);
    uint8_t *d_out, *d_out_t;
    float *d_scale, *d_amax, *d_mean, *d_rstd;
    device_alloc(&dev, &d_out, n);
    device_alloc(&dev, &d_out_t, n);
    device_alloc(&dev, &d_scale, 4);
    device_alloc(&dev, &d_amax, 4);
    device_alloc(&dev, &d_mean, rows * sizeof(float));
    device_alloc(&dev, &d_rstd, rows * sizeof(float));
    float scale = 16.0f;
    cudaCheck(cudaMemcpy(d_scale, &scale, 4, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemset(d_amax, 0, 4));
    layernorm_forward(d_ln, d_mean, d_rstd, d_x, d_w, d_b, 1, rows, C, 0);  // statistics for the casts alone
    // current scaling: the amax pass between the statistics and the cast
    AmaxScaleDevice amax_pass = amax_scale_alloc(&dev);
    Fp8CurrentScale target = amax_scale_target(&amax_pass, scale, 0);
    int sms = device_sm_count();
    BenchTimer timer;
    bench_timer_init(&timer);
    const int reps = 20;
    enum { COPY, CAST_FUSED, CAST_BF16, PASSES_FUSED, PASSES_SEPARATE, CURRENT_FUSED, CURRENT_SEPARATE, TIMINGS };
    double us[TIMINGS];
    for (int pass = 0; pass < 2; pass++) {  // the first pass untimed: module load, clocks up
        for (int which = 0; which < TIMINGS; which++) {
            bench_start(&timer);
            for (int r = 0; r < reps; r++) {
                switch (which) {
                    case COPY: cudaCheck(cudaMemcpyAsync(d_copy, d_x, n * 2, cudaMemcpyDeviceToDevice)); break;
                    case CAST_FUSED:
                        cudaCheck(layernorm_forward_fp8(d_out, d_out_t, d_x, d_mean, d_rstd, d_w, d_b, rows, C, d_scale,
                                                        d_amax, NULL, FP8_E4M3, 0));
                        break;
                    case CAST_BF16:
                        cudaCheck(fp8_cast_transpose_amax(d_out, d_out_t, d_ln, rows, C, d_scale, d_amax, NULL,
                                                          FP8_E4M3, 0));
                        break;
                    case PASSES_FUSED:
                        residual_layernorm_forward(d_residual, NULL, d_mean, d_rstd, d_x, d_branch, d_w, d_b, 1, rows,
                                                   C, 0);
                        cudaCheck(layernorm_forward_fp8(d_out, d_out_t, d_residual, d_mean, d_rstd, d_w, d_b, rows, C,
                                                        d_scale, d_amax, NULL, FP8_E4M3, 0));
                        break;
                    case CURRENT_FUSED:
                        residual_layernorm_forward(d_residual, NULL, d_mean, d_rstd, d_x, d_branch, d_w, d_b, 1, rows,
                                                   C, 0);
                        cudaCheck(layernorm_forward_amax_scale(d_residual, d_mean, d_rstd, d_w, d_b, rows, C, FP8_E4M3,
                                                               target, amax_pass.workspace, sms, 0));
                        cudaCheck(layernorm_forward_fp8(d_out, d_out_t, d_residual, d_mean, d_rstd, d_w, d_b, rows, C,
                                                        target.scale, d_amax, NULL, FP8_E4M3, 0));
                        break;
                    case CURRENT_SEPARATE:
                        residual_layernorm_forward(d_residual, d_ln, d_mean, d_rstd, d_x, d_branch, d_w, d_b, 1, rows,
                                                   C, 0);
                        cudaCheck(fp8_amax_scale(d_ln, n, FP8_E4M3, target, amax_pass.workspace, sms, 0));
                        cudaCheck(fp8_cast_transpose_amax(d_out, d_out_t, d_ln, rows, C, target.scale, d_amax, NULL,
                                                          FP8_E4M3, 0));
                        break;
                    default:
                        residual_layernorm_forward(d_residual, d_ln, d_mean, d_rstd, d_x, d_branch, d_w, d_b, 1, rows,
                                                   C, 0);
                        cudaCheck(fp8_cast_transpose_amax(d_out, d_out_t, d_ln, rows, C, d_scale, d_amax, NULL,
                                                          FP8_E4M3, 0));
                        break;
                }
            }
            bench_stop(&timer);
            cudaCheck(cudaGetLastError());
            us[which] = 1000.0 * bench_elapsed_ms(&timer) / reps;
        }
    }
    double copy_gbs = 4.0 * n / (us[COPY] * 1e3);             // read 2 + write 2
    double cast_gbs = 4.0 * n / (us[CAST_FUSED] * 1e3);        // 2 bytes in, 1 + 1 out (statistics, parameters: few)
    double passes_gbs = 10.0 * n / (us[PASSES_FUSED] * 1e3);   // statistics pass 4 in, 2 out; the cast 2 in, 1 + 1 out
    printf("%d x %d: device copy %.0f GB/s | layernorm_forward_fp8 %.1f us (%.0f GB/s, %.0f%% of copy), the "
           "cast+transpose of the bf16 output %.1f us, LayerNorm inside / bf16 cast %.2f\n",
           rows, C, copy_gbs, us[CAST_FUSED], cast_gbs, 100 * cast_gbs / copy_gbs, us[CAST_BF16],
           us[CAST_FUSED] / us[CAST_BF16]);
    printf("%d x %d: before qkv and fc, residual + statistics then layernorm_forward_fp8 %.1f us (%.0f GB/s, %.0f%% of "
           "copy), residual + LayerNorm then cast+transpose %.1f us, fused / separate %.2f\n",
           rows, C, us[PASSES_FUSED], passes_gbs, 100 * passes_gbs / copy_gbs, us[PASSES_SEPARATE],
           us[PASSES_FUSED] / us[PASSES_SEPARATE]);
    printf("%d x %d, current scaling: residual + statistics, amax pass, layernorm_forward_fp8 %.1f us; residual + "
           "LayerNorm, amax pass, cast+transpose %.1f us, fused / separate %.2f\n", rows, C, us[CURRENT_FUSED],
           us[CURRENT_SEPARATE], us[CURRENT_FUSED] / us[CURRENT_SEPARATE]);
    device_list_free(&dev);
    return dev_summary("layernorm_fp8", checks, failures);
}
