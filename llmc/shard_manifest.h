/*
llmc/shard_manifest.h — the manifest of a dataset's shard set: which files one encoding wrote, with their sizes, token
counts and XXH3-64 checksums, and whether that encoding finished. dev/data/tokenizer writes it (encode) and the
trainers' data loader reads it (llmc/dataloader.h), so a set left half re-encoded (shards 1-5 new, 6-40 old) or
mixed with an earlier encoding's files is refused instead of trained on.

PREFIX.manifest beside PREFIX_val.bin and PREFIX_train*.bin (data/NAME/NAME.manifest), text, one record a line, the
fields separated by one tab, the file name last (a name, no folder: the set can be moved as a folder):
    gptfp8 shard manifest 1
    status<TAB>complete                                   (or incomplete)
    tokenizer<TAB><bytes><TAB><xxh3-64 hex><TAB><name of the tokenizer.bin it was encoded with>
    file<TAB><bytes><TAB><tokens><TAB><xxh3-64 hex><TAB><name>     (one per shard: val first, then train in order)
The tool writes "status incomplete" (and no file records) before the first shard and the complete manifest after the
last, each through a temporary file and a rename, so a run killed at any moment leaves the earlier manifest, one that
says incomplete, or the complete new set.

Self-contained (like llmc/checksum.h: no die(), nothing from the trainers), so the standalone tool includes it too.
Errors come back as -1 with a one-line message. The reader takes any bytes from disk: every length, number, checksum
and name is checked, and each problem is one line naming the manifest and its line (fuzz/fuzz_manifest.c).
*/
#ifndef GPTFP8_SHARD_MANIFEST_H
#define GPTFP8_SHARD_MANIFEST_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"

#define SHARD_MANIFEST_HEADER "gptfp8 shard manifest 1"
#define SHARD_MANIFEST_SUFFIX ".manifest"
// Far above any real set (a line is under 300 bytes: 64 MiB is some 200K shards), and what the reader allocates at
// most for a file that is not a manifest.
#define SHARD_MANIFEST_MAX_BYTES ((long long)64 << 20)
#define SHARD_MANIFEST_MAX_NAME 255                // a file name (NAME_MAX)
#define SHARD_MANIFEST_SHARD_HEADER_BYTES 1024LL  // llm.c's shard header: a shard is 1024 + 2 * tokens bytes

typedef struct {
    char* name;  // the file's name, no folder
    long long bytes;
    long long tokens;
    uint64_t checksum;  // XXH3-64 of the file's bytes
} ManifestEntry;

typedef struct {
    char* path;  // the manifest's path, as it was read
    int complete;
    long long tokenizer_bytes;
    uint64_t tokenizer_checksum;
    char* tokenizer_name;  // the name of the tokenizer.bin it was encoded with, no folder
    ManifestEntry* files;  // (num_files) val first, then train in order
    size_t num_files;
} ShardManifest;

static inline void shard_manifest_free(ShardManifest* m) {
    for (size_t i = 0; i < m->num_files; i++) { free(m->files[i].name); }
    free(m->files);
    free(m->path);
    free(m->tokenizer_name);
    memset(m, 0, sizeof(*m));
}

// The part of a path after its last '/'.
static inline const char* shard_manifest_basename(const char* path) {
    const char* slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

// A name a manifest can hold: 1..255 bytes, no '/', no control byte (a tab or line end would break the record), not
// "." or "..".
static inline int shard_manifest_name_ok(const char* name, size_t len) {
    if (len == 0 || len > SHARD_MANIFEST_MAX_NAME || (len == 1 && name[0] == '.') ||
        (len == 2 && name[0] == '.' && name[1] == '.')) {
        return 0;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '/' || c < 0x20 || c == 0x7f) { return 0; }
    }
    return 1;
}

// The manifest of the dataset a shard belongs to: <dir>/<stem>_val.bin, <dir>/<stem>_train.bin or
// <dir>/<stem>_train_<digits>.bin -> <dir>/<stem>.manifest, allocated into *manifest_path. 0: done; 1: not such a
// name (no manifest can belong to it); -1: out of memory.
static inline int shard_manifest_path(const char* shard_path, char** manifest_path) {
    *manifest_path = NULL;
    const char* base = shard_manifest_basename(shard_path);
    size_t n = strlen(base), stem;
    if (n >= 8 && strcmp(base + n - 8, "_val.bin") == 0) {
        stem = n - 8;
    } else if (n >= 10 && strcmp(base + n - 10, "_train.bin") == 0) {
        stem = n - 10;
    } else {
        size_t end = n >= 4 && strcmp(base + n - 4, ".bin") == 0 ? n - 4 : 0, digits = end;
        while (digits > 0 && base[digits - 1] >= '0' && base[digits - 1] <= '9') { digits--; }
        if (end == 0 || digits == end || digits < 7 || strncmp(base + digits - 7, "_train_", 7) != 0) { return 1; }
        stem = digits - 7;
    }
    size_t dir = (size_t)(base - shard_path);
    char* path = (char*)malloc(dir + stem + sizeof(SHARD_MANIFEST_SUFFIX));
    if (!path) { return -1; }
    memcpy(path, shard_path, dir + stem);
    memcpy(path + dir + stem, SHARD_MANIFEST_SUFFIX, sizeof(SHARD_MANIFEST_SUFFIX));
    *manifest_path = path;
    return 0;
}

// A count as the manifest writes it: decimal digits, no sign, no leading zero, at most 18 digits (fits 64 bits).
static inline int shard_manifest_parse_count(const char* s, size_t len, long long* value) {
    if (len == 0 || len > 18 || (len > 1 && s[0] == '0')) { return -1; }
    long long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') { return -1; }
        v = 10 * v + (s[i] - '0');
    }
    *value = v;
    return 0;
}

// Splits a line (no line end) at its tabs into exactly `want` fields, the last one the rest of the line (a name,
// which holds no tab: shard_manifest_name_ok). Returns 0 when there are exactly `want`.
static inline int shard_manifest_fields(const char* line, size_t len, int want, const char** field, size_t* flen) {
    int k = 0;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i == len || line[i] == '\t') {
            if (k == want) { return -1; }
            field[k] = line + start;
            flen[k] = i - start;
            k++;
            start = i + 1;
        }
    }
    return k == want ? 0 : -1;
}

static inline int shard_manifest_parse_checksum(const char* s, size_t len, uint64_t* value) {
    char hex[CHECKSUM_HEX_CHARS];
    if (len != CHECKSUM_HEX_CHARS - 1) { return -1; }
    memcpy(hex, s, len);
    hex[len] = '\0';
    return checksum_parse_hex(hex, value);
}

static inline char* shard_manifest_strndup(const char* s, size_t len) {
    char* copy = (char*)malloc(len + 1);
    if (copy) {
        memcpy(copy, s, len);
        copy[len] = '\0';
    }
    return copy;
}

static inline int shard_manifest_compare_names(const void* a, const void* b) {
    return strcmp((*(const ManifestEntry* const*)a)->name, (*(const ManifestEntry* const*)b)->name);
}

// Parses a manifest's bytes (text, n bytes); `path` names it in messages. 0, or -1 with a one-line message.
static inline int shard_manifest_parse(const char* path, const char* text, size_t n, ShardManifest* m, char* err,
                                       size_t errlen) {
    memset(m, 0, sizeof(*m));
    const char* bad = NULL;  // what is wrong with line `line_no`
    size_t line_no = 0, cap = 0;
    int have_status = 0, have_tokenizer = 0;
    if (n == 0) {
        snprintf(err, errlen, "manifest %s is empty", path);
        return -1;
    }
    if (memchr(text, '\0', n)) {
        snprintf(err, errlen, "manifest %s holds a NUL byte: not a manifest", path);
        return -1;
    }
    if (text[n - 1] != '\n') {
        snprintf(err, errlen, "manifest %s: its last line has no line end (truncated?)", path);
        return -1;
    }
    for (size_t pos = 0; pos < n && !bad;) {
        const char* line = text + pos;
        size_t len = (size_t)((const char*)memchr(line, '\n', n - pos) - line);
        pos += len + 1;
        line_no++;
        const char* f[5];
        size_t fl[5];
        if (line_no == 1) {
            if (len != strlen(SHARD_MANIFEST_HEADER) || memcmp(line, SHARD_MANIFEST_HEADER, len) != 0) {
                bad = len > 22 && memcmp(line, "gptfp8 shard manifest ", 22) == 0
                          ? "a version this reader does not know (it reads \"" SHARD_MANIFEST_HEADER "\")"
                          : "not \"" SHARD_MANIFEST_HEADER "\": not a shard manifest";
            }
        } else if (line_no == 2) {
            if (shard_manifest_fields(line, len, 2, f, fl) != 0 || fl[0] != 6 || memcmp(f[0], "status", 6) != 0) {
                bad = "not a status record (status<TAB>complete or incomplete)";
            } else if (fl[1] == 8 && memcmp(f[1], "complete", 8) == 0) {
                m->complete = 1;
            } else if (!(fl[1] == 10 && memcmp(f[1], "incomplete", 10) == 0)) {
                bad = "the status is neither complete nor incomplete";
            }
            have_status = !bad;
        } else if (line_no == 3) {
            if (shard_manifest_fields(line, len, 4, f, fl) != 0 || fl[0] != 9 || memcmp(f[0], "tokenizer", 9) != 0) {
                bad = "not a tokenizer record (tokenizer<TAB>bytes<TAB>xxh3<TAB>name)";
            } else if (shard_manifest_parse_count(f[1], fl[1], &m->tokenizer_bytes) != 0) {
                bad = "the tokenizer's byte count is not a number";
            } else if (shard_manifest_parse_checksum(f[2], fl[2], &m->tokenizer_checksum) != 0) {
                bad = "the tokenizer's checksum is not 16 lowercase hex digits";
            } else if (!shard_manifest_name_ok(f[3], fl[3])) {
                bad = "the tokenizer's name is empty, too long, or holds a '/' or a control byte";
            } else if (!(m->tokenizer_name = shard_manifest_strndup(f[3], fl[3]))) {
                bad = "out of memory";
            }
            have_tokenizer = !bad;
        } else {
            ManifestEntry e;
            memset(&e, 0, sizeof(e));
            if (shard_manifest_fields(line, len, 5, f, fl) != 0 || fl[0] != 4 || memcmp(f[0], "file", 4) != 0) {
                bad = "not a file record (file<TAB>bytes<TAB>tokens<TAB>xxh3<TAB>name)";
            } else if (shard_manifest_parse_count(f[1], fl[1], &e.bytes) != 0 ||
                       shard_manifest_parse_count(f[2], fl[2], &e.tokens) != 0) {
                bad = "a byte or token count is not a number";
            } else if (e.tokens > INT32_MAX || e.bytes != SHARD_MANIFEST_SHARD_HEADER_BYTES + 2 * e.tokens) {
                bad = "its byte count is not that of a shard of its tokens (1024 + 2 per token, at most 2^31 - 1)";
            } else if (shard_manifest_parse_checksum(f[3], fl[3], &e.checksum) != 0) {
                bad = "the checksum is not 16 lowercase hex digits";
            } else if (!shard_manifest_name_ok(f[4], fl[4])) {
                bad = "the file's name is empty, too long, or holds a '/' or a control byte";
            } else {
                if (m->num_files == cap) {
                    size_t grown = cap ? 2 * cap : 16;
                    ManifestEntry* files = (ManifestEntry*)realloc(m->files, grown * sizeof(ManifestEntry));
                    if (!files) {
                        bad = "out of memory";
                        break;
                    }
                    m->files = files;
                    cap = grown;
                }
                if (!(e.name = shard_manifest_strndup(f[4], fl[4]))) {
                    bad = "out of memory";
                } else {
                    m->files[m->num_files++] = e;
                }
            }
        }
    }
    if (bad) {
        snprintf(err, errlen, "manifest %s line %zu: %s", path, line_no, bad);
        shard_manifest_free(m);
        return -1;
    }
    if (!have_status || !have_tokenizer) {
        snprintf(err, errlen, "manifest %s ends before its %s record (truncated?)", path,
                 have_status ? "tokenizer" : "status");
        shard_manifest_free(m);
        return -1;
    }
    if (m->complete && m->num_files == 0) {
        snprintf(err, errlen, "manifest %s says complete but lists no file", path);
        shard_manifest_free(m);
        return -1;
    }
    if (m->num_files > 1) {  // a name listed twice: sorted pointers, neighbours compared
        const ManifestEntry** sorted = (const ManifestEntry**)malloc(m->num_files * sizeof(*sorted));
        if (!sorted) {
            snprintf(err, errlen, "out of memory reading manifest %s", path);
            shard_manifest_free(m);
            return -1;
        }
        for (size_t i = 0; i < m->num_files; i++) { sorted[i] = &m->files[i]; }
        qsort(sorted, m->num_files, sizeof(*sorted), shard_manifest_compare_names);
        const char* twice = NULL;
        for (size_t i = 1; i < m->num_files && !twice; i++) {
            if (strcmp(sorted[i - 1]->name, sorted[i]->name) == 0) { twice = sorted[i]->name; }
        }
        if (twice) { snprintf(err, errlen, "manifest %s lists %s twice", path, twice); }
        free(sorted);
        if (twice) {
            shard_manifest_free(m);
            return -1;
        }
    }
    if (!(m->path = shard_manifest_strndup(path, strlen(path)))) {
        snprintf(err, errlen, "out of memory reading manifest %s", path);
        shard_manifest_free(m);
        return -1;
    }
    return 0;
}

// Reads the manifest at manifest_path. 0, or -1 with a one-line message (a missing file too: errno is ENOENT then).
static inline int shard_manifest_read(const char* manifest_path, ShardManifest* m, char* err, size_t errlen) {
    memset(m, 0, sizeof(*m));
    FILE* f = fopen(manifest_path, "rb");
    if (!f) {
        int e = errno;
        snprintf(err, errlen, "cannot open manifest %s: %s", manifest_path, strerror(e));
        errno = e;
        return -1;
    }
    size_t cap = 4096, n = 0;
    char* text = (char*)malloc(cap);
    int too_big = 0;
    while (text) {
        if (n == cap) {  // grown up to one byte past the limit, which tells a file over it
            if ((long long)n > SHARD_MANIFEST_MAX_BYTES) {
                too_big = 1;
                break;
            }
            size_t grown = (long long)(2 * cap) > SHARD_MANIFEST_MAX_BYTES ? (size_t)SHARD_MANIFEST_MAX_BYTES + 1 : 2 * cap;
            char* bigger = (char*)realloc(text, grown);
            if (!bigger) { free(text); }
            text = bigger;
            cap = grown;
            continue;
        }
        size_t got = fread(text + n, 1, cap - n, f);
        n += got;
        if (got == 0) { break; }  // the end, or an error (ferror below)
    }
    int read_error = ferror(f) ? (errno ? errno : EIO) : 0;
    fclose(f);
    if (!text) {
        snprintf(err, errlen, "out of memory reading manifest %s", manifest_path);
        errno = 0;
        return -1;
    }
    int rc = -1;
    if (read_error) {
        snprintf(err, errlen, "cannot read manifest %s: %s", manifest_path, strerror(read_error));
    } else if (too_big) {
        snprintf(err, errlen, "manifest %s is larger than %lld MiB: not a manifest", manifest_path,
                 SHARD_MANIFEST_MAX_BYTES >> 20);
    } else {
        rc = shard_manifest_parse(manifest_path, text, n, m, err, errlen);
    }
    free(text);
    errno = 0;
    return rc;
}

// The manifest of the dataset a shard belongs to (shard_manifest_path's name). 0: read into *m; 1: none (a name of
// no such form, or no manifest file: llm.c's shards have none); -1: a manifest that cannot be read or parsed.
static inline int shard_manifest_of(const char* shard_path, ShardManifest* m, char* err, size_t errlen) {
    memset(m, 0, sizeof(*m));
    char* path;
    int rc = shard_manifest_path(shard_path, &path);
    if (rc == 1) { return 1; }
    if (rc != 0) {
        snprintf(err, errlen, "out of memory finding the manifest of %s", shard_path);
        return -1;
    }
    rc = shard_manifest_read(path, m, err, errlen);
    if (rc != 0 && errno == ENOENT) { rc = 1; }
    free(path);
    return rc;
}

// The entry naming the shard's file (its basename), or NULL when the manifest does not list it.
static inline const ManifestEntry* shard_manifest_find(const ShardManifest* m, const char* shard_path) {
    const char* name = shard_manifest_basename(shard_path);
    for (size_t i = 0; i < m->num_files; i++) {
        if (strcmp(m->files[i].name, name) == 0) { return &m->files[i]; }
    }
    return NULL;
}

// Writes the manifest's text (what shard_manifest_parse reads); 0, or -1 when a write failed (errno says why) or a
// name cannot be held (errno EINVAL).
static inline int shard_manifest_print(FILE* f, const ShardManifest* m) {
    char hex[CHECKSUM_HEX_CHARS];
    if (!shard_manifest_name_ok(m->tokenizer_name, strlen(m->tokenizer_name))) {
        errno = EINVAL;
        return -1;
    }
    checksum_hex(m->tokenizer_checksum, hex);
    if (fprintf(f, "%s\nstatus\t%s\ntokenizer\t%lld\t%s\t%s\n", SHARD_MANIFEST_HEADER,
                m->complete ? "complete" : "incomplete", m->tokenizer_bytes, hex, m->tokenizer_name) < 0) {
        return -1;
    }
    for (size_t i = 0; i < m->num_files; i++) {
        const ManifestEntry* e = &m->files[i];
        if (!shard_manifest_name_ok(e->name, strlen(e->name))) {
            errno = EINVAL;
            return -1;
        }
        checksum_hex(e->checksum, hex);
        if (fprintf(f, "file\t%lld\t%lld\t%s\t%s\n", e->bytes, e->tokens, hex, e->name) < 0) { return -1; }
    }
    return 0;
}

#endif  // GPTFP8_SHARD_MANIFEST_H
