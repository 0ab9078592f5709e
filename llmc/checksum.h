/*
llmc/checksum.h — XXH3-64 checksums of bytes and of files: what ties a checkpoint's state file to its model file
(checkpoint.h), what a dataset's manifest records for each shard, and what a run records of its tokenizer and data.
xxHash (https://github.com/Cyan4973/xxHash) is one header in deps/xxhash (scripts/install_xxhash.sh): a well-kept
library, at memory speed, 64 bits, so a damaged file passes with probability 2^-64; its output is fixed since 0.8.0.
Self-contained (no die(), nothing from the trainers), so the standalone tools (dev/data/tokenizer) include it too.
Errors come back as -1 with a one-line message.
*/
#ifndef GPTFP8_CHECKSUM_H
#define GPTFP8_CHECKSUM_H

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL  // header-only: every function static inline, nothing to link
#include <xxhash.h>

// XXH3-64 over a sequence of byte ranges: the same value however the bytes were split into pieces. The state lives
// in the struct (no allocation, so nothing here can fail).
typedef struct {
    XXH3_state_t state;
} Checksum;

static inline void checksum_begin(Checksum* c) {
    XXH3_INITSTATE(&c->state);
    XXH3_64bits_reset(&c->state);
}
static inline void checksum_add(Checksum* c, const void* data, size_t bytes) {
    if (bytes) { XXH3_64bits_update(&c->state, data, bytes); }
}
static inline uint64_t checksum_end(Checksum* c) { return (uint64_t)XXH3_64bits_digest(&c->state); }

// The checksum of a file's first `bytes` bytes, read in pieces (what verifying a checkpoint without loading it takes).
static inline int file_checksum(const char* path, long long bytes, uint64_t* value, char* err, size_t errlen) {
    FILE* f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return -1;
    }
    const size_t PIECE = (size_t)1 << 20;
    unsigned char* piece = (unsigned char*)malloc(PIECE);
    if (!piece) {
        fclose(f);
        snprintf(err, errlen, "out of memory reading %s", path);
        return -1;
    }
    Checksum c;
    checksum_begin(&c);
    long long left = bytes;
    while (left > 0) {
        size_t want = left < (long long)PIECE ? (size_t)left : PIECE;
        if (fread(piece, 1, want, f) != want) { break; }
        checksum_add(&c, piece, want);
        left -= (long long)want;
    }
    *value = checksum_end(&c);
    free(piece);
    fclose(f);
    if (left > 0) {
        snprintf(err, errlen, "%s: truncated file (could not read its %lld bytes)", path, bytes);
        return -1;
    }
    return 0;
}

// The checksum as it is written in text files (manifests, a run's data record): 16 lowercase hex digits.
#define CHECKSUM_HEX_CHARS 17
static inline void checksum_hex(uint64_t value, char out[CHECKSUM_HEX_CHARS]) {
    snprintf(out, CHECKSUM_HEX_CHARS, "%016" PRIx64, value);
}

// Parses checksum_hex's 16 digits; 0 on success.
static inline int checksum_parse_hex(const char* text, uint64_t* value) {
    if (strlen(text) != 16 || strspn(text, "0123456789abcdef") != 16) { return -1; }
    *value = (uint64_t)strtoull(text, NULL, 16);
    return 0;
}

#endif  // GPTFP8_CHECKSUM_H
