/*
dev/cuda/fp8_update.cu — the end-of-step delayed-scaling update (fp8/update.cuh) on its own: checks the kernel bit for
bit (R1 of llmc/tolerance.h: the same float operations, a maximum and a division, on the same values) against the CPU
rule (fp8_meta_update in fp8/meta.h) on random histories with 0, tiny, inf and NaN amaxes, for both algorithms, several
margins and intervals, histories of 1 row, a few rows, fewer and more rows than one of the kernel's passes covers, and
1024; before every update, the diagnostics' amaxes (fp8_meta_window_amax_launch: row 0 and the window of every
slot) against the CPU's fp8_meta_window_amax, bit for bit too (a maximum); after the last, the GEMMs' strided copy of
scale_inv (made whole by fp8_gemm_scale_inv_refresh_launch, then kept by the update) against the CPU's scale_inv.
Every third step of a run is skipped, alternately by the host's flag and by a gradient norm on the device that is NaN
or inf: the launch must then only drop the step's amaxes as fp8_meta_drop_step_amaxes does (the whole metadata
compared right after it), and the diagnostics' launch (which the trainer makes only where the norm decides) must leave
the last step's amaxes. Then
times one launch at the model sizes (d12: 49 modules, d48: 193, amax_history_len 1024) on histories full of
real amaxes, with row 0 refilled before every timed launch (the kernel zeroes it, and a slot whose row 0 is 0 is
skipped: timing launches after the first would time an empty kernel).

Build: make dev/cuda/fp8_update     Run: ./dev/cuda/fp8_update    (prints one line and exits 1 without a GPU)
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../fp8/update.cuh"
#include "../../llmc/cuda_utils.cuh"
#include "../../llmc/rand.h"
#include "bench.h"

// An amax drawn to hit every branch of the rule: unused (0), tiny (scale overflows to FLT_MAX), inf, NaN, normal.
static float random_amax(Rng* rng) {
    uint64_t u = rng_next_u64(rng) % 100;
    if (u < 15) { return 0.0f; }
    if (u < 18) { return 448.0f / 3.0e38f / 4.0f; }
    if (u < 20) { return INFINITY; }
    if (u < 22) { return NAN; }
    return ldexpf(0.5f + rng_uniform(rng), (int)(rng_next_u64(rng) % 40) - 20);
}

// Whether two floats are the same bits, or both NaN (R1: a NaN for a NaN)
static int same_float(float a, float b) {
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y || (isnan(a) && isnan(b));
}

// Runs `steps` updates on the CPU and on the GPU from the same start, the diagnostics' amaxes before each; returns
// the number of differing floats (metadata at the end, and every step's row 0 and window amaxes).
static size_t compare_run(int modules, int history_len, AmaxComputeAlgo algo, int margin, int interval, int steps,
                          uint64_t seed) {
    Fp8Recipe recipe;
    fp8_recipe_default(&recipe);
    recipe.delayed.amax_history_len = history_len;
    recipe.delayed.amax_compute_algo = algo;
    recipe.margin = margin;
    recipe.delayed.interval = interval;
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
    Fp8Meta on_device = meta;  // the same layout, pointing into the device copy
    fp8_meta_point_into(&on_device, device);
    size_t S = (size_t)meta.num_slots, mismatches = 0;
    // the GEMMs' strided copy of scale_inv: made whole from the start values, then kept by every update
    float* gemm_scale_inv = NULL;
    cudaCheck(cudaMalloc(&gemm_scale_inv, S * FP8_GEMM_SCALE_INV_STRIDE * sizeof(float)));
    cudaCheck(cudaMemset(gemm_scale_inv, 0xFF, S * FP8_GEMM_SCALE_INV_STRIDE * sizeof(float)));  // NaN until written
    cudaCheck(fp8_gemm_scale_inv_refresh_launch(&on_device, gemm_scale_inv, 0));
    float *device_amaxes, *back_amaxes = (float*)malloc(2 * S * sizeof(float));
    float* want_amaxes = (float*)malloc(2 * S * sizeof(float));  // (2, S): what the diagnostics' launch last wrote
    cudaCheck(cudaMalloc(&device_amaxes, 2 * S * sizeof(float)));  // (2, S): last, window
    float* device_norm_squared;  // the gradient norm's square as the trainer's norm pass leaves it on the device
    cudaCheck(cudaMalloc(&device_norm_squared, sizeof(float)));
    for (int step = 0; step < steps; step++) {
        // both sides get the same fresh row 0, as the casts of a step would leave it
        for (int s = 0; s < meta.num_slots; s++) { meta.amax_history[s] = random_amax(&rng); }
        cudaCheck(cudaMemcpy(device, meta.amax_history, meta.num_slots * sizeof(float), cudaMemcpyHostToDevice));
        // every third step skipped: by the host (a loss that is not finite), or by the norm on the device
        int host_skips = step % 6 == 5, norm_skips = step % 6 == 2;
        float norm_squared = norm_skips ? (step % 12 == 2 ? NAN : INFINITY) : 2.5f;
        cudaCheck(cudaMemcpy(device_norm_squared, &norm_squared, sizeof(float), cudaMemcpyHostToDevice));
        if (!host_skips) {  // (the trainer queues the diagnostics' launch only where the host did not skip)
            if (!norm_skips) {
                fp8_meta_window_amax(&meta, &recipe, want_amaxes + S);
                memcpy(want_amaxes, meta.amax_history, S * sizeof(float));
            }
            cudaCheck(fp8_meta_window_amax_launch(&on_device, &recipe, device_amaxes, device_amaxes + S,
                                                  device_norm_squared, 0));
            cudaCheck(cudaMemcpy(back_amaxes, device_amaxes, 2 * S * sizeof(float), cudaMemcpyDeviceToHost));
            for (size_t s = 0; s < S; s++) {
                int ok = same_float(back_amaxes[s], want_amaxes[s]) &&
                         same_float(back_amaxes[S + s], want_amaxes[S + s]);
                if (!ok && mismatches < 5) {
                    printf("  step %d slot %zu: gpu last %a window %a, cpu %a %a\n", step, s, back_amaxes[s],
                           back_amaxes[S + s], want_amaxes[s], want_amaxes[S + s]);
                }
                mismatches += !ok;
            }
        }
        if (host_skips || norm_skips) {
            fp8_meta_drop_step_amaxes(&meta);
        } else {
            fp8_meta_update(&meta, &recipe, step);
        }
        cudaCheck(
            fp8_meta_update_launch(&on_device, gemm_scale_inv, &recipe, step, host_skips, device_norm_squared, 0));
        if (host_skips || norm_skips) {  // the whole metadata now: row 0 dropped but the weights', the rest as it was
            float* now = (float*)malloc(bytes);
            cudaCheck(cudaMemcpy(now, device, bytes, cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < meta.num_floats; i++) {
                if (!same_float(now[i], meta.memory[i])) {
                    if (mismatches < 5) {
                        printf("  step %d (skipped by the %s): float %zu gpu %a cpu %a\n", step,
                               host_skips ? "host" : "norm", i, now[i], meta.memory[i]);
                    }
                    mismatches++;
                }
            }
            free(now);
        }
    }
    cudaCheck(cudaFree(device_amaxes));
    cudaCheck(cudaFree(device_norm_squared));
    free(want_amaxes);
    float* strided = (float*)malloc(S * FP8_GEMM_SCALE_INV_STRIDE * sizeof(float));
    cudaCheck(cudaMemcpy(strided, gemm_scale_inv, S * FP8_GEMM_SCALE_INV_STRIDE * sizeof(float),
                         cudaMemcpyDeviceToHost));
    for (size_t s = 0; s < S; s++) {
        if (!same_float(strided[s * FP8_GEMM_SCALE_INV_STRIDE], meta.scale_inv[s])) {
            if (mismatches < 5) {
                printf("  slot %zu: the GEMMs' scale_inv %a, cpu %a\n", s, strided[s * FP8_GEMM_SCALE_INV_STRIDE],
                       meta.scale_inv[s]);
            }
            mismatches++;
        }
    }
    free(strided);
    cudaCheck(cudaFree(gemm_scale_inv));
    free(back_amaxes);
    float* back = (float*)malloc(bytes);
    cudaCheck(cudaMemcpy(back, device, bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < meta.num_floats; i++) {
        if (!same_float(back[i], meta.memory[i])) {
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
    int failures = 0, checks = 0;
    enum { NUM_LENS = 6 };
    int lens[NUM_LENS] = {1, 3, 16, 255, 300, 1024};  // one pass covers 256 rows (32 row threads x 8)
    for (int li = 0; li < NUM_LENS; li++) {
        for (int algo = 0; algo < 2; algo++) {
            for (int margin = 0; margin < 3; margin += 2) {
                int interval = 1 + margin;
                size_t bad = compare_run(49, lens[li], (AmaxComputeAlgo)algo, margin, interval, 25, 1000 + li * 10 + algo);
                printf("%s len %4d %-11s margin %d interval %d: %s\n", bad ? "FAIL" : "PASS", lens[li],
                       amax_compute_algo_name((AmaxComputeAlgo)algo), margin, interval,
                       bad ? "differs from the CPU rule"
                           : "update, skipped steps, the GEMMs' scale_invs and diagnostics' amaxes bit-exact");
                failures += bad != 0;
                checks++;
            }
        }
    }
    if (bench_emulated("fp8_update")) { return dev_summary("fp8_update", checks, failures); }

    // timing: one launch for d12 and d48 sized metadata, history 1024, every row a real amax; before each timed
    // launch row 0 is refilled (an untimed device copy), so every launch does the whole work: every slot rolls its
    // 1024 rows and recomputes its scale from them
    int sizes[2] = {49, 193};
    for (int i = 0; i < 2; i++) {
        Fp8Recipe recipe;
        fp8_recipe_default(&recipe);
        Fp8Meta meta;
        char err[256];
        if (fp8_meta_init(&meta, sizes[i], &recipe, err, sizeof(err))) { fprintf(stderr, "%s\n", err); return 1; }
        Rng rng;
        rng_seed(&rng, 77 + i);
        size_t history = (size_t)meta.amax_history_len * meta.num_slots;
        for (size_t k = 0; k < history; k++) {
            meta.amax_history[k] = ldexpf(0.5f + rng_uniform(&rng), (int)(rng_next_u64(&rng) % 40) - 20);
        }
        float *device, *row0;
        DeviceList dev = {{NULL}, 0};
        device_alloc(&dev, &device, meta.num_floats * sizeof(float));
        device_alloc(&dev, &row0, meta.num_slots * sizeof(float));
        cudaCheck(cudaMemcpy(device, meta.memory, meta.num_floats * sizeof(float), cudaMemcpyHostToDevice));
        cudaCheck(cudaMemcpy(row0, meta.amax_history, meta.num_slots * sizeof(float), cudaMemcpyHostToDevice));
        Fp8Meta on_device = meta;
        fp8_meta_point_into(&on_device, device);
        enum { REPS = 100 };
        // a timer per launch, read after one synchronize: the launches stay queued back to back, and the copy that
        // restores row 0 before each is not timed
        BenchTimer timers[REPS];
        for (int r = 0; r < REPS; r++) { bench_timer_init(&timers[r]); }
        cudaCheck(fp8_meta_update_launch(&on_device, NULL, &recipe, 0, 0, NULL, 0));  // warm-up
        for (int r = 0; r < REPS; r++) {
            cudaCheck(cudaMemcpyAsync(device, row0, meta.num_slots * sizeof(float), cudaMemcpyDeviceToDevice, 0));
            bench_start(&timers[r]);
            cudaCheck(fp8_meta_update_launch(&on_device, NULL, &recipe, r, 0, NULL, 0));
            bench_stop(&timers[r]);
        }
        cudaCheck(cudaDeviceSynchronize());
        float total_ms = 0.0f;
        for (int r = 0; r < REPS; r++) {
            total_ms += bench_elapsed_ms(&timers[r]);
            bench_timer_free(&timers[r]);
        }
        // the last launch saw a full row 0: after it, row 0 is all zero and the newest row holds what row 0 held
        float* back = (float*)malloc(meta.num_floats * sizeof(float));
        cudaCheck(cudaMemcpy(back, device, meta.num_floats * sizeof(float), cudaMemcpyDeviceToHost));
        int rolled = 1;
        for (int s = 0; s < meta.num_slots; s++) {
            rolled &= back[s] == 0.0f && back[history - meta.num_slots + s] == meta.amax_history[s];
        }
        checks++;
        failures += !rolled;
        printf("%s update of %d modules (%d slots, history %d, every slot active): %.2f us per launch\n",
               rolled ? "PASS" : "FAIL", sizes[i], meta.num_slots, meta.amax_history_len, 1000 * total_ms / REPS);
        free(back);
        device_list_free(&dev);
        fp8_meta_free(&meta);
    }
    return dev_summary("fp8_update", checks, failures);
}
