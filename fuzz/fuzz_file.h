/*
fuzz/fuzz_file.h — what every libFuzzer harness here shares: the readers take a path (they stat the file to check its
size, as the trainers do), so each input is written to one temporary file per fuzzing process, rewritten for every
input, and removed at exit.
*/
#ifndef GPTFP8_FUZZ_FILE_H
#define GPTFP8_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_path[256];

static void fuzz_remove_file(void) { unlink(fuzz_path); }

// Writes data (size bytes) to this process's temporary file and returns its path.
static const char* fuzz_write_file(const uint8_t* data, size_t size) {
    if (!fuzz_path[0]) {
        const char* dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(fuzz_path, sizeof(fuzz_path), "%s/gptfp8_fuzz_XXXXXX", dir);
        int fd = mkstemp(fuzz_path);
        if (fd < 0) { perror("mkstemp"); abort(); }
        close(fd);
        atexit(fuzz_remove_file);
    }
    FILE* f = fopen(fuzz_path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0) { perror(fuzz_path); abort(); }
    return fuzz_path;
}

// With FUZZ_VERBOSE set in the environment (running a harness on a few files by hand), what the reader said.
static void fuzz_report(int rc, const char* err) {
    if (getenv("FUZZ_VERBOSE")) { fprintf(stderr, "%s\n", rc == 0 ? "read: ok" : err); }
}

#endif  // GPTFP8_FUZZ_FILE_H
