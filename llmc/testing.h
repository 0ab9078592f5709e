/*
llmc/testing.h — the few lines every CPU test program shares: named test cases, checks that count failures and say
what went wrong, and the closing "<suite>: N passed, M failed" line that .ci/run adds up.

A test case is a function returning void; CHECK records a failure (with file:line and a printf-style message) without
stopping, so one run shows every broken assertion. RUN_TEST prints PASS or FAIL per case. run_captured runs a piece
that must exit (a one-line error) in a child and hands back its exit code and stderr.
*/
#ifndef GPTFP8_TESTING_H
#define GPTFP8_TESTING_H

#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static int test_failures_in_case = 0;  // failures of the case being run
static int test_cases_passed = 0;
static int test_cases_failed = 0;

// Only the first few failures of a case are printed: a broken codec would otherwise print millions of lines.
#define TEST_MAX_PRINTED_FAILURES 10

#define CHECK(cond, ...)                                                                                     \
    do {                                                                                                     \
        if (!(cond)) {                                                                                       \
            if (test_failures_in_case < TEST_MAX_PRINTED_FAILURES) {                                         \
                fprintf(stderr, "  check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond);                 \
                fprintf(stderr, __VA_ARGS__);                                                                \
                fprintf(stderr, "\n");                                                                       \
            }                                                                                                \
            test_failures_in_case++;                                                                         \
        }                                                                                                    \
    } while (0)

#define RUN_TEST(fn)                                                                                         \
    do {                                                                                                     \
        test_failures_in_case = 0;                                                                           \
        fn();                                                                                                \
        if (test_failures_in_case == 0) {                                                                    \
            test_cases_passed++;                                                                             \
            printf("PASS %s\n", #fn);                                                                        \
        } else {                                                                                             \
            test_cases_failed++;                                                                             \
            printf("FAIL %s (%d failed checks)\n", #fn, test_failures_in_case);                              \
        }                                                                                                    \
        fflush(stdout);                                                                                      \
    } while (0)

// Death tests: runs fn(arg) in a forked child with its stderr captured; returns the child's exit code (-1 when it did
// not exit, e.g. killed by a signal) and its stderr, NUL-terminated, in out.
static inline int run_captured(void (*fn)(void*), void* arg, char* out, size_t outlen) {
    int pipefd[2];
    if (pipe(pipefd) != 0) { return -1; }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        dup2(pipefd[1], 2);
        fn(arg);
        _exit(0);
    }
    close(pipefd[1]);
    size_t got = 0;
    ssize_t n;
    while (got < outlen - 1 && (n = read(pipefd[0], out + got, outlen - 1 - got)) > 0) { got += (size_t)n; }
    out[got] = '\0';
    close(pipefd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Prints the summary line and returns the process exit code.
static inline int test_summary(const char* suite) {
    printf("%s: %d passed, %d failed\n", suite, test_cases_passed, test_cases_failed);
    return test_cases_failed == 0 ? 0 : 1;
}

#endif  // GPTFP8_TESTING_H
