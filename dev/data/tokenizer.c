/*
dev/data/tokenizer.c — a byte-level BPE tokenizer in C: trains on a text file, writes llm.c's tokenizer and data
files, encodes and decodes.

  tokenizer train  -i input.txt -o DIR [-v vocab_size]          -> DIR/tokenizer.bin, DIR/tokenizer.merges
  tokenizer encode -i input.txt -k DIR/tokenizer.bin -o PREFIX [-f val_fraction]
                                                               -> PREFIX_val.bin (first fraction), PREFIX_train.bin
  tokenizer decode -k DIR/tokenizer.bin -i shard.bin -o out.txt

Vocabulary: ids 0..255 are the bytes, 256.. the merges in the order they were learned, and the last id is the
end-of-text token "<|endoftext|>" (so vocab_size = 256 + merges + 1). Text is first split into pieces the way GPT-2
does (a word with its leading space, a run of digits, a run of punctuation, whitespace), merges never cross pieces,
and training counts each distinct piece once with its frequency, so a merge updates only the pieces that hold its
pair. Ties between equally frequent pairs go to the smallest (left, right) ids: training is deterministic.

tokenizer.bin is exactly llm.c's format (int32 header[256] = {20240328, 2, vocab_size, eot}, then per token a uint8
length and the bytes), so llm.c can decode with it. Encoding needs the merge order, which that format does not hold
(a token's bytes can be split in several ways), so it goes into tokenizer.merges beside it: int32 {20241123, 1,
num_merges}, then num_merges pairs of int32 (left, right). Shards are llm.c's data files: int32 header[256] =
{20240520, 1, num_tokens}, then uint16 tokens, each split starting with the eot token, as llm.c's scripts do.

Every output is written to PATH.tmp, fsynced and renamed, so a failed run never leaves a partial file in place.
*/
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TOKENIZER_MAGIC 20240328
#define MERGES_MAGIC 20241123
#define SHARD_MAGIC 20240520
#define MAX_VOCAB 65535  // uint16 tokens
#define EOT_TEXT "<|endoftext|>"

static void die(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
#include <stdarg.h>
static void die(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "tokenizer: error: ");
    vfprintf(stderr, fmt, args);
    fprintf(stderr, "\n");
    va_end(args);
    exit(1);
}

static void* xcalloc(size_t n, size_t size) {
    void* p = calloc(n ? n : 1, size);
    if (!p) { die("out of memory (%zu x %zu bytes)", n, size); }
    return p;
}

static void* xrealloc(void* p, size_t bytes) {
    p = realloc(p, bytes ? bytes : 1);
    if (!p) { die("out of memory (%zu bytes)", bytes); }
    return p;
}

static unsigned char* read_file(const char* path, size_t* size) {
    FILE* f = fopen(path, "rb");
    if (!f) { die("cannot open %s: %s", path, strerror(errno)); }
    size_t cap = 1 << 20, n = 0;
    unsigned char* data = xcalloc(cap, 1);
    size_t got;
    while ((got = fread(data + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) { data = xrealloc(data, cap *= 2); }
    }
    if (ferror(f)) { die("cannot read %s: %s", path, strerror(errno)); }
    fclose(f);
    *size = n;
    return data;
}

// ----------------------------------------------------------------------------
// atomic output files

typedef struct {
    FILE* f;
    char path[1024], tmp[1100];
} OutFile;

static void out_open(OutFile* o, const char* path) {
    snprintf(o->path, sizeof(o->path), "%s", path);
    snprintf(o->tmp, sizeof(o->tmp), "%s.tmp", path);
    o->f = fopen(o->tmp, "wb");
    if (!o->f) { die("cannot create %s: %s", o->tmp, strerror(errno)); }
}

static void out_write(OutFile* o, const void* data, size_t bytes) {
    if (bytes && fwrite(data, 1, bytes, o->f) != bytes) {
        fclose(o->f);
        unlink(o->tmp);
        die("writing %s failed: %s", o->tmp, strerror(errno));
    }
}

static void out_commit(OutFile* o) {
    if (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0 || fclose(o->f) != 0) {
        unlink(o->tmp);
        die("writing %s failed: %s", o->tmp, strerror(errno));
    }
    if (rename(o->tmp, o->path) != 0) {
        unlink(o->tmp);
        die("cannot rename %s to %s: %s", o->tmp, o->path, strerror(errno));
    }
}

// ----------------------------------------------------------------------------
// pre-splitting text into pieces (GPT-2 style): " word", " 123", " ?!", whitespace runs

enum { CLS_SPACE, CLS_LETTER, CLS_DIGIT, CLS_OTHER };
static int byte_class(unsigned char c) {
    if (isspace(c)) { return CLS_SPACE; }
    if (isalpha(c) || c >= 0x80) { return CLS_LETTER; }  // UTF-8 bytes stay with their word
    if (isdigit(c)) { return CLS_DIGIT; }
    return CLS_OTHER;
}

// Length of the piece starting at text[i].
static size_t next_piece(const unsigned char* text, size_t n, size_t i) {
    size_t j = i;
    if (text[j] == ' ' && j + 1 < n && byte_class(text[j + 1]) != CLS_SPACE) { j++; }  // a leading space joins
    int cls = byte_class(text[j]);
    if (cls == CLS_SPACE) {
        // a whitespace run; its last space is left to the word that follows it
        while (j < n && byte_class(text[j]) == CLS_SPACE) { j++; }
        if (j < n && j - i > 1 && text[j - 1] == ' ') { j--; }
        return j - i;
    }
    while (j < n && byte_class(text[j]) == cls) { j++; }
    return j - i;
}

// ----------------------------------------------------------------------------
// hash map from byte strings to an int (distinct pieces -> index), open addressing

typedef struct {
    size_t cap, count;
    int32_t* slots;  // index into the key arrays, -1 empty
    const unsigned char** keys;
    size_t* key_lens;
} StrMap;

static uint64_t hash_bytes(const unsigned char* s, size_t n) {
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) { h = (h ^ s[i]) * 0x100000001B3ull; }
    return h;
}

static void strmap_init(StrMap* m) {
    m->cap = 1 << 16;
    m->count = 0;
    m->slots = xcalloc(m->cap, sizeof(int32_t));
    memset(m->slots, 0xFF, m->cap * sizeof(int32_t));
    m->keys = xcalloc(m->cap, sizeof(*m->keys));
    m->key_lens = xcalloc(m->cap, sizeof(size_t));
}

static void strmap_free(StrMap* m) {
    free(m->slots);
    free(m->keys);
    free(m->key_lens);
    memset(m, 0, sizeof(*m));
}

// Index of the key, inserting it (the key memory must outlive the map) if new; *is_new tells which.
static int strmap_get(StrMap* m, const unsigned char* s, size_t n, int* is_new) {
    if (2 * (m->count + 1) > m->cap) {  // grow: rehash the indices
        size_t cap = m->cap * 2;
        int32_t* slots = xcalloc(cap, sizeof(int32_t));
        memset(slots, 0xFF, cap * sizeof(int32_t));
        for (size_t k = 0; k < m->count; k++) {
            size_t h = hash_bytes(m->keys[k], m->key_lens[k]) & (cap - 1);
            while (slots[h] >= 0) { h = (h + 1) & (cap - 1); }
            slots[h] = (int32_t)k;
        }
        free(m->slots);
        m->slots = slots;
        m->keys = xrealloc(m->keys, cap * sizeof(*m->keys));
        m->key_lens = xrealloc(m->key_lens, cap * sizeof(size_t));
        m->cap = cap;
    }
    size_t h = hash_bytes(s, n) & (m->cap - 1);
    while (m->slots[h] >= 0) {
        int32_t k = m->slots[h];
        if (m->key_lens[k] == n && memcmp(m->keys[k], s, n) == 0) {
            *is_new = 0;
            return k;
        }
        h = (h + 1) & (m->cap - 1);
    }
    m->slots[h] = (int32_t)m->count;
    m->keys[m->count] = s;
    m->key_lens[m->count] = n;
    *is_new = 1;
    return (int)m->count++;
}

// ----------------------------------------------------------------------------
// pair -> value map (pair counts in training, merge ranks in encoding), open addressing on a 32-bit key

typedef struct {
    size_t cap, count;
    uint32_t* keys;  // (left << 16 | right) + 1; 0 = empty
    int64_t* values;
} PairMap;

static void pairmap_init(PairMap* m, size_t cap) {
    m->cap = cap;
    m->count = 0;
    m->keys = xcalloc(cap, sizeof(uint32_t));
    m->values = xcalloc(cap, sizeof(int64_t));
}

static void pairmap_free(PairMap* m) {
    free(m->keys);
    free(m->values);
    memset(m, 0, sizeof(*m));
}

static int64_t* pairmap_slot(PairMap* m, uint32_t left, uint32_t right, int insert) {
    uint32_t key = ((left << 16) | right) + 1;
    size_t h = ((uint64_t)key * 0x9E3779B97F4A7C15ull >> 20) & (m->cap - 1);
    while (m->keys[h] != 0) {
        if (m->keys[h] == key) { return &m->values[h]; }
        h = (h + 1) & (m->cap - 1);
    }
    if (!insert) { return NULL; }
    if (2 * (m->count + 1) > m->cap) {  // grow and retry
        PairMap bigger;
        pairmap_init(&bigger, m->cap * 2);
        for (size_t i = 0; i < m->cap; i++) {
            if (m->keys[i]) {
                uint32_t k = m->keys[i] - 1;
                *pairmap_slot(&bigger, k >> 16, k & 0xFFFF, 1) = m->values[i];
            }
        }
        free(m->keys);
        free(m->values);
        *m = bigger;
        return pairmap_slot(m, left, right, 1);
    }
    m->keys[h] = key;
    m->count++;
    return &m->values[h];
}

// ----------------------------------------------------------------------------
// vocabulary: bytes of every token

typedef struct {
    int vocab_size;  // including eot
    int eot;
    unsigned char** bytes;  // (vocab_size)
    int* lens;              // (vocab_size)
    int num_merges;
    int32_t* merges;        // (num_merges, 2)
} Vocab;

static void vocab_free(Vocab* v) {
    if (v->bytes) {
        for (int i = 0; i < v->vocab_size; i++) { free(v->bytes[i]); }
    }
    free(v->bytes);
    free(v->lens);
    free(v->merges);
    memset(v, 0, sizeof(*v));
}

static void vocab_set(Vocab* v, int id, const unsigned char* b, int len) {
    v->bytes[id] = xcalloc((size_t)len + 1, 1);
    memcpy(v->bytes[id], b, (size_t)len);
    v->lens[id] = len;
}

static void write_vocab(const Vocab* v, const char* dir) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/tokenizer.bin", dir);
    OutFile o;
    out_open(&o, path);
    int32_t header[256] = {0};
    header[0] = TOKENIZER_MAGIC;
    header[1] = 2;
    header[2] = v->vocab_size;
    header[3] = v->eot;
    out_write(&o, header, sizeof(header));
    for (int i = 0; i < v->vocab_size; i++) {
        unsigned char len = (unsigned char)v->lens[i];
        out_write(&o, &len, 1);
        out_write(&o, v->bytes[i], (size_t)v->lens[i]);
    }
    out_commit(&o);
    snprintf(path, sizeof(path), "%s/tokenizer.merges", dir);
    out_open(&o, path);
    int32_t mheader[3] = {MERGES_MAGIC, 1, v->num_merges};
    out_write(&o, mheader, sizeof(mheader));
    out_write(&o, v->merges, (size_t)v->num_merges * 2 * sizeof(int32_t));
    out_commit(&o);
}

static void read_vocab(Vocab* v, const char* tokenizer_path) {
    size_t n;
    unsigned char* data = read_file(tokenizer_path, &n);
    int32_t header[256];
    if (n < sizeof(header)) { die("%s is truncated (shorter than its header)", tokenizer_path); }
    memcpy(header, data, sizeof(header));
    if (header[0] != TOKENIZER_MAGIC) { die("%s has bad magic %d (expected %d)", tokenizer_path, header[0], TOKENIZER_MAGIC); }
    if (header[1] != 2) { die("%s has version %d (expected 2)", tokenizer_path, header[1]); }
    if (header[2] < 257 || header[2] > MAX_VOCAB || header[3] != header[2] - 1) {
        die("%s was not made by this tool (vocab %d, eot %d)", tokenizer_path, header[2], header[3]);
    }
    v->vocab_size = header[2];
    v->eot = header[3];
    v->bytes = xcalloc((size_t)v->vocab_size, sizeof(*v->bytes));
    v->lens = xcalloc((size_t)v->vocab_size, sizeof(int));
    size_t pos = sizeof(header);
    for (int i = 0; i < v->vocab_size; i++) {
        if (pos >= n || pos + 1 + data[pos] > n || data[pos] == 0) { die("%s is truncated or corrupt at token %d", tokenizer_path, i); }
        vocab_set(v, i, data + pos + 1, data[pos]);
        pos += 1 + (size_t)data[pos];
    }
    free(data);
    char path[1100];
    snprintf(path, sizeof(path), "%.*s.merges", (int)(strlen(tokenizer_path) - 4), tokenizer_path);
    if (strlen(tokenizer_path) < 4 || strcmp(tokenizer_path + strlen(tokenizer_path) - 4, ".bin") != 0) {
        snprintf(path, sizeof(path), "%s.merges", tokenizer_path);
    }
    unsigned char* mdata = read_file(path, &n);
    int32_t mheader[3];
    if (n < sizeof(mheader)) { die("%s is truncated", path); }
    memcpy(mheader, mdata, sizeof(mheader));
    if (mheader[0] != MERGES_MAGIC || mheader[1] != 1) { die("%s has bad magic or version", path); }
    if (mheader[2] != v->vocab_size - 257 || n != sizeof(mheader) + (size_t)mheader[2] * 8) {
        die("%s does not match %s (%d merges for a vocabulary of %d)", path, tokenizer_path, mheader[2], v->vocab_size);
    }
    v->num_merges = mheader[2];
    v->merges = xcalloc((size_t)v->num_merges * 2, sizeof(int32_t));
    memcpy(v->merges, mdata + sizeof(mheader), (size_t)v->num_merges * 8);
    for (int k = 0; k < v->num_merges; k++) {
        int a = v->merges[2 * k], b = v->merges[2 * k + 1];
        if (a < 0 || b < 0 || a >= 256 + k || b >= 256 + k || v->lens[a] + v->lens[b] != v->lens[256 + k] ||
            memcmp(v->bytes[a], v->bytes[256 + k], (size_t)v->lens[a]) != 0) {
            die("%s: merge %d (%d, %d) does not match token %d of %s", path, k, a, b, 256 + k, tokenizer_path);
        }
    }
    free(mdata);
}

// ----------------------------------------------------------------------------
// train

typedef struct {
    int32_t* ids;  // current tokens of the piece
    int len;
    int64_t freq;
} Piece;

static void add_pairs(PairMap* counts, const Piece* p, int64_t sign) {
    for (int i = 0; i + 1 < p->len; i++) { *pairmap_slot(counts, (uint32_t)p->ids[i], (uint32_t)p->ids[i + 1], 1) += sign * p->freq; }
}

static void cmd_train(const char* input, const char* out_dir, int vocab_size) {
    size_t n;
    unsigned char* text = read_file(input, &n);
    if (n == 0) {
        free(text);
        die("%s is empty", input);
    }
    StrMap map;
    strmap_init(&map);
    Piece* pieces = NULL;
    size_t cap = 0;
    for (size_t i = 0; i < n;) {
        size_t len = next_piece(text, n, i);
        int is_new;
        int k = strmap_get(&map, text + i, len, &is_new);
        if (is_new) {
            if ((size_t)k >= cap) { pieces = xrealloc(pieces, (cap = cap ? cap * 2 : 4096) * sizeof(Piece)); }
            pieces[k].ids = xcalloc(len, sizeof(int32_t));
            for (size_t j = 0; j < len; j++) { pieces[k].ids[j] = text[i + j]; }
            pieces[k].len = (int)len;
            pieces[k].freq = 0;
        }
        pieces[k].freq++;
        i += len;
    }
    size_t num_pieces = map.count;
    Vocab v;
    memset(&v, 0, sizeof(v));
    v.vocab_size = vocab_size;
    v.eot = vocab_size - 1;
    v.bytes = xcalloc((size_t)vocab_size, sizeof(*v.bytes));
    v.lens = xcalloc((size_t)vocab_size, sizeof(int));
    v.merges = xcalloc((size_t)vocab_size * 2, sizeof(int32_t));
    for (int b = 0; b < 256; b++) {
        unsigned char c = (unsigned char)b;
        vocab_set(&v, b, &c, 1);
    }
    PairMap counts;
    pairmap_init(&counts, 1 << 16);
    for (size_t k = 0; k < num_pieces; k++) { add_pairs(&counts, &pieces[k], 1); }
    int target_merges = vocab_size - 257;
    while (v.num_merges < target_merges) {
        // the most frequent pair (ties: smallest ids); pairs whose token would exceed 255 bytes are not eligible
        int64_t best_count = 0;
        uint32_t best_key = 0;
        for (size_t i = 0; i < counts.cap; i++) {
            if (!counts.keys[i] || counts.values[i] <= 0) { continue; }
            uint32_t key = counts.keys[i] - 1;
            if (v.lens[key >> 16] + v.lens[key & 0xFFFF] > 255) { continue; }
            if (counts.values[i] > best_count || (counts.values[i] == best_count && key < best_key)) {
                best_count = counts.values[i];
                best_key = key;
            }
        }
        if (best_count == 0) {
            fprintf(stderr, "tokenizer: only %d merges possible on this text; vocabulary is %d\n", v.num_merges,
                    257 + v.num_merges);
            break;
        }
        int a = (int)(best_key >> 16), b = (int)(best_key & 0xFFFF), id = 256 + v.num_merges;
        v.merges[2 * v.num_merges] = a;
        v.merges[2 * v.num_merges + 1] = b;
        unsigned char joined[512];
        memcpy(joined, v.bytes[a], (size_t)v.lens[a]);
        memcpy(joined + v.lens[a], v.bytes[b], (size_t)v.lens[b]);
        vocab_set(&v, id, joined, v.lens[a] + v.lens[b]);
        v.num_merges++;
        // update only the pieces holding the pair: take their pairs out, merge, put them back
        for (size_t k = 0; k < num_pieces; k++) {
            Piece* p = &pieces[k];
            int found = 0;
            for (int i = 0; i + 1 < p->len && !found; i++) { found = p->ids[i] == a && p->ids[i + 1] == b; }
            if (!found) { continue; }
            add_pairs(&counts, p, -1);
            int w = 0;
            for (int i = 0; i < p->len; i++) {
                if (i + 1 < p->len && p->ids[i] == a && p->ids[i + 1] == b) {
                    p->ids[w++] = id;
                    i++;
                } else {
                    p->ids[w++] = p->ids[i];
                }
            }
            p->len = w;
            add_pairs(&counts, p, 1);
        }
    }
    int allocated = v.vocab_size;  // token slots allocated for the requested size; fewer merges may have been learned
    v.vocab_size = 257 + v.num_merges;
    v.eot = v.vocab_size - 1;
    vocab_set(&v, v.eot, (const unsigned char*)EOT_TEXT, (int)strlen(EOT_TEXT));
    write_vocab(&v, out_dir);
    printf("tokenizer: %d merges learned from %zu bytes (%zu distinct pieces); vocabulary %d, eot %d -> %s/tokenizer.bin\n",
           v.num_merges, n, num_pieces, v.vocab_size, v.eot, out_dir);
    v.vocab_size = allocated;
    vocab_free(&v);
    for (size_t k = 0; k < num_pieces; k++) { free(pieces[k].ids); }
    free(pieces);
    pairmap_free(&counts);
    strmap_free(&map);
    free(text);
}

// ----------------------------------------------------------------------------
// encode

typedef struct {
    PairMap ranks;  // (left, right) -> merge index
    StrMap cache;   // piece -> index into cached token lists
    int32_t** cached;
    int* cached_len;
    size_t cached_cap;
} Encoder;

static const int32_t* encode_piece(Encoder* e, const Vocab* v, const unsigned char* s, size_t len, int* out_len) {
    int is_new;
    int k = strmap_get(&e->cache, s, len, &is_new);
    if (!is_new) {
        *out_len = e->cached_len[k];
        return e->cached[k];
    }
    if ((size_t)k >= e->cached_cap) {
        e->cached_cap = e->cached_cap ? e->cached_cap * 2 : 4096;
        e->cached = xrealloc(e->cached, e->cached_cap * sizeof(*e->cached));
        e->cached_len = xrealloc(e->cached_len, e->cached_cap * sizeof(int));
    }
    int32_t* ids = xcalloc(len, sizeof(int32_t));
    int n = (int)len;
    for (int i = 0; i < n; i++) { ids[i] = s[i]; }
    for (;;) {  // apply the earliest-learned merge present, everywhere in the piece, until none applies
        int64_t best = -1;
        for (int i = 0; i + 1 < n; i++) {
            int64_t* r = pairmap_slot(&e->ranks, (uint32_t)ids[i], (uint32_t)ids[i + 1], 0);
            if (r && (best < 0 || *r < best)) { best = *r; }
        }
        if (best < 0) { break; }
        int a = v->merges[2 * best], b = v->merges[2 * best + 1], w = 0;
        for (int i = 0; i < n; i++) {
            if (i + 1 < n && ids[i] == a && ids[i + 1] == b) {
                ids[w++] = 256 + (int)best;
                i++;
            } else {
                ids[w++] = ids[i];
            }
        }
        n = w;
    }
    e->cached[k] = ids;
    e->cached_len[k] = n;
    *out_len = n;
    return ids;
}

static void encoder_free(Encoder* e) {
    for (size_t k = 0; k < e->cache.count; k++) { free(e->cached[k]); }
    free(e->cached);
    free(e->cached_len);
    pairmap_free(&e->ranks);
    strmap_free(&e->cache);
}

static void write_shard(const char* path, const uint16_t* tokens, size_t count) {
    if (count > 0x7FFFFFFF) { die("%s would hold %zu tokens, more than a shard header can count", path, count); }
    OutFile o;
    out_open(&o, path);
    int32_t header[256] = {0};
    header[0] = SHARD_MAGIC;
    header[1] = 1;
    header[2] = (int32_t)count;
    out_write(&o, header, sizeof(header));
    out_write(&o, tokens, count * sizeof(uint16_t));
    out_commit(&o);
}

static size_t encode_text(Encoder* e, const Vocab* v, const unsigned char* text, size_t n, uint16_t* out) {
    size_t count = 0;
    out[count++] = (uint16_t)v->eot;  // each split starts with eot, as llm.c's scripts do
    for (size_t i = 0; i < n;) {
        size_t len = next_piece(text, n, i);
        int m;
        const int32_t* ids = encode_piece(e, v, text + i, len, &m);
        for (int j = 0; j < m; j++) { out[count++] = (uint16_t)ids[j]; }
        i += len;
    }
    return count;
}

static void cmd_encode(const char* input, const char* tokenizer_path, const char* prefix, double val_fraction) {
    Vocab v;
    memset(&v, 0, sizeof(v));
    read_vocab(&v, tokenizer_path);
    size_t n;
    unsigned char* text = read_file(input, &n);
    if (n == 0) {  // no tokens to write: each shard would hold the eot alone
        free(text);
        vocab_free(&v);
        die("%s is empty: nothing to encode", input);
    }
    Encoder e;
    memset(&e, 0, sizeof(e));
    pairmap_init(&e.ranks, 1 << 17);
    for (int k = 0; k < v.num_merges; k++) { *pairmap_slot(&e.ranks, (uint32_t)v.merges[2 * k], (uint32_t)v.merges[2 * k + 1], 1) = k; }
    strmap_init(&e.cache);
    // the val split ends at the first newline after the fraction, so no word is cut in two
    size_t split = (size_t)(val_fraction * (double)n);
    while (split > 0 && split < n && text[split - 1] != '\n') { split++; }
    uint16_t* tokens = xcalloc(n + 2, sizeof(uint16_t));
    char path[1100];
    size_t val_count = encode_text(&e, &v, text, split, tokens);
    snprintf(path, sizeof(path), "%s_val.bin", prefix);
    write_shard(path, tokens, val_count);
    size_t train_count = encode_text(&e, &v, text + split, n - split, tokens);
    snprintf(path, sizeof(path), "%s_train.bin", prefix);
    write_shard(path, tokens, train_count);
    printf("tokenizer: %s -> %s_val.bin (%zu tokens) and %s_train.bin (%zu tokens), %.2f bytes per token\n", input,
           prefix, val_count, prefix, train_count, (double)n / (double)(val_count + train_count - 2));
    free(tokens);
    free(text);
    encoder_free(&e);
    vocab_free(&v);
}

// ----------------------------------------------------------------------------
// decode

static void cmd_decode(const char* tokenizer_path, const char* shard, const char* out_path) {
    Vocab v;
    memset(&v, 0, sizeof(v));
    read_vocab(&v, tokenizer_path);
    size_t n;
    unsigned char* data = read_file(shard, &n);
    int32_t header[256];
    if (n < sizeof(header)) { die("data shard %s is truncated (shorter than its header)", shard); }
    memcpy(header, data, sizeof(header));
    if (header[0] != SHARD_MAGIC) { die("data shard %s has bad magic %d (expected %d)", shard, header[0], SHARD_MAGIC); }
    if (header[1] != 1) { die("data shard %s has version %d (expected 1)", shard, header[1]); }
    if (header[2] < 0 || n != sizeof(header) + 2 * (size_t)header[2]) {
        die("data shard %s is truncated or corrupt: %zu bytes, its header says %zu", shard, n,
            sizeof(header) + 2 * (size_t)(header[2] < 0 ? 0 : header[2]));
    }
    OutFile o;
    out_open(&o, out_path);
    for (int32_t i = 0; i < header[2]; i++) {
        uint16_t t;
        memcpy(&t, data + sizeof(header) + 2 * (size_t)i, 2);
        if (t >= v.vocab_size) {
            fclose(o.f);
            unlink(o.tmp);
            die("data shard %s: token id %u at position %d is not below the vocabulary size %d", shard, t, i, v.vocab_size);
        }
        if (t != v.eot) { out_write(&o, v.bytes[t], (size_t)v.lens[t]); }
    }
    out_commit(&o);
    free(data);
    vocab_free(&v);
}

// ----------------------------------------------------------------------------

static void usage_and_exit(void) {
    fprintf(stderr,
            "usage: tokenizer train  -i input.txt -o DIR [-v vocab_size (257..65535, default 1024)]\n"
            "       tokenizer encode -i input.txt -k DIR/tokenizer.bin -o PREFIX [-f val_fraction (0..1, default 0.1)]\n"
            "       tokenizer decode -k DIR/tokenizer.bin -i shard.bin -o out.txt\n");
    exit(2);
}

int main(int argc, char** argv) {
    if (argc < 2) { usage_and_exit(); }
    const char* cmd = argv[1];
    const char *input = NULL, *output = NULL, *tokenizer = NULL;
    int vocab_size = 1024;
    double val_fraction = 0.1;
    for (int i = 2; i < argc; i++) {
        const char* flag = argv[i];
        if (i + 1 >= argc) { die("flag %s needs a value", flag); }
        const char* value = argv[++i];
        char* end = NULL;
        errno = 0;
        if (strcmp(flag, "-i") == 0) {
            input = value;
        } else if (strcmp(flag, "-o") == 0) {
            output = value;
        } else if (strcmp(flag, "-k") == 0) {
            tokenizer = value;
        } else if (strcmp(flag, "-v") == 0) {
            long v = strtol(value, &end, 10);
            if (end == value || *end || errno || v < 257 || v > MAX_VOCAB) {
                die("invalid value '%s' for -v: expected an integer in [257, %d]", value, MAX_VOCAB);
            }
            vocab_size = (int)v;
        } else if (strcmp(flag, "-f") == 0) {
            double f = strtod(value, &end);
            if (end == value || *end || errno || !(f >= 0.0 && f < 1.0)) {
                die("invalid value '%s' for -f: expected a number in [0, 1)", value);
            }
            val_fraction = f;
        } else {
            die("unknown flag %s", flag);
        }
    }
    if (strcmp(cmd, "train") == 0) {
        if (!input || !output) { die("train needs -i input.txt and -o DIR"); }
        cmd_train(input, output, vocab_size);
    } else if (strcmp(cmd, "encode") == 0) {
        if (!input || !output || !tokenizer) { die("encode needs -i input.txt, -k tokenizer.bin and -o PREFIX"); }
        cmd_encode(input, tokenizer, output, val_fraction);
    } else if (strcmp(cmd, "decode") == 0) {
        if (!input || !output || !tokenizer) { die("decode needs -k tokenizer.bin, -i shard.bin and -o out.txt"); }
        cmd_decode(tokenizer, input, output);
    } else {
        die("unknown command '%s' (train, encode or decode)", cmd);
    }
    return 0;
}
