/*
llmc/cudnn_attention.h — the C interface of llmc/cudnn_attention.cpp: causal multi-head self-attention through cuDNN's
fused flash attention (the cuDNN frontend's SDPA operation), forward and backward, for the C-style CUDA code.

It reads q, k, v straight out of the qkv activation (B, T, 3, NH, HS) through strided views (no permute), writes the
output as (B, T, NH, HS) = (B, T, C), and keeps for the backward only the softmax statistics (B, NH, T) fp32 (the
log-sum-exp of each row of scaled scores), never the (B, NH, T, T) attention matrix. BF16 in and out, fp32 softmax,
scale 1/sqrt(HS), causal. The backward is cuDNN's deterministic one, so the same inputs give the same bits.

Graphs are built once per shape (B, T, NH, HS) and kept: cudnn_attention_prepare builds the three a training run uses
(forward with statistics, forward without them for evaluation and sampling, backward) and returns the largest
workspace they ask for; the caller hands one workspace to cudnn_attention_set_workspace (the GPU trainer shares
cuBLASLt's when it is large enough). Every cuDNN and frontend failure prints file, line and the library's message and
exits, like cudaCheck.

Built only when the Makefile finds cuDNN and the frontend's headers (ENABLE_CUDNN); the plain attention of
llmc/attention.cuh does the same math with a (B, NH, T, T) matrix per layer.
*/
#ifndef GPTFP8_CUDNN_ATTENTION_H
#define GPTFP8_CUDNN_ATTENTION_H

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct CudnnAttention CudnnAttention;  // a cuDNN handle and the graphs built so far

CudnnAttention* cudnn_attention_create(void);
void cudnn_attention_destroy(CudnnAttention* attention);

// Whether this cuDNN, on this GPU, can run the attention of this shape: builds (once, keeping them) the three graphs
// cudnn_attention_prepare builds; returns 1, or 0 with the reason in why (the frontend's own message, e.g. for a head
// size its fused SDPA does not support, or a head size that is not a multiple of 8, or T < 2). Never exits on a shape.
int cudnn_attention_supported(CudnnAttention* attention, int B, int T, int C, int NH, char* why, size_t why_len);

// Builds (once) the forward with statistics, the forward without, and the backward graph of this shape; returns the
// largest workspace in bytes any of them needs. C = NH * HS; a shape cuDNN cannot run exits with cuDNN's reason (ask
// cudnn_attention_supported first).
size_t cudnn_attention_prepare(CudnnAttention* attention, int B, int T, int C, int NH);

// The device workspace every later call uses (stream-ordered: one stream at a time may run the attention).
void cudnn_attention_set_workspace(CudnnAttention* attention, void* workspace, size_t bytes);

// out (B, T, C) = causal softmax(q k^T / sqrt(HS)) v per head, q, k, v from qkv (B, T, 3C); stats (B, NH, T) fp32
// receives each row's log-sum-exp for the backward, or is NULL (evaluation: the graph without statistics).
void attention_forward_cudnn(CudnnAttention* attention, __nv_bfloat16* out, float* stats, const __nv_bfloat16* qkv,
                             int B, int T, int C, int NH, cudaStream_t stream);

// dqkv (B, T, 3C) written (dq, dk, dv in qkv's layout) from dout (B, T, C) and the forward's qkv, out and stats.
void attention_backward_cudnn(CudnnAttention* attention, __nv_bfloat16* dqkv, const __nv_bfloat16* dout,
                              const __nv_bfloat16* qkv, const __nv_bfloat16* out, const float* stats, int B, int T,
                              int C, int NH, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif  // GPTFP8_CUDNN_ATTENTION_H
