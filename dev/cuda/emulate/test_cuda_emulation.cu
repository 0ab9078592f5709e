/*
dev/cuda/emulate/test_cuda_emulation.cu — the CPU emulation of CUDA (cuda_emulation.h) on small kernels whose results
are known, so that a dev/cuda check passing under it means something: every thread and block index of a 3D launch;
each warp collective's values; a __syncthreads that orders a write before another warp's read (and, without it, the
read seeing the shared memory's 0xFF in either thread order: what makes a missing barrier show in a dev check);
cp.async's destination 0xFF until the issuing thread's wait, and its zero fill; kernel arguments copied per thread; a
launch refused for its configuration or for dynamic shared memory its kernel was not allowed; the queue (work runs
when the host waits for it: pinned memory read then, pageable memory when queued, the arguments of the launch, an
event's synchronize running up to its record, a stream that is not ready until then); graph capture and replay, and
the waits and legacy-stream work that fail a capture; the emulated cuBLASLt and cuBLAS GEMMs (cublas_emulation.h)
against sums in double, and the problems they refuse as Hopper's cuBLASLt does; and, in a child process, one error
line and exit 1 for a deadlock, a barrier after some threads exited, and a collective missing a lane.
Built like the emulated dev/cuda checks (make dev/cuda/emulate/test_cuda_emulation), run by test_emulated.sh.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../../../llmc/testing.h"

// ----------------------------------------------------------------------------
// indices

__global__ void index_kernel(uint32_t* out) {
    uint32_t block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    uint32_t thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    uint32_t* cell = out + 4 * (block * blockDim.x * blockDim.y * blockDim.z + thread);
    cell[0] = block;
    cell[1] = threadIdx.x;
    cell[2] = threadIdx.y;
    cell[3] = threadIdx.z;
}

static void test_indices(void) {
    const dim3 grid(2, 3, 2), block(4, 2, 3);
    const uint32_t threads = 2 * 3 * 2 * 4 * 2 * 3;
    uint32_t* d_out;
    cudaMalloc((void**)&d_out, threads * 4 * sizeof(uint32_t));
    index_kernel<<<grid, block>>>(d_out);
    CHECK(cudaGetLastError() == cudaSuccess, "the launch failed");
    uint32_t out[threads * 4];
    cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost);
    int bad = 0;
    for (uint32_t i = 0; i < threads; i++) {
        uint32_t b = i / 24, t = i % 24;
        bad += out[4 * i] != b || out[4 * i + 1] != t % 4 || out[4 * i + 2] != t / 4 % 2 || out[4 * i + 3] != t / 8;
    }
    CHECK(bad == 0, "%d of %u threads wrote other indices", bad, threads);
    cudaFree(d_out);
}

// ----------------------------------------------------------------------------
// warp collectives: a block of 64 (two warps), each lane's results in out[8 * thread + k]

__global__ void warp_kernel(uint32_t* out) {
    const uint32_t t = threadIdx.x, v = (t * 37u + 11u) % 101u;
    uint32_t* o = out + 8 * t;
    o[0] = __shfl_xor_sync(0xFFFFFFFFu, v, 5);
    o[1] = __shfl_sync(0xFFFFFFFFu, v, 7);
    o[2] = __shfl_down_sync(0xFFFFFFFFu, v, 3);
    o[3] = __shfl_up_sync(0xFFFFFFFFu, v, 2);
    o[4] = __reduce_max_sync(0xFFFFFFFFu, v);
    o[5] = __reduce_min_sync(0xFFFFFFFFu, v);
    o[6] = __reduce_add_sync(0xFFFFFFFFu, v);
    o[7] = __ballot_sync(0xFFFFFFFFu, v % 3 == 0);
    float f = __shfl_xor_sync(0xFFFFFFFFu, (float)v * 0.5f, 16);  // a float through the same path
    if (f != (float)((((t ^ 16u) * 37u + 11u) % 101u)) * 0.5f) { o[0] = 0xDEADu; }
}

static void test_warp_collectives(void) {
    uint32_t* d_out;
    cudaMalloc((void**)&d_out, 64 * 8 * sizeof(uint32_t));
    warp_kernel<<<1, 64>>>(d_out);
    uint32_t out[64 * 8];
    cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost);
    uint32_t v[64];
    for (uint32_t t = 0; t < 64; t++) { v[t] = (t * 37u + 11u) % 101u; }
    int bad = 0;
    for (uint32_t t = 0; t < 64; t++) {
        uint32_t w = t & ~31u, lane = t & 31u, mx = 0, mn = 0xFFFFFFFFu, sum = 0, ballot = 0;
        for (uint32_t l = 0; l < 32; l++) {
            mx = v[w + l] > mx ? v[w + l] : mx;
            mn = v[w + l] < mn ? v[w + l] : mn;
            sum += v[w + l];
            ballot |= (uint32_t)(v[w + l] % 3 == 0) << l;
        }
        uint32_t want[8] = {v[w + (lane ^ 5)], v[w + 7], lane + 3 < 32 ? v[t + 3] : v[t], lane >= 2 ? v[t - 2] : v[t],
                            mx, mn, sum, ballot};
        for (int k = 0; k < 8; k++) {
            if (out[8 * t + k] != want[k] && bad++ < 5) {
                fprintf(stderr, "  thread %u result %d: %u, want %u\n", t, k, out[8 * t + k], want[k]);
            }
        }
    }
    CHECK(bad == 0, "%d warp collective results differ", bad);
    cudaFree(d_out);
}

// ----------------------------------------------------------------------------
// barriers: each thread writes its cell, then reads the cell of a thread of the next warp

__global__ void rotate_kernel(uint32_t* out, int with_barrier) {
    __shared__ uint32_t cell[256];
    cell[threadIdx.x] = threadIdx.x * 10u + 1u;
    if (with_barrier) { __syncthreads(); }
    out[threadIdx.x] = cell[(threadIdx.x + 32u) % 256u];
}

static void rotate(uint32_t* out, int with_barrier) {
    uint32_t* d_out;
    cudaMalloc((void**)&d_out, 256 * sizeof(uint32_t));
    for (int launch = 0; launch < 2; launch++) {  // the second: the block's cells hold the first launch's values
        rotate_kernel<<<1, 256>>>(d_out, with_barrier);
    }
    cudaMemcpy(out, d_out, 256 * sizeof(uint32_t), cudaMemcpyDeviceToHost);
    cudaFree(d_out);
}

static void test_barrier_orders_warps(void) {
    uint32_t out[256];
    rotate(out, 1);
    int bad = 0;
    for (uint32_t t = 0; t < 256; t++) { bad += out[t] != (t + 32u) % 256u * 10u + 1u; }
    CHECK(bad == 0, "%d threads read another value than the one written before the barrier", bad);
}

// Without the barrier a warp reads the next warp's cell before that warp has run, if it runs first. In CUDA that is a
// race (any result); here warps run in order between barriers, so forward every warp but the last reads 0xFF (the
// cells are filled with it when the block's first thread declares them, whatever an earlier launch left), and in
// reverse order only the first to run, the last warp, whose next warp is warp 0.
static void test_missing_barrier_shows(void) {
    const char* order = getenv("CUDA_EMULATION_ORDER");
    const int reverse = order && strcmp(order, "reverse") == 0;
    uint32_t out[256];
    rotate(out, 0);
    int bad = 0;
    for (uint32_t t = 0; t < 256; t++) {
        const int stale = reverse ? t >= 224u : t < 224u;
        bad += out[t] != (stale ? 0xFFFFFFFFu : (t + 32u) % 256u * 10u + 1u);
    }
    CHECK(bad == 0, "%d of 256 threads read otherwise than a missing barrier reads here (order %s)", bad,
          reverse ? "reverse" : "forward");
}

// ----------------------------------------------------------------------------
// cp.async: before the wait the destination holds 0xFF; after it the source (or zeros, for an invalid source)

__global__ void cp_async_kernel(const uint32_t* src, uint32_t* out) {
    extern __shared__ __align__(16) uint32_t landing[];
    uint32_t* mine = landing + 8 * threadIdx.x;
    cuda_emulation_cp_async16(mine, src + 4 * threadIdx.x, true);
    cuda_emulation_cp_async_commit();
    cuda_emulation_cp_async16(mine + 4, src, false);
    cuda_emulation_cp_async_commit();
    out[3 * threadIdx.x] = mine[0];  // before any wait
    cuda_emulation_cp_async_wait_group(1);
    out[3 * threadIdx.x + 1] = mine[1] ^ mine[4];  // the first group landed, the second not yet
    cuda_emulation_cp_async_wait_group(0);
    out[3 * threadIdx.x + 2] = mine[2] + mine[5];  // both landed, the second as zeros
}

static void test_cp_async_lands_at_wait(void) {
    uint32_t src[4 * 32], out[3 * 32];
    for (int i = 0; i < 4 * 32; i++) { src[i] = 1000u + (uint32_t)i; }
    uint32_t *d_src, *d_out;
    cudaMalloc((void**)&d_src, sizeof(src));
    cudaMalloc((void**)&d_out, sizeof(out));
    cudaMemcpy(d_src, src, sizeof(src), cudaMemcpyHostToDevice);
    cp_async_kernel<<<1, 32, 32 * 8 * sizeof(uint32_t)>>>(d_src, d_out);
    CHECK(cudaGetLastError() == cudaSuccess, "the launch failed");
    cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost);
    int bad = 0;
    for (uint32_t t = 0; t < 32; t++) {
        bad += out[3 * t] != 0xFFFFFFFFu || out[3 * t + 1] != (src[4 * t + 1] ^ 0xFFFFFFFFu) ||
               out[3 * t + 2] != src[4 * t + 2];
    }
    CHECK(bad == 0, "%d threads saw their copies land at another time", bad);
    cudaFree(d_src);
    cudaFree(d_out);
}

// ----------------------------------------------------------------------------
// arguments and launches

__global__ void argument_kernel(uint32_t* out, uint32_t base) {
    if (threadIdx.x == 0) { base += 100u; }  // this thread's copy only
    __syncthreads();
    out[threadIdx.x] = base + threadIdx.x;
}

static void test_arguments_per_thread(void) {
    uint32_t* d_out;
    cudaMalloc((void**)&d_out, 64 * sizeof(uint32_t));
    uint32_t base = 7u;
    argument_kernel<<<1, 64>>>(d_out, base);
    base = 1000u;  // after the launch: no effect on it
    uint32_t out[64];
    cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost);
    int bad = out[0] != 107u;
    for (uint32_t t = 1; t < 64; t++) { bad += out[t] != 7u + t; }
    CHECK(bad == 0, "%d threads saw another argument", bad);
    cudaFree(d_out);
}

__global__ void smem_kernel(uint32_t* out) {
    extern __shared__ uint32_t big[];
    big[threadIdx.x] = threadIdx.x;
    __syncthreads();
    out[threadIdx.x] = big[31u - threadIdx.x];
}

static void test_launch_refusals(void) {
    uint32_t* d_out;
    cudaMalloc((void**)&d_out, 32 * sizeof(uint32_t));
    CHECK(cudaGetLastError() == cudaSuccess, "an error left behind");
    index_kernel<<<1, 1025>>>(d_out);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration, "1025 threads a block launched");
    index_kernel<<<dim3(1, 65536, 1), 1>>>(d_out);
    CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration, "a grid of 65536 in y launched");
    const int bytes = 100 * 1024;
    smem_kernel<<<1, 32, bytes>>>(d_out);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue, "100 KB of dynamic shared memory without the attribute");
    CHECK(cudaFuncSetAttribute(smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) == cudaSuccess,
          "the attribute refused");
    cudaMemset(d_out, 0, 32 * sizeof(uint32_t));
    smem_kernel<<<1, 32, bytes>>>(d_out);
    CHECK(cudaGetLastError() == cudaSuccess, "100 KB refused after the attribute allowed it");
    uint32_t out[32];
    cudaMemcpy(out, d_out, sizeof(out), cudaMemcpyDeviceToHost);
    CHECK(out[0] == 31u && out[31] == 0u, "the kernel did not run: %u %u", out[0], out[31]);
    CHECK(cudaFuncSetAttribute(smem_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 300 * 1024) ==
              cudaErrorInvalidValue, "300 KB allowed");
    cudaGetLastError();
    cudaFree(d_out);
}

// ----------------------------------------------------------------------------
// the queue: work runs when the host waits for it

__global__ void store_kernel(uint32_t* out, uint32_t value) { out[threadIdx.x] = value; }

typedef struct {
    uint32_t* target;
} Holder;

static void test_queue_runs_when_host_waits(void) {
    cudaStream_t s;
    cudaStreamCreate(&s);
    uint32_t *d, *pinned, pageable[4] = {1, 1, 1, 1}, out[8];
    cudaMalloc((void**)&d, 8 * sizeof(uint32_t));
    cudaMallocHost((void**)&pinned, 4 * sizeof(uint32_t));
    for (int i = 0; i < 4; i++) { pinned[i] = 1; }
    cudaMemcpyAsync(d, pinned, 4 * sizeof(uint32_t), cudaMemcpyHostToDevice, s);
    cudaMemcpyAsync(d + 4, pageable, 4 * sizeof(uint32_t), cudaMemcpyHostToDevice, s);
    CHECK(cudaStreamQuery(s) == cudaErrorNotReady, "a stream with copies queued is ready");
    for (int i = 0; i < 4; i++) { pinned[i] = pageable[i] = 2; }  // after the calls, before the host waits
    cudaStreamSynchronize(s);
    CHECK(cudaStreamQuery(s) == cudaSuccess, "a synchronized stream is not ready");
    cudaMemcpy(out, d, sizeof(out), cudaMemcpyDeviceToHost);
    CHECK(out[0] == 2 && out[3] == 2, "a queued copy from pinned memory read it at the call: %u", out[0]);
    CHECK(out[4] == 1 && out[7] == 1, "a queued copy from pageable memory read it when it ran: %u", out[4]);

    // a kernel's arguments are evaluated at its launch; an event's synchronize runs the queue up to its record
    Holder holder = {d};
    cudaEvent_t e;
    cudaEventCreate(&e);
    store_kernel<<<1, 4, 0, s>>>(holder.target, 7u);
    cudaEventRecord(e, s);
    holder.target = d + 4;
    store_kernel<<<1, 4, 0, s>>>(holder.target, 9u);
    holder.target = NULL;
    cudaEventSynchronize(e);
    CHECK(d[0] == 7 && d[4] == 1, "after the event's synchronize: %u (want 7) and %u (want 1: not run yet)", d[0],
          d[4]);
    CHECK(cudaStreamQuery(s) == cudaErrorNotReady, "the second kernel ran with the event's synchronize");
    cudaDeviceSynchronize();
    CHECK(d[4] == 9 && d[0] == 7, "the second kernel wrote %u at d + 4 (its launch's pointer), d[0] %u", d[4], d[0]);
    cudaEventDestroy(e);
    cudaFreeHost(pinned);
    cudaFree(d);
    cudaStreamDestroy(s);
    CHECK(cudaGetLastError() == cudaSuccess, "an error on the way");
}

static void test_graph_capture_and_replay(void) {
    cudaStream_t s;
    cudaStreamCreate(&s);
    uint32_t* d;
    cudaMalloc((void**)&d, 8 * sizeof(uint32_t));
    cudaMemset(d, 0, 8 * sizeof(uint32_t));
    cudaDeviceSynchronize();
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    cudaStreamCaptureStatus status;
    CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal) == cudaSuccess, "no capture");
    store_kernel<<<1, 4, 0, s>>>(d, 3u);
    cudaMemsetAsync(d + 4, 0x11, 4 * sizeof(uint32_t), s);
    cudaStreamIsCapturing(s, &status);
    CHECK(status == cudaStreamCaptureStatusActive, "the stream is not capturing: %d", (int)status);
    CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess && graph, "the capture did not end with a graph");
    CHECK(d[0] == 0 && d[4] == 0, "captured work ran: %u %u", d[0], d[4]);
    cudaGraphInstantiate(&exec, graph, 0);
    cudaMemset(d, 0, 8 * sizeof(uint32_t));
    cudaGraphLaunch(exec, s);
    CHECK(d[0] == 0, "a graph's launch ran before the host waited");
    cudaStreamSynchronize(s);
    CHECK(d[0] == 3 && d[7] == 0x11111111u, "the replay wrote %u and %x", d[0], d[7]);
    cudaGraphExecDestroy(exec);
    cudaGraphDestroy(graph);

    // a wait, or work on the legacy stream, inside a capture fails it (CUDA's global mode)
    for (int legacy = 0; legacy < 2; legacy++) {
        cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
        store_kernel<<<1, 4, 0, s>>>(d, 5u);
        cudaError_t e = legacy ? cudaMemsetAsync(d, 0, 4, 0) : cudaStreamSynchronize(s);
        CHECK(e == (legacy ? cudaErrorStreamCaptureImplicit : cudaErrorStreamCaptureUnsupported),
              "%s inside a capture: %s", legacy ? "the legacy stream" : "a synchronize", cudaGetErrorName(e));
        cudaStreamIsCapturing(s, &status);
        CHECK(status == cudaStreamCaptureStatusInvalidated, "the capture is not invalidated: %d", (int)status);
        graph = NULL;
        CHECK(cudaStreamEndCapture(s, &graph) == cudaErrorStreamCaptureInvalidated && !graph,
              "an invalidated capture ended with a graph");
        (void)cudaGetLastError();
    }
    cudaDeviceSynchronize();
    CHECK(d[0] == 3, "work of a failed capture ran: %u", d[0]);
    cudaFree(d);
    cudaStreamDestroy(s);
}

// ----------------------------------------------------------------------------
// the emulated cuBLASLt and cuBLAS

static float gemm_test_value(int i, int salt) { return (float)((i * 7 + salt * 13) % 23 - 11) / 8.0f; }

// An FP8 TN GEMM with scalar scales, a bias and beta 1, and a block-scaled one, against sums in double (the
// products of E4M3 values and power-of-two scales are exact; float sums of at most 256 of them, bound 256 ulps).
static void test_cublaslt_gemm(void) {
    const int m = 32, n = 16, k = 256;
    uint8_t *a, *b;
    __nv_bfloat16 *bias, *d;
    float *scales, *block_a, *block_b;
    cudaMalloc((void**)&a, m * k);
    cudaMalloc((void**)&b, n * k);
    cudaMalloc((void**)&bias, m * sizeof(__nv_bfloat16));
    cudaMalloc((void**)&d, m * n * sizeof(__nv_bfloat16));
    cudaMalloc((void**)&scales, 8 * sizeof(float));
    cudaMalloc((void**)&block_a, 2 * 4 * sizeof(float));  // BLK128x128: (ceil(m / 128), round_up(k / 128, 4))
    cudaMalloc((void**)&block_b, 2 * n * sizeof(float));  // VEC128: (k / 128, round_up(n, 4))
    for (int i = 0; i < m * k; i++) { a[i] = __nv_fp8_e4m3(gemm_test_value(i, 1)).__x; }
    for (int i = 0; i < n * k; i++) { b[i] = __nv_fp8_e4m3(gemm_test_value(i, 2)).__x; }
    for (int i = 0; i < m; i++) { bias[i] = __float2bfloat16(gemm_test_value(i, 3)); }
    for (int i = 0; i < m * n; i++) { d[i] = __float2bfloat16(1.0f); }
    scales[0] = 0.5f;
    scales[4] = 4.0f;
    for (int i = 0; i < 8; i++) { block_a[i] = i % 4 == 0 ? 2.0f : i % 4 == 1 ? 0.25f : NAN; }
    for (int i = 0; i < 2 * n; i++) { block_b[i] = i < n ? 1.0f : 8.0f; }
    cublasLtHandle_t handle;
    cublasLtCreate(&handle);
    for (int blocks = 0; blocks < 2; blocks++) {
        cublasLtMatmulDesc_t desc;
        cublasLtMatrixLayout_t la, lb, ld;
        cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
        cublasOperation_t t = CUBLAS_OP_T, nt = CUBLAS_OP_N;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t));
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &nt, sizeof(nt));
        const float* sa = blocks ? block_a : scales;
        const float* sb = blocks ? block_b : scales + 4;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof(sa));
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb, sizeof(sb));
        if (blocks) {
            int32_t mode_a = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
            int32_t mode_b = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode_a, sizeof(mode_a));
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode_b, sizeof(mode_b));
        } else {
            cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue));
            cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
        }
        cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, m, k);
        cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, n, k);
        cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, m, n, m);
        cublasLtMatmulHeuristicResult_t results[8];
        int found = 0;
        cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, ld, ld, NULL, 8, results, &found);
        CHECK(found == 4, "the heuristic answered %d algorithms (want 4)", found);
        const float alpha = 1.0f, beta = blocks ? 0.0f : 1.0f;
        cublasStatus_t st = cublasLtMatmul(handle, desc, &alpha, a, la, b, lb, &beta, d, ld, d, ld, &results[1].algo,
                                           NULL, 0, 0);
        CHECK(st == CUBLAS_STATUS_SUCCESS, "the GEMM was refused: %s", cublasGetStatusName(st));
        cudaDeviceSynchronize();
        double worst = 0.0;
        for (int j = 0; j < n; j++) {
            for (int i = 0; i < m; i++) {
                double sum = 0.0, bound = 0.0;
                for (int kk = 0; kk < k; kk++) {
                    double p = (double)(float)__nv_fp8_e4m3(gemm_test_value(i * k + kk, 1)) *
                               (double)(float)__nv_fp8_e4m3(gemm_test_value(j * k + kk, 2));
                    if (blocks) { p *= (kk < 128 ? 2.0 : 0.25) * (kk < 128 ? 1.0 : 8.0); }
                    sum += p;
                    bound += fabs(p);
                }
                double want = blocks ? sum : 0.5 * 4.0 * sum + 1.0 + (double)__bfloat162float(bias[i]);
                double tol = (blocks ? 1.0 : 2.0) * bound * 256.0 * 0x1p-24 + fabs(want) * 0x1p-8 + 1e-6;
                double err = fabs((double)__bfloat162float(d[i + j * m]) - want);
                worst = err / tol > worst ? err / tol : worst;
            }
        }
        CHECK(worst <= 1.0, "%s GEMM: worst error %.3g of its bound", blocks ? "block-scaled" : "scalar-scaled", worst);
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(ld);
        cublasLtMatmulDescDestroy(desc);
    }

    // what Hopper's cuBLASLt refuses: FP8 not TN; an FP8 scale pointer not 16-byte aligned
    for (int refusal = 0; refusal < 2; refusal++) {
        cublasLtMatmulDesc_t desc;
        cublasLtMatrixLayout_t la, lb, ld;
        cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
        cublasOperation_t op_a = refusal == 0 ? CUBLAS_OP_N : CUBLAS_OP_T;
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof(op_a));
        const float* sa = scales + (refusal == 1 ? 1 : 0);
        cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa, sizeof(sa));
        if (refusal == 0) {
            cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, m, k, m);
        } else {
            cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, k, m, k);
        }
        cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, k, n, k);
        cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, m, n, m);
        cublasLtMatmulHeuristicResult_t result;
        int found = 0;
        cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, ld, ld, NULL, 1, &result, &found);
        cublasLtMatmulAlgo_t algo = result.algo;
        if (found == 0) { algo.data[0] = 0; }
        const float alpha = 1.0f, beta = 0.0f;
        cublasStatus_t st = cublasLtMatmul(handle, desc, &alpha, a, la, b, lb, &beta, d, ld, d, ld, &algo, NULL, 0, 0);
        CHECK(st == CUBLAS_STATUS_NOT_SUPPORTED && (refusal == 1 || found == 0), "%s: %s, %d algorithms",
              refusal == 0 ? "an FP8 GEMM with A not transposed" : "a scale pointer 4 bytes off 16",
              cublasGetStatusName(st), found);
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(ld);
        cublasLtMatmulDescDestroy(desc);
    }
    cublasLtDestroy(handle);

    // cuBLAS's batched bf16 GEMM, as the plain attention calls it: C (m, n) = A^T (A stored (k, m)) @ B, per batch
    cublasHandle_t blas;
    cublasCreate(&blas);
    __nv_bfloat16 *x, *y, *z;
    const int batch = 3;
    cudaMalloc((void**)&x, batch * m * k * sizeof(__nv_bfloat16));
    cudaMalloc((void**)&y, batch * n * k * sizeof(__nv_bfloat16));
    cudaMalloc((void**)&z, batch * m * n * sizeof(__nv_bfloat16));
    for (int i = 0; i < batch * m * k; i++) { x[i] = __float2bfloat16(gemm_test_value(i, 4)); }
    for (int i = 0; i < batch * n * k; i++) { y[i] = __float2bfloat16(gemm_test_value(i, 5)); }
    const float alpha = 0.5f, beta = 0.0f;
    cublasStatus_t st = cublasGemmStridedBatchedEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, m, n, k, &alpha, x, CUDA_R_16BF, k,
                                                   (long long)m * k, y, CUDA_R_16BF, k, (long long)n * k, &beta, z,
                                                   CUDA_R_16BF, m, (long long)m * n, batch, CUBLAS_COMPUTE_32F,
                                                   CUBLAS_GEMM_DEFAULT);
    CHECK(st == CUBLAS_STATUS_SUCCESS, "the batched GEMM was refused: %s", cublasGetStatusName(st));
    cudaDeviceSynchronize();
    double worst = 0.0;
    for (int e = 0; e < batch; e++) {
        for (int j = 0; j < n; j++) {
            for (int i = 0; i < m; i++) {
                double sum = 0.0, bound = 0.0;
                for (int kk = 0; kk < k; kk++) {
                    double p = (double)__bfloat162float(x[e * m * k + i * k + kk]) *
                               (double)__bfloat162float(y[e * n * k + j * k + kk]);
                    sum += p;
                    bound += fabs(p);
                }
                double err = fabs((double)__bfloat162float(z[e * m * n + i + j * m]) - 0.5 * sum);
                double tol = 0.5 * bound * 256.0 * 0x1p-24 + 0.5 * fabs(sum) * 0x1p-8 + 1e-6;
                worst = err / tol > worst ? err / tol : worst;
            }
        }
    }
    CHECK(worst <= 1.0, "batched GEMM: worst error %.3g of its bound", worst);
    cublasDestroy(blas);
    cudaFree(x);
    cudaFree(y);
    cudaFree(z);
    cudaFree(a);
    cudaFree(b);
    cudaFree(bias);
    cudaFree(d);
    cudaFree(scales);
    cudaFree(block_a);
    cudaFree(block_b);
}

// ----------------------------------------------------------------------------
// what stops the program: one line, exit 1

__global__ void divergent_barrier_kernel(uint32_t* out) {
    uint32_t v = threadIdx.x;
    if (threadIdx.x % 32 < 16) { v = __shfl_xor_sync(0xFFFFFFFFu, v, 1); }  // lanes 16-31 never get there
    __syncthreads();
    out[threadIdx.x % 32] = v;
}
__global__ void barrier_after_exit_kernel(void) {
    if (threadIdx.x >= 32) { return; }
    __syncthreads();
}
__global__ void collective_missing_lane_kernel(uint32_t* out) {
    if (threadIdx.x == 3) { return; }
    out[threadIdx.x] = __shfl_xor_sync(0xFFFFFFFFu, threadIdx.x, 1);
}
__global__ void collective_mismatch_kernel(uint32_t* out) {
    out[threadIdx.x] = threadIdx.x < 16 ? __shfl_xor_sync(0xFFFFFFFFu, threadIdx.x, 1)
                                        : __reduce_max_sync(0xFFFFFFFFu, threadIdx.x);
}

// (each waits for its kernel: a queued kernel runs when the host waits)
static void run_divergent_barrier(void* out) {
    divergent_barrier_kernel<<<1, 64>>>((uint32_t*)out);
    cudaDeviceSynchronize();
}
static void run_barrier_after_exit(void*) {
    barrier_after_exit_kernel<<<1, 64>>>();
    cudaDeviceSynchronize();
}
static void run_collective_missing_lane(void* out) {
    collective_missing_lane_kernel<<<1, 32>>>((uint32_t*)out);
    cudaDeviceSynchronize();
}
static void run_collective_mismatch(void* out) {
    collective_mismatch_kernel<<<1, 32>>>((uint32_t*)out);
    cudaDeviceSynchronize();
}

static void expect_stop(void (*fn)(void*), void* arg, const char* what, const char* want) {
    char err[512];
    int rc = run_captured(fn, arg, err, sizeof(err));
    const char* newline = strchr(err, '\n');
    CHECK(rc == 1 && strstr(err, want) && strstr(err, "cuda emulation: kernel ") && newline && newline[1] == '\0',
          "%s: exit %d, stderr '%s' (want one line with '%s')", what, rc, err, want);
}

static void test_stops(void) {
    uint32_t* d_out;
    cudaMalloc((void**)&d_out, 32 * sizeof(uint32_t));
    expect_stop(run_divergent_barrier, d_out, "half the lanes at a shuffle, half at a barrier", "deadlock");
    expect_stop(run_barrier_after_exit, NULL, "a barrier after half the block exited", "have exited");
    expect_stop(run_collective_missing_lane, d_out, "a full-mask shuffle without lane 3", "a lane that has exited");
    expect_stop(run_collective_mismatch, d_out, "two collectives in one warp", "different warp collectives");
    cudaFree(d_out);
}

int main(int argc, char** argv) {
    test_select(argc, argv);
    RUN_TEST(test_indices);
    RUN_TEST(test_warp_collectives);
    RUN_TEST(test_barrier_orders_warps);
    RUN_TEST(test_missing_barrier_shows);
    RUN_TEST(test_cp_async_lands_at_wait);
    RUN_TEST(test_arguments_per_thread);
    RUN_TEST(test_launch_refusals);
    RUN_TEST(test_queue_runs_when_host_waits);
    RUN_TEST(test_graph_capture_and_replay);
    RUN_TEST(test_cublaslt_gemm);
    RUN_TEST(test_stops);
    return test_summary("test_cuda_emulation");
}
