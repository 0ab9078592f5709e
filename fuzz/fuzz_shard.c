/*
fuzz/fuzz_shard.c — libFuzzer harness for the data-shard reader (llmc/dataloader.h): any bytes as a shard must either be
refused by dataloader_init with a one-line message, or give batches whose every token is inside the vocabulary (a
token outside it is a one-line error from dataloader_next_batch); never a crash, a leak or undefined behaviour. Small
fixed shapes (B 2, T 8, vocabulary 512) so that short inputs hold whole batches.
*/
#include "../llmc/dataloader.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const char* path = fuzz_write_file(data, size);
    const size_t B = 2, T = 8;
    const int vocab_size = 512;
    DataLoader loader;
    char err[512] = "";
    int rc = dataloader_init(&loader, path, B, T, 0, 1, vocab_size, err, sizeof(err));
    fuzz_report(rc, err);
    if (rc != 0) {
        if (!err[0] || strchr(err, '\n')) { abort(); }
        return 0;
    }
    if (dataloader_num_batches(&loader) == 0) { abort(); }  // init promises at least one batch per shard
    for (int i = 0; i < 64; i++) {  // past the end too: the loader wraps around
        if (dataloader_next_batch(&loader, err, sizeof(err)) != 0) {
            if (!err[0] || strchr(err, '\n')) { abort(); }
            break;
        }
        for (size_t k = 0; k < B * T; k++) {
            if (loader.inputs[k] < 0 || loader.inputs[k] >= vocab_size || loader.targets[k] < 0 ||
                loader.targets[k] >= vocab_size) {
                abort();
            }
        }
    }
    // resuming at positions a state file could hold: the loader must refuse what is out of range
    size_t positions[4] = {0, loader.shard_tokens[0], loader.shard_tokens[0] + 1, (size_t)-1};
    for (int i = 0; i < 4; i++) {
        if (dataloader_resume(&loader, 0, positions[i], err, sizeof(err)) == 0) {
            dataloader_next_batch(&loader, err, sizeof(err));
        }
    }
    if (dataloader_resume(&loader, 1, 0, err, sizeof(err)) == 0) { abort(); }  // one shard: index 1 is out of range
    dataloader_free(&loader);
    return 0;
}
