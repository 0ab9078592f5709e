/*
fp8/diag.h — what FP8 training shows of itself: per slot, how many elements its casts quantized and how many of them
saturated (clipped to +-fp8_max) or flushed (a non-zero value cast to +-0), the range of its block scales (block
recipes), and the rows of fp8_diag.tsv that report them beside the slot's amaxes and scale. Both trainers write the same columns (scripts/plot_fp8_diag.py reads them);
llmc/linear.h writes a block, module by module.
*/
#ifndef GPTFP8_DIAG_H
#define GPTFP8_DIAG_H

#include <math.h>
#include <stdio.h>

#include "fp8.h"
#include "meta.h"

// Diagnostics of one or more quantizations: how much of the tensor fell outside the FP8 range.
typedef struct {
    long long count;      // elements quantized
    long long saturated;  // |x * scale| > fp8_max: clipped to +-max
    long long flushed;    // x != 0 but quantized to +-0: lost to underflow
} Fp8QuantStats;

// The block recipes' (fp8/block.h) scales of one slot since the last diagnostics block: the smallest and largest
// scale of a block whose amax was finite and non-zero. Nothing yet: scale_min +inf, scale_max 0.
typedef struct {
    float scale_min, scale_max;
} Fp8BlockScaleRange;

static inline void fp8_block_scale_range_reset(Fp8BlockScaleRange* range) {
    range->scale_min = (float)INFINITY;
    range->scale_max = 0.0f;
}

// fp8_diag.tsv's first line: its column names.
#define FP8_DIAG_COLUMNS                                                                                              \
    "step\tmodule\tlayer\tgemm\ttensor\tformat\tamax\twindow_amax\tscale\tscale_inv\tsaturated_frac\tflushed_frac\t"     \
    "block_scale_min\tblock_scale_max\n"
// The columns before the block recipes (the last two missing): the per-tensor recipes' files of earlier commits, which
// a resume upgrades (llmc/run_folder.h: their block scales are their one scale, column 9, so nothing is made up).
#define FP8_DIAG_COLUMNS_PER_TENSOR_ONLY                                                                              \
    "step\tmodule\tlayer\tgemm\ttensor\tformat\tamax\twindow_amax\tscale\tscale_inv\tsaturated_frac\tflushed_frac\n"

static inline void fp8_diag_write_header(FILE* f) { fputs(FP8_DIAG_COLUMNS, f); }

// The tensor column's names of a linear module's five slots (forward, then backward), and of an FP8 attention
// module's (llmc/linear.h: the softmax output S and dP; its other three slots are never used).
static const char* const fp8_diag_linear_tensors[FP8_SLOTS_PER_MODULE] = {"input", "weight", "output", "grad_output",
                                                                          "grad_input"};
static const char* const fp8_diag_attention_tensors[FP8_SLOTS_PER_MODULE] = {"softmax_output", "unused", "unused",
                                                                             "dP", "unused"};

// The rows of one module (`layer` -1 and `name` "lm_head" for the LM head; `tensors` one of the two above), one per
// slot in use: the amax the last update saw (last_amax, per slot: the step's amax), the amax the scale came from
// (window_amax, per slot: delayed scaling's window max at the end of the step, row 0 included; the other recipes' last
// cast's own amax), the scale now, the fractions of the elements quantized since the previous block (stats, per slot)
// that were clipped (saturated) or lost to underflow (flushed), and the smallest and largest block scale. Per-tensor
// recipes (block_scale_range NULL): the block scales are the one scale. Block recipes: one scale cannot describe the
// tensor, so scale and scale_inv are nan, and the block scales come from block_scale_range (per slot; nan when no block
// of the slot had a finite non-zero amax). A slot no cast used (no count, no amax) has no row.
static inline void fp8_diag_write_module(FILE* f, int step, const Fp8Meta* meta, int module, int layer,
                                         const char* name, const char* const tensors[FP8_SLOTS_PER_MODULE],
                                         const float* last_amax, const float* window_amax,
                                         const Fp8QuantStats* stats, const Fp8BlockScaleRange* block_scale_range) {
    for (int s = 0; s < FP8_SLOTS_PER_MODULE; s++) {
        int forward = s < FP8_FWD_SLOTS, k = forward ? s : s - FP8_FWD_SLOTS;
        int slot = forward ? fp8_meta_fwd_slot(meta, module, k) : fp8_meta_bwd_slot(meta, module, k);
        const Fp8QuantStats* st = &stats[slot];
        if (st->count == 0 && last_amax[slot] == 0.0f) { continue; }  // unused slot
        fprintf(f, "%d\t%d\t%d\t%s\t%s\t%s\t%.6e\t%.6e\t", step, module, layer, name, tensors[s],
                fp8_format_name(fp8_meta_slot_format(meta, slot)), last_amax[slot], window_amax[slot]);
        if (block_scale_range) {
            fprintf(f, "nan\tnan\t");
        } else {
            fprintf(f, "%.6e\t%.6e\t", meta->scale[slot], meta->scale_inv[slot]);
        }
        fprintf(f, "%.6e\t%.6e\t", st->count ? (double)st->saturated / st->count : 0.0,
                st->count ? (double)st->flushed / st->count : 0.0);
        if (!block_scale_range) {
            fprintf(f, "%.6e\t%.6e\n", meta->scale[slot], meta->scale[slot]);
        } else if (block_scale_range[slot].scale_max > 0.0f) {
            fprintf(f, "%.6e\t%.6e\n", block_scale_range[slot].scale_min, block_scale_range[slot].scale_max);
        } else {
            fprintf(f, "nan\tnan\n");
        }
    }
}

#endif  // GPTFP8_DIAG_H
