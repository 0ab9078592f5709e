/*
llmc/checkpoint.h — checkpoint files that survive crashes: atomic writes (temporary file, fsync, rename, fsync of the
folder), the model file in llm.c's format (see gpt2.h), and our training-state file with the full FP8 metadata.

Two layers: the file formats below (every function returns an error message, never exits), and at the end what the
trainers call, checkpoint_save_* and checkpoint_load, which die with one line on any failure and check that a state
file was written by the run resuming from it (checkpoint_check_same_run).

A crash at any moment leaves either the old file or the complete new one, never a torn one. Checkpoint names follow
llm.c: model_%08d.bin, state_%08d_%05d.bin (step, rank), and DONE_%08d written last, so a resume only ever picks a
step whose files were all completed.

State file, version 3 (all little-endian), one per rank:
  int32 header[256]:
    [0] 20241122 magic  [1] 3 version  [2] num_processes  [3] process_rank  [4] precision (0 fp32, 1 bf16, 2 fp8)
    [5] number of FP8 modules M (0: no FP8 state)  [6] amax_history_len  [7] margin  [8] interval  [9] fp8_format
    [10] amax_compute_algo  [11..13] override fprop, dgrad, wgrad  [14] reduce_amax  [15] fp8_bf16_first_last
    [16] fp8_lm_head  [17] B  [18] T
    [20..21] step (int64: optimizer steps done)  [22..23] number of parameters (int64)  [24..25] RNG state (uint64)
    [26..27] train loader shard index (int64)  [28..29] train loader position in tokens (int64)
    [30..31] opt_offset, [32..33] opt_count (int64): the rank's optimizer shard (llmc/zero.h); 0 and num_parameters
    in a single process or without ZeRO
    [34] FP8 scaling recipe (0 delayed, 1 current)
    [35] total batch in tokens per optimizer step (-d)
  float m[opt_count], float v[opt_count]              AdamW moments of parameters [opt_offset, opt_offset + opt_count)
  float fp8_meta[(amax_history_len + 2) * 5M]        fp8/meta.h's buffer as-is: amax_history, scale, scale_inv
  float fp8_last_amax[5M]                             per slot, row 0 as the last update saw it (fp8_diag.tsv's amax)
  float fp8_window_amax[5M]                           per slot, the amax its scale came from (fp8_diag.tsv's window_amax)
  int64 fp8_stats[5M][3]                              per slot, elements cast, saturated, flushed since the last
                                                      fp8_diag.tsv block (so the diagnostics survive a resume)
  uint32 checksum[2]                                  FNV-1a over every 32-bit word before it (low, high half)
The four FP8 arrays are absent when M = 0. Version 2 (before [35] and the diagnostics arrays) is refused.
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

#include "../fp8/diag.h"
#include "../fp8/meta.h"
#include "gpt2.h"
#include "linear.h"
#include "utils.h"

#define STATE_MAGIC 20241122
#define STATE_VERSION 3
// A state file's parameter count is at most this: far above any model file's (L 1024, C 65536 is 2^45.6), and low
// enough that every size computed from it fits 64 bits.
#define STATE_MAX_PARAMETERS (1LL << 48)

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
    int B, T, total_batch;
    int64_t step;
    int64_t num_parameters;
    uint64_t rng_state;
    int64_t shard_index, shard_position;
    int64_t opt_offset, opt_count;  // the AdamW moments in this file: parameters [opt_offset, opt_offset + opt_count)
} StateHeader;

// The FP8 arrays of a state file (all NULL when M = 0): the metadata buffer and the diagnostics state.
typedef struct {
    float* meta;             // ((amax_history_len + 2) * 5M) fp8/meta.h's buffer
    float* last_amax;        // (5M) row 0 as the last update saw it
    float* window_amax;      // (5M) the amax each scale came from
    Fp8QuantStats* stats;    // (5M) casts since the last fp8_diag.tsv block
} StateFp8Arrays;

static inline void put_i64(int32_t* slot, int64_t value) { memcpy(slot, &value, sizeof(value)); }
static inline int64_t get_i64(const int32_t* slot) {
    int64_t value;
    memcpy(&value, slot, sizeof(value));
    return value;
}

static inline size_t state_fp8_slots(const StateHeader* h) { return (size_t)FP8_SLOTS_PER_MODULE * (size_t)h->fp8_modules; }
static inline size_t state_fp8_floats(const StateHeader* h) {
    return h->fp8_modules ? ((size_t)h->recipe.amax_history_len + 2) * state_fp8_slots(h) : 0;
}

// The arrays after the header, in file order, with their sizes in bytes (the write, the read and the checksum walk
// the same list).
enum { STATE_ARRAYS = 6 };
static inline void state_file_arrays(const StateHeader* h, void* m, void* v, const StateFp8Arrays* fp8,
                                     void* arrays[STATE_ARRAYS], size_t bytes[STATE_ARRAYS]) {
    size_t n = (size_t)h->opt_count, slots = state_fp8_slots(h);
    arrays[0] = m, bytes[0] = n * sizeof(float);
    arrays[1] = v, bytes[1] = n * sizeof(float);
    arrays[2] = fp8 ? fp8->meta : NULL, bytes[2] = state_fp8_floats(h) * sizeof(float);
    arrays[3] = fp8 ? fp8->last_amax : NULL, bytes[3] = slots * sizeof(float);
    arrays[4] = fp8 ? fp8->window_amax : NULL, bytes[4] = slots * sizeof(float);
    arrays[5] = fp8 ? fp8->stats : NULL, bytes[5] = slots * sizeof(Fp8QuantStats);
}

static inline int state_file_write(const char* path, const StateHeader* h, const float* m, const float* v,
                                   const StateFp8Arrays* fp8, char* err, size_t errlen) {
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
    header[35] = h->total_batch;
    void* arrays[STATE_ARRAYS];
    size_t bytes[STATE_ARRAYS];
    state_file_arrays(h, (void*)m, (void*)v, fp8, arrays, bytes);
    AtomicFile af;
    if (atomic_open(&af, path, err, errlen)) { return -1; }
    atomic_write(&af, header, sizeof(header));
    for (int i = 0; i < STATE_ARRAYS; i++) { atomic_write(&af, arrays[i], bytes[i]); }
    uint32_t checksum[2] = {(uint32_t)af.checksum, (uint32_t)(af.checksum >> 32)};
    atomic_write(&af, checksum, sizeof(checksum));
    return atomic_commit(&af, err, errlen);
}

// Reads and validates the header only (magic, version, ranges, sizes against the file's length), so the caller can
// compare it with its run before allocating anything for the arrays.
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
        snprintf(err, errlen, "%s: state file version %d is not supported (expected %d%s)", path, header[1],
                 STATE_VERSION, header[1] == 2 ? "; version 2, written before the FP8 diagnostics were checkpointed, "
                                                 "resumes only with the commit that wrote it" : "");
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
    h->total_batch = header[35];
    char recipe_err[256];
    // every range before any arithmetic on it: sizes below are then products of bounded numbers (no overflow)
    if (h->num_parameters <= 0 || h->num_parameters > STATE_MAX_PARAMETERS || h->opt_offset < 0 || h->opt_count < 0 ||
        h->opt_offset > h->num_parameters || h->opt_count > h->num_parameters - h->opt_offset ||
        h->process_rank < 0 || h->process_rank >= h->num_processes || h->step < 0 || h->num_processes < 1 ||
        h->precision < 0 || h->precision > 2 || h->fp8_modules < 0 || h->fp8_modules > (1 << 20) ||
        (h->fp8_modules && delayed_scaling_validate(&h->recipe, recipe_err, sizeof(recipe_err))) || h->B < 1 ||
        h->T < 1 || h->total_batch < 1 || h->shard_index < 0 || h->shard_position < 0) {
        snprintf(err, errlen, "%s: corrupt state header", path);
        return -1;
    }
    void* arrays[STATE_ARRAYS];
    size_t bytes[STATE_ARRAYS];
    state_file_arrays(h, NULL, NULL, NULL, arrays, bytes);
    long long expected = (long long)sizeof(header) + 8;
    for (int i = 0; i < STATE_ARRAYS; i++) { expected += (long long)bytes[i]; }
    long long actual = file_size_of(path);
    if (actual != expected) {
        snprintf(err, errlen, "%s: %s state file (%lld bytes, expected %lld)", path,
                 actual < expected ? "truncated" : "corrupt", actual, expected);
        return -1;
    }
    return 0;
}

// Reads the arrays of a state file whose header state_file_read_header accepted into m, v (opt_count each) and,
// when M > 0, fp8's arrays, verifying the checksum.
static inline int state_file_read_body(const char* path, const StateHeader* h, float* m, float* v,
                                       const StateFp8Arrays* fp8, char* err, size_t errlen) {
    static const char* names[STATE_ARRAYS] = {"the AdamW m", "the AdamW v", "the FP8 metadata",
                                              "the FP8 diagnostics amaxes", "the FP8 diagnostics window amaxes",
                                              "the FP8 diagnostics counters"};
    FILE* f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open state file %s: %s", path, strerror(errno));
        return -1;
    }
    int32_t header[256];
    uint32_t stored[2];
    void* arrays[STATE_ARRAYS];
    size_t bytes[STATE_ARRAYS];
    state_file_arrays(h, m, v, fp8, arrays, bytes);
    int rc = read_exact(f, header, sizeof(header), path, "the header", err, errlen);
    for (int i = 0; i < STATE_ARRAYS && !rc; i++) { rc = read_exact(f, arrays[i], bytes[i], path, names[i], err, errlen); }
    rc = rc || read_exact(f, stored, sizeof(stored), path, "the checksum", err, errlen);
    fclose(f);
    if (rc) { return -1; }
    uint64_t checksum = checksum_words(CHECKSUM_INIT, header, sizeof(header));
    for (int i = 0; i < STATE_ARRAYS; i++) { checksum = checksum_words(checksum, arrays[i], bytes[i]); }
    if ((uint32_t)checksum != stored[0] || (uint32_t)(checksum >> 32) != stored[1]) {
        snprintf(err, errlen, "%s: corrupt state file (checksum mismatch)", path);
        return -1;
    }
    return 0;
}

// The FP8 arrays of a state file that passed its checksum, checked for values no run can write: histories hold 0 or
// amaxes but never NaN or a negative, scales and scale_inv are positive and finite, and each slot's saturated and
// flushed counts are within its element count. (The diagnostics amaxes are only printed: any float is taken.)
static inline int state_fp8_check(const char* path, const StateHeader* h, const StateFp8Arrays* fp8, char* err,
                                  size_t errlen) {
    size_t slots = state_fp8_slots(h), history = (size_t)h->recipe.amax_history_len * slots;
    for (size_t i = 0; i < state_fp8_floats(h); i++) {
        float x = fp8->meta[i];
        if (isnan(x) || x < 0.0f || (i >= history && !(x > 0.0f && isfinite(x)))) {
            snprintf(err, errlen, "%s: corrupt FP8 state (entry %zu is %g)", path, i, x);
            return -1;
        }
    }
    for (size_t s = 0; s < slots; s++) {
        const Fp8QuantStats* st = &fp8->stats[s];
        if (st->count < 0 || st->saturated < 0 || st->flushed < 0 || st->saturated > st->count ||
            st->flushed > st->count) {
            snprintf(err, errlen, "%s: corrupt FP8 diagnostics state (slot %zu)", path, s);
            return -1;
        }
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

// ----------------------------------------------------------------------------
// what the trainers call: model files, a checkpoint's save and load

// Reads a model file into a freshly allocated parameter buffer; validates header, exact size and finiteness.
static inline float* read_model_file(const char* path, GPT2Config* config, size_t* num_parameters) {
    char err[512];
    float* params;
    if (model_file_read(path, config, &params, num_parameters, err, sizeof(err))) { die("%s", err); }
    return params;
}

// ----------------------------------------------------------------------------
// checkpoints: model_%08d.bin, state_%08d_%05d.bin, DONE_%08d (see checkpoint.h), from host arrays

// The three parts of a checkpoint, in the order they must be written: the model file (rank 0), every rank's state
// file, and (after all of them, rank 0) the DONE marker a resume looks for.
static inline void checkpoint_save_model(const char* dir, int step, const GPT2Config* config, const float* params,
                                  size_t num_parameters) {
    char path[1024], err[512];
    int32_t header[256];
    model_header_fill(header, config);
    snprintf(path, sizeof(path), "%s/model_%08d.bin", dir, step);
    if (model_file_write(path, header, params, num_parameters, err, sizeof(err))) { die("%s", err); }
}

static inline void checkpoint_save_state(const char* dir, int step, const float* m, const float* v, const StateHeader* h,
                                  const StateFp8Arrays* fp8) {
    char path[1024], err[512];
    snprintf(path, sizeof(path), "%s/state_%08d_%05d.bin", dir, step, h->process_rank);
    if (state_file_write(path, h, m, v, fp8, err, sizeof(err))) { die("%s", err); }
}

static inline void checkpoint_mark_done(const char* dir, int step) {
    char path[1024], err[512];
    snprintf(path, sizeof(path), "%s/DONE_%08d", dir, step);
    AtomicFile done;
    if (atomic_open(&done, path, err, sizeof(err)) || atomic_commit(&done, err, sizeof(err))) { die("%s", err); }
}

// One process: all three.
static inline void checkpoint_save(const char* dir, int step, const GPT2Config* config, const float* params, const float* m,
                            const float* v, const StateHeader* h, const StateFp8Arrays* fp8) {
    checkpoint_save_model(dir, step, config, params, (size_t)h->num_parameters);
    checkpoint_save_state(dir, step, m, v, h, fp8);
    checkpoint_mark_done(dir, step);  // DONE last: a resume only trusts a step whose files are all complete
}

static inline int same_config(const GPT2Config* a, const GPT2Config* b) {
    return a->max_seq_len == b->max_seq_len && a->vocab_size == b->vocab_size &&
           a->padded_vocab_size == b->padded_vocab_size && a->num_layers == b->num_layers &&
           a->num_heads == b->num_heads && a->channels == b->channels;
}

// A resume continues the run that wrote the checkpoint: every setting its state header records must be this run's
// too (the FP8 ones when it trains in FP8). The first that differs is one line: the flag, the checkpoint's value and
// this run's. What the header does not record may change on resume (steps, learning-rate schedule, evaluation,
// sampling, checkpoint interval, diagnostics; see the README).
typedef struct {
    const char* flag;
    long long checkpoint, run;
    const char* const* names;  // value -> name, or NULL: printed as a number
    int num_names;
} ResumeSetting;

static inline void checkpoint_check_same_run(const char* path, const StateHeader* file, const StateHeader* run) {
    static const char* const precisions[] = {"fp32", "bf16", "fp8"};
    static const char* const formats[] = {"e4m3", "hybrid", "e5m2"};
    static const char* const algos[] = {"max", "most_recent", "callback"};
    static const char* const scalings[] = {"delayed", "current"};
    const DelayedScaling *f = &file->recipe, *r = &run->recipe;
    int fp8 = run->precision == PRECISION_FP8;
    // the override flags in the trainer's sense: -fp8_fprop 1 is that GEMM in FP8 (override 0)
    ResumeSetting settings[] = {
        {"-precision", file->precision, run->precision, precisions, 3},
        {"-b", file->B, run->B, NULL, 0},
        {"-t", file->T, run->T, NULL, 0},
        {"-d", file->total_batch, run->total_batch, NULL, 0},
        {fp8 ? "-fp8_recipe" : NULL, f->scaling, r->scaling, scalings, 2},
        {fp8 ? "-fp8" : NULL, f->fp8_format, r->fp8_format, formats, 3},
        {fp8 ? "-fp8_amax_history_len" : NULL, f->amax_history_len, r->amax_history_len, NULL, 0},
        {fp8 ? "-fp8_amax_compute_algo" : NULL, f->amax_compute_algo, r->amax_compute_algo, algos, 3},
        {fp8 ? "-fp8_margin" : NULL, f->margin, r->margin, NULL, 0},
        {fp8 ? "-fp8_interval" : NULL, f->interval, r->interval, NULL, 0},
        {fp8 ? "-fp8_fprop" : NULL, !f->override_fprop, !r->override_fprop, NULL, 0},
        {fp8 ? "-fp8_dgrad" : NULL, !f->override_dgrad, !r->override_dgrad, NULL, 0},
        {fp8 ? "-fp8_wgrad" : NULL, !f->override_wgrad, !r->override_wgrad, NULL, 0},
        {fp8 ? "-fp8_reduce_amax" : NULL, f->reduce_amax, r->reduce_amax, NULL, 0},
        {fp8 ? "-fp8_bf16_first_last" : NULL, file->fp8_bf16_first_last, run->fp8_bf16_first_last, NULL, 0},
        {fp8 ? "-fp8_lm_head" : NULL, file->fp8_lm_head, run->fp8_lm_head, NULL, 0},
    };
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
        const ResumeSetting* st = &settings[i];
        if (!st->flag || st->checkpoint == st->run) { continue; }
        char was[32], now[32];
        if (st->names && st->checkpoint >= 0 && st->checkpoint < st->num_names) {
            snprintf(was, sizeof(was), "%s", st->names[st->checkpoint]);
        } else {
            snprintf(was, sizeof(was), "%lld", st->checkpoint);
        }
        if (st->names && st->run >= 0 && st->run < st->num_names) {
            snprintf(now, sizeof(now), "%s", st->names[st->run]);
        } else {
            snprintf(now, sizeof(now), "%lld", st->run);
        }
        die("%s: cannot resume: %s is %s in the checkpoint but %s in this run (resume with %s %s, or start a new run "
            "in another -o)", path, st->flag, was, now, st->flag, was);
    }
}

// Loads checkpoint `step` of `dir` into params, m, v and (when the run has FP8 state) fp8's arrays, after checking
// that it was written by this run (model, process layout, every setting of checkpoint_check_same_run); on return h
// holds the file's step, RNG and data position.
static inline void checkpoint_load(const char* dir, int step, const GPT2Config* config, float* params, float* m, float* v,
                            StateHeader* h, const StateFp8Arrays* fp8) {
    char path[1024], err[512];
    snprintf(path, sizeof(path), "%s/model_%08d.bin", dir, step);
    GPT2Config file_config;
    size_t n;
    float* file_params = read_model_file(path, &file_config, &n);
    int same = same_config(&file_config, config);
    if (same) { memcpy(params, file_params, n * sizeof(float)); }
    free(file_params);
    if (!same) {
        die("%s: checkpoint model (L %d, C %d, NH %d, V %d, maxT %d) differs from the run's (L %d, C %d, NH %d, V %d, maxT %d)",
            path, file_config.num_layers, file_config.channels, file_config.num_heads, file_config.vocab_size,
            file_config.max_seq_len, config->num_layers, config->channels, config->num_heads, config->vocab_size,
            config->max_seq_len);
    }
    snprintf(path, sizeof(path), "%s/state_%08d_%05d.bin", dir, step, h->process_rank);
    StateHeader file;
    if (state_file_read_header(path, &file, err, sizeof(err))) { die("%s", err); }
    if (file.num_processes != h->num_processes) {
        die("%s: written by %d processes, this run has %d", path, file.num_processes, h->num_processes);
    }
    if (file.num_parameters != h->num_parameters) { die("%s: parameter count does not match the model", path); }
    if (file.opt_offset != h->opt_offset || file.opt_count != h->opt_count) {
        die("%s: holds the optimizer state of parameters [%lld, %lld), this rank owns [%lld, %lld) (same -pn and -z "
            "as the run that wrote it)", path, (long long)file.opt_offset, (long long)(file.opt_offset + file.opt_count),
            (long long)h->opt_offset, (long long)(h->opt_offset + h->opt_count));
    }
    checkpoint_check_same_run(path, &file, h);
    if (file.fp8_modules != h->fp8_modules) {  // same model and precision, so only a corrupt file gets here
        die("%s: corrupt state file (%d FP8 modules, the model has %d)", path, file.fp8_modules, h->fp8_modules);
    }
    if (state_file_read_body(path, &file, m, v, fp8, err, sizeof(err))) { die("%s", err); }
    if (file.fp8_modules && state_fp8_check(path, &file, fp8, err, sizeof(err))) { die("%s", err); }
    h->step = file.step;
    h->rng_state = file.rng_state;
    h->shard_index = file.shard_index;
    h->shard_position = file.shard_position;
}

#endif  // GPTFP8_CHECKPOINT_H
