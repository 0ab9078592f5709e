/*
fp8/update.cuh — the end-of-step delayed-scaling update on the GPU: ONE kernel launch updates every slot of every
module, forward and backward together, with exactly the rule of fp8/meta.h (it calls the same fp8_update_slot).

One thread per slot (column of the (amax_history_len, S) history matrix). A thread walks its column row by row; at
every row the threads of a warp read 32 neighbouring floats, so the walk is coalesced. The histories and scales never
leave the GPU; the host only passes the recipe's numbers.

The amax_compute_algo and scaling_factor_compute_algo callbacks are host functions; a recipe with either runs the
host rule (fp8_meta_update) on a copy instead, see fp8_meta_update_needs_host.
*/
#ifndef GPTFP8_UPDATE_CUH
#define GPTFP8_UPDATE_CUH

#include <cuda_runtime.h>

#include "meta.h"

// amax_history (amax_history_len, num_slots), scale (num_slots), scale_inv (num_slots): fp8/meta.h's buffer on the
// device. Slots [0, num_forward_slots) use forward_max (E4M3: 448), the rest backward_max (E5M2: 57344).
__global__ void fp8_update_kernel(float* amax_history, float* scale, float* scale_inv, int num_slots,
                                  int num_forward_slots, int amax_history_len, float forward_max, float backward_max,
                                  int margin, int most_recent, int update_scale) {
    int slot = blockIdx.x * blockDim.x + threadIdx.x;
    if (slot >= num_slots) { return; }
    float fp8_max_value = slot < num_forward_slots ? forward_max : backward_max;
    fp8_update_slot(amax_history + slot, amax_history_len, num_slots, &scale[slot], &scale_inv[slot], fp8_max_value,
                    margin, most_recent, update_scale);
}

// Whether this recipe needs the host path (a C callback replaces part of the rule).
static inline int fp8_meta_update_needs_host(const DelayedScaling* recipe) {
    return recipe->amax_compute_algo == AMAX_COMPUTE_CALLBACK || recipe->scaling_factor_compute_fn != NULL;
}

// Launch the update on `stream` for the device copy `device_memory` of a buffer shaped like `meta` (same
// num_modules, amax_history_len). `step` is the optimizer step that just finished (for the recipe's interval).
static inline cudaError_t fp8_meta_update_launch(float* device_memory, const Fp8Meta* meta,
                                                 const DelayedScaling* recipe, int step, cudaStream_t stream) {
    const int block_size = 256;
    int num_slots = meta->num_slots;
    int grid = (num_slots + block_size - 1) / block_size;
    float* amax_history = device_memory;
    float* scale = device_memory + (size_t)meta->amax_history_len * num_slots;
    float* scale_inv = scale + num_slots;
    fp8_update_kernel<<<grid, block_size, 0, stream>>>(
        amax_history, scale, scale_inv, num_slots, FP8_FWD_SLOTS * meta->num_modules, meta->amax_history_len,
        fp8_max(meta->forward_format), fp8_max(meta->backward_format), recipe->margin,
        recipe->amax_compute_algo == AMAX_COMPUTE_MOST_RECENT, fp8_is_scale_update_step(step, recipe->interval));
    return cudaGetLastError();
}

#endif  // GPTFP8_UPDATE_CUH
