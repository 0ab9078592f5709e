/*
llmc/checkpoint.h — checkpoint files that survive crashes: atomic writes (temporary file, fsync, rename, fsync of the
folder), the model file in llm.c's format (see gpt2.h), and our training-state file with the full FP8 metadata.

A crash at any moment leaves either the old file or the complete new one, never a torn one. Checkpoint names follow
llm.c: model_%08d.bin, state_%08d_%05d.bin (step, rank), and DONE_%08d written last, so a resume only ever picks a
step whose files were all completed.

State file, version 2 (all little-endian), one per rank:
  int32 header[256]:
    [0] 20241122 magic  [1] 2 version  [2] num_processes  [3] process_rank  [4] precision (0 fp32, 1 bf16, 2 fp8)
    [5] number of FP8 modules M (0: no FP8 state)  [6] amax_history_len  [7] margin  [8] interval  [9] fp8_format
    [10] amax_compute_algo  [11..13] override fprop, dgrad, wgrad  [14] reduce_amax  [15] fp8_bf16_first_last
    [16] fp8_lm_head  [17] B  [18] T
    [20..21] step (int64: optimizer steps done)  [22..23] number of parameters (int64)  [24..25] RNG state (uint64)
    [26..27] train loader shard index (int64)  [28..29] train loader position in tokens (int64)
    [30..31] opt_offset, [32..33] opt_count (int64): the rank's optimizer shard (llmc/zero.h); 0 and num_parameters
    in a single process or without ZeRO
    [34] FP8 scaling recipe (0 delayed, 1 current; files from before it have 0 there, which is what they used)
  float m[opt_count], float v[opt_count]              AdamW moments of parameters [opt_offset, opt_offset + opt_count)
  float fp8_meta[(amax_history_len + 2) * 5M]        fp8/meta.h's buffer as-is: amax_history, scale, scale_inv
  uint32 checksum[2]                                  FNV-1a over every 32-bit word before it (low, high half)
*/
#ifndef GPTFP8_CHECKPOINT_H
#define GPTFP8_CHECKPOINT_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../fp8/recipe.h"
#include "gpt2.h"

#define STATE_MAGIC 20241122
#define STATE_VERSION 2

// ----------------------------------------------------------------------------
// a 64-bit FNV-1a over 32-bit words: every record we write is a multiple of 4 bytes, so the checksum does not depend
// on how the writes were chunked

static inline uint64_t checksum_words(uint64_t hash, const void* data, size_t bytes) {
    const unsigned char* p = (const unsigned char*)data;
    for (size_t i = 0; i + 4 <= bytes; i += 4) {
        uint32_t word;
        memcpy(&word, p + i, 4);
        hash ^= word;
        hash *= 0x100000001B3ull;
    }
    return hash;
}
#define CHECKSUM_INIT 0xCBF29CE484222325ull

// ----------------------------------------------------------------------------
// atomic files

typedef struct {
    FILE* file;
    char path[1024];
    char tmp_path[1100];
    uint64_t checksum;
    int failed;  // a write failed; commit refuses and removes the temporary file
} AtomicFile;

static inline int atomic_open(AtomicFile* af, const char* path, char* err, size_t errlen) {
    memset(af, 0, sizeof(*af));
    if (strlen(path) >= sizeof(af->path)) {
        snprintf(err, errlen, "%s: path too long", path);
        return -1;
    }
    snprintf(af->path, sizeof(af->path), "%s", path);
    snprintf(af->tmp_path, sizeof(af->tmp_path), "%s.tmp", path);
    af->file = fopen(af->tmp_path, "wb");
    if (!af->file) {
        snprintf(err, errlen, "cannot create %s: %s", af->tmp_path, strerror(errno));
        return -1;
    }
    af->checksum = CHECKSUM_INIT;
    return 0;
}

static inline void atomic_write(AtomicFile* af, const void* data, size_t bytes) {
    if (af->failed) { return; }
    if (bytes && fwrite(data, 1, bytes, af->file) != bytes) { af->failed = errno ? errno : EIO; }
    af->checksum = checksum_words(af->checksum, data, bytes);
}

static inline void atomic_abort(AtomicFile* af) {
    if (af->file) { fclose(af->file); }
    af->file = NULL;
    unlink(af->tmp_path);
}

// fsync the folder holding `path`, so the rename itself is durable
static inline void fsync_parent_dir(const char* path) {
    char dir[1024];
    snprintf(dir, sizeof(dir), "%s", path);
    char* slash = strrchr(dir, '/');
    if (slash) { *slash = '\0'; } else { snprintf(dir, sizeof(dir), "."); }
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

static inline int atomic_commit(AtomicFile* af, char* err, size_t errlen) {
    if (!af->failed && fflush(af->file) != 0) { af->failed = errno; }
    if (!af->failed && fsync(fileno(af->file)) != 0) { af->failed = errno; }
    if (fclose(af->file) != 0 && !af->failed) { af->failed = errno; }
    af->file = NULL;
    if (af->failed) {
        snprintf(err, errlen, "writing %s failed: %s (the previous file, if any, is untouched)", af->tmp_path,
                 strerror(af->failed));
        unlink(af->tmp_path);
        return -1;
    }
    if (rename(af->tmp_path, af->path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", af->tmp_path, af->path, strerror(errno));
        unlink(af->tmp_path);
        return -1;
    }
    fsync_parent_dir(af->path);
    return 0;
}

// ----------------------------------------------------------------------------
// reading with clear errors

static inline int read_exact(FILE* f, void* data, size_t bytes, const char* path, const char* what, char* err,
                             size_t errlen) {
    if (fread(data, 1, bytes, f) != bytes) {
        snprintf(err, errlen, "%s: truncated file (could not read %s)", path, what);
        return -1;
    }
    return 0;
}

static inline long long file_size_of(const char* path) {
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

// ----------------------------------------------------------------------------
// the model file

// Writes header + parameters atomically.
static inline int model_file_write(const char* path, const int32_t header[256], const float* params,
                                   size_t num_parameters, char* err, size_t errlen) {
    AtomicFile af;
    if (atomic_open(&af, path, err, errlen)) { return -1; }
    atomic_write(&af, header, 256 * sizeof(int32_t));
    atomic_write(&af, params, num_parameters * sizeof(float));
    return atomic_commit(&af, err, errlen);
}

// Reads a model file into a freshly allocated parameter buffer (*params, *num_parameters), validating the header,
// the exact size and that every parameter is finite. Returns 0, or -1 with a one-line message (nothing allocated).
static inline int model_file_read(const char* path, GPT2Config* config, float** params, size_t* num_parameters,
                                  char* err, size_t errlen) {
    *params = NULL;
    *num_parameters = 0;
    FILE* f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open model file %s: %s", path, strerror(errno));
        return -1;
    }
    int32_t header[256];
    if (read_exact(f, header, sizeof(header), path, "the model header", err, errlen) ||
        model_header_parse(header, path, config, err, errlen)) {
        fclose(f);
        return -1;
    }
    size_t sizes[NUM_PARAMETER_TENSORS];
    fill_in_parameter_sizes(sizes, config);
    size_t n = 0;
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) { n += sizes[i]; }
    long long expected = (long long)sizeof(header) + (long long)n * 4, actual = file_size_of(path);
    if (actual != expected) {
        snprintf(err, errlen, "%s: %s model file (%lld bytes, expected %lld for this header)", path,
                 actual < expected ? "truncated" : "corrupt", actual, expected);
        fclose(f);
        return -1;
    }
    float* values = (float*)malloc(n * sizeof(float));
    if (!values) {
        snprintf(err, errlen, "%s: out of memory for %zu parameters", path, n);
        fclose(f);
        return -1;
    }
    int rc = read_exact(f, values, n * sizeof(float), path, "the parameters", err, errlen);
    fclose(f);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (!isfinite(values[i])) {
            snprintf(err, errlen, "%s: corrupt model file (parameter %zu is not finite)", path, i);
            rc = -1;
        }
    }
    if (rc) {
        free(values);
        return -1;
    }
    *params = values;
    *num_parameters = n;
    return 0;
}

// ----------------------------------------------------------------------------
// the state file

typedef struct {
    int num_processes, process_rank, precision;
    int fp8_modules;            // M, 0 when the run has no FP8 state
    DelayedScaling recipe;      // the fields that shape or change the FP8 state (callbacks are not stored)
    int fp8_bf16_first_last, fp8_lm_head;
    int B, T;
    int64_t step;
    int64_t num_parameters;
    uint64_t rng_state;
    int64_t shard_index, shard_position;
    int64_t opt_offset, opt_count;  // the AdamW moments in this file: parameters [opt_offset, opt_offset + opt_count)
} StateHeader;

static inline void put_i64(int32_t* slot, int64_t value) { memcpy(slot, &value, sizeof(value)); }
static inline int64_t get_i64(const int32_t* slot) {
    int64_t value;
    memcpy(&value, slot, sizeof(value));
    return value;
}

static inline size_t state_fp8_floats(const StateHeader* h) {
    return h->fp8_modules ? ((size_t)h->recipe.amax_history_len + 2) * 5 * (size_t)h->fp8_modules : 0;
}

static inline int state_file_write(const char* path, const StateHeader* h, const float* m, const float* v,
                                   const float* fp8_meta, char* err, size_t errlen) {
    int32_t header[256];
    memset(header, 0, sizeof(header));
    header[0] = STATE_MAGIC;
    header[1] = STATE_VERSION;
    header[2] = h->num_processes;
    header[3] = h->process_rank;
    header[4] = h->precision;
    header[5] = h->fp8_modules;
    header[6] = h->recipe.amax_history_len;
    header[7] = h->recipe.margin;
    header[8] = h->recipe.interval;
    header[9] = (int32_t)h->recipe.fp8_format;
    header[10] = (int32_t)h->recipe.amax_compute_algo;
    header[11] = h->recipe.override_fprop;
    header[12] = h->recipe.override_dgrad;
    header[13] = h->recipe.override_wgrad;
    header[14] = h->recipe.reduce_amax;
    header[15] = h->fp8_bf16_first_last;
    header[16] = h->fp8_lm_head;
    header[17] = h->B;
    header[18] = h->T;
    put_i64(&header[20], h->step);
    put_i64(&header[22], h->num_parameters);
    put_i64(&header[24], (int64_t)h->rng_state);
    put_i64(&header[26], h->shard_index);
    put_i64(&header[28], h->shard_position);
    put_i64(&header[30], h->opt_offset);
    put_i64(&header[32], h->opt_count);
    header[34] = (int32_t)h->recipe.scaling;
    AtomicFile af;
    if (atomic_open(&af, path, err, errlen)) { return -1; }
    atomic_write(&af, header, sizeof(header));
    atomic_write(&af, m, (size_t)h->opt_count * sizeof(float));
    atomic_write(&af, v, (size_t)h->opt_count * sizeof(float));
    atomic_write(&af, fp8_meta, state_fp8_floats(h) * sizeof(float));
    uint32_t checksum[2] = {(uint32_t)af.checksum, (uint32_t)(af.checksum >> 32)};
    atomic_write(&af, checksum, sizeof(checksum));
    return atomic_commit(&af, err, errlen);
}

// Reads and validates the header only (magic, version, sizes against the file's length).
static inline int state_file_read_header(const char* path, StateHeader* h, char* err, size_t errlen) {
    FILE* f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open state file %s: %s", path, strerror(errno));
        return -1;
    }
    int32_t header[256];
    int rc = read_exact(f, header, sizeof(header), path, "the state header", err, errlen);
    fclose(f);
    if (rc) { return -1; }
    if (header[0] != STATE_MAGIC) {
        snprintf(err, errlen, "%s: not a state file (magic %d, expected %d)", path, header[0], STATE_MAGIC);
        return -1;
    }
    if (header[1] != STATE_VERSION) {
        snprintf(err, errlen, "%s: state file version %d is not supported (expected %d)", path, header[1],
                 STATE_VERSION);
        return -1;
    }
    memset(h, 0, sizeof(*h));
    delayed_scaling_default(&h->recipe);
    h->num_processes = header[2];
    h->process_rank = header[3];
    h->precision = header[4];
    h->fp8_modules = header[5];
    h->recipe.amax_history_len = header[6];
    h->recipe.margin = header[7];
    h->recipe.interval = header[8];
    h->recipe.fp8_format = (Fp8RecipeFormat)header[9];
    h->recipe.amax_compute_algo = (AmaxComputeAlgo)header[10];
    h->recipe.override_fprop = header[11];
    h->recipe.override_dgrad = header[12];
    h->recipe.override_wgrad = header[13];
    h->recipe.reduce_amax = header[14];
    h->fp8_bf16_first_last = header[15];
    h->fp8_lm_head = header[16];
    h->B = header[17];
    h->T = header[18];
    h->step = get_i64(&header[20]);
    h->num_parameters = get_i64(&header[22]);
    h->rng_state = (uint64_t)get_i64(&header[24]);
    h->shard_index = get_i64(&header[26]);
    h->shard_position = get_i64(&header[28]);
    h->opt_offset = get_i64(&header[30]);
    h->opt_count = get_i64(&header[32]);
    h->recipe.scaling = (Fp8ScalingRecipe)header[34];
    char recipe_err[256];
    if (h->num_parameters <= 0 || h->opt_offset < 0 || h->opt_count < 0 ||
        h->opt_offset + h->opt_count > h->num_parameters || h->process_rank < 0 ||
        h->process_rank >= h->num_processes || h->step < 0 || h->fp8_modules < 0 || h->num_processes < 1 ||
        (h->fp8_modules && delayed_scaling_validate(&h->recipe, recipe_err, sizeof(recipe_err)))) {
        snprintf(err, errlen, "%s: corrupt state header", path);
        return -1;
    }
    long long expected = (long long)sizeof(header) + 2LL * h->opt_count * 4 + (long long)state_fp8_floats(h) * 4 + 8;
    long long actual = file_size_of(path);
    if (actual != expected) {
        snprintf(err, errlen, "%s: %s state file (%lld bytes, expected %lld)", path,
                 actual < expected ? "truncated" : "corrupt", actual, expected);
        return -1;
    }
    return 0;
}

// Reads the arrays of a state file whose header state_file_read_header accepted, verifying the checksum.
static inline int state_file_read_body(const char* path, const StateHeader* h, float* m, float* v, float* fp8_meta,
                                       char* err, size_t errlen) {
    FILE* f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open state file %s: %s", path, strerror(errno));
        return -1;
    }
    int32_t header[256];
    uint32_t stored[2];
    int rc = read_exact(f, header, sizeof(header), path, "the header", err, errlen) ||
             read_exact(f, m, (size_t)h->opt_count * sizeof(float), path, "the AdamW m", err, errlen) ||
             read_exact(f, v, (size_t)h->opt_count * sizeof(float), path, "the AdamW v", err, errlen) ||
             read_exact(f, fp8_meta, state_fp8_floats(h) * sizeof(float), path, "the FP8 metadata", err, errlen) ||
             read_exact(f, stored, sizeof(stored), path, "the checksum", err, errlen);
    fclose(f);
    if (rc) { return -1; }
    uint64_t checksum = checksum_words(CHECKSUM_INIT, header, sizeof(header));
    checksum = checksum_words(checksum, m, (size_t)h->opt_count * sizeof(float));
    checksum = checksum_words(checksum, v, (size_t)h->opt_count * sizeof(float));
    checksum = checksum_words(checksum, fp8_meta, state_fp8_floats(h) * sizeof(float));
    if ((uint32_t)checksum != stored[0] || (uint32_t)(checksum >> 32) != stored[1]) {
        snprintf(err, errlen, "%s: corrupt state file (checksum mismatch)", path);
        return -1;
    }
    return 0;
}

// The newest step with a DONE_%08d marker in `dir`, or -1.
static inline long long latest_checkpoint_step(const char* dir) {
    DIR* d = opendir(dir);
    if (!d) { return -1; }
    long long best = -1;
    struct dirent* entry;
    while ((entry = readdir(d)) != NULL) {
        long long step;
        char tail;
        if (sscanf(entry->d_name, "DONE_%lld%c", &step, &tail) == 1 && step > best) { best = step; }
    }
    closedir(d);
    return best;
}

#endif  // GPTFP8_CHECKPOINT_H
