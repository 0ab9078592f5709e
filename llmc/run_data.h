/*
llmc/run_data.h — what a run was trained on, so a model never meets another tokenizer or data by accident. Shared by
both mains (run.h and the trainers call it).

A model file holds its vocabulary size and nothing else of its tokenizer: a model trained on your own text, sampled
with the default flags, would decode through tinyshakespeare's tokenizer and be evaluated on its val shard; one
fine-tuned with another tokenizer of the same size learns garbage. So a run folder (-o) records its data:

  dataset.txt, written when a run starts (atomically, beside main.log), text, one record a line, fields separated by
  one tab, the path last (it may hold spaces):
      gptfp8 run data 1
      tokenizer<TAB><bytes><TAB><XXH3-64, 16 hex digits><TAB><absolute path>     (absent: the run had no tokenizer)
      train<TAB><absolute glob pattern of -i>
      val<TAB><absolute glob pattern of -j>                                        (absent with -v 0)
      train_shard<TAB><bytes><TAB><XXH3-64><TAB><absolute path>                   (each, in the loader's order)
      val_shard<TAB><bytes><TAB><XXH3-64><TAB><absolute path>
  Lines starting with '#' are notes. A resumed run checks the data and tokenizer it finds against the record and
  refuses a change (-other_data 1 resumes anyway and records the new data); the state file keeps the tokenizer's
  checksum too (checkpoint.h), for a folder whose record was lost.

Where a model meets a tokenizer, the two must be the run's:
  - -e FILE with a dataset.txt beside FILE (a checkpoint in its run folder): the -i, -j and -tk not given are the
    record's, so `-e RUN/model_N.bin -x 0` evaluates and samples as the run did; a tokenizer whose checksum is not the
    record's (another -tk, or the file changed since) is refused, -other_tokenizer 1 goes on with a warning;
  - -e FILE without one (llm.c's model files, a copy moved out of its folder): one warning line, the flags as given;
  - data made by dev/data/tokenizer carries a manifest (llmc/shard_manifest.h) naming the tokenizer that encoded it:
    data encoded with another tokenizer than the run's is refused the same way;
  - -y 1: the tokenizer the checkpoint's state file recorded.
Checksums are XXH3-64 (llmc/checksum.h) of whole files: every shard is read once when a run starts (about a second
per GB from the page cache; llm.c's 10B-token FineWeb, 20 GB, takes longer from a cold disk).
*/
#ifndef GPTFP8_RUN_DATA_H
#define GPTFP8_RUN_DATA_H

#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint.h"
#include "checksum.h"
#include "shard_manifest.h"
#include "utils.h"

#define RUN_DATA_FILE "dataset.txt"
#define RUN_DATA_MAGIC "gptfp8 run data 1"

typedef struct {
    char* path;  // absolute
    long long bytes;
    uint64_t checksum;
} RunDataFile;

typedef struct {
    int have_tokenizer;
    RunDataFile tokenizer;
    char* train_pattern;  // absolute
    char* val_pattern;    // absolute; NULL: no val data
    RunDataFile* train;
    size_t num_train;
    RunDataFile* val;
    size_t num_val;
} RunData;

static inline void run_data_file_free(RunDataFile* f) {
    free(f->path);
    memset(f, 0, sizeof(*f));
}

static inline void run_data_free(RunData* d) {
    run_data_file_free(&d->tokenizer);
    free(d->train_pattern);
    free(d->val_pattern);
    for (size_t i = 0; i < d->num_train; i++) { run_data_file_free(&d->train[i]); }
    for (size_t i = 0; i < d->num_val; i++) { run_data_file_free(&d->val[i]); }
    free(d->train);
    free(d->val);
    memset(d, 0, sizeof(*d));
}

// A path as the record keeps it: absolute, so the record reads the same from any folder. An existing file's is
// realpath's; a pattern's is the working folder joined to it (its wildcards stay).
static inline char* run_data_absolute(const char* path) {
    if (path[0] == '/') { return alloc_printf("%s", path); }
    char* cwd = getcwd(NULL, 0);
    if (!cwd) { die("cannot tell the working folder: %s", strerror(errno)); }
    char* joined = alloc_printf("%s/%s", cwd, strncmp(path, "./", 2) == 0 ? path + 2 : path);
    free(cwd);
    return joined;
}

// The record of the run that wrote `file` (a checkpoint in its run folder): dataset.txt beside it.
static inline char* run_data_path_beside(const char* file) {
    const char* slash = strrchr(file, '/');
    return slash ? alloc_printf("%.*s/%s", (int)(slash - file), file, RUN_DATA_FILE) : alloc_printf("%s", RUN_DATA_FILE);
}

// A file's absolute path, size and checksum.
static inline int run_data_file_of(const char* path, RunDataFile* f, char* err, size_t errlen) {
    memset(f, 0, sizeof(*f));
    char* real = realpath(path, NULL);
    if (!real) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    if (strchr(real, '\n')) {  // the record is one line a file
        snprintf(err, errlen, "%s: a path with a line break cannot be recorded in a run's %s", real, RUN_DATA_FILE);
        free(real);
        return -1;
    }
    f->path = real;
    f->bytes = file_size_of(real);
    if (f->bytes < 0 || file_checksum(real, f->bytes, &f->checksum, err, errlen)) {
        if (f->bytes < 0) { snprintf(err, errlen, "cannot read %s: %s", real, strerror(errno)); }
        run_data_file_free(f);
        return -1;
    }
    return 0;
}

static inline void run_data_files_of(const glob_t* files, RunDataFile** out, size_t* count) {
    char err[ERROR_MESSAGE_MAX];
    *count = files->gl_pathc;
    *out = (RunDataFile*)calloc_or_die(*count, sizeof(RunDataFile), "the data record");
    for (size_t i = 0; i < *count; i++) {
        if (run_data_file_of(files->gl_pathv[i], &(*out)[i], err, sizeof(err))) { die("%s", err); }
    }
}

// What this run reads: the tokenizer (NULL: none; its checksum already taken) and the shards its loaders matched
// (val_files NULL: no val).
static inline void run_data_collect(RunData* d, const RunDataFile* tokenizer, const char* train_pattern,
                                    const glob_t* train_files, const char* val_pattern, const glob_t* val_files) {
    memset(d, 0, sizeof(*d));
    if (tokenizer) {
        d->tokenizer = *tokenizer;
        d->tokenizer.path = alloc_printf("%s", tokenizer->path);
        d->have_tokenizer = 1;
    }
    d->train_pattern = run_data_absolute(train_pattern);
    run_data_files_of(train_files, &d->train, &d->num_train);
    if (val_files) {
        d->val_pattern = run_data_absolute(val_pattern);
        run_data_files_of(val_files, &d->val, &d->num_val);
    }
    if (strchr(d->train_pattern, '\n') || (d->val_pattern && strchr(d->val_pattern, '\n'))) {
        die("a data pattern with a line break cannot be recorded in a run's %s", RUN_DATA_FILE);
    }
}

// ----------------------------------------------------------------------------
// dataset.txt

static inline void run_data_write_file(AtomicFile* af, const char* kind, const RunDataFile* f) {
    char hex[CHECKSUM_HEX_CHARS];
    checksum_hex(f->checksum, hex);
    char* line = alloc_printf("%s\t%lld\t%s\t%s\n", kind, f->bytes, hex, f->path);
    atomic_write(af, line, strlen(line));
    free(line);
}

// Writes dir/dataset.txt atomically; `note` (NULL: none) becomes a '#' line after the first.
static inline void run_data_write(const char* dir, const RunData* d, const char* note) {
    char err[ERROR_MESSAGE_MAX];
    char* path = alloc_printf("%s/%s", dir, RUN_DATA_FILE);
    AtomicFile af;
    if (atomic_open(&af, path, err, sizeof(err))) { die("cannot record the run's data: %s", err); }
    atomic_write(&af, RUN_DATA_MAGIC "\n", strlen(RUN_DATA_MAGIC) + 1);
    if (note) {
        char* line = alloc_printf("# %s\n", note);
        atomic_write(&af, line, strlen(line));
        free(line);
    }
    if (d->have_tokenizer) { run_data_write_file(&af, "tokenizer", &d->tokenizer); }
    char* line = alloc_printf("train\t%s\n", d->train_pattern);
    atomic_write(&af, line, strlen(line));
    free(line);
    if (d->val_pattern) {
        line = alloc_printf("val\t%s\n", d->val_pattern);
        atomic_write(&af, line, strlen(line));
        free(line);
    }
    for (size_t i = 0; i < d->num_train; i++) { run_data_write_file(&af, "train_shard", &d->train[i]); }
    for (size_t i = 0; i < d->num_val; i++) { run_data_write_file(&af, "val_shard", &d->val[i]); }
    if (atomic_commit(&af, err, sizeof(err))) { die("cannot record the run's data: %s", err); }
    free(path);
}

static inline int run_data_push(RunDataFile** files, size_t* count, const RunDataFile* f) {
    RunDataFile* grown = (RunDataFile*)realloc(*files, (*count + 1) * sizeof(RunDataFile));
    if (!grown) { return -1; }
    *files = grown;
    grown[(*count)++] = *f;
    return 0;
}

// Reads a dataset.txt: 0 read, 1 there is none, -1 an error (err: the file and line).
static inline int run_data_read(const char* path, RunData* d, char* err, size_t errlen) {
    memset(d, 0, sizeof(*d));
    FILE* f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) { return 1; }
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    char* line = NULL;
    size_t capacity = 0;
    ssize_t length;
    int number = 0, rc = 0;
    while (rc == 0 && (length = getline(&line, &capacity, f)) >= 0) {
        number++;
        if (length > 0 && line[length - 1] == '\n') { line[--length] = '\0'; }
        if ((size_t)length != strlen(line)) {
            snprintf(err, errlen, "%s: line %d holds a NUL byte: not a run's data record", path, number);
            rc = -1;
            break;
        }
        if (number == 1) {
            if (strcmp(line, RUN_DATA_MAGIC) != 0) {
                snprintf(err, errlen, "%s: line 1 is not \"%s\": not a run's data record", path, RUN_DATA_MAGIC);
                rc = -1;
            }
            continue;
        }
        if (line[0] == '#' || length == 0) { continue; }
        char* tab = strchr(line, '\t');
        if (!tab) {
            snprintf(err, errlen, "%s: line %d has no tab-separated fields", path, number);
            rc = -1;
            break;
        }
        *tab = '\0';
        const char *kind = line, *rest = tab + 1;
        if (strcmp(kind, "train") == 0 || strcmp(kind, "val") == 0) {
            char** pattern = kind[0] == 't' ? &d->train_pattern : &d->val_pattern;
            if (*pattern || !rest[0]) {
                snprintf(err, errlen, "%s: line %d: %s", path, number, *pattern ? "a second pattern" : "an empty pattern");
                rc = -1;
            } else {
                *pattern = alloc_printf("%s", rest);
            }
            continue;
        }
        int is_tokenizer = strcmp(kind, "tokenizer") == 0, is_train = strcmp(kind, "train_shard") == 0,
            is_val = strcmp(kind, "val_shard") == 0;
        if (!is_tokenizer && !is_train && !is_val) {
            snprintf(err, errlen, "%s: line %d: unknown record '%s'", path, number, kind);
            rc = -1;
            break;
        }
        // <bytes> <checksum> <path>
        char* fields[3] = {(char*)rest, NULL, NULL};
        for (int i = 1; i < 3 && fields[i - 1]; i++) {
            char* next = strchr(fields[i - 1], '\t');
            if (next) { *next++ = '\0'; }
            fields[i] = next;
        }
        RunDataFile file = {NULL, 0, 0};
        char* end = NULL;
        errno = 0;
        file.bytes = fields[2] ? strtoll(fields[0], &end, 10) : -1;
        if (!fields[2] || !fields[2][0] || end == fields[0] || *end || errno || file.bytes < 0 ||
            checksum_parse_hex(fields[1], &file.checksum)) {
            snprintf(err, errlen, "%s: line %d: expected %s<TAB>bytes<TAB>16 hex digits<TAB>path", path, number, kind);
            rc = -1;
            break;
        }
        if (is_tokenizer && d->have_tokenizer) {
            snprintf(err, errlen, "%s: line %d: a second tokenizer", path, number);
            rc = -1;
            break;
        }
        file.path = alloc_printf("%s", fields[2]);
        if (is_tokenizer) {
            d->tokenizer = file;
            d->have_tokenizer = 1;
        } else if (run_data_push(is_train ? &d->train : &d->val, is_train ? &d->num_train : &d->num_val, &file)) {
            free(file.path);
            snprintf(err, errlen, "out of memory reading %s", path);
            rc = -1;
        }
    }
    int read_failed = ferror(f);
    free(line);
    fclose(f);
    if (rc == 0 && read_failed) {
        snprintf(err, errlen, "cannot read %s", path);
        rc = -1;
    }
    if (rc == 0 && number == 0) {
        snprintf(err, errlen, "%s is empty: not a run's data record", path);
        rc = -1;
    }
    if (rc == 0 && (!d->train_pattern || d->num_train == 0)) {
        snprintf(err, errlen, "%s: no train pattern or train shard: not a complete data record", path);
        rc = -1;
    }
    if (rc) { run_data_free(d); }
    return rc;
}

// The first difference between the tokenizer a run recorded and the one it reads now, into `what` (empty: none).
static inline void run_data_tokenizer_difference(const RunData* was, const RunData* now, char* what, size_t len) {
    char a[CHECKSUM_HEX_CHARS], b[CHECKSUM_HEX_CHARS];
    what[0] = '\0';
    if (was->have_tokenizer != now->have_tokenizer) {
        snprintf(what, len, "the run had %s tokenizer, now there is %s", was->have_tokenizer ? "a" : "no",
                 now->have_tokenizer ? now->tokenizer.path : "none");
    } else if (was->have_tokenizer && was->tokenizer.checksum != now->tokenizer.checksum) {
        checksum_hex(was->tokenizer.checksum, a);
        checksum_hex(now->tokenizer.checksum, b);
        snprintf(what, len, "the tokenizer was %s (XXH3 %s), now %s is XXH3 %s", was->tokenizer.path, a,
                 now->tokenizer.path, b);
    }
}

// The first difference between the shards a run recorded and the ones it reads now, into `what` (empty: none).
static inline void run_data_shards_difference(const RunData* was, const RunData* now, char* what, size_t len) {
    char a[CHECKSUM_HEX_CHARS], b[CHECKSUM_HEX_CHARS];
    what[0] = '\0';
    const RunDataFile* sets[2][2] = {{was->train, now->train}, {was->val, now->val}};
    size_t counts[2][2] = {{was->num_train, now->num_train}, {was->num_val, now->num_val}};
    for (int s = 0; s < 2; s++) {
        const char* split = s == 0 ? "train" : "val";
        if (counts[s][0] != counts[s][1]) {
            snprintf(what, len, "the %s data was %zu shard%s, now %zu", split, counts[s][0],
                     counts[s][0] == 1 ? "" : "s", counts[s][1]);
            return;
        }
        for (size_t i = 0; i < counts[s][0]; i++) {
            const RunDataFile *x = &sets[s][0][i], *y = &sets[s][1][i];
            if (x->checksum != y->checksum || x->bytes != y->bytes || strcmp(x->path, y->path) != 0) {
                checksum_hex(x->checksum, a);
                checksum_hex(y->checksum, b);
                snprintf(what, len, "%s shard %zu was %s (%lld bytes, XXH3 %s), now %s (%lld bytes, XXH3 %s)", split,
                         i + 1, x->path, x->bytes, a, y->path, y->bytes, b);
                return;
            }
        }
    }
}

// ----------------------------------------------------------------------------
// where a model meets a tokenizer

// Data made by dev/data/tokenizer names, in its manifest, the tokenizer that encoded it: it must be the run's.
static inline int run_data_check_shard_tokenizer(const char* shard, const RunDataFile* tokenizer, char* err,
                                                 size_t errlen) {
    ShardManifest m;
    int found = shard_manifest_of(shard, &m, err, errlen);
    if (found < 0) { return -1; }
    if (found == 1) { return 0; }  // llm.c's shards say nothing of their tokenizer
    int rc = 0;
    if (m.tokenizer_checksum != tokenizer->checksum) {
        char a[CHECKSUM_HEX_CHARS], b[CHECKSUM_HEX_CHARS];
        checksum_hex(m.tokenizer_checksum, a);
        checksum_hex(tokenizer->checksum, b);
        snprintf(err, errlen, "data shard %s was encoded with another tokenizer (%s records XXH3 %s) than %s (XXH3 %s)",
                 shard, m.path, a, tokenizer->path, b);
        rc = -1;
    }
    shard_manifest_free(&m);
    return rc;
}

#endif  // GPTFP8_RUN_DATA_H
