/*
fp8/recipe.h — the FP8 recipe: which of Transformer Engine's four recipes computes the scales (Megatron's
--fp8-recipe: delayed, tensorwise = current, blockwise, mxfp8) and its options, as one C struct, Fp8Recipe; its
defaults, validation and startup banner.

Which recipe, and what every recipe has (TE's names and defaults):
  scaling                   delayed (TE's DelayedScaling) | current (Float8CurrentScaling) | blockwise
                            (Float8BlockScaling) | mxfp8 (MXFP8BlockScaling), default delayed
  fp8_format                E4M3 | HYBRID | E5M2, default HYBRID (HYBRID: E4M3 forward, E5M2 backward)
  margin                    int >= 0, default 0     scale = (fp8_max / amax) / 2^margin (not the block recipes)
  override_linear_precision (fprop, dgrad, wgrad): run that GEMM in BF16 instead of FP8, default (0, 0, 0)
What only delayed scaling has (`delayed`; transformer_engine.common.recipe.DelayedScaling's):
  amax_history_len          int >= 1, default 1024
  interval                  int >= 1, default 1     scales are recomputed every `interval` optimizer steps
  amax_compute_algo         max | most_recent | a C callback, default max
  scaling_factor_compute    optional C callback replacing the scale formula
  reduce_amax               all-reduce(MAX) the step's amaxes across ranks before the update, default 1
What only blockwise scaling has (`blockwise`; Float8BlockScaling's):
  amax_epsilon              float >= 0, default 0   a block's amax is at least this
  power_2_scale             0 | 1, default 1        scales rounded down to a power of two
The other recipes hold their sub-struct at the values that change nothing (below), and validation refuses anything
else, so one struct cannot describe a recipe that does not exist.

Delayed scaling (fp8/meta.h, fp8/update.cuh): a tensor is cast with a scale computed at the end of an earlier step
from its amax history.

Current scaling (fp8/current.h): each tensor's scale comes from its own amax, computed just before its cast, with the
delayed formula and special cases (scale = fp8_max / amax / 2^margin; amax 0, inf or NaN keeps the slot's previous
scale; FLT_MAX on overflow). No history, no end-of-step scale update. What applies: fp8_format (HYBRID as above),
override_linear_precision, and margin (TE's Float8CurrentScaling has none; ours defaults to 0, which is TE's). The
delayed options are: amax_history_len 1 (row 0 still collects the step's amax, for the diagnostics), interval 1,
amax_compute_algo max without callbacks, reduce_amax 0 (each rank scales its own tensors; the weights, identical on
every rank after the all-gather, get identical scales anyway). float8_current_scaling_apply sets exactly that; the
trainers refuse the delayed-only flags next to -fp8_recipe current (parse_fp8_scaling_recipe reads its value; the
trainers apply it after every other flag, so the order of flags does not matter).

Block scaling (fp8/block.h): one scale per block of a tensor, computed from that block alone just before the cast;
no history, no end-of-step scale update, no margin. blockwise: 1x128 blocks of activations and gradients, 128x128
blocks of weights, fp32 scales (power of two by default) from amax_epsilon and power_2_scale; mxfp8: 1x32 blocks
along every GEMM's reduction dimension, E8M0 (power-of-two) scales, and the blockwise options at their defaults (0,
1). Both default to E4M3 for every tensor (fp8_format E4M3; HYBRID allowed; E5M2 not: TE refuses pure E5M2 training
for every recipe); float8_block_scaling_apply sets the delayed options as current scaling's does, and the trainers
refuse the delayed-only flags, -fp8_margin, and the blockwise-only flags next to mxfp8.

`interval` (TE documents it but never implemented it; we do): amaxes are recorded and the histories roll at the end of
EVERY step; only the scale recomputation is gated. At the end of optimizer step s (0-based) the scales are recomputed
iff s % interval == 0, so step 0 always leaves the initial scale of 1.0, and on the other steps every scale (and
scale_inv) keeps its value while the histories still roll. With `max` the next recomputation therefore sees the
amaxes of the skipped steps (when amax_history_len >= interval); with `most_recent` it sees only its own step's.

Host only: the callbacks are host function pointers. The options from strings (the trainers' -fp8_* flags):
fp8/recipe_parse.h. Checkpoints store every field but the callbacks (llmc/checkpoint.h's state header).
*/
#ifndef GPTFP8_RECIPE_H
#define GPTFP8_RECIPE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8.h"

typedef enum { FP8_RECIPE_E4M3 = 0, FP8_RECIPE_HYBRID = 1, FP8_RECIPE_E5M2 = 2 } Fp8RecipeFormat;
typedef enum { AMAX_COMPUTE_MAX = 0, AMAX_COMPUTE_MOST_RECENT = 1, AMAX_COMPUTE_CALLBACK = 2 } AmaxComputeAlgo;
// Which TE recipe computes the scales (the value is what checkpoints store in state header [34]).
typedef enum {
    FP8_SCALING_DELAYED = 0,
    FP8_SCALING_CURRENT = 1,
    FP8_SCALING_BLOCKWISE = 2,
    FP8_SCALING_MXFP8 = 3,
    FP8_NUM_SCALING_RECIPES = 4
} Fp8ScalingRecipe;

#define FP8_MARGIN_MAX 64
#define FP8_INTERVAL_MAX 1000000
#define FP8_AMAX_HISTORY_LEN_MAX 65536
#define FP8_AMAX_EPSILON_MAX 1e30f

struct Fp8Recipe;

// TE's amax_compute_algo callable, per slot: gets one slot's history column, row 0 (this step's amax) first, rows
// `row_stride` floats apart, and returns the amax to compute the scale from.
typedef float (*AmaxComputeFn)(const float* history_column, int amax_history_len, int row_stride, void* user);
// TE's scaling_factor_compute_algo: returns the new scale. Its result is used as-is (no FLT_MAX or keep-old rules).
typedef float (*ScalingFactorComputeFn)(float amax, float old_scale, float fp8_max, const struct Fp8Recipe* recipe,
                                        void* user);

// DelayedScaling's own options: the amax history and what the end-of-step update does with it.
typedef struct {
    int amax_history_len;
    int interval;
    AmaxComputeAlgo amax_compute_algo;
    AmaxComputeFn amax_compute_fn;                     // used when amax_compute_algo == AMAX_COMPUTE_CALLBACK
    ScalingFactorComputeFn scaling_factor_compute_fn;  // NULL: the default formula
    void* callback_user;                               // passed to both callbacks
    int reduce_amax;
} Fp8DelayedOptions;

// Float8BlockScaling's own options: how a block's amax becomes its fp32 scale.
typedef struct {
    float amax_epsilon;  // a block's amax is max(amax, amax_epsilon)
    int power_2_scale;   // 1: scales rounded down to a power of two
} Fp8BlockwiseOptions;

typedef struct Fp8Recipe {
    Fp8ScalingRecipe scaling;  // delayed (TE's DelayedScaling), current, blockwise or mxfp8 (see the header comment)
    Fp8RecipeFormat fp8_format;
    int margin;
    int override_fprop, override_dgrad, override_wgrad;  // 1: that GEMM runs in BF16 (override_linear_precision)
    Fp8DelayedOptions delayed;      // the other recipes: one history row, interval 1, max, no callbacks, no reduction
    Fp8BlockwiseOptions blockwise;  // the other recipes: amax_epsilon 0, power_2_scale 1 (unused)
} Fp8Recipe;

static inline void fp8_recipe_default(Fp8Recipe* recipe) {
    memset(recipe, 0, sizeof(*recipe));
    recipe->margin = 0;
    recipe->delayed.interval = 1;
    recipe->fp8_format = FP8_RECIPE_HYBRID;
    recipe->delayed.amax_history_len = 1024;
    recipe->delayed.amax_compute_algo = AMAX_COMPUTE_MAX;
    recipe->delayed.reduce_amax = 1;
    recipe->scaling = FP8_SCALING_DELAYED;
    recipe->blockwise.amax_epsilon = 0.0f;
    recipe->blockwise.power_2_scale = 1;
}

// Recipes whose scales come from the tensor being cast (current, blockwise, mxfp8) keep no amax history and update
// nothing at the end of a step; only delayed scaling has a history.
static inline int fp8_recipe_has_history(const Fp8Recipe* recipe) { return recipe->scaling == FP8_SCALING_DELAYED; }
// One scale per block (blockwise, mxfp8) rather than one per tensor (delayed, current).
static inline int fp8_recipe_is_block_scaled(const Fp8Recipe* recipe) {
    return recipe->scaling == FP8_SCALING_BLOCKWISE || recipe->scaling == FP8_SCALING_MXFP8;
}

// Turn a recipe into Float8CurrentScaling, keeping its format, margin and overrides: one history row (the step's
// amax, for diagnostics), no interval, no amax algorithm, no amax reduction (see the header comment).
static inline void float8_current_scaling_apply(Fp8Recipe* recipe) {
    recipe->scaling = FP8_SCALING_CURRENT;
    recipe->delayed.amax_history_len = 1;
    recipe->delayed.interval = 1;
    recipe->delayed.amax_compute_algo = AMAX_COMPUTE_MAX;
    recipe->delayed.amax_compute_fn = NULL;
    recipe->delayed.scaling_factor_compute_fn = NULL;
    recipe->delayed.reduce_amax = 0;
}

// Turn a recipe into Float8BlockScaling (blockwise) or MXFP8BlockScaling (mxfp8), keeping its format, overrides and
// (blockwise) amax_epsilon and power_2_scale: what current scaling keeps, less the margin. The caller sets the format
// (E4M3 unless asked otherwise: the trainers' -fp8 default for these recipes).
static inline void float8_block_scaling_apply(Fp8Recipe* recipe, Fp8ScalingRecipe scaling) {
    float8_current_scaling_apply(recipe);
    recipe->scaling = scaling;
    recipe->margin = 0;
    if (scaling == FP8_SCALING_MXFP8) {
        recipe->blockwise.amax_epsilon = 0.0f;
        recipe->blockwise.power_2_scale = 1;
    }
}

// HYBRID: E4M3 forward (inputs, weights, outputs), E5M2 backward (grad_output, grad_input).
static inline Fp8Format fp8_recipe_forward_format(const Fp8Recipe* recipe) {
    return recipe->fp8_format == FP8_RECIPE_E5M2 ? FP8_E5M2 : FP8_E4M3;
}
static inline Fp8Format fp8_recipe_backward_format(const Fp8Recipe* recipe) {
    return recipe->fp8_format == FP8_RECIPE_E4M3 ? FP8_E4M3 : FP8_E5M2;
}

static inline const char* fp8_recipe_format_name(Fp8RecipeFormat f) {
    return f == FP8_RECIPE_E4M3 ? "E4M3" : f == FP8_RECIPE_HYBRID ? "HYBRID" : "E5M2";
}
static inline const char* amax_compute_algo_name(AmaxComputeAlgo a) {
    return a == AMAX_COMPUTE_MAX ? "max" : a == AMAX_COMPUTE_MOST_RECENT ? "most_recent" : "callback";
}
static const char* const fp8_scaling_recipe_names[FP8_NUM_SCALING_RECIPES] = {"delayed", "current", "blockwise",
                                                                              "mxfp8"};
static inline const char* fp8_scaling_recipe_name(Fp8ScalingRecipe r) {
    return r >= 0 && r < FP8_NUM_SCALING_RECIPES ? fp8_scaling_recipe_names[r] : "unknown";
}

// ----------------------------------------------------------------------------
// validation and the banner

// Checks a recipe built in code (parsing already range-checks what comes from strings).
static inline int fp8_recipe_validate(const Fp8Recipe* recipe, char* err, size_t errlen) {
    const Fp8DelayedOptions* delayed = &recipe->delayed;
    const Fp8BlockwiseOptions* blockwise = &recipe->blockwise;
    if (recipe->margin < 0 || recipe->margin > FP8_MARGIN_MAX) {
        snprintf(err, errlen, "fp8 recipe: margin %d out of range [0, %d]", recipe->margin, FP8_MARGIN_MAX);
        return -1;
    }
    if (delayed->interval < 1 || delayed->interval > FP8_INTERVAL_MAX) {
        snprintf(err, errlen, "fp8 recipe: interval %d out of range [1, %d]", delayed->interval, FP8_INTERVAL_MAX);
        return -1;
    }
    if (delayed->amax_history_len < 1 || delayed->amax_history_len > FP8_AMAX_HISTORY_LEN_MAX) {
        snprintf(err, errlen, "fp8 recipe: amax_history_len %d out of range [1, %d]", delayed->amax_history_len,
                 FP8_AMAX_HISTORY_LEN_MAX);
        return -1;
    }
    if (recipe->fp8_format != FP8_RECIPE_E4M3 && recipe->fp8_format != FP8_RECIPE_HYBRID &&
        recipe->fp8_format != FP8_RECIPE_E5M2) {
        snprintf(err, errlen, "fp8 recipe: unknown fp8_format %d", (int)recipe->fp8_format);
        return -1;
    }
    if (delayed->amax_compute_algo == AMAX_COMPUTE_CALLBACK && delayed->amax_compute_fn == NULL) {
        snprintf(err, errlen, "fp8 recipe: amax_compute_algo is callback but no amax_compute_fn is set");
        return -1;
    }
    if (delayed->amax_compute_algo != AMAX_COMPUTE_MAX && delayed->amax_compute_algo != AMAX_COMPUTE_MOST_RECENT &&
        delayed->amax_compute_algo != AMAX_COMPUTE_CALLBACK) {
        snprintf(err, errlen, "fp8 recipe: unknown amax_compute_algo %d", (int)delayed->amax_compute_algo);
        return -1;
    }
    int flags[4] = {recipe->override_fprop, recipe->override_dgrad, recipe->override_wgrad, delayed->reduce_amax};
    for (int i = 0; i < 4; i++) {
        if (flags[i] != 0 && flags[i] != 1) {
            snprintf(err, errlen, "fp8 recipe: override/reduce_amax flags must be 0 or 1");
            return -1;
        }
    }
    if (recipe->scaling < 0 || recipe->scaling >= FP8_NUM_SCALING_RECIPES) {
        snprintf(err, errlen, "fp8 recipe: unknown scaling recipe %d", (int)recipe->scaling);
        return -1;
    }
    if (!fp8_recipe_has_history(recipe) &&
        (delayed->amax_history_len != 1 || delayed->interval != 1 || delayed->amax_compute_algo != AMAX_COMPUTE_MAX ||
         delayed->amax_compute_fn != NULL || delayed->scaling_factor_compute_fn != NULL || delayed->reduce_amax != 0)) {
        snprintf(err, errlen, "fp8 recipe: %s scaling has no amax history, interval, amax algorithm, scale callback "
                 "or amax reduction (float8_current_scaling_apply)", fp8_scaling_recipe_name(recipe->scaling));
        return -1;
    }
    if (!(blockwise->amax_epsilon >= 0.0f && blockwise->amax_epsilon <= FP8_AMAX_EPSILON_MAX) ||
        (blockwise->power_2_scale != 0 && blockwise->power_2_scale != 1)) {
        snprintf(err, errlen, "fp8 recipe: amax_epsilon must be in [0, %g] and power_2_scale 0 or 1",
                 (double)FP8_AMAX_EPSILON_MAX);
        return -1;
    }
    if (recipe->scaling != FP8_SCALING_BLOCKWISE &&
        (blockwise->amax_epsilon != 0.0f || blockwise->power_2_scale != 1)) {
        snprintf(err, errlen, "fp8 recipe: amax_epsilon and power_2_scale belong to blockwise scaling only");
        return -1;
    }
    if (fp8_recipe_is_block_scaled(recipe) && (recipe->margin != 0 || recipe->fp8_format == FP8_RECIPE_E5M2)) {
        snprintf(err, errlen, "fp8 recipe: %s scaling has no margin and no E5M2 forward tensors (fp8_format E4M3 or "
                 "HYBRID)", fp8_scaling_recipe_name(recipe->scaling));
        return -1;
    }
    return 0;
}

// One line, the resolved recipe in TE's vocabulary, for the trainers' startup banner.
static inline void fp8_recipe_print(const Fp8Recipe* recipe, FILE* out) {
    if (fp8_recipe_is_block_scaled(recipe)) {
        int blockwise = recipe->scaling == FP8_SCALING_BLOCKWISE;
        fprintf(out, "%s(fp8_format=%s [fwd %s, bwd %s], ", blockwise ? "Float8BlockScaling" : "MXFP8BlockScaling",
                fp8_recipe_format_name(recipe->fp8_format), fp8_format_name(fp8_recipe_forward_format(recipe)),
                fp8_format_name(fp8_recipe_backward_format(recipe)));
        if (blockwise) {
            fprintf(out, "blocks=1x128 activations and gradients, 128x128 weights, fp32 scales, power_2_scale=%s, "
                    "amax_epsilon=%g, ", recipe->blockwise.power_2_scale ? "True" : "False",
                    (double)recipe->blockwise.amax_epsilon);
        } else {
            fprintf(out, "blocks=1x32 along each GEMM's reduction dimension, E8M0 scales, ");
        }
        fprintf(out, "override_linear_precision=(fprop=%s, dgrad=%s, wgrad=%s))\n", recipe->override_fprop ? "bf16" : "fp8",
                recipe->override_dgrad ? "bf16" : "fp8", recipe->override_wgrad ? "bf16" : "fp8");
        return;
    }
    if (recipe->scaling == FP8_SCALING_CURRENT) {
        fprintf(out,
                "Float8CurrentScaling(fp8_format=%s [fwd %s, bwd %s], margin=%d, override_linear_precision=(fprop=%s, "
                "dgrad=%s, wgrad=%s))\n",
                fp8_recipe_format_name(recipe->fp8_format), fp8_format_name(fp8_recipe_forward_format(recipe)),
                fp8_format_name(fp8_recipe_backward_format(recipe)), recipe->margin,
                recipe->override_fprop ? "bf16" : "fp8", recipe->override_dgrad ? "bf16" : "fp8",
                recipe->override_wgrad ? "bf16" : "fp8");
        return;
    }
    const Fp8DelayedOptions* delayed = &recipe->delayed;
    fprintf(out,
            "DelayedScaling(margin=%d, interval=%d, fp8_format=%s [fwd %s, bwd %s], amax_history_len=%d, "
            "amax_compute_algo=%s, scaling_factor_compute_algo=%s, override_linear_precision=(fprop=%s, dgrad=%s, "
            "wgrad=%s), reduce_amax=%s)\n",
            recipe->margin, delayed->interval, fp8_recipe_format_name(recipe->fp8_format),
            fp8_format_name(fp8_recipe_forward_format(recipe)),
            fp8_format_name(fp8_recipe_backward_format(recipe)), delayed->amax_history_len,
            amax_compute_algo_name(delayed->amax_compute_algo),
            delayed->scaling_factor_compute_fn ? "callback" : "default", recipe->override_fprop ? "bf16" : "fp8",
            recipe->override_dgrad ? "bf16" : "fp8", recipe->override_wgrad ? "bf16" : "fp8",
            delayed->reduce_amax ? "True" : "False");
}

#endif  // GPTFP8_RECIPE_H
