/*
llmc/utils.h — the one-line fatal error every bad input gets (die) and the allocation that fails that way: what a
trainer does when it cannot go on, in one place.
*/
#ifndef GPTFP8_UTILS_H
#define GPTFP8_UTILS_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

// One line to stderr and a non-zero exit: the trainer's answer to any bad input.
static inline void die(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static inline void die(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "error: ");
    vfprintf(stderr, fmt, args);
    fprintf(stderr, "\n");
    va_end(args);
    exit(1);
}

static inline void* calloc_or_die(size_t count, size_t size, const char* what) {
    void* p = calloc(count ? count : 1, size);
    if (!p) {
        die("out of memory allocating %s (%zu x %zu bytes = %.3g GiB)", what, count, size,
            (double)count * (double)size / (1 << 30));
    }
    return p;
}

#endif  // GPTFP8_UTILS_H
