/*
fp8/fp8_codec.c — a filter around fp8.h's codec, so tools outside C (the ml_dtypes cross-check in
fp8/test_fp8_ml_dtypes.py) can run the exact same conversion:

  fp8_codec encode e4m3|e5m2   float32 values on stdin  -> one FP8 byte each on stdout
  fp8_codec decode e4m3|e5m2   FP8 bytes on stdin       -> float32 values on stdout
  fp8_codec bf16               float32 values on stdin  -> bf16 (uint16, native endian) on stdout
*/
#include <stdio.h>
#include <string.h>

#include "fp8.h"

int main(int argc, char** argv) {
    if (argc < 2 || (strcmp(argv[1], "bf16") != 0 && argc != 3)) {
        fprintf(stderr, "usage: fp8_codec encode|decode e4m3|e5m2  |  fp8_codec bf16\n");
        return 2;
    }
    Fp8Format format = FP8_E4M3;
    if (argc == 3) {
        if (strcmp(argv[2], "e4m3") == 0) {
            format = FP8_E4M3;
        } else if (strcmp(argv[2], "e5m2") == 0) {
            format = FP8_E5M2;
        } else {
            fprintf(stderr, "fp8_codec: unknown format '%s' (expected e4m3 or e5m2)\n", argv[2]);
            return 2;
        }
    }
    enum { CHUNK = 65536 };
    static float values[CHUNK];
    static uint8_t codes[CHUNK];
    static uint16_t halves[CHUNK];
    if (strcmp(argv[1], "decode") == 0) {
        size_t n;
        while ((n = fread(codes, 1, CHUNK, stdin)) > 0) {
            for (size_t i = 0; i < n; i++) { values[i] = fp8_to_float(codes[i], format); }
            if (fwrite(values, sizeof(float), n, stdout) != n) { perror("fp8_codec: write"); return 1; }
        }
        return ferror(stdin) ? 1 : 0;
    }
    int encode = strcmp(argv[1], "encode") == 0;
    if (!encode && strcmp(argv[1], "bf16") != 0) {
        fprintf(stderr, "fp8_codec: unknown command '%s' (expected encode, decode or bf16)\n", argv[1]);
        return 2;
    }
    size_t n;
    while ((n = fread(values, sizeof(float), CHUNK, stdin)) > 0) {
        if (encode) {
            for (size_t i = 0; i < n; i++) { codes[i] = fp8_from_float(values[i], format); }
            if (fwrite(codes, 1, n, stdout) != n) { perror("fp8_codec: write"); return 1; }
        } else {
            for (size_t i = 0; i < n; i++) { halves[i] = bf16_from_float(values[i]); }
            if (fwrite(halves, sizeof(uint16_t), n, stdout) != n) { perror("fp8_codec: write"); return 1; }
        }
    }
    return ferror(stdin) ? 1 : 0;
}
