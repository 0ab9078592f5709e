/*
llmc/utils.h — the one-line fatal error every bad input gets (die), the allocations that fail that way, a stdout
that could not take every line turned into a failed exit, and strings (paths, error messages) built without a fixed
limit: what a trainer does when it cannot go on, in one place.
*/
#ifndef GPTFP8_UTILS_H
#define GPTFP8_UTILS_H

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

// stdout is buffered, so a write to a full disk or /dev/full fails only when the buffer is flushed, which for the
// last lines is inside exit(), where nobody looks at the result: the program would end with 0 and a cut log. Each
// program whose stdout is its report (the trainers' step lines, model_logits' loss, cast_one_tensor's table) calls
// this first thing in main; at exit the handler flushes stdout and turns a failure into one line and exit status 1.
// (compare_runs, whose exit 1 is a verdict, and fp8_codec, which fp8/ keeps free of llmc/, flush before their last
// return instead.)
static inline void stdout_flush_or_fail(void) {
    errno = 0;
    int flush_failed = fflush(stdout) != 0;
    int error = errno;
    if (flush_failed || ferror(stdout)) {
        fprintf(stderr, "error: cannot write to stdout: %s\n",
                flush_failed && error ? strerror(error) : "an earlier write to it failed");
        fflush(NULL);  // what exit() would still do for the other open streams
        _exit(1);      // not exit(): this runs inside exit() already
    }
}
static inline void fail_at_exit_if_stdout_fails(void) {
    if (atexit(stdout_flush_or_fail) != 0) { die("cannot register the stdout check at exit"); }
}

static inline void* calloc_or_die(size_t count, size_t size, const char* what) {
    void* p = calloc(count ? count : 1, size);
    if (!p) {
        die("out of memory allocating %s (%zu x %zu bytes = %.3g GiB)", what, count, size,
            (double)count * (double)size / (1 << 30));
    }
    return p;
}

// A printf-formatted string in memory of its own size (the caller frees it). Every path a trainer builds (checkpoint
// and log files, the tokenizer beside the data) is made this way, so no path is ever cut at a fixed length: one the
// system cannot take fails at open() with ENAMETOOLONG, named in the error.
static inline char* alloc_vprintf(const char* fmt, va_list args) {
    va_list again;
    va_copy(again, args);
    int length = vsnprintf(NULL, 0, fmt, args);
    if (length < 0) { die("cannot format a string from '%s'", fmt); }
    char* out = (char*)malloc((size_t)length + 1);
    if (!out) { die("out of memory for a string of %d bytes", length); }
    vsnprintf(out, (size_t)length + 1, fmt, again);
    va_end(again);
    return out;
}
static inline char* alloc_printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static inline char* alloc_printf(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    char* out = alloc_vprintf(fmt, args);
    va_end(args);
    return out;
}

// The size of an error-message buffer: room for three of the longest paths the system takes (PATH_MAX) and the words
// around them, so a message naming two files (a rename, a checkpoint and its state) is never cut.
#define ERROR_MESSAGE_MAX (3 * PATH_MAX + 1024)

#endif  // GPTFP8_UTILS_H
