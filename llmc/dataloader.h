/*
llmc/dataloader.h — reads llm.c data shards (by glob) into (B, T) batches of inputs and next-token targets.

Shard format (llm.c's GPT-2 shards, as its dev/data scripts write them): int32 header[256] = {20240520 magic, 1 version,
token count, 0...}, then token count uint16. llm.c's LLaMA-3 shards (20240801, version 7, uint32 tokens) are refused
by name.
Every shard is checked up front (magic, version, exact file size, at least one batch of tokens), so a bad file is one
clear error at startup rather than garbage mid-run; token ids are checked against the vocabulary as they are read.
A shard whose dataset has a manifest (llmc/shard_manifest.h: dev/data/tokenizer writes one, llm.c's shards have none)
must belong to the complete set it lists: an encoding that did not finish, a shard it does not list or lists with
another size (left from an earlier encoding), or a listed file that is gone is refused at startup. Sizes only: no
checksums here, so starting costs a stat per file whatever the data's size.

Batches are read sequentially (no shuffling): with num_processes ranks, rank r reads the r-th B*T slice of every
num_processes*B*T stride, and when the next stride does not fit in the shard, all ranks move on to the next shard
(after the last, back to the first). The position (shard index, token offset of the next stride) is all a checkpoint
needs to resume exactly.
*/
#ifndef GPTFP8_DATALOADER_H
#define GPTFP8_DATALOADER_H

#include <errno.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shard_manifest.h"

#define SHARD_MAGIC 20240520
#define SHARD_VERSION 1
#define SHARD_HEADER_INTS 256
#define SHARD_MAGIC_LLAMA3 20240801  // llm.c's shards of LLaMA-3 tokens (version 7, uint32): recognised to be refused

typedef struct {
    size_t B, T;
    int process_rank, num_processes;
    int vocab_size;
    glob_t glob_result;       // the shard paths, sorted
    size_t num_shards;
    size_t* shard_tokens;     // (num_shards) token count of each shard
    size_t current_shard_idx;
    size_t current_position;  // token offset of the next stride in the current shard
    uint16_t* buffer;         // (B*T + 1) tokens read from the file
    int* inputs;              // (B, T)
    int* targets;             // (B, T)
} DataLoader;

// Validates a shard's header and size; on success *num_tokens is its token count.
static inline int shard_check(const char* path, size_t min_tokens, size_t* num_tokens, char* err, size_t errlen) {
    FILE* f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open data shard %s: %s", path, strerror(errno));
        return -1;
    }
    int32_t header[SHARD_HEADER_INTS];
    size_t got = fread(header, sizeof(int32_t), SHARD_HEADER_INTS, f);
    fclose(f);
    if (got != SHARD_HEADER_INTS) {
        snprintf(err, errlen, "data shard %s is truncated (shorter than its 1024-byte header)", path);
        return -1;
    }
    if (header[0] == SHARD_MAGIC_LLAMA3) {  // llm.c's scripts write these with -m llama-3: said, not "bad magic"
        snprintf(err, errlen, "data shard %s is llm.c's LLaMA-3 format (magic %d, uint32 tokens): this trainer trains "
                 "GPT-2 on GPT-2 shards (magic %d, uint16 tokens: llm.c's dev/data scripts with -m gpt-2, their "
                 "default)", path, SHARD_MAGIC_LLAMA3, SHARD_MAGIC);
        return -1;
    }
    if (header[0] != SHARD_MAGIC) {
        snprintf(err, errlen, "data shard %s has bad magic %d (expected %d): not an llm.c data file", path, header[0],
                 SHARD_MAGIC);
        return -1;
    }
    if (header[1] != SHARD_VERSION) {
        snprintf(err, errlen, "data shard %s has version %d (expected %d)", path, header[1], SHARD_VERSION);
        return -1;
    }
    if (header[2] < 0) {
        snprintf(err, errlen, "data shard %s is corrupt (negative token count %d)", path, header[2]);
        return -1;
    }
    struct stat st;
    long long expected = (long long)SHARD_HEADER_INTS * 4 + 2LL * header[2];
    if (stat(path, &st) != 0 || (long long)st.st_size != expected) {
        snprintf(err, errlen, "data shard %s is %s: %lld bytes, its header says %lld", path,
                 (long long)st.st_size < expected ? "truncated" : "corrupt", (long long)st.st_size, expected);
        return -1;
    }
    if ((size_t)header[2] < min_tokens) {
        snprintf(err, errlen, "data shard %s has %d tokens, fewer than one batch needs (%zu)", path, header[2],
                 min_tokens);
        return -1;
    }
    *num_tokens = (size_t)header[2];
    return 0;
}

// A shard with a manifest must be part of the complete set it lists, at the listed size; `m` holds the manifest of the
// shard before (*have: whether it is read), reused while the shards share it, as a dataset's do, so each manifest is
// read, and its listed files looked for, once.
static inline int shard_check_manifest(const char* path, ShardManifest* m, int* have, char* err, size_t errlen) {
    char* manifest_path;
    int rc = shard_manifest_path(path, &manifest_path);
    if (rc == 1) { return 0; }  // not a name a manifest can belong to
    if (rc != 0) {
        snprintf(err, errlen, "out of memory checking data shard %s", path);
        return -1;
    }
    int same = *have && strcmp(m->path, manifest_path) == 0;
    free(manifest_path);
    if (!same) {
        if (*have) { shard_manifest_free(m); }
        *have = 0;
        rc = shard_manifest_of(path, m, err, errlen);  // its message names the manifest (and so the dataset)
        if (rc == 1) { return 0; }                      // no manifest: read as llm.c's shards are
        if (rc != 0) { return -1; }
        *have = 1;
        if (!m->complete) {
            snprintf(err, errlen, "data shard %s: its dataset's encoding did not finish (%s says incomplete): prepare "
                     "it again", path, m->path);
            return -1;
        }
        size_t dir = (size_t)(shard_manifest_basename(m->path) - m->path);
        for (size_t i = 0; i < m->num_files; i++) {  // the whole set is still there, not only the shards matched
            size_t len = dir + strlen(m->files[i].name) + 1;
            char* listed = (char*)malloc(len);
            if (!listed) {
                snprintf(err, errlen, "out of memory checking data shard %s", path);
                return -1;
            }
            snprintf(listed, len, "%.*s%s", (int)dir, m->path, m->files[i].name);
            struct stat st;
            int gone = stat(listed, &st) != 0;
            if (gone) {
                snprintf(err, errlen, "data shard %s: %s, which %s lists in its shard set, no longer exists (the set "
                         "is incomplete): prepare the dataset again", path, listed, m->path);
            }
            free(listed);
            if (gone) { return -1; }
        }
    }
    const ManifestEntry* e = shard_manifest_find(m, path);
    if (!e) {
        snprintf(err, errlen, "data shard %s is not part of the shard set %s lists (left from an earlier encoding?)",
                 path, m->path);
        return -1;
    }
    struct stat st;
    long long bytes = stat(path, &st) == 0 ? (long long)st.st_size : -1;
    if (bytes != e->bytes) {
        snprintf(err, errlen, "data shard %s is %lld bytes, the shard set %s lists has it at %lld (left from an "
                 "earlier encoding?)", path, bytes, m->path, e->bytes);
        return -1;
    }
    return 0;
}

static inline void dataloader_free(DataLoader* loader) {
    globfree(&loader->glob_result);
    free(loader->shard_tokens);
    free(loader->buffer);
    free(loader->inputs);
    free(loader->targets);
    memset(loader, 0, sizeof(*loader));
}

static inline int dataloader_init(DataLoader* loader, const char* pattern, size_t B, size_t T, int process_rank,
                                  int num_processes, int vocab_size, char* err, size_t errlen) {
    memset(loader, 0, sizeof(*loader));
    loader->B = B;
    loader->T = T;
    loader->process_rank = process_rank;
    loader->num_processes = num_processes;
    loader->vocab_size = vocab_size;
    int rc = glob(pattern, 0, NULL, &loader->glob_result);
    if (rc != 0 || loader->glob_result.gl_pathc == 0) {
        snprintf(err, errlen, "no data shard matches %s", pattern);
        if (rc == 0) { globfree(&loader->glob_result); }
        memset(&loader->glob_result, 0, sizeof(loader->glob_result));
        return -1;
    }
    loader->num_shards = loader->glob_result.gl_pathc;
    // a stride is num_processes * B * T tokens, plus the one target after it; a shard holds at most 2^31 - 1 tokens,
    // so a stride that does not fit 64 bits (or a shard) is refused here, before anything is allocated for it
    size_t BT = 0, stride = 0;
    if (B == 0 || T == 0 || num_processes < 1 || __builtin_mul_overflow(B, T, &BT) ||
        __builtin_mul_overflow(BT, (size_t)num_processes, &stride) || stride >= (size_t)INT32_MAX) {
        snprintf(err, errlen, "a batch of B %zu, T %zu, %d processes does not fit in a data shard (at most %d tokens)",
                 B, T, num_processes, INT32_MAX);
        dataloader_free(loader);
        return -1;
    }
    loader->shard_tokens = (size_t*)calloc(loader->num_shards, sizeof(size_t));
    if (!loader->shard_tokens) {
        snprintf(err, errlen, "out of memory for the data loader");
        dataloader_free(loader);
        return -1;
    }
    ShardManifest manifest;
    int have_manifest = 0;
    for (size_t i = 0; i < loader->num_shards; i++) {  // every shard is checked before the batch buffers exist
        const char* path = loader->glob_result.gl_pathv[i];
        if (shard_check(path, stride + 1, &loader->shard_tokens[i], err, errlen) ||
            shard_check_manifest(path, &manifest, &have_manifest, err, errlen)) {
            if (have_manifest) { shard_manifest_free(&manifest); }
            dataloader_free(loader);
            return -1;
        }
    }
    if (have_manifest) { shard_manifest_free(&manifest); }
    loader->buffer = (uint16_t*)calloc(BT + 1, sizeof(uint16_t));
    loader->inputs = (int*)calloc(BT, sizeof(int));
    loader->targets = (int*)calloc(BT, sizeof(int));
    if (!loader->buffer || !loader->inputs || !loader->targets) {
        snprintf(err, errlen, "out of memory for the data loader (batches of %zu tokens)", BT);
        dataloader_free(loader);
        return -1;
    }
    return 0;
}

static inline void dataloader_reset(DataLoader* loader) {
    loader->current_shard_idx = 0;
    loader->current_position = 0;
}

// Batches of all ranks together in one pass over every shard (what "-x -1: one epoch" counts).
static inline size_t dataloader_num_batches(const DataLoader* loader) {
    size_t stride = (size_t)loader->num_processes * loader->B * loader->T, total = 0;
    for (size_t i = 0; i < loader->num_shards; i++) { total += (loader->shard_tokens[i] - 1) / stride; }
    return total;
}

static inline int dataloader_resume(DataLoader* loader, size_t shard_idx, size_t position, char* err, size_t errlen) {
    // a position past the last full stride is valid: the next batch moves on to the next shard
    if (shard_idx >= loader->num_shards) {
        snprintf(err, errlen, "cannot resume the data at shard %zu (0-based): the data has only %zu shards now (did it "
                 "change since the checkpoint?)", shard_idx, loader->num_shards);
        return -1;
    }
    if (position > loader->shard_tokens[shard_idx]) {
        snprintf(err, errlen, "cannot resume the data at token %zu of shard %zu (%s): that shard has only %zu tokens now "
                 "(did it change since the checkpoint?)", position, shard_idx, loader->glob_result.gl_pathv[shard_idx],
                 loader->shard_tokens[shard_idx]);
        return -1;
    }
    loader->current_shard_idx = shard_idx;
    loader->current_position = position;
    return 0;
}

// Fills inputs and targets (B, T) with this rank's slice and advances.
static inline int dataloader_next_batch(DataLoader* loader, char* err, size_t errlen) {
    size_t BT = loader->B * loader->T, stride = (size_t)loader->num_processes * BT;
    if (loader->current_position + stride + 1 > loader->shard_tokens[loader->current_shard_idx]) {
        loader->current_shard_idx = (loader->current_shard_idx + 1) % loader->num_shards;
        loader->current_position = 0;
    }
    const char* path = loader->glob_result.gl_pathv[loader->current_shard_idx];
    size_t offset = loader->current_position + (size_t)loader->process_rank * BT;
    FILE* f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open data shard %s: %s", path, strerror(errno));
        return -1;
    }
    int ok = fseek(f, (long)(SHARD_HEADER_INTS * 4 + offset * 2), SEEK_SET) == 0 &&
             fread(loader->buffer, sizeof(uint16_t), BT + 1, f) == BT + 1;
    fclose(f);
    if (!ok) {
        snprintf(err, errlen, "data shard %s: could not read tokens at %zu (file changed?)", path, offset);
        return -1;
    }
    for (size_t i = 0; i <= BT; i++) {
        if ((int)loader->buffer[i] >= loader->vocab_size) {
            snprintf(err, errlen, "data shard %s: token id %u at position %zu is not below the vocabulary size %d", path,
                     loader->buffer[i], offset + i, loader->vocab_size);
            return -1;
        }
    }
    for (size_t i = 0; i < BT; i++) {
        loader->inputs[i] = loader->buffer[i];
        loader->targets[i] = loader->buffer[i + 1];
    }
    loader->current_position += stride;
    return 0;
}

#endif  // GPTFP8_DATALOADER_H
