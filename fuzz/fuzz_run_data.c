/*
fuzz/fuzz_run_data.c — libFuzzer harness for the reader of a run's data record, dataset.txt (llmc/run_data.h's
run_data_read: what -e FILE and -y 1 read beside a checkpoint): any bytes must give either a record with a train
pattern, at least one train shard and every path a NUL-terminated string, or -1 with a one-line message; never a
crash, a leak or undefined behaviour.
*/
#include "../llmc/run_data.h"
#include "fuzz_file.h"

static void check_file(const RunDataFile* f) {
    if (!f->path || f->bytes < 0) { abort(); }
    (void)strlen(f->path);  // NUL-terminated within its allocation (ASan checks)
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const char* path = fuzz_write_file(data, size);
    RunData d;
    char err[512] = "";
    int rc = run_data_read(path, &d, err, sizeof(err));
    fuzz_report(rc, err);
    if (rc != 0) {
        if (rc != -1 || !err[0] || strchr(err, '\n')) { abort(); }  // the file exists: an error is one line
        return 0;
    }
    if (!d.train_pattern || d.num_train == 0) { abort(); }
    if (d.have_tokenizer) { check_file(&d.tokenizer); }
    for (size_t i = 0; i < d.num_train; i++) { check_file(&d.train[i]); }
    for (size_t i = 0; i < d.num_val; i++) { check_file(&d.val[i]); }
    run_data_free(&d);
    return 0;
}
