/*
llmc/memory_plan.h — the GPU trainer's device memory, planned on the host before anything is allocated: the size of
every device buffer in bytes, grouped as the start-up report shows them (parameters, gradients, optimizer state,
activations, attention, FP8 buffers, workspaces). gpt2_gpu_allocate_buffers in train_gpt_fp8.cu allocates exactly
the buffers of this plan, walking it, so the printed estimate and the allocation cannot drift apart; the trainer
refuses to start, in one line that says what to change, when the plan does not fit the GPU's free memory.

Plain C on the host (no CUDA): llmc/test_memory_plan.c checks the arithmetic on the CPU, e.g. that d48 (GPT-2 1.5B)
at B=16, T=1024 fits one 80 GB GPU in BF16 and in FP8 with cuDNN attention, and what B=64 would need.

What changes the activations (B*T rows of C = channels, L layers; bf16 = 2 bytes):
  stored per layer for the backward: qkv 3C, atty C, residual2 C, residual3 C, fch 4C, and
    ln1 C + ln2 C           unless -r 2 (LayerNorm recomputed from the residual and the saved mean/rstd: one layer's)
    fch_gelu 4C             unless -r 1 or 2 (GELU recomputed from fch: one layer's buffer)
  FP8 with delayed, current or blockwise scaling: an FP8 wgrad reads the FP8 x^T (1 byte) its forward's cast kept, so
    the bf16 input of qkv, fc, fcproj (ln1, ln2, fch_gelu: 2 bytes) stays only for the layers whose wgrad is BF16; at
    -r 0, per layer 7C bytes of x^T (qkv C, attproj C, fc C, fcproj 4C) instead of 12C of bf16; blockwise adds the
    copies' VEC128 scales, one float per 128 tokens of a channel (1/32 byte an element). An input the recompute drops
    keeps no x^T either: its backward makes it again and casts it (see llmc/linear.h's linear_keeps_input_t). mxfp8
    keeps the bf16 inputs (its columnwise copy, dequantized bf16 for the emulated GEMMs, is as large as the input)
  attention: plain keeps att (B, NH, T, T) per layer; cuDNN keeps the softmax statistics (B, NH, T) fp32 per layer
*/
#ifndef GPTFP8_MEMORY_PLAN_H
#define GPTFP8_MEMORY_PLAN_H

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "../fp8/current.h"
#include "args.h"  // the attention choice (ATTENTION_PLAIN, ATTENTION_CUDNN)
#include "gpt2.h"
#include "linear.h"
#include "zero.h"

typedef enum {
    MEMORY_PARAMETERS = 0,
    MEMORY_GRADIENTS,
    MEMORY_OPTIMIZER,
    MEMORY_ACTIVATIONS,
    MEMORY_ATTENTION,
    MEMORY_FP8,
    MEMORY_WORKSPACES,
    MEMORY_GROUPS
} MemoryGroup;

static const char* memory_group_names[MEMORY_GROUPS] = {"parameters", "gradients", "optimizer state", "activations",
                                                        "attention", "fp8 buffers", "workspaces"};

// Every device buffer of the GPU trainer. A buffer of size 0 is not allocated (its pointer stays NULL): the
// configuration does not use it.
typedef enum {
    // parameters, gradients, optimizer state (ZeRO-1 shards the last three)
    GPU_PARAMS = 0,    // (padded) bf16 weights, every rank all of them
    GPU_GRADS,         // (padded) fp32
    GPU_MASTER,        // (shard_size) fp32 master weights
    GPU_ADAM_M,        // (shard_size) fp32
    GPU_ADAM_V,        // (shard_size) fp32
    // activations
    GPU_ENCODED,       // (B, T, C)
    GPU_LN1,           // (L, B, T, C), or fewer layers' (linear_input_slice): one with -r 2
    GPU_LN1_MEAN,      // (L, B, T) fp32
    GPU_LN1_RSTD,      // (L, B, T) fp32
    GPU_QKV,           // (L, B, T, 3C)
    GPU_ATTY,          // (L, B, T, C)
    GPU_RESIDUAL2,     // (L, B, T, C)
    GPU_LN2,           // (L, B, T, C), or fewer layers' as ln1
    GPU_LN2_MEAN,      // (L, B, T) fp32
    GPU_LN2_RSTD,      // (L, B, T) fp32
    GPU_FCH,           // (L, B, T, 4C)
    GPU_FCH_GELU,      // (L, B, T, 4C), or fewer layers': one with -r 1 or 2
    GPU_RESIDUAL3,     // (L, B, T, C)
    GPU_LNF,           // (B, T, C)
    GPU_LNF_MEAN,      // (B, T) fp32
    GPU_LNF_RSTD,      // (B, T) fp32
    GPU_LOGITS,        // (B, T, Vp), dlogits in training
    GPU_LOSSES,        // (B, T) fp32
    GPU_PROJ_OUT,      // (B, T, C)
    // attention
    GPU_ATT,                // plain: (L, B, NH, T, T)
    GPU_ATTENTION_Q,        // plain: (B, NH, T, HS) scratch, and K, V, Y alike
    GPU_ATTENTION_K,
    GPU_ATTENTION_V,
    GPU_ATTENTION_Y,
    GPU_ATTENTION_PREATT,   // plain: (B, NH, T, T)
    GPU_ATTENTION_DQ,       // plain: (B, NH, T, HS), and DK, DV alike
    GPU_ATTENTION_DK,
    GPU_ATTENTION_DV,
    GPU_ATTENTION_STATS,    // cuDNN: (L, stats_layer_floats) fp32, the (B, NH, T) softmax statistics per layer
    GPU_ATTENTION_WORKSPACE,  // cuDNN: its workspace where it is larger than cuBLASLt's (else it shares that one)
    GPU_ATTENTION_QKV_FP8,    // FP8 attention: (B, T, 3C) the E4M3 q, k, v of the layer running, one byte each
    GPU_ATTENTION_OUT_FP8,    // FP8 attention: (B, T, C) its E4M3 output
    GPU_ATTENTION_FP8_CELLS,  // FP8 attention: (L, 4, 4) fp32, each layer's scale_s, scale_o, amax_s, amax_o 16 bytes
                              // apart (cuDNN takes 16-byte-aligned scalars)
    // FP8
    GPU_FP8_META,      // amax histories, scales, scale_invs (Fp8Meta.num_floats) fp32
    GPU_FP8_GEMM_SCALE_INV,  // per-tensor recipes: (num_slots, 4) fp32, each scale_inv 16 bytes from the next, where
                             // cuBLASLt reads it (current scaling: (2, num_slots, 4), the evaluation casts' second)
    GPU_FP8_STATS,     // (num_slots, 3) uint64 diagnostics counters
    GPU_FP8_DIAG_SAVED,  // (num_slots, 4) uint64: the counters and the block scale ranges before the end of step's
                         // weight casts, which a step the gradient norm skips on the device puts back
    GPU_FP8_DIAG_AMAX,  // (2, num_slots) fp32: each slot's step amax as the last update saw it, and its window amax
    // the FP8 codes, one byte each, every row as long as the k of the GEMM reading it (blockwise: linear_fp8_gemm_k
    // pads a k off 128 to whole blocks, written as 0 codes; written "k(n)" below, n elsewhere)
    GPU_WEIGHT_FP8,    // every FP8 module's W (OC, k(IC)) (fp8_weight_layout's GPU codes)
    GPU_WEIGHT_T_FP8,  // and W^T (IC, k(OC))
    GPU_X_FP8,         // (B*T, k(widest input of a module whose fprop or wgrad is FP8))
    GPU_X_T_FP8,       // (widest input of an FP8 wgrad that casts x^T in the backward, k(B*T))
    GPU_INPUT_T_FP8,   // every x^T (IC, k(B*T)) the forward keeps for an FP8 wgrad (fp8_input_t_layout)
    GPU_DY_FP8,        // (B*T, k(widest output of a module whose dgrad or wgrad is FP8))
    GPU_DY_T_FP8,      // its transpose (widest output, k(B*T))
    GPU_WEIGHT_SCALE_INV,    // blockwise: every FP8 module's W scale_invs, BLK128x128 layout (fp8_weight_scale_layout)
    GPU_WEIGHT_T_SCALE_INV,  // blockwise: and W^T's
    GPU_X_SCALE_INV,         // blockwise: x's rowwise scale_invs, VEC128 layout of (B*T, widest input)
    GPU_X_T_SCALE_INV,       // blockwise: x's columnwise ones, VEC128 of (widest input of an FP8 wgrad, B*T)
    GPU_DY_SCALE_INV,        // blockwise: dy's rowwise, VEC128 of (B*T, widest output)
    GPU_DY_T_SCALE_INV,      // blockwise: dy's columnwise, VEC128 of (widest output, B*T)
    GPU_INPUT_T_SCALE_INV,   // blockwise: every kept x^T's VEC128 scales (fp8_input_t_scale_layout)
    GPU_WEIGHT_DEQUANTIZED,             // mxfp8: every FP8 module's W cast in 1x32 blocks, dequantized, bf16
    GPU_WEIGHT_DEQUANTIZED_COLUMNWISE,  // mxfp8: and in 32x1 blocks (dgrad's), bf16
    GPU_X_DEQUANTIZED,                  // mxfp8: (B*T, widest input) bf16, x's cast (either copy) dequantized
    GPU_DY_DEQUANTIZED,                 // mxfp8: (B*T, widest output) bf16, dy's rowwise cast (dgrad's) dequantized
    GPU_DY_DEQUANTIZED_COLUMNWISE,      // mxfp8: (B*T, widest output of an FP8 wgrad) bf16, its columnwise (wgrad's)
    GPU_FP8_BLOCK_SCALE_RANGE,  // block recipes: (num_slots, 2) uint32, the smallest and largest block scale's bits
    GPU_FP8_WINDOW_AMAX,  // current scaling and block recipes: (num_slots) fp32, the amax of each slot's last recorded cast
    GPU_FP8_EVAL_SCALES,  // current scaling: (2, num_slots) fp32, scale and scale_inv of evaluation casts
    GPU_AMAX_PARTIALS,    // current scaling: (FP8_AMAX_MAX_BLOCKS) uint32, the amax pass's per-block maxima
    GPU_AMAX_TICKETS,     // current scaling: (1) uint32, the amax pass's ticket counter
    // workspaces: the batch, the backward's scratch, the deterministic reductions, cuBLASLt's workspace
    GPU_INPUTS,            // (B, T) int32
    GPU_TARGETS,           // (B, T) int32
    GPU_BUCKET_POSITIONS,  // (B*T) int32
    GPU_BUCKET_START,      // (B*T + 2) int32: the buckets' starts, then at [B*T + 1] their number
    GPU_BUCKET_TOKEN,      // (B*T) int32
    GPU_COLUMN_PARTIALS,   // (B*T / column_sum_rows, 4C) fp32
    GPU_DRESIDUAL,         // (B, T, C)
    GPU_DBTC,              // (B, T, C)
    GPU_DBTC2,             // (B, T, C)
    GPU_DBT4C,             // (B, T, 4C)
    GPU_DQKV,              // (B, T, 3C)
    GPU_NORM_SQUARED,      // (1) fp32
    GPU_NORM_PARTIALS,     // (norm_blocks) fp32
    GPU_AMAX_DISCARD,      // (1) fp32
    GPU_GEMM_WORKSPACE,    // cuBLASLt's: allocated by gemm_context_init (llmc/gemm.cuh), counted here
    GPU_GEMM_TUNE_SCRATCH, // -gemm_autotune: the largest accumulating GEMM's output, where its timing writes
    NUM_GPU_BUFFERS
} GpuBuffer;

static const MemoryGroup gpu_buffer_group[] = {
    MEMORY_PARAMETERS, MEMORY_GRADIENTS, MEMORY_OPTIMIZER, MEMORY_OPTIMIZER, MEMORY_OPTIMIZER,
    // encoded .. proj_out
    MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS,
    MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS,
    MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS,
    MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS, MEMORY_ACTIVATIONS,
    // att .. attention workspace, FP8 attention's three
    MEMORY_ATTENTION, MEMORY_ATTENTION, MEMORY_ATTENTION, MEMORY_ATTENTION, MEMORY_ATTENTION, MEMORY_ATTENTION,
    MEMORY_ATTENTION, MEMORY_ATTENTION, MEMORY_ATTENTION, MEMORY_ATTENTION, MEMORY_ATTENTION, MEMORY_ATTENTION,
    MEMORY_ATTENTION, MEMORY_ATTENTION,
    // fp8 (meta, the GEMMs' scale_invs .. dy_t, the block recipes' thirteen, then current scaling's four)
    MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8,
    MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8,
    MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8, MEMORY_FP8,
    // inputs .. gemm workspace, the GEMM timing's scratch
    MEMORY_WORKSPACES, MEMORY_WORKSPACES, MEMORY_WORKSPACES, MEMORY_WORKSPACES, MEMORY_WORKSPACES, MEMORY_WORKSPACES,
    MEMORY_WORKSPACES, MEMORY_WORKSPACES, MEMORY_WORKSPACES, MEMORY_WORKSPACES, MEMORY_WORKSPACES, MEMORY_WORKSPACES,
    MEMORY_WORKSPACES, MEMORY_WORKSPACES, MEMORY_WORKSPACES, MEMORY_WORKSPACES};
static_assert(sizeof(gpu_buffer_group) / sizeof(gpu_buffer_group[0]) == NUM_GPU_BUFFERS,
              "every GpuBuffer has a group");

// What the plan depends on. The trainer fills it from its arguments and the libraries it set up (cuDNN's
// workspace is known only once its graphs are built); the CPU test fills it by hand.
typedef struct {
    GPT2Config config;
    int B, T;
    LinearPrecision linear;       // which modules and GEMMs run in FP8 (precision BF16: none)
    int recompute;                // -r 0|1|2
    int attention;                // ATTENTION_PLAIN | ATTENTION_CUDNN
    ZeroShard shard;              // this rank's optimizer shard; shard.padded is the parameter buffers' length
    size_t fp8_meta_floats;       // Fp8Meta.num_floats, 0 without FP8
    int fp8_slots;                // Fp8Meta.num_slots, 0 without FP8
    size_t gemm_workspace_bytes;  // cuBLASLt's workspace (GEMM_WORKSPACE_BYTES)
    size_t attention_workspace_bytes;  // cuDNN's, the largest its graphs ask for (0 with plain attention)
    int column_sum_rows, norm_blocks;  // the deterministic reductions' chunking (llmc/cuda_common.cuh, llmc/global_norm.cuh)
    int gemm_autotune;            // -gemm_autotune N: N >= 2 times the GEMMs' algorithms (llmc/gemm.cuh)
} GpuMemoryInputs;

typedef struct {
    size_t bytes[NUM_GPU_BUFFERS];
} GpuMemoryPlan;

// Device memory the estimate leaves free for what it cannot count: the CUDA libraries' own lazily loaded kernels and
// buffers (cuBLAS, cuDNN, NCCL) and the allocator's rounding of each buffer to its page size.
#define GPU_MEMORY_HEADROOM_BYTES ((size_t)512 << 20)

// Floats per layer of the cuDNN softmax statistics (B, NH, T): rounded up to a multiple of 64 so that every layer's
// slice starts 256-byte aligned, as cuDNN's kernels assume for their tensors.
static inline size_t attention_stats_layer_floats(int B, int NH, int T) {
    size_t n = (size_t)B * NH * T;
    return (n + 63) / 64 * 64;
}

// FP8 attention's per-layer scalars for cuDNN (GPU_ATTENTION_FP8_CELLS), each in a 16-byte cell of its own: the
// softmax output's scale, the output's scale, then the amaxes the graph writes of both.
enum { ATTENTION_FP8_SCALE_S, ATTENTION_FP8_SCALE_O, ATTENTION_FP8_AMAX_S, ATTENTION_FP8_AMAX_O, ATTENTION_FP8_CELLS };

// Columns per row of the B*T-row FP8 cast scratch, the widest any FP8 GEMM needs: x holds the forward's input cast
// (for an FP8 fprop, or to record the input's amax for an FP8 wgrad), x_t the input's transpose for an FP8 wgrad that
// casts it in the backward (mxfp8's, or one whose input the recompute drops: the others read the x^T their forward
// kept, GPU_INPUT_T_FP8), dy the output gradient's cast and its transpose (dgrad or wgrad), dy_t mxfp8's
// columnwise copy of it (an FP8 wgrad's). The LM head (Vp columns) counts only when it runs in FP8 (-fp8_lm_head 1).
typedef struct {
    size_t x, x_t, dy, dy_t;
} Fp8ScratchWidths;

static inline Fp8ScratchWidths fp8_scratch_widths(const GPT2Config* config, const LinearPrecision* p, int recompute) {
    Fp8ScratchWidths w = {0, 0, 0, 0};
    int num_modules = linear_num_modules(config->num_layers);
    for (int module = 0; module < num_modules; module++) {
        int fprop = linear_gemm_is_fp8(p, module, LINEAR_GEMM_FPROP);
        int dgrad = linear_gemm_is_fp8(p, module, LINEAR_GEMM_DGRAD);
        int wgrad = linear_gemm_is_fp8(p, module, LINEAR_GEMM_WGRAD);
        if (!fprop && !dgrad && !wgrad) { continue; }
        LinearLayout ll = linear_layout(config, module);
        if ((fprop || wgrad) && (size_t)ll.IC > w.x) { w.x = (size_t)ll.IC; }
        if (wgrad && !linear_keeps_input_t(p, module, recompute) && (size_t)ll.IC > w.x_t) { w.x_t = (size_t)ll.IC; }
        if ((dgrad || wgrad) && (size_t)ll.OC > w.dy) { w.dy = (size_t)ll.OC; }
        if (wgrad && (size_t)ll.OC > w.dy_t) { w.dy_t = (size_t)ll.OC; }
    }
    return w;
}

// The out-of-place output where -gemm_autotune times an accumulating GEMM (its own output must keep its values,
// llmc/gemm.cuh): the largest such output, every module's wgrad (OC, IC) fp32 (the LM head's, Vp x C, at GPT-2's
// sizes) and, blockwise, an FP8 fprop with a bias, which accumulates onto the bias put in its (B*T, OC) bf16 output.
static inline size_t gemm_tune_scratch_bytes(const GPT2Config* config, const LinearPrecision* p, size_t BT) {
    size_t largest = 0;
    int block_fprop_bias = p->precision == PRECISION_FP8 && p->recipe && p->recipe->scaling == FP8_SCALING_BLOCKWISE;
    for (int module = 0; module < linear_num_modules(config->num_layers); module++) {
        LinearLayout ll = linear_layout(config, module);
        size_t wgrad = (size_t)ll.OC * (size_t)ll.IC * 4;
        size_t fprop = block_fprop_bias && ll.has_bias && linear_gemm_is_fp8(p, module, LINEAR_GEMM_FPROP)
                           ? BT * (size_t)ll.OC * 2 : 0;
        if (wgrad > largest) { largest = wgrad; }
        if (fprop > largest) { largest = fprop; }
    }
    return largest;
}

static inline void gpu_memory_plan(GpuMemoryPlan* plan, const GpuMemoryInputs* in) {
    memset(plan, 0, sizeof(*plan));
    size_t* b = plan->bytes;
    const GPT2Config* c = &in->config;
    size_t L = (size_t)c->num_layers, C = (size_t)c->channels, NH = (size_t)c->num_heads, Vp = (size_t)c->padded_vocab_size;
    size_t B = (size_t)in->B, T = (size_t)in->T, BT = B * T, BTC = BT * C;
    const size_t bf16 = 2, fp32 = 4, i32 = 4;
    // the layer slices of ln1, ln2 (-r 2 recomputes them) and fch_gelu (-r 1 or 2): L without FP8 or recompute, fewer
    // where the backward reads the FP8 transpose the forward kept instead (llmc/linear.h's linear_input_slice)
    int ln1_slices, ln2_slices, gelu_slices;
    linear_input_slice(&in->linear, LINEAR_QKV, in->recompute, 0, &ln1_slices);
    linear_input_slice(&in->linear, LINEAR_FC, in->recompute, 0, &ln2_slices);
    linear_input_slice(&in->linear, LINEAR_FCPROJ, in->recompute, 0, &gelu_slices);

    b[GPU_PARAMS] = in->shard.padded * bf16;
    b[GPU_GRADS] = in->shard.padded * fp32;
    b[GPU_MASTER] = b[GPU_ADAM_M] = b[GPU_ADAM_V] = in->shard.shard_size * fp32;

    b[GPU_ENCODED] = BTC * bf16;
    b[GPU_LN1] = (size_t)ln1_slices * BTC * bf16;
    b[GPU_LN2] = (size_t)ln2_slices * BTC * bf16;
    b[GPU_LN1_MEAN] = b[GPU_LN1_RSTD] = b[GPU_LN2_MEAN] = b[GPU_LN2_RSTD] = L * BT * fp32;
    b[GPU_QKV] = L * BTC * 3 * bf16;
    b[GPU_ATTY] = b[GPU_RESIDUAL2] = b[GPU_RESIDUAL3] = L * BTC * bf16;
    b[GPU_FCH] = L * BTC * 4 * bf16;
    b[GPU_FCH_GELU] = (size_t)gelu_slices * BTC * 4 * bf16;
    b[GPU_LNF] = BTC * bf16;
    b[GPU_LNF_MEAN] = b[GPU_LNF_RSTD] = BT * fp32;
    b[GPU_LOGITS] = BT * Vp * bf16;
    b[GPU_LOSSES] = BT * fp32;
    b[GPU_PROJ_OUT] = BTC * bf16;

    if (in->attention == ATTENTION_PLAIN) {
        // (L, B, NH, T, T) is the one size flags can push past 64 bits: it saturates (size_mul), as do the totals
        b[GPU_ATT] = size_mul(size_mul(L * B, NH), size_mul(T, T * bf16));
        b[GPU_ATTENTION_Q] = b[GPU_ATTENTION_K] = b[GPU_ATTENTION_V] = b[GPU_ATTENTION_Y] = BTC * bf16;
        b[GPU_ATTENTION_PREATT] = size_mul(B * NH, size_mul(T, T * bf16));
        b[GPU_ATTENTION_DQ] = b[GPU_ATTENTION_DK] = b[GPU_ATTENTION_DV] = BTC * bf16;
    } else {
        b[GPU_ATTENTION_STATS] = L * attention_stats_layer_floats(in->B, c->num_heads, in->T) * fp32;
        // one stream runs the GEMMs and the attention one after the other, so cuDNN can use cuBLASLt's workspace
        b[GPU_ATTENTION_WORKSPACE] = in->attention_workspace_bytes > in->gemm_workspace_bytes ? in->attention_workspace_bytes : 0;
        if (in->linear.precision == PRECISION_FP8 && in->linear.fp8_attention) {  // (only cuDNN's runs it)
            b[GPU_ATTENTION_QKV_FP8] = BTC * 3;
            b[GPU_ATTENTION_OUT_FP8] = BTC;
            b[GPU_ATTENTION_FP8_CELLS] = L * ATTENTION_FP8_CELLS * 4 * fp32;
        }
    }

    if (in->linear.precision == PRECISION_FP8) {
        b[GPU_FP8_META] = in->fp8_meta_floats * fp32;
        b[GPU_FP8_STATS] = (size_t)in->fp8_slots * 3 * sizeof(unsigned long long);
        b[GPU_FP8_DIAG_SAVED] = (size_t)in->fp8_slots * 4 * sizeof(unsigned long long);
        b[GPU_FP8_DIAG_AMAX] = 2 * (size_t)in->fp8_slots * fp32;
        Fp8ScalingRecipe scaling = in->linear.recipe ? in->linear.recipe->scaling : FP8_SCALING_DELAYED;
        Fp8ScratchWidths w = fp8_scratch_widths(c, &in->linear, in->recompute);
        size_t weight_elements = fp8_weight_layout(c, &in->linear, NULL, 1);
        if (scaling == FP8_SCALING_MXFP8) {  // emulated: the casts' values dequantized to bf16, BF16 GEMMs
            b[GPU_WEIGHT_DEQUANTIZED] = b[GPU_WEIGHT_DEQUANTIZED_COLUMNWISE] = weight_elements * bf16;
            b[GPU_X_DEQUANTIZED] = BT * w.x * bf16;
            b[GPU_DY_DEQUANTIZED] = BT * w.dy * bf16;
            b[GPU_DY_DEQUANTIZED_COLUMNWISE] = BT * w.dy_t * bf16;  // (one cast makes both of dy's copies)
        } else {  // FP8 codes (and, blockwise, their scale_inv arrays), rows as long as the GEMMs' k (blockwise pads)
            const LinearPrecision* lp = &in->linear;
            size_t BT_k = linear_fp8_gemm_k(lp, BT);  // the columnwise copies' rows: wgrad's k
            b[GPU_WEIGHT_FP8] = b[GPU_WEIGHT_T_FP8] = weight_elements;
            b[GPU_X_FP8] = BT * linear_fp8_gemm_k(lp, w.x);
            b[GPU_X_T_FP8] = BT_k * w.x_t;
            b[GPU_INPUT_T_FP8] = size_mul(BT_k, fp8_input_t_layout(c, lp, in->recompute, NULL));
            b[GPU_DY_FP8] = BT * linear_fp8_gemm_k(lp, w.dy);
            b[GPU_DY_T_FP8] = BT_k * w.dy;
        }
        if (scaling == FP8_SCALING_BLOCKWISE) {
            b[GPU_WEIGHT_SCALE_INV] = fp8_weight_scale_layout(c, &in->linear, NULL, 0) * fp32;
            b[GPU_WEIGHT_T_SCALE_INV] = fp8_weight_scale_layout(c, &in->linear, NULL, 1) * fp32;
            b[GPU_X_SCALE_INV] = fp8_vec128_scale_floats(BT, w.x) * fp32;
            b[GPU_X_T_SCALE_INV] = fp8_vec128_scale_floats(w.x_t, BT) * fp32;
            b[GPU_DY_SCALE_INV] = fp8_vec128_scale_floats(BT, w.dy) * fp32;
            b[GPU_DY_T_SCALE_INV] = fp8_vec128_scale_floats(w.dy, BT) * fp32;
            b[GPU_INPUT_T_SCALE_INV] = fp8_input_t_scale_layout(c, &in->linear, in->recompute, BT, NULL) * fp32;
        }
        if (scaling == FP8_SCALING_BLOCKWISE || scaling == FP8_SCALING_MXFP8) {
            b[GPU_FP8_BLOCK_SCALE_RANGE] = 2 * (size_t)in->fp8_slots * sizeof(unsigned int);
            b[GPU_FP8_WINDOW_AMAX] = (size_t)in->fp8_slots * fp32;
        }
        if (scaling == FP8_SCALING_DELAYED || scaling == FP8_SCALING_CURRENT) {
            b[GPU_FP8_GEMM_SCALE_INV] = (scaling == FP8_SCALING_CURRENT ? 2 : 1) * (size_t)in->fp8_slots * 4 * fp32;
        }
        if (scaling == FP8_SCALING_CURRENT) {
            b[GPU_FP8_WINDOW_AMAX] = (size_t)in->fp8_slots * fp32;
            b[GPU_FP8_EVAL_SCALES] = 2 * (size_t)in->fp8_slots * fp32;
            b[GPU_AMAX_PARTIALS] = FP8_AMAX_MAX_BLOCKS * sizeof(unsigned int);
            b[GPU_AMAX_TICKETS] = sizeof(unsigned int);
        }
    }

    b[GPU_INPUTS] = b[GPU_TARGETS] = b[GPU_BUCKET_POSITIONS] = b[GPU_BUCKET_TOKEN] = BT * i32;
    b[GPU_BUCKET_START] = (BT + 2) * i32;
    b[GPU_COLUMN_PARTIALS] = (BT + (size_t)in->column_sum_rows - 1) / (size_t)in->column_sum_rows * 4 * C * fp32;
    b[GPU_DRESIDUAL] = b[GPU_DBTC] = b[GPU_DBTC2] = BTC * bf16;
    b[GPU_DBT4C] = BTC * 4 * bf16;
    b[GPU_DQKV] = BTC * 3 * bf16;
    b[GPU_NORM_SQUARED] = b[GPU_AMAX_DISCARD] = fp32;
    b[GPU_NORM_PARTIALS] = (size_t)in->norm_blocks * fp32;
    b[GPU_GEMM_WORKSPACE] = in->gemm_workspace_bytes;
    b[GPU_GEMM_TUNE_SCRATCH] = in->gemm_autotune >= 2 ? gemm_tune_scratch_bytes(c, &in->linear, BT) : 0;
}

static inline size_t gpu_memory_group_bytes(const GpuMemoryPlan* plan, MemoryGroup group) {
    size_t total = 0;
    for (int i = 0; i < NUM_GPU_BUFFERS; i++) {
        if (gpu_buffer_group[i] == group) { total = size_add(total, plan->bytes[i]); }
    }
    return total;
}

static inline size_t gpu_memory_total(const GpuMemoryPlan* plan) {
    size_t total = 0;
    for (int i = 0; i < NUM_GPU_BUFFERS; i++) { total = size_add(total, plan->bytes[i]); }
    return total;
}

static inline double bytes_to_gib(size_t bytes) { return (double)bytes / (double)((size_t)1 << 30); }

// Whether the plan of `in` fits `available` bytes (the GPU's free memory), the headroom kept.
static inline int gpu_memory_fits(const GpuMemoryInputs* in, size_t available) {
    GpuMemoryPlan plan;
    gpu_memory_plan(&plan, in);
    return size_add(gpu_memory_total(&plan), GPU_MEMORY_HEADROOM_BYTES) <= available;
}

// The largest micro-batch B' <= in->B that fits `available` and still divides the total batch (total_batch tokens
// a multiple of B' * T * num_processes, so -d stays and gradient accumulation makes up the difference), with B' * T
// what the FP8 recipe's casts and GEMMs take on the GPU (llmc/linear.h's linear_check_gpu_dims); 0 if none. cuDNN's
// workspace is kept at the size measured for in->B, an upper bound for the smaller batches.
static inline int gpu_memory_largest_batch(const GpuMemoryInputs* in, size_t available, long long total_batch,
                                           int num_processes) {
    GpuMemoryInputs trial = *in;
    for (int b = in->B; b >= 1; b--) {
        long long tokens = (long long)b * in->T * num_processes;
        if (total_batch % tokens != 0) { continue; }
        char why[512];  // FP8: B*T a multiple of what the recipe's casts and GEMMs take on the GPU
        if (linear_check_gpu_dims(&in->config, &in->linear, b, in->T, why, sizeof(why))) { continue; }
        trial.B = b;
        if (gpu_memory_fits(&trial, available)) { return b; }
    }
    return 0;
}

// The start-up report: one line of the total, then one per group, in the start-up box's "| name | value" layout.
static inline void gpu_memory_print(FILE* f, const GpuMemoryPlan* plan, const GpuMemoryInputs* in, size_t free_bytes) {
    static const char* what[MEMORY_GROUPS] = {
        "bf16 weights", "fp32", "fp32 masters, AdamW m and v", "stored for the backward, logits",
        "", "weights and transposes, cast scratch, scaling state", "backward scratch, batch, cuBLASLt workspace"};
    fprintf(f, "| memory estimate       | %.2f GiB on this GPU (%.2f GiB free, %.2f GiB kept for the libraries)\n",
            bytes_to_gib(gpu_memory_total(plan)), bytes_to_gib(free_bytes), bytes_to_gib(GPU_MEMORY_HEADROOM_BYTES));
    for (int g = 0; g < MEMORY_GROUPS; g++) {
        char detail[128];
        if (g == MEMORY_ACTIVATIONS) {
            snprintf(detail, sizeof(detail), "%s (B %d, T %d, -r %d)", what[g], in->B, in->T, in->recompute);
        } else if (g == MEMORY_ATTENTION) {
            snprintf(detail, sizeof(detail), "%s", in->attention == ATTENTION_PLAIN
                                                       ? "plain: (B, NH, T, T) per layer + scratch"
                                                       : "cuDNN: softmax statistics per layer + workspace");
        } else {
            snprintf(detail, sizeof(detail), "%s", what[g]);
        }
        fprintf(f, "|   %-19s | %8.2f GiB  %s\n", memory_group_names[g], bytes_to_gib(gpu_memory_group_bytes(plan, (MemoryGroup)g)),
                detail);
    }
}

// Appends one "what to change" option to `change` (capacity cap), joined by ", or ".
static inline void memory_option_append(char* change, size_t cap, const char* option) {
    size_t used = strlen(change);
    snprintf(change + used, cap - used, "%s%s", used ? ", or " : "use ", option);
}

// The one-line refusal when the plan does not fit `available` bytes: what it needs, what is free, and what to change
// (a smaller -b that fits, -r 2, -attn cudnn, or more GPUs when even -b 1 does not fit). cudnn_available: this
// build has cuDNN attention.
static inline void gpu_memory_refusal(char* out, size_t outlen, const GpuMemoryInputs* in, size_t available,
                                      long long total_batch, int num_processes, int cudnn_available) {
    GpuMemoryPlan plan;
    gpu_memory_plan(&plan, in);
    char change[384] = "", option[160];
    int b = gpu_memory_largest_batch(in, available, total_batch, num_processes);
    if (b > 0) {
        snprintf(option, sizeof(option), "-b %d (-d %lld stays: %lld accumulation steps)", b, total_batch,
                 total_batch / ((long long)b * in->T * num_processes));
        memory_option_append(change, sizeof(change), option);
    }
    GpuMemoryInputs other = *in;
    other.recompute = 2;
    if (in->recompute < 2 && gpu_memory_fits(&other, available)) {
        memory_option_append(change, sizeof(change), "-r 2 (recompute GELU and LayerNorm in the backward)");
    }
    other = *in;
    other.attention = ATTENTION_CUDNN;
    other.attention_workspace_bytes = 0;  // unknown before its graphs are built
    if (in->attention == ATTENTION_PLAIN && cudnn_available && gpu_memory_fits(&other, available)) {
        memory_option_append(change, sizeof(change), "-attn cudnn (no (B, NH, T, T) matrices)");
    }
    if (!change[0]) {
        size_t state = gpu_memory_group_bytes(&plan, MEMORY_PARAMETERS) + gpu_memory_group_bytes(&plan, MEMORY_GRADIENTS) +
                       gpu_memory_group_bytes(&plan, MEMORY_OPTIMIZER);
        snprintf(change, sizeof(change),
                 "even -b 1 does not fit; parameters, gradients and optimizer state alone take %.2f GiB: run on more "
                 "GPUs (ZeRO-1 shards the masters and AdamW moments) or train a smaller model", bytes_to_gib(state));
    }
    snprintf(out, outlen, "not enough GPU memory: this run needs %.2f GiB by the estimate (activations %.2f GiB at -b %d "
             "-t %d -r %d) + %.2f GiB headroom, and %.2f GiB are free: %s",
             bytes_to_gib(gpu_memory_total(&plan)), bytes_to_gib(gpu_memory_group_bytes(&plan, MEMORY_ACTIVATIONS)), in->B,
             in->T, in->recompute, bytes_to_gib(GPU_MEMORY_HEADROOM_BYTES), bytes_to_gib(available), change);
}

#endif  // GPTFP8_MEMORY_PLAN_H
