/*
llmc/tokenizer.h — decodes token ids to text for sampling, from a tokenizer file in llm.c's format:
int32 header[256] = {20240328 magic, version, vocab_size, eot_token (version 2 only)}, then for each token one uint8
length followed by that many bytes. Version 1 files (GPT-2's, before llm.c stored the eot) mean eot = 50256. The eot
must be inside the vocabulary (sampling starts from it).
Errors come back as -1 with a one-line message; nothing here exits.
*/
#ifndef GPTFP8_TOKENIZER_H
#define GPTFP8_TOKENIZER_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKENIZER_MAGIC 20240328

typedef struct {
    uint32_t vocab_size;
    int eot_token;
    char** token_table;  // (vocab_size) NUL-terminated token bytes
} Tokenizer;

static inline void tokenizer_free(Tokenizer* tokenizer) {
    if (tokenizer->token_table) {
        for (uint32_t i = 0; i < tokenizer->vocab_size; i++) { free(tokenizer->token_table[i]); }
    }
    free(tokenizer->token_table);
    memset(tokenizer, 0, sizeof(*tokenizer));
}

static inline int tokenizer_init(Tokenizer* tokenizer, const char* path, char* err, size_t errlen) {
    memset(tokenizer, 0, sizeof(*tokenizer));
    FILE* f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "cannot open tokenizer %s: %s", path, strerror(errno));
        return -1;
    }
    int32_t header[256];
    if (fread(header, sizeof(int32_t), 256, f) != 256) {
        snprintf(err, errlen, "tokenizer %s is truncated (shorter than its header)", path);
        fclose(f);
        return -1;
    }
    if (header[0] != TOKENIZER_MAGIC) {
        snprintf(err, errlen, "tokenizer %s has bad magic %d (expected %d)", path, header[0], TOKENIZER_MAGIC);
        fclose(f);
        return -1;
    }
    if (header[1] != 1 && header[1] != 2) {
        snprintf(err, errlen, "tokenizer %s has version %d (expected 1 or 2)", path, header[1]);
        fclose(f);
        return -1;
    }
    if (header[2] <= 0 || header[2] > (1 << 24)) {
        snprintf(err, errlen, "tokenizer %s is corrupt (vocab size %d)", path, header[2]);
        fclose(f);
        return -1;
    }
    // each token takes at least 2 bytes (its length and one byte): a vocabulary the file cannot hold is corrupt, and
    // is refused before a table for it is allocated
    long long file_bytes = fseek(f, 0, SEEK_END) == 0 ? (long long)ftell(f) : -1;
    if (file_bytes < 0 || fseek(f, sizeof(header), SEEK_SET) != 0) {
        snprintf(err, errlen, "cannot read tokenizer %s: %s", path, strerror(errno));
        fclose(f);
        return -1;
    }
    if (2LL * header[2] > file_bytes - (long long)sizeof(header)) {
        snprintf(err, errlen, "tokenizer %s is truncated (%lld bytes cannot hold %d tokens)", path, file_bytes, header[2]);
        fclose(f);
        return -1;
    }
    int eot = header[1] == 1 ? 50256 : header[3];
    if (eot < 0 || eot >= header[2]) {
        snprintf(err, errlen, "tokenizer %s is corrupt: its eot token %d is outside its vocabulary of %d%s", path, eot,
                 header[2], header[1] == 1 ? " (version 1 means GPT-2's eot 50256)" : "");
        fclose(f);
        return -1;
    }
    tokenizer->vocab_size = (uint32_t)header[2];
    tokenizer->eot_token = eot;
    tokenizer->token_table = (char**)calloc(tokenizer->vocab_size, sizeof(char*));
    if (!tokenizer->token_table) {
        snprintf(err, errlen, "out of memory reading tokenizer %s", path);
        fclose(f);
        return -1;
    }
    for (uint32_t i = 0; i < tokenizer->vocab_size; i++) {
        unsigned char length;
        char* bytes = NULL;
        if (fread(&length, 1, 1, f) != 1 || length == 0 || !(bytes = (char*)malloc((size_t)length + 1)) ||
            fread(bytes, 1, length, f) != length) {
            snprintf(err, errlen, "tokenizer %s is truncated or corrupt at token %u", path, i);
            free(bytes);
            fclose(f);
            tokenizer_free(tokenizer);
            return -1;
        }
        bytes[length] = '\0';
        tokenizer->token_table[i] = bytes;
    }
    int trailing = fgetc(f);
    fclose(f);
    if (trailing != EOF) {
        snprintf(err, errlen, "tokenizer %s is corrupt (bytes after the last of its %u tokens)", path,
                 tokenizer->vocab_size);
        tokenizer_free(tokenizer);
        return -1;
    }
    return 0;
}

// The bytes of a token, or NULL for an id outside the vocabulary.
static inline const char* tokenizer_decode(const Tokenizer* tokenizer, uint32_t token) {
    return token < tokenizer->vocab_size ? tokenizer->token_table[token] : NULL;
}

#endif  // GPTFP8_TOKENIZER_H
