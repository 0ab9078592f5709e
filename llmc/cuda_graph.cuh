/*
llmc/cuda_graph.cuh — a stretch of one stream's work captured once as a CUDA graph and then replayed with one launch
(train_gpt_fp8 -cuda_graph 1: a training micro-batch's forward, and its backward). Replayed, the GPU runs the kernels
back to back instead of waiting between them for the host to queue the next one.

A replay runs the captured kernels with the captured arguments on the captured buffers. So what changes from call to
call must be in device memory before the launch (the batch and its token buckets, copied outside the graph), and
every host value the captured work depends on goes into the graph's key: a call with another key captures again.
Nothing inside may wait for the GPU (a synchronize or timing: capture refuses it, and llmc/gemm.cuh says which GEMM),
so the work of every key runs once without a graph first (cuda_graph_use), which is when cuBLASLt's algorithms are
chosen, kernels loaded and their attributes set.
*/
#ifndef GPTFP8_CUDA_GRAPH_CUH
#define GPTFP8_CUDA_GRAPH_CUH

#include <stdint.h>

#include "cuda_utils.cuh"

typedef struct {
    cudaGraphExec_t exec;  // NULL until captured
    uint64_t key;          // the host values the captured work was queued with
    int captures;          // how many times captured (a test checks that a replay did not capture again)
    long long launches;
    int eager_ran;         // the work ran without a graph with eager_key, last
    uint64_t eager_key;
} CudaGraph;

// Whether g holds a capture made with this key.
static inline int cuda_graph_ready(const CudaGraph* g, uint64_t key) { return g->exec != NULL && g->key == key; }

// Whether the work queued with `key` goes through g (replayed, captured first where g holds another key), or runs
// kernel by kernel this time: a key not captured yet runs once without a graph first (a new loss scale, the
// diagnostics switched on), so that nothing is done for the first time inside a capture (a GEMM's algorithm timed, a
// kernel loaded, a function attribute set), which capture may refuse.
static inline int cuda_graph_use(CudaGraph* g, uint64_t key) {
    if (cuda_graph_ready(g, key) || (g->eager_ran && g->eager_key == key)) { return 1; }
    g->eager_ran = 1;
    g->eager_key = key;
    return 0;
}

// Starts capturing what the calling thread queues on stream (global mode: a call anywhere that would wait for the
// GPU, or use the legacy stream, fails the capture with the line that made it).
static inline void cuda_graph_capture_begin(cudaStream_t stream) {
    cudaCheck(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
}

// Ends the capture begun on stream and makes it g's graph, replacing an older one.
static inline void cuda_graph_capture_end(CudaGraph* g, cudaStream_t stream, uint64_t key) {
    cudaGraph_t graph;
    cudaCheck(cudaStreamEndCapture(stream, &graph));
    if (g->exec) { cudaCheck(cudaGraphExecDestroy(g->exec)); }
    cudaCheck(cudaGraphInstantiate(&g->exec, graph, 0));
    cudaCheck(cudaGraphDestroy(graph));
    g->key = key;
    g->captures++;
}

// Queues one replay on stream.
static inline void cuda_graph_launch(CudaGraph* g, cudaStream_t stream) {
    cudaCheck(cudaGraphLaunch(g->exec, stream));
    g->launches++;
}

static inline void cuda_graph_free(CudaGraph* g) {
    if (g->exec) { cudaCheck(cudaGraphExecDestroy(g->exec)); }
    g->exec = NULL;
}

// Event record for work queued on stream: inside a capture, an event node of the graph (cudaEventRecordExternal), so
// the host can still wait on it after launching the graph; otherwise a plain record.
static inline void cuda_graph_aware_event_record(cudaEvent_t event, cudaStream_t stream) {
    cudaStreamCaptureStatus capture;
    cudaCheck(cudaStreamIsCapturing(stream, &capture));
    if (capture == cudaStreamCaptureStatusInvalidated) {  // an earlier call broke the capture; say so here, not later
        die("CUDA graph: the capture was invalidated before this event (a call queued earlier is not capturable)");
    }
    if (capture == cudaStreamCaptureStatusActive) {
        cudaCheck(cudaEventRecordWithFlags(event, stream, cudaEventRecordExternal));
    } else {
        cudaCheck(cudaEventRecord(event, stream));
    }
}

#endif  // GPTFP8_CUDA_GRAPH_CUH
