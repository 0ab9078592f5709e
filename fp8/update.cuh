/*
fp8/update.cuh — the end-of-step delayed-scaling update on the GPU: ONE kernel launch updates every slot of every
module, forward and backward together, with the rule of fp8/meta.h (fp8_update_slot), bit for bit.

Layout of the work: a block owns FP8_UPDATE_SLOTS_PER_BLOCK neighbouring slots (columns of the (amax_history_len, S)
history matrix; threadIdx.x, so a warp reads 32 neighbouring floats of a row, coalesced) and ALL their rows, split
over FP8_UPDATE_ROW_THREADS threads (threadIdx.y). The history roll ("row r takes row r + 1") is done in passes going
up the rows: in a pass every thread loads FP8_UPDATE_ROWS_PER_THREAD rows of its column (independent loads, all in
flight at once), the block synchronizes, then every thread stores them one row lower. A pass reads the first row of
the next pass's range before that pass overwrites it, and the synchronizations order the passes, so the in-place
shift is race-free; with the block owning whole columns no other block touches them. History 1024 is 4 passes, each
one memory round trip, where one thread per slot walking its column would be a chain of ~1024 dependent
load/store pairs. The window amax is the max of the values the passes load (rows 1..len-1) and row 0, reduced over
the block's rows in shared memory: a max over a set, so in any order the same bits as the CPU's serial merge (the
merge is fp8_amax_merge, a max of bit patterns). The skip rule, the scale formula and the merge are meta.h's own
functions; dev/cuda/fp8_update checks the whole kernel bit for bit against fp8_meta_update on random histories (0,
tiny, inf and NaN amaxes), histories 1 to 1024, both algorithms, margins and intervals.

Beside it, for the diagnostics (fp8_diag.tsv and the state file record each slot's step amax and the window amax its
scale came from), fp8_meta_window_amax_launch writes those two per slot into device arrays before the update, with
the same block layout and meta.h's merge: the GPU twin of fp8_meta_window_amax, so the trainer copies nothing to the
host and waits for nothing at the end of a step; it reads the arrays only where it writes a file.

Every scale_inv the kernel writes it also writes into the GEMMs' strided copy, gemm_scale_inv (num_slots, 4): cuBLASLt
reads a scale pointer only at 16-byte alignment (llmc/gemm.cuh), and the metadata keeps its scale_invs contiguous, the
layout of a checkpoint. fp8_gemm_scale_inv_refresh_launch writes the whole copy after the host has written the
metadata (its initial values, a checkpoint read).

A step may be skipped (a loss or gradient norm that is not finite): the launch then rolls nothing and sets no scale,
and only zeroes row 0 of the slots fp8_slot_kept_when_skipped does not keep (gpt2_fp8_drop_step_amaxes). The host
says so where it knows (the loss), the gradient norm's square on the device where the host has not waited for it, so
that the end of a step is queued without waiting for its backward; the window amaxes are then left as they were too.

The amax_compute_algo and scaling_factor_compute_algo callbacks are host functions; a recipe with either runs the
host rule (fp8_meta_update) on a copy instead, see fp8_meta_update_needs_host. With current scaling the same launch
only clears row 0 (update_scale 0 and a one-row history): the casts set the scales (fp8/quantize.cuh).
*/
#ifndef GPTFP8_UPDATE_CUH
#define GPTFP8_UPDATE_CUH

#include <cuda_runtime.h>

#include "meta.h"

#define FP8_UPDATE_SLOTS_PER_BLOCK 32
#define FP8_UPDATE_ROW_THREADS 32
#define FP8_UPDATE_ROWS_PER_THREAD 8
// floats from one slot's scale_inv to the next in the GEMMs' copy: 16 bytes, the alignment cuBLASLt reads them at
#define FP8_GEMM_SCALE_INV_STRIDE 4

// Whether the step is skipped: the host's decision, or (grad_norm_squared not NULL) a gradient norm that is not finite
__device__ __forceinline__ bool fp8_step_skipped(int step_skipped, const float* grad_norm_squared) {
    return step_skipped || (grad_norm_squared && !isfinite(*grad_norm_squared));
}

// amax_history (amax_history_len, num_slots), scale (num_slots), scale_inv (num_slots): fp8/meta.h's buffer on the
// device; gemm_scale_inv (num_slots, FP8_GEMM_SCALE_INV_STRIDE) the GEMMs' copy of scale_inv, or NULL. Slots
// [0, num_forward_slots) use forward_max (E4M3: 448), the rest backward_max (E5M2: 57344). A skipped step
// (fp8_step_skipped) only drops the amaxes in row 0 that it does not keep.
// Block (FP8_UPDATE_SLOTS_PER_BLOCK, FP8_UPDATE_ROW_THREADS), one block per FP8_UPDATE_SLOTS_PER_BLOCK slots.
__global__ void __launch_bounds__(FP8_UPDATE_SLOTS_PER_BLOCK * FP8_UPDATE_ROW_THREADS)
    fp8_update_kernel(float* amax_history, float* scale, float* scale_inv, float* gemm_scale_inv, int num_slots,
                      int num_forward_slots, int amax_history_len, float forward_max, float backward_max, int margin,
                      int most_recent, int update_scale, int step_skipped, const float* grad_norm_squared) {
    __shared__ float column_max[FP8_UPDATE_ROW_THREADS][FP8_UPDATE_SLOTS_PER_BLOCK];
    const int slot = blockIdx.x * FP8_UPDATE_SLOTS_PER_BLOCK + threadIdx.x, len = amax_history_len;
    float* column = amax_history + slot;
    if (fp8_step_skipped(step_skipped, grad_norm_squared)) {  // the same answer in every thread: no barrier is missed
        if (threadIdx.y == 0 && slot < num_slots &&
            !fp8_slot_kept_when_skipped(slot, num_forward_slots / FP8_FWD_SLOTS)) {
            column[0] = 0.0f;
        }
        return;
    }
    const float newest = slot < num_slots ? column[0] : 0.0f;  // row 0: this step's amax
    // fp8_update_slot's first rule: a slot whose row 0 is 0 was not used this step (no roll, scale kept)
    const bool active = slot < num_slots && newest != 0.0f;
    float thread_max = 0.0f;  // the merge's identity (amaxes are >= 0 or NaN)
    // roll by -1, rows 0..len-2 take rows 1..len-1: passes up the rows (the pass count is the same for every thread,
    // so every thread reaches every __syncthreads)
    const int rows_per_pass = FP8_UPDATE_ROW_THREADS * FP8_UPDATE_ROWS_PER_THREAD;
    for (int base = 0; base < len - 1; base += rows_per_pass) {
        float moved[FP8_UPDATE_ROWS_PER_THREAD];
#pragma unroll
        for (int i = 0; i < FP8_UPDATE_ROWS_PER_THREAD; i++) {
            int row = base + i * FP8_UPDATE_ROW_THREADS + threadIdx.y;  // the row written; row + 1 is read
            moved[i] = active && row < len - 1 ? column[(size_t)(row + 1) * num_slots] : 0.0f;
            thread_max = fp8_amax_merge(thread_max, moved[i]);
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < FP8_UPDATE_ROWS_PER_THREAD; i++) {
            int row = base + i * FP8_UPDATE_ROW_THREADS + threadIdx.y;
            if (active && row < len - 1) { column[(size_t)row * num_slots] = moved[i]; }
        }
        __syncthreads();
    }
    column_max[threadIdx.y][threadIdx.x] = thread_max;
    __syncthreads();
    if (threadIdx.y != 0 || !active) { return; }
    if (update_scale) {  // the window before the roll: row 0 and every older row (or row 0 alone: most_recent)
        float amax = newest;
        if (!most_recent) {
            for (int y = 0; y < FP8_UPDATE_ROW_THREADS; y++) { amax = fp8_amax_merge(amax, column_max[y][threadIdx.x]); }
        }
        float fp8_max_value = slot < num_forward_slots ? forward_max : backward_max;
        float new_scale = fp8_compute_scale(amax, scale[slot], fp8_max_value, margin);
        scale[slot] = new_scale;
        scale_inv[slot] = 1.0f / new_scale;
        if (gemm_scale_inv) { gemm_scale_inv[(size_t)slot * FP8_GEMM_SCALE_INV_STRIDE] = scale_inv[slot]; }
    }
    // the end of fp8_history_roll: the finished step's amax becomes the newest row, row 0 opens fresh (len 1: both
    // are row 0, which ends 0, as on the CPU)
    column[(size_t)(len - 1) * num_slots] = newest;
    column[0] = 0.0f;
}

// The diagnostics' amaxes of every slot, before the update: last_amax[slot] = row 0 (this step's amax), and, when
// window_amax is not NULL, window_amax[slot] = the window the update's scale comes from (row 0 and every older row,
// or row 0 alone: most_recent), fp8_history_window_amax's value for every slot, used this step or not.
// Nothing is written where the gradient norm (grad_norm_squared, or NULL) skips the step: a skipped step's update
// does not run, and the diagnostics keep the amaxes of the last one that did.
// Block (FP8_UPDATE_SLOTS_PER_BLOCK, FP8_UPDATE_ROW_THREADS) as the update's: threadIdx.x a slot (coalesced along a
// row), threadIdx.y a stride over its rows; a max over a set, so the same bits in any order.
__global__ void __launch_bounds__(FP8_UPDATE_SLOTS_PER_BLOCK * FP8_UPDATE_ROW_THREADS)
    fp8_window_amax_kernel(const float* amax_history, float* last_amax, float* window_amax, int num_slots,
                           int amax_history_len, int most_recent, const float* grad_norm_squared) {
    __shared__ float column_max[FP8_UPDATE_ROW_THREADS][FP8_UPDATE_SLOTS_PER_BLOCK];
    const int slot = blockIdx.x * FP8_UPDATE_SLOTS_PER_BLOCK + threadIdx.x;
    if (fp8_step_skipped(0, grad_norm_squared)) { return; }  // (every thread of the block alike)
    float thread_max = 0.0f;  // the merge's identity
    if (slot < num_slots && window_amax && !most_recent) {
        for (int row = 1 + threadIdx.y; row < amax_history_len; row += FP8_UPDATE_ROW_THREADS) {
            thread_max = fp8_amax_merge(thread_max, amax_history[(size_t)row * num_slots + slot]);
        }
    }
    column_max[threadIdx.y][threadIdx.x] = thread_max;
    __syncthreads();
    if (threadIdx.y != 0 || slot >= num_slots) { return; }
    const float newest = amax_history[slot];
    last_amax[slot] = newest;
    if (!window_amax) { return; }
    float amax = newest;
    if (!most_recent) {
        for (int y = 0; y < FP8_UPDATE_ROW_THREADS; y++) { amax = fp8_amax_merge(amax, column_max[y][threadIdx.x]); }
    }
    window_amax[slot] = amax;
}

// gemm_scale_inv[slot * FP8_GEMM_SCALE_INV_STRIDE] = scale_inv[slot] for every slot: the GEMMs' copy made whole
__global__ void fp8_gemm_scale_inv_refresh_kernel(const float* scale_inv, float* gemm_scale_inv, int num_slots) {
    int slot = blockIdx.x * blockDim.x + threadIdx.x;
    if (slot < num_slots) { gemm_scale_inv[(size_t)slot * FP8_GEMM_SCALE_INV_STRIDE] = scale_inv[slot]; }
}

// Whether this recipe needs the host path (a C callback replaces part of the rule).
static inline int fp8_meta_update_needs_host(const Fp8Recipe* recipe) {
    return recipe->delayed.amax_compute_algo == AMAX_COMPUTE_CALLBACK ||
           recipe->delayed.scaling_factor_compute_fn != NULL;
}

// Launch the update on `stream` of the metadata `meta` points to, in device memory (fp8_meta_point_into a device
// buffer of its layout), and of the GEMMs' copy of its scale_invs (gemm_scale_inv, or NULL: none kept). `step` is the
// optimizer step that just finished (for the recipe's interval). A skipped step (step_skipped, or a grad_norm_squared
// on the device that is not finite; NULL: no norm decides) only drops its amaxes.
static inline cudaError_t fp8_meta_update_launch(const Fp8Meta* meta, float* gemm_scale_inv, const Fp8Recipe* recipe,
                                                 int step, int step_skipped, const float* grad_norm_squared,
                                                 cudaStream_t stream) {
    int num_slots = meta->num_slots;
    int grid = (num_slots + FP8_UPDATE_SLOTS_PER_BLOCK - 1) / FP8_UPDATE_SLOTS_PER_BLOCK;
    dim3 block(FP8_UPDATE_SLOTS_PER_BLOCK, FP8_UPDATE_ROW_THREADS);
    fp8_update_kernel<<<grid, block, 0, stream>>>(
        meta->amax_history, meta->scale, meta->scale_inv, gemm_scale_inv, num_slots, FP8_FWD_SLOTS * meta->num_modules,
        meta->amax_history_len, fp8_max(meta->forward_format), fp8_max(meta->backward_format), recipe->margin,
        recipe->delayed.amax_compute_algo == AMAX_COMPUTE_MOST_RECENT,
        fp8_end_of_step_updates_scales(!fp8_recipe_has_history(recipe), step, recipe->delayed.interval), step_skipped,
        grad_norm_squared);
    return cudaGetLastError();
}

// Launch fp8_gemm_scale_inv_refresh_kernel on `stream`: the GEMMs' copy (num_slots, FP8_GEMM_SCALE_INV_STRIDE) of
// the device metadata's scale_invs, after the host wrote them
static inline cudaError_t fp8_gemm_scale_inv_refresh_launch(const Fp8Meta* meta, float* gemm_scale_inv,
                                                            cudaStream_t stream) {
    const int block_size = 256;
    int grid = (meta->num_slots + block_size - 1) / block_size;
    fp8_gemm_scale_inv_refresh_kernel<<<grid, block_size, 0, stream>>>(meta->scale_inv, gemm_scale_inv,
                                                                        meta->num_slots);
    return cudaGetLastError();
}

// Launch fp8_window_amax_kernel on `stream` for the device metadata `meta`: last_amax (num_slots) always, window_amax
// (num_slots) when not NULL (a recipe with a history: current scaling's window is its casts' own amax); neither where
// grad_norm_squared (on the device, or NULL) is not finite. Call it before fp8_meta_update_launch, which rolls the
// window.
static inline cudaError_t fp8_meta_window_amax_launch(const Fp8Meta* meta, const Fp8Recipe* recipe, float* last_amax,
                                                      float* window_amax, const float* grad_norm_squared,
                                                      cudaStream_t stream) {
    int grid = (meta->num_slots + FP8_UPDATE_SLOTS_PER_BLOCK - 1) / FP8_UPDATE_SLOTS_PER_BLOCK;
    dim3 block(FP8_UPDATE_SLOTS_PER_BLOCK, FP8_UPDATE_ROW_THREADS);
    fp8_window_amax_kernel<<<grid, block, 0, stream>>>(meta->amax_history, last_amax, window_amax, meta->num_slots,
                                                       meta->amax_history_len,
                                                       recipe->delayed.amax_compute_algo == AMAX_COMPUTE_MOST_RECENT,
                                                       grad_norm_squared);
    return cudaGetLastError();
}

#endif  // GPTFP8_UPDATE_CUH
