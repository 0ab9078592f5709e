/*
llmc/train_common.h — the host side both trainers share, so the CPU reference and the CUDA trainer take the same
flags, read the same files and fail the same way: the one-line fatal error, the precision modes, the command line
(llm.c-style flags plus TE/Megatron-named FP8 flags, every value validated), which GEMMs run in FP8, reading a model
file, a run's setup (tokenizer, model shape, batch, data), the progress line, and checkpoint save/load.
*/
#ifndef GPTFP8_TRAIN_COMMON_H
#define GPTFP8_TRAIN_COMMON_H

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../fp8/meta.h"
#include "checkpoint.h"
#include "dataloader.h"
#include "gpt2.h"
#include "rand.h"
#include "tokenizer.h"

// One line to stderr and a non-zero exit: the trainer's answer to any bad input.
static void die(const char* fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char* fmt, ...) {
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "error: ");
    vfprintf(stderr, fmt, args);
    fprintf(stderr, "\n");
    va_end(args);
    exit(1);
}

static void* calloc_or_die(size_t count, size_t size, const char* what) {
    void* p = calloc(count ? count : 1, size);
    if (!p) {
        die("out of memory allocating %s (%zu x %zu bytes = %.3g GiB)", what, count, size,
            (double)count * (double)size / (1 << 30));
    }
    return p;
}

typedef enum { PRECISION_FP32 = 0, PRECISION_BF16 = 1, PRECISION_FP8 = 2 } Precision;
static const char* precision_name(Precision p) { return p == PRECISION_FP32 ? "fp32" : p == PRECISION_BF16 ? "bf16" : "fp8"; }

// ----------------------------------------------------------------------------
// the linear (GEMM) modules and which of them run in FP8

// FP8 module order: 4 per block, then the LM head.
enum { LINEAR_QKV = 0, LINEAR_ATTPROJ = 1, LINEAR_FC = 2, LINEAR_FCPROJ = 3, LINEARS_PER_BLOCK = 4 };
static const char* linear_names[LINEARS_PER_BLOCK] = {"qkv", "attproj", "fc", "fcproj"};

typedef struct {
    Precision precision;
    const DelayedScaling* recipe;
    int fp8_bf16_first_last;  // this many blocks at each end stay BF16
    int fp8_lm_head;          // the LM head through FP8 too
    int num_layers;
} LinearPrecision;

// A module goes through FP8 in fp8 mode unless its block is among the first/last N or it is the LM head (opt-in).
// Its three GEMMs then follow override_linear_precision.
static inline int linear_is_fp8(const LinearPrecision* p, int module) {
    if (p->precision != PRECISION_FP8) { return 0; }
    if (module == LINEARS_PER_BLOCK * p->num_layers) { return p->fp8_lm_head; }
    int l = module / LINEARS_PER_BLOCK;
    return l >= p->fp8_bf16_first_last && l < p->num_layers - p->fp8_bf16_first_last;
}

// Which of an FP8 module's three GEMMs run in FP8: all of them, less those override_linear_precision sends to BF16.
enum { LINEAR_GEMM_FPROP = 0, LINEAR_GEMM_DGRAD = 1, LINEAR_GEMM_WGRAD = 2 };
static inline int linear_gemm_is_fp8(const LinearPrecision* p, int module, int gemm) {
    if (!linear_is_fp8(p, module)) { return 0; }
    int bf16 = gemm == LINEAR_GEMM_FPROP ? p->recipe->override_fprop
               : gemm == LINEAR_GEMM_DGRAD ? p->recipe->override_dgrad : p->recipe->override_wgrad;
    return !bf16;
}

// Where a linear module's tensors sit in the flat parameter buffer (ParameterTensors' order), the same for the
// parameters and their gradients, on the CPU and on the GPU: element offsets of its weight (OC, IC) and bias (OC),
// and its shape. The LM head's weight is wte (tied embedding) and it has no bias (has_bias 0).
typedef struct {
    size_t weight_offset, bias_offset;
    int has_bias, IC, OC;
} LinearLayout;

static LinearLayout linear_layout(const GPT2Config* config, int module) {
    size_t sizes[NUM_PARAMETER_TENSORS], offsets[NUM_PARAMETER_TENSORS], offset = 0;
    fill_in_parameter_sizes(sizes, config);
    for (int t = 0; t < NUM_PARAMETER_TENSORS; t++) {
        offsets[t] = offset;
        offset += sizes[t];
    }
    int C = config->channels, L = config->num_layers;
    LinearLayout ll;
    memset(&ll, 0, sizeof(ll));
    if (module == LINEARS_PER_BLOCK * L) {  // the LM head: wte is tensor 0
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
// model files

// Reads a model file into a freshly allocated parameter buffer; validates header, exact size and finiteness.
static float* read_model_file(const char* path, GPT2Config* config, size_t* num_parameters) {
    char err[512];
    float* params;
    if (model_file_read(path, config, &params, num_parameters, err, sizeof(err))) { die("%s", err); }
    return params;
}

// ----------------------------------------------------------------------------
// command line

// The GPU trainer's attention: cuDNN's fused flash attention (llmc/cudnn_attention.cpp) or the plain CUDA/cuBLAS one
// (llmc/attention.cuh), which keeps the (B, NH, T, T) matrix of every layer.
enum { ATTENTION_DEFAULT = -1, ATTENTION_PLAIN = 0, ATTENTION_CUDNN = 1 };

typedef struct {
    const char* train_pattern;
    const char* val_pattern;
    const char* tokenizer_path;
    int tokenizer_explicit;
    const char* output_dir;
    const char* model_spec;  // "" (free sizes), d12 | d24 | d36 | d48, or a model file
    int num_layers, channels, num_heads, vocab_override, max_seq_len;
    int B, T, total_batch_size;
    float learning_rate, final_lr_fraction, weight_decay, grad_clip;
    int warmup_steps, max_steps;
    int val_every, val_max_steps, sample_every, gen_tokens, checkpoint_every, resume;
    int seed;
    int recompute;  // -r, llm.c's: 0 keep every activation, 1 recompute GELU in the backward, 2 LayerNorm too (GPU)
    int attention;  // -attn (GPU): ATTENTION_CUDNN, ATTENTION_PLAIN, or ATTENTION_DEFAULT (cuDNN when built with it)
    int estimate_only;  // -estimate 1 (GPU): print the memory estimate and the largest -b that fits, then exit
    Precision precision;
    int precision_set;
    const char* fp8_flag;  // -fp8 value, resolved after parsing
    DelayedScaling recipe;
    Fp8ScalingRecipe fp8_scaling;       // -fp8_recipe, applied to `recipe` after parsing
    const char* fp8_delayed_only_flag;  // the last flag given that only delayed scaling has (history, algo, ...)
    int fp8_bf16_first_last, fp8_lm_head, fp8_diag_every;
    // data parallelism (CUDA trainer): -1 / NULL when not given; llmc/multi_process.h resolves them with the launcher's
    int num_processes, process_rank, gpus_per_node;
    const char *init_method, *fs_path, *server_ip;
    int zero_stage;
    int debug_nan_step;   // test hooks: poison a gradient at this step,
    int debug_kill_step;  // or SIGKILL ourselves at the start of this step's training (after its checkpoint)
} TrainArgs;

#define TOTAL_BATCH_MAX (1 << 30)  // -d, tokens per optimizer step
#define MAX_STEPS_MAX (1 << 30)    // -x

// Every flag's default, in one place: parse_args starts from these and -h prints them.
static void train_args_default(TrainArgs* a) {
    memset(a, 0, sizeof(*a));
    a->train_pattern = "data/tinyshakespeare/tiny_shakespeare_train.bin";
    a->val_pattern = "data/tinyshakespeare/tiny_shakespeare_val.bin";
    a->tokenizer_path = "";
    a->output_dir = NULL;
    a->model_spec = "";
    a->num_layers = 4;
    a->channels = 128;
    a->num_heads = 4;
    a->B = 4;
    a->T = 64;
    a->total_batch_size = -1;
    a->learning_rate = 3e-4f;
    a->final_lr_fraction = 1.0f;
    a->weight_decay = 0.0f;
    a->grad_clip = 1.0f;
    a->max_steps = -1;
    a->val_every = 20;
    a->val_max_steps = 20;
    a->sample_every = 20;
    a->gen_tokens = 64;
    a->seed = 1337;
    a->precision = PRECISION_FP8;
    a->fp8_diag_every = 10;
    a->debug_nan_step = -1;
    a->debug_kill_step = -1;
    a->num_processes = -1;
    a->process_rank = -1;
    a->gpus_per_node = -1;
    a->zero_stage = 1;
    a->attention = ATTENTION_DEFAULT;
    delayed_scaling_default(&a->recipe);
}

// One line of -h: the flag, what it does, its default.
static void usage_flag(const char* flag, const char* meaning, const char* default_fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void usage_flag(const char* flag, const char* meaning, const char* default_fmt, ...) {
    char value[256];
    va_list args;
    va_start(args, default_fmt);
    vsnprintf(value, sizeof(value), default_fmt, args);
    va_end(args);
    printf("  %-26s %-50s %s\n", flag, meaning, value);
}

// program: the name the trainer was run as (argv[0]), so each trainer's -h names itself.
static void print_usage(const char* program) {
    TrainArgs d;
    train_args_default(&d);
    const DelayedScaling* r = &d.recipe;
    const char* slash = strrchr(program, '/');
    printf("usage: %s [flags]   (llm.c-style: every flag takes a value)\n", slash ? slash + 1 : program);
    printf("  %-26s %-50s %s\n", "flag", "what", "default");
    printf("data\n");
    usage_flag("-i FILES", "train shards (a glob)", "%s", d.train_pattern);
    usage_flag("-j FILES", "val shards (a glob)", "%s", d.val_pattern);
    usage_flag("-tk FILE", "tokenizer (for sampling)", "tokenizer.bin beside the train shards, if there");
    usage_flag("-o DIR", "output: main.log, fp8_diag.tsv, checkpoints", "none (no logs, no checkpoints)");
    printf("model\n");
    usage_flag("-e d12|d24|d36|d48|FILE", "a GPT-2 preset, or start from a model file", "none: -L -C -NH below");
    usage_flag("-L N", "layers", "%d", d.num_layers);
    usage_flag("-C N", "channels", "%d", d.channels);
    usage_flag("-NH N", "attention heads", "%d", d.num_heads);
    usage_flag("-V N", "vocabulary size", "the tokenizer's");
    usage_flag("-maxT N", "maximum sequence length", "-t (a preset: 1024)");
    printf("batch\n");
    usage_flag("-b N", "micro-batch B", "%d", d.B);
    usage_flag("-t N", "sequence length T", "%d", d.T);
    usage_flag("-d N", "total batch in tokens (gradient accumulation)", "%d: B*T", d.total_batch_size);
    printf("optimizer (AdamW, cosine schedule)\n");
    usage_flag("-l LR", "learning rate", "%g", d.learning_rate);
    usage_flag("-u N", "warmup steps", "%d", d.warmup_steps);
    usage_flag("-q F", "final lr as a fraction of -l", "%g (constant lr after warmup)", d.final_lr_fraction);
    usage_flag("-c F", "weight decay", "%g", d.weight_decay);
    usage_flag("-gc F", "gradient clip (global norm)", "%g", d.grad_clip);
    usage_flag("-x N", "steps (0: no training, evaluate and sample -e)", "%d: one epoch", d.max_steps);
    printf("evaluation and sampling\n");
    usage_flag("-v N", "val loss every N steps (0: never)", "%d", d.val_every);
    usage_flag("-m N", "val batches", "%d", d.val_max_steps);
    usage_flag("-s N", "sample every N steps (0: never)", "%d", d.sample_every);
    usage_flag("-g N", "tokens per sample", "%d", d.gen_tokens);
    usage_flag("-seed N", "seed of the initial weights and the samples", "%d", d.seed);
    printf("checkpoints (in -o)\n");
    usage_flag("-n N", "checkpoint every N steps (0: only at the end)", "%d", d.checkpoint_every);
    usage_flag("-y 0|1", "resume from the newest complete checkpoint", "%d", d.resume);
    printf("memory and attention (GPU)\n");
    usage_flag("-r 0|1|2", "recompute in the backward: 1 GELU, 2 +LayerNorm", "%d (GPU only; the CPU keeps all)",
               d.recompute);
    usage_flag("-estimate 0|1", "1: print the memory estimate, the largest -b, exit", "%d", d.estimate_only);
    usage_flag("-attn cudnn|plain", "cuDNN flash attention or the plain one", "cudnn when built with it");
    printf("precision\n");
    usage_flag("-precision fp32|bf16|fp8", "fp32 reference, BF16 baseline, FP8 linears", "%s", precision_name(d.precision));
    usage_flag("-fp8 off|e4m3|hybrid|e5m2", "Megatron's switch: off = bf16, else fp8 in it", "%s (E4M3 fwd, E5M2 bwd)",
               fp8_recipe_format_name(r->fp8_format));
    printf("  %-26s %s\n", "", "(e5m2: CPU trainer only; cuBLASLt has no E5M2 x E5M2 GEMM on Hopper)");
    usage_flag("-fp8_recipe delayed|current", "TE's DelayedScaling, or Float8CurrentScaling", "%s",
               fp8_scaling_recipe_name(r->scaling));
    usage_flag("-fp8_margin N", "scale = fp8_max / amax / 2^margin", "%d", r->margin);
    usage_flag("-fp8_fprop 0|1", "1: run the forward GEMMs in FP8, 0: in BF16", "%d", !r->override_fprop);
    usage_flag("-fp8_dgrad 0|1", "the same for the input-gradient GEMMs", "%d", !r->override_dgrad);
    usage_flag("-fp8_wgrad 0|1", "the same for the weight-gradient GEMMs", "%d", !r->override_wgrad);
    usage_flag("-fp8_bf16_first_last N", "the first and last N blocks stay BF16", "%d", d.fp8_bf16_first_last);
    usage_flag("-fp8_lm_head 0|1", "the LM head through FP8 too", "%d", d.fp8_lm_head);
    usage_flag("-fp8_diag_every K", "FP8 diagnostics into fp8_diag.tsv every K steps", "%d", d.fp8_diag_every);
    printf("fp8, delayed scaling only\n");
    usage_flag("-fp8_amax_history_len N", "amax history rows per slot", "%d", r->amax_history_len);
    usage_flag("-fp8_amax_compute_algo A", "max | most_recent over the history", "%s",
               amax_compute_algo_name(r->amax_compute_algo));
    usage_flag("-fp8_interval N", "recompute scales every N steps", "%d", r->interval);
    usage_flag("-fp8_reduce_amax 0|1", "all-reduce(MAX) amaxes over ranks", "%d", r->reduce_amax);
    printf("several GPUs (CUDA trainer; mpirun and srun set -pn -pr -pg)\n");
    usage_flag("-pn N", "processes", "1, or the launcher's");
    usage_flag("-pr N", "this process's rank", "0, or the launcher's");
    usage_flag("-pg N", "GPUs per node (GPU = rank modulo N)", "unset: GPU = local rank");
    usage_flag("-pi mpi|fs|tcp", "how ranks exchange the NCCL id", "mpi under mpirun; by hand: needed");
    usage_flag("-pf DIR", "shared folder for -pi fs", "none (needed with fs)");
    usage_flag("-ps IP", "rank 0's IPv4 address for -pi tcp", "none (port 12345 or $GPTFP8_PORT)");
    usage_flag("-z 0|1", "ZeRO stage", "%d", d.zero_stage);
}

static int parse_int_flag(const char* flag, const char* value, long lo, long hi) {
    char err[256];
    long v;
    if (parse_int_in_range(value, lo, hi, flag, &v, err, sizeof(err))) { die("%s", err); }
    return (int)v;
}

static float parse_float_flag(const char* flag, const char* value, float lo, float hi) {
    char* end = NULL;
    errno = 0;
    float v = value && *value ? strtof(value, &end) : 0.0f;
    if (!value || !*value || errno == ERANGE || end == value || *end != '\0' || !isfinite(v)) {
        die("invalid value '%s' for %s: expected a number in [%g, %g]", value ? value : "", flag, lo, hi);
    }
    if (v < lo || v > hi) { die("invalid value '%s' for %s: must be in [%g, %g]", value, flag, lo, hi); }
    return v;
}

static void parse_args(TrainArgs* a, int argc, char** argv) {
    train_args_default(a);
    for (int i = 1; i < argc; i++) {
        const char* flag = argv[i];
        if (strcmp(flag, "-h") == 0 || strcmp(flag, "--help") == 0) { print_usage(argv[0]); exit(0); }
        if (flag[0] != '-') { die("unexpected argument '%s' (flags look like -b 4; -h lists them)", flag); }
        if (i + 1 >= argc) { die("flag %s needs a value (-h lists the flags)", flag); }
        const char* v = argv[++i];
        char err[256];
        if (strcmp(flag, "-i") == 0) { a->train_pattern = v; }
        else if (strcmp(flag, "-j") == 0) { a->val_pattern = v; }
        else if (strcmp(flag, "-tk") == 0) { a->tokenizer_path = v; a->tokenizer_explicit = 1; }
        else if (strcmp(flag, "-o") == 0) { a->output_dir = v; }
        else if (strcmp(flag, "-e") == 0) { a->model_spec = v; }
        else if (strcmp(flag, "-L") == 0) { a->num_layers = parse_int_flag(flag, v, 1, 1024); }
        else if (strcmp(flag, "-C") == 0) { a->channels = parse_int_flag(flag, v, 1, 65536); }
        else if (strcmp(flag, "-NH") == 0) { a->num_heads = parse_int_flag(flag, v, 1, 4096); }
        else if (strcmp(flag, "-V") == 0) { a->vocab_override = parse_int_flag(flag, v, 2, 65536); }
        else if (strcmp(flag, "-maxT") == 0) { a->max_seq_len = parse_int_flag(flag, v, 1, 1 << 20); }
        else if (strcmp(flag, "-b") == 0) { a->B = parse_int_flag(flag, v, 1, 1 << 16); }
        else if (strcmp(flag, "-t") == 0) { a->T = parse_int_flag(flag, v, 1, 1 << 20); }
        else if (strcmp(flag, "-d") == 0) { a->total_batch_size = parse_int_flag(flag, v, -1, TOTAL_BATCH_MAX); }
        else if (strcmp(flag, "-l") == 0) { a->learning_rate = parse_float_flag(flag, v, 0.0f, 10.0f); }
        else if (strcmp(flag, "-u") == 0) { a->warmup_steps = parse_int_flag(flag, v, 0, 1 << 30); }
        else if (strcmp(flag, "-q") == 0) { a->final_lr_fraction = parse_float_flag(flag, v, 0.0f, 1.0f); }
        else if (strcmp(flag, "-c") == 0) { a->weight_decay = parse_float_flag(flag, v, 0.0f, 10.0f); }
        else if (strcmp(flag, "-gc") == 0) { a->grad_clip = parse_float_flag(flag, v, 1e-6f, 1e6f); }
        else if (strcmp(flag, "-x") == 0) { a->max_steps = parse_int_flag(flag, v, -1, MAX_STEPS_MAX); }
        else if (strcmp(flag, "-v") == 0) { a->val_every = parse_int_flag(flag, v, 0, 1 << 30); }
        else if (strcmp(flag, "-m") == 0) { a->val_max_steps = parse_int_flag(flag, v, 1, 1 << 30); }
        else if (strcmp(flag, "-s") == 0) { a->sample_every = parse_int_flag(flag, v, 0, 1 << 30); }
        else if (strcmp(flag, "-g") == 0) { a->gen_tokens = parse_int_flag(flag, v, 1, 1 << 20); }
        else if (strcmp(flag, "-n") == 0) { a->checkpoint_every = parse_int_flag(flag, v, 0, 1 << 30); }
        else if (strcmp(flag, "-y") == 0) { a->resume = parse_int_flag(flag, v, 0, 1); }
        else if (strcmp(flag, "-seed") == 0) { a->seed = parse_int_flag(flag, v, 0, 2147483647); }
        else if (strcmp(flag, "-r") == 0) {  // llm.c's meaning; the seed was -r before it had one, hence the hint
            long r;
            if (parse_int_in_range(v, 0, 2, flag, &r, err, sizeof(err))) {
                die("invalid value '%s' for -r (recompute): expected 0, 1 or 2 (the seed is -seed)", v);
            }
            a->recompute = (int)r;
        }
        else if (strcmp(flag, "-attn") == 0) {
            if (strcmp(v, "cudnn") == 0) { a->attention = ATTENTION_CUDNN; }
            else if (strcmp(v, "plain") == 0) { a->attention = ATTENTION_PLAIN; }
            else { die("invalid value '%s' for -attn: expected cudnn or plain", v); }
        }
        else if (strcmp(flag, "-estimate") == 0) { a->estimate_only = parse_int_flag(flag, v, 0, 1); }
        else if (strcmp(flag, "-precision") == 0) {
            if (strcmp(v, "fp32") == 0) { a->precision = PRECISION_FP32; }
            else if (strcmp(v, "bf16") == 0) { a->precision = PRECISION_BF16; }
            else if (strcmp(v, "fp8") == 0) { a->precision = PRECISION_FP8; }
            else { die("invalid value '%s' for -precision: expected one of fp32, bf16, fp8", v); }
            a->precision_set = 1;
        }
        else if (strcmp(flag, "-fp8") == 0) {
            if (strcmp(v, "off") != 0 && strcmp(v, "e4m3") != 0 && strcmp(v, "hybrid") != 0 && strcmp(v, "e5m2") != 0) {
                die("invalid value '%s' for -fp8: expected one of off, e4m3, hybrid, e5m2", v);
            }
            a->fp8_flag = v;
        }
        else if (strncmp(flag, "-fp8_", 5) == 0) {
            const char* key = flag + 5;
            if (strcmp(key, "bf16_first_last") == 0) { a->fp8_bf16_first_last = parse_int_flag(flag, v, 0, 1024); }
            else if (strcmp(key, "lm_head") == 0) { a->fp8_lm_head = parse_int_flag(flag, v, 0, 1); }
            else if (strcmp(key, "diag_every") == 0) { a->fp8_diag_every = parse_int_flag(flag, v, 0, 1 << 30); }
            else if (strcmp(key, "recipe") == 0) {
                if (parse_fp8_scaling_recipe(v, flag, &a->fp8_scaling, err, sizeof(err))) { die("%s", err); }
            }
            else if (delayed_scaling_set(&a->recipe, key, v, flag, err, sizeof(err))) {
                if (strncmp(err, "unknown", 7) == 0) { die("unknown flag %s (-h lists the flags)", flag); }
                die("%s", err);
            }
            if (strcmp(key, "amax_history_len") == 0 || strcmp(key, "amax_compute_algo") == 0 ||
                strcmp(key, "interval") == 0 || strcmp(key, "reduce_amax") == 0) {
                a->fp8_delayed_only_flag = flag;
            }
        }
        else if (strcmp(flag, "-pn") == 0) { a->num_processes = parse_int_flag(flag, v, 1, 1 << 16); }
        else if (strcmp(flag, "-pr") == 0) { a->process_rank = parse_int_flag(flag, v, 0, (1 << 16) - 1); }
        else if (strcmp(flag, "-pg") == 0) { a->gpus_per_node = parse_int_flag(flag, v, 1, 1024); }
        else if (strcmp(flag, "-pi") == 0) {
            if (strcmp(v, "mpi") != 0 && strcmp(v, "fs") != 0 && strcmp(v, "tcp") != 0) {
                die("invalid value '%s' for -pi: expected one of mpi, fs, tcp", v);
            }
            a->init_method = v;
        }
        else if (strcmp(flag, "-pf") == 0) { a->fs_path = v; }
        else if (strcmp(flag, "-ps") == 0) { a->server_ip = v; }
        else if (strcmp(flag, "-z") == 0) { a->zero_stage = parse_int_flag(flag, v, 0, 1); }
        else if (strcmp(flag, "-debug_nan_step") == 0) { a->debug_nan_step = parse_int_flag(flag, v, -1, 1 << 30); }
        else if (strcmp(flag, "-debug_kill_step") == 0) { a->debug_kill_step = parse_int_flag(flag, v, -1, 1 << 30); }
        else { die("unknown flag %s (-h lists the flags)", flag); }
    }
    // -fp8 (TE/Megatron's switch) and -precision must agree
    if (a->fp8_flag) {
        int off = strcmp(a->fp8_flag, "off") == 0;
        if (a->precision_set && ((off && a->precision == PRECISION_FP8) || (!off && a->precision != PRECISION_FP8))) {
            die("-fp8 %s conflicts with -precision %s", a->fp8_flag, precision_name(a->precision));
        }
        if (off) {
            if (!a->precision_set) { a->precision = PRECISION_BF16; }
        } else {
            char err[256];
            a->precision = PRECISION_FP8;
            if (delayed_scaling_set(&a->recipe, "fp8_format", a->fp8_flag, "-fp8", err, sizeof(err))) { die("%s", err); }
        }
    }
    // current scaling has no history, so the flags that shape one make no sense with it: refused, not ignored
    if (a->fp8_scaling == FP8_SCALING_CURRENT) {
        if (a->fp8_delayed_only_flag) {
            die("%s applies to delayed scaling only (-fp8_recipe current keeps no amax history)", a->fp8_delayed_only_flag);
        }
        float8_current_scaling_apply(&a->recipe);
    }
    if (a->resume && !a->output_dir) { die("-y 1 needs -o: the folder to resume from"); }
}

static void dirname_of(char* out, size_t outlen, const char* path) {
    snprintf(out, outlen, "%s", path);
    char* slash = strrchr(out, '/');
    if (slash) { *slash = '\0'; } else { snprintf(out, outlen, "."); }
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static FILE* open_log(const char* dir, const char* name, int append) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE* f = fopen(path, append ? "a" : "w");
    if (!f) { die("cannot open %s for writing: %s", path, strerror(errno)); }
    return f;
}

// fp8_diag.tsv's first line: its column names (fp8_diag_write_block writes the rows).
static void fp8_diag_write_header(FILE* f) {
    fprintf(f, "step\tmodule\tlayer\tgemm\ttensor\tformat\tamax\twindow_amax\tscale\tscale_inv\tsaturated_frac\t"
               "flushed_frac\n");
}

// The step a log line belongs to: main.log's "s:N trl:..." and "s:N tel:...", fp8_diag.tsv's "N\t...". Returns 0 for
// a line without one (fp8_diag.tsv's column names).
static int log_line_step(const char* line, long long* step) {
    const char* digits = strncmp(line, "s:", 2) == 0 ? line + 2 : line;
    char* end = NULL;
    errno = 0;
    long long value = strtoll(digits, &end, 10);
    if (end == digits || errno == ERANGE || (*end != ' ' && *end != '\t')) { return 0; }
    *step = value;
    return 1;
}

// Resuming from the checkpoint of `step`: cuts dir/name back to what the run had written when it saved that
// checkpoint, so that the resumed run's lines follow as in a run never interrupted. The logs are in step order and
// everything up to a checkpoint was flushed before it was saved: a main.log line of step N (the train line after step
// N - 1, the evaluation at the start of step N) and an fp8_diag.tsv block of step N (after step N - 1) were written
// before the checkpoint of step N. The first line of a later step, or an unfinished last line (a kill mid-write),
// and everything after it go. A missing file stays missing.
static void log_trim_to_step(const char* dir, const char* name, long long step) {
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE* f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT) { return; }
        die("cannot open %s to resume it: %s", path, strerror(errno));
    }
    char* line = NULL;
    size_t capacity = 0;
    long long keep = 0;  // bytes of the lines that stay
    ssize_t length;
    while ((length = getline(&line, &capacity, f)) > 0) {
        long long line_step;
        if (line[length - 1] != '\n' || (log_line_step(line, &line_step) && line_step > step)) { break; }
        keep += length;
    }
    int read_failed = ferror(f);
    free(line);
    fclose(f);
    if (read_failed) { die("cannot read %s to resume it", path); }
    if (truncate(path, (off_t)keep) != 0) { die("cannot cut %s back to step %lld: %s", path, step, strerror(errno)); }
}

// The run's logs in dir: main.log, and fp8_diag.tsv when `diagnostics` (NULL otherwise). A run from step 0 starts
// both empty; a resumed run cuts both back to its checkpoint's step, then appends (fp8_diag.tsv gets its column names
// when it is new).
static void open_run_logs(const char* dir, int start_step, int diagnostics, FILE** main_log, FILE** diag_log) {
    if (start_step > 0) {
        log_trim_to_step(dir, "main.log", start_step);
        log_trim_to_step(dir, "fp8_diag.tsv", start_step);
    }
    *main_log = open_log(dir, "main.log", start_step > 0);
    *diag_log = NULL;
    if (diagnostics) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/fp8_diag.tsv", dir);
        int is_new = start_step == 0 || file_size_of(path) <= 0;
        *diag_log = open_log(dir, "fp8_diag.tsv", !is_new);
        if (is_new) { fp8_diag_write_header(*diag_log); }
    }
}


// ----------------------------------------------------------------------------
// a run's setup, shared by both mains: tokenizer, model shape, batch, data loaders, step counts, output folder

typedef struct {
    Tokenizer tokenizer;
    int have_tokenizer;
    char tokenizer_path[1024];
    GPT2Config config;
    float* loaded_params;  // (num_parameters) from -e model.bin, else NULL: initialise from the seed
    size_t loaded_count;
    int B, T, total_batch, grad_accum_steps;
    DataLoader train_loader, val_loader;
    int have_val, train_steps, val_steps;
} RunSetup;

// process_rank / num_processes: this rank's slice of every batch (each rank reads its own B*T of every stride).
static void run_setup(TrainArgs* args, RunSetup* run, int process_rank, int num_processes) {
    char err[512];
    memset(run, 0, sizeof(*run));
    // tokenizer: an explicit path must load; otherwise tokenizer.bin beside the training data, if there is one
    if (args->tokenizer_explicit) {
        snprintf(run->tokenizer_path, sizeof(run->tokenizer_path), "%s", args->tokenizer_path);
    } else {
        char dir[1024];
        dirname_of(dir, sizeof(dir), args->train_pattern);
        snprintf(run->tokenizer_path, sizeof(run->tokenizer_path), "%s/tokenizer.bin", dir);
    }
    if (args->tokenizer_explicit || access(run->tokenizer_path, F_OK) == 0) {
        if (tokenizer_init(&run->tokenizer, run->tokenizer_path, err, sizeof(err))) { die("%s", err); }
        run->have_tokenizer = 1;
    }
    // the model's shape: from a model file, a preset, or the free sizes; vocabulary from file, tokenizer or -V
    GPT2Config* cfg = &run->config;
    if (args->model_spec[0] && gpt2_depth_preset(args->model_spec, &args->num_layers, &args->channels, &args->num_heads) != 0) {
        run->loaded_params = read_model_file(args->model_spec, cfg, &run->loaded_count);
    } else {
        cfg->num_layers = args->num_layers;
        cfg->channels = args->channels;
        cfg->num_heads = args->num_heads;
        cfg->max_seq_len = args->max_seq_len ? args->max_seq_len : (args->model_spec[0] ? 1024 : args->T);
        cfg->vocab_size = args->vocab_override ? args->vocab_override : run->have_tokenizer ? (int)run->tokenizer.vocab_size : 0;
        if (!cfg->vocab_size) { die("cannot tell the vocabulary size: give -tk tokenizer.bin, -V, or -e model.bin"); }
        cfg->padded_vocab_size = padded_vocab(cfg->vocab_size);
        if (cfg->channels % cfg->num_heads != 0) { die("-C %d is not divisible by -NH %d", cfg->channels, cfg->num_heads); }
    }
    if (run->have_tokenizer && (int)run->tokenizer.vocab_size != cfg->vocab_size) {
        die("tokenizer %s has %u tokens but the model has a vocabulary of %d", run->tokenizer_path,
            run->tokenizer.vocab_size, cfg->vocab_size);
    }
    run->B = args->B;
    run->T = args->T;
    // every product of sizes in 64 bits: -b and -t alone fit an int, their product need not
    long long BT = (long long)run->B * run->T, global_BT = BT * num_processes;
    if (run->T > cfg->max_seq_len) { die("-t %d is longer than the model's maximum sequence length %d", run->T, cfg->max_seq_len); }
    if (BT > INT_MAX) {  // token positions of a micro-batch are int indices in both trainers
        die("-b %d -t %d: B*T = %lld tokens per micro-batch, more than %d", run->B, run->T, BT, INT_MAX);
    }
    if (global_BT > TOTAL_BATCH_MAX) {  // -d, the total batch, is at most this, and it is a multiple of B*T*processes
        die("-b %d -t %d with %d processes: %lld tokens per micro-step, more than the largest total batch (%d)", run->B,
            run->T, num_processes, global_BT, TOTAL_BATCH_MAX);
    }
    run->total_batch = args->total_batch_size == -1 ? (int)global_BT : args->total_batch_size;
    if (run->total_batch <= 0 || run->total_batch % global_BT != 0) {
        if (num_processes > 1) {
            die("-d %d must be a positive multiple of B*T*processes = %d*%d*%d = %lld", run->total_batch, run->B, run->T,
                num_processes, global_BT);
        }
        die("-d %d must be a positive multiple of B*T = %d*%d = %lld", run->total_batch, run->B, run->T, BT);
    }
    run->grad_accum_steps = (int)(run->total_batch / global_BT);
    if (2 * args->fp8_bf16_first_last > cfg->num_layers) {
        die("-fp8_bf16_first_last %d leaves no FP8 block in a %d-layer model (at most %d)", args->fp8_bf16_first_last,
            cfg->num_layers, cfg->num_layers / 2);
    }
    // data
    if (dataloader_init(&run->train_loader, args->train_pattern, (size_t)run->B, (size_t)run->T, process_rank,
                        num_processes, cfg->vocab_size, err, sizeof(err))) {
        die("%s", err);
    }
    run->have_val = args->val_every > 0;
    if (run->have_val && dataloader_init(&run->val_loader, args->val_pattern, (size_t)run->B, (size_t)run->T,
                                         process_rank, num_processes, cfg->vocab_size, err, sizeof(err))) {
        die("%s", err);
    }
    run->train_steps = args->max_steps;
    if (run->train_steps == -1) {
        size_t epoch = dataloader_num_batches(&run->train_loader) / (size_t)run->grad_accum_steps;
        if (epoch > MAX_STEPS_MAX) { die("-x -1: one epoch of this data is %zu steps, more than %d: give -x", epoch, MAX_STEPS_MAX); }
        run->train_steps = epoch < 1 ? 1 : (int)epoch;
    }
    size_t val_batches = run->have_val ? dataloader_num_batches(&run->val_loader) : 0;
    run->val_steps = val_batches > (size_t)args->val_max_steps ? args->val_max_steps : (int)val_batches;
    if (args->output_dir && mkdir(args->output_dir, 0755) != 0 && errno != EEXIST) {
        die("cannot create output folder %s: %s", args->output_dir, strerror(errno));
    }
}

static void run_free(RunSetup* run) {
    dataloader_free(&run->train_loader);
    if (run->have_val) { dataloader_free(&run->val_loader); }
    if (run->have_tokenizer) { tokenizer_free(&run->tokenizer); }
    free(run->loaded_params);
}

// ----------------------------------------------------------------------------
// the start-up configuration box, drawn the same way by both trainers

// Rows "| key | value |" of one width: a value longer than its column wraps onto continuation rows (at the last space
// that fits, else mid-word), so no row spills past the right border.
enum { BOX_KEY_WIDTH = 21, BOX_VALUE_WIDTH = 72 };

static void box_rule(FILE* out) {
    fputc('+', out);
    for (int i = 0; i < BOX_KEY_WIDTH + 2; i++) { fputc('-', out); }
    fputc('+', out);
    for (int i = 0; i < BOX_VALUE_WIDTH + 2; i++) { fputc('-', out); }
    fputs("+\n", out);
}

static void box_row(FILE* out, const char* key, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static void box_row(FILE* out, const char* key, const char* fmt, ...) {
    char value[4096];
    va_list args;
    va_start(args, fmt);
    vsnprintf(value, sizeof(value), fmt, args);
    va_end(args);
    const char* rest = value;
    do {
        size_t take = strlen(rest);
        if (take > BOX_VALUE_WIDTH) {  // break before the last space that keeps the row within the column
            take = BOX_VALUE_WIDTH;
            for (size_t i = BOX_VALUE_WIDTH; i > 0; i--) {
                if (rest[i] == ' ') { take = i; break; }
            }
        }
        fprintf(out, "| %-*.*s | %-*.*s |\n", BOX_KEY_WIDTH, BOX_KEY_WIDTH, key, BOX_VALUE_WIDTH, (int)take, rest);
        key = "";
        rest += take;
        while (*rest == ' ') { rest++; }
    } while (*rest);
}

// The rows both trainers show: data, output, model, batch, optimizer, precision and the FP8 recipe. Each trainer
// draws the rules and adds its own rows (threads; device, processes, attention).
static void box_run_rows(FILE* out, const TrainArgs* args, const RunSetup* run, size_t num_parameters,
                         int num_processes) {
    const GPT2Config* c = &run->config;
    box_row(out, "train data", "%s", args->train_pattern);
    box_row(out, "val data", "%s", run->have_val ? args->val_pattern : "(none: -v 0)");
    box_row(out, "output dir", "%s", args->output_dir ? args->output_dir : "(none: no logs or checkpoints)");
    box_row(out, "model", "L %d, C %d, NH %d, V %d (Vp %d), maxT %d, %zu params", c->num_layers, c->channels,
            c->num_heads, c->vocab_size, c->padded_vocab_size, c->max_seq_len, num_parameters);
    box_row(out, "batch", "B %d, T %d%s, total %d tokens, %d accumulation steps", run->B, run->T,
            num_processes > 1 ? " per rank" : "", run->total_batch, run->grad_accum_steps);
    box_row(out, "optimizer", "AdamW lr %.2e, warmup %d, final fraction %.3f, wd %.3f, clip %.2f, %d steps",
            args->learning_rate, args->warmup_steps, args->final_lr_fraction, args->weight_decay, args->grad_clip,
            run->train_steps);
    if (args->precision != PRECISION_FP8) {
        box_row(out, "precision", "%s", precision_name(args->precision));
        return;
    }
    int first = args->fp8_bf16_first_last, last = c->num_layers - 1 - args->fp8_bf16_first_last;
    box_row(out, "precision", "fp8 in blocks %d..%d (%s, %s, %s, %s), the LM head in %s", first, last, linear_names[0],
            linear_names[1], linear_names[2], linear_names[3], args->fp8_lm_head ? "fp8" : "bf16");
    char recipe[1024] = "";
    FILE* text = fmemopen(recipe, sizeof(recipe), "w");  // delayed_scaling_print writes to a FILE
    if (text) {
        delayed_scaling_print(&args->recipe, text);
        fclose(text);
    }
    recipe[strcspn(recipe, "\n")] = '\0';
    box_row(out, "fp8 recipe", "%s", recipe);
}

// The per-step progress line on stdout and the llm.c train line in main.log. `seconds`: this step's time; the ETA
// averages the steps after the first of this process (which pays for warm-up). mfu_percent < 0: not shown.
typedef struct {
    double total_time;
    int timed_steps;
} StepTimer;

static void report_step(StepTimer* timer, FILE* main_log, int step, int start_step, int train_steps, double loss,
                        float norm, float lr, double seconds, int total_batch, double mfu_percent) {
    if (step > start_step) {
        timer->total_time += seconds;
        timer->timed_steps++;
    }
    double avg = timer->timed_steps ? timer->total_time / timer->timed_steps : seconds;
    double eta = avg * (train_steps - step - 1);
    printf("step %4d/%d | loss %.6f | norm %.4f | lr %.2e | %.2f ms | %.0f tok/s", step + 1, train_steps, loss, norm, lr,
           seconds * 1000, total_batch / seconds);
    if (mfu_percent >= 0) { printf(" | mfu %.1f%%", mfu_percent); }
    printf(" | ETA %dm%02ds\n", (int)(eta / 60), (int)eta % 60);
    fflush(stdout);
    if (main_log) {
        fprintf(main_log, "s:%d trl:%.4f lr:%.6f norm:%.2f\n", step + 1, loss, lr, norm);
        fflush(main_log);
    }
}

// ----------------------------------------------------------------------------
// the FP8 diagnostics file (fp8_diag.tsv), the same columns from both trainers (the header line: fp8_diag_write_header)

// One block of lines, one per used slot of every FP8 module: the amax the last update saw (last_amax, per slot: the
// step's amax), the amax the scale came from (window_amax, per slot: delayed scaling's window max at the end of the
// step, row 0 included; current scaling's last cast's own amax), the scale now, and the fractions of the elements
// quantized since the previous block (stats, per slot) that were clipped (saturated) or lost to underflow (flushed).
// The caller resets stats.
static void fp8_diag_write_block(FILE* f, int step, const Fp8Meta* meta, const LinearPrecision* lp,
                                 const float* last_amax, const float* window_amax, const Fp8QuantStats* stats) {
    static const char* fwd[FP8_FWD_SLOTS] = {"input", "weight", "output"};
    static const char* bwd[FP8_BWD_SLOTS] = {"grad_output", "grad_input"};
    for (int module = 0; module < meta->num_modules; module++) {
        if (!linear_is_fp8(lp, module)) { continue; }
        int is_head = module == LINEARS_PER_BLOCK * lp->num_layers;
        for (int s = 0; s < FP8_SLOTS_PER_MODULE; s++) {
            int forward = s < FP8_FWD_SLOTS, k = forward ? s : s - FP8_FWD_SLOTS;
            int slot = forward ? fp8_meta_fwd_slot(meta, module, k) : fp8_meta_bwd_slot(meta, module, k);
            const Fp8QuantStats* st = &stats[slot];
            if (st->count == 0 && last_amax[slot] == 0.0f) { continue; }  // unused slot
            fprintf(f, "%d\t%d\t%d\t%s\t%s\t%s\t%.6e\t%.6e\t%.6e\t%.6e\t%.6e\t%.6e\n", step, module,
                    is_head ? -1 : module / LINEARS_PER_BLOCK,
                    is_head ? "lm_head" : linear_names[module % LINEARS_PER_BLOCK], forward ? fwd[k] : bwd[k],
                    fp8_format_name(fp8_meta_slot_format(meta, slot)), last_amax[slot], window_amax[slot], meta->scale[slot],
                    meta->scale_inv[slot], st->count ? (double)st->saturated / st->count : 0.0,
                    st->count ? (double)st->flushed / st->count : 0.0);
        }
    }
    fflush(f);
}

// ----------------------------------------------------------------------------
// sampling, shared by both trainers: each supplies the model's next-token distribution, the loop is the same

// probs (V) = the model's distribution of the token after position t - 1 of tokens (1, T)
typedef void (*NextTokenProbs)(void* model, const int* tokens, int t, float* probs);

// The length of the valid UTF-8 sequence at s (2 to 4 bytes, no overlong forms, surrogates or code points past
// U+10FFFF), or 0 when s does not start one. s is NUL-terminated, so a cut-off sequence stops at a byte that is not
// a continuation byte.
static int utf8_sequence_length(const unsigned char* s) {
    int n;
    unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
    if (s[0] >= 0xc2 && s[0] <= 0xdf) { n = 2; }
    else if (s[0] >= 0xe0 && s[0] <= 0xef) { n = 3; if (s[0] == 0xe0) { lo = 0xa0; } if (s[0] == 0xed) { hi = 0x9f; } }
    else if (s[0] >= 0xf0 && s[0] <= 0xf4) { n = 4; if (s[0] == 0xf0) { lo = 0x90; } if (s[0] == 0xf4) { hi = 0x8f; } }
    else { return 0; }
    if (s[1] < lo || s[1] > hi) { return 0; }
    for (int i = 2; i < n; i++) {
        if (s[i] < 0x80 || s[i] > 0xbf) { return 0; }
    }
    return n;
}

// Prints a decoded token so that logs stay text (valid UTF-8 without control characters): newline, tab, printable
// ASCII and whole UTF-8 sequences as they are; every other byte (control bytes, DEL, a byte of a UTF-8 character cut
// across tokens, a byte that is not UTF-8 at all) as \xHH.
static void print_token_piece(FILE* out, const char* piece) {
    const unsigned char* c = (const unsigned char*)piece;
    while (*c) {
        int n = *c >= 0x80 ? utf8_sequence_length(c) : 0;
        if (n > 0) {
            fwrite(c, 1, (size_t)n, out);
            c += n;
            continue;
        }
        if (*c >= 0x80 || (*c < 0x20 && *c != '\n' && *c != '\t') || *c == 0x7f) { fprintf(out, "\\x%02x", *c); }
        else { fputc(*c, out); }
        c++;
    }
}

// Generates gen_tokens tokens after an end-of-text token and prints them to `out` as they come. The model sees a
// window of T tokens (its sequence length): once the window is full it slides by one token per new token, so a sample
// may be longer than T. Evaluation mode: the trainer turns amax recording off around this. One uniform number per token.
static void sample_text_with(FILE* out, void* model, NextTokenProbs next_token_probs, int T, int V,
                             const Tokenizer* tokenizer, int gen_tokens, Rng* rng) {
    int* tokens = (int*)calloc_or_die((size_t)T, sizeof(int), "sample tokens");  // (T) the window
    float* probs = (float*)calloc_or_die((size_t)V, sizeof(float), "sample probabilities");  // (V)
    int eot = tokenizer->eot_token;  // tokenizer_init checked it against the vocabulary, run_setup the vocabulary against V
    for (int i = 0; i < T; i++) { tokens[i] = eot; }
    fprintf(out, "generating:\n---\n");
    int filled = 1;  // tokens[0, filled) are known: the model predicts the token after them
    for (int i = 0; i < gen_tokens; i++) {
        next_token_probs(model, tokens, filled, probs);
        float coin = rng_uniform(rng), cdf = 0.0f;
        int next = V - 1;
        for (int v = 0; v < V; v++) {
            cdf += probs[v];
            if (coin < cdf) { next = v; break; }
        }
        if (filled < T) {
            tokens[filled++] = next;
        } else {  // the window is full: drop its oldest token
            memmove(tokens, tokens + 1, (size_t)(T - 1) * sizeof(int));
            tokens[T - 1] = next;
        }
        const char* piece = tokenizer_decode(tokenizer, (uint32_t)next);
        if (piece) { print_token_piece(out, piece); }
        fflush(out);
    }
    fprintf(out, "\n---\n");
    free(probs);
    free(tokens);
}

// Whether the trainer samples at the start of `step`: every -s steps and at the end of training; with -x 0 (no
// training: evaluate and sample a model given with -e) once, at step 0. Needs a tokenizer; -x 0 without one says so.
static int sample_due(const TrainArgs* args, const RunSetup* run, int step) {
    if (args->sample_every <= 0) { return 0; }
    int due = run->train_steps == 0 || (step > 0 && (step % args->sample_every == 0 || step == run->train_steps));
    if (due && !run->have_tokenizer) {
        if (run->train_steps == 0) { printf("sample: none, no tokenizer (give -tk tokenizer.bin)\n"); }
        return 0;
    }
    return due;
}

// -y 1 found a checkpoint (the newest complete one is at step `latest`, -1 when none) at or past -x: nothing is left
// to train. One line, and the caller exits 0 before loading or writing anything: the run asked for is complete, so
// re-submitting a finished job succeeds.
static int resume_is_complete(const TrainArgs* args, long long latest, int train_steps) {
    if (!args->resume || latest < 0 || latest < train_steps) { return 0; }
    printf("resume: the newest checkpoint in %s is at step %lld, %s -x %d: nothing to train (raise -x to go on)\n",
           args->output_dir, latest, latest == train_steps ? "the end of" : "past", train_steps);
    return 1;
}

// ----------------------------------------------------------------------------
// checkpoints: model_%08d.bin, state_%08d_%05d.bin, DONE_%08d (see checkpoint.h), from host arrays

// The three parts of a checkpoint, in the order they must be written: the model file (rank 0), every rank's state
// file, and (after all of them, rank 0) the DONE marker a resume looks for.
static void checkpoint_save_model(const char* dir, int step, const GPT2Config* config, const float* params,
                                  size_t num_parameters) {
    char path[1024], err[512];
    int32_t header[256];
    model_header_fill(header, config);
    snprintf(path, sizeof(path), "%s/model_%08d.bin", dir, step);
    if (model_file_write(path, header, params, num_parameters, err, sizeof(err))) { die("%s", err); }
}

static void checkpoint_save_state(const char* dir, int step, const float* m, const float* v, const StateHeader* h,
                                  const StateFp8Arrays* fp8) {
    char path[1024], err[512];
    snprintf(path, sizeof(path), "%s/state_%08d_%05d.bin", dir, step, h->process_rank);
    if (state_file_write(path, h, m, v, fp8, err, sizeof(err))) { die("%s", err); }
}

static void checkpoint_mark_done(const char* dir, int step) {
    char path[1024], err[512];
    snprintf(path, sizeof(path), "%s/DONE_%08d", dir, step);
    AtomicFile done;
    if (atomic_open(&done, path, err, sizeof(err)) || atomic_commit(&done, err, sizeof(err))) { die("%s", err); }
}

// One process: all three.
static void checkpoint_save(const char* dir, int step, const GPT2Config* config, const float* params, const float* m,
                            const float* v, const StateHeader* h, const StateFp8Arrays* fp8) {
    checkpoint_save_model(dir, step, config, params, (size_t)h->num_parameters);
    checkpoint_save_state(dir, step, m, v, h, fp8);
    checkpoint_mark_done(dir, step);  // DONE last: a resume only trusts a step whose files are all complete
}

static int same_config(const GPT2Config* a, const GPT2Config* b) {
    return a->max_seq_len == b->max_seq_len && a->vocab_size == b->vocab_size &&
           a->padded_vocab_size == b->padded_vocab_size && a->num_layers == b->num_layers &&
           a->num_heads == b->num_heads && a->channels == b->channels;
}

// A resume continues the run that wrote the checkpoint: every setting its state header records must be this run's
// too (the FP8 ones when it trains in FP8). The first that differs is one line: the flag, the checkpoint's value and
// this run's. What the header does not record may change on resume (steps, learning-rate schedule, evaluation,
// sampling, checkpoint interval, diagnostics; see the README).
typedef struct {
    const char* flag;
    long long checkpoint, run;
    const char* const* names;  // value -> name, or NULL: printed as a number
    int num_names;
} ResumeSetting;

static void checkpoint_check_same_run(const char* path, const StateHeader* file, const StateHeader* run) {
    static const char* const precisions[] = {"fp32", "bf16", "fp8"};
    static const char* const formats[] = {"e4m3", "hybrid", "e5m2"};
    static const char* const algos[] = {"max", "most_recent", "callback"};
    static const char* const scalings[] = {"delayed", "current"};
    const DelayedScaling *f = &file->recipe, *r = &run->recipe;
    int fp8 = run->precision == PRECISION_FP8;
    // the override flags in the trainer's sense: -fp8_fprop 1 is that GEMM in FP8 (override 0)
    ResumeSetting settings[] = {
        {"-precision", file->precision, run->precision, precisions, 3},
        {"-b", file->B, run->B, NULL, 0},
        {"-t", file->T, run->T, NULL, 0},
        {"-d", file->total_batch, run->total_batch, NULL, 0},
        {fp8 ? "-fp8_recipe" : NULL, f->scaling, r->scaling, scalings, 2},
        {fp8 ? "-fp8" : NULL, f->fp8_format, r->fp8_format, formats, 3},
        {fp8 ? "-fp8_amax_history_len" : NULL, f->amax_history_len, r->amax_history_len, NULL, 0},
        {fp8 ? "-fp8_amax_compute_algo" : NULL, f->amax_compute_algo, r->amax_compute_algo, algos, 3},
        {fp8 ? "-fp8_margin" : NULL, f->margin, r->margin, NULL, 0},
        {fp8 ? "-fp8_interval" : NULL, f->interval, r->interval, NULL, 0},
        {fp8 ? "-fp8_fprop" : NULL, !f->override_fprop, !r->override_fprop, NULL, 0},
        {fp8 ? "-fp8_dgrad" : NULL, !f->override_dgrad, !r->override_dgrad, NULL, 0},
        {fp8 ? "-fp8_wgrad" : NULL, !f->override_wgrad, !r->override_wgrad, NULL, 0},
        {fp8 ? "-fp8_reduce_amax" : NULL, f->reduce_amax, r->reduce_amax, NULL, 0},
        {fp8 ? "-fp8_bf16_first_last" : NULL, file->fp8_bf16_first_last, run->fp8_bf16_first_last, NULL, 0},
        {fp8 ? "-fp8_lm_head" : NULL, file->fp8_lm_head, run->fp8_lm_head, NULL, 0},
    };
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
        const ResumeSetting* st = &settings[i];
        if (!st->flag || st->checkpoint == st->run) { continue; }
        char was[32], now[32];
        if (st->names && st->checkpoint >= 0 && st->checkpoint < st->num_names) {
            snprintf(was, sizeof(was), "%s", st->names[st->checkpoint]);
        } else {
            snprintf(was, sizeof(was), "%lld", st->checkpoint);
        }
        if (st->names && st->run >= 0 && st->run < st->num_names) {
            snprintf(now, sizeof(now), "%s", st->names[st->run]);
        } else {
            snprintf(now, sizeof(now), "%lld", st->run);
        }
        die("%s: cannot resume: %s is %s in the checkpoint but %s in this run (resume with %s %s, or start a new run "
            "in another -o)", path, st->flag, was, now, st->flag, was);
    }
}

// Loads checkpoint `step` of `dir` into params, m, v and (when the run has FP8 state) fp8's arrays, after checking
// that it was written by this run (model, process layout, every setting of checkpoint_check_same_run); on return h
// holds the file's step, RNG and data position.
static void checkpoint_load(const char* dir, int step, const GPT2Config* config, float* params, float* m, float* v,
                            StateHeader* h, const StateFp8Arrays* fp8) {
    char path[1024], err[512];
    snprintf(path, sizeof(path), "%s/model_%08d.bin", dir, step);
    GPT2Config file_config;
    size_t n;
    float* file_params = read_model_file(path, &file_config, &n);
    int same = same_config(&file_config, config);
    if (same) { memcpy(params, file_params, n * sizeof(float)); }
    free(file_params);
    if (!same) {
        die("%s: checkpoint model (L %d, C %d, NH %d, V %d, maxT %d) differs from the run's (L %d, C %d, NH %d, V %d, maxT %d)",
            path, file_config.num_layers, file_config.channels, file_config.num_heads, file_config.vocab_size,
            file_config.max_seq_len, config->num_layers, config->channels, config->num_heads, config->vocab_size,
            config->max_seq_len);
    }
    snprintf(path, sizeof(path), "%s/state_%08d_%05d.bin", dir, step, h->process_rank);
    StateHeader file;
    if (state_file_read_header(path, &file, err, sizeof(err))) { die("%s", err); }
    if (file.num_processes != h->num_processes) {
        die("%s: written by %d processes, this run has %d", path, file.num_processes, h->num_processes);
    }
    if (file.num_parameters != h->num_parameters) { die("%s: parameter count does not match the model", path); }
    if (file.opt_offset != h->opt_offset || file.opt_count != h->opt_count) {
        die("%s: holds the optimizer state of parameters [%lld, %lld), this rank owns [%lld, %lld) (same -pn and -z "
            "as the run that wrote it)", path, (long long)file.opt_offset, (long long)(file.opt_offset + file.opt_count),
            (long long)h->opt_offset, (long long)(h->opt_offset + h->opt_count));
    }
    checkpoint_check_same_run(path, &file, h);
    if (file.fp8_modules != h->fp8_modules) {  // same model and precision, so only a corrupt file gets here
        die("%s: corrupt state file (%d FP8 modules, the model has %d)", path, file.fp8_modules, h->fp8_modules);
    }
    if (state_file_read_body(path, &file, m, v, fp8, err, sizeof(err))) { die("%s", err); }
    if (file.fp8_modules && state_fp8_check(path, &file, fp8, err, sizeof(err))) { die("%s", err); }
    h->step = file.step;
    h->rng_state = file.rng_state;
    h->shard_index = file.shard_index;
    h->shard_position = file.shard_position;
}

#endif  // GPTFP8_TRAIN_COMMON_H
