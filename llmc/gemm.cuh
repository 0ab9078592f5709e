/*
llmc/gemm.cuh — every GEMM of the trainers through cuBLASLt, BF16 and FP8, written in the trainers' row-major terms:

    out (rows, out_cols) = inp (rows, k) @ weight (out_cols, k)^T  [+ bias (out_cols)]  [+ out, if accumulate]

which is cuBLASLt's column-major "TN" problem D (m = out_cols, n = rows) = A^T (A = weight, k x m) * B (B = inp,
k x n). Hopper's FP8 GEMMs accept only TN, and every GEMM of a linear layer can be put in this form given the
transposed FP8 copies the cast kernels make. gemm_multiply takes the two operands (GemmOperand: the (outer, k) matrix
the product reads, stored k-major or transposed, with its type and scales) and the output (GemmOutput):
    fprop  out = X @ W^T     inp X (B*T, k = C),     weight W (OC, k = C)        E4M3 x E4M3, fast accumulation
    dgrad  dX  = dY @ W      inp dY (B*T, k = OC),   weight W^T (C, k = OC)      E4M3 x E5M2
    wgrad  dW  = dY^T @ X    inp dY^T (OC, k = B*T), weight X^T (C, k = B*T)     E4M3 x E5M2, may accumulate in fp32
In BF16 the transposes are not made: W, X and dY are read as stored (k_major 0), which cuBLASLt allows for bf16.
For FP8 the operands' scale_inv device pointers go to cuBLASLt as the A and B scales, so the product is rescaled
inside the GEMM and nothing is dequantized. Fast accumulation (FP8 partial sums kept at lower precision) is for
fprop only, as in Transformer Engine: gradients accumulate over the whole batch and need the full fp32 path.

Plans: the first call of a problem builds its descriptors (the matmul descriptor with its transposes, fast accumulation
and epilogue; the three matrix layouts) and asks the heuristic for an algorithm, once; later calls reuse all of it and
only set the pointers that change (scale_inv, bias). The key is the problem (shape, types, flags) AND the alignment
of every pointer: cuBLASLt's heuristic assumes 256-byte-aligned A, B, C, D unless told otherwise, and an algorithm
picked for a 256-byte-aligned layer-0 pointer may not run on a later layer's pointer at 16 bytes, so each pointer's
alignment (up to 256) goes into the preferences (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES) and into the key. cuBLASLt has no such preference for the bias; its
alignment is in the key all the same, so a plan is never replayed on a bias less aligned than the one it was found for.
FP8 operands must be 16-byte aligned (checked, one line). When no algorithm fits, the error names the shapes, types,
transposes, alignments and epilogue.
32 MiB workspace, the size cuBLASLt's Hopper kernels ask for.

Which algorithm (the trainer's -gemm_autotune N): the heuristic's first answer is not always its fastest (dev/cuda/
gemm_shapes -algos 8 found up to 27% between them at a step's shapes). With ctx->autotune N >= 2, a problem's first
call times the heuristic's first N answers on the call's own operands and keeps the fastest (gemm_plan_choose); 0 or 1
takes the first untimed. A GEMM that writes its output (beta 0) is timed in place, its output written again by the
call itself after; one that accumulates (beta 1) is timed out of place, D in ctx->tune_scratch and C its output, which
stays as it was (without a scratch that large it is not timed). Algorithms of one problem may differ in their bits, and
a timing can choose differently in another run, so every choice is kept in ctx->choices (llmc/gemm_choice.h), which
the trainer writes into its run folder and reads back on resume: a problem with a choice there takes it, untimed.
Timing synchronizes the stream: it happens once per problem, in the first step.

Block-scaled GEMMs (-fp8_recipe blockwise): each FP8 operand comes with an array of fp32 scale_invs, one per 1x128
block along k (CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F: activations and gradients) or per 128x128 tile
(BLK128x128_32F: weights), in the layouts fp8/block.h documents; the scale modes are set on the plan's descriptor
(CUBLASLT_MATMUL_DESC_A/B_SCALE_MODE) and are part of its key. cuBLASLt runs them on compute capability 9.0 only, from
12.9 on (gemm_block_scaling_check), without fast accumulation and without a bias epilogue (cuBLASLt documents only the
default one: the trainer puts the bias in the output first and accumulates), and never with both operands in tiles.

Scale pointers: cuBLASLt (13.1, on an H200) refuses an FP8 GEMM at the call, CUBLAS_STATUS_NOT_SUPPORTED after its
heuristic had found an algorithm, when the A or B scale pointer is not 16-byte aligned (it ran with them at 16 and at
256 bytes, and refused them at 4 and 8). So every scale_inv pointer given here must be 16-byte aligned (checked before
the call, one line: gemm_scale_pointers_check; dev/cuda/fp8_gemm checks both sides). The trainers' FP8 metadata keeps
one scale_inv per slot in contiguous floats, the layout of its checkpoints, so the GPU trainer keeps a second, strided
copy where each slot's scale_inv sits 16 bytes from the next (fp8/update.cuh), written by whatever writes the first.
A GEMM then reads the value on the device when it runs, so delayed and current scaling alike get the value the cast
used, on any stream, with nothing copied before it.
*/
#ifndef GPTFP8_GEMM_CUH
#define GPTFP8_GEMM_CUH

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cuda_utils.cuh"
#include "gemm_choice.h"

#define GEMM_WORKSPACE_BYTES (32u << 20)
#define GEMM_MAX_PLANS 256
#define GEMM_FP8_ALIGNMENT 16  // bytes: what cuBLASLt's FP8 kernels require of A and B
#define GEMM_AUTOTUNE_MAX_ANSWERS 16  // -gemm_autotune N: at most this many of the heuristic's answers timed
#define GEMM_AUTOTUNE_MS_PER_ANSWER 20.0  // about this long timing each answer (at least 2 calls, at most 50)

typedef struct {
    int m, n, k;  // cuBLASLt's column-major terms: D (m, n) = op(A) (m, k) @ op(B) (k, n)
    cudaDataType_t a_type, b_type, out_type;
    int has_bias, accumulate, fast_accum, trans_a, trans_b;
    uint32_t a_align, b_align, out_align, bias_align;  // bytes, powers of two up to 256 (bias: 0 without one)
    int a_scale_mode, b_scale_mode;  // cublasLtMatmulMatrixScale_t: SCALAR_32F (0, one scale_inv) or a block mode
} GemmKey;

typedef struct {
    GemmKey key;
    cublasLtMatmulDesc_t desc;  // transposes, fast accumulation, epilogue set once; scale and bias pointers per call
    cublasLtMatrixLayout_t a_layout, b_layout, d_layout;
    cublasLtMatmulAlgo_t algo;
    int chosen;  // algo is a choice of ctx->choices (timed, or read), not only the heuristic's first answer
} GemmPlan;

typedef struct {
    cublasLtHandle_t handle;
    void* workspace;  // GEMM_WORKSPACE_BYTES on the device
    GemmPlan plans[GEMM_MAX_PLANS];
    int num_plans;
    int last_plan;  // index of the plan the latest call ran (dev/cuda/gemm_shapes times that plan's alternatives)
    // the algorithm choice (see the top): how many of the heuristic's answers a new problem times (0, 1: none); the
    // out-of-place output for timing an accumulating GEMM (NULL: those take the first answer); whether each choice is
    // printed; every choice made or read, the device that made them, and whether one was made since the last write
    int autotune;
    void* tune_scratch;
    size_t tune_scratch_bytes;
    int tune_print;
    GemmChoices choices;
    int choices_changed;
    int num_timed;  // problems this context timed
} GemmContext;

// The GPU and cuBLASLt that choose algorithms here (a file of choices names them: llmc/gemm_choice.h).
static inline void gemm_choice_device_current(GemmChoiceDevice* d) {
    int device = 0;
    cudaDeviceProp prop;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaGetDeviceProperties(&prop, device));
    memset(d, 0, sizeof(*d));
    size_t name_len = strnlen(prop.name, sizeof(prop.name));
    if (name_len >= sizeof(d->device)) { name_len = sizeof(d->device) - 1; }
    memcpy(d->device, prop.name, name_len);  // (memset: NUL-terminated)
    for (char* p = d->device; *p; p++) {
        if (*p == '\t' || *p == '\n') { *p = ' '; }
    }
    d->compute_capability = prop.major * 10 + prop.minor;
    d->cublaslt_version = (long)cublasLtGetVersion();
}

static inline void gemm_context_init(GemmContext* ctx) {
    memset(ctx, 0, sizeof(*ctx));
    cublasCheck(cublasLtCreate(&ctx->handle));
    cudaCheck(cudaMalloc(&ctx->workspace, GEMM_WORKSPACE_BYTES));
    gemm_choice_device_current(&ctx->choices.device);
}

static inline void gemm_plan_destroy(GemmPlan* plan) {
    cublasCheck(cublasLtMatrixLayoutDestroy(plan->a_layout));
    cublasCheck(cublasLtMatrixLayoutDestroy(plan->b_layout));
    cublasCheck(cublasLtMatrixLayoutDestroy(plan->d_layout));
    cublasCheck(cublasLtMatmulDescDestroy(plan->desc));
}

static inline void gemm_plans_clear(GemmContext* ctx) {
    for (int i = 0; i < ctx->num_plans; i++) { gemm_plan_destroy(&ctx->plans[i]); }
    ctx->num_plans = 0;
}

static inline void gemm_context_free(GemmContext* ctx) {
    gemm_plans_clear(ctx);
    gemm_choices_free(&ctx->choices);
    cublasCheck(cublasLtDestroy(ctx->handle));
    cudaCheck(cudaFree(ctx->workspace));
}

static inline int gemm_type_is_fp8(cudaDataType_t t) { return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2; }

static inline const char* gemm_type_name(cudaDataType_t t) {
    switch (t) {
        case CUDA_R_8F_E4M3: return "e4m3";
        case CUDA_R_8F_E5M2: return "e5m2";
        case CUDA_R_16BF: return "bf16";
        case CUDA_R_16F: return "fp16";
        case CUDA_R_32F: return "fp32";
        default: return "other";
    }
}

// The alignment of a device pointer in bytes: the largest power of two dividing its address, at most 256 (what
// cuBLASLt assumes by default); 256 for NULL.
static inline uint32_t gemm_pointer_alignment(const void* p) {
    uintptr_t address = (uintptr_t)p;
    if (address == 0) { return 256; }
    uintptr_t lowest_bit = address & (~address + 1);
    return lowest_bit >= 256 ? 256u : (uint32_t)lowest_bit;
}

static inline const char* gemm_scale_mode_name(int mode) {
    switch (mode) {
        case CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F: return "scalar";
        case CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F: return "VEC128_32F (1x128 blocks)";
        case CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F: return "BLK128x128_32F (128x128 tiles)";
        default: return "other";
    }
}

static inline int gemm_scale_mode_is_block(int mode) {
    return mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F || mode == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
}

// One line describing a GEMM problem, for error messages: the shapes in both terms, types, transposes, alignments,
// epilogue and flags.
static inline void gemm_describe(char* out, size_t len, const GemmKey* key) {
    snprintf(out, len,
             "D (%d x %d, %s, align %u) = op(A) @ op(B), k %d [row-major: out (%d, %d)]; A %s %s (align %u), "
             "B %s %s (align %u); epilogue %s (bias align %u); %s; fast accumulation %s; scales A %s, B %s",
             key->m, key->n, gemm_type_name(key->out_type), key->out_align, key->k, key->n, key->m,
             gemm_type_name(key->a_type), key->trans_a ? "transposed" : "not transposed", key->a_align,
             gemm_type_name(key->b_type), key->trans_b ? "transposed" : "not transposed", key->b_align,
             key->has_bias ? "bias (bf16)" : "none", key->bias_align, key->accumulate ? "D += (beta 1)" : "D = (beta 0)",
             key->fast_accum ? "on" : "off", gemm_scale_mode_name(key->a_scale_mode),
             gemm_scale_mode_name(key->b_scale_mode));
}

// The plan key of a call (see the top): the problem and the alignment of each pointer.
static inline GemmKey gemm_key(const void* out, cudaDataType_t out_type, const void* a, cudaDataType_t a_type, int trans_a,
                               const void* b, cudaDataType_t b_type, int trans_b, const void* bias, int m, int n, int k,
                               int accumulate, int fast_accum, int a_scale_mode, int b_scale_mode) {
    GemmKey key;
    memset(&key, 0, sizeof(key));  // the key is compared with memcmp: no stray padding bytes
    key.m = m;
    key.n = n;
    key.k = k;
    key.a_type = a_type;
    key.b_type = b_type;
    key.out_type = out_type;
    key.has_bias = bias != NULL;
    key.accumulate = accumulate != 0;
    key.fast_accum = (gemm_type_is_fp8(a_type) || gemm_type_is_fp8(b_type)) && fast_accum;
    key.trans_a = trans_a != 0;
    key.trans_b = trans_b != 0;
    key.a_align = gemm_pointer_alignment(a);
    key.b_align = gemm_pointer_alignment(b);
    key.out_align = gemm_pointer_alignment(out);
    key.bias_align = bias ? gemm_pointer_alignment(bias) : 0;
    key.a_scale_mode = a_scale_mode;
    key.b_scale_mode = b_scale_mode;
    return key;
}

// What cuBLASLt's FP8 GEMMs require on Hopper and the trainer could get wrong: the TN layout, dimensions that are
// multiples of 16, 16-byte-aligned operands; and for block scale modes two FP8 operands, both in blocks, not both in
// tiles, k a multiple of 128, no fast accumulation. Returns 0, or -1 with one line (what is wrong: the problem) in err.
static inline int gemm_problem_check(const GemmKey* key, char* err, size_t errlen) {
    int block_scaled = gemm_scale_mode_is_block(key->a_scale_mode) || gemm_scale_mode_is_block(key->b_scale_mode);
    if (!block_scaled && !gemm_type_is_fp8(key->a_type) && !gemm_type_is_fp8(key->b_type)) { return 0; }
    const char* wrong = NULL;
    if (block_scaled && (!gemm_type_is_fp8(key->a_type) || !gemm_type_is_fp8(key->b_type))) {
        wrong = "block-scaled GEMMs take two FP8 operands";
    } else if (!key->trans_a || key->trans_b) {
        wrong = "Hopper FP8 GEMMs take only the TN layout (A transposed, B not)";
    } else if (key->k % 16 != 0 || key->m % 16 != 0 || key->n % 16 != 0) {
        wrong = "FP8 GEMMs need m, n and k to be multiples of 16";
    } else if (key->a_align < GEMM_FP8_ALIGNMENT || key->b_align < GEMM_FP8_ALIGNMENT) {
        wrong = "FP8 operands must be 16-byte aligned";
    } else if (block_scaled) {
        if (key->fast_accum) {
            wrong = "block-scaled GEMMs do not allow fast accumulation";
        } else if (key->k % 128 != 0) {
            wrong = "block-scaled GEMMs need k to be a multiple of 128 (the scales' blocks along k)";
        } else if (key->a_scale_mode == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F &&
                   key->b_scale_mode == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F) {
            wrong = "no GEMM pairs two 128x128-tile operands (one must be VEC128)";
        } else if (!gemm_scale_mode_is_block(key->a_scale_mode) || !gemm_scale_mode_is_block(key->b_scale_mode)) {
            wrong = "a block-scaled GEMM scales both operands in blocks";
        }
    }
    if (!wrong) { return 0; }
    char problem[512];
    gemm_describe(problem, sizeof(problem), key);
    snprintf(err, errlen, "%s: %s", wrong, problem);
    return -1;
}

// The pointers that change from call to call, set on a plan's descriptor before each call (cuBLASLt reads the
// descriptor when the call is made): the FP8 operands' scale_inv and the bias.
static inline void gemm_plan_set_pointers(GemmPlan* plan, const float* a_scale_inv, const float* b_scale_inv,
                                          const void* bias) {
    if (gemm_type_is_fp8(plan->key.a_type) || gemm_type_is_fp8(plan->key.b_type)) {
        cublasCheck(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &a_scale_inv,
                                                   sizeof(a_scale_inv)));
        cublasCheck(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &b_scale_inv,
                                                   sizeof(b_scale_inv)));
    }
    if (plan->key.has_bias) {
        cublasCheck(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
    }
}

// Asks cuBLASLt's heuristic for up to `requested` algorithms for a plan's descriptors (its pointers as set), best
// first by the heuristic's own estimate, each within the context's workspace and the alignments of the plan's key.
// Returns the heuristic's status; `*found` is how many results it wrote.
static inline cublasStatus_t gemm_plan_heuristic(GemmContext* ctx, const GemmPlan* plan,
                                                 cublasLtMatmulHeuristicResult_t* results, int requested, int* found) {
    const GemmKey* key = &plan->key;
    cublasLtMatmulPreference_t preference;
    cublasCheck(cublasLtMatmulPreferenceCreate(&preference));
    size_t workspace = GEMM_WORKSPACE_BYTES;
    cublasCheck(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                                     sizeof(workspace)));
    const struct { cublasLtMatmulPreferenceAttributes_t attribute; uint32_t bytes; } alignments[4] = {
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, key->a_align},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, key->b_align},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, key->out_align},  // C is D (beta reads the output in place)
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, key->out_align}};
    for (int i = 0; i < 4; i++) {
        cublasCheck(cublasLtMatmulPreferenceSetAttribute(preference, alignments[i].attribute, &alignments[i].bytes,
                                                         sizeof(alignments[i].bytes)));
    }
    *found = 0;
    cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(ctx->handle, plan->desc, plan->a_layout, plan->b_layout,
                                                           plan->d_layout, plan->d_layout, preference, requested,
                                                           results, found);
    cublasCheck(cublasLtMatmulPreferenceDestroy(preference));
    return status;
}

// Builds a plan's descriptors for `key` (transposes, fast accumulation, scale modes, epilogue, the three layouts) with
// this call's pointers set; no algorithm yet (gemm_plan_build asks for it; dev/cuda/fp8_block_gemm asks for problems
// gemm_problem_check refuses, to see what cuBLASLt itself does with them). gemm_plan_destroy frees them.
static inline void gemm_plan_describe(GemmPlan* plan, const GemmKey* key, const float* a_scale_inv,
                                      const float* b_scale_inv, const void* bias) {
    memset(plan, 0, sizeof(*plan));
    plan->key = *key;
    cublasCheck(cublasLtMatmulDescCreate(&plan->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t op_a = key->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, op_b = key->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasCheck(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a)));
    cublasCheck(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof(op_b)));
    if (gemm_type_is_fp8(key->a_type) || gemm_type_is_fp8(key->b_type)) {
        int8_t fast = key->fast_accum ? 1 : 0;
        cublasCheck(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof(fast)));
    }
    if (key->a_scale_mode != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F ||
        key->b_scale_mode != CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F) {
        int32_t a_mode = key->a_scale_mode, b_mode = key->b_scale_mode;
        cublasCheck(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode,
                                                   sizeof(a_mode)));
        cublasCheck(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode,
                                                   sizeof(b_mode)));
    }
    if (key->has_bias) {
        cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
        cudaDataType_t bias_type = CUDA_R_16BF;
        cublasCheck(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
        cublasCheck(cublasLtMatmulDescSetAttribute(plan->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                   sizeof(bias_type)));
    }
    // A is stored (k, m) when transposed, else (m, k); B (n, k) when transposed, else (k, n); D (m, n)
    if (key->trans_a) {
        cublasCheck(cublasLtMatrixLayoutCreate(&plan->a_layout, key->a_type, key->k, key->m, key->k));
    } else {
        cublasCheck(cublasLtMatrixLayoutCreate(&plan->a_layout, key->a_type, key->m, key->k, key->m));
    }
    if (key->trans_b) {
        cublasCheck(cublasLtMatrixLayoutCreate(&plan->b_layout, key->b_type, key->n, key->k, key->n));
    } else {
        cublasCheck(cublasLtMatrixLayoutCreate(&plan->b_layout, key->b_type, key->k, key->n, key->k));
    }
    cublasCheck(cublasLtMatrixLayoutCreate(&plan->d_layout, key->out_type, key->m, key->n, key->m));
    gemm_plan_set_pointers(plan, a_scale_inv, b_scale_inv, bias);
}

// A problem's key as the words of its row in a file of choices (gemm_choice_key_columns' order).
static inline void gemm_key_words(const GemmKey* key, int32_t words[GEMM_CHOICE_KEY_WORDS]) {
    const int32_t w[GEMM_CHOICE_KEY_WORDS] = {
        key->m, key->n, key->k, (int32_t)key->a_type, (int32_t)key->b_type, (int32_t)key->out_type, key->has_bias,
        key->accumulate, key->fast_accum, key->trans_a, key->trans_b, (int32_t)key->a_align, (int32_t)key->b_align,
        (int32_t)key->out_align, (int32_t)key->bias_align, key->a_scale_mode, key->b_scale_mode};
    memcpy(words, w, sizeof(w));
}

static inline size_t gemm_type_bytes(cudaDataType_t t) {
    return t == CUDA_R_32F ? 4 : t == CUDA_R_16BF || t == CUDA_R_16F ? 2 : 1;
}

// The choice ctx holds for a problem, or NULL.
static inline const GemmChoice* gemm_choice_of(const GemmContext* ctx, const GemmKey* key) {
    int32_t words[GEMM_CHOICE_KEY_WORDS];
    gemm_key_words(key, words);
    return gemm_choices_find(&ctx->choices, words);
}

// Builds a plan's descriptors for `key` and takes its algorithm: the choice ctx holds for the problem (checked to
// run here), else the heuristic's first answer (asked with this call's pointers set, as the heuristic may look at
// them); exits with the problem described when cuBLASLt has none.
static inline void gemm_plan_build(GemmContext* ctx, GemmPlan* plan, const GemmKey* key, const float* a_scale_inv,
                                   const float* b_scale_inv, const void* bias) {
    gemm_plan_describe(plan, key, a_scale_inv, b_scale_inv, bias);
    const GemmChoice* choice = gemm_choice_of(ctx, key);
    if (choice) {
        static_assert(sizeof(plan->algo) == sizeof(choice->algo), "cublasLtMatmulAlgo_t is 8 words of 64 bits");
        memcpy(&plan->algo, choice->algo, sizeof(plan->algo));
        cublasLtMatmulHeuristicResult_t check;
        memset(&check, 0, sizeof(check));
        cublasStatus_t status = cublasLtMatmulAlgoCheck(ctx->handle, plan->desc, plan->a_layout, plan->b_layout,
                                                        plan->d_layout, plan->d_layout, &plan->algo, &check);
        if (status != CUBLAS_STATUS_SUCCESS || check.workspaceSize > GEMM_WORKSPACE_BYTES) {
            char problem[512];
            gemm_describe(problem, sizeof(problem), key);
            fprintf(stderr, "error: the algorithm chosen earlier for %s does not run here (cuBLASLt: %s): delete the "
                    "run folder's gemm_algos files to choose afresh\n", problem,
                    status != CUBLAS_STATUS_SUCCESS ? cublasGetStatusName(status) : "needs a larger workspace");
            exit(1);
        }
        plan->chosen = 1;
        return;
    }
    cublasLtMatmulHeuristicResult_t heuristic;
    int found = 0;
    // no algorithm is answered with CUBLAS_STATUS_NOT_SUPPORTED (or 0 results): both are reported with the problem
    cublasStatus_t status = gemm_plan_heuristic(ctx, plan, &heuristic, 1, &found);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0) {
        char problem[512];
        gemm_describe(problem, sizeof(problem), key);
        fprintf(stderr, "error: cuBLASLt has no algorithm for %s (heuristic: %s)\n", problem,
                status != CUBLAS_STATUS_SUCCESS ? cublasGetStatusName(status) : "0 results");
        exit(1);
    }
    plan->algo = heuristic.algo;
}

// One call of a plan with `algo`: D = A @ B (+ C when the plan accumulates), C being `out` and D `d` (out itself but
// when an accumulating GEMM is timed out of place). Returns cuBLASLt's status.
static inline cublasStatus_t gemm_plan_run(GemmContext* ctx, const GemmPlan* plan, const cublasLtMatmulAlgo_t* algo,
                                           const void* a, const void* b, const void* out, void* d,
                                           cudaStream_t stream) {
    const float alpha = 1.0f, beta = plan->key.accumulate ? 1.0f : 0.0f;
    return cublasLtMatmul(ctx->handle, plan->desc, &alpha, a, plan->a_layout, b, plan->b_layout, &beta, out,
                          plan->d_layout, d, plan->d_layout, algo, ctx->workspace, GEMM_WORKSPACE_BYTES, stream);
}

// Milliseconds per call of a plan with `algo` on the stream, about GEMM_AUTOTUNE_MS_PER_ANSWER of calls timed with
// events after one untimed call; -1 when cuBLASLt refuses the call.
static inline double gemm_time_algo(GemmContext* ctx, const GemmPlan* plan, const cublasLtMatmulAlgo_t* algo,
                                    const void* a, const void* b, const void* out, void* d, cudaStream_t stream,
                                    cudaEvent_t start, cudaEvent_t stop) {
    // the untimed call loads the kernel; an algorithm that fails at the call is passed over
    if (gemm_plan_run(ctx, plan, algo, a, b, out, d, stream) != CUBLAS_STATUS_SUCCESS) { return -1.0; }
    float ms = 0.0f;
    cudaCheck(cudaEventRecord(start, stream));
    cublasCheck(gemm_plan_run(ctx, plan, algo, a, b, out, d, stream));
    cudaCheck(cudaEventRecord(stop, stream));
    cudaCheck(cudaEventSynchronize(stop));
    cudaCheck(cudaEventElapsedTime(&ms, start, stop));
    int calls = ms > 0.0f ? (int)(GEMM_AUTOTUNE_MS_PER_ANSWER / ms) : 50;
    calls = calls < 2 ? 2 : calls > 50 ? 50 : calls;
    cudaCheck(cudaEventRecord(start, stream));
    for (int i = 0; i < calls; i++) { cublasCheck(gemm_plan_run(ctx, plan, algo, a, b, out, d, stream)); }
    cudaCheck(cudaEventRecord(stop, stream));
    cudaCheck(cudaEventSynchronize(stop));
    cudaCheck(cudaEventElapsedTime(&ms, start, stop));
    return (double)ms / calls;
}

// A problem in a few words, for the choice's line: shapes in the trainers' row-major terms, types, epilogue.
static inline void gemm_describe_short(char* out, size_t len, const GemmKey* key) {
    snprintf(out, len, "out (%d, %d) %s, k %d, %s x %s%s%s%s%s", key->n, key->m, gemm_type_name(key->out_type), key->k,
             gemm_type_name(key->a_type), gemm_type_name(key->b_type), key->has_bias ? ", bias" : "",
             key->accumulate ? ", accumulating" : "", key->fast_accum ? ", fast accumulation" : "",
             gemm_scale_mode_is_block(key->a_scale_mode) ? ", block scales" : "");
}

// A new problem's algorithm by timing (see the top): the heuristic's first ctx->autotune answers, each run on this
// call's operands (a = A, b = B, out the output), the fastest kept in the plan and in ctx->choices. An accumulating
// GEMM is timed with D in ctx->tune_scratch, C being out, so out keeps its values; without a scratch that large it
// keeps the first answer, untimed and unrecorded. Pointers and scales must be set on the plan for this call.
static inline void gemm_plan_choose(GemmContext* ctx, GemmPlan* plan, const void* a, const void* b, void* out,
                                    cudaStream_t stream) {
    const GemmKey* key = &plan->key;
    void* d = out;
    if (key->accumulate) {
        size_t out_bytes = (size_t)key->m * (size_t)key->n * gemm_type_bytes(key->out_type);
        if (!ctx->tune_scratch || ctx->tune_scratch_bytes < out_bytes) { return; }
        d = ctx->tune_scratch;
    }
    cudaStreamCaptureStatus capture;
    cudaCheck(cudaStreamIsCapturing(stream, &capture));
    if (capture != cudaStreamCaptureStatusNone) {  // timing waits for the GPU, which a graph's capture cannot
        char problem[256];
        gemm_describe(problem, sizeof(problem), key);
        fprintf(stderr, "error: %s has no algorithm chosen yet and the stream is being captured into a CUDA graph; "
                "run it once before capturing\n", problem);
        exit(1);
    }
    int requested = ctx->autotune > GEMM_AUTOTUNE_MAX_ANSWERS ? GEMM_AUTOTUNE_MAX_ANSWERS : ctx->autotune;
    cublasLtMatmulHeuristicResult_t results[GEMM_AUTOTUNE_MAX_ANSWERS];
    int found = 0;
    cublasCheck(gemm_plan_heuristic(ctx, plan, results, requested, &found));
    cudaEvent_t start, stop;
    cudaCheck(cudaEventCreate(&start));
    cudaCheck(cudaEventCreate(&stop));
    int best = -1;
    double best_ms = 0.0, first_ms = 0.0;
    for (int i = 0; i < found; i++) {
        if (results[i].state != CUBLAS_STATUS_SUCCESS || results[i].workspaceSize > GEMM_WORKSPACE_BYTES) { continue; }
        double ms = gemm_time_algo(ctx, plan, &results[i].algo, a, b, out, d, stream, start, stop);
        if (ms < 0.0) { continue; }
        if (i == 0) { first_ms = ms; }
        if (best < 0 || ms < best_ms) {
            best = i;
            best_ms = ms;
        }
    }
    cudaCheck(cudaEventDestroy(start));
    cudaCheck(cudaEventDestroy(stop));
    if (best < 0) { return; }  // none ran: the plan keeps the first answer, whose call reports cuBLASLt's error
    plan->algo = results[best].algo;
    plan->chosen = 1;
    GemmChoice row;
    memset(&row, 0, sizeof(row));
    gemm_key_words(key, row.key);
    row.answer = best;
    row.answers = found;
    row.ms = best_ms;
    row.first_ms = first_ms;
    memcpy(row.algo, &results[best].algo, sizeof(row.algo));
    gemm_choices_put(&ctx->choices, &row);
    ctx->choices_changed = 1;
    ctx->num_timed++;
    if (ctx->tune_print) {
        char problem[256];
        gemm_describe_short(problem, sizeof(problem), key);
        printf("gemm: %s: answer %d of %d, %.4f ms (the heuristic's first: %.4f ms, %.2fx)\n", problem, best + 1,
               found, best_ms, first_ms, best_ms > 0.0 && first_ms > 0.0 ? first_ms / best_ms : 0.0);
    }
}

// The scale_inv pointers of an FP8 GEMM, as cuBLASLt takes them (see the top): 16-byte aligned; with block scale modes
// both present (whole arrays); with a scalar one NULL means 1. Returns 0, or -1 with one line (what is wrong: the
// problem) in err.
static inline int gemm_scale_pointers_check(const GemmKey* key, const float* a_scale_inv, const float* b_scale_inv,
                                            char* err, size_t errlen) {
    int block_scaled = gemm_scale_mode_is_block(key->a_scale_mode) || gemm_scale_mode_is_block(key->b_scale_mode);
    if (!block_scaled && !gemm_type_is_fp8(key->a_type) && !gemm_type_is_fp8(key->b_type)) { return 0; }
    const char* wrong = NULL;
    if (block_scaled && (!a_scale_inv || !b_scale_inv)) {
        wrong = "a block-scaled GEMM needs both scale arrays";
    } else if ((uintptr_t)a_scale_inv % 16 != 0 || (uintptr_t)b_scale_inv % 16 != 0) {
        wrong = "cuBLASLt takes FP8 scale pointers 16-byte aligned only";
    }
    if (!wrong) { return 0; }
    char problem[512];
    gemm_describe(problem, sizeof(problem), key);
    snprintf(err, errlen, "%s (A %p, B %p): %s", wrong, (const void*)a_scale_inv, (const void*)b_scale_inv, problem);
    return -1;
}

// One operand of a GEMM, as it lies in memory: the (outer, k) matrix the product reads, stored row-major as it is
// (k_major 1: k contiguous) or as its transpose (k_major 0: stored (k, outer)); its type; for FP8 its scale_inv device
// pointer: one value (scale_mode CUBLASLT_MATMUL_MATRIX_SCALE_SCALAR_32F, 0) or an array in the layout of a block
// mode (VEC128_32F: 1x128 blocks along k, [k/128][round_up(outer, 4)]; BLK128x128_32F: 128x128 tiles,
// [outer/128][round_up(k/128, 4)]; fp8/block.h). Hopper's FP8 GEMMs read only k-major operands (the TN layout): an
// FP8 tensor that a GEMM reduces over its rows is given as its transposed copy, which the casts make.
typedef struct {
    const void* data;
    cudaDataType_t type;
    int outer, k;
    int k_major;
    const float* scale_inv;
    int scale_mode;  // cublasLtMatmulMatrixScale_t
} GemmOperand;

// The output of a GEMM: out (rows, out_cols) row-major, bf16 or fp32, with a bf16 bias (out_cols) added in the
// epilogue (NULL: none; scalar scales only: cuBLASLt documents no bias epilogue for Hopper's block-scaled GEMMs), and
// out's old values added when accumulating (beta 1).
typedef struct {
    void* data;
    cudaDataType_t type;
    const void* bias;
    int accumulate;
} GemmOutput;

static inline GemmOperand gemm_operand(const void* data, cudaDataType_t type, int outer, int k, int k_major,
                                       const float* scale_inv, int scale_mode) {
    GemmOperand op = {data, type, outer, k, k_major, scale_inv, scale_mode};
    return op;
}

// The trainers' one GEMM, in their row-major terms: out (inp.outer, weight.outer) = inp @ weight^T (+ bias) (+ out),
// each operand as it is stored (the top: every GEMM of a linear layer is one of these). In cuBLASLt's column-major
// terms D (m = weight.outer, n = inp.outer) = op(A = weight) @ op(B = inp), A transposed when the weight is k-major,
// B when the input is not. FP8 operands need the TN layout (both k-major), 16-byte alignment and their scale_invs;
// fast accumulation applies to FP8 only (the trainers ask for it in fprop with scalar scales). With block scale modes
// the scale_invs are whole arrays; every scale pointer is 16-byte aligned, as cuBLASLt requires (checked). cuBLASLt
// runs block-scaled GEMMs on compute capability 9.0 with 12.9 or later only (gemm_block_scaling_check).
static inline void gemm_multiply(GemmContext* ctx, const GemmOutput* out, const GemmOperand* weight,
                                 const GemmOperand* inp, int fast_accum, cudaStream_t stream) {
    int trans_a = weight->k_major, trans_b = !inp->k_major;
    int m = weight->outer, n = inp->outer, k = weight->k;
    const float* a_scale_inv = weight->scale_inv;
    const float* b_scale_inv = inp->scale_inv;
    GemmKey key = gemm_key(out->data, out->type, weight->data, weight->type, trans_a, inp->data, inp->type, trans_b,
                           out->bias, m, n, k, out->accumulate, fast_accum, weight->scale_mode, inp->scale_mode);
    int block_scaled = gemm_scale_mode_is_block(weight->scale_mode) || gemm_scale_mode_is_block(inp->scale_mode);
    char problem[640];
    if (inp->k != weight->k) {
        gemm_describe(problem, sizeof(problem), &key);
        fprintf(stderr, "error: GEMM operands reduce over different lengths (weight k %d, input k %d): %s\n", weight->k,
                inp->k, problem);
        exit(1);
    }
    if (gemm_problem_check(&key, problem, sizeof(problem)) ||
        gemm_scale_pointers_check(&key, a_scale_inv, b_scale_inv, problem, sizeof(problem))) {
        fprintf(stderr, "error: %s\n", problem);
        exit(1);
    }
    if (block_scaled && out->bias) {
        gemm_describe(problem, sizeof(problem), &key);
        fprintf(stderr, "error: a block-scaled GEMM has no bias epilogue (add the bias to the output first): %s\n",
                problem);
        exit(1);
    }
    GemmPlan* plan = NULL;
    for (int i = 0; i < ctx->num_plans; i++) {
        if (memcmp(&ctx->plans[i].key, &key, sizeof(key)) == 0) { plan = &ctx->plans[i]; break; }
    }
    int new_plan = plan == NULL;
    if (new_plan) {
        if (ctx->num_plans == GEMM_MAX_PLANS) { gemm_plans_clear(ctx); }  // more problems than a step has: start over
        plan = &ctx->plans[ctx->num_plans++];
    }
    ctx->last_plan = (int)(plan - ctx->plans);
    if (new_plan) {
        gemm_plan_build(ctx, plan, &key, a_scale_inv, b_scale_inv, out->bias);
        if (!plan->chosen && ctx->autotune >= 2) { gemm_plan_choose(ctx, plan, weight->data, inp->data, out->data, stream); }
    } else {
        gemm_plan_set_pointers(plan, a_scale_inv, b_scale_inv, out->bias);
    }
    cublasStatus_t status = gemm_plan_run(ctx, plan, &plan->algo, weight->data, inp->data, out->data, out->data, stream);
    if (status != CUBLAS_STATUS_SUCCESS) {
        gemm_describe(problem, sizeof(problem), &key);
        fprintf(stderr, "error: cuBLASLt matmul failed: %s (%s) for %s\n", cublasGetStatusName(status),
                cublasGetStatusString(status), problem);
        exit(1);
    }
}

// Whether the current GPU and the cuBLASLt loaded run block-scaled FP8 GEMMs (VEC128, BLK128x128): compute capability
// 9.0 exactly (cuBLASLt's only architecture for these modes; Blackwell runs MXFP8 instead) and cuBLASLt 12.9 or later
// (where they appeared). Returns 0, or -1 with one line saying what was found in err.
static inline int gemm_block_scaling_check(char* err, size_t errlen) {
    int device = 0, major = 0, minor = 0;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    cudaCheck(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
    size_t version = cublasLtGetVersion();  // major * 10000 + minor * 100 + patch
    if (major != 9 || minor != 0) {
        snprintf(err, errlen, "this GPU has compute capability %d.%d, and cuBLASLt runs block-scaled FP8 GEMMs "
                 "(-fp8_recipe blockwise) on compute capability 9.0 (Hopper) only", major, minor);
        return -1;
    }
    if (version < 120900) {
        snprintf(err, errlen, "cuBLASLt %zu.%zu.%zu is loaded, and block-scaled FP8 GEMMs (-fp8_recipe blockwise) need "
                 "cuBLASLt 12.9 or later", version / 10000, version / 100 % 100, version % 100);
        return -1;
    }
    return 0;
}

#endif  // GPTFP8_GEMM_CUH
