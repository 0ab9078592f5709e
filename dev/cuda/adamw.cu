/*
dev/cuda/adamw.cu — AdamW's one launch for every parameter tensor of a step (llmc/adamw.cuh) on its own:
  - one launch over GPT-2's sixteen parameter tensors back to back (the 2-D ones with weight decay, the others
    without; sizes off 8, so 8-parameter vectors straddle tensors) bit for bit against the same tensors one launch
    each with its own decay: the same adamw_element per parameter either way, and its 16-byte and element paths give
    the same bits (R1 of llmc/tolerance.h), so any difference is the tensor bookkeeping (adamw_tensor_of); at an
    aligned base (the 16-byte path) and one float on (the element path), every array (master weights, m, v and the
    bf16 weights), with a clipped gradient (the norm read on the device above grad_clip) that moves every parameter;
  - a norm that is not finite (NaN, inf) skips the step on the device: not one byte of the five arrays changes.
Then the time of a d12 step's AdamW (124M parameters, B-independent): the one launch against sixteen.

Build: make dev/cuda/adamw     Run: ./dev/cuda/adamw    (one line, exit 1 without a GPU)
*/
#include <cuda_bf16.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../llmc/adamw.cuh"
#include "../../llmc/cuda_utils.cuh"
#include "../../llmc/rand.h"
#include "../../llmc/testing.h"
#include "bench.h"

#define NUM_TENSORS 16

// GPT-2's parameter tensors in the trainer's order for vocabulary V (padded), context T, width C, L layers, back to
// back, each with its weight decay: `decay` for the 2-D ones (the trainer's parameter_tensor_is_2d: the embeddings and
// the four weight matrices), 0 for the others. Returns the number of parameters.
static size_t gpt2_tensors(AdamwTensors* all, size_t V, size_t T, size_t C, size_t L, float decay) {
    const size_t sizes[NUM_TENSORS] = {V * C, T * C, L * C, L * C, L * 3 * C * C, L * 3 * C, L * C * C, L * C,
                                       L * C, L * C, L * 4 * C * C, L * 4 * C, L * C * 4 * C, L * C, C, C};
    const int two_d[NUM_TENSORS] = {1, 1, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0};
    memset(all, 0, sizeof(*all));
    for (int t = 0; t < NUM_TENSORS; t++) { adamw_tensors_add(all, sizes[t], two_d[t] ? decay : 0.0f); }
    return all->end[NUM_TENSORS - 1];
}

static const float lr = 1e-3f, beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f, grad_clip = 1.0f;
static const float bias1 = 0.271f, bias2 = 0.142625f;  // 1 - beta^3: the third step

// The five arrays of n parameters on the device, each with room for one float (or bf16) more: `offset` 0 or 1; and
// the cell of the gradient norm's square that AdamW reads. Freed together (dev).
typedef struct {
    float *master, *grads, *m, *v, *norm_squared;
    floatX* params;
    DeviceList dev;
} Arrays;

static Arrays arrays_alloc(size_t n, float norm_squared) {
    Arrays a;
    a.dev.count = 0;
    device_alloc(&a.dev, &a.master, (n + 4) * sizeof(float));
    device_alloc(&a.dev, &a.grads, (n + 4) * sizeof(float));
    device_alloc(&a.dev, &a.m, (n + 4) * sizeof(float));
    device_alloc(&a.dev, &a.v, (n + 4) * sizeof(float));
    device_alloc(&a.dev, &a.params, (n + 8) * sizeof(floatX));
    device_upload(&a.dev, &a.norm_squared, &norm_squared, sizeof(float));
    return a;
}

// AdamW over every tensor of `all` in the arrays from `offset` on: one launch, or (one_per_tensor) one a tensor with
// that tensor's decay, as before c520567
static void adamw_step(const Arrays* d, size_t offset, const AdamwTensors* all, int one_per_tensor) {
    if (!one_per_tensor) {
        adamw_update(d->master + offset, d->params + offset, d->grads + offset, d->m + offset, d->v + offset, all, lr,
                     beta1, beta2, bias1, bias2, eps, d->norm_squared, grad_clip, 0);
        return;
    }
    for (int t = 0; t < all->count; t++) {
        size_t at = offset + (t ? all->end[t - 1] : 0);
        AdamwTensors one;
        memset(&one, 0, sizeof(one));
        adamw_tensors_add(&one, all->end[t] - (t ? all->end[t - 1] : 0), all->weight_decay[t]);
        adamw_update(d->master + at, d->params + at, d->grads + at, d->m + at, d->v + at, &one, lr, beta1, beta2, bias1,
                     bias2, eps, d->norm_squared, grad_clip, 0);
    }
}

// host (4 n floats: master, grads, m, v) onto the device at `offset`, the bf16 weights a sentinel (0x7F7F)
static void arrays_upload(const Arrays* a, const float* host, size_t n, int offset) {
    float* to[4] = {a->master, a->grads, a->m, a->v};
    for (int k = 0; k < 4; k++) {
        cudaCheck(cudaMemcpy(to[k] + offset, host + k * n, n * sizeof(float), cudaMemcpyHostToDevice));
    }
    cudaCheck(cudaMemset(a->params, 0x7F, (n + 8) * sizeof(floatX)));
}

// The five arrays back on the host: master, m, v (3 n floats) and the bf16 weights (n uint16)
static void arrays_download(const Arrays* a, size_t n, int offset, float* out, uint16_t* params) {
    const float* from[3] = {a->master, a->m, a->v};
    for (int k = 0; k < 3; k++) {
        cudaCheck(cudaMemcpy(out + k * n, from[k] + offset, n * sizeof(float), cudaMemcpyDeviceToHost));
    }
    cudaCheck(cudaMemcpy(params, a->params + offset, n * sizeof(uint16_t), cudaMemcpyDeviceToHost));
}

static float* random_state(size_t n, Rng* rng) {
    float* host = (float*)malloc(4 * n * sizeof(float));
    for (size_t i = 0; i < n; i++) {
        host[i] = rng_uniform(rng) * 2.0f - 1.0f;                   // master
        host[n + i] = (rng_uniform(rng) * 2.0f - 1.0f) * 0.01f;     // grads
        host[2 * n + i] = (rng_uniform(rng) * 2.0f - 1.0f) * 1e-3f;  // m
        host[3 * n + i] = rng_uniform(rng) * 1e-5f;                   // v
    }
    return host;
}

static size_t count_differing(const void* a, const void* b, size_t n, size_t elem) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) { bad += memcmp((const char*)a + i * elem, (const char*)b + i * elem, elem) != 0; }
    return bad;
}

// One launch for all sixteen tensors against sixteen launches, at base offset 0 and 1
static void test_one_launch_equals_one_per_tensor(void) {
    AdamwTensors all;
    const size_t n = gpt2_tensors(&all, 101, 25, 36, 1, 0.1f);  // 8 of the 16 tensor ends fall inside a vector of 8
    Rng rng;
    rng_seed(&rng, 1701);
    float* host = random_state(n, &rng);
    Arrays d = arrays_alloc(n, 4.0f);  // a norm of 2, above the clip of 1: every gradient is halved on the device
    float* got[2][2];  // [offset][one launch, one per tensor]: master, m, v
    uint16_t* params[2][2];
    for (int offset = 0; offset < 2; offset++) {
        for (int way = 0; way < 2; way++) {
            arrays_upload(&d, host, n, offset);
            adamw_step(&d, offset, &all, way);
            cudaCheck(cudaDeviceSynchronize());
            got[offset][way] = (float*)malloc(3 * n * sizeof(float));
            params[offset][way] = (uint16_t*)malloc(n * sizeof(uint16_t));
            arrays_download(&d, n, offset, got[offset][way], params[offset][way]);
        }
    }
    size_t moved = 0;  // the update did something: (nearly) every master weight moved (a tiny m can leave one be)
    for (size_t i = 0; i < n; i++) { moved += got[0][0][i] != host[i]; }
    CHECK(moved >= n - n / 100, "%zu of %zu master weights moved", moved, n);
    const char* names[3] = {"master weights", "m", "v"};
    for (int offset = 0; offset < 2; offset++) {
        for (int k = 0; k < 3; k++) {
            size_t bad = count_differing(got[offset][0] + k * n, got[offset][1] + k * n, n, sizeof(float));
            CHECK(bad == 0, "offset %d, %s: %zu of %zu differ between one launch and one per tensor", offset,
                  names[k], bad, n);
        }
        size_t bad = count_differing(params[offset][0], params[offset][1], n, sizeof(uint16_t));
        CHECK(bad == 0, "offset %d, bf16 weights: %zu of %zu differ between one launch and one per tensor", offset, bad,
              n);
    }
    size_t bad = count_differing(got[0][0], got[1][0], 3 * n, sizeof(float));  // the two paths (R1)
    CHECK(bad == 0, "the one launch's 16-byte and element paths: %zu of %zu floats differ", bad, 3 * n);
    for (int offset = 0; offset < 2; offset++) {
        for (int way = 0; way < 2; way++) {
            free(got[offset][way]);
            free(params[offset][way]);
        }
    }
    device_list_free(&d.dev);
    free(host);
}

// A norm that is not finite: not one byte of the arrays changes (the bf16 weights keep their sentinel)
static void test_not_finite_norm_skips(void) {
    AdamwTensors all;
    const size_t n = gpt2_tensors(&all, 101, 25, 36, 1, 0.1f);
    Rng rng;
    rng_seed(&rng, 1702);
    float* host = random_state(n, &rng);
    Arrays d = arrays_alloc(n, 0.0f);
    float* after = (float*)malloc(3 * n * sizeof(float));
    uint16_t* params = (uint16_t*)malloc(n * sizeof(uint16_t));
    const float not_finite[2] = {NAN, INFINITY};
    for (int k = 0; k < 2; k++) {
        cudaCheck(cudaMemcpy(d.norm_squared, &not_finite[k], sizeof(float), cudaMemcpyHostToDevice));
        arrays_upload(&d, host, n, 0);
        adamw_step(&d, 0, &all, 0);
        cudaCheck(cudaDeviceSynchronize());
        arrays_download(&d, n, 0, after, params);
        size_t bad = count_differing(after, host, n, sizeof(float)) +
                     count_differing(after + n, host + 2 * n, 2 * n, sizeof(float));
        size_t written = 0;
        for (size_t i = 0; i < n; i++) { written += params[i] != 0x7F7Fu; }
        CHECK(bad == 0 && written == 0, "norm %s: %zu master/m/v floats and %zu bf16 weights changed",
              k ? "inf" : "NaN", bad, written);
    }
    free(after);
    free(params);
    device_list_free(&d.dev);
    free(host);
}

// d12's AdamW (GPT-2 124M, padded vocabulary): the one launch against sixteen, microseconds and GB/s (30 bytes a
// parameter: master, m, v read and written, the gradient read, the bf16 weight written)
static void benchmark(void) {
    AdamwTensors all;
    const size_t n = gpt2_tensors(&all, 50304, 1024, 768, 12, 0.1f);
    Arrays d = arrays_alloc(n, 1.0f);
    float* fp32_arrays[4] = {d.master, d.grads, d.m, d.v};  // zeros: finite values, the same bytes moved
    for (int k = 0; k < 4; k++) { cudaCheck(cudaMemset(fp32_arrays[k], 0, n * sizeof(float))); }
    BenchTimer timer;
    bench_timer_init(&timer);
    const int reps = 20;
    double us[2];
    for (int pass = 0; pass < 2; pass++) {  // the first untimed: module load, clocks up
        for (int way = 0; way < 2; way++) {
            bench_start(&timer);
            for (int r = 0; r < reps; r++) { adamw_step(&d, 0, &all, way); }
            us[way] = 1000.0 * bench_stop_ms(&timer) / reps;
        }
    }
    printf("AdamW at d12 (%zu parameters): one launch %.1f us (%.0f GB/s) | one per tensor %.1f us (%.0f GB/s) | "
           "one / sixteen %.3f\n", n, us[0], 30.0 * n / (us[0] * 1e3), us[1], 30.0 * n / (us[1] * 1e3), us[0] / us[1]);
    bench_timer_free(&timer);
    device_list_free(&d.dev);
}

int main(void) {
    require_cuda_device("adamw");
    RUN_TEST(test_one_launch_equals_one_per_tensor);
    RUN_TEST(test_not_finite_norm_skips);
    if (!bench_emulated("adamw")) { benchmark(); }
    return test_summary("adamw");
}
