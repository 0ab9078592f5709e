/*
llmc/gpt2.h — what both trainers share about the model itself: the GPT-2 configuration, the parameter layout (the 16
tensors in llm.c's order, one contiguous fp32 buffer), depth presets, llm.c's initialisation, and the model file in
llm.c's format, so llm.c's model files load here and ours load in llm.c.

Model file: int32 header[256] = {20240326, version, max_seq_len, vocab_size, num_layers, num_heads, channels,
padded_vocab_size, 0...}, then every parameter in the order of ParameterTensors: as fp32 in version 3 (what we write,
and train_gpt2.py's gpt2_124M.bin), as bf16 in version 5 (train_gpt2.py's gpt2_124M_bf16.bin and every checkpoint
llm.c's train_gpt2cu writes in its default bf16 build). We write version 3 only, and read both: version 5's values
are widened to fp32 exactly (a bf16 is the top half of an fp32), so the masters start at the very weights llm.c
trained with.
*/
#ifndef GPTFP8_GPT2_H
#define GPTFP8_GPT2_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rand.h"

#define MODEL_MAGIC 20240326
#define MODEL_VERSION_FP32 3
#define MODEL_VERSION_BF16 5

typedef struct {
    int max_seq_len;        // maxT, e.g. 1024
    int vocab_size;         // V, e.g. 50257
    int padded_vocab_size;  // Vp: V rounded up to a multiple of 128, so the LM head GEMM has friendly shapes
    int num_layers;         // L
    int num_heads;          // NH
    int channels;           // C
} GPT2Config;

#define NUM_PARAMETER_TENSORS 16
typedef struct {
    float* wte;       // (Vp, C)  token embedding, also the LM head (tied)
    float* wpe;       // (maxT, C)
    float* ln1w;      // (L, C)
    float* ln1b;      // (L, C)
    float* qkvw;      // (L, 3*C, C)
    float* qkvb;      // (L, 3*C)
    float* attprojw;  // (L, C, C)
    float* attprojb;  // (L, C)
    float* ln2w;      // (L, C)
    float* ln2b;      // (L, C)
    float* fcw;       // (L, 4*C, C)
    float* fcb;       // (L, 4*C)
    float* fcprojw;   // (L, C, 4*C)
    float* fcprojb;   // (L, C)
    float* lnfw;      // (C)
    float* lnfb;      // (C)
} ParameterTensors;

static inline int padded_vocab(int vocab_size) { return ((vocab_size + 127) / 128) * 128; }

// Sizes built from flags can pass 64 bits (an attention matrix is L * B * NH * T * T floats: 2^78 at the flags'
// maxima). These saturate at SIZE_MAX instead of wrapping, so an impossible size is refused (the caller checks for
// SIZE_MAX, or the allocation fails with a one-line error) and never becomes a small wrapped one.
static inline size_t size_mul(size_t a, size_t b) { return b != 0 && a > SIZE_MAX / b ? SIZE_MAX : a * b; }
static inline size_t size_add(size_t a, size_t b) { return a > SIZE_MAX - b ? SIZE_MAX : a + b; }

static inline void fill_in_parameter_sizes(size_t* param_sizes, const GPT2Config* config) {
    size_t Vp = (size_t)config->padded_vocab_size, C = (size_t)config->channels;
    size_t maxT = (size_t)config->max_seq_len, L = (size_t)config->num_layers;
    param_sizes[0] = Vp * C;
    param_sizes[1] = maxT * C;
    param_sizes[2] = L * C;
    param_sizes[3] = L * C;
    param_sizes[4] = L * (3 * C) * C;
    param_sizes[5] = L * (3 * C);
    param_sizes[6] = L * C * C;
    param_sizes[7] = L * C;
    param_sizes[8] = L * C;
    param_sizes[9] = L * C;
    param_sizes[10] = L * (4 * C) * C;
    param_sizes[11] = L * (4 * C);
    param_sizes[12] = L * C * (4 * C);
    param_sizes[13] = L * C;
    param_sizes[14] = C;
    param_sizes[15] = C;
}

// Point each tensor into one buffer laid out in the order above.
static inline void point_parameters(ParameterTensors* params, float* memory, const size_t* param_sizes) {
    float** ptrs[NUM_PARAMETER_TENSORS] = {&params->wte,     &params->wpe,      &params->ln1w,     &params->ln1b,
                                           &params->qkvw,    &params->qkvb,     &params->attprojw, &params->attprojb,
                                           &params->ln2w,    &params->ln2b,     &params->fcw,      &params->fcb,
                                           &params->fcprojw, &params->fcprojb,  &params->lnfw,     &params->lnfb};
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) {
        *(ptrs[i]) = memory;
        memory += param_sizes[i];
    }
}

// Weight decay applies to the 2-D tensors only (embeddings and matmul weights), as in llm.c and nanoGPT.
static inline int parameter_tensor_is_2d(int index) {
    return index == 0 || index == 1 || index == 4 || index == 6 || index == 10 || index == 12;
}

// The tensors with one slice per block, (L, ...): ln1w .. fcprojb. The others (wte, wpe, lnfw, lnfb) are shared.
static inline int parameter_tensor_is_per_layer(int index) { return index >= 2 && index < 14; }

// llm.c's depth presets: dNN = NN layers, channels 64*NN, heads NN (d12 is GPT-2 124M, d48 is GPT-2 1.5B).
// Returns 0 and fills L/C/NH for "d12" | "d24" | "d36" | "d48", else -1.
static inline int gpt2_depth_preset(const char* name, int* num_layers, int* channels, int* num_heads) {
    if (strcmp(name, "d12") == 0) { *num_layers = 12; *channels = 768; *num_heads = 12; return 0; }
    if (strcmp(name, "d24") == 0) { *num_layers = 24; *channels = 1024; *num_heads = 16; return 0; }
    if (strcmp(name, "d36") == 0) { *num_layers = 36; *channels = 1280; *num_heads = 20; return 0; }
    if (strcmp(name, "d48") == 0) { *num_layers = 48; *channels = 1600; *num_heads = 25; return 0; }
    return -1;
}

// out[i] = std * (the i-th normal of the stream at *rng), i < n, then *rng advanced past them: the values of a serial
// loop of rng_normal, drawn in parallel (each normal takes draws 2i and 2i+1, and draw k depends on k alone, see
// rand.h). Every element is written by one thread from its own copy of the state, so threads change nothing.
static inline void gpt2_fill_normal(float* out, size_t n, float std, Rng* rng) {
    const uint64_t start = rng->state;
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) {
        Rng at_i = {start};
        rng_skip(&at_i, 2 * (uint64_t)i);
        out[i] = std * rng_normal(&at_i);
    }
    rng_skip(rng, 2 * (uint64_t)n);
}

// llm.c's (and GPT-2's) initialisation: matmul weights and embeddings N(0, 0.02), the two projections that write
// into the residual stream N(0, 0.02/sqrt(2L)) so its variance does not grow with depth, biases 0, LayerNorm
// weights 1. Padded vocabulary rows stay 0 (they are never a target and their logits are never used). The normals are
// one stream in this order (wte, wpe, qkvw, attprojw, fcw, fcprojw), drawn in parallel: the same bits for a seed
// whatever the thread count (test_gpt_fp8_cpu compares it with a serial loop).
static inline void gpt2_init_parameters(ParameterTensors* params, const size_t* param_sizes,
                                        const GPT2Config* config, Rng* rng) {
    float residual_std = 0.02f / sqrtf(2.0f * (float)config->num_layers);
    size_t C = (size_t)config->channels;
    gpt2_fill_normal(params->wte, (size_t)config->vocab_size * C, 0.02f, rng);
    gpt2_fill_normal(params->wpe, param_sizes[1], 0.02f, rng);
    for (size_t i = 0; i < param_sizes[2]; i++) { params->ln1w[i] = 1.0f; params->ln2w[i] = 1.0f; }
    gpt2_fill_normal(params->qkvw, param_sizes[4], 0.02f, rng);
    gpt2_fill_normal(params->attprojw, param_sizes[6], residual_std, rng);
    gpt2_fill_normal(params->fcw, param_sizes[10], 0.02f, rng);
    gpt2_fill_normal(params->fcprojw, param_sizes[12], residual_std, rng);
    for (size_t i = 0; i < C; i++) { params->lnfw[i] = 1.0f; }
    // biases, LayerNorm biases and padded rows were zeroed by the caller's calloc
}

// ----------------------------------------------------------------------------
// model file

static inline void model_header_fill(int32_t header[256], const GPT2Config* config) {
    memset(header, 0, 256 * sizeof(int32_t));
    header[0] = MODEL_MAGIC;
    header[1] = MODEL_VERSION_FP32;
    header[2] = config->max_seq_len;
    header[3] = config->vocab_size;
    header[4] = config->num_layers;
    header[5] = config->num_heads;
    header[6] = config->channels;
    header[7] = config->padded_vocab_size;
}

// The bytes one parameter takes in a model file of this version (3: fp32, 5: bf16), or 0 for a version we do not read.
static inline int model_file_parameter_bytes(int version) {
    return version == MODEL_VERSION_FP32 ? 4 : version == MODEL_VERSION_BF16 ? 2 : 0;
}

// Validates a model header read from `path`; fills config. Returns 0, or -1 with a one-line message.
static inline int model_header_parse(const int32_t header[256], const char* path, GPT2Config* config, char* err,
                                     size_t errlen) {
    if (header[0] != MODEL_MAGIC) {
        snprintf(err, errlen, "%s: not a model file (magic %d, expected %d)", path, header[0], MODEL_MAGIC);
        return -1;
    }
    if (!model_file_parameter_bytes(header[1])) {
        snprintf(err, errlen, "%s: model file version %d is not supported (%d: fp32 parameters, %d: bf16, as llm.c "
                 "writes them)", path, header[1], MODEL_VERSION_FP32, MODEL_VERSION_BF16);
        return -1;
    }
    config->max_seq_len = header[2];
    config->vocab_size = header[3];
    config->num_layers = header[4];
    config->num_heads = header[5];
    config->channels = header[6];
    config->padded_vocab_size = header[7];
    if (config->max_seq_len < 1 || config->max_seq_len > 1 << 20 || config->vocab_size < 1 ||
        config->vocab_size > 1 << 24 || config->num_layers < 1 || config->num_layers > 1024 ||
        config->num_heads < 1 || config->channels < 1 || config->channels > 1 << 16 ||
        config->channels % config->num_heads != 0 || config->padded_vocab_size < config->vocab_size ||
        config->padded_vocab_size > config->vocab_size + (1 << 16)) {
        snprintf(err, errlen, "%s: corrupt model header (maxT %d, V %d, Vp %d, L %d, NH %d, C %d)", path,
                 config->max_seq_len, config->vocab_size, config->padded_vocab_size, config->num_layers,
                 config->num_heads, config->channels);
        return -1;
    }
    return 0;
}

#endif  // GPTFP8_GPT2_H
