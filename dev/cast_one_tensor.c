/*
dev/cast_one_tensor.c — one tensor of one training step, cast with each of the four FP8 recipes: what each does to
it (how many scales, their range, what saturates, what flushes, how far the values it hands the GEMM are from the
tensor). doc/four_recipes.md quotes its table, doc/make_four_recipes_numbers.sh runs it.

    cast_one_tensor LAYER GEMM TENSOR [trainer flags of a run, with -o DIR -y 1 -resume_step STEP]

resumes the run's checkpoint STEP exactly as the trainer would (the same model, FP8 state and data position: the
trainer's own code, train_gpt_fp8.c included with TESTING), runs the forward and backward of the step that follows
(the batch that step trains on) and takes one tensor of it: GEMM qkv | attproj | fc | fcproj of block LAYER, TENSOR
input | weight | grad_output (the bf16 values the GEMM's casts read). Then it casts that tensor with
  delayed    the run's own scale for it (if the run is delayed scaling: the cast the run made at that step)
  current    a scale from the tensor's own amax
  blockwise  1x128 blocks (a weight: 128x128 tiles), rowwise and columnwise copies, power-of-two scales
  mxfp8      1x32 blocks, rowwise and columnwise copies, E8M0 scales
each in its recipe's default format (HYBRID for the per-tensor recipes: E5M2 gradients; E4M3 for the block recipes),
and prints one line per copy. Nothing is written; the run's folder is not changed.
*/
#define TESTING
// the trainer's main() is compiled out, so its helpers look unused here
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../train_gpt_fp8.c"
#include "one_step.h"

// What one cast of the tensor gave: its codes' diagnostics, its scales, and the relative L2 error of the values the
// GEMM multiplies.
typedef struct {
    const char *recipe, *copy;
    Fp8Format format;
    size_t scales;
    float scale_min, scale_max;
    Fp8QuantStats stats;
    double relative_error;
} CastReport;

static double relative_error(const float* x, const float* dequantized, size_t n) {
    double err = 0.0, norm = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)dequantized[i] - (double)x[i];
        err += d * d;
        norm += (double)x[i] * x[i];
    }
    return norm > 0.0 ? sqrt(err / norm) : 0.0;
}

static void print_report(const CastReport* r) {
    const Fp8QuantStats* s = &r->stats;
    printf("%-10s %-22s %-5s %7zu  %-10.4g %-10.4g %9lld (%7.4f%%) %9lld (%7.4f%%)  %.4f%%\n", r->recipe, r->copy,
           fp8_format_name(r->format), r->scales, (double)r->scale_min, (double)r->scale_max, s->saturated,
           100.0 * (double)s->saturated / (double)s->count, s->flushed, 100.0 * (double)s->flushed / (double)s->count,
           100.0 * r->relative_error);
}

// One block-scaled copy of x (rows, cols) in `shape` blocks.
static CastReport block_copy(const char* recipe_name, const char* copy, Fp8ScalingRecipe scaling, const float* x,
                             size_t rows, size_t cols, Fp8BlockShape shape, uint8_t* codes, float* dequantized,
                             float* scratch) {
    CastReport r = {recipe_name, copy, FP8_E4M3, 0, 0.0f, 0.0f, {0, 0, 0}, 0.0};
    Fp8BlockCast cast = {scaling, FP8_E4M3, 0.0f, 1};  // TE's defaults: E4M3, epsilon 0, power-of-two scales
    Fp8BlockScaleRange range;
    fp8_block_scale_range_reset(&range);
    float amax = 0.0f;
    if (shape.cols == 1) {
        fp8_quantize_blocks_columnwise(codes, dequantized, NULL, x, rows, cols, shape.rows, &cast, &amax, &r.stats,
                                       &range, scratch);
    } else {
        fp8_quantize_blocks(codes, dequantized, NULL, x, rows, cols, shape, &cast, &amax, &r.stats, &range);
    }
    r.scales = ((rows + shape.rows - 1) / shape.rows) * ((cols + shape.cols - 1) / shape.cols);
    r.scale_min = range.scale_min;
    r.scale_max = range.scale_max;
    r.relative_error = relative_error(x, dequantized, rows * cols);
    return r;
}

int main(int argc, char** argv) {
    fail_at_exit_if_stdout_fails();  // the table is the report: a lost row is an error
    if (argc < 4 || atoi(argv[1]) < 0) {
        fprintf(stderr, "usage: cast_one_tensor LAYER qkv|attproj|fc|fcproj input|weight|grad_output [trainer flags "
                        "with -o DIR -y 1 -resume_step STEP]\n");
        return 2;
    }
    int layer = atoi(argv[1]), kind = -1, tensor = -1;
    for (int k = 0; k < LINEARS_PER_BLOCK; k++) {
        if (strcmp(argv[2], linear_names[k]) == 0) { kind = k; }
    }
    static const char* const tensors[] = {"input", "weight", "grad_output"};
    for (int t = 0; t < 3; t++) {
        if (strcmp(argv[3], tensors[t]) == 0) { tensor = t; }
    }
    if (kind < 0 || tensor < 0) {
        die("unknown GEMM '%s' or tensor '%s' (qkv|attproj|fc|fcproj, input|weight|grad_output)", argv[2], argv[3]);
    }
    // the run's flags: parse_args reads them as argv[1..]
    argv[3] = argv[0];
    TrainArgs args;
    parse_args(&args, argc - 3, argv + 3);
    if (!args.resume || args.resume_step < 0 || args.precision != PRECISION_FP8) {
        die("give the run's flags with -precision fp8 (its recipe), -o DIR -y 1 -resume_step STEP: the checkpoint to "
            "cast from");
    }
    RunSetup run;
    run_setup(&args, &run, 0, 1);
    if (layer >= run.config.num_layers) { die("layer %d: the model has %d", layer, run.config.num_layers); }
    GPT2 model;
    one_step_after_checkpoint(&model, &run, &args);

    int module = layer * LINEARS_PER_BLOCK + kind;
    LinearModule lm = linear_module(&model, module);
    size_t BT = (size_t)run.B * run.T, C = (size_t)run.config.channels, BTC = BT * C;
    size_t l = (size_t)layer;
    const float* x = NULL;
    size_t rows = BT, cols = tensor == 2 ? (size_t)lm.OC : (size_t)lm.IC;
    ActivationTensors a = model.acts, d = model.grads_acts;
    if (tensor == 1) {
        x = lm.weight;
        rows = (size_t)lm.OC;
        cols = (size_t)lm.IC;
    } else if (tensor == 0) {
        // (B*T, IC): what each GEMM's fprop reads
        const float* inputs[LINEARS_PER_BLOCK] = {a.ln1 + l * BTC, a.atty + l * BTC, a.ln2 + l * BTC,
                                                  a.fch_gelu + l * BTC * 4};
        x = inputs[kind];
    } else {
        // (B*T, OC): what each GEMM's backward reads
        const float* grads[LINEARS_PER_BLOCK] = {d.qkv + l * BTC * 3, d.attproj + l * BTC, d.fch + l * BTC * 4,
                                                 d.fcproj + l * BTC};
        x = grads[kind];
    }
    size_t n = rows * cols;
    int slot = tensor == 2 ? fp8_meta_bwd_slot(&model.fp8, module, FP8_BWD_GRAD_OUTPUT)
                           : fp8_meta_fwd_slot(&model.fp8, module, tensor == 0 ? FP8_FWD_INPUT : FP8_FWD_WEIGHT);
    // the tensor itself: its amax, and how many of its elements are zero or below each format's smallest subnormal
    float amax = fp8_amax(x, n);
    size_t zeros = 0;
    for (size_t i = 0; i < n; i++) { zeros += x[i] == 0.0f; }
    printf("tensor: block %d %s %s, (%zu, %zu), %zu elements, amax %.6g, %zu zero; the cast of step %d of %s\n", layer,
           linear_names[kind], tensors[tensor], rows, cols, n, (double)amax, zeros, args.resume_step + 1,
           args.output_dir);

    uint8_t* codes = (uint8_t*)calloc_or_die(n, 1, "codes");
    float* dequantized = (float*)calloc_or_die(n, sizeof(float), "dequantized values");
    float* scratch = (float*)calloc_or_die(2 * n, sizeof(float), "transpose scratch");
    printf("%-10s %-22s %-5s %7s  %-10s %-10s %21s %21s  %s\n", "recipe", "copy", "fmt", "scales", "min scale",
           "max scale", "saturated", "flushed", "rel. error");
    // the per-tensor recipes in their default HYBRID: E4M3 forward tensors, E5M2 gradients
    Fp8Format hybrid = tensor == 2 ? FP8_E5M2 : FP8_E4M3;
    if (model.recipe.scaling == FP8_SCALING_DELAYED) {
        Fp8Format format = fp8_meta_slot_format(&model.fp8, slot);
        float scale = model.fp8.scale[slot], scale_inv = model.fp8.scale_inv[slot], unused = 0.0f;
        CastReport r = {"delayed", "the run's scale", format, 1, scale, scale, {0, 0, 0}, 0.0};
        fp8_quantize_dequantize(codes, dequantized, x, n, format, scale, scale_inv, &unused, &r.stats);
        r.relative_error = relative_error(x, dequantized, n);
        print_report(&r);
    }
    {
        float scale = 1.0f, scale_inv = 1.0f, unused = 0.0f;
        CastReport r = {"current", "one scale per tensor", hybrid, 1, 0.0f, 0.0f, {0, 0, 0}, 0.0};
        fp8_quantize_current(codes, x, n, hybrid, 0, &scale, &scale_inv, &unused, &r.stats);
        fp8_dequantize(dequantized, codes, n, hybrid, scale_inv);
        r.scale_min = r.scale_max = scale;
        r.relative_error = relative_error(x, dequantized, n);
        print_report(&r);
    }
    for (int recipe = FP8_SCALING_BLOCKWISE; recipe <= FP8_SCALING_MXFP8; recipe++) {
        Fp8ScalingRecipe scaling = (Fp8ScalingRecipe)recipe;
        const char* name = fp8_scaling_recipe_name(scaling);
        int len = scaling == FP8_SCALING_MXFP8 ? FP8_MXFP8_BLOCK : FP8_BLOCKWISE_BLOCK;
        char rowwise[32], columnwise[32];
        snprintf(rowwise, sizeof(rowwise), "rowwise 1x%d", len);
        snprintf(columnwise, sizeof(columnwise), "columnwise %dx1", len);
        if (tensor == 1 && scaling == FP8_SCALING_BLOCKWISE) {
            CastReport r = block_copy(name, "tiles 128x128", scaling, x, rows, cols, fp8_block_shape(scaling, 1, 0),
                                      codes, dequantized, scratch);
            print_report(&r);
            continue;
        }
        CastReport r = block_copy(name, rowwise, scaling, x, rows, cols, fp8_block_shape(scaling, tensor == 1, 0),
                                  codes, dequantized, scratch);
        print_report(&r);
        r = block_copy(name, columnwise, scaling, x, rows, cols, fp8_block_shape(scaling, tensor == 1, 1), codes,
                       dequantized, scratch);
        print_report(&r);
    }
    free(codes);
    free(dequantized);
    free(scratch);
    run_free(&run);
    gpt2_free(&model);
    return 0;
}
