/*
llmc/multi_gpu.cuh — data parallelism on NCCL for the CUDA trainer: the communicator, and the few collectives one
training step needs. The CPU tests (test_data_parallel.c) check the same semantics on simulated ranks.

Per optimizer step, in order:
  gradients       during the last micro-batch's backward, on a communication stream, as soon as a layer's gradients
                  are final (overlapping the backward of the layers below): ZeRO-1: each part of the layer's slices
                  reduced (SUM) onto the rank whose shard holds it (llmc/zero.h), the traffic of a reduce-scatter;
                  ZeRO-0: all-reduce(SUM). SUM, not AVG: every rank's loss gradient is already 1 / (global batch
                  tokens), so each rank's activation gradients are the rows a single-GPU run would compute, and so
                  are their FP8 amaxes.
  gradient norm   all-reduce(SUM) of the shard's sum of squares (ZeRO-1 only).
  FP8 amaxes      ONE all-reduce(MAX) of row 0 of the amax history, every forward and backward slot of every module
                  in one contiguous buffer (fp8/meta.h), before the update kernel (TE's reduce_amax). The floats are
                  reduced as int32: amaxes are >= 0 and a NaN amax is a positive NaN, so integer MAX over the bits is
                  exactly the NaN-propagating max the CPU reference uses (NCCL's float max may drop NaN).
  weights         ZeRO-1: all-gather(bf16) of each rank's freshly updated shard; then every rank casts the same
                  weights to FP8 with the same (reduced) scale.
The other collectives run on the compute stream: each one needs the result of the kernel just before it. The ids are
exchanged with MPI when built with it (USE_MPI) and launched by mpirun, else through llmc/multi_process.h.

Built without NCCL (no MULTI_GPU), everything here is a no-op for one process and a clear error for more.
*/
#ifndef GPTFP8_MULTI_GPU_CUH
#define GPTFP8_MULTI_GPU_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

#include "cuda_utils.cuh"
#include "multi_process.h"
#include "zero.h"

#ifdef MULTI_GPU
#include <nccl.h>
#ifdef USE_MPI
// nvcc compiles this as C++: keep MPI's C API only (OpenMPI's C++ bindings do not build with our warning flags)
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

static void nccl_check(ncclResult_t status, const char* file, int line) {
    if (status != ncclSuccess) {
        fprintf(stderr, "error: NCCL at %s:%d: %s\n", file, line, ncclGetErrorString(status));
        exit(1);
    }
}
#define ncclCheck(call) nccl_check((call), __FILE__, __LINE__)

#ifdef USE_MPI
static void mpi_check(int status, const char* file, int line) {
    if (status != MPI_SUCCESS) {
        char message[MPI_MAX_ERROR_STRING];
        int length = 0;
        MPI_Error_string(status, message, &length);
        fprintf(stderr, "error: MPI at %s:%d: %s\n", file, line, message);
        exit(1);
    }
}
#define mpiCheck(call) mpi_check((call), __FILE__, __LINE__)
#endif
#endif  // MULTI_GPU

// How long a rank waits for the others to exchange the NCCL id before giving up with an error.
#define MULTI_GPU_JOIN_TIMEOUT_S 300.0

typedef struct {
    ProcessGroupConfig pg;
    int num_processes, process_rank;
    int zero_stage;
    int use_nccl;  // 1 when a communicator exists (several ranks, or one rank with an explicit -pi)
    int used_mpi;
#ifdef MULTI_GPU
    ncclComm_t comm;
#endif
    float* scratch;  // (1) device float for scalar reductions
} MultiGpu;

static int multi_gpu_built_with_nccl(void) {
#ifdef MULTI_GPU
    return 1;
#else
    return 0;
#endif
}

// Picks this rank's GPU and builds the communicator. Call before any other CUDA work of the process.
static void multi_gpu_init(MultiGpu* mg, const ProcessGroupConfig* pg, int zero_stage) {
    memset(mg, 0, sizeof(*mg));
    mg->pg = *pg;
    mg->num_processes = pg->num_processes;
    mg->process_rank = pg->process_rank;
    mg->zero_stage = pg->num_processes > 1 ? zero_stage : 0;
    mg->use_nccl = pg->init_method[0] != '\0';
    int device_count = 0;
    cudaCheck(cudaGetDeviceCount(&device_count));
    if (pg->local_rank >= device_count) {
        fprintf(stderr, "error: rank %d wants GPU %d of its node, which has %d\n", pg->process_rank, pg->local_rank,
                device_count);
        exit(1);
    }
    cudaCheck(cudaSetDevice(pg->local_rank));
    cudaCheck(cudaMalloc(&mg->scratch, sizeof(float)));
    if (!mg->use_nccl) { return; }
#ifdef MULTI_GPU
    ncclUniqueId id;
    memset(&id, 0, sizeof(id));
    if (mg->process_rank == 0) { ncclCheck(ncclGetUniqueId(&id)); }
    char err[512];
    if (strcmp(pg->init_method, "mpi") == 0) {
#ifdef USE_MPI
        mpiCheck(MPI_Init(NULL, NULL));
        int mpi_rank = 0, mpi_size = 0;
        mpiCheck(MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank));
        mpiCheck(MPI_Comm_size(MPI_COMM_WORLD, &mpi_size));
        if (mpi_rank != mg->process_rank || mpi_size != mg->num_processes) {
            fprintf(stderr, "error: MPI says rank %d of %d, the environment said %d of %d\n", mpi_rank, mpi_size,
                    mg->process_rank, mg->num_processes);
            exit(1);
        }
        mpiCheck(MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD));
        mg->used_mpi = 1;
#else
        fprintf(stderr, "error: launched by mpirun but built without MPI (make found no mpicc, or NO_USE_MPI=1): "
                        "add -pi fs -pf shared/folder or -pi tcp -ps rank0_address\n");
        exit(1);
#endif
    } else if (strcmp(pg->init_method, "fs") == 0) {
        if (exchange_id_fs(&id, sizeof(id), pg, MULTI_GPU_JOIN_TIMEOUT_S, err, sizeof(err))) {
            fprintf(stderr, "error: %s\n", err);
            exit(1);
        }
    } else if (exchange_id_tcp(&id, sizeof(id), pg, MULTI_GPU_JOIN_TIMEOUT_S, err, sizeof(err))) {
        fprintf(stderr, "error: %s\n", err);
        exit(1);
    }
    ncclCheck(ncclCommInitRank(&mg->comm, mg->num_processes, id, mg->process_rank));
    if (strcmp(pg->init_method, "fs") == 0) {
        // every rank has read the id once all have joined: one all-reduce, then rank 0 removes the file
        cudaCheck(cudaMemset(mg->scratch, 0, sizeof(float)));
        ncclCheck(ncclAllReduce(mg->scratch, mg->scratch, 1, ncclFloat, ncclSum, mg->comm, 0));
        cudaCheck(cudaDeviceSynchronize());
        exchange_id_fs_cleanup(pg);
    }
#else
    fprintf(stderr, "error: %d processes (-pi %s) need NCCL, and this build has none (make found no nccl.h: set "
                    "NCCL_HOME or pip install nvidia-nccl-cu13, then rebuild)\n", pg->num_processes, pg->init_method);
    exit(1);
#endif
}

static void multi_gpu_free(MultiGpu* mg) {
    cudaCheck(cudaFree(mg->scratch));
#ifdef MULTI_GPU
    if (mg->use_nccl) { ncclCheck(ncclCommDestroy(mg->comm)); }
#ifdef USE_MPI
    if (mg->used_mpi) { MPI_Finalize(); }
#endif
#endif
}

// Dies unless every rank passes the same value: the sizes every collective relies on (parameter count, FP8 slots)
// are checked once at start-up, so a mismatch is one clear line instead of a hang inside NCCL.
static void multi_gpu_check_same(MultiGpu* mg, long long value, const char* what) {
    if (!mg->use_nccl) { return; }
#ifdef MULTI_GPU
    long long* values = NULL;  // (num_processes) on the device
    cudaCheck(cudaMalloc(&values, (size_t)mg->num_processes * sizeof(long long)));
    long long* mine = NULL;
    cudaCheck(cudaMalloc(&mine, sizeof(long long)));
    cudaCheck(cudaMemcpy(mine, &value, sizeof(value), cudaMemcpyHostToDevice));
    ncclCheck(ncclAllGather(mine, values, 1, ncclInt64, mg->comm, 0));
    long long* host = (long long*)malloc((size_t)mg->num_processes * sizeof(long long));
    cudaCheck(cudaMemcpy(host, values, (size_t)mg->num_processes * sizeof(long long), cudaMemcpyDeviceToHost));
    for (int r = 0; r < mg->num_processes; r++) {
        if (host[r] != value) {
            fprintf(stderr, "error: rank %d has %s = %lld, rank %d has %lld: every rank must run the same model and flags\n",
                    mg->process_rank, what, value, r, host[r]);
            exit(1);
        }
    }
    free(host);
    cudaCheck(cudaFree(mine));
    cudaCheck(cudaFree(values));
#else
    (void)value;
    (void)what;
#endif
}

// Sums the range [lo, lo + n) of the fp32 gradient buffer over the ranks, leaving each sum where the optimizer reads
// it: with ZeRO-1 on the rank that owns the element (one ncclReduce to each owner of a part of the range: together
// the traffic of a reduce-scatter), with ZeRO-0 on every rank (all-reduce). The backward calls this per layer as soon
// as the layer's gradients are final, on the communication stream, between multi_gpu_group_begin/end.
static void multi_gpu_reduce_range(MultiGpu* mg, float* grads, size_t lo, size_t n, size_t num_parameters,
                                   cudaStream_t stream) {
    if (!mg->use_nccl || n == 0) { return; }
#ifdef MULTI_GPU
    if (mg->zero_stage == 1) {
        for (int owner = 0; owner < mg->num_processes; owner++) {
            ZeroShard shard = zero_shard(num_parameters, mg->num_processes, owner, 1);
            size_t a, b;
            if (zero_shard_overlap(&shard, lo, n, &a, &b)) {
                ncclCheck(ncclReduce(grads + a, grads + a, b - a, ncclFloat, ncclSum, owner, mg->comm, stream));
            }
        }
    } else {
        ncclCheck(ncclAllReduce(grads + lo, grads + lo, n, ncclFloat, ncclSum, mg->comm, stream));
    }
#else
    (void)grads;
    (void)lo;
    (void)num_parameters;
    (void)stream;
#endif
}

// NCCL calls between these two are launched as one (fewer launches, no ordering deadlock between ranks).
static void multi_gpu_group_begin(MultiGpu* mg) {
#ifdef MULTI_GPU
    if (mg->use_nccl) { ncclCheck(ncclGroupStart()); }
#else
    (void)mg;
#endif
}
static void multi_gpu_group_end(MultiGpu* mg) {
#ifdef MULTI_GPU
    if (mg->use_nccl) { ncclCheck(ncclGroupEnd()); }
#else
    (void)mg;
#endif
}

// Sum a device float over the ranks, in place.
static void multi_gpu_sum_scalar(MultiGpu* mg, float* value, cudaStream_t stream) {
    if (!mg->use_nccl) { return; }
#ifdef MULTI_GPU
    ncclCheck(ncclAllReduce(value, value, 1, ncclFloat, ncclSum, mg->comm, stream));
#else
    (void)value;
    (void)stream;
#endif
}

// The mean over the ranks of a host value (losses for the log line): through the scratch float.
static float multi_gpu_mean(MultiGpu* mg, float value, cudaStream_t stream) {
    if (!mg->use_nccl || mg->num_processes == 1) { return value; }
    cudaCheck(cudaMemcpyAsync(mg->scratch, &value, sizeof(float), cudaMemcpyHostToDevice, stream));
    multi_gpu_sum_scalar(mg, mg->scratch, stream);
    float sum = 0.0f;
    cudaCheck(cudaMemcpyAsync(&sum, mg->scratch, sizeof(float), cudaMemcpyDeviceToHost, stream));
    cudaCheck(cudaStreamSynchronize(stream));
    return sum / (float)mg->num_processes;
}

// The FP8 amax all-reduce: row 0 of every slot (num_slots floats, contiguous), MAX over the float bits as int32.
static void multi_gpu_amax_allreduce(MultiGpu* mg, float* amax_row0, int num_slots, cudaStream_t stream) {
    if (!mg->use_nccl) { return; }
#ifdef MULTI_GPU
    ncclCheck(ncclAllReduce(amax_row0, amax_row0, (size_t)num_slots, ncclInt32, ncclMax, mg->comm, stream));
#else
    (void)amax_row0;
    (void)num_slots;
    (void)stream;
#endif
}

// ZeRO-1: every rank's updated bf16 shard to every rank, in place in the padded parameter buffer.
static void multi_gpu_gather_params(MultiGpu* mg, __nv_bfloat16* params, const ZeroShard* shard, cudaStream_t stream) {
    if (!mg->use_nccl || mg->zero_stage != 1) { return; }
#ifdef MULTI_GPU
    ncclCheck(ncclAllGather(params + shard->offset, params, shard->shard_size, ncclBfloat16, mg->comm, stream));
#else
    (void)params;
    (void)shard;
    (void)stream;
#endif
}

// ZeRO-1 checkpoints: the fp32 master shards of all ranks into `full` (padded), for the one model file.
static void multi_gpu_gather_masters(MultiGpu* mg, float* full, const float* shard_master, const ZeroShard* shard,
                                     cudaStream_t stream) {
    if (!mg->use_nccl || mg->zero_stage != 1) {
        cudaCheck(cudaMemcpyAsync(full, shard_master, shard->count * sizeof(float), cudaMemcpyDeviceToDevice, stream));
        return;
    }
#ifdef MULTI_GPU
    // the padding of a shard is never written by AdamW; send whatever it holds, the model file ignores it
    ncclCheck(ncclAllGather(shard_master, full, shard->shard_size, ncclFloat, mg->comm, stream));
#endif
}

// Every rank waits for every other (checkpoint files are complete before rank 0 marks them DONE).
static void multi_gpu_barrier(MultiGpu* mg) {
    if (!mg->use_nccl) { return; }
    cudaCheck(cudaMemset(mg->scratch, 0, sizeof(float)));
    multi_gpu_sum_scalar(mg, mg->scratch, 0);
    cudaCheck(cudaDeviceSynchronize());
}

#endif  // GPTFP8_MULTI_GPU_CUH
