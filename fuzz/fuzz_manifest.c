/*
fuzz/fuzz_manifest.c — libFuzzer harness for the shard-manifest reader (llmc/shard_manifest.h, what the data loader
reads beside dev/data/tokenizer's shards): any bytes as a manifest must either be refused with a one-line message, or
give a manifest whose every file is a shard's size for its token count, named once, found by its name, and which
prints back as exactly the bytes it was read from (the format has one spelling of each manifest); never a crash, a
leak or undefined behaviour.
*/
#include "../llmc/shard_manifest.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const char* path = fuzz_write_file(data, size);
    ShardManifest m;
    char err[512] = "";
    int rc = shard_manifest_read(path, &m, err, sizeof(err));
    fuzz_report(rc, err);
    if (rc != 0) {
        if (!err[0] || strchr(err, '\n')) { abort(); }  // an error is one line
        return 0;
    }
    if (strcmp(m.path, path) != 0 || (m.complete && m.num_files == 0)) { abort(); }
    for (size_t i = 0; i < m.num_files; i++) {
        const ManifestEntry* e = &m.files[i];
        if (e->tokens < 0 || e->tokens > INT32_MAX || e->bytes != 1024 + 2 * e->tokens ||
            !shard_manifest_name_ok(e->name, strlen(e->name)) || shard_manifest_find(&m, e->name) != e) {
            abort();
        }
    }
    char* text = NULL;
    size_t len = 0;
    FILE* out = open_memstream(&text, &len);
    if (!out || shard_manifest_print(out, &m) != 0 || fclose(out) != 0) { abort(); }
    if (len != size || memcmp(text, data, size) != 0) { abort(); }  // read back as written
    free(text);
    shard_manifest_free(&m);
    return 0;
}
