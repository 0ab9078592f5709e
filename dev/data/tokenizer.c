/*
dev/data/tokenizer.c — a byte-level BPE tokenizer in C: trains on text, writes llm.c's tokenizer and data files,
encodes and decodes. dev/data/prepare_dataset.sh (make data NAME=... INPUT=...) and prepare_tinyshakespeare.sh run it.

  tokenizer train  -i INPUT [-i INPUT ...] -o DIR [-v vocab_size] [-m sample_mb]
                                                      -> DIR/tokenizer.bin, DIR/tokenizer.merges
  tokenizer encode -i INPUT [-i INPUT ...] -k DIR/tokenizer.bin -o PREFIX [-f val_fraction] [-s shard_tokens]
                                                      -> PREFIX_val.bin and PREFIX_train.bin, or with -s:
                                                         PREFIX_val.bin and PREFIX_train_000001.bin, _000002, ...;
                                                         PREFIX.manifest lists them
  tokenizer decode -k DIR/tokenizer.bin -i shard.bin -o out.txt
  tokenizer hash FILE [FILE ...]                      -> per file "<xxh3-64, 16 hex> <bytes> <path>", in order

INPUT is a text file or a folder, whose .txt files (all the folders below it too) are taken in byte order of their
paths; the inputs are one corpus in the order given, each file a document.

Vocabulary: ids 0..255 are the bytes, 256.. the merges in the order they were learned, and the last id is the
end-of-text token "<|endoftext|>" (so vocab_size = 256 + merges + 1). Text is first split into pieces the way GPT-2
does (a word with its leading space, a run of digits, a run of punctuation, whitespace), merges never cross pieces,
and training counts each distinct piece once with its frequency, so a merge updates only the pieces that hold its
pair. Ties between equally frequent pairs go to the smallest (left, right) ids: training is deterministic.

Training reads a bounded sample of the corpus (-m, 64 MB by default): all of it when it is smaller, else 64 windows
spread evenly over it, each cut at line ends. Why bounded: every merge visits each distinct piece of the sample that
holds its pair, so time and memory grow with the sample, while the merge order only needs the pair frequencies,
which a sample of tens of MB already ranks as the whole corpus would for the vocabularies used here (1K to 64K);
windows spread over the corpus keep a corpus whose topics drift represented. A multi-GB corpus therefore trains its
tokenizer in the same time as a 64 MB one, and encoding, which streams, grows linearly with the corpus.

Encoding streams: each input is read in 8 MiB blocks, never held whole; a piece is encoded once the block shows where
it ends, so the tokens are those of encoding each document at once. Distinct pieces' tokens are cached, the cache
emptied when it reaches 2^19 pieces, so memory stays bounded whatever the corpus. A progress line (bytes done,
tokens/s, ETA) goes to stderr. The val split is the first val_fraction of the corpus's bytes, ending at the next line
end when one comes within 64 KiB, else at the next piece boundary (text of very long lines still splits by size), at
most one shard with -s (a larger one would only slow evaluation: the trainers read a fixed number of val batches); the
rest is the train split. With val_fraction > 0, a split of fewer tokens than one batch of the trainers' default size
(257) is refused (MIN_SPLIT_TOKENS says why). Each document and each split starts with the eot token, as llm.c's
scripts do. With -s, train shards hold shard_tokens tokens each (llm.c's are 100M), the last one what is left; a last
one under a quarter of a shard is joined to the one before, so no shard is too small for a batch. Shards of an earlier
encoding with higher numbers are removed, so a glob over PREFIX_train_*.bin sees this corpus only.

PREFIX.manifest (llmc/shard_manifest.h has its format) lists the shard set: each file's size, token count and XXH3-64,
and the tokenizer's. It is written first saying "incomplete", and, once every shard is written and stale ones are
removed, again complete with every file's checksum, last; so a re-encoding stopped at any moment leaves a set the
trainers refuse (llmc/dataloader.h), never a mix of two corpora they would train on.

tokenizer.bin is exactly llm.c's format (int32 header[256] = {20240328, 2, vocab_size, eot}, then per token a uint8
length and the bytes), so llm.c can decode with it. Reading it checks every token this tool writes: the 256 bytes, the
eot's text, and each merged token exactly its two parts' bytes, so a damaged byte is refused, never used. Encoding
needs the merge order, which that format does not hold (a token's bytes can be split in several ways), so it goes into
tokenizer.merges beside it: int32 {20241123, 1, num_merges}, then num_merges pairs of int32 (left, right). Shards are
llm.c's data files: int32 header[256] = {20240520, 1, num_tokens}, then uint16 tokens.

Every output is written to PATH.tmp, fsynced and renamed, so a failed run never leaves a partial file in place. A
symbolic link is followed (the temporary goes beside its target, which the rename replaces: the link stays); what
exists and is not a regular file is never replaced: a device or a FIFO is written in place (decode and train only:
shards and the manifest must be regular files), a folder or a socket is refused.

`hash` prints the XXH3-64 checksum (llmc/checksum.h, the one checkpoints and manifests record) and size of each file,
so scripts and records can name the exact tokenizer and data a run used; all files are checked before anything is
printed, so a missing one is one error line and no partial list.
*/
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../../llmc/checksum.h"
#include "../../llmc/shard_manifest.h"

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

// A string printed into memory of its own size: paths have no length limit here.
static char* alloc_printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
static char* alloc_printf(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(NULL, 0, fmt, args);
    va_end(args);
    if (n < 0) { die("cannot format a path"); }
    char* s = xcalloc((size_t)n + 1, 1);
    va_start(args, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, args);
    va_end(args);
    return s;
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
    char* path;  // (allocated) the file written: the output path, or the final target of a symbolic link there
    char* tmp;   // (allocated) the temporary it is written as, renamed onto `path` when complete; NULL: in place
} OutFile;

// Where an output really goes: a symbolic link is followed to its final target (which need not exist yet), so the
// temporary file is made beside the target and renamed onto it: the link stays a link, its target gets the content.
static char* output_target(const char* path) {
    char* current = alloc_printf("%s", path);
    for (int hops = 0;; hops++) {
        struct stat st;
        if (lstat(current, &st) != 0 || !S_ISLNK(st.st_mode)) { return current; }
        if (hops == 40) { die("cannot write %s: more than 40 symbolic links in a row (a loop?)", path); }
        char link[4096];
        ssize_t n = readlink(current, link, sizeof(link) - 1);
        if (n < 0 || (size_t)n == sizeof(link) - 1) {
            die("cannot read the symbolic link %s: %s", current, n < 0 ? strerror(errno) : "its target is too long");
        }
        link[n] = '\0';
        const char* slash = strrchr(current, '/');
        char* next = link[0] == '/' || !slash ? alloc_printf("%s", link)  // relative: to the link's folder
                                              : alloc_printf("%.*s/%s", (int)(slash - current), current, link);
        free(current);
        current = next;
    }
}

static const char* file_kind(mode_t mode) {
    return S_ISDIR(mode) ? "a folder" : S_ISSOCK(mode) ? "a socket" : S_ISFIFO(mode) ? "a FIFO"
         : S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device" : "not a regular file";
}

// Opens an output. A new path or a regular file is written to TARGET.tmp and renamed onto it when complete, so a
// failed run never leaves a partial file. What exists and is not a regular file is never replaced (a rename onto
// /dev/full would turn it into a regular file): a device or a FIFO is written in place, streamed (unless
// `regular_only`: shards are rewritten and read back, the manifest must be a file the trainers can read); a folder or
// a socket is refused.
static void out_open_as(OutFile* o, const char* path, int regular_only) {
    o->path = output_target(path);
    o->tmp = NULL;
    struct stat st;
    if (stat(o->path, &st) == 0 && !S_ISREG(st.st_mode)) {
        int streamable = S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) || S_ISFIFO(st.st_mode);
        if (!streamable || regular_only) {
            char what[32];
            snprintf(what, sizeof(what), "%s", file_kind(st.st_mode));
            free(o->path);
            die("cannot write %s: it is %s%s", path, what, streamable ? " (shards and manifests are regular files)" : "");
        }
        o->f = fopen(o->path, "wb");
        if (!o->f) { die("cannot open %s: %s", path, strerror(errno)); }
        return;
    }
    o->tmp = alloc_printf("%s.tmp", o->path);
    o->f = fopen(o->tmp, "w+b");  // w+: a shard being filled can be read back (a short last shard is joined)
    if (!o->f) { die("cannot create %s: %s", o->tmp, strerror(errno)); }
}

static void out_open(OutFile* o, const char* path) { out_open_as(o, path, 0); }

// The file a write goes to, in messages.
static const char* out_name(const OutFile* o) { return o->tmp ? o->tmp : o->path; }

static void out_write(OutFile* o, const void* data, size_t bytes) {
    if (bytes && fwrite(data, 1, bytes, o->f) != bytes) {
        int e = errno;
        fclose(o->f);
        if (o->tmp) { unlink(o->tmp); }
        die("writing %s failed: %s", out_name(o), strerror(e));
    }
}

static void out_commit(OutFile* o) {
    int e = 0;
    if (fflush(o->f) != 0 || (o->tmp && fsync(fileno(o->f)) != 0)) { e = errno; }  // (a device or FIFO: no fsync)
    if (fclose(o->f) != 0 && !e) { e = errno; }
    if (e) {
        if (o->tmp) { unlink(o->tmp); }
        die("writing %s failed: %s", out_name(o), strerror(e));
    }
    if (o->tmp && rename(o->tmp, o->path) != 0) {
        e = errno;
        unlink(o->tmp);
        die("cannot rename %s to %s: %s", o->tmp, o->path, strerror(e));
    }
    free(o->path);
    free(o->tmp);
}

// ----------------------------------------------------------------------------
// inputs: text files, and folders of .txt files, taken as one corpus in a fixed order

typedef struct {
    char** paths;       // (count)
    long long* sizes;   // (count) bytes, when the list was made
    size_t count, cap;
    long long total_bytes;
} InputList;

static void inputs_push(InputList* in, const char* path, long long size) {
    if (in->count == in->cap) {
        in->cap = in->cap ? 2 * in->cap : 64;
        in->paths = xrealloc(in->paths, in->cap * sizeof(*in->paths));
        in->sizes = xrealloc(in->sizes, in->cap * sizeof(*in->sizes));
    }
    in->paths[in->count] = xcalloc(strlen(path) + 1, 1);
    memcpy(in->paths[in->count], path, strlen(path));
    in->sizes[in->count] = size;
    in->count++;
    in->total_bytes += size;
}

static int has_txt_suffix(const char* name) {
    size_t n = strlen(name);
    return n > 4 && strcmp(name + n - 4, ".txt") == 0;
}

// A folder's .txt files and its subfolders', in byte order of their names (alphasort compares with strcoll, which is
// strcmp in the C locale this program runs in), hidden ones (".name") left out. Returns how many it added.
static size_t inputs_add_folder(InputList* in, const char* dir, int depth) {
    if (depth > 64) { die("%s: folders nested more than 64 deep (a link loop?)", dir); }
    struct dirent** entries;
    int n = scandir(dir, &entries, NULL, alphasort);
    if (n < 0) { die("cannot read folder %s: %s", dir, strerror(errno)); }
    size_t added = 0;
    for (int i = 0; i < n; i++) {
        const char* name = entries[i]->d_name;
        if (name[0] != '.') {
            char* path = alloc_printf("%s/%s", dir, name);
            struct stat st;
            if (stat(path, &st) != 0) { die("cannot read %s: %s", path, strerror(errno)); }
            if (S_ISDIR(st.st_mode)) {
                added += inputs_add_folder(in, path, depth + 1);
            } else if (S_ISREG(st.st_mode) && has_txt_suffix(name)) {
                inputs_push(in, path, (long long)st.st_size);
                added++;
            }
            free(path);
        }
        free(entries[i]);
    }
    free(entries);
    return added;
}

// One -i: a file (whatever its name) or a folder of .txt files.
static void inputs_add(InputList* in, const char* path) {
    struct stat st;
    if (stat(path, &st) != 0) { die("cannot open %s: %s", path, strerror(errno)); }
    if (S_ISDIR(st.st_mode)) {
        if (inputs_add_folder(in, path, 0) == 0) { die("folder %s holds no .txt file", path); }
    } else if (S_ISREG(st.st_mode)) {
        inputs_push(in, path, (long long)st.st_size);
    } else {
        die("%s is neither a file nor a folder", path);
    }
}

static void inputs_free(InputList* in) {
    for (size_t k = 0; k < in->count; k++) { free(in->paths[k]); }
    free(in->paths);
    free(in->sizes);
    memset(in, 0, sizeof(*in));
}

// The corpus's name in messages: its one file, or how many.
static const char* inputs_name(const InputList* in, char* buf, size_t len) {
    if (in->count == 1) { return in->paths[0]; }
    snprintf(buf, len, "the input (%zu files)", in->count);
    return buf;
}

// Reads len bytes at offset of an input file, which must still be as large as when it was listed.
static void read_exact_at(FILE* f, const char* path, long long offset, unsigned char* buf, size_t len) {
    if (fseeko(f, (off_t)offset, SEEK_SET) != 0 || fread(buf, 1, len, f) != len) {
        die("cannot read %s: %s", path, ferror(f) ? strerror(errno) : "it became shorter while being read");
    }
}

static FILE* open_input(const char* path) {
    FILE* f = fopen(path, "rb");
    if (!f) { die("cannot open %s: %s", path, strerror(errno)); }
    return f;
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

static void strmap_grow(StrMap* m) {  // double the slots, rehash the indices
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

// Index of the key, or -1; *slot is where it goes if absent (for strmap_insert, before the map changes).
static int strmap_find(const StrMap* m, const unsigned char* s, size_t n, size_t* slot) {
    size_t h = hash_bytes(s, n) & (m->cap - 1);
    while (m->slots[h] >= 0) {
        int32_t k = m->slots[h];
        if (m->key_lens[k] == n && memcmp(m->keys[k], s, n) == 0) { return k; }
        h = (h + 1) & (m->cap - 1);
    }
    *slot = h;
    return -1;
}

// Inserts an absent key (its memory must outlive the map); returns its index.
static int strmap_insert(StrMap* m, const unsigned char* s, size_t n) {
    size_t slot;
    if (2 * (m->count + 1) > m->cap) { strmap_grow(m); }
    if (strmap_find(m, s, n, &slot) >= 0) { die("internal error: strmap_insert of a present key"); }
    m->slots[slot] = (int32_t)m->count;
    m->keys[m->count] = s;
    m->key_lens[m->count] = n;
    return (int)m->count++;
}

// Index of the key, inserting it (the key memory must outlive the map) if new; *is_new tells which.
static int strmap_get(StrMap* m, const unsigned char* s, size_t n, int* is_new) {
    size_t slot;
    int k = strmap_find(m, s, n, &slot);
    *is_new = k < 0;
    return k >= 0 ? k : strmap_insert(m, s, n);
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
    char* path = alloc_printf("%s/tokenizer.bin", dir);
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
    free(path);
    path = alloc_printf("%s/tokenizer.merges", dir);
    out_open(&o, path);
    int32_t mheader[3] = {MERGES_MAGIC, 1, v->num_merges};
    out_write(&o, mheader, sizeof(mheader));
    out_write(&o, v->merges, (size_t)v->num_merges * 2 * sizeof(int32_t));
    out_commit(&o);
    free(path);
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
    // what this tool writes, checked whole: a damaged byte of any token is refused here, never encoded or decoded with
    for (int b = 0; b < 256; b++) {
        if (v->lens[b] != 1 || v->bytes[b][0] != b) { die("%s: token %d is not the byte %d (a damaged file?)", tokenizer_path, b, b); }
    }
    if (v->lens[v->eot] != (int)strlen(EOT_TEXT) || memcmp(v->bytes[v->eot], EOT_TEXT, strlen(EOT_TEXT)) != 0) {
        die("%s: the eot token %d is not %s (a damaged file?)", tokenizer_path, v->eot, EOT_TEXT);
    }
    // DIR/tokenizer.bin -> DIR/tokenizer.merges; a name not ending in .bin gets .merges added
    size_t stem = strlen(tokenizer_path);
    if (stem >= 4 && strcmp(tokenizer_path + stem - 4, ".bin") == 0) { stem -= 4; }
    char* path = alloc_printf("%.*s.merges", (int)stem, tokenizer_path);
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
        // the merged token is exactly its left part's bytes followed by its right part's
        if (a < 0 || b < 0 || a >= 256 + k || b >= 256 + k || v->lens[a] + v->lens[b] != v->lens[256 + k] ||
            memcmp(v->bytes[a], v->bytes[256 + k], (size_t)v->lens[a]) != 0 ||
            memcmp(v->bytes[b], v->bytes[256 + k] + v->lens[a], (size_t)v->lens[b]) != 0) {
            die("%s: merge %d (%d, %d) does not match token %d of %s", path, k, a, b, 256 + k, tokenizer_path);
        }
    }
    free(mdata);
    free(path);
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

// The text BPE training counts: the corpus whole when it is at most sample_bytes, else SAMPLE_WINDOWS windows of
// sample_bytes / SAMPLE_WINDOWS bytes at evenly spaced offsets, each going on through the files that follow (a corpus
// of many short documents is sampled as fully as one long one), starting after a line end and ending at one (unless
// it meets its file's start or end), so no piece is cut. Each file's part of a window is a segment: pieces never cross
// a segment's end, as they never cross a document's in encoding.
#define SAMPLE_WINDOWS 64
typedef struct {
    unsigned char* text;  // (bytes)
    size_t bytes;
    size_t* ends;         // (num_segments) end offset of each segment in text
    size_t num_segments, segments_cap;
} Sample;

static void sample_add_segment(Sample* sample, size_t end) {
    if (sample->num_segments == sample->segments_cap) {
        sample->segments_cap = sample->segments_cap ? 2 * sample->segments_cap : 256;
        sample->ends = xrealloc(sample->ends, sample->segments_cap * sizeof(size_t));
    }
    sample->ends[sample->num_segments++] = end;
}

static void sample_corpus(const InputList* in, long long sample_bytes, Sample* sample) {
    memset(sample, 0, sizeof(*sample));
    int whole = in->total_bytes <= sample_bytes;
    sample->text = xcalloc((size_t)(whole ? in->total_bytes : sample_bytes), 1);
    if (whole) {
        for (size_t k = 0; k < in->count; k++) {
            FILE* f = open_input(in->paths[k]);
            read_exact_at(f, in->paths[k], 0, sample->text + sample->bytes, (size_t)in->sizes[k]);
            fclose(f);
            sample->bytes += (size_t)in->sizes[k];
            sample_add_segment(sample, sample->bytes);
        }
        return;
    }
    long long window = sample_bytes / SAMPLE_WINDOWS;
    size_t k = 0;
    long long file_start = 0;  // corpus offset of file k
    for (int w = 0; w < SAMPLE_WINDOWS; w++) {
        long long start = (long long)((double)w * (double)in->total_bytes / SAMPLE_WINDOWS);
        while (file_start + in->sizes[k] <= start) { file_start += in->sizes[k++]; }
        long long offset = start - file_start, left = window;
        for (size_t j = k; left > 0 && j < in->count; j++, offset = 0) {
            long long len = in->sizes[j] - offset < left ? in->sizes[j] - offset : left;
            left -= len;
            unsigned char* dst = sample->text + sample->bytes;
            FILE* f = open_input(in->paths[j]);
            read_exact_at(f, in->paths[j], offset, dst, (size_t)len);
            fclose(f);
            size_t begin = 0, end = (size_t)len;
            if (offset > 0) {  // the window starts mid-file: after the first line end
                while (begin < end && dst[begin] != '\n') { begin++; }
                begin = begin < end ? begin + 1 : end;
            }
            if (offset + len < in->sizes[j]) {  // the window ends mid-file: after the last line end
                while (end > begin && dst[end - 1] != '\n') { end--; }
            }
            if (end > begin) {
                memmove(dst, dst + begin, end - begin);
                sample->bytes += end - begin;
                sample_add_segment(sample, sample->bytes);
            }
        }
    }
}

static void cmd_train(const InputList* in, const char* out_dir, int vocab_size, long long sample_bytes) {
    char name[64];
    if (in->total_bytes == 0) { die("%s is empty", inputs_name(in, name, sizeof(name))); }
    Sample sample;
    sample_corpus(in, sample_bytes, &sample);
    if (sample.bytes == 0) { die("%s: the sample holds no complete line (lines longer than %lld bytes?)", inputs_name(in, name, sizeof(name)), sample_bytes / SAMPLE_WINDOWS); }
    const unsigned char* text = sample.text;
    StrMap map;
    strmap_init(&map);
    Piece* pieces = NULL;
    size_t cap = 0;
    for (size_t seg = 0, i = 0; seg < sample.num_segments; seg++) {
        size_t n = sample.ends[seg];
        while (i < n) {
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
    char sampled[128] = "";
    if (sample.bytes < (size_t)in->total_bytes) {
        snprintf(sampled, sizeof(sampled), " (a sample: %d windows of a %.1f MB corpus)", SAMPLE_WINDOWS,
                 (double)in->total_bytes / 1e6);
    }
    printf("tokenizer: %d merges learned from %zu bytes%s (%zu distinct pieces); vocabulary %d, eot %d -> %s/tokenizer.bin\n",
           v.num_merges, sample.bytes, sampled, num_pieces, v.vocab_size, v.eot, out_dir);
    v.vocab_size = allocated;
    vocab_free(&v);
    for (size_t k = 0; k < num_pieces; k++) { free(pieces[k].ids); }
    free(pieces);
    pairmap_free(&counts);
    strmap_free(&map);
    free(sample.text);
    free(sample.ends);
}

// ----------------------------------------------------------------------------
// encode

// Distinct pieces whose tokens are remembered; past this the cache is emptied and starts again, so encoding's memory
// is bounded whatever the corpus (2^19 pieces: some 40 MB; tinyshakespeare has 25K distinct pieces, and a corpus's
// frequent pieces come back into the cache at once).
#define ENCODE_CACHE_MAX (1 << 19)

typedef struct {
    PairMap ranks;  // (left, right) -> merge index
    StrMap cache;   // piece -> index into cached token lists
    int32_t** cached;  // (cache.count) each piece's tokens, followed in the same allocation by the piece's bytes (its key)
    int* cached_len;
    size_t cached_cap;
} Encoder;

static void encoder_cache_clear(Encoder* e) {
    for (size_t k = 0; k < e->cache.count; k++) { free(e->cached[k]); }
    strmap_free(&e->cache);
    strmap_init(&e->cache);
}

static const int32_t* encode_piece(Encoder* e, const Vocab* v, const unsigned char* s, size_t len, int* out_len) {
    size_t slot;
    int k = strmap_find(&e->cache, s, len, &slot);
    if (k >= 0) {
        *out_len = e->cached_len[k];
        return e->cached[k];
    }
    if (e->cache.count >= ENCODE_CACHE_MAX) { encoder_cache_clear(e); }
    // the key is a copy: s lies in a block of the stream that the next read overwrites
    int32_t* ids = xcalloc(len * sizeof(int32_t) + len, 1);
    unsigned char* key = (unsigned char*)(ids + len);
    memcpy(key, s, len);
    k = strmap_insert(&e->cache, key, len);
    if ((size_t)k >= e->cached_cap) {
        e->cached_cap = e->cached_cap ? e->cached_cap * 2 : 4096;
        e->cached = xrealloc(e->cached, e->cached_cap * sizeof(*e->cached));
        e->cached_len = xrealloc(e->cached_len, e->cached_cap * sizeof(int));
    }
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

// ----------------------------------------------------------------------------
// shards, filled as the tokens come: the header's count is written when the shard is complete

#define SHARD_HEADER_BYTES 1024
#define SHARD_MAX_TOKENS 0x7FFFFFFF  // the header's int32 count

static void shard_open(OutFile* o, const char* path) {
    out_open_as(o, path, 1);
    int32_t header[256] = {SHARD_MAGIC, 1, 0};  // the count is set by shard_commit
    out_write(o, header, sizeof(header));
}

static void shard_commit(OutFile* o, size_t count) {
    int32_t n = (int32_t)count;
    if (fseeko(o->f, 8, SEEK_SET) != 0) {
        fclose(o->f);
        unlink(o->tmp);
        die("writing %s failed: %s", o->tmp, strerror(errno));
    }
    out_write(o, &n, sizeof(n));
    out_commit(o);
}

static void shard_discard(OutFile* o) {
    fclose(o->f);
    if (o->tmp) { unlink(o->tmp); }
    free(o->path);
    free(o->tmp);
}

// Where the tokens go: the val file first, then the train file, or train shards of shard_tokens each.
typedef struct {
    const char* prefix;
    size_t shard_tokens;  // 0: one train file
    int in_train;         // 0 while the val split is being written
    OutFile val;
    size_t val_count, val_limit;
    OutFile current, previous;  // the train shard being filled; the one before it, kept open until `current` holds
    size_t current_count, previous_count;  // a quarter of a shard, so a short last shard can still be joined to it
    int current_index, previous_open;
    size_t train_count;
    int last_was_eot;     // the destination's last token is the eot: a document starting there needs no second one
    uint16_t eot;
    size_t* shard_counts;  // (num_committed) tokens of each committed train shard, in order: the manifest lists them
    int num_committed, committed_cap;
} TokenSink;

static void sink_commit_train(TokenSink* k, OutFile* o, size_t count) {
    shard_commit(o, count);
    if (k->num_committed == k->committed_cap) {
        k->committed_cap = k->committed_cap ? 2 * k->committed_cap : 64;
        k->shard_counts = xrealloc(k->shard_counts, (size_t)k->committed_cap * sizeof(size_t));
    }
    k->shard_counts[k->num_committed++] = count;
}

static char* train_shard_path(const char* prefix, size_t shard_tokens, int index);

static void sink_open_train_shard(TokenSink* k) {
    char* path = train_shard_path(k->prefix, k->shard_tokens, ++k->current_index);
    shard_open(&k->current, path);
    free(path);
    k->current_count = 0;
}

static void sink_init(TokenSink* k, const char* prefix, size_t shard_tokens, uint16_t eot) {
    memset(k, 0, sizeof(*k));
    k->prefix = prefix;
    k->shard_tokens = shard_tokens;
    k->eot = eot;
    char* path = alloc_printf("%s_val.bin", prefix);
    shard_open(&k->val, path);
    free(path);
    k->val_limit = shard_tokens ? shard_tokens : SHARD_MAX_TOKENS;
}

static void sink_write_train(TokenSink* k, const uint16_t* tokens, size_t n) {
    while (n > 0) {
        size_t room = (k->shard_tokens ? k->shard_tokens : SHARD_MAX_TOKENS) - k->current_count;
        if (room == 0) {
            if (!k->shard_tokens) { die("the train split holds more than %d tokens, more than one file's header can count: give -s", SHARD_MAX_TOKENS); }
            if (k->previous_open) { sink_commit_train(k, &k->previous, k->previous_count); }
            k->previous = k->current;
            k->previous_count = k->current_count;
            k->previous_open = 1;
            sink_open_train_shard(k);
            continue;
        }
        size_t m = n < room ? n : room;
        out_write(&k->current, tokens, m * sizeof(uint16_t));
        k->current_count += m;
        k->train_count += m;
        tokens += m;
        n -= m;
        if (k->previous_open && k->current_count >= k->shard_tokens / 4) {
            sink_commit_train(k, &k->previous, k->previous_count);
            k->previous_open = 0;
        }
    }
}

// The val split ends here (its bytes are done, or it is full): the train split starts, with an eot.
static void sink_start_train(TokenSink* k) {
    if (k->in_train) { return; }
    k->in_train = 1;
    sink_open_train_shard(k);
    sink_write_train(k, &k->eot, 1);
    k->last_was_eot = 1;
}

// One piece's tokens, never split between val and train.
static void sink_push(TokenSink* k, const uint16_t* tokens, size_t n) {
    if (!k->in_train && k->val_count + n > k->val_limit) { sink_start_train(k); }
    if (k->in_train) {
        sink_write_train(k, tokens, n);
    } else {
        out_write(&k->val, tokens, n * sizeof(uint16_t));
        k->val_count += n;
    }
    k->last_was_eot = 0;
}

static void sink_push_document_start(TokenSink* k) {
    if (!k->in_train && k->val_count + 1 > k->val_limit) { sink_start_train(k); }  // (it starts with an eot)
    if (!k->last_was_eot) { sink_push(k, &k->eot, 1); }
    k->last_was_eot = 1;
}

// Commits every file; a last shard under a quarter of a shard joins the one before it. Returns the train shards.
static int sink_finish(TokenSink* k) {
    shard_commit(&k->val, k->val_count);
    sink_start_train(k);  // a corpus that is all val still gets a train split (its eot alone)
    if (k->previous_open) {  // the last shard is short: append it to the previous one, which stays under 1.25 shards
        uint16_t block[65536];
        if (fseeko(k->current.f, SHARD_HEADER_BYTES, SEEK_SET) != 0) { die("cannot read back %s: %s", k->current.tmp, strerror(errno)); }
        for (size_t done = 0; done < k->current_count;) {
            size_t m = k->current_count - done < 65536 ? k->current_count - done : 65536;
            if (fread(block, sizeof(uint16_t), m, k->current.f) != m) { die("cannot read back %s: %s", k->current.tmp, strerror(errno)); }
            out_write(&k->previous, block, m * sizeof(uint16_t));
            done += m;
        }
        shard_discard(&k->current);
        sink_commit_train(k, &k->previous, k->previous_count + k->current_count);
        k->current_index--;
        k->previous_open = 0;
    } else {
        sink_commit_train(k, &k->current, k->current_count);
    }
    if (k->shard_tokens) {  // an earlier encoding's higher-numbered shards would join this corpus in a glob
        for (int index = k->current_index + 1;; index++) {
            char* path = alloc_printf("%s_train_%06d.bin", k->prefix, index);
            int removed = unlink(path) == 0;
            free(path);
            if (!removed) { break; }
        }
    }
    if (k->num_committed != k->current_index) {
        die("internal error: %d train shards committed, %d written", k->num_committed, k->current_index);
    }
    return k->num_committed;
}

// The path of train shard `index` (1-based; the one train file without -s).
static char* train_shard_path(const char* prefix, size_t shard_tokens, int index) {
    return shard_tokens ? alloc_printf("%s_train_%06d.bin", prefix, index) : alloc_printf("%s_train.bin", prefix);
}

// ----------------------------------------------------------------------------
// encode

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// The progress line on stderr: rewritten in place on a terminal (twice a second), else a line every 10 s.
typedef struct {
    long long total_bytes, done_bytes;
    size_t tokens;
    double start, last_print;
    int tty, printed;
} Progress;

static void progress_update(Progress* p, int final) {
    double now = seconds_now();
    if (!final && now - p->last_print < (p->tty ? 0.5 : 10.0)) { return; }
    if (final && !p->printed) { return; }  // quick runs print no progress at all
    p->last_print = now;
    p->printed = 1;
    double elapsed = now - p->start > 1e-9 ? now - p->start : 1e-9;
    double rate = (double)p->done_bytes / elapsed;
    double eta = rate > 0 ? (double)(p->total_bytes - p->done_bytes) / rate : 0.0;
    fprintf(stderr, "%stokenizer: %.1f of %.1f MB (%.0f%%) | %.2f M tokens/s | %.1f MB/s | ETA %dm%02ds%s",
            p->tty ? "\r" : "", (double)p->done_bytes / 1e6, (double)p->total_bytes / 1e6,
            100.0 * (double)p->done_bytes / (double)p->total_bytes, (double)p->tokens / elapsed / 1e6, rate / 1e6,
            (int)eta / 60, (int)eta % 60, p->tty ? (final ? "\033[K\n" : "\033[K") : "\n");
}

// The streamed block; dev/data/test_prepare_dataset.sh builds the tool with a small one too (data.mk), whose tokens
// must equal this one's.
#ifndef ENCODE_BLOCK_BYTES
#define ENCODE_BLOCK_BYTES (8u << 20)
#endif

// Encodes bytes [begin, end) of one input file, streamed through `block`: a piece is encoded once the block shows
// where it ends (next_piece reached a byte of another class before the block's end), so the tokens are those of
// encoding the segment at once. One piece filling a whole block (8 MiB of one class) is cut there.
static void encode_segment(Encoder* e, const Vocab* v, const char* path, long long begin, long long end,
                           unsigned char* block, TokenSink* sink, Progress* progress) {
    FILE* f = open_input(path);
    long long position = begin;  // file offset of block[0]
    size_t have = 0;
    uint16_t tokens[256];  // a piece's tokens (a piece of more bytes is pushed in parts)
    for (;;) {
        long long left = end - (position + (long long)have);
        size_t want = (size_t)(left < (long long)(ENCODE_BLOCK_BYTES - have) ? left : (long long)(ENCODE_BLOCK_BYTES - have));
        read_exact_at(f, path, position + (long long)have, block + have, want);
        have += want;
        int at_end = position + (long long)have == end;
        size_t i = 0;
        while (i < have) {
            size_t len = next_piece(block, have, i);
            if (i + len == have && !at_end) {
                if (i > 0) { break; }  // it may go on in the next block
                static int warned = 0;
                if (!warned++) { fprintf(stderr, "tokenizer: note: %s has a run of %u bytes of one kind; it is cut into pieces of that size\n", path, ENCODE_BLOCK_BYTES); }
            }
            int m;
            const int32_t* ids = encode_piece(e, v, block + i, len, &m);
            for (int j = 0; j < m; j += 256) {
                int part = m - j < 256 ? m - j : 256;
                for (int t = 0; t < part; t++) { tokens[t] = (uint16_t)ids[j + t]; }
                sink_push(sink, tokens, (size_t)part);
            }
            progress->tokens += (size_t)m;
            i += len;
        }
        progress->done_bytes += (long long)i;
        progress_update(progress, 0);
        memmove(block, block + i, have - i);
        position += (long long)i;
        have -= i;
        if (at_end && have == 0) { break; }
    }
    fclose(f);
}

// Where the val split ends: the corpus offset val_fraction of the way in, moved on to just past the next line end when
// one comes within VAL_SPLIT_LINE_REACH bytes, else to the next piece boundary (or its file's end). Why bounded: a
// text of very long lines (minified JSON, a one-line file) would otherwise put all of itself into val. 64 KiB is far
// longer than any line of prose or code, so such text still ends its val split at a line end (as it always did), and
// is small against any corpus whose split matters (some 16K tokens). A piece boundary (piece_boundary) is never inside
// a piece, so never inside a UTF-8 character: the two splits hold the tokens of encoding the text whole.
#define VAL_SPLIT_LINE_REACH (64 << 10)

// Whether a piece ends between two adjacent bytes, however far back the text was split into pieces: their classes
// differ and the first is not a space joining the word after it (next_piece). A whitespace run's last space, which
// next_piece gives to the following word, is the one boundary this does not see; the next one does.
static int piece_boundary(unsigned char before, unsigned char after) {
    int a = byte_class(before), b = byte_class(after);
    return a != b && !(before == ' ' && b != CLS_SPACE);
}

// Returns the file (*file) and the offset in it (*offset) where the val split ends.
static void find_val_split(const InputList* in, double val_fraction, size_t* file, long long* offset) {
    long long target = (long long)(val_fraction * (double)in->total_bytes), file_start = 0;
    size_t k = 0;
    while (k + 1 < in->count && file_start + in->sizes[k] <= target) { file_start += in->sizes[k++]; }
    long long local = target - file_start, size = in->sizes[k];
    if (local > 0 && local < size) {
        FILE* f = open_input(in->paths[k]);
        unsigned char* window = xcalloc(VAL_SPLIT_LINE_REACH, 1);
        // a line end among the VAL_SPLIT_LINE_REACH bytes from the byte before the target on
        long long start = local - 1, split = -1;
        size_t len = (size_t)(size - start < VAL_SPLIT_LINE_REACH ? size - start : VAL_SPLIT_LINE_REACH);
        read_exact_at(f, in->paths[k], start, window, len);
        const unsigned char* newline = memchr(window, '\n', len);
        if (newline) { split = start + (newline - window) + 1; }
        // else the first piece boundary from the target on, read a window at a time (the file's end is one)
        for (long long at = start; split < 0 && at + 1 < size; at += (long long)len - 1) {
            len = (size_t)(size - at < VAL_SPLIT_LINE_REACH ? size - at : VAL_SPLIT_LINE_REACH);
            read_exact_at(f, in->paths[k], at, window, len);
            for (size_t i = 1; i < len && split < 0; i++) {
                if (piece_boundary(window[i - 1], window[i])) { split = at + (long long)i; }
            }
        }
        local = split < 0 ? size : split;
        free(window);
        fclose(f);
    }
    *file = k;
    *offset = local;
}

// The smallest split worth writing: one batch of the trainers' default size (B 4 x T 64, and the target after it). A
// val split under it is refused by every trainer at startup ("fewer than one batch") after a preparation that said
// done, and a train split under it has nothing to train on; so when a val split is asked for (val_fraction > 0), both
// must hold that many tokens, or the encoding is refused. With -f 0 (no val split: a text encoded as it is, to look at
// or compare its tokens) a shorter train split is only noted.
#define MIN_SPLIT_TOKENS 257

// ----------------------------------------------------------------------------
// the manifest (llmc/shard_manifest.h): which files this encoding wrote, and whether it finished

static char* manifest_path_of(const char* prefix) { return alloc_printf("%s%s", prefix, SHARD_MANIFEST_SUFFIX); }

static void write_manifest(const char* prefix, const ShardManifest* m) {
    char* path = manifest_path_of(prefix);
    OutFile o;
    out_open_as(&o, path, 1);
    if (shard_manifest_print(o.f, m) != 0) {
        int e = errno;
        fclose(o.f);
        unlink(o.tmp);
        die("writing %s failed: %s", o.tmp, strerror(e));
    }
    out_commit(&o);
    free(path);
}

// An output the encoding will write must be a regular file or not exist yet (a link to one is followed): refused
// before anything is written.
static void check_shard_output(const char* path) {
    char* target = output_target(path);
    struct stat st;
    int bad = stat(target, &st) == 0 && !S_ISREG(st.st_mode);
    free(target);
    if (bad) {
        die("cannot write %s: it is %s (shards and manifests are regular files)", path, file_kind(st.st_mode));
    }
}

static void cmd_encode(const InputList* in, const char* tokenizer_path, const char* prefix, double val_fraction,
                       size_t shard_tokens) {
    char name[64];
    if (in->total_bytes == 0) { die("%s is empty: nothing to encode", inputs_name(in, name, sizeof(name))); }
    Vocab v;
    memset(&v, 0, sizeof(v));
    read_vocab(&v, tokenizer_path);
    // before anything is written: the names the manifest will hold, every output's kind, the tokenizer's checksum
    const char* stem = shard_manifest_basename(prefix);
    char* longest = alloc_printf("%s_train_%06d.bin", stem, 1);
    int names_ok = shard_manifest_name_ok(longest, strlen(longest));
    free(longest);
    if (!names_ok) { die("-o %s: its file names (%s_val.bin, ...) must be at most 255 bytes, without control bytes", prefix, stem); }
    const char* tokenizer_name = shard_manifest_basename(tokenizer_path);
    if (!shard_manifest_name_ok(tokenizer_name, strlen(tokenizer_name))) {
        die("-k %s: the manifest cannot name it (a name of at most 255 bytes without control bytes)", tokenizer_path);
    }
    char* manifest_path = manifest_path_of(prefix);
    char* val_path = alloc_printf("%s_val.bin", prefix);
    char* first_train = train_shard_path(prefix, shard_tokens, 1);
    check_shard_output(manifest_path);
    check_shard_output(val_path);
    check_shard_output(first_train);
    free(first_train);
    ShardManifest manifest;
    memset(&manifest, 0, sizeof(manifest));
    manifest.tokenizer_name = alloc_printf("%s", tokenizer_name);
    struct stat st;
    char err[2048];
    if (stat(tokenizer_path, &st) != 0) { die("cannot open %s: %s", tokenizer_path, strerror(errno)); }
    manifest.tokenizer_bytes = (long long)st.st_size;
    if (file_checksum(tokenizer_path, manifest.tokenizer_bytes, &manifest.tokenizer_checksum, err, sizeof(err)) != 0) { die("%s", err); }
    // first the manifest says incomplete: from here until the complete one replaces it, a run killed at any moment
    // leaves a shard set the trainers refuse
    write_manifest(prefix, &manifest);

    Encoder e;
    memset(&e, 0, sizeof(e));
    pairmap_init(&e.ranks, 1 << 17);
    for (int k = 0; k < v.num_merges; k++) { *pairmap_slot(&e.ranks, (uint32_t)v.merges[2 * k], (uint32_t)v.merges[2 * k + 1], 1) = k; }
    strmap_init(&e.cache);
    size_t split_file;
    long long split_offset;
    find_val_split(in, val_fraction, &split_file, &split_offset);
    unsigned char* block = xcalloc(ENCODE_BLOCK_BYTES, 1);
    Progress progress = {in->total_bytes, 0, 0, seconds_now(), seconds_now(), isatty(2), 0};
    TokenSink sink;
    sink_init(&sink, prefix, shard_tokens, (uint16_t)v.eot);
    sink_push_document_start(&sink);  // the val split starts with an eot
    for (size_t k = 0; k < in->count; k++) {
        if (in->sizes[k] == 0) { continue; }  // an empty document adds nothing
        if (k == split_file && split_offset == 0) { sink_start_train(&sink); }
        sink_push_document_start(&sink);
        if (k == split_file && split_offset > 0) {
            encode_segment(&e, &v, in->paths[k], 0, split_offset, block, &sink, &progress);
            sink_start_train(&sink);
            if (split_offset < in->sizes[k]) { encode_segment(&e, &v, in->paths[k], split_offset, in->sizes[k], block, &sink, &progress); }
        } else {
            encode_segment(&e, &v, in->paths[k], 0, in->sizes[k], block, &sink, &progress);
        }
    }
    if (progress.done_bytes != in->total_bytes) { die("internal error: encoded %lld of %lld bytes", progress.done_bytes, in->total_bytes); }
    size_t val_count = sink.val_count, train_count = sink.train_count;
    int shards = sink_finish(&sink);
    progress_update(&progress, 1);

    // splits too small to train or evaluate on (MIN_SPLIT_TOKENS): refused, their shards removed, the manifest left
    // saying incomplete
    int val_small = val_fraction > 0 && val_count < MIN_SPLIT_TOKENS, train_small = train_count < MIN_SPLIT_TOKENS;
    if (val_small || (train_small && val_fraction > 0)) {
        unlink(val_path);
        for (int k = 1; k <= shards; k++) {
            char* path = train_shard_path(prefix, shard_tokens, k);
            unlink(path);
            free(path);
        }
        die("the %s split of %s holds %zu tokens, fewer than one batch of the trainers' default size needs (%d: B 4 x "
            "T 64 + 1): give more text or %s -f; its shards are removed and %s says incomplete",
            val_small ? "val" : "train", inputs_name(in, name, sizeof(name)), val_small ? val_count : train_count,
            MIN_SPLIT_TOKENS, val_small ? "a larger" : "a smaller", manifest_path);
    }
    if (train_small) {
        fprintf(stderr, "tokenizer: note: the train split holds %zu tokens, fewer than one batch of the trainers' "
                "default size needs (%d)\n", train_count, MIN_SPLIT_TOKENS);
    }

    // every file written, checksummed as it lies on disk, then the complete manifest, last
    manifest.num_files = (size_t)shards + 1;
    manifest.files = xcalloc(manifest.num_files, sizeof(ManifestEntry));
    for (size_t k = 0; k < manifest.num_files; k++) {
        ManifestEntry* entry = &manifest.files[k];
        char* path = k == 0 ? alloc_printf("%s", val_path) : train_shard_path(prefix, shard_tokens, (int)k);
        entry->tokens = (long long)(k == 0 ? val_count : sink.shard_counts[k - 1]);
        entry->bytes = SHARD_HEADER_BYTES + 2 * entry->tokens;
        entry->name = alloc_printf("%s", shard_manifest_basename(path));
        if (file_checksum(path, entry->bytes, &entry->checksum, err, sizeof(err)) != 0) { die("%s", err); }
        free(path);
    }
    manifest.complete = 1;
    write_manifest(prefix, &manifest);

    double seconds = seconds_now() - progress.start;
    char train_name[1200];
    if (shard_tokens) {
        snprintf(train_name, sizeof(train_name), "%d train shard%s %s_train_000001.bin%s", shards, shards > 1 ? "s" : "",
                 prefix, shards > 1 ? " .." : "");
    } else {
        snprintf(train_name, sizeof(train_name), "%s_train.bin", prefix);
    }
    printf("tokenizer: %s -> %s_val.bin (%zu tokens) and %s (%zu tokens), %.2f bytes per token, %.1f MB/s; listed in %s\n",
           inputs_name(in, name, sizeof(name)), prefix, val_count, train_name, train_count,
           (double)in->total_bytes / (double)progress.tokens, (double)in->total_bytes / 1e6 / (seconds > 1e-9 ? seconds : 1e-9),
           manifest_path);
    shard_manifest_free(&manifest);
    free(sink.shard_counts);
    free(manifest_path);
    free(val_path);
    free(block);
    encoder_free(&e);
    vocab_free(&v);
}

// ----------------------------------------------------------------------------
// decode

// What is wrong with a shard's header and size, or NULL: a message in `err`.
static const char* shard_problem(const char* shard, const unsigned char* data, size_t n, char* err, size_t errlen) {
    int32_t header[256];
    if (n < sizeof(header)) {
        snprintf(err, errlen, "data shard %s is truncated (shorter than its header)", shard);
        return err;
    }
    memcpy(header, data, sizeof(header));
    if (header[0] != SHARD_MAGIC) {
        snprintf(err, errlen, "data shard %s has bad magic %d (expected %d)", shard, header[0], SHARD_MAGIC);
    } else if (header[1] != 1) {
        snprintf(err, errlen, "data shard %s has version %d (expected 1)", shard, header[1]);
    } else if (header[2] < 0 || n != sizeof(header) + 2 * (size_t)header[2]) {
        snprintf(err, errlen, "data shard %s is truncated or corrupt: %zu bytes, its header says %zu", shard, n,
                 sizeof(header) + 2 * (size_t)(header[2] < 0 ? 0 : header[2]));
    } else {
        return NULL;
    }
    return err;
}

static void cmd_decode(const char* tokenizer_path, const char* shard, const char* out_path) {
    Vocab v;
    memset(&v, 0, sizeof(v));
    read_vocab(&v, tokenizer_path);
    size_t n;
    unsigned char* data = read_file(shard, &n);
    char err[2048];
    // every failure frees what it holds before the one-line exit, so the sanitizers' leak check stays quiet
    if (shard_problem(shard, data, n, err, sizeof(err))) {
        free(data);
        vocab_free(&v);
        die("%s", err);
    }
    int32_t num_tokens;
    memcpy(&num_tokens, data + 8, sizeof(num_tokens));
    OutFile o;
    out_open(&o, out_path);
    for (int32_t i = 0; i < num_tokens; i++) {
        uint16_t t;
        memcpy(&t, data + SHARD_HEADER_BYTES + 2 * (size_t)i, 2);
        if (t >= v.vocab_size) {
            snprintf(err, sizeof(err), "data shard %s: token id %u at position %d is not below the vocabulary size %d",
                     shard, t, i, v.vocab_size);
            shard_discard(&o);
            free(data);
            vocab_free(&v);
            die("%s", err);
        }
        if (t != v.eot) { out_write(&o, v.bytes[t], (size_t)v.lens[t]); }
    }
    out_commit(&o);
    free(data);
    vocab_free(&v);
}

// ----------------------------------------------------------------------------
// hash

// Every file is checksummed before anything is printed: a bad one is one error line, never half a list.
static void cmd_hash(int count, char** paths) {
    if (count == 0) { die("hash needs at least one FILE"); }
    uint64_t* sums = xcalloc((size_t)count, sizeof(uint64_t));
    long long* sizes = xcalloc((size_t)count, sizeof(long long));
    char err[2048];
    for (int k = 0; k < count; k++) {
        struct stat st;
        int bad = 1;
        if (stat(paths[k], &st) != 0) {
            snprintf(err, sizeof(err), "cannot open %s: %s", paths[k], strerror(errno));
        } else if (!S_ISREG(st.st_mode)) {
            snprintf(err, sizeof(err), "%s is not a regular file", paths[k]);
        } else {
            sizes[k] = (long long)st.st_size;
            bad = file_checksum(paths[k], sizes[k], &sums[k], err, sizeof(err)) != 0;
        }
        if (bad) {  // freed first, so the sanitizers' leak check stays quiet
            free(sums);
            free(sizes);
            die("%s", err);
        }
    }
    for (int k = 0; k < count; k++) {
        char hex[CHECKSUM_HEX_CHARS];
        checksum_hex(sums[k], hex);
        printf("%s %lld %s\n", hex, sizes[k], paths[k]);
    }
    if (fflush(stdout) != 0) { die("writing the checksums failed: %s", strerror(errno)); }
    free(sums);
    free(sizes);
}

// ----------------------------------------------------------------------------

static void usage_and_exit(int rc) {  // -h: 0, on stdout; a call without a command: 2, on stderr
    fprintf(rc == 0 ? stdout : stderr,
            "usage: tokenizer train  -i INPUT [-i INPUT ...] -o DIR [-v vocab_size (257..65535, default 1024)]\n"
            "                        [-m sample_mb (1..1048576, default 64)]\n"
            "       tokenizer encode -i INPUT [-i INPUT ...] -k DIR/tokenizer.bin -o PREFIX\n"
            "                        [-f val_fraction (0..1, default 0.1)] [-s shard_tokens (1024..1073741824: shards)]\n"
            "                        (writes PREFIX_val.bin, PREFIX_train*.bin and PREFIX.manifest, which lists them)\n"
            "       tokenizer decode -k DIR/tokenizer.bin -i shard.bin -o out.txt\n"
            "       tokenizer hash FILE [FILE ...]   (prints <xxh3-64 hex> <bytes> <path> per file)\n"
            "INPUT: a text file, or a folder of .txt files (its subfolders too); several -i are one corpus, in order\n");
    exit(rc);
}

int main(int argc, char** argv) {
    if (argc < 2) { usage_and_exit(2); }
    const char* cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0) { usage_and_exit(0); }
    if (strcmp(cmd, "hash") == 0) {  // its arguments are files, not flags
        cmd_hash(argc - 2, argv + 2);
        return 0;
    }
    const char *output = NULL, *tokenizer = NULL;
    const char* inputs[4096];
    int num_inputs = 0;
    int vocab_size = 1024;
    long long sample_mb = 64, shard_tokens = 0;
    double val_fraction = 0.1;
    for (int i = 2; i < argc; i++) {
        const char* flag = argv[i];
        if (i + 1 >= argc) { die("flag %s needs a value", flag); }
        const char* value = argv[++i];
        char* end = NULL;
        errno = 0;
        if (strcmp(flag, "-i") == 0) {
            if (num_inputs == (int)(sizeof(inputs) / sizeof(inputs[0]))) { die("more than %d -i inputs (give a folder)", num_inputs); }
            inputs[num_inputs++] = value;
        } else if (strcmp(flag, "-o") == 0) {
            output = value;
        } else if (strcmp(flag, "-k") == 0) {
            tokenizer = value;
        } else if (strcmp(flag, "-v") == 0) {
            long v = strtol(value, &end, 10);
            if (end == value || *end || errno || v < 257 || v > MAX_VOCAB) {
                die("invalid value '%s' for -v: expected an integer in [257, %d] (tokens are stored as uint16)", value, MAX_VOCAB);
            }
            vocab_size = (int)v;
        } else if (strcmp(flag, "-m") == 0) {
            long long m = strtoll(value, &end, 10);
            if (end == value || *end || errno || m < 1 || m > (1LL << 20)) {
                die("invalid value '%s' for -m: expected an integer in [1, 1048576] (MB)", value);
            }
            sample_mb = m;
        } else if (strcmp(flag, "-s") == 0) {
            long long t = strtoll(value, &end, 10);
            if (end == value || *end || errno || t < 1024 || t > (1LL << 30)) {
                die("invalid value '%s' for -s: expected an integer in [1024, 1073741824] (tokens per shard)", value);
            }
            shard_tokens = t;
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
    InputList in;
    memset(&in, 0, sizeof(in));
    if (strcmp(cmd, "train") == 0) {
        if (!num_inputs || !output) { die("train needs -i INPUT and -o DIR"); }
        for (int k = 0; k < num_inputs; k++) { inputs_add(&in, inputs[k]); }
        cmd_train(&in, output, vocab_size, sample_mb * 1000000LL);
    } else if (strcmp(cmd, "encode") == 0) {
        if (!num_inputs || !output || !tokenizer) { die("encode needs -i INPUT, -k tokenizer.bin and -o PREFIX"); }
        for (int k = 0; k < num_inputs; k++) { inputs_add(&in, inputs[k]); }
        cmd_encode(&in, tokenizer, output, val_fraction, (size_t)shard_tokens);
    } else if (strcmp(cmd, "decode") == 0) {
        if (num_inputs != 1 || !output || !tokenizer) { die("decode needs -k tokenizer.bin, -i shard.bin and -o out.txt"); }
        cmd_decode(tokenizer, inputs[0], output);
    } else {
        die("unknown command '%s' (train, encode, decode or hash)", cmd);
    }
    inputs_free(&in);
    return 0;
}
