/*
test_data_parallel.c — CPU tests of data parallelism on simulated ranks: the semantics the CUDA trainer implements
with NCCL (llmc/multi_gpu.cuh), checked here with the CPU reference trainer (train_gpt_fp8.c, included with TESTING)
standing in for each rank and plain loops standing in for the collectives:
  - ZeRO-1 shard arithmetic (llmc/zero.h): the shards tile the padded buffer, equal sizes, aligned, for many sizes;
  - the FP8 amax reduction: N ranks, each on its slice of the batch, with row 0 all-reduced (MAX) through the
    recipe's reduce hook, give amax histories and scales bit-identical to one rank on the union of the data; with
    reduce_amax off each rank keeps its own;
  - the whole step (reduce-scatter of gradients, AdamW on the shard, all-gather of weights, FP8 weight cast): ZeRO-1
    equals ZeRO-0 bit for bit, and both follow the single-rank run over several steps within float-sum noise;
  - per-rank checkpoints (optimizer shard + FP8 state) round-trip, and resuming on another number of ranks fails
    with one clear line.
Why the loss gradient is 1/(global batch) on every rank and the collective a SUM: each rank's activation gradients
are then exactly the single-rank run's rows, so their amaxes (and the FP8 recipe's whole state) match bit for bit.
*/
#define TESTING
#pragma GCC diagnostic ignored "-Wunused-function"
#include "train_gpt_fp8.c"

#include <sys/wait.h>

#include "llmc/testing.h"
#include "test_tiny_model.h"

enum { MAX_RANKS = 4, DP_T = 8, DP_B = 4 };  // global batch DP_B sequences of DP_T tokens, split over the ranks

// the tiny model in FP8 with margin 1, as rank `rank` of `num_processes`
static ModelOptions dp_options(int num_processes, int rank, int zero_stage, int reduce_amax) {
    ModelOptions opt = tiny_options(PRECISION_FP8);
    opt.config.max_seq_len = DP_T;
    opt.recipe.margin = 1;
    opt.recipe.delayed.reduce_amax = reduce_amax;
    opt.num_processes = num_processes;
    opt.process_rank = rank;
    opt.zero_stage = zero_stage;
    return opt;
}

// ----------------------------------------------------------------------------
// the simulated process group: N models, and loops in place of NCCL's collectives

typedef struct {
    int num_processes, zero_stage;
    GPT2 rank[MAX_RANKS];
    float row0_snapshot[MAX_RANKS][64 * 5];  // each rank's row 0 as it was when the step's all-reduce began
} SimGroup;

// The amax all-reduce(MAX) as the recipe's hook sees it: merge every rank's row 0 (NaN-propagating, like NCCL's max
// over the float bits that multi_gpu.cuh uses). Ranks run their end of step one after another here, so they read the
// snapshot taken before the first one rolled its history.
static void sim_amax_allreduce(float* amax_row0, int num_slots, void* user) {
    SimGroup* g = (SimGroup*)user;
    for (int s = 0; s < num_slots; s++) {
        float amax = 0.0f;
        for (int r = 0; r < g->num_processes; r++) { amax = fp8_amax_merge(amax, g->row0_snapshot[r][s]); }
        amax_row0[s] = amax;
    }
}

static void sim_group_init(SimGroup* g, int num_processes, int zero_stage, int reduce_amax, uint64_t seed) {
    memset(g, 0, sizeof(*g));
    g->num_processes = num_processes;
    g->zero_stage = zero_stage;
    for (int r = 0; r < num_processes; r++) {
        ModelOptions opt = dp_options(num_processes, r, zero_stage, reduce_amax);
        gpt2_allocate(&g->rank[r], &opt, DP_B / num_processes, DP_T);
        Rng rng;  // the same seed on every rank: identical initial weights, as the trainer gets from -r
        rng_seed(&rng, seed);
        gpt2_init_parameters(&g->rank[r].master, g->rank[r].param_sizes, &opt.config, &rng);
        if (num_processes > 1) {
            g->rank[r].fp8.amax_reduce_fn = sim_amax_allreduce;
            g->rank[r].fp8.amax_reduce_user = g;
        }
        gpt2_cast_weights_fp8(&g->rank[r], 1);
    }
}

static void sim_group_free(SimGroup* g) {
    for (int r = 0; r < g->num_processes; r++) { gpt2_free(&g->rank[r]); }
}

// One optimizer step of the whole group on the global batch (DP_B, DP_T): rank r takes rows [r*B/N, (r+1)*B/N).
// Returns the gradient norm. Mirrors train_gpt_fp8.cu's step with multi_gpu.cuh's collectives.
static float sim_group_step(SimGroup* g, const int* inputs, const int* targets, int step, float lr, float grad_clip) {
    int N = g->num_processes, b = DP_B / N;
    size_t P = g->rank[0].num_parameters;
    for (int r = 0; r < N; r++) {
        GPT2* m = &g->rank[r];
        gpt2_zero_grad(m);
        gpt2_forward(m, inputs + r * b * DP_T, targets + r * b * DP_T, b, DP_T);
        gpt2_backward(m, 1.0f / (float)N);  // dloss = 1 / (global B*T): the single-rank run's gradient rows
    }
    // gradients: SUM over ranks, in rank order, of every element the rank's optimizer owns (ZeRO-1: reduce-scatter;
    // ZeRO-0: all-reduce, every rank owns everything)
    float* summed = (float*)calloc_or_die(P, sizeof(float), "summed gradients");
    for (size_t i = 0; i < P; i++) {
        float s = 0.0f;
        for (int r = 0; r < N; r++) { s += g->rank[r].grads_memory[i]; }
        summed[i] = s;
    }
    for (int r = 0; r < N; r++) {
        const ZeroShard* sh = &g->rank[r].shard;
        memcpy(g->rank[r].grads_memory + sh->offset, summed + sh->offset, sh->count * sizeof(float));
    }
    free(summed);
    // norm: each rank's owned sum of squares, all-reduced (ZeRO-0: every rank already has the total)
    double norm_squared = 0.0;
    if (g->zero_stage == 1) {
        for (int r = 0; r < N; r++) { norm_squared += gpt2_grad_norm_squared(&g->rank[r]); }
    } else {
        norm_squared = gpt2_grad_norm_squared(&g->rank[0]);
    }
    float norm = (float)sqrt(norm_squared);
    for (int r = 0; r < N; r++) {
        memcpy(g->row0_snapshot[r], g->rank[r].fp8.amax_history, (size_t)g->rank[r].fp8.num_slots * sizeof(float));
    }
    for (int r = 0; r < N; r++) {
        gpt2_fp8_end_of_step(&g->rank[r], step);
        g->rank[r].grad_norm = norm;  // what gpt2_grad_norm leaves in a rank once the sums are all-reduced
        gpt2_update(&g->rank[r], lr, 0.9f, 0.95f, 1e-8f, 0.1f, grad_clip, step + 1);
    }
    if (g->zero_stage == 1) {  // all-gather: every rank receives each owner's updated slice
        for (int owner = 0; owner < N; owner++) {
            const ZeroShard* sh = &g->rank[owner].shard;
            for (int r = 0; r < N; r++) {
                if (r != owner) {
                    memcpy(g->rank[r].master_memory + sh->offset, g->rank[owner].master_memory + sh->offset,
                           sh->count * sizeof(float));
                }
            }
        }
    }
    for (int r = 0; r < N; r++) { gpt2_cast_weights_fp8(&g->rank[r], 1); }  // after the all-gather: identical weights
    return norm;
}

static void random_batch(int* inputs, int* targets, int V, Rng* rng) {
    for (int i = 0; i < DP_B * DP_T; i++) {
        inputs[i] = (int)(rng_next_u64(rng) % (uint64_t)V);
        targets[i] = (int)(rng_next_u64(rng) % (uint64_t)V);
    }
}

static int bits_equal(const float* a, const float* b, size_t n) { return memcmp(a, b, n * sizeof(float)) == 0; }

// how many floats the model's FP8 weight copies take
static size_t weight_fp8_count(GPT2* m) {
    LinearPrecision lp = gpt2_linear_precision(m);
    return fp8_weight_layout(&m->config, &lp, NULL, 0);
}

static double max_rel_diff(const float* a, const float* b, size_t n, double floor) {
    double worst = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - b[i]) / (fabs((double)b[i]) + floor);
        worst = d > worst ? d : worst;
    }
    return worst;
}

// ----------------------------------------------------------------------------
// tests

static void test_zero_shard_arithmetic(void) {
    size_t sizes[] = {1, 7, 127, 128, 129, 1000, 65536, 124475904, 1557686400};
    int ranks[] = {1, 2, 3, 4, 8, 16, 64};
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        for (size_t ri = 0; ri < sizeof(ranks) / sizeof(ranks[0]); ri++) {
            size_t P = sizes[si];
            int N = ranks[ri];
            size_t covered = 0, expect_offset = 0;
            ZeroShard first = zero_shard(P, N, 0, 1);
            for (int r = 0; r < N; r++) {
                ZeroShard s = zero_shard(P, N, r, 1);
                CHECK(s.shard_size == first.shard_size && s.padded == first.padded, "P %zu N %d: equal shard sizes", P, N);
                CHECK(s.offset == expect_offset, "P %zu N %d rank %d: offset %zu, want %zu", P, N, r, s.offset, expect_offset);
                CHECK(s.count <= s.shard_size, "P %zu N %d rank %d: count within the shard", P, N, r);
                if (N > 1) { CHECK(s.shard_size % ZERO_SHARD_ALIGN == 0, "P %zu N %d: aligned shards", P, N); }
                // only the tail ranks may hold fewer real parameters than the shard size, and they are contiguous
                if (s.count < s.shard_size) { CHECK(s.offset + s.count == P || s.count == 0, "P %zu N %d rank %d", P, N, r); }
                covered += s.count;
                expect_offset += s.shard_size;
            }
            CHECK(covered == P, "P %zu N %d: shards cover %zu parameters", P, N, covered);
            CHECK(first.padded >= P && first.padded == first.shard_size * (size_t)N, "P %zu N %d: padded %zu", P, N,
                  first.padded);
            CHECK(N == 1 || first.padded - P < (size_t)N * ZERO_SHARD_ALIGN, "P %zu N %d: padding %zu is minimal", P, N,
                  first.padded - P);
            ZeroShard z0 = zero_shard(P, N, N - 1, 0);
            CHECK(z0.offset == 0 && z0.count == P && z0.padded == P, "ZeRO-0: every rank owns everything");
        }
    }
    // the overlap of a tensor with a shard: inside, straddling both ends, outside
    ZeroShard s = {100, 50, 64, 0};
    size_t lo, hi;
    CHECK(zero_shard_overlap(&s, 0, 120, &lo, &hi) && lo == 100 && hi == 120, "left straddle [%zu, %zu)", lo, hi);
    CHECK(zero_shard_overlap(&s, 140, 30, &lo, &hi) && lo == 140 && hi == 150, "right straddle [%zu, %zu)", lo, hi);
    CHECK(zero_shard_overlap(&s, 110, 10, &lo, &hi) && lo == 110 && hi == 120, "inside");
    CHECK(!zero_shard_overlap(&s, 0, 100, &lo, &hi) && !zero_shard_overlap(&s, 150, 9, &lo, &hi), "outside");
}

// llmc/multi_gpu.cuh all-reduces row 0 with NCCL's MAX over int32 (the float bits), not over float: for amaxes
// (>= 0, NaN positive) that is exactly fp8_amax_merge, NaN and inf included, which NCCL's float max need not be.
static void test_amax_allreduce_as_int32_max(void) {
    float specials[] = {0.0f, 1e-45f, 1.17549435e-38f, 0.5f, 1.0f, 448.0f, 57344.0f, 3.4e38f, INFINITY, NAN};
    int n = (int)(sizeof(specials) / sizeof(specials[0]));
    Rng rng;
    rng_seed(&rng, 41);
    for (int trial = 0; trial < 20000; trial++) {
        float a = trial < n * n ? specials[trial / n] : fabsf(rng_normal(&rng)) * ldexpf(1.0f, (int)(rng_next_u64(&rng) % 80) - 40);
        float b = trial < n * n ? specials[trial % n] : fabsf(rng_normal(&rng)) * ldexpf(1.0f, (int)(rng_next_u64(&rng) % 80) - 40);
        int32_t ia, ib;
        memcpy(&ia, &a, 4);
        memcpy(&ib, &b, 4);
        int32_t winner = ia > ib ? ia : ib;
        float merged = fp8_amax_merge(a, b);
        int32_t im;
        memcpy(&im, &merged, 4);
        CHECK(winner == im, "max(%g, %g): int32 max gives bits %08x, fp8_amax_merge %08x", a, b, (unsigned)winner, (unsigned)im);
    }
}

// Step 0: N ranks with the amax all-reduce equal one rank on the whole batch, bit for bit, for the whole FP8 state;
// without the all-reduce each rank's state is its own data's (and at least one slot differs between ranks).
static void test_amax_reduction_equals_single_rank(void) {
    int inputs[DP_B * DP_T], targets[DP_B * DP_T];
    for (int N = 2; N <= 4; N *= 2) {
        for (int reduce = 0; reduce <= 1; reduce++) {
            SimGroup single, group, alone[MAX_RANKS];
            sim_group_init(&single, 1, 1, 1, 11);
            sim_group_init(&group, N, 1, reduce, 11);
            Rng rng;
            rng_seed(&rng, 12);
            random_batch(inputs, targets, 37, &rng);
            sim_group_step(&single, inputs, targets, 0, 1e-3f, 1.0f);
            sim_group_step(&group, inputs, targets, 0, 1e-3f, 1.0f);
            Fp8Meta* want = &single.rank[0].fp8;
            if (reduce) {
                for (int r = 0; r < N; r++) {
                    Fp8Meta* got = &group.rank[r].fp8;
                    // histories, scales and scale_inv: everything but the fresh row 0, which now holds the new
                    // weights' amax (compared with a tolerance below: the weights differ by float-sum order)
                    size_t after_row0 = (size_t)got->num_slots;
                    CHECK(bits_equal(got->memory + after_row0, want->memory + after_row0, got->num_floats - after_row0),
                          "N %d rank %d: FP8 histories and scales bit-identical to one rank on the whole batch", N, r);
                    CHECK(bits_equal(group.rank[r].fp8_last_amax, single.rank[0].fp8_last_amax, (size_t)got->num_slots),
                          "N %d rank %d: the reduced step amaxes equal the single rank's", N, r);
                    CHECK(max_rel_diff(got->amax_history, want->amax_history, (size_t)got->num_slots, 1e-30) < 1e-5,
                          "N %d rank %d: new weights' amax", N, r);
                }
            } else {
                // rank r alone: a one-rank group on its own rows (the same gradient scale 1/N) gives rank r's state
                int b = DP_B / N, differs = 0;
                for (int r = 0; r < N; r++) {
                    ModelOptions opt = dp_options(1, 0, 0, 0);
                    gpt2_allocate(&alone[r].rank[0], &opt, b, DP_T);
                    Rng init;
                    rng_seed(&init, 11);
                    gpt2_init_parameters(&alone[r].rank[0].master, alone[r].rank[0].param_sizes, &opt.config, &init);
                    gpt2_cast_weights_fp8(&alone[r].rank[0], 1);
                    gpt2_zero_grad(&alone[r].rank[0]);
                    gpt2_forward(&alone[r].rank[0], inputs + r * b * DP_T, targets + r * b * DP_T, b, DP_T);
                    gpt2_backward(&alone[r].rank[0], 1.0f / (float)N);
                    gpt2_fp8_end_of_step(&alone[r].rank[0], 0);
                    Fp8Meta* own = &alone[r].rank[0].fp8;
                    Fp8Meta* got = &group.rank[r].fp8;
                    size_t after_row0 = (size_t)got->num_slots;
                    CHECK(bits_equal(got->memory + after_row0, own->memory + after_row0, got->num_floats - after_row0),
                          "N %d rank %d, reduce_amax off: the rank's FP8 state is its own data's", N, r);
                    differs += !bits_equal(got->scale, group.rank[0].fp8.scale, (size_t)got->num_slots);
                    // and the union: the max over ranks of the local amaxes is the single rank's amax
                    gpt2_free(&alone[r].rank[0]);
                }
                CHECK(differs > 0, "N %d, reduce_amax off: ranks' scales differ somewhere", N);
                for (int s = 0; s < want->num_slots; s++) {
                    float amax = 0.0f;
                    for (int r = 0; r < N; r++) { amax = fp8_amax_merge(amax, group.rank[r].fp8_last_amax[s]); }
                    CHECK(amax == single.rank[0].fp8_last_amax[s], "N %d slot %d: max of local amaxes %g, union %g", N,
                          s, amax, single.rank[0].fp8_last_amax[s]);
                }
            }
            sim_group_free(&single);
            sim_group_free(&group);
        }
    }
}

// Several steps: ZeRO-1 equals ZeRO-0 bit for bit (gradient clipping off, so the norm's summation order cannot
// matter); every rank holds identical weights and FP8 state; all follow the single-rank run within float-sum noise.
static void test_zero1_steps_match_single_rank(void) {
    const int N = 2, STEPS = 6;
    SimGroup single, zero0, zero1;
    sim_group_init(&single, 1, 0, 1, 21);
    sim_group_init(&zero0, N, 0, 1, 21);
    sim_group_init(&zero1, N, 1, 1, 21);
    CHECK(zero1.rank[0].shard.count + zero1.rank[1].shard.count == zero1.rank[0].num_parameters &&
              zero1.rank[1].shard.offset == zero1.rank[0].shard.shard_size,
          "two shards split the parameters");
    int inputs[DP_B * DP_T], targets[DP_B * DP_T];
    Rng rng;
    rng_seed(&rng, 22);
    size_t P = single.rank[0].num_parameters;
    for (int step = 0; step < STEPS; step++) {
        random_batch(inputs, targets, 37, &rng);
        float lr = 3e-3f;
        float n_single = sim_group_step(&single, inputs, targets, step, lr, 1e6f);
        float n0 = sim_group_step(&zero0, inputs, targets, step, lr, 1e6f);
        float n1 = sim_group_step(&zero1, inputs, targets, step, lr, 1e6f);
        for (int r = 0; r < N; r++) {
            CHECK(bits_equal(zero1.rank[r].master_memory, zero0.rank[r].master_memory, P),
                  "step %d rank %d: ZeRO-1 weights bit-identical to ZeRO-0", step, r);
            CHECK(bits_equal(zero1.rank[r].fp8.memory, zero0.rank[r].fp8.memory, zero0.rank[r].fp8.num_floats),
                  "step %d rank %d: ZeRO-1 FP8 state bit-identical to ZeRO-0", step, r);
            CHECK(bits_equal(zero1.rank[r].master_memory, zero1.rank[0].master_memory, P) &&
                      bits_equal(zero1.rank[r].fp8.memory, zero1.rank[0].fp8.memory, zero1.rank[0].fp8.num_floats) &&
                      bits_equal(zero1.rank[r].weight_dequantized, zero1.rank[0].weight_dequantized, weight_fp8_count(&zero1.rank[0])),
                  "step %d: every rank holds the same weights and FP8 state", step);
        }
        CHECK(fabsf(n1 - n_single) <= 1e-5f * n_single && fabsf(n0 - n_single) <= 1e-5f * n_single,
              "step %d: gradient norm %g / %g vs one rank %g", step, n0, n1, n_single);
        // Tolerances: the ranks sum the weight gradients in another order than one rank (float: ~1e-7 relative per
        // step); AdamW's first steps amplify that for gradients near zero, so weights are compared against lr.
        double w_err = 0.0;
        for (size_t i = 0; i < P; i++) {
            double d = fabs((double)zero1.rank[0].master_memory[i] - single.rank[0].master_memory[i]);
            w_err = d > w_err ? d : w_err;
        }
        CHECK(w_err <= 0.05 * lr, "step %d: weights within %g of one rank's (lr %g)", step, w_err, lr);
        Fp8Meta* got = &zero1.rank[0].fp8;
        Fp8Meta* want = &single.rank[0].fp8;
        double scale_err = max_rel_diff(got->scale, want->scale, (size_t)got->num_slots, 0.0);
        double hist_err = max_rel_diff(got->amax_history, want->amax_history,
                                       (size_t)got->num_slots * got->amax_history_len, 1e-30);
        CHECK(scale_err <= 1e-3 && hist_err <= 1e-3, "step %d: scales within %.2g, histories within %.2g (relative)", step,
              scale_err, hist_err);
        if (step == 0) { CHECK(bits_equal(got->scale, want->scale, (size_t)got->num_slots), "step 0: scales bit-identical"); }
        double loss_err = fabs((zero1.rank[0].mean_loss + zero1.rank[1].mean_loss) / 2 - single.rank[0].mean_loss);
        CHECK(loss_err <= 1e-5 * single.rank[0].mean_loss, "step %d: mean loss off by %g", step, loss_err);
    }
    sim_group_free(&single);
    sim_group_free(&zero0);
    sim_group_free(&zero1);
}

typedef struct {
    const char* dir;
    int num_processes, zero_stage;
} LoadJob;

static void load_rank0(void* arg) {
    LoadJob* job = (LoadJob*)arg;
    GPT2 model;
    ModelOptions opt = dp_options(job->num_processes, 0, job->zero_stage, 1);
    gpt2_allocate(&model, &opt, DP_B / job->num_processes, DP_T);
    uint64_t rng_state;
    size_t shard_index, shard_position;
    gpt2_load_checkpoint(&model, job->dir, 1, &rng_state, &shard_index, &shard_position, NULL);
    gpt2_free(&model);
}

// Each rank writes its own state file (its optimizer shard and FP8 state); they load back exactly; loading with
// another number of ranks, or another ZeRO stage, stops with one line.
static void test_per_rank_checkpoints(void) {
    char dir[] = "/tmp/gptfp8_dp_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    SimGroup group;
    sim_group_init(&group, 2, 1, 0, 31);  // reduce_amax off: the ranks' FP8 states differ, each must come back
    int inputs[DP_B * DP_T], targets[DP_B * DP_T];
    Rng rng;
    rng_seed(&rng, 32);
    random_batch(inputs, targets, 37, &rng);
    sim_group_step(&group, inputs, targets, 0, 1e-3f, 1.0f);
    for (int r = 0; r < 2; r++) { gpt2_save_checkpoint(&group.rank[r], dir, 1, 99, NULL, NULL); }
    for (int r = 0; r < 2; r++) {
        GPT2 loaded;
        ModelOptions opt = dp_options(2, r, 1, 0);
        gpt2_allocate(&loaded, &opt, DP_B / 2, DP_T);
        uint64_t rng_state;
        size_t shard_index, shard_position;
        gpt2_load_checkpoint(&loaded, dir, 1, &rng_state, &shard_index, &shard_position, NULL);
        GPT2* saved = &group.rank[r];
        CHECK(rng_state == 99, "rank %d: RNG state", r);
        CHECK(loaded.shard.count == saved->shard.count && loaded.shard.count < saved->num_parameters,
              "rank %d: a shard, not the whole buffer", r);
        CHECK(bits_equal(loaded.m_memory, saved->m_memory, saved->shard.count) &&
                  bits_equal(loaded.v_memory, saved->v_memory, saved->shard.count),
              "rank %d: AdamW moments of the shard", r);
        CHECK(bits_equal(loaded.fp8.memory, saved->fp8.memory, saved->fp8.num_floats), "rank %d: its own FP8 state", r);
        CHECK(bits_equal(loaded.master_memory, saved->master_memory, saved->num_parameters), "rank %d: weights", r);
        gpt2_free(&loaded);
    }
    CHECK(!bits_equal(group.rank[0].fp8.memory, group.rank[1].fp8.memory, group.rank[0].fp8.num_floats),
          "without the amax reduction the two ranks' FP8 states differ");
    char out[1024];
    LoadJob one_rank = {dir, 1, 1};
    int rc = run_captured(load_rank0, &one_rank, out, sizeof(out));
    CHECK(rc == 1 && strstr(out, "error: ") && strstr(out, "written by 2 processes, this run has 1") && !strchr(strchr(out, '\n') + 1, '\n'),
          "resume on 1 rank: exit %d, %s", rc, out);
    LoadJob zero0 = {dir, 2, 0};
    rc = run_captured(load_rank0, &zero0, out, sizeof(out));
    CHECK(rc == 1 && strstr(out, "holds the optimizer state of parameters [0, ") && strstr(out, "same -pn and -z"),
          "resume with ZeRO-0: exit %d, %s", rc, out);
    sim_group_free(&group);
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    CHECK(system(cmd) == 0, "cleanup");
}

int main(void) {
    RUN_TEST(test_zero_shard_arithmetic);
    RUN_TEST(test_amax_allreduce_as_int32_max);
    RUN_TEST(test_amax_reduction_equals_single_rank);
    RUN_TEST(test_zero1_steps_match_single_rank);
    RUN_TEST(test_per_rank_checkpoints);
    return test_summary("data-parallel-cpu");
}
