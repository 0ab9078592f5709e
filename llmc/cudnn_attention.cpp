/*
llmc/cudnn_attention.cpp — causal self-attention through cuDNN's fused flash attention: the project's one C++
translation unit, because the cuDNN frontend (header-only, PyPI nvidia-cudnn-frontend, version pinned in
requirements.txt) is C++. It exposes the C functions of llmc/cudnn_attention.h and nothing else.

Layouts, in elements (bf16 unless noted), as cuDNN's SDPA sees them: every tensor is 4-D (B, NH, T, HS) with strides,
so q, k, v are views into our qkv activation (B, T, 3, NH, HS) and need no permute:
    q  (B, NH, T, HS)  strides (T * 3C, HS, 3C, 1)  at qkv + 0        k at qkv + C, v at qkv + 2C; dq, dk, dv alike in dqkv
    o  (B, NH, T, HS)  strides (T * C,  HS, C,  1)  = out (B, T, NH, HS) = (B, T, C); dout alike
    stats (B, NH, T, 1) fp32, packed: strides (NH * T, T, 1, 1)   the log-sum-exp of each row of scaled scores
Causal = the diagonal band's right bound 0, aligned top-left (key j <= query i); scale 1/sqrt(HS) as a fused scalar.
The FP8 graphs (sdpa_fp8, sdpa_fp8_backward) take the same views of one-byte elements, and their scales and amaxes as
(1, 1, 1, 1) fp32 tensors on the device; q, k and v are three tensors of the graph that all point at the one descale
of the qkv cast.
The backward runs cuDNN's deterministic algorithm: the trainer's backward has no float atomics anywhere, so a run
gives the same bits every time (checkpoint resume and the recompute test rely on it). The FP8 backward asks for it
too, but the frontend honours that on Blackwell only (compute capability 10.x): on Hopper its bytes may differ from run
to run, one reason the trainer's FP8 attention keeps the BF16 backward.

Errors: every cuDNN status, frontend status and CUDA status is checked and printed with file, line and the library's
message, then the process exits; the frontend can also throw (e.g. when no SDPA implementation supports a shape),
which each C entry point catches and reports the same way. The one exception is cudnn_attention_supported, which asks
whether this cuDNN can run a shape at all (builds its graphs, keeping them) and returns the library's reason instead
of exiting, so that the trainer can fall back to the plain attention.
*/
#include "cudnn_attention.h"

#include <cudnn.h>
#include <cudnn_frontend.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <array>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cuda_utils.cuh"

namespace fe = cudnn_frontend;

static void cudnn_check_impl(cudnnStatus_t status, const char* file, int line) {
    if (status != CUDNN_STATUS_SUCCESS) {
        char detail[1024];
        cudnnGetLastErrorString(detail, sizeof(detail));
        fprintf(stderr, "error: cuDNN at %s:%d: %s (%s)\n", file, line, cudnnGetErrorString(status), detail);
        exit(1);
    }
}
#define cudnnCheck(call) cudnn_check_impl((call), __FILE__, __LINE__)

static void frontend_check_impl(fe::error_t status, const char* file, int line) {
    if (status.is_bad()) {
        fprintf(stderr, "error: cuDNN frontend at %s:%d: %s (frontend error code %d)\n", file, line,
                status.get_message().c_str(), static_cast<int>(status.get_code()));
        exit(1);
    }
}
#define frontendCheck(call) frontend_check_impl((call), __FILE__, __LINE__)

static void frontend_threw(const char* where, const std::exception& e) {
    fprintf(stderr, "error: cuDNN frontend in %s: %s\n", where, e.what());
    exit(1);
}

// The tensors' ids in a graph's variant pack (the pointers handed to execute); the FP8 graphs' scalars after them.
enum { UID_Q = 1, UID_K, UID_V, UID_O, UID_STATS, UID_DO, UID_DQ, UID_DK, UID_DV };
enum {
    UID_DESCALE_Q = 20, UID_DESCALE_K, UID_DESCALE_V, UID_DESCALE_S, UID_SCALE_S, UID_SCALE_O, UID_AMAX_S, UID_AMAX_O,
    UID_DESCALE_O, UID_DESCALE_DO, UID_DESCALE_DP, UID_SCALE_DP, UID_SCALE_DQ, UID_SCALE_DK, UID_SCALE_DV,
    UID_AMAX_DQ, UID_AMAX_DK, UID_AMAX_DV, UID_AMAX_DP
};

enum {
    GRAPH_FORWARD_TRAINING = 0, GRAPH_FORWARD_INFERENCE = 1, GRAPH_BACKWARD = 2,
    GRAPH_FP8_FORWARD_TRAINING = 3, GRAPH_FP8_FORWARD_INFERENCE = 4, GRAPH_FP8_BACKWARD = 5
};
static int graph_is_fp8(int kind) { return kind >= GRAPH_FP8_FORWARD_TRAINING; }
static int graph_is_backward(int kind) { return kind == GRAPH_BACKWARD || kind == GRAPH_FP8_BACKWARD; }

typedef std::array<int, 5> GraphKey;  // kind, B, T, NH, HS

struct BuiltGraph {
    std::shared_ptr<fe::graph::Graph> graph;
    int64_t workspace_bytes;
};

struct CudnnAttention {
    cudnnHandle_t handle;
    void* workspace;
    size_t workspace_bytes;
    std::map<GraphKey, BuiltGraph> graphs;
};

// Shapes and strides of a (B, NH, T, HS) view into a buffer whose consecutive positions t are row_stride elements
// apart: 3C for q, k, v (and their gradients) inside qkv, C for the output and its gradient.
static std::vector<int64_t> bnth_dims(int B, int T, int NH, int HS) { return {B, NH, T, HS}; }
static std::vector<int64_t> bnth_strides(int T, int HS, int64_t row_stride) {
    return {(int64_t)T * row_stride, HS, row_stride, 1};
}

static std::shared_ptr<fe::graph::Tensor_attributes> bnth_input(fe::graph::Graph& graph, const char* name, int64_t uid,
                                                                int B, int T, int NH, int HS, int64_t row_stride) {
    return graph.tensor(fe::graph::Tensor_attributes()
                            .set_name(name)
                            .set_uid(uid)
                            .set_dim(bnth_dims(B, T, NH, HS))
                            .set_stride(bnth_strides(T, HS, row_stride)));
}

static void bnth_output(const std::shared_ptr<fe::graph::Tensor_attributes>& tensor, int64_t uid, int B, int T, int NH,
                        int HS, int64_t row_stride) {
    tensor->set_output(true).set_uid(uid).set_dim(bnth_dims(B, T, NH, HS)).set_stride(bnth_strides(T, HS, row_stride));
}

// The softmax statistics (B, NH, T, 1) fp32, packed (cuDNN before 9.26 reads nothing else in the backward).
static std::vector<int64_t> stats_dims(int B, int T, int NH) { return {B, NH, T, 1}; }
static std::vector<int64_t> stats_strides(int T, int NH) { return {(int64_t)NH * T, T, 1, 1}; }

static std::shared_ptr<fe::graph::Tensor_attributes> stats_input(fe::graph::Graph& graph, int B, int T, int NH) {
    return graph.tensor(fe::graph::Tensor_attributes()
                            .set_name("stats")
                            .set_uid(UID_STATS)
                            .set_data_type(fe::DataType_t::FLOAT)
                            .set_dim(stats_dims(B, T, NH))
                            .set_stride(stats_strides(T, NH)));
}

// The options every graph here shares: causal (the diagonal band's right bound 0, aligned top-left), scale
// 1/sqrt(HS) fused, and its name; A is one of the frontend's four SDPA attribute classes.
template <typename A>
static A causal_options(A options, const char* name, float scale) {
    options.set_name(name).set_attn_scale(scale);
    options.set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT).set_diagonal_band_right_bound(0);
    return options;
}

static void stats_output(const std::shared_ptr<fe::graph::Tensor_attributes>& stats, int B, int T, int NH) {
    stats->set_output(true)
        .set_uid(UID_STATS)
        .set_data_type(fe::DataType_t::FLOAT)
        .set_dim(stats_dims(B, T, NH))
        .set_stride(stats_strides(T, NH));
}

// An FP8 graph's scale, descale or amax: one fp32 on the device, a (1, 1, 1, 1) tensor.
static std::shared_ptr<fe::graph::Tensor_attributes> scalar_input(fe::graph::Graph& graph, const char* name,
                                                                  int64_t uid) {
    return graph.tensor(fe::graph::Tensor_attributes()
                            .set_name(name)
                            .set_uid(uid)
                            .set_dim({1, 1, 1, 1})
                            .set_stride({1, 1, 1, 1})
                            .set_data_type(fe::DataType_t::FLOAT));
}
static void scalar_output(const std::shared_ptr<fe::graph::Tensor_attributes>& tensor, int64_t uid) {
    tensor->set_output(true).set_uid(uid).set_dim({1, 1, 1, 1}).set_stride({1, 1, 1, 1}).set_data_type(
        fe::DataType_t::FLOAT);
}

// The FP8 graphs (delayed scaling's per-tensor scales; HYBRID: E4M3 forward, E5M2 gradients) of this kind and shape,
// into `graph`.
static void define_fp8_graph(fe::graph::Graph& graph, int kind, int B, int T, int NH, int HS) {
    graph.set_io_data_type(fe::DataType_t::FP8_E4M3)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    int64_t C = (int64_t)NH * HS, qkv_row = 3 * C;
    float scale = 1.0f / sqrtf((float)HS);
    auto q = bnth_input(graph, "q", UID_Q, B, T, NH, HS, qkv_row);
    auto k = bnth_input(graph, "k", UID_K, B, T, NH, HS, qkv_row);
    auto v = bnth_input(graph, "v", UID_V, B, T, NH, HS, qkv_row);
    for (auto& x : {q, k, v}) { x->set_data_type(fe::DataType_t::FP8_E4M3); }
    auto descale_q = scalar_input(graph, "descale_q", UID_DESCALE_Q);
    auto descale_k = scalar_input(graph, "descale_k", UID_DESCALE_K);
    auto descale_v = scalar_input(graph, "descale_v", UID_DESCALE_V);
    auto descale_s = scalar_input(graph, "descale_s", UID_DESCALE_S);
    auto scale_s = scalar_input(graph, "scale_s", UID_SCALE_S);
    if (kind != GRAPH_FP8_BACKWARD) {
        int with_stats = kind == GRAPH_FP8_FORWARD_TRAINING;
        auto scale_o = scalar_input(graph, "scale_o", UID_SCALE_O);
        auto options = causal_options(fe::graph::SDPA_fp8_attributes(), "attention_forward_fp8", scale);
        options.set_generate_stats(with_stats);
        // {O, Stats, Amax_S, Amax_O}; Stats is null without statistics
        auto outputs = graph.sdpa_fp8(q, k, v, descale_q, descale_k, descale_v, descale_s, scale_s, scale_o, options);
        bnth_output(outputs[0], UID_O, B, T, NH, HS, C);
        outputs[0]->set_data_type(fe::DataType_t::FP8_E4M3);
        if (with_stats) { stats_output(outputs[1], B, T, NH); }
        scalar_output(outputs[2], UID_AMAX_S);
        scalar_output(outputs[3], UID_AMAX_O);
        return;
    }
    auto o = bnth_input(graph, "o", UID_O, B, T, NH, HS, C);
    o->set_data_type(fe::DataType_t::FP8_E4M3);
    auto dout = bnth_input(graph, "dout", UID_DO, B, T, NH, HS, C);
    dout->set_data_type(fe::DataType_t::FP8_E5M2);
    auto stats = stats_input(graph, B, T, NH);
    auto options = causal_options(fe::graph::SDPA_fp8_backward_attributes(), "attention_backward_fp8", scale);
    options.set_deterministic_algorithm(true);
    // {dQ, dK, dV, Amax_dQ, Amax_dK, Amax_dV, Amax_dP}
    auto grads = graph.sdpa_fp8_backward(
        q, k, v, o, dout, stats, descale_q, descale_k, descale_v, scalar_input(graph, "descale_o", UID_DESCALE_O),
        scalar_input(graph, "descale_dout", UID_DESCALE_DO), descale_s,
        scalar_input(graph, "descale_dp", UID_DESCALE_DP), scale_s, scalar_input(graph, "scale_dq", UID_SCALE_DQ),
        scalar_input(graph, "scale_dk", UID_SCALE_DK), scalar_input(graph, "scale_dv", UID_SCALE_DV),
        scalar_input(graph, "scale_dp", UID_SCALE_DP), options);
    static const int64_t grad_uids[3] = {UID_DQ, UID_DK, UID_DV}, amax_uids[4] = {UID_AMAX_DQ, UID_AMAX_DK,
                                                                                  UID_AMAX_DV, UID_AMAX_DP};
    for (int i = 0; i < 3; i++) {
        bnth_output(grads[i], grad_uids[i], B, T, NH, HS, qkv_row);
        grads[i]->set_data_type(fe::DataType_t::FP8_E5M2);
    }
    for (int i = 0; i < 4; i++) { scalar_output(grads[3 + i], amax_uids[i]); }
}

// Validates and builds a defined graph, keeping it in *built when every step succeeds.
static fe::error_t finish_graph(CudnnAttention* attention, const std::shared_ptr<fe::graph::Graph>& graph,
                                BuiltGraph* built) {
    // each step only after the one before succeeded: the first bad status is the reason
    fe::error_t status = graph->validate();
    if (status.is_good()) { status = graph->build_operation_graph(attention->handle); }
    if (status.is_good()) { status = graph->create_execution_plans({fe::HeurMode_t::A}); }
    if (status.is_good()) { status = graph->check_support(); }
    if (status.is_good()) { status = graph->build_plans(); }
    if (status.is_good()) { status = graph->get_workspace_size(built->workspace_bytes); }
    if (status.is_good()) { built->graph = graph; }
    return status;
}

// Builds the graph of this kind and shape into *built; returns the frontend's status: bad when this cuDNN has no
// engine for it (a head size its SDPA does not support, say), with the library's message, and nothing printed.
static fe::error_t build_graph(CudnnAttention* attention, int kind, int B, int T, int NH, int HS, BuiltGraph* built) {
    auto graph = std::make_shared<fe::graph::Graph>();
    if (graph_is_fp8(kind)) {
        define_fp8_graph(*graph, kind, B, T, NH, HS);
        return finish_graph(attention, graph, built);
    }
    graph->set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    int64_t C = (int64_t)NH * HS, qkv_row = 3 * C;
    float scale = 1.0f / sqrtf((float)HS);
    auto q = bnth_input(*graph, "q", UID_Q, B, T, NH, HS, qkv_row);
    auto k = bnth_input(*graph, "k", UID_K, B, T, NH, HS, qkv_row);
    auto v = bnth_input(*graph, "v", UID_V, B, T, NH, HS, qkv_row);
    if (kind != GRAPH_BACKWARD) {
        int with_stats = kind == GRAPH_FORWARD_TRAINING;
        auto options = causal_options(fe::graph::SDPA_attributes(), "attention_forward", scale);
        options.set_generate_stats(with_stats);
        auto outputs = graph->sdpa(q, k, v, options);  // {O, Stats}; Stats is null without statistics
        bnth_output(outputs[0], UID_O, B, T, NH, HS, C);
        if (with_stats) { stats_output(outputs[1], B, T, NH); }
    } else {
        auto o = bnth_input(*graph, "o", UID_O, B, T, NH, HS, C);
        auto dout = bnth_input(*graph, "dout", UID_DO, B, T, NH, HS, C);
        auto stats = stats_input(*graph, B, T, NH);
        auto options = causal_options(fe::graph::SDPA_backward_attributes(), "attention_backward", scale);
        options.set_deterministic_algorithm(true);
        auto grads = graph->sdpa_backward(q, k, v, o, dout, stats, options);  // {dQ, dK, dV}
        bnth_output(grads[0], UID_DQ, B, T, NH, HS, qkv_row);
        bnth_output(grads[1], UID_DK, B, T, NH, HS, qkv_row);
        bnth_output(grads[2], UID_DV, B, T, NH, HS, qkv_row);
    }
    return finish_graph(attention, graph, built);
}

// The shapes cuDNN's SDPA takes at all (T 1: the frontend's backward refuses s_q = s_kv = 1): NULL, or why not.
static const char* shape_refusal(int B, int T, int C, int NH) {
    if (B < 1 || T < 2 || NH < 1 || C % NH != 0) { return "it needs B >= 1, T >= 2 and C a multiple of NH"; }
    if ((C / NH) % 8 != 0) { return "its head size C/NH must be a multiple of 8"; }
    return NULL;
}

// The graph of this kind and shape, built on first use; a shape cuDNN cannot run exits with its reason (the trainer
// asks cudnn_attention_supported first, and falls back to the plain attention).
static const BuiltGraph& graph_for(CudnnAttention* attention, int kind, int B, int T, int C, int NH) {
    const char* refusal = shape_refusal(B, T, C, NH);
    if (refusal) {
        fprintf(stderr, "error: cuDNN attention cannot run B %d, T %d, C %d, NH %d: %s; -attn plain runs any shape\n", B,
                T, C, NH, refusal);
        exit(1);
    }
    GraphKey key = {kind, B, T, NH, C / NH};
    auto found = attention->graphs.find(key);
    if (found != attention->graphs.end()) { return found->second; }
    BuiltGraph built = {nullptr, 0};
    frontendCheck(build_graph(attention, kind, B, T, NH, C / NH, &built));
    return attention->graphs.emplace(key, built).first->second;
}

static void execute(CudnnAttention* attention, const BuiltGraph& built, std::unordered_map<int64_t, void*>& pointers,
                    cudaStream_t stream) {
    if ((size_t)built.workspace_bytes > attention->workspace_bytes) {
        fprintf(stderr, "error: cuDNN attention needs a workspace of %lld bytes, it was given %zu "
                "(cudnn_attention_prepare returns the size for cudnn_attention_set_workspace)\n",
                (long long)built.workspace_bytes, attention->workspace_bytes);
        exit(1);
    }
    cudnnCheck(cudnnSetStream(attention->handle, stream));
    frontendCheck(built.graph->execute(attention->handle, pointers, attention->workspace));
    cudaCheck(cudaGetLastError());
}

static void* device_pointer(const __nv_bfloat16* p) { return const_cast<__nv_bfloat16*>(p); }

extern "C" CudnnAttention* cudnn_attention_create(void) {
    CudnnAttention* attention = new CudnnAttention();
    attention->workspace = NULL;
    attention->workspace_bytes = 0;
    cudnnCheck(cudnnCreate(&attention->handle));
    return attention;
}

extern "C" void cudnn_attention_destroy(CudnnAttention* attention) {
    if (!attention) { return; }
    try {
        attention->graphs.clear();
    } catch (const std::exception& e) {
        frontend_threw("cudnn_attention_destroy", e);
    }
    cudnnCheck(cudnnDestroy(attention->handle));
    delete attention;
}

// Builds (keeping them) the graphs of these kinds for the shape; 1, or 0 with the reason of the first that cuDNN
// cannot build in why. Never exits on a shape.
static int graphs_supported(CudnnAttention* attention, const int* kinds, int num_kinds, int B, int T, int C, int NH,
                            char* why, size_t why_len) {
    const char* refusal = shape_refusal(B, T, C, NH);
    if (refusal) {
        snprintf(why, why_len, "%s", refusal);
        return 0;
    }
    try {
        for (int i = 0; i < num_kinds; i++) {
            GraphKey key = {kinds[i], B, T, NH, C / NH};
            if (attention->graphs.count(key)) { continue; }
            BuiltGraph built = {nullptr, 0};
            fe::error_t status = build_graph(attention, kinds[i], B, T, NH, C / NH, &built);
            if (status.is_bad()) {
                snprintf(why, why_len, "%s: %s", graph_is_backward(kinds[i]) ? "its backward" : "its forward",
                         status.get_message().c_str());
                return 0;
            }
            attention->graphs.emplace(key, built);  // kept: the prepare function and the calls use it
        }
    } catch (const std::exception& e) {  // the frontend can throw where no implementation takes a shape
        snprintf(why, why_len, "the frontend threw: %s", e.what());
        return 0;
    }
    return 1;
}

// The largest workspace of these kinds' graphs, built on first use (a shape cuDNN cannot run exits with its reason).
static size_t graphs_prepare(CudnnAttention* attention, const int* kinds, int num_kinds, int B, int T, int C, int NH,
                             const char* where) {
    try {
        size_t largest = 0;
        for (int i = 0; i < num_kinds; i++) {
            size_t bytes = (size_t)graph_for(attention, kinds[i], B, T, C, NH).workspace_bytes;
            if (bytes > largest) { largest = bytes; }
        }
        return largest;
    } catch (const std::exception& e) {
        frontend_threw(where, e);
    }
    return 0;
}

static const int BF16_KINDS[3] = {GRAPH_FORWARD_TRAINING, GRAPH_FORWARD_INFERENCE, GRAPH_BACKWARD};
static const int FP8_KINDS[3] = {GRAPH_FP8_FORWARD_TRAINING, GRAPH_FP8_FORWARD_INFERENCE, GRAPH_FP8_BACKWARD};

extern "C" int cudnn_attention_supported(CudnnAttention* attention, int B, int T, int C, int NH, char* why,
                                         size_t why_len) {
    return graphs_supported(attention, BF16_KINDS, 3, B, T, C, NH, why, why_len);
}

extern "C" size_t cudnn_attention_prepare(CudnnAttention* attention, int B, int T, int C, int NH) {
    return graphs_prepare(attention, BF16_KINDS, 3, B, T, C, NH, "cudnn_attention_prepare");
}

extern "C" int cudnn_attention_fp8_supported(CudnnAttention* attention, int B, int T, int C, int NH, int backward,
                                             char* why, size_t why_len) {
    return graphs_supported(attention, FP8_KINDS, backward ? 3 : 2, B, T, C, NH, why, why_len);
}

extern "C" size_t cudnn_attention_fp8_prepare(CudnnAttention* attention, int B, int T, int C, int NH, int backward) {
    return graphs_prepare(attention, FP8_KINDS, backward ? 3 : 2, B, T, C, NH, "cudnn_attention_fp8_prepare");
}

extern "C" void cudnn_attention_set_workspace(CudnnAttention* attention, void* workspace, size_t bytes) {
    attention->workspace = workspace;
    attention->workspace_bytes = bytes;
}

extern "C" void attention_forward_cudnn(CudnnAttention* attention, __nv_bfloat16* out, float* stats,
                                        const __nv_bfloat16* qkv, int B, int T, int C, int NH, cudaStream_t stream) {
    try {
        int kind = stats ? GRAPH_FORWARD_TRAINING : GRAPH_FORWARD_INFERENCE;
        const BuiltGraph& built = graph_for(attention, kind, B, T, C, NH);
        std::unordered_map<int64_t, void*> pointers = {
            {UID_Q, device_pointer(qkv)}, {UID_K, device_pointer(qkv + C)}, {UID_V, device_pointer(qkv + 2 * C)},
            {UID_O, out}};
        if (stats) { pointers[UID_STATS] = stats; }
        execute(attention, built, pointers, stream);
    } catch (const std::exception& e) {
        frontend_threw("attention_forward_cudnn", e);
    }
}

extern "C" void attention_backward_cudnn(CudnnAttention* attention, __nv_bfloat16* dqkv, const __nv_bfloat16* dout,
                                         const __nv_bfloat16* qkv, const __nv_bfloat16* out, const float* stats, int B,
                                         int T, int C, int NH, cudaStream_t stream) {
    try {
        const BuiltGraph& built = graph_for(attention, GRAPH_BACKWARD, B, T, C, NH);
        std::unordered_map<int64_t, void*> pointers = {
            {UID_Q, device_pointer(qkv)},  {UID_K, device_pointer(qkv + C)}, {UID_V, device_pointer(qkv + 2 * C)},
            {UID_O, device_pointer(out)},  {UID_DO, device_pointer(dout)},   {UID_STATS, const_cast<float*>(stats)},
            {UID_DQ, dqkv},                {UID_DK, dqkv + C},               {UID_DV, dqkv + 2 * C}};
        execute(attention, built, pointers, stream);
    } catch (const std::exception& e) {
        frontend_threw("attention_backward_cudnn", e);
    }
}

// An FP8 graph's scale, descale or amax pointer: refused in one line when missing or not 16-byte aligned.
static void* fp8_scalar(const char* where, const char* name, const float* p) {
    if (p == NULL || ((uintptr_t)p & 15u) != 0) {
        fprintf(stderr, "error: %s: %s is %s (one fp32 on the device, 16-byte aligned)\n", where, name,
                p == NULL ? "missing" : "not 16-byte aligned");
        exit(1);
    }
    return const_cast<float*>(p);
}

static void* device_bytes(const uint8_t* p) { return const_cast<uint8_t*>(p); }

// The variant pack's entries both FP8 graphs share: q, k, v as views into qkv, and the one descale they all take.
static std::unordered_map<int64_t, void*> fp8_qkv_pointers(const char* where, const uint8_t* qkv, int C,
                                                           const float* descale_qkv) {
    void* descale = fp8_scalar(where, "descale_qkv", descale_qkv);
    return {{UID_Q, device_bytes(qkv)},        {UID_K, device_bytes(qkv + C)}, {UID_V, device_bytes(qkv + 2 * C)},
            {UID_DESCALE_Q, descale},          {UID_DESCALE_K, descale},       {UID_DESCALE_V, descale}};
}

extern "C" void attention_forward_cudnn_fp8(CudnnAttention* attention, uint8_t* out, float* stats, const uint8_t* qkv,
                                            const CudnnFp8ForwardScales* scales, int B, int T, int C, int NH,
                                            cudaStream_t stream) {
    const char* where = "attention_forward_cudnn_fp8";
    try {
        int kind = stats ? GRAPH_FP8_FORWARD_TRAINING : GRAPH_FP8_FORWARD_INFERENCE;
        const BuiltGraph& built = graph_for(attention, kind, B, T, C, NH);
        std::unordered_map<int64_t, void*> pointers = fp8_qkv_pointers(where, qkv, C, scales->descale_qkv);
        pointers[UID_O] = out;
        pointers[UID_DESCALE_S] = fp8_scalar(where, "descale_s", scales->descale_s);
        pointers[UID_SCALE_S] = fp8_scalar(where, "scale_s", scales->scale_s);
        pointers[UID_SCALE_O] = fp8_scalar(where, "scale_o", scales->scale_o);
        pointers[UID_AMAX_S] = fp8_scalar(where, "amax_s", scales->amax_s);
        pointers[UID_AMAX_O] = fp8_scalar(where, "amax_o", scales->amax_o);
        if (stats) { pointers[UID_STATS] = stats; }
        execute(attention, built, pointers, stream);
    } catch (const std::exception& e) {
        frontend_threw(where, e);
    }
}

extern "C" void attention_backward_cudnn_fp8(CudnnAttention* attention, uint8_t* dqkv, const uint8_t* dout,
                                             const uint8_t* qkv, const uint8_t* out, const float* stats,
                                             const CudnnFp8BackwardScales* scales, int B, int T, int C, int NH,
                                             cudaStream_t stream) {
    const char* where = "attention_backward_cudnn_fp8";
    try {
        const BuiltGraph& built = graph_for(attention, GRAPH_FP8_BACKWARD, B, T, C, NH);
        void* scale_dqkv = fp8_scalar(where, "scale_dqkv", scales->scale_dqkv);
        std::unordered_map<int64_t, void*> pointers = fp8_qkv_pointers(where, qkv, C, scales->descale_qkv);
        const std::pair<int64_t, void*> rest[] = {
            {UID_O, device_bytes(out)},
            {UID_DO, device_bytes(dout)},
            {UID_STATS, const_cast<float*>(stats)},
            {UID_DQ, dqkv},
            {UID_DK, dqkv + C},
            {UID_DV, dqkv + 2 * C},
            {UID_DESCALE_O, fp8_scalar(where, "descale_o", scales->descale_o)},
            {UID_DESCALE_DO, fp8_scalar(where, "descale_dout", scales->descale_dout)},
            {UID_DESCALE_S, fp8_scalar(where, "descale_s", scales->descale_s)},
            {UID_SCALE_S, fp8_scalar(where, "scale_s", scales->scale_s)},
            {UID_DESCALE_DP, fp8_scalar(where, "descale_dp", scales->descale_dp)},
            {UID_SCALE_DP, fp8_scalar(where, "scale_dp", scales->scale_dp)},
            {UID_SCALE_DQ, scale_dqkv},
            {UID_SCALE_DK, scale_dqkv},
            {UID_SCALE_DV, scale_dqkv},
            {UID_AMAX_DQ, fp8_scalar(where, "amax_dq", scales->amax_dq)},
            {UID_AMAX_DK, fp8_scalar(where, "amax_dk", scales->amax_dk)},
            {UID_AMAX_DV, fp8_scalar(where, "amax_dv", scales->amax_dv)},
            {UID_AMAX_DP, fp8_scalar(where, "amax_dp", scales->amax_dp)}};
        pointers.insert(std::begin(rest), std::end(rest));
        execute(attention, built, pointers, stream);
    } catch (const std::exception& e) {
        frontend_threw(where, e);
    }
}
