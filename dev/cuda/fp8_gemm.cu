/*
dev/cuda/fp8_gemm.cu — the cuBLASLt GEMMs of llmc/gemm.cuh on their own, every form the trainer issues, against a CPU
product in double of the very operands the GPU gets (FP8 bytes dequantized, bf16 values widened):
  FP8 (TN, scale_inv pointers):  fprop E4M3 x E4M3 with fast accumulation and the bf16 bias epilogue, at a small k and
                                 at the fc projection's k = 3072; dgrad E4M3 x E5M2; wgrad E4M3 x E5M2 accumulating
                                 into fp32
  BF16:                          fprop TN with the bias epilogue; dgrad NN (dX = dY @ W); wgrad NT (dW += dY^T @ X)
                                 accumulating into fp32
  plans:                         the same problem at 256-byte-aligned and at 16-byte-aligned pointers gets two plans
                                 (the alignment is part of the key), and both are right
  as the trainer calls them:     on a stream of its own, with the scale_invs at 16-byte-strided slots of one float
                                 array (the GPU trainer's copy for its GEMMs); scale pointers 4 or 8 bytes past 16 are
                                 refused in one line before cuBLASLt sees them (it refuses them at the call)
  the algorithm choice:          every form again with 8 of the heuristic's answers timed per problem (-gemm_autotune
                                 8; accumulating ones out of place), still right; the choices through a file into a
                                 fresh context, taken untimed, the same bytes; without a scratch, accumulating ones
                                 not timed
then TFLOP/s of BF16 and FP8 at the d12 shapes (B*T = 64*1024).

Tolerance, per output element, from sum |a_i * b_i| (the magnitude the sum passes through, not the result, which
cancellation can make small), by R2 and R3 of llmc/tolerance.h against the exact sum (the products are exact: 4 x 4
or 3 x 4 significant bits for FP8, 8 x 8 for bf16, within fp32's 24; the scale_invs here are powers of two, so the
dequantizing multiply is exact too):
  FP8 (tolerance_fp8_accumulation): Hopper's FP8 tensor cores add the k products of one instruction (k = 32 for 8-bit
  types) exactly, then align the sum to the accumulator, which keeps about 14 bits (truncating, so up to 2^-13 of the
  partial sum per instruction). Without fast accumulation cuBLASLt promotes the partial sum into fp32 every few
  instructions (4 or fewer, i.e. k = 128), so at most 4 such errors sit in a partial sum before it is added to the fp32
  sum: error <= 4 * 2^-13 * sum|a*b| = 2^-11 * sum|a*b|, and the k / 128 fp32 additions' R2. With fast accumulation
  (fprop) the partial sum is never promoted: one error per instruction, k / 32 of them, error <=
  max(4, k / 32) * 2^-13 * sum|a*b|. These bounds are loose (errors of random sign mostly cancel); a correct GEMM stays
  well inside them and a wrong layout or scale misses by orders of magnitude.
  BF16 (tolerance_sum_tensor_core): products of two bf16 values are exact in fp32 and the tensor cores accumulate in
  fp32, truncating: one fp32 ulp per addition, (k - 1) * 2^-23 * sum|a*b|.
  Epilogue: the bias and, when accumulating, D's old value are added to the fp32 sum on the CUDA cores, one
  round-to-nearest each (tolerance_sum_rn over the 1 + those terms, of sum|a*b| + |bias| + |D|); a bf16 output is
  rounded once more, half an ulp (R3 against the exact value: 2^-8 of it); an fp32 output is that last sum.

Build: make dev/cuda/fp8_gemm     Run: ./dev/cuda/fp8_gemm    (prints one line and exits 1 without a GPU)
*/
#include <cuda_bf16.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../llmc/gemm.cuh"
#include "../../fp8/quantize_cpu.h"
#include "../../llmc/rand.h"
#include "../../llmc/tolerance.h"
#include "bench.h"

static int failures = 0, checks = 0;

static void report(int ok, const char* what) {
    checks++;
    failures += !ok;
    printf("%s %s\n", ok ? "PASS" : "FAIL", what);
}


static const int scalar = CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F;  // one scale_inv per operand

// element i of a host array of type t, as a float
static float element(const void* x, cudaDataType_t t, size_t i) {
    switch (t) {
        case CUDA_R_8F_E4M3: return fp8_to_float(((const uint8_t*)x)[i], FP8_E4M3);
        case CUDA_R_8F_E5M2: return fp8_to_float(((const uint8_t*)x)[i], FP8_E5M2);
        case CUDA_R_16BF: return bf16_to_float(((const uint16_t*)x)[i]);
        default: return ((const float*)x)[i];
    }
}

// n random values in [-amplitude, amplitude) stored as type t (FP8: quantized with `scale`, as a cast would)
static void* random_operand(size_t n, cudaDataType_t t, float amplitude, float scale, Rng* rng) {
    void* out = malloc(n * gemm_type_bytes(t));
    for (size_t i = 0; i < n; i++) {
        float v = (rng_uniform(rng) * 2.0f - 1.0f) * amplitude;
        if (t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2) {
            ((uint8_t*)out)[i] = fp8_from_float(v * scale, t == CUDA_R_8F_E4M3 ? FP8_E4M3 : FP8_E5M2);
        } else if (t == CUDA_R_16BF) {
            ((uint16_t*)out)[i] = bf16_from_float(v);
        } else {
            ((float*)out)[i] = v;
        }
    }
    return out;
}

// `bytes` of host memory on the device, `offset` bytes into a new buffer on `list`
static void* to_device(DeviceList* list, const void* host, size_t bytes, size_t offset) {
    char* d;
    device_alloc(list, &d, bytes + offset);
    cudaCheck(cudaMemcpy(d + offset, host, bytes, cudaMemcpyHostToDevice));
    return d + offset;
}

typedef struct {
    const char* name;
    cudaDataType_t a_type, b_type, out_type;
    int trans_a, trans_b;
    int m, n, k;  // cuBLASLt's column-major terms (see gemm_multiply)
    int bias, accumulate, fast_accum;
} GemmCase;

// One call of gemm_multiply against the CPU. offset: bytes added to every device pointer (0: cudaMalloc's 256-byte
// alignment; 16: what a later layer's slice of a buffer may have). scale_slot: 0 gives each scale_inv its own
// allocation; n > 0 puts A's at index n and B's at 2n of one float array, as the trainer's strided copy of its FP8
// metadata's scale_invs holds them (n a multiple of 4). stream: where the GEMM runs (the trainer's is not the default).
// result: when not NULL, gets the output's bytes (malloc'd; the caller frees them).
static void check_case(const GemmCase* c, size_t offset, int scale_slot, cudaStream_t stream, GemmContext* ctx,
                       Rng* rng, void** result) {
    int fp8 = gemm_type_is_fp8(c->a_type);
    float a_scale = 64.0f, b_scale = c->b_type == CUDA_R_8F_E5M2 ? 4096.0f : 32.0f;
    float a_scale_inv = fp8 ? 1.0f / a_scale : 1.0f, b_scale_inv = fp8 ? 1.0f / b_scale : 1.0f;
    size_t n_a = (size_t)c->m * c->k, n_b = (size_t)c->k * c->n, n_out = (size_t)c->m * c->n;
    void* a = random_operand(n_a, c->a_type, 3.0f, a_scale, rng);
    void* b = random_operand(n_b, c->b_type, c->b_type == CUDA_R_8F_E5M2 ? 0.01f : 3.0f, b_scale, rng);
    void* bias = c->bias ? random_operand((size_t)c->m, CUDA_R_16BF, 1.0f, 1.0f, rng) : NULL;
    void* out0 = random_operand(n_out, c->out_type, 2.0f, 1.0f, rng);  // D before the call (read if accumulate)
    // the reference, in cuBLASLt's terms: D (m, n) = op(A) (m, k) @ op(B) (k, n) [+ bias (m)] [+ D]
    double* want = (double*)malloc(n_out * sizeof(double));
    double* magnitude = (double*)malloc(n_out * sizeof(double));  // sum |a * b| per element
    for (int col = 0; col < c->n; col++) {
        for (int row = 0; row < c->m; row++) {
            double acc = 0.0, mag = 0.0;
            for (int i = 0; i < c->k; i++) {
                size_t ai = c->trans_a ? (size_t)row * c->k + i : (size_t)i * c->m + row;  // A (k, m) or (m, k)
                size_t bi = c->trans_b ? (size_t)i * c->n + col : (size_t)col * c->k + i;  // B (n, k) or (k, n)
                double p = (double)element(a, c->a_type, ai) * element(b, c->b_type, bi);
                acc += p;
                mag += fabs(p);
            }
            double s = (double)a_scale_inv * b_scale_inv;
            size_t d = (size_t)col * c->m + row;
            want[d] = acc * s + (c->bias ? element(bias, CUDA_R_16BF, (size_t)row) : 0.0) +
                      (c->accumulate ? element(out0, c->out_type, d) : 0.0);
            magnitude[d] = mag * s;
        }
    }
    size_t out_bytes = n_out * gemm_type_bytes(c->out_type);
    DeviceList dev = {{NULL}, 0};
    void* d_a = to_device(&dev, a, n_a * gemm_type_bytes(c->a_type), offset);
    void* d_b = to_device(&dev, b, n_b * gemm_type_bytes(c->b_type), offset);
    void* d_bias = c->bias ? to_device(&dev, bias, (size_t)c->m * 2, offset) : NULL;
    void* d_out = to_device(&dev, out0, out_bytes, offset);
    float scale_invs[64];
    for (int i = 0; i < 64; i++) { scale_invs[i] = 1.0f; }
    int a_index = scale_slot, b_index = 2 * scale_slot;
    scale_invs[a_index] = a_scale_inv;
    float* d_a_si = (float*)to_device(&dev, scale_invs, sizeof(scale_invs), 0);
    scale_invs[a_index] = 1.0f;
    scale_invs[b_index] = b_scale_inv;
    float* d_b_si = (float*)to_device(&dev, scale_invs, sizeof(scale_invs), 0);
    // in gemm_multiply's terms: A = the weight (m, k), k-major when transposed; B = the input (n, k), k-major when not
    GemmOutput out = {d_out, c->out_type, d_bias, c->accumulate};
    GemmOperand weight = gemm_operand(d_a, c->a_type, c->m, c->k, c->trans_a, fp8 ? d_a_si + a_index : NULL, scalar);
    GemmOperand inp = gemm_operand(d_b, c->b_type, c->n, c->k, !c->trans_b, fp8 ? d_b_si + b_index : NULL, scalar);
    gemm_multiply(ctx, &out, &weight, &inp, c->fast_accum, stream);
    cudaCheck(cudaDeviceSynchronize());
    void* got = malloc(out_bytes);
    cudaCheck(cudaMemcpy(got, d_out, out_bytes, cudaMemcpyDeviceToHost));
    // R2: the accumulation of the k products against their exact sum, relative to sum|a*b| (see the header comment)
    double accumulation_bound = fp8 ? tolerance_fp8_accumulation(c->k, c->fast_accum)
                                    : tolerance_sum_tensor_core(c->k);
    // R2: the epilogue's additions of the bias and of D's old value, round to nearest, relative to all the terms
    double epilogue_bound = tolerance_sum_rn(1 + c->bias + c->accumulate);
    double worst = 0.0;  // the largest error / tolerance
    size_t worst_at = 0;
    for (size_t d = 0; d < n_out; d++) {
        double g = element(got, c->out_type, d), e = fabs(g - want[d]);
        double terms = magnitude[d] + (c->bias ? fabs(element(bias, CUDA_R_16BF, d % c->m)) : 0.0) +
                       (c->accumulate ? fabs(element(out0, c->out_type, d)) : 0.0);
        double sum_tol = accumulation_bound * magnitude[d] + epilogue_bound * terms;
        // R3: a bf16 output rounds the fp32 result once more, by half an ulp of it (2^-8 relative at most); the
        // 1e-30 lets an exact 0 equal a 0
        double tol = sum_tol + (c->out_type == CUDA_R_16BF ? 0.5 * BF16_ULP * (fabs(want[d]) + sum_tol) : 0.0) + 1e-30;
        if (e / tol > worst || isnan(g)) {
            worst = isnan(g) ? INFINITY : e / tol;
            worst_at = d;
        }
    }
    char scales[64] = "";
    if (scale_slot) {
        snprintf(scales, sizeof(scales), ", scale_invs at +%d/+%d B of one array", 4 * a_index, 4 * b_index);
    }
    char what[320];
    snprintf(what, sizeof(what), "%s (m %d n %d k %d, %s x %s -> %s, %s%s%s%s, pointers +%zu B%s%s): worst error %.3g of "
             "its tolerance (element %zu: got %.6g, want %.6g)", c->name, c->m, c->n, c->k, gemm_type_name(c->a_type),
             gemm_type_name(c->b_type), gemm_type_name(c->out_type), c->trans_a ? "T" : "N", c->trans_b ? "T" : "N",
             c->bias ? ", bias" : "", c->fast_accum && fp8 ? ", fast accum" : "", offset,
             scales, stream ? ", own stream" : "", worst, worst_at,
             element(got, c->out_type, worst_at), want[worst_at]);
    report(worst <= 1.0, what);
    free(a);
    free(b);
    free(bias);
    free(out0);
    free(want);
    free(magnitude);
    if (result) {
        *result = got;
        got = NULL;
    }
    free(got);
    device_list_free(&dev);
}

// The algorithm choice (-gemm_autotune, llmc/gemm.cuh): a context timing 8 of the heuristic's answers per problem,
// with a scratch output for the accumulating ones, still computes every case right (check_case's tolerance; an
// accumulating GEMM timed in place would have added its product several times); each problem was timed; its choices,
// written to a file and read into a fresh context, are taken there untimed and give the same bytes from the same
// operands. Without a scratch the accumulating cases keep the heuristic's first answer, untimed.
static void check_autotune(const GemmCase* cases, int num_cases, Rng* rng) {
    GemmContext tuned, reread, no_scratch;
    gemm_context_init(&tuned);
    gemm_context_init(&reread);
    gemm_context_init(&no_scratch);
    tuned.autotune = reread.autotune = no_scratch.autotune = 8;
    tuned.tune_print = 1;
    size_t scratch_bytes = 0;
    int accumulating = 0;
    for (int i = 0; i < num_cases; i++) {
        size_t bytes = (size_t)cases[i].m * cases[i].n * gemm_type_bytes(cases[i].out_type);
        if (cases[i].accumulate && bytes > scratch_bytes) { scratch_bytes = bytes; }
        accumulating += cases[i].accumulate;
    }
    cudaCheck(cudaMalloc(&tuned.tune_scratch, scratch_bytes));
    tuned.tune_scratch_bytes = scratch_bytes;
    Rng start = *rng;
    void* first[16];
    for (int i = 0; i < num_cases; i++) { check_case(&cases[i], 0, 0, 0, &tuned, rng, &first[i]); }
    char what[320];
    snprintf(what, sizeof(what), "autotune: %d of %d problems timed (the accumulating ones in the scratch)",
             tuned.num_timed, num_cases);
    report(tuned.num_timed == num_cases && tuned.choices.count == num_cases, what);
    char path[] = "/tmp/fp8_gemm_choices_XXXXXX";
    int fd = mkstemp(path);
    char err[512] = "";
    int written = fd >= 0 && gemm_choices_write(path, &tuned.choices, err, sizeof(err)) == 0;
    GemmChoices back;
    int read = written && gemm_choices_read(path, &back, err, sizeof(err)) == 1;
    if (fd >= 0) {
        close(fd);
        unlink(path);
    }
    if (read) {
        reread.choices.count = 0;
        for (int i = 0; i < back.count; i++) { gemm_choices_put(&reread.choices, &back.rows[i]); }
        gemm_choices_free(&back);
    }
    report(read, read ? "autotune: the choices written to a file and read back" : err);
    *rng = start;
    int same_bytes = 1, same_algos = 1;
    for (int i = 0; i < num_cases; i++) {
        void* again = NULL;
        check_case(&cases[i], 0, 0, 0, &reread, rng, &again);
        size_t bytes = (size_t)cases[i].m * cases[i].n * gemm_type_bytes(cases[i].out_type);
        same_bytes &= memcmp(first[i], again, bytes) == 0;
        same_algos &= i < reread.num_plans && i < tuned.num_plans &&
                      memcmp(&reread.plans[i].algo, &tuned.plans[i].algo, sizeof(cublasLtMatmulAlgo_t)) == 0;
        free(again);
        free(first[i]);
    }
    snprintf(what, sizeof(what), "autotune: the choices read back taken untimed (%d timed), the same algorithms, the "
             "same bytes", reread.num_timed);
    report(read && reread.num_timed == 0 && same_algos && same_bytes, what);
    for (int i = 0; i < num_cases; i++) { check_case(&cases[i], 0, 0, 0, &no_scratch, rng, NULL); }
    snprintf(what, sizeof(what), "autotune without a scratch: %d timed, the %d accumulating problems not",
             no_scratch.num_timed, accumulating);
    report(no_scratch.num_timed == num_cases - accumulating, what);
    cudaCheck(cudaFree(tuned.tune_scratch));
    gemm_context_free(&tuned);
    gemm_context_free(&reread);
    gemm_context_free(&no_scratch);
}

int main(void) {
    require_cuda_device("fp8_gemm");
    GemmContext ctx;
    gemm_context_init(&ctx);
    Rng rng;
    rng_seed(&rng, 7);
    // the trainer's calls (train_gpt_fp8.cu, linear_forward / linear_backward), in cuBLASLt's terms: out_cols = m,
    // rows = n; here rows 256, IC 128, OC 192 (and IC 3072 for the fc projection's fprop)
    const GemmCase cases[] = {
        {"fp8 fprop", CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF, 1, 0, 192, 256, 128, 1, 0, 1},
        {"fp8 fprop fcproj k", CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF, 1, 0, 768, 128, 3072, 1, 0, 1},
        {"fp8 dgrad", CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUDA_R_16BF, 1, 0, 128, 256, 192, 0, 0, 0},
        {"fp8 wgrad", CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUDA_R_32F, 1, 0, 128, 192, 256, 0, 1, 0},
        {"bf16 fprop", CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, 1, 0, 192, 256, 128, 1, 0, 0},
        {"bf16 dgrad (NN)", CUDA_R_16BF, CUDA_R_16BF, CUDA_R_16BF, 0, 0, 128, 256, 192, 0, 0, 0},
        {"bf16 wgrad (NT)", CUDA_R_16BF, CUDA_R_16BF, CUDA_R_32F, 0, 1, 128, 192, 256, 0, 1, 0},
    };
    int num_cases = (int)(sizeof(cases) / sizeof(cases[0]));
    for (int i = 0; i < num_cases; i++) { check_case(&cases[i], 0, 0, 0, &ctx, &rng, NULL); }
    // the same problems at 16-byte-aligned pointers: new plans (alignment is in the key), still right
    int plans_before = ctx.num_plans;
    check_case(&cases[0], 16, 0, 0, &ctx, &rng, NULL);
    check_case(&cases[4], 16, 0, 0, &ctx, &rng, NULL);
    char what[160];
    snprintf(what, sizeof(what), "16-byte-aligned pointers got plans of their own (%d plans before, %d after)",
             plans_before, ctx.num_plans);
    report(ctx.num_plans == plans_before + 2, what);
    // as the trainer calls them: on a stream of its own, then the scale_invs at slots of one array 16 bytes apart
    // (the trainer's fp8_gemm_scale_inv, FP8_GEMM_SCALE_INV_STRIDE floats a slot), each FP8 form
    cudaStream_t stream;
    cudaCheck(cudaStreamCreate(&stream));
    check_case(&cases[0], 0, 0, stream, &ctx, &rng, NULL);
    for (int slot = 4; slot <= 8; slot += 4) {
        for (int i = 0; i < 4; i++) { check_case(&cases[i], 0, slot, stream, &ctx, &rng, NULL); }
    }
    cudaCheck(cudaStreamDestroy(stream));
    check_autotune(cases, num_cases, &rng);
    // and a scale pointer 4, 8 or 12 bytes past 16 is refused in one line (gemm_multiply exits with it) before
    // cuBLASLt refuses it at the call; NULL (a scale of 1) and 16-byte-aligned ones pass
    {
        DeviceList cells = {{NULL}, 0};
        float* d_cells;
        device_alloc(&cells, &d_cells, 64 * sizeof(float));
        GemmKey key = gemm_key(d_cells, CUDA_R_16BF, d_cells, CUDA_R_8F_E4M3, 1, d_cells, CUDA_R_8F_E4M3, 0, NULL, 192,
                               256, 128, 0, 1, scalar, scalar);
        char err[640];
        int refused_all = 1;
        for (int misaligned = 1; misaligned < 4; misaligned++) {
            refused_all &= gemm_scale_pointers_check(&key, d_cells + misaligned, d_cells, err, sizeof(err)) != 0;
            refused_all &= gemm_scale_pointers_check(&key, d_cells, d_cells + 4 + misaligned, err, sizeof(err)) != 0;
        }
        int passed_aligned = gemm_scale_pointers_check(&key, d_cells + 4, d_cells + 8, err, sizeof(err)) == 0 &&
                             gemm_scale_pointers_check(&key, NULL, NULL, err, sizeof(err)) == 0;
        gemm_scale_pointers_check(&key, d_cells + 1, d_cells, err, sizeof(err));
        printf("  the refusal reads: %s\n", err);
        report(refused_all && passed_aligned, "FP8 scale pointers: 4/8/12 bytes past 16 refused, 16-byte-aligned and "
                                              "NULL taken");
        device_list_free(&cells);
    }

    // throughput at the d12 shapes, B*T = 65536
    struct { const char* name; int out_cols, k; } shapes[4] = {{"qkv", 2304, 768}, {"attproj", 768, 768}, {"fc", 3072, 768},
                                                              {"fcproj", 768, 3072}};
    int rows = 65536;
    DeviceList dev = {{NULL}, 0};
    void *d_a, *d_b, *d_out;
    device_alloc(&dev, &d_a, (size_t)3072 * 3072 * 2);
    device_alloc(&dev, &d_b, (size_t)rows * 3072 * 2);
    device_alloc(&dev, &d_out, (size_t)rows * 3072 * 2);
    cudaCheck(cudaMemset(d_a, 0x38, (size_t)3072 * 3072 * 2));
    cudaCheck(cudaMemset(d_b, 0x38, (size_t)rows * 3072 * 2));
    float one = 1.0f;
    float* d_one = (float*)to_device(&dev, &one, 4, 0);
    BenchTimer timer;
    bench_timer_init(&timer);
    for (int s = 0; s < 4; s++) {
        double flops = 2.0 * rows * shapes[s].out_cols * shapes[s].k;
        double tflops[2];
        for (int fp8 = 0; fp8 < 2; fp8++) {
            cudaDataType_t t = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
            // out (rows, out_cols) = B (rows, k) @ A (out_cols, k)^T, both k-major (TN)
            GemmOutput out = {d_out, CUDA_R_16BF, NULL, 0};
            GemmOperand weight = gemm_operand(d_a, t, shapes[s].out_cols, shapes[s].k, 1, d_one, scalar);
            GemmOperand inp = gemm_operand(d_b, t, rows, shapes[s].k, 1, d_one, scalar);
            const int reps = 20;
            for (int r = 0; r < 2; r++) { gemm_multiply(&ctx, &out, &weight, &inp, fp8, 0); }  // warm up (and plan)
            bench_start(&timer);
            for (int r = 0; r < reps; r++) { gemm_multiply(&ctx, &out, &weight, &inp, fp8, 0); }
            float ms = bench_stop_ms(&timer);
            tflops[fp8] = flops * reps / (ms * 1e9);
        }
        printf("%-8s %6d x %5d x %5d: BF16 %6.1f TFLOP/s | FP8 %6.1f TFLOP/s | %.2fx\n", shapes[s].name, rows,
               shapes[s].out_cols, shapes[s].k, tflops[0], tflops[1], tflops[1] / tflops[0]);
    }
    bench_timer_free(&timer);
    device_list_free(&dev);
    gemm_context_free(&ctx);
    printf("fp8_gemm: %d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
