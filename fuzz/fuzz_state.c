/*
fuzz/fuzz_state.c — libFuzzer harness for the state-file reader (llmc/checkpoint.h): header, then the arrays its sizes
announce, then the checksum, then the FP8 values, as a resume reads them. Any bytes must be refused with a one-line
message or read in full with every size consistent with the file's length; never a crash, a leak or undefined
behaviour.
*/
#include "../llmc/checkpoint.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const char* path = fuzz_write_file(data, size);
    StateHeader h;
    char err[512] = "";
    int rc = state_file_read_header(path, &h, err, sizeof(err));
    if (rc != 0) {
        fuzz_report(rc, err);
        if (!err[0] || strchr(err, '\n')) { abort(); }
        return 0;
    }
    // the header promised exactly `size` bytes, so these allocations are bounded by the input
    size_t n = (size_t)h.opt_count, fp8_floats = state_fp8_floats(&h), slots = state_fp8_slots(&h);
    size_t block_ranges = fp8_recipe_is_block_scaled(&h.recipe) ? slots : 0;
    if (1024 + 8 * n + 4 * fp8_floats + 32 * slots + 8 * block_ranges + 8 != size) { abort(); }
    float* m = (float*)malloc((n ? n : 1) * sizeof(float));
    float* v = (float*)malloc((n ? n : 1) * sizeof(float));
    StateFp8Arrays fp8;
    state_fp8_arrays_alloc(&h, &fp8);
    if (!m || !v) { abort(); }
    rc = state_file_read_body(path, &h, m, v, slots ? &fp8 : NULL, err, sizeof(err));
    if (rc == 0 && h.fp8_modules) { rc = state_fp8_check(path, &h, &fp8, err, sizeof(err)); }
    fuzz_report(rc, err);
    if (rc != 0 && (!err[0] || strchr(err, '\n'))) { abort(); }
    free(m);
    free(v);
    state_fp8_arrays_free(&fp8);
    return 0;
}
