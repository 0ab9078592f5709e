/*
llmc/testing.h — the few lines every CPU test program shares: named test cases, checks that count failures and say
what went wrong, and the closing "<suite>: N passed, M failed" line that .ci/run adds up.

A test case is a function returning void; CHECK records a failure (with file:line and a printf-style message) without
stopping, so one run shows every broken assertion. RUN_TEST prints PASS or FAIL per case. run_captured runs a piece
that must exit (a one-line error) in a child and hands back its exit code and stderr.

A program whose main passes its arguments to test_select runs only some of its cases: `prog NAME...` those whose
names contain one of the NAMEs, `prog --skip NAME` all but those containing NAME (both may be given; a compute-sanitizer
run leaves out the slow cases this way). A NAME that matches no case makes the run fail, so a typo cannot pass.
*/
#ifndef GPTFP8_TESTING_H
#define GPTFP8_TESTING_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

// The case selection (test_select): the NAMEs to run and to skip, and how many cases each matched
#define TEST_MAX_SELECTION 32
static const char* test_only[TEST_MAX_SELECTION];
static const char* test_skip[TEST_MAX_SELECTION];
static int test_only_matched[TEST_MAX_SELECTION], test_skip_matched[TEST_MAX_SELECTION];
static int test_num_only = 0, test_num_skip = 0, test_cases_not_selected = 0;

// Reads main's arguments: NAME... and --skip NAME. Anything else (an option it does not know, --skip without a NAME,
// more than TEST_MAX_SELECTION names) exits 2 with one line.
static inline void test_select(int argc, char** argv) {
    for (int i = 1; i < argc; i++) {
        int skip = strcmp(argv[i], "--skip") == 0;
        if (skip && i + 1 >= argc) {
            fprintf(stderr, "error: --skip needs a test name (usage: %s [NAME...] [--skip NAME]...)\n", argv[0]);
            exit(2);
        }
        const char* name = skip ? argv[++i] : argv[i];
        if (name[0] == '-' || name[0] == '\0') {
            fprintf(stderr, "error: unknown option '%s' (usage: %s [NAME...] [--skip NAME]...)\n", name, argv[0]);
            exit(2);
        }
        if ((skip ? test_num_skip : test_num_only) >= TEST_MAX_SELECTION) {
            fprintf(stderr, "error: more than %d test names\n", TEST_MAX_SELECTION);
            exit(2);
        }
        if (skip) { test_skip[test_num_skip++] = name; } else { test_only[test_num_only++] = name; }
    }
}

// Whether the case named `name` runs: it contains one of the NAMEs (or none was given) and no --skip NAME
static inline int test_case_selected(const char* name) {
    int skipped = 0, wanted = test_num_only == 0;
    for (int i = 0; i < test_num_skip; i++) {
        if (strstr(name, test_skip[i])) { test_skip_matched[i]++; skipped = 1; }
    }
    for (int i = 0; i < test_num_only; i++) {
        if (strstr(name, test_only[i])) { test_only_matched[i]++; wanted = 1; }
    }
    return wanted && !skipped;
}

#define RUN_TEST(fn)                                                                                         \
    do {                                                                                                     \
        if (!test_case_selected(#fn)) {                                                                      \
            test_cases_not_selected++;                                                                       \
            break;                                                                                           \
        }                                                                                                    \
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

// Prints the summary line and returns the process exit code. A selection NAME that matched no case is one failure.
static inline int test_summary(const char* suite) {
    for (int i = 0; i < test_num_only + test_num_skip; i++) {
        int only = i < test_num_only;
        if ((only ? test_only_matched[i] : test_skip_matched[i - test_num_only]) == 0) {
            printf("FAIL selection: no test case of %s matches '%s'\n", suite,
                   only ? test_only[i] : test_skip[i - test_num_only]);
            test_cases_failed++;
        }
    }
    if (test_cases_not_selected > 0) { printf("(%d test cases not selected)\n", test_cases_not_selected); }
    printf("%s: %d passed, %d failed\n", suite, test_cases_passed, test_cases_failed);
    return test_cases_failed == 0 ? 0 : 1;
}

#endif  // GPTFP8_TESTING_H
