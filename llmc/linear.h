/*
llmc/linear.h — the model's linear (GEMM) modules, said once for both trainers: which modules exist and in what
order (4 per block, then the LM head: the FP8 metadata's module order), where each one's weight and bias sit in the
flat parameter buffer, which of its three GEMMs (fprop, dgrad, wgrad) run in FP8 under the precision and recipe, the
FP8 casts that follows from, where its FP8 weight copy sits, and the FP8 diagnostics block, module by module.
*/
#ifndef GPTFP8_LINEAR_H
#define GPTFP8_LINEAR_H

#include <stdio.h>
#include <string.h>

#include "../fp8/block.h"
#include "../fp8/diag.h"
#include "../fp8/meta.h"
#include "gpt2.h"

typedef enum { PRECISION_FP32 = 0, PRECISION_BF16 = 1, PRECISION_FP8 = 2 } Precision;
static inline const char* precision_name(Precision p) { return p == PRECISION_FP32 ? "fp32" : p == PRECISION_BF16 ? "bf16" : "fp8"; }

// ----------------------------------------------------------------------------
// the modules

// Module order: 4 per block (module = block * LINEARS_PER_BLOCK + kind), then the LM head.
enum { LINEAR_QKV = 0, LINEAR_ATTPROJ = 1, LINEAR_FC = 2, LINEAR_FCPROJ = 3, LINEARS_PER_BLOCK = 4 };
static const char* const linear_names[LINEARS_PER_BLOCK] = {"qkv", "attproj", "fc", "fcproj"};

static inline int linear_lm_head(int num_layers) { return LINEARS_PER_BLOCK * num_layers; }
static inline int linear_num_modules(int num_layers) { return linear_lm_head(num_layers) + 1; }

// Where a linear module's tensors sit in the flat parameter buffer (ParameterTensors' order), the same for the
// parameters and their gradients, on the CPU and on the GPU: element offsets of its weight (OC, IC) and bias (OC),
// and its shape. The LM head's weight is wte (tied embedding) and it has no bias (has_bias 0).
typedef struct {
    size_t weight_offset, bias_offset;
    int has_bias, IC, OC;
} LinearLayout;

static inline LinearLayout linear_layout(const GPT2Config* config, int module) {
    size_t sizes[NUM_PARAMETER_TENSORS], offsets[NUM_PARAMETER_TENSORS], offset = 0;
    fill_in_parameter_sizes(sizes, config);
    for (int t = 0; t < NUM_PARAMETER_TENSORS; t++) {
        offsets[t] = offset;
        offset += sizes[t];
    }
    int C = config->channels;
    LinearLayout ll;
    memset(&ll, 0, sizeof(ll));
    if (module == linear_lm_head(config->num_layers)) {  // wte is tensor 0
        ll.IC = C;
        ll.OC = config->padded_vocab_size;
        return ll;
    }
    // per kind: the weight's tensor index (the bias is the next tensor), input and output widths
    static const int weight_tensor[LINEARS_PER_BLOCK] = {4, 6, 10, 12};  // qkvw, attprojw, fcw, fcprojw
    static const int in_width[LINEARS_PER_BLOCK] = {1, 1, 1, 4}, out_width[LINEARS_PER_BLOCK] = {3, 1, 4, 1};
    int l = module / LINEARS_PER_BLOCK, kind = module % LINEARS_PER_BLOCK, t = weight_tensor[kind];
    ll.IC = in_width[kind] * C;
    ll.OC = out_width[kind] * C;
    ll.weight_offset = offsets[t] + (size_t)l * ll.OC * ll.IC;
    ll.bias_offset = offsets[t + 1] + (size_t)l * ll.OC;
    ll.has_bias = 1;
    return ll;
}

// ----------------------------------------------------------------------------
// which GEMMs run in FP8

typedef struct {
    Precision precision;
    const Fp8Recipe* recipe;
    int fp8_bf16_first_last;  // this many blocks at each end stay BF16
    int fp8_lm_head;          // the LM head through FP8 too
    int num_layers;
    int fp8_attention;        // -fp8_attention (FP8_ATTENTION_*): attention's forward in FP8 in the blocks whose
                              // linears are FP8, and what its BF16 backward reads
} LinearPrecision;

// A module goes through FP8 in fp8 mode unless its block is among the first/last N or it is the LM head (opt-in).
// Its three GEMMs then follow override_linear_precision.
static inline int linear_is_fp8(const LinearPrecision* p, int module) {
    if (p->precision != PRECISION_FP8) { return 0; }
    if (module == linear_lm_head(p->num_layers)) { return p->fp8_lm_head; }
    int l = module / LINEARS_PER_BLOCK;
    return l >= p->fp8_bf16_first_last && l < p->num_layers - p->fp8_bf16_first_last;
}

// ----------------------------------------------------------------------------
// FP8 attention (-fp8_attention 1, delayed scaling): where its scales live
//
// Its casts take the slots of the tensors they are: q, k, v together the qkv module's FP8_FWD_OUTPUT slot (one scale
// for the three, as TE's QKV quantizer: the qkv GEMM's output), the attention's output the attproj module's
// FP8_FWD_INPUT slot (it is that GEMM's FP8 input, cast once, by the attention). The softmax output S and (for an FP8
// backward) dP have no linear of their own: one module per block after the LM head, S in its forward slot
// FP8_ATTENTION_S, dP in its backward slot FP8_ATTENTION_DP; its other three slots stay unused (their row 0 stays 0,
// which the update skips). The module count, and so the metadata's layout, grows by L only in runs with the flag.
enum { FP8_ATTENTION_S = FP8_FWD_INPUT, FP8_ATTENTION_DP = FP8_BWD_GRAD_OUTPUT };

// -fp8_attention's values. Both run the same FP8 forward; they differ in the q, k, v that the BF16 backward (cuDNN's,
// which recomputes the weights from q, k and the forward's statistics) differentiates. DPA (Transformer Engine's
// fp8_dpa): the qkv GEMM's bf16 output, as TE keeps it when attention's input is not FP8; its scores are not the
// ones the FP8 forward's statistics describe, so the recomputed weights do not sum to 1. MHA (TE's fp8_mha, where q,
// k, v arrive in FP8 and TE's backward gets them dequantized): their E4M3 values, dequantized to bf16 in place of the
// GEMM's output (no memory of their own), so that the backward differentiates the attention the forward computed, up
// to the weights' and the output's casts (doc/fp8_attention.md measures both).
enum { FP8_ATTENTION_OFF = 0, FP8_ATTENTION_DPA = 1, FP8_ATTENTION_MHA = 2 };

static inline int fp8_attention_module(int num_layers, int l) { return linear_num_modules(num_layers) + l; }
static inline int fp8_num_modules(int num_layers, int fp8_attention) {
    return linear_num_modules(num_layers) + (fp8_attention ? num_layers : 0);
}

// Whether block l's attention runs in FP8: with -fp8_attention 1, in the blocks whose linears run in FP8 (not the
// first and last -fp8_bf16_first_last).
static inline int attention_is_fp8(const LinearPrecision* p, int l) {
    return p->fp8_attention && linear_is_fp8(p, l * LINEARS_PER_BLOCK + LINEAR_QKV);
}

// Whether module's input is FP8 attention's E4M3 output (attproj of a block whose attention runs in FP8): the
// attention cast it and recorded its amax, so the module's own cast of it, with the same scale, records nothing.
static inline int linear_input_is_attention_output(const LinearPrecision* p, int module) {
    return module < linear_lm_head(p->num_layers) && module % LINEARS_PER_BLOCK == LINEAR_ATTPROJ &&
           attention_is_fp8(p, module / LINEARS_PER_BLOCK);
}

// Which of an FP8 module's three GEMMs run in FP8: all of them, less those override_linear_precision sends to BF16.
typedef enum { LINEAR_GEMM_FPROP = 0, LINEAR_GEMM_DGRAD = 1, LINEAR_GEMM_WGRAD = 2 } LinearGemm;
static inline int linear_gemm_is_fp8(const LinearPrecision* p, int module, LinearGemm gemm) {
    if (!linear_is_fp8(p, module)) { return 0; }
    int bf16 = gemm == LINEAR_GEMM_FPROP ? p->recipe->override_fprop
               : gemm == LINEAR_GEMM_DGRAD ? p->recipe->override_dgrad : p->recipe->override_wgrad;
    return !bf16;
}

// What a linear layer asks the FP8 cast for, in both trainers: one of its module's tensors, for one of its three GEMMs.
typedef enum { LINEAR_INPUT, LINEAR_GRAD_OUTPUT, LINEAR_WEIGHT } LinearTensor;
typedef enum {
    LINEAR_INPUT_FPROP,        // x (B*T, IC), for fprop
    LINEAR_INPUT_WGRAD,        // x, for wgrad
    LINEAR_GRAD_OUTPUT_DGRAD,  // dy (B*T, OC), for dgrad
    LINEAR_GRAD_OUTPUT_WGRAD,  // dy, for wgrad
    LINEAR_WEIGHT_FPROP,       // W (OC, IC), for fprop
    LINEAR_WEIGHT_DGRAD        // W, for dgrad
} LinearOperand;

// Each operand's tensor and GEMM, and whether that GEMM reads the tensor down its columns (it reduces over the
// tensor's rows: wgrad over the tokens, dgrad over W's output channels) or along its rows (fprop, dgrad's dy).
static const struct {
    LinearTensor tensor;
    LinearGemm gemm;
    int columnwise;
    const char* name;
} linear_operand_use[] = {
    {LINEAR_INPUT, LINEAR_GEMM_FPROP, 0, "fprop's input"},
    {LINEAR_INPUT, LINEAR_GEMM_WGRAD, 1, "wgrad's input"},
    {LINEAR_GRAD_OUTPUT, LINEAR_GEMM_DGRAD, 0, "dgrad's grad_output"},
    {LINEAR_GRAD_OUTPUT, LINEAR_GEMM_WGRAD, 1, "wgrad's grad_output"},
    {LINEAR_WEIGHT, LINEAR_GEMM_FPROP, 0, "fprop's weight"},
    {LINEAR_WEIGHT, LINEAR_GEMM_DGRAD, 1, "dgrad's weight"},
};

// The FP8 casts a module makes follow from its FP8 GEMMs: the weight is cast for fprop or dgrad, the input for
// fprop or wgrad (an FP8 wgrad with a BF16 fprop still casts the input in the forward, recording its amax), the output
// gradient for dgrad or wgrad (one cast feeds both).
static inline int linear_casts_weight(const LinearPrecision* p, int module) {
    return linear_gemm_is_fp8(p, module, LINEAR_GEMM_FPROP) || linear_gemm_is_fp8(p, module, LINEAR_GEMM_DGRAD);
}
static inline int linear_casts_input(const LinearPrecision* p, int module) {
    return linear_gemm_is_fp8(p, module, LINEAR_GEMM_FPROP) || linear_gemm_is_fp8(p, module, LINEAR_GEMM_WGRAD);
}
static inline int linear_casts_grad_output(const LinearPrecision* p, int module) {
    return linear_gemm_is_fp8(p, module, LINEAR_GEMM_DGRAD) || linear_gemm_is_fp8(p, module, LINEAR_GEMM_WGRAD);
}

// ----------------------------------------------------------------------------
// what the backward reads of a module's input (the GPU trainer's memory; the CPU keeps every activation)

// Whether the recompute (-r, llm.c's) drops a module's input from the forward and makes it again in the backward:
// -r 1 or 2 GELU's output (fcproj's input), -r 2 also LayerNorm's (qkv's and fc's). Never atty (attproj's, which the
// attention backward reads anyway) or the final LayerNorm's (the LM head's, one buffer).
static inline int linear_input_recomputed(int num_layers, int module, int recompute) {
    if (module == linear_lm_head(num_layers)) { return 0; }
    int kind = module % LINEARS_PER_BLOCK;
    return kind == LINEAR_FCPROJ ? recompute >= 1 : (kind == LINEAR_QKV || kind == LINEAR_FC) && recompute >= 2;
}

// Whether a module's FP8 wgrad reads the FP8 transpose of its input that the forward made and kept (as TE keeps a
// layer's FP8 input for its backward): with a per-tensor recipe (delayed or current scaling) the forward's cast of x
// writes x^T in the same pass, with the scale and so the bytes a cast in the backward would make; with blockwise the
// forward's cast writes the columnwise copy (x^T's codes in 1x128 blocks down x's columns, and their VEC128 scales)
// beside the rowwise one, from the bf16 source in the same pass (a 1x128-scaled tensor cannot be transposed): the
// bytes, amax and counts the backward's cast of it would make, recorded once, as that cast's were. Not where the
// recompute drops the input (-r trades that memory for time: the backward makes the input again and casts it), nor
// under mxfp8 (emulated: its columnwise copy is the dequantized bf16, as large as the input, so keeping it saves no
// memory; it casts x down its columns in the backward, from the bf16 input).
static inline int linear_keeps_input_t(const LinearPrecision* p, int module, int recompute) {
    return linear_gemm_is_fp8(p, module, LINEAR_GEMM_WGRAD) && p->recipe->scaling != FP8_SCALING_MXFP8 &&
           !linear_input_recomputed(p->num_layers, module, recompute);
}

// Whether a module's backward reads its bf16 input (for its wgrad: as it is in BF16, or to cast it in FP8); not
// where it reads the FP8 transpose the forward kept. dgrad never reads the input.
static inline int linear_backward_reads_input(const LinearPrecision* p, int module, int recompute) {
    return !linear_keeps_input_t(p, module, recompute);
}

// The FP8 input transposes the forward keeps for the backward: where each keeping module's x^T (IC, B*T) starts, in
// columns of B*T bytes (offsets (num_modules) may be NULL); returns the columns of all of them (0: none kept).
static inline size_t fp8_input_t_layout(const GPT2Config* config, const LinearPrecision* p, int recompute,
                                        size_t* offsets) {
    size_t total = 0;
    for (int module = 0; module < linear_num_modules(config->num_layers); module++) {
        if (offsets) { offsets[module] = total; }
        if (linear_keeps_input_t(p, module, recompute)) { total += (size_t)linear_layout(config, module).IC; }
    }
    return total;
}

// Blockwise: the VEC128 scale_invs (fp8/block.h) of the columnwise copies the forward keeps, x^T (IC, rows = B*T) in
// 1x128 blocks along its rows: where each keeping module's array starts, in floats (offsets (num_modules) may be
// NULL), ceil-sized at any width (fp8_vec128_scale_floats), each a multiple of 4 floats so every one starts 16-byte
// aligned; returns the floats of all of them.
static inline size_t fp8_input_t_scale_layout(const GPT2Config* config, const LinearPrecision* p, int recompute,
                                              size_t rows, size_t* offsets) {
    size_t total = 0;
    for (int module = 0; module < linear_num_modules(config->num_layers); module++) {
        if (offsets) { offsets[module] = total; }
        if (linear_keeps_input_t(p, module, recompute)) {
            total += fp8_vec128_scale_floats((size_t)linear_layout(config, module).IC, rows);
        }
    }
    return total;
}

// The layer slices of a per-layer bf16 activation that is the input of every block's linear of kind `kind` (the
// trainer's ln1 for LINEAR_QKV, ln2 for LINEAR_FC, fch_gelu for LINEAR_FCPROJ): the slice layer l writes and reads,
// and, in *num_slices (may be NULL), how many the buffer holds. A layer keeps a slice of its own where its backward
// reads that input and the recompute does not drop it; every other layer writes slice 0, which they share (the
// forward's next GEMM or cast reads it, the next layer overwrites it; the recompute remakes it there before use).
// With everything kept the slice of layer l is l: (L, B, T, width), the layout without FP8; all recomputed, one slice.
static inline int linear_input_slice(const LinearPrecision* p, int kind, int recompute, int l, int* num_slices) {
    int kept_before = 0, kept = 0, shared = 0, l_keeps = 0;
    for (int layer = 0; layer < p->num_layers; layer++) {
        int module = layer * LINEARS_PER_BLOCK + kind;
        int keeps = !linear_input_recomputed(p->num_layers, module, recompute) &&
                    linear_backward_reads_input(p, module, recompute);
        kept += keeps;
        kept_before += keeps && layer < l;
        shared |= !keeps;
        if (layer == l) { l_keeps = keeps; }
    }
    if (num_slices) { *num_slices = kept + shared; }
    return l_keeps ? shared + kept_before : 0;
}

// The k an FP8 GEMM that reduces over k elements runs with on the GPU, and so the length of every row of its operands'
// FP8 codes: blockwise, k rounded up to whole 1x128 blocks, the codes past k zero (fp8/block_quantize.cuh's k_padded:
// cuBLASLt's block-scaled GEMMs take only whole blocks along k, and dev/cuda/fp8_block_gemm checks the zero-padded
// problems against the CPU); k itself for the other recipes, and blockwise wherever k is a multiple of 128.
static inline size_t linear_fp8_gemm_k(const LinearPrecision* p, size_t k) {
    int blockwise = p->precision == PRECISION_FP8 && p->recipe && p->recipe->scaling == FP8_SCALING_BLOCKWISE;
    return blockwise ? fp8_blockwise_padded_k(k) : k;
}

// The FP8 copies of the weights: where each module's W starts, for the modules that cast their weight; offsets
// (num_modules) may be NULL. Returns the elements of one copy. The CPU's copy (gpu_codes 0) is W (OC, IC); the GPU's
// codes (gpu_codes 1) are W (OC, linear_fp8_gemm_k(IC)) and, at the same offset in a buffer of its own, W^T (IC,
// linear_fp8_gemm_k(OC)), in linear_fp8_gemm_k(OC) x linear_fp8_gemm_k(IC) per module (OC x IC unless blockwise
// pads; mxfp8's dequantized copies too).
static inline size_t fp8_weight_layout(const GPT2Config* config, const LinearPrecision* p, size_t* offsets,
                                       int gpu_codes) {
    size_t total = 0;
    for (int module = 0; module < linear_num_modules(config->num_layers); module++) {
        if (offsets) { offsets[module] = total; }
        if (linear_casts_weight(p, module)) {
            LinearLayout ll = linear_layout(config, module);
            total += gpu_codes ? linear_fp8_gemm_k(p, (size_t)ll.OC) * linear_fp8_gemm_k(p, (size_t)ll.IC)
                               : (size_t)ll.OC * ll.IC;
        }
    }
    return total;
}

// Blockwise on the GPU: where each module's weight scale_invs start (floats; offsets (num_modules) may be NULL) in
// cuBLASLt's BLK128x128 layout (fp8/block.h), for W (OC, IC), or for W^T (IC, OC) when `transposed`, the modules that
// cast their weight. Every module's array is a multiple of 4 floats, so every one starts 16-byte aligned. Returns the
// floats of all of them.
static inline size_t fp8_weight_scale_layout(const GPT2Config* config, const LinearPrecision* p, size_t* offsets,
                                             int transposed) {
    size_t total = 0;
    for (int module = 0; module < linear_num_modules(config->num_layers); module++) {
        if (offsets) { offsets[module] = total; }
        if (linear_casts_weight(p, module)) {
            LinearLayout ll = linear_layout(config, module);
            total += transposed ? fp8_blk128_scale_floats((size_t)ll.IC, (size_t)ll.OC)
                                : fp8_blk128_scale_floats((size_t)ll.OC, (size_t)ll.IC);
        }
    }
    return total;
}

// ----------------------------------------------------------------------------
// the shapes FP8 takes on the GPU

// The block recipes cast in blocks of 128 (blockwise) or 32 (mxfp8) along the GEMMs' dimensions, and where a
// dimension is not a multiple, the last block of each row or column is cut short by the tensor's edge, its amax and
// scale from the elements it has (fp8/block.h): the CPU trainer, whose GEMMs multiply the dequantized values, takes
// every shape in every recipe. The GPU trainer's kernels ask for more, which this checks (with B*T the tokens of a
// micro-batch; 3C and 4C follow from C):
//   delayed, current  C and B*T multiples of 64: the per-tensor casts' 64x64 tiles (fp8/quantize.cuh).
//   mxfp8             C (and the padded vocabulary Vp of an FP8 LM head) a multiple of 8 and B*T of 16: the block
//                     casts' 16-byte loads and 16-row tiles (fp8/block_quantize.cuh); its GEMMs are BF16's
//                     (emulated), which take any shape.
//   blockwise         every dimension of an FP8 module, the GEMMs' k (IC for fprop, OC for dgrad, B*T for wgrad)
//                     and outer dimensions (m, n) alike, a multiple of 16 (cuBLASLt's FP8 GEMMs, the casts'
//                     transposed copies, the weights' 2D cast). A k that is not a multiple of 128 ends in a partial
//                     block, which the casts scale from the elements it has and write zero-padded to whole blocks
//                     (linear_fp8_gemm_k): cuBLASLt's block-scaled GEMM then reduces over the padded k, the padding's
//                     codes 0. A partial block along m or n is taken as it is: each output element multiplies whole
//                     blocks along k, each with its own scale, and the scale arrays hold the partial tiles' scales at
//                     fp8/block.h's indices (ceil(m / 128) tiles; VEC128 per row). dev/cuda/fp8_block_gemm checks
//                     both forms against the CPU.
//   -fp8_attention 1  a head size C/NH that is a multiple of 16 up to 256: cuDNN's FP8 forward on Hopper (the
//                     frontend's rule; whether this cuDNN has an engine for the shape, the trainer asks it).
// Returns 0, or -1 with one line naming the first dimension that does not fit and the flags behind it.
static inline int linear_check_gpu_dims(const GPT2Config* config, const LinearPrecision* p, int B, int T, char* err,
                                        size_t errlen) {
    if (p->precision != PRECISION_FP8) { return 0; }
    long long BT = (long long)B * T;
    int head_size = config->channels / config->num_heads;
    if (p->fp8_attention && (head_size % 16 != 0 || head_size > 256)) {
        snprintf(err, errlen, "-fp8_attention %d runs cuDNN's FP8 attention, which on Hopper needs a head size C/NH "
                 "that is a multiple of 16 up to 256 (C %d, NH %d: %d)", p->fp8_attention, config->channels,
                 config->num_heads, head_size);
        return -1;
    }
    if (!fp8_recipe_is_block_scaled(p->recipe)) {
        if (config->channels % 64 != 0 || BT % 64 != 0) {
            snprintf(err, errlen, "fp8 on the GPU needs C and B*T to be multiples of 64 (C %d, B*T %lld)",
                     config->channels, BT);
            return -1;
        }
        return 0;
    }
    int blockwise = p->recipe->scaling == FP8_SCALING_BLOCKWISE;
    const char* recipe = fp8_scaling_recipe_name(p->recipe->scaling);
    // the names of a module's widths and of the flags that set them
    static const char* const in_names[LINEARS_PER_BLOCK] = {"C", "C", "C", "4C"};
    static const char* const out_names[LINEARS_PER_BLOCK] = {"3C", "C", "4C", "C"};
    char tokens_why[64], channels_why[32], vocab_why[80];
    snprintf(tokens_why, sizeof(tokens_why), "-b %d -t %d", B, T);
    snprintf(channels_why, sizeof(channels_why), "-C %d", config->channels);
    snprintf(vocab_why, sizeof(vocab_why), "the vocabulary %d padded; -fp8_lm_head 0", config->vocab_size);
    int width_multiple = blockwise ? 16 : 8;  // the GEMMs' 16 (blockwise); the casts' 16-byte loads (mxfp8)
    for (int module = 0; module < linear_num_modules(config->num_layers); module++) {
        if (!linear_is_fp8(p, module)) { continue; }
        LinearLayout ll = linear_layout(config, module);
        int is_head = module == linear_lm_head(config->num_layers), kind = module % LINEARS_PER_BLOCK;
        // a module's three dimensions, each the reduction dimension of one of its GEMMs
        struct { const char* name; long long size; const char* why; LinearGemm reduced_by; } dims[3] = {
            {is_head ? "C" : in_names[kind], ll.IC, channels_why, LINEAR_GEMM_FPROP},
            {is_head ? "the padded vocabulary Vp" : out_names[kind], ll.OC, is_head ? vocab_why : channels_why,
             LINEAR_GEMM_DGRAD},
            {"B*T", BT, tokens_why, LINEAR_GEMM_WGRAD}};
        for (int d = 0; d < 3; d++) {
            int multiple = dims[d].reduced_by == LINEAR_GEMM_WGRAD ? 16 : width_multiple;
            if (dims[d].size % multiple != 0) {
                snprintf(err, errlen, "-fp8_recipe %s on the GPU needs %s to be a multiple of %d (%s): %s is %lld (%s)",
                         recipe, dims[d].reduced_by == LINEAR_GEMM_WGRAD ? "B*T" : "every FP8 module's width",
                         multiple, blockwise ? "cuBLASLt's FP8 GEMMs and the block casts' tiles"
                                             : "the block casts' 16-byte loads and 16-row tiles",
                         dims[d].name, dims[d].size, dims[d].why);
                return -1;
            }
        }
    }
    return 0;
}

// ----------------------------------------------------------------------------
// the FP8 diagnostics file (fp8_diag.tsv): one block per diagnostics step, the rows of every FP8 module

// One block of lines, the rows of every FP8 module in module order (fp8/diag.h says what a row holds;
// block_scale_range NULL for the per-tensor recipes). The caller resets stats and block_scale_range.
static inline void fp8_diag_write_block(FILE* f, int step, const Fp8Meta* meta, const LinearPrecision* lp,
                                        const float* last_amax, const float* window_amax, const Fp8QuantStats* stats,
                                        const Fp8BlockScaleRange* block_scale_range) {
    int linears = linear_num_modules(lp->num_layers);
    for (int module = 0; module < meta->num_modules; module++) {
        if (module >= linears) {  // FP8 attention's modules, one per block
            if (!attention_is_fp8(lp, module - linears)) { continue; }
            fp8_diag_write_module(f, step, meta, module, module - linears, "attention", fp8_diag_attention_tensors,
                                  last_amax, window_amax, stats, block_scale_range);
            continue;
        }
        if (!linear_is_fp8(lp, module)) { continue; }
        int is_head = module == linear_lm_head(lp->num_layers);
        fp8_diag_write_module(f, step, meta, module, is_head ? -1 : module / LINEARS_PER_BLOCK,
                              is_head ? "lm_head" : linear_names[module % LINEARS_PER_BLOCK], fp8_diag_linear_tensors,
                              last_amax, window_amax, stats, block_scale_range);
    }
    fflush(f);
}

#endif  // GPTFP8_LINEAR_H
