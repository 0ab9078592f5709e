/*
llmc/args.h — the trainers' command line: llm.c-style flags (every flag takes a value) plus the TE/Megatron-named FP8
flags, every value validated with a one-line error, their defaults in one place, and -h. Both trainers take the same
flags; the ones a trainer cannot honour it refuses itself.
*/
#ifndef GPTFP8_ARGS_H
#define GPTFP8_ARGS_H

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fp8/recipe_parse.h"
#include "linear.h"
#include "utils.h"

// The GPU trainer's attention: cuDNN's fused flash attention (llmc/cudnn_attention.cpp) or the plain CUDA/cuBLAS one
// (llmc/attention.cuh), which keeps the (B, NH, T, T) matrix of every layer.
enum { ATTENTION_DEFAULT = -1, ATTENTION_PLAIN = 0, ATTENTION_CUDNN = 1 };

typedef struct {
    const char* train_pattern;
    const char* val_pattern;
    const char* tokenizer_path;
    int train_explicit, val_explicit, tokenizer_explicit;  // -i, -j, -tk given (else -e FILE's record may set them)
    int other_tokenizer;  // -other_tokenizer 1: a tokenizer that is not the model's or the data's is a warning
    int other_data;       // -other_data 1: -y 1 resumes on data that changed since the run began (and records it)
    const char* output_dir;
    const char* model_spec;  // "" (free sizes), d12 | d24 | d36 | d48, or a model file
    int num_layers, channels, num_heads, vocab_override, max_seq_len;  // -V, -maxT: 0 when not given
    // the last of -L -C -NH given and its value (an -e preset fixes them), and the last of those, -V and -maxT (an -e
    // model file fixes all five): NULL when none was
    const char *size_flag, *size_value, *file_size_flag, *file_size_value;
    int B, T, total_batch_size;
    float learning_rate, final_lr_fraction, weight_decay, grad_clip;
    int warmup_steps, max_steps;
    int val_every, val_max_steps, sample_every, gen_tokens, checkpoint_every, resume;
    int resume_step;  // -resume_step: with -y 1, this checkpoint instead of the newest (-1: the newest)
    int start_over;   // -start_over 1: a new run in a folder with an earlier run's checkpoints removes them first
    int max_skipped;  // -max_skipped: stop after more than this many steps in a row skipped (non-finite)
    int seed;
    int recompute;  // -r, llm.c's: 0 keep every activation, 1 recompute GELU in the backward, 2 LayerNorm too (GPU)
    int attention;  // -attn (GPU): ATTENTION_CUDNN, ATTENTION_PLAIN, or ATTENTION_DEFAULT (cuDNN when built with it)
    int estimate_only;  // -estimate 1 (GPU): print the memory estimate and the largest -b that fits, then exit
    int profile_step;   // -profile_step N (GPU): step N (1-based, as printed) alone under a profiler; -1: off
    int idle_step;      // -idle_step N (GPU, with CUPTI): how long the GPU sat idle in step N (llmc/gpu_idle.h); -1: off
    // -gemm_autotune N (GPU): time cuBLASLt's first N algorithms of each GEMM problem once and keep the fastest
    // (llmc/gemm.cuh; 0 or 1: the heuristic's first, untimed); _set: given (the CPU trainer takes only 0)
    int gemm_autotune, gemm_autotune_set;
    // -cuda_graph 1 (GPU): each training micro-batch's forward and backward replayed as CUDA graphs
    // (llmc/cuda_graph.cuh)
    int cuda_graph;
    Precision precision;
    int precision_set;
    const char* fp8_flag;  // -fp8 value, resolved after parsing
    Fp8Recipe recipe;
    Fp8ScalingRecipe fp8_scaling;       // -fp8_recipe, applied to `recipe` after parsing
    const char* fp8_delayed_only_flag;  // the last flag given that only delayed scaling has (history, algo, ...)
    const char* fp8_blockwise_only_flag;  // the last flag given that only blockwise scaling has (epsilon, pow2)
    int fp8_margin_set;                 // -fp8_margin given (delayed and current scaling have a margin)
    int fp8_format_set;                 // -fp8 e4m3|hybrid|e5m2 given (the block recipes default to e4m3)
    int fp8_bf16_first_last, fp8_lm_head, fp8_diag_every;
    // -fp8_fused_casts (GPU, delayed and current scaling): 1 GELU and LayerNorm inside the FP8 casts beside them
    // where they can be, 0 their own kernels then the casts (the same bytes either way); _set: given (block recipes
    // refuse it)
    int fp8_fused_casts, fp8_fused_casts_set;
    // -fp8_attention (delayed scaling; llmc/linear.h's FP8_ATTENTION_*): 1 attention's forward in FP8 (q, k, v, the
    // softmax output and the output cast, Transformer Engine's fp8_dpa), its backward in BF16 on the bf16 q, k, v and
    // the dequantized output (TE's NVTE_FP8_DPA_BWD=0: Hopper's cuDNN has no FP8 backward at GPT-2's head size 64);
    // 2 the same, the backward on the E4M3 q, k, v dequantized (TE's fp8_mha)
    int fp8_attention;
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
static inline void train_args_default(TrainArgs* a) {
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
    a->fp8_fused_casts = 1;
    a->resume_step = -1;
    a->max_skipped = 10;
    a->debug_nan_step = -1;
    a->debug_kill_step = -1;
    a->num_processes = -1;
    a->process_rank = -1;
    a->gpus_per_node = -1;
    a->zero_stage = 1;
    a->attention = ATTENTION_DEFAULT;
    a->profile_step = -1;
    a->idle_step = -1;
    a->gemm_autotune = 8;
    fp8_recipe_default(&a->recipe);
}

// -h fits 80 columns: the flags in a column of USAGE_FLAG_WIDTH, what they do beside it, wrapped at spaces onto
// lines indented to that column, then the default in brackets, whole on the next line when the last one has no room.
enum { USAGE_COLUMNS = 80, USAGE_FLAG_WIDTH = 25, USAGE_INDENT = 2 + USAGE_FLAG_WIDTH + 1 };

// Prints text's words from column *column on, wrapped at USAGE_COLUMNS (a word longer than a line alone is cut).
static inline void usage_words(const char* text, int* column) {
    for (const char* word = text; *word;) {
        while (*word == ' ') { word++; }
        int length = (int)strcspn(word, " ");
        if (!length) { break; }
        int room = USAGE_COLUMNS - *column - (*column > USAGE_INDENT);
        if (length > room && *column > USAGE_INDENT) {
            printf("\n%*s", USAGE_INDENT, "");
            *column = USAGE_INDENT;
            room = USAGE_COLUMNS - USAGE_INDENT;
        }
        if (*column > USAGE_INDENT) { putchar(' '); (*column)++; }
        int take = length < room ? length : room;
        printf("%.*s", take, word);
        *column += take;
        word += take;
    }
}

// One line of -h (more when it wraps): the flag, what it does, and `tail` (NULL: none) kept whole where it fits.
static inline void usage_wrapped(const char* flag, const char* text, const char* tail) {
    printf("  %-*s ", USAGE_FLAG_WIDTH, flag);
    int column = USAGE_INDENT;
    usage_words(text, &column);
    if (tail) {
        int length = (int)strlen(tail);
        if (column > USAGE_INDENT && column + 1 + length > USAGE_COLUMNS) {
            printf("\n%*s", USAGE_INDENT, "");
            column = USAGE_INDENT;
        }
        usage_words(tail, &column);
    }
    putchar('\n');
}

// One flag of -h: the flag, what it does, and its default in brackets.
static inline void usage_flag(const char* flag, const char* meaning, const char* default_fmt, ...)
    __attribute__((format(printf, 3, 4)));
static inline void usage_flag(const char* flag, const char* meaning, const char* default_fmt, ...) {
    char value[256], tail[260];
    va_list args;
    va_start(args, default_fmt);
    vsnprintf(value, sizeof(value), default_fmt, args);
    va_end(args);
    snprintf(tail, sizeof(tail), "[%s]", value);
    usage_wrapped(flag, meaning, tail);
}

// A note under a flag, in the column of what the flags do.
static inline void usage_note(const char* text) { usage_wrapped("", text, NULL); }

// program: the name the trainer was run as (argv[0]), so each trainer's -h names itself.
static inline void print_usage(const char* program) {
    TrainArgs d;
    train_args_default(&d);
    const Fp8Recipe* r = &d.recipe;
    const char* slash = strrchr(program, '/');
    printf("usage: %s [flags]   (llm.c-style: every flag takes a value)\n", slash ? slash + 1 : program);
    usage_wrapped("flag", "what it does [default]", NULL);
    usage_wrapped("-h", "this list (llm.c's -h 0|1, its HellaSwag evaluation, is refused: there is none here)", NULL);
    printf("data\n");
    usage_flag("-i FILES", "train shards (a glob)", "%s", d.train_pattern);
    usage_flag("-j FILES", "val shards (a glob)", "%s", d.val_pattern);
    usage_flag("-tk FILE", "tokenizer (for sampling)", "tokenizer.bin beside the train shards, if there");
    usage_note("(-e FILE from a run folder: -i -j -tk default to its dataset.txt's)");
    usage_flag("-other_tokenizer 0|1", "1: use a tokenizer not the model's or data's", "%d (refused)", d.other_tokenizer);
    usage_flag("-other_data 0|1", "1: -y 1 on data changed since the run began", "%d (refused)", d.other_data);
    usage_flag("-o DIR", "output: main.log, fp8_diag.tsv, checkpoints", "none (no logs, no checkpoints)");
    printf("model\n");
    usage_flag("-e d12|d24|d36|d48|FILE", "a GPT-2 preset (it fixes -L -C -NH), or start from a model file (it fixes "
               "-L -C -NH -V -maxT: giving them too is refused)", "none: -L -C -NH below");
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
    usage_flag("-resume_step N", "with -y 1: from checkpoint N (later ones removed)", "the newest");
    usage_flag("-start_over 0|1", "1: remove -o's checkpoints, start a new run", "%d (a folder with some: refused)",
               d.start_over);
    printf("non-finite steps\n");
    usage_flag("-max_skipped N", "stop after more than N skipped steps in a row", "%d (a run that skips all: stops)",
               d.max_skipped);
    printf("GPU memory, attention, profiling (CPU trainer: -r 0, -estimate 0, -attn plain)\n");
    usage_flag("-r 0|1|2", "recompute in the backward: 1 GELU, 2 +LayerNorm", "%d", d.recompute);
    usage_flag("-estimate 0|1", "1: print the memory estimate, the largest -b, exit", "%d", d.estimate_only);
    usage_flag("-attn cudnn|plain", "cuDNN flash attention or the plain one", "cudnn when built with it");
    usage_flag("-profile_step N", "profile step N only: cudaProfilerStart/Stop", "off (ncu --profile-from-start off)");
    usage_flag("-idle_step N", "print step N's GPU idle time (CUPTI's trace)", "off");
    usage_flag("-gemm_autotune N", "time cuBLASLt's first N algorithms per GEMM, keep the fastest (0: its first; CPU "
               "trainer: 0); the choices kept in -o's gemm_algos files", "%d", d.gemm_autotune);
    usage_flag("-cuda_graph 0|1", "1: replay each micro-batch's forward and backward as CUDA graphs (one GPU)", "%d",
               d.cuda_graph);
    printf("precision\n");
    usage_flag("-precision fp32|bf16|fp8", "fp32 reference, BF16 baseline, FP8 linears", "%s", precision_name(d.precision));
    usage_flag("-fp8 off|e4m3|hybrid|e5m2", "Megatron's switch: off = bf16, else fp8 in it", "%s (E4M3 fwd, E5M2 bwd)",
               fp8_recipe_format_name(r->fp8_format));
    usage_note("(blockwise and mxfp8: e4m3 by default, hybrid allowed, e5m2 refused)");
    usage_note("(e5m2: CPU trainer only; cuBLASLt has no E5M2 x E5M2 GEMM on Hopper)");
    usage_flag("-fp8_recipe R", "delayed|current|blockwise|mxfp8: TE's DelayedScaling, Float8CurrentScaling, "
               "Float8BlockScaling, MXFP8BlockScaling", "%s", fp8_scaling_recipe_name(r->scaling));
    usage_note("(GPU: blockwise on Hopper's block-scaled GEMMs, H100/H200 only; mxfp8 emulated: MXFP8 casts, then BF16 "
               "GEMMs: it measures MXFP8's accuracy, not its speed)");
    usage_flag("-fp8_margin N", "scale = fp8_max / amax / 2^margin (delayed, current)", "%d", r->margin);
    usage_flag("-fp8_fprop 0|1", "1: run the forward GEMMs in FP8, 0: in BF16", "%d", !r->override_fprop);
    usage_flag("-fp8_dgrad 0|1", "the same for the input-gradient GEMMs", "%d", !r->override_dgrad);
    usage_flag("-fp8_wgrad 0|1", "the same for the weight-gradient GEMMs", "%d", !r->override_wgrad);
    usage_flag("-fp8_bf16_first_last N", "the first and last N blocks stay BF16", "%d", d.fp8_bf16_first_last);
    usage_flag("-fp8_lm_head 0|1", "the LM head through FP8 too", "%d", d.fp8_lm_head);
    usage_flag("-fp8_diag_every K", "FP8 diagnostics into fp8_diag.tsv every K steps", "%d", d.fp8_diag_every);
    usage_flag("-fp8_fused_casts 0|1", "GELU and LayerNorm inside the FP8 casts (GPU, delayed and current; 0: their "
               "own kernels, the same bits; the CPU trainer takes only 0)", "%d", d.fp8_fused_casts);
    printf("fp8, delayed scaling only\n");
    usage_flag("-fp8_amax_history_len N", "amax history rows per slot", "%d", r->delayed.amax_history_len);
    usage_flag("-fp8_amax_compute_algo A", "max | most_recent over the history", "%s",
               amax_compute_algo_name(r->delayed.amax_compute_algo));
    usage_flag("-fp8_interval N", "recompute scales every N steps", "%d", r->delayed.interval);
    usage_flag("-fp8_reduce_amax 0|1", "all-reduce(MAX) amaxes over ranks", "%d", r->delayed.reduce_amax);
    usage_flag("-fp8_attention 0|1|2", "attention's forward in FP8 (q k v, softmax, output; GPU: cuDNN's FP8 "
               "forward), its backward in BF16 from the bf16 q k v (1, TE's fp8_dpa) or their E4M3 cast (2, TE's "
               "fp8_mha)", "%d", d.fp8_attention);
    printf("fp8, blockwise scaling only\n");
    usage_flag("-fp8_amax_epsilon F", "a block's amax is at least F", "%g", (double)r->blockwise.amax_epsilon);
    usage_flag("-fp8_pow2_scales 0|1", "1: block scales rounded down to powers of two", "%d",
               r->blockwise.power_2_scale);
    printf("several GPUs (CUDA trainer; mpirun and srun set -pn -pr -pg)\n");
    usage_note("(the CPU trainer runs one process: -pn 1 and -pr 0 only; -z changes nothing there)");
    usage_flag("-pn N", "processes", "1, or the launcher's");
    usage_flag("-pr N", "this process's rank", "0, or the launcher's");
    usage_flag("-pg N", "GPUs per node (GPU = rank modulo N)", "unset: GPU = local rank");
    usage_flag("-pi mpi|fs|tcp", "how ranks exchange the NCCL id", "mpi under mpirun; by hand: needed");
    usage_flag("-pf DIR", "shared folder for -pi fs", "none (needed with fs)");
    usage_flag("-ps IP", "rank 0's IPv4 address for -pi tcp", "none (port 12345 or $GPTFP8_PORT)");
    usage_flag("-z 0|1", "ZeRO stage", "%d", d.zero_stage);
}

static inline int parse_int_flag(const char* flag, const char* value, long lo, long hi) {
    char err[256];
    long v;
    if (parse_int_in_range(value, lo, hi, flag, &v, err, sizeof(err))) { die("%s", err); }
    return (int)v;
}

static inline float parse_float_flag(const char* flag, const char* value, float lo, float hi) {
    char err[256];
    float v;
    if (parse_float_in_range(value, lo, hi, flag, &v, err, sizeof(err))) { die("%s", err); }
    return v;
}

// -e fixes the model's shape: a preset its L, C and NH (V stays the tokenizer's or -V's, maxT 1024 or -maxT's), a model
// file all five. A size flag given beside it would be ignored, so it is refused, naming both.
static inline void args_check_model_spec(const TrainArgs* a) {
    if (!a->model_spec[0]) { return; }
    int L, C, NH;
    if (gpt2_depth_preset(a->model_spec, &L, &C, &NH) == 0) {
        if (a->size_flag) {
            die("%s %s with -e %s: the preset fixes the model's shape (L %d, C %d, NH %d); leave out %s, or -e for "
                "sizes of your own", a->size_flag, a->size_value, a->model_spec, L, C, NH, a->size_flag);
        }
        return;
    }
    if (a->file_size_flag) {
        die("%s %s with -e %s: a model file fixes the model's shape (its L, C, NH, V and maxT); leave out %s, or -e to "
            "start from new weights", a->file_size_flag, a->file_size_value, a->model_spec, a->file_size_flag);
    }
}

static inline void parse_args(TrainArgs* a, int argc, char** argv) {
    train_args_default(a);
    for (int i = 1; i < argc; i++) {
        const char* flag = argv[i];
        // llm.c's -h 1 runs its HellaSwag evaluation: typed here, it must not print the flags and exit 0 as if it ran
        if (strcmp(flag, "-h") == 0 && i + 1 < argc && argv[i + 1][0] != '-') {
            die("-h %s: this trainer has no HellaSwag evaluation (llm.c's -h 0|1); -h alone lists the flags", argv[i + 1]);
        }
        if (strcmp(flag, "-h") == 0 || strcmp(flag, "--help") == 0) { print_usage(argv[0]); exit(0); }
        if (flag[0] != '-') { die("unexpected argument '%s' (flags look like -b 4; -h lists them)", flag); }
        if (i + 1 >= argc) { die("flag %s needs a value (-h lists the flags)", flag); }
        const char* v = argv[++i];
        char err[256];
        if (strcmp(flag, "-i") == 0) { a->train_pattern = v; a->train_explicit = 1; }
        else if (strcmp(flag, "-j") == 0) { a->val_pattern = v; a->val_explicit = 1; }
        else if (strcmp(flag, "-tk") == 0) { a->tokenizer_path = v; a->tokenizer_explicit = 1; }
        else if (strcmp(flag, "-other_tokenizer") == 0) { a->other_tokenizer = parse_int_flag(flag, v, 0, 1); }
        else if (strcmp(flag, "-other_data") == 0) { a->other_data = parse_int_flag(flag, v, 0, 1); }
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
        else if (strcmp(flag, "-resume_step") == 0) { a->resume_step = parse_int_flag(flag, v, 0, MAX_STEPS_MAX); }
        else if (strcmp(flag, "-start_over") == 0) { a->start_over = parse_int_flag(flag, v, 0, 1); }
        else if (strcmp(flag, "-max_skipped") == 0) { a->max_skipped = parse_int_flag(flag, v, 0, MAX_STEPS_MAX); }
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
        else if (strcmp(flag, "-profile_step") == 0) { a->profile_step = parse_int_flag(flag, v, 1, MAX_STEPS_MAX); }
        else if (strcmp(flag, "-idle_step") == 0) { a->idle_step = parse_int_flag(flag, v, 1, MAX_STEPS_MAX); }
        else if (strcmp(flag, "-gemm_autotune") == 0) {
            a->gemm_autotune = parse_int_flag(flag, v, 0, 16);  // GEMM_AUTOTUNE_MAX_ANSWERS
            a->gemm_autotune_set = 1;
        }
        else if (strcmp(flag, "-cuda_graph") == 0) { a->cuda_graph = parse_int_flag(flag, v, 0, 1); }
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
            a->fp8_format_set = strcmp(v, "off") != 0;
        }
        else if (strncmp(flag, "-fp8_", 5) == 0) {
            const char* key = flag + 5;
            if (strcmp(key, "bf16_first_last") == 0) { a->fp8_bf16_first_last = parse_int_flag(flag, v, 0, 1024); }
            else if (strcmp(key, "lm_head") == 0) { a->fp8_lm_head = parse_int_flag(flag, v, 0, 1); }
            else if (strcmp(key, "diag_every") == 0) { a->fp8_diag_every = parse_int_flag(flag, v, 0, 1 << 30); }
            else if (strcmp(key, "attention") == 0) { a->fp8_attention = parse_int_flag(flag, v, 0, 2); }
            else if (strcmp(key, "fused_casts") == 0) {
                a->fp8_fused_casts = parse_int_flag(flag, v, 0, 1);
                a->fp8_fused_casts_set = 1;
            }
            else if (strcmp(key, "recipe") == 0) {
                if (parse_fp8_scaling_recipe(v, flag, &a->fp8_scaling, err, sizeof(err))) { die("%s", err); }
            }
            else if (fp8_recipe_set(&a->recipe, key, v, flag, err, sizeof(err))) {
                if (strncmp(err, "unknown", 7) == 0) { die("unknown flag %s (-h lists the flags)", flag); }
                die("%s", err);
            }
            if (strcmp(key, "amax_history_len") == 0 || strcmp(key, "amax_compute_algo") == 0 ||
                strcmp(key, "interval") == 0 || strcmp(key, "reduce_amax") == 0) {
                a->fp8_delayed_only_flag = flag;
            }
            if (strcmp(key, "amax_epsilon") == 0 || strcmp(key, "pow2_scales") == 0) { a->fp8_blockwise_only_flag = flag; }
            if (strcmp(key, "margin") == 0) { a->fp8_margin_set = 1; }
            if (strcmp(key, "fp8_format") == 0) { a->fp8_format_set = 1; }
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
        if (strcmp(flag, "-L") == 0 || strcmp(flag, "-C") == 0 || strcmp(flag, "-NH") == 0) {
            a->size_flag = flag;
            a->size_value = v;
        }
        if (a->size_flag == flag || strcmp(flag, "-V") == 0 || strcmp(flag, "-maxT") == 0) {
            a->file_size_flag = flag;
            a->file_size_value = v;
        }
    }
    args_check_model_spec(a);
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
            if (fp8_recipe_set(&a->recipe, "fp8_format", a->fp8_flag, "-fp8", err, sizeof(err))) { die("%s", err); }
        }
    }
    // the recipes without a history (current, blockwise, mxfp8) refuse the flags that shape one, rather than ignore
    // them; likewise the margin without a per-tensor scale, and the blockwise options anywhere but blockwise
    const char* recipe_name = fp8_scaling_recipe_name(a->fp8_scaling);
    if (a->fp8_scaling != FP8_SCALING_DELAYED && a->fp8_delayed_only_flag) {
        die("%s applies to delayed scaling only (-fp8_recipe %s keeps no amax history)", a->fp8_delayed_only_flag,
            recipe_name);
    }
    if (a->fp8_scaling != FP8_SCALING_BLOCKWISE && a->fp8_blockwise_only_flag) {
        die("%s applies to -fp8_recipe blockwise only (this run's recipe is %s)", a->fp8_blockwise_only_flag,
            recipe_name);
    }
    // the flag switches the per-tensor recipes' casts with GELU and LayerNorm inside; the block recipes have their own
    if (a->fp8_scaling != FP8_SCALING_DELAYED && a->fp8_scaling != FP8_SCALING_CURRENT && a->fp8_fused_casts_set) {
        die("-fp8_fused_casts applies to delayed and current scaling only (their casts with GELU and LayerNorm inside; "
            "-fp8_recipe %s has block casts of its own)", recipe_name);
    }
    // FP8 attention takes its scales from amax histories, as cuDNN's FP8 graphs need them before they run (current
    // scaling's FP8 attention needs a newer cuDNN; the block recipes have no per-tensor scale for it)
    if (a->fp8_attention && a->precision != PRECISION_FP8) {
        die("-fp8_attention %d needs -precision fp8 (this run's is %s)", a->fp8_attention,
            precision_name(a->precision));
    }
    if (a->fp8_attention && a->recipe.fp8_format == FP8_RECIPE_E5M2) {
        die("-fp8_attention %d needs E4M3 forward tensors (q, k, v, the softmax output and the output, as cuDNN's FP8 "
            "attention takes them): -fp8 hybrid or e4m3, not e5m2", a->fp8_attention);
    }
    if (a->fp8_attention && a->fp8_scaling != FP8_SCALING_DELAYED) {
        die("-fp8_attention %d applies to delayed scaling only (-fp8_recipe %s: its scales are not known before the "
            "attention runs)", a->fp8_attention, recipe_name);
    }
    if (a->fp8_scaling == FP8_SCALING_CURRENT) { float8_current_scaling_apply(&a->recipe); }
    if (a->fp8_scaling == FP8_SCALING_BLOCKWISE || a->fp8_scaling == FP8_SCALING_MXFP8) {
        if (a->fp8_margin_set) {
            die("-fp8_margin applies to delayed and current scaling only (-fp8_recipe %s scales each block to its own "
                "amax, with no margin)", recipe_name);
        }
        if (!a->fp8_format_set) {
            a->recipe.fp8_format = FP8_RECIPE_E4M3;  // these recipes' default: E4M3 for every tensor
        } else if (a->recipe.fp8_format == FP8_RECIPE_E5M2) {
            die("-fp8 e5m2 cannot be used with -fp8_recipe %s: its tensors are E4M3 (the default) or hybrid (E5M2 "
                "gradients); TE has no pure E5M2 training", recipe_name);
        }
        float8_block_scaling_apply(&a->recipe, a->fp8_scaling);
    }
    if (a->resume && !a->output_dir) { die("-y 1 needs -o: the folder to resume from"); }
    if (a->other_data && !a->resume) { die("-other_data 1 needs -y 1: it resumes a run on data changed since it began"); }
    if (a->resume_step >= 0 && !a->resume) { die("-resume_step needs -y 1"); }
    if (a->start_over && a->resume) { die("-start_over 1 and -y 1 contradict each other: start a new run, or resume"); }
    if (a->start_over && !a->output_dir) { die("-start_over 1 needs -o: the folder to start over in"); }
}

#endif  // GPTFP8_ARGS_H
