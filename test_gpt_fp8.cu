/*
test_gpt_fp8.cu — the GPU test: the CUDA trainer (train_gpt_fp8.cu) against the CPU reference (train_gpt_fp8.c),
both compiled into this program (TESTING leaves their main() out), on a tiny model with the same weights and tokens.
Every tolerance is derived from llmc/tolerance.h's rules and counts (R1 bit-exact ... R6 across AdamW steps; n: the
differing bf16 roundings on a tensor's path), computed there, and printed beside the measured value, pass or fail.

  bf16: the logits (relative L2, R5 over their 26 roundings at L 2), the loss (R4 through the log-softmax, the tokens
        independent: 2 n ulps max|z| / sqrt(tokens)) and every parameter tensor's gradient (R5 over its path, up to
        49 roundings);
  fp8:  the FP8 bytes a trainer cast produces equal the CPU quantization of the same bf16 input with the same scale
        (R1); the amaxes one step records: the weights' bit for bit (R1), every activation's and gradient's within
        its path's n ulps (R4, 1 to 47), and each input slot's (and block 0's qkv and fc grad_output's) equal to
        max|x| of the GPU's own tensor (R1: the slot's index); the FP8 state after 1 and 5 training steps against the
        CPU run, entry by entry: an amax history row or scale of step s within R4 for its slot plus R6 for the s
        updates behind it (weights: bit for bit before the first update, then R6's bound), and the losses and
        gradient norms per step likewise (R4, R5, R6);
  medium: the same at L 2, C 768, NH 12, T 384, V 1024, where every kernel loop runs more than one pass, and the
        encoder backward's bucket loop with a grid smaller than the bucket count (R1); and at GPT-2 XL's width (one
        block of C 1600, 25 heads of 64, B*T 128);
  current scaling (-fp8_recipe current): a weight cast and an activation cast (GELU inside it) give the CPU's bytes,
        scale, scale_inv and amax bit for bit from the GPU's own bf16 tensors (R1); an evaluation forward changes no
        FP8 state and gives the logits of a recording forward (R1); 5 steps track the CPU run as for delayed scaling;
  block recipes (-fp8_recipe blockwise, mxfp8; C 128, B*T 128): every weight cast counts the CPU's clipped and
        flushed elements and block scale range (R1), the fcproj weight's and input's codes and scales (blockwise, in
        cuBLASLt's layouts) or dequantized values (mxfp8) are the CPU's block casts of the same bf16 values (R1), 5
        steps track the CPU's losses and norms (R4, R5, R6), and a checkpoint goes CPU -> GPU -> CPU bit for bit (R1);
        blockwise's columnwise input copy made by the forward's cast and kept for the wgrad (at -r 0, and -r 1 where
        fcproj's is cast in the backward) and its grad_output casts' bias sums: the kept codes and scales the CPU's
        cast (R1), 5 steps against the CPU with the diagnostics on, every slot's element count the CPU's, the last
        step's counts and block scale ranges the CPU's casts of the GPU's own tensors, and the bias gradients
        bias_backward's bits (R1); at -r 0 GELU runs inside fcproj's input block cast (both copies from fch), and
        3 steps with it give the bits of gelu_forward and the plain cast (R1), fch_gelu never written;
        the casts and 5 steps again where the widths end in partial blocks: mxfp8 at C 72 and B*T 80 (last: it needs
        fp8/block_quantize.cuh's casts to take partial blocks), blockwise at B*T 80 with a BF16 wgrad (partial blocks
        along the GEMMs' outer dimension only); blockwise's only on a GPU that runs block-scaled GEMMs (compute
        capability 9.0, cuBLASLt 12.9+);
  checkpoints: a CPU checkpoint continues on the GPU with the CPU's loss (R4, as the first forward); GPU save -> load
        -> continue gives bit-identical losses (R1); ZeRO-1 on two ranks is ZeRO-0's bits (R1);
  cuDNN attention (built with cuDNN): the trainer's loss and every gradient against the CPU at a medium shape
        (L 2, C 768, NH 12, T 256, V 1024), with the plain attention's counts (cuDNN rounds no more); without -attn, a
        head size cuDNN cannot run (1024) falls back to the plain attention and one it runs keeps cuDNN; recompute (-r 1,
        -r 2): loss, gradients, recorded amaxes and the diagnostics' counts (window amaxes, block scale ranges)
        bit-identical to -r 0 (R1), in BF16, FP8 delayed, FP8 current, FP8 with BF16 end blocks, FP8 blockwise
        (where the GPU runs its GEMMs) and FP8 mxfp8, with plain and with cuDNN attention (in FP8 this pins the x^T the forward keeps
        for a wgrad to the one the backward casts from a remade input, and the layer slices of the inputs; the kept x^T
        is also the forward's x, transposed, byte for byte, R1).
  fused casts (delayed and current scaling, current's amax pass over the values the cast makes): GELU and LayerNorm
        inside the casts give the bits of the separate kernels over 3 steps (R1), at C 64 and C 384;
  the step's host side: a training forward and an end of step queue without waiting for the GPU (a gate kernel the
        host opens after queuing them), in every precision and recipe; AdamW's 16-byte path the bits of its element
        path (R1), the gradient norm at four alignments within R2 of the sum in double; the GEMMs' 16-byte-strided
        scale_invs equal the metadata's (with the FP8 state, R1).
The tests above the cuDNN ones run the plain attention (-attn plain), so that they check the rest of the trainer
whatever cuDNN does.
The per-kernel checks (cast bytes, update rule bit-exact on random histories, GEMMs, current scaling's amax pass) are
dev/cuda/fp8_quantize, fp8_update, fp8_gemm, fp8_current_scaling, fp8_block_quantize and fp8_block_gemm.

Build: make test_gpt_fp8    Run: ./test_gpt_fp8    (prints one line and exits 1 without a GPU)
*/
#define TESTING
// Both trainers in one program. Their step functions have the same names and arguments (the GPU's are the CPU's, as
// the issue of one shape for both asked), so each trainer is compiled into a namespace of its own, cpu:: and gpu::;
// every header they share is included first, here, so that their include guards keep the shared types and the GPU's
// kernel launchers global. A call like gpt2_forward(model, ...) then finds the CPU's or the GPU's by the type of
// `model` (argument-dependent lookup), and train_step below is one body that runs either trainer's step.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <errno.h>
#include <float.h>
#include <glob.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "fp8/block_quantize.cuh"
#include "fp8/current.h"
#include "fp8/diag.h"
#include "fp8/meta.h"
#include "fp8/quantize.cuh"
#include "fp8/quantize_cpu.h"
#include "fp8/update.cuh"
#include "llmc/adamw.cuh"
#include "llmc/args.h"
#include "llmc/attention.cuh"
#include "llmc/attention_fp8_reference.h"
#include "llmc/bias.cuh"
#include "llmc/checkpoint.h"
#include "llmc/cudnn_attention.h"
#include "llmc/dataloader.h"
#include "llmc/encoder.cuh"
#include "llmc/fused_classifier.cuh"
#include "llmc/gelu.cuh"
#include "llmc/gelu_fp8.cuh"
#include "llmc/gemm.cuh"
#include "llmc/gemm_cpu.h"
#include "llmc/global_norm.cuh"
#include "llmc/gpt2.h"
#include "llmc/layernorm.cuh"
#include "llmc/linear.h"
#include "llmc/memory_plan.h"
#include "llmc/multi_gpu.cuh"
#include "llmc/rand.h"
#include "llmc/run.h"
#include "llmc/sampling.h"
#include "llmc/schedule.h"
#include "llmc/testing.h"
#include "llmc/tokenizer.h"
#include "llmc/tolerance.h"
#include "llmc/utils.h"
#include "llmc/zero.h"

// both trainers' main() are compiled out, so some of their helpers look unused here
#pragma GCC diagnostic ignored "-Wunused-function"
namespace cpu {
#include "train_gpt_fp8.c"
}
namespace gpu {
#include "train_gpt_fp8.cu"
}

// the GPU model's collectives in one process (no NCCL): every GPU model of these tests but the two ranks' runs in it
static MultiGpu one_process;

enum { TB = 2, TT = 32, TV = 200 };  // B*T = 64: the FP8 cast tiles and GEMM shapes need multiples of 64 and 16

static GPT2Config config_of(int L, int C, int NH, int V, int maxT) {
    GPT2Config c;
    c.num_layers = L;
    c.channels = C;
    c.num_heads = NH;
    c.vocab_size = V;
    c.padded_vocab_size = padded_vocab(V);
    c.max_seq_len = maxT;
    return c;
}

// TrainArgs from one line of flags (at most 16 words, split at spaces), after the program name
static TrainArgs test_args_line(const char* flags) {
    char line[256], prog[] = "test";
    snprintf(line, sizeof(line), "%s", flags);
    char* argv[17] = {prog};
    int argc = 1;
    for (char* word = strtok(line, " "); word && argc < 17; word = strtok(NULL, " ")) { argv[argc++] = word; }
    TrainArgs a;
    parse_args(&a, argc, argv);
    // the tests compare models with each other bit for bit, so each takes the heuristic's first algorithm unless the
    // flags ask for timing (test_gemm_autotune): a timed choice can differ from model to model
    if (!a.gemm_autotune_set) { a.gemm_autotune = 0; }
    return a;
}

// `attention`: "plain" or "cudnn"; `recompute`: -r's value
static TrainArgs test_args_with(const char* precision, const char* attention, const char* recompute) {
    char flags[128];
    snprintf(flags, sizeof(flags), "-precision %s -fp8_amax_history_len 16 -attn %s -r %s", precision, attention,
             recompute);
    return test_args_line(flags);
}

static TrainArgs test_args(const char* precision) { return test_args_with(precision, "plain", "0"); }

// fp8 with -fp8_recipe current (which has no history length to set), plain attention
static TrainArgs test_args_current(void) { return test_args_line("-precision fp8 -fp8_recipe current -attn plain"); }

// A test model and its batch: B, T; L layers, C channels, NH heads, V vocabulary (maxT = T).
typedef struct {
    int B, T, L, C, NH, V;
} TestShape;

static const TestShape tiny_shape = {TB, TT, 2, 64, 4, TV};
static const TestShape medium_shape = {1, 384, 2, 768, 12, 1024};

static GPT2Config shape_config(const TestShape* shape) {
    return config_of(shape->L, shape->C, shape->NH, shape->V, shape->T);
}

// Random tokens in [0, V) for a (B, T) batch, inputs and targets.
static void random_batch(int* inputs, int* targets, int n, int V, Rng* rng) {
    for (int i = 0; i < n; i++) {
        inputs[i] = (int)(rng_next_u64(rng) % (uint64_t)V);
        targets[i] = (int)(rng_next_u64(rng) % (uint64_t)V);
    }
}

// AdamW as both trainers' steps run it in these tests (gpt2_update: beta1 0.9, beta2 0.95, no weight decay)
#define TEST_LR 1e-3f
#define TEST_BETA1 0.9f
#define TEST_BETA2 0.95f

// A CPU model of `config` for batch B x T in the precision and recipe of `args` (its parameters left to the caller).
static void cpu_model_allocate(cpu::GPT2* cpu, const GPT2Config* config, const TrainArgs* args, int B, int T) {
    cpu::ModelOptions opt;
    memset(&opt, 0, sizeof(opt));
    opt.config = *config;
    opt.precision = args->precision;
    opt.recipe = args->recipe;
    opt.fp8_attention = args->fp8_attention;
    gpt2_allocate(cpu, &opt, B, T);
}

// A CPU model and a GPU model of `shape` with identical weights (GPT-2 init from `seed`).
static void make_shaped_pair(cpu::GPT2* cpu, gpu::GPT2* gpu, TrainArgs args, uint64_t seed, const TestShape* shape) {
    GPT2Config config = shape_config(shape);
    cpu_model_allocate(cpu, &config, &args, shape->B, shape->T);
    Rng rng;
    rng_seed(&rng, seed);
    gpt2_init_parameters(&cpu->master, cpu->param_sizes, &config, &rng);
    gpu::gpt2_gpu_allocate(gpu, &config, &args, shape->B, shape->T, &one_process);
    gpu::gpt2_upload_params(gpu, cpu->master_memory);
    gpt2_cast_weights_fp8(cpu, 1);
    gpt2_cast_weights_fp8(gpu, 1);
    cudaCheck(cudaDeviceSynchronize());
}

static GPT2Config test_config(void) { return shape_config(&tiny_shape); }

// make_shaped_pair at the tiny shape, from the flags of `args` or of one precision
static void make_pair_with(cpu::GPT2* cpu, gpu::GPT2* gpu, TrainArgs args, uint64_t seed) {
    make_shaped_pair(cpu, gpu, args, seed, &tiny_shape);
}

static void make_pair(cpu::GPT2* cpu, gpu::GPT2* gpu, const char* precision, uint64_t seed) {
    make_pair_with(cpu, gpu, test_args(precision), seed);
}

// One training step as both trainers' loops run it (one process), the same calls on either model: each call finds the
// CPU's function or the GPU's of the same name by the model's type. Clip 1.0, no weight decay, the loss scale 1 of one
// micro-batch. Returns the step's loss; its gradient norm in *norm.
template <typename Model>
static float train_step(Model* model, const int* inputs, const int* targets, int B, int T, int step, float* norm) {
    gpt2_zero_grad(model);
    gpt2_forward(model, inputs, targets, B, T);
    gpt2_backward(model, 1.0f);
    gpt2_grad_norm(model);
    gpt2_fp8_end_of_step(model, step);
    gpt2_update(model, TEST_LR, TEST_BETA1, TEST_BETA2, 1e-8f, 0.0f, 1.0f, step + 1);
    gpt2_cast_weights_fp8(model, 1);
    *norm = gpt2_grad_norm_value(model);
    return model->mean_loss;
}

// A forward and backward on both sides (gradients zeroed first, loss scale 1); returns the GPU's loss.
static float forward_backward(cpu::GPT2* cpu, gpu::GPT2* gpu, const int* inputs, const int* targets, int B, int T) {
    gpt2_zero_grad(gpu);
    gpt2_forward(gpu, inputs, targets, B, T);
    gpt2_backward(gpu, 1.0f);
    cudaCheck(cudaDeviceSynchronize());
    gpt2_zero_grad(cpu);
    gpt2_forward(cpu, inputs, targets, B, T);
    gpt2_backward(cpu, 1.0f);
    return gpu->mean_loss;
}

// An evaluation forward (no amax recorded, the logits kept, the loss computed in the forward); returns the loss.
template <typename Model>
static float eval_forward(Model* model, const int* inputs, const int* targets, int B, int T) {
    int saved = model->training;
    model->training = 0;
    gpt2_forward(model, inputs, targets, B, T);
    model->training = saved;
    return model->mean_loss;
}

static void tiny_batch(int* inputs, int* targets, Rng* rng) { random_batch(inputs, targets, TB * TT, TV, rng); }

static float* download_floats(const float* device, size_t n) {
    float* host = (float*)malloc(n * sizeof(float));
    cudaCheck(cudaMemcpy(host, device, n * sizeof(float), cudaMemcpyDeviceToHost));
    return host;
}

// A device copy of the bf16 weights (P) as they are now: after the next update, the weights its forward read. cudaFree.
static floatX* device_params_copy(const gpu::GPT2* gpu) {
    size_t bytes = gpu->num_parameters * sizeof(floatX);
    floatX* copy;
    cudaCheck(cudaMalloc(&copy, bytes));
    cudaCheck(cudaMemcpy(copy, gpu->params_memory, bytes, cudaMemcpyDeviceToDevice));
    return copy;
}

static float* download_bf16(const floatX* device, size_t n) {
    uint16_t* raw = (uint16_t*)malloc(n * 2);
    cudaCheck(cudaMemcpy(raw, device, n * 2, cudaMemcpyDeviceToHost));
    float* host = (float*)malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) { host[i] = bf16_to_float(raw[i]); }
    free(raw);
    return host;
}

// What a GPU model carries from step to step, as the buffers of its memory plan that hold it (0 bytes where the run
// has none): the weights and their FP8 copies, gradients, AdamW's moments, the FP8 metadata and the GEMMs' copy of its
// scale_invs, the diagnostics' amaxes, counts and block scale ranges, and the last casts' amaxes.
static const struct {
    GpuBuffer buffer;
    const char* what;
} training_state[] = {
    {GPU_PARAMS, "bf16 weights"},
    {GPU_GRADS, "gradients"},
    {GPU_MASTER, "master weights"},
    {GPU_ADAM_M, "AdamW's m"},
    {GPU_ADAM_V, "AdamW's v"},
    {GPU_FP8_META, "FP8 state (histories, scales, scale_invs)"},
    {GPU_FP8_GEMM_SCALE_INV, "the GEMMs' scale_invs"},
    {GPU_FP8_STATS, "diagnostics counts"},
    {GPU_FP8_DIAG_AMAX, "diagnostics amaxes"},
    {GPU_FP8_BLOCK_SCALE_RANGE, "block scale ranges"},
    {GPU_FP8_WINDOW_AMAX, "the last casts' amaxes"},
    {GPU_WEIGHT_FP8, "the weights' FP8 codes"},
    {GPU_WEIGHT_T_FP8, "the weights' transposed FP8 codes"},
    {GPU_WEIGHT_SCALE_INV, "the weights' block scale_invs"},
    {GPU_WEIGHT_T_SCALE_INV, "the transposed weights' block scale_invs"},
    {GPU_WEIGHT_DEQUANTIZED, "the weights' dequantized 1x32 casts"},
    {GPU_WEIGHT_DEQUANTIZED_COLUMNWISE, "the weights' dequantized 32x1 casts"},
};

// Two GPU models of the same plan hold the same training state bit for bit (R1), one CHECK per buffer; `what` and
// `when` say which models and after what.
static void check_same_training_state(gpu::GPT2* a, gpu::GPT2* b, const char* what, const char* when) {
    cudaCheck(cudaDeviceSynchronize());
    for (size_t i = 0; i < sizeof(training_state) / sizeof(training_state[0]); i++) {
        GpuBuffer k = training_state[i].buffer;
        size_t bytes = a->memory.bytes[k];
        if (bytes == 0 && b->memory.bytes[k] == 0) { continue; }
        if (bytes != b->memory.bytes[k] || !a->device_buffers[k] || !b->device_buffers[k]) {
            CHECK(0, "%s, %s: %s: %zu and %zu bytes planned", what, when, training_state[i].what, bytes,
                  b->memory.bytes[k]);
            continue;
        }
        uint8_t* x = (uint8_t*)malloc(bytes);
        uint8_t* y = (uint8_t*)malloc(bytes);
        cudaCheck(cudaMemcpy(x, a->device_buffers[k], bytes, cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(y, b->device_buffers[k], bytes, cudaMemcpyDeviceToHost));
        CHECK(memcmp(x, y, bytes) == 0, "%s, %s: %s bit-identical (R1)", what, when, training_state[i].what);
        free(x);
        free(y);
    }
}

// ||a - b|| / ||b||
static double relative_l2(const float* a, const float* b, size_t n) {
    double diff = 0.0, ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        diff += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        ref += (double)b[i] * b[i];
    }
    return ref > 0.0 ? sqrt(diff / ref) : sqrt(diff);
}

static const char* parameter_names[NUM_PARAMETER_TENSORS] = {"wte",  "wpe",  "ln1w",    "ln1b",    "qkvw", "qkvb",
                                                             "attprojw", "attprojb", "ln2w", "ln2b", "fcw",  "fcb",
                                                             "fcprojw",  "fcprojb",  "lnfw", "lnfb"};

// ----------------------------------------------------------------------------
// tolerances (llmc/tolerance.h)

// A measured value against its derived tolerance: one line either way (so a GPU run's log shows every margin), and a
// failed check when it is over (or NaN). `why`: the rule and the count.
#define CHECK_WITHIN(measured, tolerance, why, ...)                                                          \
    do {                                                                                                     \
        double measured_ = (measured), tolerance_ = (tolerance);                                             \
        char what_[200];                                                                                     \
        snprintf(what_, sizeof(what_), __VA_ARGS__);                                                         \
        printf("  %-4s %s: %.3g, tolerance %.3g (%s)\n", measured_ <= tolerance_ ? "ok" : "OVER", what_,    \
               measured_, tolerance_, why);                                                                  \
        CHECK(measured_ <= tolerance_, "%s: %.3g, tolerance %.3g (%s)", what_, measured_, tolerance_, why);   \
    } while (0)

// The paths of the CPU model's configuration (the GPU model's is the same): the blocks' four linear layers in FP8 in
// fp8 mode (the LM head in bf16, the trainers' defaults).
static Gpt2Roundings roundings_of(const cpu::GPT2* cpu) {
    Gpt2Roundings g = {cpu->config.num_layers, cpu->config.channels, cpu->precision == PRECISION_FP8};
    return g;
}

static double max_abs(const float* x, size_t n) {
    double m = 0.0;
    for (size_t i = 0; i < n; i++) { m = fmax(m, fabs((double)x[i])); }
    return m;
}

// R6's w_max: the smallest of the largest weights of each block's four weight matrices and of the embeddings (wte,
// which is the LM head too, and wpe), from the CPU's bf16 weights
static double largest_weight(const cpu::GPT2* cpu) {
    const ParameterTensors* p = &cpu->params;
    size_t C = (size_t)cpu->config.channels;
    double smallest = fmin(max_abs(p->wte, (size_t)cpu->config.vocab_size * C),
                           max_abs(p->wpe, (size_t)cpu->config.max_seq_len * C));
    for (int l = 0; l < cpu->config.num_layers; l++) {
        double m = fmax(fmax(max_abs(p->qkvw + l * 3 * C * C, 3 * C * C), max_abs(p->attprojw + l * C * C, C * C)),
                        fmax(max_abs(p->fcw + l * 4 * C * C, 4 * C * C), max_abs(p->fcprojw + l * 4 * C * C, 4 * C * C)));
        smallest = fmin(smallest, m);
    }
    return smallest;
}

// R6's estimate for a value whose path crosses `blocks` blocks after `updates` updates, the embeddings counting as one
// more block: a forward slot of block l crosses l + 1 blocks; the logits, the loss and every gradient all L.
static double drift_estimate(double w_max, int updates, int blocks) {
    return updates == 0 ? 0.0 : adamw_drift_estimate(TEST_LR, TEST_BETA1, TEST_BETA2, updates, blocks + 1, w_max);
}

// The mean loss of a forward on both sides over `tokens` tokens (the CPU's logits from it in cpu->acts.logits), after
// `updates` updates, absolute: R4 through the log-softmax over the logits' roundings, the tokens independent (R5);
// R6's estimate for the moved weights, which moves every token alike (no 1/sqrt(tokens)); the fp32 softmax (R2 over
// the V terms of its sum; expf, logf within an ulp or two: 4 ulps of the loss).
static double loss_tolerance(const cpu::GPT2* cpu, int tokens, int updates, char* why, size_t why_len) {
    Gpt2Roundings g = roundings_of(cpu);
    int n = gpt2_roundings_logits(&g), V = cpu->config.vocab_size;
    double max_z = max_abs(cpu->acts.logits, (size_t)tokens * cpu->config.padded_vocab_size);
    double drift = drift_estimate(largest_weight(cpu), updates, cpu->config.num_layers);
    snprintf(why, why_len, "R4 through the log-softmax, %d roundings, max|z| %.2f, %d tokens; R6 estimate %.3g", n,
             max_z, tokens, drift);
    return tolerance_mean_loss(tolerance_chain_max(n, BF16_ULP) * max_z, tokens) + 2.0 * drift * max_z +
           tolerance_sum_orders(V) + 4.0 * FP32_ULP * cpu->mean_loss;
}

// The forward's logits on both sides: R5 over their roundings.
static void check_logits(const cpu::GPT2* cpu, const floatX* gpu_logits, int tokens, const char* what) {
    Gpt2Roundings g = roundings_of(cpu);
    int n = gpt2_roundings_logits(&g);
    size_t n_logits = (size_t)tokens * cpu->config.padded_vocab_size;
    float* logits = download_bf16(gpu_logits, n_logits);
    char why[64];
    snprintf(why, sizeof(why), "R5, %d roundings", n);
    CHECK_WITHIN(relative_l2(logits, cpu->acts.logits, n_logits), tolerance_chain_l2(n, BF16_ULP), why,
                 "%slogits: relative L2 error", what);
    free(logits);
}

// The mean loss of a forward on both sides (relative to the CPU's loss in the line; the check is the same).
static void check_loss(const cpu::GPT2* cpu, float gpu_loss, int tokens, int updates, const char* what) {
    char why[160];
    double tolerance = loss_tolerance(cpu, tokens, updates, why, sizeof(why));
    CHECK_WITHIN(fabs((double)gpu_loss - cpu->mean_loss) / cpu->mean_loss, tolerance / cpu->mean_loss, why,
                 "%sloss gpu %.6f cpu %.6f: relative difference", what, gpu_loss, cpu->mean_loss);
}

// The gradient norm of a step after `updates` updates, relative: R5 over the longest path of any parameter
// gradient (| |a| - |b| | <= |a - b|), R6's estimate, and the GPU's fp32 sum of squares (R2: its longest chain of
// additions is a thread's, at most n / (NORM_BLOCKS * 512) + 6 terms (llmc/global_norm.cuh), and two block sums of 10
// levels; half of it for the root, which each side rounds once more).
static void check_grad_norm(const cpu::GPT2* cpu, float gpu_norm, float cpu_norm, int updates, const char* what) {
    Gpt2Roundings g = roundings_of(cpu);
    int n = 0;
    for (int t = 0; t < NUM_PARAMETER_TENSORS; t++) { n = gpt2_max2(n, gpt2_roundings_parameter_gradient(&g, t)); }
    double drift = drift_estimate(largest_weight(cpu), updates, cpu->config.num_layers);
    char why[96];
    snprintf(why, sizeof(why), "R5, %d roundings; R6 estimate %.3g", n, drift);
    double chain = (double)cpu->num_parameters / (NORM_BLOCKS * 512.0) + 6.0 + 20.0;
    CHECK_WITHIN(fabs((double)gpu_norm - cpu_norm) / cpu_norm,
                 tolerance_chain_l2(n, BF16_ULP) + drift + 0.5 * tolerance_sum_rn(chain) + 2.0 * FP32_ROUNDOFF, why,
                 "%sgradient norm gpu %.5f cpu %.5f: relative difference", what, gpu_norm, cpu_norm);
}

// Every parameter tensor's gradient on the GPU against the CPU's: relative L2 error within R5 over its path.
static void check_gradients(const gpu::GPT2* gpu, const cpu::GPT2* cpu) {
    Gpt2Roundings g = roundings_of(cpu);
    float* grads = download_floats(gpu->grads_memory, gpu->num_parameters);
    size_t offset = 0;
    for (int t = 0; t < NUM_PARAMETER_TENSORS; t++) {
        int n = gpt2_roundings_parameter_gradient(&g, t);
        char why[32];
        snprintf(why, sizeof(why), "R5, %d roundings", n);
        CHECK_WITHIN(relative_l2(grads + offset, cpu->grads_memory + offset, cpu->param_sizes[t]),
                     tolerance_chain_l2(n, BF16_ULP), why, "gradient of %s: relative L2 error", parameter_names[t]);
        offset += cpu->param_sizes[t];
    }
    free(grads);
}

// What an FP8 slot records: forward (input, weight, output) or backward (grad_output, grad_input), and its module's
// block and linear layer (block -1: the LM head).
typedef struct {
    int forward, kind, block, linear;
} SlotMeaning;

static SlotMeaning slot_meaning(const Fp8Meta* meta, int slot) {
    SlotMeaning m;
    m.forward = fp8_slot_is_forward(slot, meta->num_modules);
    int module = m.forward ? slot / FP8_FWD_SLOTS : (slot - FP8_FWD_SLOTS * meta->num_modules) / FP8_BWD_SLOTS;
    m.kind = m.forward ? slot % FP8_FWD_SLOTS : (slot - FP8_FWD_SLOTS * meta->num_modules) % FP8_BWD_SLOTS;
    int head = module == meta->num_modules - 1;
    m.block = head ? -1 : module / LINEARS_PER_BLOCK;
    m.linear = head ? 0 : module % LINEARS_PER_BLOCK;
    return m;
}

// R4's count of the tensor an activation slot (a block linear's input) or a gradient slot (its grad_output) records
static int slot_roundings(const Gpt2Roundings* paths, SlotMeaning m) {
    return m.forward ? gpt2_roundings_fp8_input(paths, m.block, m.linear)
                     : gpt2_roundings_fp8_grad_output(paths, m.block, m.linear);
}

static float device_bf16_amax(const floatX* device, size_t n) {
    float* x = download_bf16(device, n);
    float amax = (float)max_abs(x, n);
    free(x);
    return amax;
}

// Layer l's bf16 input of its linear of kind `kind` as the last forward made it: its own slice where the backward
// reads it; otherwise (its wgrad reads the FP8 x^T the forward kept, and the slice is shared) made again into
// `scratch` (B, T, 4C) by the forward's kernels from what the layer keeps: LayerNorm from its input and saved
// statistics, GELU from fch (the same bytes: what -r 1 and -r 2 rely on, checked by the recompute tests).
// forward_params (P) bf16 are the weights that forward read, laid out as params_memory: after an update they are not
// the model's (AdamW moves LayerNorm's weight and bias by about lr = 1e-3, a quarter of a bf16 ulp of an output near
// 4, enough to round the largest output to its neighbour), so the caller keeps a copy from before the step.
static const floatX* forward_input_of(gpu::GPT2* gpu, int l, int kind, floatX* scratch, const floatX* forward_params) {
    int C = gpu->config.channels;
    size_t BTC = (size_t)gpu->B * gpu->T * C;
    LinearPrecision lp = gpu::gpt2_linear_precision(gpu);
    if (kind == LINEAR_ATTPROJ) { return gpu->acts.atty + l * BTC; }
    floatX* buffer = kind == LINEAR_QKV ? gpu->acts.ln1 : kind == LINEAR_FC ? gpu->acts.ln2 : gpu->acts.fch_gelu;
    int width = kind == LINEAR_FCPROJ ? 4 * C : C;
    int module = l * LINEARS_PER_BLOCK + kind;
    if (linear_backward_reads_input(&lp, module, gpu->recompute) &&
        !linear_input_recomputed(gpu->config.num_layers, module, gpu->recompute)) {
        return gpu::layer_input(gpu, buffer, kind, l, width);
    }
    if (kind == LINEAR_FCPROJ) {
        gelu_forward(scratch, gpu->acts.fch + l * BTC * 4, BTC * 4, gpu->stream);
    } else {
        gpu::LayerNormX ln = gpu::layernorm_x(gpu, l, kind == LINEAR_QKV ? 1 : 2);
        const floatX* weight = forward_params + (ln.weight - gpu->params_memory);
        const floatX* bias = forward_params + (ln.bias - gpu->params_memory);
        layernorm_recompute(scratch, ln.inp, weight, bias, ln.mean, ln.rstd, gpu->B, gpu->T, C, gpu->stream);
    }
    cudaCheck(cudaStreamSynchronize(gpu->stream));  // the caller's copies run on the default stream
    return scratch;
}

// The x^T (IC, rows) a training forward kept for the module's FP8 wgrad is the transpose of the x (rows, IC) its cast
// wrote in the same pass, byte for byte (R1: the same codes, moved).
static void check_kept_input_t(gpu::GPT2* gpu, int module, const uint8_t* device_x_fp8, int rows, const char* what) {
    int IC = linear_layout(&gpu->config, module).IC;
    size_t n = (size_t)rows * IC;
    uint8_t* x = (uint8_t*)malloc(n);
    uint8_t* x_t = (uint8_t*)malloc(n);
    cudaCheck(cudaMemcpy(x, device_x_fp8, n, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(x_t, gpu::kept_input_t(gpu, module), n, cudaMemcpyDeviceToHost));
    size_t differ = 0;
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < IC; c++) { differ += x_t[(size_t)c * rows + r] != x[(size_t)r * IC + c]; }
    }
    CHECK(differ == 0, "%s: %zu of the kept x^T's %zu bytes are not x's, transposed (R1)", what, differ, n);
    free(x);
    free(x_t);
}

// R1: what the GPU recorded is max|x| of the GPU's own bf16 tensors, bit for bit, which pins each slot's index: every
// block linear's input slot against the last forward's inputs (inputs_recorded: each slot's amax of the last step's
// casts; forward_input_of), block 0's qkv and fc grad_output slots against the last backward's dqkv and dbt4c (the
// only gradients still in their buffers; block0_fc_grad_output), and every weight slot
// (weights_recorded: row 0 after the weights' last cast) against the bf16 weights. Plain attention, -r 0.
// forward_params: the weights the last forward read (forward_input_of).
// Block 0's fc grad_output (B*T, 4C) of the last backward: dbt4c, or where GELU's backward ran inside fc's
// grad_output cast (delayed and current scaling's fused cast, blockwise's block cast) dbt4c holds GELU's output
// gradient, and gelu_backward makes fc's grad_output from it again in scratch (B*T*4C): the same bytes.
static const floatX* block0_fc_grad_output(gpu::GPT2* gpu, floatX* scratch) {
    if (!gpu::gelu_in_fc_grad_output_cast(gpu, 0) && !gpu::gelu_in_block_grad_output_cast(gpu, 0)) {
        return gpu->dbt4c;
    }
    size_t BTC = (size_t)gpu->B * gpu->T * gpu->config.channels;
    gelu_backward(scratch, gpu->acts.fch, gpu->dbt4c, 4 * BTC, gpu->stream);  // block 0's fch: the first slice
    cudaCheck(cudaStreamSynchronize(gpu->stream));
    return scratch;
}

static void check_amaxes_of_own_tensors(gpu::GPT2* gpu, const float* inputs_recorded, const float* weights_recorded,
                                        const floatX* forward_params, const char* when) {
    const Fp8Meta* meta = &gpu->fp8;  // its layout (the values are on the device)
    int L = gpu->config.num_layers;
    size_t BTC = (size_t)gpu->B * gpu->T * gpu->config.channels;
    floatX* scratch;
    cudaCheck(cudaMalloc(&scratch, BTC * 4 * sizeof(floatX)));
    for (int l = 0; l < L; l++) {
        for (int k = 0; k < LINEARS_PER_BLOCK; k++) {
            const floatX* input = forward_input_of(gpu, l, k, scratch, forward_params);
            int module = l * LINEARS_PER_BLOCK + k, slot = fp8_meta_fwd_slot(meta, module, FP8_FWD_INPUT);
            float own = device_bf16_amax(input, k == LINEAR_FCPROJ ? 4 * BTC : BTC);
            CHECK(fp8_float_bits(inputs_recorded[slot]) == fp8_float_bits(own),
                  "%s: slot %d (block %d %s input) recorded %a, max|x| of the GPU's input %a (R1)", when, slot, l,
                  linear_names[k], inputs_recorded[slot], own);
            if (weights_recorded) {
                gpu::LinearModule lm = linear_module(gpu, module);
                int w_slot = fp8_meta_fwd_slot(meta, module, FP8_FWD_WEIGHT);
                float w_own = device_bf16_amax(lm.weight, (size_t)lm.OC * lm.IC);
                CHECK(fp8_float_bits(weights_recorded[w_slot]) == fp8_float_bits(w_own),
                      "%s: slot %d (block %d %s weight) row 0 %a, max|w| of the GPU's bf16 weights %a (R1)", when,
                      w_slot, l, linear_names[k], weights_recorded[w_slot], w_own);
            }
        }
    }
    const floatX* gradients[2] = {gpu->dqkv, block0_fc_grad_output(gpu, scratch)};
    const int linears[2] = {LINEAR_QKV, LINEAR_FC};
    const size_t widths[2] = {3, 4};
    for (int i = 0; i < 2; i++) {
        int slot = fp8_meta_bwd_slot(meta, linears[i], FP8_BWD_GRAD_OUTPUT);
        float own = device_bf16_amax(gradients[i], widths[i] * BTC);
        CHECK(fp8_float_bits(inputs_recorded[slot]) == fp8_float_bits(own),
              "%s: slot %d (block 0 %s grad_output) recorded %a, max|x| of the GPU's gradient %a (R1)", when, slot,
              linear_names[linears[i]], inputs_recorded[slot], own);
    }
    cudaCheck(cudaFree(scratch));
}

static void test_bf16_forward_backward(void) {
    cpu::GPT2 cpu;
    gpu::GPT2 gpu;
    make_pair(&cpu, &gpu, "bf16", 1);
    int inputs[TB * TT], targets[TB * TT];
    Rng rng;
    rng_seed(&rng, 2);
    tiny_batch(inputs, targets, &rng);
    // an evaluation forward: the logits survive
    float gpu_loss = eval_forward(&gpu, inputs, targets, TB, TT);
    gpt2_forward(&cpu, inputs, targets, TB, TT);
    check_logits(&cpu, gpu.acts.logits, TB * TT, "");
    check_loss(&cpu, gpu_loss, TB * TT, 0, "");
    // gradients
    forward_backward(&cpu, &gpu, inputs, targets, TB, TT);
    check_gradients(&gpu, &cpu);
    gpt2_free(&cpu);
}

static void test_fp8_cast_bytes_and_amaxes(void) {
    cpu::GPT2 cpu;
    gpu::GPT2 gpu;
    make_pair(&cpu, &gpu, "fp8", 3);
    int inputs[TB * TT], targets[TB * TT];
    Rng rng;
    rng_seed(&rng, 4);
    tiny_batch(inputs, targets, &rng);
    gpt2_zero_grad(&gpu);
    gpt2_forward(&gpu, inputs, targets, TB, TT);
    // the last FP8 cast of the forward is the last block's fcproj input (the GELU output): compare its bytes with the
    // CPU quantization of the GPU's own bf16 values and the same scale
    int C = cpu.config.channels, L = cpu.config.num_layers;
    size_t n = (size_t)TB * TT * 4 * C;
    uint16_t* gelu = (uint16_t*)malloc(n * 2);
    uint8_t* bytes = (uint8_t*)malloc(n);
    uint8_t* want = (uint8_t*)malloc(n);
    int module = (L - 1) * LINEARS_PER_BLOCK + LINEAR_FCPROJ;
    floatX* scratch;  // GELU runs inside the cast here (llmc/gelu_fp8.cuh): its output is made again, the same bytes
    cudaCheck(cudaMalloc(&scratch, n * 2));
    const floatX* last_gelu = forward_input_of(&gpu, L - 1, LINEAR_FCPROJ, scratch, gpu.params_memory);
    cudaCheck(cudaMemcpy(gelu, last_gelu, n * 2, cudaMemcpyDeviceToHost));
    cudaCheck(cudaFree(scratch));
    cudaCheck(cudaMemcpy(bytes, gpu.fp8_x.codes, n, cudaMemcpyDeviceToHost));
    float scale;
    cudaCheck(cudaMemcpy(&scale, gpu::slot_scale(&gpu, fp8_meta_fwd_slot(&gpu.fp8, module, FP8_FWD_INPUT)), 4,
                         cudaMemcpyDeviceToHost));
    float amax = 0.0f;
    fp8_quantize_bf16(want, gelu, n, FP8_E4M3, scale, &amax, NULL);
    // R1: the same bf16 values, the same scale, the same rounding
    CHECK(memcmp(bytes, want, n) == 0, "fcproj input: GPU FP8 bytes differ from the CPU quantization (R1)");
    check_kept_input_t(&gpu, module, gpu.fp8_x.codes, TB * TT, "fcproj input");
    gpt2_backward(&gpu, 1.0f);
    cudaCheck(cudaDeviceSynchronize());
    gpt2_zero_grad(&cpu);
    gpt2_forward(&cpu, inputs, targets, TB, TT);
    gpt2_backward(&cpu, 1.0f);
    // every slot's amax of this step: the weights' are of the same bf16 weights on both sides (R1); an activation's
    // or a gradient's differs by the roundings on its path (R4); and each is max|x| of the GPU's own tensor (R1)
    float* row0 = download_floats(gpu.fp8.amax_history, (size_t)gpu.fp8.num_slots);
    check_amaxes_of_own_tensors(&gpu, row0, row0, gpu.params_memory, "one step");  // no update since its forward
    Gpt2Roundings paths = roundings_of(&cpu);
    for (int s = 0; s < gpu.fp8.num_slots; s++) {
        float want_amax = cpu.fp8.amax_history[s];
        CHECK((want_amax == 0.0f) == (row0[s] == 0.0f), "slot %d used on one side only", s);
        if (want_amax == 0.0f) { continue; }
        SlotMeaning m = slot_meaning(&gpu.fp8, s);
        if (m.forward && m.kind == FP8_FWD_WEIGHT) {
            CHECK(fp8_float_bits(row0[s]) == fp8_float_bits(want_amax), "slot %d (block %d %s weight) amax gpu %a cpu %a "
                  "(R1: the same bf16 weights)", s, m.block, linear_names[m.linear], row0[s], want_amax);
            continue;
        }
        int n = slot_roundings(&paths, m);
        char why[32];
        snprintf(why, sizeof(why), "R4, %d roundings", n);
        CHECK_WITHIN(fabs((double)row0[s] - want_amax) / want_amax, tolerance_chain_max(n, BF16_ULP), why,
                     "slot %d (block %d %s %s) amax gpu %g cpu %g: relative difference", s, m.block,
                     linear_names[m.linear], m.forward ? "input" : "grad_output", row0[s], want_amax);
    }
    free(row0);
    free(gelu);
    free(bytes);
    free(want);
    gpt2_free(&cpu);
}

// The tolerance of an FP8 state entry after `steps` training steps on both sides (each step ends with the update of
// every slot, an AdamW update and the weights' cast): what it depends on besides the entry.
typedef struct {
    Gpt2Roundings paths;
    int steps, current, margin;  // the steps done; current scaling; the recipe's margin
    double w_max;                // R6's: largest_weight(cpu)
} StateTolerance;

static StateTolerance state_tolerance_of(const cpu::GPT2* cpu, int steps) {
    StateTolerance st = {roundings_of(cpu), steps, cpu->recipe.scaling == FP8_SCALING_CURRENT, cpu->recipe.margin,
                         largest_weight(cpu)};
    return st;
}

// Relative to the CPU's value `want`, the tolerance of entry (row, slot): a history row holds the amax of one step,
// whose tensors came from the weights after that many updates (delayed: row r of H holds step steps - H + r; row 0,
// after the end of step: the weights' amax of the cast after the last update, 0 for every other slot); a scale comes
// from the amaxes of the steps before the last update (delayed: the window; current: the slot's last cast, a weight's
// after the last update). A weight slot's entry is R1 before any update (the same weights, the same cast and update
// rule), then R6's bound on the weights and R3; an activation's or gradient's is R4 for its slot plus R6's estimate
// for the updates behind it, through the blocks on its path (a forward slot's blocks up to its own, a gradient's all
// of them) and the embeddings. A scale is fp8_max / amax (tolerance_reciprocal), and the division and scale_inv's
// reciprocal round once each (2 fp32 roundoffs).
static double fp8_entry_tolerance(const StateTolerance* st, const Fp8Meta* meta, int slot, int row, float want,
                                  char* why, size_t why_len) {
    int H = meta->amax_history_len;
    SlotMeaning m = slot_meaning(meta, slot);
    int weight = m.forward && m.kind == FP8_FWD_WEIGHT;
    int updates = row == 0 ? (weight ? st->steps : -1)
                : row < H  ? st->steps - H + row
                           : (weight && st->current ? st->steps : st->steps - 1);
    if (m.block < 0 || (m.forward && m.kind == FP8_FWD_OUTPUT) || (!m.forward && m.kind == FP8_BWD_GRAD_INPUT) ||
        updates < 0) {
        snprintf(why, why_len, "not recorded: 0 on both sides");
        return 0.0;
    }
    double e;
    if (weight) {
        if (updates == 0) {
            snprintf(why, why_len, "R1: the same weights");
            return 0.0;
        }
        double fp8_max_value = fp8_max(fp8_meta_slot_format(meta, slot)), margin = ldexp(1.0, st->margin);
        double amax = row < H ? fabs(want) : row == H ? fp8_max_value / (want * margin) : want * fp8_max_value / margin;
        e = adamw_drift(TEST_LR, TEST_BETA1, TEST_BETA2, updates) / amax + BF16_ULP;
        snprintf(why, why_len, "R6 bound over %d updates of weights of amax %.3g; R3", updates, amax);
    } else {
        int n = slot_roundings(&st->paths, m);
        double drift = drift_estimate(st->w_max, updates, m.forward ? m.block + 1 : st->paths.layers);
        e = tolerance_chain_max(n, BF16_ULP) + drift;
        snprintf(why, why_len, "R4, %d roundings; R6 estimate over %d updates, %.3g", n, updates, drift);
    }
    if (row == H) { return tolerance_reciprocal(e) + 2.0 * FP32_ROUNDOFF; }
    return row == H + 1 ? e + 2.0 * FP32_ROUNDOFF : e;
}

// The GPU's FP8 state (histories, scales, scale_invs) against the CPU's after `steps` steps: every entry 0 on both
// sides or on neither, and within fp8_entry_tolerance. Prints the entry nearest its tolerance and the first entries
// off; returns the number off.
static int compare_fp8_state(gpu::GPT2* gpu, cpu::GPT2* cpu, int steps, const char* when) {
    const Fp8Meta* meta = &gpu->fp8;
    StateTolerance st = state_tolerance_of(cpu, steps);
    int S = meta->num_slots, H = meta->amax_history_len, bad = 0;
    float* state = download_floats(meta->memory, meta->num_floats);
    double worst = -1.0;
    char worst_line[400] = "";
    for (size_t i = 0; i < meta->num_floats; i++) {
        int slot = (int)(i % (size_t)S), row = (int)(i / (size_t)S);  // rows past the history: scale, scale_inv
        float want = cpu->fp8.memory[i], got = state[i];
        char why[128], line[400];
        double tolerance = fp8_entry_tolerance(&st, meta, slot, row, want, why, sizeof(why));
        double difference = want == 0.0f ? fabs((double)got) : fabs((double)got - want) / fabs((double)want);
        int ok = (want == 0.0f) == (got == 0.0f) && difference <= tolerance;
        snprintf(line, sizeof(line), "slot %d %s %d: gpu %g cpu %g, relative difference %.3g, tolerance %.3g (%s)", slot,
                 row < H ? "history row" : row == H ? "scale" : "scale_inv", row < H ? row : 0, got, want, difference,
                 tolerance, why);
        if (want != 0.0f && tolerance > 0.0 && difference / tolerance > worst) {
            worst = difference / tolerance;
            snprintf(worst_line, sizeof(worst_line), "%s", line);
        }
        if (!ok) {
            if (bad < 5) { printf("  OVER %s: %s\n", when, line); }
            bad++;
        }
    }
    if (worst >= 0.0) { printf("  %s: the entry nearest its tolerance (%.2f of it): %s\n", when, worst, worst_line); }
    if (gpu->fp8_gemm_scale_inv) {  // the GEMMs' strided copy holds every slot's scale_inv, bit for bit
        float* strided = download_floats(gpu->fp8_gemm_scale_inv, (size_t)S * FP8_GEMM_SCALE_INV_STRIDE);
        const float* scale_inv = state + (meta->scale_inv - meta->memory);
        for (int slot = 0; slot < S; slot++) {
            float got = strided[(size_t)slot * FP8_GEMM_SCALE_INV_STRIDE];
            if (fp8_float_bits(got) != fp8_float_bits(scale_inv[slot])) {
                if (bad < 5) {
                    printf("  OFF %s: slot %d: the GEMMs' scale_inv %g, the metadata's %g\n", when, slot, got,
                           scale_inv[slot]);
                }
                bad++;
            }
        }
        free(strided);
    }
    free(state);
    return bad;
}

// Each slot's amax of the last step's casts, as the GPU keeps it after the end of the step: delayed, the history row
// the update rolled it into (H - 1); current and the block recipes, the window amaxes.
static float* recorded_amaxes_of_last_step(gpu::GPT2* gpu) {
    int S = gpu->fp8.num_slots, H = gpu->fp8.amax_history_len;
    if (!fp8_recipe_has_history(&gpu->recipe)) { return download_floats(gpu->fp8_current_amax, (size_t)S); }
    return download_floats(gpu->fp8.amax_history + (size_t)(H - 1) * S, (size_t)S);
}

// The diagnostics' amaxes the GPU kept on the device at the last end of step (delayed scaling), copied to the host as
// for a file: each slot's step amax is the value the update then rolled into history row H - 1 (R1, the same float
// moved), and both it and the window amax are the CPU's within the tolerance of that row (the window is a max over
// rows of which H - 1 has the most updates behind it, so the largest tolerance), 0 on both sides or on neither.
static void check_diag_amaxes(gpu::GPT2* gpu, cpu::GPT2* cpu, int steps) {
    int S = gpu->fp8.num_slots, H = gpu->fp8.amax_history_len, moved_bad = 0, bad = 0;
    gpu::gpt2_fp8_diag_amaxes_to_host(gpu);
    float* newest_row = download_floats(gpu->fp8.amax_history + (size_t)(H - 1) * S, (size_t)S);
    StateTolerance st = state_tolerance_of(cpu, steps);
    for (int slot = 0; slot < S; slot++) {
        float last = gpu->fp8_last_amax[slot];
        moved_bad += last != 0.0f && fp8_float_bits(last) != fp8_float_bits(newest_row[slot]);
        for (int k = 0; k < 2; k++) {
            float got = k ? gpu->fp8_window_amax[slot] : last, want = k ? cpu->fp8_window_amax[slot] : cpu->fp8_last_amax[slot];
            char why[128];
            double tolerance = fp8_entry_tolerance(&st, &gpu->fp8, slot, H - 1, want, why, sizeof(why));
            double difference = want == 0.0f ? fabs((double)got) : fabs((double)got - want) / fabs((double)want);
            if ((want == 0.0f) != (got == 0.0f) || difference > tolerance) {
                if (bad < 5) {
                    printf("  OVER slot %d %s amax: gpu %g cpu %g, relative difference %.3g, tolerance %.3g (%s)\n", slot,
                           k ? "window" : "last", got, want, difference, tolerance, why);
                }
                bad++;
            }
        }
    }
    CHECK(moved_bad == 0, "diagnostics: %d slots' step amax is not the value the update rolled into row H - 1", moved_bad);
    CHECK(bad == 0, "diagnostics: %d step or window amaxes off the CPU's (each within its row's tolerance: see above)",
          bad);
    free(newest_row);
}

// One training step of both models on the same batch (train_step); the losses and gradient norms of both.
static void shaped_step(cpu::GPT2* cpu, gpu::GPT2* gpu, int step, const TestShape* shape, Rng* rng, float* gpu_loss,
                        float* gpu_norm, float* cpu_norm) {
    int n = shape->B * shape->T;
    int* inputs = (int*)malloc((size_t)n * sizeof(int));
    int* targets = (int*)malloc((size_t)n * sizeof(int));
    random_batch(inputs, targets, n, shape->V, rng);
    *gpu_loss = train_step(gpu, inputs, targets, shape->B, shape->T, step, gpu_norm);
    train_step(cpu, inputs, targets, shape->B, shape->T, step, cpu_norm);
    cudaCheck(cudaDeviceSynchronize());
    free(inputs);
    free(targets);
}

// 5 training steps of `shape` on both sides from the same weights (seed) and batches (seed + 1), with the flags of
// `args`: the loss and the gradient norm of every step (R4, R5, R6 for the step's updates), the FP8 state after 1 and
// 5 steps when the recipe keeps one worth comparing (`compare_state`: compare_fp8_state, and with delayed scaling the
// diagnostics' amaxes, check_diag_amaxes), and the last step's amaxes against the GPU's own tensors (R1).
static void shaped_five_steps(TrainArgs args, const TestShape* shape, uint64_t seed, const char* label,
                              int compare_state) {
    cpu::GPT2 cpu;
    gpu::GPT2 gpu;
    make_shaped_pair(&cpu, &gpu, args, seed, shape);
    Rng rng;
    rng_seed(&rng, seed + 1);
    floatX* forward_params = NULL;  // the weights of the last step's forward, for the R1 amax checks after its update
    for (int step = 0; step < 5; step++) {
        float gpu_loss, gpu_norm, cpu_norm;
        if (step == 4) { forward_params = device_params_copy(&gpu); }
        shaped_step(&cpu, &gpu, step, shape, &rng, &gpu_loss, &gpu_norm, &cpu_norm);
        char what[48];
        snprintf(what, sizeof(what), "%s step %d: ", label, step);
        check_loss(&cpu, gpu_loss, shape->B * shape->T, step, what);  // the forward ran on `step` updates' weights
        check_grad_norm(&cpu, gpu_norm, cpu_norm, step, what);
        if (compare_state && (step == 0 || step == 4)) {
            char when[48];
            snprintf(when, sizeof(when), "%s after %d step%s", label, step + 1, step ? "s" : "");
            int bad = compare_fp8_state(&gpu, &cpu, step + 1, when);
            CHECK(bad == 0, "%s: %d FP8 state entries off (each within its own tolerance: see above)", when, bad);
        }
    }
    float* recorded = recorded_amaxes_of_last_step(&gpu);
    float* row0 = download_floats(gpu.fp8.amax_history, (size_t)gpu.fp8.num_slots);
    check_amaxes_of_own_tensors(&gpu, recorded, row0, forward_params, label);
    cudaCheck(cudaFree(forward_params));
    free(recorded);
    free(row0);
    if (compare_state && args.recipe.scaling == FP8_SCALING_DELAYED) { check_diag_amaxes(&gpu, &cpu, 5); }
    gpt2_free(&cpu);
}

static void test_fp8_five_steps(void) { shaped_five_steps(test_args("fp8"), &tiny_shape, 5, "delayed", 1); }
static void test_fp8_current_five_steps(void) { shaped_five_steps(test_args_current(), &tiny_shape, 5, "current", 1); }

// A GPU current-scaling cast against the CPU's fp8_quantize_current_bf16 on the same bf16 tensor (downloaded), from
// the slot's previous scale `previous`: FP8 bytes, and the slot's scale, scale_inv and window amax, bit for bit.
static void check_current_cast(gpu::GPT2* gpu, int slot, const floatX* device_tensor, const uint8_t* device_fp8, size_t n,
                               float previous, const char* what) {
    uint16_t* x = (uint16_t*)malloc(n * 2);
    uint8_t* got = (uint8_t*)malloc(n);
    uint8_t* want = (uint8_t*)malloc(n);
    cudaCheck(cudaMemcpy(x, device_tensor, n * 2, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(got, device_fp8, n, cudaMemcpyDeviceToHost));
    float cells[2], window;
    cudaCheck(cudaMemcpy(&cells[0], gpu->fp8.scale + slot, 4, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(&cells[1], gpu->fp8.scale_inv + slot, 4, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(&window, gpu->fp8_current_amax + slot, 4, cudaMemcpyDeviceToHost));
    float scale = previous, scale_inv = 0.0f, row0 = 0.0f;
    float amax = fp8_quantize_current_bf16(want, x, n, fp8_meta_slot_format(&gpu->fp8, slot), gpu->recipe.margin,
                                           &scale, &scale_inv, &row0, NULL);
    // R1: the same bf16 tensor, the same amax (a maximum), the same scale rule and cast
    CHECK(memcmp(got, want, n) == 0, "%s: GPU FP8 bytes differ from the CPU's current-scaling cast (R1)", what);
    CHECK(fp8_float_bits(cells[0]) == fp8_float_bits(scale) && fp8_float_bits(cells[1]) == fp8_float_bits(scale_inv) &&
              fp8_float_bits(window) == fp8_float_bits(amax),
          "%s: GPU scale %g scale_inv %g amax %g, CPU %g %g %g", what, cells[0], cells[1], window, scale, scale_inv, amax);
    free(x);
    free(got);
    free(want);
}

// Current scaling on the GPU: a weight cast (at make_pair) and the last fcproj input cast give the CPU's bytes and
// scales; an evaluation forward leaves the FP8 state alone and gives the logits of a recording forward.
static void test_fp8_current_scaling_casts(void) {
    cpu::GPT2 cpu;
    gpu::GPT2 gpu;
    make_pair_with(&cpu, &gpu, test_args_current(), 19);
    int C = cpu.config.channels, L = cpu.config.num_layers;
    int module = (L - 1) * LINEARS_PER_BLOCK + LINEAR_FCPROJ;
    gpu::LinearModule lm = linear_module(&gpu, module);
    int w_slot = fp8_meta_fwd_slot(&gpu.fp8, module, FP8_FWD_WEIGHT);
    check_current_cast(&gpu, w_slot, lm.weight, gpu.fp8_weight.codes + gpu.weight_fp8_offset[module],
                       (size_t)lm.OC * lm.IC, 1.0f, "fcproj weight");
    int inputs[TB * TT], targets[TB * TT];
    Rng rng;
    rng_seed(&rng, 20);
    tiny_batch(inputs, targets, &rng);
    gpt2_forward(&gpu, inputs, targets, TB, TT);  // a training forward: recording, the logits kept for the backward
    int in_slot = fp8_meta_fwd_slot(&gpu.fp8, module, FP8_FWD_INPUT);
    size_t n = (size_t)TB * TT * 4 * C;
    // GELU's output: at -r 0 made inside fcproj's input cast (its amax pass over the same values first), so made
    // again here by gelu_forward from fch; the CPU casts that tensor
    CHECK(gpu::gelu_in_fcproj_cast(&gpu, L - 1), "current scaling at -r 0: GELU inside fcproj's input cast");
    floatX* scratch;
    cudaCheck(cudaMalloc(&scratch, n * sizeof(floatX)));
    const floatX* fcproj_input = forward_input_of(&gpu, L - 1, LINEAR_FCPROJ, scratch, NULL);
    check_current_cast(&gpu, in_slot, fcproj_input, gpu.fp8_x.codes, n, 1.0f, "fcproj input");
    cudaCheck(cudaFree(scratch));
    check_kept_input_t(&gpu, module, gpu.fp8_x.codes, TB * TT, "current scaling: fcproj input");
    size_t n_logits = (size_t)TB * TT * cpu.config.padded_vocab_size;
    float* logits = download_bf16(gpu.acts.logits, n_logits);
    float* state = download_floats(gpu.fp8.memory, gpu.fp8.num_floats);
    float* window = download_floats(gpu.fp8_current_amax, (size_t)gpu.fp8.num_slots);
    eval_forward(&gpu, inputs, targets, TB, TT);
    float* eval_logits = download_bf16(gpu.acts.logits, n_logits);
    float* eval_state = download_floats(gpu.fp8.memory, gpu.fp8.num_floats);
    float* eval_window = download_floats(gpu.fp8_current_amax, (size_t)gpu.fp8.num_slots);
    // R1: an evaluation forward writes no FP8 state and casts with scales of the same values
    CHECK(memcmp(state, eval_state, gpu.fp8.num_floats * 4) == 0 &&
              memcmp(window, eval_window, (size_t)gpu.fp8.num_slots * 4) == 0,
          "an evaluation forward changed the FP8 state");
    CHECK(memcmp(logits, eval_logits, n_logits * 4) == 0, "evaluation logits differ from the recording forward's");
    free(logits);
    free(state);
    free(window);
    free(eval_logits);
    free(eval_state);
    free(eval_window);
    gpt2_free(&cpu);
}

// ZeRO-1 on one GPU: two GPU models as ranks 0 and 1 of 2, each on half of a (2*TB, TT) batch, with the collectives
// done by copies (what NCCL's reduce-scatter, all-reduce and all-gather leave behind), against ZeRO-0 on the same two
// ranks: bit-identical (R1: the same gradients and updates; clipping off, so the norm's summation order cannot
// matter). Checks the sharded AdamW offsets, the gradient norm of a shard and the master gather.
typedef struct {
    gpu::GPT2 rank[2];
    MultiGpu mg[2];  // each rank's, no communicator: its collectives are no-ops, the step below does them by hand
} TwoRanks;

static void two_ranks_init(TwoRanks* g, int zero_stage, const float* params) {
    GPT2Config config = test_config();
    TrainArgs args = test_args("fp8");
    for (int r = 0; r < 2; r++) {
        memset(&g->mg[r], 0, sizeof(g->mg[r]));
        g->mg[r].num_processes = 2;
        g->mg[r].process_rank = r;
        g->mg[r].zero_stage = zero_stage;
        cudaCheck(cudaMalloc(&g->mg[r].scratch, 4));
        gpu::gpt2_gpu_allocate(&g->rank[r], &config, &args, TB, TT, &g->mg[r]);
        gpu::gpt2_upload_params(&g->rank[r], params);
        gpt2_cast_weights_fp8(&g->rank[r], 1);
    }
}

// one step on the global batch inputs (2*TB, TT); returns the mean loss
static float two_ranks_step(TwoRanks* g, const int* inputs, const int* targets, int step) {
    float loss = 0.0f;
    for (int r = 0; r < 2; r++) {
        gpu::GPT2* m = &g->rank[r];
        gpt2_zero_grad(m);
        gpt2_forward(m, inputs + r * TB * TT, targets + r * TB * TT, TB, TT);
        gpt2_backward(m, 1.0f / 2.0f);  // the loss scale with the 2 ranks in it, as the trainer's
        loss += m->mean_loss / 2;
    }
    // gradients: the sum over ranks, everywhere (a superset of what reduce-scatter leaves in each shard)
    size_t padded = g->rank[0].shard.padded;
    float* a = download_floats(g->rank[0].grads_memory, padded);
    float* b = download_floats(g->rank[1].grads_memory, padded);
    for (size_t i = 0; i < padded; i++) { a[i] += b[i]; }
    for (int r = 0; r < 2; r++) { cudaCheck(cudaMemcpy(g->rank[r].grads_memory, a, padded * 4, cudaMemcpyHostToDevice)); }
    // the norm: each rank's shard, then the sum (ZeRO-0: each rank already has the whole)
    float squares[2];
    for (int r = 0; r < 2; r++) {
        gpt2_grad_norm(&g->rank[r]);  // ZeRO-1: the shard's; multi_gpu_sum_scalar adds nothing here
        float norm = gpt2_grad_norm_value(&g->rank[r]);
        squares[r] = norm * norm;
    }
    // what multi_gpu_sum_scalar does with NCCL, into each rank's norm on the device (clipping is off: only finiteness
    // matters)
    float norm_squared = g->mg[0].zero_stage == 1 ? squares[0] + squares[1] : squares[0];
    // the amax all-reduce: MAX of row 0 over the ranks (the hook's NCCL all-reduce is a no-op without a communicator)
    int S = g->rank[0].fp8.num_slots;
    float* row0_a = download_floats(g->rank[0].fp8.amax_history, (size_t)S);
    float* row0_b = download_floats(g->rank[1].fp8.amax_history, (size_t)S);
    for (int i = 0; i < S; i++) { row0_a[i] = fp8_amax_merge(row0_a[i], row0_b[i]); }
    for (int r = 0; r < 2; r++) {
        gpu::GPT2* m = &g->rank[r];
        cudaCheck(cudaMemcpy(m->fp8.amax_history, row0_a, (size_t)S * 4, cudaMemcpyHostToDevice));
        cudaCheck(cudaMemcpy(m->norm_squared, &norm_squared, 4, cudaMemcpyHostToDevice));
        gpt2_fp8_end_of_step(m, step);
        gpt2_update(m, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1e6f, step + 1);
    }
    // all-gather: each owner's bf16 slice to the other rank
    for (int owner = 0; owner < 2 && g->mg[0].zero_stage == 1; owner++) {
        const ZeroShard* sh = &g->rank[owner].shard;
        cudaCheck(cudaMemcpy(g->rank[1 - owner].params_memory + sh->offset, g->rank[owner].params_memory + sh->offset,
                             sh->shard_size * 2, cudaMemcpyDeviceToDevice));
    }
    for (int r = 0; r < 2; r++) { gpt2_cast_weights_fp8(&g->rank[r], 1); }
    cudaCheck(cudaDeviceSynchronize());
    free(a);
    free(b);
    free(row0_a);
    free(row0_b);
    return loss;
}

static void test_zero1_two_ranks_on_one_gpu(void) {
    cpu::GPT2 cpu;  // only for the initial weights
    cpu::ModelOptions opt;
    memset(&opt, 0, sizeof(opt));
    opt.config = test_config();
    opt.precision = PRECISION_FP8;
    fp8_recipe_default(&opt.recipe);
    gpt2_allocate(&cpu, &opt, TB, TT);
    Rng rng;
    rng_seed(&rng, 17);
    gpt2_init_parameters(&cpu.master, cpu.param_sizes, &opt.config, &rng);
    TwoRanks zero0, zero1;
    two_ranks_init(&zero0, 0, cpu.master_memory);
    two_ranks_init(&zero1, 1, cpu.master_memory);
    CHECK(zero1.rank[0].shard.count + zero1.rank[1].shard.count == zero1.rank[0].num_parameters &&
              zero1.rank[0].shard.count < zero1.rank[0].num_parameters, "two real shards");
    int inputs[2 * TB * TT], targets[2 * TB * TT];
    size_t P = cpu.num_parameters;
    for (int step = 0; step < 4; step++) {
        for (int i = 0; i < 2 * TB * TT; i++) {
            inputs[i] = (int)(rng_next_u64(&rng) % TV);
            targets[i] = (int)(rng_next_u64(&rng) % TV);
        }
        float l0 = two_ranks_step(&zero0, inputs, targets, step);
        float l1 = two_ranks_step(&zero1, inputs, targets, step);
        CHECK(l0 == l1, "step %d: ZeRO-1 loss %.7f, ZeRO-0 %.7f (R1)", step, l1, l0);
        for (int r = 0; r < 2; r++) {
            float* w0 = download_bf16(zero0.rank[r].params_memory, P);
            float* w1 = download_bf16(zero1.rank[r].params_memory, P);
            CHECK(memcmp(w0, w1, P * 4) == 0, "step %d rank %d: ZeRO-1 bf16 weights bit-identical to ZeRO-0 (R1)", step,
                  r);
            free(w0);
            free(w1);
        }
    }
    // the checkpoint path: masters gathered from the shards equal ZeRO-0's full masters
    float* full0 = (float*)malloc(P * 4);
    float* full1 = (float*)malloc(P * 4);
    cudaCheck(cudaMemcpy(full0, zero0.rank[0].master_memory, P * 4, cudaMemcpyDeviceToHost));
    for (int r = 0; r < 2; r++) {
        const ZeroShard* sh = &zero1.rank[r].shard;
        cudaCheck(cudaMemcpy(full1 + sh->offset, zero1.rank[r].master_memory, sh->count * 4, cudaMemcpyDeviceToHost));
    }
    CHECK(memcmp(full0, full1, P * 4) == 0, "fp32 masters of the two shards = ZeRO-0's masters (R1)");
    free(full0);
    free(full1);
    gpt2_free(&cpu);
}

// The casts' diagnostics counters count exactly what the CPU's fp8_quantize counts (the codecs agree bit for bit):
// elements, clipped above the format's max, and nonzero values flushed to zero, on values spread over 2^-40 .. 2^20,
// through both cast kernels (the plain one and the transposing one the gradients and weights go through).
static void test_fp8_cast_counts(void) {
    const size_t n = 1 << 16;
    uint16_t* x = (uint16_t*)malloc(n * sizeof(uint16_t));
    Rng rng;
    rng_seed(&rng, 13);
    for (size_t i = 0; i < n; i++) {
        float magnitude = ldexpf(1.0f + rng_uniform(&rng), (int)(rng_next_u64(&rng) % 61) - 40);
        x[i] = bf16_from_float(i % 17 == 0 ? 0.0f : (rng_next_u64(&rng) & 1 ? magnitude : -magnitude));
    }
    floatX* device_x;
    float *device_scale, *device_amax;
    unsigned long long* device_stats;
    uint8_t *device_out, *device_out_t;
    cudaCheck(cudaMalloc(&device_x, n * 2));
    cudaCheck(cudaMalloc(&device_scale, 4));
    cudaCheck(cudaMalloc(&device_amax, 4));
    cudaCheck(cudaMalloc(&device_stats, 3 * 8));
    cudaCheck(cudaMalloc(&device_out, n));
    cudaCheck(cudaMalloc(&device_out_t, n));
    cudaCheck(cudaMemcpy(device_x, x, n * 2, cudaMemcpyHostToDevice));
    uint8_t* codes = (uint8_t*)malloc(n);
    for (int f = 0; f < 2; f++) {
        Fp8Format format = f == 0 ? FP8_E4M3 : FP8_E5M2;
        float scale = f == 0 ? 0.5f : 3.0f;
        Fp8QuantStats want = {0, 0, 0};
        float amax = 0.0f;
        fp8_quantize_bf16(codes, x, n, format, scale, &amax, &want);
        cudaCheck(cudaMemcpy(device_scale, &scale, 4, cudaMemcpyHostToDevice));
        for (int transposed = 0; transposed < 2; transposed++) {
            cudaCheck(cudaMemset(device_stats, 0, 3 * 8));
            cudaCheck(cudaMemset(device_amax, 0, 4));
            if (transposed) {  // (256, 256): n as a tile-aligned matrix
                cudaCheck(fp8_cast_transpose_amax(device_out, device_out_t, device_x, 256, (int)(n / 256), device_scale,
                                                  device_amax, device_stats, format, 0));
            } else {
                cudaCheck(fp8_cast_amax(device_out, device_x, n, device_scale, device_amax, device_stats, format, 4, 0));
            }
            unsigned long long got[3];
            cudaCheck(cudaMemcpy(got, device_stats, sizeof(got), cudaMemcpyDeviceToHost));
            CHECK(got[0] == (unsigned long long)want.count && got[1] == (unsigned long long)want.saturated &&
                      got[2] == (unsigned long long)want.flushed && want.saturated > 0 && want.flushed > 0,
                  "%s %s: GPU counts %llu %llu %llu, CPU %lld %lld %lld", fp8_format_name(format),
                  transposed ? "cast+transpose" : "cast", got[0], got[1], got[2], want.count, want.saturated,
                  want.flushed);
        }
    }
    free(codes);
    free(x);
    cudaCheck(cudaFree(device_x));
    cudaCheck(cudaFree(device_scale));
    cudaCheck(cudaFree(device_amax));
    cudaCheck(cudaFree(device_stats));
    cudaCheck(cudaFree(device_out));
    cudaCheck(cudaFree(device_out_t));
}

// Sampling's next-token distribution: the GPU's (bf16 logits, host softmax) against the CPU's at the same position.
static void test_next_token_probs(void) {
    cpu::GPT2 cpu;
    gpu::GPT2 gpu;
    make_pair(&cpu, &gpu, "bf16", 11);
    Rng rng;
    rng_seed(&rng, 12);
    int tokens[TT];
    for (int i = 0; i < TT; i++) { tokens[i] = (int)(rng_next_u64(&rng) % TV); }
    float gpu_probs[TV], cpu_probs[TV];
    for (int t = 1; t < TT; t += 10) {
        gpu::gpt2_next_token_probs(&gpu, tokens, t, gpu_probs);
        cpu::gpt2_next_token_probs(&cpu, tokens, t, cpu_probs);
        double sum = 0.0, worst = 0.0;
        for (int i = 0; i < TV; i++) {
            sum += gpu_probs[i];
            worst = fmax(worst, fabs((double)gpu_probs[i] - cpu_probs[i]));
        }
        // the GPU's probabilities: a softmax in double of its bf16 logits, each rounded once to fp32 (R3 in fp32): the
        // sum is 1 within 2^-24 (and the double sums' V 2^-53)
        CHECK_WITHIN(fabs(sum - 1.0), FP32_ROUNDOFF + 2.0 * TV * 0x1p-53, "R3 in fp32, one rounding of each",
                     "t %d: the GPU's probabilities sum to 1 within", t);
        // a probability p moves by p |dz_i - sum_j p_j dz_j| <= 2 p max|dz| with the logits' dz within R4 of the row's
        // largest logit; the CPU's fp32 softmax adds R2 over its V-term sum and 4 fp32 ulps (expf, the division)
        Gpt2Roundings paths = roundings_of(&cpu);
        int n = gpt2_roundings_logits(&paths);
        const float* z = cpu.acts.logits + (size_t)(t - 1) * cpu.config.padded_vocab_size;  // the row of cpu_probs
        double p_max = max_abs(cpu_probs, TV), max_z = max_abs(z, TV);
        char why[80];
        snprintf(why, sizeof(why), "R4 through the softmax, %d roundings, max p %.3g, max|z| %.2f", n, p_max, max_z);
        double tolerance = 2.0 * p_max * tolerance_chain_max(n, BF16_ULP) * max_z +
                           p_max * (tolerance_sum_rn(TV) + 4.0 * FP32_ULP);
        CHECK_WITHIN(worst, tolerance, why, "t %d: the largest difference of a probability", t);
    }
    gpt2_free(&cpu);
}

static void test_checkpoints(void) {
    char dir[] = "/tmp/test_gpt_fp8_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    cpu::GPT2 cpu;
    gpu::GPT2 gpu;
    make_pair(&cpu, &gpu, "fp8", 7);
    Rng rng;
    rng_seed(&rng, 8);
    int inputs[TB * TT], targets[TB * TT];
    // a CPU checkpoint after one step continues on a fresh GPU model with the CPU's loss
    tiny_batch(inputs, targets, &rng);
    float norm;
    train_step(&cpu, inputs, targets, TB, TT, 0, &norm);
    gpt2_save_checkpoint(&cpu, dir, 1, 0, NULL, NULL);
    int S = cpu.fp8.num_slots;  // the diagnostics state as saved, before the forward below counts more casts
    Fp8QuantStats* saved_stats = (Fp8QuantStats*)malloc((size_t)S * sizeof(Fp8QuantStats));
    float* saved_last_amax = (float*)malloc((size_t)S * 4);
    float* saved_window_amax = (float*)malloc((size_t)S * 4);
    memcpy(saved_stats, cpu.fp8_stats, (size_t)S * sizeof(Fp8QuantStats));
    memcpy(saved_last_amax, cpu.fp8_last_amax, (size_t)S * 4);
    memcpy(saved_window_amax, cpu.fp8_window_amax, (size_t)S * 4);
    gpt2_forward(&cpu, inputs, targets, TB, TT);
    gpu::GPT2 resumed;
    TrainArgs args = test_args("fp8");
    GPT2Config config = test_config();
    gpu::gpt2_gpu_allocate(&resumed, &config, &args, TB, TT, &one_process);
    uint64_t rng_state;
    size_t shard_index, shard_position;
    gpt2_load_checkpoint(&resumed, dir, 1, &rng_state, &shard_index, &shard_position, NULL);
    // the FP8 diagnostics state comes back too: the CPU's cast counters on the device, its last amaxes on the host
    Fp8QuantStats* device_stats = (Fp8QuantStats*)malloc((size_t)S * sizeof(Fp8QuantStats));
    cudaCheck(cudaMemcpy(device_stats, resumed.fp8_stats, (size_t)S * sizeof(Fp8QuantStats), cudaMemcpyDeviceToHost));
    CHECK(saved_stats[0].count > 0 && memcmp(device_stats, saved_stats, (size_t)S * sizeof(Fp8QuantStats)) == 0 &&
              memcmp(resumed.fp8_last_amax, saved_last_amax, (size_t)S * 4) == 0 &&
              memcmp(resumed.fp8_window_amax, saved_window_amax, (size_t)S * 4) == 0,
          "CPU checkpoint on the GPU: FP8 diagnostics counters, last and window amaxes restored");
    // and on the device, where the next file written takes them from (delayed: row 1 of fp8_diag_amax is the window)
    float* device_amaxes = download_floats(resumed.fp8_diag_amax, 2 * (size_t)S);
    CHECK(memcmp(device_amaxes, saved_last_amax, (size_t)S * 4) == 0 &&
              memcmp(device_amaxes + S, saved_window_amax, (size_t)S * 4) == 0,
          "CPU checkpoint on the GPU: the last and window amaxes are in the device's cells too");
    free(device_amaxes);
    free(device_stats);
    free(saved_stats);
    free(saved_last_amax);
    free(saved_window_amax);
    gpt2_cast_weights_fp8(&resumed, 0);
    float gpu_loss = eval_forward(&resumed, inputs, targets, TB, TT);
    check_loss(&cpu, gpu_loss, TB * TT, 0, "CPU checkpoint on the GPU: ");  // the same weights and FP8 state: R4
    // GPU save -> load -> continue: two more steps give bit-identical losses (R1: the backward has no float atomics)
    float losses_a[2], losses_b[2];
    for (int pass = 0; pass < 2; pass++) {
        gpu::GPT2* g = pass == 0 ? &gpu : &resumed;
        if (pass == 0) {
            gpt2_save_checkpoint(&gpu, dir, 2, 0, NULL, NULL);
        } else {
            gpt2_load_checkpoint(&resumed, dir, 2, &rng_state, &shard_index, &shard_position, NULL);
            gpt2_cast_weights_fp8(&resumed, 0);
        }
        Rng data;
        rng_seed(&data, 9);
        for (int step = 0; step < 2; step++) {
            tiny_batch(inputs, targets, &data);
            float step_norm;
            (pass == 0 ? losses_a : losses_b)[step] = train_step(g, inputs, targets, TB, TT, 2 + step, &step_norm);
        }
    }
    CHECK(memcmp(losses_a, losses_b, sizeof(losses_a)) == 0, "save -> load -> continue: losses %.7f %.7f vs %.7f %.7f",
          losses_a[0], losses_a[1], losses_b[0], losses_b[1]);
    gpt2_free(&cpu);
}

// ----------------------------------------------------------------------------
// the medium configuration: the tiny model above never runs the kernels' loops past one pass (C <= 256 threads of a
// LayerNorm block, V <= 512 threads of the classifier, T <= 256 threads of the causal softmax, C <= 256 columns of
// one encoder-backward block). L 2, C 768, NH 12 (head size 64), T 384, B 1 (B*T = 384, a multiple of 64), V 1024.


// bf16 at the medium shape: logits, loss and every parameter gradient, with the tiny test's rules and counts (the same
// depth: longer rows sum more terms, R2's fp32 differences, which stay below a bf16 ulp; the tokens' independence
// shrinks the loss's tolerance by sqrt(384))
static void test_medium_bf16_forward_backward(void) {
    const TestShape* shape = &medium_shape;
    cpu::GPT2 cpu;
    gpu::GPT2 gpu;
    make_shaped_pair(&cpu, &gpu, test_args("bf16"), 41, shape);
    int n = shape->B * shape->T;
    int* inputs = (int*)malloc((size_t)n * sizeof(int));
    int* targets = (int*)malloc((size_t)n * sizeof(int));
    Rng rng;
    rng_seed(&rng, 42);
    random_batch(inputs, targets, n, shape->V, &rng);
    float gpu_loss = eval_forward(&gpu, inputs, targets, shape->B, shape->T);
    gpt2_forward(&cpu, inputs, targets, shape->B, shape->T);
    check_logits(&cpu, gpu.acts.logits, n, "medium: ");
    check_loss(&cpu, gpu_loss, n, 0, "medium: ");
    forward_backward(&cpu, &gpu, inputs, targets, shape->B, shape->T);
    check_gradients(&gpu, &cpu);
    free(inputs);
    free(targets);
    gpt2_free(&cpu);
}

// FP8 at the medium shape, with the tiny tests' rules and checks. R6 is what moves the two runs apart: on step 0 every
// scale is 1.0, so most E5M2 gradients (~1e-5, below E5M2's 2^-16) flush, and near the threshold on one side and not
// the other; AdamW's first steps move each weight by about lr * sign(m) = 1e-3 whatever its gradient's size
// (adam_step_bound: at most 1.003 lr), so a weight whose gradient flushed on one side only moves on the other alone, or
// the other way where the signs differ: up to adamw_drift(5) = 1e-2 apart after 5 updates, 10% of the largest weights
// (~5 sigma = 0.1) and 20% of the projections' (0.05), which bounds the weight slots' amaxes. Activations and gradients
// follow the weights through the blocks on their path; most weights move alike on both sides, so R6 estimates them at
// one side's move relative to the largest weights per block: 4e-3 / 0.1 = 4% a block after the 4 updates behind the
// fifth step, on top of R4's roundings. The fcproj fprop's fast accumulation over k = 3072 adds one rounding to every
// path through it (gpt2_linear_roundings).
static void test_medium_fp8_state_after_1_and_5_steps(void) {
    shaped_five_steps(test_args("fp8"), &medium_shape, 43, "medium fp8", 1);
}

// GPT-2 XL's width against the CPU (issue 55: at C 1600 the GPU had only been timed): one block of C 1600 with 25
// heads of 64 (d48's), B*T 128, five delayed-scaling steps, the same checks and tolerances as the medium model's
static void test_medium_xl_width_fp8_five_steps(void) {
    static const TestShape xl_shape = {1, 128, 1, 1600, 25, 1024};
    shaped_five_steps(test_args("fp8"), &xl_shape, 47, "C 1600 fp8", 1);
}

// ----------------------------------------------------------------------------
// the block recipes (-fp8_recipe blockwise | mxfp8): a shape whose every blocked dimension is a multiple of 128
// (C 128, 3C, 4C; B*T 128, the FP8 wgrad's reduction dimension)

static const TestShape block_shape = {2, 64, 2, 128, 4, TV};

// fp8 with -fp8_recipe `recipe` (blockwise or mxfp8), plain attention, and `extra` flags
static TrainArgs test_args_block_with(const char* recipe, const char* extra) {
    char flags[128];
    snprintf(flags, sizeof(flags), "-precision fp8 -fp8_recipe %s -attn plain %s", recipe, extra);
    return test_args_line(flags);
}

static TrainArgs test_args_block(const char* recipe) { return test_args_block_with(recipe, ""); }

// The block recipes where the widths end in partial blocks (a block cut short by the tensor's edge, its scale from the
// elements it has; llmc/linear.h's linear_check_gpu_dims says what the GPU takes): mxfp8 at C 72 (2.25 blocks of 32;
// 3C 6.75, 4C 9) and B*T 80 (2.5), every GEMM in FP8; blockwise at B*T 80 with its wgrad in BF16, so 80 is only ever
// an outer dimension (fprop's and dgrad's rows: partial 1x128 blocks of x's and dy's VEC128 scales along m), its ks
// (C, 3C, 4C) whole blocks of 128.
static const TestShape mxfp8_partial_shape = {2, 40, 2, 72, 3, TV};
static const TestShape blockwise_outer_partial_shape = {2, 40, 2, 128, 4, TV};
// Blockwise with every GEMM in FP8 where C 160 (1.25 blocks of 128), 3C 480 (3.75) and B*T 80 (0.625) are ks that
// end in partial blocks: the trainer casts them zero-padded to whole blocks (llmc/linear.h's linear_fp8_gemm_k), and
// cuBLASLt's block-scaled GEMMs reduce over the padded k; 4C 640 is whole blocks.
static const TestShape blockwise_partial_shape = {2, 40, 2, 160, 5, TV};

static uint8_t* download_bytes(const uint8_t* device, size_t n) {
    uint8_t* host = (uint8_t*)malloc(n);
    cudaCheck(cudaMemcpy(host, device, n, cudaMemcpyDeviceToHost));
    return host;
}

// A blockwise copy's codes as the trainer keeps them, (rows, fp8_blockwise_padded_k(cols)) on the device, against the
// CPU's (rows, cols): each row's codes the CPU's (R1), the padding's 0
static void check_padded_codes(const uint8_t* device_codes, const uint8_t* want, size_t rows, size_t cols,
                               const char* what, const char* copy) {
    size_t ld = fp8_blockwise_padded_k(cols), differ = 0, padding = 0;
    uint8_t* got = download_bytes(device_codes, rows * ld);
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < ld; c++) {
            if (c < cols) {
                differ += got[r * ld + c] != want[r * cols + c];
            } else {
                padding += got[r * ld + c] != 0;
            }
        }
    }
    CHECK(differ == 0 && padding == 0, "%s: %zu GPU %s differ from the CPU's block cast (R1), %zu of the padding's are "
          "not 0 (rows of %zu codes)", what, differ, copy, padding, ld);
    free(got);
}

// A GPU bf16 tensor (rows, cols) against the CPU's block cast of the same bf16 values (downloaded) in blocks of
// `shape`, R1: blockwise, the GPU's codes and its scale_invs read through cuBLASLt's layout (`blk`: BLK128x128, else
// VEC128), and `codes_t` (may be NULL) the codes transposed; mxfp8, the GPU's dequantized bf16 copy against the CPU's
// dequantized values rounded to bf16 (a power-of-two multiple of an FP8 value: exact). Returns the CPU cast's amax.
static float check_block_cast(const gpu::GPT2* gpu, int slot, const floatX* device_tensor, int rows, int cols,
                              Fp8BlockShape shape, const uint8_t* device_codes, const uint8_t* device_codes_t,
                              const float* device_scale_inv, int blk, const floatX* device_dequantized,
                              const char* what) {
    size_t n = (size_t)rows * cols, block_rows = (size_t)(rows + shape.rows - 1) / shape.rows;
    size_t block_cols = (size_t)(cols + shape.cols - 1) / shape.cols;
    float* x = download_bf16(device_tensor, n);
    uint8_t* codes = (uint8_t*)malloc(n);
    float* dequantized = (float*)malloc(n * sizeof(float));
    float* scale_inv = (float*)malloc(block_rows * block_cols * sizeof(float));
    Fp8BlockCast cast = fp8_block_cast_of(&gpu->recipe, fp8_meta_slot_format(&gpu->fp8, slot));
    float amax = 0.0f;
    fp8_quantize_blocks(codes, dequantized, scale_inv, x, (size_t)rows, (size_t)cols, shape, &cast, &amax, NULL, NULL);
    if (gpu->recipe.scaling == FP8_SCALING_BLOCKWISE) {
        // the trainer's rows of codes are as long as the GEMM's k, zero-padded to whole 128-blocks (linear_fp8_gemm_k)
        check_padded_codes(device_codes, codes, (size_t)rows, (size_t)cols, what, "codes");
        if (device_codes_t) {
            uint8_t* codes_t = (uint8_t*)malloc(n);
            for (size_t r = 0; r < (size_t)rows; r++) {
                for (size_t c = 0; c < (size_t)cols; c++) { codes_t[c * rows + r] = codes[r * cols + c]; }
            }
            check_padded_codes(device_codes_t, codes_t, (size_t)cols, (size_t)rows, what, "transposed codes");
            free(codes_t);
        }
        size_t floats = blk ? fp8_blk128_scale_floats((size_t)rows, (size_t)cols)
                            : fp8_vec128_scale_floats((size_t)rows, (size_t)cols);
        float* got_scale_inv = download_floats(device_scale_inv, floats);
        int same = 1;
        for (size_t i = 0; i < block_rows; i++) {
            for (size_t k = 0; k < block_cols; k++) {
                size_t at = blk ? fp8_blk128_scale_index(i, k, (size_t)cols)
                                : fp8_vec128_scale_index(i, k, (size_t)rows);
                same &= fp8_float_bits(got_scale_inv[at]) == fp8_float_bits(scale_inv[i * block_cols + k]);
            }
        }
        CHECK(same, "%s: GPU scale_invs (in cuBLASLt's %s layout) differ from the CPU's (R1)", what,
              blk ? "BLK128x128" : "VEC128");
        free(got_scale_inv);
    } else {
        float* got = download_bf16(device_dequantized, n);
        size_t off = 0;
        for (size_t i = 0; i < n; i++) { off += fp8_float_bits(got[i]) != fp8_float_bits(bf16_round(dequantized[i])); }
        CHECK(off == 0, "%s: %zu of %zu GPU dequantized values differ from the CPU's block cast (R1)", what, off, n);
        free(got);
    }
    free(x);
    free(codes);
    free(dequantized);
    free(scale_inv);
    return amax;
}

// The casts of a block recipe on the GPU against the CPU's (R1, from the same bf16 values): every FP8 module's weight
// cast, cast again with the diagnostics on, counts the CPU's elements, clipped and flushed and has the CPU's block
// scale range (the same bf16 weights); the last block's fcproj weight's copies, code by code and scale by scale; after
// a training forward, the last fcproj input's cast likewise (and, blockwise, where the module keeps it for its wgrad,
// the columnwise copy the forward's cast wrote beside it: x^T's codes and VEC128 scales, the CPU's cast of x in 128x1
// blocks; there, at -r 0, the cast with GELU inside made both from fch, and x is gelu_forward's output of fch), and
// its slot's window amax is max|x| of that input.
static void fp8_block_casts_at(const char* recipe, const char* extra_flags, const TestShape* shape) {
    cpu::GPT2 cpu;
    gpu::GPT2 gpu;
    make_shaped_pair(&cpu, &gpu, test_args_block_with(recipe, extra_flags), 51, shape);
    int S = cpu.fp8.num_slots, L = cpu.config.num_layers, mxfp8 = cpu.recipe.scaling == FP8_SCALING_MXFP8;
    memset(cpu.fp8_stats, 0, (size_t)S * sizeof(Fp8QuantStats));
    for (int slot = 0; slot < S; slot++) { fp8_block_scale_range_reset(&cpu.fp8_block_scale_range[slot]); }
    gpu.fp8_collect_stats = 1;
    cudaCheck(cudaMemset(gpu.fp8_stats, 0, (size_t)S * sizeof(Fp8QuantStats)));
    gpt2_cast_weights_fp8(&cpu, 1);
    gpt2_cast_weights_fp8(&gpu, 1);
    cudaCheck(cudaDeviceSynchronize());
    Fp8QuantStats* stats = (Fp8QuantStats*)malloc((size_t)S * sizeof(Fp8QuantStats));
    cudaCheck(cudaMemcpy(stats, gpu.fp8_stats, (size_t)S * sizeof(Fp8QuantStats), cudaMemcpyDeviceToHost));
    gpu::gpt2_fp8_block_scale_ranges_to_host(&gpu);
    int off = 0;
    for (int module = 0; module < linear_num_modules(L); module++) {
        int slot = fp8_meta_fwd_slot(&cpu.fp8, module, FP8_FWD_WEIGHT);
        off += memcmp(&stats[slot], &cpu.fp8_stats[slot], sizeof(Fp8QuantStats)) != 0 ||
               memcmp(&gpu.fp8_block_scale_range_host[slot], &cpu.fp8_block_scale_range[slot],
                      sizeof(Fp8BlockScaleRange)) != 0;
    }
    CHECK(off == 0, "%s weight casts: %d weight slots whose counts or block scale range differ from the CPU's (R1)",
          recipe, off);
    free(stats);
    int module = (L - 1) * LINEARS_PER_BLOCK + LINEAR_FCPROJ;
    gpu::LinearModule lm = linear_module(&gpu, module);
    int w_slot = fp8_meta_fwd_slot(&gpu.fp8, module, FP8_FWD_WEIGHT);
    int in_slot = fp8_meta_fwd_slot(&gpu.fp8, module, FP8_FWD_INPUT);
    size_t w_off = gpu.weight_fp8_offset[module];
    char what[64];
    snprintf(what, sizeof(what), "%s fcproj weight", recipe);
    if (mxfp8) {
        check_block_cast(&gpu, w_slot, lm.weight, lm.OC, lm.IC, fp8_block_shape(FP8_SCALING_MXFP8, 1, 0), NULL, NULL,
                         NULL, 0, gpu.fp8_weight.dequantized + w_off, what);
        snprintf(what, sizeof(what), "%s fcproj weight, 32x1 blocks", recipe);
        check_block_cast(&gpu, w_slot, lm.weight, lm.OC, lm.IC, fp8_block_shape(FP8_SCALING_MXFP8, 1, 1), NULL, NULL,
                         NULL, 0, gpu.fp8_weight.dequantized_t + w_off, what);
    } else {
        check_block_cast(&gpu, w_slot, lm.weight, lm.OC, lm.IC, fp8_block_shape(FP8_SCALING_BLOCKWISE, 1, 0),
                         gpu.fp8_weight.codes + w_off, gpu.fp8_weight.codes_t + w_off,
                         gpu.fp8_weight.scale_inv + gpu.weight_scale_offset[module], 1, NULL, what);
        // W^T's tiles: the same scales, the tile grid transposed
        float* scale_inv = download_floats(gpu.fp8_weight.scale_inv + gpu.weight_scale_offset[module],
                                           fp8_blk128_scale_floats((size_t)lm.OC, (size_t)lm.IC));
        float* scale_inv_t = download_floats(gpu.fp8_weight.scale_inv_t + gpu.weight_t_scale_offset[module],
                                             fp8_blk128_scale_floats((size_t)lm.IC, (size_t)lm.OC));
        int same = 1;
        for (size_t i = 0; i < fp8_ceil_div((size_t)lm.OC, 128); i++) {
            for (size_t k = 0; k < fp8_ceil_div((size_t)lm.IC, 128); k++) {
                same &= fp8_float_bits(scale_inv[fp8_blk128_scale_index(i, k, (size_t)lm.IC)]) ==
                        fp8_float_bits(scale_inv_t[fp8_blk128_scale_index(k, i, (size_t)lm.OC)]);
            }
        }
        CHECK(same, "%s: W^T's tile scales are W's, the grid transposed", what);
        free(scale_inv);
        free(scale_inv_t);
    }
    int n = shape->B * shape->T;
    int* inputs = (int*)malloc((size_t)n * sizeof(int));
    int* targets = (int*)malloc((size_t)n * sizeof(int));
    Rng rng;
    rng_seed(&rng, 52);
    random_batch(inputs, targets, n, shape->V, &rng);
    gpt2_forward(&gpu, inputs, targets, shape->B, shape->T);
    cudaCheck(cudaDeviceSynchronize());
    // (B*T, 4C), the last cast's: fch_gelu's slice, or (blockwise at -r 0: GELU inside the cast, fch_gelu not written)
    // gelu_forward's output of fch made again into scratch
    floatX* scratch;
    cudaCheck(cudaMalloc(&scratch, (size_t)n * lm.IC * sizeof(floatX)));
    const floatX* x = forward_input_of(&gpu, L - 1, LINEAR_FCPROJ, scratch, NULL);
    snprintf(what, sizeof(what), "%s fcproj input", recipe);
    float amax = check_block_cast(&gpu, in_slot, x, n, lm.IC, fp8_block_shape(cpu.recipe.scaling, 0, 0), gpu.fp8_x.codes,
                                  NULL, gpu.fp8_x.scale_inv, 0, gpu.fp8_x.dequantized, what);
    LinearPrecision lp = gpu::gpt2_linear_precision(&gpu);
    if (!mxfp8 && linear_keeps_input_t(&lp, module, gpu.recompute)) {  // x^T (IC, n) in 1x128 blocks: x's 128x1
        float* values = download_bf16(x, (size_t)n * lm.IC);
        uint16_t* transposed = (uint16_t*)malloc((size_t)n * lm.IC * sizeof(uint16_t));
        for (int r = 0; r < n; r++) {
            for (int c = 0; c < lm.IC; c++) {
                transposed[(size_t)c * n + r] = bf16_from_float(values[(size_t)r * lm.IC + c]);
            }
        }
        floatX* device_transposed;
        cudaCheck(cudaMalloc(&device_transposed, (size_t)n * lm.IC * sizeof(floatX)));
        cudaCheck(cudaMemcpy(device_transposed, transposed, (size_t)n * lm.IC * sizeof(floatX),
                             cudaMemcpyHostToDevice));
        snprintf(what, sizeof(what), "%s fcproj input, the kept columnwise copy", recipe);
        float kept_amax =
            check_block_cast(&gpu, in_slot, device_transposed, lm.IC, n, fp8_block_shape(FP8_SCALING_BLOCKWISE, 0, 0),
                             gpu::kept_input_t(&gpu, module), NULL, gpu::kept_input_t_scale_inv(&gpu, module), 0, NULL,
                             what);
        CHECK(fp8_float_bits(kept_amax) == fp8_float_bits(amax), "%s: amax %a, the rowwise cast's %a", what, kept_amax,
              amax);
        cudaCheck(cudaFree(device_transposed));
        free(transposed);
        free(values);
    }
    float window;
    cudaCheck(cudaMemcpy(&window, gpu.fp8_current_amax + in_slot, 4, cudaMemcpyDeviceToHost));
    CHECK(fp8_float_bits(window) == fp8_float_bits(amax), "%s: the slot's window amax %a, max|x| %a (R1)", what,
          window, amax);
    cudaCheck(cudaFree(scratch));
    free(inputs);
    free(targets);
    gpt2_free(&cpu);
}

static void fp8_block_casts(const char* recipe) { fp8_block_casts_at(recipe, "", &block_shape); }
static void test_fp8_blockwise_casts(void) { fp8_block_casts("blockwise"); }
static void test_fp8_mxfp8_casts(void) { fp8_block_casts("mxfp8"); }
static void test_fp8_mxfp8_partial_blocks_casts(void) { fp8_block_casts_at("mxfp8", "", &mxfp8_partial_shape); }
static void test_fp8_blockwise_outer_partial_blocks_casts(void) {
    fp8_block_casts_at("blockwise", "-fp8_wgrad 0", &blockwise_outer_partial_shape);
}
static void test_fp8_blockwise_partial_blocks_casts(void) {
    fp8_block_casts_at("blockwise", "", &blockwise_partial_shape);
}

// 5 training steps of a block recipe, as for delayed and current scaling (shaped_five_steps), but for the FP8 state:
// the block recipes' metadata keeps scale 1 and clears row 0 every step (their casts are checked above).
static void fp8_block_five_steps(const char* recipe) {
    shaped_five_steps(test_args_block(recipe), &block_shape, 53, recipe, 0);
}

static void test_fp8_blockwise_five_steps(void) { fp8_block_five_steps("blockwise"); }
static void test_fp8_mxfp8_five_steps(void) { fp8_block_five_steps("mxfp8"); }
static void test_fp8_mxfp8_partial_blocks_five_steps(void) {
    shaped_five_steps(test_args_block("mxfp8"), &mxfp8_partial_shape, 53, "mxfp8 partial blocks", 0);
}
static void test_fp8_blockwise_outer_partial_blocks_five_steps(void) {
    shaped_five_steps(test_args_block_with("blockwise", "-fp8_wgrad 0"), &blockwise_outer_partial_shape, 53,
                      "blockwise outer partial blocks", 0);
}
static void test_fp8_blockwise_partial_blocks_five_steps(void) {
    shaped_five_steps(test_args_block("blockwise"), &blockwise_partial_shape, 53, "blockwise partial blocks", 0);
}

// Both sides' diagnostics counters and block scale ranges cleared (the GPU's on the device), as after a diagnostics
// line
static void clear_block_diagnostics(cpu::GPT2* cpu, gpu::GPT2* gpu) {
    int S = cpu->fp8.num_slots;
    memset(cpu->fp8_stats, 0, (size_t)S * sizeof(Fp8QuantStats));
    cudaCheck(cudaMemset(gpu->fp8_stats, 0, (size_t)S * sizeof(Fp8QuantStats)));
    for (int slot = 0; slot < S; slot++) {
        fp8_block_scale_range_reset(&cpu->fp8_block_scale_range[slot]);
        fp8_block_scale_range_reset(&gpu->fp8_block_scale_range_host[slot]);
    }
    gpu::gpt2_fp8_block_scale_ranges_to_device(gpu);
}

// What a slot's recorded blockwise casts of the bf16 tensor x (rows, cols) on the device count, on the CPU
// (fp8/block.h, the CPU trainer's casts): the rowwise copy's cast (1x128 blocks) where `rowwise`, the columnwise
// copy's (128x1) where `columnwise`, each a cast of its own, into *stats and *range (cleared first).
static void blockwise_casts_of(const gpu::GPT2* gpu, int slot, const floatX* x, int rows, int cols, int rowwise,
                               int columnwise, Fp8QuantStats* stats, Fp8BlockScaleRange* range) {
    size_t n = (size_t)rows * cols;
    float* values = download_bf16(x, n);
    uint8_t* codes = (uint8_t*)malloc(n);
    float* scratch = (float*)malloc(2 * n * sizeof(float));
    Fp8BlockCast cast = fp8_block_cast_of(&gpu->recipe, fp8_meta_slot_format(&gpu->fp8, slot));
    float amax = 0.0f;
    memset(stats, 0, sizeof(*stats));
    fp8_block_scale_range_reset(range);
    if (rowwise) {
        fp8_quantize_blocks(codes, NULL, NULL, values, (size_t)rows, (size_t)cols,
                            fp8_block_shape(FP8_SCALING_BLOCKWISE, 0, 0), &cast, &amax, stats, range);
    }
    if (columnwise) {
        fp8_quantize_blocks_columnwise(codes, NULL, NULL, values, (size_t)rows, (size_t)cols, FP8_BLOCKWISE_BLOCK,
                                       &cast, &amax, stats, range, scratch);
    }
    free(values);
    free(codes);
    free(scratch);
}

// Blockwise does once what delayed scaling does once: the training forward's cast of a linear's input writes the
// columnwise copy its FP8 wgrad reads (kept, the bf16 input not) beside the rowwise one, and each biased layer's
// grad_output cast sums its bias gradient in its pass. 5 steps against the CPU (which casts that copy in the backward
// and sums the bias from its own tensor) with the diagnostics on, at -r `recompute` (0: every wgrad reads a kept copy;
// 1: fcproj's input remade and cast in the backward): the losses and norms (R4, R5, R6); after 4 steps every slot's
// element count the CPU's (R1: the same recorded casts, none twice, none left out); over the last step, each block
// linear's input slot and block 0's qkv and fc grad_output slots count the clipped and flushed elements and keep the
// block scale range of the CPU's recorded casts (rowwise and columnwise, each a cast of its own) of the GPU's own
// tensors (R1: the forward's cast of the wgrad's copy records what the backward's cast did), the recorded amaxes are
// max|x| of those tensors (R1), and block 0's qkv and fc bias gradients are bias_backward's bits on the GPU's own
// grad_outputs (R1: the cast's column partials are bias_backward's).
static void blockwise_kept_input_five_steps(int recompute) {
    char flags[32], label[48];
    snprintf(flags, sizeof(flags), "-r %d", recompute);
    snprintf(label, sizeof(label), "blockwise kept x^T -r %d", recompute);
    const TestShape* shape = &block_shape;
    cpu::GPT2 cpu;
    gpu::GPT2 gpu;
    make_shaped_pair(&cpu, &gpu, test_args_block_with("blockwise", flags), 57, shape);
    int S = cpu.fp8.num_slots, L = cpu.config.num_layers, C = cpu.config.channels, BT = shape->B * shape->T;
    for (int l = 0; l < L; l++) {  // -r 0: GELU inside fcproj's input cast (its bf16 output read by nothing else)
        CHECK(gpu::gelu_in_fcproj_cast(&gpu, l) == (recompute == 0),
              "%s: block %d's GELU %s fcproj's input cast (want %s)", label, l,
              gpu::gelu_in_fcproj_cast(&gpu, l) ? "inside" : "outside", recompute == 0 ? "inside" : "outside");
    }
    gpu.fp8_collect_stats = 1;
    clear_block_diagnostics(&cpu, &gpu);
    Rng rng;
    rng_seed(&rng, 58);
    Fp8QuantStats* stats = (Fp8QuantStats*)malloc((size_t)S * sizeof(Fp8QuantStats));
    floatX* forward_params = NULL;
    for (int step = 0; step < 5; step++) {
        if (step == 4) {  // the counts of 4 steps, then the last step's alone
            cudaCheck(cudaMemcpy(stats, gpu.fp8_stats, (size_t)S * sizeof(Fp8QuantStats), cudaMemcpyDeviceToHost));
            int off = 0;
            for (int slot = 0; slot < S; slot++) { off += stats[slot].count != cpu.fp8_stats[slot].count; }
            CHECK(off == 0, "%s: after 4 steps %d slots' element counts differ from the CPU's (R1)", label, off);
            clear_block_diagnostics(&cpu, &gpu);
            forward_params = device_params_copy(&gpu);
        }
        float gpu_loss, gpu_norm, cpu_norm;
        shaped_step(&cpu, &gpu, step, shape, &rng, &gpu_loss, &gpu_norm, &cpu_norm);
        char what[80];
        snprintf(what, sizeof(what), "%s step %d: ", label, step);
        check_loss(&cpu, gpu_loss, BT, step, what);
        check_grad_norm(&cpu, gpu_norm, cpu_norm, step, what);
    }
    cudaCheck(cudaMemcpy(stats, gpu.fp8_stats, (size_t)S * sizeof(Fp8QuantStats), cudaMemcpyDeviceToHost));
    gpu::gpt2_fp8_block_scale_ranges_to_host(&gpu);
    LinearPrecision lp = gpu::gpt2_linear_precision(&gpu);
    size_t BTC = (size_t)BT * C;
    floatX* scratch;
    cudaCheck(cudaMalloc(&scratch, BTC * 4 * sizeof(floatX)));
    int off = 0, checked = 0;
    for (int module = 0; module < LINEARS_PER_BLOCK * L; module++) {  // every block linear's input
        int l = module / LINEARS_PER_BLOCK, kind = module % LINEARS_PER_BLOCK;
        int slot = fp8_meta_fwd_slot(&gpu.fp8, module, FP8_FWD_INPUT);
        int IC = linear_layout(&gpu.config, module).IC;
        const floatX* x = forward_input_of(&gpu, l, kind, scratch, forward_params);
        Fp8QuantStats want;
        Fp8BlockScaleRange want_range;
        blockwise_casts_of(&gpu, slot, x, BT, IC, linear_gemm_is_fp8(&lp, module, LINEAR_GEMM_FPROP),
                           linear_gemm_is_fp8(&lp, module, LINEAR_GEMM_WGRAD), &want, &want_range);
        int bad = memcmp(&stats[slot], &want, sizeof(want)) != 0 ||
                  memcmp(&gpu.fp8_block_scale_range_host[slot], &want_range, sizeof(want_range)) != 0;
        if (bad && off < 3) {
            printf("  block %d %s input: GPU %lld elements, %lld saturated, %lld flushed, scales %g .. %g; CPU "
                   "casts of the GPU's input %lld, %lld, %lld, %g .. %g\n", l, linear_names[kind], stats[slot].count,
                   stats[slot].saturated, stats[slot].flushed, gpu.fp8_block_scale_range_host[slot].scale_min,
                   gpu.fp8_block_scale_range_host[slot].scale_max, want.count, want.saturated, want.flushed,
                   want_range.scale_min, want_range.scale_max);
        }
        off += bad;
        checked++;
    }
    const floatX* grad_outputs[2] = {gpu.dqkv, block0_fc_grad_output(&gpu, scratch)};  // block 0's: the last backward's
    const int kinds[2] = {LINEAR_QKV, LINEAR_FC};
    const float* bias_grads[2] = {gpu.grads.qkvb, gpu.grads.fcb};  // block 0's first
    float* partials;
    float* dbias;
    cudaCheck(cudaMalloc(&partials, (size_t)column_sum_chunks((size_t)BT) * 4 * C * sizeof(float)));
    cudaCheck(cudaMalloc(&dbias, (size_t)4 * C * sizeof(float)));
    for (int i = 0; i < 2; i++) {
        int module = kinds[i], OC = linear_layout(&gpu.config, module).OC;
        int slot = fp8_meta_bwd_slot(&gpu.fp8, module, FP8_BWD_GRAD_OUTPUT);
        Fp8QuantStats want;
        Fp8BlockScaleRange want_range;
        blockwise_casts_of(&gpu, slot, grad_outputs[i], BT, OC, linear_gemm_is_fp8(&lp, module, LINEAR_GEMM_DGRAD),
                           linear_gemm_is_fp8(&lp, module, LINEAR_GEMM_WGRAD), &want, &want_range);
        int bad = memcmp(&stats[slot], &want, sizeof(want)) != 0 ||
                  memcmp(&gpu.fp8_block_scale_range_host[slot], &want_range, sizeof(want_range)) != 0;
        if (bad && off < 3) {
            printf("  block 0 %s grad_output: GPU %lld elements, %lld saturated, %lld flushed; CPU casts of the GPU's "
                   "gradient %lld, %lld, %lld\n", linear_names[module], stats[slot].count, stats[slot].saturated,
                   stats[slot].flushed, want.count, want.saturated, want.flushed);
        }
        off += bad;
        checked++;
        // the bias gradient: bias_backward on the GPU's own grad_output, into zeros (the step's gradients started at 0)
        cudaCheck(cudaMemset(dbias, 0, (size_t)OC * sizeof(float)));
        bias_backward(dbias, grad_outputs[i], BT, OC, partials, gpu.stream);
        cudaCheck(cudaStreamSynchronize(gpu.stream));
        float* want_bias = download_floats(dbias, (size_t)OC);
        float* got_bias = download_floats(bias_grads[i], (size_t)OC);
        CHECK(memcmp(got_bias, want_bias, (size_t)OC * sizeof(float)) == 0,
              "%s: block 0 %s's bias gradient is not bias_backward's bits on its grad_output (R1)", label,
              linear_names[module]);
        free(want_bias);
        free(got_bias);
    }
    CHECK(off == 0, "%s: %d of %d slots' last-step counts or block scale ranges are not the CPU's recorded casts of "
          "the GPU's own tensors (R1; the first above)", label, off, checked);
    float* recorded = recorded_amaxes_of_last_step(&gpu);
    float* row0 = download_floats(gpu.fp8.amax_history, (size_t)S);
    check_amaxes_of_own_tensors(&gpu, recorded, row0, forward_params, label);
    free(recorded);
    free(row0);
    free(stats);
    cudaCheck(cudaFree(partials));
    cudaCheck(cudaFree(dbias));
    cudaCheck(cudaFree(scratch));
    cudaCheck(cudaFree(forward_params));
    gpt2_free(&cpu);
}

static void test_fp8_blockwise_kept_input_five_steps(void) { blockwise_kept_input_five_steps(0); }

// The bf16 tensors a fused cast makes inside (GELU's output, LayerNorm's), which a fused model never writes: filled
// with a byte pattern in both models before training (made_inside_fill), then counted (made_inside_check): every byte
// of the fused model's (models[0]) still the pattern, few of the other's.
static const GpuBuffer made_inside_buffers[3] = {GPU_FCH_GELU, GPU_LN1, GPU_LN2};
static const char* const made_inside_names[3] = {"fch_gelu", "ln1", "ln2"};
static floatX* made_inside_of(gpu::GPT2* m, int k) { return k == 0 ? m->acts.fch_gelu : k == 1 ? m->acts.ln1 : m->acts.ln2; }

static void made_inside_fill(gpu::GPT2* models[2]) {
    for (int k = 0; k < 3; k++) {
        for (int m = 0; m < 2; m++) {
            cudaCheck(cudaMemset(made_inside_of(models[m], k), 0xA5, models[0]->memory.bytes[made_inside_buffers[k]]));
        }
    }
}

static void made_inside_check(gpu::GPT2* models[2], const char* what) {
    for (int k = 0; k < 3; k++) {
        size_t bytes = models[0]->memory.bytes[made_inside_buffers[k]], untouched[2] = {0, 0};
        uint8_t* host = (uint8_t*)malloc(bytes);
        for (int m = 0; m < 2; m++) {
            cudaCheck(cudaMemcpy(host, made_inside_of(models[m], k), bytes, cudaMemcpyDeviceToHost));
            for (size_t i = 0; i < bytes; i++) { untouched[m] += host[i] == 0xA5; }
        }
        free(host);
        CHECK(untouched[0] == bytes && untouched[1] < bytes / 2,
              "%s %s (%zu bytes): %zu bytes as filled in the fused model (want all), %zu in the other (want few)", what,
              made_inside_names[k], bytes, untouched[0], untouched[1]);
    }
}

// Blockwise's block casts that make their tensor inside (fp8/block_quantize.cuh's Fp8BlockMade): GELU in fcproj's
// input cast (gelu_in_block_cast), GELU's backward in fc's grad_output cast (gelu_in_block_grad_output_cast) and
// LayerNorm in qkv's and fc's input casts (layernorm_in_block_cast), against gelu_forward / gelu_backward /
// layernorm_forward and the plain block casts of their outputs (fused_fp8_casts 0): three training steps at -r 0, with
// the diagnostics on, give the same losses, norms, gradients, master and bf16 weights, FP8 state and counts, bit for
// bit (R1: the casts see the bf16 values those kernels write; fc's bias gradient is the sum of the same values). That
// the fused casts are what ran: the fused model's fch_gelu, ln1 and ln2 still hold the bytes they were filled with,
// the other's do not; the fused model's backward leaves the gradient of GELU's output (dbt4c) as fcproj's dgrad wrote
// it, which the other's gelu_backward overwrites in place.
static void test_fp8_blockwise_fused_casts_bit_identical(void) {
    const TestShape* shape = &block_shape;
    cpu::GPT2 cpu_fused, cpu_separate;  // only for the same initial weights on both GPU models
    gpu::GPT2 fused, separate;
    make_shaped_pair(&cpu_fused, &fused, test_args_block_with("blockwise", "-r 0"), 59, shape);
    make_shaped_pair(&cpu_separate, &separate, test_args_block_with("blockwise", "-r 0"), 59, shape);
    separate.fused_fp8_casts = 0;  // (the flag is delayed scaling's on the command line; the field decides)
    for (int l = 0; l < fused.config.num_layers; l++) {
        CHECK(gpu::gelu_in_fcproj_cast(&fused, l) && !gpu::gelu_in_fcproj_cast(&separate, l),
              "block %d: GELU inside fcproj's input cast in the fused model, not in the other", l);
        CHECK(gpu::gelu_in_block_grad_output_cast(&fused, l) && !gpu::gelu_in_block_grad_output_cast(&separate, l) &&
                  !gpu::gelu_in_fc_grad_output_cast(&fused, l),
              "block %d: GELU's backward inside fc's grad_output block cast in the fused model, not in the other", l);
        CHECK(gpu::layernorm_in_block_cast(&fused, l, LINEAR_QKV) && gpu::layernorm_in_block_cast(&fused, l, LINEAR_FC) &&
                  !gpu::layernorm_in_block_cast(&separate, l, LINEAR_QKV) &&
                  !gpu::layernorm_in_input_cast(&fused, l, LINEAR_QKV),
              "block %d: LayerNorm inside qkv's and fc's input block casts in the fused model, not in the other", l);
    }
    gpu::GPT2* models[2] = {&fused, &separate};
    for (int m = 0; m < 2; m++) {
        models[m]->fp8_collect_stats = 1;
        cudaCheck(cudaMemset(models[m]->fp8_stats, 0, (size_t)models[m]->fp8.num_slots * sizeof(Fp8QuantStats)));
    }
    made_inside_fill(models);
    int n = shape->B * shape->T;
    int* inputs = (int*)malloc((size_t)n * sizeof(int));
    int* targets = (int*)malloc((size_t)n * sizeof(int));
    Rng rng;
    rng_seed(&rng, 60);
    for (int step = 0; step < 3; step++) {
        random_batch(inputs, targets, n, shape->V, &rng);
        float norm[2], loss[2];
        for (int m = 0; m < 2; m++) {
            loss[m] = train_step(models[m], inputs, targets, shape->B, shape->T, step, &norm[m]);
        }
        CHECK(memcmp(&loss[0], &loss[1], 4) == 0 && memcmp(&norm[0], &norm[1], 4) == 0,
              "blockwise step %d: loss %.9g norm %.9g GELU in the cast, %.9g %.9g separate", step, loss[0], norm[0],
              loss[1], norm[1]);
    }
    cudaCheck(cudaDeviceSynchronize());
    gpu::gpt2_fp8_block_scale_ranges_to_host(&fused);
    gpu::gpt2_fp8_block_scale_ranges_to_host(&separate);
    size_t P = fused.num_parameters;
    int S = fused.fp8.num_slots;
    struct {
        const char* what;
        const void *a, *b;
        size_t bytes;
        int on_device;
    } same[] = {
        {"gradients", fused.grads_memory, separate.grads_memory, P * 4, 1},
        {"master weights", fused.master_memory, separate.master_memory, P * 4, 1},
        {"bf16 weights", fused.params_memory, separate.params_memory, P * 2, 1},
        {"FP8 state", fused.fp8.memory, separate.fp8.memory, fused.fp8.num_floats * 4, 1},
        {"diagnostics counts", fused.fp8_stats, separate.fp8_stats, (size_t)S * sizeof(Fp8QuantStats), 1},
        {"block scale ranges", fused.fp8_block_scale_range_host, separate.fp8_block_scale_range_host,
         (size_t)S * sizeof(Fp8BlockScaleRange), 0},
    };
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        uint8_t* a = (uint8_t*)malloc(same[i].bytes);
        uint8_t* b = (uint8_t*)malloc(same[i].bytes);
        cudaMemcpyKind kind = same[i].on_device ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost;
        cudaCheck(cudaMemcpy(a, same[i].a, same[i].bytes, kind));
        cudaCheck(cudaMemcpy(b, same[i].b, same[i].bytes, kind));
        CHECK(memcmp(a, b, same[i].bytes) == 0,
              "blockwise after 3 steps: %s bit-identical, GELU in the cast or not (R1)", same[i].what);
        free(a);
        free(b);
    }
    made_inside_check(models, "blockwise");
    // the last backward's block 0: the fused model's dbt4c still holds the gradient of GELU's output, which
    // gelu_backward turns into what the separate model's gelu_backward left in its dbt4c (GELU's input gradient)
    size_t n4 = (size_t)shape->B * shape->T * 4 * shape->C;
    floatX* remade;
    cudaCheck(cudaMalloc(&remade, n4 * sizeof(floatX)));
    gelu_backward(remade, fused.acts.fch, fused.dbt4c, n4, 0);
    uint16_t* got_fused = (uint16_t*)malloc(n4 * 2);
    uint16_t* got_remade = (uint16_t*)malloc(n4 * 2);
    uint16_t* got_separate = (uint16_t*)malloc(n4 * 2);
    cudaCheck(cudaMemcpy(got_fused, fused.dbt4c, n4 * 2, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(got_remade, remade, n4 * 2, cudaMemcpyDeviceToHost));
    cudaCheck(cudaMemcpy(got_separate, separate.dbt4c, n4 * 2, cudaMemcpyDeviceToHost));
    CHECK(memcmp(got_remade, got_separate, n4 * 2) == 0 && memcmp(got_fused, got_separate, n4 * 2) != 0,
          "blockwise block 0: the fused model left the gradient of GELU's output in dbt4c (gelu_backward of it is the "
          "separate model's in-place result)");
    free(got_fused);
    free(got_remade);
    free(got_separate);
    cudaCheck(cudaFree(remade));
    free(inputs);
    free(targets);
    gpt2_free(&fused);
    gpt2_free(&separate);
    gpt2_free(&cpu_fused);
    gpt2_free(&cpu_separate);
}
static void test_fp8_blockwise_kept_input_recompute_five_steps(void) { blockwise_kept_input_five_steps(1); }

// A block recipe's checkpoint CPU -> GPU -> CPU: the CPU's after one step loads on the GPU with its diagnostics state
// (counters, last and window amaxes, block scale ranges, on the host and on the device) and continues with the CPU's
// loss (R4, an evaluation forward on the same weights); the GPU then saves it, untouched by that evaluation, and a
// fresh CPU model loads from the GPU's files the first CPU's masters, moments and FP8 state, bit for bit (R1).
static void fp8_block_checkpoints(const char* recipe) {
    char dir[] = "/tmp/test_gpt_fp8_blocks_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    const TestShape* shape = &block_shape;
    TrainArgs args = test_args_block(recipe);
    cpu::GPT2 cpu;
    gpu::GPT2 gpu;
    make_shaped_pair(&cpu, &gpu, args, 55, shape);
    int n = shape->B * shape->T, S = cpu.fp8.num_slots;
    int* inputs = (int*)malloc((size_t)n * sizeof(int));
    int* targets = (int*)malloc((size_t)n * sizeof(int));
    Rng rng;
    rng_seed(&rng, 56);
    random_batch(inputs, targets, n, shape->V, &rng);
    float norm;
    train_step(&cpu, inputs, targets, shape->B, shape->T, 0, &norm);
    gpt2_save_checkpoint(&cpu, dir, 1, 0, NULL, NULL);
    gpu::GPT2 resumed;
    GPT2Config config = shape_config(shape);
    gpu::gpt2_gpu_allocate(&resumed, &config, &args, shape->B, shape->T, &one_process);
    uint64_t rng_state;
    size_t shard_index, shard_position;
    gpt2_load_checkpoint(&resumed, dir, 1, &rng_state, &shard_index, &shard_position, NULL);
    Fp8BlockScaleRange* device_ranges = (Fp8BlockScaleRange*)malloc((size_t)S * sizeof(Fp8BlockScaleRange));
    cudaCheck(cudaMemcpy(device_ranges, resumed.fp8_block_scale_range, (size_t)S * sizeof(Fp8BlockScaleRange),
                         cudaMemcpyDeviceToHost));
    float* device_window = download_floats(resumed.fp8_current_amax, (size_t)S);
    size_t range_bytes = (size_t)S * sizeof(Fp8BlockScaleRange);
    CHECK(memcmp(resumed.fp8_block_scale_range_host, cpu.fp8_block_scale_range, range_bytes) == 0 &&
              memcmp(device_ranges, cpu.fp8_block_scale_range, range_bytes) == 0,
          "%s: CPU checkpoint on the GPU: block scale ranges restored, on the host and the device", recipe);
    CHECK(memcmp(resumed.fp8_window_amax, cpu.fp8_window_amax, (size_t)S * 4) == 0 &&
              memcmp(device_window, cpu.fp8_window_amax, (size_t)S * 4) == 0,
          "%s: CPU checkpoint on the GPU: window amaxes restored, on the host and the device", recipe);
    free(device_ranges);
    free(device_window);
    gpt2_cast_weights_fp8(&resumed, 0);
    float gpu_loss = eval_forward(&resumed, inputs, targets, shape->B, shape->T);
    eval_forward(&cpu, inputs, targets, shape->B, shape->T);  // the CPU's logits of the same forward, for the tolerance
    char what[64];
    snprintf(what, sizeof(what), "%s: CPU checkpoint on the GPU: ", recipe);
    check_loss(&cpu, gpu_loss, n, 0, what);
    gpt2_save_checkpoint(&resumed, dir, 2, 0, NULL, NULL);
    cpu::GPT2 back;
    cpu_model_allocate(&back, &config, &args, shape->B, shape->T);
    gpt2_load_checkpoint(&back, dir, 2, &rng_state, &shard_index, &shard_position, NULL);
    CHECK(memcmp(back.master_memory, cpu.master_memory, cpu.num_parameters * 4) == 0 &&
              memcmp(back.m_memory, cpu.m_memory, cpu.shard.count * 4) == 0 &&
              memcmp(back.v_memory, cpu.v_memory, cpu.shard.count * 4) == 0,
          "%s: CPU -> GPU -> CPU: masters and AdamW moments bit for bit", recipe);
    CHECK(memcmp(back.fp8.memory, cpu.fp8.memory, cpu.fp8.num_floats * 4) == 0 &&
              memcmp(back.fp8_stats, cpu.fp8_stats, (size_t)S * sizeof(Fp8QuantStats)) == 0 &&
              memcmp(back.fp8_last_amax, cpu.fp8_last_amax, (size_t)S * 4) == 0 &&
              memcmp(back.fp8_window_amax, cpu.fp8_window_amax, (size_t)S * 4) == 0 &&
              memcmp(back.fp8_block_scale_range, cpu.fp8_block_scale_range, range_bytes) == 0,
          "%s: CPU -> GPU -> CPU: FP8 metadata, counters, amaxes and block scale ranges bit for bit", recipe);
    gpt2_free(&back);
    gpu::gpt2_free(&resumed);
    free(inputs);
    free(targets);
    gpt2_free(&cpu);
}

static void test_fp8_blockwise_checkpoints(void) { fp8_block_checkpoints("blockwise"); }
static void test_fp8_mxfp8_checkpoints(void) { fp8_block_checkpoints("mxfp8"); }

// The encoder backward's bucket loop strides by gridDim.y when there are more buckets than one grid holds (65535):
// run the kernel with a grid of 5 bucket rows over a batch of 384 positions with many distinct tokens, against the
// CPU's encoder_backward (both add each token's positions in position order from 0: bit-identical).
static void test_encoder_backward_bucket_stride(void) {
    const int B = 1, T = 384, C = 768, V = 1024;
    int n = B * T;
    Rng rng;
    rng_seed(&rng, 45);
    int* tokens = (int*)malloc((size_t)n * sizeof(int));
    for (int i = 0; i < n; i++) { tokens[i] = (int)(rng_next_u64(&rng) % (i % 3 == 0 ? 7 : V)); }  // repeats too
    uint16_t* dout_bits = (uint16_t*)malloc((size_t)n * C * 2);
    float* dout = (float*)malloc((size_t)n * C * sizeof(float));
    for (size_t i = 0; i < (size_t)n * C; i++) {
        dout_bits[i] = bf16_from_float(rng_uniform(&rng) * 2.0f - 1.0f);
        dout[i] = bf16_to_float(dout_bits[i]);
    }
    float* want_wte = (float*)calloc((size_t)V * C, sizeof(float));
    float* want_wpe = (float*)calloc((size_t)T * C, sizeof(float));
    cpu::encoder_backward(want_wte, want_wpe, dout, tokens, B, T, C);
    int *positions = (int*)malloc((size_t)n * 4), *start = (int*)malloc((size_t)(n + 1) * 4);
    int *bucket_token = (int*)malloc((size_t)n * 4), *count = (int*)malloc((size_t)V * 4);
    int buckets = encoder_buckets(tokens, n, V, positions, start, bucket_token, count);
    floatX* d_dout;
    float* d_dwte;
    int *d_positions, *d_start, *d_token, *d_count;
    cudaCheck(cudaMalloc(&d_dout, (size_t)n * C * 2));
    cudaCheck(cudaMalloc(&d_dwte, (size_t)V * C * 4));
    cudaCheck(cudaMalloc(&d_positions, (size_t)n * 4));
    cudaCheck(cudaMalloc(&d_start, (size_t)(n + 1) * 4));
    cudaCheck(cudaMalloc(&d_token, (size_t)n * 4));
    cudaCheck(cudaMalloc(&d_count, 4));
    cudaCheck(cudaMemcpy(d_dout, dout_bits, (size_t)n * C * 2, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemset(d_dwte, 0, (size_t)V * C * 4));
    cudaCheck(cudaMemcpy(d_positions, positions, (size_t)n * 4, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_start, start, (size_t)(buckets + 1) * 4, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_token, bucket_token, (size_t)buckets * 4, cudaMemcpyHostToDevice));
    cudaCheck(cudaMemcpy(d_count, &buckets, 4, cudaMemcpyHostToDevice));
    dim3 grid(blocks_for(C, 256), 5);  // 5 bucket rows for ~300 buckets: every block strides
    encoder_backward_wte_kernel<<<grid, 256>>>(d_dwte, d_dout, d_positions, d_start, d_token, d_count, C);
    cudaCheck(cudaGetLastError());
    float* got = download_floats(d_dwte, (size_t)V * C);
    CHECK(buckets > 5 * 10, "many buckets per grid row (%d)", buckets);
    CHECK(memcmp(got, want_wte, (size_t)V * C * sizeof(float)) == 0,
          "dwte through 5 strided bucket rows is bit-identical to the CPU's encoder backward (R1)");
    free(got);
    free(tokens);
    free(dout_bits);
    free(dout);
    free(want_wte);
    free(want_wpe);
    free(positions);
    free(start);
    free(bucket_token);
    free(count);
    cudaCheck(cudaFree(d_dout));
    cudaCheck(cudaFree(d_dwte));
    cudaCheck(cudaFree(d_positions));
    cudaCheck(cudaFree(d_start));
    cudaCheck(cudaFree(d_token));
    cudaCheck(cudaFree(d_count));
}

// GELU and LayerNorm inside the FP8 casts (llmc/gelu_fp8.cuh, llmc/layernorm_fp8.cuh; the forward's at -r 0, GELU's
// backward at any -r) against gelu_forward / gelu_backward / layernorm_forward and the casts after them
// (-fp8_fused_casts 0), with `recipe`'s scales: delayed scaling's from the history, or current scaling's from an amax
// pass over the values the fused cast makes (the separate path's over the tensor it wrote). Three training steps,
// with the diagnostics counters on, give the same losses, gradients, master and bf16 weights, FP8 state (histories,
// scales), current scaling's tensor amaxes and counts, bit for bit (R1: the same functions of the same bf16 values,
// and a maximum does not depend on the order). That the fused kernels are what ran: the fused model's fch_gelu, ln1
// and ln2 still hold the bytes they were filled with, the other's do not. At `shape`, weights from `seed`, batches
// from seed + 1.
static void fused_fp8_casts_bit_identical_at(const TestShape* shape, uint64_t seed, const char* recipe) {
    cpu::GPT2 cpu_fused, cpu_separate;  // only for the same initial weights on both GPU models
    gpu::GPT2 fused, separate;
    int current = strcmp(recipe, "current") == 0;
    const char* flags = current ? "-precision fp8 -fp8_recipe current -attn plain -r 0"
                                : "-precision fp8 -fp8_amax_history_len 16 -attn plain -r 0";
    char separate_flags[128];
    snprintf(separate_flags, sizeof(separate_flags), "%s -fp8_fused_casts 0", flags);
    make_shaped_pair(&cpu_fused, &fused, test_args_line(flags), seed, shape);
    make_shaped_pair(&cpu_separate, &separate, test_args_line(separate_flags), seed, shape);
    int L = fused.config.num_layers;
    for (int l = 0; l < L; l++) {
        CHECK(gpu::gelu_in_fcproj_cast(&fused, l) && gpu::gelu_in_fc_grad_output_cast(&fused, l) &&
                  !gpu::gelu_in_fcproj_cast(&separate, l) && !gpu::gelu_in_fc_grad_output_cast(&separate, l),
              "block %d: GELU inside both casts in the fused model, in neither in the other", l);
        CHECK(gpu::layernorm_in_input_cast(&fused, l, LINEAR_QKV) && gpu::layernorm_in_input_cast(&fused, l, LINEAR_FC) &&
                  !gpu::layernorm_in_input_cast(&separate, l, LINEAR_QKV) &&
                  !gpu::layernorm_in_input_cast(&separate, l, LINEAR_FC),
              "block %d: ln1 and ln2 inside the casts of qkv and fc in the fused model, in neither in the other", l);
    }
    gpu::GPT2* models[2] = {&fused, &separate};
    for (int m = 0; m < 2; m++) {
        models[m]->fp8_collect_stats = 1;
        cudaCheck(cudaMemset(models[m]->fp8_stats, 0, (size_t)models[m]->fp8.num_slots * sizeof(Fp8QuantStats)));
    }
    made_inside_fill(models);  // (the bf16 outputs the fused casts make inside)
    int BT = shape->B * shape->T;
    int* inputs = (int*)malloc((size_t)BT * sizeof(int));
    int* targets = (int*)malloc((size_t)BT * sizeof(int));
    Rng rng;
    rng_seed(&rng, seed + 1);
    for (int step = 0; step < 3; step++) {
        random_batch(inputs, targets, BT, shape->V, &rng);
        float norm[2], loss[2];
        for (int m = 0; m < 2; m++) {
            loss[m] = train_step(models[m], inputs, targets, shape->B, shape->T, step, &norm[m]);
        }
        CHECK(memcmp(&loss[0], &loss[1], 4) == 0 && memcmp(&norm[0], &norm[1], 4) == 0,
              "%s C %d step %d: loss %.9g norm %.9g fused, %.9g %.9g separate", recipe, shape->C, step, loss[0],
              norm[0], loss[1], norm[1]);
    }
    free(inputs);
    free(targets);
    cudaCheck(cudaDeviceSynchronize());
    size_t P = fused.num_parameters;
    CHECK(!current || (fused.fp8_current_amax && separate.fp8_current_amax), "current scaling keeps its tensor amaxes");
    struct {
        const char* what;
        const void *a, *b;
        size_t bytes;
    } same[] = {
        {"gradients", fused.grads_memory, separate.grads_memory, P * 4},
        {"master weights", fused.master_memory, separate.master_memory, P * 4},
        {"bf16 weights", fused.params_memory, separate.params_memory, P * 2},
        {"FP8 state (histories, scales, scale_invs)", fused.fp8.memory, separate.fp8.memory, fused.fp8.num_floats * 4},
        {"diagnostics counts", fused.fp8_stats, separate.fp8_stats,
         (size_t)fused.fp8.num_slots * sizeof(Fp8QuantStats)},
        {"current scaling's tensor amaxes", fused.fp8_current_amax, separate.fp8_current_amax,
         current ? (size_t)fused.fp8.num_slots * 4 : 0},
    };
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        if (same[i].bytes == 0) { continue; }
        uint8_t* a = (uint8_t*)malloc(same[i].bytes);
        uint8_t* b = (uint8_t*)malloc(same[i].bytes);
        cudaCheck(cudaMemcpy(a, same[i].a, same[i].bytes, cudaMemcpyDeviceToHost));
        cudaCheck(cudaMemcpy(b, same[i].b, same[i].bytes, cudaMemcpyDeviceToHost));
        CHECK(memcmp(a, b, same[i].bytes) == 0, "%s C %d, after 3 steps: %s bit-identical, GELU and LayerNorm fused or "
              "not (R1)", recipe, shape->C, same[i].what);
        free(a);
        free(b);
    }
    made_inside_check(models, recipe);
    gpt2_free(&fused);
    gpt2_free(&separate);
    gpt2_free(&cpu_fused);
    gpt2_free(&cpu_separate);
}

static void test_fused_fp8_casts_bit_identical(void) {
    fused_fp8_casts_bit_identical_at(&tiny_shape, 23, "delayed");
    fused_fp8_casts_bit_identical_at(&tiny_shape, 23, "current");
}

// The same at a second width (issue 55: the kernels' own dev checks cover other widths, the trainer only ran C 64):
// C 384, 6 heads of 64, B*T 128 (the fused casts' 64-row tiles twice)
static void test_medium_fused_fp8_casts_bit_identical_c384(void) {
    static const TestShape c384_shape = {2, 64, 2, 384, 6, TV};
    fused_fp8_casts_bit_identical_at(&c384_shape, 25, "delayed");
    fused_fp8_casts_bit_identical_at(&c384_shape, 25, "current");
}

// GELU's two paths (llmc/gelu.cuh): the 16-byte one (aligned pointers) and the element-by-element one (a pointer 2
// bytes off 16, and every tensor's tail past a multiple of 8) compute each element alike, so they give the same bits
// (R1), forward and backward, the backward also in place (dinp = dout, as the trainer calls it). N = 8 * 1000 + 5: a
// tail of 5 on the aligned path.
static void test_gelu_vector_and_element_paths_agree(void) {
    const size_t n = 8 * 1000 + 5;
    Rng rng;
    rng_seed(&rng, 46);
    uint16_t* host = (uint16_t*)malloc(2 * n * 2);  // inp, then dout
    for (size_t i = 0; i < 2 * n; i++) { host[i] = bf16_from_float((rng_uniform(&rng) * 2.0f - 1.0f) * 6.0f); }
    // each buffer has room for n + 1 values: the aligned view starts at 0, the unaligned one at 1
    floatX *d_inp, *d_dout, *d_out;
    cudaCheck(cudaMalloc(&d_inp, (n + 1) * 2));
    cudaCheck(cudaMalloc(&d_dout, (n + 1) * 2));
    cudaCheck(cudaMalloc(&d_out, (n + 1) * 2));
    uint16_t* got[2][3];  // [aligned, unaligned][forward, backward, backward in place]
    for (int offset = 0; offset < 2; offset++) {
        floatX *inp = d_inp + offset, *dout = d_dout + offset, *out = d_out + offset;
        CHECK(gelu_vectorized(out, inp, dout) == (offset == 0), "offset %d: the 16-byte path iff aligned", offset);
        cudaCheck(cudaMemcpy(inp, host, n * 2, cudaMemcpyHostToDevice));
        cudaCheck(cudaMemcpy(dout, host + n, n * 2, cudaMemcpyHostToDevice));
        for (int pass = 0; pass < 3; pass++) {
            if (pass == 0) { gelu_forward(out, inp, n, 0); }
            if (pass == 1) { gelu_backward(out, inp, dout, n, 0); }
            if (pass == 2) { gelu_backward(dout, inp, dout, n, 0); }
            got[offset][pass] = (uint16_t*)malloc(n * 2);
            cudaCheck(cudaMemcpy(got[offset][pass], pass == 2 ? dout : out, n * 2, cudaMemcpyDeviceToHost));
        }
    }
    const char* what[3] = {"forward", "backward", "backward in place"};
    for (int pass = 0; pass < 3; pass++) {
        CHECK(memcmp(got[0][pass], got[1][pass], n * 2) == 0, "GELU %s: the 16-byte and the element paths agree (R1)",
              what[pass]);
        CHECK(memcmp(got[0][pass], got[0][pass == 2 ? 1 : pass], n * 2) == 0, "GELU %s: in place as out of place",
              what[pass]);
    }
    for (int offset = 0; offset < 2; offset++) {
        for (int pass = 0; pass < 3; pass++) { free(got[offset][pass]); }
    }
    free(host);
    cudaCheck(cudaFree(d_inp));
    cudaCheck(cudaFree(d_dout));
    cudaCheck(cudaFree(d_out));
}

// ----------------------------------------------------------------------------
// cuDNN attention and recompute

// A GPU model of `config` with the given options and weights (P fp32, ParameterTensors' order), FP8 weights cast.
static void gpu_model(gpu::GPT2* gpu, const GPT2Config* config, const TrainArgs* args, int B, int T, const float* params) {
    gpu::gpt2_gpu_allocate(gpu, config, args, B, T, &one_process);
    gpu::gpt2_upload_params(gpu, params);
    gpt2_cast_weights_fp8(gpu, 1);
    cudaCheck(cudaDeviceSynchronize());
}

// The medium shape: loops over C > 256, V > 512 and T > 256 blocks meet the CPU, and cuDNN's kernels see real tiles
enum { MB = 2, MT = 256, MV = 1024 };


#ifdef ENABLE_CUDNN
// The trainer with cuDNN attention against the CPU reference (BF16): the loss, and every parameter tensor's gradient
// after one forward and backward, with the rules and counts of test_bf16_forward_backward (llmc/tolerance.h counts the
// plain attention's roundings; cuDNN's flash attention keeps the scores and dP in fp32, so it rounds no more).
static void test_cudnn_attention_against_cpu(void) {
    GPT2Config config = config_of(2, 768, 12, MV, MT);
    TrainArgs args = test_args_with("bf16", "cudnn", "0");
    cpu::GPT2 cpu;
    cpu_model_allocate(&cpu, &config, &args, MB, MT);
    Rng rng;
    rng_seed(&rng, 21);
    gpt2_init_parameters(&cpu.master, cpu.param_sizes, &config, &rng);
    gpt2_cast_weights_fp8(&cpu, 1);  // the bf16 parameters the CPU's layers read, from the masters
    gpu::GPT2 gpu;
    gpu_model(&gpu, &config, &args, MB, MT, cpu.master_memory);
    CHECK(gpu.attention_kind == ATTENTION_CUDNN && gpu.acts.att == NULL && gpu.acts.attention_stats != NULL,
          "the model runs cuDNN attention and keeps no attention matrices");
    static int inputs[MB * MT], targets[MB * MT];
    random_batch(inputs, targets, MB * MT, MV, &rng);
    float eval_loss = eval_forward(&gpu, inputs, targets, MB, MT);  // the graph without statistics
    float gpu_loss = forward_backward(&cpu, &gpu, inputs, targets, MB, MT);
    // the graph without statistics may run another kernel: the two GPU forwards part at block 0's attention output,
    // so R4 counts the roundings from there to the logits (those of block 0's atty onward)
    Gpt2Roundings paths = roundings_of(&cpu);
    int n = gpt2_roundings_logits(&paths) - gpt2_roundings_forward(&paths, 0, GPT2_ATT);
    double max_z = max_abs(cpu.acts.logits, (size_t)MB * MT * cpu.config.padded_vocab_size);
    char why[96];
    snprintf(why, sizeof(why), "R4 through the log-softmax, %d roundings, max|z| %.2f, %d tokens", n, max_z, MB * MT);
    CHECK_WITHIN(fabs((double)eval_loss - gpu_loss) / gpu_loss,
                 (tolerance_mean_loss(tolerance_chain_max(n, BF16_ULP) * max_z, MB * MT) +
                  tolerance_sum_orders(MV) + 4.0 * FP32_ULP * gpu_loss) / gpu_loss,
                 why, "evaluation forward loss %.7f, training forward %.7f: relative difference", eval_loss, gpu_loss);
    check_loss(&cpu, gpu_loss, MB * MT, 0, "");  // the plain attention's counts: cuDNN's rounds no more
    check_gradients(&gpu, &cpu);
    gpt2_free(&cpu);
}

// Without -attn, a shape cuDNN's SDPA cannot run (head size 1024: no cuDNN 9 engine takes more than 256) runs the plain
// attention (gpt2_gpu_init asked cudnn_attention_supported), and a shape it runs keeps cuDNN's.
static void test_cudnn_unsupported_head_size_falls_back(void) {
    static const struct { int C, NH, want; } cases[] = {{1024, 1, ATTENTION_PLAIN}, {256, 4, ATTENTION_CUDNN}};
    for (int i = 0; i < 2; i++) {
        GPT2Config config = config_of(1, cases[i].C, cases[i].NH, 200, 64);
        TrainArgs args = test_args_with("bf16", "plain", "0");
        args.attention = ATTENTION_DEFAULT;  // no -attn: cuDNN where it can run the shape
        gpu::GPT2 gpu;
        gpu::gpt2_gpu_allocate(&gpu, &config, &args, 1, 64, &one_process);
        CHECK(gpu.attention_kind == cases[i].want && (gpu.cudnn_attention != NULL) == (cases[i].want == ATTENTION_CUDNN),
              "head size %d: attention %s, want %s", cases[i].C / cases[i].NH,
              gpu.attention_kind == ATTENTION_CUDNN ? "cudnn" : "plain", cases[i].want == ATTENTION_CUDNN ? "cudnn" : "plain");
        gpt2_free(&gpu);
    }
}
#endif

// FP8 attention in the trainer (-fp8_attention 1, delayed scaling), at GPT-2's head size 64, one training forward and
// backward on the tensors the trainer makes: (1) the last layer's q, k, v codes are the E4M3 cast of the trainer's own
// bf16 qkv with the qkv GEMM's output scale, byte for byte (fp8_cast_amax), and that slot's row 0 is max |qkv| over
// the layers, exactly; (2) every layer's output, the bf16 tensor attproj and the backward read, is cuDNN's E4M3
// output dequantized (an E4M3 value times the output slot's scale_inv) within llmc/attention_fp8_reference.h's
// bound of the double reference from those codes, element by element, and within twice that of the CPU trainer's
// emulation (attention_forward with AttentionFp8: the normalized weights quantized, fp32) on the same codes; (3) the
// softmax output's row 0 is 1 and the output's is max |o| within the reference's largest pre; (4) block 0's BF16
// backward (cuDNN's, on the bf16 q, k, v, the dequantized output and the FP8 forward's statistics) against the CPU's
// attention_backward on the same tensors (the weights from the bf16 q and k with the FP8 forward's max and sum,
// D from the stored output): relative L2 within 2^-6 (R5 over what differs: cuDNN rounds P and dS to bf16 before
// their GEMMs and dq, dk, dv to bf16 after, one rounding of 2^-9 each, and its statistics are the fp32 log-sum-exp
// of the CPU's within a few fp32 ulps; sqrt(3) * 2^-9 = 0.0034, 2^-6 leaves a factor 4). The whole trainers with the
// flag meet in gpu_check's xcheck (fp8_delayed_attention, fp8_delayed_attention_mha).
// With -fp8_attention 2 (TE's fp8_mha) the same, where qkv, what the backward reads, is then q, k, v's E4M3 codes
// dequantized in its place: every layer's qkv is on the E4M3 grid (each element bf16(code value * scale_inv), the
// code the cast of the element itself), and the qkv slot's row 0, the GEMM output's amax, is within one E4M3
// rounding (2^-4 relative, and one bf16 rounding) of max |qkv|; (4) then differentiates those.
#ifdef ENABLE_CUDNN
static void fp8_attention_against_cpu(int mode) {
    const TestShape shape = {2, 64, 2, 128, 2, TV};  // head size 64
    int B = shape.B, T = shape.T, C = shape.C, NH = shape.NH, L = shape.L, HS = C / NH;
    size_t BTC = (size_t)B * T * C, BNT = (size_t)B * NH * T;
    char line[160];
    snprintf(line, sizeof(line), "-precision fp8 -fp8_amax_history_len 16 -attn cudnn -fp8_attention %d", mode);
    TrainArgs args = test_args_line(line);
    cpu::GPT2 cpu;
    gpu::GPT2 gpu;
    make_shaped_pair(&cpu, &gpu, args, 57, &shape);
    CHECK(gpu.fp8.num_modules == linear_num_modules(L) + L && cpu.fp8.num_modules == gpu.fp8.num_modules,
          "FP8 modules: GPU %d, CPU %d, want %d", gpu.fp8.num_modules, cpu.fp8.num_modules, linear_num_modules(L) + L);
    Rng rng;
    rng_seed(&rng, 58);
    int* inputs = (int*)malloc(BTC / C * sizeof(int));
    int* targets = (int*)malloc(BTC / C * sizeof(int));
    random_batch(inputs, targets, B * T, shape.V, &rng);
    forward_backward(&cpu, &gpu, inputs, targets, B, T);
    Fp8Meta host = fp8_meta_host_copy(&gpu);  // scales 1: the first step's
    double attn_scale = (double)(1.0f / sqrtf((float)HS));
    float qkv_max = 0.0f;
    double o_ref_max = 0.0, pre_max = 0.0;
    float* cpu_out = (float*)malloc(BTC * sizeof(float));
    float* cpu_pre = (float*)malloc((size_t)B * NH * T * T * sizeof(float));
    float* cpu_att = (float*)malloc((size_t)B * NH * T * T * sizeof(float));
    float* qkv_values = (float*)malloc(BTC * 3 * sizeof(float));
    double* qkv_ref = (double*)malloc(BTC * 3 * sizeof(double));
    double* out_ref = (double*)malloc(BTC * sizeof(double));
    double* pre = (double*)malloc(BTC * sizeof(double));
    double* lse = (double*)malloc(BNT * sizeof(double));
    double* ds = (double*)malloc(BNT * sizeof(double));
    uint8_t* codes = (uint8_t*)malloc(BTC * 3);
    float* qkv0 = NULL;
    float* atty0 = NULL;
    for (int l = 0; l < L; l++) {
        int qkv_slot = fp8_meta_fwd_slot(&host, l * LINEARS_PER_BLOCK + LINEAR_QKV, FP8_FWD_OUTPUT);
        int s_slot = fp8_meta_fwd_slot(&host, fp8_attention_module(L, l), FP8_ATTENTION_S);
        int o_slot = fp8_meta_fwd_slot(&host, l * LINEARS_PER_BLOCK + LINEAR_ATTPROJ, FP8_FWD_INPUT);
        float scale = host.scale[qkv_slot], descale = host.scale_inv[qkv_slot];
        float* qkv = download_bf16(gpu.acts.qkv + (size_t)l * BTC * 3, BTC * 3);
        float* atty = download_bf16(gpu.acts.atty + (size_t)l * BTC, BTC);
        size_t on_grid = 0;
        for (size_t i = 0; i < BTC * 3; i++) {
            codes[i] = fp8_from_float(qkv[i] * scale, FP8_E4M3);
            qkv_values[i] = fp8_to_float(codes[i], FP8_E4M3) * descale;  // what the CPU's cast gives (fp32)
            qkv_ref[i] = (double)fp8_to_float(codes[i], FP8_E4M3) * (double)descale;
            qkv_max = fp8_amax_merge(qkv_max, fabsf(qkv[i]));
            on_grid += qkv[i] == bf16_round(qkv_values[i]);
        }
        if (mode == FP8_ATTENTION_MHA) {
            CHECK(on_grid == BTC * 3, "block %d: %zu of %zu q, k, v the backward reads are not their E4M3 values", l,
                  BTC * 3 - on_grid, BTC * 3);
        } else {
            CHECK(on_grid < BTC * 3, "block %d: the backward reads the E4M3 q, k, v, not the GEMM's output", l);
        }
        if (l == L - 1) {  // (1) the device's codes are the last layer's
            uint8_t* device_codes = download_bytes(gpu.attention_qkv_fp8, BTC * 3);
            CHECK(memcmp(device_codes, codes, BTC * 3) == 0, "block %d: q, k, v codes differ from the E4M3 cast of "
                  "the trainer's qkv", l);
            free(device_codes);
        }
        // (2) the output against the reference and against the CPU's emulation on the same codes
        double descale_s = (double)host.scale_inv[s_slot], descale_o = (double)host.scale_inv[o_slot];
        attention_fp8_reference_forward(out_ref, lse, ds, pre, qkv_ref, B, T, C, NH, attn_scale, descale_s);
        cpu::AttentionFp8 fp8 = {qkv_values, host.scale[s_slot], host.scale_inv[s_slot], FP8_E4M3, 0.0f};
        cpu::attention_forward(cpu_out, cpu_pre, cpu_att, qkv, B, T, C, NH, &fp8);
        double worst_ref = 0.0, worst_cpu = 0.0;
        int off_grid = 0;
        for (size_t i = 0; i < BTC; i++) {
            double bound = attention_fp8_output_bound(out_ref[i], pre[i], descale_o);
            worst_ref = fmax(worst_ref, fabs((double)atty[i] - out_ref[i]) / bound);
            double cpu_o = (double)bf16_round(fp8_round(cpu_out[i] * host.scale[o_slot], FP8_E4M3) * host.scale_inv[o_slot]);
            worst_cpu = fmax(worst_cpu, fabs((double)atty[i] - cpu_o) / (2.0 * bound));
            float code_value = atty[i] * host.scale[o_slot];
            off_grid += fp8_round(code_value, FP8_E4M3) != code_value;
            o_ref_max = fmax(o_ref_max, fabs(out_ref[i]));
            pre_max = fmax(pre_max, pre[i]);
        }
        CHECK(off_grid == 0, "block %d: %d outputs are not E4M3 values times the output's scale_inv", l, off_grid);
        CHECK_WITHIN(worst_ref, 1.0, "llmc/attention_fp8_reference.h's bound", "block %d output vs the double "
                     "reference: largest |error| / bound", l);
        CHECK_WITHIN(worst_cpu, 1.0, "each side within its bound of the reference", "block %d output vs the CPU's "
                     "emulation: largest |difference| / (2 bound)", l);
        if (l == 0) {
            qkv0 = qkv;
            atty0 = atty;
        } else {
            free(qkv);
            free(atty);
        }
    }
    // (3) the amaxes the step recorded
    float qkv_row0 = fp8_amax_merge(host.amax_history[fp8_meta_fwd_slot(&host, LINEAR_QKV, FP8_FWD_OUTPUT)],
                                    host.amax_history[fp8_meta_fwd_slot(&host, LINEARS_PER_BLOCK + LINEAR_QKV,
                                                                        FP8_FWD_OUTPUT)]);
    if (mode == FP8_ATTENTION_MHA) {
        CHECK_WITHIN(fabs((double)qkv_row0 - qkv_max), (0x1p-4 + 0x1p-8) * fmax(qkv_row0, qkv_max),
                     "one E4M3 rounding (2^-4 of the larger) and one bf16 (2^-9, with room)", "the qkv output slots' "
                     "row 0 %g against max |qkv| %g, q, k, v in E4M3", qkv_row0, qkv_max);
    } else {
        CHECK(qkv_row0 == qkv_max, "the qkv output slots' row 0 %g, want max |qkv| %g", qkv_row0, qkv_max);
    }
    float s_row0 = 0.0f, o_row0 = 0.0f;
    for (int l = 0; l < L; l++) {
        s_row0 = fmaxf(s_row0, host.amax_history[fp8_meta_fwd_slot(&host, fp8_attention_module(L, l), FP8_ATTENTION_S)]);
        o_row0 = fmaxf(o_row0, host.amax_history[fp8_meta_fwd_slot(&host, l * LINEARS_PER_BLOCK + LINEAR_ATTPROJ,
                                                                   FP8_FWD_INPUT)]);
    }
    CHECK_WITHIN(fabs((double)s_row0 - 1.0), 8.0 * FP32_ULP, "a causal first row: exp(0)", "softmax output amax %g",
                 s_row0);
    CHECK_WITHIN(fabs((double)o_row0 - o_ref_max), pre_max, "the reference's largest pre", "output amax %g vs the "
                 "reference's max |o| %g", o_row0, o_ref_max);
    // (4) block 0's backward against the CPU's on the same tensors: the CPU's weights from the last forward call's
    // (block 1's) would be the wrong ones, so block 0's again
    {
        int s_slot = fp8_meta_fwd_slot(&host, fp8_attention_module(L, 0), FP8_ATTENTION_S);
        int qkv_slot = fp8_meta_fwd_slot(&host, LINEAR_QKV, FP8_FWD_OUTPUT);
        for (size_t i = 0; i < BTC * 3; i++) {
            qkv_values[i] = fp8_round(qkv0[i] * host.scale[qkv_slot], FP8_E4M3) * host.scale_inv[qkv_slot];
        }
        cpu::AttentionFp8 fp8 = {qkv_values, host.scale[s_slot], host.scale_inv[s_slot], FP8_E4M3, 0.0f};
        cpu::attention_forward(cpu_out, cpu_pre, cpu_att, qkv0, B, T, C, NH, &fp8);
        float* dout = download_bf16(gpu.dbtc2, BTC);
        float* dqkv_gpu = download_bf16(gpu.dqkv, BTC * 3);
        float* dqkv_cpu = (float*)calloc(BTC * 3, sizeof(float));
        float* dpre = (float*)calloc((size_t)B * NH * T * T, sizeof(float));
        float* datt = (float*)calloc((size_t)B * NH * T * T, sizeof(float));
        cpu::attention_backward(dqkv_cpu, dpre, datt, dout, qkv0, cpu_att, atty0, B, T, C, NH);
        double rel = relative_l2(dqkv_gpu, dqkv_cpu, BTC * 3);
        CHECK_WITHIN(rel, 0x1p-6, "R5: bf16 P, dS and dq dk dv in cuDNN, x4", "block 0 dq dk dv vs the CPU's "
                     "attention_backward on the same tensors: relative L2");
        free(dout);
        free(dqkv_gpu);
        free(dqkv_cpu);
        free(dpre);
        free(datt);
    }
    free(qkv0);
    free(atty0);
    free(cpu_out);
    free(cpu_pre);
    free(cpu_att);
    free(qkv_values);
    free(qkv_ref);
    free(out_ref);
    free(pre);
    free(lse);
    free(ds);
    free(codes);
    free(inputs);
    free(targets);
    fp8_meta_free(&host);
    gpt2_free(&gpu);
    gpt2_free(&cpu);
}
static void test_fp8_attention_against_cpu(void) { fp8_attention_against_cpu(FP8_ATTENTION_DPA); }
static void test_fp8_attention_mha_against_cpu(void) { fp8_attention_against_cpu(FP8_ATTENTION_MHA); }
#endif

// -r 1 and -r 2 recompute GELU and LayerNorm in the backward from what the forward kept: the loss, every gradient and
// every amax the step records must be the bits of -r 0 (the FP8 casts of the recomputed inputs must not record
// again), and so must the diagnostics' counts (and the window amaxes and block scale ranges where the recipe keeps
// them). In FP8 this also pins the x^T the forward keeps for an FP8 wgrad (-r 0: every FP8 wgrad reads one) to the
// x^T the backward casts from the remade input (-r 1: fcproj's, -r 2: qkv's and fc's too), and the layer slices of
// ln1, ln2 and fch_gelu: with the first and last of 3 blocks in BF16 (-fp8_bf16_first_last 1), blocks 0 and 2 keep
// slices of their own and block 1 writes the shared one; a slice two layers wrote would give -r 0 other gradients
// than -r 2, which remakes each before use. Blockwise (where this GPU runs its GEMMs): the columnwise copy the
// forward's cast keeps is the backward's cast of the remade input, and the forward's cast of it records exactly what
// the backward's cast records (the same counts, window amax and scale range). For each attention this build has, on
// a small shape cuDNN supports (head size 64): BF16, FP8 delayed, FP8 current, FP8 with BF16 ends, FP8 blockwise, FP8
// mxfp8 (issue 55 item 3: the block recipes had never run with recompute on a GPU).
// A CPU model holding initial weights from `seed` (BF16; freed with gpt2_free) and a batch of B*T tokens after them,
// for tests that start several GPU models from the same weights
static void cpu_initial_weights_and_batch(cpu::GPT2* cpu, const GPT2Config* config, int B, int T, uint64_t seed,
                                          int* inputs, int* targets) {
    cpu::ModelOptions opt;
    memset(&opt, 0, sizeof(opt));
    opt.config = *config;
    opt.precision = PRECISION_BF16;
    fp8_recipe_default(&opt.recipe);
    gpt2_allocate(cpu, &opt, B, T);
    Rng rng;
    rng_seed(&rng, seed);
    gpt2_init_parameters(&cpu->master, cpu->param_sizes, config, &rng);
    random_batch(inputs, targets, B * T, config->vocab_size, &rng);
}

static void test_recompute_bit_identical(void) {
    const int B = 2, T = 64;  // B*T = 128: a multiple of 64 for the FP8 casts
    typedef struct {
        const char* name;
        const char* flags;
        int layers;
    } Variant;
    const Variant variants[] = {
        {"bf16", "-precision bf16", 2},
        {"fp8", "-precision fp8 -fp8_amax_history_len 16", 2},
        {"fp8 current", "-precision fp8 -fp8_recipe current", 2},
        {"fp8 bf16 ends", "-precision fp8 -fp8_amax_history_len 16 -fp8_bf16_first_last 1", 3},
        {"fp8 blockwise", "-precision fp8 -fp8_recipe blockwise", 2},
        {"fp8 mxfp8", "-precision fp8 -fp8_recipe mxfp8", 2},
    };
    const int num_variants = (int)(sizeof(variants) / sizeof(variants[0]));
    char why[256];
    int block_gemms = gemm_block_scaling_check(why, sizeof(why)) == 0;
#ifdef ENABLE_CUDNN
    const char* attentions[2] = {"plain", "cudnn"};
    int num_attentions = 2;
#else
    const char* attentions[1] = {"plain"};
    int num_attentions = 1;
#endif
    for (int v = 0; v < num_variants; v++) {
        if (strstr(variants[v].flags, "blockwise") && !block_gemms) {
            printf("  SKIP %s: %s\n", variants[v].name, why);
            continue;
        }
        GPT2Config config = config_of(variants[v].layers, 256, 4, 200, 64);
        cpu::GPT2 cpu;  // only for the initial weights
        int inputs[2 * 64], targets[2 * 64];
        cpu_initial_weights_and_batch(&cpu, &config, B, T, 31, inputs, targets);
        for (int a = 0; a < num_attentions; a++) {
            const char* what = variants[v].name;
            float losses[3];
            float* grads[3];
            float* row0[3] = {NULL, NULL, NULL};
            Fp8QuantStats* counts[3] = {NULL, NULL, NULL};
            float* window[3] = {NULL, NULL, NULL};
            Fp8BlockScaleRange* ranges[3] = {NULL, NULL, NULL};
            size_t P = 0;
            int slots = 0;
            for (int r = 0; r < 3; r++) {
                char flags[200];
                snprintf(flags, sizeof(flags), "%s -attn %s -r %d", variants[v].flags, attentions[a], r);
                TrainArgs args = test_args_line(flags);
                gpu::GPT2 gpu;
                gpu_model(&gpu, &config, &args, B, T, cpu.master_memory);
                gpu.fp8_collect_stats = gpu.precision == PRECISION_FP8;  // the step's casts, counted
                gpt2_zero_grad(&gpu);
                gpt2_forward(&gpu, inputs, targets, B, T);
                gpt2_backward(&gpu, 1.0f);
                losses[r] = gpu.mean_loss;
                cudaCheck(cudaDeviceSynchronize());
                P = gpu.num_parameters;
                grads[r] = download_floats(gpu.grads_memory, P);
                if (gpu.precision == PRECISION_FP8) {
                    slots = gpu.fp8.num_slots;
                    row0[r] = download_floats(gpu.fp8.amax_history, (size_t)slots);
                    counts[r] = (Fp8QuantStats*)malloc((size_t)slots * sizeof(Fp8QuantStats));
                    cudaCheck(cudaMemcpy(counts[r], gpu.fp8_stats, (size_t)slots * sizeof(Fp8QuantStats),
                                         cudaMemcpyDeviceToHost));
                }
                if (gpu.fp8_current_amax) { window[r] = download_floats(gpu.fp8_current_amax, (size_t)slots); }
                if (gpu.fp8_block_scale_range) {
                    ranges[r] = (Fp8BlockScaleRange*)malloc((size_t)slots * sizeof(Fp8BlockScaleRange));
                    cudaCheck(cudaMemcpy(ranges[r], gpu.fp8_block_scale_range,
                                         (size_t)slots * sizeof(Fp8BlockScaleRange), cudaMemcpyDeviceToHost));
                }
                gpt2_free(&gpu);
            }
            for (int r = 1; r < 3; r++) {
                CHECK(memcmp(&losses[r], &losses[0], sizeof(float)) == 0, "%s %s -r %d: loss %.7f, -r 0 %.7f",
                      attentions[a], what, r, losses[r], losses[0]);
                CHECK(memcmp(grads[r], grads[0], P * sizeof(float)) == 0, "%s %s -r %d: gradients bit-identical to -r 0",
                      attentions[a], what, r);
                if (row0[0]) {
                    CHECK(memcmp(row0[r], row0[0], (size_t)slots * sizeof(float)) == 0,
                          "%s %s -r %d: the recorded amaxes bit-identical to -r 0", attentions[a], what, r);
                    CHECK(memcmp(counts[r], counts[0], (size_t)slots * sizeof(Fp8QuantStats)) == 0,
                          "%s %s -r %d: the diagnostics' counts those of -r 0", attentions[a], what, r);
                }
                if (window[0]) {
                    CHECK(memcmp(window[r], window[0], (size_t)slots * sizeof(float)) == 0,
                          "%s %s -r %d: the window amaxes (each slot's last recorded cast) bit-identical to -r 0",
                          attentions[a], what, r);
                }
                if (ranges[0]) {
                    CHECK(memcmp(ranges[r], ranges[0], (size_t)slots * sizeof(Fp8BlockScaleRange)) == 0,
                          "%s %s -r %d: the block scale ranges those of -r 0", attentions[a], what, r);
                }
            }
            for (int r = 0; r < 3; r++) {
                free(grads[r]);
                free(row0[r]);
                free(counts[r]);
                free(window[r]);
                free(ranges[r]);
            }
        }
        gpt2_free(&cpu);
    }
}

// -gemm_autotune 8 (llmc/gemm.cuh): with every GEMM's algorithm chosen by timing 8 of the heuristic's answers, five
// steps against the CPU within the same tolerances as with its first answer (delayed scaling; blockwise, whose fprop
// with a bias accumulates onto the bias and so is timed out of place too, where its GEMMs run). Then, per precision,
// one step of a model that chose by timing, and of a second model given the first's choices (as a run reads them back
// from its folder): every problem was chosen (the memory plan's scratch holds every accumulating output), the second
// times nothing, and its loss and gradients are the first's, bit for bit.
static void test_gemm_autotune(void) {
    char why[256];
    int block_gemms = gemm_block_scaling_check(why, sizeof(why)) == 0;
    shaped_five_steps(test_args_line("-precision fp8 -fp8_amax_history_len 16 -attn plain -gemm_autotune 8"),
                      &tiny_shape, 5, "delayed, autotuned", 1);
    if (block_gemms) {
        shaped_five_steps(test_args_block_with("blockwise", "-gemm_autotune 8"), &block_shape, 53, "blockwise, autotuned",
                          0);
    } else {
        printf("  SKIP blockwise: %s\n", why);
    }
    const char* variants[3] = {"-precision bf16", "-precision fp8 -fp8_amax_history_len 16",
                               "-precision fp8 -fp8_recipe blockwise"};
    const int B = 2, T = 64;
    GPT2Config config = config_of(2, 256, 4, 200, 64);
    cpu::GPT2 cpu;  // only for the initial weights
    int inputs[2 * 64], targets[2 * 64];
    cpu_initial_weights_and_batch(&cpu, &config, B, T, 37, inputs, targets);
    for (int v = 0; v < 3; v++) {
        if (strstr(variants[v], "blockwise") && !block_gemms) { continue; }
        char flags[160];
        snprintf(flags, sizeof(flags), "%s -attn plain -gemm_autotune 8", variants[v]);
        TrainArgs args = test_args_line(flags);
        float losses[2];
        float* grads[2];
        GemmChoices chosen;
        memset(&chosen, 0, sizeof(chosen));
        int timed[2], unchosen = 0, plans = 0;
        size_t P = 0;
        for (int m = 0; m < 2; m++) {
            gpu::GPT2 gpu;
            gpu_model(&gpu, &config, &args, B, T, cpu.master_memory);
            for (int i = 0; m == 1 && i < chosen.count; i++) { gemm_choices_put(&gpu.gemm.choices, &chosen.rows[i]); }
            gpt2_zero_grad(&gpu);
            gpt2_forward(&gpu, inputs, targets, B, T);
            gpt2_backward(&gpu, 1.0f);
            cudaCheck(cudaDeviceSynchronize());
            losses[m] = gpu.mean_loss;
            P = gpu.num_parameters;
            grads[m] = download_floats(gpu.grads_memory, P);
            timed[m] = gpu.gemm.num_timed;
            if (m == 0) {
                for (int i = 0; i < gpu.gemm.choices.count; i++) { gemm_choices_put(&chosen, &gpu.gemm.choices.rows[i]); }
                plans = gpu.gemm.num_plans;
                for (int i = 0; i < gpu.gemm.num_plans; i++) { unchosen += !gpu.gemm.plans[i].chosen; }
            }
            gpt2_free(&gpu);
        }
        CHECK(timed[0] > 0 && timed[0] == chosen.count && unchosen == 0,
              "%s: %d problems timed, %d choices, %d of %d plans with the heuristic's first answer only", variants[v],
              timed[0], chosen.count, unchosen, plans);
        CHECK(timed[1] == 0, "%s: the model given the choices timed %d problems", variants[v], timed[1]);
        CHECK(memcmp(&losses[1], &losses[0], sizeof(float)) == 0 && memcmp(grads[1], grads[0], P * sizeof(float)) == 0,
              "%s: with the first model's choices, loss %.7f (first %.7f) and gradients bit-identical", variants[v],
              losses[1], losses[0]);
        free(grads[0]);
        free(grads[1]);
        gemm_choices_free(&chosen);
    }
    gpt2_free(&cpu);
}

// AdamW's 16-byte path against its element path: the same parameters at an aligned address and one float further on
// give the same bits (R1: one function per parameter). AdamW's reading of the norm on the device (R1 each): a norm
// that is NaN or inf changes no array (a skipped step); the clip factor from a norm of sqrt(3) above a clip of 1
// gives the bits of gradients scaled on the host by 1 / sqrtf(3) and not clipped (sqrtf and the division IEEE-rounded
// on both, the scaled gradient the same one rounding). The gradient norm's float4 middle, head and tail at each of
// four alignments against the sum of squares in double (R2: a chain of at most n / (NORM_BLOCKS * 512) + 6 additions
// a thread and two block sums of 10 levels, one more rounding for the square; every term positive, so relative to
// the sum).
static void test_adamw_and_norm_vector_paths(void) {
    const size_t n = 8 * 1000 + 5;
    Rng rng;
    rng_seed(&rng, 47);
    float* host = (float*)malloc(4 * n * sizeof(float));  // master, grads, m, v
    for (size_t i = 0; i < n; i++) {
        host[i] = rng_uniform(&rng) * 2.0f - 1.0f;
        host[n + i] = (rng_uniform(&rng) * 2.0f - 1.0f) * 0.01f;
        host[2 * n + i] = (rng_uniform(&rng) * 2.0f - 1.0f) * 1e-3f;
        host[3 * n + i] = rng_uniform(&rng) * 1e-5f;
    }
    float* d_arrays[4];  // each with room for n + 4 floats: the aligned view at 0, the others 1 to 3 floats on
    for (int a = 0; a < 4; a++) { cudaCheck(cudaMalloc(&d_arrays[a], (n + 4) * sizeof(float))); }
    floatX* d_params;
    cudaCheck(cudaMalloc(&d_params, (n + 8) * sizeof(floatX)));
    float* d_adamw_norm_squared;  // the global norm's square AdamW reads: 4, above a clip of 1, so a factor 0.5
    cudaCheck(cudaMalloc(&d_adamw_norm_squared, sizeof(float)));
    const float four = 4.0f;
    cudaCheck(cudaMemcpy(d_adamw_norm_squared, &four, sizeof(float), cudaMemcpyHostToDevice));
    AdamwTensors whole;  // the n parameters as one tensor with weight decay 0.1
    memset(&whole, 0, sizeof(whole));
    adamw_tensors_add(&whole, n, 0.1f);
    float* got[2][4];  // [aligned, one float on][master, m, v, the bf16 weights as floats]
    for (int offset = 0; offset < 2; offset++) {
        float *master = d_arrays[0] + offset, *grads = d_arrays[1] + offset, *m = d_arrays[2] + offset,
              *v = d_arrays[3] + offset;
        floatX* params = d_params + offset;
        for (int a = 0; a < 4; a++) {
            cudaCheck(cudaMemcpy(d_arrays[a] + offset, host + a * n, n * sizeof(float), cudaMemcpyHostToDevice));
        }
        CHECK(adamw_vectorized(master, params, grads, m, v) == (offset == 0), "offset %d: AdamW's 16-byte path iff "
              "aligned", offset);
        adamw_update(master, params, grads, m, v, &whole, 1e-3f, 0.9f, 0.95f, 0.1f, 0.05f, 1e-8f, d_adamw_norm_squared,
                     1.0f, 0);
        float* updated[3] = {master, m, v};
        for (int a = 0; a < 3; a++) { got[offset][a] = download_floats(updated[a], n); }
        got[offset][3] = download_bf16(params, n);
    }
    const char* names[4] = {"master weights", "m", "v", "bf16 weights"};
    for (int a = 0; a < 4; a++) {
        CHECK(memcmp(got[0][a], got[1][a], n * sizeof(float)) == 0, "AdamW's %s: the 16-byte and the element paths "
              "agree (R1)", names[a]);
        free(got[0][a]);
        free(got[1][a]);
    }
    // AdamW from the device's norm: [run][master, m, v, the bf16 weights], every run from the same arrays (aligned)
    const float not_finite[2] = {NAN, INFINITY};
    const float clip = 1.0f, scale = 1.0f / sqrtf(3.0f);  // the host's factor for a norm of sqrtf(3) above clip 1
    float* scaled_grads = (float*)malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) { scaled_grads[i] = host[n + i] * scale; }
    float* after[4][4];
    for (int run = 0; run < 4; run++) {  // NaN, inf: skipped; 3: clipped on the device; 0.25 on pre-scaled gradients
        const float norm_squared = run < 2 ? not_finite[run] : run == 2 ? 3.0f : 0.25f;
        cudaCheck(cudaMemcpy(d_adamw_norm_squared, &norm_squared, sizeof(float), cudaMemcpyHostToDevice));
        for (int a = 0; a < 4; a++) {
            const float* from = a == 1 && run == 3 ? scaled_grads : host + a * n;
            cudaCheck(cudaMemcpy(d_arrays[a], from, n * sizeof(float), cudaMemcpyHostToDevice));
        }
        cudaCheck(cudaMemset(d_params, 0, n * sizeof(floatX)));
        adamw_update(d_arrays[0], d_params, d_arrays[1], d_arrays[2], d_arrays[3], &whole, 1e-3f, 0.9f, 0.95f, 0.1f,
                     0.05f, 1e-8f, d_adamw_norm_squared, clip, 0);
        float* updated[3] = {d_arrays[0], d_arrays[2], d_arrays[3]};
        for (int a = 0; a < 3; a++) { after[run][a] = download_floats(updated[a], n); }
        after[run][3] = download_bf16(d_params, n);
    }
    const float* before[4] = {host, host + 2 * n, host + 3 * n, NULL};  // the bf16 weights: left at 0
    float* zeros = (float*)calloc(n, sizeof(float));
    before[3] = zeros;
    for (int run = 0; run < 2; run++) {
        for (int a = 0; a < 4; a++) {
            CHECK(memcmp(after[run][a], before[a], n * sizeof(float)) == 0, "AdamW with a gradient norm of %g (a "
                  "skipped step): %s unchanged (R1)", not_finite[run], names[a]);
        }
    }
    for (int a = 0; a < 4; a++) {
        CHECK(memcmp(after[2][a], after[3][a], n * sizeof(float)) == 0, "AdamW's clip factor from a norm of sqrt(3) "
              "on the device: %s as with the gradients scaled by the host's 1/sqrtf(3) (R1)", names[a]);
    }
    for (int run = 0; run < 4; run++) {
        for (int a = 0; a < 4; a++) { free(after[run][a]); }
    }
    free(zeros);
    free(scaled_grads);
    // three tensors in one launch (decays 0.1, 0, 0.1; the second starts inside a 16-byte vector) against a launch a
    // tensor, each from its own address (the element path where that is not 16-byte aligned): the same bits
    const size_t cut[4] = {0, 1003, 5001, n};
    const float decays[3] = {0.1f, 0.0f, 0.1f};
    float* split[2][4];  // [one launch, a launch a tensor][master, m, v, the bf16 weights]
    for (int way = 0; way < 2; way++) {
        for (int a = 0; a < 4; a++) {
            cudaCheck(cudaMemcpy(d_arrays[a], host + a * n, n * sizeof(float), cudaMemcpyHostToDevice));
        }
        cudaCheck(cudaMemset(d_params, 0, n * sizeof(floatX)));
        AdamwTensors tensors;
        memset(&tensors, 0, sizeof(tensors));
        for (int t = 0; t < 3; t++) {
            if (way == 0) {
                adamw_tensors_add(&tensors, cut[t + 1] - cut[t], decays[t]);
                continue;
            }
            memset(&tensors, 0, sizeof(tensors));
            adamw_tensors_add(&tensors, cut[t + 1] - cut[t], decays[t]);
            size_t k = cut[t];
            adamw_update(d_arrays[0] + k, d_params + k, d_arrays[1] + k, d_arrays[2] + k, d_arrays[3] + k, &tensors,
                         1e-3f, 0.9f, 0.95f, 0.1f, 0.05f, 1e-8f, d_adamw_norm_squared, clip, 0);
        }
        if (way == 0) {
            adamw_update(d_arrays[0], d_params, d_arrays[1], d_arrays[2], d_arrays[3], &tensors, 1e-3f, 0.9f, 0.95f,
                         0.1f, 0.05f, 1e-8f, d_adamw_norm_squared, clip, 0);
        }
        float* updated[3] = {d_arrays[0], d_arrays[2], d_arrays[3]};
        for (int a = 0; a < 3; a++) { split[way][a] = download_floats(updated[a], n); }
        split[way][3] = download_bf16(d_params, n);
    }
    for (int a = 0; a < 4; a++) {
        CHECK(memcmp(split[0][a], split[1][a], n * sizeof(float)) == 0, "AdamW's %s: three tensors in one launch as "
              "in a launch each, each parameter with its tensor's weight decay (R1)", names[a]);
        free(split[0][a]);
        free(split[1][a]);
    }
    cudaCheck(cudaFree(d_adamw_norm_squared));
    float *d_norm, *d_partials;
    cudaCheck(cudaMalloc(&d_norm, sizeof(float)));
    cudaCheck(cudaMalloc(&d_partials, NORM_BLOCKS * sizeof(float)));
    double want = 0.0;
    for (size_t i = 0; i < n; i++) { want += (double)host[n + i] * host[n + i]; }
    double chain = (double)n / (NORM_BLOCKS * 512.0) + 6.0 + 20.0;
    for (int offset = 0; offset < 4; offset++) {
        float* grads = d_arrays[1] + offset;
        cudaCheck(cudaMemcpy(grads, host + n, n * sizeof(float), cudaMemcpyHostToDevice));
        global_norm_squared(d_norm, d_partials, grads, n, 0);
        float norm_squared;
        cudaCheck(cudaMemcpy(&norm_squared, d_norm, sizeof(float), cudaMemcpyDeviceToHost));
        char why[64];
        snprintf(why, sizeof(why), "R2, %.0f additions and the square", chain);
        CHECK_WITHIN(fabs(norm_squared - want) / want, tolerance_sum_rn(chain + 1.0), why,
                     "gradient norm squared, grads %d floats past 16-byte alignment: relative error", offset);
    }
    cudaCheck(cudaFree(d_norm));
    cudaCheck(cudaFree(d_partials));
    for (int a = 0; a < 4; a++) { cudaCheck(cudaFree(d_arrays[a])); }
    cudaCheck(cudaFree(d_params));
    free(host);
}

// -cuda_graph 1 (llmc/cuda_graph.cuh): a micro-batch's forward and backward replayed as CUDA graphs train exactly as
// the same kernels launched one by one (R1: the same kernels with the same arguments on the same buffers). Two models
// from the same weights, one with graphs, four steps: two of two micro-batches (loss scale 1/2), an evaluation
// between, two of one micro-batch (loss scale 1: a new key, so the backward runs once kernel by kernel and its graph
// is captured again at the next), new batches every time (the batch and its token buckets are copied outside the
// graphs; the graph model's encoder backward launches at most 7 bucket rows, so each strides over several buckets).
// Every loss and gradient norm, then the whole training state (check_same_training_state), bit for bit; the graph
// model captured its forward once and replayed it for every training pass but the first, its backward twice and
// replayed it for every pass but the first of each loss scale; the other none.
// For BF16 and every FP8 recipe, with the plain attention and (where built) cuDNN's, FP8 attention (both backward
// inputs, -fp8_attention 1 and 2: the latter writes q, k, v's E4M3 values over qkv inside the forward's graph)
// included.
static void test_cuda_graph_steps_bit_identical(void) {
    const int B = 2, T = 64, BT = B * T;
    GPT2Config config = config_of(2, 128, 2, TV, T);  // heads of 64 for cuDNN, C a whole 128-block for blockwise
    const char* variants[] = {
        "-precision bf16",
        "-precision fp8 -fp8_amax_history_len 16",
        "-precision fp8 -fp8_recipe current",
        "-precision fp8 -fp8_recipe blockwise",
        "-precision fp8 -fp8_recipe mxfp8",
        "-precision fp8 -fp8_amax_history_len 16 -r 2",
    };
    const int num_variants = (int)(sizeof(variants) / sizeof(variants[0]));
    char why[256];
    int block_gemms = gemm_block_scaling_check(why, sizeof(why)) == 0;
#ifdef ENABLE_CUDNN
    const char* attentions[4] = {"plain", "cudnn", "cudnn -fp8_attention 1", "cudnn -fp8_attention 2"};
    int num_attentions = 4;
#else
    const char* attentions[1] = {"plain"};
    int num_attentions = 1;
#endif
    cpu::GPT2 cpu;  // only for the initial weights
    int* inputs = (int*)malloc((size_t)BT * sizeof(int));
    int* targets = (int*)malloc((size_t)BT * sizeof(int));
    cpu_initial_weights_and_batch(&cpu, &config, B, T, 83, inputs, targets);
    for (int v = 0; v < num_variants; v++) {
        if (strstr(variants[v], "blockwise") && !block_gemms) {
            printf("  SKIP %s: %s\n", variants[v], why);
            continue;
        }
        for (int a = 0; a < num_attentions; a++) {
            if (strstr(attentions[a], "fp8_attention") && v != 1) { continue; }  // delayed scaling's only
            char what[200];
            snprintf(what, sizeof(what), "%s -attn %s", variants[v], attentions[a]);
            gpu::GPT2 models[2];
            for (int m = 0; m < 2; m++) {
                char flags[256];
                snprintf(flags, sizeof(flags), "%s -cuda_graph %d", what, m);
                TrainArgs args = test_args_line(flags);
                gpu_model(&models[m], &config, &args, B, T, cpu.master_memory);
                models[m].encoder_graph_rows_most = 7;  // fewer rows than the batch's buckets (the graph's stride)
                if (models[m].precision == PRECISION_FP8) {
                    models[m].fp8_collect_stats = 1;
                    size_t stats_bytes = (size_t)models[m].fp8.num_slots * sizeof(Fp8QuantStats);
                    cudaCheck(cudaMemset(models[m].fp8_stats, 0, stats_bytes));
                }
            }
            Rng rng[2];
            for (int step = 0; step < 4; step++) {
                int micro_batches = step < 2 ? 2 : 1;
                float loss[2], norm[2], eval_loss[2];
                for (int m = 0; m < 2; m++) {
                    gpu::GPT2* model = &models[m];
                    if (step == 0) { rng_seed(&rng[m], 84); }  // the same batches for both
                    gpt2_zero_grad(model);
                    double sum = 0.0;
                    for (int micro = 0; micro < micro_batches; micro++) {
                        random_batch(inputs, targets, BT, TV, &rng[m]);
                        gpt2_forward(model, inputs, targets, B, T);
                        gpt2_backward(model, 1.0f / micro_batches);
                        sum += model->mean_loss;
                    }
                    loss[m] = (float)(sum / micro_batches);
                    gpt2_grad_norm(model);
                    gpt2_fp8_end_of_step(model, step);
                    gpt2_update(model, TEST_LR, TEST_BETA1, TEST_BETA2, 1e-8f, 0.0f, 1.0f, step + 1);
                    gpt2_cast_weights_fp8(model, 1);
                    norm[m] = gpt2_grad_norm_value(model);
                    if (step == 1) {  // an evaluation between steps, as the trainer's
                        random_batch(inputs, targets, BT, TV, &rng[m]);
                        eval_loss[m] = eval_forward(model, inputs, targets, B, T);
                    }
                }
                CHECK(memcmp(&loss[0], &loss[1], 4) == 0 && memcmp(&norm[0], &norm[1], 4) == 0,
                      "%s, step %d: loss %.9g norm %.9g without graphs, %.9g %.9g with", what, step + 1, loss[0],
                      norm[0], loss[1], norm[1]);
                if (step == 1) {
                    CHECK(memcmp(&eval_loss[0], &eval_loss[1], 4) == 0, "%s: the evaluation's loss %.9g without "
                          "graphs, %.9g with", what, eval_loss[0], eval_loss[1]);
                }
            }
            gpu::GPT2* eager = &models[0];
            gpu::GPT2* graphed = &models[1];
            check_same_training_state(eager, graphed, what, "after 4 steps, with and without CUDA graphs");
            // 6 training passes: the first without a graph, then the forward's graph captured once; the backward's
            // for loss scale 1/2 at the second pass, and for 1 at the sixth (the fifth, its first, ran without)
            CHECK(graphed->forward_graph.captures == 1 && graphed->forward_graph.launches == 5 &&
                      graphed->backward_graph.captures == 2 && graphed->backward_graph.launches == 4,
                  "%s: the forward's graph captured %d times, replayed %lld; the backward's %d, %lld (want 1, 5; 2, 4)",
                  what, graphed->forward_graph.captures, graphed->forward_graph.launches,
                  graphed->backward_graph.captures, graphed->backward_graph.launches);
            CHECK(eager->forward_graph.captures == 0 && eager->backward_graph.captures == 0,
                  "%s: -cuda_graph 0 captured nothing", what);
            gpt2_free(&models[0]);
            gpt2_free(&models[1]);
        }
    }
    free(inputs);
    free(targets);
    gpt2_free(&cpu);
}

// The diagnostics block write_fp8_diagnostics writes for `step` (and the counts and block scale ranges it resets), as
// text; free it.
static char* diagnostics_block(gpu::GPT2* model, int step) {
    FILE* f = tmpfile();
    if (!f) { die("tmpfile: %s", strerror(errno)); }
    write_fp8_diagnostics(model, f, step);
    long size = ftell(f);
    char* text = (char*)calloc((size_t)size + 1, 1);
    rewind(f);
    if (size < 0 || fread(text, 1, (size_t)size, f) != (size_t)size) { die("reading the diagnostics block back"); }
    fclose(f);
    return text;
}

// A step whose gradient norm is not finite, skipped on the device (the trainer queues its end of step as for any
// step: gpt2_grad_norm says how), leaves the model as the host's skip does (gpt2_fp8_drop_step_amaxes, as the CPU's
// loop), and the step after it goes on the same: two models from the same weights and batches, a step, a diagnostics
// block (its counts and block scale ranges reset), a step whose first gradient is NaN (the trainer's
// -debug_nan_step), skipped by the host in one model and on the device in the other, then a third step. Every loss
// and norm bit for bit (the skipped step's norm NaN in both); the device's skipped step leaves the FP8 state as the
// CPU's rule (fp8_meta_drop_step_amaxes) makes it from the step's amaxes; the diagnostics block after it the same
// text in both (no count and no block scale range from the weights' casts, which the CPU does not make); after the
// skipped step and the next, the whole training state (check_same_training_state: weights and their FP8 copies,
// moments, FP8 state, diagnostics) bit for bit (R1: the skipped step changes nothing but row 0, and the weights'
// casts rewrite the bytes they wrote before, their diagnostics put back). BF16 and every FP8 recipe.
static void test_norm_skipped_step_on_the_device(void) {
    const int B = 2, T = 64, BT = B * T;
    GPT2Config config = config_of(2, 128, 2, TV, T);  // C a whole 128-block for blockwise
    const char* variants[] = {
        "-precision bf16",
        "-precision fp8 -fp8_amax_history_len 16",
        "-precision fp8 -fp8_recipe current",
        "-precision fp8 -fp8_recipe blockwise",
        "-precision fp8 -fp8_recipe mxfp8",
    };
    char why[256];
    int block_gemms = gemm_block_scaling_check(why, sizeof(why)) == 0;
    cpu::GPT2 cpu;  // only for the initial weights
    int* inputs = (int*)malloc((size_t)BT * sizeof(int));
    int* targets = (int*)malloc((size_t)BT * sizeof(int));
    cpu_initial_weights_and_batch(&cpu, &config, B, T, 91, inputs, targets);
    for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
        if (strstr(variants[v], "blockwise") && !block_gemms) {
            printf("  SKIP %s: %s\n", variants[v], why);
            continue;
        }
        char flags[160];
        snprintf(flags, sizeof(flags), "%s -attn plain", variants[v]);
        gpu::GPT2 models[2];  // the skipped step: [0] the host's skip, [1] the device's
        int fp8 = strstr(variants[v], "fp8") != NULL;
        for (int m = 0; m < 2; m++) {
            TrainArgs args = test_args_line(flags);
            gpu_model(&models[m], &config, &args, B, T, cpu.master_memory);
            if (models[m].precision == PRECISION_FP8) {
                models[m].fp8_collect_stats = 1;
                cudaCheck(cudaMemset(models[m].fp8_stats, 0, (size_t)models[m].fp8.num_slots * sizeof(Fp8QuantStats)));
            }
        }
        Rng rng;
        rng_seed(&rng, 92);
        for (int step = 0; step < 3; step++) {
            random_batch(inputs, targets, BT, TV, &rng);
            float loss[2], norm[2];
            for (int m = 0; m < 2; m++) {
                gpu::GPT2* model = &models[m];
                gpt2_zero_grad(model);
                gpt2_forward(model, inputs, targets, B, T);
                gpt2_backward(model, 1.0f);
                loss[m] = model->mean_loss;
                if (step == 1) {  // NaN in the first gradient, after the backward (the trainer's test hook)
                    cudaCheck(cudaMemsetAsync(model->grads_memory, 0xFF, sizeof(float), model->stream));
                }
                int device_skip = step == 1 && m == 1 && fp8;
                Fp8Meta before;  // the device's skip: the FP8 state with the step's amaxes, before its end
                memset(&before, 0, sizeof(before));
                if (device_skip) { before = fp8_meta_host_copy(model); }
                gpt2_grad_norm(model);
                if (step == 1 && m == 0) {  // the host reads the norm first and skips: what the CPU's loop does
                    norm[m] = gpt2_grad_norm_value(model);
                    gpt2_fp8_drop_step_amaxes(model);
                } else {  // the trainer's end of step, queued whatever the norm
                    gpt2_fp8_end_of_step(model, step);
                    gpt2_update(model, TEST_LR, TEST_BETA1, TEST_BETA2, 1e-8f, 0.0f, 1.0f, step + 1);
                    gpt2_cast_weights_fp8(model, 1);
                    norm[m] = gpt2_grad_norm_value(model);
                }
                if (device_skip) {
                    Fp8Meta after = fp8_meta_host_copy(model);
                    fp8_meta_drop_step_amaxes(&before);
                    CHECK(memcmp(before.memory, after.memory, before.num_floats * sizeof(float)) == 0,
                          "%s: the step skipped on the device leaves the FP8 state as the CPU's rule "
                          "(fp8_meta_drop_step_amaxes) makes it from the step's amaxes", variants[v]);
                    fp8_meta_free(&before);
                    fp8_meta_free(&after);
                }
            }
            CHECK(memcmp(&loss[0], &loss[1], 4) == 0 && memcmp(&norm[0], &norm[1], 4) == 0,
                  "%s, step %d: loss %.9g norm %.9g (the host's skip), %.9g %.9g (the device's)", variants[v], step + 1,
                  loss[0], norm[0], loss[1], norm[1]);
            if (step == 1) {
                CHECK(isnan(norm[0]) && isnan(norm[1]), "%s: the poisoned step's norm is NaN (%g, %g)", variants[v],
                      norm[0], norm[1]);
            }
            if (fp8 && step <= 1) {  // a diagnostics block before the skipped step (a fresh range) and after it
                char* block[2] = {diagnostics_block(&models[0], step + 1), diagnostics_block(&models[1], step + 1)};
                CHECK(strcmp(block[0], block[1]) == 0 && (step == 0 || strstr(block[0], "\tweight\t")),
                      "%s: the diagnostics block after step %d the same with the host's skip and the device's:\n%s"
                      "---\n%s", variants[v], step + 1, block[0], block[1]);
                free(block[0]);
                free(block[1]);
            }
            if (step >= 1) {
                check_same_training_state(&models[0], &models[1], variants[v],
                                          step == 1 ? "after the skipped step" : "a step after the skipped one");
            }
        }
        gpt2_free(&models[0]);
        gpt2_free(&models[1]);
    }
    free(inputs);
    free(targets);
    gpt2_free(&cpu);
}

// ----------------------------------------------------------------------------
// A step queues its work without waiting for the GPU (issue 56's host stalls), checked with a gate: a kernel at the
// head of the stream that spins until the host opens it (a flag in mapped pinned memory), or gives up after 20 s of
// GPU time and records that it did. The host queues a part of a step behind the closed gate, then opens it: a call
// in that part that waited for the GPU (a synchronous copy, a stream synchronize, an event read) would have waited
// for the gate itself, which then times out. No clock decides the result, only whether the host opened the gate.

// (dev/cuda/emulate has no PTX: its %globaltimer is a function)
__device__ unsigned long long global_time_ns(void) {
#ifdef GPTFP8_CUDA_EMULATION
    return cuda_emulation_globaltimer();
#else
    unsigned long long now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    return now;
#endif
}

__global__ void host_gate_kernel(const volatile int* open, int* timed_out, unsigned long long limit_ns) {
    unsigned long long start = global_time_ns();
    while (!*open) {
        if (global_time_ns() - start > limit_ns) {
            *timed_out = 1;
            return;
        }
        __nanosleep(1000);
    }
}

typedef struct {
    int* flags;         // host: [0] open, [1] timed out (mapped pinned memory)
    int* device_flags;  // the same two ints as the GPU addresses them
} HostGate;

static HostGate host_gate_alloc(void) {
    HostGate g;
    cudaCheck(cudaHostAlloc(&g.flags, 2 * sizeof(int), cudaHostAllocMapped));
    cudaCheck(cudaHostGetDevicePointer((void**)&g.device_flags, g.flags, 0));
    return g;
}

// Closes the gate on `stream` for at most `seconds` of GPU time
static void host_gate_close(HostGate* g, cudaStream_t stream, unsigned long long seconds) {
    __atomic_store_n(&g->flags[0], 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g->flags[1], 0, __ATOMIC_SEQ_CST);
    host_gate_kernel<<<1, 1, 0, stream>>>(g->device_flags, g->device_flags + 1, seconds * 1000000000ull);
    cudaCheck(cudaGetLastError());
}

// Opens the gate and waits for the stream; 1 when the host opened it (nothing queued since it closed waited)
static int host_gate_open(HostGate* g, cudaStream_t stream) {
    __atomic_store_n(&g->flags[0], 1, __ATOMIC_SEQ_CST);
    cudaCheck(cudaStreamSynchronize(stream));
    return __atomic_load_n(&g->flags[1], __ATOMIC_SEQ_CST) == 0;
}

// HS 64, so that cuDNN's attention takes the heads where it is built; C 128 for blockwise's k
static const TestShape gate_shape = {2, 64, 2, 128, 2, TV};

// For every precision and recipe: a first step builds what is built once (GEMM plans, cuDNN graphs); then, behind
// a closed gate, a training forward (its batch copies included), and after the backward (which waits for the loss)
// the whole end of the step: the gradient norm, the FP8 update, AdamW, the weights' casts with the diagnostics'
// counts (gpt2_grad_norm: the norm's decisions are the device's). The gated step is then the CPU's step, by loss and
// gradient norm. Then again with -cuda_graph 1: the gated forward is captured into a graph
// and replayed (the first step ran without), which must not wait either, and the step is still the CPU's.
static void test_step_queues_without_waiting(void) {
#ifdef ENABLE_CUDNN
    const char* attention = "cudnn";
#else
    const char* attention = "plain";
#endif
    const char* recipes[] = {"bf16", "delayed", "current", "blockwise", "mxfp8"};
    char why[256];
    int have_blockwise = gemm_block_scaling_check(why, sizeof(why)) == 0;
    HostGate gate = host_gate_alloc();
    int BT = gate_shape.B * gate_shape.T;
    int* inputs = (int*)malloc((size_t)BT * sizeof(int));
    int* targets = (int*)malloc((size_t)BT * sizeof(int));
    for (int run = 0; run < 10; run++) {  // each recipe without, then with CUDA graphs
        int r = run % 5, graphs = run / 5;
        if (!strcmp(recipes[r], "blockwise") && !have_blockwise) { continue; }
        char flags[160], what[96];
        if (r == 0) {
            snprintf(flags, sizeof(flags), "-precision bf16 -attn %s -cuda_graph %d", attention, graphs);
        } else {
            snprintf(flags, sizeof(flags), "-precision fp8 -fp8_recipe %s -attn %s -cuda_graph %d", recipes[r],
                     attention, graphs);
        }
        snprintf(what, sizeof(what), "%s, %s attention%s: ", recipes[r], attention, graphs ? ", CUDA graphs" : "");
        cpu::GPT2 cpu;
        gpu::GPT2 gpu;
        make_shaped_pair(&cpu, &gpu, test_args_line(flags), 71 + r, &gate_shape);
        gpu.fp8_collect_stats = gpu.precision == PRECISION_FP8;  // the weights' casts save and restore the counts
        Rng rng;
        rng_seed(&rng, 72 + r);
        float gpu_norm, cpu_norm;
        random_batch(inputs, targets, BT, gate_shape.V, &rng);
        train_step(&gpu, inputs, targets, gate_shape.B, gate_shape.T, 0, &gpu_norm);
        train_step(&cpu, inputs, targets, gate_shape.B, gate_shape.T, 0, &cpu_norm);
        random_batch(inputs, targets, BT, gate_shape.V, &rng);
        cudaStream_t stream = gpu.stream;
        if (run == 0) {  // a launch that returns only once its kernel is done (a sanitizer's) leaves nothing to check
            host_gate_close(&gate, stream, 1);
            int asynchronous = cudaStreamQuery(stream) == cudaErrorNotReady;
            (void)cudaGetLastError();  // "not ready" is an answer, not an error
            host_gate_open(&gate, stream);
            if (!asynchronous) {
                printf("SKIP test_step_queues_without_waiting: a kernel launch waits for its kernel here "
                       "(a sanitizer?)\n");
                gpt2_free(&gpu);
                gpt2_free(&cpu);
                break;
            }
        }
        gpt2_zero_grad(&gpu);
        host_gate_close(&gate, stream, 20);
        gpt2_forward(&gpu, inputs, targets, gate_shape.B, gate_shape.T);
        CHECK(host_gate_open(&gate, stream), "%sthe training forward and its batch's copies queue without waiting",
              what);
        if (graphs) {  // the first step ran without graphs: this forward was captured and replayed, behind the gate
            CHECK(gpu.forward_graph.captures == 1 && gpu.forward_graph.launches == 1, "%sthe forward a graph's replay "
                  "(captured %d times, replayed %lld)", what, gpu.forward_graph.captures, gpu.forward_graph.launches);
        }
        gpt2_backward(&gpu, 1.0f);
        host_gate_close(&gate, stream, 20);
        gpt2_grad_norm(&gpu);
        gpt2_fp8_end_of_step(&gpu, 1);
        gpt2_update(&gpu, TEST_LR, TEST_BETA1, TEST_BETA2, 1e-8f, 0.0f, 1.0f, 2);
        gpt2_cast_weights_fp8(&gpu, 1);
        CHECK(host_gate_open(&gate, stream), "%sthe end of step (gradient norm, FP8 update, AdamW, the weights' casts) "
              "queues without waiting", what);
        gpu_norm = gpt2_grad_norm_value(&gpu);
        float gpu_loss = gpu.mean_loss;
        train_step(&cpu, inputs, targets, gate_shape.B, gate_shape.T, 1, &cpu_norm);
        check_loss(&cpu, gpu_loss, BT, 1, what);
        check_grad_norm(&cpu, gpu_norm, cpu_norm, 1, what);
        gpt2_free(&gpu);
        gpt2_free(&cpu);
    }
    free(inputs);
    free(targets);
    cudaCheck(cudaFreeHost(gate.flags));
}

int main(int argc, char** argv) {
    test_select(argc, argv);  // NAME... / --skip NAME: some of the cases (llmc/testing.h), e.g. under racecheck
    require_cuda_device("test_gpt_fp8");
    ProcessGroupConfig pg;
    char err[256];
    if (process_group_resolve(&pg, 1, 0, -1, NULL, NULL, NULL, err, sizeof(err))) { die("%s", err); }
    multi_gpu_init(&one_process, &pg, 0);
    RUN_TEST(test_bf16_forward_backward);
    RUN_TEST(test_fp8_cast_bytes_and_amaxes);
    RUN_TEST(test_fp8_five_steps);
    RUN_TEST(test_fp8_current_scaling_casts);
    RUN_TEST(test_fp8_current_five_steps);
    RUN_TEST(test_fp8_cast_counts);
    RUN_TEST(test_zero1_two_ranks_on_one_gpu);
    RUN_TEST(test_next_token_probs);
    RUN_TEST(test_checkpoints);
    RUN_TEST(test_medium_bf16_forward_backward);
    RUN_TEST(test_medium_fp8_state_after_1_and_5_steps);
    RUN_TEST(test_medium_xl_width_fp8_five_steps);
    RUN_TEST(test_encoder_backward_bucket_stride);
    RUN_TEST(test_gelu_vector_and_element_paths_agree);
    RUN_TEST(test_fused_fp8_casts_bit_identical);
    RUN_TEST(test_medium_fused_fp8_casts_bit_identical_c384);
    RUN_TEST(test_recompute_bit_identical);
    RUN_TEST(test_adamw_and_norm_vector_paths);
    RUN_TEST(test_gemm_autotune);
    RUN_TEST(test_step_queues_without_waiting);
    RUN_TEST(test_cuda_graph_steps_bit_identical);
    RUN_TEST(test_norm_skipped_step_on_the_device);
    // the block recipes: blockwise needs Hopper's block-scaled GEMMs (compute capability 9.0, cuBLASLt 12.9+)
    char why[256];
    if (gemm_block_scaling_check(why, sizeof(why)) == 0) {
        RUN_TEST(test_fp8_blockwise_casts);
        RUN_TEST(test_fp8_blockwise_five_steps);
        RUN_TEST(test_fp8_blockwise_kept_input_five_steps);
        RUN_TEST(test_fp8_blockwise_fused_casts_bit_identical);
        RUN_TEST(test_fp8_blockwise_kept_input_recompute_five_steps);
        RUN_TEST(test_fp8_blockwise_checkpoints);
        RUN_TEST(test_fp8_blockwise_outer_partial_blocks_casts);
        RUN_TEST(test_fp8_blockwise_outer_partial_blocks_five_steps);
        RUN_TEST(test_fp8_blockwise_partial_blocks_casts);
        RUN_TEST(test_fp8_blockwise_partial_blocks_five_steps);
    } else {
        printf("SKIP the blockwise tests: %s\n", why);
    }
    RUN_TEST(test_fp8_mxfp8_casts);
    RUN_TEST(test_fp8_mxfp8_five_steps);
    RUN_TEST(test_fp8_mxfp8_checkpoints);
#ifdef ENABLE_CUDNN
    RUN_TEST(test_cudnn_attention_against_cpu);
    RUN_TEST(test_cudnn_unsupported_head_size_falls_back);
    RUN_TEST(test_fp8_attention_against_cpu);
    RUN_TEST(test_fp8_attention_mha_against_cpu);
#endif
    // last: they need fp8/block_quantize.cuh's casts to take partial blocks (a cast that refuses them exits the run)
    RUN_TEST(test_fp8_mxfp8_partial_blocks_casts);
    RUN_TEST(test_fp8_mxfp8_partial_blocks_five_steps);
    return test_summary("gpt-gpu");
}
