/*
fp8/fp8_codec.c — a filter around fp8.h's codec, so tools outside C (the ml_dtypes cross-check in
fp8/test_fp8_ml_dtypes.py) can run the exact same conversion:

  fp8_codec encode e4m3|e5m2   float32 values on stdin  -> one FP8 byte each on stdout
  fp8_codec decode e4m3|e5m2   FP8 bytes on stdin       -> float32 values on stdout
  fp8_codec bf16               float32 values on stdin  -> bf16 (uint16, native endian) on stdout
and fp8/block.h's block casts (for fp8/test_fp8_blocks.py):
  fp8_codec blocks blockwise|mxfp8 e4m3|e5m2 ROWS COLS BLOCK_ROWS BLOCK_COLS EPSILON POW2
      ROWS*COLS float32 values (row-major) on stdin -> the codes (ROWS*COLS bytes, row-major), each block's scale_inv
      (float32, blocks row-major) and the dequantized values (ROWS*COLS float32) on stdout (fp8_quantize_blocks)
  fp8_codec columnwise blockwise|mxfp8 e4m3|e5m2 ROWS COLS BLOCK_LEN EPSILON POW2
      the same for blocks of BLOCK_LEN down each column (fp8_quantize_blocks_columnwise): codes (COLS, ROWS)
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block.h"
#include "fp8.h"

// The block commands: read the tensor, cast it, write codes, scale_invs and dequantized values. Returns the exit code.
static int block_command(int argc, char** argv) {
    int columnwise = strcmp(argv[1], "columnwise") == 0;
    int want = columnwise ? 9 : 10;
    if (argc != want || (strcmp(argv[2], "blockwise") != 0 && strcmp(argv[2], "mxfp8") != 0) ||
        (strcmp(argv[3], "e4m3") != 0 && strcmp(argv[3], "e5m2") != 0)) {
        fprintf(stderr, "usage: fp8_codec blocks blockwise|mxfp8 e4m3|e5m2 ROWS COLS BLOCK_ROWS BLOCK_COLS EPSILON POW2 | "
                        "fp8_codec columnwise blockwise|mxfp8 e4m3|e5m2 ROWS COLS BLOCK_LEN EPSILON POW2\n");
        return 2;
    }
    Fp8BlockCast cast = {strcmp(argv[2], "mxfp8") == 0 ? FP8_SCALING_MXFP8 : FP8_SCALING_BLOCKWISE,
                         strcmp(argv[3], "e5m2") == 0 ? FP8_E5M2 : FP8_E4M3, strtof(argv[want - 2], NULL),
                         atoi(argv[want - 1])};
    size_t rows = strtoul(argv[4], NULL, 10), cols = strtoul(argv[5], NULL, 10);
    Fp8BlockShape shape = {atoi(argv[6]), columnwise ? 1 : atoi(argv[7])};
    if (columnwise) { shape.cols = 1; }
    if (rows < 1 || cols < 1 || rows * cols > ((size_t)1 << 26) || shape.rows < 1 || shape.cols < 1) {
        fprintf(stderr, "fp8_codec: bad sizes\n");
        return 2;
    }
    size_t n = rows * cols, blocks = ((rows + shape.rows - 1) / shape.rows) * ((cols + shape.cols - 1) / shape.cols);
    float* inp = malloc(n * sizeof(float));
    float* dequantized = malloc(n * sizeof(float));
    float* scale_inv = malloc(blocks * sizeof(float));
    float* scratch = malloc(2 * n * sizeof(float));
    uint8_t* codes = malloc(n);
    if (!inp || !dequantized || !scale_inv || !scratch || !codes) {
        fprintf(stderr, "fp8_codec: out of memory\n");
        return 1;
    }
    if (fread(inp, sizeof(float), n, stdin) != n) {
        fprintf(stderr, "fp8_codec: expected %zu float32 values on stdin\n", n);
        return 1;
    }
    float amax = 0.0f;
    if (columnwise) {
        fp8_quantize_blocks_columnwise(codes, dequantized, scale_inv, inp, rows, cols, shape.rows, &cast, &amax, NULL,
                                       NULL, scratch);
    } else {
        fp8_quantize_blocks(codes, dequantized, scale_inv, inp, rows, cols, shape, &cast, &amax, NULL, NULL);
    }
    if (fwrite(codes, 1, n, stdout) != n || fwrite(scale_inv, sizeof(float), blocks, stdout) != blocks ||
        fwrite(dequantized, sizeof(float), n, stdout) != n) {
        perror("fp8_codec: write");
        return 1;
    }
    free(inp), free(dequantized), free(scale_inv), free(scratch), free(codes);
    return 0;
}

// 0 when stdin was read to its end, 1 (and why) when a read failed
static int stdin_read_status(void) {
    if (!ferror(stdin)) { return 0; }
    perror("fp8_codec: read");
    return 1;
}

// The element-wise commands and the dispatch to the block ones. Returns the exit code.
static int codec_command(int argc, char** argv) {
    if (argc >= 2 && (strcmp(argv[1], "blocks") == 0 || strcmp(argv[1], "columnwise") == 0)) {
        return block_command(argc, argv);
    }
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
        return stdin_read_status();
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
    return stdin_read_status();
}

int main(int argc, char** argv) {
    int status = codec_command(argc, argv);
    // The last bytes sit in stdio's buffer until exit flushes it, and a failure there (a full disk, /dev/full) would
    // not change the exit code: flush here, so the caller never reads a cut output after a 0.
    if (status == 0 && (fflush(stdout) != 0 || ferror(stdout))) {
        perror("fp8_codec: write");
        return 1;
    }
    return status;
}
