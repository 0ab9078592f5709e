/*
dev/cuda/layernorm.cu — LayerNorm, the residual add and the deterministic column sums (llmc/layernorm.cuh,
llmc/cuda_common.cuh) on their own: both ways of reducing a row (one warp per row in registers, where C is a multiple
of 8 up to LAYERNORM_MAX_C, and one block per row elsewhere) against a double-precision CPU reference, then their
times at d12's shape against a device-to-device copy.

Checks (the rules are llmc/tolerance.h's), for C = 768 (3 vectors a lane), 1600 (GPT-2 XL: 7, the last one on some
lanes only), 64 (one vector, on 8 lanes) and 100 (not a multiple of 8: the block-per-row kernels):
  forward    the output is layernorm_output of the GPU's own mean and rstd, bit for bit (R1: the CPU emulates its three
             fp32 roundings); the mean within the fp32 sum's bound of the exact one (R2), the rstd within the bound of
             its two-pass variance (R2) and of rsqrtf; -r 2's recompute writes the forward's bytes (R1)
  backward   dinp (accumulated onto a nonzero one, as the trainer does) within one bf16 rounding plus the fp32 bound of
             its two row sums (R2, R3) of the exact value from the GPU's mean and rstd; the one-warp kernel's 8-column
             parameter partials bit for bit the one-column kernel's (R1: the same sums in the same order); dweight and
             dbias (accumulated) within the fp32 bound of their B*T-term sums (R2)
  column sums  column_partials_reduce bit for bit the CPU's additions in its fixed order (R1)
  residual   bf16(a + b) bit for bit (R1), on the 16-byte path, a pointer 2 bytes off it, and a tail past a multiple
             of 8
  residual + LayerNorm in one pass (residual_layernorm_forward): the residual, the output, the mean and the rstd
             those of residual_forward then layernorm_forward, bit for bit (R1: the same functions of the same values),
             one warp per row and (C 100) the two launchers; with no output (NULL), the same residual and statistics,
             and so from layernorm_forward with no output
Then at 65536 x 768 (d12, B 64): forward and backward, each way, the residual, and the residual with the LayerNorm in
one pass against the two, in us and GB/s against the copy.

Build: make dev/cuda/layernorm     Run: ./dev/cuda/layernorm    (prints one line and exits 1 without a GPU)
*/
#include <cuda_bf16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../llmc/cuda_common.cuh"
#include "../../llmc/cuda_utils.cuh"
#include "../../llmc/layernorm.cuh"
#include "../../llmc/rand.h"
#include "../../llmc/tolerance.h"
#include "cast_check.h"

// n bf16 values ~ N(offset, spread^2): activations with a mean of their own, as a residual stream has
static uint16_t* normal_bf16(size_t n, float offset, float spread, Rng* rng) {
    uint16_t* x = (uint16_t*)malloc(n * sizeof(uint16_t));
    for (size_t i = 0; i < n; i++) { x[i] = bf16_from_float(offset + spread * rng_normal(rng)); }
    return x;
}

static uint16_t* download_bf16_bits(const __nv_bfloat16* d, size_t n) {
    uint16_t* x = (uint16_t*)malloc(n * 2);
    cudaCheck(cudaMemcpy(x, d, n * 2, cudaMemcpyDeviceToHost));
    return x;
}

// layernorm_output's four fp32 roundings on the CPU, then bf16; each stored through a volatile so that no host compiler
// contracts a multiply and an add into an FMA (one rounding fewer)
static uint16_t layernorm_output_cpu(uint16_t x, float mean, float rstd, uint16_t weight, uint16_t bias) {
    volatile float centred = bf16_to_float(x) - mean;
    volatile float norm = centred * rstd;
    volatile float scaled = norm * bf16_to_float(weight);
    volatile float shifted = scaled + bf16_to_float(bias);
    return bf16_from_float(shifted);
}

// One bf16 ulp at |v| (its exponent's): what a rounding to bf16 may move a value by, at most, twice over
static double bf16_ulp_at(double v) {
    int e;
    frexp(fabs(v) > 0.0 ? fabs(v) : 1e-30, &e);
    return ldexp(1.0, e - 8);
}

static void check_shape(int rows, int C, Rng* rng) {
    size_t n = (size_t)rows * C;
    int rows_kernel = C % 8 == 0 && C <= LAYERNORM_MAX_C;
    const char* way = rows_kernel ? "one warp per row" : "one block per row";
    uint16_t* x = normal_bf16(n, 0.3f, 1.7f, rng);
    uint16_t* w = normal_bf16(C, 1.0f, 0.2f, rng);
    uint16_t* b = normal_bf16(C, 0.0f, 0.1f, rng);
    uint16_t* dy = normal_bf16(n, 0.0f, 0.01f, rng);
    uint16_t* dinp0 = normal_bf16(n, 0.0f, 0.02f, rng);  // the residual gradient the backward adds to
    DeviceList dev = {{NULL}, 0};
    __nv_bfloat16 *d_x = upload_bf16(&dev, x, n), *d_w = upload_bf16(&dev, w, C), *d_b = upload_bf16(&dev, b, C);
    __nv_bfloat16 *d_dy = upload_bf16(&dev, dy, n), *d_dinp = upload_bf16(&dev, dinp0, n), *d_out, *d_again;
    float *d_mean, *d_rstd, *d_dw, *d_db, *d_partials, *d_partials1;
    int chunks = column_sum_chunks((size_t)rows);
    device_alloc(&dev, &d_out, n * 2);
    device_alloc(&dev, &d_again, n * 2);
    device_alloc(&dev, &d_mean, rows * sizeof(float));
    device_alloc(&dev, &d_rstd, rows * sizeof(float));
    device_alloc(&dev, &d_dw, C * sizeof(float));
    device_alloc(&dev, &d_db, C * sizeof(float));
    device_alloc(&dev, &d_partials, (size_t)chunks * 2 * C * sizeof(float));
    device_alloc(&dev, &d_partials1, (size_t)chunks * 2 * C * sizeof(float));
    float* dw0 = (float*)malloc(C * sizeof(float));  // an earlier micro-batch's parameter gradients
    float* db0 = (float*)malloc(C * sizeof(float));
    for (int c = 0; c < C; c++) {
        dw0[c] = 0.125f * (float)(c % 5) - 0.25f;
        db0[c] = 0.0625f * (float)(c % 3);
    }
    cudaCheck(cudaMemcpy(d_dw, dw0, C * sizeof(float), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_db, db0, C * sizeof(float), cudaMemcpyHostToDevice));

    layernorm_forward(d_out, d_mean, d_rstd, d_x, d_w, d_b, 1, rows, C, 0);
    layernorm_recompute(d_again, d_x, d_w, d_b, d_mean, d_rstd, 1, rows, C, 0);
    layernorm_backward(d_dinp, d_dw, d_db, d_dy, d_x, d_w, d_mean, d_rstd, 1, rows, C, d_partials, 0);
    uint16_t* out = download_bf16_bits(d_out, n);
    uint16_t* again = download_bf16_bits(d_again, n);
    uint16_t* dinp = download_bf16_bits(d_dinp, n);
    float* mean = (float*)malloc(rows * sizeof(float));
    float* rstd = (float*)malloc(rows * sizeof(float));
    float* dw = (float*)malloc(C * sizeof(float));
    float* db = (float*)malloc(C * sizeof(float));
    cudaCheck(cudaMemcpy(mean, d_mean, rows * sizeof(float), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(rstd, d_rstd, rows * sizeof(float), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(dw, d_dw, C * sizeof(float), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(db, d_db, C * sizeof(float), cudaMemcpyDeviceToHost));

    // forward, row by row, against the exact statistics and the GPU's own
    size_t output_off = 0, mean_off = 0, rstd_off = 0, dinp_off = 0;
    double worst_mean = 0.0, worst_rstd = 0.0, worst_dinp = 0.0;
    double* dw_exact = (double*)calloc(C, sizeof(double));
    double* db_exact = (double*)calloc(C, sizeof(double));
    double* dw_abs = (double*)calloc(C, sizeof(double));
    double* db_abs = (double*)calloc(C, sizeof(double));
    for (int r = 0; r < rows; r++) {
        const uint16_t* xr = x + (size_t)r * C;
        double sum = 0.0, sum_abs = 0.0;
        for (int c = 0; c < C; c++) {
            sum += bf16_to_float(xr[c]);
            sum_abs += fabs(bf16_to_float(xr[c]));
        }
        double mu = sum / C;
        // R2: the fp32 sum of C terms, then one rounding of the division
        double mean_bound = tolerance_sum_rn(C) * sum_abs / C + FP32_ROUNDOFF * fabs(mu);
        double e = fabs(mean[r] - mu);
        mean_off += e > mean_bound;
        worst_mean = fmax(worst_mean, e / mean_bound);
        double var = 0.0;
        for (int c = 0; c < C; c++) { var += (bf16_to_float(xr[c]) - mu) * (bf16_to_float(xr[c]) - mu); }
        var /= C;
        double exact_rstd = 1.0 / sqrt(var + 1e-5);
        // R2: the variance's fp32 sum of C positive terms, each with two roundings (the difference, the square: 3
        // roundoffs of the square), and the mean's error squared (second order, with the bound above), one rounding
        // each of / C and + 1e-5; the square root halves a relative error; rsqrtf adds at most 2 fp32 ulps (CUDA's
        // documented bound)
        double var_rel = tolerance_sum_rn(C) + 5.0 * FP32_ROUNDOFF + mean_bound * mean_bound / (var + 1e-5);
        double rstd_bound = (0.5 * var_rel + 2.0 * FP32_ULP) * exact_rstd;
        e = fabs(rstd[r] - exact_rstd);
        rstd_off += e > rstd_bound;
        worst_rstd = fmax(worst_rstd, e / rstd_bound);
        for (int c = 0; c < C; c++) {
            size_t i = (size_t)r * C + c;
            output_off += out[i] != layernorm_output_cpu(xr[c], mean[r], rstd[r], w[c], b[c]);
        }
        // backward from the GPU's mean and rstd (what both sides' formulas read), in double
        double m = mean[r], s = rstd[r], dnorm_sum = 0.0, dnorm_norm_sum = 0.0, dnorm_abs = 0.0, dnorm_norm_abs = 0.0;
        for (int c = 0; c < C; c++) {
            size_t i = (size_t)r * C + c;
            double norm = (bf16_to_float(xr[c]) - m) * s, d = bf16_to_float(dy[i]), dnorm = bf16_to_float(w[c]) * d;
            dnorm_sum += dnorm;
            dnorm_norm_sum += dnorm * norm;
            dnorm_abs += fabs(dnorm);
            dnorm_norm_abs += fabs(dnorm * norm);
            dw_exact[c] += norm * d;
            db_exact[c] += d;
            dw_abs[c] += fabs(norm * d);
            db_abs[c] += fabs(d);
        }
        double dnorm_mean = dnorm_sum / C, dnorm_norm_mean = dnorm_norm_sum / C;
        for (int c = 0; c < C; c++) {
            size_t i = (size_t)r * C + c;
            double norm = (bf16_to_float(xr[c]) - m) * s, dnorm = bf16_to_float(w[c]) * bf16_to_float(dy[i]);
            double dx = (dnorm - dnorm_mean - norm * dnorm_norm_mean) * s;
            double want = bf16_to_float(dinp0[i]) + dx;
            // R2 for the two row means (C terms each, each term with its own few roundings: norm's two, the products',
            // 4 roundoffs; then /C), R3's few fp32 roundings of the element's own terms, then the bf16 rounding of the
            // sum (R3: half an ulp, one ulp where the two sides straddle a midpoint)
            double row_sums = tolerance_sum_rn(C) + 4.0 * FP32_ROUNDOFF;
            double own_terms = fabs(dnorm) + fabs(dnorm_mean) + fabs(norm * dnorm_norm_mean);
            double fp32_bound = s * (row_sums * (dnorm_abs + fabs(norm) * dnorm_norm_abs) / C +
                                     8.0 * FP32_ROUNDOFF * own_terms) +
                                8.0 * FP32_ROUNDOFF * fabs(want);
            double bound = bf16_ulp_at(want) + fp32_bound;
            double got = bf16_to_float(dinp[i]);
            e = fabs(got - want);
            dinp_off += e > bound;
            worst_dinp = fmax(worst_dinp, e / bound);
        }
    }
    char what[240];
    snprintf(what, sizeof(what), "%d x %d (%s): output layernorm_output of the GPU's mean and rstd, bit for bit (R1)",
             rows, C, way);
    report(output_off == 0, what);
    if (output_off) { printf("  %zu elements differ\n", output_off); }
    snprintf(what, sizeof(what), "%d x %d (%s): mean within the fp32 sum's bound (R2), worst %.2f of it", rows, C, way,
             worst_mean);
    report(mean_off == 0, what);
    snprintf(what, sizeof(what), "%d x %d (%s): rstd within its variance's bound and rsqrtf's (R2), worst %.2f of it",
             rows, C, way, worst_rstd);
    report(rstd_off == 0, what);
    snprintf(what, sizeof(what), "%d x %d (%s): -r 2's recompute writes the forward's bytes (R1)", rows, C, way);
    report(memcmp(out, again, n * 2) == 0, what);
    snprintf(what, sizeof(what), "%d x %d (%s): dinp (+= onto a nonzero one) within one bf16 rounding and the fp32 "
             "sums' bound (R2, R3), worst %.2f of it", rows, C, way, worst_dinp);
    report(dinp_off == 0, what);

    // the parameter gradients: exact sums over the rows, accumulated onto dw0, db0 (R2: B*T terms, and the two or three
    // fp32 roundings of each term)
    size_t param_off = 0;
    double worst_param = 0.0;
    for (int c = 0; c < C; c++) {
        double bounds[2] = {(tolerance_sum_rn(rows + 1) + 4.0 * FP32_ROUNDOFF) * (dw_abs[c] + fabs(dw0[c])),
                            tolerance_sum_rn(rows + 1) * (db_abs[c] + fabs(db0[c]))};
        double errors[2] = {fabs(dw[c] - (dw0[c] + dw_exact[c])), fabs(db[c] - (db0[c] + db_exact[c]))};
        for (int k = 0; k < 2; k++) {
            param_off += errors[k] > bounds[k];
            worst_param = fmax(worst_param, errors[k] / fmax(bounds[k], 1e-30));
        }
    }
    snprintf(what, sizeof(what),
             "%d x %d (%s): dweight, dbias (+= onto earlier ones) within the fp32 sums' bound (R2), worst %.2f of it",
             rows, C, way, worst_param);
    report(param_off == 0, what);
    if (rows_kernel) {
        // the 8-column partials against the one-column kernel's on the same tensors (R1)
        dim3 grid1(blocks_for(C, 256), chunks);
        layernorm_param_backward_partials_kernel<<<grid1, 256>>>(d_partials1, d_dy, d_x, d_mean, d_rstd, rows, C);
        dim3 grid8(blocks_for(C / 8, 128), chunks);
        layernorm_param_backward_partials8_kernel<<<grid8, 128>>>(d_partials, d_dy, d_x, d_mean, d_rstd, rows, C);
        cudaCheck(cudaGetLastError());
        size_t count = (size_t)chunks * 2 * C;
        float* p1 = (float*)malloc(count * sizeof(float));
        float* p8 = (float*)malloc(count * sizeof(float));
        cudaCheck(cudaMemcpy(p1, d_partials1, count * sizeof(float), cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(p8, d_partials, count * sizeof(float), cudaMemcpyDeviceToHost));
        snprintf(what, sizeof(what),
                 "%d x %d: the 8-column parameter partials the one-column kernel's, bit for bit (R1)", rows, C);
        report(floats_identical(p8, p1, count), what);
        free(p1);
        free(p8);
    }

    free(x);
    free(w);
    free(b);
    free(dy);
    free(dinp0);
    free(out);
    free(again);
    free(dinp);
    free(mean);
    free(rstd);
    free(dw);
    free(db);
    free(dw0);
    free(db0);
    free(dw_exact);
    free(db_exact);
    free(dw_abs);
    free(db_abs);
    device_list_free(&dev);
}

// column_partials_reduce on partials (chunks, stride) against the CPU's additions in its order: per column, slice y
// adds chunks y, y + COLUMN_REDUCE_SLICES, ... from 0.0f; the slices are added in order of y; the total onto out.
static void check_column_reduce(int chunks, int n, int stride, Rng* rng) {
    size_t count = (size_t)chunks * stride;
    float* partials = (float*)malloc(count * sizeof(float));
    for (size_t i = 0; i < count; i++) { partials[i] = (rng_uniform(rng) - 0.5f) * ldexpf(1.0f, (int)(i % 13) - 6); }
    float* out0 = (float*)malloc(n * sizeof(float));
    for (int c = 0; c < n; c++) { out0[c] = 0.5f * (float)(c % 4); }
    float *d_partials, *d_out;
    DeviceList dev = {{NULL}, 0};
    device_alloc(&dev, &d_partials, count * sizeof(float));
    device_alloc(&dev, &d_out, n * sizeof(float));
    cudaCheck(cudaMemcpy(d_partials, partials, count * sizeof(float), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_out, out0, n * sizeof(float), cudaMemcpyHostToDevice));
    column_partials_reduce(d_out, d_partials, chunks, stride, n, 0);
    float* got = (float*)malloc(n * sizeof(float));
    cudaCheck(cudaMemcpy(got, d_out, n * sizeof(float), cudaMemcpyDeviceToHost));
    float* want = (float*)malloc(n * sizeof(float));
    for (int c = 0; c < n; c++) {
        float total = 0.0f;
        for (int y = 0; y < COLUMN_REDUCE_SLICES; y++) {
            float slice = 0.0f;
            for (int k = y; k < chunks; k += COLUMN_REDUCE_SLICES) { slice += partials[(size_t)k * stride + c]; }
            total += slice;
        }
        want[c] = out0[c] + total;
    }
    char what[160];
    snprintf(what, sizeof(what), "column_partials_reduce, %d chunks of %d columns (stride %d): the CPU's additions in "
             "its order, bit for bit (R1)", chunks, n, stride);
    report(floats_identical(got, want, n), what);
    free(partials);
    free(out0);
    free(got);
    free(want);
    device_list_free(&dev);
}

// residual_forward: bf16(a + b) element by element (R1), from `offset` elements into the buffers (1: the 2-byte-off
// path), n elements (a tail past a multiple of 8 when n is not one)
static void check_residual(size_t n, int offset, Rng* rng) {
    uint16_t* a = normal_bf16(n + offset, 0.0f, 3.0f, rng);
    uint16_t* b = normal_bf16(n + offset, 0.0f, 0.5f, rng);
    DeviceList dev = {{NULL}, 0};
    __nv_bfloat16 *d_a = upload_bf16(&dev, a, n + offset), *d_b = upload_bf16(&dev, b, n + offset), *d_out;
    device_alloc(&dev, &d_out, (n + offset) * 2);
    residual_forward(d_out + offset, d_a + offset, d_b + offset, n, 0);
    uint16_t* got = download_bf16_bits(d_out, n + offset);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        off += got[offset + i] != bf16_from_float(bf16_to_float(a[offset + i]) + bf16_to_float(b[offset + i]));
    }
    char what[160];
    snprintf(what, sizeof(what), "residual_forward, %zu elements at offset %d (%s): bf16(a + b) bit for bit (R1)", n,
             offset, offset ? "element by element" : "16-byte vectors");
    report(off == 0, what);
    free(a);
    free(b);
    free(got);
    device_list_free(&dev);
}

// residual_layernorm_forward (one pass where one warp per row fits, else its two launchers) against residual_forward
// then layernorm_forward on the same inputs: every output bit for bit (R1); then with no LayerNorm output, the same
// residual and statistics, as layernorm_forward with no output gives from the residual.
static void check_residual_layernorm(int rows, int C, Rng* rng) {
    size_t n = (size_t)rows * C;
    const char* way = C % 8 == 0 && C <= LAYERNORM_MAX_C ? "one pass, one warp per row" : "the two launchers";
    uint16_t* a = normal_bf16(n, 0.3f, 1.7f, rng);
    uint16_t* b = normal_bf16(n, 0.0f, 0.4f, rng);
    uint16_t* w = normal_bf16(C, 1.0f, 0.2f, rng);
    uint16_t* bias = normal_bf16(C, 0.0f, 0.1f, rng);
    DeviceList dev = {{NULL}, 0};
    __nv_bfloat16 *d_a = upload_bf16(&dev, a, n), *d_b = upload_bf16(&dev, b, n), *d_w = upload_bf16(&dev, w, C);
    __nv_bfloat16* d_bias = upload_bf16(&dev, bias, C);
    // [0]: residual_forward + layernorm_forward, [1]: residual_layernorm_forward, [2]: the same with no output,
    // [3]: layernorm_forward with no output on [0]'s residual
    __nv_bfloat16 *d_residual[3], *d_out[2];
    float *d_mean[4], *d_rstd[4];
    for (int k = 0; k < 4; k++) {  // each filled with bytes a missed row would leave (0xA5A5: a bf16 and a float)
        if (k < 3) {
            cudaCheck(cudaMalloc(&d_residual[k], n * 2));
            cudaCheck(cudaMemset(d_residual[k], 0xA5, n * 2));
        }
        if (k < 2) {
            cudaCheck(cudaMalloc(&d_out[k], n * 2));
            cudaCheck(cudaMemset(d_out[k], 0xA5, n * 2));
        }
        cudaCheck(cudaMalloc(&d_mean[k], rows * sizeof(float)));
        cudaCheck(cudaMalloc(&d_rstd[k], rows * sizeof(float)));
        cudaCheck(cudaMemset(d_mean[k], 0xA5, rows * sizeof(float)));
        cudaCheck(cudaMemset(d_rstd[k], 0xA5, rows * sizeof(float)));
    }
    residual_forward(d_residual[0], d_a, d_b, n, 0);
    layernorm_forward(d_out[0], d_mean[0], d_rstd[0], d_residual[0], d_w, d_bias, 1, rows, C, 0);
    residual_layernorm_forward(d_residual[1], d_out[1], d_mean[1], d_rstd[1], d_a, d_b, d_w, d_bias, 1, rows, C, 0);
    residual_layernorm_forward(d_residual[2], NULL, d_mean[2], d_rstd[2], d_a, d_b, d_w, d_bias, 1, rows, C, 0);
    layernorm_forward(NULL, d_mean[3], d_rstd[3], d_residual[0], d_w, d_bias, 1, rows, C, 0);
    cudaCheck(cudaGetLastError());
    uint16_t *residual[3], *out[2];
    float *mean[4], *rstd[4];
    for (int k = 0; k < 4; k++) {
        if (k < 3) { residual[k] = download_bf16_bits(d_residual[k], n); }
        if (k < 2) { out[k] = download_bf16_bits(d_out[k], n); }
        mean[k] = (float*)malloc(rows * sizeof(float));
        rstd[k] = (float*)malloc(rows * sizeof(float));
        cudaCheck(cudaMemcpy(mean[k], d_mean[k], rows * sizeof(float), cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(rstd[k], d_rstd[k], rows * sizeof(float), cudaMemcpyDeviceToHost));
    }
    size_t residual_off = 0;
    for (size_t i = 0; i < n; i++) { residual_off += residual[0][i] != bf16_from_float(bf16_to_float(a[i]) + bf16_to_float(b[i])); }
    char what[240];
    snprintf(what, sizeof(what), "%d x %d: residual_forward bf16(a + b) bit for bit (R1), the reference below", rows, C);
    report(residual_off == 0, what);
    snprintf(what, sizeof(what), "%d x %d, residual_layernorm_forward (%s): residual, output, mean, rstd those of "
             "residual_forward then layernorm_forward, bit for bit (R1)", rows, C, way);
    report(memcmp(residual[1], residual[0], n * 2) == 0 && memcmp(out[1], out[0], n * 2) == 0 &&
               floats_identical(mean[1], mean[0], rows) && floats_identical(rstd[1], rstd[0], rows),
           what);
    snprintf(what, sizeof(what), "%d x %d, residual_layernorm_forward with no output (%s): the same residual, mean "
             "and rstd (R1)", rows, C, way);
    report(memcmp(residual[2], residual[0], n * 2) == 0 && floats_identical(mean[2], mean[0], rows) &&
               floats_identical(rstd[2], rstd[0], rows),
           what);
    snprintf(what, sizeof(what), "%d x %d, layernorm_forward with no output: the same mean and rstd (R1)", rows, C);
    report(floats_identical(mean[3], mean[0], rows) && floats_identical(rstd[3], rstd[0], rows), what);
    free(a);
    free(b);
    free(w);
    free(bias);
    for (int k = 0; k < 4; k++) {
        if (k < 3) {
            free(residual[k]);
            cudaCheck(cudaFree(d_residual[k]));
        }
        if (k < 2) {
            free(out[k]);
            cudaCheck(cudaFree(d_out[k]));
        }
        free(mean[k]);
        free(rstd[k]);
        cudaCheck(cudaFree(d_mean[k]));
        cudaCheck(cudaFree(d_rstd[k]));
    }
    device_list_free(&dev);
}

int main(void) {
    require_cuda_device("layernorm");
    Rng rng;
    rng_seed(&rng, 61);
    check_shape(256, 768, &rng);
    check_shape(128, 1600, &rng);
    check_shape(192, 64, &rng);
    check_shape(128, 100, &rng);
    check_column_reduce(1024, 768, 1536, &rng);
    check_column_reduce(37, 100, 100, &rng);
    check_residual(8000, 0, &rng);
    check_residual(8005, 0, &rng);
    check_residual(8000, 1, &rng);
    check_residual_layernorm(256, 768, &rng);
    check_residual_layernorm(100, 1600, &rng);  // the last block's warps past row 100 idle
    check_residual_layernorm(128, 64, &rng);
    check_residual_layernorm(128, 100, &rng);  // the two launchers themselves: the block kernel with no output

    if (bench_emulated("layernorm")) { return dev_summary("layernorm", checks, failures); }

    // times at d12, B 64: each way of each pass, called as the launchers call them
    int rows = 65536, C = 768, chunks = column_sum_chunks((size_t)rows);
    size_t n = (size_t)rows * C;
    uint16_t* x = normal_bf16(n, 0.3f, 1.7f, &rng);
    DeviceList dev = {{NULL}, 0};
    __nv_bfloat16 *d_x = upload_bf16(&dev, x, n), *d_dy = upload_bf16(&dev, x, n), *d_out, *d_dinp, *d_copy, *d_w, *d_b;
    free(x);
    uint16_t* w = normal_bf16(C, 1.0f, 0.2f, &rng);
    d_w = upload_bf16(&dev, w, C);
    d_b = upload_bf16(&dev, w, C);
    free(w);
    float *d_mean, *d_rstd, *d_dw, *d_db, *d_partials;
    device_alloc(&dev, &d_out, n * 2);
    device_alloc(&dev, &d_dinp, n * 2);
    device_alloc(&dev, &d_copy, n * 2);
    cudaCheck(cudaMemset(d_dinp, 0, n * 2));
    device_alloc(&dev, &d_mean, rows * sizeof(float));
    device_alloc(&dev, &d_rstd, rows * sizeof(float));
    device_alloc(&dev, &d_dw, C * sizeof(float));
    device_alloc(&dev, &d_db, C * sizeof(float));
    device_alloc(&dev, &d_partials, (size_t)chunks * 2 * C * sizeof(float));
    cudaCheck(cudaMemset(d_dw, 0, C * sizeof(float)));
    cudaCheck(cudaMemset(d_db, 0, C * sizeof(float)));
    BenchTimer timer;
    bench_timer_init(&timer);
    const int reps = 20;
    unsigned int warp_blocks = blocks_for((size_t)rows, LAYERNORM_ROWS_PER_BLOCK);
    dim3 grid1(blocks_for(C, 256), chunks), grid8(blocks_for(C / 8, 128), chunks);
    __nv_bfloat16* d_residual;
    device_alloc(&dev, &d_residual, n * 2);
    enum { COPY, FWD_WARP, FWD_BLOCK, BWD_WARP, BWD_BLOCK, PARTIALS8, PARTIALS1, REDUCE, RESIDUAL, RESIDUAL_LN, TIMINGS };
    double us[TIMINGS];
    for (int pass = 0; pass < 2; pass++) {  // the first untimed: module load, clocks up
        for (int which = 0; which < TIMINGS; which++) {
            bench_start(&timer);
            for (int r = 0; r < reps; r++) {
                switch (which) {
                    case COPY: cudaCheck(cudaMemcpyAsync(d_copy, d_x, n * 2, cudaMemcpyDeviceToDevice)); break;
                    case FWD_WARP:
                        layernorm_forward_rows_kernel<3><<<warp_blocks, 256>>>(d_out, d_mean, d_rstd, d_x, d_w, d_b,
                                                                                rows, C);
                        break;
                    case FWD_BLOCK:
                        layernorm_forward_kernel<<<rows, 256>>>(d_out, d_mean, d_rstd, d_x, d_w, d_b, C);
                        break;
                    case BWD_WARP:
                        layernorm_backward_rows_kernel<3><<<warp_blocks, 256>>>(d_dinp, d_dy, d_x, d_w, d_mean, d_rstd,
                                                                                 rows, C);
                        break;
                    case BWD_BLOCK:
                        layernorm_backward_kernel<<<rows, 256>>>(d_dinp, d_dy, d_x, d_w, d_mean, d_rstd, C);
                        break;
                    case PARTIALS8:
                        layernorm_param_backward_partials8_kernel<<<grid8, 128>>>(d_partials, d_dy, d_x, d_mean, d_rstd,
                                                                                  rows, C);
                        break;
                    case PARTIALS1:
                        layernorm_param_backward_partials_kernel<<<grid1, 256>>>(d_partials, d_dy, d_x, d_mean, d_rstd,
                                                                                 rows, C);
                        break;
                    case REDUCE: column_partials_reduce(d_dw, d_partials, chunks, 2 * C, C, 0); break;
                    case RESIDUAL: residual_forward(d_out, d_x, d_dy, n, 0); break;
                    default:
                        residual_layernorm_forward(d_residual, d_out, d_mean, d_rstd, d_x, d_dy, d_w, d_b, 1, rows, C, 0);
                        break;
                }
            }
            bench_stop(&timer);
            cudaCheck(cudaGetLastError());
            us[which] = 1000.0 * bench_elapsed_ms(&timer) / reps;
        }
    }
    // GB/s: bytes read and written an element over the time (copy 2 + 2, forward 2 + 2, backward 6 + 2, residual 4 + 2,
    // residual with the LayerNorm 4 + 2 + 2)
    double copy_gbs = 4.0 * n / (us[COPY] * 1e3);
    double forward_gbs = 4.0 * n / (us[FWD_WARP] * 1e3), backward_gbs = 8.0 * n / (us[BWD_WARP] * 1e3);
    double residual_gbs = 6.0 * n / (us[RESIDUAL] * 1e3), residual_ln_gbs = 8.0 * n / (us[RESIDUAL_LN] * 1e3);
    printf("%d x %d: device copy %.0f GB/s | forward: one warp per row %.1f us (%.0f GB/s, %.0f%% of copy), one block "
           "per row %.1f us (%.2fx)\n",
           rows, C, copy_gbs, us[FWD_WARP], forward_gbs, 100 * forward_gbs / copy_gbs, us[FWD_BLOCK],
           us[FWD_BLOCK] / us[FWD_WARP]);
    printf("%d x %d: backward: one warp per row %.1f us (%.0f GB/s, %.0f%% of copy), one block per row %.1f us (%.2fx) | "
           "parameter partials 8 columns a thread %.1f us, 1 column %.1f us (%.2fx) | column sums %.1f us\n",
           rows, C, us[BWD_WARP], backward_gbs, 100 * backward_gbs / copy_gbs, us[BWD_BLOCK], us[BWD_BLOCK] / us[BWD_WARP],
           us[PARTIALS8], us[PARTIALS1], us[PARTIALS1] / us[PARTIALS8], us[REDUCE]);
    printf("%d x %d: residual_forward %.1f us (%.0f GB/s, %.0f%% of copy) | residual_layernorm_forward %.1f us (%.0f "
           "GB/s, %.0f%% of copy), residual_forward + layernorm_forward %.1f us, one pass / two %.2f\n",
           rows, C, us[RESIDUAL], residual_gbs, 100 * residual_gbs / copy_gbs, us[RESIDUAL_LN], residual_ln_gbs,
           100 * residual_ln_gbs / copy_gbs, us[RESIDUAL] + us[FWD_WARP], us[RESIDUAL_LN] / (us[RESIDUAL] + us[FWD_WARP]));
    device_list_free(&dev);
    return dev_summary("layernorm", checks, failures);
}
