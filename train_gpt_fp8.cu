/*
train_gpt_fp8.cu — the GPU trainer: the same GPT-2, flags, data, logs and checkpoints as the CPU reference
(train_gpt_fp8.c), on cuBLASLt, with BF16 or FP8 (delayed, current, blockwise or mxfp8 scaling) for the four linear
layers of every block.

Data flow of one FP8 linear layer (module), forward and backward, as in Transformer Engine on Hopper:
  forward   X bf16 --cast(scale[input], amax -> row 0)--> X fp8;  out = gemm(W fp8, X fp8) -> bf16 (+ bias)
  backward  dY bf16 --cast+transpose(scale[grad_output], amax -> row 0)--> dY fp8, dY^T fp8
            X  bf16 --cast+transpose(scale[input], no record: same bytes as the forward's)--> X^T fp8
            dX = gemm(W^T fp8, dY fp8)        dW += gemm(X^T fp8, dY^T fp8) (fp32)
  per step  update every slot (one launch) -> AdamW on fp32 masters -> W bf16 --cast+transpose(new scale)--> W, W^T fp8
Every recipe goes through one cast entry point, linear_cast (TE's quantize dispatch): given which tensor of a module
it makes (the forward's input, the backward's input, the output gradient, the weight: llmc/linear.h's LinearOperand,
the CPU's words) it returns an Fp8Operand, the
bf16 tensor and the FP8 copies the module's FP8 GEMMs read (rowwise for a GEMM reducing over its columns, columnwise,
transposed, for one reducing over its rows), and a recipe's own cast makes those copies: the one switch on the recipe.
linear_forward and linear_backward then read as the CPU's, whatever the recipe: cast, multiply (linear_gemm, on
llmc/gemm.cuh's gemm_multiply), record. With -fp8_recipe current every cast that records is preceded by an amax pass
that leaves the tensor's own scale in its slot (fp8_amax_scale in fp8/quantize.cuh), and the cast and GEMM read it
there; the end-of-step launch only clears row 0; evaluation casts write their scales to scratch cells
(fp8_eval_scales), so they change nothing. With -fp8_recipe blockwise or mxfp8 (fp8/block.h) every cast computes a
scale per block in the kernel (fp8/block_quantize.cuh: one read of the bf16 tensor makes the rowwise and the
columnwise copy it needs): blockwise feeds cuBLASLt's block-scaled GEMMs (compute capability 9.0 and cuBLASLt 12.9+,
checked at start-up), mxfp8 is emulated: its casts' values dequantized to bf16 go through the BF16 GEMMs (no Hopper
GEMM takes E8M0 scales), so it shows MXFP8's accuracy, not its speed.
The BF16 path runs the same GEMMs on bf16 operands. LayerNorm, attention, GELU, residuals and the loss are bf16
kernels, one family a header with its launchers (llmc/encoder.cuh, layernorm.cuh, gelu.cuh, fused_classifier.cuh,
bias.cuh, global_norm.cuh, adamw.cuh); parameter gradients, master weights and AdamW moments are fp32.

Shape: the CPU reference's, function for function. Every function of a step has the CPU's name, arguments in its
order and its buffer names (encoder_forward ... linear_forward, gpt2_forward, gpt2_backward, gpt2_fp8_end_of_step,
gpt2_update, gpt2_save_checkpoint ...), the GPU's extras (scratch, stream) last, and the two mains read the same line
for line; where the GPU must differ (streams, NCCL, the fused classifier, the memory plan) a comment says so.
Attention (-attn): cuDNN's fused flash attention (llmc/cudnn_attention.cpp, the default when built with cuDNN), which
keeps only the softmax statistics (B, NH, T) per layer, or the plain CUDA/cuBLAS one (llmc/attention.cuh), which keeps
the (B, NH, T, T) matrix per layer. Recompute (-r, llm.c's): 1 recomputes GELU in the backward instead of keeping its
output per layer, 2 LayerNorm too (from the residual and the saved mean/rstd); the results are bit-identical. FP8
with delayed, current or blockwise scaling keeps, as TE does, what an FP8 wgrad reads: the forward's cast of a
linear's input writes its transpose in the same pass (blockwise: its columnwise copy, x^T's codes with their 1x128
block scales, cast from the bf16 source), kept (1 byte an element) where the bf16 input (2 bytes) was, which the
backward then neither keeps nor casts again (linear_cast; where -r drops the input, it is remade and cast).
With delayed scaling GELU runs inside the FP8 casts beside it (llmc/gelu_fp8.cuh, TE's fused activation casts): the
forward's in fcproj's input cast, the backward's in fc's grad_output cast, so neither bf16 tensor (B, T, 4C) is
written and read back (gelu_fcproj_forward, gelu_fc_grad_output; the same bytes as the separate kernels). So does
LayerNorm in the input casts of qkv and fc (llmc/layernorm_fp8.cuh, TE's LayerNormLinear): its pass writes the row
statistics, the cast makes the output from them (layernorm_linear_forward). With blockwise scaling the forward's GELU
runs inside fcproj's input block cast (fp8/block_quantize.cuh's gelu cast: both copies from fch in one pass) where
nothing else reads GELU's output (gelu_in_block_cast), and likewise GELU's backward inside fc's grad_output cast
and LayerNorm inside qkv's and fc's input casts. Each residual add rides on the pass of the LayerNorm after it
(residual_layernorm_forward, llm.c's fused residual), in every precision.
Memory: every device buffer is planned first (llmc/memory_plan.h); the plan is printed, checked against the GPU's
free memory (one line saying what to change when it does not fit), then allocated as planned.

Several GPUs: NCCL data parallelism with ZeRO-1 and one amax all-reduce per step (llmc/multi_gpu.cuh). The backward
is deterministic (no float atomics), so the same data gives the same bits, run after run (with the same GEMM
algorithms: -gemm_autotune's choices, kept in the run folder) and across a resume.
The fused casts run with delayed scaling (current scaling takes its scale from the tensor, after it is made), and
blockwise's block casts with GELU, GELU's backward or LayerNorm inside (each block's scale from its own amax inside
the cast).
*/
#include <cuda_bf16.h>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fp8/block.h"
#include "fp8/block_quantize.cuh"
#include "fp8/diag.h"
#include "fp8/meta.h"
#include "fp8/quantize.cuh"
#include "fp8/update.cuh"
#include "llmc/args.h"
#include "llmc/adamw.cuh"
#include "llmc/attention.cuh"
#include "llmc/attention_fp8.cuh"
#include "llmc/bias.cuh"
#include "llmc/checkpoint.h"
#include "llmc/cuda_graph.cuh"
#include "llmc/cudnn_attention.h"
#include "llmc/dataloader.h"
#include "llmc/encoder.cuh"
#include "llmc/fused_classifier.cuh"
#include "llmc/gelu.cuh"
#include "llmc/gelu_fp8.cuh"
#include "llmc/gemm.cuh"
#include "llmc/global_norm.cuh"
#include "llmc/gpu_idle.h"
#include "llmc/layernorm.cuh"
#include "llmc/layernorm_fp8.cuh"
#include "llmc/linear.h"
#include "llmc/memory_plan.h"
#include "llmc/multi_gpu.cuh"
#include "llmc/run.h"
#include "llmc/sampling.h"
#include "llmc/schedule.h"
#include "llmc/tokenizer.h"
#include "llmc/utils.h"
#include "llmc/zero.h"

static cudaDataType_t fp8_cuda_type(Fp8Format f) { return f == FP8_E4M3 ? CUDA_R_8F_E4M3 : CUDA_R_8F_E5M2; }

// ----------------------------------------------------------------------------
// the model on the GPU

// bf16 parameter pointers, in ParameterTensors' order
typedef struct {
    floatX *wte, *wpe, *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb,
        *lnfw, *lnfb;
} ParameterTensorsX;

static void point_parameters_bf16(ParameterTensorsX* p, floatX* memory, const size_t* sizes) {
    floatX** ptrs[NUM_PARAMETER_TENSORS] = {&p->wte,  &p->wpe,      &p->ln1w,     &p->ln1b, &p->qkvw, &p->qkvb,
                                           &p->attprojw, &p->attprojb, &p->ln2w, &p->ln2b, &p->fcw,  &p->fcb,
                                           &p->fcprojw,  &p->fcprojb,  &p->lnfw, &p->lnfb};
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) {
        *(ptrs[i]) = memory;
        memory += sizes[i];
    }
}

// Sizes in llmc/memory_plan.h. ln1, ln2 and fch_gelu (the inputs of qkv, fc and fcproj) hold a slice for each layer
// whose backward reads them, and one slice the others share (layer_input's): with -r 2, ln1 and ln2 hold one slice
// (the backward recomputes each layer's before it uses it), with -r 1 or 2, so does fch_gelu; in FP8 with delayed,
// current or blockwise scaling, a layer whose wgrad reads the FP8 x^T its forward kept (input_t_fp8) needs no slice of
// its own.
typedef struct {
    floatX* encoded;    // (B, T, C)
    floatX* ln1;        // (L, B, T, C), or fewer slices (see above)
    float* ln1_mean;    // (L, B, T)
    float* ln1_rstd;    // (L, B, T)
    floatX* qkv;        // (L, B, T, 3C)
    floatX* atty;       // (L, B, T, C)
    floatX* att;        // plain attention: (L, B, NH, T, T)
    float* attention_stats;  // cuDNN attention: (L, stats_layer_floats) fp32, the softmax statistics (B, NH, T)
    floatX* residual2;  // (L, B, T, C)
    floatX* ln2;        // (L, B, T, C), or fewer slices
    float* ln2_mean;    // (L, B, T)
    float* ln2_rstd;    // (L, B, T)
    floatX* fch;        // (L, B, T, 4C)
    floatX* fch_gelu;   // (L, B, T, 4C), or fewer slices
    floatX* residual3;  // (L, B, T, C)
    floatX* lnf;        // (B, T, C)
    float* lnf_mean;    // (B, T)
    float* lnf_rstd;    // (B, T)
    floatX* logits;     // (B, T, Vp), overwritten by dlogits in training
    float* losses;      // (B, T)
    floatX* proj_out;   // (B, T, C) a projection's output before the residual add
} ActivationTensors;

// Where the casts of one kind of tensor write its FP8 copies (a recipe uses some; the others are NULL, size 0 in the
// memory plan): a linear's input x or its output gradient dy (rows B*T), or a weight (rows OC; every module's at its
// offsets, fp8_operand_buffers_at).
typedef struct {
    uint8_t* codes;         // rowwise: FP8 codes (rows, cols)
    uint8_t* codes_t;       // columnwise: the transpose's codes (cols, rows)
    float* scale_inv;       // blockwise: the rowwise codes' block scale_invs (VEC128; a weight's BLK128x128)
    float* scale_inv_t;     // blockwise: the columnwise codes'
    floatX* dequantized;    // mxfp8 (emulated): the rowwise copy's values dequantized, (rows, cols) bf16
    floatX* dequantized_t;  // mxfp8 (emulated): the columnwise copy's, in the tensor's layout (rows, cols)
} Fp8OperandBuffers;

// One module's part of the weights' buffers: its codes and dequantized values at `offset` elements, its tile scales
// at scale_offset / scale_t_offset floats (NULL stays NULL)
static Fp8OperandBuffers fp8_operand_buffers_at(const Fp8OperandBuffers* all, size_t offset, size_t scale_offset,
                                                size_t scale_t_offset) {
    Fp8OperandBuffers b = {all->codes ? all->codes + offset : NULL, all->codes_t ? all->codes_t + offset : NULL,
                           all->scale_inv ? all->scale_inv + scale_offset : NULL,
                           all->scale_inv_t ? all->scale_inv_t + scale_t_offset : NULL,
                           all->dequantized ? all->dequantized + offset : NULL,
                           all->dequantized_t ? all->dequantized_t + offset : NULL};
    return b;
}

// An FP8 operand: a module's tensor (rows, cols) as its GEMMs read it (TE's quantized tensor, with its rowwise and
// columnwise usages): the bf16 tensor for a GEMM in BF16; for a GEMM in FP8 the rowwise copy (the (rows, k = cols)
// view: fprop's x and W, dgrad's dy) and the columnwise copy (the (cols, k = rows) view: dgrad's W, wgrad's x and dy),
// each with its type and scales (llmc/gemm.cuh's GemmOperand). What was not made is NULL; linear_cast makes them.
typedef struct {
    const floatX* bf16;
    int rows, cols;
    GemmOperand rowwise, columnwise;
} Fp8Operand;

typedef struct {
    GPT2Config config;
    int B, T;
    int total_batch;  // tokens per optimizer step (-d), recorded in checkpoints; B*T*processes unless main sets it
    int num_processes, process_rank;
    size_t param_sizes[NUM_PARAMETER_TENSORS];
    size_t num_parameters;  // P
    ZeroShard shard;        // the parameters this rank's optimizer owns (llmc/zero.h); all P in one process
    float* master_memory;   // (shard_size) fp32 master weights of the shard (the CPU keeps all P in its master_memory)
    floatX* params_memory;  // (padded) bf16 weights, all of them, every rank
    ParameterTensorsX params;
    float* grads_memory;    // (padded) fp32; after the reduction, the shard's part is the summed gradient
    ParameterTensors grads;
    float *m_memory, *v_memory;  // (shard_size) AdamW moments of the shard
    ActivationTensors acts;
    int* inputs;   // (B, T) on the device
    int* targets;  // (B, T)
    // the encoder backward's token buckets (see encoder_buckets): device copies, and host scratch to build them
    int *bucket_positions, *bucket_start, *bucket_token;  // (B*T), (B*T + 1) of the buffer's (B*T + 2), (B*T)
    int* bucket_count;  // (1) their number, read by the encoder backward on the device (bucket_start[B*T + 1])
    int *host_positions, *host_bucket_start, *host_bucket_token, *host_token_count;  // ... (B*T + 2) and (V)
    int num_buckets;
    // The host's side of the copies inside a step, pinned so that they are queued on the stream like kernels and
    // nothing waits for the GPU to hand them over: the batch (host_inputs, host_targets: (B*T) each; the inputs stay
    // for the token buckets the backward builds), the buckets above, and the losses (B*T) coming back. Each group of
    // copies records its event, which the host waits on before it writes that memory again: a micro-batch later,
    // when those copies have long run.
    int *host_inputs, *host_targets;
    float* host_losses;
    float* host_norm_squared;  // (1) the gradient norm's square, for the host's report once the step is queued
    cudaEvent_t batch_copied, buckets_copied, losses_copied, norm_copied;
    float* column_partials;  // (B*T / COLUMN_SUM_ROWS, 4C) per-chunk column sums of the bias / LayerNorm gradients
    // backward scratch
    floatX *dresidual, *dbtc, *dbtc2, *dbt4c, *dqkv;  // (B,T,C) x3, (B,T,4C), (B,T,3C)
    floatX *dq, *dk, *dv;                              // plain attention: (B, NH, T, HS) each
    AttentionScratch attention;                        // plain attention's scratch
    // attention and recompute
    int attention_kind;                    // ATTENTION_CUDNN | ATTENTION_PLAIN
    CudnnAttention* cudnn_attention;       // cuDNN's handle and graphs (NULL with plain attention)
    // FP8 attention (-fp8_attention 1, cuDNN's FP8 forward): the E4M3 q, k, v (B, T, 3C) and output (B, T, C) of
    // the layer running, and every layer's scalars for cuDNN (L, ATTENTION_FP8_CELLS, 4) fp32 (llmc/attention_fp8.cuh)
    uint8_t *attention_qkv_fp8, *attention_out_fp8;
    float* attention_fp8_cells;
    size_t attention_workspace_bytes;      // the largest workspace its graphs need
    size_t stats_layer_floats;             // floats between two layers' softmax statistics
    int recompute;                         // -r 0|1|2
    int fused_fp8_casts;                   // -fp8_fused_casts: GELU and LayerNorm inside the FP8 casts beside them
                                           // where they can be (1), or their own kernels then the casts (0: the
                                           // same bytes; the tests compare the two): gelu_fcproj_forward,
                                           // gelu_fc_grad_output, layernorm_linear_forward
    // the device memory: what it depends on, and every buffer's size (llmc/memory_plan.h)
    GpuMemoryInputs memory_inputs;
    GpuMemoryPlan memory;
    void* device_buffers[NUM_GPU_BUFFERS];  // what gpt2_gpu_allocate_buffers allocated (NULL: not allocated), to free
    float* norm_squared;  // (1) the gradient norm's square, where the end of step reads it (gpt2_grad_norm)
    float* norm_partials; // (NORM_BLOCKS) per-block sums of squares: summed in a fixed order, so the norm is deterministic
    // precision
    Precision precision;
    Fp8Recipe recipe;
    int fp8_bf16_first_last, fp8_lm_head;
    int fp8_attention;         // -fp8_attention: the FP8 blocks' attention forward through cuDNN's FP8 graph
    int training;              // a training forward and backward (1), or evaluation and sampling (0): FP8 casts record
                               // amaxes only in training, and a training forward leaves the classifier to the backward
    Fp8Meta fp8;               // all modules' histories and scales, in device memory (the CPU's layout: fp8/meta.h);
                               // host copies only where a file is written or read (checkpoints, diagnostics)
    float* fp8_gemm_scale_inv;  // per-tensor recipes: (num_slots, FP8_GEMM_SCALE_INV_STRIDE) device, every slot's
                                // scale_inv 16 bytes from the next, where the GEMMs read it (fp8/update.cuh); current
                                // scaling: then the evaluation casts' (num_slots, FP8_GEMM_SCALE_INV_STRIDE)
    float* amax_discard;       // where casts that must not record write their amax
    int fp8_collect_stats;     // count clipped / flushed elements of every recorded cast (for fp8_diag.tsv)
    Fp8QuantStats* fp8_stats;  // (num_slots) device: elements, saturated, flushed since the last diagnostics block
    unsigned long long* fp8_diag_saved;  // (num_slots, 4) device: fp8_stats and fp8_block_scale_range before the
                                         // weights' casts at the end of a step (gpt2_cast_weights_fp8)
    float* fp8_diag_amax;      // (2, num_slots) device: row 0 as the last update saw it (the step's amax), and
                               // (delayed) the window its scale came from: written every step, read where a file is
    // rank 0's diagnostics state, on the host where the diagnostics file and the state file are written (copies):
    float* fp8_last_amax;      // (num_slots) row 0 as the last update saw it (the step's amax)
    float* fp8_window_amax;    // (num_slots) the amax each scale came from (delayed: the window before the update;
                               // current: fp8_current_amax as the last diagnostics block or checkpoint read it)
    // current scaling and the block recipes
    float* fp8_current_amax;   // (num_slots) device: the amax of each slot's last recorded cast (what its scale is from)
    // current scaling only
    float* fp8_eval_scales;    // (2, num_slots) device: scale, scale_inv of casts that do not record (evaluation)
    Fp8AmaxWorkspace amax_workspace;  // the amax pass's per-block partials and ticket counter
    // the FP8 copies the casts write (linear_cast; a recipe uses some, the others stay NULL): of a linear's input x and
    // its output gradient dy, scratch (B*T, widest module); of the weights, every FP8 module's at weight_fp8_offset
    // (codes, dequantized) and weight_scale_offset / weight_t_scale_offset (blockwise's tile scale_invs)
    Fp8OperandBuffers fp8_x, fp8_dy, fp8_weight;
    size_t *weight_fp8_offset, *weight_scale_offset, *weight_t_scale_offset;
    Fp8Operand* weight_operand;  // (num_modules) each FP8 weight as its GEMMs read it, from its last cast
    // delayed, current and blockwise scaling: the x^T (IC, k(B*T)) of every FP8 wgrad whose input the recompute keeps
    // (k: llmc/linear.h's linear_fp8_gemm_k, which blockwise pads), which the forward's cast writes beside x and the
    // backward's wgrad reads, at input_t_offset[module] * k(B*T) (fp8_input_t_layout, linear_keeps_input_t), and
    // blockwise its VEC128 scale_invs at input_t_scale_offset[module] (fp8_input_t_scale_layout); the others cast x^T
    // into fp8_x in the backward
    uint8_t* input_t_fp8;
    size_t* input_t_offset;
    float* input_t_scale_inv;
    size_t* input_t_scale_offset;
    // the block recipes (fp8/block_quantize.cuh)
    Fp8BlockScaleRange* fp8_block_scale_range;  // (num_slots) device, as float bits: the smallest and largest block
                                                // scale since the last diagnostics line (counted with the diagnostics)
    Fp8BlockScaleRange* fp8_block_scale_range_host;  // (num_slots) its host copy, where a file is written or read
    GemmContext gemm;
    cublasHandle_t cublas;
    cudaStream_t stream;
    // data parallelism: the ranks (one process without NCCL). During the last micro-batch's backward, each layer's
    // gradients are reduced over the ranks on comm_stream as soon as they are final (reduce_in_backward set),
    // overlapping the backward of the layers below
    MultiGpu* multi_gpu;
    int reduce_in_backward;
    cudaStream_t comm_stream;
    cudaEvent_t grads_ready, grads_reduced;
    int num_sms;
    int has_targets;  // the last forward had targets
    float mean_loss;  // of the last forward with targets (a training one: after its backward), else -1
    // -cuda_graph 1 (llmc/cuda_graph.cuh): a training micro-batch's forward and its backward, each captured once
    // after one micro-batch with the same key ran without (cuBLASLt's algorithms chosen, every kernel loaded), then
    // replayed
    int cuda_graph;
    CudaGraph forward_graph, backward_graph;
    int encoder_graph_rows_most;  // the most bucket rows the graph's encoder backward launches (encoder_graph_bucket_
                                  // rows: ENCODER_GRAPH_BUCKET_ROWS; a test lowers it so that rows stride at its shape)
} GPT2;

static LinearPrecision gpt2_linear_precision(const GPT2* m) {
    LinearPrecision p = {m->precision, &m->recipe, m->fp8_bf16_first_last, m->fp8_lm_head, m->config.num_layers,
                         m->fp8_attention};
    return p;
}

typedef struct {
    floatX *weight, *bias;
    float *dweight, *dbias;
    int IC, OC;
} LinearModule;

static LinearModule linear_module(GPT2* model, int module) {
    LinearLayout ll = linear_layout(&model->config, module);
    LinearModule lm = {model->params_memory + ll.weight_offset, ll.has_bias ? model->params_memory + ll.bias_offset : NULL,
                  model->grads_memory + ll.weight_offset, ll.has_bias ? model->grads_memory + ll.bias_offset : NULL,
                  ll.IC, ll.OC};
    return lm;
}

static void* device_alloc(size_t bytes) {
    void* p = NULL;
    cudaCheck(cudaMalloc(&p, bytes ? bytes : 16));
    cudaCheck(cudaMemset(p, 0, bytes ? bytes : 16));
    return p;
}

// The attention a run uses: -attn's, or by default cuDNN's when this program was built with it. Asking for cuDNN
// in a build without it is one line (make info says why it was left out).
static int gpu_attention_kind(int requested) {
#ifdef ENABLE_CUDNN
    return requested == ATTENTION_DEFAULT ? ATTENTION_CUDNN : requested;
#else
    if (requested == ATTENTION_CUDNN) {
        die("-attn cudnn: this train_gpt_fp8 was built without cuDNN (make info says why; make deps installs the cuDNN "
            "frontend's headers); -attn plain runs without it");
    }
    return ATTENTION_PLAIN;
#endif
}

// TE's reduce_amax on the GPU: fp8/meta.h's hook, one NCCL all-reduce(MAX) of row 0 of every slot on the model's
// stream (nothing in one process).
static void gpu_amax_allreduce(float* amax_row0, int num_slots, void* user) {
    GPT2* model = (GPT2*)user;
    multi_gpu_amax_allreduce(model->multi_gpu, amax_row0, num_slots, model->stream);
}

#ifdef ENABLE_CUDNN
// FP8 attention's graphs (-fp8_attention 1): cuDNN's FP8 forward, with statistics for training and without for
// evaluation, beside the BF16 graphs its backward runs (on Hopper cuDNN has no FP8 backward at GPT-2's head size 64:
// TE's NVTE_FP8_DPA_BWD=0). A cuDNN, GPU or shape without them is refused in one line with cuDNN's reason (the
// frontend's rules: cuDNN 9.1 or later, not 9.10.0, compute capability 9.0 or later, head size a multiple of 16 up to
// 256). Their workspace joins the plan's.
static void gpt2_gpu_init_fp8_attention(GPT2* model) {
    int B = model->B, T = model->T, C = model->config.channels, NH = model->config.num_heads;
    if (!model->cudnn_attention) {
        die("-fp8_attention %d runs cuDNN's FP8 attention, and this run's is the plain one", model->fp8_attention);
    }
    char why[512];
    if (!cudnn_attention_fp8_supported(model->cudnn_attention, B, T, C, NH, 0, why, sizeof(why))) {
        die("-fp8_attention %d: cuDNN cannot run this FP8 attention (B %d, T %d, NH %d, head size %d): %s",
            model->fp8_attention, B, T, NH, C / NH, why);
    }
    size_t bytes = cudnn_attention_fp8_prepare(model->cudnn_attention, B, T, C, NH, 0);
    if (bytes > model->attention_workspace_bytes) { model->attention_workspace_bytes = bytes; }
}
#endif

// Everything before the big device buffers: the model's shape and options, the streams and library handles, cuDNN's
// attention graphs (their workspace is part of the plan), the FP8 metadata's host layout, and the memory plan.
static void gpt2_gpu_init(GPT2* model, const GPT2Config* config, const TrainArgs* args, int B, int T,
                          MultiGpu* multi_gpu) {
    int num_processes = multi_gpu->num_processes, process_rank = multi_gpu->process_rank;
    int zero_stage = multi_gpu->zero_stage;
    memset(model, 0, sizeof(*model));
    model->multi_gpu = multi_gpu;
    model->config = *config;
    model->B = B;
    model->T = T;
    model->total_batch = (int)((long long)B * T * num_processes);
    model->num_processes = num_processes;
    model->process_rank = process_rank;
    model->precision = args->precision;
    model->recipe = args->recipe;
    model->fp8_bf16_first_last = args->fp8_bf16_first_last;
    model->fp8_lm_head = args->fp8_lm_head;
    model->fp8_attention = args->fp8_attention;
    model->training = 1;
    model->recompute = args->recompute;
    model->fused_fp8_casts = args->fp8_fused_casts;
    model->cuda_graph = args->cuda_graph;
    model->encoder_graph_rows_most = ENCODER_GRAPH_BUCKET_ROWS;
    model->attention_kind = gpu_attention_kind(args->attention);
    fill_in_parameter_sizes(model->param_sizes, config);
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) { model->num_parameters += model->param_sizes[i]; }
    model->shard = zero_shard(model->num_parameters, num_processes, process_rank, zero_stage);
    if (model->precision == PRECISION_FP8) {
        char err[256];
        // the CPU's layout; its memory is a device buffer of the plan (gpt2_gpu_allocate_buffers points into it)
        // the LM head's slots exist always, FP8 attention's modules with the flag only, as on the CPU
        int modules = fp8_num_modules(config->num_layers, model->fp8_attention);
        if (fp8_meta_layout(&model->fp8, modules, &model->recipe, err, sizeof(err))) { die("%s", err); }
        model->fp8.amax_reduce_fn = gpu_amax_allreduce;  // TE's reduce_amax: an NCCL all-reduce(MAX) of row 0
        model->fp8.amax_reduce_user = model;
        model->fp8_last_amax = (float*)calloc_or_die((size_t)model->fp8.num_slots, 4, "FP8 amaxes");
        model->fp8_window_amax = (float*)calloc_or_die((size_t)model->fp8.num_slots, 4, "FP8 amaxes");
    }
    gemm_context_init(&model->gemm);
    model->gemm.autotune = args->gemm_autotune;
    model->gemm.tune_print = process_rank == 0;
    cublasCheck(cublasCreate(&model->cublas));
    cudaCheck(cudaStreamCreate(&model->stream));
    cudaCheck(cudaStreamCreate(&model->comm_stream));
    cudaCheck(cudaEventCreateWithFlags(&model->grads_ready, cudaEventDisableTiming));
    cudaCheck(cudaEventCreateWithFlags(&model->grads_reduced, cudaEventDisableTiming));
    cudaCheck(cudaEventCreateWithFlags(&model->batch_copied, cudaEventDisableTiming));
    cudaCheck(cudaEventCreateWithFlags(&model->buckets_copied, cudaEventDisableTiming));
    cudaCheck(cudaEventCreateWithFlags(&model->losses_copied, cudaEventDisableTiming));
    cudaCheck(cudaEventCreateWithFlags(&model->norm_copied, cudaEventDisableTiming));
    model->num_sms = current_device_sms();  // this rank's GPU (multi_gpu_init set it)
    model->stats_layer_floats = attention_stats_layer_floats(B, config->num_heads, T);
#ifdef ENABLE_CUDNN
    if (model->attention_kind == ATTENTION_CUDNN) {
        // ask cuDNN whether it runs this shape (a head size its SDPA has no engine for, say): by default the plain
        // attention takes over with one line, as for the shapes main refuses before; -attn cudnn makes it an error
        model->cudnn_attention = cudnn_attention_create();
        char why[512];
        int head_size = config->channels / config->num_heads;
        if (cudnn_attention_supported(model->cudnn_attention, B, T, config->channels, config->num_heads, why,
                                      sizeof(why))) {
            model->attention_workspace_bytes = cudnn_attention_prepare(model->cudnn_attention, B, T, config->channels,
                                                                       config->num_heads);
        } else if (args->attention == ATTENTION_CUDNN || model->fp8_attention) {
            die("%s: cuDNN cannot run this attention (B %d, T %d, NH %d, head size %d): %s%s",
                model->fp8_attention ? "-fp8_attention" : "-attn cudnn", B, T, config->num_heads, head_size, why,
                model->fp8_attention ? "" : "; -attn plain runs any shape");
        } else {
            printf("attention: plain CUDA/cuBLAS, as cuDNN cannot run head size %d at T %d (%s)\n", head_size, T, why);
            cudnn_attention_destroy(model->cudnn_attention);
            model->cudnn_attention = NULL;
            model->attention_kind = ATTENTION_PLAIN;
        }
    }
    if (model->fp8_attention) { gpt2_gpu_init_fp8_attention(model); }
#endif
    if (model->attention_kind == ATTENTION_PLAIN) {  // its softmax launches a block per (b, head, t)
        blocks_per_row((size_t)B * config->num_heads * T, "the attention softmax (one block per batch row, head and position)");
    }
    GpuMemoryInputs* in = &model->memory_inputs;
    in->config = *config;
    in->B = B;
    in->T = T;
    in->linear = gpt2_linear_precision(model);
    in->recompute = model->recompute;
    in->attention = model->attention_kind;
    in->shard = model->shard;
    in->fp8_meta_floats = model->precision == PRECISION_FP8 ? model->fp8.num_floats : 0;
    in->fp8_slots = model->precision == PRECISION_FP8 ? model->fp8.num_slots : 0;
    in->gemm_workspace_bytes = GEMM_WORKSPACE_BYTES;
    in->attention_workspace_bytes = model->attention_workspace_bytes;
    in->column_sum_rows = COLUMN_SUM_ROWS;
    in->norm_blocks = NORM_BLOCKS;
    in->gemm_autotune = model->gemm.autotune;
    gpu_memory_plan(&model->memory, in);
}

// The FP8 buffers of the memory plan and the model's fields that point into them, one row each: the one place that
// names both (gpt2_gpu_allocate_buffers wires them in a loop). A buffer the run's recipe does not use has size 0 in the
// plan, and its field stays NULL.
static const struct {
    GpuBuffer buffer;
    size_t field;  // offsetof(GPT2, ...)
} gpt2_fp8_buffers[] = {
    {GPU_FP8_STATS, offsetof(GPT2, fp8_stats)},
    {GPU_FP8_DIAG_SAVED, offsetof(GPT2, fp8_diag_saved)},
    {GPU_FP8_DIAG_AMAX, offsetof(GPT2, fp8_diag_amax)},
    {GPU_WEIGHT_FP8, offsetof(GPT2, fp8_weight.codes)},
    {GPU_WEIGHT_T_FP8, offsetof(GPT2, fp8_weight.codes_t)},
    {GPU_WEIGHT_SCALE_INV, offsetof(GPT2, fp8_weight.scale_inv)},
    {GPU_WEIGHT_T_SCALE_INV, offsetof(GPT2, fp8_weight.scale_inv_t)},
    {GPU_WEIGHT_DEQUANTIZED, offsetof(GPT2, fp8_weight.dequantized)},
    {GPU_WEIGHT_DEQUANTIZED_COLUMNWISE, offsetof(GPT2, fp8_weight.dequantized_t)},
    {GPU_X_FP8, offsetof(GPT2, fp8_x.codes)},
    {GPU_X_T_FP8, offsetof(GPT2, fp8_x.codes_t)},
    {GPU_X_SCALE_INV, offsetof(GPT2, fp8_x.scale_inv)},
    {GPU_X_T_SCALE_INV, offsetof(GPT2, fp8_x.scale_inv_t)},
    {GPU_X_DEQUANTIZED, offsetof(GPT2, fp8_x.dequantized)},    // one scratch for x's two copies: the forward's
    {GPU_X_DEQUANTIZED, offsetof(GPT2, fp8_x.dequantized_t)},  // rowwise one, then the backward's columnwise one
    {GPU_DY_FP8, offsetof(GPT2, fp8_dy.codes)},
    {GPU_DY_T_FP8, offsetof(GPT2, fp8_dy.codes_t)},
    {GPU_DY_SCALE_INV, offsetof(GPT2, fp8_dy.scale_inv)},
    {GPU_DY_T_SCALE_INV, offsetof(GPT2, fp8_dy.scale_inv_t)},
    {GPU_DY_DEQUANTIZED, offsetof(GPT2, fp8_dy.dequantized)},
    {GPU_DY_DEQUANTIZED_COLUMNWISE, offsetof(GPT2, fp8_dy.dequantized_t)},
    {GPU_INPUT_T_FP8, offsetof(GPT2, input_t_fp8)},
    {GPU_INPUT_T_SCALE_INV, offsetof(GPT2, input_t_scale_inv)},
    {GPU_FP8_BLOCK_SCALE_RANGE, offsetof(GPT2, fp8_block_scale_range)},
    {GPU_FP8_WINDOW_AMAX, offsetof(GPT2, fp8_current_amax)},
    {GPU_FP8_EVAL_SCALES, offsetof(GPT2, fp8_eval_scales)},
    {GPU_FP8_GEMM_SCALE_INV, offsetof(GPT2, fp8_gemm_scale_inv)},
    {GPU_AMAX_PARTIALS, offsetof(GPT2, amax_workspace.partials)},
    {GPU_AMAX_TICKETS, offsetof(GPT2, amax_workspace.blocks_done)},  // zeroed: no cast under way
};

// The GEMMs' copy of the FP8 metadata's scale_invs (fp8_gemm_scale_inv), made whole after the host wrote the metadata
// (its initial values, a checkpoint's); the end-of-step update and current scaling's amax pass keep it from then on.
// Per-tensor recipes only: the block recipes' GEMMs read their casts' scale arrays.
static void gpt2_fp8_gemm_scale_inv_refresh(GPT2* model) {
    if (!model->fp8_gemm_scale_inv) { return; }
    cudaCheck(fp8_gemm_scale_inv_refresh_launch(&model->fp8, model->fp8_gemm_scale_inv, model->stream));
}

// Allocates every device buffer of the memory plan (zeroed; a buffer of size 0 is not allocated and its pointer stays
// NULL: nothing in this configuration uses it), and the host scratch that goes with them.
static void gpt2_gpu_allocate_buffers(GPT2* model) {
    size_t BT = (size_t)model->B * model->T;
    void** buffer = model->device_buffers;
    for (int i = 0; i < NUM_GPU_BUFFERS; i++) {
        // cuBLASLt's workspace is counted in the plan but gemm_context_init allocated it
        buffer[i] = i == GPU_GEMM_WORKSPACE || model->memory.bytes[i] == 0 ? NULL : device_alloc(model->memory.bytes[i]);
    }
    model->params_memory = (floatX*)buffer[GPU_PARAMS];
    model->grads_memory = (float*)buffer[GPU_GRADS];
    model->master_memory = (float*)buffer[GPU_MASTER];
    model->m_memory = (float*)buffer[GPU_ADAM_M];
    model->v_memory = (float*)buffer[GPU_ADAM_V];
    point_parameters_bf16(&model->params, model->params_memory, model->param_sizes);
    point_parameters(&model->grads, model->grads_memory, model->param_sizes);
    ActivationTensors* a = &model->acts;
    a->encoded = (floatX*)buffer[GPU_ENCODED];
    a->ln1 = (floatX*)buffer[GPU_LN1];
    a->ln1_mean = (float*)buffer[GPU_LN1_MEAN];
    a->ln1_rstd = (float*)buffer[GPU_LN1_RSTD];
    a->qkv = (floatX*)buffer[GPU_QKV];
    a->atty = (floatX*)buffer[GPU_ATTY];
    a->residual2 = (floatX*)buffer[GPU_RESIDUAL2];
    a->ln2 = (floatX*)buffer[GPU_LN2];
    a->ln2_mean = (float*)buffer[GPU_LN2_MEAN];
    a->ln2_rstd = (float*)buffer[GPU_LN2_RSTD];
    a->fch = (floatX*)buffer[GPU_FCH];
    a->fch_gelu = (floatX*)buffer[GPU_FCH_GELU];
    a->residual3 = (floatX*)buffer[GPU_RESIDUAL3];
    a->lnf = (floatX*)buffer[GPU_LNF];
    a->lnf_mean = (float*)buffer[GPU_LNF_MEAN];
    a->lnf_rstd = (float*)buffer[GPU_LNF_RSTD];
    a->logits = (floatX*)buffer[GPU_LOGITS];
    a->losses = (float*)buffer[GPU_LOSSES];
    a->proj_out = (floatX*)buffer[GPU_PROJ_OUT];
    a->att = (floatX*)buffer[GPU_ATT];
    a->attention_stats = (float*)buffer[GPU_ATTENTION_STATS];
    model->attention_qkv_fp8 = (uint8_t*)buffer[GPU_ATTENTION_QKV_FP8];
    model->attention_out_fp8 = (uint8_t*)buffer[GPU_ATTENTION_OUT_FP8];
    model->attention_fp8_cells = (float*)buffer[GPU_ATTENTION_FP8_CELLS];
    model->attention.q = (floatX*)buffer[GPU_ATTENTION_Q];
    model->attention.k = (floatX*)buffer[GPU_ATTENTION_K];
    model->attention.v = (floatX*)buffer[GPU_ATTENTION_V];
    model->attention.y = (floatX*)buffer[GPU_ATTENTION_Y];
    model->attention.preatt = (floatX*)buffer[GPU_ATTENTION_PREATT];
    // the attention's cuBLAS GEMMs share cuBLASLt's workspace: every GEMM runs in order on one stream
    model->attention.cublas_workspace = model->gemm.workspace;
    model->attention.cublas_workspace_bytes = GEMM_WORKSPACE_BYTES;
    model->dq = (floatX*)buffer[GPU_ATTENTION_DQ];
    model->dk = (floatX*)buffer[GPU_ATTENTION_DK];
    model->dv = (floatX*)buffer[GPU_ATTENTION_DV];
    model->inputs = (int*)buffer[GPU_INPUTS];
    model->targets = (int*)buffer[GPU_TARGETS];
    model->bucket_positions = (int*)buffer[GPU_BUCKET_POSITIONS];
    model->bucket_start = (int*)buffer[GPU_BUCKET_START];
    model->bucket_token = (int*)buffer[GPU_BUCKET_TOKEN];
    model->bucket_count = model->bucket_start + BT + 1;
    model->column_partials = (float*)buffer[GPU_COLUMN_PARTIALS];
    model->dresidual = (floatX*)buffer[GPU_DRESIDUAL];
    model->dbtc = (floatX*)buffer[GPU_DBTC];
    model->dbtc2 = (floatX*)buffer[GPU_DBTC2];
    model->dbt4c = (floatX*)buffer[GPU_DBT4C];
    model->dqkv = (floatX*)buffer[GPU_DQKV];
    model->norm_squared = (float*)buffer[GPU_NORM_SQUARED];
    model->norm_partials = (float*)buffer[GPU_NORM_PARTIALS];
    model->amax_discard = (float*)buffer[GPU_AMAX_DISCARD];
    model->gemm.tune_scratch = buffer[GPU_GEMM_TUNE_SCRATCH];
    model->gemm.tune_scratch_bytes = model->memory.bytes[GPU_GEMM_TUNE_SCRATCH];
    cudaCheck(cudaMallocHost(&model->host_inputs, BT * sizeof(int)));
    cudaCheck(cudaMallocHost(&model->host_targets, BT * sizeof(int)));
    cudaCheck(cudaMallocHost(&model->host_losses, BT * sizeof(float)));
    cudaCheck(cudaMallocHost(&model->host_norm_squared, sizeof(float)));
    *model->host_norm_squared = 0.0f;  // (what gpt2_grad_norm_value reads before any norm: the device's cell is 0 too)
    cudaCheck(cudaMallocHost(&model->host_positions, BT * sizeof(int)));
    cudaCheck(cudaMallocHost(&model->host_bucket_start, (BT + 2) * sizeof(int)));  // the count at [B*T + 1]
    cudaCheck(cudaMallocHost(&model->host_bucket_token, BT * sizeof(int)));
    model->host_token_count = (int*)calloc_or_die((size_t)model->config.vocab_size, 4, "token counts");
    if (model->precision == PRECISION_FP8) {
        fp8_meta_point_into(&model->fp8, (float*)buffer[GPU_FP8_META]);
        float* initial = (float*)calloc_or_die(model->fp8.num_floats, 4, "FP8 metadata");  // histories 0, scales 1
        fp8_meta_initial_values(initial, &model->fp8);
        cudaCheck(cudaMemcpy(model->fp8.memory, initial, model->fp8.num_floats * 4, cudaMemcpyHostToDevice));
        free(initial);
        int modules = linear_num_modules(model->config.num_layers);
        model->weight_fp8_offset = (size_t*)calloc_or_die((size_t)modules, sizeof(size_t), "FP8 weight offsets");
        LinearPrecision lp = gpt2_linear_precision(model);
        fp8_weight_layout(&model->config, &lp, model->weight_fp8_offset, 1);
        model->input_t_offset = (size_t*)calloc_or_die((size_t)modules, sizeof(size_t), "FP8 input transpose offsets");
        fp8_input_t_layout(&model->config, &lp, model->recompute, model->input_t_offset);
        model->input_t_scale_offset =
            (size_t*)calloc_or_die((size_t)modules, sizeof(size_t), "FP8 input transpose scale offsets");
        fp8_input_t_scale_layout(&model->config, &lp, model->recompute, BT, model->input_t_scale_offset);
        model->weight_scale_offset = (size_t*)calloc_or_die((size_t)modules, sizeof(size_t), "FP8 scale offsets");
        model->weight_t_scale_offset = (size_t*)calloc_or_die((size_t)modules, sizeof(size_t), "FP8 scale offsets");
        fp8_weight_scale_layout(&model->config, &lp, model->weight_scale_offset, 0);
        fp8_weight_scale_layout(&model->config, &lp, model->weight_t_scale_offset, 1);
        model->weight_operand = (Fp8Operand*)calloc_or_die((size_t)modules, sizeof(Fp8Operand), "FP8 weights");
        for (size_t i = 0; i < sizeof(gpt2_fp8_buffers) / sizeof(gpt2_fp8_buffers[0]); i++) {
            memcpy((char*)model + gpt2_fp8_buffers[i].field, &buffer[gpt2_fp8_buffers[i].buffer], sizeof(void*));
        }
        gpt2_fp8_gemm_scale_inv_refresh(model);
        if (model->fp8_block_scale_range) {  // the block recipes': min +inf, max 0 (fp8_block_scale_range_reset)
            model->fp8_block_scale_range_host = (Fp8BlockScaleRange*)calloc_or_die(
                (size_t)model->fp8.num_slots, sizeof(Fp8BlockScaleRange), "FP8 block scale ranges");
            for (int slot = 0; slot < model->fp8.num_slots; slot++) {
                fp8_block_scale_range_reset(&model->fp8_block_scale_range_host[slot]);
            }
            cudaCheck(cudaMemcpy(model->fp8_block_scale_range, model->fp8_block_scale_range_host,
                                 (size_t)model->fp8.num_slots * sizeof(Fp8BlockScaleRange), cudaMemcpyHostToDevice));
        }
    }
#ifdef ENABLE_CUDNN
    if (model->cudnn_attention) {  // cuBLASLt's workspace when it is large enough (one stream runs both), else its own
        void* workspace = buffer[GPU_ATTENTION_WORKSPACE] ? buffer[GPU_ATTENTION_WORKSPACE] : model->gemm.workspace;
        size_t bytes = buffer[GPU_ATTENTION_WORKSPACE] ? model->memory.bytes[GPU_ATTENTION_WORKSPACE] : GEMM_WORKSPACE_BYTES;
        cudnn_attention_set_workspace(model->cudnn_attention, workspace, bytes);
    }
#endif
}

// Everything gpt2_gpu_init and gpt2_gpu_allocate_buffers made: device buffers, handles, streams, host scratch.
static void gpt2_free(GPT2* model) {
    cudaCheck(cudaDeviceSynchronize());
    cuda_graph_free(&model->forward_graph);  // first: they launch into the buffers and cuDNN's plans freed below
    cuda_graph_free(&model->backward_graph);
    for (int i = 0; i < NUM_GPU_BUFFERS; i++) {
        if (model->device_buffers[i]) { cudaCheck(cudaFree(model->device_buffers[i])); }
    }
#ifdef ENABLE_CUDNN
    if (model->cudnn_attention) { cudnn_attention_destroy(model->cudnn_attention); }
#endif
    gemm_context_free(&model->gemm);
    cublasCheck(cublasDestroy(model->cublas));
    cudaCheck(cudaEventDestroy(model->grads_ready));
    cudaCheck(cudaEventDestroy(model->grads_reduced));
    cudaCheck(cudaEventDestroy(model->batch_copied));
    cudaCheck(cudaEventDestroy(model->buckets_copied));
    cudaCheck(cudaEventDestroy(model->losses_copied));
    cudaCheck(cudaEventDestroy(model->norm_copied));
    cudaCheck(cudaStreamDestroy(model->stream));
    cudaCheck(cudaStreamDestroy(model->comm_stream));
    void* pinned[] = {model->host_inputs,    model->host_targets,      model->host_losses,
                      model->host_norm_squared, model->host_positions, model->host_bucket_start,
                      model->host_bucket_token};  // NULL where never allocated
    for (size_t i = 0; i < sizeof(pinned) / sizeof(pinned[0]); i++) {
        if (pinned[i]) { cudaCheck(cudaFreeHost(pinned[i])); }
    }
    free(model->host_token_count);
    free(model->weight_fp8_offset);
    free(model->input_t_offset);
    free(model->input_t_scale_offset);
    free(model->weight_scale_offset);
    free(model->weight_t_scale_offset);
    free(model->weight_operand);
    free(model->fp8_block_scale_range_host);
    free(model->fp8_last_amax);
    free(model->fp8_window_amax);
    memset(model, 0, sizeof(*model));
}

#ifdef TESTING  // the tests set up a model in one call; main() prints and checks the plan in between
static void gpt2_gpu_allocate(GPT2* model, const GPT2Config* config, const TrainArgs* args, int B, int T,
                              MultiGpu* multi_gpu) {
    gpt2_gpu_init(model, config, args, B, T, multi_gpu);
    gpt2_gpu_allocate_buffers(model);
}
#endif

// Where the forward keeps module's FP8 x^T (IC, k(B*T)) for its wgrad (linear_keeps_input_t); NULL without such a
// buffer
static uint8_t* kept_input_t(GPT2* model, int module) {
    if (!model->input_t_fp8) { return NULL; }
    LinearPrecision lp = gpt2_linear_precision(model);
    return model->input_t_fp8 + model->input_t_offset[module] * linear_fp8_gemm_k(&lp, (size_t)model->B * model->T);
}

// Blockwise: where the forward keeps the VEC128 scale_invs of module's x^T; NULL without such a buffer
static float* kept_input_t_scale_inv(GPT2* model, int module) {
    if (!model->input_t_scale_inv) { return NULL; }
    return model->input_t_scale_inv + model->input_t_scale_offset[module];
}

// ----------------------------------------------------------------------------
// FP8 operands: what a linear layer's GEMMs read, and the one place that casts them by the recipe

// device pointers into the FP8 metadata of a slot
static float* slot_scale(GPT2* m, int slot) { return m->fp8.scale + slot; }
static float* slot_amax(GPT2* m, int slot, int record) {
    return record && m->training ? fp8_meta_amax_row0(&m->fp8, slot) : m->amax_discard;
}

// The counters a recorded cast into `slot` adds what it clipped and flushed to (the cast kernel counts them in the
// same pass), or NULL: only while the diagnostics file is written, and only for casts that record.
static unsigned long long* slot_cast_stats(GPT2* m, int slot, int record) {
    // the kernels count (elements, saturated, flushed) in three 64-bit integers: Fp8QuantStats' layout
    static_assert(sizeof(Fp8QuantStats) == 3 * sizeof(unsigned long long), "Fp8QuantStats is three 64-bit counts");
    return m->fp8_collect_stats && record ? (unsigned long long*)(m->fp8_stats + slot) : NULL;
}

// A module's tensor as the GEMMs read it in BF16 alone: no FP8 copy (a BF16 module, or a GEMM overridden to BF16).
static Fp8Operand linear_operand_bf16(const floatX* t, int rows, int cols) {
    Fp8Operand op;
    memset(&op, 0, sizeof(op));
    op.bf16 = t;
    op.rows = rows;
    op.cols = cols;
    return op;
}

// The view of a tensor one GEMM reads: reducing over its cols (rowwise: fprop's x and W, dgrad's dy) or over its rows
// (columnwise: dgrad's W, wgrad's x and dy); in FP8 the cast's copy, in BF16 the bf16 tensor as it is stored.
static GemmOperand linear_operand_view(const Fp8Operand* t, int columnwise, int fp8, const char* what) {
    if (fp8) {
        const GemmOperand* copy = columnwise ? &t->columnwise : &t->rowwise;
        if (!copy->data) {
            die("FP8 GEMM: %s has no %s copy (its cast did not make one)", what, columnwise ? "columnwise" : "rowwise");
        }
        return *copy;
    }
    if (!t->bf16) { die("BF16 GEMM: %s was not given in bf16", what); }
    return columnwise ? gemm_operand(t->bf16, CUDA_R_16BF, t->cols, t->rows, 0, NULL, 0)
                      : gemm_operand(t->bf16, CUDA_R_16BF, t->rows, t->cols, 1, NULL, 0);
}

// One cast of a module's tensor, as linear_cast hands it to the recipe's cast: which request of the step it is (llmc/
// linear.h's LinearOperand: the forward's input, fprop's x; the backward's, wgrad's x; the output gradient, dgrad's
// request, whose cast serves wgrad too; the weight, fprop's, serving dgrad too), the module, the slot, which copies its
// FP8 GEMMs read, whether the cast is a new quantization that records (its amax and counts, in training) or a re-cast
// with the scale in the slot, the bias gradient a gradient's cast may sum in its pass (NULL: none or already summed),
// and where the copies go.
typedef struct {
    LinearOperand operand;
    LinearTensor tensor;
    int module, slot;
    const floatX* inp;  // (rows, cols) bf16; NULL: a fused cast (GELU or LayerNorm inside it) already wrote the copies
    Fp8BlockMade made;  // blockwise: the tensor made inside the cast from inp (fp8/block_quantize.cuh): GELU (fcproj's
                        // forward input from fch), GELU's backward (fc's grad_output from the gradient of GELU's
                        // output and fch), LayerNorm (qkv's and fc's forward input from the residual stream)
    int rows, cols;
    int rowwise, columnwise;
    int record;
    float* dbias;  // (cols) fp32 += the column sums of inp, where the recipe's cast sums them (it clears it then)
    int amax_pass;  // current scaling: the scale comes from the tensor's own amax, in a pass just before the cast
    Fp8Format format;
    Fp8OperandBuffers dst;  // this tensor's copies (a weight's: at its module's offsets)
    uint8_t* kept_t;        // the module's input: the x^T (cols, B*T) the forward keeps for the wgrad, or NULL
    float* kept_scale_inv_t;  // blockwise: the kept x^T's VEC128 scale_invs, or NULL
} LinearCast;

// The scale cell a new per-tensor cast of `slot` uses: the slot's, except for a current-scaling cast that does not
// record (evaluation, sampling), whose scale goes to scratch so the training state stays as it was. Its scale_inv is
// num_slots floats further on, in either place.
static float* cast_scale(GPT2* m, int slot) {
    if (m->fp8_eval_scales && !m->training) { return m->fp8_eval_scales + slot; }
    return slot_scale(m, slot);
}
static float* cast_scale_inv(GPT2* m, int slot) { return cast_scale(m, slot) + m->fp8.num_slots; }

// Where the GEMMs read the scale_inv that goes with the scale cell `scale` (a slot's, or an evaluation cast's):
// the same value, 16-byte aligned as cuBLASLt takes it (llmc/gemm.cuh), in fp8_gemm_scale_inv.
static float* gemm_scale_inv_of(GPT2* m, const float* scale) {
    size_t S = (size_t)m->fp8.num_slots;
    int evaluation = m->fp8_eval_scales && scale >= m->fp8_eval_scales && scale < m->fp8_eval_scales + S;
    size_t slot = evaluation ? (size_t)(scale - m->fp8_eval_scales) : (size_t)(scale - m->fp8.scale);
    return m->fp8_gemm_scale_inv + ((evaluation ? S : 0) + slot) * FP8_GEMM_SCALE_INV_STRIDE;
}

// Where current scaling's amax pass for a recorded cast into `slot` leaves the tensor's scale (fp8/quantize.cuh's
// Fp8CurrentScale): the cast's scale cells and the GEMMs' aligned copy, from the slot's scale as the one kept when the
// amax is 0, inf or NaN; the tensor's amax for the diagnostics (training only).
static Fp8CurrentScale current_scale_target(GPT2* m, int slot) {
    Fp8CurrentScale current = {slot_scale(m, slot), cast_scale(m, slot), cast_scale_inv(m, slot),
                               gemm_scale_inv_of(m, cast_scale(m, slot)),
                               m->training ? m->fp8_current_amax + slot : m->amax_discard, m->recipe.margin};
    return current;
}

// Where a recorded per-tensor cast into `slot` reads its scale and leaves its amax and counts (the training forward's
// and backward's casts, the weights' first cast; the fused casts of GELU and LayerNorm too)
typedef struct {
    float* scale;
    float* amax;
    unsigned long long* stats;
} Fp8CastTarget;

static Fp8CastTarget recorded_cast_target(GPT2* m, int slot) {
    Fp8CastTarget t = {cast_scale(m, slot), slot_amax(m, slot, 1), slot_cast_stats(m, slot, m->training)};
    return t;
}

// Per-tensor scaling (delayed, current): one scale_inv per tensor, FP8 codes and their transpose from one pass
// (fp8/quantize.cuh). Current scaling first runs the amax pass, which leaves the tensor's own scale in its cast's
// scale cell (fp8_amax_scale); delayed scaling's scale is there already. A gradient's or a weight's cast always writes
// both copies (cast + transpose, the gradient's bias sums in the same pass, TE's cast_transpose_dbias); the forward's
// cast of x writes the x^T the wgrad reads in the same pass where the module keeps it (linear_keeps_input_t), and x
// where fprop reads it or nothing else would; wgrad's x^T is that kept one, or a re-cast of the remade input with the
// forward's scale, recording nothing (the same bytes). The fused casts write these same copies
// (input_made_in_fp8_cast).
static void linear_cast_per_tensor(GPT2* m, LinearCast* c, Fp8Operand* t) {
    LinearPrecision lp = gpt2_linear_precision(m);
    int keeps_t = linear_keeps_input_t(&lp, c->module, m->recompute);
    uint8_t* codes = c->dst.codes;
    uint8_t* codes_t = c->dst.codes_t;
    if (c->operand == LINEAR_INPUT_FPROP) {  // x^T where the training forward keeps it; x unless only x^T is read
        codes_t = m->training && keeps_t ? c->kept_t : NULL;
        if (!c->rowwise && codes_t) { codes = NULL; }
    } else if (c->operand == LINEAR_INPUT_WGRAD) {  // x^T alone: the kept one, or a re-cast into scratch
        codes = NULL;
        if (keeps_t) { codes_t = c->kept_t; }
    }
    cudaDataType_t type = fp8_cuda_type(c->format);
    int record = c->record && c->operand != LINEAR_INPUT_WGRAD;  // wgrad's x^T: the forward's scale, not recorded again
    float* scale = record ? cast_scale(m, c->slot) : slot_scale(m, c->slot);
    const float* scale_inv = gemm_scale_inv_of(m, scale);  // the GEMMs' copy of scale + num_slots
    if (c->rowwise) { t->rowwise = gemm_operand(codes, type, c->rows, c->cols, 1, scale_inv, 0); }
    if (c->columnwise) { t->columnwise = gemm_operand(codes_t, type, c->cols, c->rows, 1, scale_inv, 0); }
    if (c->operand == LINEAR_INPUT_WGRAD && keeps_t) { return; }  // the forward's cast wrote x^T
    if (!c->inp) {
        if (c->operand == LINEAR_INPUT_WGRAD || c->tensor == LINEAR_WEIGHT) {
            die("linear_cast: module %d's %s was not given", c->module, linear_operand_use[c->operand].name);
        }
        return;  // the forward's input or the output gradient: a fused cast wrote the copies
    }
    Fp8CastTarget target = {scale, m->amax_discard, NULL};
    if (record) {
        if (c->amax_pass) {
            cudaCheck(fp8_amax_scale(c->inp, (size_t)c->rows * c->cols, c->format, current_scale_target(m, c->slot),
                                     m->amax_workspace, m->num_sms, m->stream));
        }
        target = recorded_cast_target(m, c->slot);
    }
    if (c->dbias) {
        cudaCheck(fp8_cast_transpose_dbias_amax(codes, codes_t, m->column_partials, c->inp, c->rows, c->cols,
                                                target.scale, target.amax, target.stats, c->format, m->stream));
        bias_backward_reduce(c->dbias, m->column_partials, c->rows, c->cols, m->stream);
        c->dbias = NULL;
    } else if (codes_t) {
        cudaCheck(fp8_cast_transpose_amax(codes, codes_t, c->inp, c->rows, c->cols, target.scale, target.amax,
                                          target.stats, c->format, m->stream));
    } else {
        cudaCheck(fp8_cast_amax(codes, c->inp, (size_t)c->rows * c->cols, target.scale, target.amax, target.stats,
                                c->format, m->num_sms, m->stream));
    }
}

// A block recipe's cast of c->inp (rows, cols) (fp8/block_quantize.cuh), no copy chosen yet: the recipe's block
// length and scale rule, the slot's format; when the cast records (training), its amax into row 0 and into the slot's
// window cell (the amax of its last recorded cast, as the CPU's fp8_block_operand keeps), and, with the diagnostics on,
// its counts and block scale range.
static Fp8BlockCast1d block_cast_of(GPT2* m, const LinearCast* c, int block_len) {
    if (!c->inp) {  // every copy is cast from the bf16 tensor (a fused cast is per-tensor scaling's)
        die("linear_cast: module %d's %s was not given, and a block recipe casts it from bf16", c->module,
            linear_operand_use[c->operand].name);
    }
    Fp8BlockCast1d a;
    memset(&a, 0, sizeof(a));
    a.inp = c->inp;
    a.made = c->made;  // (fp8_block_cast_1d refuses it under mxfp8; the 2D cast of a weight never has it)
    a.rows = c->rows;
    a.cols = c->cols;
    a.block_len = block_len;
    a.cast = fp8_block_cast_of(&m->recipe, c->format);
    int recording = c->record && m->training;
    a.amax = slot_amax(m, c->slot, c->record);
    a.tensor_amax = recording ? m->fp8_current_amax + c->slot : NULL;
    a.stats = slot_cast_stats(m, c->slot, recording);
    a.scale_range = a.stats ? reinterpret_cast<unsigned int*>(m->fp8_block_scale_range + c->slot) : NULL;
    return a;
}

// The column partials of a grad_output cast in its pass (a block recipe's: the cast's tile sums, bias_backward's pass 1
// in the same order, so the same bits) when it carries the bias gradient: set them up in the cast, and after it add
// them into dbias (bias_backward_reduce), which linear_cast then does not sum again.
static_assert(FP8_BLOCK_COLUMN_SUM_ROWS == COLUMN_SUM_ROWS, "the block casts' column sums are bias_backward's chunks");
static void block_cast_dbias_begin(GPT2* m, const LinearCast* c, Fp8BlockCast1d* a) {
    a->column_partials = c->dbias ? m->column_partials : NULL;
}
static void block_cast_dbias_end(GPT2* m, LinearCast* c) {
    if (!c->dbias) { return; }
    bias_backward_reduce(c->dbias, m->column_partials, c->rows, c->cols, m->stream);
    c->dbias = NULL;
}

// Blockwise: the k a block-scaled GEMM reducing over n elements runs with, the row length of the codes it reads:
// n rounded up to whole 128-blocks (llmc/linear.h's linear_fp8_gemm_k), the casts writing the padding's codes as 0.
static int padded_k(int n) { return (int)fp8_blockwise_padded_k((size_t)n); }

// Blockwise (Float8BlockScaling): every copy a new recorded cast from the bf16 tensor, each block of 128 with its own
// scale: 1x128 blocks along the rows for the rowwise copy and down the columns for the columnwise one (the transposed
// codes), in one pass; a weight in 128x128 tiles, whose codes and transposed codes share the tile scales. The GEMMs
// read the codes with their scale_inv arrays (VEC128, BLK128x128: cuBLASLt's block-scaled GEMMs). Where the module
// keeps its input's transpose (linear_keeps_input_t, as per-tensor scaling does), the training forward's cast of x
// writes the columnwise copy the wgrad reads too, into the kept buffers, even where fprop runs in BF16: what the
// CPU's backward cast of it makes and records (the same bytes, amax, counts and scale range, recorded once), made
// earlier in the step; the backward's wgrad request then reads that copy and casts nothing. A gradient's cast sums its
// bias gradient's column partials in the same pass (TE's cast_transpose_dbias). Every copy's rows of codes are
// zero-padded to whole 128-blocks (padded_k; nothing is padded where the width is a multiple of 128), so every
// dimension, GPT-2 XL's C 1600 included, can be a GEMM's k: beyond TE, whose blockwise quantizer refuses such widths.
static void linear_cast_blockwise(GPT2* m, LinearCast* c, Fp8Operand* t) {
    cudaDataType_t type = fp8_cuda_type(c->format);
    const int vec128 = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, blk128 = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
    if (c->tensor == LINEAR_WEIGHT) {  // both copies, always: they share the tiles
        Fp8BlockCast1d a = block_cast_of(m, c, FP8_BLOCKWISE_BLOCK);
        Fp8BlockCast2d tiles = {c->inp, c->rows, c->cols, a.cast, c->dst.codes, c->dst.codes_t, c->dst.scale_inv,
                                c->dst.scale_inv_t, a.amax, a.tensor_amax, a.stats, a.scale_range, 1};
        cudaCheck(fp8_block_cast_2d(&tiles, m->stream));
        t->rowwise = gemm_operand(c->dst.codes, type, c->rows, padded_k(c->cols), 1, c->dst.scale_inv, blk128);
        t->columnwise = gemm_operand(c->dst.codes_t, type, c->cols, padded_k(c->rows), 1, c->dst.scale_inv_t, blk128);
        return;
    }
    // the columnwise copy: in the kept buffers where the module keeps it, made by the training forward's cast
    LinearPrecision lp = gpt2_linear_precision(m);
    int keeps_t = c->tensor == LINEAR_INPUT && linear_keeps_input_t(&lp, c->module, m->recompute);
    if (keeps_t && (!c->kept_t || !c->kept_scale_inv_t)) {
        die("linear_cast: module %d keeps its input's columnwise copy, but no buffer holds it", c->module);
    }
    uint8_t* codes_t = keeps_t ? c->kept_t : c->dst.codes_t;                  // (cols, rows)
    float* scale_inv_t = keeps_t ? c->kept_scale_inv_t : c->dst.scale_inv_t;  // VEC128 of (cols, rows)
    int columnwise = c->columnwise;  // whether this cast makes the columnwise copy
    if (keeps_t) { columnwise = c->operand == LINEAR_INPUT_FPROP && m->training; }
    if (c->columnwise) {
        t->columnwise = gemm_operand(codes_t, type, c->cols, padded_k(c->rows), 1, scale_inv_t, vec128);
    }
    if (c->rowwise) {
        t->rowwise = gemm_operand(c->dst.codes, type, c->rows, padded_k(c->cols), 1, c->dst.scale_inv, vec128);
    }
    if (!c->rowwise && !columnwise) { return; }  // no copy made here (wgrad's kept one; no FP8 GEMM reads one)
    if (!c->inp && c->tensor == LINEAR_GRAD_OUTPUT) { return; }  // made by GELU's backward inside an earlier cast
    Fp8BlockCast1d a = block_cast_of(m, c, FP8_BLOCKWISE_BLOCK);
    if (c->rowwise) {
        a.rowwise.codes = c->dst.codes;          // (rows, k(cols))
        a.rowwise.scale_inv = c->dst.scale_inv;  // VEC128 of (rows, cols)
        a.rowwise.k_padded = 1;
    }
    if (columnwise) {
        a.columnwise.codes = codes_t;  // (cols, k(rows))
        a.columnwise.scale_inv = scale_inv_t;
        a.columnwise.k_padded = 1;
    }
    block_cast_dbias_begin(m, c, &a);
    cudaCheck(fp8_block_cast_1d(&a, m->stream));
    block_cast_dbias_end(m, c);
}

// MXFP8 (MXFP8BlockScaling), emulated: 1x32 blocks with E8M0 scales along each GEMM's reduction dimension, every copy
// a new recorded cast; no Hopper GEMM takes E8M0 scales, so each copy is dequantized to bf16 in the tensor's own layout
// and the BF16 GEMMs multiply those values (MXFP8's accuracy, not its speed).
static void linear_cast_mxfp8(GPT2* m, LinearCast* c, Fp8Operand* t) {
    Fp8BlockCast1d a = block_cast_of(m, c, FP8_MXFP8_BLOCK);
    if (c->rowwise) {
        a.rowwise.dequantized = c->dst.dequantized;  // (rows, cols), 1x32 blocks
        t->rowwise = gemm_operand(c->dst.dequantized, CUDA_R_16BF, c->rows, c->cols, 1, NULL, 0);
    }
    if (c->columnwise) {
        a.columnwise.dequantized = c->dst.dequantized_t;  // (rows, cols), 32x1 blocks
        t->columnwise = gemm_operand(c->dst.dequantized_t, CUDA_R_16BF, c->cols, c->rows, 0, NULL, 0);
    }
    block_cast_dbias_begin(m, c, &a);
    cudaCheck(fp8_block_cast_1d(&a, m->stream));
    block_cast_dbias_end(m, c);
}

// The one switch on the recipe: its cast makes c's copies into t. (A block recipe casts nothing where the module's FP8
// GEMMs read no copy of the tensor: a BF16 fprop's input, say, unless blockwise's forward makes the columnwise copy an
// FP8 wgrad keeps; a per-tensor one records that input's amax anyway.)
static void fp8_recipe_cast(GPT2* model, LinearCast* c, Fp8Operand* t) {
    int any = c->rowwise || c->columnwise;
    if (c->made.kind != FP8_BLOCK_FROM_INP &&
        (model->recipe.scaling != FP8_SCALING_BLOCKWISE ||
         c->tensor != (c->made.kind == FP8_BLOCK_FROM_GELU_BACKWARD ? LINEAR_GRAD_OUTPUT : LINEAR_INPUT))) {
        die("linear_cast: module %d's %s made inside its cast, which only blockwise's input (GELU, LayerNorm) and "
            "grad_output (GELU's backward) casts do", c->module, linear_operand_use[c->operand].name);
    }
    switch (model->recipe.scaling) {
        case FP8_SCALING_DELAYED: linear_cast_per_tensor(model, c, t); break;
        case FP8_SCALING_CURRENT: c->amax_pass = 1; linear_cast_per_tensor(model, c, t); break;
        case FP8_SCALING_BLOCKWISE: linear_cast_blockwise(model, c, t); break;  // (it looks at what it makes)
        case FP8_SCALING_MXFP8: if (any) { linear_cast_mxfp8(model, c, t); } break;
        default: die("FP8 cast: a recipe this trainer does not know");
    }
}

// The one cast entry point (TE's quantize dispatch): the tensor of `module` that `operand` names (the request the cast
// is made at: fprop's x, wgrad's x, dgrad's dy, fprop's W), inp (rows, cols) bf16, made into what the module's GEMMs
// read: itself where they run in BF16, the FP8 copies the recipe makes where they run in FP8 (the
// forward's input cast with its row 0 amax recorded in training; a per-tensor recipe casts it even for a BF16 fprop
// beside an FP8 wgrad, as TE records that amax). `record` 0: a re-cast of the weights with the scales they have
// (resume), recording nothing. dbias (grad_output; NULL: none): += the column sums of inp, in the cast's pass where
// the recipe's cast sums them, else in its own. inp NULL: a fused cast (GELU or LayerNorm inside it) already wrote
// the copies; only their views are made. made (blockwise; NULL: inp itself): the tensor cast is made inside the block
// cast from inp: gelu(inp) (fcproj's forward input, inp fch: gelu_fcproj_forward), GELU's input gradient (fc's
// grad_output, inp the gradient of GELU's output: gelu_fc_grad_output), LayerNorm(inp) (qkv's and fc's forward
// input, inp the residual stream: layernorm_linear_forward). None has a bf16 view (a BF16 GEMM given it dies: the
// rules in block_cast_makes_input and gelu_in_block_grad_output_cast say none reads it).
static Fp8Operand linear_cast_of(GPT2* model, int module, LinearOperand operand, const floatX* inp, int rows,
                                 int record, float* dbias, const Fp8BlockMade* made) {
    LinearModule lm = linear_module(model, module);
    LinearPrecision lp = gpt2_linear_precision(model);
    LinearTensor tensor = linear_operand_use[operand].tensor;
    LinearCast c;
    memset(&c, 0, sizeof(c));
    c.operand = operand;
    c.tensor = tensor;
    c.module = module;
    c.inp = inp;
    if (made) { c.made = *made; }  // (else zeros: FP8_BLOCK_FROM_INP)
    c.rows = tensor == LINEAR_WEIGHT ? lm.OC : rows;
    c.cols = tensor == LINEAR_GRAD_OUTPUT ? lm.OC : lm.IC;
    c.record = record;
    c.dbias = dbias;
    int fprop = linear_gemm_is_fp8(&lp, module, LINEAR_GEMM_FPROP);
    int dgrad = linear_gemm_is_fp8(&lp, module, LINEAR_GEMM_DGRAD);
    int wgrad = linear_gemm_is_fp8(&lp, module, LINEAR_GEMM_WGRAD);
    Fp8Meta* meta = &model->fp8;
    size_t weight_offset = model->weight_fp8_offset ? model->weight_fp8_offset[module] : 0;
    int casts = 0;  // (any FP8 GEMM reads the tensor)
    switch (operand) {
        case LINEAR_INPUT_FPROP:  // (an FP8 wgrad beside a BF16 fprop: a per-tensor recipe records x's amax here)
            c.rowwise = fprop;
            casts = linear_casts_input(&lp, module);
            c.slot = fp8_meta_fwd_slot(meta, module, FP8_FWD_INPUT);
            c.dst = model->fp8_x;
            c.kept_t = kept_input_t(model, module);
            c.kept_scale_inv_t = kept_input_t_scale_inv(model, module);
            break;
        case LINEAR_INPUT_WGRAD:
            c.columnwise = wgrad;
            casts = wgrad;
            c.slot = fp8_meta_fwd_slot(meta, module, FP8_FWD_INPUT);
            c.dst = model->fp8_x;
            c.kept_t = kept_input_t(model, module);
            c.kept_scale_inv_t = kept_input_t_scale_inv(model, module);
            break;
        case LINEAR_GRAD_OUTPUT_DGRAD:  // dgrad's and wgrad's copies, from one cast
            c.rowwise = dgrad;
            c.columnwise = wgrad;
            casts = linear_casts_grad_output(&lp, module);
            c.slot = fp8_meta_bwd_slot(meta, module, FP8_BWD_GRAD_OUTPUT);
            c.dst = model->fp8_dy;
            break;
        case LINEAR_WEIGHT_FPROP:  // fprop's and dgrad's copies, from one cast
            c.rowwise = fprop;
            c.columnwise = dgrad;
            casts = linear_casts_weight(&lp, module);
            c.slot = fp8_meta_fwd_slot(meta, module, FP8_FWD_WEIGHT);
            c.dst = fp8_operand_buffers_at(&model->fp8_weight, weight_offset,
                                           model->weight_scale_offset ? model->weight_scale_offset[module] : 0,
                                           model->weight_t_scale_offset ? model->weight_t_scale_offset[module] : 0);
            break;
        default:  // the other requests read a cast made by one of the above
            die("linear_cast: %s is made by the cast of the tensor's first request", linear_operand_use[operand].name);
    }
    int made_inside = c.made.kind != FP8_BLOCK_FROM_INP;
    Fp8Operand t = linear_operand_bf16(made_inside ? NULL : inp, c.rows, c.cols);  // what a GEMM in BF16 reads
    casts = casts && model->precision == PRECISION_FP8;
    if (made_inside && !casts) {
        die("linear_cast: module %d's %s made inside its cast, but nothing casts it", module,
            linear_operand_use[operand].name);
    }
    if (casts) {
        c.format = fp8_meta_slot_format(meta, c.slot);
        fp8_recipe_cast(model, &c, &t);
    }
    if (c.dbias && made_inside) {  // (inp is not the tensor cast: its bias sums had to come from the cast's pass)
        die("linear_cast: module %d's %s made inside its cast left its bias gradient unsummed", module,
            linear_operand_use[operand].name);
    }
    if (c.dbias) { bias_backward(c.dbias, inp, c.rows, c.cols, model->column_partials, model->stream); }
    return t;
}

static Fp8Operand linear_cast(GPT2* model, int module, LinearOperand operand, const floatX* inp, int rows, int record,
                              float* dbias) {
    return linear_cast_of(model, module, operand, inp, rows, record, dbias, NULL);
}

// A module's weight as its GEMMs read it: the bf16 weight, with the FP8 copies of its last cast (gpt2_cast_weights_fp8)
static Fp8Operand linear_weight(GPT2* model, int module) {
    if (model->weight_operand && model->weight_operand[module].bf16) { return model->weight_operand[module]; }
    LinearModule lm = linear_module(model, module);
    return linear_operand_bf16(lm.weight, lm.OC, lm.IC);
}

// Cast every FP8 module's bf16 weight with its current scale (linear_cast at LINEAR_WEIGHT_FPROP: the recipe's copies
// for fprop and dgrad); `record`: its amax into row 0 (and, with current scaling, the scale from the weight's own amax
// first; without, a re-cast with the stored scale). Training state: called while the model records.
// After a step the gradient norm skipped on the device (gpt2_grad_norm), the weights and scales are the ones the last
// casts had, so these casts write the same bytes and amaxes again; but the diagnostics would count them, and widen a
// block scale range reset since (a diagnostics line), where the CPU casts nothing: the counts and ranges are saved
// before and put back after (restore_if_step_skipped).
static void gpt2_cast_weights_fp8(GPT2* model, int record) {
    if (model->precision != PRECISION_FP8) { return; }
    size_t S = (size_t)model->fp8.num_slots;
    static_assert(sizeof(Fp8QuantStats) == 3 * sizeof(unsigned long long) &&
                      sizeof(Fp8BlockScaleRange) == sizeof(unsigned long long),
                  "the saved diagnostics: (num_slots, 3) counts, then (num_slots) ranges, in 64-bit words");
    unsigned long long* saved_ranges = model->fp8_diag_saved + 3 * S;
    int diagnostics = record && model->fp8_collect_stats;
    if (diagnostics) {
        cudaCheck(cudaMemcpyAsync(model->fp8_diag_saved, model->fp8_stats, S * sizeof(Fp8QuantStats),
                                  cudaMemcpyDeviceToDevice, model->stream));
        if (model->fp8_block_scale_range) {
            cudaCheck(cudaMemcpyAsync(saved_ranges, model->fp8_block_scale_range, S * sizeof(Fp8BlockScaleRange),
                                      cudaMemcpyDeviceToDevice, model->stream));
        }
    }
    // as the CPU's: the weights' FP8 copy is training state, so its scales are the slots' own even when called while
    // evaluation has recording off (current scaling would otherwise put them in the evaluation scratch)
    int saved = model->training;
    model->training = 1;
    LinearPrecision lp = gpt2_linear_precision(model);
    for (int module = 0; module < linear_num_modules(model->config.num_layers); module++) {
        if (!linear_casts_weight(&lp, module)) { continue; }
        LinearModule lm = linear_module(model, module);
        model->weight_operand[module] = linear_cast(model, module, LINEAR_WEIGHT_FPROP, lm.weight, lm.OC, record, NULL);
    }
    model->training = saved;
    if (diagnostics) {
        restore_if_step_skipped((unsigned long long*)model->fp8_stats, model->fp8_diag_saved, 3 * S,
                                model->norm_squared, model->stream);
        if (model->fp8_block_scale_range) {
            restore_if_step_skipped((unsigned long long*)model->fp8_block_scale_range, saved_ranges, S,
                                    model->norm_squared, model->stream);
        }
    }
}

// One GEMM of a module in its precision (linear_gemm_is_fp8), on the views of two operands that reduce over k:
//   fprop  out (B*T, OC) = x @ W^T + b     x rowwise, W rowwise
//   dgrad  out (B*T, IC) = dy @ W          dy rowwise, W columnwise       (written: the CPU zeroes, then accumulates)
//   wgrad  out (OC, IC) += dy^T @ x        dy columnwise, x columnwise   (fp32)
// `weight` is the GEMM's right-hand operand (W, or x for wgrad), `inp` its left (x or dy). A block-scaled GEMM has no
// bias epilogue: the bias goes into out first and the GEMM accumulates onto it. Fast accumulation is for fprop with
// per-tensor scales only, as TE's recipes set it (gradients need the full fp32 path; block scales do not allow it).
static void linear_gemm(GPT2* model, int module, LinearGemm gemm, void* out, const Fp8Operand* weight,
                        const Fp8Operand* inp) {
    LinearModule lm = linear_module(model, module);
    LinearPrecision lp = gpt2_linear_precision(model);
    static const char* const gemm_names[] = {"fprop", "dgrad", "wgrad"};
    int fp8 = linear_gemm_is_fp8(&lp, module, gemm);
    GemmOperand w = linear_operand_view(weight, gemm != LINEAR_GEMM_FPROP, fp8, gemm_names[gemm]);
    GemmOperand x = linear_operand_view(inp, gemm == LINEAR_GEMM_WGRAD, fp8, gemm_names[gemm]);
    int wgrad = gemm == LINEAR_GEMM_WGRAD;  // fp32 dW += ..., the others bf16 (fprop with its bias)
    GemmOutput o = {out, wgrad ? CUDA_R_32F : CUDA_R_16BF, gemm == LINEAR_GEMM_FPROP ? lm.bias : NULL, wgrad};
    int block_scaled = gemm_scale_mode_is_block(w.scale_mode) || gemm_scale_mode_is_block(x.scale_mode);
    if (block_scaled && o.bias) {
        bias_broadcast((floatX*)out, lm.bias, x.outer, w.outer, model->stream);
        o.bias = NULL;
        o.accumulate = 1;
    }
    gemm_multiply(&model->gemm, &o, &w, &x, gemm == LINEAR_GEMM_FPROP && !block_scaled, model->stream);
}

// out (B, T, OC) = x @ W^T + b, x the module's input as linear_cast made it (the fused casts' callers make it there)
static void linear_fprop(GPT2* model, int module, floatX* out, const Fp8Operand* x) {
    Fp8Operand w = linear_weight(model, module);
    linear_gemm(model, module, LINEAR_GEMM_FPROP, out, &w, x);
}

// out (B, T, OC) = inp (B, T, IC) @ W^T + b, in the module's precision. The input cast records its amax and counts,
// except attproj's behind FP8 attention, whose input is the attention's E4M3 output: cuDNN recorded its amax, and
// the cast with the same scale makes the very codes cuDNN wrote (the CPU's linear_operand does the same).
static void linear_forward(GPT2* model, int module, floatX* out, const floatX* inp, int B, int T) {
    LinearPrecision lp = gpt2_linear_precision(model);
    int record = !linear_input_is_attention_output(&lp, module);
    Fp8Operand x = linear_cast(model, module, LINEAR_INPUT_FPROP, inp, B * T, record, NULL);
    linear_fprop(model, module, out, &x);
}

// dinp (B, T, IC) = dout @ W (written: the CPU accumulates into a zeroed buffer), dW += dout^T @ inp, db += column
// sums of dout, each GEMM in its precision. inp (B, T, IC) is read where the backward reads the bf16 input
// (linear_backward_reads_input); elsewhere (NULL may be passed) the FP8 wgrad reads the x^T the forward kept. dout
// NULL: a fused cast already made grad_output's FP8 copies and the bias gradient (gelu_fc_grad_output).
static void linear_backward(GPT2* model, int module, floatX* dinp, const floatX* dout, const floatX* inp, int B,
                            int T) {
    LinearModule lm = linear_module(model, module);
    Fp8Operand dy = linear_cast(model, module, LINEAR_GRAD_OUTPUT_DGRAD, dout, B * T, 1, dout ? lm.dbias : NULL);
    Fp8Operand w = linear_weight(model, module);
    linear_gemm(model, module, LINEAR_GEMM_DGRAD, dinp, &w, &dy);
    Fp8Operand x = linear_cast(model, module, LINEAR_INPUT_WGRAD, inp, B * T, 1, NULL);
    linear_gemm(model, module, LINEAR_GEMM_WGRAD, lm.dweight, &x, &dy);
}

// ----------------------------------------------------------------------------
// GELU and LayerNorm inside the FP8 casts beside them (llmc/gelu_fp8.cuh, llmc/layernorm_fp8.cuh): where GELU's or
// LayerNorm's output, or GELU's input gradient, is read only by one per-tensor cast, the cast makes it from what GELU
// or LayerNorm reads, and the bf16 tensor is neither written nor read back. The cast needs its scale before it runs:
// delayed scaling's comes from the history; current scaling's from an amax pass just before it over the same values,
// made the same way (fused_cast_needs_amax_pass). The same bytes as gelu_forward / gelu_backward / layernorm_forward
// and the separate amax pass and cast (model->fused_fp8_casts 0 runs those; test_gpt_fp8 compares the two). The copies
// they write are linear_cast's (its views of them: linear_cast with no input).

// Forward: in training, where the module's fprop is FP8 and its wgrad reads the x^T the forward keeps (the recompute
// does not drop the input: -r 0 for GELU's output, -r 0 or 1 for LayerNorm's), its input cast is its bf16 input's only
// reader, so the cast may make that input itself.
static int input_cast_is_only_reader(const GPT2* m, int module) {
    LinearPrecision lp = gpt2_linear_precision(m);
    return m->fused_fp8_casts && m->training && linear_gemm_is_fp8(&lp, module, LINEAR_GEMM_FPROP) &&
           linear_keeps_input_t(&lp, module, m->recompute);
}
static int input_made_in_fp8_cast(const GPT2* m, int module) {
    return !fp8_recipe_is_block_scaled(&m->recipe) && input_cast_is_only_reader(m, module);
}

// A fused per-tensor cast's scale: delayed scaling's is in the slot's cell already; current scaling's comes from the
// amax of the values the cast is about to make, by an amax pass with the same input just before it (llmc/gelu_fp8.cuh's
// and llmc/layernorm_fp8.cuh's *_amax_scale) into current_scale_target's cells, which recorded_cast_target then hands
// the cast. Only training fuses, so these casts always record.
static int fused_cast_needs_amax_pass(const GPT2* m) { return m->recipe.scaling == FP8_SCALING_CURRENT; }

// Blockwise's twins (a block cast takes each block's scale from its own amax inside the cast, so it needs no scale
// ahead of it): a module's input is made inside its input block cast when that cast is its only reader: in training
// (an evaluation forward writes the tensor and casts it, as delayed scaling's does), the module's fprop in FP8 (not
// -fp8_fprop 0, nor a BF16 end block under -fp8_bf16_first_last) and its wgrad reading the columnwise copy the forward
// keeps (linear_keeps_input_t: FP8 wgrad, not -fp8_wgrad 0, and not a recompute that drops the input: -r 1 or 2 for
// GELU's output, -r 2 for LayerNorm's, whose backward remakes the tensor and casts that). Then the cast writes both
// copies in one pass and the bf16 tensor is neither written nor read: GELU's output (fcproj's input) from fch, and
// LayerNorm's (qkv's, fc's) from the residual stream and the row statistics. (fused_fp8_casts is always 1 here:
// -fp8_fused_casts is delayed scaling's flag; the tests set the field to 0 to compare with the separate path.)
static int block_cast_makes_input(const GPT2* m, int module) {
    return m->recipe.scaling == FP8_SCALING_BLOCKWISE && input_cast_is_only_reader(m, module);
}
static int gelu_in_block_cast(const GPT2* m, int module) { return block_cast_makes_input(m, module); }
static int layernorm_in_block_cast(const GPT2* m, int l, int kind) {
    return block_cast_makes_input(m, l * LINEARS_PER_BLOCK + kind);
}

// GELU's output, fcproj's input, made inside fcproj's input cast (delayed scaling's fused cast, or blockwise's)
static int gelu_in_fcproj_cast(const GPT2* m, int l) {
    int module = l * LINEARS_PER_BLOCK + LINEAR_FCPROJ;
    return input_made_in_fp8_cast(m, module) || gelu_in_block_cast(m, module);
}

// LayerNorm's output, the input of the linear of kind `kind` (qkv after ln1, fc after ln2), made inside its input cast
// (delayed scaling's fused cast; blockwise's twin is layernorm_in_block_cast)
static int layernorm_in_input_cast(const GPT2* m, int l, int kind) {
    return input_made_in_fp8_cast(m, l * LINEARS_PER_BLOCK + kind);
}

// Backward: where fc's dgrad and wgrad both read its FP8 grad_output, the cast is GELU's input gradient's only reader
// (delayed scaling's fused cast; blockwise's block cast with GELU's backward inside, its twin)
static int grad_output_cast_is_gelu_grad_only_reader(const GPT2* m, int l) {
    LinearPrecision lp = gpt2_linear_precision(m);
    int module = l * LINEARS_PER_BLOCK + LINEAR_FC;
    return m->fused_fp8_casts && linear_gemm_is_fp8(&lp, module, LINEAR_GEMM_DGRAD) &&
           linear_gemm_is_fp8(&lp, module, LINEAR_GEMM_WGRAD);
}
static int gelu_in_fc_grad_output_cast(const GPT2* m, int l) {
    return !fp8_recipe_is_block_scaled(&m->recipe) && grad_output_cast_is_gelu_grad_only_reader(m, l);
}
static int gelu_in_block_grad_output_cast(const GPT2* m, int l) {
    return m->recipe.scaling == FP8_SCALING_BLOCKWISE && grad_output_cast_is_gelu_grad_only_reader(m, l);
}

// Layer l's GELU and fcproj forward: out (B, T, C) = fcproj(gelu(fch)), fch (B, T, 4C) fc's output. Either GELU runs
// inside fcproj's input cast (gelu_in_fcproj_cast: FP8 x and the kept x^T from fch, recording the amax of GELU's
// output as linear_cast would; fch_gelu not written: delayed scaling's gelu_forward_fp8, or blockwise's block cast
// with GELU inside, through linear_cast), or gelu_forward writes fch_gelu (B, T, 4C) and linear_forward reads it.
static void gelu_fcproj_forward(GPT2* model, int l, floatX* out, const floatX* fch, floatX* fch_gelu) {
    int module = l * LINEARS_PER_BLOCK + LINEAR_FCPROJ;
    int rows = model->B * model->T, C4 = 4 * model->config.channels;
    if (!gelu_in_fcproj_cast(model, l)) {
        gelu_forward(fch_gelu, fch, (size_t)rows * C4, model->stream);
        linear_forward(model, module, out, fch_gelu, model->B, model->T);
        return;
    }
    if (gelu_in_block_cast(model, module)) {  // both copies from fch, GELU inside the block cast
        Fp8BlockMade gelu = {FP8_BLOCK_FROM_GELU, NULL, NULL, NULL, NULL, NULL};
        Fp8Operand x = linear_cast_of(model, module, LINEAR_INPUT_FPROP, fch, rows, 1, NULL, &gelu);
        linear_fprop(model, module, out, &x);
        return;
    }
    Fp8Operand x = linear_cast(model, module, LINEAR_INPUT_FPROP, NULL, rows, 1, NULL);
    int slot = fp8_meta_fwd_slot(&model->fp8, module, FP8_FWD_INPUT);
    if (fused_cast_needs_amax_pass(model)) {
        cudaCheck(gelu_forward_amax_scale(fch, (size_t)rows * C4, model->fp8.forward_format,
                                          current_scale_target(model, slot), model->amax_workspace, model->num_sms,
                                          model->stream));
    }
    Fp8CastTarget t = recorded_cast_target(model, slot);
    cudaCheck(gelu_forward_fp8((uint8_t*)x.rowwise.data, kept_input_t(model, module), fch, rows, C4, t.scale, t.amax,
                               t.stats, model->fp8.forward_format, model->stream));
    linear_fprop(model, module, out, &x);
}

// Layer l's GELU backward, as fc's grad_output: dgelu (B, T, 4C) holds the gradient of GELU's output (fcproj's dgrad),
// fch (B, T, 4C) fc's output. Returns what fc's linear_backward takes as its grad_output: dgelu itself, overwritten by
// gelu_backward with GELU's input gradient; or NULL where GELU's backward runs inside fc's grad_output cast
// (gelu_in_fc_grad_output_cast: FP8 dy and dy^T, recording the amax, and fc's bias gradient from the cast's partials,
// dgelu left as it was; blockwise's twin, gelu_in_block_grad_output_cast: the block cast's two copies and their
// scales, through linear_cast).
static const floatX* gelu_fc_grad_output(GPT2* model, int l, floatX* dgelu, const floatX* fch) {
    int rows = model->B * model->T, C4 = 4 * model->config.channels;
    int module = l * LINEARS_PER_BLOCK + LINEAR_FC;
    LinearModule lm = linear_module(model, module);
    if (gelu_in_block_grad_output_cast(model, l)) {
        Fp8BlockMade gelu_backward = {FP8_BLOCK_FROM_GELU_BACKWARD, fch, NULL, NULL, NULL, NULL};
        linear_cast_of(model, module, LINEAR_GRAD_OUTPUT_DGRAD, dgelu, rows, 1, lm.dbias, &gelu_backward);
        return NULL;
    }
    if (!gelu_in_fc_grad_output_cast(model, l)) {
        gelu_backward(dgelu, fch, dgelu, (size_t)rows * C4, model->stream);
        return dgelu;
    }
    int slot = fp8_meta_bwd_slot(&model->fp8, module, FP8_BWD_GRAD_OUTPUT);
    if (fused_cast_needs_amax_pass(model)) {
        cudaCheck(gelu_backward_amax_scale(fch, dgelu, (size_t)rows * C4, model->fp8.backward_format,
                                           current_scale_target(model, slot), model->amax_workspace, model->num_sms,
                                           model->stream));
    }
    Fp8CastTarget g = recorded_cast_target(model, slot);
    float* dbias_partials = lm.dbias ? model->column_partials : NULL;
    cudaCheck(gelu_backward_fp8(model->fp8_dy.codes, model->fp8_dy.codes_t, dbias_partials, fch, dgelu, rows, C4,
                                g.scale, g.amax, g.stats, model->fp8.backward_format, model->stream));
    if (lm.dbias) { bias_backward_reduce(lm.dbias, model->column_partials, rows, C4, model->stream); }
    return NULL;
}

// Layer l's attention in FP8 (-fp8_attention 1; the CPU's attention_fp8_forward_casts, attention_forward with
// AttentionFp8, attention_fp8_output): q, k, v cast to E4M3 with the qkv GEMM's output slot (its amax and counts
// recorded as any forward cast's); cuDNN's FP8 forward from those codes with the softmax output's scale (block l's
// attention module's S slot) and the output's (attproj's input slot: the output is that GEMM's FP8 input), writing
// the E4M3 output, the statistics (training) and the two amaxes; then out (B, T, C) = the output dequantized, bf16,
// and the amaxes into row 0 (training). The BF16 backward reads qkv with out and the statistics: with -fp8_attention
// 1 the GEMM's bf16 output as it is (TE keeps q, k, v in high precision for it when they do not arrive in FP8); with 2
// (training) their E4M3 codes dequantized to bf16 in its place, as TE's fp8_mha hands its backward (llmc/linear.h's
// FP8_ATTENTION_MHA; the output's dequantizing kernel, so the same bits as the CPU's). attproj's forward then casts
// out with its input slot's scale, recording nothing (linear_forward): the codes cuDNN wrote, and the x^T its wgrad
// keeps.
#ifdef ENABLE_CUDNN
static void attention_fp8_forward_layer(GPT2* model, int l, floatX* out, floatX* qkv) {
    int B = model->B, T = model->T, C = model->config.channels, NH = model->config.num_heads, L = model->config.num_layers;
    size_t BTC = (size_t)B * T * C;
    Fp8Meta* meta = &model->fp8;
    int qkv_slot = fp8_meta_fwd_slot(meta, l * LINEARS_PER_BLOCK + LINEAR_QKV, FP8_FWD_OUTPUT);
    int s_slot = fp8_meta_fwd_slot(meta, fp8_attention_module(L, l), FP8_ATTENTION_S);
    int o_slot = fp8_meta_fwd_slot(meta, l * LINEARS_PER_BLOCK + LINEAR_ATTPROJ, FP8_FWD_INPUT);
    Fp8CastTarget q = recorded_cast_target(model, qkv_slot);
    cudaCheck(fp8_cast_amax(model->attention_qkv_fp8, qkv, BTC * 3, q.scale, q.amax, q.stats,
                            fp8_meta_slot_format(meta, qkv_slot), model->num_sms, model->stream));
    float* cells = model->attention_fp8_cells + (size_t)l * ATTENTION_FP8_CELLS * 4;
    if (model->fp8_attention == FP8_ATTENTION_MHA && model->training) {  // (cuDNN's forward reads the codes)
        cudaCheck(attention_fp8_output(qkv, model->attention_qkv_fp8, BTC * 3, fp8_meta_slot_format(meta, qkv_slot),
                                       meta->scale_inv + qkv_slot, cells, NULL, NULL, model->num_sms, model->stream));
    }
    cudaCheck(attention_fp8_scales(cells, slot_scale(model, s_slot), slot_scale(model, o_slot), model->stream));
    CudnnFp8ForwardScales scales = {gemm_scale_inv_of(model, slot_scale(model, qkv_slot)),
                                    gemm_scale_inv_of(model, slot_scale(model, s_slot)),
                                    cells + ATTENTION_FP8_SCALE_S * 4, cells + ATTENTION_FP8_SCALE_O * 4,
                                    cells + ATTENTION_FP8_AMAX_S * 4, cells + ATTENTION_FP8_AMAX_O * 4};
    float* stats = model->training ? model->acts.attention_stats + (size_t)l * model->stats_layer_floats : NULL;
    attention_forward_cudnn_fp8(model->cudnn_attention, model->attention_out_fp8, stats, model->attention_qkv_fp8,
                                &scales, B, T, C, NH, model->stream);
    cudaCheck(attention_fp8_output(out, model->attention_out_fp8, BTC, fp8_meta_slot_format(meta, o_slot),
                                   meta->scale_inv + o_slot, cells, model->training ? fp8_meta_amax_row0(meta, s_slot) : NULL,
                                   model->training ? fp8_meta_amax_row0(meta, o_slot) : NULL, model->num_sms,
                                   model->stream));
}
#endif

// Layer l's attention: out (B, T, C) from qkv (B, T, 3C), keeping what the backward needs when `training` (cuDNN:
// the softmax statistics; plain: the attention matrix, always; -fp8_attention 2: q, k, v in E4M3, in qkv's place).
static void attention_forward_layer(GPT2* model, int l, floatX* out, floatX* qkv) {
    int B = model->B, T = model->T, C = model->config.channels, NH = model->config.num_heads;
    LinearPrecision lp = gpt2_linear_precision(model);
    if (attention_is_fp8(&lp, l)) {  // (gpt2_gpu_init made sure it is cuDNN's, with FP8 graphs)
#ifdef ENABLE_CUDNN
        attention_fp8_forward_layer(model, l, out, qkv);
        return;
#endif
    }
    if (model->attention_kind == ATTENTION_PLAIN) {
        attention_forward(out, model->acts.att + (size_t)l * B * NH * T * T, qkv, B, T, C, NH, &model->attention,
                          model->cublas, model->stream);
        return;
    }
#ifdef ENABLE_CUDNN
    float* stats = model->training ? model->acts.attention_stats + (size_t)l * model->stats_layer_floats : NULL;
    attention_forward_cudnn(model->cudnn_attention, out, stats, qkv, B, T, C, NH, model->stream);
#else
    die("cuDNN attention in a build without cuDNN");
#endif
}

// Layer l's attention backward: dqkv (B, T, 3C) written from dout (B, T, C) and what the forward kept.
static void attention_backward_layer(GPT2* model, int l, floatX* dqkv, const floatX* dout) {
    int B = model->B, T = model->T, C = model->config.channels, NH = model->config.num_heads;
    size_t BTC = (size_t)B * T * C;
    const floatX* qkv = model->acts.qkv + (size_t)l * BTC * 3;
    if (model->attention_kind == ATTENTION_PLAIN) {
        attention_backward(dqkv, dout, qkv, model->acts.att + (size_t)l * B * NH * T * T, B, T, C, NH,
                           &model->attention, model->dq, model->dk, model->dv, model->cublas, model->stream);
        return;
    }
#ifdef ENABLE_CUDNN
    attention_backward_cudnn(model->cudnn_attention, dqkv, dout, qkv, model->acts.atty + (size_t)l * BTC,
                             model->acts.attention_stats + (size_t)l * model->stats_layer_floats, B, T, C, NH,
                             model->stream);
#else
    (void)qkv;
    die("cuDNN attention in a build without cuDNN");
#endif
}

// Layer l's slice of `buffer`, the input (B, T, width) of its linear of kind `kind` (ln1, ln2, fch_gelu): its own
// where its backward reads it as the forward left it, else the one every other layer shares (llmc/linear.h's
// linear_input_slice).
static floatX* layer_input(const GPT2* m, floatX* buffer, int kind, int l, int width) {
    LinearPrecision lp = gpt2_linear_precision(m);
    int slice = linear_input_slice(&lp, kind, m->recompute, l, NULL);
    return buffer + (size_t)slice * m->B * m->T * width;
}

// Whether layer l's backward makes its input of kind `kind` again before it reads it: the recompute dropped it (-r 2
// LayerNorm's outputs, -r 1 or 2 GELU's) and the module's wgrad reads it (in BF16, or to cast it in FP8).
static int backward_remakes_input(const GPT2* m, int kind, int l) {
    LinearPrecision lp = gpt2_linear_precision(m);
    int module = l * LINEARS_PER_BLOCK + kind;
    return linear_input_recomputed(m->config.num_layers, module, m->recompute) &&
           linear_backward_reads_input(&lp, module, m->recompute);
}

// What linear_backward gets as a block linear's input: its layer's slice where its backward reads it, else NULL
// (its wgrad reads the FP8 x^T the forward kept; a shared slice holds another layer's by then).
static const floatX* backward_input(const GPT2* m, const floatX* layer_slice, int module) {
    LinearPrecision lp = gpt2_linear_precision(m);
    return linear_backward_reads_input(&lp, module, m->recompute) ? layer_slice : NULL;
}

// Layer l's LayerNorm before its linear of kind `kind` (ln1 before qkv, ln2 before fc), and that linear: out = linear(
// LayerNorm(x)), x (B, T, C) the LayerNorm's input, the residual stream. Where residual_from is not NULL, x is first
// made as residual_from + branch (both (B, T, C)) and written, in the LayerNorm's pass (residual_layernorm_forward).
// Either the pass writes the LayerNorm's output (layer_input's slice) and linear_forward reads it, or it writes only
// the row statistics and the linear's input cast makes the output from them (layernorm_in_input_cast: FP8 x and the
// kept x^T, recording the amax of LayerNorm's output as linear_cast would; blockwise's twin layernorm_in_block_cast:
// the block cast's two copies and their scales, through linear_cast; the slice not written).
static void layernorm_linear_forward(GPT2* model, int l, int kind, floatX* out, floatX* x, const floatX* residual_from,
                                     const floatX* branch) {
    int B = model->B, T = model->T, C = model->config.channels, rows = B * T;
    int module = l * LINEARS_PER_BLOCK + kind;
    int which = kind == LINEAR_QKV ? 1 : 2;
    ActivationTensors* a = &model->acts;
    ParameterTensorsX* p = &model->params;
    float* mean = (which == 1 ? a->ln1_mean : a->ln2_mean) + (size_t)l * rows;
    float* rstd = (which == 1 ? a->ln1_rstd : a->ln2_rstd) + (size_t)l * rows;
    const floatX* weight = (which == 1 ? p->ln1w : p->ln2w) + (size_t)l * C;
    const floatX* bias = (which == 1 ? p->ln1b : p->ln2b) + (size_t)l * C;
    int fused = layernorm_in_input_cast(model, l, kind);
    int in_block_cast = layernorm_in_block_cast(model, l, kind);
    floatX* ln_out = fused || in_block_cast ? NULL : layer_input(model, which == 1 ? a->ln1 : a->ln2, kind, l, C);
    if (residual_from) {
        residual_layernorm_forward(x, ln_out, mean, rstd, residual_from, branch, weight, bias, B, T, C, model->stream);
    } else {
        layernorm_forward(ln_out, mean, rstd, x, weight, bias, B, T, C, model->stream);
    }
    if (in_block_cast) {
        Fp8BlockMade layernorm = {FP8_BLOCK_FROM_LAYERNORM, NULL, mean, rstd, weight, bias};
        Fp8Operand x_fp8 = linear_cast_of(model, module, LINEAR_INPUT_FPROP, x, rows, 1, NULL, &layernorm);
        linear_fprop(model, module, out, &x_fp8);
        return;
    }
    if (!fused) {
        linear_forward(model, module, out, ln_out, B, T);
        return;
    }
    Fp8Operand x_fp8 = linear_cast(model, module, LINEAR_INPUT_FPROP, NULL, rows, 1, NULL);
    int slot = fp8_meta_fwd_slot(&model->fp8, module, FP8_FWD_INPUT);
    if (fused_cast_needs_amax_pass(model)) {
        cudaCheck(layernorm_forward_amax_scale(x, mean, rstd, weight, bias, rows, C, model->fp8.forward_format,
                                               current_scale_target(model, slot), model->amax_workspace,
                                               model->num_sms, model->stream));
    }
    Fp8CastTarget t = recorded_cast_target(model, slot);
    cudaCheck(layernorm_forward_fp8((uint8_t*)x_fp8.rowwise.data, kept_input_t(model, module), x, mean, rstd, weight,
                                    bias, rows, C, t.scale, t.amax, t.stats, model->fp8.forward_format, model->stream));
    linear_fprop(model, module, out, &x_fp8);
}

// inputs, targets (B, T) host -> device (targets may be NULL: not copied), queued on the stream from the pinned
// host_inputs / host_targets: the host hands the batch over without waiting for the GPU. host_inputs keeps the
// inputs for the token buckets the backward builds (gpt2_set_buckets).
static void gpt2_set_batch(GPT2* model, const int* inputs, const int* targets) {
    size_t bytes = (size_t)model->B * model->T * sizeof(int);
    cudaCheck(cudaEventSynchronize(model->batch_copied));  // the last batch's copies have read the pinned memory
    memcpy(model->host_inputs, inputs, bytes);
    cudaCheck(cudaMemcpyAsync(model->inputs, model->host_inputs, bytes, cudaMemcpyHostToDevice, model->stream));
    if (targets) {
        memcpy(model->host_targets, targets, bytes);
        cudaCheck(cudaMemcpyAsync(model->targets, model->host_targets, bytes, cudaMemcpyHostToDevice, model->stream));
    }
    cudaCheck(cudaEventRecord(model->batch_copied, model->stream));
}

// The encoder backward's token buckets of the batch gpt2_set_batch kept (encoder_buckets), built on the host and
// queued to the device. gpt2_backward calls it after queuing every layer's backward, so the host builds them while
// the GPU runs those (llm.c's order), and the copies land just before the encoder backward reads them.
static void gpt2_set_buckets(GPT2* model) {
    int BT = model->B * model->T;
    cudaStream_t s = model->stream;
    cudaCheck(cudaEventSynchronize(model->buckets_copied));  // the last buckets' copies have read the pinned memory
    model->num_buckets = encoder_buckets(model->host_inputs, BT, model->config.vocab_size, model->host_positions,
                                         model->host_bucket_start, model->host_bucket_token, model->host_token_count);
    cudaCheck(cudaMemcpyAsync(model->bucket_positions, model->host_positions, (size_t)BT * sizeof(int),
                              cudaMemcpyHostToDevice, s));
    cudaCheck(cudaMemcpyAsync(model->bucket_start, model->host_bucket_start, (size_t)(model->num_buckets + 1) * sizeof(int),
                              cudaMemcpyHostToDevice, s));
    cudaCheck(cudaMemcpyAsync(model->bucket_token, model->host_bucket_token, (size_t)model->num_buckets * sizeof(int),
                              cudaMemcpyHostToDevice, s));
    int* host_count = model->host_bucket_start + BT + 1;  // pinned, as the rest
    *host_count = model->num_buckets;
    cudaCheck(cudaMemcpyAsync(model->bucket_count, host_count, sizeof(int), cudaMemcpyHostToDevice, s));
    cudaCheck(cudaEventRecord(model->buckets_copied, s));
}

// The mean of the batch's losses (B*T, host_losses once copied back), summed on the host in double as the CPU's.
static float gpt2_losses_mean(const GPT2* model) {
    size_t BT = (size_t)model->B * model->T;
    double sum = 0.0;
    for (size_t i = 0; i < BT; i++) { sum += model->host_losses[i]; }
    return (float)(sum / BT);
}

// Queues the copy of the batch's losses (B*T on the device) into host_losses, after the classifier that wrote them.
static void gpt2_copy_losses_to_host(GPT2* model) {
    size_t bytes = (size_t)model->B * model->T * sizeof(float);
    cudaCheck(cudaMemcpyAsync(model->host_losses, model->acts.losses, bytes, cudaMemcpyDeviceToHost, model->stream));
    cuda_graph_aware_event_record(model->losses_copied, model->stream);  // a node of the backward's graph there
}

// The forward's kernels, from the batch on the device (gpt2_set_batch copied it) to the logits: what gpt2_forward
// queues, and what -cuda_graph 1 captures of a training forward.
static void gpt2_forward_queue(GPT2* model) {
    int B = model->B, T = model->T, C = model->config.channels, L = model->config.num_layers;
    size_t BT = (size_t)B * T, BTC = BT * C;
    ActivationTensors* a = &model->acts;
    ParameterTensorsX* p = &model->params;
    cudaStream_t s = model->stream;
    encoder_forward(a->encoded, model->inputs, p->wte, p->wpe, B, T, C, s);
    // Each residual add is written by the pass of the LayerNorm after it (residual_layernorm_forward): block l's
    // second one, residual3 = residual2 + fcproj's output, by block l + 1's ln1, the last block's by lnf. proj_out
    // (B, T, C) holds the branch (the CPU's attproj, then fcproj) until then.
    for (int l = 0; l < L; l++) {
        floatX* residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * BTC;  // (B, T, C) this block's input
        const floatX* previous_residual2 = l == 0 ? NULL : a->residual2 + (l - 1) * BTC;
        floatX* qkv = a->qkv + l * BTC * 3;
        floatX* atty = a->atty + l * BTC;
        floatX* residual2 = a->residual2 + l * BTC;
        floatX* fch = a->fch + l * BTC * 4;
        floatX* fch_gelu = layer_input(model, a->fch_gelu, LINEAR_FCPROJ, l, 4 * C);
        int module = l * LINEARS_PER_BLOCK;

        // l > 0: residual = block l - 1's residual2 + its fcproj output, then ln1 and qkv
        layernorm_linear_forward(model, l, LINEAR_QKV, qkv, residual, previous_residual2, a->proj_out);
        attention_forward_layer(model, l, atty, qkv);
        linear_forward(model, module + LINEAR_ATTPROJ, a->proj_out, atty, B, T);  // the CPU's attproj (B, T, C)
        // residual2 = residual + attproj's output, then ln2 and fc
        layernorm_linear_forward(model, l, LINEAR_FC, fch, residual2, residual, a->proj_out);
        gelu_fcproj_forward(model, l, a->proj_out, fch, fch_gelu);  // the CPU's gelu_forward, fcproj (B, T, C)
    }
    // the last block's residual3 = its residual2 + its fcproj output, then lnf
    floatX* last = a->residual3 + (L - 1) * BTC;
    residual_layernorm_forward(last, a->lnf, a->lnf_mean, a->lnf_rstd, a->residual2 + (L - 1) * BTC, a->proj_out,
                               p->lnfw, p->lnfb, B, T, C, s);
    linear_forward(model, linear_lm_head(model->config.num_layers), a->logits, a->lnf, B, T);
}

// -cuda_graph 1: whether this training pass goes through `graph` (replayed, captured first where needed), or runs
// kernel by kernel: a key's first pass (cuda_graph_use).
static int gpt2_uses_graphs(GPT2* model, CudaGraph* graph, uint64_t key) {
    return model->cuda_graph && model->training && cuda_graph_use(graph, key);
}

// A graph's key (llmc/cuda_graph.cuh): the host values a training pass's kernels take that may change between calls.
static uint64_t gpt2_graph_key(const GPT2* model, float loss_scale) {
    uint32_t scale_bits;
    memcpy(&scale_bits, &loss_scale, sizeof(scale_bits));
    return (uint64_t)scale_bits | (uint64_t)(model->fp8_collect_stats != 0) << 32 |
           (uint64_t)(model->reduce_in_backward != 0) << 33;
}

// Forward on inputs and targets (B, T), host arrays (targets may be NULL: logits only, for sampling), B and T as
// allocated (the GPU's shapes are fixed). With targets, the losses and their mean (mean_loss), the CPU's softmax and
// cross-entropy in one fused pass (llmc/fused_classifier.cuh). A training forward leaves that pass to gpt2_backward,
// which fuses it with the logits' gradient, one pass over the (B, T, Vp) logits instead of two: its mean_loss is
// there after the backward (the mains read it there on both trainers).
// -cuda_graph 1: a training forward's kernels are a graph's replay.
static void gpt2_forward(GPT2* model, const int* inputs, const int* targets, int B, int T) {
    if (B != model->B || T != model->T) { die("GPU forward with B=%d T=%d, allocated for B=%d T=%d", B, T, model->B, model->T); }
    int V = model->config.vocab_size, Vp = model->config.padded_vocab_size;
    gpt2_set_batch(model, inputs, targets);  // outside any graph: the replay reads the batch where this copies it
    ActivationTensors* a = &model->acts;
    cudaStream_t s = model->stream;
    uint64_t key = gpt2_graph_key(model, 0.0f);
    if (targets && gpt2_uses_graphs(model, &model->forward_graph, key)) {
        if (!cuda_graph_ready(&model->forward_graph, key)) {
            cuda_graph_capture_begin(s);
            gpt2_forward_queue(model);
            cuda_graph_capture_end(&model->forward_graph, s, key);
        }
        cuda_graph_launch(&model->forward_graph, s);
    } else {
        gpt2_forward_queue(model);
    }
    model->has_targets = targets != NULL;
    model->mean_loss = -1.0f;
    if (targets && !model->training) {  // evaluation: the losses now, the logits kept
        fused_classifier(a->logits, a->losses, 0.0f, model->targets, B, T, V, Vp, 0, s);
        gpt2_copy_losses_to_host(model);
        cudaCheck(cudaEventSynchronize(model->losses_copied));  // evaluation's loss is read now: nothing else is queued
        model->mean_loss = gpt2_losses_mean(model);
    }
}

// Starts the reduction over the ranks of the gradients of block l (its slice of every per-layer tensor), or with
// l = -1 of the shared tensors (wte, wpe, lnfw, lnfb), on comm_stream, after what the compute stream has done so far.
static void gpt2_reduce_gradients_async(GPT2* model, int l) {
    MultiGpu* mg = model->multi_gpu;
    int L = model->config.num_layers;
    cudaCheck(cudaEventRecord(model->grads_ready, model->stream));
    cudaCheck(cudaStreamWaitEvent(model->comm_stream, model->grads_ready, 0));
    multi_gpu_group_begin(mg);
    size_t offset = 0;
    for (int t = 0; t < NUM_PARAMETER_TENSORS; t++) {
        size_t n = model->param_sizes[t];
        if (l >= 0 && parameter_tensor_is_per_layer(t)) {
            size_t slice = n / L;
            multi_gpu_reduce_range(mg, model->grads_memory, offset + (size_t)l * slice, slice, model->num_parameters,
                                   model->comm_stream);
        } else if (l < 0 && !parameter_tensor_is_per_layer(t)) {
            multi_gpu_reduce_range(mg, model->grads_memory, offset, n, model->num_parameters, model->comm_stream);
        }
        offset += n;
    }
    multi_gpu_group_end(mg);
}

// A LayerNorm as the backward sees it: its input (the residual stream), its output (for the next linear's wgrad),
// its parameters and their gradients, and the mean and rstd its forward saved.
typedef struct {
    const floatX* inp;  // (B, T, C)
    floatX* out;        // (B, T, C)
    const floatX *weight, *bias;
    float *dweight, *dbias;
    const float *mean, *rstd;  // (B, T)
} LayerNormX;

// Block l's LayerNorm `which` (1: before the attention, 2: before the MLP).
static LayerNormX layernorm_x(GPT2* model, int l, int which) {
    int C = model->config.channels;
    size_t BT = (size_t)model->B * model->T, BTC = BT * C;
    ActivationTensors* a = &model->acts;
    ParameterTensorsX* p = &model->params;
    ParameterTensors* g = &model->grads;
    LayerNormX ln;
    if (which == 1) {
        LayerNormX ln1 = {l == 0 ? a->encoded : a->residual3 + (l - 1) * BTC, layer_input(model, a->ln1, LINEAR_QKV, l, C),
                          p->ln1w + l * C, p->ln1b + l * C, g->ln1w + l * C, g->ln1b + l * C, a->ln1_mean + l * BT,
                          a->ln1_rstd + l * BT};
        ln = ln1;
    } else {
        LayerNormX ln2 = {a->residual2 + l * BTC, layer_input(model, a->ln2, LINEAR_FC, l, C), p->ln2w + l * C, p->ln2b + l * C,
                          g->ln2w + l * C, g->ln2b + l * C, a->ln2_mean + l * BT, a->ln2_rstd + l * BT};
        ln = ln2;
    }
    return ln;
}

// -r 2: the LayerNorm's output again, from its input and saved statistics (the forward's bytes: layernorm_output),
// where the next linear (of kind `kind` in layer l) reads it in its backward.
static void layernorm_recompute_layer(GPT2* model, const LayerNormX* ln, int kind, int l) {
    if (!backward_remakes_input(model, kind, l)) { return; }
    layernorm_recompute(ln->out, ln->inp, ln->weight, ln->bias, ln->mean, ln->rstd, model->B, model->T,
                        model->config.channels, model->stream);
}

// dresidual (B, T, C) += the LayerNorm's input gradient from dout; its parameter gradients accumulate.
static void layernorm_backward_layer(GPT2* model, const LayerNormX* ln, const floatX* dout) {
    layernorm_backward(model->dresidual, ln->dweight, ln->dbias, dout, ln->inp, ln->weight, ln->mean, ln->rstd, model->B,
                       model->T, model->config.channels, model->column_partials, model->stream);
}

// Every gradient to 0 before a step's first micro-batch (the whole padded buffer: the reductions read the padding).
static void gpt2_zero_grad(GPT2* model) {
    cudaCheck(cudaMemsetAsync(model->grads_memory, 0, model->shard.padded * 4, model->stream));
}

// The backward's kernels (what gpt2_backward queues below), and what -cuda_graph 1 captures (in_graph: the token
// buckets are then copied before the graph, and the encoder backward's grid is fixed for every batch).
static void gpt2_backward_queue(GPT2* model, float loss_scale, int in_graph) {
    int B = model->B, T = model->T, C = model->config.channels, L = model->config.num_layers;
    int V = model->config.vocab_size, Vp = model->config.padded_vocab_size;
    size_t BT = (size_t)B * T, BTC = BT * C;
    ActivationTensors* a = &model->acts;
    ParameterTensorsX* p = &model->params;
    ParameterTensors* g = &model->grads;
    cudaStream_t s = model->stream;
    float dloss = loss_scale / (float)(B * T);  // d(mean loss)/d(loss_bt), the CPU's expression
    fused_classifier(a->logits, a->losses, dloss, model->targets, B, T, V, Vp, 1, s);
    gpt2_copy_losses_to_host(model);  // mean_loss is read at the end, once the whole backward is queued
    // LM head: dlnf -> dbtc; then the final LayerNorm into dresidual (the gradient of the last residual stream)
    linear_backward(model, linear_lm_head(model->config.num_layers), model->dbtc, a->logits, a->lnf, B, T);
    cudaCheck(cudaMemsetAsync(model->dresidual, 0, BTC * 2, s));
    LayerNormX lnf = {a->residual3 + (L - 1) * BTC, a->lnf, p->lnfw, p->lnfb, g->lnfw, g->lnfb, a->lnf_mean, a->lnf_rstd};
    layernorm_backward_layer(model, &lnf, model->dbtc);
    for (int l = L - 1; l >= 0; l--) {
        int module = l * LINEARS_PER_BLOCK;
        LayerNormX ln1 = layernorm_x(model, l, 1), ln2 = layernorm_x(model, l, 2);
        // what the recompute did not keep comes back from the same kernels on the same inputs, so the same bytes;
        // the FP8 casts of it below are wgrad's transposes, which never record an amax (the forward recorded it once)
        floatX* fch_gelu = layer_input(model, a->fch_gelu, LINEAR_FCPROJ, l, 4 * C);
        if (backward_remakes_input(model, LINEAR_FCPROJ, l)) { gelu_forward(fch_gelu, a->fch + l * BTC * 4, BTC * 4, s); }
        // dresidual holds d(residual3); residual3 = residual2 + fcproj: both get it. fcproj's input gradient:
        linear_backward(model, module + LINEAR_FCPROJ, model->dbt4c, model->dresidual,
                        backward_input(model, fch_gelu, module + LINEAR_FCPROJ), B, T);
        const floatX* fc_grad_output = gelu_fc_grad_output(model, l, model->dbt4c, a->fch + l * BTC * 4);
        layernorm_recompute_layer(model, &ln2, LINEAR_FC, l);
        linear_backward(model, module + LINEAR_FC, model->dbtc, fc_grad_output,
                        backward_input(model, ln2.out, module + LINEAR_FC), B, T);
        // d(residual2) = d(residual3) + LayerNorm2 backward, accumulated in place in dresidual
        layernorm_backward_layer(model, &ln2, model->dbtc);
        // residual2 = residual + attproj: attproj's output gradient is d(residual2)
        linear_backward(model, module + LINEAR_ATTPROJ, model->dbtc2, model->dresidual, a->atty + l * BTC, B, T);
        attention_backward_layer(model, l, model->dqkv, model->dbtc2);
        layernorm_recompute_layer(model, &ln1, LINEAR_QKV, l);
        linear_backward(model, module + LINEAR_QKV, model->dbtc, model->dqkv, backward_input(model, ln1.out, module + LINEAR_QKV),
                        B, T);
        layernorm_backward_layer(model, &ln1, model->dbtc);
        if (model->reduce_in_backward) { gpt2_reduce_gradients_async(model, l); }  // block l's gradients are final
    }
    if (!in_graph) { gpt2_set_buckets(model); }
    EncoderBuckets buckets = {model->bucket_positions, model->bucket_start, model->bucket_token, model->bucket_count,
                              in_graph ? encoder_graph_bucket_rows(B * T, V, model->encoder_graph_rows_most)
                                       : model->num_buckets};
    encoder_backward(g->wte, g->wpe, model->dresidual, &buckets, B, T, C, s);
    if (model->reduce_in_backward) {  // the shared tensors, then the compute stream waits for every reduction
        gpt2_reduce_gradients_async(model, -1);
        cudaCheck(cudaEventRecord(model->grads_reduced, model->comm_stream));
        cudaCheck(cudaStreamWaitEvent(s, model->grads_reduced, 0));
    }
}

// Backward of the last forward, a training one with targets; parameter gradients accumulate (scaled by loss_scale:
// 1 / (accumulation steps * ranks), so that the ranks' gradients sum to the single-GPU one). First the classifier
// pass the training forward left: the losses, their mean (mean_loss), and dlogits over the logits. -cuda_graph 1:
// the kernels are a graph's replay.
static void gpt2_backward(GPT2* model, float loss_scale) {
    if (!model->has_targets || !model->training) { die("backward needs a training forward with targets"); }
    cudaStream_t s = model->stream;
    uint64_t key = gpt2_graph_key(model, loss_scale);
    if (gpt2_uses_graphs(model, &model->backward_graph, key)) {
        // the buckets first, built on the host while the forward's graph runs; their copies land before this graph
        gpt2_set_buckets(model);
        if (!cuda_graph_ready(&model->backward_graph, key)) {
            cuda_graph_capture_begin(s);
            gpt2_backward_queue(model, loss_scale, 1);
            cuda_graph_capture_end(&model->backward_graph, s, key);
        }
        cuda_graph_launch(&model->backward_graph, s);
    } else {
        gpt2_backward_queue(model, loss_scale, 0);
    }
    // The host waits here for the classifier's losses, with the rest of the backward already in the GPU's queue (the
    // main loop needs the loss: a step whose loss is not finite is skipped).
    cudaCheck(cudaEventSynchronize(model->losses_copied));
    model->mean_loss = gpt2_losses_mean(model);
}

// The gradient norm: this rank's shard's sum of squares (per-block partials, then one block adds them in order: the
// same bits every run), summed over the ranks, into model->norm_squared, and a copy queued to the host. GPU differs:
// the host does not wait for it. What the CPU's main loop decides from the norm is decided on the device where the end
// of the step reads it: AdamW's clip factor, and, where the norm is not finite, a skipped step (the FP8 update only
// drops the step's amaxes, AdamW changes nothing, the weights' casts count nothing: fp8/update.cuh, llmc/adamw.cuh,
// gpt2_cast_weights_fp8). So the host queues the whole end of the step behind the backward, and reads the norm
// (gpt2_grad_norm_value) after. A loss that is not finite the host knows before it queues (gpt2_backward waited for
// it), and skips the step itself.
static void gpt2_grad_norm(GPT2* model) {
    MultiGpu* mg = model->multi_gpu;
    cudaStream_t s = model->stream;
    global_norm_squared(model->norm_squared, model->norm_partials, model->grads_memory + model->shard.offset,
                        model->shard.count, s);
    if (mg->zero_stage == 1) { multi_gpu_sum_scalar(mg, model->norm_squared, s); }
    cudaCheck(cudaMemcpyAsync(model->host_norm_squared, model->norm_squared, 4, cudaMemcpyDeviceToHost, s));
    cudaCheck(cudaEventRecord(model->norm_copied, s));
}

// The norm of the last gpt2_grad_norm, waiting for its copy (the step's report, the skipped steps' record).
static float gpt2_grad_norm_value(GPT2* model) {
    cudaCheck(cudaEventSynchronize(model->norm_copied));
    return sqrtf(*model->host_norm_squared);
}

// AdamW (decoupled weight decay on the 2-D tensors only) on the shard's fp32 masters, after clipping the gradients
// to a global norm of grad_clip, as the CPU's: the norm gpt2_grad_norm left on the device, where a norm that is not
// finite makes this change nothing; t is the 1-based step for the bias corrections. It writes the new bf16 weights of
// the shard into the full parameter buffer (a shard may start or end inside a tensor); ZeRO-1 then all-gathers the
// rest.
static void gpt2_update(GPT2* model, float learning_rate, float beta1, float beta2, float eps, float weight_decay,
                        float grad_clip, int t) {
    float bias1 = 1.0f - powf(beta1, (float)t), bias2 = 1.0f - powf(beta2, (float)t);
    const ZeroShard* shard = &model->shard;
    // the shard's part of every tensor, back to back from the shard's first parameter: one launch
    static_assert(NUM_PARAMETER_TENSORS <= ADAMW_MAX_TENSORS, "every parameter tensor in one AdamW launch");
    AdamwTensors tensors;
    memset(&tensors, 0, sizeof(tensors));
    size_t offset = 0;
    for (int tensor = 0; tensor < NUM_PARAMETER_TENSORS; tensor++) {
        size_t n = model->param_sizes[tensor], lo, hi;
        if (zero_shard_overlap(shard, offset, n, &lo, &hi)) {
            adamw_tensors_add(&tensors, hi - lo, parameter_tensor_is_2d(tensor) ? weight_decay : 0.0f);
        }
        offset += n;
    }
    if (tensors.count && tensors.end[tensors.count - 1] != shard->count) {
        die("AdamW: the shard's %zu parameters are not its tensors' %zu", shard->count, tensors.end[tensors.count - 1]);
    }
    adamw_update(model->master_memory, model->params_memory + shard->offset, model->grads_memory + shard->offset,
                 model->m_memory, model->v_memory, &tensors, learning_rate, beta1, beta2, bias1, bias2, eps,
                 model->norm_squared, grad_clip, model->stream);
}

// ----------------------------------------------------------------------------
// end of step: FP8 update, gradient norm, AdamW

// A host copy of the device's FP8 metadata (same layout, its own host memory), copied now: what the host reads
// from it (the diagnostics' window amaxes, a state file) it reads there. fp8_meta_free frees it.
static Fp8Meta fp8_meta_host_copy(GPT2* model) {
    Fp8Meta host = model->fp8;
    float* memory = (float*)calloc_or_die(host.num_floats, 4, "FP8 metadata");
    cudaCheck(cudaStreamSynchronize(model->stream));
    cudaCheck(cudaMemcpy(memory, model->fp8.memory, host.num_floats * 4, cudaMemcpyDeviceToHost));
    fp8_meta_point_into(&host, memory);
    return host;
}

// The FP8 end-of-step, as the CPU's: the amax all-reduce hook, then the update rule for every slot (fp8/update.cuh,
// one launch). `step` is the optimizer step that just finished. First, as the CPU keeps them, row 0 as this update
// sees it and, with a history, the window each new scale comes from, into fp8_diag_amax on the device (one small
// launch; nothing comes to the host and nothing waits: gpt2_fp8_diag_amaxes_to_host copies them where a file is
// written). Current scaling: no reduction, and the update only clears row 0. Where the gradient norm on the device
// is not finite (gpt2_grad_norm), both launches do what the CPU's skipped step does: drop the step's amaxes.
static void gpt2_fp8_end_of_step(GPT2* model, int step) {
    if (model->precision != PRECISION_FP8) { return; }
    if (fp8_meta_update_needs_host(&model->recipe)) { die("FP8 recipe callbacks run on the CPU trainer only"); }
    fp8_meta_reduce_amax(&model->fp8, &model->recipe);
    float* window_amax = fp8_recipe_has_history(&model->recipe) ? model->fp8_diag_amax + model->fp8.num_slots : NULL;
    cudaCheck(fp8_meta_window_amax_launch(&model->fp8, &model->recipe, model->fp8_diag_amax, window_amax,
                                          model->norm_squared, model->stream));
    cudaCheck(fp8_meta_update_launch(&model->fp8, model->fp8_gemm_scale_inv, &model->recipe, step, 0,
                                     model->norm_squared, model->stream));
}

// The host's copies of the diagnostics' amaxes, for a file about to be written: fp8_last_amax, and fp8_window_amax
// (delayed scaling: the update's window; current: each slot's last recorded cast's amax). Synchronizes the stream.
static void gpt2_fp8_diag_amaxes_to_host(GPT2* model) {
    size_t bytes = (size_t)model->fp8.num_slots * sizeof(float);
    cudaCheck(cudaStreamSynchronize(model->stream));
    cudaCheck(cudaMemcpy(model->fp8_last_amax, model->fp8_diag_amax, bytes, cudaMemcpyDeviceToHost));
    const float* window = fp8_recipe_has_history(&model->recipe) ? model->fp8_diag_amax + model->fp8.num_slots
                                                                 : model->fp8_current_amax;
    cudaCheck(cudaMemcpy(model->fp8_window_amax, window, bytes, cudaMemcpyDeviceToHost));
}

// The other way, for a state file just read: the device's cells take the host's values.
static void gpt2_fp8_diag_amaxes_to_device(GPT2* model) {
    size_t bytes = (size_t)model->fp8.num_slots * sizeof(float);
    cudaCheck(cudaMemcpy(model->fp8_diag_amax, model->fp8_last_amax, bytes, cudaMemcpyHostToDevice));
    float* window = fp8_recipe_has_history(&model->recipe) ? model->fp8_diag_amax + model->fp8.num_slots
                                                           : model->fp8_current_amax;
    cudaCheck(cudaMemcpy(window, model->fp8_window_amax, bytes, cudaMemcpyHostToDevice));
}

// The block recipes' block scale ranges since the last diagnostics line, device -> host copy (for a file about to be
// written) and back (after a state file was read); nothing for the per-tensor recipes.
static void gpt2_fp8_block_scale_ranges_to_host(GPT2* model) {
    if (!model->fp8_block_scale_range) { return; }
    cudaCheck(cudaStreamSynchronize(model->stream));
    cudaCheck(cudaMemcpy(model->fp8_block_scale_range_host, model->fp8_block_scale_range,
                         (size_t)model->fp8.num_slots * sizeof(Fp8BlockScaleRange), cudaMemcpyDeviceToHost));
}

static void gpt2_fp8_block_scale_ranges_to_device(GPT2* model) {
    if (!model->fp8_block_scale_range) { return; }
    cudaCheck(cudaMemcpy(model->fp8_block_scale_range, model->fp8_block_scale_range_host,
                         (size_t)model->fp8.num_slots * sizeof(Fp8BlockScaleRange), cudaMemcpyHostToDevice));
}

// A step the host skips (its loss is not finite) must not leave its (possibly non-finite) activation and gradient
// amaxes behind; weight slots keep theirs (fp8_meta_drop_step_amaxes): the update's launch, told the step is skipped.
static void gpt2_fp8_drop_step_amaxes(GPT2* model) {
    if (model->precision != PRECISION_FP8) { return; }
    cudaCheck(
        fp8_meta_update_launch(&model->fp8, model->fp8_gemm_scale_inv, &model->recipe, 0, 1, NULL, model->stream));
}

// params (P): every rank gets all bf16 weights and keeps the fp32 masters of its shard
static void gpt2_upload_params(GPT2* model, const float* params) {
    // all on the model's stream, in order (the fp32 values pass through the gradient buffer, free between steps)
    cudaStream_t s = model->stream;
    cudaCheck(cudaMemcpyAsync(model->grads_memory, params, model->num_parameters * 4, cudaMemcpyHostToDevice, s));
    float_to_bf16(model->params_memory, model->grads_memory, model->num_parameters, s);
    cudaCheck(cudaMemcpyAsync(model->master_memory, model->grads_memory + model->shard.offset, model->shard.count * 4,
                              cudaMemcpyDeviceToDevice, s));
    cudaCheck(cudaMemsetAsync(model->grads_memory, 0, model->shard.padded * 4, s));
    cudaCheck(cudaStreamSynchronize(s));
}

// ----------------------------------------------------------------------------
// model and state files

// The run's state as a checkpoint header (precision, FP8 shape, batch, step, RNG, data position).
static StateHeader gpt2_state_header(const GPT2* model, int step, uint64_t rng_state, const DataLoader* loader) {
    StateHeader h;
    memset(&h, 0, sizeof(h));
    h.num_processes = model->num_processes;
    h.process_rank = model->process_rank;
    h.precision = model->precision;
    h.fp8_modules = model->precision == PRECISION_FP8 ? model->fp8.num_modules : 0;
    h.recipe = model->recipe;
    if (model->precision != PRECISION_FP8) { fp8_recipe_default(&h.recipe); }
    h.fp8_bf16_first_last = model->fp8_bf16_first_last;
    h.fp8_lm_head = model->fp8_lm_head;
    h.fp8_attention = model->fp8_attention;
    h.B = model->B;
    h.T = model->T;
    h.total_batch = model->total_batch;
    h.step = step;
    h.num_parameters = (int64_t)model->num_parameters;
    h.opt_offset = (int64_t)model->shard.offset;
    h.opt_count = (int64_t)model->shard.count;
    h.rng_state = rng_state;
    h.shard_index = loader ? (int64_t)loader->current_shard_idx : 0;
    h.shard_position = loader ? (int64_t)loader->current_position : 0;
    return h;
}

// Host buffers for the FP8 arrays of this rank's state file: the metadata and the cast counters (fresh, filled from
// the device or from the file), the diagnostics' last and window amaxes and the block recipes' block scale ranges (the
// host's own copies). NULL arrays without FP8.
static StateFp8Arrays gpt2_state_fp8_arrays(GPT2* model) {
    StateFp8Arrays a = {NULL, NULL, NULL, NULL, NULL};
    if (model->precision != PRECISION_FP8) { return a; }
    a.meta = (float*)calloc_or_die(model->fp8.num_floats, 4, "FP8 metadata");
    a.last_amax = model->fp8_last_amax;
    a.window_amax = model->fp8_window_amax;
    a.block_scale_range = model->fp8_block_scale_range_host;  // NULL but for the block recipes
    a.stats = (Fp8QuantStats*)calloc_or_die((size_t)model->fp8.num_slots, sizeof(Fp8QuantStats), "FP8 stats");
    return a;
}

static void gpt2_state_fp8_arrays_free(StateFp8Arrays* a) {
    free(a->meta);
    free(a->stats);
}

// Checkpoint `step` into dir, as the CPU's: the model file from rank 0 (every rank's master shard gathered through the
// gradient buffer, free between steps), a state file per rank (its moments and FP8 state), DONE after every rank's.
// Every rank must call this.
static void gpt2_save_checkpoint(GPT2* model, const char* dir, int step, uint64_t rng_state, const DataLoader* loader,
                                 const CheckpointRunState* run_state) {
    MultiGpu* mg = model->multi_gpu;
    float* params = (float*)calloc_or_die(model->num_parameters, 4, "parameters");
    float* m = (float*)calloc_or_die(model->shard.count, 4, "AdamW m");
    float* v = (float*)calloc_or_die(model->shard.count, 4, "AdamW v");
    multi_gpu_gather_masters(mg, model->grads_memory, model->master_memory, &model->shard, model->stream);
    cudaCheck(cudaStreamSynchronize(model->stream));
    cudaCheck(cudaMemcpy(params, model->grads_memory, model->num_parameters * 4, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(m, model->m_memory, model->shard.count * 4, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(v, model->v_memory, model->shard.count * 4, cudaMemcpyDeviceToHost));
    StateFp8Arrays fp8 = gpt2_state_fp8_arrays(model);
    if (model->precision == PRECISION_FP8) {
        cudaCheck(cudaMemcpy(fp8.meta, model->fp8.memory, model->fp8.num_floats * 4, cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(fp8.stats, model->fp8_stats, (size_t)model->fp8.num_slots * sizeof(Fp8QuantStats),
                             cudaMemcpyDeviceToHost));
        gpt2_fp8_diag_amaxes_to_host(model);
        gpt2_fp8_block_scale_ranges_to_host(model);
    }
    StateHeader h = gpt2_state_header(model, step, rng_state, loader);
    checkpoint_run_state_put(&h, run_state);
    // every rank has the gathered masters: each state file records the model file's checksum, rank 0 writes the file
    h.model_checksum = checkpoint_model_checksum(step, &model->config, params, model->num_parameters);
    if (mg->process_rank == 0) { checkpoint_save_model(dir, step, &model->config, params, model->num_parameters); }
    checkpoint_save_state(dir, step, m, v, &h, model->precision == PRECISION_FP8 ? &fp8 : NULL);
    multi_gpu_barrier(mg);
    if (mg->process_rank == 0) { checkpoint_mark_done(dir, step); }
    gpt2_state_fp8_arrays_free(&fp8);
    free(params);
    free(m);
    free(v);
}

// Restores parameters, AdamW moments and the FP8 state of checkpoint `step` in `dir`, as the CPU's; returns the RNG
// state and the data position through the pointers.
static void gpt2_load_checkpoint(GPT2* model, const char* dir, int step, uint64_t* rng_state, size_t* shard_index,
                                 size_t* shard_position, CheckpointRunState* run_state) {
    float* params = (float*)calloc_or_die(model->num_parameters, 4, "parameters");
    float* m = (float*)calloc_or_die(model->shard.count, 4, "AdamW m");
    float* v = (float*)calloc_or_die(model->shard.count, 4, "AdamW v");
    StateHeader h = gpt2_state_header(model, step, 0, NULL);
    StateFp8Arrays fp8 = gpt2_state_fp8_arrays(model);
    checkpoint_load(dir, step, &model->config, params, m, v, &h, model->precision == PRECISION_FP8 ? &fp8 : NULL);
    checkpoint_run_state_get(&h, run_state);
    gpt2_upload_params(model, params);
    cudaCheck(cudaMemcpy(model->m_memory, m, model->shard.count * 4, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(model->v_memory, v, model->shard.count * 4, cudaMemcpyHostToDevice));
    if (model->precision == PRECISION_FP8) {
        cudaCheck(cudaMemcpy(model->fp8.memory, fp8.meta, model->fp8.num_floats * 4, cudaMemcpyHostToDevice));
        gpt2_fp8_gemm_scale_inv_refresh(model);
        cudaCheck(cudaMemcpy(model->fp8_stats, fp8.stats, (size_t)model->fp8.num_slots * sizeof(Fp8QuantStats),
                             cudaMemcpyHostToDevice));
        gpt2_fp8_diag_amaxes_to_device(model);
        gpt2_fp8_block_scale_ranges_to_device(model);
    }
    gpt2_state_fp8_arrays_free(&fp8);
    free(params);
    free(m);
    free(v);
    *rng_state = h.rng_state;
    *shard_index = (size_t)h.shard_index;
    *shard_position = (size_t)h.shard_position;
}



// ----------------------------------------------------------------------------
// FP8 diagnostics: per slot amax, scale, and the fractions saturated / flushed to zero since the last line

// One fp8_diag.tsv block, as the CPU trainer writes it, from host copies of the scales and of this rank's cast
// counters since the last block (then reset on the device).
static void write_fp8_diagnostics(GPT2* model, FILE* f, int step) {
    if (model->precision != PRECISION_FP8 || !f) { return; }
    int S = model->fp8.num_slots;
    Fp8Meta host = fp8_meta_host_copy(model);
    Fp8QuantStats* stats = (Fp8QuantStats*)calloc_or_die((size_t)S, sizeof(Fp8QuantStats), "FP8 stats");
    cudaCheck(cudaMemcpy(stats, model->fp8_stats, (size_t)S * sizeof(Fp8QuantStats), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemsetAsync(model->fp8_stats, 0, (size_t)S * sizeof(Fp8QuantStats), model->stream));
    gpt2_fp8_diag_amaxes_to_host(model);
    gpt2_fp8_block_scale_ranges_to_host(model);
    LinearPrecision lp = gpt2_linear_precision(model);
    fp8_diag_write_block(f, step, &host, &lp, model->fp8_last_amax, model->fp8_window_amax, stats,
                         model->fp8_block_scale_range_host);
    if (model->fp8_block_scale_range) {  // a new range for the next line, on both sides
        for (int slot = 0; slot < S; slot++) { fp8_block_scale_range_reset(&model->fp8_block_scale_range_host[slot]); }
        gpt2_fp8_block_scale_ranges_to_device(model);
    }
    free(stats);
    fp8_meta_free(&host);
}

// The distribution after position t - 1 of tokens (1, T): every row of the (B, T) window holds the tokens (the
// model's shapes are fixed), row 0's logits at t - 1 come back as bf16 and the softmax runs on the host in double.
static void gpt2_next_token_probs(void* m, const int* tokens, int t, float* probs) {
    GPT2* model = (GPT2*)m;
    int B = model->B, T = model->T, V = model->config.vocab_size, Vp = model->config.padded_vocab_size;
    int* window = (int*)calloc_or_die((size_t)B * T, sizeof(int), "sample window");
    for (int b = 0; b < B; b++) { memcpy(window + (size_t)b * T, tokens, (size_t)T * sizeof(int)); }
    gpt2_forward(model, window, NULL, B, T);
    floatX* logits = (floatX*)calloc_or_die((size_t)V, sizeof(floatX), "sample logits");
    cudaCheck(cudaMemcpy(logits, model->acts.logits + (size_t)(t - 1) * Vp, (size_t)V * sizeof(floatX),
                         cudaMemcpyDeviceToHost));
    double maxval = -1e300, sum = 0.0;
    for (int i = 0; i < V; i++) { maxval = fmax(maxval, (double)__bfloat162float(logits[i])); }
    for (int i = 0; i < V; i++) { sum += exp((double)__bfloat162float(logits[i]) - maxval); }
    for (int i = 0; i < V; i++) { probs[i] = (float)(exp((double)__bfloat162float(logits[i]) - maxval) / sum); }
    free(logits);
    free(window);
}

static void sample_text(GPT2* model, const Tokenizer* tokenizer, int gen_tokens, Rng* rng) {
    int saved = model->training;
    model->training = 0;
    sample_text_with(stdout, model, gpt2_next_token_probs, model->T, model->config.vocab_size, tokenizer, gen_tokens,
                     rng);
    model->training = saved;
}

#ifndef TESTING
// What the GPU trainer refuses from the flags alone, in one line each, before any GPU is looked for (so the answer is
// the same on every machine; the CPU trainer's refuse_gpu_only_flags is its twin): fp32, E5M2 forward tensors (they
// would make E5M2 x E5M2 GEMMs, which cuBLASLt does not run on Hopper), -attn cudnn in a build without cuDNN,
// -fp8_attention 1 without cuDNN's attention.
static void refuse_cpu_only_flags(const TrainArgs* args) {
    if (args->precision == PRECISION_FP32) { die("-precision fp32 is the CPU reference's mode; the GPU trainer runs bf16 or fp8"); }
    if (args->precision == PRECISION_FP8 && args->recipe.fp8_format == FP8_RECIPE_E5M2) {
        die("-fp8 e5m2 is CPU-only (cuBLASLt has no E5M2 x E5M2 GEMM on Hopper): use -fp8 hybrid or e4m3 here, or "
            "train_gpt_fp8_cpu");
    }
    // -attn stays ATTENTION_DEFAULT when not given: gpt2_gpu_init then falls back to the plain attention where cuDNN
    // cannot run the shape, and -attn cudnn (or -fp8_attention 1) makes that an error
    if (gpu_attention_kind(args->attention) != ATTENTION_CUDNN && args->fp8_attention) {
        die("-fp8_attention %d runs cuDNN's FP8 attention%s", args->fp8_attention,
            args->attention == ATTENTION_PLAIN ? ", not -attn plain" :
            ": this train_gpt_fp8 was built without cuDNN (make info says why)");
    }
}

// What this GPU and its libraries cannot run, refused in one line before the run touches its folder: blockwise runs
// cuBLASLt's block-scaled GEMMs, which exist on compute capability 9.0 with cuBLASLt 12.9 or later only.
static void refuse_what_this_gpu_lacks(const TrainArgs* args) {
    char err[ERROR_MESSAGE_MAX];
    if (args->precision == PRECISION_FP8 && fp8_recipe_uses_block_scaled_gemms(&args->recipe) &&
        gemm_block_scaling_check(err, sizeof(err))) {
        die("-fp8_recipe blockwise: %s", err);
    }
#ifndef ENABLE_CUPTI
    if (args->idle_step > 0) {
        die("-idle_step %d: this train_gpt_fp8 was built without CUPTI, which measures it (make info says why)",
            args->idle_step);
    }
#endif
}

// The shapes the FP8 recipe's casts and GEMMs take here (llmc/linear.h; the CPU trainer takes every shape), refused
// in one line before the run touches its folder.
static void refuse_shapes_fp8_cannot_take(const TrainArgs* args, const RunSetup* run) {
    LinearPrecision lp = {args->precision, &args->recipe, args->fp8_bf16_first_last, args->fp8_lm_head,
                          run->config.num_layers, args->fp8_attention};
    char err[ERROR_MESSAGE_MAX];
    if (linear_check_gpu_dims(&run->config, &lp, run->B, run->T, err, sizeof(err))) { die("%s", err); }
}

// What the run's shape asks of this GPU and cannot have, refused in one line each before anything is allocated (a
// shape cuDNN's attention cannot take falls back to the plain attention unless -attn cudnn asked for it: args is
// changed then). What the memory plan refuses comes later (gpt2_gpu_plan_fits), once cuDNN has said what it needs.
static void refuse_what_this_gpu_cannot_run(TrainArgs* args, const RunSetup* run) {
    const GPT2Config* config = &run->config;
    int B = run->B, T = run->T;
    if (args->profile_step > run->train_steps) {  // a profiler waiting for a step that never comes would record nothing
        die("-profile_step %d is past the run's last step (%d)", args->profile_step, run->train_steps);
    }
    if (args->idle_step > run->train_steps) {
        die("-idle_step %d is past the run's last step (%d)", args->idle_step, run->train_steps);
    }
    // cuDNN's fused attention takes head sizes that are multiples of 8, and no single-token sequence (its backward
    // refuses s_q = s_kv = 1); by default such a shape runs the plain attention, asked for by -attn cudnn it is an error
    // (a shape that passes these but that this cuDNN has no engine for is found by gpt2_gpu_init, which asks cuDNN)
    int head_size = config->channels / config->num_heads;
    if (gpu_attention_kind(args->attention) == ATTENTION_CUDNN && (head_size % 8 != 0 || T < 2)) {
        if (args->fp8_attention) {
            die("-fp8_attention %d runs cuDNN's FP8 attention, which needs a head size C/NH that is a multiple of 16 "
                "and T >= 2 (C %d, NH %d: %d; T %d)", args->fp8_attention, config->channels, config->num_heads,
                head_size, T);
        }
        if (args->attention == ATTENTION_CUDNN) {
            die("cuDNN attention needs a head size C/NH that is a multiple of 8 and T >= 2 (C %d, NH %d: %d; T %d); "
                "-attn plain runs any shape", config->channels, config->num_heads, head_size, T);
        }
        printf("attention: plain CUDA/cuBLAS, as cuDNN's needs a head size that is a multiple of 8 and T >= 2 (head "
               "size %d, T %d)\n", head_size, T);
        args->attention = ATTENTION_PLAIN;
    }
    // the grids this shape launches, checked against CUDA's limits (run_setup already keeps B*T within an int): the
    // column sums (B*T / 64 blocks in y), the widest elementwise launch (B, T, 4C); each exits with one line when it
    // does not fit (the plain attention's, once it is chosen: gpt2_gpu_init)
    column_sum_chunks((size_t)B * T);
    blocks_for((size_t)B * T * 4 * config->channels, 256);
}

// The memory plan before a byte of it is allocated: printed, and refused in one line when it does not fit. -estimate 1:
// the largest micro-batch that fits is printed instead, and 0 returned (the run ends); else 1.
static int gpt2_gpu_plan_fits(GPT2* model, const TrainArgs* args, int total_batch, int num_processes) {
    size_t free_bytes, total_bytes;
    cudaCheck(cudaMemGetInfo(&free_bytes, &total_bytes));
    gpu_memory_print(stdout, &model->memory, &model->memory_inputs, free_bytes);
    // cuBLASLt's workspace is in the plan but already allocated (gemm_context_init): not free any more
    size_t available = free_bytes + model->memory.bytes[GPU_GEMM_WORKSPACE];
#ifdef ENABLE_CUDNN
    int cudnn_built = 1;
#else
    int cudnn_built = 0;
#endif
    if (args->estimate_only) {
        int largest = gpu_memory_largest_batch(&model->memory_inputs, available, total_batch, num_processes);
        printf("largest micro-batch that fits: B=%d (at T %d, -r %d, -attn %s, %s; -d %d)\n", largest, model->T,
               args->recompute, model->attention_kind == ATTENTION_CUDNN ? "cudnn" : "plain",
               precision_name(args->precision), total_batch);
        return 0;
    }
    if (!gpu_memory_fits(&model->memory_inputs, available)) {
        char refusal[1024];
        gpu_memory_refusal(refusal, sizeof(refusal), &model->memory_inputs, available, total_batch, num_processes,
                           cudnn_built);
        die("%s", refusal);
    }
    return 1;
}

// Every collective relies on these being equal on all ranks: checked once, failing with one line rather than hanging.
static void gpt2_check_same_on_ranks(GPT2* model, long long tokens_per_step, int train_steps) {
    MultiGpu* mg = model->multi_gpu;
    multi_gpu_check_same(mg, (long long)model->num_parameters, "the parameter count");
    multi_gpu_check_same(mg, model->precision == PRECISION_FP8 ? model->fp8.num_slots : 0, "the number of FP8 slots");
    multi_gpu_check_same(mg, model->attention_kind, "the attention (cuDNN's or the plain one: each rank asked its cuDNN)");
    multi_gpu_check_same(mg, tokens_per_step, "B*T*accumulation");
    multi_gpu_check_same(mg, train_steps, "the number of steps");
}

// The initial weights: a model file's, or the CPU trainer's initialisation from the same seed, on every rank.
static void gpt2_upload_initial_params(GPT2* model, const RunSetup* run, uint64_t seed) {
    float* params = (float*)calloc_or_die(model->num_parameters, 4, "parameters");
    if (run->loaded_params) {
        memcpy(params, run->loaded_params, run->loaded_count * sizeof(float));
    } else {
        ParameterTensors p;
        point_parameters(&p, params, model->param_sizes);
        Rng init_rng;
        rng_seed(&init_rng, seed);
        gpt2_init_parameters(&p, model->param_sizes, &model->config, &init_rng);
    }
    gpt2_upload_params(model, params);
    free(params);
}

// The run's box (rank 0 prints it): the device, the processes, the run, the attention and how the FP8 casts and GEMMs
// run. Returns this rank's device's properties.
static cudaDeviceProp print_run_box(const GPT2* model, const TrainArgs* args, const RunSetup* run,
                                    const ProcessGroupConfig* pg) {
    const MultiGpu* mg = model->multi_gpu;
    cudaDeviceProp prop;
    int device;
    cudaCheck(cudaGetDevice(&device));  // this rank's GPU (multi_gpu_init set it)
    cudaCheck(cudaGetDeviceProperties(&prop, device));
    box_rule(stdout);
    box_row(stdout, "device", "%s, %d SMs", prop.name, prop.multiProcessorCount);
    box_row(stdout, "processes", "%d (%s%s%s), ZeRO stage %d", mg->num_processes, pg->launcher,
            mg->use_nccl ? ", NCCL id via " : "", mg->use_nccl ? pg->init_method : "", mg->zero_stage);
    box_run_rows(stdout, args, run, model->num_parameters, mg->num_processes);
    box_row(stdout, "attention", "%s, recompute -r %d",
            model->attention_kind == ATTENTION_CUDNN ? "cuDNN flash attention (-attn cudnn)" : "plain CUDA/cuBLAS (-attn plain)",
            args->recompute);
    int fp8 = args->precision == PRECISION_FP8;
    if (fp8 && !fp8_recipe_is_block_scaled(&args->recipe)) {  // per-tensor scaling (a block cast takes no flag)
        box_row(stdout, "fp8 casts", "%s", args->fp8_fused_casts
                    ? "GELU and LayerNorm inside them where they can be (-fp8_fused_casts 1)"
                    : "apart from GELU and LayerNorm, which run their own kernels (-fp8_fused_casts 0)");
    }
    if (fp8 && fp8_recipe_uses_block_scaled_gemms(&args->recipe)) {
        box_row(stdout, "fp8 gemms", "cuBLASLt block-scaled: 1x128 (VEC128) activations and gradients, "
                "128x128 weights");
    } else if (fp8 && fp8_recipe_gemms_emulated(&args->recipe)) {
        box_row(stdout, "fp8 gemms", "mxfp8 EMULATED: MXFP8 casts (E8M0 block scales), dequantized to bf16, "
                "BF16 GEMMs;");
        box_row(stdout, "", "this run measures MXFP8's accuracy, not its speed (Hopper has no MXFP8 GEMM)");
    }
    if (args->gemm_autotune >= 2) {
        box_row(stdout, "gemms", "cuBLASLt's fastest of its first %d algorithms per problem, timed once "
                "(-gemm_autotune %d)%s", args->gemm_autotune, args->gemm_autotune,
                args->output_dir ? "; the choices kept in -o" : "");
    } else {
        box_row(stdout, "gemms", "cuBLASLt's heuristic's first algorithm per problem (-gemm_autotune %d)",
                args->gemm_autotune);
    }
    box_row(stdout, "launches", "%s", args->cuda_graph
                ? "a micro-batch's forward and backward replayed as two CUDA graphs after the first (-cuda_graph 1)"
                : "kernel by kernel (-cuda_graph 0)");
    box_rule(stdout);
    return prop;
}

// The GEMM algorithms this rank chose by timing (-gemm_autotune N >= 2; llmc/gemm.cuh, llmc/gemm_choice.h), kept in
// its file in the run folder so that a resumed run (or a new one in the same folder) multiplies with the same ones:
// read before the first GEMM, written after a step (or evaluation) that chose new ones. A file another GPU or cuBLASLt
// wrote holds algorithms that mean nothing here: it is kept as NAME.N (the first N free) and the problems are timed
// afresh. A file that is not one is refused in one line.
static void gpt2_read_gemm_choices(GPT2* model, const char* dir) {
    if (!dir || model->gemm.autotune < 2) { return; }
    char* path = gemm_choices_path(dir, model->process_rank);
    GemmChoices found;
    char err[768];
    int rc = gemm_choices_read(path, &found, err, sizeof(err));
    if (rc < 0) { die("%s", err); }
    const GemmChoiceDevice* here = &model->gemm.choices.device;
    if (rc == 1 && !gemm_choice_device_same(&found.device, here)) {
        char* kept = gemm_choices_set_aside(path, err, sizeof(err));
        if (!kept) { die("%s", err); }
        printf("gemm: %s holds the algorithms of %s (cc %d, cuBLASLt %ld), and this run is on %s (cc %d, cuBLASLt "
               "%ld): kept as %s, the algorithms chosen afresh\n", path, found.device.device,
               found.device.compute_capability, found.device.cublaslt_version, here->device, here->compute_capability,
               here->cublaslt_version, kept);
        free(kept);
    } else if (rc == 1) {
        printf("gemm: %d algorithm choices read from %s (a problem it lacks is timed)\n", found.count, path);
        gemm_choices_free(&model->gemm.choices);  // (none made yet: before the first GEMM)
        model->gemm.choices = found;              // the same device: taken whole
        found.rows = NULL;
    }
    gemm_choices_free(&found);
    free(path);
}

static void gpt2_write_gemm_choices(GPT2* model, const char* dir) {
    if (!dir || !model->gemm.choices_changed) { return; }
    char* path = gemm_choices_path(dir, model->process_rank);
    char err[768];
    if (gemm_choices_write(path, &model->gemm.choices, err, sizeof(err))) { die("%s", err); }
    model->gemm.choices_changed = 0;
    free(path);
}

// A training step's time on the model's stream (two events around it), -profile_step's profiler window (a profiler
// started with collection off, ncu --profile-from-start off, records that step's kernels alone, from the gradients'
// zeroing to the weights' FP8 cast, after the steps that warmed up cuBLASLt), and the most memory in use on this GPU
// after a step (every buffer is allocated before step 0, so that is the run's peak, cuBLASLt's workspace included;
// other processes on the same GPU would be counted too).
typedef struct {
    cudaEvent_t start, stop;
    int profiled;
    double peak_memory;  // bytes
} StepClock;

static StepClock step_clock_create(void) {
    StepClock c = {NULL, NULL, 0, 0.0};
    cudaCheck(cudaEventCreate(&c.start));
    cudaCheck(cudaEventCreate(&c.stop));
    return c;
}

static void step_clock_start(StepClock* c, int profiled, cudaStream_t stream) {
    c->profiled = profiled;
    if (profiled) { cudaCheck(cudaProfilerStart()); }
    cudaCheck(cudaEventRecord(c->start, stream));
}

// Waits for the step to finish; returns its milliseconds.
static float step_clock_stop(StepClock* c, cudaStream_t stream) {
    cudaCheck(cudaEventRecord(c->stop, stream));
    cudaCheck(cudaEventSynchronize(c->stop));
    if (c->profiled) { cudaCheck(cudaProfilerStop()); }
    float ms;
    cudaCheck(cudaEventElapsedTime(&ms, c->start, c->stop));
    size_t free_bytes, total_bytes;
    cudaCheck(cudaMemGetInfo(&free_bytes, &total_bytes));
    if ((double)(total_bytes - free_bytes) > c->peak_memory) { c->peak_memory = (double)(total_bytes - free_bytes); }
    return ms;
}

static void step_clock_free(StepClock* c) {
    cudaCheck(cudaEventDestroy(c->start));
    cudaCheck(cudaEventDestroy(c->stop));
}

int main(int argc, char** argv) {
    fail_at_exit_if_stdout_fails();  // the step lines are the run's report: a lost one is an error
    TrainArgs args;
    parse_args(&args, argc, argv);
    char err[ERROR_MESSAGE_MAX];
    refuse_cpu_only_flags(&args);
    ProcessGroupConfig pg;
    if (process_group_resolve(&pg, args.num_processes, args.process_rank, args.gpus_per_node, args.init_method,
                              args.fs_path, args.server_ip, err, sizeof(err))) {
        die("%s", err);
    }
    if (args.cuda_graph && pg.num_processes > 1) {  // the backward's NCCL reductions are not captured (yet)
        die("-cuda_graph 1 runs on one GPU: this run has %d processes (-cuda_graph 0)", pg.num_processes);
    }
    require_cuda_device("train_gpt_fp8");
    MultiGpu mg;
    multi_gpu_init(&mg, &pg, args.zero_stage);
    refuse_what_this_gpu_lacks(&args);
    int rank0 = mg.process_rank == 0;  // prints, logs and writes the model file
    if (!rank0) {  // only rank 0 speaks; errors still reach stderr from every rank
        if (!freopen("/dev/null", "w", stdout)) { die("cannot silence stdout of rank %d", mg.process_rank); }
    }
    RunSetup run;
    run_setup(&args, &run, mg.process_rank, mg.num_processes);
    refuse_shapes_fp8_cannot_take(&args, &run);
    run_folder_prepare(&args, run.train_steps, rank0);  // rank 0 locks the folder for the job; an earlier run's files
    refuse_what_this_gpu_cannot_run(&args, &run);
    GPT2Config config = run.config;
    int B = run.B, T = run.T, total_batch = run.total_batch, grad_accum_steps = run.grad_accum_steps;
    int train_steps = run.train_steps, val_steps = run.val_steps, have_val = run.have_val;
    DataLoader* train_loader = &run.train_loader;
    DataLoader* val_loader = &run.val_loader;
    // -y 1: the checkpoint to resume from, looked for before anything is planned or allocated, so that a run already
    // at or past -x ends with the one line that says so
    long long latest = run_folder_resume_step(&args);
    if (args.resume) {
        multi_gpu_check_same(&mg, latest, "the newest complete checkpoint in -o (is it a folder all ranks share?)");
    }
    if (resume_is_complete(&args, latest, train_steps)) {  // the same answer on every rank
        run_free(&run);
        multi_gpu_free(&mg);
        return 0;
    }

    GPT2 model;
    gpt2_gpu_init(&model, &config, &args, B, T, &mg);
    if (!gpt2_gpu_plan_fits(&model, &args, total_batch, mg.num_processes)) {  // -estimate 1 ends here
        run_free(&run);
        multi_gpu_free(&mg);
        return 0;
    }
    gpt2_gpu_allocate_buffers(&model);
    gpt2_read_gemm_choices(&model, args.output_dir);
    model.total_batch = total_batch;
    gpt2_check_same_on_ranks(&model, (long long)B * T * grad_accum_steps, train_steps);
    gpt2_upload_initial_params(&model, &run, (uint64_t)args.seed);

    // resume, or start: before step 0 the initial weights are cast with scale 1.0 (recording their amax)
    Rng sample_rng;  // the CPU trainer's sampling stream, from the same seed
    rng_seed(&sample_rng, (uint64_t)args.seed ^ 0x5EEDull);
    int start_step = 0;
    SkippedSteps skipped = {0, 0, 0, 0};
    if (args.resume) {
        if (latest < 0) {
            printf("resume: no complete checkpoint (DONE_*) in %s, starting from scratch\n", args.output_dir);
        } else {
            size_t shard_index, shard_position;
            CheckpointRunState resumed;
            run_check_resume_shape(&args, &run, latest, mg.process_rank);
            gpt2_load_checkpoint(&model, args.output_dir, (int)latest, &sample_rng.state, &shard_index, &shard_position,
                                 &resumed);
            run_resume_state(&args, &run, &resumed, &skipped);
            if (dataloader_resume(train_loader, shard_index, shard_position, err, sizeof(err))) { die("%s", err); }
            start_step = (int)latest;
            if (args.profile_step > 0 && args.profile_step <= start_step) {
                die("-profile_step %d: this run resumes after step %d, so it never trains that step", args.profile_step,
                    start_step);
            }
            if (args.idle_step > 0 && args.idle_step <= start_step) {
                die("-idle_step %d: this run resumes after step %d, so it never trains that step", args.idle_step,
                    start_step);
            }
            printf("resumed from %s/model_%08lld.bin at step %d\n", args.output_dir, latest, start_step);
            multi_gpu_barrier(&mg);  // every rank has read its files before rank 0 removes any later ones
            if (rank0) { run_folder_drop_later_checkpoints(args.output_dir, latest); }
        }
    }
    run_record_data(&args, &run, start_step);  // rank 0's run setup collected the data, the others' did not
    // rank 0 writes fp8_diag.tsv (opened below), counting every recorded cast from the first weight cast on (as the CPU)
    model.fp8_collect_stats = rank0 && args.output_dir && args.precision == PRECISION_FP8 && args.fp8_diag_every > 0;
    gpt2_cast_weights_fp8(&model, start_step == 0);
    cudaCheck(cudaDeviceSynchronize());

    cudaDeviceProp prop = print_run_box(&model, &args, &run, &pg);

    // MFU: 6 FLOPs per parameter per token (forward + backward) plus attention's 12 * L * C * T (llm.c's estimate)
    double flops_per_step = (6.0 * (double)model.num_parameters + 12.0 * config.num_layers * config.channels * T) *
                            (double)total_batch;
    double peak_flops = gpu_bf16_peak_flops(&prop) * mg.num_processes;
    StepClock clock = step_clock_create();
    // rank 0's logs; its FP8 diagnostics stand for every rank (amaxes and scales are the same when reduced)
    LogFile main_log = {NULL, NULL}, diag_log = {NULL, NULL};
    if (rank0 && args.output_dir) {
        open_run_logs(args.output_dir, start_step, model.fp8_collect_stats, &main_log, &diag_log);
    }
    StepTimer timer = {0.0, 0};
    for (int step = start_step; step <= train_steps; step++) {
        int last_step = step == train_steps;
        if (last_step) { skipped_steps_check_end(&skipped); }
        // evaluation, sampling and checkpoints at the start of a step; a resumed run already did them for its step
        if (step != start_step || start_step == 0) {
            if (have_val && (step % args.val_every == 0 || last_step)) {
                int saved = model.training;
                model.training = 0;
                dataloader_reset(val_loader);
                double val_loss = 0.0;
                for (int i = 0; i < val_steps; i++) {
                    if (dataloader_next_batch(val_loader, err, sizeof(err))) { die("%s", err); }
                    gpt2_forward(&model, val_loader->inputs, val_loader->targets, B, T);
                    val_loss += model.mean_loss;
                }
                val_loss = multi_gpu_mean(&mg, (float)(val_loss / val_steps), model.stream);  // GPU: over the ranks
                model.training = saved;
                printf("val loss %f\n", val_loss);
                log_printf(&main_log, "s:%d tel:%.4f\n", step, val_loss);
            }
            if (rank0 && sample_due(&args, &run, step)) { sample_text(&model, &run.tokenizer, args.gen_tokens, &sample_rng); }
            if (args.output_dir && step > 0 &&
                ((args.checkpoint_every > 0 && step % args.checkpoint_every == 0) || last_step)) {
                CheckpointRunState run_state = run_checkpoint_state(&run, &skipped);
                gpt2_save_checkpoint(&model, args.output_dir, step, sample_rng.state, train_loader, &run_state);  // every rank
                printf("checkpoint: %s/model_%08d.bin\n", args.output_dir, step);
            }
            gpt2_write_gemm_choices(&model, args.output_dir);  // what the evaluation chose
        }
        if (last_step) { break; }
        if (step == args.debug_kill_step) { fflush(stdout); raise(SIGKILL); }  // test hook (the GPU check's resume step)
#ifdef ENABLE_CUPTI
        // -idle_step: the GPU's idle time in this step, from here (the host's first call of the step) to its end on
        // the GPU, which step_clock_stop waits for (llmc/gpu_idle.h)
        uint64_t idle_t0 = 0;
        int idle_traced = step + 1 == args.idle_step;
        if (idle_traced) { gpu_idle_begin(&idle_t0); }
#endif
        step_clock_start(&clock, step + 1 == args.profile_step, model.stream);
        gpt2_zero_grad(&model);
        double loss = 0.0;
        for (int micro = 0; micro < grad_accum_steps; micro++) {
            if (dataloader_next_batch(train_loader, err, sizeof(err))) { die("%s", err); }
            gpt2_forward(&model, train_loader->inputs, train_loader->targets, B, T);
            // GPU: the last micro-batch reduces the gradients over the ranks while its backward runs, and the loss
            // scale has the ranks in it too, so that their gradients SUM to the single-GPU gradient
            model.reduce_in_backward = micro == grad_accum_steps - 1 && mg.use_nccl;
            gpt2_backward(&model, 1.0f / ((float)grad_accum_steps * mg.num_processes));
            model.reduce_in_backward = 0;
            loss += model.mean_loss / grad_accum_steps;
        }
        loss = multi_gpu_mean(&mg, (float)loss, model.stream);
        if (step == args.debug_nan_step) {  // test hook, as the CPU trainer's: poison the first gradient of the shard
            // (bytes 0xFF make a float NaN; stream-ordered after the backward and its reductions)
            cudaCheck(cudaMemsetAsync(model.grads_memory + model.shard.offset, 0xFF, sizeof(float), model.stream));
        }
        gpt2_grad_norm(&model);
        float lr = learning_rate_at(step, train_steps, args.learning_rate, args.warmup_steps, args.final_lr_fraction);
        // a step whose loss or gradient norm is not finite is skipped (the same on every rank: both values are
        // global). GPU differs: the host skips for the loss, which it has; the norm's half is decided on the device
        // (gpt2_grad_norm says how), so one process queues this without waiting for the backward (several have
        // waited in multi_gpu_mean, for the loss of every rank).
        if (!isfinite(loss)) {
            gpt2_fp8_drop_step_amaxes(&model);
        } else {
            gpt2_fp8_end_of_step(&model, step);
            gpt2_update(&model, lr, 0.9f, 0.95f, 1e-8f, args.weight_decay, args.grad_clip, step + 1);
            multi_gpu_gather_params(&mg, model.params_memory, &model.shard, model.stream);
            // after the all-gather: every rank casts the same weights with the same scale
            gpt2_cast_weights_fp8(&model, 1);
        }
        float ms = step_clock_stop(&clock, model.stream);
        float norm = gpt2_grad_norm_value(&model);
        int step_skipped = !isfinite(loss) || !isfinite(norm);
        if (step_skipped) {
            fprintf(stderr, "warning: step %d: loss %g, gradient norm %g is not finite; step skipped, weights and FP8 state kept\n",
                    step + 1, loss, norm);
        }
#ifdef ENABLE_CUPTI
        if (idle_traced) {
            GpuIdleResult idle = gpu_idle_end(idle_t0);
            printf("idle: step %d: the GPU idle %.3f ms of a %.3f ms step (busy %.3f ms: %zu kernels, %zu copies, %zu "
                   "memsets%s)\n", step + 1, idle.idle_ms, idle.wall_ms, idle.busy_ms, idle.kernels, idle.copies,
                   idle.sets, idle.over ? "; records were lost, so this idle time is an upper bound" : "");
            printf("idle: %zu gaps; %zu under %d us, %.3f ms in all (launch gaps); the longest:\n", idle.gaps.count,
                   idle.gaps.short_count, GPU_IDLE_SHORT_GAP_NS / 1000, (double)idle.gaps.short_ns * 1e-6);
            for (size_t i = 0; i < idle.num_longest; i++) {
                char after[96], before[96];
                gpu_idle_short_name(idle.longest[i].after ? idle.longest[i].after : "the step's start", after,
                                    sizeof(after));
                gpu_idle_short_name(idle.longest[i].before ? idle.longest[i].before : "the step's end", before,
                                    sizeof(before));
                printf("idle:   %.3f ms at +%.3f ms, after %s, before %s\n", (double)idle.longest[i].length * 1e-6,
                       (double)idle.longest[i].at * 1e-6, after, before);
            }
        }
#endif
        if (diag_log.file && (step + 1) % args.fp8_diag_every == 0) {
            write_fp8_diagnostics(&model, diag_log.file, step + 1);
            log_flush(&diag_log);
        }
        double mfu = peak_flops > 0 ? 100.0 * flops_per_step / (ms / 1000.0) / peak_flops : -1.0;
        report_step(&timer, &main_log, step, start_step, train_steps, loss, norm, lr, ms / 1000.0, total_batch, mfu);
        gpt2_write_gemm_choices(&model, args.output_dir);  // what the step chose (its first: every training GEMM)
        skipped_steps_record(&skipped, &args, step, step_skipped);
    }
    log_close(&main_log);
    log_close(&diag_log);
    printf("peak memory %.2f GiB (rank %d; the estimate was %.2f GiB of our buffers)\n", clock.peak_memory / (1 << 30),
           mg.process_rank, bytes_to_gib(gpu_memory_total(&model.memory)));
    step_clock_free(&clock);
    gpt2_free(&model);
    run_free(&run);
    multi_gpu_free(&mg);
    return 0;
}
#endif  // TESTING
