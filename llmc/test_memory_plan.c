/*
llmc/test_memory_plan.c — CPU tests of the GPU trainer's memory plan (llmc/memory_plan.h), the estimate it prints and
checks before allocating anything: every buffer's size against sums written out here by hand, what recompute, the
attention and the FP8 options (current scaling's buffers among them) change, the block recipes' scale arrays where the
widths end in partial blocks, the shapes FP8 takes on the GPU (linear_check_gpu_dims), whether GPT-2 1.5B (d48) at
T=1024 fits one 80 GB GPU, and the refusal line.

"Fits an 80 GB GPU": an H100 80GB reports 81559 MiB; the CUDA context, cuBLAS, cuDNN and NCCL take some hundreds of
MiB before the trainer asks for its buffers, so the tests give the plan 79 GiB free, of which it keeps
GPU_MEMORY_HEADROOM_BYTES for the libraries. cuDNN's workspace is known only on a GPU (its graphs report it); the tests
assume 1 GiB, what its deterministic backward on Hopper takes at d48, B=16, T=1024 by the frontend's own formula: the
bf16 dP workspace (B*NH*T*T*2 bytes = 800 MiB) and the fp32 dQ accumulator (B*NH*T*HS*4 = 100 MiB).
*/
#include "memory_plan.h"

#include "testing.h"

static const size_t MiB = (size_t)1 << 20, GiB = (size_t)1 << 30;
static const size_t FREE_ON_80GB = (size_t)79 << 30;
static const size_t ASSUMED_CUDNN_WORKSPACE = (size_t)1 << 30;
static const size_t GEMM_WORKSPACE = (size_t)32 << 20;  // llmc/gemm.cuh's GEMM_WORKSPACE_BYTES

typedef struct {
    GpuMemoryInputs in;
    Fp8Recipe recipe;  // in.linear.recipe points here
    Fp8Meta meta;
} Setup;

// dNN preset (or L/C/NH given), GPT-2's vocabulary, maxT 1024, one process, default FP8 recipe
static void setup(Setup* s, const char* depth, int B, int T, Precision precision, int recompute, int attention) {
    memset(s, 0, sizeof(*s));
    GPT2Config* c = &s->in.config;
    if (gpt2_depth_preset(depth, &c->num_layers, &c->channels, &c->num_heads) != 0) {
        die("test: unknown depth %s", depth);
    }
    c->max_seq_len = 1024;
    c->vocab_size = 50257;
    c->padded_vocab_size = padded_vocab(c->vocab_size);
    s->in.B = B;
    s->in.T = T;
    fp8_recipe_default(&s->recipe);
    LinearPrecision lp = {precision, &s->recipe, 0, 0, c->num_layers, 0};
    s->in.linear = lp;
    s->in.recompute = recompute;
    s->in.attention = attention;
    size_t sizes[NUM_PARAMETER_TENSORS], P = 0;
    fill_in_parameter_sizes(sizes, c);
    for (int i = 0; i < NUM_PARAMETER_TENSORS; i++) { P += sizes[i]; }
    s->in.shard = zero_shard(P, 1, 0, 1);
    s->in.gemm_workspace_bytes = GEMM_WORKSPACE;
    s->in.attention_workspace_bytes = attention == ATTENTION_CUDNN ? ASSUMED_CUDNN_WORKSPACE : 0;
    s->in.column_sum_rows = 64;
    s->in.norm_blocks = 264;
    s->in.gemm_autotune = 8;  // the trainer's default
}

// the FP8 state's size as the trainer gets it: from fp8_meta_init
static void setup_fp8_meta(Setup* s) {
    char err[256];
    int modules = linear_num_modules(s->in.config.num_layers);
    if (fp8_meta_init(&s->meta, modules, &s->recipe, err, sizeof(err))) { die("test: %s", err); }
    s->in.fp8_meta_floats = s->meta.num_floats;
    s->in.fp8_slots = s->meta.num_slots;
    fp8_meta_free(&s->meta);
}

static size_t plan_total(const GpuMemoryInputs* in) {
    GpuMemoryPlan plan;
    gpu_memory_plan(&plan, in);
    return gpu_memory_total(&plan);
}

// Every group of a d12 plan against the sums written out by hand from the model's shapes.
static void test_groups_by_hand(void) {
    Setup s;
    setup(&s, "d12", 8, 1024, PRECISION_FP8, 0, ATTENTION_CUDNN);
    setup_fp8_meta(&s);
    GpuMemoryPlan plan;
    gpu_memory_plan(&plan, &s.in);
    size_t L = 12, C = 768, NH = 12, Vp = 50304, BT = 8 * 1024, BTC = BT * C, P = s.in.shard.padded;
    CHECK(P == 124475904, "d12 has %zu parameters (GPT-2 124M with Vp 50304: 124475904)", P);
    CHECK(gpu_memory_group_bytes(&plan, MEMORY_PARAMETERS) == 2 * P, "parameters: bf16");
    CHECK(gpu_memory_group_bytes(&plan, MEMORY_GRADIENTS) == 4 * P, "gradients: fp32");
    CHECK(gpu_memory_group_bytes(&plan, MEMORY_OPTIMIZER) == 12 * P, "optimizer: master, m, v in fp32");
    // per layer: qkv 3C, atty C, residual2 C, fch 4C, residual3 C = 10C bf16, and four (B, T) fp32 LayerNorm
    // statistics; once: encoded, lnf, proj_out (B, T, C), lnf's two statistics, logits, losses; and one slice each of
    // ln1 C, ln2 C, fch_gelu 4C that every layer shares (each layer's FP8 wgrads read the x^T its forward kept)
    size_t activations = L * (10 * BTC * 2 + 4 * BT * 4) + 3 * BTC * 2 + 2 * BT * 4 + BT * Vp * 2 + BT * 4 + 6 * BTC * 2;
    CHECK(gpu_memory_group_bytes(&plan, MEMORY_ACTIVATIONS) == activations, "activations %zu, by hand %zu",
          gpu_memory_group_bytes(&plan, MEMORY_ACTIVATIONS), activations);
    // cuDNN: the (B, NH, T) statistics per layer (8*12*1024 floats, already a multiple of 64), and its own workspace
    // since 1 GiB is larger than cuBLASLt's 32 MiB
    CHECK(gpu_memory_group_bytes(&plan, MEMORY_ATTENTION) == L * 8 * NH * 1024 * 4 + ASSUMED_CUDNN_WORKSPACE,
          "attention %zu", gpu_memory_group_bytes(&plan, MEMORY_ATTENTION));
    // FP8: the weights of every block's four linears (12 C^2 per layer) twice (W and W^T), the LM head in BF16; cast
    // scratch x, dy, dy_t of 4C columns each (fcproj's input, fc's output); every layer's kept x^T of qkv, attproj, fc
    // (C each) and fcproj (4C); the scaling state; the counters, the saved counters and block scale range, the
    // diagnostics' two amaxes and the GEMMs' 16-byte scale_inv per slot
    size_t fp8 = 2 * L * 12 * C * C + 3 * BT * 4 * C + L * 7 * C * BT + s.in.fp8_meta_floats * 4 +
                 (size_t)s.in.fp8_slots * (3 * 8 + 4 * 8 + 2 * 4 + 16);
    CHECK(gpu_memory_group_bytes(&plan, MEMORY_FP8) == fp8, "fp8 %zu, by hand %zu", gpu_memory_group_bytes(&plan, MEMORY_FP8),
          fp8);
    CHECK(s.in.fp8_meta_floats == (size_t)(1024 + 2) * 5 * (4 * 12 + 1), "FP8 state: (history + 2) * 5 slots * modules");
    // workspaces: inputs, targets, bucket positions and tokens (B*T int32 each), bucket starts and their count
    // (B*T + 2), column partials (B*T / 64 chunks of 4C fp32), dresidual, dbtc, dbtc2 (C), dbt4c (4C), dqkv (3C) bf16,
    // two single floats, the norm's 264 partials, cuBLASLt's 32 MiB, and the GEMM timing's scratch: the largest
    // accumulating GEMM's output, the LM head's wgrad (Vp, C) fp32
    size_t workspaces = 4 * BT * 4 + (BT + 2) * 4 + BT / 64 * 4 * C * 4 + (3 + 4 + 3) * BTC * 2 + 2 * 4 + 264 * 4 +
                        GEMM_WORKSPACE + Vp * C * 4;
    CHECK(gpu_memory_group_bytes(&plan, MEMORY_WORKSPACES) == workspaces, "workspaces %zu, by hand %zu",
          gpu_memory_group_bytes(&plan, MEMORY_WORKSPACES), workspaces);
    size_t groups = 0;
    for (int g = 0; g < MEMORY_GROUPS; g++) { groups += gpu_memory_group_bytes(&plan, (MemoryGroup)g); }
    CHECK(groups == gpu_memory_total(&plan), "the groups add up to the total");
}

// -r 1 keeps one layer's GELU output instead of L; -r 2 also one layer's ln1 and ln2. Nothing else moves.
static void test_recompute_saves_what_it_recomputes(void) {
    Setup s;
    setup(&s, "d24", 16, 1024, PRECISION_BF16, 0, ATTENTION_CUDNN);
    size_t BTC = (size_t)16 * 1024 * 1024, L = 24;
    size_t r0 = plan_total(&s.in);
    s.in.recompute = 1;
    size_t r1 = plan_total(&s.in);
    s.in.recompute = 2;
    size_t r2 = plan_total(&s.in);
    CHECK(r0 - r1 == (L - 1) * BTC * 4 * 2, "-r 1 saves %zu bytes, expected (L-1) (B,T,4C) bf16", r0 - r1);
    CHECK(r1 - r2 == 2 * (L - 1) * BTC * 2, "-r 2 saves %zu more, expected (L-1) times ln1 and ln2", r1 - r2);
}

// Plain attention keeps (L, B, NH, T, T) and its scratch; cuDNN the (L, B, NH, T) statistics; a cuDNN workspace no
// larger than cuBLASLt's shares it and costs nothing.
static void test_attention_kinds(void) {
    Setup s;
    setup(&s, "d12", 4, 1000, PRECISION_BF16, 0, ATTENTION_PLAIN);
    GpuMemoryPlan plan;
    gpu_memory_plan(&plan, &s.in);
    size_t L = 12, B = 4, NH = 12, T = 1000, BTC = B * T * 768;
    CHECK(plan.bytes[GPU_ATT] == L * B * NH * T * T * 2 && plan.bytes[GPU_ATTENTION_STATS] == 0,
          "plain: attention matrices per layer, no statistics");
    CHECK(gpu_memory_group_bytes(&plan, MEMORY_ATTENTION) == L * B * NH * T * T * 2 + B * NH * T * T * 2 + 7 * BTC * 2,
          "plain: + preatt and q, k, v, y, dq, dk, dv scratch");
    s.in.attention = ATTENTION_CUDNN;
    s.in.attention_workspace_bytes = 4 * MiB;
    gpu_memory_plan(&plan, &s.in);
    // 4*12*1000 = 48000 floats per layer, rounded up to 48000 (a multiple of 64)
    CHECK(plan.bytes[GPU_ATT] == 0 && plan.bytes[GPU_ATTENTION_STATS] == L * 48000 * 4, "cuDNN: statistics only");
    CHECK(plan.bytes[GPU_ATTENTION_WORKSPACE] == 0, "a 4 MiB cuDNN workspace shares cuBLASLt's 32 MiB");
    CHECK(attention_stats_layer_floats(1, 25, 1023) == 25600, "25575 floats per layer round up to 25600 (256-byte aligned)");
}

// Issue 11 item 5: the FP8 cast scratch is as wide as the widest FP8 GEMM that uses it, not max(4C, Vp) always.
static void test_fp8_scratch_sized_for_its_users(void) {
    Setup s;
    setup(&s, "d12", 64, 1024, PRECISION_FP8, 0, ATTENTION_CUDNN);
    setup_fp8_meta(&s);
    size_t BT = 64 * 1024, C = 768, Vp = 50304;
    GpuMemoryPlan plan;
    gpu_memory_plan(&plan, &s.in);
    size_t scratch = plan.bytes[GPU_X_FP8] + plan.bytes[GPU_X_T_FP8] + plan.bytes[GPU_DY_FP8] + plan.bytes[GPU_DY_T_FP8];
    CHECK(scratch == 3 * BT * 4 * C && plan.bytes[GPU_X_T_FP8] == 0,
          "LM head in BF16: x, dy, dy_t (B*T, 4C), no x^T scratch (every wgrad's is kept), %zu bytes", scratch);
    printf("  d12 B=64: FP8 cast scratch %.2f GiB, was %.2f GiB sized B*T*max(4C, Vp)\n", (double)scratch / GiB,
           (double)(4 * BT * Vp) / GiB);
    s.in.linear.fp8_lm_head = 1;
    setup_fp8_meta(&s);
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_DY_FP8] == BT * Vp && plan.bytes[GPU_DY_T_FP8] == BT * Vp && plan.bytes[GPU_X_FP8] == BT * 4 * C,
          "LM head in FP8: its output gradient is Vp wide, its input still C");
    CHECK(plan.bytes[GPU_WEIGHT_FP8] == 12 * 12 * C * C + Vp * C, "and its weight has an FP8 copy");
    s.in.linear.fp8_lm_head = 0;
    s.recipe.override_wgrad = 1;  // every wgrad in BF16: no input transpose
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_X_T_FP8] == 0 && plan.bytes[GPU_INPUT_T_FP8] == 0 && plan.bytes[GPU_X_FP8] == BT * 4 * C,
          "wgrad in BF16: no x^T, scratch or kept");
    s.recipe.override_wgrad = 0;
    s.recipe.override_fprop = s.recipe.override_dgrad = 1;  // only wgrad in FP8: x still records the input's amax
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_X_FP8] == BT * 4 * C && plan.bytes[GPU_WEIGHT_FP8] == 0, "only wgrad in FP8: no FP8 weights");
    Setup b;
    setup(&b, "d12", 64, 1024, PRECISION_BF16, 0, ATTENTION_CUDNN);
    gpu_memory_plan(&plan, &b.in);
    CHECK(gpu_memory_group_bytes(&plan, MEMORY_FP8) == 0, "BF16: no FP8 buffers");
}

// Delayed, current and blockwise scaling keep each FP8 wgrad's x^T (1 byte an element; blockwise with its VEC128
// scales) from the forward instead of the bf16 input (2 bytes) where the recompute keeps it: ln1, ln2 and fch_gelu
// shrink to one shared slice plus one per layer whose wgrad is BF16; an input the recompute drops keeps no x^T (its
// backward casts it again, into the x^T scratch); mxfp8 keeps the bf16 inputs. By the plan, FP8 then needs no more
// than BF16 at d12 B 64 and d48 B 16, blockwise included.
static void test_fp8_keeps_input_transposes(void) {
    Setup s;
    setup(&s, "d12", 64, 1024, PRECISION_FP8, 0, ATTENTION_CUDNN);
    setup_fp8_meta(&s);
    size_t L = 12, C = 768, BT = 64 * 1024, BTC = BT * C;
    GpuMemoryPlan plan;
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_LN1] == BTC * 2 && plan.bytes[GPU_LN2] == BTC * 2 && plan.bytes[GPU_FCH_GELU] == 4 * BTC * 2,
          "-r 0: one shared slice of ln1, ln2, fch_gelu");
    CHECK(plan.bytes[GPU_INPUT_T_FP8] == L * 7 * BTC && plan.bytes[GPU_X_T_FP8] == 0, "-r 0: every layer's 7C of x^T");
    size_t fp8_total = plan_total(&s.in);
    Setup b;
    setup(&b, "d12", 64, 1024, PRECISION_BF16, 0, ATTENTION_CUDNN);
    size_t bf16_total = plan_total(&b.in);
    printf("  d12 B=64 -r 0: bf16 %.2f GiB, fp8 %.2f GiB\n", (double)bf16_total / GiB, (double)fp8_total / GiB);
    CHECK(fp8_total <= bf16_total, "d12 B=64: FP8 plans %zu bytes, BF16 %zu", fp8_total, bf16_total);
    // -r 1: fcproj's input is GELU's, made again in the backward and cast there: no x^T kept for it
    s.in.recompute = 1;
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_INPUT_T_FP8] == L * 3 * BTC && plan.bytes[GPU_X_T_FP8] == BT * 4 * C &&
              plan.bytes[GPU_FCH_GELU] == 4 * BTC * 2,
          "-r 1: qkv, attproj, fc x^T kept, fcproj's cast in the backward into (4C, B*T) scratch");
    s.in.recompute = 2;
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_INPUT_T_FP8] == L * BTC && plan.bytes[GPU_X_T_FP8] == BT * 4 * C &&
              plan.bytes[GPU_LN1] == BTC * 2 && plan.bytes[GPU_LN2] == BTC * 2,
          "-r 2: only attproj's x^T kept (its input atty stays for the attention anyway)");
    // the first and last block in BF16: they keep their bf16 inputs, the others share one slice
    s.in.recompute = 0;
    s.in.linear.fp8_bf16_first_last = 1;
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_LN1] == 3 * BTC * 2 && plan.bytes[GPU_FCH_GELU] == 3 * 4 * BTC * 2 &&
              plan.bytes[GPU_INPUT_T_FP8] == (L - 2) * 7 * BTC,
          "-fp8_bf16_first_last 1: blocks 0 and 11 keep their own slices, 10 blocks keep x^T");
    LinearPrecision* lp = &s.in.linear;
    int slices = 0;
    int first = linear_input_slice(lp, LINEAR_QKV, 0, 0, &slices), middle = linear_input_slice(lp, LINEAR_QKV, 0, 5, NULL),
        last = linear_input_slice(lp, LINEAR_QKV, 0, 11, NULL);
    CHECK(slices == 3 && middle == 0 && first == 1 && last == 2, "slices: block 0 -> %d, 5 -> %d, 11 -> %d of %d",
          first, middle, last, slices);
    // BF16: every layer its own slice, as without FP8
    CHECK(linear_input_slice(&b.in.linear, LINEAR_FC, 0, 7, &slices) == 7 && slices == 12, "BF16: layer 7's slice is 7");
    // blockwise: the same x^T kept as delayed scaling's, with their VEC128 scales (one float per channel and 128
    // tokens: qkv, attproj, fc C each and fcproj 4C per layer), no x^T scratch and its scales; -r 1: fcproj's input
    // cast in the backward into the (4C, B*T) scratch and its scales
    s.in.linear.fp8_bf16_first_last = 0;
    float8_block_scaling_apply(&s.recipe, FP8_SCALING_BLOCKWISE);
    setup_fp8_meta(&s);
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_LN1] == BTC * 2 && plan.bytes[GPU_LN2] == BTC * 2 && plan.bytes[GPU_FCH_GELU] == 4 * BTC * 2 &&
              plan.bytes[GPU_INPUT_T_FP8] == L * 7 * BTC && plan.bytes[GPU_X_T_FP8] == 0,
          "blockwise -r 0: one shared slice of ln1, ln2, fch_gelu, every layer's 7C of x^T, no x^T scratch");
    CHECK(plan.bytes[GPU_INPUT_T_SCALE_INV] == L * 7 * C * (BT / 128) * 4 && plan.bytes[GPU_X_T_SCALE_INV] == 0,
          "blockwise -r 0: the kept x^T's scales, %zu bytes; none for a scratch x^T",
          plan.bytes[GPU_INPUT_T_SCALE_INV]);
    size_t blockwise_total = plan_total(&s.in);
    printf("  d12 B=64 -r 0: blockwise %.2f GiB (bf16 %.2f GiB)\n", (double)blockwise_total / GiB,
           (double)bf16_total / GiB);
    CHECK(blockwise_total <= bf16_total, "d12 B=64: blockwise plans %zu bytes, BF16 %zu", blockwise_total, bf16_total);
    s.in.recompute = 1;
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_INPUT_T_FP8] == L * 3 * BTC && plan.bytes[GPU_X_T_FP8] == BT * 4 * C &&
              plan.bytes[GPU_INPUT_T_SCALE_INV] == L * 3 * C * (BT / 128) * 4 &&
              plan.bytes[GPU_X_T_SCALE_INV] == 4 * C * (BT / 128) * 4,
          "blockwise -r 1: qkv, attproj, fc x^T kept with their scales, fcproj's cast in the backward into scratch");
    s.in.recompute = 0;
    // mxfp8: its columnwise copy is dequantized bf16, as large as the input: the bf16 inputs stay, nothing kept
    float8_block_scaling_apply(&s.recipe, FP8_SCALING_MXFP8);
    setup_fp8_meta(&s);
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_LN1] == L * BTC * 2 && plan.bytes[GPU_FCH_GELU] == L * 4 * BTC * 2 &&
              plan.bytes[GPU_INPUT_T_FP8] == 0 && plan.bytes[GPU_INPUT_T_SCALE_INV] == 0,
          "mxfp8: every layer's bf16 inputs, no x^T kept");
    // d48 B 16 -r 0 (issue 12's shape): FP8 below BF16
    Setup d48, d48_bf16;
    setup(&d48, "d48", 16, 1024, PRECISION_FP8, 0, ATTENTION_CUDNN);
    setup_fp8_meta(&d48);
    setup(&d48_bf16, "d48", 16, 1024, PRECISION_BF16, 0, ATTENTION_CUDNN);
    CHECK(plan_total(&d48.in) <= plan_total(&d48_bf16.in), "d48 B=16 -r 0: FP8 %.2f GiB, BF16 %.2f GiB",
          (double)plan_total(&d48.in) / GiB, (double)plan_total(&d48_bf16.in) / GiB);
}

// Current scaling adds its few small buffers (each slot's last amax, evaluation scales, the amax pass's workspace),
// and its one-row history makes the FP8 metadata smaller than delayed scaling's 1024 rows.
static void test_fp8_current_scaling_buffers(void) {
    Setup s;
    setup(&s, "d12", 8, 1024, PRECISION_FP8, 0, ATTENTION_CUDNN);
    setup_fp8_meta(&s);
    GpuMemoryPlan delayed, current;
    gpu_memory_plan(&delayed, &s.in);
    CHECK(delayed.bytes[GPU_FP8_WINDOW_AMAX] == 0 && delayed.bytes[GPU_FP8_EVAL_SCALES] == 0 &&
              delayed.bytes[GPU_AMAX_PARTIALS] == 0 && delayed.bytes[GPU_AMAX_TICKETS] == 0,
          "delayed scaling: none of current scaling's buffers");
    float8_current_scaling_apply(&s.recipe);
    setup_fp8_meta(&s);
    gpu_memory_plan(&current, &s.in);
    size_t S = 5 * (4 * 12 + 1);
    CHECK(current.bytes[GPU_FP8_WINDOW_AMAX] == S * 4 && current.bytes[GPU_FP8_EVAL_SCALES] == 2 * S * 4 &&
              current.bytes[GPU_AMAX_PARTIALS] == FP8_AMAX_MAX_BLOCKS * 4 && current.bytes[GPU_AMAX_TICKETS] == 4,
          "current scaling: %zu slots' amax and evaluation scales, the amax workspace", S);
    CHECK(current.bytes[GPU_FP8_DIAG_AMAX] == 2 * S * 4 && delayed.bytes[GPU_FP8_DIAG_AMAX] == 2 * S * 4,
          "the diagnostics' step and window amaxes: (2, slots) fp32 in both recipes");
    CHECK(current.bytes[GPU_FP8_META] == (1 + 2) * S * 4 && delayed.bytes[GPU_FP8_META] == (1024 + 2) * S * 4,
          "FP8 metadata: one history row instead of 1024");
    CHECK(delayed.bytes[GPU_FP8_GEMM_SCALE_INV] == S * 16 && current.bytes[GPU_FP8_GEMM_SCALE_INV] == 2 * S * 16,
          "the GEMMs' scale_invs, 16 bytes each: every slot's (delayed), and the evaluation casts' too (current)");
}

// FP8 attention (-fp8_attention 1) at d12, B 8, T 1024: the E4M3 q, k, v and output of one layer (B*T*3C and B*T*C
// bytes) and every layer's four 16-byte scalar cells for cuDNN, in the attention group; none without the flag, none
// with the plain attention (the trainer refuses that pairing), none in BF16.
static void test_fp8_attention_buffers(void) {
    Setup s;
    setup(&s, "d12", 8, 1024, PRECISION_FP8, 0, ATTENTION_CUDNN);
    setup_fp8_meta(&s);
    GpuMemoryPlan without, with;
    gpu_memory_plan(&without, &s.in);
    s.in.linear.fp8_attention = 1;
    gpu_memory_plan(&with, &s.in);
    size_t BTC = (size_t)8 * 1024 * 768;
    CHECK(without.bytes[GPU_ATTENTION_QKV_FP8] == 0 && without.bytes[GPU_ATTENTION_OUT_FP8] == 0 &&
              without.bytes[GPU_ATTENTION_FP8_CELLS] == 0, "without the flag: no FP8 attention buffers");
    CHECK(with.bytes[GPU_ATTENTION_QKV_FP8] == 3 * BTC && with.bytes[GPU_ATTENTION_OUT_FP8] == BTC &&
              with.bytes[GPU_ATTENTION_FP8_CELLS] == 12 * 4 * 16,
          "with it: q k v %zu, output %zu, cells %zu bytes", with.bytes[GPU_ATTENTION_QKV_FP8],
          with.bytes[GPU_ATTENTION_OUT_FP8], with.bytes[GPU_ATTENTION_FP8_CELLS]);
    CHECK(gpu_memory_group_bytes(&with, MEMORY_ATTENTION) - gpu_memory_group_bytes(&without, MEMORY_ATTENTION) ==
              4 * BTC + 12 * 4 * 16, "all of it in the attention group");
    s.in.attention = ATTENTION_PLAIN;
    gpu_memory_plan(&with, &s.in);
    CHECK(with.bytes[GPU_ATTENTION_QKV_FP8] == 0, "plain attention: none");
    s.in.attention = ATTENTION_CUDNN;
    s.in.linear.precision = PRECISION_BF16;
    gpu_memory_plan(&with, &s.in);
    CHECK(with.bytes[GPU_ATTENTION_QKV_FP8] == 0 && with.bytes[GPU_ATTENTION_FP8_CELLS] == 0, "BF16: none");
}

// The block recipes' buffers at d12, B 8, T 1024 (BT 8192), sums written out from the shapes. blockwise: the FP8 codes
// as for delayed scaling, plus scale_inv arrays: per layer W's BLK128x128 tiles, qkv (3C/128 = 18 rows of
// round_up(C/128 = 6, 4) = 8) + attproj (6 x 8) + fc (24 x 8) + fcproj (6 x round_up(24, 4) = 24) = 144 + 48 + 192 +
// 144 = 528 floats, W^T's qkv (6 x round_up(18, 4) = 20) + attproj 48 + fc (6 x 24) + fcproj (24 x 8) = 120 + 48 + 144
// + 192 = 504; x's rowwise VEC128 (4C/128 = 24 blocks of 8192 rows), dy's both copies likewise; the kept x^T's per
// layer (C + C + C + 4C rows of 8192/128 = 64 blocks), and no x^T scratch (every wgrad reads a kept one). mxfp8: no
// FP8 codes, every weight dequantized twice in bf16 (2 x 2 bytes an element), x and dy dequantized in bf16. Both: the
// block scale ranges and the window amaxes.
static void test_fp8_block_recipe_buffers(void) {
    Setup s;
    setup(&s, "d12", 8, 1024, PRECISION_FP8, 0, ATTENTION_CUDNN);
    setup_fp8_meta(&s);
    GpuMemoryPlan delayed, blockwise, mxfp8;
    gpu_memory_plan(&delayed, &s.in);
    float8_block_scaling_apply(&s.recipe, FP8_SCALING_BLOCKWISE);
    setup_fp8_meta(&s);
    gpu_memory_plan(&blockwise, &s.in);
    size_t S = 5 * (4 * 12 + 1), L = 12, C = 768, BT = 8192;
    CHECK(blockwise.bytes[GPU_WEIGHT_FP8] == delayed.bytes[GPU_WEIGHT_FP8] &&
              blockwise.bytes[GPU_X_FP8] == delayed.bytes[GPU_X_FP8] &&
              blockwise.bytes[GPU_DY_T_FP8] == delayed.bytes[GPU_DY_T_FP8],
          "blockwise: the FP8 codes of delayed scaling");
    CHECK(blockwise.bytes[GPU_WEIGHT_SCALE_INV] == L * 528 * 4 && blockwise.bytes[GPU_WEIGHT_T_SCALE_INV] == L * 504 * 4,
          "blockwise: W's and W^T's tile scales, %zu and %zu bytes", blockwise.bytes[GPU_WEIGHT_SCALE_INV],
          blockwise.bytes[GPU_WEIGHT_T_SCALE_INV]);
    CHECK(blockwise.bytes[GPU_X_SCALE_INV] == 24 * BT * 4 && blockwise.bytes[GPU_X_T_SCALE_INV] == 0 &&
              blockwise.bytes[GPU_DY_SCALE_INV] == 24 * BT * 4 && blockwise.bytes[GPU_DY_T_SCALE_INV] == BT / 128 * 4 * C * 4,
          "blockwise: x's rowwise and dy's VEC128 scales, both copies");
    CHECK(blockwise.bytes[GPU_INPUT_T_SCALE_INV] == L * 7 * C * 64 * 4 && delayed.bytes[GPU_INPUT_T_SCALE_INV] == 0,
          "blockwise: the kept x^T's VEC128 scales, %zu bytes (delayed scaling's have none)",
          blockwise.bytes[GPU_INPUT_T_SCALE_INV]);
    CHECK(blockwise.bytes[GPU_WEIGHT_DEQUANTIZED] == 0 && blockwise.bytes[GPU_X_DEQUANTIZED] == 0,
          "blockwise: nothing dequantized");
    CHECK(blockwise.bytes[GPU_FP8_BLOCK_SCALE_RANGE] == 2 * S * 4 && blockwise.bytes[GPU_FP8_WINDOW_AMAX] == S * 4 &&
              delayed.bytes[GPU_FP8_BLOCK_SCALE_RANGE] == 0 && delayed.bytes[GPU_WEIGHT_SCALE_INV] == 0,
          "block scale ranges and window amaxes for blockwise only, not delayed scaling");
    float8_block_scaling_apply(&s.recipe, FP8_SCALING_MXFP8);
    setup_fp8_meta(&s);
    gpu_memory_plan(&mxfp8, &s.in);
    CHECK(mxfp8.bytes[GPU_WEIGHT_FP8] == 0 && mxfp8.bytes[GPU_X_FP8] == 0 && mxfp8.bytes[GPU_DY_T_FP8] == 0 &&
              mxfp8.bytes[GPU_X_SCALE_INV] == 0,
          "mxfp8: no FP8 codes or scale_inv arrays (the GEMMs are BF16)");
    CHECK(mxfp8.bytes[GPU_WEIGHT_DEQUANTIZED] == 2 * delayed.bytes[GPU_WEIGHT_FP8] &&
              mxfp8.bytes[GPU_WEIGHT_DEQUANTIZED_COLUMNWISE] == 2 * delayed.bytes[GPU_WEIGHT_FP8] &&
              mxfp8.bytes[GPU_X_DEQUANTIZED] == 2 * BT * 4 * C && mxfp8.bytes[GPU_DY_DEQUANTIZED] == 2 * BT * 4 * C &&
              mxfp8.bytes[GPU_DY_DEQUANTIZED_COLUMNWISE] == 2 * BT * 4 * C,
          "mxfp8: weights and dy dequantized twice (rowwise, columnwise: one cast makes both), x once, in bf16");
    CHECK(mxfp8.bytes[GPU_FP8_BLOCK_SCALE_RANGE] == 2 * S * 4 && mxfp8.bytes[GPU_FP8_WINDOW_AMAX] == S * 4,
          "mxfp8: block scale ranges and window amaxes");
    CHECK(blockwise.bytes[GPU_FP8_GEMM_SCALE_INV] == 0 && mxfp8.bytes[GPU_FP8_GEMM_SCALE_INV] == 0,
          "block recipes: no strided per-slot scale_invs (their GEMMs read whole scale arrays)");
}

// The block recipes' scale arrays where the widths end in partial blocks, sized with ceil (fp8/block.h's layouts): d48
// (C 1600 = 12.5 x 128) at B 1, T 1000 (B*T 1000 = 7.8 x 128, not a multiple of 4 either). W's BLK128x128 per layer,
// qkv (4800, 1600): ceil(4800/128) = 38 rows of round_up(ceil(1600/128) = 13, 4) = 16, attproj 13 x 16, fc (6400,
// 1600) 50 x 16, fcproj (1600, 6400) 13 x round_up(50, 4) = 52: 608 + 208 + 800 + 676 = 2292 floats; W^T's qkv (1600,
// 4800) 13 x round_up(38, 4) = 40, attproj 208, fc (1600, 6400) 13 x 52, fcproj (6400, 1600) 50 x 16: 520 + 208 + 676
// + 800 = 2204; x's and dy's VEC128 rowwise, (1000, 4C): ceil(6400/128) = 50 blocks of 1000 rows; dy's columnwise (4C,
// 1000): ceil(1000/128) = 8 blocks of 6400 rows; the kept x^T's per layer, 8 blocks of qkv's, attproj's, fc's 1600
// rows and fcproj's 6400 (-r 1: no fcproj x^T kept, its scratch copy 8 blocks of 6400 rows).
static void test_fp8_block_scales_partial_blocks(void) {
    Setup s;
    setup(&s, "d48", 1, 1000, PRECISION_FP8, 0, ATTENTION_CUDNN);
    float8_block_scaling_apply(&s.recipe, FP8_SCALING_BLOCKWISE);
    setup_fp8_meta(&s);
    GpuMemoryPlan plan;
    gpu_memory_plan(&plan, &s.in);
    size_t L = 48, BT = 1000;
    CHECK(plan.bytes[GPU_WEIGHT_SCALE_INV] == L * 2292 * 4 && plan.bytes[GPU_WEIGHT_T_SCALE_INV] == L * 2204 * 4,
          "d48 blockwise: W's and W^T's tile scales, %zu and %zu bytes", plan.bytes[GPU_WEIGHT_SCALE_INV],
          plan.bytes[GPU_WEIGHT_T_SCALE_INV]);
    CHECK(plan.bytes[GPU_X_SCALE_INV] == 50 * BT * 4 && plan.bytes[GPU_DY_SCALE_INV] == 50 * BT * 4 &&
              plan.bytes[GPU_X_T_SCALE_INV] == 0 && plan.bytes[GPU_DY_T_SCALE_INV] == 8 * 6400 * 4,
          "d48 blockwise at B*T 1000: x's and dy's VEC128 scales, partial blocks counted");
    CHECK(plan.bytes[GPU_INPUT_T_SCALE_INV] == L * 8 * (3 * 1600 + 6400) * 4,
          "d48 blockwise at B*T 1000: the kept x^T's VEC128 scales, %zu bytes", plan.bytes[GPU_INPUT_T_SCALE_INV]);
    // the codes, every row as long as its GEMM's k padded to whole blocks (linear_fp8_gemm_k): W (OC, k(IC)) and W^T
    // (IC, k(OC)) in k(OC) x k(IC) per module, qkv 4864 x 1664, attproj 1664 x 1664, fc 6400 x 1664, fcproj 1664 x
    // 6400; x and dy (1000, 6400), 6400 whole blocks; the columnwise copies' rows k(1000) = 1024
    CHECK(plan.bytes[GPU_WEIGHT_FP8] == L * 1664 * (4864 + 1664 + 2 * 6400) &&
              plan.bytes[GPU_WEIGHT_T_FP8] == plan.bytes[GPU_WEIGHT_FP8],
          "d48 blockwise: the weights' codes padded along k, %zu bytes", plan.bytes[GPU_WEIGHT_FP8]);
    CHECK(plan.bytes[GPU_X_FP8] == BT * 6400 && plan.bytes[GPU_DY_FP8] == BT * 6400 &&
              plan.bytes[GPU_DY_T_FP8] == 1024 * 6400 && plan.bytes[GPU_X_T_FP8] == 0 &&
              plan.bytes[GPU_INPUT_T_FP8] == L * 1024 * (3 * 1600 + 6400),
          "d48 blockwise at B*T 1000: x's, dy's and the kept x^T's codes, rows padded along k");
    s.in.config.channels = 1536;  // C 12 x 128: nothing padded but B*T
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_WEIGHT_FP8] == L * 12 * 1536 * 1536 && plan.bytes[GPU_X_FP8] == BT * 4 * 1536,
          "C 1536 blockwise: the weights' and x's codes unpadded");
    s.in.config.channels = 1600;
    gpu_memory_plan(&plan, &s.in);
    size_t kept_offsets[4 * 48 + 1];
    fp8_input_t_scale_layout(&s.in.config, &s.in.linear, 0, BT, kept_offsets);
    int kept_misaligned = 0;
    for (int m = 0; m < 4 * 48 + 1; m++) { kept_misaligned += kept_offsets[m] % 4 != 0; }
    CHECK(kept_misaligned == 0 && kept_offsets[4] == 8 * (3 * 1600 + 6400),
          "%d modules' kept x^T scales not 16-byte aligned; layer 1 starts at %zu floats", kept_misaligned,
          kept_offsets[4]);
    s.in.recompute = 1;
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_INPUT_T_SCALE_INV] == L * 8 * 3 * 1600 * 4 && plan.bytes[GPU_X_T_SCALE_INV] == 8 * 6400 * 4,
          "d48 blockwise -r 1: qkv's, attproj's, fc's x^T scales kept, fcproj's scratch x^T's");
    s.in.recompute = 0;
    // every module's tile scales start 16-byte aligned (cuBLASLt's scale pointers): a multiple of 4 floats apart
    size_t offsets[4 * 48 + 1], offsets_t[4 * 48 + 1];
    fp8_weight_scale_layout(&s.in.config, &s.in.linear, offsets, 0);
    fp8_weight_scale_layout(&s.in.config, &s.in.linear, offsets_t, 1);
    int misaligned = 0;
    for (int m = 0; m < 4 * 48 + 1; m++) { misaligned += offsets[m] % 4 != 0 || offsets_t[m] % 4 != 0; }
    CHECK(misaligned == 0, "%d modules' tile scales not 16-byte aligned", misaligned);
}

// What the GPU trainer takes of a shape in FP8 (llmc/linear.h's linear_check_gpu_dims; the CPU trainer takes every
// shape): per-tensor recipes C and B*T multiples of 64; mxfp8 C a multiple of 8 and B*T of 16; blockwise every
// dimension of an FP8 module a multiple of 16 (a k off 128 runs zero-padded to whole blocks: linear_fp8_gemm_k).
static void test_gpu_dims(void) {
    const struct {
        const char* recipe;  // delayed, mxfp8, blockwise
        int L, C, B, T, vp;  // vp: the padded vocabulary (0: GPT-2's, 50304)
        int override_fprop, override_dgrad, override_wgrad, lm_head;
        const char* refusal;  // NULL: accepted
    } cases[] = {
        {"delayed", 2, 768, 8, 1024, 0, 0, 0, 0, 0, NULL},
        {"delayed", 2, 96, 8, 1024, 0, 0, 0, 0, 0,
         "fp8 on the GPU needs C and B*T to be multiples of 64 (C 96, B*T 8192)"},
        {"delayed", 2, 768, 3, 16, 0, 0, 0, 0, 0, "multiples of 64 (C 768, B*T 48)"},
        {"mxfp8", 2, 72, 3, 16, 0, 0, 0, 0, 0, NULL},  // C 2.25 x 32, B*T 48 = 1.5 x 32
        {"mxfp8", 48, 1600, 1, 1008, 0, 0, 0, 0, 1, NULL},  // B*T 31.5 x 32
        {"mxfp8", 2, 100, 3, 16, 0, 0, 0, 0, 0,
         "-fp8_recipe mxfp8 on the GPU needs every FP8 module's width to be a multiple of 8 (the block casts' 16-byte "
         "loads and 16-row tiles): C is 100 (-C 100)"},
        {"mxfp8", 2, 96, 3, 21, 0, 0, 0, 0, 0,
         "needs B*T to be a multiple of 16 (the block casts' 16-byte loads and 16-row tiles): B*T is 63 (-b 3 -t 21)"},
        {"mxfp8", 2, 96, 3, 16, 50260, 0, 0, 0, 1, "the padded vocabulary Vp is 50260 (the vocabulary 50257 padded; "
         "-fp8_lm_head 0)"},
        {"mxfp8", 2, 96, 3, 16, 50260, 0, 0, 0, 0, NULL},  // the LM head in BF16: its Vp is no cast's
        {"blockwise", 12, 768, 8, 1024, 0, 0, 0, 0, 1, NULL},
        {"blockwise", 48, 1600, 8, 1024, 0, 0, 0, 0, 0, NULL},  // k 1600 and 4800 padded to 1664 and 4864
        {"blockwise", 48, 1600, 8, 1024, 0, 1, 1, 0, 0, NULL},  // wgrad alone in FP8: 1600 is outer (m, n) only
        {"blockwise", 2, 128, 2, 40, 0, 0, 0, 1, 0, NULL},      // B*T 80, outer in fprop and dgrad
        {"blockwise", 2, 128, 2, 40, 0, 0, 0, 0, 0, NULL},      // B*T 80, wgrad's k, padded to 128
        {"blockwise", 2, 128, 3, 20, 0, 0, 0, 0, 0,
         "-fp8_recipe blockwise on the GPU needs B*T to be a multiple of 16 (cuBLASLt's FP8 GEMMs and the block casts' "
         "tiles): B*T is 60 (-b 3 -t 20)"},
        {"blockwise", 2, 128, 3, 16, 50260, 0, 1, 1, 1, "the padded vocabulary Vp is 50260"},  // fprop FP8: outer Vp
        {"blockwise", 2, 128, 8, 16, 50304, 0, 0, 0, 1, NULL},
        {"blockwise", 2, 128, 3, 16, 50304, 0, 1, 1, 1, NULL},
        {"blockwise", 2, 72, 8, 1024, 0, 1, 1, 0, 0,
         "-fp8_recipe blockwise on the GPU needs every FP8 module's width to be a multiple of 16 (cuBLASLt's FP8 GEMMs "
         "and the block casts' tiles): C is 72 (-C 72)"},
        {"blockwise", 2, 144, 8, 1024, 0, 0, 0, 0, 0, NULL},    // C 144 = 1.125 blocks, 3C 3.375, 4C 4.5
        {"blockwise", 2, 160, 8, 1024, 0, 0, 0, 0, 1, NULL},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        Setup s;
        memset(&s, 0, sizeof(s));
        setup(&s, "d12", cases[i].B, cases[i].T, PRECISION_FP8, 0, ATTENTION_CUDNN);
        s.in.config.num_layers = cases[i].L;
        s.in.config.channels = cases[i].C;
        if (cases[i].vp) { s.in.config.padded_vocab_size = cases[i].vp; }
        if (strcmp(cases[i].recipe, "delayed") != 0) {
            float8_block_scaling_apply(&s.recipe, strcmp(cases[i].recipe, "mxfp8") == 0 ? FP8_SCALING_MXFP8
                                                                                        : FP8_SCALING_BLOCKWISE);
        }
        s.recipe.override_fprop = cases[i].override_fprop;
        s.recipe.override_dgrad = cases[i].override_dgrad;
        s.recipe.override_wgrad = cases[i].override_wgrad;
        s.in.linear.num_layers = cases[i].L;
        s.in.linear.fp8_lm_head = cases[i].lm_head;
        char err[512] = "";
        int rc = linear_check_gpu_dims(&s.in.config, &s.in.linear, cases[i].B, cases[i].T, err, sizeof(err));
        if (cases[i].refusal) {
            CHECK(rc == -1 && strstr(err, cases[i].refusal) != NULL && strchr(err, '\n') == NULL,
                  "case %zu (%s C %d B*T %d): returned %d, '%s' (want one line with '%s')", i, cases[i].recipe,
                  cases[i].C, cases[i].B * cases[i].T, rc, err, cases[i].refusal);
        } else {
            CHECK(rc == 0, "case %zu (%s C %d B*T %d): refused with '%s'", i, cases[i].recipe, cases[i].C,
                  cases[i].B * cases[i].T, err);
        }
    }
    // -fp8_attention 1: cuDNN's FP8 forward takes head sizes that are multiples of 16 up to 256 on Hopper
    static const struct { int C, NH, ok; } heads[] = {{768, 12, 1}, {1600, 25, 1}, {768, 24, 1}, {768, 32, 0},
                                                       {1024, 2, 0}, {512, 2, 1}};
    for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
        Setup s;
        setup(&s, "d12", 8, 1024, PRECISION_FP8, 0, ATTENTION_CUDNN);
        s.in.config.channels = heads[i].C;
        s.in.config.num_heads = heads[i].NH;
        s.in.linear.fp8_attention = 1;
        char err[512] = "";
        int rc = linear_check_gpu_dims(&s.in.config, &s.in.linear, 8, 1024, err, sizeof(err));
        char want[64];
        snprintf(want, sizeof(want), "(C %d, NH %d: %d)", heads[i].C, heads[i].NH, heads[i].C / heads[i].NH);
        CHECK(heads[i].ok ? rc == 0 : rc == -1 && strstr(err, "multiple of 16 up to 256") && strstr(err, want),
              "-fp8_attention 1 at C %d NH %d: returned %d, '%s'", heads[i].C, heads[i].NH, rc, err);
    }
}

// Issue 12: GPT-2 1.5B (d48) at B=16, T=1024 fits one 80 GB GPU by the estimate, BF16 and FP8, with cuDNN attention
// and -r 2 (and without recompute too); B=64 does not, and the largest -b that keeps -d 65536 is 16 in FP8.
static void test_d48_fits_80gb(void) {
    const char* names[2] = {"bf16", "fp8"};
    for (int p = 0; p < 2; p++) {
        for (int r = 0; r <= 2; r += 2) {
            Setup s;
            setup(&s, "d48", 16, 1024, p ? PRECISION_FP8 : PRECISION_BF16, r, ATTENTION_CUDNN);
            if (p) { setup_fp8_meta(&s); }
            size_t total = plan_total(&s.in);
            printf("  d48 B=16 T=1024 %s -r %d: %.2f GiB\n", names[p], r, (double)total / GiB);
            CHECK(gpu_memory_fits(&s.in, FREE_ON_80GB), "d48 B=16 %s -r %d needs %.2f GiB", names[p], r,
                  (double)total / GiB);
        }
    }
    Setup s;
    setup(&s, "d48", 64, 1024, PRECISION_FP8, 2, ATTENTION_CUDNN);
    setup_fp8_meta(&s);
    size_t total = plan_total(&s.in);
    printf("  d48 B=64 T=1024 fp8 -r 2: %.2f GiB\n", (double)total / GiB);
    CHECK(total > 120 * GiB && !gpu_memory_fits(&s.in, FREE_ON_80GB), "B=64 needs %.2f GiB: more than one 80 GB GPU",
          (double)total / GiB);
    CHECK(gpu_memory_largest_batch(&s.in, FREE_ON_80GB, 64 * 1024, 1) == 16, "largest B for -d 65536: %d",
          gpu_memory_largest_batch(&s.in, FREE_ON_80GB, 64 * 1024, 1));
    // in FP8 a candidate B must also keep B*T a multiple of 64: at T 100 and -d 2400 (B 24 and its divisors), none does
    Setup odd;
    setup(&odd, "d12", 24, 100, PRECISION_FP8, 0, ATTENTION_CUDNN);
    setup_fp8_meta(&odd);
    CHECK(gpu_memory_largest_batch(&odd.in, FREE_ON_80GB, 2400, 1) == 0, "FP8 at T 100: no B of 24's divisors");
    odd.in.linear.precision = PRECISION_BF16;
    CHECK(gpu_memory_largest_batch(&odd.in, FREE_ON_80GB, 2400, 1) == 24, "BF16 at T 100: B 24 itself");
    // plain attention at B=16 keeps 48 layers of (16, 25, 1024, 1024) bf16 matrices: 75 GiB alone
    Setup plain;
    setup(&plain, "d48", 16, 1024, PRECISION_BF16, 2, ATTENTION_PLAIN);
    CHECK(!gpu_memory_fits(&plain.in, FREE_ON_80GB), "plain attention at d48 B=16 does not fit");
}

// The refusal says what it needs, what is free, and what to change.
static void test_refusal_line(void) {
    Setup s;
    setup(&s, "d48", 64, 1024, PRECISION_FP8, 0, ATTENTION_CUDNN);
    setup_fp8_meta(&s);
    char line[1024];
    gpu_memory_refusal(line, sizeof(line), &s.in, FREE_ON_80GB, 64 * 1024, 1, 1);
    printf("  %s\n", line);
    CHECK(strstr(line, "not enough GPU memory") && strstr(line, "79.00 GiB are free") &&
              strstr(line, "-b 16 (-d 65536 stays: 4 accumulation steps)"),
          "refusal: %s", line);
    CHECK(strchr(line, '\n') == NULL, "one line");
    Setup plain;
    setup(&plain, "d24", 16, 1024, PRECISION_BF16, 0, ATTENTION_PLAIN);
    gpu_memory_refusal(line, sizeof(line), &plain.in, 40 * GiB, 16 * 1024, 1, 1);
    CHECK(strstr(line, "-attn cudnn") != NULL, "plain attention that does not fit suggests cuDNN: %s", line);
    gpu_memory_refusal(line, sizeof(line), &s.in, 20 * GiB, 64 * 1024, 1, 1);
    CHECK(strstr(line, "even -b 1 does not fit") != NULL, "when nothing fits, it says so: %s", line);
}

// -gemm_autotune's scratch (llmc/gemm.cuh times an accumulating GEMM with its output elsewhere): as large as the
// largest accumulating output, the LM head's wgrad (Vp, C) fp32, or blockwise's fc fprop (B*T, 4C) bf16, which
// accumulates onto its bias; none when nothing is timed (0 or 1).
static void test_gemm_tune_scratch(void) {
    Setup s;
    setup(&s, "d12", 64, 1024, PRECISION_BF16, 0, ATTENTION_CUDNN);
    size_t Vp = 50304, C = 768, BT = 64 * 1024;
    GpuMemoryPlan plan;
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_GEMM_TUNE_SCRATCH] == Vp * C * 4, "bf16: %zu, the LM head's wgrad %zu",
          plan.bytes[GPU_GEMM_TUNE_SCRATCH], Vp * C * 4);
    for (int n = 0; n <= 1; n++) {
        s.in.gemm_autotune = n;
        gpu_memory_plan(&plan, &s.in);
        CHECK(plan.bytes[GPU_GEMM_TUNE_SCRATCH] == 0, "-gemm_autotune %d: %zu bytes", n, plan.bytes[GPU_GEMM_TUNE_SCRATCH]);
    }
    Fp8ScalingRecipe recipes[3] = {FP8_SCALING_DELAYED, FP8_SCALING_MXFP8, FP8_SCALING_BLOCKWISE};
    size_t want[3] = {Vp * C * 4, Vp * C * 4, BT * 4 * C * 2};  // the emulated mxfp8 GEMMs are BF16, bias epilogue
    for (int r = 0; r < 3; r++) {
        setup(&s, "d12", 64, 1024, PRECISION_FP8, 0, ATTENTION_CUDNN);
        if (recipes[r] != FP8_SCALING_DELAYED) { float8_block_scaling_apply(&s.recipe, recipes[r]); }
        gpu_memory_plan(&plan, &s.in);
        CHECK(plan.bytes[GPU_GEMM_TUNE_SCRATCH] == want[r], "fp8 %s: %zu, expected %zu", fp8_scaling_recipe_name(recipes[r]),
              plan.bytes[GPU_GEMM_TUNE_SCRATCH], want[r]);
    }
    // blockwise at B 1, T 64: the fc fprop's (64, 4C) is smaller than the LM head's wgrad
    setup(&s, "d12", 1, 64, PRECISION_FP8, 0, ATTENTION_CUDNN);
    float8_block_scaling_apply(&s.recipe, FP8_SCALING_BLOCKWISE);
    gpu_memory_plan(&plan, &s.in);
    CHECK(plan.bytes[GPU_GEMM_TUNE_SCRATCH] == Vp * C * 4, "blockwise B 1 T 64: %zu", plan.bytes[GPU_GEMM_TUNE_SCRATCH]);
}

int main(void) {
    RUN_TEST(test_groups_by_hand);
    RUN_TEST(test_recompute_saves_what_it_recomputes);
    RUN_TEST(test_attention_kinds);
    RUN_TEST(test_fp8_scratch_sized_for_its_users);
    RUN_TEST(test_fp8_keeps_input_transposes);
    RUN_TEST(test_fp8_current_scaling_buffers);
    RUN_TEST(test_fp8_attention_buffers);
    RUN_TEST(test_fp8_block_recipe_buffers);
    RUN_TEST(test_fp8_block_scales_partial_blocks);
    RUN_TEST(test_gpu_dims);
    RUN_TEST(test_gemm_tune_scratch);
    RUN_TEST(test_d48_fits_80gb);
    RUN_TEST(test_refusal_line);
    return test_summary("memory-plan");
}
