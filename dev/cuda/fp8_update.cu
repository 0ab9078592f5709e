/*
dev/cuda/fp8_update.cu — the end-of-step delayed-scaling update (fp8/update.cuh) on its own: checks the kernel bit for
bit against the CPU rule (fp8_meta_update in fp8/meta.h) on random histories with 0, tiny, inf and NaN amaxes, for
both algorithms, several margins and intervals, then times one launch at the model sizes (d12: 49 modules, d48: 193,
amax_history_len 1024).

Build: make dev/cuda/fp8_update     Run: ./dev/cuda/fp8_update    (prints one line and exits 1 without a GPU)
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fp8/update.cuh"
#include "../../llmc/cuda_utils.cuh"
#include "../../llmc/rand.h"

// An amax drawn to hit every branch of the rule: unused (0), tiny (scale overflows to FLT_MAX), inf, NaN, normal.
static float random_amax(Rng* rng) {
    uint64_t u = rng_next_u64(rng) % 100;
    if (u < 15) { return 0.0f; }
    if (u < 18) { return 448.0f / 3.0e38f / 4.0f; }
    if (u < 20) { return INFINITY; }
    if (u < 22) { return NAN; }
    return ldexpf(0.5f + rng_uniform(rng), (int)(rng_next_u64(rng) % 40) - 20);
}

// Runs `steps` updates on the CPU and on the GPU from the same start; returns the number of differing floats.
static size_t compare_run(int modules, int history_len, AmaxComputeAlgo algo, int margin, int interval, int steps,
                          uint64_t seed) {
    DelayedScaling recipe;
    delayed_scaling_default(&recipe);
    recipe.amax_history_len = history_len;
    recipe.amax_compute_algo = algo;
    recipe.margin = margin;
    recipe.interval = interval;
    Fp8Meta meta;
    char err[256];
    if (fp8_meta_init(&meta, modules, &recipe, err, sizeof(err))) { fprintf(stderr, "%s\n", err); exit(1); }
    Rng rng;
    rng_seed(&rng, seed);
    for (size_t i = 0; i < (size_t)history_len * meta.num_slots; i++) { meta.amax_history[i] = random_amax(&rng); }
    float* device = NULL;
    size_t bytes = meta.num_floats * sizeof(float);
    cudaCheck(cudaMalloc(&device, bytes));
    cudaCheck(cudaMemcpy(device, meta.memory, bytes, cudaMemcpyHostToDevice));
    for (int step = 0; step < steps; step++) {
        // both sides get the same fresh row 0, as the casts of a step would leave it
        for (int s = 0; s < meta.num_slots; s++) { meta.amax_history[s] = random_amax(&rng); }
        cudaCheck(cudaMemcpy(device, meta.amax_history, meta.num_slots * sizeof(float), cudaMemcpyHostToDevice));
        fp8_meta_update(&meta, &recipe, step);
        cudaCheck(fp8_meta_update_launch(device, &meta, &recipe, step, 0));
    }
    float* back = (float*)malloc(bytes);
    cudaCheck(cudaMemcpy(back, device, bytes, cudaMemcpyDeviceToHost));
    size_t mismatches = 0;
    for (size_t i = 0; i < meta.num_floats; i++) {
        uint32_t a, b;
        memcpy(&a, &back[i], 4);
        memcpy(&b, &meta.memory[i], 4);
        int both_nan = isnan(back[i]) && isnan(meta.memory[i]);
        if (a != b && !both_nan) {
            if (mismatches < 5) { printf("  mismatch at float %zu: gpu %a cpu %a\n", i, back[i], meta.memory[i]); }
            mismatches++;
        }
    }
    free(back);
    cudaCheck(cudaFree(device));
    fp8_meta_free(&meta);
    return mismatches;
}

int main(void) {
    require_cuda_device("fp8_update");
    int failures = 0;
    int lens[3] = {1, 16, 1024};
    for (int li = 0; li < 3; li++) {
        for (int algo = 0; algo < 2; algo++) {
            for (int margin = 0; margin < 3; margin += 2) {
                int interval = 1 + margin;
                size_t bad = compare_run(49, lens[li], (AmaxComputeAlgo)algo, margin, interval, 25, 1000 + li * 10 + algo);
                printf("%s len %4d %-11s margin %d interval %d: %s\n", bad ? "FAIL" : "PASS", lens[li],
                       amax_compute_algo_name((AmaxComputeAlgo)algo), margin, interval, bad ? "differs from the CPU rule" : "bit-exact");
                failures += bad != 0;
            }
        }
    }
    // timing: one launch for d12 and d48 sized metadata, history 1024
    int sizes[2] = {49, 193};
    for (int i = 0; i < 2; i++) {
        DelayedScaling recipe;
        delayed_scaling_default(&recipe);
        Fp8Meta meta;
        char err[256];
        if (fp8_meta_init(&meta, sizes[i], &recipe, err, sizeof(err))) { fprintf(stderr, "%s\n", err); return 1; }
        float* device;
        cudaCheck(cudaMalloc(&device, meta.num_floats * sizeof(float)));
        cudaCheck(cudaMemset(device, 0, meta.num_floats * sizeof(float)));
        cudaEvent_t start, stop;
        cudaCheck(cudaEventCreate(&start));
        cudaCheck(cudaEventCreate(&stop));
        const int reps = 100;
        cudaCheck(cudaEventRecord(start));
        for (int r = 0; r < reps; r++) { cudaCheck(fp8_meta_update_launch(device, &meta, &recipe, r, 0)); }
        cudaCheck(cudaEventRecord(stop));
        cudaCheck(cudaEventSynchronize(stop));
        float ms;
        cudaCheck(cudaEventElapsedTime(&ms, start, stop));
        printf("update of %d modules (%d slots, history 1024): %.2f us per launch\n", sizes[i], meta.num_slots, 1000 * ms / reps);
        cudaCheck(cudaFree(device));
        fp8_meta_free(&meta);
    }
    printf("fp8_update: %d passed, %d failed\n", 12 - failures, failures);
    return failures ? 1 : 0;
}
