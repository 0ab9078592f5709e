/*
fp8/meta.h — FP8 metadata for every FP8 GEMM module in one allocation, and the delayed-scaling update rule. The CPU
quantizer is fp8/quantize_cpu.h, the GPU's fp8/quantize.cuh, and the update on the GPU fp8/update.cuh.

Layout (one float buffer, stored as-is in checkpoints). M modules, S = 5*M slots:
  amax_history  (amax_history_len, S) row-major, row stride S
                columns [0, 3M):  TE's forward history  (amax_history_len, M*3); module m, tensor k at m*3 + k,
                                  k = FP8_FWD_INPUT | FP8_FWD_WEIGHT | FP8_FWD_OUTPUT
                columns [3M, 5M): TE's backward history (amax_history_len, M*2); module m, tensor k at 3M + m*2 + k,
                                  k = FP8_BWD_GRAD_OUTPUT | FP8_BWD_GRAD_INPUT
  scale         (S)   multiply by this before casting to FP8
  scale_inv     (S)   1/scale, what the GEMM multiplies its FP8 operands' product by (cuBLASLt's A/B scale pointers)
Why one matrix for forward and backward: row 0 (the staging row every quantization max-reduces into) is then one
contiguous run of S floats, so multi-GPU needs one all-reduce(MAX) on one buffer with no packing, and one pass (one
kernel launch on the GPU, one thread per column) updates every slot of every module, forward and backward together.
Rows 1..len-1 hold earlier steps' amaxes, oldest first; the newest finished step is in row len-1.

Amaxes are magnitudes, merged with a NaN-propagating max (the max of their bit patterns, which is what the GPU's
atomicMax on the float bits computes): a NaN anywhere in a tensor makes its amax NaN, and the update rule then keeps
the old scale instead of computing one from garbage.
*/
#ifndef GPTFP8_META_H
#define GPTFP8_META_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fp8.h"
#include "recipe.h"

enum { FP8_FWD_INPUT = 0, FP8_FWD_WEIGHT = 1, FP8_FWD_OUTPUT = 2, FP8_FWD_SLOTS = 3 };
enum { FP8_BWD_GRAD_OUTPUT = 0, FP8_BWD_GRAD_INPUT = 1, FP8_BWD_SLOTS = 2 };
#define FP8_SLOTS_PER_MODULE (FP8_FWD_SLOTS + FP8_BWD_SLOTS)

// ----------------------------------------------------------------------------
// the update rule, per slot; host + device, so the CPU and the end-of-step kernel run the same code

// Max of two amaxes (non-negative or NaN): comparing bit patterns orders non-negative floats by value and puts NaN
// above +inf, so NaN wins. Same result as atomicMax on the float bits on the GPU.
FP8_HD float fp8_amax_merge(float a, float b) { return fp8_float_bits(a) >= fp8_float_bits(b) ? a : b; }

// The amax a scale is computed from: max over the whole window, row 0 (this step) included, or row 0 alone.
FP8_HD float fp8_history_window_amax(const float* history_column, int amax_history_len, int row_stride,
                                     int most_recent) {
    if (most_recent) { return history_column[0]; }
    float amax = history_column[0];
    for (int row = 1; row < amax_history_len; row++) {
        amax = fp8_amax_merge(amax, history_column[(size_t)row * row_stride]);
    }
    return amax;
}

// scale = (fp8_max / amax) / 2^margin. Keep the old scale when amax is 0, negative, inf or NaN (nothing to learn
// from it); when the quotient overflows (tiny amax) use FLT_MAX rather than inf, so scale_inv stays > 0.
FP8_HD float fp8_compute_scale(float amax, float old_scale, float fp8_max_value, int margin) {
    if (!(amax > 0.0f) || !(amax <= FLT_MAX)) { return old_scale; }  // catches 0, negatives, +inf and NaN
    float scale = (fp8_max_value / amax) / fp8_bits_float((uint32_t)(127 + margin) << 23);  // 2^margin, exact
    if (scale > FLT_MAX) { scale = FLT_MAX; }
    return scale;
}

// Roll by -1 and open a fresh staging row: [a0, a1, ..., a(n-1)] -> [0, a2, ..., a(n-1), a0].
// (TE's doc: [amax_N, amax_1, ..., amax_N-1] -> [0, amax_2, ..., amax_N-1, amax_N].)
FP8_HD void fp8_history_roll(float* history_column, int amax_history_len, int row_stride) {
    float newest = history_column[0];
    for (int row = 0; row + 1 < amax_history_len; row++) {
        history_column[(size_t)row * row_stride] = history_column[(size_t)(row + 1) * row_stride];
    }
    history_column[(size_t)(amax_history_len - 1) * row_stride] = newest;
    history_column[0] = 0.0f;
}

// The whole end-of-step rule for one slot with the built-in algorithms. A slot whose row 0 is 0 was not used this
// step: no roll, scale unchanged. Otherwise recompute the scale (only on update steps, see recipe.h's `interval`),
// then roll. Note the order: the scale sees the window *before* the roll, so all amax_history_len values count.
FP8_HD void fp8_update_slot(float* history_column, int amax_history_len, int row_stride, float* scale,
                            float* scale_inv, float fp8_max_value, int margin, int most_recent, int update_scale) {
    if (history_column[0] == 0.0f) { return; }
    if (update_scale) {
        float amax = fp8_history_window_amax(history_column, amax_history_len, row_stride, most_recent);
        float new_scale = fp8_compute_scale(amax, *scale, fp8_max_value, margin);
        *scale = new_scale;
        *scale_inv = 1.0f / new_scale;
    }
    fp8_history_roll(history_column, amax_history_len, row_stride);
}

// Whether the update at the end of optimizer step `step` (0-based) recomputes scales.
FP8_HD int fp8_is_scale_update_step(int step, int interval) { return step % interval == 0; }

// ----------------------------------------------------------------------------
// the metadata of all modules (host)

// Called with row 0 of every slot (num_slots contiguous floats) before the update; must leave there the elementwise
// MAX over all ranks. Multi-GPU installs an NCCL all-reduce here; one process needs none.
typedef void (*Fp8AmaxReduceFn)(float* amax_row0, int num_slots, void* user);

typedef struct {
    int num_modules;
    int amax_history_len;
    int num_slots;             // 5 * num_modules
    Fp8Format forward_format;  // of slots [0, 3M)
    Fp8Format backward_format; // of slots [3M, 5M)
    float* memory;             // the one allocation: amax_history, then scale, then scale_inv
    size_t num_floats;         // its length: (amax_history_len + 2) * num_slots
    float* amax_history;       // (amax_history_len, num_slots)
    float* scale;              // (num_slots)
    float* scale_inv;          // (num_slots)
    Fp8AmaxReduceFn amax_reduce_fn;  // NULL in a single process
    void* amax_reduce_user;
} Fp8Meta;

// Point amax_history / scale / scale_inv into `memory` (also used after copying a checkpoint's buffer in).
static inline void fp8_meta_point_into(Fp8Meta* meta, float* memory) {
    meta->memory = memory;
    meta->amax_history = memory;
    meta->scale = memory + (size_t)meta->amax_history_len * meta->num_slots;
    meta->scale_inv = meta->scale + meta->num_slots;
}

// The layout for num_modules modules under `recipe` (shape and formats; no memory yet: memory and the pointers stay
// NULL until fp8_meta_point_into). Both trainers make their metadata with it: the CPU in host memory (fp8_meta_init),
// the GPU in one device buffer, so the two layouts cannot differ.
static inline int fp8_meta_layout(Fp8Meta* meta, int num_modules, const Fp8Recipe* recipe, char* err, size_t errlen) {
    memset(meta, 0, sizeof(*meta));
    if (fp8_recipe_validate(recipe, err, errlen)) { return -1; }
    if (num_modules < 1) {
        snprintf(err, errlen, "fp8 meta: need at least one module, got %d", num_modules);
        return -1;
    }
    meta->num_modules = num_modules;
    meta->amax_history_len = recipe->delayed.amax_history_len;
    meta->num_slots = FP8_SLOTS_PER_MODULE * num_modules;
    meta->forward_format = fp8_recipe_forward_format(recipe);
    meta->backward_format = fp8_recipe_backward_format(recipe);
    meta->num_floats = ((size_t)meta->amax_history_len + 2) * (size_t)meta->num_slots;
    return 0;
}

// Histories all 0, scales all 1.0: TE's state before the first forward, written into memory (num_floats) of meta's layout.
static inline void fp8_meta_initial_values(float* memory, const Fp8Meta* meta) {
    size_t history = (size_t)meta->amax_history_len * meta->num_slots;
    memset(memory, 0, history * sizeof(float));
    for (size_t i = history; i < meta->num_floats; i++) { memory[i] = 1.0f; }  // every scale and scale_inv
}

// The layout, allocated in host memory and set to the state before the first forward.
static inline int fp8_meta_init(Fp8Meta* meta, int num_modules, const Fp8Recipe* recipe, char* err, size_t errlen) {
    if (fp8_meta_layout(meta, num_modules, recipe, err, errlen)) { return -1; }
    float* memory = (float*)calloc(meta->num_floats, sizeof(float));
    if (!memory) {
        snprintf(err, errlen, "fp8 meta: out of memory for %zu floats", meta->num_floats);
        return -1;
    }
    fp8_meta_initial_values(memory, meta);
    fp8_meta_point_into(meta, memory);
    return 0;
}

static inline void fp8_meta_free(Fp8Meta* meta) {
    free(meta->memory);
    meta->memory = meta->amax_history = meta->scale = meta->scale_inv = NULL;
}

static inline int fp8_meta_fwd_slot(const Fp8Meta* meta, int module, int tensor) {
    (void)meta;
    return module * FP8_FWD_SLOTS + tensor;
}
static inline int fp8_meta_bwd_slot(const Fp8Meta* meta, int module, int tensor) {
    return FP8_FWD_SLOTS * meta->num_modules + module * FP8_BWD_SLOTS + tensor;
}
FP8_HD int fp8_slot_is_forward(int slot, int num_modules) { return slot < FP8_FWD_SLOTS * num_modules; }
// Whether a skipped step keeps the amax in row 0 of `slot`: a weight's (the weights did not change, and row 0 holds
// exactly their amax); an activation's or a gradient's, possibly not finite, is dropped (zeroed):
// fp8_meta_drop_step_amaxes, and fp8/update.cuh's kernel on a skipped step.
FP8_HD int fp8_slot_kept_when_skipped(int slot, int num_modules) {
    return fp8_slot_is_forward(slot, num_modules) && slot % FP8_FWD_SLOTS == FP8_FWD_WEIGHT;
}
static inline Fp8Format fp8_meta_slot_format(const Fp8Meta* meta, int slot) {
    return fp8_slot_is_forward(slot, meta->num_modules) ? meta->forward_format : meta->backward_format;
}
// The staging cell every quantization of this slot's tensor max-reduces its amax into.
static inline float* fp8_meta_amax_row0(Fp8Meta* meta, int slot) { return &meta->amax_history[slot]; }

// The end of a skipped step: no update, and row 0 zeroed in every slot that does not keep it
// (fp8_slot_kept_when_skipped). The CPU twin of fp8/update.cuh's launch on a skipped step.
static inline void fp8_meta_drop_step_amaxes(Fp8Meta* meta) {
    for (int slot = 0; slot < meta->num_slots; slot++) {
        if (!fp8_slot_kept_when_skipped(slot, meta->num_modules)) { *fp8_meta_amax_row0(meta, slot) = 0.0f; }
    }
}

// The hook before the update: one call, all slots' row 0. Single process (or reduce_amax off): nothing to do.
static inline void fp8_meta_reduce_amax(Fp8Meta* meta, const Fp8Recipe* recipe) {
    if (recipe->delayed.reduce_amax && meta->amax_reduce_fn) {
        meta->amax_reduce_fn(meta->amax_history, meta->num_slots, meta->amax_reduce_user);
    }
}

// Whether the end-of-step pass recomputes scales: delayed scaling on its update steps (`interval`); never with the
// recipes without a history (current, blockwise, mxfp8), whose casts set their own scales (fp8/current.h,
// fp8/block.h): there the pass only opens a fresh row 0 (a roll of a one-row history zeroes it).
FP8_HD int fp8_end_of_step_updates_scales(int no_history, int step, int interval) {
    return !no_history && fp8_is_scale_update_step(step, interval);
}

// The end-of-step update of every slot of every module (the CPU twin of fp8/update.cuh's one launch).
// `step` is the optimizer step that just finished, for `interval`.
static inline void fp8_meta_update(Fp8Meta* meta, const Fp8Recipe* recipe, int step) {
    const Fp8DelayedOptions* delayed = &recipe->delayed;
    int update_scale = fp8_end_of_step_updates_scales(!fp8_recipe_has_history(recipe), step, delayed->interval);
    int most_recent = delayed->amax_compute_algo == AMAX_COMPUTE_MOST_RECENT;
    int builtin = delayed->amax_compute_algo != AMAX_COMPUTE_CALLBACK && delayed->scaling_factor_compute_fn == NULL;
    for (int slot = 0; slot < meta->num_slots; slot++) {
        float* column = meta->amax_history + slot;
        float fp8_max_value = fp8_max(fp8_meta_slot_format(meta, slot));
        if (builtin) {
            fp8_update_slot(column, meta->amax_history_len, meta->num_slots, &meta->scale[slot],
                            &meta->scale_inv[slot], fp8_max_value, recipe->margin, most_recent, update_scale);
            continue;
        }
        // with callbacks: the same steps, either piece replaced by the user's function
        if (column[0] == 0.0f) { continue; }
        if (update_scale) {
            float amax = delayed->amax_compute_algo == AMAX_COMPUTE_CALLBACK
                       ? delayed->amax_compute_fn(column, meta->amax_history_len, meta->num_slots,
                                                  delayed->callback_user)
                       : fp8_history_window_amax(column, meta->amax_history_len, meta->num_slots, most_recent);
            float new_scale = delayed->scaling_factor_compute_fn
                            ? delayed->scaling_factor_compute_fn(amax, meta->scale[slot], fp8_max_value, recipe,
                                                                 delayed->callback_user)
                            : fp8_compute_scale(amax, meta->scale[slot], fp8_max_value, recipe->margin);
            meta->scale[slot] = new_scale;
            meta->scale_inv[slot] = 1.0f / new_scale;
        }
        fp8_history_roll(column, meta->amax_history_len, meta->num_slots);
    }
}

// Per slot, the amax a delayed-scaling update at this point computes the scale from (over the window, row 0
// included, or row 0 alone, or the user's callback): what the diagnostics call the window amax. Call it before the
// update, which rolls the oldest row out. window_amax (num_slots).
static inline void fp8_meta_window_amax(const Fp8Meta* meta, const Fp8Recipe* recipe, float* window_amax) {
    const Fp8DelayedOptions* delayed = &recipe->delayed;
    int most_recent = delayed->amax_compute_algo == AMAX_COMPUTE_MOST_RECENT;
    for (int slot = 0; slot < meta->num_slots; slot++) {
        const float* column = meta->amax_history + slot;
        window_amax[slot] = delayed->amax_compute_algo == AMAX_COMPUTE_CALLBACK
                          ? delayed->amax_compute_fn(column, meta->amax_history_len, meta->num_slots,
                                                     delayed->callback_user)
                          : fp8_history_window_amax(column, meta->amax_history_len, meta->num_slots, most_recent);
    }
}

#endif  // GPTFP8_META_H
