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

FP8 attention (Transformer Engine's fp8_dpa under delayed scaling; cuDNN 9.1 or later, not 9.10.0, on Hopper or newer:
the frontend's rules, whose reason the support query returns): the same causal attention through the frontend's
sdpa_fp8 / sdpa_fp8_backward graphs, with per-tensor scales that the caller keeps (amax histories) and passes as device
pointers. What is FP8, and in which format (HYBRID, as TE):
    q, k, v   E4M3, one tensor (B, T, 3, NH, HS) with one scale, as TE's QKV quantizer (the cast of the qkv activation)
    S         E4M3: the softmax output, quantized inside the kernel with scale_s before it multiplies v
    o         E4M3 (B, T, NH, HS) with scale_o: the attention projection's FP8 input as it is
    dout, dP  E5M2: the output's gradient (cast by the caller), and dP = dout v^T inside the backward with scale_dp
    dq dk dv  E5M2 (B, T, 3, NH, HS) with one scale, as TE's dQKV quantizer: the qkv linear's FP8 grad_output
The statistics (B, NH, T) stay fp32, the accumulations inside fp32. The graphs return the amax of S and o (forward) and
of dq, dk, dv and dP (backward): the values before their quantization, each one fp32 written (not max-reduced).
On Hopper, cuDNN's FP8 backward takes head size 128 only (the frontend's rule; TE's too: "sm90: fwd d<=256, bwd
d=128 only"), so GPT-2's heads of 64 run the FP8 forward only: cudnn_attention_fp8_supported says which.
Every scale, descale and amax pointer is one fp32 on the device, 16-byte aligned (the trainer's 16-byte-strided
scale_inv copy gives that; a misaligned one is refused in one line).

Built only when the Makefile finds cuDNN and the frontend's headers (ENABLE_CUDNN); the plain attention of
llmc/attention.cuh does the same math with a (B, NH, T, T) matrix per layer.
*/
#ifndef GPTFP8_CUDNN_ATTENTION_H
#define GPTFP8_CUDNN_ATTENTION_H

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

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

// ----------------------------------------------------------------------------
// FP8 attention (delayed scaling): the scales, as device pointers to one fp32 each

typedef struct {
    const float* descale_qkv;  // scale_inv of the E4M3 qkv tensor (q, k and v share it)
    const float* descale_s;    // scale_inv of the E4M3 softmax output
    const float* scale_s;      // its scale
    const float* scale_o;      // the scale o is cast with
    float* amax_s;             // written: max of the softmax output
    float* amax_o;             // written: max |o| before its cast
} CudnnFp8ForwardScales;

typedef struct {
    const float* descale_qkv;   // as the forward's
    const float* descale_o;     // scale_inv of the forward's E4M3 o
    const float* descale_dout;  // scale_inv of the E5M2 dout
    const float* descale_s;     // the forward's softmax scale_inv and scale (S is recomputed and quantized again)
    const float* scale_s;
    const float* descale_dp;    // dP's scale_inv and scale (E5M2)
    const float* scale_dp;
    const float* scale_dqkv;    // the scale dq, dk and dv are cast with (E5M2)
    float *amax_dq, *amax_dk, *amax_dv, *amax_dp;  // written: each max |x| before its cast
} CudnnFp8BackwardScales;

// Whether this cuDNN, on this GPU, runs the FP8 attention of this shape: the forward with and without statistics and,
// when `backward`, the FP8 backward; builds (once, keeping them) those graphs. 1, or 0 with the reason in why (the
// frontend's own message: on Hopper, a backward whose head size is not 128). Never exits on a shape.
int cudnn_attention_fp8_supported(CudnnAttention* attention, int B, int T, int C, int NH, int backward, char* why,
                                  size_t why_len);

// Builds (once) the FP8 forward graphs and, when `backward`, the FP8 backward of this shape; returns the largest
// workspace in bytes any of them needs. A shape cuDNN cannot run exits with its reason (ask the query first).
size_t cudnn_attention_fp8_prepare(CudnnAttention* attention, int B, int T, int C, int NH, int backward);

// out (B, T, C) E4M3 = the causal attention of q, k, v from qkv (B, T, 3C) E4M3, quantized with scales->scale_o;
// stats (B, NH, T) fp32 as the BF16 forward's, or NULL (evaluation: the graph without statistics). The amaxes of S
// and o go to scales->amax_s and amax_o.
void attention_forward_cudnn_fp8(CudnnAttention* attention, uint8_t* out, float* stats, const uint8_t* qkv,
                                 const CudnnFp8ForwardScales* scales, int B, int T, int C, int NH,
                                 cudaStream_t stream);

// dqkv (B, T, 3C) E5M2 (dq, dk, dv in qkv's layout, cast with scales->scale_dqkv) from dout (B, T, C) E5M2 and the
// forward's qkv, out (E4M3) and stats; the amaxes of dq, dk, dv and dP to the scales' amax cells.
void attention_backward_cudnn_fp8(CudnnAttention* attention, uint8_t* dqkv, const uint8_t* dout, const uint8_t* qkv,
                                  const uint8_t* out, const float* stats, const CudnnFp8BackwardScales* scales, int B,
                                  int T, int C, int NH, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif  // GPTFP8_CUDNN_ATTENTION_H
