/*
llmc/zero.h — the arithmetic of data parallelism with ZeRO stage 1, shared by the CUDA trainer (which runs it on NCCL)
and the CPU tests (which run it on simulated ranks): which slice of the parameters each rank owns, and how a
per-tensor loop (AdamW's weight decay differs per tensor) walks only the owned part.

ZeRO-1 (Rajbhandari et al., 2019) shards the optimizer state: rank r keeps the fp32 master weights and AdamW moments
of its slice only. One optimizer step is then
    reduce-scatter(sum) of the gradients   -> rank r holds the summed gradient of its slice (the CUDA trainer does
                                              it as one reduce per owner and layer, overlapping the backward)
    AdamW on its slice                     -> new fp32 masters of the slice, their bf16 copy
    all-gather of the bf16 weights          -> every rank holds all the new weights (and casts them to FP8 itself)
NCCL's reduce-scatter and all-gather move equal counts per rank, so the flat parameter buffer is padded to
num_processes * shard_size; the padding is never read as a parameter (its gradient is 0, it is never updated).
Slices are contiguous runs of the flat buffer (ParameterTensors' order), so a slice may start or end inside a tensor.
Stage 0 is plain data parallelism (all-reduce of the gradients, every rank updates everything): the shard is then
the whole buffer on every rank.
*/
#ifndef GPTFP8_ZERO_H
#define GPTFP8_ZERO_H

#include <stddef.h>

// Shards are multiples of this many elements: 128 floats = 512 bytes, so every shard of a float (or bf16) buffer
// starts on an address NCCL and the vector loads like.
#define ZERO_SHARD_ALIGN 128

typedef struct {
    size_t offset;      // first element this rank owns (rank * shard_size)
    size_t count;       // how many of them are real parameters (the last ranks may own padding only)
    size_t shard_size;  // elements per rank in the padded buffer, the same on every rank
    size_t padded;      // num_processes * shard_size >= num_parameters
} ZeroShard;

// The slice of a buffer of `num_parameters` elements that `rank` of `num_processes` owns at `zero_stage` (0 or 1).
static inline ZeroShard zero_shard(size_t num_parameters, int num_processes, int rank, int zero_stage) {
    ZeroShard s;
    if (zero_stage == 0 || num_processes <= 1) {
        s.offset = 0;
        s.count = num_parameters;
        s.shard_size = num_parameters;
        s.padded = num_parameters;
        return s;
    }
    size_t per_rank = (num_parameters + (size_t)num_processes - 1) / (size_t)num_processes;
    s.shard_size = (per_rank + ZERO_SHARD_ALIGN - 1) / ZERO_SHARD_ALIGN * ZERO_SHARD_ALIGN;
    s.padded = s.shard_size * (size_t)num_processes;
    s.offset = s.shard_size * (size_t)rank;
    s.count = s.offset >= num_parameters ? 0
              : num_parameters - s.offset < s.shard_size ? num_parameters - s.offset
                                                         : s.shard_size;
    return s;
}

// The part of tensor [tensor_offset, tensor_offset + tensor_count) inside the shard: [*lo, *hi) in flat indices.
// Returns 0 when they do not overlap.
static inline int zero_shard_overlap(const ZeroShard* s, size_t tensor_offset, size_t tensor_count, size_t* lo,
                                     size_t* hi) {
    size_t a = tensor_offset > s->offset ? tensor_offset : s->offset;
    size_t end_t = tensor_offset + tensor_count, end_s = s->offset + s->count;
    size_t b = end_t < end_s ? end_t : end_s;
    if (a >= b) { return 0; }
    *lo = a;
    *hi = b;
    return 1;
}

#endif  // GPTFP8_ZERO_H
