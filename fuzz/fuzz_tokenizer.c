/*
fuzz/fuzz_tokenizer.c — libFuzzer harness for the tokenizer-file reader (llmc/tokenizer.h): any bytes must give either
a tokenizer whose every id decodes to a NUL-terminated string and whose eot is inside the vocabulary, or -1 with a
one-line message; never a crash, a leak or undefined behaviour.
*/
#include "../llmc/tokenizer.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const char* path = fuzz_write_file(data, size);
    Tokenizer tokenizer;
    char err[512] = "";
    int rc = tokenizer_init(&tokenizer, path, err, sizeof(err));
    fuzz_report(rc, err);
    if (rc != 0) {
        if (!err[0] || strchr(err, '\n')) { abort(); }  // an error is one line
        return 0;
    }
    for (uint32_t id = 0; id < tokenizer.vocab_size; id++) {  // every id decodes (its bytes may hold a NUL: byte 0)
        if (tokenizer_decode(&tokenizer, id) == NULL) { abort(); }
        (void)strlen(tokenizer_decode(&tokenizer, id));    // NUL-terminated within its allocation (ASan checks)
    }
    if (tokenizer_decode(&tokenizer, tokenizer.vocab_size) != NULL ||
        tokenizer.eot_token < 0 || (uint32_t)tokenizer.eot_token >= tokenizer.vocab_size) {
        abort();
    }
    tokenizer_free(&tokenizer);
    return 0;
}
