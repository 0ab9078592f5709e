/*
dev/cuda/emulate/test_cuda_emulation.cu — the CPU emulation of CUDA (cuda_emulation.h) on small kernels whose results
are known, so that a dev/cuda check passing under it means something: every thread and block index of a 3D launch;
each warp collective's values; a __syncthreads that orders a write before another warp's read (and, without it, the
read seeing the shared memory's 0xFF in either thread order: what makes a missing barrier show in a dev check);
cp.async's destination 0xFF until the issuing thread's wait, and its zero fill; kernel arguments copied per thread; a
launch refused for its configuration or for dynamic shared memory its kernel was not allowed; and, in a child process,
one error line and exit 1 for a deadlock, a barrier after some threads exited, and a collective missing a lane.
Built like the emulated dev/cuda checks (make dev/cuda/emulate/test_cuda_emulation), run by test_emulated.sh.
*/
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

static void run_divergent_barrier(void* out) { divergent_barrier_kernel<<<1, 64>>>((uint32_t*)out); }
static void run_barrier_after_exit(void*) { barrier_after_exit_kernel<<<1, 64>>>(); }
static void run_collective_missing_lane(void* out) { collective_missing_lane_kernel<<<1, 32>>>((uint32_t*)out); }
static void run_collective_mismatch(void* out) { collective_mismatch_kernel<<<1, 32>>>((uint32_t*)out); }

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
    RUN_TEST(test_stops);
    return test_summary("test_cuda_emulation");
}
