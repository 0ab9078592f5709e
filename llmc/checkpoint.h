/*
llmc/checkpoint.h — checkpoint files that survive crashes and cannot be mixed up: atomic writes (a temporary file of
this process, fsync, rename, fsync of the folder), the model file in llm.c's format (see gpt2.h), and our
training-state file with the full FP8 metadata, tied to its model file by a checksum.

Two layers: the file formats below (every function returns an error message, never exits), and at the end what the
trainers call, checkpoint_save_* and checkpoint_load, which die with one line on any failure and check that a state
file was written by the run resuming from it (checkpoint_check_same_run).

A crash at any moment leaves either the old file or the complete new one, never a torn one. Checkpoint names follow
llm.c: model_%08d.bin, state_%08d_%05d.bin (step, rank), and DONE_%08d written last, so a resume only ever picks a
step whose files were all completed. A temporary file is named after its file and this process (NAME.tmp.PID), so two
processes never write the same one.

What ties a checkpoint together, checked on every resume (checkpoint_load), each failure one line naming the file:
  - the state file holds the step it belongs to, which must be the step in its name;
  - the model file holds its step too (header[8], which llm.c leaves 0 and never reads), again the name's;
  - the model file is version 3, fp32, as we write it: a bf16 one (version 5, which llm.c's train_gpt2cu writes under
    the same name) has lost the masters' low bits and is refused by name (-e starts a new run from it);
  - the state file holds the checksum of its model file's bytes and of its own: a model damaged without changing its
    size (a zeroed tail, flipped bits) or replaced by another step's, and a state file replaced by another
    checkpoint's, are refused. The checksum is xxHash's XXH3, 64 bits (https://github.com/Cyan4973/xxHash, one header
    in deps/xxhash): a well-kept library, at memory speed (a d48 model of 6 GB adds well under a second to a save), with
    64 bits, so a damaged file passes with probability 2^-64 (CRC-32C's 32 bits would make that 2^-32, and its
    guarantee for short bursts matters less here than for a link); its output is fixed since xxHash 0.8.0.
A damaged newest checkpoint is refused, naming the newest older one that is intact and how to resume from it
(checkpoint_refuse_damaged); nothing falls back by itself.

State file, version 5 (all little-endian), one per rank:
  int32 header[256]:
    [0] 20241122 magic  [1] 5 version  [2] num_processes  [3] process_rank  [4] precision (0 fp32, 1 bf16, 2 fp8)
    [5] number of FP8 modules M (0: no FP8 state)  [6] amax_history_len  [7] margin  [8] interval  [9] fp8_format
    [10] amax_compute_algo  [11..13] override fprop, dgrad, wgrad  [14] reduce_amax  [15] fp8_bf16_first_last
    [16] fp8_lm_head  [17] B  [18] T
    [20..21] step (int64: optimizer steps done; the step in the file's name)  [22..23] number of parameters (int64)
    [24..25] RNG state (uint64)  [26..27] train loader shard index (int64)  [28..29] its position in tokens (int64)
    [30..31] opt_offset, [32..33] opt_count (int64): the rank's optimizer shard (llmc/zero.h); 0 and num_parameters
    in a single process or without ZeRO
    [34] FP8 scaling recipe (0 delayed, 1 current, 2 blockwise, 3 mxfp8)
    [35] total batch in tokens per optimizer step (-d)
    [36..37] XXH3-64 of the model file model_%08d.bin of the same step, all of its bytes (uint64)
    [38] blockwise amax_epsilon (float bits; 0 otherwise)  [39] 1: blockwise scales not rounded to powers of two
    (-fp8_pow2_scales 0; 0 otherwise, so the files written before block scaling read the same)
    [40] steps skipped (non-finite) in a row up to this step  [41] the first of them (1-based; 0 when [40] is 0)
    [42..43] XXH3-64 of the run's tokenizer.bin (uint64; 0: the run had none)
    ([40..43] were 0 in the files written before them, which therefore read as "none skipped, no tokenizer known")
    [44] -fp8_attention, 0, 1 or 2 (new in version 5: M then counts one FP8 attention module per block after the
    LM head; a version-4 file reads as 0, its layout unchanged; 2, the same state, came later in version 5)
  float m[opt_count], float v[opt_count]              AdamW moments of parameters [opt_offset, opt_offset + opt_count)
  float fp8_meta[(amax_history_len + 2) * 5M]        fp8/meta.h's buffer as-is: amax_history, scale, scale_inv
  float fp8_last_amax[5M]                             per slot, row 0 as the last update saw it (fp8_diag.tsv's amax)
  float fp8_window_amax[5M]                           per slot, the amax its scale came from (fp8_diag.tsv's window_amax)
  int64 fp8_stats[5M][3]                              per slot, elements cast, saturated, flushed since the last
                                                      fp8_diag.tsv block (so the diagnostics survive a resume)
  float fp8_block_scale_range[5M][2]                  block recipes only: per slot, the smallest and largest block
                                                      scale since the last fp8_diag.tsv block (fp8/diag.h)
  uint64 checksum                                     XXH3-64 of every byte before it
The FP8 arrays are absent when M = 0. Version 4 (before [44]) is read as a run without FP8 attention; versions 2 and
3 (before the diagnostics arrays; before the model checksum, with an FNV-1a of their own) are refused.
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
#include "checksum.h"
#include "gpt2.h"
#include "linear.h"
#include "utils.h"

#define STATE_MAGIC 20241122
#define STATE_VERSION 5
#define STATE_VERSION_BEFORE_FP8_ATTENTION 4  // read too: [44] did not exist (no FP8 attention)
// A state file's parameter count is at most this: far above any model file's (L 1024, C 65536 is 2^45.6), and low
// enough that every size computed from it fits 64 bits.
#define STATE_MAX_PARAMETERS (1LL << 48)

// The checksum a model file's bytes have: its header, then its parameters.
static inline uint64_t model_file_checksum(const int32_t header[256], const float* params, size_t num_parameters) {
    Checksum c;
    checksum_begin(&c);
    checksum_add(&c, header, 256 * sizeof(int32_t));
    checksum_add(&c, params, num_parameters * sizeof(float));
    return checksum_end(&c);
}

// ----------------------------------------------------------------------------
// atomic files

typedef struct {
    FILE* file;
    char* path;      // the file it becomes
    char* tmp_path;  // path.tmp.PID, what is written
    int failed;  // a write failed (its errno); commit refuses and removes the temporary file
    int in_place;  // a device or a FIFO: written directly, tmp_path is path (no rename, nothing to remove)
} AtomicFile;

static inline void atomic_free_paths(AtomicFile* af) {
    free(af->path);
    free(af->tmp_path);
    af->path = af->tmp_path = NULL;
}

// Where an output goes. A regular file (or none yet) is replaced through a temporary file and a rename, so a crash
// leaves the old file or the new one; a symlink is followed (the temporary goes beside its target, which the rename
// replaces, and the link stays a link); a character device or a FIFO (/dev/null, /dev/stdout, a pipe to a reader) is
// written in place, since a rename would replace the device with a regular file; a folder, a socket or a block
// device is refused.
static inline int atomic_open(AtomicFile* af, const char* path, char* err, size_t errlen) {
    memset(af, 0, sizeof(*af));
    struct stat st;
    char* target = NULL;
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
        target = realpath(path, NULL);
        if (!target) {
            snprintf(err, errlen, "cannot write %s: it is a symbolic link whose target cannot be reached (%s)", path,
                     strerror(errno));
            return -1;
        }
    }
    const char* out = target ? target : path;
    if (stat(out, &st) == 0 && !S_ISREG(st.st_mode)) {
        if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode)) {
            snprintf(err, errlen, "cannot write %s: it exists and is %s, not a file", out,
                     S_ISDIR(st.st_mode) ? "a folder" : S_ISBLK(st.st_mode) ? "a block device" : "not a regular file");
            free(target);
            return -1;
        }
        af->in_place = 1;
    }
    af->path = alloc_printf("%s", out);
    af->tmp_path = af->in_place ? alloc_printf("%s", out) : alloc_printf("%s.tmp.%ld", out, (long)getpid());
    free(target);
    af->file = fopen(af->tmp_path, "wb");
    if (!af->file) {
        snprintf(err, errlen, "cannot %s %s: %s", af->in_place ? "open" : "create", af->tmp_path, strerror(errno));
        atomic_free_paths(af);
        return -1;
    }
    return 0;
}

static inline void atomic_write(AtomicFile* af, const void* data, size_t bytes) {
    if (af->failed) { return; }
    if (bytes && fwrite(data, 1, bytes, af->file) != bytes) { af->failed = errno ? errno : EIO; }
}

// fsync the folder holding `path`, so the rename itself is durable
static inline void fsync_parent_dir(const char* path) {
    char* dir = alloc_printf("%s", path);
    char* slash = strrchr(dir, '/');
    int fd;
    if (slash == dir) {
        fd = open("/", O_RDONLY);
    } else if (slash) {
        *slash = '\0';
        fd = open(dir, O_RDONLY);
    } else {
        fd = open(".", O_RDONLY);
    }
    free(dir);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

static inline int atomic_commit(AtomicFile* af, char* err, size_t errlen) {
    if (!af->failed && fflush(af->file) != 0) { af->failed = errno; }
    // a device or a pipe has nothing to make durable (fsync says EINVAL there)
    if (!af->failed && !af->in_place && fsync(fileno(af->file)) != 0) { af->failed = errno; }
    if (fclose(af->file) != 0 && !af->failed) { af->failed = errno; }
    af->file = NULL;
    int rc = 0;
    if (af->failed) {
        if (af->in_place) {
            snprintf(err, errlen, "writing %s failed: %s", af->path, strerror(af->failed));
        } else {
            snprintf(err, errlen, "writing %s failed: %s (the previous file, if any, is untouched)", af->tmp_path,
                     strerror(af->failed));
            unlink(af->tmp_path);
        }
        rc = -1;
    } else if (af->in_place) {
        // written where it goes
    } else if (rename(af->tmp_path, af->path) != 0) {
        snprintf(err, errlen, "cannot rename %s to %s: %s", af->tmp_path, af->path, strerror(errno));
        unlink(af->tmp_path);
        rc = -1;
    } else {
        fsync_parent_dir(af->path);
    }
    atomic_free_paths(af);
    return rc;
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

// header[MODEL_HEADER_STEP] of a checkpoint's model file: its step (llm.c writes 0 there and never reads it)
#define MODEL_HEADER_STEP 8

// Writes header + parameters atomically.
static inline int model_file_write(const char* path, const int32_t header[256], const float* params,
                                   size_t num_parameters, char* err, size_t errlen) {
    AtomicFile af;
    if (atomic_open(&af, path, err, errlen)) { return -1; }
    atomic_write(&af, header, 256 * sizeof(int32_t));
    atomic_write(&af, params, num_parameters * sizeof(float));
    return atomic_commit(&af, err, errlen);
}

// Reads a model file, version 3 (fp32) or 5 (bf16, widened exactly), into a freshly allocated fp32 parameter buffer
// (*params, *num_parameters), validating the header, the exact size and that every parameter is finite. checksum
// (may be NULL): XXH3-64 of the file's bytes as they are on disk (a version-5 file's: its bf16 bytes);
// header_step (may be NULL): header[MODEL_HEADER_STEP]; version (may be NULL): header[1]. Returns 0, or -1 with a
// one-line message (nothing allocated).
static inline int model_file_read(const char* path, GPT2Config* config, float** params, size_t* num_parameters,
                                  uint64_t* checksum, long long* header_step, int* version, char* err, size_t errlen) {
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
    const int bytes_each = model_file_parameter_bytes(header[1]), bf16 = header[1] == MODEL_VERSION_BF16;
    size_t sizes[NUM_PARAMETER_TENSORS];
    fill_in_parameter_sizes(sizes, config);
    size_t n = 0;
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) { n += sizes[i]; }
    long long expected = (long long)sizeof(header) + (long long)n * bytes_each, actual = file_size_of(path);
    if (actual != expected) {
        // the version in the line: a file of the other version under this header (a relabelled one) shows as such
        snprintf(err, errlen, "%s: %s model file (version %d, %s parameters: %lld bytes, expected %lld for this "
                 "header)", path, actual < expected ? "truncated" : "corrupt", header[1], bf16 ? "bf16" : "fp32",
                 actual, expected);
        fclose(f);
        return -1;
    }
    float* values = (float*)malloc(n * sizeof(float));
    if (!values) {
        snprintf(err, errlen, "%s: out of memory for %zu parameters", path, n);
        fclose(f);
        return -1;
    }
    Checksum c;  // begun only when a checksum is asked for
    if (checksum) {
        checksum_begin(&c);
        checksum_add(&c, header, sizeof(header));
    }
    int rc = 0;
    if (!bf16) {
        rc = read_exact(f, values, n * sizeof(float), path, "the parameters", err, errlen);
        if (!rc && checksum) { checksum_add(&c, values, n * sizeof(float)); }
    } else {
        // in pieces, widened as they come: a d48 file needs no second, bf16 copy of its 1.5 billion parameters
        const size_t PIECE = (size_t)1 << 20;
        uint16_t* piece = (uint16_t*)malloc(PIECE * sizeof(uint16_t));
        if (!piece) {
            snprintf(err, errlen, "%s: out of memory reading bf16 parameters", path);
            rc = -1;
        }
        for (size_t done = 0; !rc && done < n;) {
            size_t count = n - done < PIECE ? n - done : PIECE;
            rc = read_exact(f, piece, count * sizeof(uint16_t), path, "the bf16 parameters", err, errlen);
            if (rc) { break; }
            if (checksum) { checksum_add(&c, piece, count * sizeof(uint16_t)); }
            // widened exactly (a bf16 is the top half of an fp32): rounding it back to bf16, as bf16 and fp8 runs do
            // to the weights, gives the same bits
            for (size_t i = 0; i < count; i++) { values[done + i] = bf16_to_float(piece[i]); }
            done += count;
        }
        free(piece);
    }
    fclose(f);
    uint64_t sum = checksum ? checksum_end(&c) : 0;
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
    if (checksum) { *checksum = sum; }
    if (header_step) { *header_step = header[MODEL_HEADER_STEP]; }
    if (version) { *version = header[1]; }
    *params = values;
    *num_parameters = n;
    return 0;
}

// ----------------------------------------------------------------------------
// the state file

typedef struct {
    int num_processes, process_rank, precision;
    int fp8_modules;            // M, 0 when the run has no FP8 state
    Fp8Recipe recipe;           // the fields that shape or change the FP8 state (callbacks are not stored)
    int fp8_bf16_first_last, fp8_lm_head;
    int fp8_attention;          // -fp8_attention (FP8_ATTENTION_*; its modules are among the M)
    int B, T, total_batch;
    int64_t step;
    int64_t num_parameters;
    uint64_t rng_state;
    int64_t shard_index, shard_position;
    int64_t opt_offset, opt_count;  // the AdamW moments in this file: parameters [opt_offset, opt_offset + opt_count)
    uint64_t model_checksum;        // XXH3-64 of the model file of the same step
    int skipped_in_a_row;           // steps skipped (non-finite) in a row up to this one, so -max_skipped counts on
    int first_skipped_step;         // after a resume as in a run never stopped; the first of them (1-based), or 0
    uint64_t tokenizer_checksum;    // XXH3-64 of the run's tokenizer.bin (llmc/run_data.h); 0: none recorded
} StateHeader;

// What a checkpoint keeps of the run around the model, filled by the mains (run.h): the steps skipped in a row up to
// it and the run's tokenizer.
typedef struct {
    int skipped_in_a_row, first_skipped_step;
    uint64_t tokenizer_checksum;
} CheckpointRunState;

static inline void checkpoint_run_state_put(StateHeader* h, const CheckpointRunState* run_state) {
    if (!run_state) { return; }
    h->skipped_in_a_row = run_state->skipped_in_a_row;
    h->first_skipped_step = run_state->first_skipped_step;
    h->tokenizer_checksum = run_state->tokenizer_checksum;
}
static inline void checkpoint_run_state_get(const StateHeader* h, CheckpointRunState* run_state) {
    if (!run_state) { return; }
    run_state->skipped_in_a_row = h->skipped_in_a_row;
    run_state->first_skipped_step = h->first_skipped_step;
    run_state->tokenizer_checksum = h->tokenizer_checksum;
}

// The FP8 arrays of a state file (all NULL when M = 0): the metadata buffer and the diagnostics state.
typedef struct {
    float* meta;             // ((amax_history_len + 2) * 5M) fp8/meta.h's buffer
    float* last_amax;        // (5M) row 0 as the last update saw it
    float* window_amax;      // (5M) the amax each scale came from
    Fp8QuantStats* stats;    // (5M) casts since the last fp8_diag.tsv block
    Fp8BlockScaleRange* block_scale_range;  // (5M) block recipes only (else NULL): block scales since that block
} StateFp8Arrays;

static inline void put_i64(int32_t* slot, int64_t value) { memcpy(slot, &value, sizeof(value)); }
static inline int64_t get_i64(const int32_t* slot) {
    int64_t value;
    memcpy(&value, slot, sizeof(value));
    return value;
}

static inline size_t state_fp8_slots(const StateHeader* h) { return (size_t)FP8_SLOTS_PER_MODULE * (size_t)h->fp8_modules; }
static inline size_t state_fp8_floats(const StateHeader* h) {
    return h->fp8_modules ? ((size_t)h->recipe.delayed.amax_history_len + 2) * state_fp8_slots(h) : 0;
}

// The arrays after the header, in file order, with their sizes in bytes (the write, the read and the checksum walk
// the same list).
enum { STATE_ARRAYS = 7 };
static inline void state_file_arrays(const StateHeader* h, void* m, void* v, const StateFp8Arrays* fp8,
                                     void* arrays[STATE_ARRAYS], size_t bytes[STATE_ARRAYS]) {
    size_t n = (size_t)h->opt_count, slots = state_fp8_slots(h);
    arrays[0] = m, bytes[0] = n * sizeof(float);
    arrays[1] = v, bytes[1] = n * sizeof(float);
    arrays[2] = fp8 ? fp8->meta : NULL, bytes[2] = state_fp8_floats(h) * sizeof(float);
    arrays[3] = fp8 ? fp8->last_amax : NULL, bytes[3] = slots * sizeof(float);
    arrays[4] = fp8 ? fp8->window_amax : NULL, bytes[4] = slots * sizeof(float);
    arrays[5] = fp8 ? fp8->stats : NULL, bytes[5] = slots * sizeof(Fp8QuantStats);
    arrays[6] = fp8 ? fp8->block_scale_range : NULL;
    bytes[6] = fp8_recipe_is_block_scaled(&h->recipe) ? slots * sizeof(Fp8BlockScaleRange) : 0;
}

// The FP8 arrays a state file with header h holds, allocated (all NULL when it has none), for the tools that read
// state files they did not write (dev/compare_runs, the fuzzer); the trainers point the arrays at their own buffers.
static inline void state_fp8_arrays_alloc(const StateHeader* h, StateFp8Arrays* fp8) {
    size_t slots = state_fp8_slots(h);
    memset(fp8, 0, sizeof(*fp8));
    if (!slots) { return; }
    fp8->meta = (float*)calloc_or_die(state_fp8_floats(h), sizeof(float), "FP8 metadata");
    fp8->last_amax = (float*)calloc_or_die(slots, sizeof(float), "FP8 amaxes");
    fp8->window_amax = (float*)calloc_or_die(slots, sizeof(float), "FP8 window amaxes");
    fp8->stats = (Fp8QuantStats*)calloc_or_die(slots, sizeof(Fp8QuantStats), "FP8 counters");
    if (fp8_recipe_is_block_scaled(&h->recipe)) {
        fp8->block_scale_range = (Fp8BlockScaleRange*)calloc_or_die(slots, sizeof(Fp8BlockScaleRange),
                                                                    "FP8 block scale ranges");
    }
}

static inline void state_fp8_arrays_free(StateFp8Arrays* fp8) {
    free(fp8->meta);
    free(fp8->last_amax);
    free(fp8->window_amax);
    free(fp8->stats);
    free(fp8->block_scale_range);
    memset(fp8, 0, sizeof(*fp8));
}

// The checksum a state file ends with: of its header and arrays, in file order.
static inline uint64_t state_file_checksum(const int32_t header[256], void* const arrays[STATE_ARRAYS],
                                           const size_t bytes[STATE_ARRAYS]) {
    Checksum c;
    checksum_begin(&c);
    checksum_add(&c, header, 256 * sizeof(int32_t));
    for (int i = 0; i < STATE_ARRAYS; i++) { checksum_add(&c, arrays[i], bytes[i]); }
    return checksum_end(&c);
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
    header[6] = h->recipe.delayed.amax_history_len;
    header[7] = h->recipe.margin;
    header[8] = h->recipe.delayed.interval;
    header[9] = (int32_t)h->recipe.fp8_format;
    header[10] = (int32_t)h->recipe.delayed.amax_compute_algo;
    header[11] = h->recipe.override_fprop;
    header[12] = h->recipe.override_dgrad;
    header[13] = h->recipe.override_wgrad;
    header[14] = h->recipe.delayed.reduce_amax;
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
    put_i64(&header[36], (int64_t)h->model_checksum);
    memcpy(&header[38], &h->recipe.blockwise.amax_epsilon, sizeof(float));
    header[39] = !h->recipe.blockwise.power_2_scale;
    header[40] = h->skipped_in_a_row;
    header[41] = h->first_skipped_step;
    put_i64(&header[42], (int64_t)h->tokenizer_checksum);
    header[44] = h->fp8_attention;
    void* arrays[STATE_ARRAYS];
    size_t bytes[STATE_ARRAYS];
    state_file_arrays(h, (void*)m, (void*)v, fp8, arrays, bytes);
    uint64_t checksum = state_file_checksum(header, arrays, bytes);
    AtomicFile af;
    if (atomic_open(&af, path, err, errlen)) { return -1; }
    atomic_write(&af, header, sizeof(header));
    for (int i = 0; i < STATE_ARRAYS; i++) { atomic_write(&af, arrays[i], bytes[i]); }
    atomic_write(&af, &checksum, sizeof(checksum));
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
    if (header[1] != STATE_VERSION && header[1] != STATE_VERSION_BEFORE_FP8_ATTENTION) {
        snprintf(err, errlen, "%s: state file version %d is not supported (expected %d%s)", path, header[1],
                 STATE_VERSION, header[1] == 2 || header[1] == 3
                                    ? "; versions 2 and 3, written before state files recorded their model file's "
                                      "checksum, resume only with the commit that wrote them"
                                    : "");
        return -1;
    }
    memset(h, 0, sizeof(*h));
    fp8_recipe_default(&h->recipe);
    h->num_processes = header[2];
    h->process_rank = header[3];
    h->precision = header[4];
    h->fp8_modules = header[5];
    h->recipe.delayed.amax_history_len = header[6];
    h->recipe.margin = header[7];
    h->recipe.delayed.interval = header[8];
    h->recipe.fp8_format = (Fp8RecipeFormat)header[9];
    h->recipe.delayed.amax_compute_algo = (AmaxComputeAlgo)header[10];
    h->recipe.override_fprop = header[11];
    h->recipe.override_dgrad = header[12];
    h->recipe.override_wgrad = header[13];
    h->recipe.delayed.reduce_amax = header[14];
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
    h->model_checksum = (uint64_t)get_i64(&header[36]);
    memcpy(&h->recipe.blockwise.amax_epsilon, &header[38], sizeof(float));
    h->recipe.blockwise.power_2_scale = !header[39];
    h->skipped_in_a_row = header[40];
    h->first_skipped_step = header[41];
    h->tokenizer_checksum = (uint64_t)get_i64(&header[42]);
    h->fp8_attention = header[1] == STATE_VERSION_BEFORE_FP8_ATTENTION ? 0 : header[44];
    char recipe_err[256];
    // every range before any arithmetic on it: sizes below are then products of bounded numbers (no overflow)
    if (h->num_parameters <= 0 || h->num_parameters > STATE_MAX_PARAMETERS || h->opt_offset < 0 || h->opt_count < 0 ||
        h->opt_offset > h->num_parameters || h->opt_count > h->num_parameters - h->opt_offset ||
        h->process_rank < 0 || h->process_rank >= h->num_processes || h->step < 0 || h->num_processes < 1 ||
        h->precision < 0 || h->precision > 2 || h->fp8_modules < 0 || h->fp8_modules > (1 << 20) ||
        (h->fp8_modules && fp8_recipe_validate(&h->recipe, recipe_err, sizeof(recipe_err))) || h->B < 1 ||
        h->T < 1 || h->total_batch < 1 || h->shard_index < 0 || h->shard_position < 0 || h->skipped_in_a_row < 0 ||
        h->first_skipped_step < 0 || h->first_skipped_step > h->step || (h->skipped_in_a_row > 0) != (h->first_skipped_step > 0) ||
        h->fp8_attention < FP8_ATTENTION_OFF || h->fp8_attention > FP8_ATTENTION_MHA) {
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
                                              "the FP8 diagnostics counters", "the FP8 block scale ranges"};
    FILE* f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open state file %s: %s", path, strerror(errno));
        return -1;
    }
    int32_t header[256];
    uint64_t stored;
    void* arrays[STATE_ARRAYS];
    size_t bytes[STATE_ARRAYS];
    state_file_arrays(h, m, v, fp8, arrays, bytes);
    int rc = read_exact(f, header, sizeof(header), path, "the header", err, errlen);
    for (int i = 0; i < STATE_ARRAYS && !rc; i++) { rc = read_exact(f, arrays[i], bytes[i], path, names[i], err, errlen); }
    rc = rc || read_exact(f, &stored, sizeof(stored), path, "the checksum", err, errlen);
    fclose(f);
    if (rc) { return -1; }
    if (state_file_checksum(header, arrays, bytes) != stored) {
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
    size_t slots = state_fp8_slots(h), history = (size_t)h->recipe.delayed.amax_history_len * slots;
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
        // block scales are positive (min +inf and max 0 while a slot has none): never NaN or negative
        const Fp8BlockScaleRange* range = fp8->block_scale_range ? &fp8->block_scale_range[s] : NULL;
        if (range && fp8_recipe_is_block_scaled(&h->recipe) &&
            (!(range->scale_min > 0.0f) || !(range->scale_max >= 0.0f) || isinf(range->scale_max))) {
            snprintf(err, errlen, "%s: corrupt FP8 block scale range (slot %zu)", path, s);
            return -1;
        }
    }
    return 0;
}

// ----------------------------------------------------------------------------
// a folder's checkpoints: their names, the steps they hold

enum { CHECKPOINT_FILE_NONE = 0, CHECKPOINT_FILE_MODEL, CHECKPOINT_FILE_STATE, CHECKPOINT_FILE_DONE };

// Whether `name` is a checkpoint file (model_%08d.bin, state_%08d_%05d.bin, DONE_%08d) or the temporary file of one
// (NAME.tmp.PID): its kind (CHECKPOINT_FILE_NONE when neither), step, and whether it is a temporary file.
static inline int checkpoint_file_kind(const char* name, long long* step, int* temporary) {
    static const char* const prefixes[] = {"model_", "state_", "DONE_"};
    static const int kinds[] = {CHECKPOINT_FILE_MODEL, CHECKPOINT_FILE_STATE, CHECKPOINT_FILE_DONE};
    for (int k = 0; k < 3; k++) {
        size_t prefix = strlen(prefixes[k]);
        if (strncmp(name, prefixes[k], prefix) != 0) { continue; }
        const char* p = name + prefix;
        if (*p < '0' || *p > '9') { return CHECKPOINT_FILE_NONE; }
        char* end;
        errno = 0;
        long long value = strtoll(p, &end, 10);
        if (errno == ERANGE) { return CHECKPOINT_FILE_NONE; }
        p = end;
        if (kinds[k] == CHECKPOINT_FILE_STATE) {  // _RANK
            if (*p != '_' || p[1] < '0' || p[1] > '9') { return CHECKPOINT_FILE_NONE; }
            p++;
            while (*p >= '0' && *p <= '9') { p++; }
        }
        if (kinds[k] != CHECKPOINT_FILE_DONE) {
            if (strncmp(p, ".bin", 4) != 0) { return CHECKPOINT_FILE_NONE; }
            p += 4;
        }
        *temporary = 0;
        if (strncmp(p, ".tmp.", 5) == 0 && p[5] >= '0' && p[5] <= '9') {
            p += 5;
            while (*p >= '0' && *p <= '9') { p++; }
            *temporary = 1;
        }
        if (*p != '\0') { return CHECKPOINT_FILE_NONE; }
        *step = value;
        return kinds[k];
    }
    return CHECKPOINT_FILE_NONE;
}

// Calls visit(dir, name, kind, step, temporary, context) for every checkpoint file in dir. Returns -1 when dir cannot
// be read (it does not exist yet, say), else 0.
typedef void (*CheckpointFileVisitor)(const char* dir, const char* name, int kind, long long step, int temporary,
                                      void* context);
static inline int checkpoint_files_visit(const char* dir, CheckpointFileVisitor visit, void* context) {
    DIR* d = opendir(dir);
    if (!d) { return -1; }
    struct dirent* entry;
    while ((entry = readdir(d)) != NULL) {
        long long step;
        int temporary;
        int kind = checkpoint_file_kind(entry->d_name, &step, &temporary);
        if (kind != CHECKPOINT_FILE_NONE) { visit(dir, entry->d_name, kind, step, temporary, context); }
    }
    closedir(d);
    return 0;
}

typedef struct {
    long long newest_done;  // the newest step with a DONE marker (a complete checkpoint), or -1
    long long newest_any;   // the newest step any checkpoint file (complete or not, temporary or not) has, or -1
    long long below;        // newest_done_below: only DONE steps below this count
    long long newest_done_below;
} CheckpointSteps;

static inline void checkpoint_steps_visit(const char* dir, const char* name, int kind, long long step, int temporary,
                                          void* context) {
    (void)dir, (void)name;
    CheckpointSteps* s = (CheckpointSteps*)context;
    if (step > s->newest_any) { s->newest_any = step; }
    if (kind == CHECKPOINT_FILE_DONE && !temporary) {
        if (step > s->newest_done) { s->newest_done = step; }
        if (step < s->below && step > s->newest_done_below) { s->newest_done_below = step; }
    }
}

// The steps of dir's checkpoints (all -1 when there are none, or no dir); newest_done_below: the newest complete one
// before step `below`.
static inline CheckpointSteps checkpoint_steps(const char* dir, long long below) {
    CheckpointSteps s = {-1, -1, below, -1};
    checkpoint_files_visit(dir, checkpoint_steps_visit, &s);
    return s;
}

// The newest step with a DONE_%08d marker in `dir`, or -1.
static inline long long latest_checkpoint_step(const char* dir) { return checkpoint_steps(dir, 0).newest_done; }

// ----------------------------------------------------------------------------
// what the trainers call: model files, a checkpoint's save, verification and load

// Reads a model file (version 3, or llm.c's bf16 version 5 widened to fp32) into a freshly allocated parameter
// buffer; validates header, exact size and finiteness. What -e FILE starts from, in both trainers.
static inline float* read_model_file(const char* path, GPT2Config* config, size_t* num_parameters) {
    char err[ERROR_MESSAGE_MAX];
    float* params;
    if (model_file_read(path, config, &params, num_parameters, NULL, NULL, NULL, err, sizeof(err))) { die("%s", err); }
    return params;
}

static inline char* checkpoint_model_path(const char* dir, long long step) {
    return alloc_printf("%s/model_%08lld.bin", dir, step);
}
static inline char* checkpoint_state_path(const char* dir, long long step, int rank) {
    return alloc_printf("%s/state_%08lld_%05d.bin", dir, step, rank);
}

// The model file of checkpoint `step`: llm.c's header with the step in it (every rank computes its checksum, which
// its state file records; rank 0 writes it).
static inline void checkpoint_model_header(int32_t header[256], const GPT2Config* config, int step) {
    model_header_fill(header, config);
    header[MODEL_HEADER_STEP] = step;
}

static inline uint64_t checkpoint_model_checksum(int step, const GPT2Config* config, const float* params,
                                                 size_t num_parameters) {
    int32_t header[256];
    checkpoint_model_header(header, config, step);
    return model_file_checksum(header, params, num_parameters);
}

// The three parts of a checkpoint, in the order they must be written: the model file (rank 0), every rank's state
// file (h->model_checksum: the model file's checksum), and (after all of them, rank 0) the DONE marker a resume looks
// for.
static inline void checkpoint_save_model(const char* dir, int step, const GPT2Config* config, const float* params,
                                         size_t num_parameters) {
    char err[ERROR_MESSAGE_MAX];
    int32_t header[256];
    checkpoint_model_header(header, config, step);
    char* path = checkpoint_model_path(dir, step);
    if (model_file_write(path, header, params, num_parameters, err, sizeof(err))) { die("%s", err); }
    free(path);
}

static inline void checkpoint_save_state(const char* dir, int step, const float* m, const float* v,
                                         const StateHeader* h, const StateFp8Arrays* fp8) {
    char err[ERROR_MESSAGE_MAX];
    char* path = checkpoint_state_path(dir, step, h->process_rank);
    if (state_file_write(path, h, m, v, fp8, err, sizeof(err))) { die("%s", err); }
    free(path);
}

static inline void checkpoint_mark_done(const char* dir, int step) {
    char err[ERROR_MESSAGE_MAX];
    char* path = alloc_printf("%s/DONE_%08d", dir, step);
    AtomicFile done;
    if (atomic_open(&done, path, err, sizeof(err)) || atomic_commit(&done, err, sizeof(err))) { die("%s", err); }
    free(path);
}

// One process: all three. h->model_checksum is filled in here.
static inline void checkpoint_save(const char* dir, int step, const GPT2Config* config, const float* params,
                                   const float* m, const float* v, StateHeader* h, const StateFp8Arrays* fp8) {
    h->model_checksum = checkpoint_model_checksum(step, config, params, (size_t)h->num_parameters);
    checkpoint_save_model(dir, step, config, params, (size_t)h->num_parameters);
    checkpoint_save_state(dir, step, m, v, h, fp8);
    checkpoint_mark_done(dir, step);  // DONE last: a resume only trusts a step whose files are all complete
}

// A state file's own checksum, streamed (nothing of it loaded): 0 when intact, else -1 and why.
static inline int state_file_verify(const char* path, StateHeader* h, char* err, size_t errlen) {
    if (state_file_read_header(path, h, err, errlen)) { return -1; }
    long long size = file_size_of(path);
    uint64_t computed, stored;
    if (file_checksum(path, size - 8, &computed, err, errlen)) { return -1; }
    FILE* f = fopen(path, "rb");
    int ok = f && fseek(f, (long)(size - 8), SEEK_SET) == 0 && fread(&stored, sizeof(stored), 1, f) == 1;
    if (f) { fclose(f); }
    if (!ok) {
        snprintf(err, errlen, "%s: cannot read its checksum", path);
        return -1;
    }
    if (computed != stored) {
        snprintf(err, errlen, "%s: corrupt state file (checksum mismatch)", path);
        return -1;
    }
    return 0;
}

// Whether checkpoint `step` of dir is intact for this rank, without loading it: its state file's checksum, the step
// in it, the checksum of the model file it recorded, the step in the model file. 0, or -1 and why.
static inline int checkpoint_verify(const char* dir, long long step, int rank, char* err, size_t errlen) {
    char* state_path = checkpoint_state_path(dir, step, rank);
    char* model_path = checkpoint_model_path(dir, step);
    StateHeader h;
    int rc = state_file_verify(state_path, &h, err, errlen);
    if (!rc && h.step != step) {
        snprintf(err, errlen, "%s: holds step %lld, not %lld (another checkpoint's state file)", state_path,
                 (long long)h.step, step);
        rc = -1;
    }
    uint64_t model_checksum;
    if (!rc) { rc = file_checksum(model_path, file_size_of(model_path), &model_checksum, err, errlen); }
    if (!rc && model_checksum != h.model_checksum) {
        snprintf(err, errlen, "%s: not the model file %s recorded (checksum mismatch: damaged or replaced)", model_path,
                 state_path);
        rc = -1;
    }
    int32_t header[256];
    FILE* f = rc ? NULL : fopen(model_path, "rb");
    if (!rc && (!f || fread(header, sizeof(header), 1, f) != 1 || header[MODEL_HEADER_STEP] != step)) {
        snprintf(err, errlen, "%s: does not hold step %lld", model_path, step);
        rc = -1;
    }
    if (f) { fclose(f); }
    free(state_path);
    free(model_path);
    return rc;
}

// Checkpoint `step` cannot be resumed (`why`: its files are damaged or do not belong together): one line that says
// why, and which older checkpoint is intact and how to resume from it (never a silent fall back to it).
static inline void checkpoint_refuse_damaged(const char* dir, long long step, int rank, const char* why)
    __attribute__((noreturn));
static inline void checkpoint_refuse_damaged(const char* dir, long long step, int rank, const char* why) {
    char err[ERROR_MESSAGE_MAX];
    for (long long below = step;;) {
        long long older = checkpoint_steps(dir, below).newest_done_below;
        if (older < 0) { break; }
        if (checkpoint_verify(dir, older, rank, err, sizeof(err)) == 0) {
            die("%s: checkpoint %lld in %s cannot be resumed; the newest intact one is step %lld: -y 1 -resume_step "
                "%lld resumes from it (removing the checkpoints after it)", why, step, dir, older, older);
        }
        below = older;
    }
    die("%s: checkpoint %lld in %s cannot be resumed, and no older one is intact (-start_over 1 starts the run again, "
        "removing them)", why, step, dir);
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
    int float_bits;            // checkpoint and run are a float's bits: compared as bits, printed as the float
} ResumeSetting;

static inline long long float_bits_of(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof(bits));
    return (long long)bits;
}

// A setting's value as the flag takes it: its name, the float, or the number.
static inline void resume_setting_format(const ResumeSetting* st, long long value, char* out, size_t outlen) {
    if (st->float_bits) {
        uint32_t bits = (uint32_t)value;
        float x;
        memcpy(&x, &bits, sizeof(x));
        // the fewest digits (up to 9, which always suffice) whose value as a flag gives these bits back
        for (int digits = 6; digits <= 9; digits++) {
            snprintf(out, outlen, "%.*g", digits, (double)x);
            if (strtof(out, NULL) == x) { break; }
        }
    } else if (st->names && value >= 0 && value < st->num_names) {
        snprintf(out, outlen, "%s", st->names[value]);
    } else {
        snprintf(out, outlen, "%lld", value);
    }
}

static inline int checkpoint_check_same_run(const char* path, const StateHeader* file, const StateHeader* run, char* err,
                                            size_t errlen) {
    static const char* const precisions[] = {"fp32", "bf16", "fp8"};
    static const char* const formats[] = {"e4m3", "hybrid", "e5m2"};
    static const char* const algos[] = {"max", "most_recent", "callback"};
    static const char* const* scalings = fp8_scaling_recipe_names;
    const Fp8Recipe *f = &file->recipe, *r = &run->recipe;
    int fp8 = run->precision == PRECISION_FP8;
    // the override flags in the trainer's sense: -fp8_fprop 1 is that GEMM in FP8 (override 0)
    ResumeSetting settings[] = {
        {"-precision", file->precision, run->precision, precisions, 3, 0},
        {"-b", file->B, run->B, NULL, 0, 0},
        {"-t", file->T, run->T, NULL, 0, 0},
        {"-d", file->total_batch, run->total_batch, NULL, 0, 0},
        {fp8 ? "-fp8_recipe" : NULL, f->scaling, r->scaling, scalings, FP8_NUM_SCALING_RECIPES, 0},
        {fp8 ? "-fp8" : NULL, f->fp8_format, r->fp8_format, formats, 3, 0},
        {fp8 ? "-fp8_amax_history_len" : NULL, f->delayed.amax_history_len, r->delayed.amax_history_len, NULL, 0, 0},
        {fp8 ? "-fp8_amax_compute_algo" : NULL, f->delayed.amax_compute_algo, r->delayed.amax_compute_algo, algos, 3,
         0},
        {fp8 ? "-fp8_margin" : NULL, f->margin, r->margin, NULL, 0, 0},
        {fp8 ? "-fp8_interval" : NULL, f->delayed.interval, r->delayed.interval, NULL, 0, 0},
        {fp8 ? "-fp8_fprop" : NULL, !f->override_fprop, !r->override_fprop, NULL, 0, 0},
        {fp8 ? "-fp8_dgrad" : NULL, !f->override_dgrad, !r->override_dgrad, NULL, 0, 0},
        {fp8 ? "-fp8_wgrad" : NULL, !f->override_wgrad, !r->override_wgrad, NULL, 0, 0},
        {fp8 ? "-fp8_reduce_amax" : NULL, f->delayed.reduce_amax, r->delayed.reduce_amax, NULL, 0, 0},
        {fp8 ? "-fp8_bf16_first_last" : NULL, file->fp8_bf16_first_last, run->fp8_bf16_first_last, NULL, 0, 0},
        {fp8 ? "-fp8_lm_head" : NULL, file->fp8_lm_head, run->fp8_lm_head, NULL, 0, 0},
        {fp8 ? "-fp8_attention" : NULL, file->fp8_attention, run->fp8_attention, NULL, 0, 0},
        {fp8 ? "-fp8_amax_epsilon" : NULL, float_bits_of(f->blockwise.amax_epsilon),
         float_bits_of(r->blockwise.amax_epsilon), NULL, 0, 1},
        {fp8 ? "-fp8_pow2_scales" : NULL, f->blockwise.power_2_scale, r->blockwise.power_2_scale, NULL, 0, 0},
    };
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
        const ResumeSetting* st = &settings[i];
        if (!st->flag || st->checkpoint == st->run) { continue; }
        char was[32], now[32];
        resume_setting_format(st, st->checkpoint, was, sizeof(was));
        resume_setting_format(st, st->run, now, sizeof(now));
        snprintf(err, errlen, "%s: cannot resume: %s is %s in the checkpoint but %s in this run (resume with %s %s, or "
                 "start a new run in another -o)", path, st->flag, was, now, st->flag, was);
        return -1;
    }
    return 0;
}

// A checkpoint that does not fit this run (`why`): when its state file is damaged, that is what the line says (a
// corrupt header can look like other settings), else `why`.
static inline void checkpoint_refuse_other_run(const char* dir, long long step, int rank, const char* state_path,
                                               const char* why) __attribute__((noreturn));
static inline void checkpoint_refuse_other_run(const char* dir, long long step, int rank, const char* state_path,
                                               const char* why) {
    char err[ERROR_MESSAGE_MAX];
    StateHeader h;
    if (state_file_verify(state_path, &h, err, sizeof(err))) { checkpoint_refuse_damaged(dir, step, rank, err); }
    die("%s", why);
}

// Loads checkpoint `step` of `dir` into params, m, v and (when the run has FP8 state) fp8's arrays, after checking
// that its files are intact and belong together (the steps in the names and in the files, the model's checksum, the
// state's: else checkpoint_refuse_damaged) and that it was written by this run (model, process layout, every setting
// of checkpoint_check_same_run); on return h holds the file's step, RNG, data position, skipped steps and tokenizer checksum.
static inline void checkpoint_load(const char* dir, int step, const GPT2Config* config, float* params, float* m,
                                   float* v, StateHeader* h, const StateFp8Arrays* fp8) {
    char err[ERROR_MESSAGE_MAX];
    int rank = h->process_rank;
    char* state_path = checkpoint_state_path(dir, step, rank);
    char* model_path = checkpoint_model_path(dir, step);
    // the state header: the step it belongs to and its model file's checksum
    StateHeader file;
    if (state_file_read_header(state_path, &file, err, sizeof(err))) { checkpoint_refuse_damaged(dir, step, rank, err); }
    if (file.step != step) {
        snprintf(err, sizeof(err), "%s: holds step %lld, not %d (another checkpoint's state file)", state_path,
                 (long long)file.step, step);
        checkpoint_refuse_damaged(dir, step, rank, err);
    }
    // the model file: the bytes the state file recorded, of the same step, then the same model as this run's
    GPT2Config file_config;
    size_t n;
    uint64_t model_checksum;
    long long model_step;
    int model_version;
    float* file_params;
    if (model_file_read(model_path, &file_config, &file_params, &n, &model_checksum, &model_step, &model_version, err,
                        sizeof(err))) {
        checkpoint_refuse_damaged(dir, step, rank, err);
    }
    // A checkpoint's model file is ours, version 3: the fp32 masters a resume continues bit for bit, and the bytes its
    // state file's checksum was taken of. A bf16 one (llm.c's train_gpt2cu writes them under the same name) has lost
    // the low 16 bits of every master and cannot be what the state file recorded: said as such rather than as a
    // checksum mismatch. Such a file starts a new run with -e instead (with fresh AdamW moments).
    if (model_version != MODEL_VERSION_FP32) {
        free(file_params);
        snprintf(err, sizeof(err), "%s: a bf16 model file (version %d, as llm.c writes), not this trainer's checkpoint "
                 "(version %d, fp32 masters) that %s recorded (-e %s with another -o starts a new run from it)",
                 model_path, model_version, MODEL_VERSION_FP32, state_path, model_path);
        checkpoint_refuse_damaged(dir, step, rank, err);
    }
    if (model_checksum != file.model_checksum) {
        free(file_params);
        snprintf(err, sizeof(err), "%s: not the model file %s recorded (checksum %016llx, recorded %016llx: damaged or "
                 "replaced)", model_path, state_path, (unsigned long long)model_checksum,
                 (unsigned long long)file.model_checksum);
        checkpoint_refuse_damaged(dir, step, rank, err);
    }
    if (model_step != step) {
        free(file_params);
        snprintf(err, sizeof(err), "%s: holds step %lld, not %d", model_path, model_step, step);
        checkpoint_refuse_damaged(dir, step, rank, err);
    }
    int same = same_config(&file_config, config);
    if (same) { memcpy(params, file_params, n * sizeof(float)); }
    free(file_params);
    if (!same) {
        snprintf(err, sizeof(err), "%s: checkpoint model (L %d, C %d, NH %d, V %d, maxT %d) differs from the run's (L "
                 "%d, C %d, NH %d, V %d, maxT %d)", model_path, file_config.num_layers, file_config.channels,
                 file_config.num_heads, file_config.vocab_size, file_config.max_seq_len, config->num_layers,
                 config->channels, config->num_heads, config->vocab_size, config->max_seq_len);
        checkpoint_refuse_other_run(dir, step, rank, state_path, err);
    }
    // the state file's run against this one
    if (file.num_processes != h->num_processes) {
        snprintf(err, sizeof(err), "%s: written by %d processes, this run has %d", state_path, file.num_processes,
                 h->num_processes);
        checkpoint_refuse_other_run(dir, step, rank, state_path, err);
    }
    if (file.num_parameters != h->num_parameters) {
        snprintf(err, sizeof(err), "%s: parameter count does not match the model", state_path);
        checkpoint_refuse_other_run(dir, step, rank, state_path, err);
    }
    if (file.opt_offset != h->opt_offset || file.opt_count != h->opt_count) {
        snprintf(err, sizeof(err), "%s: holds the optimizer state of parameters [%lld, %lld), this rank owns [%lld, "
                 "%lld) (same -pn and -z as the run that wrote it)", state_path, (long long)file.opt_offset,
                 (long long)(file.opt_offset + file.opt_count), (long long)h->opt_offset,
                 (long long)(h->opt_offset + h->opt_count));
        checkpoint_refuse_other_run(dir, step, rank, state_path, err);
    }
    if (checkpoint_check_same_run(state_path, &file, h, err, sizeof(err))) {
        checkpoint_refuse_other_run(dir, step, rank, state_path, err);
    }
    if (file.fp8_modules != h->fp8_modules) {  // same model and precision, so only a corrupt file gets here
        snprintf(err, sizeof(err), "%s: corrupt state file (%d FP8 modules, the model has %d)", state_path,
                 file.fp8_modules, h->fp8_modules);
        checkpoint_refuse_damaged(dir, step, rank, err);
    }
    // the state's arrays, under its own checksum
    if (state_file_read_body(state_path, &file, m, v, fp8, err, sizeof(err)) ||
        (file.fp8_modules && state_fp8_check(state_path, &file, fp8, err, sizeof(err)))) {
        checkpoint_refuse_damaged(dir, step, rank, err);
    }
    free(state_path);
    free(model_path);
    h->step = file.step;
    h->rng_state = file.rng_state;
    h->shard_index = file.shard_index;
    h->shard_position = file.shard_position;
    h->skipped_in_a_row = file.skipped_in_a_row;
    h->first_skipped_step = file.first_skipped_step;
    h->tokenizer_checksum = file.tokenizer_checksum;
}

#endif  // GPTFP8_CHECKPOINT_H
