/*
dev/cuda/classifier.cu — the fused classifier (llmc/fused_classifier.cuh: softmax, cross-entropy and the logits'
gradient in place) on its own, both kernels against a double-precision CPU reference, then their times at GPT-2's
vocabulary against a device-to-device copy.

Checks (the rules are llmc/tolerance.h's), for V 50257 in Vp 50304 (GPT-2's: the last real vector holds one real
column, five vectors are padding), V 8000 in 8192 (4 vectors a thread), V 1000 in 1024 and V 37 in 40 (a vector a
thread at most, some threads none), and Vp 1001 (not a multiple of 8: the element-by-element kernel), on rows of
normal logits and rows with one logit far above the rest, the target sometimes the largest logit. A thread's online
statistics rescale whenever a vector holds a larger logit than it has seen, so only the shapes with several vectors a
thread (50304, 8192) exercise the rescales; the spikes make them large. Bounds:
  losses     within the bound of the fp32 sum of V exps (R2, k the longest chain of additions a term goes through: its
             thread's, then the merges), expf's 2 ulps a term, each rescale and merge of the online statistics (R3: a
             multiply and an expf each), and logf's ulp
  gradient   each element within one bf16 rounding (R3) plus the fp32 bound of p = exp(x - max) / sum (the same
             terms); the padded columns exactly 0
  evaluation without the gradient, the logits left exactly as they were
Then at 16384 x 50304 (a quarter of d12's B 64 at GPT-2's vocabulary): each kernel in us, and its GB/s (the vector
kernel reads the logits twice and writes them once) against the copy.

Build: make dev/cuda/classifier     Run: ./dev/cuda/classifier    (prints one line and exits 1 without a GPU)
*/
#include <cuda_bf16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../llmc/cuda_common.cuh"
#include "../../llmc/cuda_utils.cuh"
#include "../../llmc/fused_classifier.cuh"
#include "../../llmc/rand.h"
#include "../../llmc/tolerance.h"
#include "cast_check.h"

// One bf16 ulp at |v| (its exponent's): a rounding to bf16 moves a value by at most half of it, two sides that
// straddle a midpoint by at most one
static double bf16_ulp_at(double v) {
    int e;
    frexp(fabs(v) > 0.0 ? fabs(v) : 1e-30, &e);
    return ldexp(1.0, e - 8);
}

// rows x Vp logits: normal (0, 2) in [0, V), a spike of 30 at a random column every fourth row (row % 4 == 1), the
// padding columns [V, Vp) whatever they hold (here large values, which must count for nothing); targets in [0, V),
// every third one the row's largest logit
static void make_logits(uint16_t* logits, int* targets, int rows, int V, int Vp, Rng* rng) {
    for (int r = 0; r < rows; r++) {
        uint16_t* l = logits + (size_t)r * Vp;
        for (int c = 0; c < Vp; c++) { l[c] = bf16_from_float(c < V ? 2.0f * rng_normal(rng) : 99.0f); }
        if (r % 4 == 1) { l[rng_next_u64(rng) % V] = bf16_from_float(30.0f); }
        int target = (int)(rng_next_u64(rng) % V);
        if (r % 3 == 0) {
            for (int c = 0; c < V; c++) {
                if (bf16_to_float(l[c]) > bf16_to_float(l[target])) { target = c; }
            }
        }
        targets[r] = target;
    }
}

static void check_shape(int rows, int V, int Vp, Rng* rng) {
    size_t n = (size_t)rows * Vp;
    uint16_t* logits = (uint16_t*)malloc(n * 2);
    int* targets = (int*)malloc(rows * sizeof(int));
    make_logits(logits, targets, rows, V, Vp, rng);
    floatX* d_logits;
    float* d_losses;
    int* d_targets;
    DeviceList dev = {{NULL}, 0};
    device_alloc(&dev, &d_logits, n * 2);
    device_alloc(&dev, &d_losses, rows * sizeof(float));
    device_alloc(&dev, &d_targets, rows * sizeof(int));
    cudaCheck(cudaMemcpy(d_logits, logits, n * 2, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_targets, targets, rows * sizeof(int), cudaMemcpyHostToDevice));
    const float dloss = 1.0f / 65536.0f;  // 1 / (B*T) at d12 B 64, as the trainer folds it in
    int vector_kernel = Vp % 8 == 0;
    const char* way = vector_kernel ? "16-byte vectors" : "element by element";
    char what[240];

    // evaluation: the losses alone, the logits untouched
    fused_classifier(d_logits, d_losses, 0.0f, d_targets, 1, rows, V, Vp, 0, 0);
    uint16_t* after = (uint16_t*)malloc(n * 2);
    cudaCheck(cudaMemcpy(after, d_logits, n * 2, cudaMemcpyDeviceToHost));
    float* eval_losses = (float*)malloc(rows * sizeof(float));
    cudaCheck(cudaMemcpy(eval_losses, d_losses, rows * sizeof(float), cudaMemcpyDeviceToHost));
    snprintf(what, sizeof(what), "%d x %d (V %d, %s): an evaluation leaves the logits exactly as they were", rows, Vp,
             V, way);
    report(memcmp(after, logits, n * 2) == 0, what);
    // training: the losses again and the gradient over the logits
    fused_classifier(d_logits, d_losses, dloss, d_targets, 1, rows, V, Vp, 1, 0);
    float* losses = (float*)malloc(rows * sizeof(float));
    cudaCheck(cudaMemcpy(losses, d_losses, rows * sizeof(float), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(after, d_logits, n * 2, cudaMemcpyDeviceToHost));
    snprintf(what, sizeof(what), "%d x %d (V %d, %s): training's losses are evaluation's, bit for bit (R1)", rows, Vp,
             V, way);
    report(memcmp(losses, eval_losses, rows * sizeof(float)) == 0, what);

    // the rescales and merges a thread's sum goes through, at most: one per vector it reads, then the warp's five
    // shuffle merges and the block's (log2 of its warps); each a multiply by an expf (2 ulps) of a difference (R3).
    // And the additions a term goes through, at most: its thread's chain (8 a vector, or one an element for the
    // element-by-element kernel), then the merges: R2 holds for any order with the longest chain as k.
    int per_thread = vector_kernel ? (Vp / 8 + CLASSIFIER_BLOCK_SIZE - 1) / CLASSIFIER_BLOCK_SIZE : (V + 511) / 512;
    int merges = per_thread + 5 + (vector_kernel ? 3 : 4);
    int chain = (vector_kernel ? 8 * per_thread : per_thread) + 5 + (vector_kernel ? 3 : 4);
    size_t loss_off = 0, grad_off = 0, padding_off = 0;
    double worst_loss = 0.0, worst_grad = 0.0;
    for (int r = 0; r < rows; r++) {
        const uint16_t* l = logits + (size_t)r * Vp;
        double m = -INFINITY;
        for (int c = 0; c < V; c++) { m = fmax(m, bf16_to_float(l[c])); }
        double sum = 0.0, max_gap = 0.0;
        for (int c = 0; c < V; c++) {
            sum += exp(bf16_to_float(l[c]) - m);
            max_gap = fmax(max_gap, m - bf16_to_float(l[c]));
        }
        // R2 and R3: the fp32 sum of V positive terms; a term's expf (2 ulps) of a difference rounded once (moving
        // exp by up to its roundoff times the gap); the rescales and merges
        double term_rel = 2.0 * FP32_ULP + FP32_ROUNDOFF * fmin(max_gap, 104.0);
        double sum_rel = tolerance_sum_rn(chain + 1) + term_rel + merges * (2.0 * FP32_ULP + 2.0 * FP32_ROUNDOFF);
        double want_loss = log(sum) + m - bf16_to_float(l[targets[r]]);
        // log's error: the sum's relative error, logf's ulp, and the two additions' roundings
        double loss_bound = sum_rel + FP32_ULP * fabs(log(sum)) +
                            2.0 * FP32_ROUNDOFF * (fabs(log(sum)) + fabs(m) + fabs(bf16_to_float(l[targets[r]])));
        double e = fabs(losses[r] - want_loss);
        loss_off += e > loss_bound;
        worst_loss = fmax(worst_loss, e / loss_bound);
        for (int c = 0; c < Vp; c++) {
            double got = bf16_to_float(after[(size_t)r * Vp + c]);
            if (c >= V) {
                padding_off += got != 0.0;
                continue;
            }
            double p = exp(bf16_to_float(l[c]) - m) / sum;
            double want = (p - (c == targets[r] ? 1.0 : 0.0)) * dloss;  // the gradient, exactly
            // p within its expf, the sum's bound and the division; then the subtraction and the product (R3); and
            // below bf16's normal range, one subnormal step (2^-133) of absolute rounding
            double p_rel = term_rel + sum_rel + FP32_ROUNDOFF;
            double onehot = c == targets[r] ? 1.0 : 0.0;  // p - 0 is exact: only the target's subtraction rounds
            double bound = bf16_ulp_at(want) + ldexp(1.0, -133) +
                           fabs(dloss) * (p * p_rel + 2.0 * FP32_ROUNDOFF * fabs(p - onehot));
            e = fabs(got - want);
            grad_off += e > bound;
            worst_grad = fmax(worst_grad, e / bound);
        }
    }
    snprintf(what, sizeof(what), "%d x %d (V %d, %s): losses within the fp32 bound (R2, R3), worst %.2f of it", rows,
             Vp, V, way, worst_loss);
    report(loss_off == 0, what);
    snprintf(what, sizeof(what), "%d x %d (V %d, %s): gradient within one bf16 rounding and the fp32 bound (R2, R3), "
             "worst %.2f of it; padding exactly 0", rows, Vp, V, way, worst_grad);
    report(grad_off == 0 && padding_off == 0, what);
    if (grad_off || padding_off) { printf("  %zu gradients off, %zu padding columns not 0\n", grad_off, padding_off); }
    free(logits);
    free(targets);
    free(after);
    free(losses);
    free(eval_losses);
    device_list_free(&dev);
}

// logits (n) bf16 in [-8, 8) from a hash of the index: timing data without a CPU pass over gigabytes
__global__ void fill_logits_kernel(floatX* logits, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        unsigned int h = (unsigned int)(i * 2654435761u) ^ (unsigned int)(i >> 32);
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        logits[i] = __float2bfloat16_rn((float)(h >> 8) * (16.0f / 16777216.0f) - 8.0f);
    }
}

int main(void) {
    require_cuda_device("classifier");
    Rng rng;
    rng_seed(&rng, 71);
    check_shape(64, 50257, 50304, &rng);
    check_shape(32, 8000, 8192, &rng);
    check_shape(96, 1000, 1024, &rng);
    check_shape(64, 37, 40, &rng);
    check_shape(48, 1000, 1001, &rng);

    if (bench_emulated("classifier")) { return dev_summary("classifier", checks, failures); }

    // times at GPT-2's vocabulary, 16384 rows: the trainer's call (training), each kernel
    int rows = 16384, V = 50257, Vp = 50304;
    size_t n = (size_t)rows * Vp;
    floatX *d_logits, *d_copy;
    float* d_losses;
    int* d_targets;
    DeviceList dev = {{NULL}, 0};
    device_alloc(&dev, &d_logits, n * 2);
    device_alloc(&dev, &d_copy, n * 2);
    device_alloc(&dev, &d_losses, rows * sizeof(float));
    device_alloc(&dev, &d_targets, rows * sizeof(int));
    int* targets = (int*)malloc(rows * sizeof(int));
    for (int r = 0; r < rows; r++) { targets[r] = (int)(rng_next_u64(&rng) % V); }
    cudaCheck(cudaMemcpy(d_targets, targets, rows * sizeof(int), cudaMemcpyHostToDevice));
    free(targets);
    BenchTimer timer;
    bench_timer_init(&timer);
    const int reps = 10;
    enum { COPY, VECTOR, ELEMENT, VECTOR_EVAL, TIMINGS };
    double us[TIMINGS];
    for (int pass = 0; pass < 2; pass++) {  // the first untimed: module load, clocks up
        for (int which = 0; which < TIMINGS; which++) {
            float total_ms = 0.0f;
            for (int r = 0; r < reps; r++) {
                fill_logits_kernel<<<1024, 256>>>(d_logits, n);  // fresh logits: the gradient overwrote them
                bench_start(&timer);
                if (which == COPY) {
                    cudaCheck(cudaMemcpyAsync(d_copy, d_logits, n * 2, cudaMemcpyDeviceToDevice));
                } else if (which == VECTOR || which == VECTOR_EVAL) {
                    fused_classifier_vec_kernel<<<rows, CLASSIFIER_BLOCK_SIZE>>>(d_logits, d_losses, d_targets,
                                                                                 1.0f / rows, V, Vp, which == VECTOR);
                } else {
                    fused_classifier_kernel<<<rows, 512>>>(d_logits, d_losses, d_targets, 1.0f / rows, V, Vp, 1);
                }
                bench_stop(&timer);
                cudaCheck(cudaGetLastError());
                total_ms += bench_elapsed_ms(&timer);
            }
            us[which] = 1000.0 * total_ms / reps;
        }
    }
    double copy_gbs = 4.0 * n / (us[COPY] * 1e3);       // 2 bytes read + 2 written an element
    double vector_gbs = 6.0 * n / (us[VECTOR] * 1e3);   // read twice, written once
    double eval_gbs = 2.0 * n / (us[VECTOR_EVAL] * 1e3);  // read once
    printf("%d x %d: device copy %.0f GB/s | classifier, 16-byte vectors %.1f us (%.0f GB/s, %.0f%% of copy), element "
           "by element %.1f us (%.2fx) | evaluation (losses only) %.1f us (%.0f GB/s)\n",
           rows, Vp, copy_gbs, us[VECTOR], vector_gbs, 100 * vector_gbs / copy_gbs, us[ELEMENT],
           us[ELEMENT] / us[VECTOR], us[VECTOR_EVAL], eval_gbs);
    device_list_free(&dev);
    return dev_summary("classifier", checks, failures);
}
