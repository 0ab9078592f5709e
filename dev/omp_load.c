/*
dev/omp_load.c — a competing OpenMP job for dev/bench_cpu.sh -load: what a second training run on the same machine
looks like to the scheduler. It runs short parallel loops back to back (a few tens of microseconds of work each, over
a tensor of a small model's size), each ending at a barrier, with libgomp's default wait policy (its threads spin a
while at every barrier, then sleep), so it wants every core it has threads for, all the time.

    omp_load SECONDS [ELEMENTS]

runs for SECONDS (a bound, so a load whose starter died does not run forever), over ELEMENTS floats (default 65536)
per loop; OMP_NUM_THREADS sets its threads as for any OpenMP program. It prints nothing unless its arguments are wrong.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

// a positive integer argument, or -1
static long positive_arg(const char* s) {
    char* end;
    long v = strtol(s, &end, 10);
    return *s && !*end && v > 0 ? v : -1;
}

int main(int argc, char** argv) {
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: omp_load SECONDS [ELEMENTS]\n");
        return 1;
    }
    long seconds = positive_arg(argv[1]);
    long n = argc > 2 ? positive_arg(argv[2]) : 65536;
    if (seconds < 0 || n < 0) {
        fprintf(stderr, "omp_load: SECONDS and ELEMENTS want positive integers, got '%s'%s%s\n", argv[1],
                argc > 2 ? " and " : "", argc > 2 ? argv[2] : "");
        return 1;
    }
    float* x = (float*)malloc((size_t)n * sizeof(float));
    if (!x) {
        fprintf(stderr, "omp_load: out of memory for %ld floats\n", n);
        return 1;
    }
    for (long i = 0; i < n; i++) { x[i] = (float)(i % 97) * 0.01f; }
    double end = seconds_now() + (double)seconds;
    // the clock is read once per 64 loops: a loop is short, the call is not free
    for (long round = 0;; round++) {
        if (round % 64 == 0 && seconds_now() >= end) { break; }
#pragma omp parallel for
        for (long i = 0; i < n; i++) { x[i] = x[i] * 0.999f + 0.001f; }
    }
    volatile float sink = x[n / 2];  // the loops' results are used, so the compiler keeps them
    (void)sink;
    free(x);
    return 0;
}
