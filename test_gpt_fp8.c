/*
test_gpt_fp8.c — CPU tests of the reference trainer's model code (train_gpt_fp8.c is included with TESTING, llm.c
style, so every static function is reachable):
  - the linear layer's GEMMs (matmul_forward / matmul_backward, llmc/gemm_cpu.h) give exactly the bits of the simple
    loops they replaced, on the trainer's shapes and odd ones; GELU (bf16 inputs through lookup tables), attention
    (transposed heads) and LayerNorm's backward (channel blocks) too;
  - a finite-difference check of every parameter tensor's gradient in fp32 (so every layer's backward);
  - FP8 mode: the amaxes recorded in row 0 equal max|x| of the very tensors each GEMM quantized, the GEMM output
    equals a direct recomputation through fp8/, unused slots stay 0;
  - FP8 mode over several steps with gradient accumulation: the histories and scales equal what an independent
    model of the update rule gives from the recorded amaxes, and the FP8 weight copies are the new weights cast
    with the new scales;
  - current scaling: each cast's scale from exactly its own tensor's amax, the GEMM through those scales, row 0 over
    the micro-steps, evaluation leaving the FP8 state alone, the end of step only clearing row 0;
  - the bf16 mode keeps every stored activation a bf16 value, and in bf16 and fp8 modes every layer reads bf16-rounded
    parameters (the GPU's bf16 copy);
  - the parallel weight initialisation gives the serial loop's bits for any thread count.
  - the data loader: ranks, wrap-around and resume; a shard set with a manifest loads only when complete and as listed.
  - the host helpers both trainers print with: sampled text with control bytes and broken UTF-8 escaped, a sample
    longer than the model's window (the window slides), the start-up box's rows all the box's width.
The training, resume and bad-input tests that run the trainer binary are in test_train_gpt_fp8.sh.
*/
#define TESTING
// the trainer's main() is compiled out, so its helpers look unused here
#pragma GCC diagnostic ignored "-Wunused-function"
#include "train_gpt_fp8.c"

#include "llmc/testing.h"
#include "test_tiny_model.h"

static void random_tokens(int* tokens, int n, int V, Rng* rng) {
    for (int i = 0; i < n; i++) { tokens[i] = (int)(rng_next_u64(rng) % (uint64_t)V); }
}

// random init with a larger spread than GPT-2's, so every gradient is well above float noise
static void init_for_test(GPT2* model, Rng* rng) {
    for (size_t i = 0; i < model->num_parameters; i++) { model->master_memory[i] = 0.3f * rng_normal(rng); }
    for (int i = 0; i < model->config.num_layers * model->config.channels; i++) {
        model->master.ln1w[i] = 1.0f + 0.1f * rng_normal(rng);
        model->master.ln2w[i] = 1.0f + 0.1f * rng_normal(rng);
    }
}

// A tiny model (B 2, T 8) with test init from `seed`, random inputs and targets from the same stream, its FP8
// weights cast (scale 1.0), and one forward + backward done: where most tests start.
enum { TEST_B = 2, TEST_T = 8 };
static void tiny_model_one_step(GPT2* model, const ModelOptions* opt, uint64_t seed, int* inputs, int* targets) {
    gpt2_allocate(model, opt, TEST_B, TEST_T);
    Rng rng;
    rng_seed(&rng, seed);
    init_for_test(model, &rng);
    random_tokens(inputs, TEST_B * TEST_T, opt->config.vocab_size, &rng);
    random_tokens(targets, TEST_B * TEST_T, opt->config.vocab_size, &rng);
    gpt2_cast_weights_fp8(model, 1);
    gpt2_zero_grad(model);
    gpt2_forward(model, inputs, targets, TEST_B, TEST_T);
    gpt2_backward(model, 1.0f);
}

static void test_gradient_check_fp32(void) {
    ModelOptions opt = tiny_options(PRECISION_FP32);
    GPT2 model;
    int B = TEST_B, T = TEST_T, inputs[TEST_B * TEST_T], targets[TEST_B * TEST_T];
    tiny_model_one_step(&model, &opt, 7, inputs, targets);
    Rng rng;  // picks the entries to check
    rng_seed(&rng, 8);
    static const char* names[NUM_PARAMETER_TENSORS] = {"wte",  "wpe",  "ln1w",    "ln1b",    "qkvw", "qkvb",
                                                       "attprojw", "attprojb", "ln2w", "ln2b", "fcw",  "fcb",
                                                       "fcprojw",  "fcprojb",  "lnfw", "lnfb"};
    size_t offset = 0;
    for (int tensor = 0; tensor < NUM_PARAMETER_TENSORS; tensor++) {
        size_t n = model.param_sizes[tensor];
        // the entry with the largest gradient, plus 5 random ones (skipping the never-used padded wte rows)
        size_t picks[6];
        size_t best = 0;
        size_t limit = tensor == 0 ? (size_t)opt.config.vocab_size * opt.config.channels : n;
        for (size_t i = 1; i < limit; i++) {
            if (fabsf(model.grads_memory[offset + i]) > fabsf(model.grads_memory[offset + best])) { best = i; }
        }
        picks[0] = best;
        for (int k = 1; k < 6; k++) { picks[k] = (size_t)(rng_next_u64(&rng) % limit); }
        double max_rel = 0.0;
        for (int k = 0; k < 6; k++) {
            size_t i = offset + picks[k];
            float saved = model.master_memory[i];
            float eps = 1e-2f;
            model.master_memory[i] = saved + eps;
            gpt2_forward(&model, inputs, targets, B, T);
            double up = model.mean_loss;
            model.master_memory[i] = saved - eps;
            gpt2_forward(&model, inputs, targets, B, T);
            double down = model.mean_loss;
            model.master_memory[i] = saved;
            double numeric = (up - down) / (2.0 * eps);
            double analytic = model.grads_memory[i];
            // tolerance: float loss noise (~1e-6 / eps) plus second-order terms of the central difference
            double tol = 2e-4 + 3e-2 * fabs(analytic);
            CHECK(fabs(numeric - analytic) <= tol, "%s[%zu]: analytic %.6g numeric %.6g", names[tensor], picks[k],
                  analytic, numeric);
            if (fabs(analytic) > 1e-3) {
                double rel = fabs(numeric - analytic) / fabs(analytic);
                max_rel = rel > max_rel ? rel : max_rel;
            }
        }
        CHECK(fabsf(model.grads_memory[offset + best]) > 1e-3f, "%s: largest gradient %g is too small to test",
              names[tensor], model.grads_memory[offset + best]);
        offset += n;
    }
    gpt2_free(&model);
}

// ----------------------------------------------------------------------------
// the linear layer's GEMMs against the simple loops they replaced, bit for bit

// The trainer's matmul_forward / matmul_backward as they were written before llmc/gemm_cpu.h (one output at a time,
// its sum over c, o or rows in order): the reference for "not a bit changed".
static void naive_matmul_forward(float* out, const float* inp, const float* weight, const float* bias, int rows, int C,
                                 int OC) {
    for (int r = 0; r < rows; r++) {
        for (int o = 0; o < OC; o++) {
            float a = bias ? bias[o] : 0.0f;
            for (int c = 0; c < C; c++) { a += inp[(size_t)r * C + c] * weight[(size_t)o * C + c]; }
            out[(size_t)r * OC + o] = a;
        }
    }
}

static void naive_matmul_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                  const float* weight, int rows, int C, int OC) {
    if (dinp) {
        for (int r = 0; r < rows; r++) {
            for (int o = 0; o < OC; o++) {
                float d = dout[(size_t)r * OC + o];
                for (int c = 0; c < C; c++) { dinp[(size_t)r * C + c] += weight[(size_t)o * C + c] * d; }
            }
        }
    }
    for (int o = 0; o < OC; o++) {
        float db = 0.0f;
        for (int r = 0; r < rows; r++) {
            float d = dout[(size_t)r * OC + o];
            db += d;
            if (dweight) {
                for (int c = 0; c < C; c++) { dweight[(size_t)o * C + c] += inp[(size_t)r * C + c] * d; }
            }
        }
        if (dbias) { dbias[o] += db; }
    }
}

static void fill_spread(float* x, size_t n, Rng* rng) {  // magnitudes over 2^-10 .. 2^10: order-sensitive sums
    for (size_t i = 0; i < n; i++) { x[i] = rng_normal(rng) * ldexpf(1.0f, (int)(rng_next_u64(rng) % 21) - 10); }
}

static int same_bits(const float* x, const float* y, size_t n) { return memcmp(x, y, n * sizeof(float)) == 0; }

static void test_matmul_bit_identical_to_naive_loops(void) {
    // (B, T, C, OC): the trainer's shapes at small scale, odd sizes, one row, k beyond one GEMM k-block
    static const int shapes[][4] = {{2, 8, 16, 48},  {2, 8, 64, 37},  {3, 13, 36, 108}, {1, 1, 5, 3},
                                    {4, 64, 64, 256}, {1, 7, 300, 17}, {5, 3, 17, 300}, {2, 33, 130, 65}};
    Rng rng;
    rng_seed(&rng, 777);
    for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
        int B = shapes[si][0], T = shapes[si][1], C = shapes[si][2], OC = shapes[si][3], rows = B * T;
        size_t n_in = (size_t)rows * C, n_out = (size_t)rows * OC, n_w = (size_t)OC * C;
        float* inp = malloc(n_in * sizeof(float));
        float* weight = malloc(n_w * sizeof(float));
        float* bias = malloc((size_t)OC * sizeof(float));
        float* dout = malloc(n_out * sizeof(float));
        float* start = malloc((n_in + n_w + OC) * sizeof(float));  // gradients accumulate onto these
        float* want = malloc((n_out + n_in + n_w + OC) * sizeof(float));
        float* got = malloc((n_out + n_in + n_w + OC) * sizeof(float));
        fill_spread(inp, n_in, &rng);
        fill_spread(weight, n_w, &rng);
        fill_spread(bias, (size_t)OC, &rng);
        fill_spread(dout, n_out, &rng);
        fill_spread(start, n_in + n_w + OC, &rng);
        for (int with_bias = 0; with_bias <= 1; with_bias++) {
            naive_matmul_forward(want, inp, weight, with_bias ? bias : NULL, rows, C, OC);
            matmul_forward(got, inp, weight, with_bias ? bias : NULL, B, T, C, OC);
            CHECK(same_bits(want, got, n_out), "forward B %d T %d C %d OC %d bias %d", B, T, C, OC, with_bias);
        }
        // backward: all three gradients together, then each alone (the trainer calls them separately)
        for (int which = 0; which < 4; which++) {
            float* w_dinp = want + n_out;
            float* w_dweight = w_dinp + n_in;
            float* w_dbias = w_dweight + n_w;
            float* g_dinp = got + n_out;
            float* g_dweight = g_dinp + n_in;
            float* g_dbias = g_dweight + n_w;
            memcpy(w_dinp, start, (n_in + n_w + OC) * sizeof(float));
            memcpy(g_dinp, start, (n_in + n_w + OC) * sizeof(float));
            int do_dinp = which == 0 || which == 1, do_dweight = which == 0 || which == 2, do_dbias = which == 0 || which == 3;
            naive_matmul_backward(do_dinp ? w_dinp : NULL, do_dweight ? w_dweight : NULL, do_dbias ? w_dbias : NULL, dout,
                                  inp, weight, rows, C, OC);
            matmul_backward(do_dinp ? g_dinp : NULL, do_dweight ? g_dweight : NULL, do_dbias ? g_dbias : NULL, dout, inp,
                            weight, B, T, C, OC);
            CHECK(same_bits(w_dinp, g_dinp, n_in), "dinp B %d T %d C %d OC %d (case %d)", B, T, C, OC, which);
            CHECK(same_bits(w_dweight, g_dweight, n_w), "dweight B %d T %d C %d OC %d (case %d)", B, T, C, OC, which);
            CHECK(same_bits(w_dbias, g_dbias, (size_t)OC), "dbias B %d T %d C %d OC %d (case %d)", B, T, C, OC, which);
        }
        free(inp);
        free(weight);
        free(bias);
        free(dout);
        free(start);
        free(want);
        free(got);
    }
}

// GELU element by element through gelu_value and gelu_derivative (llmc/gelu_math.h), without the tables: the
// reference for every input, bf16 or not.
static void naive_gelu(float* out, float* dinp, const float* inp, const float* dout, size_t N) {
    for (size_t i = 0; i < N; i++) {
        out[i] = gelu_value(inp[i]);
        dinp[i] += gelu_derivative(inp[i]) * dout[i];
    }
}

// Every bf16 value (through the tables: NaNs, infinities, subnormals included) and random fp32 values (computed
// directly) give the naive loop's bits, forward and backward.
static void test_gelu_bit_identical_to_naive_loop(void) {
    size_t n = 65536 + 20000;
    float* x = malloc(n * sizeof(float));
    float* dout = malloc(n * sizeof(float));
    float* want = malloc(2 * n * sizeof(float));
    float* got = malloc(2 * n * sizeof(float));
    Rng rng;
    rng_seed(&rng, 4242);
    for (size_t i = 0; i < 65536; i++) { x[i] = bf16_to_float((uint16_t)i); }
    for (size_t i = 65536; i < n; i++) { x[i] = rng_normal(&rng) * 3.0f; }
    fill_spread(dout, n, &rng);
    fill_spread(want + n, n, &rng);  // dinp accumulates onto these
    memcpy(got + n, want + n, n * sizeof(float));
    naive_gelu(want, want + n, x, dout, n);
    gelu_forward(got, x, n);
    gelu_backward(got + n, x, dout, n);
    size_t out_diff = 0, dinp_diff = 0, non_bf16 = 0;
    for (size_t i = 0; i < n; i++) {
        out_diff += memcmp(&want[i], &got[i], sizeof(float)) != 0;
        dinp_diff += memcmp(&want[n + i], &got[n + i], sizeof(float)) != 0;
        non_bf16 += !is_bf16_value(x[i]);
    }
    CHECK(out_diff == 0 && dinp_diff == 0, "%zu outputs and %zu input gradients of %zu differ", out_diff, dinp_diff, n);
    CHECK(non_bf16 > 19000, "the random inputs are mostly not bf16 values (%zu)", non_bf16);
    free(x);
    free(dout);
    free(want);
    free(got);
}

// gelu_derivative (llmc/gelu_math.h) at every finite bf16 x against its formula's value in double from the same
// float tanh argument a and with the same float constants (gelu_derivative_exact), so that what is measured is the
// function's own error. Bound, in u = 2^-24 relative to each term (one rounding <= u; glibc's expf <= 1 ulp <= 2u):
// e = exp(-2|a|) 2u; 1 + e u + 2u e / (1 + e) <= 2u; r = 1 / (1 + e) 3u; e r 6u; the first term (r or e r) 6u;
// sech^2 = 4 r * e r 3 + 6 + 1 = 10u; the second term x 0.5 (exact) * sech^2 * K * (1 + 0.134 x x), whose last
// factor has 3u (two products, then a sum of positive terms): 10 + 1 + 1 + 3 + 1 = 16u; their sum one more rounding.
// So the result is within 17u (|first| + |second|), where e is a normal float: |a| <= 43 (exp(-86) > FLT_MIN). The
// formula it replaced (1 + tanhf(a) and 1 / coshf(a)^2) missed this by 428419u at x = -5.19: 1 + tanhf(a) keeps only
// the bits of tanhf past its leading 1s. Beyond |a| = 43 the derivative is 1 for x > 0 and under 1e-36 for x < 0
// (checked within 2^-120); from |x| = 5.04e19 on, NaN (0 * inf, the formula's own), not checked. A NaN x gives a
// NaN of x's sign.
static void test_gelu_derivative_accuracy(void) {
    const double u = 0x1p-24;
    double worst = 0.0;
    float worst_x = 0.0f;
    int checked = 0, beyond = 0, bad = 0, nans = 0, nan_bad = 0;
    for (int bits = 0; bits < 65536; bits++) {
        float x = bf16_to_float((uint16_t)bits);
        if (isnan(x)) {  // x's own NaN, sign included, whatever order the compiler adds in (gelu_derivative_at)
            float got = gelu_derivative(x);
            nan_bad += !isnan(got) || signbit(got) != signbit(x);
            nans++;
            continue;
        }
        if (!isfinite(x) || fabsf(x) >= 5.0e19f) { continue; }
        float a = gelu_tanh_argument(x);
        float got = gelu_derivative(x);
        double magnitude;
        double error = fabs((double)got - gelu_derivative_exact(x, a, &magnitude));
        if (fabsf(a) > 43.0f) {
            beyond++;
            bad += !(error <= 0x1p-120);
            continue;
        }
        checked++;
        double in_u = error / (magnitude * u);
        bad += !(in_u <= 17.0);
        if (!(in_u <= worst)) {
            worst = in_u;
            worst_x = x;
        }
    }
    CHECK(bad == 0 && checked > 30000 && beyond > 10000,
          "%d of %d bf16 inputs (%d past |a| = 43) off: worst %.2f u at x = %g, bound 17 u", bad, checked + beyond,
          beyond, worst, worst_x);
    CHECK(nan_bad == 0 && nans == 254, "%d of %d NaN inputs give another NaN than their own sign's", nan_bad, nans);
}

// Attention as it was written before the transposed-head loops (one dot product at a time): the reference. The
// softmax and the weighted values, which did not change, are the trainer's attention_softmax_values_row.
static void naive_attention_forward(float* out, float* preatt, float* att, const float* inp, int B, int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++) {
            for (int h = 0; h < NH; h++) {
                const float* q = inp + ((size_t)b * T + t) * 3 * C + h * hs;
                float* pre = preatt + (((size_t)b * NH + h) * T + t) * T;
                float* a = att + (((size_t)b * NH + h) * T + t) * T;
                float maxval = -FLT_MAX;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float* k = inp + ((size_t)b * T + t2) * 3 * C + C + h * hs;
                    float dot = 0.0f;
                    for (int i = 0; i < hs; i++) { dot += q[i] * k[i]; }
                    dot *= scale;
                    pre[t2] = dot;
                    if (dot > maxval) { maxval = dot; }
                }
                attention_softmax_values_row(out + ((size_t)b * T + t) * C + h * hs, a, pre, maxval, inp, b, t, h, T,
                                             C, hs, NULL);
            }
        }
    }
}

// (the softmax and score part of each query's backward, unchanged, is the trainer's attention_backward_scores_row;
// out NULL or FP8 attention's stored output, as attention_backward's)
static void naive_attention_backward(float* dinp, float* dpreatt, float* datt, const float* dout, const float* inp,
                                     const float* att, const float* out, int B, int T, int C, int NH) {
    int hs = C / NH;
    float scale = 1.0f / sqrtf((float)hs);
    for (int b = 0; b < B; b++) {
        for (int h = 0; h < NH; h++) {
            for (int t = 0; t < T; t++) {
                const float* a = att + (((size_t)b * NH + h) * T + t) * T;
                float* da = datt + (((size_t)b * NH + h) * T + t) * T;
                float* dpre = dpreatt + (((size_t)b * NH + h) * T + t) * T;
                const float* dout_t = dout + ((size_t)b * T + t) * C + h * hs;
                for (int t2 = 0; t2 <= t; t2++) {
                    const float* v = inp + ((size_t)b * T + t2) * 3 * C + 2 * C + h * hs;
                    float* dv = dinp + ((size_t)b * T + t2) * 3 * C + 2 * C + h * hs;
                    float d = 0.0f;
                    for (int i = 0; i < hs; i++) {
                        d += v[i] * dout_t[i];
                        dv[i] += a[t2] * dout_t[i];
                    }
                    da[t2] += d;
                }
                const float* o = out ? out + ((size_t)b * T + t) * C + h * hs : NULL;
                attention_backward_scores_row(dinp, dpre, a, da, dout_t, o, inp, b, t, h, T, C, hs, scale);
            }
        }
    }
}

// Forward (out, preatt, att) and backward (dinp, dpreatt, datt, accumulating onto random values) bit for bit; the
// backward with the forward's output given (FP8 attention's dot with the stored output) on every other shape.
static void test_attention_bit_identical_to_naive_loops(void) {
    static const int shapes[][4] = {{2, 8, 16, 2}, {1, 13, 36, 3}, {3, 21, 72, 3}, {2, 64, 128, 4}};  // B, T, C, NH
    Rng rng;
    rng_seed(&rng, 31337);
    for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
        int B = shapes[si][0], T = shapes[si][1], C = shapes[si][2], NH = shapes[si][3];
        size_t n_inp = (size_t)B * T * 3 * C, n_out = (size_t)B * T * C, n_att = (size_t)B * NH * T * T;
        size_t n_all = n_out + 2 * n_att + n_inp + 2 * n_att;  // out, preatt, att | dinp, dpreatt, datt
        float* inp = malloc(n_inp * sizeof(float));
        float* dout = malloc(n_out * sizeof(float));
        float* want = calloc(n_all, sizeof(float));
        float* got = calloc(n_all, sizeof(float));
        for (size_t i = 0; i < n_inp; i++) { inp[i] = rng_normal(&rng) * 2.0f; }
        fill_spread(dout, n_out, &rng);
        fill_spread(want + n_out + 2 * n_att, n_inp + 2 * n_att, &rng);  // gradients accumulate onto these
        memcpy(got + n_out + 2 * n_att, want + n_out + 2 * n_att, (n_inp + 2 * n_att) * sizeof(float));
        float *w_out = want, *w_pre = want + n_out, *w_att = w_pre + n_att, *w_dinp = w_att + n_att;
        float *w_dpre = w_dinp + n_inp, *w_datt = w_dpre + n_att;
        float *g_out = got, *g_pre = got + n_out, *g_att = g_pre + n_att, *g_dinp = g_att + n_att;
        float *g_dpre = g_dinp + n_inp, *g_datt = g_dpre + n_att;
        naive_attention_forward(w_out, w_pre, w_att, inp, B, T, C, NH);
        attention_forward(g_out, g_pre, g_att, inp, B, T, C, NH, NULL);
        const float* stored_out = si % 2 ? w_out : NULL;
        naive_attention_backward(w_dinp, w_dpre, w_datt, dout, inp, w_att, stored_out, B, T, C, NH);
        attention_backward(g_dinp, g_dpre, g_datt, dout, inp, g_att, stored_out, B, T, C, NH);
        CHECK(same_bits(w_out, g_out, n_out) && same_bits(w_pre, g_pre, n_att) && same_bits(w_att, g_att, n_att),
              "forward B %d T %d C %d NH %d", B, T, C, NH);
        CHECK(same_bits(w_dinp, g_dinp, n_inp) && same_bits(w_dpre, g_dpre, n_att) && same_bits(w_datt, g_datt, n_att),
              "backward B %d T %d C %d NH %d", B, T, C, NH);
        free(inp);
        free(dout);
        free(want);
        free(got);
    }
}

// LayerNorm's backward as it was written before the channel blocks: the reference. Each row's input gradient is
// the trainer's own (layernorm_backward_input_row, unchanged); the parameter gradients are the plain loops, one channel
// at a time, rows in order.
static void naive_layernorm_backward(float* dinp, float* dweight, float* dbias, const float* dout, const float* inp,
                                     const float* weight, const float* mean, const float* rstd, int rows, int C) {
    for (int bt = 0; bt < rows; bt++) {
        layernorm_backward_input_row(dinp + (size_t)bt * C, dout + (size_t)bt * C, inp + (size_t)bt * C, weight,
                                     mean[bt], rstd[bt], C);
    }
    for (int i = 0; i < C; i++) {
        float dw = 0.0f, db = 0.0f;
        for (int bt = 0; bt < rows; bt++) {
            float norm = (inp[(size_t)bt * C + i] - mean[bt]) * rstd[bt];
            dw += norm * dout[(size_t)bt * C + i];
            db += dout[(size_t)bt * C + i];
        }
        dweight[i] += dw;
        dbias[i] += db;
    }
}

static void test_layernorm_backward_bit_identical_to_naive_loops(void) {
    static const int shapes[][3] = {{2, 8, 16}, {3, 21, 300}, {4, 64, 384}, {1, 5, 600}};  // B, T, C
    Rng rng;
    rng_seed(&rng, 2718);
    for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++) {
        int B = shapes[si][0], T = shapes[si][1], C = shapes[si][2], rows = B * T;
        size_t n = (size_t)rows * C;
        float* inp = malloc(n * sizeof(float));
        float* dout = malloc(n * sizeof(float));
        float* weight = malloc((size_t)C * sizeof(float));
        float* stats = malloc(2 * (size_t)rows * sizeof(float));  // mean, rstd
        float* want = malloc((n + 2 * (size_t)C) * sizeof(float));
        float* got = malloc((n + 2 * (size_t)C) * sizeof(float));
        fill_spread(inp, n, &rng);
        fill_spread(dout, n, &rng);
        fill_spread(weight, (size_t)C, &rng);
        for (int r = 0; r < rows; r++) {
            stats[r] = rng_normal(&rng);
            stats[rows + r] = 1.0f + rng_uniform(&rng);
        }
        fill_spread(want, n + 2 * (size_t)C, &rng);  // the gradients accumulate onto these
        memcpy(got, want, (n + 2 * (size_t)C) * sizeof(float));
        naive_layernorm_backward(want, want + n, want + n + C, dout, inp, weight, stats, stats + rows, rows, C);
        layernorm_backward(got, got + n, got + n + C, dout, inp, weight, stats, stats + rows, B, T, C);
        CHECK(same_bits(want, got, n), "dinp B %d T %d C %d", B, T, C);
        CHECK(same_bits(want + n, got + n, 2 * (size_t)C), "dweight/dbias B %d T %d C %d", B, T, C);
        free(inp);
        free(dout);
        free(weight);
        free(stats);
        free(want);
        free(got);
    }
}

static float max_abs(const float* x, size_t n) {
    float m = 0.0f;
    for (size_t i = 0; i < n; i++) { m = fabsf(x[i]) > m ? fabsf(x[i]) : m; }
    return m;
}

// The qkv GEMM of layer 1 recomputed directly through fp8/ (E4M3 input and weight with the given scales) against the
// model's stored qkv output: the number of outputs that differ.
static int qkv_layer1_mismatches(GPT2* model, float in_scale, float w_scale) {
    int B = TEST_B, T = TEST_T;
    size_t BTC = (size_t)B * T * model->config.channels;
    LinearModule lm = linear_module(model, 4 + LINEAR_QKV);
    size_t n_in = (size_t)B * T * lm.IC, n_w = (size_t)lm.OC * lm.IC;
    uint8_t* q = malloc(n_in > n_w ? n_in : n_w);
    float* x = malloc(n_in * sizeof(float));
    float* w = malloc(n_w * sizeof(float));
    float* out = malloc((size_t)B * T * lm.OC * sizeof(float));
    float amax = 0.0f;
    fp8_quantize(q, model->acts.ln1 + BTC, n_in, FP8_E4M3, in_scale, &amax, NULL);
    fp8_dequantize(x, q, n_in, FP8_E4M3, 1.0f / in_scale);
    fp8_quantize(q, lm.weight, n_w, FP8_E4M3, w_scale, &amax, NULL);
    fp8_dequantize(w, q, n_w, FP8_E4M3, 1.0f / w_scale);
    matmul_forward(out, x, w, lm.bias, B, T, lm.IC, lm.OC);
    int mismatches = 0;
    for (size_t i = 0; i < (size_t)B * T * lm.OC; i++) { mismatches += bf16_round(out[i]) != model->acts.qkv[BTC * 3 + i]; }
    free(q);
    free(x);
    free(w);
    free(out);
    return mismatches;
}

static void test_fp8_recorded_amaxes_and_values(void) {
    ModelOptions opt = tiny_options(PRECISION_FP8);
    GPT2 model;
    int B = TEST_B, T = TEST_T, C = opt.config.channels, L = opt.config.num_layers;
    int inputs[TEST_B * TEST_T], targets[TEST_B * TEST_T];
    tiny_model_one_step(&model, &opt, 11, inputs, targets);
    Fp8Meta* meta = &model.fp8;
    size_t BTC = (size_t)B * T * C;
    for (int l = 0; l < L; l++) {
        const float* inputs_of[4] = {model.acts.ln1 + l * BTC, model.acts.atty + l * BTC, model.acts.ln2 + l * BTC,
                                     model.acts.fch_gelu + l * BTC * 4};
        const float* douts_of[4] = {model.grads_acts.qkv + l * BTC * 3, model.grads_acts.attproj + l * BTC,
                                    model.grads_acts.fch + l * BTC * 4, model.grads_acts.fcproj + l * BTC};
        for (int kind = 0; kind < 4; kind++) {
            int module = l * 4 + kind;
            LinearModule lm = linear_module(&model, module);
            float in_amax = max_abs(inputs_of[kind], (size_t)B * T * lm.IC);
            float w_amax = max_abs(lm.weight, (size_t)lm.OC * lm.IC);
            float g_amax = max_abs(douts_of[kind], (size_t)B * T * lm.OC);
            CHECK(meta->amax_history[fp8_meta_fwd_slot(meta, module, FP8_FWD_INPUT)] == in_amax,
                  "module %d input amax %g want %g", module, meta->amax_history[fp8_meta_fwd_slot(meta, module, 0)], in_amax);
            CHECK(meta->amax_history[fp8_meta_fwd_slot(meta, module, FP8_FWD_WEIGHT)] == w_amax, "module %d weight amax",
                  module);
            CHECK(meta->amax_history[fp8_meta_bwd_slot(meta, module, FP8_BWD_GRAD_OUTPUT)] == g_amax,
                  "module %d grad_output amax %g want %g", module,
                  meta->amax_history[fp8_meta_bwd_slot(meta, module, FP8_BWD_GRAD_OUTPUT)], g_amax);
            CHECK(meta->amax_history[fp8_meta_fwd_slot(meta, module, FP8_FWD_OUTPUT)] == 0.0f &&
                      meta->amax_history[fp8_meta_bwd_slot(meta, module, FP8_BWD_GRAD_INPUT)] == 0.0f,
                  "output and grad_input slots unused");
            CHECK(in_amax > 0.0f && g_amax > 0.0f, "non-trivial tensors");
        }
    }
    int head = linear_lm_head(model.config.num_layers);
    for (int k = 0; k < 3; k++) { CHECK(meta->amax_history[fp8_meta_fwd_slot(meta, head, k)] == 0.0f, "LM head stays BF16"); }
    // the qkv GEMM of layer 1 recomputed directly through fp8/: E4M3 input and weight with scale 1.0
    int mismatches = qkv_layer1_mismatches(&model, 1.0f, 1.0f);
    CHECK(mismatches == 0, "qkv output of layer 1 differs from the direct FP8 recomputation in %d places", mismatches);
    // and the values really are FP8 grid points: the weights GEMMs see are E4M3 values
    LinearModule qkv = linear_module(&model, 4 + LINEAR_QKV);
    const float* wq = model.weight_dequantized + model.weight_fp8_offset[4 + LINEAR_QKV];
    int off_grid = 0;
    for (size_t i = 0; i < (size_t)qkv.OC * qkv.IC; i++) { off_grid += fp8_round(wq[i], FP8_E4M3) != wq[i]; }
    CHECK(off_grid == 0, "%d cached FP8 weights are not E4M3 values", off_grid);
    gpt2_free(&model);
}

// FP8 attention (-fp8_attention 1) after one step from scale 1.0, block by block: q, k, v are the E4M3 values of the qkv
// GEMM's output, whose amax its output slot recorded; the attention's output is the cast of the attention computed
// with E4M3-quantized weights (not the unquantized one), its amax in attproj's input slot, and a re-cast of it (what
// attproj's GEMM reads) gives the same values; the softmax output's amax is 1. Evaluation records nothing; the end of
// step gives S the scale 448 and leaves the attention module's unused slots alone.
static void test_fp8_attention_casts_and_values(void) {
    ModelOptions opt = tiny_options(PRECISION_FP8);
    opt.fp8_attention = 1;
    GPT2 model;
    int B = TEST_B, T = TEST_T, C = opt.config.channels, NH = opt.config.num_heads, L = opt.config.num_layers;
    int inputs[TEST_B * TEST_T], targets[TEST_B * TEST_T];
    tiny_model_one_step(&model, &opt, 13, inputs, targets);
    Fp8Meta* meta = &model.fp8;
    CHECK(meta->num_modules == linear_num_modules(L) + L, "%d modules, want %d linear ones and one per block",
          meta->num_modules, linear_num_modules(L) + L);
    size_t BTC = (size_t)B * T * C, BNTT = (size_t)B * NH * T * T;
    float* qkv_pre = malloc(BTC * 3 * sizeof(float));
    float* qkv_fp8 = malloc(BTC * 3 * sizeof(float));
    float* out = malloc(BTC * sizeof(float));
    float* plain = malloc(BTC * sizeof(float));
    float* preatt = malloc(BNTT * sizeof(float));
    float* att = malloc(BNTT * sizeof(float));
    float* att_plain = malloc(BNTT * sizeof(float));
    model.training = 0;  // the recomputations below record nothing
    for (int l = 0; l < L; l++) {
        const float* qkv = model.acts.qkv + l * BTC * 3;
        const float* atty = model.acts.atty + l * BTC;
        int qkv_slot = fp8_meta_fwd_slot(meta, l * 4 + LINEAR_QKV, FP8_FWD_OUTPUT);
        int o_slot = fp8_meta_fwd_slot(meta, l * 4 + LINEAR_ATTPROJ, FP8_FWD_INPUT);
        int s_slot = fp8_meta_fwd_slot(meta, fp8_attention_module(L, l), FP8_ATTENTION_S);
        // the qkv GEMM's output again (not recorded: the same scales, the same bits), kept as it is for the backward
        linear_forward(&model, l * 4 + LINEAR_QKV, qkv_pre, model.acts.ln1 + l * BTC, B, T);
        CHECK(same_bits(qkv, qkv_pre, BTC * 3), "block %d: qkv is not the GEMM's output (the backward reads it)", l);
        CHECK(meta->amax_history[qkv_slot] == max_abs(qkv_pre, BTC * 3), "block %d qkv output amax %g want %g", l,
              meta->amax_history[qkv_slot], max_abs(qkv_pre, BTC * 3));
        CHECK(model.fp8_stats[qkv_slot].count == (long long)BTC * 3, "block %d: q, k, v cast counted %lld times, want "
              "%zu", l, model.fp8_stats[qkv_slot].count, BTC * 3);
        // the forward from their E4M3 cast (scale 1) with the weights quantized; the weights kept for the backward
        // are from the bf16 q and k, with the FP8 forward's max and sum
        for (size_t i = 0; i < BTC * 3; i++) { qkv_fp8[i] = fp8_round(qkv[i], FP8_E4M3); }
        AttentionFp8 fp8 = {qkv_fp8, 1.0f, 1.0f, FP8_E4M3, 0.0f};
        attention_forward(out, preatt, att, qkv, B, T, C, NH, &fp8);
        CHECK(same_bits(att, model.acts.att + l * BNTT, BNTT), "block %d: the backward's weights differ", l);
        attention_forward(plain, preatt, att_plain, qkv_fp8, B, T, C, NH, NULL);
        CHECK(!same_bits(out, plain, BTC), "block %d: quantizing the weights changed nothing", l);
        CHECK(!same_bits(att, att_plain, BNTT), "block %d: the backward's weights are the FP8 forward's", l);
        float att_worst = 0.0f;
        for (size_t i = 0; i < BNTT; i++) {
            float d = fabsf(att[i] - att_plain[i]);
            att_worst = d > att_worst ? d : att_worst;
        }
        // q and k within an E4M3 rounding (2^-4 relative) of their cast: a weight moves by far less than itself
        CHECK(att_worst < 0.25f, "block %d: the backward's weights are %g from the forward's", l, att_worst);
        CHECK(fp8.amax == 1.0f && meta->amax_history[s_slot] == 1.0f, "block %d softmax amax %g, row 0 %g", l,
              fp8.amax, meta->amax_history[s_slot]);
        CHECK(meta->amax_history[o_slot] == max_abs(out, BTC), "block %d output amax %g want %g", l,
              meta->amax_history[o_slot], max_abs(out, BTC));
        CHECK(model.fp8_stats[o_slot].count == 0 && model.fp8_stats[s_slot].count == 0,
              "block %d: the output and softmax casts were counted (%lld, %lld): cuDNN returns their amaxes only", l,
              model.fp8_stats[o_slot].count, model.fp8_stats[s_slot].count);
        int wrong = 0, recast = 0;
        for (size_t i = 0; i < BTC; i++) {
            wrong += atty[i] != fp8_round(out[i], FP8_E4M3);
            recast += fp8_round(atty[i], FP8_E4M3) != atty[i];
        }
        CHECK(wrong == 0 && recast == 0, "block %d: %d outputs are not the cast, %d change when cast again", l, wrong,
              recast);
    }
    // evaluation records nothing
    float* row0 = malloc((size_t)meta->num_slots * sizeof(float));
    memcpy(row0, meta->amax_history, (size_t)meta->num_slots * sizeof(float));
    gpt2_forward(&model, inputs, targets, B, T);
    CHECK(memcmp(row0, meta->amax_history, (size_t)meta->num_slots * sizeof(float)) == 0, "evaluation recorded amaxes");
    model.training = 1;
    gpt2_fp8_end_of_step(&model, 0);
    for (int l = 0; l < L; l++) {
        int module = fp8_attention_module(L, l);
        CHECK(meta->scale[fp8_meta_fwd_slot(meta, module, FP8_ATTENTION_S)] == 448.0f, "block %d: S scale %g", l,
              meta->scale[fp8_meta_fwd_slot(meta, module, FP8_ATTENTION_S)]);
        int unused[4] = {fp8_meta_fwd_slot(meta, module, 1), fp8_meta_fwd_slot(meta, module, 2),
                         fp8_meta_bwd_slot(meta, module, FP8_ATTENTION_DP), fp8_meta_bwd_slot(meta, module, 1)};
        for (int u = 0; u < 4; u++) {
            CHECK(meta->scale[unused[u]] == 1.0f && meta->amax_history[unused[u]] == 0.0f,
                  "block %d: unused attention slot %d changed", l, unused[u]);
        }
    }
    free(qkv_pre);
    free(qkv_fp8);
    free(out);
    free(plain);
    free(preatt);
    free(att);
    free(att_plain);
    free(row0);
    gpt2_free(&model);
}

// -fp8_attention 2 (TE's fp8_mha): the forward is -fp8_attention 1's, the same loss bit for bit from the same weights
// and batch; the backward reads q, k, v's E4M3 values, rounded to bf16, where the GEMM's output was (each element
// bf16(code value * scale_inv), the code the cast of that element with the qkv output slot's scale), and the weights
// it differentiates are recomputed from those with the FP8 forward's max and sum; so the gradients differ. Checked at
// the first step (scales 1: the E4M3 values exactly) and after an end of step (scales from the amaxes, not powers of
// two, so that the bf16 rounding of the dequantized value is exercised); evaluation leaves qkv the GEMM's output.
static void test_fp8_attention_mha_backward_reads_e4m3(void) {
    GPT2 models[2];
    int inputs[TEST_B * TEST_T], targets[TEST_B * TEST_T];
    int B = TEST_B, T = TEST_T;
    for (int m = 0; m < 2; m++) {
        ModelOptions opt = tiny_options(PRECISION_FP8);
        opt.fp8_attention = m == 0 ? FP8_ATTENTION_DPA : FP8_ATTENTION_MHA;
        tiny_model_one_step(&models[m], &opt, 13, inputs, targets);
    }
    GPT2* mha = &models[1];
    int C = mha->config.channels, NH = mha->config.num_heads, L = mha->config.num_layers;
    size_t BTC = (size_t)B * T * C, BNTT = (size_t)B * NH * T * T;
    CHECK(models[0].mean_loss == mha->mean_loss, "the forward changed with the backward's input: loss %.9g vs %.9g",
          models[0].mean_loss, mha->mean_loss);
    CHECK(!same_bits(models[0].grads_memory, mha->grads_memory, mha->num_parameters),
          "the backward from the E4M3 q, k, v gave -fp8_attention 1's gradients");
    float* qkv_pre = malloc(BTC * 3 * sizeof(float));
    float* qkv_e4m3 = malloc(BTC * 3 * sizeof(float));
    float* qkv_bf16 = malloc(BTC * 3 * sizeof(float));
    uint8_t* codes = malloc(BTC * 3);
    float* out = malloc(BTC * sizeof(float));
    float* preatt = malloc(BNTT * sizeof(float));
    float* att = malloc(BNTT * sizeof(float));
    Fp8Meta* meta = &mha->fp8;
    for (int step = 1; step <= 2; step++) {
        if (step == 2) {  // scales from the first step's amaxes, then a training forward with them
            gpt2_fp8_end_of_step(mha, 0);
            gpt2_forward(mha, inputs, targets, B, T);
        }
        int non_power_of_2 = 0;
        for (int l = 0; l < L; l++) {
            int qkv_slot = fp8_meta_fwd_slot(meta, l * LINEARS_PER_BLOCK + LINEAR_QKV, FP8_FWD_OUTPUT);
            int s_slot = fp8_meta_fwd_slot(meta, fp8_attention_module(L, l), FP8_ATTENTION_S);
            float scale = meta->scale[qkv_slot], scale_inv = meta->scale_inv[qkv_slot];
            non_power_of_2 += frexpf(scale, &(int){0}) != 0.5f;
            mha->training = 0;  // the GEMM's output again, recording nothing
            linear_forward(mha, l * LINEARS_PER_BLOCK + LINEAR_QKV, qkv_pre, mha->acts.ln1 + l * BTC, B, T);
            mha->training = 1;
            float discarded_amax = 0.0f;
            fp8_quantize_dequantize(codes, qkv_e4m3, qkv_pre, BTC * 3, FP8_E4M3, scale, scale_inv, &discarded_amax,
                                    NULL);
            int wrong = 0, moved = 0;
            for (size_t i = 0; i < BTC * 3; i++) {
                qkv_bf16[i] = bf16_round(qkv_e4m3[i]);
                wrong += mha->acts.qkv[l * BTC * 3 + i] != qkv_bf16[i];
                moved += qkv_bf16[i] != qkv_pre[i];
            }
            CHECK(wrong == 0 && moved > 0, "step %d block %d: %d of q, k, v are not their E4M3 values in bf16 (%d "
                  "moved by the cast)", step, l, wrong, moved);
            AttentionFp8 fp8 = {qkv_e4m3, meta->scale[s_slot], meta->scale_inv[s_slot], FP8_E4M3, 0.0f};
            attention_forward(out, preatt, att, qkv_bf16, B, T, C, NH, &fp8);
            CHECK(same_bits(att, mha->acts.att + l * BNTT, BNTT), "step %d block %d: the backward's weights are not "
                  "those of the E4M3 q and k", step, l);
        }
        CHECK(step == 1 ? non_power_of_2 == 0 : non_power_of_2 == L, "step %d: %d of %d qkv scales are not powers of "
              "two", step, non_power_of_2, L);
    }
    mha->training = 0;  // evaluation: the GEMM's output stays
    gpt2_forward(mha, inputs, targets, B, T);
    linear_forward(mha, LINEAR_QKV, qkv_pre, mha->acts.ln1, B, T);
    CHECK(same_bits(qkv_pre, mha->acts.qkv, BTC * 3), "an evaluation forward left the E4M3 q, k, v in qkv");
    free(qkv_pre);
    free(qkv_e4m3);
    free(qkv_bf16);
    free(codes);
    free(out);
    free(preatt);
    free(att);
    gpt2_free(&models[0]);
    gpt2_free(&models[1]);
}

// Current scaling in the model (fp8/current.h): every operand's scale is fp8_max / max|x| of exactly the tensor it
// cast (inputs and grad_outputs: this micro-step's; weights: after the cast), the GEMM output equals a direct
// recomputation with those scales, row 0 collects the max over the step's casts, evaluation changes no FP8 state,
// and the end of step only clears row 0.
static void test_fp8_current_scaling(void) {
    ModelOptions opt = tiny_options(PRECISION_FP8);
    float8_current_scaling_apply(&opt.recipe);
    GPT2 model;
    enum { B = TEST_B, T = TEST_T, MODULES = 8 };
    int C = opt.config.channels;
    size_t BTC = (size_t)B * T * C;
    gpt2_allocate(&model, &opt, B, T);
    Fp8Meta* meta = &model.fp8;
    CHECK(meta->amax_history_len == 1, "one history row");
    Rng rng;
    rng_seed(&rng, 31);
    init_for_test(&model, &rng);
    gpt2_cast_weights_fp8(&model, 1);
    for (int m = 0; m < MODULES; m++) {
        LinearModule lm = linear_module(&model, m);
        int ws = fp8_meta_fwd_slot(meta, m, FP8_FWD_WEIGHT);
        float w_amax = max_abs(lm.weight, (size_t)lm.OC * lm.IC);
        CHECK(meta->scale[ws] == 448.0f / w_amax && meta->scale_inv[ws] == 1.0f / meta->scale[ws] &&
                  model.fp8_window_amax[ws] == w_amax && meta->amax_history[ws] == w_amax,
              "module %d weight: scale %g want 448 / %g", m, meta->scale[ws], w_amax);
    }
    int inputs[B * T], targets[B * T];
    float first_amax[MODULES][2];
    gpt2_zero_grad(&model);
    for (int micro = 0; micro < 2; micro++) {
        random_tokens(inputs, B * T, opt.config.vocab_size, &rng);
        random_tokens(targets, B * T, opt.config.vocab_size, &rng);
        gpt2_forward(&model, inputs, targets, B, T);
        gpt2_backward(&model, 0.5f);
        for (int m = 0; m < MODULES; m++) {
            int l = m / 4, kind = m % 4;
            LinearModule lm = linear_module(&model, m);
            const float* inputs_of[4] = {model.acts.ln1 + l * BTC, model.acts.atty + l * BTC, model.acts.ln2 + l * BTC,
                                         model.acts.fch_gelu + l * BTC * 4};
            const float* douts_of[4] = {model.grads_acts.qkv + l * BTC * 3, model.grads_acts.attproj + l * BTC,
                                        model.grads_acts.fch + l * BTC * 4, model.grads_acts.fcproj + l * BTC};
            float amax[2] = {max_abs(inputs_of[kind], (size_t)B * T * lm.IC), max_abs(douts_of[kind], (size_t)B * T * lm.OC)};
            int slots[2] = {fp8_meta_fwd_slot(meta, m, FP8_FWD_INPUT), fp8_meta_bwd_slot(meta, m, FP8_BWD_GRAD_OUTPUT)};
            float fmax[2] = {448.0f, 57344.0f};
            for (int k = 0; k < 2; k++) {
                int s = slots[k];
                CHECK(meta->scale[s] == fmax[k] / amax[k] && meta->scale_inv[s] == 1.0f / meta->scale[s] &&
                          model.fp8_window_amax[s] == amax[k],
                      "micro %d module %d %s: scale %g, want %g / %g", micro, m, k ? "grad_output" : "input",
                      meta->scale[s], fmax[k], amax[k]);
                if (micro == 0) { first_amax[m][k] = amax[k]; }
                float row0_want = micro == 0 || amax[k] > first_amax[m][k] ? amax[k] : first_amax[m][k];
                CHECK(meta->amax_history[s] == row0_want, "micro %d module %d: row 0 is the max over the casts", micro, m);
            }
        }
    }
    int in_slot = fp8_meta_fwd_slot(meta, 4 + LINEAR_QKV, FP8_FWD_INPUT);
    int w_slot = fp8_meta_fwd_slot(meta, 4 + LINEAR_QKV, FP8_FWD_WEIGHT);
    int mismatches = qkv_layer1_mismatches(&model, meta->scale[in_slot], meta->scale[w_slot]);
    CHECK(mismatches == 0, "qkv of layer 1 differs from the direct FP8 recomputation with the current scales in %d places",
          mismatches);
    // evaluation: another batch without recording leaves every FP8 number as it was, and its logits are those of
    // the same forward while recording (each cast computes the same scale from the same tensor)
    float* state = malloc(meta->num_floats * sizeof(float));
    float* window = malloc((size_t)meta->num_slots * sizeof(float));
    size_t n_logits = (size_t)B * T * opt.config.padded_vocab_size;
    float* logits = malloc(n_logits * sizeof(float));
    memcpy(state, meta->memory, meta->num_floats * sizeof(float));
    memcpy(window, model.fp8_window_amax, (size_t)meta->num_slots * sizeof(float));
    random_tokens(inputs, B * T, opt.config.vocab_size, &rng);
    model.training = 0;
    gpt2_forward(&model, inputs, NULL, B, T);
    memcpy(logits, model.acts.logits, n_logits * sizeof(float));
    CHECK(memcmp(state, meta->memory, meta->num_floats * sizeof(float)) == 0 &&
              memcmp(window, model.fp8_window_amax, (size_t)meta->num_slots * sizeof(float)) == 0,
          "evaluation changed the FP8 state");
    model.training = 1;
    gpt2_forward(&model, inputs, NULL, B, T);
    CHECK(memcmp(logits, model.acts.logits, n_logits * sizeof(float)) == 0, "evaluation logits = recording logits");
    // the end of step: row 0 cleared (its values go to the diagnostics), scales untouched
    memcpy(state, meta->memory, meta->num_floats * sizeof(float));
    gpt2_fp8_end_of_step(&model, 0);
    CHECK(memcmp(model.fp8_last_amax, state, (size_t)meta->num_slots * sizeof(float)) == 0, "last amax = row 0");
    CHECK(memcmp(meta->scale, state + meta->num_slots, 2 * (size_t)meta->num_slots * sizeof(float)) == 0,
          "scales and scale_inv unchanged");
    int nonzero = 0;
    for (int s = 0; s < meta->num_slots; s++) { nonzero += meta->amax_history[s] != 0.0f; }
    CHECK(nonzero == 0, "%d row-0 cells not cleared", nonzero);
    free(state);
    free(window);
    free(logits);
    gpt2_free(&model);
}

// The naive model of one slot: every recorded amax in a list (see fp8/test_fp8.c).
static void test_fp8_histories_over_steps(void) {
    ModelOptions opt = tiny_options(PRECISION_FP8);
    opt.recipe.delayed.amax_history_len = 3;
    opt.recipe.margin = 1;
    opt.fp8_bf16_first_last = 0;
    GPT2 model;
    int B = 2, T = 8;
    gpt2_allocate(&model, &opt, B, T);
    Rng rng;
    rng_seed(&rng, 5);
    gpt2_init_parameters(&model.master, model.param_sizes, &opt.config, &rng);
    Fp8Meta* meta = &model.fp8;
    int S = meta->num_slots, len = meta->amax_history_len, STEPS = 5, ACCUM = 2;
    float* recorded = calloc((size_t)S * (STEPS + 1), sizeof(float));  // (S, steps)
    int* count = calloc((size_t)S, sizeof(int));
    float* scale = malloc((size_t)S * sizeof(float));
    for (int s = 0; s < S; s++) { scale[s] = 1.0f; }
    gpt2_cast_weights_fp8(&model, 1);
    int inputs[16], targets[16];
    for (int step = 0; step < STEPS; step++) {
        gpt2_zero_grad(&model);
        float expected_row0[64 * 5];
        memcpy(expected_row0, meta->amax_history, (size_t)S * sizeof(float));  // weights' amax from the last cast
        for (int micro = 0; micro < ACCUM; micro++) {
            random_tokens(inputs, B * T, opt.config.vocab_size, &rng);
            random_tokens(targets, B * T, opt.config.vocab_size, &rng);
            gpt2_forward(&model, inputs, targets, B, T);
            gpt2_backward(&model, 1.0f / ACCUM);
        }
        gpt2_grad_norm(&model);
        gpt2_fp8_end_of_step(&model, step);
        // what the update saw: weight slots unchanged since the cast; every row 0 > 0 for the used slots
        for (int m = 0; m < 8; m++) {
            int ws = fp8_meta_fwd_slot(meta, m, FP8_FWD_WEIGHT);
            CHECK(model.fp8_last_amax[ws] == expected_row0[ws], "step %d module %d: weight amax unchanged", step, m);
        }
        for (int s = 0; s < S; s++) {
            float a = model.fp8_last_amax[s];
            if (a == 0.0f) { continue; }
            float amax = a;
            for (int k = count[s] - 1; k >= 0 && k >= count[s] - (len - 1); k--) {
                amax = recorded[(size_t)s * (STEPS + 1) + k] > amax ? recorded[(size_t)s * (STEPS + 1) + k] : amax;
            }
            float fmax = fp8_slot_is_forward(s, meta->num_modules) ? 448.0f : 57344.0f;
            scale[s] = fmax / amax / 2.0f;
            recorded[(size_t)s * (STEPS + 1) + count[s]++] = a;
        }
        int used = 0;
        for (int s = 0; s < S; s++) {
            used += count[s] > 0;
            CHECK(meta->scale[s] == scale[s] && meta->scale_inv[s] == 1.0f / scale[s], "step %d slot %d: scale %g want %g",
                  step, s, meta->scale[s], scale[s]);
            for (int row = 1; row < len; row++) {
                int k = count[s] - len + row;
                float want = k < 0 ? 0.0f : recorded[(size_t)s * (STEPS + 1) + k];
                CHECK(meta->amax_history[(size_t)row * S + s] == want, "step %d slot %d row %d", step, s, row);
            }
        }
        CHECK(used == 8 * 3, "every module's input, weight and grad_output slots used (%d)", used);
        gpt2_update(&model, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.0f, 1.0f, step + 1);
        gpt2_cast_weights_fp8(&model, 1);
        // the new weights, cast with the new scales, amax recorded into the fresh row 0
        for (int m = 0; m < 8; m++) {
            LinearModule lm = linear_module(&model, m);
            int ws = fp8_meta_fwd_slot(meta, m, FP8_FWD_WEIGHT);
            size_t n = (size_t)lm.OC * lm.IC;
            CHECK(meta->amax_history[ws] == max_abs(lm.weight, n), "weight amax recorded after the update");
            const float* wq = model.weight_dequantized + model.weight_fp8_offset[m];
            int bad = 0;
            for (size_t i = 0; i < n; i++) {
                float want = fp8_to_float(fp8_from_float(lm.weight[i] * meta->scale[ws], FP8_E4M3), FP8_E4M3) *
                             meta->scale_inv[ws];
                bad += wq[i] != want;
            }
            CHECK(bad == 0, "module %d: %d FP8 weights not cast with the new scale", m, bad);
        }
    }
    free(recorded);
    free(count);
    free(scale);
    gpt2_free(&model);
}

static int all_bf16(const float* x, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (bf16_round(x[i]) != x[i]) { return 0; }
    }
    return 1;
}

static void test_bf16_storage_and_modes_differ(void) {
    int B = TEST_B, T = TEST_T, inputs[TEST_B * TEST_T], targets[TEST_B * TEST_T];
    float losses[3];
    for (int p = 0; p < 3; p++) {  // same seed: same weights and tokens in the three precisions
        ModelOptions opt = tiny_options((Precision)p);
        GPT2 model;
        tiny_model_one_step(&model, &opt, 9, inputs, targets);
        losses[p] = model.mean_loss;
        if (p != PRECISION_FP32) {
            size_t BTC = (size_t)B * T * opt.config.channels;
            CHECK(all_bf16(model.acts.ln1, 2 * BTC) && all_bf16(model.acts.qkv, 6 * BTC) &&
                      all_bf16(model.acts.residual3, 2 * BTC) && all_bf16(model.acts.logits, (size_t)B * T * 128),
                  "%s: stored activations are bf16 values", precision_name((Precision)p));
            CHECK(all_bf16(model.grads_acts.ln1, 2 * BTC) && all_bf16(model.grads_acts.encoded, BTC),
                  "%s: stored activation gradients are bf16 values", precision_name((Precision)p));
        }
        gpt2_free(&model);
    }
    // same weights, three precisions: close, but not identical (each mode really rounds)
    CHECK(losses[0] != losses[1] && losses[1] != losses[2], "modes differ: %g %g %g", losses[0], losses[1], losses[2]);
    CHECK(fabsf(losses[1] - losses[0]) < 0.02f * losses[0] && fabsf(losses[2] - losses[0]) < 0.05f * losses[0],
          "modes agree to a few percent: fp32 %g bf16 %g fp8 %g", losses[0], losses[1], losses[2]);
}

// One step's row 0 of every slot, for a configuration
static void one_step_row0(ModelOptions* opt, float* row0_out, int* num_slots) {
    GPT2 model;
    int inputs[TEST_B * TEST_T], targets[TEST_B * TEST_T];
    tiny_model_one_step(&model, opt, 21, inputs, targets);
    memcpy(row0_out, model.fp8.amax_history, (size_t)model.fp8.num_slots * sizeof(float));
    *num_slots = model.fp8.num_slots;
    gpt2_free(&model);
}

static void test_fp8_overrides_first_last_and_lm_head(void) {
    // override_linear_precision: which slots a step uses (input: fprop or wgrad; weight: fprop or dgrad;
    // grad_output: dgrad or wgrad)
    int cases[6][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 1}, {1, 1, 0}, {1, 0, 1}, {1, 1, 1}};
    for (int c = 0; c < 6; c++) {
        ModelOptions opt = tiny_options(PRECISION_FP8);
        opt.recipe.override_fprop = cases[c][0];
        opt.recipe.override_dgrad = cases[c][1];
        opt.recipe.override_wgrad = cases[c][2];
        float row0[64 * 5];
        int S;
        one_step_row0(&opt, row0, &S);
        int fprop = !cases[c][0], dgrad = !cases[c][1], wgrad = !cases[c][2];
        int M = S / 5;
        for (int m = 0; m < M - 1; m++) {  // the LM head (last module) stays BF16 here
            int in_used = row0[m * 3 + FP8_FWD_INPUT] > 0, w_used = row0[m * 3 + FP8_FWD_WEIGHT] > 0;
            int g_used = row0[3 * M + m * 2 + FP8_BWD_GRAD_OUTPUT] > 0;
            CHECK(in_used == (fprop || wgrad) && w_used == (fprop || dgrad) && g_used == (dgrad || wgrad),
                  "override (%d,%d,%d) module %d: input %d weight %d grad %d", cases[c][0], cases[c][1], cases[c][2], m,
                  in_used, w_used, g_used);
        }
    }
    // first/last N blocks in BF16: 4 blocks, N = 1 -> only blocks 1 and 2 record; the LM head through FP8 records
    ModelOptions opt = tiny_options(PRECISION_FP8);
    opt.config.num_layers = 4;
    opt.fp8_bf16_first_last = 1;
    opt.fp8_lm_head = 1;
    float row0[64 * 5];
    int S;
    one_step_row0(&opt, row0, &S);
    int M = S / 5;
    CHECK(M == 17, "4 blocks x 4 GEMMs + LM head = 17 modules, got %d", M);
    for (int m = 0; m < M; m++) {
        int block = m / 4;
        int want = m == 16 || (block >= 1 && block <= 2);
        CHECK((row0[m * 3] > 0) == want && (row0[m * 3 + 1] > 0) == want && (row0[3 * M + m * 2] > 0) == want,
              "module %d (block %d): FP8 %d", m, block, want);
    }
}

// Shards with token i = (base + i) % 1000, so every batch says where it came from.
static void write_test_shard(const char* path, int num_tokens, int base) {
    FILE* f = fopen(path, "wb");
    int32_t header[256] = {0};
    header[0] = SHARD_MAGIC;
    header[1] = SHARD_VERSION;
    header[2] = num_tokens;
    fwrite(header, sizeof(header), 1, f);
    for (int i = 0; i < num_tokens; i++) {
        uint16_t t = (uint16_t)((base + i) % 1000);
        fwrite(&t, 2, 1, f);
    }
    fclose(f);
}

static void test_dataloader_ranks_wrap_resume(void) {
    char dir[] = "/tmp/gptfp8_loader_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char a[128], b[128], pattern[128], err[256];
    snprintf(a, sizeof(a), "%s/shard_000.bin", dir);
    snprintf(b, sizeof(b), "%s/shard_001.bin", dir);
    snprintf(pattern, sizeof(pattern), "%s/shard_*.bin", dir);
    write_test_shard(a, 50, 0);     // 50 tokens: strides of 2 ranks x B*T = 16 fit 3 times (3*16 + 1 <= 50)
    write_test_shard(b, 40, 500);   // 2 strides
    DataLoader r0, r1;
    CHECK(dataloader_init(&r0, pattern, 2, 4, 0, 2, 1000, err, sizeof(err)) == 0, "%s", err);
    CHECK(dataloader_init(&r1, pattern, 2, 4, 1, 2, 1000, err, sizeof(err)) == 0, "%s", err);
    CHECK(dataloader_num_batches(&r0) == 5, "3 + 2 strides per epoch, got %zu", dataloader_num_batches(&r0));
    // expected first token of each batch: shard a strides at 0, 16, 32; shard b at 500, 516; then a again
    int want0[7] = {0, 16, 32, 500, 516, 0, 16};
    size_t save_shard = 0, save_pos = 0;
    int after_save = -1;
    for (int k = 0; k < 7; k++) {
        CHECK(dataloader_next_batch(&r0, err, sizeof(err)) == 0 && dataloader_next_batch(&r1, err, sizeof(err)) == 0, "%s", err);
        CHECK(r0.inputs[0] == want0[k] && r1.inputs[0] == want0[k] + 8, "batch %d: rank 0 starts at %d (want %d), rank 1 at %d",
              k, r0.inputs[0], want0[k], r1.inputs[0]);
        CHECK(r0.targets[7] == r0.inputs[7] + 1 && r1.inputs[7] == want0[k] + 15, "targets are the next tokens");
        if (k == 2) { save_shard = r0.current_shard_idx; save_pos = r0.current_position; }
        if (k == 3) { after_save = r0.inputs[0]; }
    }
    // resume at the saved position gives the batch that followed it
    CHECK(dataloader_resume(&r0, save_shard, save_pos, err, sizeof(err)) == 0, "%s", err);
    CHECK(dataloader_next_batch(&r0, err, sizeof(err)) == 0 && r0.inputs[0] == after_save, "resume: %d want %d",
          r0.inputs[0], after_save);
    CHECK(dataloader_resume(&r0, 7, 0, err, sizeof(err)) == -1 && strstr(err, "shards"), "bad resume position rejected");
    dataloader_reset(&r0);
    CHECK(dataloader_next_batch(&r0, err, sizeof(err)) == 0 && r0.inputs[0] == 0, "reset");
    // a vocabulary smaller than the data's tokens: a clear error naming the shard
    DataLoader small;
    CHECK(dataloader_init(&small, pattern, 2, 4, 0, 1, 5, err, sizeof(err)) == 0, "%s", err);
    CHECK(dataloader_next_batch(&small, err, sizeof(err)) == -1 && strstr(err, "shard_000.bin") &&
              strstr(err, "token id 5 at position 5 is not below the vocabulary size 5"), "token >= vocab: %s", err);
    dataloader_free(&small);
    dataloader_free(&r0);
    dataloader_free(&r1);
    unlink(a);
    unlink(b);
    rmdir(dir);
}

// dev/data/tokenizer's manifest (llmc/shard_manifest.h) beside the shards: `files` are "name bytes" pairs.
static void write_test_manifest(const char* dir, const char* status, const char* const* files, int n) {
    char path[160];
    snprintf(path, sizeof(path), "%s/d.manifest", dir);
    FILE* f = fopen(path, "w");
    fprintf(f, "gptfp8 shard manifest 1\nstatus\t%s\ntokenizer\t2048\t0123456789abcdef\ttokenizer.bin\n", status);
    for (int i = 0; i < n; i++) {
        char name[64];
        long long bytes;
        sscanf(files[i], "%63s %lld", name, &bytes);
        fprintf(f, "file\t%lld\t%lld\t00000000000000ff\t%s\n", bytes, (bytes - 1024) / 2, name);
    }
    fclose(f);
}

// A shard set with a manifest is loaded only when it is the complete set the manifest lists: a re-encoding killed
// midway (its manifest says incomplete), a shard left from an earlier encoding (not listed, or listed with another
// size) and a listed shard that is gone are each refused in one line; without a manifest (llm.c's) shards load as
// before. The manifest is found from the shard's name (d_val.bin, d_train_000001.bin -> d.manifest).
static void test_dataloader_manifest(void) {
    char dir[] = "/tmp/gptfp8_manifest_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char val[128], t1[128], t2[128], pattern[128], manifest[128], err[1024];
    snprintf(val, sizeof(val), "%s/d_val.bin", dir);
    snprintf(t1, sizeof(t1), "%s/d_train_000001.bin", dir);
    snprintf(t2, sizeof(t2), "%s/d_train_000002.bin", dir);
    snprintf(pattern, sizeof(pattern), "%s/d_train_*.bin", dir);
    snprintf(manifest, sizeof(manifest), "%s/d.manifest", dir);
    write_test_shard(val, 20, 0);  // 1064 bytes
    write_test_shard(t1, 50, 0);   // 1124 bytes
    write_test_shard(t2, 40, 500); // 1104 bytes
    DataLoader loader;
    CHECK(dataloader_init(&loader, pattern, 2, 4, 0, 1, 1000, err, sizeof(err)) == 0, "no manifest: %s", err);
    dataloader_free(&loader);
    const char* all[3] = {"d_val.bin 1064", "d_train_000001.bin 1124", "d_train_000002.bin 1104"};
    write_test_manifest(dir, "complete", all, 3);
    CHECK(dataloader_init(&loader, pattern, 2, 4, 0, 1, 1000, err, sizeof(err)) == 0, "complete set: %s", err);
    CHECK(loader.num_shards == 2 && loader.shard_tokens[1] == 40, "%zu shards", loader.num_shards);
    dataloader_free(&loader);
    CHECK(dataloader_init(&loader, val, 2, 4, 0, 1, 1000, err, sizeof(err)) == 0, "the val file of the set: %s", err);
    dataloader_free(&loader);
    struct {
        const char* status;
        const char* files[3];
        int n;
        const char* want;
    } cases[] = {
        {"incomplete", {NULL}, 0, "d_train_000001.bin: its dataset's encoding did not finish ("},
        {"complete", {"d_val.bin 1064", "d_train_000001.bin 1124"}, 2,
         "d_train_000002.bin is not part of the shard set "},
        {"complete", {"d_val.bin 1064", "d_train_000001.bin 1124", "d_train_000002.bin 1106"}, 3,
         "d_train_000002.bin is 1104 bytes, the shard set "},
        {"complete", {"d_val.bin 1064", "d_train_000001.bin 1124", "d_train_000003.bin 1104"}, 3,
         "d_train_000003.bin, which "},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        write_test_manifest(dir, cases[k].status, cases[k].files, cases[k].n);
        err[0] = '\0';
        int rc = dataloader_init(&loader, pattern, 2, 4, 0, 1, 1000, err, sizeof(err));
        CHECK(rc == -1 && strstr(err, cases[k].want) && strstr(err, manifest) && !strchr(err, '\n'),
              "case %zu: rc %d, '%s'", k, rc, err);
    }
    CHECK(strstr(err, "no longer exists"), "%s", err);
    FILE* f = fopen(manifest, "w");  // a damaged manifest: one line naming it and the line
    fprintf(f, "gptfp8 shard manifest 1\nstatus\tcomplete\ntokenizer\t2048\tnot-hex\ttokenizer.bin\n");
    fclose(f);
    CHECK(dataloader_init(&loader, pattern, 2, 4, 0, 1, 1000, err, sizeof(err)) == -1 && strstr(err, "line 3") &&
              strstr(err, manifest), "damaged manifest: %s", err);
    unlink(manifest);
    unlink(val);
    unlink(t1);
    unlink(t2);
    rmdir(dir);
}

// In bf16 and fp8 modes every layer reads bf16-rounded parameters, as the GPU reads its bf16 copy: a model whose fp32
// masters are arbitrary floats computes exactly (bit for bit: logits, loss, every gradient, every recorded amax) what
// a model whose masters were rounded to bf16 beforehand computes. Any parameter read from the masters directly
// (an embedding, a bias, a LayerNorm weight, the weight an FP8 copy is cast from) would break the equality.
static void test_layers_read_bf16_parameters(void) {
    for (int p = PRECISION_BF16; p <= PRECISION_FP8; p++) {
        ModelOptions opt = tiny_options((Precision)p);
        opt.fp8_lm_head = 1;  // the tied embedding through FP8 too
        GPT2 exact, rounded;
        int inputs[TEST_B * TEST_T], targets[TEST_B * TEST_T];
        tiny_model_one_step(&exact, &opt, 31, inputs, targets);
        gpt2_allocate(&rounded, &opt, TEST_B, TEST_T);
        size_t P = exact.num_parameters, off_grid = 0;
        for (size_t i = 0; i < P; i++) {
            rounded.master_memory[i] = bf16_round(exact.master_memory[i]);
            off_grid += rounded.master_memory[i] != exact.master_memory[i];
        }
        gpt2_cast_weights_fp8(&rounded, 1);
        gpt2_zero_grad(&rounded);
        gpt2_forward(&rounded, inputs, targets, TEST_B, TEST_T);
        gpt2_backward(&rounded, 1.0f);
        size_t n_logits = (size_t)TEST_B * TEST_T * opt.config.padded_vocab_size;
        CHECK(off_grid > P / 2, "%s: the test's masters are mostly not bf16 values (%zu of %zu)",
              precision_name((Precision)p), off_grid, P);
        CHECK(memcmp(exact.acts.logits, rounded.acts.logits, n_logits * sizeof(float)) == 0 &&
                  exact.mean_loss == rounded.mean_loss,
              "%s: logits and loss depend only on the bf16-rounded parameters", precision_name((Precision)p));
        CHECK(memcmp(exact.grads_memory, rounded.grads_memory, P * sizeof(float)) == 0,
              "%s: every gradient depends only on the bf16-rounded parameters", precision_name((Precision)p));
        if (p == PRECISION_FP8) {
            CHECK(memcmp(exact.fp8.memory, rounded.fp8.memory, exact.fp8.num_floats * sizeof(float)) == 0,
                  "fp8: recorded amaxes (weights cast from the bf16 copy) are the same");
        }
        gpt2_free(&exact);
        gpt2_free(&rounded);
    }
}

// FNV-1a over the bytes of n floats: a short name for a whole parameter buffer in failure messages
static uint64_t float_digest(const float* x, size_t n) {
    const unsigned char* bytes = (const unsigned char*)x;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n * sizeof(float); i++) { h = (h ^ bytes[i]) * 1099511628211ull; }
    return h;
}

// The parallel initialisation (gpt2_fill_normal under OpenMP) gives, for any thread count, the bits of the serial loop
// the trainers used before it, and leaves the generator where that loop left it. The reference below is that loop,
// one rng_normal after another; the model (5.5M parameters, V not a multiple of 128) is big enough that every thread
// gets many elements of every tensor.
static void test_parallel_init_matches_serial(void) {
    GPT2Config config = {256, 5000, padded_vocab(5000), 2, 6, 384};  // maxT, V, Vp, L, NH, C
    size_t sizes[NUM_PARAMETER_TENSORS], n = 0;
    fill_in_parameter_sizes(sizes, &config);
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) { n += sizes[i]; }
    float* serial = (float*)calloc_or_die(n, sizeof(float), "serial init");
    ParameterTensors p;
    point_parameters(&p, serial, sizes);
    Rng want;
    rng_seed(&want, 1337);
    float residual_std = 0.02f / sqrtf(2.0f * (float)config.num_layers);
    size_t C = (size_t)config.channels;
    for (size_t i = 0; i < (size_t)config.vocab_size * C; i++) { p.wte[i] = 0.02f * rng_normal(&want); }
    for (size_t i = 0; i < sizes[1]; i++) { p.wpe[i] = 0.02f * rng_normal(&want); }
    for (size_t i = 0; i < sizes[2]; i++) { p.ln1w[i] = 1.0f; p.ln2w[i] = 1.0f; }
    for (size_t i = 0; i < sizes[4]; i++) { p.qkvw[i] = 0.02f * rng_normal(&want); }
    for (size_t i = 0; i < sizes[6]; i++) { p.attprojw[i] = residual_std * rng_normal(&want); }
    for (size_t i = 0; i < sizes[10]; i++) { p.fcw[i] = 0.02f * rng_normal(&want); }
    for (size_t i = 0; i < sizes[12]; i++) { p.fcprojw[i] = residual_std * rng_normal(&want); }
    for (size_t i = 0; i < C; i++) { p.lnfw[i] = 1.0f; }
    uint64_t want_digest = float_digest(serial, n);
    int thread_counts[3] = {1, 2, 3};
    for (int k = 0; k < 3; k++) {
#ifdef _OPENMP
        omp_set_num_threads(thread_counts[k]);
#endif
        float* parallel = (float*)calloc_or_die(n, sizeof(float), "parallel init");
        ParameterTensors q;
        point_parameters(&q, parallel, sizes);
        Rng rng;
        rng_seed(&rng, 1337);
        gpt2_init_parameters(&q, sizes, &config, &rng);
        uint64_t got_digest = float_digest(parallel, n);
        CHECK(memcmp(parallel, serial, n * sizeof(float)) == 0 && got_digest == want_digest,
              "%d threads: %zu parameters, digest %016llx, serial loop %016llx", thread_counts[k], n,
              (unsigned long long)got_digest, (unsigned long long)want_digest);
        CHECK(rng.state == want.state, "%d threads: generator state after init %llu, serial %llu", thread_counts[k],
              (unsigned long long)rng.state, (unsigned long long)want.state);
        free(parallel);
    }
#ifdef _OPENMP
    omp_set_num_threads(omp_get_num_procs());
#endif
    // and rng_skip(k) is k draws
    Rng a, b;
    rng_seed(&a, 99);
    rng_seed(&b, 99);
    for (int i = 0; i < 1000; i++) { rng_next_u64(&a); }
    rng_skip(&b, 1000);
    CHECK(rng_next_u64(&a) == rng_next_u64(&b), "rng_skip(1000) equals 1000 draws");
    free(serial);
}

// Reads what a test wrote into a temporary file back as one string (caller frees).
static char* read_back(FILE* f) {
    long n = ftell(f);
    rewind(f);
    char* text = (char*)calloc((size_t)n + 1, 1);
    if (text && fread(text, 1, (size_t)n, f) != (size_t)n) { text[0] = '\0'; }
    return text;
}

static void test_token_pieces_printed_as_text(void) {
    static const struct { const char* piece; const char* printed; } cases[] = {
        {"plain text", "plain text"},
        {"line\nand\ttab", "line\nand\ttab"},              // newline and tab stay
        {"a\x0e" "b\x01\x1b[0m\r", "a\\x0eb\\x01\\x1b[0m\\x0d"},  // control bytes, an escape sequence, CR
        {"del\x7f", "del\\x7f"},
        {"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x99\x82"},  // whole UTF-8
        {"\xc3", "\\xc3"},                       // a UTF-8 lead byte whose continuation is in the next token
        {"\xa9x", "\\xa9x"},                     // a continuation byte without its lead
        {"\xff\xfe", "\\xff\\xfe"},              // never UTF-8
        {"\xc0\xaf", "\\xc0\\xaf"},              // overlong '/'
        {"\xed\xa0\x80", "\\xed\\xa0\\x80"},     // a surrogate
        {"\xe2\x82", "\\xe2\\x82"},              // a cut 3-byte sequence
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        FILE* f = tmpfile();
        print_token_piece(f, cases[i].piece);
        char* got = read_back(f);
        CHECK(got && strcmp(got, cases[i].printed) == 0, "case %zu: printed '%s', want '%s'", i, got, cases[i].printed);
        free(got);
        fclose(f);
    }
}

// A fake model for the sampling loop: the next token is always (the last known token + 1) mod V, and every call's
// window is checked against the tokens generated so far.
typedef struct {
    int T, V, calls, bad_windows;
    int history[64];  // every token so far, the start token first
} CountingModel;

static void counting_next_token_probs(void* m, const int* tokens, int t, float* probs) {
    CountingModel* model = (CountingModel*)m;
    int known = model->calls + 1;  // the start token and one per call before this one
    int expected_t = known < model->T ? known : model->T;
    if (t != expected_t) { model->bad_windows++; }
    for (int i = 0; i < expected_t; i++) {  // the window: the last expected_t tokens, in order
        if (tokens[i] != model->history[known - expected_t + i]) { model->bad_windows++; }
    }
    int next = (tokens[t - 1] + 1) % model->V;
    for (int v = 0; v < model->V; v++) { probs[v] = v == next ? 1.0f : 0.0f; }
    model->history[known] = next;
    model->calls++;
}

static void test_sample_longer_than_window(void) {
    enum { V = 8, T = 4, GEN = 11 };
    static char* pieces[V] = {"a", "b", "c", "d", "e", "f", "g", "\x0e"};
    Tokenizer tokenizer = {V, 7, pieces};  // eot is token 7, printed escaped when sampled
    CountingModel model = {T, V, 0, 0, {7}};
    Rng rng;
    rng_seed(&rng, 1);
    FILE* f = tmpfile();
    sample_text_with(f, &model, counting_next_token_probs, T, V, &tokenizer, GEN, &rng);
    char* got = read_back(f);
    // 11 tokens after the start token 7: 0, 1, ..., 6, 7, 0, 1, 2
    const char* want = "generating:\n---\nabcdefg\\x0eabc\n---\n";
    CHECK(model.calls == GEN, "%d calls of the model for %d tokens", model.calls, GEN);
    CHECK(model.bad_windows == 0, "%d wrong windows or positions", model.bad_windows);
    CHECK(got && strcmp(got, want) == 0, "printed '%s', want '%s'", got, want);
    free(got);
    fclose(f);
}

static void test_box_rows_fit(void) {
    const int width = 2 + BOX_KEY_WIDTH + 3 + BOX_VALUE_WIDTH + 2;  // "| key | value |"
    char long_path[300], words[400];
    memset(long_path, 'p', sizeof(long_path) - 1);  // no space to break at: cut mid-word
    long_path[sizeof(long_path) - 1] = '\0';
    snprintf(words, sizeof(words), "%s", "DelayedScaling(margin=0, interval=1, fp8_format=HYBRID [fwd E4M3, bwd E5M2], "
             "amax_history_len=1024, amax_compute_algo=max, scaling_factor_compute_algo=default, "
             "override_linear_precision=(fprop=fp8, dgrad=fp8, wgrad=fp8), reduce_amax=True)");
    const char* values[] = {"short", words, long_path, ""};
    const int want_rows[] = {1, 5, 5, 1};  // the recipe breaks at spaces; 299 characters of p: 72 * 4 + 11
    for (int i = 0; i < 4; i++) {
        FILE* f = tmpfile();
        box_row(f, "a key", "%s", values[i]);
        char* got = read_back(f);
        // every row exactly `width` wide with both borders; the values' non-space characters all there, in order
        int rows = 0, bad = 0;
        char joined[1024] = "", want_joined[1024] = "";
        for (char* line = strtok(got, "\n"); line; line = strtok(NULL, "\n")) {
            rows++;
            if ((int)strlen(line) != width || strncmp(line, "| ", 2) != 0 || strcmp(line + width - 2, " |") != 0 ||
                line[2 + BOX_KEY_WIDTH + 1] != '|') {
                bad++;
                fprintf(stderr, "  row %d of value %d: '%s'\n", rows, i, line);
            }
            for (char* c = line + 2 + BOX_KEY_WIDTH + 3; c < line + width - 2; c++) {
                if (*c != ' ') { strncat(joined, c, 1); }
            }
        }
        for (const char* c = values[i]; *c; c++) {
            if (*c != ' ') { strncat(want_joined, c, 1); }
        }
        CHECK(bad == 0 && rows == want_rows[i], "value %d: %d rows (want %d), %d not %d wide", i, rows, want_rows[i],
              bad, width);
        CHECK(strcmp(joined, want_joined) == 0, "value %d: the rows hold '%s'", i, joined);
        free(got);
        fclose(f);
    }
    FILE* f = tmpfile();
    box_rule(f);
    char* rule = read_back(f);
    CHECK(rule && (int)strlen(rule) == width + 1 && rule[0] == '+' && rule[width - 1] == '+', "rule '%s'", rule);
    free(rule);
    fclose(f);
}

int main(int argc, char** argv) {
    test_select(argc, argv);  // NAME... / --skip NAME: some of the cases (llmc/testing.h)
    RUN_TEST(test_matmul_bit_identical_to_naive_loops);
    RUN_TEST(test_gelu_bit_identical_to_naive_loop);
    RUN_TEST(test_gelu_derivative_accuracy);
    RUN_TEST(test_attention_bit_identical_to_naive_loops);
    RUN_TEST(test_layernorm_backward_bit_identical_to_naive_loops);
    RUN_TEST(test_gradient_check_fp32);
    RUN_TEST(test_fp8_recorded_amaxes_and_values);
    RUN_TEST(test_fp8_histories_over_steps);
    RUN_TEST(test_fp8_current_scaling);
    RUN_TEST(test_fp8_attention_casts_and_values);
    RUN_TEST(test_fp8_attention_mha_backward_reads_e4m3);
    RUN_TEST(test_bf16_storage_and_modes_differ);
    RUN_TEST(test_fp8_overrides_first_last_and_lm_head);
    RUN_TEST(test_dataloader_ranks_wrap_resume);
    RUN_TEST(test_dataloader_manifest);
    RUN_TEST(test_layers_read_bf16_parameters);
    RUN_TEST(test_parallel_init_matches_serial);
    RUN_TEST(test_token_pieces_printed_as_text);
    RUN_TEST(test_sample_longer_than_window);
    RUN_TEST(test_box_rows_fit);
    return test_summary("gpt-cpu");
}
