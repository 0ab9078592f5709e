/*
dev/attention_one_layer.c — one block's attention of one training step with -fp8_attention 1 or 2, taken apart: what each
of FP8 attention's casts (q k v, the softmax weights P, the output o) does to the attention's output, and what its
BF16 backward then gives for the gradient of q, k and v, each against the attention computed in double precision.
doc/fp8_attention.md quotes its tables, doc/make_fp8_attention_numbers.sh runs it.

    attention_one_layer LAYER [flags of a -precision fp8 -fp8_attention 1|2 run, with -o DIR -y 1 -resume_step STEP]

resumes the run's checkpoint STEP exactly as the trainer would (STEP 0: the run's initialization, before its first
step; the trainer's own code, train_gpt_fp8.c included with TESTING), runs the forward and backward of the step that
follows and takes block LAYER's attention: its input qkv (the qkv GEMM's bf16 output, made again here where a
-fp8_attention 2 run left q, k, v's E4M3 values in its place), the gradient its output receives, and the run's
scales. Then it prints
  the casts   the scale each of q k v, P and o was cast with, the tensor's amax, saturated and flushed elements;
  forward     the output's error against the attention in double from the same bf16 qkv, one quantization added at a
              time: BF16 attention (the BF16 trainer's), q k v in E4M3, P in E4M3 as the CPU trainer quantizes it
              (normalized), P as a flash kernel quantizes it (per key tile, before normalizing: what cuDNN's kernel
              is expected to do, dev/cuda/attention_cudnn_fp8 checks), o in E4M3 after either;
  backward    the error of the gradient of q, k and v against the double backward from the same output gradient:
              the BF16 trainer's, then FP8 attention's BF16 backward from each input the trainer can give it (the
              weights recomputed from q and k with the FP8 forward's statistics, D = rowsum(dout * o) from the E4M3
              output, as cuDNN's backward takes them): from the bf16 q k v (-fp8_attention 1), the same with D from
              other sources, and from the E4M3 q k v in bf16 (-fp8_attention 2): where its error comes from.
The FP8 forward, and the backward of the run's -fp8_attention, that it computes must be the trainer's, bit for bit
(checked: it stops if they are not).
Nothing is written; the run's folder is not changed.
*/
#define TESTING
// the trainer's main() is compiled out, so its helpers look unused here
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../train_gpt_fp8.c"
#include "one_step.h"

// The key tile of the flash-style emulation: a kernel's tile is not published; 64 keys is a common Hopper width.
#define KEY_TILE 64

typedef struct {
    double relative_l2, max_abs;
} Error;

// x against ref over n elements taken `width` at a time every `stride` from `first` (a column range of rows)
static Error error_of(const float* x, const double* ref, size_t rows, size_t stride, size_t first, size_t width) {
    double err = 0.0, norm = 0.0, max_abs = 0.0;
    for (size_t r = 0; r < rows; r++) {
        for (size_t i = first; i < first + width; i++) {
            double d = (double)x[r * stride + i] - ref[r * stride + i];
            err += d * d;
            norm += ref[r * stride + i] * ref[r * stride + i];
            max_abs = fmax(max_abs, fabs(d));
        }
    }
    Error e = {norm > 0.0 ? sqrt(err / norm) : 0.0, max_abs};
    return e;
}

// The attention of qkv (B, T, 3C) in double, out (B, T, C), and its backward from dout (B, T, C) into dqkv
// (B, T, 3C): softmax weights p, dp = dout . v, dscore = p (dp - sum p dp), the textbook's arithmetic.
static void attention_reference(double* out, double* dqkv, const float* qkv, const float* dout, int B, int T, int C,
                                int NH) {
    int hs = C / NH;
    double scale = 1.0 / sqrt((double)hs);
    memset(dqkv, 0, (size_t)B * T * 3 * C * sizeof(double));
    int failed = 0;
#pragma omp parallel for reduction(| : failed)
    for (int bh = 0; bh < B * NH; bh++) {  // the (b, h) pairs write disjoint parts of dqkv
        int b = bh / NH, h = bh % NH;
        double* p = (double*)malloc(2 * (size_t)T * sizeof(double));
        if (!p) {
            failed = 1;
            continue;
        }
        double* dp = p + T;
        for (int t = 0; t < T; t++) {
            const float* q = qkv + ((size_t)b * T + t) * 3 * C + (size_t)h * hs;
            double maxval = -INFINITY, sum = 0.0, D = 0.0;
            for (int u = 0; u <= t; u++) {
                const float* k = qkv + ((size_t)b * T + u) * 3 * C + C + (size_t)h * hs;
                double dot = 0.0;
                for (int i = 0; i < hs; i++) { dot += (double)q[i] * k[i]; }
                p[u] = dot * scale;
                maxval = fmax(maxval, p[u]);
            }
            for (int u = 0; u <= t; u++) {
                p[u] = exp(p[u] - maxval);
                sum += p[u];
            }
            const float* dout_t = dout + ((size_t)b * T + t) * C + (size_t)h * hs;
            double* o = out + ((size_t)b * T + t) * C + (size_t)h * hs;
            for (int i = 0; i < hs; i++) { o[i] = 0.0; }
            for (int u = 0; u <= t; u++) {
                const float* v = qkv + ((size_t)b * T + u) * 3 * C + 2 * C + (size_t)h * hs;
                p[u] /= sum;
                dp[u] = 0.0;
                for (int i = 0; i < hs; i++) {
                    o[i] += p[u] * v[i];
                    dp[u] += (double)dout_t[i] * v[i];
                }
                D += p[u] * dp[u];
            }
            double* dq = dqkv + ((size_t)b * T + t) * 3 * C + (size_t)h * hs;
            for (int u = 0; u <= t; u++) {
                const float* k = qkv + ((size_t)b * T + u) * 3 * C + C + (size_t)h * hs;
                double* dk = dqkv + ((size_t)b * T + u) * 3 * C + C + (size_t)h * hs;
                double* dv = dk + C;
                double g = p[u] * (dp[u] - D) * scale;
                for (int i = 0; i < hs; i++) {
                    dq[i] += g * k[i];
                    dk[i] += g * q[i];
                    dv[i] += p[u] * dout_t[i];
                }
            }
        }
        free(p);
    }
    if (failed) { die("out of memory for the reference's rows (%d doubles)", 2 * T); }
}

// P quantized as a flash kernel quantizes it: per tile of KEY_TILE keys, exp(s - the running max) cast with the S
// scale before it multiplies v, the row's sum of the unquantized exponentials (the model llmc/attention_fp8_reference.h
// states), the accumulator rescaled when the max grows, normalized at the end. The scores from qkv_fp8 (the
// dequantized E4M3 q k v), in double. out (B, T, C); stats: the P casts' diagnostics. Returns their amax (1: each
// tile's largest exponential is exp(0)).
static float attention_forward_key_tiles(float* out, Fp8QuantStats* stats, const float* qkv_fp8, int B, int T, int C,
                                         int NH, float scale_s, float scale_inv_s, Fp8Format format) {
    int hs = C / NH;
    double scale = 1.0 / sqrt((double)hs);
    float fp8_max_value = fp8_max(format);
    long long count = 0, saturated = 0, flushed = 0;
    int failed = 0;
    float amax = 0.0f;
#pragma omp parallel for reduction(+ : count, saturated, flushed) reduction(| : failed) reduction(max : amax)
    for (int bh = 0; bh < B * NH; bh++) {
        int b = bh / NH, h = bh % NH;
        double* s = (double*)malloc(((size_t)KEY_TILE + hs) * sizeof(double));
        if (!s) {
            failed = 1;
            continue;
        }
        double* acc = s + KEY_TILE;
        for (int t = 0; t < T; t++) {
            const float* q = qkv_fp8 + ((size_t)b * T + t) * 3 * C + (size_t)h * hs;
            double running_max = -INFINITY, l = 0.0;
            for (int i = 0; i < hs; i++) { acc[i] = 0.0; }
            for (int u0 = 0; u0 <= t; u0 += KEY_TILE) {
                int n = t + 1 - u0 < KEY_TILE ? t + 1 - u0 : KEY_TILE;
                double tile_max = running_max;
                for (int j = 0; j < n; j++) {
                    const float* k = qkv_fp8 + ((size_t)b * T + u0 + j) * 3 * C + C + (size_t)h * hs;
                    double dot = 0.0;
                    for (int i = 0; i < hs; i++) { dot += (double)q[i] * k[i]; }
                    s[j] = dot * scale;
                    tile_max = fmax(tile_max, s[j]);
                }
                double rescale = exp(running_max - tile_max);  // 0 for the first tile
                l *= rescale;
                for (int i = 0; i < hs; i++) { acc[i] *= rescale; }
                for (int j = 0; j < n; j++) {
                    const float* v = qkv_fp8 + ((size_t)b * T + u0 + j) * 3 * C + 2 * C + (size_t)h * hs;
                    double e = exp(s[j] - tile_max);
                    l += e;
                    amax = fmaxf(amax, (float)e);
                    float scaled = (float)e * scale_s;
                    float w = fp8_round(scaled, format) * scale_inv_s;
                    count++;
                    saturated += fabsf(scaled) > fp8_max_value;
                    flushed += e != 0.0 && w == 0.0f;
                    for (int i = 0; i < hs; i++) { acc[i] += (double)w * v[i]; }
                }
                running_max = tile_max;
            }
            float* o = out + ((size_t)b * T + t) * C + (size_t)h * hs;
            for (int i = 0; i < hs; i++) { o[i] = (float)(acc[i] / l); }
        }
        free(s);
    }
    if (failed) { die("out of memory for the key tiles' scratch"); }
    stats->count = count;
    stats->saturated = saturated;
    stats->flushed = flushed;
    return amax;
}

// The P casts of the normalized weights att (B, NH, T, T; causal) with the S scale: the CPU trainer's quantization
static Fp8QuantStats normalized_weight_casts(const float* att, int B, int NH, int T, float scale_s,
                                             Fp8Format format) {
    Fp8QuantStats st = {0, 0, 0};
    float fp8_max_value = fp8_max(format);
    for (size_t row = 0; row < (size_t)B * NH * T; row++) {
        int t = (int)(row % (size_t)T);
        for (int u = 0; u <= t; u++) {
            float a = att[row * T + u], scaled = a * scale_s;
            st.count++;
            st.saturated += fabsf(scaled) > fp8_max_value;
            st.flushed += a != 0.0f && fp8_round(scaled, format) == 0.0f;
        }
    }
    return st;
}

static void print_cast(const char* name, Fp8Format format, float scale, float amax, const Fp8QuantStats* s) {
    printf("%-34s %-5s %10.4g %10.4g %8.4f %9lld (%7.4f%%) %9lld (%7.4f%%)\n", name, fp8_format_name(format),
           (double)scale, (double)amax, (double)(amax * scale / fp8_max(format)), s->saturated,
           100.0 * (double)s->saturated / (double)s->count, s->flushed,
           100.0 * (double)s->flushed / (double)s->count);
}

static void print_forward(const char* name, const float* out, const double* ref, size_t BT, size_t C) {
    Error e = error_of(out, ref, BT, C, 0, C);
    printf("%-62s %9.4f%% %10.4g\n", name, 100.0 * e.relative_l2, e.max_abs);
}

static void print_backward(const char* name, const float* dqkv, const double* ref, size_t BT, size_t C) {
    printf("%-62s", name);
    for (int part = 0; part < 3; part++) {
        Error e = error_of(dqkv, ref, BT, 3 * C, part * C, C);
        printf(" %9.4f%%", 100.0 * e.relative_l2);
    }
    printf("\n");
}

static float* round_bf16(float* x, size_t n) {
    for (size_t i = 0; i < n; i++) { x[i] = bf16_round(x[i]); }
    return x;
}

// The first float that differs between a and b (bits), or -1
static long long first_difference(const float* a, const float* b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (fp8_float_bits(a[i]) != fp8_float_bits(b[i])) { return (long long)i; }
    }
    return -1;
}

int main(int argc, char** argv) {
    fail_at_exit_if_stdout_fails();  // the tables are the report: a lost row is an error
    if (argc < 2 || argv[1][0] < '0' || argv[1][0] > '9') {
        fprintf(stderr, "usage: attention_one_layer LAYER [trainer flags of a -precision fp8 -fp8_attention 1|2 run, "
                        "with -o DIR -y 1 -resume_step STEP (0: from its initialization)]\n");
        return 2;
    }
    int layer = atoi(argv[1]);
    argv[1] = argv[0];  // parse_args reads the run's flags as argv[1..]
    TrainArgs args;
    parse_args(&args, argc - 1, argv + 1);
    if (!args.resume || args.resume_step < 0 || args.precision != PRECISION_FP8 || !args.fp8_attention) {
        die("give the flags of a -precision fp8 -fp8_attention 1 (or 2) run, with -o DIR -y 1 -resume_step STEP: "
            "the checkpoint whose next step to take apart (0: the run's initialization)");
    }
    RunSetup run;
    run_setup(&args, &run, 0, 1);
    if (layer >= run.config.num_layers) { die("layer %d: the model has %d", layer, run.config.num_layers); }
    GPT2 model;
    one_step_after_checkpoint(&model, &run, &args);
    LinearPrecision lp = gpt2_linear_precision(&model);
    if (!attention_is_fp8(&lp, layer)) {
        die("block %d's attention is BF16 in this run (-fp8_bf16_first_last)", layer);
    }

    int B = run.B, T = run.T, C = run.config.channels, NH = run.config.num_heads, hs = C / NH;
    size_t BT = (size_t)B * T, BTC = BT * C, att_size = (size_t)B * NH * T * T, l = (size_t)layer;
    // the qkv GEMM's output, made again without recording anything (the same scales, the same bits): with
    // -fp8_attention 1 it is what the trainer kept, with 2 the trainer kept q, k, v's E4M3 values in its place
    float* qkv = (float*)calloc_or_die(BTC * 3, sizeof(float), "the qkv GEMM's output");
    model.training = 0;
    linear_forward(&model, layer * LINEARS_PER_BLOCK + LINEAR_QKV, qkv, model.acts.ln1 + l * BTC, B, T);
    model.training = 1;
    if (args.fp8_attention == FP8_ATTENTION_DPA && first_difference(qkv, model.acts.qkv + l * BTC * 3, BTC * 3) >= 0) {
        die("the qkv GEMM's output made again differs from the trainer's: this tool no longer computes what "
            "train_gpt_fp8.c does");
    }
    const float* trainer_out = model.acts.atty + l * BTC;
    const float* dout = model.grads_acts.atty + l * BTC;
    const float* trainer_dqkv = model.grads_acts.qkv + l * BTC * 3;
    const Fp8Meta* meta = &model.fp8;
    int qkv_slot = fp8_meta_fwd_slot(meta, layer * LINEARS_PER_BLOCK + LINEAR_QKV, FP8_FWD_OUTPUT);
    int s_slot = fp8_meta_fwd_slot(meta, fp8_attention_module(run.config.num_layers, layer), FP8_ATTENTION_S);
    int o_slot = fp8_meta_fwd_slot(meta, layer * LINEARS_PER_BLOCK + LINEAR_ATTPROJ, FP8_FWD_INPUT);
    Fp8Format qkv_format = fp8_meta_slot_format(meta, qkv_slot), s_format = fp8_meta_slot_format(meta, s_slot);
    Fp8Format o_format = fp8_meta_slot_format(meta, o_slot);

    double* ref_out = (double*)calloc_or_die(BTC, sizeof(double), "the reference output");
    double* ref_dqkv = (double*)calloc_or_die(BTC * 3, sizeof(double), "the reference gradient");
    float* qkv_fp8 = (float*)calloc_or_die(BTC * 3, sizeof(float), "q k v in E4M3");
    uint8_t* codes = (uint8_t*)calloc_or_die(BTC * 3, 1, "codes");
    float* out = (float*)calloc_or_die(BTC, sizeof(float), "outputs");
    float* out_e4m3 = (float*)calloc_or_die(BTC, sizeof(float), "the output of the E4M3 q k v");
    float* out_fp8 = (float*)calloc_or_die(BTC, sizeof(float), "the FP8 output");
    float* preatt = (float*)calloc_or_die(att_size, sizeof(float), "scores");
    // the weights: BF16 attention's; those of the E4M3 scores (unquantized); those FP8 attention's backward takes
    float* att_bf16 = (float*)calloc_or_die(att_size, sizeof(float), "BF16 attention's weights");
    float* att_e4m3 = (float*)calloc_or_die(att_size, sizeof(float), "the E4M3 scores' weights");
    float* att_fp8 = (float*)calloc_or_die(att_size, sizeof(float), "FP8 attention's backward weights");
    float* dpreatt = (float*)calloc_or_die(att_size, sizeof(float), "score gradients");
    float* datt = (float*)calloc_or_die(att_size, sizeof(float), "weight gradients");
    float* dqkv = (float*)calloc_or_die(BTC * 3, sizeof(float), "gradients");
    attention_reference(ref_out, ref_dqkv, qkv, dout, B, T, C, NH);
    double ms = 0.0, max_out = 0.0;
    for (size_t i = 0; i < BTC; i++) {
        ms += ref_out[i] * ref_out[i];
        max_out = fmax(max_out, fabs(ref_out[i]));
    }
    printf("attention: block %d of step %d of %s, B %d, T %d, %d heads of %d; its output (double): rms %.4g, max "
           "|o| %.4g\n", layer, args.resume_step + 1, args.output_dir, B, T, NH, hs, sqrt(ms / (double)BTC), max_out);

    // the casts, with the run's scales
    printf("%-34s %-5s %10s %10s %8s %21s %21s\n", "cast", "fmt", "scale", "amax", "of range", "saturated", "flushed");
    Fp8QuantStats qkv_stats = {0, 0, 0}, s_stats, s_tile_stats, o_stats = {0, 0, 0}, o_tile_stats = {0, 0, 0};
    float qkv_amax = 0.0f, o_amax = 0.0f, o_tile_amax = 0.0f;
    fp8_quantize_dequantize(codes, qkv_fp8, qkv, BTC * 3, qkv_format, meta->scale[qkv_slot], meta->scale_inv[qkv_slot],
                            &qkv_amax, &qkv_stats);
    print_cast("q k v (qkv GEMM's output slot)", qkv_format, meta->scale[qkv_slot], qkv_amax, &qkv_stats);
    attention_forward(out_e4m3, preatt, att_e4m3, qkv_fp8, B, T, C, NH, NULL);  // q k v in E4M3, P unquantized
    s_stats = normalized_weight_casts(att_e4m3, B, NH, T, meta->scale[s_slot], s_format);
    AttentionFp8 fp8 = {qkv_fp8, meta->scale[s_slot], meta->scale_inv[s_slot], s_format, 0.0f};
    attention_forward(out_fp8, preatt, att_fp8, qkv, B, T, C, NH, &fp8);  // the trainer's, before o's cast
    print_cast("P, normalized (S slot)", s_format, meta->scale[s_slot], fp8.amax, &s_stats);
    float* out_tiles = (float*)calloc_or_die(BTC, sizeof(float), "the key tiles' output");
    float tile_amax = attention_forward_key_tiles(out_tiles, &s_tile_stats, qkv_fp8, B, T, C, NH, meta->scale[s_slot],
                                                  meta->scale_inv[s_slot], s_format);
    print_cast("P, per key tile (S slot)", s_format, meta->scale[s_slot], tile_amax, &s_tile_stats);
    float* o_dequantized = (float*)calloc_or_die(BTC, sizeof(float), "o in E4M3");
    float* o_tile_dequantized = (float*)calloc_or_die(BTC, sizeof(float), "o in E4M3 after the key tiles");
    fp8_quantize_dequantize(codes, o_dequantized, out_fp8, BTC, o_format, meta->scale[o_slot], meta->scale_inv[o_slot],
                            &o_amax, &o_stats);
    fp8_quantize_dequantize(codes, o_tile_dequantized, out_tiles, BTC, o_format, meta->scale[o_slot],
                            meta->scale_inv[o_slot], &o_tile_amax, &o_tile_stats);
    print_cast("o (attproj's input slot)", o_format, meta->scale[o_slot], o_amax, &o_stats);
    print_cast("o after the key tiles", o_format, meta->scale[o_slot], o_tile_amax, &o_tile_stats);
    round_bf16(o_dequantized, BTC);  // the bf16 tensor the projection's backward and attention's backward read
    round_bf16(o_tile_dequantized, BTC);
    long long diff = first_difference(o_dequantized, trainer_out, BTC);
    if (diff >= 0) {
        die("the FP8 forward here differs from the trainer's at element %lld (%.9g, the trainer %.9g): this tool no "
            "longer computes what train_gpt_fp8.c does", diff, (double)o_dequantized[diff], (double)trainer_out[diff]);
    }

    // the output, one quantization at a time
    printf("%-62s %10s %10s\n", "forward, against the attention in double", "rel. L2", "max |err|");
    attention_forward(out, preatt, att_bf16, qkv, B, T, C, NH, NULL);
    print_forward("BF16 attention: fp32 softmax, o in bf16 (the BF16 trainer)", round_bf16(out, BTC), ref_out, BT, C);
    print_forward("q k v in E4M3 (fp32 softmax, fp32 o)", out_e4m3, ref_out, BT, C);
    print_forward("+ P in E4M3, normalized (the CPU trainer, TE's emulation)", out_fp8, ref_out, BT, C);
    print_forward("+ P in E4M3, per key tile (a flash kernel's order)", out_tiles, ref_out, BT, C);
    print_forward("+ o in E4M3, read in bf16: FP8 attention (the CPU trainer)", o_dequantized, ref_out, BT, C);
    print_forward("+ o in E4M3 after the key tiles (a flash kernel)", o_tile_dequantized, ref_out, BT, C);

    // the backward from the gradient the output received in the run
    printf("%-62s %10s %10s %10s\n", "backward, against the double backward", "dq", "dk", "dv");
    attention_backward(dqkv, dpreatt, datt, dout, qkv, att_bf16, NULL, B, T, C, NH);
    print_backward("BF16 attention's (the BF16 trainer)", round_bf16(dqkv, BTC * 3), ref_dqkv, BT, C);
    // FP8 attention's BF16 backward from each q k v the trainer can give it, D from the E4M3 output: the bf16 ones
    // (-fp8_attention 1), whose weights att_fp8 holds; their E4M3 values in bf16 (2), whose weights are recomputed
    // here as the trainer's forward recomputes them (the FP8 forward's max and sum, from those q and k). Each
    // followed by the same with D = rowsum(dout * o) from other outputs or from its weights: where its error comes
    // from. The backward of the run's own -fp8_attention must be the trainer's, bit for bit.
    float* qkv_e4m3_bf16 = (float*)calloc_or_die(BTC * 3, sizeof(float), "q k v in E4M3, in bf16");
    memcpy(qkv_e4m3_bf16, qkv_fp8, BTC * 3 * sizeof(float));
    round_bf16(qkv_e4m3_bf16, BTC * 3);
    float* att_mha = (float*)calloc_or_die(att_size, sizeof(float), "the E4M3 q and k's backward weights");
    AttentionFp8 fp8_mha = {qkv_fp8, meta->scale[s_slot], meta->scale_inv[s_slot], s_format, 0.0f};
    attention_forward(out, preatt, att_mha, qkv_e4m3_bf16, B, T, C, NH, &fp8_mha);  // (out: the same as out_fp8)
    float* exact_out = (float*)calloc_or_die(BTC, sizeof(float), "the double output");
    for (size_t i = 0; i < BTC; i++) { exact_out[i] = (float)ref_out[i]; }
    static const struct {
        const char* name;
        int from;  // the q k v it differentiates: FP8_ATTENTION_DPA or FP8_ATTENTION_MHA
        int d;     // D from: 0 the E4M3 o (cuDNN's), 1 o before its cast, 2 the double output, 3 its own weights
    } rows[] = {
        {"FP8 attention's BF16 backward, bf16 q k v (-fp8_attention 1)", FP8_ATTENTION_DPA, 0},
        {"  the same, D from o before its E4M3 cast", FP8_ATTENTION_DPA, 1},
        {"  the same, D from the double output", FP8_ATTENTION_DPA, 2},
        {"  the same, D = sum(P dP) of its weights", FP8_ATTENTION_DPA, 3},
        {"FP8 attention's BF16 backward, E4M3 q k v (-fp8_attention 2)", FP8_ATTENTION_MHA, 0},
        {"  the same, D from the double output (E4M3 q k v)", FP8_ATTENTION_MHA, 2},
    };
    const float* d_sources[4] = {o_dequantized, out_fp8, exact_out, NULL};
    float* dqkv_mha = (float*)calloc_or_die(BTC * 3, sizeof(float), "-fp8_attention 2's gradients");
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        int mha = rows[r].from == FP8_ATTENTION_MHA;
        memset(dqkv, 0, BTC * 3 * sizeof(float));
        memset(dpreatt, 0, att_size * sizeof(float));
        memset(datt, 0, att_size * sizeof(float));
        attention_backward(dqkv, dpreatt, datt, dout, mha ? qkv_e4m3_bf16 : qkv, mha ? att_mha : att_fp8,
                           d_sources[rows[r].d], B, T, C, NH);
        round_bf16(dqkv, BTC * 3);
        if (rows[r].from == args.fp8_attention && rows[r].d == 0) {
            diff = first_difference(dqkv, trainer_dqkv, BTC * 3);
            if (diff >= 0) {
                die("the FP8 attention's backward here (-fp8_attention %d) differs from the trainer's at element "
                    "%lld: this tool no longer computes what train_gpt_fp8.c does", args.fp8_attention, diff);
            }
        }
        print_backward(rows[r].name, dqkv, ref_dqkv, BT, C);
        if (mha && rows[r].d == 0) { memcpy(dqkv_mha, dqkv, BTC * 3 * sizeof(float)); }
    }
    // -fp8_attention 2's backward is the gradient at the E4M3 q k v, so part of its distance from the double backward
    // at the bf16 ones is the gradient's own change between the two points: the same against the double backward
    // from the E4M3 q k v (in bf16, as the trainer's) leaves what the FP8 forward's o and P add
    double* ref_e4m3_out = (double*)calloc_or_die(BTC, sizeof(double), "the E4M3 q k v's reference output");
    double* ref_e4m3_dqkv = (double*)calloc_or_die(BTC * 3, sizeof(double), "the E4M3 q k v's reference gradient");
    attention_reference(ref_e4m3_out, ref_e4m3_dqkv, qkv_e4m3_bf16, dout, B, T, C, NH);
    print_backward("  the same, vs the double backward at the E4M3 q k v", dqkv_mha, ref_e4m3_dqkv, BT, C);
    free(dqkv_mha);
    free(ref_e4m3_out);
    free(ref_e4m3_dqkv);
    double norms[3] = {0.0, 0.0, 0.0};
    for (size_t i = 0; i < BTC * 3; i++) { norms[(i % (3 * (size_t)C)) / (size_t)C] += ref_dqkv[i] * ref_dqkv[i]; }
    printf("%-62s %10.4g %10.4g %10.4g\n", "their L2 norms (double)", sqrt(norms[0]), sqrt(norms[1]), sqrt(norms[2]));
    free(exact_out);
    free(qkv_e4m3_bf16);
    free(att_mha);
    free(qkv);

    free(ref_out);
    free(ref_dqkv);
    free(qkv_fp8);
    free(codes);
    free(out);
    free(out_e4m3);
    free(out_fp8);
    free(out_tiles);
    free(o_dequantized);
    free(o_tile_dequantized);
    free(preatt);
    free(att_bf16);
    free(att_e4m3);
    free(att_fp8);
    free(dpreatt);
    free(datt);
    free(dqkv);
    run_free(&run);
    gpt2_free(&model);
    return 0;
}
