/*
dev/cuda/bench.h — what every dev/cuda program needs to time GPU work and to give its device buffers back, written
once: a BenchTimer (two CUDA events around what the default stream runs between bench_start and bench_stop: the GPU's
own time for that work, not the host's; warm-up calls, where a program makes them, go before bench_start) and a
DeviceList (the buffers one check allocates with device_alloc / device_upload, freed together by device_list_free).
What a program times and how it prints the result stays in the program (scripts/gpu_check.sh parses those lines).
*/
#ifndef GPTFP8_DEV_CUDA_BENCH_H
#define GPTFP8_DEV_CUDA_BENCH_H

#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../llmc/cuda_utils.cuh"

// ----------------------------------------------------------------------------
// timing

// The closing "<program>: N passed, M failed" line of a dev/cuda check and its exit code (before its benchmark, too,
// where bench_emulated skips it)
static int dev_summary(const char* program, int checks, int failures) {
    printf("%s: %d passed, %d failed\n", program, checks - failures, failures);
    return failures ? 1 : 0;
}

// Whether this build runs its kernels on the CPU (dev/cuda/emulate): a time means nothing there, so a program skips its
// benchmark when this says so (one line), and keeps its checks.
static int bench_emulated(const char* program) {
#ifdef GPTFP8_CUDA_EMULATION
    printf("%s: benchmark not run (the CPU emulation of dev/cuda/emulate: its times are the host's)\n", program);
    return 1;
#else
    (void)program;
    return 0;
#endif
}

// The current device's SM count (a launcher's grid limit, as the trainer gives it)
static int device_sm_count(void) {
    int device;
    cudaDeviceProp prop;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaGetDeviceProperties(&prop, device));
    return prop.multiProcessorCount;
}

typedef struct {
    cudaEvent_t start, stop;
} BenchTimer;

static void bench_timer_init(BenchTimer* t) {
    cudaCheck(cudaEventCreate(&t->start));
    cudaCheck(cudaEventCreate(&t->stop));
}

static void bench_timer_free(BenchTimer* t) {
    cudaCheck(cudaEventDestroy(t->start));
    cudaCheck(cudaEventDestroy(t->stop));
}

static void bench_start(const BenchTimer* t) { cudaCheck(cudaEventRecord(t->start)); }

// Marks the end of the timed work without waiting for it (so that more work can be queued behind it)
static void bench_stop(const BenchTimer* t) { cudaCheck(cudaEventRecord(t->stop)); }

// Waits for the stop event; the milliseconds between start and stop
static float bench_elapsed_ms(const BenchTimer* t) {
    float ms;
    cudaCheck(cudaEventSynchronize(t->stop));
    cudaCheck(cudaEventElapsedTime(&ms, t->start, t->stop));
    return ms;
}

// bench_stop, then bench_elapsed_ms: the usual end of a timed loop
static float bench_stop_ms(const BenchTimer* t) {
    bench_stop(t);
    return bench_elapsed_ms(t);
}

// Milliseconds per call of call(arg), over `reps` calls queued after `warmup` untimed ones
typedef void (*BenchCall)(const void* arg);
static float bench_ms_per_call(BenchCall call, const void* arg, int warmup, int reps) {
    BenchTimer timer;
    bench_timer_init(&timer);
    for (int r = 0; r < warmup + reps; r++) {
        if (r == warmup) { bench_start(&timer); }
        call(arg);
    }
    float ms = bench_stop_ms(&timer);
    bench_timer_free(&timer);
    return ms / reps;
}

// ----------------------------------------------------------------------------
// device buffers

#define DEVICE_LIST_MAX 32

// The device buffers of one check, freed together. Start one empty: DeviceList dev = {{NULL}, 0};
typedef struct {
    void* buffers[DEVICE_LIST_MAX];
    int count;
} DeviceList;

static void device_list_add(DeviceList* list, void* buffer) {
    if (list->count == DEVICE_LIST_MAX) {
        fprintf(stderr, "error: more than %d device buffers in one DeviceList (dev/cuda/bench.h)\n", DEVICE_LIST_MAX);
        exit(1);
    }
    list->buffers[list->count++] = buffer;
}

// cudaMalloc of `bytes` into *ptr (any pointer type, as cudaMalloc's own overload), kept on the list
template <typename T>
static void device_alloc(DeviceList* list, T** ptr, size_t bytes) {
    cudaCheck(cudaMalloc(ptr, bytes));
    device_list_add(list, (void*)*ptr);
}

// `bytes` of host memory copied into a new device buffer on the list
template <typename T>
static void device_upload(DeviceList* list, T** ptr, const void* host, size_t bytes) {
    device_alloc(list, ptr, bytes);
    cudaCheck(cudaMemcpy((void*)*ptr, host, bytes, cudaMemcpyHostToDevice));
}

static void device_list_free(DeviceList* list) {
    for (int i = 0; i < list->count; i++) { cudaCheck(cudaFree(list->buffers[i])); }
    list->count = 0;
}

#endif  // GPTFP8_DEV_CUDA_BENCH_H
