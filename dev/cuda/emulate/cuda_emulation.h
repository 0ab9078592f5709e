/*
dev/cuda/emulate/cuda_emulation.h — this project's CUDA kernels, their dev/cuda checks and the GPU trainer's test
(test_gpt_fp8, with cublas_emulation.h for its GEMMs) run on the CPU, without a GPU, so that GPU code written in a
session without one is executed, and checked bit for bit against the CPU reference, before a GPU ever runs it.
Included first (g++ -include) into a source that dev/cuda/emulate/rewrite.py has rewritten (its launches
`k<<<...>>>(...)` become cuda_emulation_launch calls; its __shared__ arrays are filled with 0xFF per block).

How the host's calls run: device memory is host memory; work queued on a stream (launches, copies, memsets, event
records, GEMMs) runs when the host waits for it, in the order queued (the queue's comment below says which waits run
what), so a host that reads a result before waiting for it, or changes pinned memory a queued copy has still to read,
gets what it would get on a GPU that is behind. CUDA graphs: a captured stream's work is kept and replayed; a wait
or legacy-stream work during a capture fails it, as CUDA's global capture mode does.

How a launch runs: the grid's blocks one after another; inside a block every CUDA thread is a fiber (its own stack, a
hand-written context switch), run until it reaches a barrier: __syncthreads, a warp collective (__shfl_xor_sync,
__reduce_max_sync, ...) or its end. Warp by warp: a warp runs, its collectives resolved as its lanes reach them, until
every lane waits at __syncthreads or has exited; then the next warp; then the barrier releases them all.
CUDA_EMULATION_ORDER=reverse runs the warps, and the lanes within a warp, last to first.
What this catches: wrong indexing and shapes; a read of what another warp writes before the barrier that orders
them (a warp that runs first sees 0xFF, NaN as bf16 or float: run in both orders, a check fails whichever warp reads
too early); a cp.async destination read before the issuing thread's cp.async.wait_group landed it (0xFF until then);
shared memory read before any thread of the block wrote it; a deadlock, a __syncthreads after some threads exited, a
full-mask warp collective missing a lane (one line, exit 1); a launch over 1024 threads or over the dynamic shared
memory its kernel was allowed (cudaGetLastError, as CUDA reports it); a step that waits for the GPU where it should
only queue (test_gpt_fp8's host gate); a capture that waits.
What it does not: timing (events read the host's clock; the checks skip their benchmarks here); races between
blocks (they run one at a time) and the GPU's memory ordering; the GPU's float contractions (nvcc fuses a * b + c
where the source does not say __fmul_rn; here nothing is fused: bits that depend on a fusion differ); the device's
math library (expf, tanhf, rsqrtf are the host's: a check that compares against another kernel's output is
unaffected, one that compares against the CPU reference's expf may differ by an ulp); streams running side by side
(one queue in issue order is one order a GPU may run them in, not every order); cuBLAS and cuBLASLt's own bits
(cublas_emulation.h computes their GEMMs its own way); cuDNN and NCCL (not emulated: built without them).
*/
#ifndef GPTFP8_CUDA_EMULATION_H
#define GPTFP8_CUDA_EMULATION_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#if !defined(__x86_64__)
#error "dev/cuda/emulate: the fiber switch is written for x86-64"
#endif

#define GPTFP8_CUDA_EMULATION 1

// CUDA's qualifiers as host C++: a block's threads share one copy of a __shared__ variable (a static local; blocks
// run one at a time, so one copy serves them all)
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __shared__
#undef __launch_bounds__
#undef __grid_constant__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)
#define __grid_constant__

// ----------------------------------------------------------------------------
// fibers: one per CUDA thread of the running block

enum { CUDA_EMULATION_READY, CUDA_EMULATION_AT_BARRIER, CUDA_EMULATION_AT_WARP_OP, CUDA_EMULATION_DONE };
enum { CUDA_EMULATION_SHFL_XOR, CUDA_EMULATION_SHFL_IDX, CUDA_EMULATION_SHFL_DOWN, CUDA_EMULATION_SHFL_UP,
       CUDA_EMULATION_REDUCE_MAX, CUDA_EMULATION_REDUCE_MIN, CUDA_EMULATION_REDUCE_ADD, CUDA_EMULATION_BALLOT };

typedef struct {
    void* dst;
    const void* src;
    int bytes;   // 16 copied, or 0: 16 zero bytes written
    int group;   // the commit group it belongs to
} CudaEmulationCopy;

typedef struct {
    void* sp;  // saved stack pointer while switched out
    int state;
    uint3 idx;
    int op_kind, op_arg;
    uint64_t op_value, op_result;
    unsigned op_mask;
    std::vector<CudaEmulationCopy>* copies;  // cp.async in flight
    int groups_committed;
} CudaEmulationFiber;

static CudaEmulationFiber* cuda_emulation_fiber;  // the running thread
static void* cuda_emulation_scheduler_sp;
static const std::function<void()>* cuda_emulation_body;
static dim3 cuda_emulation_block_dim, cuda_emulation_grid_dim;
static uint3 cuda_emulation_block_idx;
static unsigned char* cuda_emulation_smem;  // this block's dynamic shared memory
static const char* cuda_emulation_kernel_name = "";

#define threadIdx (cuda_emulation_fiber->idx)
#define blockIdx cuda_emulation_block_idx
#define blockDim cuda_emulation_block_dim
#define gridDim cuda_emulation_grid_dim
static const int warpSize = 32;

// Saves the callee-saved registers on the current stack, stores the stack pointer in *save, continues on `load`. The
// floating-point control words (MXCSR, x87) are not switched: every fiber shares the thread's, which nothing here
// changes (saving and loading them took three quarters of a switch's time).
extern "C" void cuda_emulation_switch(void** save, void* load);
__asm__(".text\n"
        ".globl cuda_emulation_switch\n"
        ".type cuda_emulation_switch,@function\n"
        "cuda_emulation_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size cuda_emulation_switch, .-cuda_emulation_switch\n");

[[noreturn]] static void cuda_emulation_die(const char* what) {
    fprintf(stderr, "cuda emulation: kernel %s, block (%u, %u, %u): %s\n", cuda_emulation_kernel_name,
            cuda_emulation_block_idx.x, cuda_emulation_block_idx.y, cuda_emulation_block_idx.z, what);
    exit(1);
}

static void cuda_emulation_yield(int state) {
    cuda_emulation_fiber->state = state;
    cuda_emulation_switch(&cuda_emulation_fiber->sp, cuda_emulation_scheduler_sp);
}

// cp.async: the destination reads 0xFF until the issuing thread's wait completes the copy
static void cuda_emulation_complete_copies(CudaEmulationFiber* f, int keep_groups) {
    std::vector<CudaEmulationCopy>& copies = *f->copies;
    size_t kept = 0;
    for (size_t i = 0; i < copies.size(); i++) {
        CudaEmulationCopy c = copies[i];
        if (c.group < f->groups_committed - keep_groups) {
            if (c.bytes) { memcpy(c.dst, c.src, 16); } else { memset(c.dst, 0, 16); }
        } else {
            copies[kept++] = c;
        }
    }
    copies.resize(kept);
}
static inline void cuda_emulation_cp_async16(void* dst, const void* src, bool valid) {
    if (((uintptr_t)dst | (uintptr_t)src) & 15u) { cuda_emulation_die("cp.async of 16 bytes not 16-byte aligned"); }
    memset(dst, 0xFF, 16);
    cuda_emulation_fiber->copies->push_back({dst, src, valid ? 16 : 0, cuda_emulation_fiber->groups_committed});
}
static inline void cuda_emulation_cp_async_commit(void) { cuda_emulation_fiber->groups_committed++; }
static inline void cuda_emulation_cp_async_wait_group(int n) {
    cuda_emulation_complete_copies(cuda_emulation_fiber, n);
}

static void cuda_emulation_fiber_main(void) {
    (*cuda_emulation_body)();
    cuda_emulation_complete_copies(cuda_emulation_fiber, 0);
    cuda_emulation_yield(CUDA_EMULATION_DONE);
    cuda_emulation_die("a finished thread was resumed");
}

static inline void __syncthreads(void) { cuda_emulation_yield(CUDA_EMULATION_AT_BARRIER); }
static inline void __threadfence(void) {}
static inline void* cuda_emulation_dynamic_smem(void) { return cuda_emulation_smem; }

// A __shared__ variable's declaration reached (rewrite.py puts this after it): the block's first thread to get there
// fills it with 0xFF (no thread can have written it before its own declaration ran).
static std::vector<const void*> cuda_emulation_shared_seen;  // this block's
static inline void cuda_emulation_shared(void* p, size_t bytes) {
    for (const void* seen : cuda_emulation_shared_seen) {
        if (seen == p) { return; }
    }
    cuda_emulation_shared_seen.push_back(p);
    memset(p, 0xFF, bytes);
}

template <typename T> static inline uint64_t cuda_emulation_bits(T v) {
    static_assert(sizeof(T) <= 8, "a warp collective of more than 8 bytes");
    uint64_t b = 0;
    memcpy(&b, &v, sizeof(T));
    return b;
}
template <typename T> static inline T cuda_emulation_from_bits(uint64_t b) {
    T v;
    memcpy(&v, &b, sizeof(T));
    return v;
}
static inline uint64_t cuda_emulation_warp_op(int kind, unsigned mask, uint64_t value, int arg) {
    CudaEmulationFiber* f = cuda_emulation_fiber;
    f->op_kind = kind;
    f->op_mask = mask;
    f->op_value = value;
    f->op_arg = arg;
    cuda_emulation_yield(CUDA_EMULATION_AT_WARP_OP);
    return cuda_emulation_fiber->op_result;
}
template <typename T> static inline T __shfl_xor_sync(unsigned mask, T v, int lane_mask, int width = 32) {
    if (width != 32) { cuda_emulation_die("__shfl_xor_sync with width != 32 is not emulated"); }
    return cuda_emulation_from_bits<T>(
        cuda_emulation_warp_op(CUDA_EMULATION_SHFL_XOR, mask, cuda_emulation_bits(v), lane_mask));
}
template <typename T> static inline T __shfl_sync(unsigned mask, T v, int src_lane, int width = 32) {
    if (width != 32) { cuda_emulation_die("__shfl_sync with width != 32 is not emulated"); }
    return cuda_emulation_from_bits<T>(
        cuda_emulation_warp_op(CUDA_EMULATION_SHFL_IDX, mask, cuda_emulation_bits(v), src_lane));
}
template <typename T> static inline T __shfl_down_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    if (width != 32) { cuda_emulation_die("__shfl_down_sync with width != 32 is not emulated"); }
    return cuda_emulation_from_bits<T>(
        cuda_emulation_warp_op(CUDA_EMULATION_SHFL_DOWN, mask, cuda_emulation_bits(v), (int)delta));
}
template <typename T> static inline T __shfl_up_sync(unsigned mask, T v, unsigned delta, int width = 32) {
    if (width != 32) { cuda_emulation_die("__shfl_up_sync with width != 32 is not emulated"); }
    return cuda_emulation_from_bits<T>(
        cuda_emulation_warp_op(CUDA_EMULATION_SHFL_UP, mask, cuda_emulation_bits(v), (int)delta));
}
static inline unsigned __reduce_max_sync(unsigned mask, unsigned v) {
    return (unsigned)cuda_emulation_warp_op(CUDA_EMULATION_REDUCE_MAX, mask, v, 0);
}
static inline unsigned __reduce_min_sync(unsigned mask, unsigned v) {
    return (unsigned)cuda_emulation_warp_op(CUDA_EMULATION_REDUCE_MIN, mask, v, 0);
}
static inline unsigned __reduce_add_sync(unsigned mask, unsigned v) {
    return (unsigned)cuda_emulation_warp_op(CUDA_EMULATION_REDUCE_ADD, mask, v, 0);
}
static inline unsigned __ballot_sync(unsigned mask, int predicate) {
    return (unsigned)cuda_emulation_warp_op(CUDA_EMULATION_BALLOT, mask, predicate != 0, 0);
}

// One warp's collective, once every lane in its mask has reached it: the results, and the lanes ready again.
static void cuda_emulation_resolve_warp(CudaEmulationFiber* lanes, int count) {
    int kind = -1;
    unsigned mask = 0, waiting = 0, exited = 0;
    for (int l = 0; l < count; l++) {
        if (lanes[l].state == CUDA_EMULATION_DONE) { exited |= 1u << l; }
        if (lanes[l].state != CUDA_EMULATION_AT_WARP_OP) { continue; }
        if (kind >= 0 && (lanes[l].op_kind != kind || lanes[l].op_mask != mask)) {
            cuda_emulation_die("the lanes of a warp wait at different warp collectives (or with different masks)");
        }
        kind = lanes[l].op_kind;
        mask = lanes[l].op_mask;
        waiting |= 1u << l;
    }
    if (kind < 0) { return; }
    unsigned present = count == 32 ? 0xFFFFFFFFu : (1u << count) - 1u;
    if (mask & ~present) { cuda_emulation_die("a warp collective's mask names lanes the block does not have"); }
    if (mask & exited) { cuda_emulation_die("a warp collective's mask names a lane that has exited"); }
    if ((waiting & mask) != mask) { return; }  // lanes still on their way
    if (waiting != mask) { cuda_emulation_die("a lane outside a warp collective's mask waits at it"); }
    for (int l = 0; l < count; l++) {
        if (!(mask >> l & 1u)) { continue; }
        CudaEmulationFiber* f = &lanes[l];
        uint64_t r = f->op_value;
        int src = -1;
        switch (kind) {
            case CUDA_EMULATION_SHFL_XOR: src = l ^ (f->op_arg & 31); break;
            case CUDA_EMULATION_SHFL_IDX: src = f->op_arg & 31; break;
            case CUDA_EMULATION_SHFL_DOWN: src = l + f->op_arg < 32 ? l + f->op_arg : l; break;
            case CUDA_EMULATION_SHFL_UP: src = l - f->op_arg >= 0 ? l - f->op_arg : l; break;
            case CUDA_EMULATION_REDUCE_MAX:
            case CUDA_EMULATION_REDUCE_MIN:
            case CUDA_EMULATION_REDUCE_ADD:
            case CUDA_EMULATION_BALLOT:
                r = kind == CUDA_EMULATION_REDUCE_MIN ? 0xFFFFFFFFu : 0u;
                for (int m = 0; m < count; m++) {
                    if (!(mask >> m & 1u)) { continue; }
                    uint32_t v = (uint32_t)lanes[m].op_value;
                    if (kind == CUDA_EMULATION_REDUCE_MAX) { r = v > r ? v : r; }
                    if (kind == CUDA_EMULATION_REDUCE_MIN) { r = v < r ? v : r; }
                    if (kind == CUDA_EMULATION_REDUCE_ADD) { r = (uint32_t)(r + v); }
                    if (kind == CUDA_EMULATION_BALLOT) { r |= (uint64_t)(v != 0) << m; }
                }
                break;
            default: break;
        }
        if (src >= 0) {
            if (!(mask >> src & 1u)) { cuda_emulation_die("a shuffle reads a lane outside its mask"); }
            r = lanes[src].op_value;
        }
        f->op_result = r;
    }
    for (int l = 0; l < count; l++) {
        if (mask >> l & 1u) { lanes[l].state = CUDA_EMULATION_READY; }
    }
}

// ----------------------------------------------------------------------------
// device intrinsics this project's kernels use, as the host computes them

static inline float __uint_as_float(unsigned u) { return cuda_emulation_from_bits<float>(u); }
static inline unsigned __float_as_uint(float f) { return (unsigned)cuda_emulation_bits(f); }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fmaf_rn(float a, float b, float c) { return fmaf(a, b, c); }
static inline float rsqrtf(float a) { return 1.0f / sqrtf(a); }
template <typename T> static inline T __ldcg(const T* p) { return *p; }
static inline unsigned __vmaxu2(unsigned a, unsigned b) {
    unsigned lo = (a & 0xFFFFu) > (b & 0xFFFFu) ? a & 0xFFFFu : b & 0xFFFFu;
    unsigned hi = (a >> 16) > (b >> 16) ? a >> 16 : b >> 16;
    return hi << 16 | lo;
}
static inline unsigned __byte_perm(unsigned x, unsigned y, unsigned s) {
    uint64_t bytes = (uint64_t)y << 32 | x;
    unsigned r = 0;
    for (int i = 0; i < 4; i++) { r |= (unsigned)(bytes >> (8 * ((s >> (4 * i)) & 7u)) & 0xFFu) << (8 * i); }
    return r;
}

// CUDA's max and min overloads (device code calls them unqualified on ints, unsigned and floats)
static inline int max(int a, int b) { return a > b ? a : b; }
static inline int min(int a, int b) { return a < b ? a : b; }
static inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
static inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
static inline unsigned max(int a, unsigned b) { return max((unsigned)a, b); }
static inline unsigned max(unsigned a, int b) { return max(a, (unsigned)b); }
static inline unsigned min(int a, unsigned b) { return min((unsigned)a, b); }
static inline unsigned min(unsigned a, int b) { return min(a, (unsigned)b); }
static inline long long max(long long a, long long b) { return a > b ? a : b; }
static inline long long min(long long a, long long b) { return a < b ? a : b; }
static inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
static inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
static inline size_t max(size_t a, int b) { return a > (size_t)b ? a : (size_t)b; }
static inline float max(float a, float b) { return fmaxf(a, b); }
static inline float min(float a, float b) { return fminf(a, b); }

// Atomics: one thread runs at a time, so each is a plain read-modify-write
static inline unsigned atomicMax(unsigned* p, unsigned v) { unsigned o = *p; *p = o > v ? o : v; return o; }
static inline unsigned atomicMin(unsigned* p, unsigned v) { unsigned o = *p; *p = o < v ? o : v; return o; }
static inline int atomicMax(int* p, int v) { int o = *p; *p = o > v ? o : v; return o; }
static inline int atomicMin(int* p, int v) { int o = *p; *p = o < v ? o : v; return o; }
static inline unsigned atomicAdd(unsigned* p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
static inline int atomicAdd(int* p, int v) { int o = *p; *p = o + v; return o; }
static inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
    unsigned long long o = *p;
    *p = o + v;
    return o;
}

// ----------------------------------------------------------------------------
// the runtime: device memory is host memory, one device with an H100's limits, and work queued on a stream runs when
// the host waits for it

#define CUDA_EMULATION_SMS 132
#define CUDA_EMULATION_SMEM_OPTIN (227 * 1024)
#define CUDA_EMULATION_SMEM_DEFAULT (48 * 1024)
#define CUDA_EMULATION_STACK (256 * 1024)
#define CUDA_EMULATION_MEMORY (80ull << 30)

static cudaError_t cuda_emulation_last_error = cudaSuccess;
static std::map<const void*, int>& cuda_emulation_smem_allowed(void) {
    static std::map<const void*, int> allowed;
    return allowed;
}
static cudaError_t cuda_emulation_fail(cudaError_t e) {
    if (cuda_emulation_last_error == cudaSuccess) { cuda_emulation_last_error = e; }
    return e;
}
[[noreturn]] static void cuda_emulation_die_host(const char* what) {
    fprintf(stderr, "cuda emulation: %s\n", what);
    exit(1);
}

// The queue. Every stream's work goes into one queue in the order the host queued it (an order a GPU may run it in:
// streams and events only allow others) and runs when the host waits for it: a device synchronize, a copy into
// pageable host memory and cudaFree run all of it; a stream's synchronize, up to that stream's last work; an event's,
// up to its last record. So, as on a GPU, the host has gone on when a kernel runs:
// pinned host memory (cudaMallocHost, cudaHostAlloc) that a queued copy reads is read when the copy runs, not when it
// was queued, and a kernel gets the argument values of its launch. While a stream is captured (cudaStreamBeginCapture)
// its work goes into the graph instead; a wait, or work on the legacy stream, fails the capture, as CUDA's global
// capture mode does.
struct CudaEmulationStream { int unused; };
struct CudaEmulationEvent { double ms; int recorded; };
typedef struct {
    cudaStream_t stream;  // where it was queued (in a graph: where the graph is launched)
    const CudaEmulationEvent* event;  // an event's record, or NULL
    std::function<void()> run;
} CudaEmulationItem;
struct CudaEmulationGraph { std::vector<CudaEmulationItem> work; };

static std::deque<CudaEmulationItem> cuda_emulation_queue;
static cudaStream_t cuda_emulation_capture_stream;  // the stream being captured; NULL: none
static CudaEmulationGraph* cuda_emulation_capture_graph;
static cudaError_t cuda_emulation_capture_broken = cudaSuccess;  // what invalidated the capture under way
static int cuda_emulation_running;  // the queue is running (a kernel cannot call the runtime)
static std::map<uintptr_t, size_t> cuda_emulation_pinned;  // pinned host allocations: start, bytes

static bool cuda_emulation_is_legacy(cudaStream_t s) { return s == 0 || s == cudaStreamLegacy; }

static bool cuda_emulation_is_pinned(const void* p) {
    std::map<uintptr_t, size_t>::iterator it = cuda_emulation_pinned.upper_bound((uintptr_t)p);
    if (it == cuda_emulation_pinned.begin()) { return false; }
    --it;
    return (uintptr_t)p < it->first + it->second;
}

// The capture under way fails (CUDA invalidates it; the call that did it returns e).
static cudaError_t cuda_emulation_break_capture(cudaError_t e) {
    if (cuda_emulation_capture_broken == cudaSuccess) { cuda_emulation_capture_broken = e; }
    return cuda_emulation_fail(e);
}

// Queues work on stream s, or into the graph being captured from s; `event`: the event it records, if it does.
static cudaError_t cuda_emulation_enqueue(cudaStream_t s, std::function<void()> work,
                                          const CudaEmulationEvent* event = NULL) {
    if (cuda_emulation_running) { cuda_emulation_die_host("a kernel called the CUDA runtime"); }
    if (cuda_emulation_capture_stream) {
        if (s == cuda_emulation_capture_stream) {
            if (cuda_emulation_capture_broken != cudaSuccess) {
                return cuda_emulation_fail(cudaErrorStreamCaptureInvalidated);
            }
            cuda_emulation_capture_graph->work.push_back({s, event, std::move(work)});
            return cudaSuccess;
        }
        if (cuda_emulation_is_legacy(s)) { return cuda_emulation_break_capture(cudaErrorStreamCaptureImplicit); }
    }
    cuda_emulation_queue.push_back({s, event, std::move(work)});
    return cudaSuccess;
}

// How much of the queue a wait runs: all of it; up to stream s's last work; up to event e's last record.
static size_t cuda_emulation_queued_all(void) { return cuda_emulation_queue.size(); }
static size_t cuda_emulation_queued_through_stream(cudaStream_t s) {
    for (size_t i = cuda_emulation_queue.size(); i > 0; i--) {
        if (cuda_emulation_queue[i - 1].stream == s) { return i; }
    }
    return 0;
}
static size_t cuda_emulation_queued_through_event(const void* e) {
    for (size_t i = cuda_emulation_queue.size(); i > 0; i--) {
        if (cuda_emulation_queue[i - 1].event == e) { return i; }
    }
    return 0;
}

// The host waits for the first `count` items of the queue: they run, in order. A wait while a stream is captured
// fails the capture (CUDA's global mode), whatever it waits for.
static cudaError_t cuda_emulation_wait(size_t count = (size_t)-1) {
    if (cuda_emulation_running) { cuda_emulation_die_host("a kernel called the CUDA runtime"); }
    if (cuda_emulation_capture_stream) { return cuda_emulation_break_capture(cudaErrorStreamCaptureUnsupported); }
    if (count > cuda_emulation_queue.size()) { count = cuda_emulation_queue.size(); }
    cuda_emulation_running = 1;
    for (size_t i = 0; i < count; i++) {
        std::function<void()> run = std::move(cuda_emulation_queue.front().run);
        cuda_emulation_queue.pop_front();
        run();
    }
    cuda_emulation_running = 0;
    return cudaSuccess;
}

static double cuda_emulation_now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

// %globaltimer and __nanosleep for a kernel that waits on the host (the host cannot act while a kernel runs here,
// so such a kernel sees only its own time pass)
static inline unsigned long long cuda_emulation_globaltimer(void) {
    return (unsigned long long)(cuda_emulation_now_ms() * 1e6);
}
static inline void __nanosleep(unsigned ns) {
    struct timespec t = {0, (long)ns};
    nanosleep(&t, NULL);
}

static cudaError_t cuda_emulation_copy(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind,
                                       cudaStream_t s, int async) {
    if (bytes == 0) { return cudaSuccess; }
    bool host_src = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost;
    bool host_dst = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost;
    if ((host_dst && !cuda_emulation_is_pinned(dst)) || (!async && (host_src || host_dst))) {
        // into pageable memory, or a synchronous copy to or from the host: the call returns when the copy is done
        if (async && s == cuda_emulation_capture_stream && s) {
            return cuda_emulation_break_capture(cudaErrorStreamCaptureUnsupported);
        }
        bool one_stream = async && !cuda_emulation_is_legacy(s);
        cudaError_t e = cuda_emulation_wait(one_stream ? cuda_emulation_queued_through_stream(s)
                                                       : cuda_emulation_queued_all());
        if (e != cudaSuccess) { return e; }
        memmove(dst, src, bytes);
        return cudaSuccess;
    }
    if (host_src && !cuda_emulation_is_pinned(src)) {  // from pageable memory: staged by the call, landed in order
        if (s == cuda_emulation_capture_stream && s) {
            return cuda_emulation_break_capture(cudaErrorStreamCaptureUnsupported);
        }
        std::shared_ptr<std::vector<unsigned char>> staged =
            std::make_shared<std::vector<unsigned char>>((const unsigned char*)src, (const unsigned char*)src + bytes);
        return cuda_emulation_enqueue(s, [dst, staged]() { memcpy(dst, staged->data(), staged->size()); });
    }
    return cuda_emulation_enqueue(s, [dst, src, bytes]() { memmove(dst, src, bytes); });
}

extern "C" {
cudaError_t cudaGetLastError(void) {
    cudaError_t e = cuda_emulation_last_error;
    cuda_emulation_last_error = cudaSuccess;
    return e;
}
cudaError_t cudaPeekAtLastError(void) { return cuda_emulation_last_error; }
const char* cudaGetErrorName(cudaError_t e) {
    switch (e) {
        case cudaSuccess: return "cudaSuccess";
        case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
        case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
        case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
        case cudaErrorNoDevice: return "cudaErrorNoDevice";
        case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
        case cudaErrorIllegalState: return "cudaErrorIllegalState";
        case cudaErrorNotReady: return "cudaErrorNotReady";
        case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
        case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
        case cudaErrorStreamCaptureImplicit: return "cudaErrorStreamCaptureImplicit";
        default: return "cudaError (other)";
    }
}
const char* cudaGetErrorString(cudaError_t e) { return cudaGetErrorName(e); }
cudaError_t cudaGetDeviceCount(int* count) { *count = 1; return cudaSuccess; }
cudaError_t cudaGetDevice(int* device) { *device = 0; return cudaSuccess; }
cudaError_t cudaSetDevice(int device) {
    return device == 0 ? cudaSuccess : cuda_emulation_fail(cudaErrorInvalidDevice);
}
cudaError_t cudaDeviceSynchronize(void) { return cuda_emulation_wait(); }
cudaError_t cudaDeviceGetAttribute(int* value, enum cudaDeviceAttr attr, int device) {
    if (device != 0) { return cuda_emulation_fail(cudaErrorInvalidDevice); }
    switch (attr) {
        case cudaDevAttrMultiProcessorCount: *value = CUDA_EMULATION_SMS; return cudaSuccess;
        case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = CUDA_EMULATION_SMEM_OPTIN; return cudaSuccess;
        case cudaDevAttrComputeCapabilityMajor: *value = 9; return cudaSuccess;
        case cudaDevAttrComputeCapabilityMinor: *value = 0; return cudaSuccess;
        case cudaDevAttrMaxThreadsPerBlock: *value = 1024; return cudaSuccess;
        case cudaDevAttrWarpSize: *value = 32; return cudaSuccess;
        default: return cuda_emulation_fail(cudaErrorInvalidValue);
    }
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* prop, int device) {
    if (device != 0) { return cuda_emulation_fail(cudaErrorInvalidDevice); }
    memset(prop, 0, sizeof(*prop));
    snprintf(prop->name, sizeof(prop->name), "emulated H100 (dev/cuda/emulate)");
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = CUDA_EMULATION_SMS;
    prop->totalGlobalMem = CUDA_EMULATION_MEMORY;
    prop->sharedMemPerBlock = CUDA_EMULATION_SMEM_DEFAULT;
    prop->sharedMemPerBlockOptin = CUDA_EMULATION_SMEM_OPTIN;
    prop->maxThreadsPerBlock = 1024;
    prop->warpSize = 32;
    return cudaSuccess;
}
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
    *free_bytes = CUDA_EMULATION_MEMORY;
    *total_bytes = CUDA_EMULATION_MEMORY;
    return cudaSuccess;
}
cudaError_t cudaMalloc(void** p, size_t bytes) {
    // 256-byte aligned like cudaMalloc's; the contents are garbage there, 0xFF here
    *p = aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
    if (!*p) { return cuda_emulation_fail(cudaErrorMemoryAllocation); }
    memset(*p, 0xFF, bytes);
    return cudaSuccess;
}
cudaError_t cudaFree(void* p) {  // waits for the device, as CUDA's does
    cudaError_t e = cuda_emulation_wait();
    if (e != cudaSuccess) { return e; }
    free(p);
    return cudaSuccess;
}
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int) {
    cudaError_t e = cudaMalloc(p, bytes);
    if (e == cudaSuccess) { cuda_emulation_pinned[(uintptr_t)*p] = bytes ? bytes : 1; }
    return e;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) { return cudaHostAlloc(p, bytes, 0); }
cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned int) {
    if (!cuda_emulation_is_pinned(host)) { return cuda_emulation_fail(cudaErrorInvalidValue); }
    *device = host;
    return cudaSuccess;
}
cudaError_t cudaFreeHost(void* p) {
    cudaError_t e = cuda_emulation_wait();
    if (e != cudaSuccess) { return e; }
    cuda_emulation_pinned.erase((uintptr_t)p);
    free(p);
    return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind) {
    return cuda_emulation_copy(dst, src, bytes, kind, 0, 0);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, enum cudaMemcpyKind kind, cudaStream_t s) {
    return cuda_emulation_copy(dst, src, bytes, kind, s, 1);
}
cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t s) {
    if (bytes == 0) { return cudaSuccess; }
    return cuda_emulation_enqueue(s, [p, value, bytes]() { memset(p, value, bytes); });
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) { return cudaMemsetAsync(p, value, bytes, 0); }
cudaError_t cudaStreamCreate(cudaStream_t* s) {
    *s = (cudaStream_t) new CudaEmulationStream();
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* s, unsigned int) { return cudaStreamCreate(s); }
cudaError_t cudaStreamDestroy(cudaStream_t s) {
    if (cuda_emulation_is_legacy(s) || s == cuda_emulation_capture_stream) {
        return cuda_emulation_fail(cudaErrorInvalidValue);
    }
    delete (CudaEmulationStream*)s;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t s) {  // the legacy stream waits for every stream (they block)
    return cuda_emulation_wait(cuda_emulation_is_legacy(s) ? cuda_emulation_queued_all()
                                                           : cuda_emulation_queued_through_stream(s));
}
cudaError_t cudaStreamQuery(cudaStream_t s) {  // never waits: not ready while the stream has work queued
    size_t queued = cuda_emulation_is_legacy(s) ? cuda_emulation_queued_all() : cuda_emulation_queued_through_stream(s);
    return queued ? cudaErrorNotReady : cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t, cudaEvent_t, unsigned int) { return cudaSuccess; }
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode) {
    if (cuda_emulation_is_legacy(s)) { return cuda_emulation_fail(cudaErrorStreamCaptureUnsupported); }
    if (cuda_emulation_capture_stream) { return cuda_emulation_fail(cudaErrorIllegalState); }
    cuda_emulation_capture_stream = s;
    cuda_emulation_capture_graph = new CudaEmulationGraph();
    cuda_emulation_capture_broken = cudaSuccess;
    return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus* status) {
    *status = s != cuda_emulation_capture_stream || !s ? cudaStreamCaptureStatusNone
              : cuda_emulation_capture_broken == cudaSuccess ? cudaStreamCaptureStatusActive
                                                            : cudaStreamCaptureStatusInvalidated;
    return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t* graph) {
    if (!s || s != cuda_emulation_capture_stream) { return cuda_emulation_fail(cudaErrorIllegalState); }
    cudaError_t broken = cuda_emulation_capture_broken;
    cuda_emulation_capture_stream = NULL;
    cuda_emulation_capture_broken = cudaSuccess;
    if (broken != cudaSuccess) {
        delete cuda_emulation_capture_graph;
        *graph = NULL;
        return cuda_emulation_fail(cudaErrorStreamCaptureInvalidated);
    }
    *graph = (cudaGraph_t)cuda_emulation_capture_graph;
    return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
    if (!graph) { return cuda_emulation_fail(cudaErrorInvalidValue); }
    *exec = (cudaGraphExec_t) new CudaEmulationGraph(*(CudaEmulationGraph*)graph);
    return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t s) {
    const CudaEmulationGraph* g = (const CudaEmulationGraph*)exec;
    for (size_t i = 0; i < g->work.size(); i++) {
        cudaError_t e = cuda_emulation_enqueue(s, g->work[i].run, g->work[i].event);
        if (e != cudaSuccess) { return e; }
    }
    return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) { delete (CudaEmulationGraph*)graph; return cudaSuccess; }
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) { delete (CudaEmulationGraph*)exec; return cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t* e) {
    *e = (cudaEvent_t) new CudaEmulationEvent();
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int) { return cudaEventCreate(e); }
cudaError_t cudaEventDestroy(cudaEvent_t e) {
    // CUDA lets a record still queued complete; here its work writes the event, which is then never freed
    if (!cuda_emulation_queued_through_event(e)) { delete (CudaEmulationEvent*)e; }
    return cudaSuccess;
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s, unsigned int) {
    CudaEmulationEvent* event = (CudaEmulationEvent*)e;
    return cuda_emulation_enqueue(s, [event]() {
        event->ms = cuda_emulation_now_ms();
        event->recorded = 1;
    }, event);
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return cudaEventRecordWithFlags(e, s, 0); }
cudaError_t cudaEventSynchronize(cudaEvent_t e) { return cuda_emulation_wait(cuda_emulation_queued_through_event(e)); }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
    const CudaEmulationEvent *a = (const CudaEmulationEvent*)start, *b = (const CudaEmulationEvent*)end;
    if (!a->recorded || !b->recorded) { return cuda_emulation_fail(cudaErrorInvalidResourceHandle); }
    *ms = (float)(b->ms - a->ms);
    return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) { return cudaSuccess; }
    if (value < 0 || value > CUDA_EMULATION_SMEM_OPTIN) { return cuda_emulation_fail(cudaErrorInvalidValue); }
    cuda_emulation_smem_allowed()[func] = value;
    return cudaSuccess;
}
cudaError_t cudaProfilerStart(void) { return cudaSuccess; }
cudaError_t cudaProfilerStop(void) { return cudaSuccess; }
}  // extern "C"

// A kernel named by its template-id (CUDA's own template overload cannot take one under a host compiler)
template <typename... P>
static inline cudaError_t cudaFuncSetAttribute(void (*kernel)(P...), enum cudaFuncAttribute attr, int value) {
    return cudaFuncSetAttribute((const void*)kernel, attr, value);
}

// ----------------------------------------------------------------------------
// the launch

static int cuda_emulation_reverse_order(void) {
    static int reverse = -1;
    if (reverse < 0) {
        const char* order = getenv("CUDA_EMULATION_ORDER");
        reverse = order && strcmp(order, "reverse") == 0;
    }
    return reverse;
}
// Runs every thread of the current block to its end, releasing barriers as they fill.
static void cuda_emulation_run_block(std::vector<CudaEmulationFiber>& fibers, unsigned char* stacks) {
    int n = (int)fibers.size();
    for (int t = 0; t < n; t++) {
        // a new fiber's stack: the switch pops six registers, then returns into fiber_main, which starts with the
        // stack 8 bytes off 16 (top[-1]) as after a call. Each top 64 bytes further down than the last thread's (up
        // to 32 KB): stacks CUDA_EMULATION_STACK apart would put every thread's top in the same cache sets.
        uint64_t* top = (uint64_t*)(stacks + (size_t)(t + 1) * CUDA_EMULATION_STACK - (size_t)t % 512 * 64);
        top[-1] = 0;
        top[-2] = (uint64_t)(uintptr_t)&cuda_emulation_fiber_main;
        for (int r = 3; r <= 8; r++) { top[-r] = 0; }
        fibers[t].sp = &top[-8];
        fibers[t].state = CUDA_EMULATION_READY;
        fibers[t].copies->clear();
        fibers[t].groups_committed = 0;
    }
    // Warp by warp: each warp runs (its lanes in turn, its collectives resolved) until every lane waits at a
    // __syncthreads or has exited, before the next warp starts; so a warp reads what the others would write only
    // after the barrier that orders it, or sees what was there before (0xFF where nothing was).
    int reverse = cuda_emulation_reverse_order();
    int warps = (n + 31) / 32;
    for (;;) {
        for (int k = 0; k < warps; k++) {
            int w = reverse ? warps - 1 - k : k;
            int count = n - w * 32 < 32 ? n - w * 32 : 32;
            CudaEmulationFiber* lanes = &fibers[w * 32];
            for (;;) {
                for (int j = 0; j < count; j++) {
                    CudaEmulationFiber* f = &lanes[reverse ? count - 1 - j : j];
                    if (f->state != CUDA_EMULATION_READY) { continue; }
                    cuda_emulation_fiber = f;
                    cuda_emulation_switch(&cuda_emulation_scheduler_sp, f->sp);
                }
                cuda_emulation_resolve_warp(lanes, count);
                int ready = 0;
                for (int j = 0; j < count; j++) { ready += lanes[j].state == CUDA_EMULATION_READY; }
                if (!ready) { break; }
            }
        }
        int done = 0, at_barrier = 0;
        for (int t = 0; t < n; t++) {
            done += fibers[t].state == CUDA_EMULATION_DONE;
            at_barrier += fibers[t].state == CUDA_EMULATION_AT_BARRIER;
        }
        if (done == n) { return; }
        if (at_barrier + done < n) {
            cuda_emulation_die("deadlock: threads wait at different barriers (a __syncthreads some threads skip, or "
                               "a warp collective some lanes skip)");
        }
        if (done > 0) { cuda_emulation_die("__syncthreads after some of the block's threads have exited"); }
        for (int t = 0; t < n; t++) { fibers[t].state = CUDA_EMULATION_READY; }
    }
}

// Runs a whole grid (when the queue gets to it): its blocks one after another, each thread calling `thread_body`.
static void cuda_emulation_run_grid(const char* name, dim3 grid, dim3 block, size_t smem,
                                    const std::function<void()>& thread_body) {
    size_t threads = (size_t)block.x * block.y * block.z;
    static std::vector<CudaEmulationFiber> fibers;
    static std::vector<std::vector<CudaEmulationCopy>> copies(1024);
    static unsigned char* stacks = NULL;
    if (!stacks) {
        stacks = (unsigned char*)mmap(NULL, (size_t)1024 * CUDA_EMULATION_STACK, PROT_READ | PROT_WRITE,
                                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (stacks == MAP_FAILED) { cuda_emulation_die_host("no memory for the stacks"); }
        for (int t = 0; t < 1024; t++) {  // a guard page under each: a thread past its stack faults, overwrites nothing
            if (mprotect(stacks + (size_t)t * CUDA_EMULATION_STACK, 4096, PROT_NONE) != 0) {
                cuda_emulation_die_host("could not protect the stacks' guard pages");
            }
        }
    }
    fibers.assign(threads, CudaEmulationFiber{});
    for (size_t t = 0; t < threads; t++) {
        fibers[t].idx = make_uint3((unsigned)(t % block.x), (unsigned)(t / block.x % block.y),
                                   (unsigned)(t / ((size_t)block.x * block.y)));
        fibers[t].copies = &copies[t];
    }
    unsigned char* smem_bytes = (unsigned char*)aligned_alloc(128, smem / 128 * 128 + 128);
    cuda_emulation_body = &thread_body;
    cuda_emulation_kernel_name = name;
    cuda_emulation_block_dim = block;
    cuda_emulation_grid_dim = grid;
    cuda_emulation_smem = smem_bytes;
    for (unsigned z = 0; z < grid.z; z++) {
        for (unsigned y = 0; y < grid.y; y++) {
            for (unsigned x = 0; x < grid.x; x++) {
                cuda_emulation_block_idx = make_uint3(x, y, z);
                memset(smem_bytes, 0xFF, smem);
                cuda_emulation_shared_seen.clear();
                cuda_emulation_run_block(fibers, stacks);
            }
        }
    }
    cuda_emulation_body = NULL;
    free(smem_bytes);
}

// A launch (dev/cuda/emulate/rewrite.py writes `kernel<<<grid, block, smem, stream>>>(args)` as this call): the
// configuration checked now, as CUDA does (a bad one is reported by cudaGetLastError), the arguments converted to the
// kernel's parameters now, and the grid queued on the stream.
template <typename... P, typename... A>
static void cuda_emulation_launch(const char* name, dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                                  void (*kernel)(P...), A&&... args) {
    size_t threads = (size_t)block.x * block.y * block.z;
    if (threads == 0 || threads > 1024 || block.z > 64 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        grid.y > 65535 || grid.z > 65535 || grid.x > 2147483647u) {
        cuda_emulation_fail(cudaErrorInvalidConfiguration);
        return;
    }
    std::map<const void*, int>& allowed = cuda_emulation_smem_allowed();
    const void* address = (const void*)kernel;
    size_t smem_allowed = allowed.count(address) ? (size_t)allowed[address] : CUDA_EMULATION_SMEM_DEFAULT;
    if (smem > smem_allowed) {  // the launch fails; cudaGetLastError reports it
        cuda_emulation_fail(cudaErrorInvalidValue);
        return;
    }
    std::tuple<typename std::decay<P>::type...> params(std::forward<A>(args)...);
    // refused by a capture: the capture fails, and cudaGetLastError reports it
    cuda_emulation_enqueue(stream, [name, grid, block, smem, kernel, params]() {
        cuda_emulation_run_grid(name, grid, block, smem, [&]() { std::apply(kernel, params); });
    });
}

#endif  // GPTFP8_CUDA_EMULATION_H
