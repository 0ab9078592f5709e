/*
llmc/gpu_idle.h — how long the GPU sat idle inside one training step (-idle_step N, issue 56): the step's wall time,
from the host's first call of the step to its end on the GPU, minus the union of the intervals in which a kernel, a
copy or a memset ran. Nsight Systems measures the same, but cannot make its reports on the machines this project is
measured on; the trainer asks CUPTI's activity API itself (the tracing PyTorch's profiler uses too).

Where the idle time sits: the step's longest gaps between busy intervals, each with what ran before it and what ran
after (kernel names shortened from their mangled form), and how much of the idle time is in gaps shorter than a
threshold (launch gaps, which a CUDA graph removes) against the long ones (the host waiting, or working, between two
pieces of GPU work).

The union and the gaps are plain C (gpu_idle_union_ns, gpu_idle_gaps, gpu_idle_short_name; tested on the CPU by
llmc/test_kernels_host); the tracing needs CUPTI, which
the Makefile links where it finds it (ENABLE_CUPTI), like cuDNN: without it -idle_step is refused in one line. CUPTI
writes its records into buffers it asks for and hands back (gpu_idle_buffer_requested / _completed); one step of a
d12 model at B 64 is a few thousand records, far below the buffers' room, and a record that did not fit is counted
by CUPTI and reported (dropped), not guessed at. Timestamps: CUPTI's, nanoseconds, the same clock as cuptiGetTimestamp.
*/
#ifndef GPTFP8_GPU_IDLE_H
#define GPTFP8_GPU_IDLE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t start, end;  // ns
    const char* what;     // the kernel's (mangled) name, "memcpy", "memset"; NULL: unnamed
} GpuBusyInterval;

static int gpu_busy_interval_compare(const void* a, const void* b) {
    const GpuBusyInterval *x = (const GpuBusyInterval*)a, *y = (const GpuBusyInterval*)b;
    return x->start < y->start ? -1 : x->start > y->start ? 1 : (x->end < y->end ? -1 : x->end > y->end);
}

// The length (ns) of the union of the intervals (n, sorted here in place), each first clipped to [t0, t1]; an
// interval that ends before it starts counts as empty.
static inline uint64_t gpu_idle_union_ns(GpuBusyInterval* intervals, size_t n, uint64_t t0, uint64_t t1) {
    qsort(intervals, n, sizeof(GpuBusyInterval), gpu_busy_interval_compare);
    uint64_t total = 0, covered_to = t0;  // [t0, covered_to) is already counted
    for (size_t i = 0; i < n; i++) {
        uint64_t s = intervals[i].start < t0 ? t0 : intervals[i].start;
        uint64_t e = intervals[i].end > t1 ? t1 : intervals[i].end;
        if (e <= s) { continue; }
        if (s < covered_to) { s = covered_to; }
        if (e > s) {
            total += e - s;
            covered_to = e;
        }
    }
    return total;
}

// One idle gap of a step: `at` ns after the step's start, `length` ns long, after the interval `after` (NULL: the
// step's start) and before `before` (NULL: the step's end).
typedef struct {
    uint64_t at, length;
    const char *after, *before;
} GpuIdleGap;

typedef struct {
    size_t count;         // gaps in all
    size_t short_count;   // of them shorter than the threshold
    uint64_t short_ns;    // their total
    uint64_t total_ns;    // every gap's (the idle time)
} GpuIdleGapSummary;

// The idle gaps of the union of the intervals (sorted here in place) within [t0, t1]: the `k` longest into gaps,
// longest first (fewer when there are fewer; returns how many were written), and the summary, gaps shorter than
// short_ns counted apart. A gap is a stretch of [t0, t1] no interval covers; an empty interval is skipped.
static inline size_t gpu_idle_gaps(GpuBusyInterval* intervals, size_t n, uint64_t t0, uint64_t t1, GpuIdleGap* gaps,
                                   size_t k, uint64_t short_ns, GpuIdleGapSummary* summary) {
    qsort(intervals, n, sizeof(GpuBusyInterval), gpu_busy_interval_compare);
    memset(summary, 0, sizeof(*summary));
    size_t kept = 0;
    uint64_t covered_to = t0;
    const char* last = NULL;  // what covered the window up to covered_to (NULL: nothing yet)
    for (size_t i = 0; i <= n; i++) {
        int end = i == n;
        uint64_t s = end ? t1 : intervals[i].start < t0 ? t0 : intervals[i].start;
        uint64_t e = end ? t1 : intervals[i].end > t1 ? t1 : intervals[i].end;
        if (!end && e <= s) { continue; }
        if (s > covered_to) {
            GpuIdleGap gap = {covered_to - t0, s - covered_to, last, end ? NULL : intervals[i].what};
            summary->count++;
            summary->total_ns += gap.length;
            if (gap.length < short_ns) {
                summary->short_count++;
                summary->short_ns += gap.length;
            }
            size_t at = kept < k ? kept++ : k;  // insertion into the k longest, longest first
            while (at > 0 && gaps[at - 1].length < gap.length) {
                if (at < k) { gaps[at] = gaps[at - 1]; }
                at--;
            }
            if (at < k) { gaps[at] = gap; }
        }
        if (!end && e > covered_to) {
            covered_to = e;
            last = intervals[i].what;
        }
    }
    return kept;
}

// A kernel's name as its source spells it, from the mangled one CUPTI gives: "_Z22encoder_forward_kernelPfPKf..."
// becomes "encoder_forward_kernel", a nested "_ZN3foo3barEv" "foo::bar"; a name not mangled that way is kept (cuBLAS's
// "sm90_xmma_gemm_..."), cut to fit `len`.
static inline void gpu_idle_copy_cut(char* out, size_t len, const char* text) {  // text cut to fit len (> 0)
    size_t n = strnlen(text, len - 1);
    memcpy(out, text, n);
    out[n] = '\0';
}

static inline void gpu_idle_short_name(const char* mangled, char* out, size_t len) {
    if (len == 0) { return; }
    out[0] = '\0';
    if (!mangled) {
        gpu_idle_copy_cut(out, len, "?");
        return;
    }
    const char* p = mangled;
    if (strncmp(p, "_Z", 2) != 0) {
        gpu_idle_copy_cut(out, len, mangled);
        return;
    }
    p += 2;
    int nested = *p == 'N';
    if (nested) { p++; }
    while (*p == 'L' || *p == 'K') { p++; }  // internal linkage, const
    size_t used = 0;
    do {
        size_t n = 0;
        while (*p >= '0' && *p <= '9') { n = n * 10 + (size_t)(*p++ - '0'); }
        if (n == 0 || strnlen(p, n) < n) { break; }
        int written = snprintf(out + used, len - used, "%s%.*s", used ? "::" : "", (int)n, p);
        if (written < 0 || (size_t)written >= len - used) { break; }  // cut at len
        used += (size_t)written;
        p += n;
    } while (nested && *p >= '0' && *p <= '9');
    if (out[0] == '\0') { gpu_idle_copy_cut(out, len, mangled); }
}

#ifdef ENABLE_CUPTI
#include <cupti.h>

// CUPTI's return codes, checked like every other library's: file, line, CUPTI's message
static inline void cupti_check(CUptiResult status, const char* file, int line) {
    if (status == CUPTI_SUCCESS) { return; }
    const char* message = NULL;
    cuptiGetResultString(status, &message);
    fprintf(stderr, "[CUPTI ERROR] at file %s:%d: %s\n", file, line, message ? message : "(no message)");
    exit(EXIT_FAILURE);
}
#define cuptiCheck(status) (cupti_check((status), __FILE__, __LINE__))

#define GPU_IDLE_BUFFER_BYTES (8u << 20)
#define GPU_IDLE_MAX_INTERVALS (1u << 20)

// What one traced step collected; CUPTI's buffer callbacks take no user pointer, so there is one, process-wide.
typedef struct {
    GpuBusyInterval* intervals;  // (GPU_IDLE_MAX_INTERVALS)
    size_t count;
    size_t kernels, copies, sets;
    size_t over;  // records past GPU_IDLE_MAX_INTERVALS (none expected; reported)
} GpuIdleRecords;
static GpuIdleRecords gpu_idle_records;

static void CUPTIAPI gpu_idle_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = (uint8_t*)aligned_alloc(8, GPU_IDLE_BUFFER_BYTES);
    *size = *buffer ? GPU_IDLE_BUFFER_BYTES : 0;
    *max_records = 0;  // as many as fit
}

static void gpu_idle_add(uint64_t start, uint64_t end, const char* what, size_t* kind_count) {
    GpuIdleRecords* r = &gpu_idle_records;
    (*kind_count)++;
    if (r->count == GPU_IDLE_MAX_INTERVALS) {
        r->over++;
        return;
    }
    r->intervals[r->count].start = start;
    r->intervals[r->count].end = end;
    r->intervals[r->count].what = what;
    r->count++;
}

// Each record's start and end: the kernel, memcpy and memset records begin with their kind and keep start and end at
// the same place in every version of their struct, so the newest one this header declares reads any of them.
static void CUPTIAPI gpu_idle_buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                               size_t valid_size) {
    (void)context;
    (void)stream_id;
    (void)size;
    CUpti_Activity* record = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid_size, &record) == CUPTI_SUCCESS) {
        switch (record->kind) {
            case CUPTI_ACTIVITY_KIND_KERNEL:
            case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
                const CUpti_ActivityKernel10* k = (const CUpti_ActivityKernel10*)record;
                gpu_idle_add(k->start, k->end, k->name, &gpu_idle_records.kernels);  // (CUPTI keeps the name)
                break;
            }
            case CUPTI_ACTIVITY_KIND_MEMCPY: {
                const CUpti_ActivityMemcpy6* m = (const CUpti_ActivityMemcpy6*)record;
                gpu_idle_add(m->start, m->end, "memcpy", &gpu_idle_records.copies);
                break;
            }
            case CUPTI_ACTIVITY_KIND_MEMSET: {
                const CUpti_ActivityMemset4* m = (const CUpti_ActivityMemset4*)record;
                gpu_idle_add(m->start, m->end, "memset", &gpu_idle_records.sets);
                break;
            }
            default: break;
        }
    }
    size_t dropped = 0;
    cuptiCheck(cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped));
    gpu_idle_records.over += dropped;
    free(buffer);
}

static const CUpti_ActivityKind gpu_idle_kinds[3] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                                     CUPTI_ACTIVITY_KIND_MEMSET};

// Starts tracing; *t0 the step's start on CUPTI's clock. Call before the step's first CUDA call.
static inline void gpu_idle_begin(uint64_t* t0) {
    GpuIdleRecords* r = &gpu_idle_records;
    if (!r->intervals) {
        r->intervals = (GpuBusyInterval*)malloc(GPU_IDLE_MAX_INTERVALS * sizeof(GpuBusyInterval));
        if (!r->intervals) {
            fprintf(stderr, "error: -idle_step: out of host memory for the trace\n");
            exit(EXIT_FAILURE);
        }
        cuptiCheck(cuptiActivityRegisterCallbacks(gpu_idle_buffer_requested, gpu_idle_buffer_completed));
    }
    r->count = r->kernels = r->copies = r->sets = r->over = 0;
    for (int i = 0; i < 3; i++) { cuptiCheck(cuptiActivityEnable(gpu_idle_kinds[i])); }
    cuptiCheck(cuptiGetTimestamp(t0));
}

#define GPU_IDLE_LONGEST_GAPS 8
#define GPU_IDLE_SHORT_GAP_NS 20000  // a gap under 20 us: a launch gap, not the host waiting

typedef struct {
    double wall_ms, busy_ms, idle_ms;
    size_t kernels, copies, sets, over;
    GpuIdleGap longest[GPU_IDLE_LONGEST_GAPS];  // the longest gaps, longest first
    size_t num_longest;
    GpuIdleGapSummary gaps;
} GpuIdleResult;

// Ends tracing once the step has finished on the GPU (the caller has synchronized): *result from t0 to now.
static inline GpuIdleResult gpu_idle_end(uint64_t t0) {
    uint64_t t1;
    cuptiCheck(cuptiGetTimestamp(&t1));
    for (int i = 0; i < 3; i++) { cuptiCheck(cuptiActivityDisable(gpu_idle_kinds[i])); }
    cuptiCheck(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    GpuIdleRecords* r = &gpu_idle_records;
    uint64_t busy = gpu_idle_union_ns(r->intervals, r->count, t0, t1);
    GpuIdleResult out;
    memset(&out, 0, sizeof(out));
    out.wall_ms = (double)(t1 - t0) * 1e-6;
    out.busy_ms = (double)busy * 1e-6;
    out.idle_ms = (double)(t1 - t0 - busy) * 1e-6;
    out.kernels = r->kernels;
    out.copies = r->copies;
    out.sets = r->sets;
    out.over = r->over;
    out.num_longest = gpu_idle_gaps(r->intervals, r->count, t0, t1, out.longest, GPU_IDLE_LONGEST_GAPS,
                                    GPU_IDLE_SHORT_GAP_NS, &out.gaps);
    return out;
}
#endif  // ENABLE_CUPTI

#endif  // GPTFP8_GPU_IDLE_H
