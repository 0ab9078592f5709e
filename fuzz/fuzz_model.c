/*
fuzz/fuzz_model.c — libFuzzer harness for the model-file reader (llmc/checkpoint.h's model_file_read, what -e
model.bin and a resume read; version 3 fp32 and llm.c's version 5 bf16, with the checksum a resume takes): any bytes
must give either a configuration whose parameter count matches the file and finite parameters, or -1 with a one-line
message and nothing allocated; never a crash, a leak or undefined behaviour.
*/
#include "../llmc/checkpoint.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const char* path = fuzz_write_file(data, size);
    GPT2Config config;
    float* params = NULL;
    size_t n = 0;
    int version = 0;
    uint64_t checksum;
    long long step;
    char err[512] = "";
    int rc = model_file_read(path, &config, &params, &n, &checksum, &step, &version, err, sizeof(err));
    fuzz_report(rc, err);
    if (rc != 0) {
        if (!err[0] || strchr(err, '\n') || params) { abort(); }
        return 0;
    }
    // version 3 holds fp32 parameters, version 5 bf16 ones (widened on read)
    if ((version != 3 && version != 5) || 1024 + (version == 3 ? 4 : 2) * n != size ||
        config.channels % config.num_heads != 0 || config.padded_vocab_size < config.vocab_size) {
        abort();
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(params[i])) { abort(); }
    }
    free(params);
    return 0;
}
