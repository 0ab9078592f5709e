/*
train_gpt_fp8.cu — the GPU trainer: the same GPT-2, flags, data, logs and checkpoints as the CPU reference
(train_gpt_fp8.c), on cuBLASLt, with BF16 or FP8 delayed scaling for the four linear layers of every block.

STATUS: written and compiled without a GPU; it has not run yet. The first GPU session must run test_gpt_fp8 (against
the CPU reference) before any number from this program is believed.

Data flow of one FP8 linear layer (module), forward and backward, as in Transformer Engine on Hopper:
  forward   X bf16 --cast(scale[input], amax -> row 0)--> X fp8;  out = gemm(W fp8, X fp8) -> bf16 (+ bias)
  backward  dY bf16 --cast+transpose(scale[grad_output], amax -> row 0)--> dY fp8, dY^T fp8
            X  bf16 --cast+transpose(scale[input], no record: same bytes as the forward's)--> X^T fp8
            dX = gemm(W^T fp8, dY fp8)        dW += gemm(X^T fp8, dY^T fp8) (fp32)
  per step  update every slot (one launch) -> AdamW on fp32 masters -> W bf16 --cast+transpose(new scale)--> W, W^T fp8
With -fp8_recipe current every cast that records is preceded by an amax pass that leaves the tensor's own scale in
its slot (fp8_amax_scale in fp8/quantize.cuh), and the cast and GEMM read it there; the end-of-step launch only
clears row 0; evaluation casts write their scales to scratch cells (fp8_eval_scales), so they change nothing.
The BF16 path runs the same GEMMs on bf16 operands. LayerNorm, attention, GELU, residuals and the loss are bf16
kernels (llmc/kernels.cuh); parameter gradients, master weights and AdamW moments are fp32.
Attention (-attn): cuDNN's fused flash attention (llmc/cudnn_attention.cpp, the default when built with cuDNN), which
keeps only the softmax statistics (B, NH, T) per layer, or the plain CUDA/cuBLAS one (llmc/attention.cuh), which keeps
the (B, NH, T, T) matrix per layer. Recompute (-r, llm.c's): 1 recomputes GELU in the backward instead of keeping its
output per layer, 2 LayerNorm too (from the residual and the saved mean/rstd); the results are bit-identical.
Memory: every device buffer is planned first (llmc/memory_plan.h); the plan is printed, checked against the GPU's
free memory (one line saying what to change when it does not fit), then allocated as planned.

Several GPUs: NCCL data parallelism with ZeRO-1 and one amax all-reduce per step (llmc/multi_gpu.cuh). The backward
is deterministic (no float atomics), so the same data gives the same bits, run after run and across a resume.
Not in this version yet (see README, Status): fusing the casts into LayerNorm/GELU.
*/
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fp8/gemm.cuh"
#include "fp8/meta.h"
#include "fp8/quantize.cuh"
#include "fp8/update.cuh"
#include "llmc/attention.cuh"
#include "llmc/cudnn_attention.h"
#include "llmc/dataloader.h"
#include "llmc/kernels.cuh"
#include "llmc/memory_plan.h"
#include "llmc/multi_gpu.cuh"
#include "llmc/schedule.h"
#include "llmc/tokenizer.h"
#include "llmc/train_common.h"
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

// Sizes in llmc/memory_plan.h. With -r 2, ln1 and ln2 hold one layer (stride 0 between layers: the backward
// recomputes each layer's before it uses it); with -r 1 or 2, so does fch_gelu.
typedef struct {
    floatX* encoded;    // (B, T, C)
    floatX* ln1;        // (L, B, T, C), -r 2: (B, T, C)
    float* ln1_mean;    // (L, B, T)
    float* ln1_rstd;    // (L, B, T)
    floatX* qkv;        // (L, B, T, 3C)
    floatX* atty;       // (L, B, T, C)
    floatX* att;        // plain attention: (L, B, NH, T, T)
    float* attention_stats;  // cuDNN attention: (L, stats_layer_floats) fp32, the softmax statistics (B, NH, T)
    floatX* residual2;  // (L, B, T, C)
    floatX* ln2;        // (L, B, T, C), -r 2: (B, T, C)
    float* ln2_mean;    // (L, B, T)
    float* ln2_rstd;    // (L, B, T)
    floatX* fch;        // (L, B, T, 4C)
    floatX* fch_gelu;   // (L, B, T, 4C), -r 1 or 2: (B, T, 4C)
    floatX* residual3;  // (L, B, T, C)
    floatX* lnf;        // (B, T, C)
    float* lnf_mean;    // (B, T)
    float* lnf_rstd;    // (B, T)
    floatX* logits;     // (B, T, Vp), overwritten by dlogits in training
    float* losses;      // (B, T)
    floatX* proj_out;   // (B, T, C) a projection's output before the residual add
} ActivationsGPU;

typedef struct {
    GPT2Config config;
    int B, T;
    int total_batch;  // tokens per optimizer step (-d), recorded in checkpoints; B*T*processes unless main sets it
    int num_processes, process_rank;
    size_t param_sizes[NUM_PARAMETER_TENSORS];
    size_t num_parameters;  // P
    ZeroShard shard;        // the parameters this rank's optimizer owns (llmc/zero.h); all P in one process
    float* master;          // (shard_size) fp32 master weights of the shard
    floatX* params_memory;  // (padded) bf16 weights, all of them, every rank
    ParameterTensorsX params;
    float* grads_memory;    // (padded) fp32; after the reduction, the shard's part is the summed gradient
    ParameterTensors grads;
    float *m_memory, *v_memory;  // (shard_size) AdamW moments of the shard
    ActivationsGPU acts;
    int* inputs;   // (B, T) on the device
    int* targets;  // (B, T)
    // the encoder backward's token buckets (see encoder_buckets): device copies, and host scratch to build them
    int *bucket_positions, *bucket_start, *bucket_token;  // (B*T), (B*T + 1), (B*T)
    int *host_positions, *host_bucket_start, *host_bucket_token, *host_token_count;  // ... and (V)
    int num_buckets;
    float* column_partials;  // (B*T / COLUMN_SUM_ROWS, 4C) per-chunk column sums of the bias / LayerNorm gradients
    // backward scratch
    floatX *dresidual, *dbtc, *dbtc2, *dbt4c, *dqkv;  // (B,T,C) x3, (B,T,4C), (B,T,3C)
    floatX *dq, *dk, *dv;                              // plain attention: (B, NH, T, HS) each
    AttentionScratch attention;                        // plain attention's scratch
    // attention and recompute
    int attention_kind;                    // ATTENTION_CUDNN | ATTENTION_PLAIN
    CudnnAttention* cudnn_attention;       // cuDNN's handle and graphs (NULL with plain attention)
    size_t attention_workspace_bytes;      // the largest workspace its graphs need
    size_t stats_layer_floats;             // floats between two layers' softmax statistics
    int recompute;                         // -r 0|1|2
    // the device memory: what it depends on, and every buffer's size (llmc/memory_plan.h)
    GpuMemoryInputs memory_inputs;
    GpuMemoryPlan memory;
    void* device_buffers[NUM_GPU_BUFFERS];  // what gpt2_gpu_allocate_buffers allocated (NULL: not allocated), to free
    float* norm_squared;  // (1)
    float* norm_partials; // (NORM_BLOCKS) per-block sums of squares: summed in a fixed order, so the norm is deterministic
    // precision
    Precision precision;
    DelayedScaling recipe;
    int fp8_bf16_first_last, fp8_lm_head;
    int fp8_record;            // casts record amaxes (training) or not (evaluation)
    Fp8Meta fp8_host;          // layout and a host copy of the FP8 metadata (for checkpoints)
    float* fp8_device;         // the metadata itself: amax_history, scale, scale_inv (fp8_host.num_floats)
    float* amax_discard;       // where casts that must not record write their amax
    int fp8_collect_stats;     // count clipped / flushed elements of every recorded cast (for fp8_diag.tsv)
    unsigned long long* fp8_stats_device;  // (num_slots, 3): elements, saturated, flushed since the last diag line
    Fp8QuantStats* fp8_stats_host;  // (num_slots) their host copy, for checkpoints
    float* fp8_last_amax;      // (num_slots) host: row 0 as the last update saw it
    float* fp8_window_amax_host;  // (num_slots) host: the amax each scale came from, for the diagnostics (delayed:
                                  // computed from the history before the update; current: from fp8_window_amax)
    // current scaling only
    float* fp8_window_amax;    // (num_slots) device: the amax of each slot's last recorded cast (what its scale is from)
    float* fp8_eval_scales;    // (2, num_slots) device: scale, scale_inv of casts that do not record (evaluation)
    Fp8AmaxWorkspace amax_workspace;  // the amax pass's per-block partials and ticket counter
    uint8_t *weight_fp8, *weight_t_fp8;  // per module at weight_fp8_offset: W (OC, IC) and W^T (IC, OC)
    size_t* weight_fp8_offset;
    uint8_t *x_fp8, *x_t_fp8, *dy_fp8, *dy_t_fp8;  // (B*T*widest) scratch
    GemmContext gemm;
    cublasHandle_t cublas;
    cudaStream_t stream;
    // data parallelism: during the last micro-batch's backward, each layer's gradients are reduced over the ranks on
    // comm_stream as soon as they are final (reduce_in_backward set), overlapping the backward of the layers below
    MultiGpu* reduce_in_backward;
    cudaStream_t comm_stream;
    cudaEvent_t grads_ready, grads_reduced;
    int num_sms;
    float mean_loss;
} GPT2GPU;

static int num_modules(const GPT2GPU* m) { return LINEARS_PER_BLOCK * m->config.num_layers + 1; }
static int lm_head(const GPT2GPU* m) { return LINEARS_PER_BLOCK * m->config.num_layers; }
static LinearPrecision gpu_linear_precision(const GPT2GPU* m) {
    LinearPrecision p = {m->precision, &m->recipe, m->fp8_bf16_first_last, m->fp8_lm_head, m->config.num_layers};
    return p;
}
static int gemm_fp8(const GPT2GPU* m, int module, int gemm) {
    LinearPrecision p = gpu_linear_precision(m);
    return linear_gemm_is_fp8(&p, module, gemm);
}
static int fprop_fp8(const GPT2GPU* m, int module) { return gemm_fp8(m, module, LINEAR_GEMM_FPROP); }
static int dgrad_fp8(const GPT2GPU* m, int module) { return gemm_fp8(m, module, LINEAR_GEMM_DGRAD); }
static int wgrad_fp8(const GPT2GPU* m, int module) { return gemm_fp8(m, module, LINEAR_GEMM_WGRAD); }

typedef struct {
    floatX *weight, *bias;
    float *dweight, *dbias;
    int IC, OC;
} LinearX;

static LinearX linear_x(GPT2GPU* model, int module) {
    LinearLayout ll = linear_layout(&model->config, module);
    LinearX lx = {model->params_memory + ll.weight_offset, ll.has_bias ? model->params_memory + ll.bias_offset : NULL,
                  model->grads_memory + ll.weight_offset, ll.has_bias ? model->grads_memory + ll.bias_offset : NULL,
                  ll.IC, ll.OC};
    return lx;
}

// device pointers into the FP8 metadata of a slot
static float* slot_scale(GPT2GPU* m, int slot) { return m->fp8_device + (size_t)m->fp8_host.amax_history_len * m->fp8_host.num_slots + slot; }
static float* slot_scale_inv(GPT2GPU* m, int slot) { return slot_scale(m, slot) + m->fp8_host.num_slots; }
static float* slot_amax(GPT2GPU* m, int slot, int record) { return record && m->fp8_record ? m->fp8_device + slot : m->amax_discard; }

// The scale cell a new cast of `slot` uses: the slot's, except for a current-scaling cast that does not record
// (evaluation, sampling), whose scale goes to scratch so the training state stays as it was. Its scale_inv is
// num_slots floats further on, in either place.
static float* cast_scale(GPT2GPU* m, int slot) {
    if (m->recipe.scaling == FP8_SCALING_CURRENT && !m->fp8_record) { return m->fp8_eval_scales + slot; }
    return slot_scale(m, slot);
}
static float* cast_scale_inv(GPT2GPU* m, int slot) { return cast_scale(m, slot) + m->fp8_host.num_slots; }

// Current scaling, before a new cast of inp (n) bf16 into `slot`: the amax pass, which leaves the tensor's own scale
// in cast_scale(slot) (from the slot's previous one when the amax is 0, inf or NaN). Delayed scaling: nothing to do.
static void current_scale_before_cast(GPT2GPU* m, int slot, const floatX* inp, size_t n) {
    if (m->recipe.scaling != FP8_SCALING_CURRENT) { return; }
    Fp8CurrentScale target = {slot_scale(m, slot), cast_scale(m, slot), cast_scale_inv(m, slot),
                              m->fp8_record ? m->fp8_window_amax + slot : m->amax_discard, m->recipe.margin};
    cudaCheck(fp8_amax_scale(inp, n, fp8_meta_slot_format(&m->fp8_host, slot), target, m->amax_workspace, m->num_sms,
                             m->stream));
}

// Diagnostics beside a recorded cast of inp (n) bf16 into `slot` (only while the diagnostics file is written).
static void record_range_stats(GPT2GPU* m, int slot, const floatX* inp, size_t n, int record) {
    if (!m->fp8_collect_stats || !record) { return; }
    cudaCheck(fp8_range_stats(m->fp8_stats_device + (size_t)slot * 3, inp, n, slot_scale(m, slot),
                              fp8_meta_slot_format(&m->fp8_host, slot), m->num_sms, m->stream));
}

static void* device_alloc(size_t bytes) {
    void* p = NULL;
    cudaCheck(cudaMalloc(&p, bytes ? bytes : 16));
    cudaCheck(cudaMemset(p, 0, bytes ? bytes : 16));
    return p;
}

// Cast every FP8 module's bf16 weight (and its transpose) with its current scale; `record`: amax into row 0 (and,
// with current scaling, the scale from the weight's own amax first; without, a re-cast with the stored scale).
// Training state: called while the model records.
static void gpt2_cast_weights_fp8(GPT2GPU* model, int record) {
    // as the CPU's: the weights' FP8 copy is training state, so its scales are the slots' own even when called while
    // evaluation has recording off (current scaling would otherwise put them in the evaluation scratch)
    int saved_record = model->fp8_record;
    model->fp8_record = 1;
    for (int module = 0; module < num_modules(model); module++) {
        if (!fprop_fp8(model, module) && !dgrad_fp8(model, module)) { continue; }
        LinearX lx = linear_x(model, module);
        int slot = fp8_meta_fwd_slot(&model->fp8_host, module, FP8_FWD_WEIGHT);
        size_t off = model->weight_fp8_offset[module];
        if (record) { current_scale_before_cast(model, slot, lx.weight, (size_t)lx.OC * lx.IC); }
        cudaCheck(fp8_cast_transpose_amax(model->weight_fp8 + off, model->weight_t_fp8 + off, lx.weight, lx.OC, lx.IC,
                                          slot_scale(model, slot), record ? model->fp8_device + slot : model->amax_discard,
                                          model->fp8_host.forward_format, model->stream));
        record_range_stats(model, slot, lx.weight, (size_t)lx.OC * lx.IC, record);
    }
    model->fp8_record = saved_record;
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

// Everything before the big device buffers: the model's shape and options, the streams and library handles, cuDNN's
// attention graphs (their workspace is part of the plan), the FP8 metadata's host layout, and the memory plan.
static void gpt2_gpu_init(GPT2GPU* model, const GPT2Config* config, const TrainArgs* args, int B, int T,
                          int num_processes, int process_rank, int zero_stage) {
    memset(model, 0, sizeof(*model));
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
    model->fp8_record = 1;
    model->recompute = args->recompute;
    model->attention_kind = gpu_attention_kind(args->attention);
    fill_in_parameter_sizes(model->param_sizes, config);
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) { model->num_parameters += model->param_sizes[i]; }
    model->shard = zero_shard(model->num_parameters, num_processes, process_rank, zero_stage);
    if (model->precision == PRECISION_FP8) {
        char err[256];
        if (fp8_meta_init(&model->fp8_host, num_modules(model), &model->recipe, err, sizeof(err))) { die("%s", err); }
        model->fp8_stats_host = (Fp8QuantStats*)calloc_or_die((size_t)model->fp8_host.num_slots, sizeof(Fp8QuantStats),
                                                              "FP8 stats");
        model->fp8_last_amax = (float*)calloc_or_die((size_t)model->fp8_host.num_slots, 4, "FP8 amaxes");
        model->fp8_window_amax_host = (float*)calloc_or_die((size_t)model->fp8_host.num_slots, 4, "FP8 amaxes");
    }
    gemm_context_init(&model->gemm);
    cublasCheck(cublasCreate(&model->cublas));
    cudaCheck(cudaStreamCreate(&model->stream));
    cudaCheck(cudaStreamCreate(&model->comm_stream));
    cudaCheck(cudaEventCreateWithFlags(&model->grads_ready, cudaEventDisableTiming));
    cudaCheck(cudaEventCreateWithFlags(&model->grads_reduced, cudaEventDisableTiming));
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
        } else if (args->attention == ATTENTION_CUDNN) {
            die("-attn cudnn: cuDNN cannot run this attention (B %d, T %d, NH %d, head size %d): %s; -attn plain runs "
                "any shape", B, T, config->num_heads, head_size, why);
        } else {
            printf("attention: plain CUDA/cuBLAS, as cuDNN cannot run head size %d at T %d (%s)\n", head_size, T, why);
            cudnn_attention_destroy(model->cudnn_attention);
            model->cudnn_attention = NULL;
            model->attention_kind = ATTENTION_PLAIN;
        }
    }
#endif
    if (model->attention_kind == ATTENTION_PLAIN) {  // its softmax launches a block per (b, head, t)
        blocks_per_row((size_t)B * config->num_heads * T, "the attention softmax (one block per batch row, head and position)");
    }
    GpuMemoryInputs* in = &model->memory_inputs;
    in->config = *config;
    in->B = B;
    in->T = T;
    in->linear = gpu_linear_precision(model);
    in->recompute = model->recompute;
    in->attention = model->attention_kind;
    in->shard = model->shard;
    in->fp8_meta_floats = model->precision == PRECISION_FP8 ? model->fp8_host.num_floats : 0;
    in->fp8_slots = model->precision == PRECISION_FP8 ? model->fp8_host.num_slots : 0;
    in->gemm_workspace_bytes = GEMM_WORKSPACE_BYTES;
    in->attention_workspace_bytes = model->attention_workspace_bytes;
    in->column_sum_rows = COLUMN_SUM_ROWS;
    in->norm_blocks = NORM_BLOCKS;
    gpu_memory_plan(&model->memory, in);
}

// Allocates every device buffer of the memory plan (zeroed; a buffer of size 0 is not allocated and its pointer stays
// NULL: nothing in this configuration uses it), and the host scratch that goes with them.
static void gpt2_gpu_allocate_buffers(GPT2GPU* model) {
    size_t BT = (size_t)model->B * model->T;
    void** buffer = model->device_buffers;
    for (int i = 0; i < NUM_GPU_BUFFERS; i++) {
        // cuBLASLt's workspace is counted in the plan but gemm_context_init allocated it
        buffer[i] = i == GPU_GEMM_WORKSPACE || model->memory.bytes[i] == 0 ? NULL : device_alloc(model->memory.bytes[i]);
    }
    model->params_memory = (floatX*)buffer[GPU_PARAMS];
    model->grads_memory = (float*)buffer[GPU_GRADS];
    model->master = (float*)buffer[GPU_MASTER];
    model->m_memory = (float*)buffer[GPU_ADAM_M];
    model->v_memory = (float*)buffer[GPU_ADAM_V];
    point_parameters_bf16(&model->params, model->params_memory, model->param_sizes);
    point_parameters(&model->grads, model->grads_memory, model->param_sizes);
    ActivationsGPU* a = &model->acts;
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
    model->attention.q = (floatX*)buffer[GPU_ATTENTION_Q];
    model->attention.k = (floatX*)buffer[GPU_ATTENTION_K];
    model->attention.v = (floatX*)buffer[GPU_ATTENTION_V];
    model->attention.y = (floatX*)buffer[GPU_ATTENTION_Y];
    model->attention.preatt = (floatX*)buffer[GPU_ATTENTION_PREATT];
    model->dq = (floatX*)buffer[GPU_ATTENTION_DQ];
    model->dk = (floatX*)buffer[GPU_ATTENTION_DK];
    model->dv = (floatX*)buffer[GPU_ATTENTION_DV];
    model->inputs = (int*)buffer[GPU_INPUTS];
    model->targets = (int*)buffer[GPU_TARGETS];
    model->bucket_positions = (int*)buffer[GPU_BUCKET_POSITIONS];
    model->bucket_start = (int*)buffer[GPU_BUCKET_START];
    model->bucket_token = (int*)buffer[GPU_BUCKET_TOKEN];
    model->column_partials = (float*)buffer[GPU_COLUMN_PARTIALS];
    model->dresidual = (floatX*)buffer[GPU_DRESIDUAL];
    model->dbtc = (floatX*)buffer[GPU_DBTC];
    model->dbtc2 = (floatX*)buffer[GPU_DBTC2];
    model->dbt4c = (floatX*)buffer[GPU_DBT4C];
    model->dqkv = (floatX*)buffer[GPU_DQKV];
    model->norm_squared = (float*)buffer[GPU_NORM_SQUARED];
    model->norm_partials = (float*)buffer[GPU_NORM_PARTIALS];
    model->amax_discard = (float*)buffer[GPU_AMAX_DISCARD];
    model->host_positions = (int*)calloc_or_die(BT, 4, "token buckets");
    model->host_bucket_start = (int*)calloc_or_die(BT + 1, 4, "token buckets");
    model->host_bucket_token = (int*)calloc_or_die(BT, 4, "token buckets");
    model->host_token_count = (int*)calloc_or_die((size_t)model->config.vocab_size, 4, "token counts");
    if (model->precision == PRECISION_FP8) {
        model->fp8_device = (float*)buffer[GPU_FP8_META];
        model->fp8_stats_device = (unsigned long long*)buffer[GPU_FP8_STATS];
        cudaCheck(cudaMemcpy(model->fp8_device, model->fp8_host.memory, model->fp8_host.num_floats * 4, cudaMemcpyHostToDevice));
        model->weight_fp8_offset = (size_t*)calloc_or_die((size_t)num_modules(model), sizeof(size_t), "offsets");
        LinearPrecision lp = gpu_linear_precision(model);
        fp8_weight_layout(&model->config, &lp, model->weight_fp8_offset);
        model->weight_fp8 = (uint8_t*)buffer[GPU_WEIGHT_FP8];
        model->weight_t_fp8 = (uint8_t*)buffer[GPU_WEIGHT_T_FP8];
        model->x_fp8 = (uint8_t*)buffer[GPU_X_FP8];
        model->x_t_fp8 = (uint8_t*)buffer[GPU_X_T_FP8];
        model->dy_fp8 = (uint8_t*)buffer[GPU_DY_FP8];
        model->dy_t_fp8 = (uint8_t*)buffer[GPU_DY_T_FP8];
        model->fp8_window_amax = (float*)buffer[GPU_FP8_WINDOW_AMAX];  // these four: current scaling only
        model->fp8_eval_scales = (float*)buffer[GPU_FP8_EVAL_SCALES];
        model->amax_workspace.partials = (unsigned int*)buffer[GPU_AMAX_PARTIALS];
        model->amax_workspace.blocks_done = (unsigned int*)buffer[GPU_AMAX_TICKETS];  // zeroed: no cast under way
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
static void gpt2_gpu_free(GPT2GPU* model) {
    cudaCheck(cudaDeviceSynchronize());
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
    cudaCheck(cudaStreamDestroy(model->stream));
    cudaCheck(cudaStreamDestroy(model->comm_stream));
    free(model->host_positions);
    free(model->host_bucket_start);
    free(model->host_bucket_token);
    free(model->host_token_count);
    free(model->weight_fp8_offset);
    free(model->fp8_stats_host);
    free(model->fp8_last_amax);
    free(model->fp8_window_amax_host);
    if (model->precision == PRECISION_FP8) { fp8_meta_free(&model->fp8_host); }
    memset(model, 0, sizeof(*model));
}

#ifdef TESTING  // the tests set up a model in one call; main() prints and checks the plan in between
static void gpt2_gpu_allocate(GPT2GPU* model, const GPT2Config* config, const TrainArgs* args, int B, int T,
                              int num_processes, int process_rank, int zero_stage) {
    gpt2_gpu_init(model, config, args, B, T, num_processes, process_rank, zero_stage);
    gpt2_gpu_allocate_buffers(model);
}
#endif

// out (B*T, OC) = inp (B*T, IC) @ W^T + b, in the module's precision
static void linear_forward(GPT2GPU* model, int module, floatX* out, const floatX* inp) {
    LinearX lx = linear_x(model, module);
    int rows = model->B * model->T;
    if (fprop_fp8(model, module)) {
        Fp8Meta* meta = &model->fp8_host;
        int in_slot = fp8_meta_fwd_slot(meta, module, FP8_FWD_INPUT), w_slot = fp8_meta_fwd_slot(meta, module, FP8_FWD_WEIGHT);
        current_scale_before_cast(model, in_slot, inp, (size_t)rows * lx.IC);
        cudaCheck(fp8_cast_amax(model->x_fp8, inp, (size_t)rows * lx.IC, cast_scale(model, in_slot),
                                slot_amax(model, in_slot, 1), meta->forward_format, model->num_sms, model->stream));
        record_range_stats(model, in_slot, inp, (size_t)rows * lx.IC, model->fp8_record);
        gemm_tn(&model->gemm, out, CUDA_R_16BF, model->weight_fp8 + model->weight_fp8_offset[module],
                fp8_cuda_type(meta->forward_format), slot_scale_inv(model, w_slot), model->x_fp8,
                fp8_cuda_type(meta->forward_format), cast_scale_inv(model, in_slot), lx.bias, rows, lx.OC, lx.IC, 0, 1,
                model->stream);
        return;
    }
    if (wgrad_fp8(model, module)) {  // fprop overridden to BF16, wgrad in FP8: the input's amax is still recorded
        Fp8Meta* meta = &model->fp8_host;
        int in_slot = fp8_meta_fwd_slot(meta, module, FP8_FWD_INPUT);
        current_scale_before_cast(model, in_slot, inp, (size_t)rows * lx.IC);
        cudaCheck(fp8_cast_amax(model->x_fp8, inp, (size_t)rows * lx.IC, cast_scale(model, in_slot),
                                slot_amax(model, in_slot, 1), meta->forward_format, model->num_sms, model->stream));
        record_range_stats(model, in_slot, inp, (size_t)rows * lx.IC, model->fp8_record);
    }
    gemm_tn(&model->gemm, out, CUDA_R_16BF, lx.weight, CUDA_R_16BF, NULL, inp, CUDA_R_16BF, NULL, lx.bias, rows, lx.OC,
            lx.IC, 0, 0, model->stream);
}

// dinp (B*T, IC) = dout @ W (written), dW += dout^T @ inp, db += column sums of dout
static void linear_backward(GPT2GPU* model, int module, floatX* dinp, const floatX* dout, const floatX* inp) {
    LinearX lx = linear_x(model, module);
    int rows = model->B * model->T;
    if (lx.dbias) {  // column sums of dout in two deterministic passes
        int chunks = column_sum_chunks(rows);
        dim3 grid(blocks_for(lx.OC, 256), chunks);
        bias_backward_partials_kernel<<<grid, 256, 0, model->stream>>>(model->column_partials, dout, rows, lx.OC);
        column_partials_reduce_kernel<<<blocks_for(lx.OC, 256), 256, 0, model->stream>>>(lx.dbias, model->column_partials,
                                                                                         chunks, lx.OC, lx.OC);
        cudaCheck(cudaGetLastError());
    }
    Fp8Meta* meta = &model->fp8_host;
    int g_slot = 0, in_slot = 0, w_slot = 0;
    if (dgrad_fp8(model, module) || wgrad_fp8(model, module)) {
        g_slot = fp8_meta_bwd_slot(meta, module, FP8_BWD_GRAD_OUTPUT);
        in_slot = fp8_meta_fwd_slot(meta, module, FP8_FWD_INPUT);
        w_slot = fp8_meta_fwd_slot(meta, module, FP8_FWD_WEIGHT);
        current_scale_before_cast(model, g_slot, dout, (size_t)rows * lx.OC);
        cudaCheck(fp8_cast_transpose_amax(model->dy_fp8, model->dy_t_fp8, dout, rows, lx.OC, cast_scale(model, g_slot),
                                          slot_amax(model, g_slot, 1), meta->backward_format, model->stream));
        record_range_stats(model, g_slot, dout, (size_t)rows * lx.OC, model->fp8_record);
    }
    if (dgrad_fp8(model, module)) {
        gemm_tn(&model->gemm, dinp, CUDA_R_16BF, model->weight_t_fp8 + model->weight_fp8_offset[module],
                fp8_cuda_type(meta->forward_format), slot_scale_inv(model, w_slot), model->dy_fp8,
                fp8_cuda_type(meta->backward_format), cast_scale_inv(model, g_slot), NULL, rows, lx.IC, lx.OC, 0, 0,
                model->stream);
    } else {  // dX (rows, IC): column-major m = IC, n = rows, k = OC; A = W (IC x OC, op N), B = dY (OC x rows, op N)
        gemm_lt(&model->gemm, dinp, CUDA_R_16BF, lx.weight, CUDA_R_16BF, NULL, 0, dout, CUDA_R_16BF, NULL, 0, NULL, lx.IC,
                rows, lx.OC, 0, 0, model->stream);
    }
    if (wgrad_fp8(model, module)) {  // the input's transpose, cast with the forward's scale (same bytes, no record;
                                     // with current scaling too: the slot holds the forward cast's scale)
        cudaCheck(fp8_cast_transpose_amax(NULL, model->x_t_fp8, inp, rows, lx.IC, slot_scale(model, in_slot),
                                          model->amax_discard, meta->forward_format, model->stream));
        gemm_tn(&model->gemm, lx.dweight, CUDA_R_32F, model->x_t_fp8, fp8_cuda_type(meta->forward_format),
                slot_scale_inv(model, in_slot), model->dy_t_fp8, fp8_cuda_type(meta->backward_format),
                cast_scale_inv(model, g_slot), NULL, lx.OC, lx.IC, rows, 1, 0, model->stream);
    } else {  // dW (OC, IC): column-major m = IC, n = OC, k = rows; A = X (IC x rows, op N), B = dY (op T)
        gemm_lt(&model->gemm, lx.dweight, CUDA_R_32F, inp, CUDA_R_16BF, NULL, 0, dout, CUDA_R_16BF, NULL, 1, NULL, lx.IC,
                lx.OC, rows, 1, 0, model->stream);
    }
}

// Layer l's attention: out (B, T, C) from qkv (B, T, 3C), keeping what the backward needs when `training` (cuDNN:
// the softmax statistics; plain: the attention matrix, always).
static void attention_forward_layer(GPT2GPU* model, int l, floatX* out, const floatX* qkv, int training) {
    int B = model->B, T = model->T, C = model->config.channels, NH = model->config.num_heads;
    if (model->attention_kind == ATTENTION_PLAIN) {
        attention_forward(model->cublas, out, model->acts.att + (size_t)l * B * NH * T * T, qkv, &model->attention, B, T,
                          C, NH, model->stream);
        return;
    }
#ifdef ENABLE_CUDNN
    float* stats = training ? model->acts.attention_stats + (size_t)l * model->stats_layer_floats : NULL;
    attention_forward_cudnn(model->cudnn_attention, out, stats, qkv, B, T, C, NH, model->stream);
#else
    (void)training;
    die("cuDNN attention in a build without cuDNN");
#endif
}

// Layer l's attention backward: dqkv (B, T, 3C) written from dout (B, T, C) and what the forward kept.
static void attention_backward_layer(GPT2GPU* model, int l, floatX* dqkv, const floatX* dout) {
    int B = model->B, T = model->T, C = model->config.channels, NH = model->config.num_heads;
    size_t BTC = (size_t)B * T * C;
    const floatX* qkv = model->acts.qkv + (size_t)l * BTC * 3;
    if (model->attention_kind == ATTENTION_PLAIN) {
        attention_backward(model->cublas, dqkv, dout, qkv, model->acts.att + (size_t)l * B * NH * T * T,
                           &model->attention, model->dq, model->dk, model->dv, B, T, C, NH, model->stream);
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

// Elements between two layers' slices of ln1/ln2 and of fch_gelu: 0 where the recompute keeps one layer's (-r 2 for
// LayerNorm, -r 1 or 2 for GELU), so every layer writes, and the backward recomputes, the same buffer.
static size_t ln_layer_stride(const GPT2GPU* m) { return m->recompute >= 2 ? 0 : (size_t)m->B * m->T * m->config.channels; }
static size_t gelu_layer_stride(const GPT2GPU* m) { return m->recompute >= 1 ? 0 : (size_t)m->B * m->T * 4 * m->config.channels; }

// Forward on model->inputs/targets (already on the device); returns the mean loss. `training`: write dlogits.
static float gpt2_forward(GPT2GPU* model, int training, float dloss) {
    int B = model->B, T = model->T, C = model->config.channels, L = model->config.num_layers;
    int V = model->config.vocab_size, Vp = model->config.padded_vocab_size;
    size_t BT = (size_t)B * T, BTC = BT * C;
    unsigned int row_blocks = blocks_per_row(BT, "LayerNorm and the classifier (one block per token)");
    ActivationsGPU* a = &model->acts;
    ParameterTensorsX* p = &model->params;
    cudaStream_t s = model->stream;
    encoder_forward_kernel<<<blocks_for(BTC, 256), 256, 0, s>>>(a->encoded, model->inputs, p->wte, p->wpe, B, T, C);
    cudaCheck(cudaGetLastError());
    for (int l = 0; l < L; l++) {
        const floatX* residual = l == 0 ? a->encoded : a->residual3 + (l - 1) * BTC;
        floatX* ln1 = a->ln1 + l * ln_layer_stride(model);
        floatX* qkv = a->qkv + l * BTC * 3;
        floatX* atty = a->atty + l * BTC;
        floatX* residual2 = a->residual2 + l * BTC;
        floatX* ln2 = a->ln2 + l * ln_layer_stride(model);
        floatX* fch = a->fch + l * BTC * 4;
        floatX* fch_gelu = a->fch_gelu + l * gelu_layer_stride(model);
        floatX* residual3 = a->residual3 + l * BTC;
        int module = l * LINEARS_PER_BLOCK;
        layernorm_forward_kernel<<<row_blocks, 256, 0, s>>>(ln1, a->ln1_mean + l * BT, a->ln1_rstd + l * BT, residual,
                                                            p->ln1w + l * C, p->ln1b + l * C, C);
        cudaCheck(cudaGetLastError());
        linear_forward(model, module + LINEAR_QKV, qkv, ln1);
        attention_forward_layer(model, l, atty, qkv, training);
        linear_forward(model, module + LINEAR_ATTPROJ, a->proj_out, atty);
        residual_forward_kernel<<<blocks_for(BTC, 256), 256, 0, s>>>(residual2, residual, a->proj_out, BTC);
        layernorm_forward_kernel<<<row_blocks, 256, 0, s>>>(ln2, a->ln2_mean + l * BT, a->ln2_rstd + l * BT, residual2,
                                                            p->ln2w + l * C, p->ln2b + l * C, C);
        cudaCheck(cudaGetLastError());
        linear_forward(model, module + LINEAR_FC, fch, ln2);
        gelu_forward_kernel<<<blocks_for(BTC * 4, 256), 256, 0, s>>>(fch_gelu, fch, BTC * 4);
        linear_forward(model, module + LINEAR_FCPROJ, a->proj_out, fch_gelu);
        residual_forward_kernel<<<blocks_for(BTC, 256), 256, 0, s>>>(residual3, residual2, a->proj_out, BTC);
        cudaCheck(cudaGetLastError());
    }
    layernorm_forward_kernel<<<row_blocks, 256, 0, s>>>(a->lnf, a->lnf_mean, a->lnf_rstd, a->residual3 + (L - 1) * BTC, p->lnfw,
                                                        p->lnfb, C);
    cudaCheck(cudaGetLastError());
    linear_forward(model, lm_head(model), a->logits, a->lnf);
    fused_classifier_kernel<<<row_blocks, 512, 0, s>>>(a->logits, a->losses, model->targets, dloss, V, Vp, training);
    cudaCheck(cudaGetLastError());
    float* losses = (float*)malloc(BT * sizeof(float));
    cudaCheck(cudaMemcpyAsync(losses, a->losses, BT * sizeof(float), cudaMemcpyDeviceToHost, s));
    cudaCheck(cudaStreamSynchronize(s));
    double sum = 0.0;
    for (size_t i = 0; i < BT; i++) { sum += losses[i]; }
    free(losses);
    model->mean_loss = (float)(sum / BT);
    return model->mean_loss;
}

// dweight, dbias (C) fp32 += LayerNorm parameter gradients over the B*T rows (two deterministic passes)
static void layernorm_param_backward(GPT2GPU* model, float* dweight, float* dbias, const floatX* dout, const floatX* inp,
                                     const float* mean, const float* rstd) {
    int rows = model->B * model->T, C = model->config.channels, chunks = column_sum_chunks(rows);
    dim3 grid(blocks_for(C, 256), chunks);
    layernorm_param_backward_partials_kernel<<<grid, 256, 0, model->stream>>>(model->column_partials, dout, inp, mean,
                                                                              rstd, rows, C);
    column_partials_reduce_kernel<<<blocks_for(C, 256), 256, 0, model->stream>>>(dweight, model->column_partials, chunks,
                                                                                2 * C, C);
    column_partials_reduce_kernel<<<blocks_for(C, 256), 256, 0, model->stream>>>(dbias, model->column_partials + C, chunks,
                                                                                2 * C, C);
    cudaCheck(cudaGetLastError());
}

// Starts the reduction over the ranks of the gradients of block l (its slice of every per-layer tensor), or with
// l = -1 of the shared tensors (wte, wpe, lnfw, lnfb), on comm_stream, after what the compute stream has done so far.
static void gpt2_reduce_gradients_async(GPT2GPU* model, int l) {
    MultiGpu* mg = model->reduce_in_backward;
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
static LayerNormX layernorm_x(GPT2GPU* model, int l, int which) {
    int C = model->config.channels;
    size_t BT = (size_t)model->B * model->T, BTC = BT * C;
    ActivationsGPU* a = &model->acts;
    ParameterTensorsX* p = &model->params;
    ParameterTensors* g = &model->grads;
    LayerNormX ln;
    if (which == 1) {
        LayerNormX ln1 = {l == 0 ? a->encoded : a->residual3 + (l - 1) * BTC, a->ln1 + l * ln_layer_stride(model),
                          p->ln1w + l * C, p->ln1b + l * C, g->ln1w + l * C, g->ln1b + l * C, a->ln1_mean + l * BT,
                          a->ln1_rstd + l * BT};
        ln = ln1;
    } else {
        LayerNormX ln2 = {a->residual2 + l * BTC, a->ln2 + l * ln_layer_stride(model), p->ln2w + l * C, p->ln2b + l * C,
                          g->ln2w + l * C, g->ln2b + l * C, a->ln2_mean + l * BT, a->ln2_rstd + l * BT};
        ln = ln2;
    }
    return ln;
}

// -r 2: the LayerNorm's output again, from its input and saved statistics (the forward's bytes: layernorm_output).
static void layernorm_recompute(GPT2GPU* model, const LayerNormX* ln) {
    if (model->recompute < 2) { return; }
    unsigned int row_blocks = blocks_per_row((size_t)model->B * model->T, "the LayerNorm recompute (one block per token)");
    layernorm_recompute_kernel<<<row_blocks, 256, 0, model->stream>>>(ln->out, ln->inp, ln->weight, ln->bias, ln->mean,
                                                                      ln->rstd, model->config.channels);
    cudaCheck(cudaGetLastError());
}

// dresidual += the LayerNorm's input gradient from dout (B, T, C); its weight and bias gradients accumulate.
static void layernorm_backward_all(GPT2GPU* model, const LayerNormX* ln, const floatX* dout) {
    unsigned int row_blocks = blocks_per_row((size_t)model->B * model->T, "the LayerNorm backward (one block per token)");
    layernorm_backward_kernel<<<row_blocks, 256, 0, model->stream>>>(model->dresidual, dout, ln->inp, ln->weight, ln->mean,
                                                                     ln->rstd, model->config.channels);
    cudaCheck(cudaGetLastError());
    layernorm_param_backward(model, ln->dweight, ln->dbias, dout, ln->inp, ln->mean, ln->rstd);
}

// Backward of the last training forward (its logits already hold dlogits); parameter gradients accumulate.
static void gpt2_backward(GPT2GPU* model) {
    int B = model->B, T = model->T, C = model->config.channels, L = model->config.num_layers;
    size_t BT = (size_t)B * T, BTC = BT * C;
    ActivationsGPU* a = &model->acts;
    ParameterTensorsX* p = &model->params;
    ParameterTensors* g = &model->grads;
    cudaStream_t s = model->stream;
    // LM head: dlnf -> dbtc; then the final LayerNorm into dresidual (the gradient of the last residual stream)
    linear_backward(model, lm_head(model), model->dbtc, a->logits, a->lnf);
    cudaCheck(cudaMemsetAsync(model->dresidual, 0, BTC * 2, s));
    LayerNormX lnf = {a->residual3 + (L - 1) * BTC, a->lnf, p->lnfw, p->lnfb, g->lnfw, g->lnfb, a->lnf_mean, a->lnf_rstd};
    layernorm_backward_all(model, &lnf, model->dbtc);
    for (int l = L - 1; l >= 0; l--) {
        int module = l * LINEARS_PER_BLOCK;
        LayerNormX ln1 = layernorm_x(model, l, 1), ln2 = layernorm_x(model, l, 2);
        // what the recompute did not keep comes back from the same kernels on the same inputs, so the same bytes;
        // the FP8 casts of it below are wgrad's transposes, which never record an amax (the forward recorded it once)
        floatX* fch_gelu = a->fch_gelu + l * gelu_layer_stride(model);
        if (model->recompute >= 1) {
            gelu_forward_kernel<<<blocks_for(BTC * 4, 256), 256, 0, s>>>(fch_gelu, a->fch + l * BTC * 4, BTC * 4);
            cudaCheck(cudaGetLastError());
        }
        // dresidual holds d(residual3); residual3 = residual2 + fcproj: both get it. fcproj's input gradient:
        linear_backward(model, module + LINEAR_FCPROJ, model->dbt4c, model->dresidual, fch_gelu);
        gelu_backward_kernel<<<blocks_for(BTC * 4, 256), 256, 0, s>>>(model->dbt4c, a->fch + l * BTC * 4, model->dbt4c,
                                                                      BTC * 4);
        cudaCheck(cudaGetLastError());
        layernorm_recompute(model, &ln2);
        linear_backward(model, module + LINEAR_FC, model->dbtc, model->dbt4c, ln2.out);
        // d(residual2) = d(residual3) + LayerNorm2 backward, accumulated in place in dresidual
        layernorm_backward_all(model, &ln2, model->dbtc);
        // residual2 = residual + attproj: attproj's output gradient is d(residual2)
        linear_backward(model, module + LINEAR_ATTPROJ, model->dbtc2, model->dresidual, a->atty + l * BTC);
        attention_backward_layer(model, l, model->dqkv, model->dbtc2);
        layernorm_recompute(model, &ln1);
        linear_backward(model, module + LINEAR_QKV, model->dbtc, model->dqkv, ln1.out);
        layernorm_backward_all(model, &ln1, model->dbtc);
        if (model->reduce_in_backward) { gpt2_reduce_gradients_async(model, l); }  // block l's gradients are final
    }
    encoder_backward_wpe_kernel<<<blocks_for((size_t)T * C, 256), 256, 0, s>>>(g->wpe, model->dresidual, B, T, C);
    dim3 wte_grid(blocks_for(C, 256), model->num_buckets < 65535 ? model->num_buckets : 65535);
    encoder_backward_wte_kernel<<<wte_grid, 256, 0, s>>>(g->wte, model->dresidual, model->bucket_positions,
                                                         model->bucket_start, model->bucket_token, model->num_buckets, C);
    cudaCheck(cudaGetLastError());
    if (model->reduce_in_backward) {  // the shared tensors, then the compute stream waits for every reduction
        gpt2_reduce_gradients_async(model, -1);
        cudaCheck(cudaEventRecord(model->grads_reduced, model->comm_stream));
        cudaCheck(cudaStreamWaitEvent(s, model->grads_reduced, 0));
    }
}

// The gradient norm: this rank's shard's sum of squares (per-block partials, then one block adds them in order: the
// same bits every run), summed over the ranks, into model->norm_squared where AdamW reads it; also returned.
static float gpt2_grad_norm(GPT2GPU* model, MultiGpu* mg) {
    cudaStream_t s = model->stream;
    norm_squared_partials_kernel<<<NORM_BLOCKS, 512, 0, s>>>(model->norm_partials, model->grads_memory + model->shard.offset,
                                                              model->shard.count);
    sum_partials_kernel<<<1, 1024, 0, s>>>(model->norm_squared, model->norm_partials, NORM_BLOCKS);
    cudaCheck(cudaGetLastError());
    if (mg->zero_stage == 1) { multi_gpu_sum_scalar(mg, model->norm_squared, s); }
    float norm_squared;
    cudaCheck(cudaMemcpyAsync(&norm_squared, model->norm_squared, 4, cudaMemcpyDeviceToHost, s));
    cudaCheck(cudaStreamSynchronize(s));
    return sqrtf(norm_squared);
}

// AdamW on the shard's fp32 masters (decay on 2-D tensors only: a shard may start or end inside a tensor), writing
// the new bf16 weights of the shard into the full parameter buffer; ZeRO-1 then all-gathers the rest.
static void gpt2_update(GPT2GPU* model, float lr, float weight_decay, float grad_clip, int t) {
    const float beta1 = 0.9f, beta2 = 0.95f, eps = 1e-8f;
    float bias1 = 1.0f - powf(beta1, (float)t), bias2 = 1.0f - powf(beta2, (float)t);
    const ZeroShard* shard = &model->shard;
    size_t offset = 0;
    for (int tensor = 0; tensor < NUM_PARAMETER_TENSORS; tensor++) {
        size_t n = model->param_sizes[tensor], lo, hi;
        float decay = parameter_tensor_is_2d(tensor) ? weight_decay : 0.0f;
        if (zero_shard_overlap(shard, offset, n, &lo, &hi)) {
            size_t k = lo - shard->offset;  // index into the shard's masters and moments
            adamw_kernel<<<blocks_for(hi - lo, 512), 512, 0, model->stream>>>(
                model->master + k, model->params_memory + lo, model->grads_memory + lo, model->m_memory + k,
                model->v_memory + k, hi - lo, lr, beta1, beta2, bias1, bias2, eps, decay, model->norm_squared, grad_clip);
            cudaCheck(cudaGetLastError());
        }
        offset += n;
    }
}

// host <-> device copies of what a checkpoint holds: all parameters (gathered from the shards into the gradient
// buffer, free between steps; every rank must call this), this rank's moments and FP8 state
static void gpt2_download_state(GPT2GPU* model, MultiGpu* mg, float* params, float* m, float* v) {
    multi_gpu_gather_masters(mg, model->grads_memory, model->master, &model->shard, model->stream);
    cudaCheck(cudaStreamSynchronize(model->stream));
    cudaCheck(cudaMemcpy(params, model->grads_memory, model->num_parameters * 4, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(m, model->m_memory, model->shard.count * 4, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(v, model->v_memory, model->shard.count * 4, cudaMemcpyDeviceToHost));
    if (model->precision == PRECISION_FP8) {
        cudaCheck(cudaMemcpy(model->fp8_host.memory, model->fp8_device, model->fp8_host.num_floats * 4, cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(model->fp8_stats_host, model->fp8_stats_device,
                             (size_t)model->fp8_host.num_slots * sizeof(Fp8QuantStats), cudaMemcpyDeviceToHost));
        if (model->recipe.scaling == FP8_SCALING_CURRENT) {  // current scaling keeps its window amaxes on the device
            cudaCheck(cudaMemcpy(model->fp8_window_amax_host, model->fp8_window_amax, (size_t)model->fp8_host.num_slots * 4,
                                 cudaMemcpyDeviceToHost));
        }
    }
}

// The FP8 arrays of this rank's state file, host copies (NULL without FP8): metadata, last amaxes, window amaxes,
// cast counters since the last diagnostics block. gpt2_download_state fills them; gpt2_upload_fp8_state sends a loaded set back.
static StateFp8Arrays gpu_state_fp8_arrays(GPT2GPU* model) {
    StateFp8Arrays a = {model->fp8_host.memory, model->fp8_last_amax, model->fp8_window_amax_host, model->fp8_stats_host};
    return a;
}

static void gpt2_upload_fp8_state(GPT2GPU* model) {
    if (model->precision != PRECISION_FP8) { return; }
    cudaCheck(cudaMemcpy(model->fp8_device, model->fp8_host.memory, model->fp8_host.num_floats * 4, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(model->fp8_stats_device, model->fp8_stats_host,
                         (size_t)model->fp8_host.num_slots * sizeof(Fp8QuantStats), cudaMemcpyHostToDevice));
    if (model->recipe.scaling == FP8_SCALING_CURRENT) {
        cudaCheck(cudaMemcpy(model->fp8_window_amax, model->fp8_window_amax_host, (size_t)model->fp8_host.num_slots * 4,
                             cudaMemcpyHostToDevice));
    }
}

// params (P): every rank gets all bf16 weights and keeps the fp32 masters of its shard
static void gpt2_upload_params(GPT2GPU* model, const float* params) {
    // all on the model's stream, in order (the fp32 values pass through the gradient buffer, free between steps)
    cudaStream_t s = model->stream;
    cudaCheck(cudaMemcpyAsync(model->grads_memory, params, model->num_parameters * 4, cudaMemcpyHostToDevice, s));
    float_to_bf16_kernel<<<blocks_for(model->num_parameters, 512), 512, 0, s>>>(model->params_memory, model->grads_memory,
                                                                               model->num_parameters);
    cudaCheck(cudaGetLastError());
    cudaCheck(cudaMemcpyAsync(model->master, model->grads_memory + model->shard.offset, model->shard.count * 4,
                              cudaMemcpyDeviceToDevice, s));
    cudaCheck(cudaMemsetAsync(model->grads_memory, 0, model->shard.padded * 4, s));
    cudaCheck(cudaStreamSynchronize(s));
}

static StateHeader gpu_state_header(const GPT2GPU* model, int step, const DataLoader* loader) {
    StateHeader h;
    memset(&h, 0, sizeof(h));
    h.num_processes = model->num_processes;
    h.process_rank = model->process_rank;
    h.precision = model->precision;
    h.fp8_modules = model->precision == PRECISION_FP8 ? model->fp8_host.num_modules : 0;
    h.recipe = model->recipe;
    if (model->precision != PRECISION_FP8) { delayed_scaling_default(&h.recipe); }
    h.fp8_bf16_first_last = model->fp8_bf16_first_last;
    h.fp8_lm_head = model->fp8_lm_head;
    h.B = model->B;
    h.T = model->T;
    h.total_batch = model->total_batch;
    h.step = step;
    h.num_parameters = (int64_t)model->num_parameters;
    h.opt_offset = (int64_t)model->shard.offset;
    h.opt_count = (int64_t)model->shard.count;
    h.shard_index = loader ? (int64_t)loader->current_shard_idx : 0;
    h.shard_position = loader ? (int64_t)loader->current_position : 0;
    return h;
}

// inputs, targets (B, T) host -> device, and the token buckets of the encoder backward. The copies are synchronous:
// the host scratch is reused by the next batch.
static void gpt2_set_batch(GPT2GPU* model, const int* inputs, const int* targets) {
    int BT = model->B * model->T;
    model->num_buckets = encoder_buckets(inputs, BT, model->config.vocab_size, model->host_positions,
                                         model->host_bucket_start, model->host_bucket_token, model->host_token_count);
    cudaCheck(cudaMemcpy(model->inputs, inputs, (size_t)BT * sizeof(int), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(model->targets, targets, (size_t)BT * sizeof(int), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(model->bucket_positions, model->host_positions, (size_t)BT * sizeof(int), cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(model->bucket_start, model->host_bucket_start, (size_t)(model->num_buckets + 1) * sizeof(int),
                         cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(model->bucket_token, model->host_bucket_token, (size_t)model->num_buckets * sizeof(int),
                         cudaMemcpyHostToDevice));
}

static void upload_batch(GPT2GPU* model, const DataLoader* loader) { gpt2_set_batch(model, loader->inputs, loader->targets); }

// One fp8_diag.tsv block, as the CPU trainer writes it: per used slot of every FP8 module, the amax the last update
// saw, the scale now, and the clipped / flushed fractions of this rank's casts since the last block (then reset).
static void write_fp8_diagnostics(GPT2GPU* model, FILE* f, int step) {
    Fp8Meta* meta = &model->fp8_host;
    int S = meta->num_slots;
    // the device counters are (count, saturated, flushed) triples of 64-bit integers: Fp8QuantStats' layout
    static_assert(sizeof(Fp8QuantStats) == 3 * sizeof(unsigned long long), "Fp8QuantStats is three 64-bit counts");
    Fp8QuantStats* stats = (Fp8QuantStats*)calloc_or_die((size_t)S, sizeof(Fp8QuantStats), "FP8 stats");
    cudaCheck(cudaStreamSynchronize(model->stream));
    cudaCheck(cudaMemcpy(stats, model->fp8_stats_device, (size_t)S * sizeof(Fp8QuantStats), cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(meta->scale, slot_scale(model, 0), (size_t)S * 2 * 4, cudaMemcpyDeviceToHost));  // + scale_inv
    cudaCheck(cudaMemset(model->fp8_stats_device, 0, (size_t)S * sizeof(Fp8QuantStats)));
    if (model->recipe.scaling == FP8_SCALING_CURRENT) {
        cudaCheck(cudaMemcpy(model->fp8_window_amax_host, model->fp8_window_amax, (size_t)S * 4, cudaMemcpyDeviceToHost));
    }
    LinearPrecision lp = gpu_linear_precision(model);
    fp8_diag_write_block(f, step, meta, &lp, model->fp8_last_amax, model->fp8_window_amax_host, stats);
    free(stats);
}

// The distribution after position t - 1 of tokens (1, T): every row of the (B, T) window holds the tokens (the
// model's shapes are fixed), row 0's logits at t - 1 come back as bf16 and the softmax runs on the host in double.
static void gpu_next_token_probs(void* m, const int* tokens, int t, float* probs) {
    GPT2GPU* model = (GPT2GPU*)m;
    int B = model->B, T = model->T, V = model->config.vocab_size, Vp = model->config.padded_vocab_size;
    int* window = (int*)calloc_or_die((size_t)B * T, sizeof(int), "sample window");
    for (int b = 0; b < B; b++) { memcpy(window + (size_t)b * T, tokens, (size_t)T * sizeof(int)); }
    gpt2_set_batch(model, window, window);  // targets: any valid ids, the loss is not used
    gpt2_forward(model, 0, 0.0f);
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

static void sample_text(GPT2GPU* model, const Tokenizer* tokenizer, int gen_tokens, Rng* rng) {
    int saved = model->fp8_record;
    model->fp8_record = 0;
    sample_text_with(stdout, model, gpu_next_token_probs, model->T, model->config.vocab_size, tokenizer, gen_tokens,
                     rng);
    model->fp8_record = saved;
}

#ifndef TESTING
int main(int argc, char** argv) {
    TrainArgs args;
    parse_args(&args, argc, argv);
    char err[512];
    if (args.precision == PRECISION_FP32) { die("-precision fp32 is the CPU reference's mode; the GPU trainer runs bf16 or fp8"); }
    // E5M2 forward tensors would make E5M2 x E5M2 GEMMs, which cuBLASLt does not run on Hopper: refused here, before
    // any GPU is looked for, so the answer is the same on every machine
    if (args.precision == PRECISION_FP8 && args.recipe.fp8_format == FP8_RECIPE_E5M2) {
        die("-fp8 e5m2 is CPU-only (cuBLASLt has no E5M2 x E5M2 GEMM on Hopper): use -fp8 hybrid or e4m3 here, or "
            "train_gpt_fp8_cpu");
    }
    ProcessGroupConfig pg;
    if (process_group_resolve(&pg, args.num_processes, args.process_rank, args.gpus_per_node, args.init_method,
                              args.fs_path, args.server_ip, err, sizeof(err))) {
        die("%s", err);
    }
    // -attn stays ATTENTION_DEFAULT when not given: gpt2_gpu_init then falls back to the plain attention where cuDNN
    // cannot run the shape, and -attn cudnn makes that an error; a build without cuDNN refuses -attn cudnn at once
    (void)gpu_attention_kind(args.attention);
    require_cuda_device("train_gpt_fp8");
    MultiGpu mg;
    multi_gpu_init(&mg, &pg, args.zero_stage);
    int rank0 = mg.process_rank == 0;  // prints, logs and writes the model file
    if (!rank0) {  // only rank 0 speaks; errors still reach stderr from every rank
        if (!freopen("/dev/null", "w", stdout)) { die("cannot silence stdout of rank %d", mg.process_rank); }
    }
    RunSetup run;
    run_setup(&args, &run, mg.process_rank, mg.num_processes);
    GPT2Config config = run.config;
    int B = run.B, T = run.T, total_batch = run.total_batch, grad_accum_steps = run.grad_accum_steps;
    int train_steps = run.train_steps, val_steps = run.val_steps, have_val = run.have_val;
    DataLoader* train_loader = &run.train_loader;
    DataLoader* val_loader = &run.val_loader;
    if (args.precision == PRECISION_FP8 && (config.channels % 64 != 0 || (B * T) % 64 != 0)) {
        die("fp8 on the GPU needs C and B*T to be multiples of 64 (C %d, B*T %d)", config.channels, B * T);
    }
    // cuDNN's fused attention takes head sizes that are multiples of 8, and no single-token sequence (its backward
    // refuses s_q = s_kv = 1); by default such a shape runs the plain attention, asked for by -attn cudnn it is an error
    // (a shape that passes these but that this cuDNN has no engine for is found by gpt2_gpu_init, which asks cuDNN)
    int head_size = config.channels / config.num_heads;
    if (gpu_attention_kind(args.attention) == ATTENTION_CUDNN && (head_size % 8 != 0 || T < 2)) {
        if (args.attention == ATTENTION_CUDNN) {
            die("cuDNN attention needs a head size C/NH that is a multiple of 8 and T >= 2 (C %d, NH %d: %d; T %d); "
                "-attn plain runs any shape", config.channels, config.num_heads, head_size, T);
        }
        printf("attention: plain CUDA/cuBLAS, as cuDNN's needs a head size that is a multiple of 8 and T >= 2 (head "
               "size %d, T %d)\n", head_size, T);
        args.attention = ATTENTION_PLAIN;
    }
    // the grids this shape launches, checked against CUDA's limits before anything is allocated (run_setup already
    // keeps B*T within an int): the column sums (B*T / 64 blocks in y), the widest elementwise launch (B, T, 4C); each
    // exits with one line when it does not fit (the plain attention's, once it is chosen: gpt2_gpu_init)
    column_sum_chunks((size_t)B * T);
    blocks_for((size_t)B * T * 4 * config.channels, 256);
    // -y 1: the checkpoint to resume from, looked for before anything is planned or allocated, so that a run already
    // at or past -x ends with the one line that says so
    long long latest = args.resume ? latest_checkpoint_step(args.output_dir) : -1;
    if (args.resume) {
        multi_gpu_check_same(&mg, latest, "the newest complete checkpoint in -o (is it a folder all ranks share?)");
    }
    if (resume_is_complete(&args, latest, train_steps)) {  // the same answer on every rank
        run_free(&run);
        multi_gpu_free(&mg);
        return 0;
    }

    GPT2GPU model;
    gpt2_gpu_init(&model, &config, &args, B, T, mg.num_processes, mg.process_rank, mg.zero_stage);
    {  // the memory plan before a byte of it is allocated: printed, and refused in one line when it does not fit
        size_t free_bytes, total_bytes;
        cudaCheck(cudaMemGetInfo(&free_bytes, &total_bytes));
        gpu_memory_print(stdout, &model.memory, &model.memory_inputs, free_bytes);
        // cuBLASLt's workspace is in the plan but already allocated (gemm_context_init): not free any more
        size_t available = free_bytes + model.memory.bytes[GPU_GEMM_WORKSPACE];
#ifdef ENABLE_CUDNN
        int cudnn_built = 1;
#else
        int cudnn_built = 0;
#endif
        if (args.estimate_only) {
            int largest = gpu_memory_largest_batch(&model.memory_inputs, available, total_batch, mg.num_processes);
            printf("largest micro-batch that fits: B=%d (at T %d, -r %d, -attn %s, %s; -d %d)\n", largest, T,
                   args.recompute, model.attention_kind == ATTENTION_CUDNN ? "cudnn" : "plain", precision_name(args.precision),
                   total_batch);
            run_free(&run);
            multi_gpu_free(&mg);
            return 0;
        }
        if (!gpu_memory_fits(&model.memory_inputs, available)) {
            char refusal[1024];
            gpu_memory_refusal(refusal, sizeof(refusal), &model.memory_inputs, available, total_batch, mg.num_processes,
                               cudnn_built);
            die("%s", refusal);
        }
    }
    gpt2_gpu_allocate_buffers(&model);
    model.total_batch = total_batch;
    // every collective relies on these being equal on all ranks: check once, fail with one line rather than hang
    multi_gpu_check_same(&mg, (long long)model.num_parameters, "the parameter count");
    multi_gpu_check_same(&mg, model.precision == PRECISION_FP8 ? model.fp8_host.num_slots : 0, "the number of FP8 slots");
    multi_gpu_check_same(&mg, model.attention_kind, "the attention (cuDNN's or the plain one: each rank asked its cuDNN)");
    multi_gpu_check_same(&mg, (long long)B * T * grad_accum_steps, "B*T*accumulation");
    multi_gpu_check_same(&mg, train_steps, "the number of steps");
    float* host_params = (float*)calloc_or_die(model.num_parameters, 4, "parameters");
    float* host_m = (float*)calloc_or_die(model.shard.count, 4, "AdamW m");
    float* host_v = (float*)calloc_or_die(model.shard.count, 4, "AdamW v");
    if (run.loaded_params) {
        memcpy(host_params, run.loaded_params, run.loaded_count * sizeof(float));
    } else {  // the same initialisation as the CPU trainer, from the same seed, on every rank
        ParameterTensors p;
        point_parameters(&p, host_params, model.param_sizes);
        Rng init_rng;
        rng_seed(&init_rng, (uint64_t)args.seed);
        gpt2_init_parameters(&p, model.param_sizes, &config, &init_rng);
    }
    int start_step = 0;
    Rng sample_rng;  // the CPU trainer's sampling stream, from the same seed
    rng_seed(&sample_rng, (uint64_t)args.seed ^ 0x5EEDull);
    if (args.resume) {
        if (latest >= 0) {
            StateHeader h = gpu_state_header(&model, (int)latest, NULL);
            StateFp8Arrays fp8 = gpu_state_fp8_arrays(&model);
            checkpoint_load(args.output_dir, (int)latest, &config, host_params, host_m, host_v, &h,
                            model.precision == PRECISION_FP8 ? &fp8 : NULL);
            if (dataloader_resume(train_loader, (size_t)h.shard_index, (size_t)h.shard_position, err, sizeof(err))) {
                die("%s", err);
            }
            sample_rng.state = h.rng_state;
            start_step = (int)latest;
            cudaCheck(cudaMemcpy(model.m_memory, host_m, model.shard.count * 4, cudaMemcpyHostToDevice));
            cudaCheck(cudaMemcpy(model.v_memory, host_v, model.shard.count * 4, cudaMemcpyHostToDevice));
            gpt2_upload_fp8_state(&model);
            printf("resumed from %s/model_%08lld.bin at step %d\n", args.output_dir, latest, start_step);
        } else {
            printf("resume: no complete checkpoint (DONE_*) in %s, starting from scratch\n", args.output_dir);
        }
    }
    gpt2_upload_params(&model, host_params);
    // rank 0 writes fp8_diag.tsv (opened below), counting every recorded cast from the first weight cast on (as the CPU)
    model.fp8_collect_stats = rank0 && args.output_dir && args.precision == PRECISION_FP8 && args.fp8_diag_every > 0;
    if (model.precision == PRECISION_FP8) { gpt2_cast_weights_fp8(&model, start_step == 0); }
    cudaCheck(cudaDeviceSynchronize());

    cudaDeviceProp prop;
    int device;
    cudaCheck(cudaGetDevice(&device));  // this rank's GPU (multi_gpu_init set it)
    cudaCheck(cudaGetDeviceProperties(&prop, device));
    box_rule(stdout);
    box_row(stdout, "device", "%s, %d SMs", prop.name, prop.multiProcessorCount);
    box_row(stdout, "processes", "%d (%s%s%s), ZeRO stage %d", mg.num_processes, pg.launcher,
            mg.use_nccl ? ", NCCL id via " : "", mg.use_nccl ? pg.init_method : "", mg.zero_stage);
    box_run_rows(stdout, &args, &run, model.num_parameters, mg.num_processes);
    box_row(stdout, "attention", "%s, recompute -r %d",
            model.attention_kind == ATTENTION_CUDNN ? "cuDNN flash attention (-attn cudnn)" : "plain CUDA/cuBLAS (-attn plain)",
            args.recompute);
    box_rule(stdout);

    // MFU: 6 FLOPs per parameter per token (forward + backward) plus attention's 12 * L * C * T (llm.c's estimate)
    double flops_per_step = (6.0 * (double)model.num_parameters + 12.0 * config.num_layers * config.channels * T) *
                            (double)total_batch;
    double peak_flops = gpu_bf16_peak_flops(&prop) * mg.num_processes;
    double peak_memory = 0.0;  // bytes in use on this GPU after a step, at most
    // rank 0's logs; its FP8 diagnostics stand for every rank (amaxes and scales are the same when reduced)
    FILE *main_log = NULL, *diag_log = NULL;
    if (rank0 && args.output_dir) {
        open_run_logs(args.output_dir, start_step, model.fp8_collect_stats, &main_log, &diag_log);
    }
    StepTimer timer = {0.0, 0};
    for (int step = start_step; step <= train_steps; step++) {
        int last_step = step == train_steps;
        if (step != start_step || start_step == 0) {
            if (have_val && (step % args.val_every == 0 || last_step)) {
                model.fp8_record = 0;
                dataloader_reset(val_loader);
                double val_loss = 0.0;
                for (int i = 0; i < val_steps; i++) {
                    if (dataloader_next_batch(val_loader, err, sizeof(err))) { die("%s", err); }
                    upload_batch(&model, val_loader);
                    val_loss += gpt2_forward(&model, 0, 0.0f);
                }
                val_loss = multi_gpu_mean(&mg, (float)(val_loss / val_steps), model.stream);
                model.fp8_record = 1;
                printf("val loss %f\n", val_loss);
                if (main_log) { fprintf(main_log, "s:%d tel:%.4f\n", step, val_loss); fflush(main_log); }
            }
            if (rank0 && sample_due(&args, &run, step)) {
                sample_text(&model, &run.tokenizer, args.gen_tokens, &sample_rng);
            }
            if (args.output_dir && step > 0 && ((args.checkpoint_every > 0 && step % args.checkpoint_every == 0) || last_step)) {
                // the model file from rank 0 (all masters gathered), a state file per rank, DONE after every rank's
                gpt2_download_state(&model, &mg, host_params, host_m, host_v);
                StateHeader h = gpu_state_header(&model, step, train_loader);
                h.rng_state = sample_rng.state;
                if (rank0) { checkpoint_save_model(args.output_dir, step, &config, host_params, model.num_parameters); }
                StateFp8Arrays fp8 = gpu_state_fp8_arrays(&model);
                checkpoint_save_state(args.output_dir, step, host_m, host_v, &h,
                                      model.precision == PRECISION_FP8 ? &fp8 : NULL);
                multi_gpu_barrier(&mg);
                if (rank0) { checkpoint_mark_done(args.output_dir, step); }
                printf("checkpoint: %s/model_%08d.bin\n", args.output_dir, step);
            }
        }
        if (last_step) { break; }
        if (step == args.debug_kill_step) { fflush(stdout); raise(SIGKILL); }  // test hook (the GPU check's resume step)
        cudaEvent_t start, stop;
        cudaCheck(cudaEventCreate(&start));
        cudaCheck(cudaEventCreate(&stop));
        cudaCheck(cudaEventRecord(start, model.stream));
        cudaCheck(cudaMemsetAsync(model.grads_memory, 0, model.shard.padded * 4, model.stream));
        double loss = 0.0;
        for (int micro = 0; micro < grad_accum_steps; micro++) {
            if (dataloader_next_batch(train_loader, err, sizeof(err))) { die("%s", err); }
            upload_batch(&model, train_loader);
            // d(loss)/d(logit) scaled by the GLOBAL batch: the ranks' gradients then SUM to the single-GPU gradient
            // (the CPU's expression, (1 / accumulation steps) / (B*T), with the ranks in the first factor: the same float)
            float dloss = (1.0f / ((float)grad_accum_steps * mg.num_processes)) / (float)(B * T);
            loss += gpt2_forward(&model, 1, dloss) / grad_accum_steps;
            // the last micro-batch reduces the gradients over the ranks while its backward runs
            model.reduce_in_backward = micro == grad_accum_steps - 1 && mg.use_nccl ? &mg : NULL;
            gpt2_backward(&model);
            model.reduce_in_backward = NULL;
        }
        loss = multi_gpu_mean(&mg, (float)loss, model.stream);
        if (step == args.debug_nan_step) {  // test hook, as the CPU trainer's: poison the first gradient of the shard
            // (bytes 0xFF make a float NaN; stream-ordered after the backward and its reductions)
            cudaCheck(cudaMemsetAsync(model.grads_memory + model.shard.offset, 0xFF, sizeof(float), model.stream));
        }
        float norm = gpt2_grad_norm(&model, &mg);
        float lr = learning_rate_at(step, train_steps, args.learning_rate, args.warmup_steps, args.final_lr_fraction);
        if (!isfinite(loss) || !isfinite(norm)) {  // the same decision on every rank: both values are global
            fprintf(stderr, "warning: step %d: loss %g, gradient norm %g is not finite; step skipped, weights and FP8 state kept\n",
                    step + 1, loss, norm);
            if (model.precision == PRECISION_FP8) {  // drop the step's input and gradient amaxes, keep the weights'
                Fp8Meta* meta = &model.fp8_host;
                float* row0 = (float*)calloc_or_die((size_t)meta->num_slots, 4, "row 0");
                cudaCheck(cudaMemcpy(row0, model.fp8_device, meta->num_slots * 4, cudaMemcpyDeviceToHost));
                for (int s = 0; s < meta->num_slots; s++) {
                    if (!(fp8_slot_is_forward(s, meta->num_modules) && s % FP8_FWD_SLOTS == FP8_FWD_WEIGHT)) { row0[s] = 0.0f; }
                }
                cudaCheck(cudaMemcpy(model.fp8_device, row0, meta->num_slots * 4, cudaMemcpyHostToDevice));
                free(row0);
            }
        } else {
            if (model.precision == PRECISION_FP8) {
                if (fp8_meta_update_needs_host(&model.recipe)) { die("FP8 recipe callbacks run on the CPU trainer only"); }
                // TE's reduce_amax: row 0 of every slot of every module, one all-reduce, before the one update launch
                if (model.recipe.reduce_amax) {
                    multi_gpu_amax_allreduce(&mg, model.fp8_device, model.fp8_host.num_slots, model.stream);
                }
                if (diag_log) {  // row 0 as this update sees it: the step's amaxes, for the diagnostics
                    cudaCheck(cudaMemcpyAsync(model.fp8_last_amax, model.fp8_device, model.fp8_host.num_slots * 4,
                                              cudaMemcpyDeviceToHost, model.stream));
                }
                if (diag_log && model.recipe.scaling == FP8_SCALING_DELAYED) {
                    // the window each new scale comes from, before the update rolls its oldest row out: every step,
                    // as the CPU trainer, so a block after a skipped step shows the last update's window (without
                    // diagnostics the GPU tracks neither this nor the last amaxes and the counters: a history copy
                    // and a synchronization per step, for numbers only the diagnostics and the state file show)
                    Fp8Meta* meta = &model.fp8_host;
                    cudaCheck(cudaMemcpyAsync(meta->amax_history, model.fp8_device,
                                              (size_t)meta->amax_history_len * meta->num_slots * 4,
                                              cudaMemcpyDeviceToHost, model.stream));
                    cudaCheck(cudaStreamSynchronize(model.stream));
                    fp8_meta_window_amax(meta, &model.recipe, model.fp8_window_amax_host);
                }
                cudaCheck(fp8_meta_update_launch(model.fp8_device, &model.fp8_host, &model.recipe, step, model.stream));
            }
            gpt2_update(&model, lr, args.weight_decay, args.grad_clip, step + 1);
            multi_gpu_gather_params(&mg, model.params_memory, &model.shard, model.stream);
            // after the all-gather: every rank casts the same weights with the same scale
            if (model.precision == PRECISION_FP8) { gpt2_cast_weights_fp8(&model, 1); }
        }
        cudaCheck(cudaEventRecord(stop, model.stream));
        cudaCheck(cudaEventSynchronize(stop));
        float ms;
        cudaCheck(cudaEventElapsedTime(&ms, start, stop));
        cudaCheck(cudaEventDestroy(start));
        cudaCheck(cudaEventDestroy(stop));
        if (diag_log && (step + 1) % args.fp8_diag_every == 0) { write_fp8_diagnostics(&model, diag_log, step + 1); }
        size_t free_bytes, total_bytes;
        cudaCheck(cudaMemGetInfo(&free_bytes, &total_bytes));
        if ((double)(total_bytes - free_bytes) > peak_memory) { peak_memory = (double)(total_bytes - free_bytes); }
        double mfu = peak_flops > 0 ? 100.0 * flops_per_step / (ms / 1000.0) / peak_flops : -1.0;
        report_step(&timer, main_log, step, start_step, train_steps, loss, norm, lr, ms / 1000.0, total_batch, mfu);
    }
    if (main_log) { fclose(main_log); }
    if (diag_log) { fclose(diag_log); }
    // every buffer is allocated before step 0, so the most in use after any step is the run's peak (cuBLASLt's
    // workspace included; other processes on the same GPU would be counted too)
    printf("peak memory %.2f GiB (rank %d; the estimate was %.2f GiB of our buffers)\n", peak_memory / (1 << 30),
           mg.process_rank, bytes_to_gib(gpu_memory_total(&model.memory)));
    gpt2_gpu_free(&model);
    run_free(&run);
    free(host_params);
    free(host_m);
    free(host_v);
    multi_gpu_free(&mg);
    return 0;
}
#endif  // TESTING
