/*
llmc/gemm_choice.h — the GEMM algorithms a run chose by timing (train_gpt_fp8 -gemm_autotune N, llmc/gemm.cuh), kept
in its output folder so that a resumed run, or a run started in a folder holding another run's choices, multiplies
with the very algorithms it did: cuBLASLt's algorithms for one problem can differ in their bits (split-k, reduction
order), and a timed choice can differ between runs, so a choice is made once per problem and then read, never made
again. Plain C on the host (no CUDA): llmc/test_gemm_choice.c checks it on the CPU.

The file, one per rank (gemm_algos_RANK.tsv, RANK as the state files' five digits), tab-separated:
    # gptfp8 gemm_algos 1
    # device<TAB>NAME<TAB>cc<TAB>90<TAB>cublaslt<TAB>130100
    m  n  k  a_type  ...  b_scale_mode  answer  answers  ms  first_ms  algo      (the column names, one line)
    one row per problem: the problem's key (GEMM_CHOICE_KEY_WORDS integers, llmc/gemm.cuh's GemmKey in the order of
    gemm_choice_key_columns), which of the heuristic's answers was fastest (0: its first) of how many timed, the
    milliseconds per call of that one and of the first, and the algorithm (cublasLtMatmulAlgo_t, 8 words of 64 bits,
    128 hex digits).
The device line names the GPU and the cuBLASLt that chose: an algorithm is an opaque value of one cuBLASLt on one
architecture, so a file from another GPU or another cuBLASLt is not used (the trainer keeps it as NAME.N, says so and chooses afresh). A
file that cannot be read as above is refused in one line naming the line; nothing is guessed. It is written through
checkpoint.h's atomic replace, so a crash leaves the old file or the new one.
*/
#ifndef GPTFP8_GEMM_CHOICE_H
#define GPTFP8_GEMM_CHOICE_H

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint.h"  // AtomicFile
#include "utils.h"

#define GEMM_CHOICE_KEY_WORDS 17
#define GEMM_CHOICE_ALGO_WORDS 8  // cublasLtMatmulAlgo_t is uint64_t data[8]
#define GEMM_CHOICE_MAGIC "# gptfp8 gemm_algos 1"

static const char* const gemm_choice_key_columns[GEMM_CHOICE_KEY_WORDS] = {
    "m", "n", "k", "a_type", "b_type", "out_type", "bias", "accumulate", "fast_accum", "trans_a", "trans_b",
    "a_align", "b_align", "out_align", "bias_align", "a_scale_mode", "b_scale_mode"};

typedef struct {
    int32_t key[GEMM_CHOICE_KEY_WORDS];
    int answer, answers;    // the fastest's place in the heuristic's list (0: its first), of how many timed
    double ms, first_ms;    // milliseconds per call: the chosen answer's, the first answer's
    uint64_t algo[GEMM_CHOICE_ALGO_WORDS];
} GemmChoice;

// What chose the algorithms: the GPU's name and compute capability (major * 10 + minor), cuBLASLt's version.
typedef struct {
    char device[128];
    int compute_capability;
    long cublaslt_version;
} GemmChoiceDevice;

typedef struct {
    GemmChoiceDevice device;
    GemmChoice* rows;
    int count, capacity;
} GemmChoices;

static inline void gemm_choices_free(GemmChoices* c) {
    free(c->rows);
    memset(c, 0, sizeof(*c));
}

static inline int gemm_choice_device_same(const GemmChoiceDevice* a, const GemmChoiceDevice* b) {
    return strcmp(a->device, b->device) == 0 && a->compute_capability == b->compute_capability &&
           a->cublaslt_version == b->cublaslt_version;
}

// The row of a problem, or NULL.
static inline const GemmChoice* gemm_choices_find(const GemmChoices* c, const int32_t key[GEMM_CHOICE_KEY_WORDS]) {
    for (int i = 0; i < c->count; i++) {
        if (memcmp(c->rows[i].key, key, sizeof(c->rows[i].key)) == 0) { return &c->rows[i]; }
    }
    return NULL;
}

// Adds a problem's row (a problem already there is replaced: one row per problem).
static inline void gemm_choices_put(GemmChoices* c, const GemmChoice* row) {
    for (int i = 0; i < c->count; i++) {
        if (memcmp(c->rows[i].key, row->key, sizeof(row->key)) == 0) {
            c->rows[i] = *row;
            return;
        }
    }
    if (c->count == c->capacity) {
        int capacity = c->capacity ? 2 * c->capacity : 64;
        GemmChoice* rows = (GemmChoice*)realloc(c->rows, (size_t)capacity * sizeof(GemmChoice));
        if (!rows) { die("out of memory for %d GEMM algorithm choices", capacity); }
        c->rows = rows;
        c->capacity = capacity;
    }
    c->rows[c->count++] = *row;
}

// The file's three header lines, the column line last (no newline in `out`'s last line).
static inline void gemm_choice_column_line(char* out, size_t len) {
    out[0] = '\0';
    for (int i = 0; i < GEMM_CHOICE_KEY_WORDS; i++) {
        strncat(out, gemm_choice_key_columns[i], len - strlen(out) - 1);
        strncat(out, "\t", len - strlen(out) - 1);
    }
    strncat(out, "answer\tanswers\tms\tfirst_ms\talgo", len - strlen(out) - 1);
}

// Writes the choices to path (atomically). Returns 0, or -1 with one line in err.
static inline int gemm_choices_write(const char* path, const GemmChoices* c, char* err, size_t errlen) {
    if (strchr(c->device.device, '\t') || strchr(c->device.device, '\n')) {
        snprintf(err, errlen, "cannot write %s: the device name has a tab or a newline", path);
        return -1;
    }
    AtomicFile af;
    if (atomic_open(&af, path, err, errlen)) { return -1; }
    char columns[512];
    gemm_choice_column_line(columns, sizeof(columns));
    char line[1024];
    int n = snprintf(line, sizeof(line), "%s\n# device\t%s\tcc\t%d\tcublaslt\t%ld\n%s\n", GEMM_CHOICE_MAGIC,
                     c->device.device, c->device.compute_capability, c->device.cublaslt_version, columns);
    atomic_write(&af, line, (size_t)n);
    for (int r = 0; r < c->count; r++) {
        const GemmChoice* row = &c->rows[r];
        n = 0;
        for (int i = 0; i < GEMM_CHOICE_KEY_WORDS; i++) {
            n += snprintf(line + n, sizeof(line) - (size_t)n, "%" PRId32 "\t", row->key[i]);
        }
        // %.17g: the milliseconds read back as written
        n += snprintf(line + n, sizeof(line) - (size_t)n, "%d\t%d\t%.17g\t%.17g\t", row->answer, row->answers, row->ms,
                      row->first_ms);
        for (int i = 0; i < GEMM_CHOICE_ALGO_WORDS; i++) {
            n += snprintf(line + n, sizeof(line) - (size_t)n, "%016" PRIx64, row->algo[i]);
        }
        n += snprintf(line + n, sizeof(line) - (size_t)n, "\n");
        atomic_write(&af, line, (size_t)n);
    }
    return atomic_commit(&af, err, errlen);
}

// Splits a line (its newline removed) at tabs into at most `max` fields; returns how many (max + 1: too many).
static inline int gemm_choice_split(char* line, char** fields, int max) {
    int count = 0;
    char* p = line;
    for (;;) {
        if (count == max) { return max + 1; }
        fields[count++] = p;
        char* tab = strchr(p, '\t');
        if (!tab) { return count; }
        *tab = '\0';
        p = tab + 1;
    }
}

// An integer as the writer writes it: decimal digits, a '-' first at most (no '+', no spaces), within [lo, hi]
static inline int gemm_choice_parse_long(const char* s, long lo, long hi, long* out) {
    char* end = NULL;
    if (!((s[0] >= '0' && s[0] <= '9') || (s[0] == '-' && s[1] >= '0' && s[1] <= '9'))) { return -1; }
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno != 0 || v < lo || v > hi) { return -1; }
    *out = v;
    return 0;
}

static inline int gemm_choice_parse_ms(const char* s, double* out) {
    char* end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno != 0 || !(v >= 0.0) || v > 1e9) { return -1; }
    *out = v;
    return 0;
}

static inline int gemm_choice_parse_algo(const char* s, uint64_t algo[GEMM_CHOICE_ALGO_WORDS]) {
    if (strlen(s) != 16 * GEMM_CHOICE_ALGO_WORDS) { return -1; }
    for (int w = 0; w < GEMM_CHOICE_ALGO_WORDS; w++) {
        uint64_t v = 0;
        for (int d = 0; d < 16; d++) {
            char ch = s[16 * w + d];
            int digit = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
            if (digit < 0) { return -1; }
            v = v << 4 | (uint64_t)digit;
        }
        algo[w] = v;
    }
    return 0;
}

// Reads path into c (emptied first). Returns 1 when read, 0 when there is no such file, -1 with one line in err
// (naming the file and the line) when it cannot be read or is not such a file.
static inline int gemm_choices_read(const char* path, GemmChoices* c, char* err, size_t errlen) {
    memset(c, 0, sizeof(*c));
    FILE* f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) { return 0; }
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    char columns[512];
    gemm_choice_column_line(columns, sizeof(columns));
    char* line = NULL;
    size_t capacity = 0;
    ssize_t got;
    long number = 0;
    const char* wrong = NULL;
    while (!wrong && (got = getline(&line, &capacity, f)) >= 0) {
        number++;
        if (got == 0 || line[got - 1] != '\n') { wrong = "a line without its newline (a cut file)"; break; }
        line[got - 1] = '\0';
        if ((ssize_t)strlen(line) != got - 1) { wrong = "a NUL byte"; break; }
        if (number == 1) {
            if (strcmp(line, GEMM_CHOICE_MAGIC) != 0) { wrong = "not \"" GEMM_CHOICE_MAGIC "\""; }
            continue;
        }
        if (number == 3) {
            if (strcmp(line, columns) != 0) { wrong = "not the column names"; }
            continue;
        }
        char* fields[GEMM_CHOICE_KEY_WORDS + 6];
        if (number == 2) {
            long cc, version;
            if (gemm_choice_split(line, fields, 6) != 6 || strcmp(fields[0], "# device") != 0 ||
                strcmp(fields[2], "cc") != 0 || strcmp(fields[4], "cublaslt") != 0 || fields[1][0] == '\0' ||
                strlen(fields[1]) >= sizeof(c->device.device) || gemm_choice_parse_long(fields[3], 0, 1000, &cc) ||
                gemm_choice_parse_long(fields[5], 0, 100000000L, &version)) {
                wrong = "not a device line (# device, name, cc, capability, cublaslt, version)";
                continue;
            }
            strcpy(c->device.device, fields[1]);
            c->device.compute_capability = (int)cc;
            c->device.cublaslt_version = version;
            continue;
        }
        GemmChoice row;
        memset(&row, 0, sizeof(row));
        int count = gemm_choice_split(line, fields, GEMM_CHOICE_KEY_WORDS + 5);
        if (count != GEMM_CHOICE_KEY_WORDS + 5) { wrong = "not the 22 columns of a problem's row"; continue; }
        for (int i = 0; i < GEMM_CHOICE_KEY_WORDS && !wrong; i++) {
            long v = 0;
            if (gemm_choice_parse_long(fields[i], 0, INT32_MAX, &v)) { wrong = "a key column that is not an integer >= 0"; }
            row.key[i] = (int32_t)v;
        }
        if (wrong) { continue; }
        long answer, answers;
        if (gemm_choice_parse_long(fields[GEMM_CHOICE_KEY_WORDS], 0, 1000, &answer) ||
            gemm_choice_parse_long(fields[GEMM_CHOICE_KEY_WORDS + 1], 1, 1000, &answers) || answer >= answers) {
            wrong = "answer and answers not 0 <= answer < answers";
        } else if (gemm_choice_parse_ms(fields[GEMM_CHOICE_KEY_WORDS + 2], &row.ms) ||
                   gemm_choice_parse_ms(fields[GEMM_CHOICE_KEY_WORDS + 3], &row.first_ms)) {
            wrong = "a time that is not a number >= 0";
        } else if (gemm_choice_parse_algo(fields[GEMM_CHOICE_KEY_WORDS + 4], row.algo)) {
            wrong = "an algorithm that is not 128 lowercase hex digits";
        } else if (gemm_choices_find(c, row.key)) {
            wrong = "a problem that has a row already";
        }
        if (wrong) { continue; }
        row.answer = (int)answer;
        row.answers = (int)answers;
        gemm_choices_put(c, &row);
    }
    int read_error = !wrong && ferror(f);
    free(line);
    fclose(f);
    if (!wrong && !read_error && number < 3) {
        wrong = "fewer than its three header lines";
        number = number + 1;  // the line missing (an empty file: line 1)
    }
    if (read_error) {
        snprintf(err, errlen, "cannot read %s: a read error", path);
    } else if (wrong) {
        snprintf(err, errlen, "%s line %ld: %s; it is not a gemm_algos file as this trainer writes it (delete it to "
                 "choose the algorithms afresh)", path, number, wrong);
    }
    if (read_error || wrong) {
        gemm_choices_free(c);
        return -1;
    }
    return 1;
}

// Renames the file at path to path.N, N the first number free (a file another GPU wrote is kept, not overwritten).
// Returns the new name (free it), or NULL with one line in err.
static inline char* gemm_choices_set_aside(const char* path, char* err, size_t errlen) {
    for (int n = 1;; n++) {
        char* kept = alloc_printf("%s.%d", path, n);
        struct stat st;
        if (lstat(kept, &st) != 0) {
            if (errno == ENOENT && rename(path, kept) == 0) { return kept; }
            snprintf(err, errlen, "cannot keep %s as %s: %s", path, kept, strerror(errno));
            free(kept);
            return NULL;
        }
        free(kept);  // taken: the next number
    }
}

// The file of `rank` in folder dir (free it).
static inline char* gemm_choices_path(const char* dir, int rank) { return alloc_printf("%s/gemm_algos_%05d.tsv", dir, rank); }

#endif  // GPTFP8_GEMM_CHOICE_H
