/*
dev/cuda/emulate/cublas_emulation.h — the part of cuBLASLt this project's GEMMs call (llmc/gemm.cuh), and of cuBLAS
the plain attention calls (llmc/attention.cuh's batched bf16 GEMMs), computed on the CPU, so that the GPU trainer runs
under dev/cuda/emulate/cuda_emulation.h (included after it, g++ -include): test_gpt_fp8 then runs every case that
needs no cuDNN in CI, without a GPU. Both queue their GEMMs on the stream like a kernel.

What it computes: D = alpha * scale_a * scale_b * op(A) @ op(B) + beta * C (+ a bf16 bias per row of D, the
BIAS epilogue), column-major as cuBLASLt's, A and B in bf16, fp32, E4M3 or E5M2, D in bf16 (round to nearest) or
fp32. FP8 operands take cuBLASLt's scalar scale pointers (read when the GEMM runs, as on the device) or its Hopper
block scales (VEC128_32F: 1x128 blocks along k; BLK128x128_32F: 128x128 tiles; fp8/block.h's layouts), each element
multiplied by its block's scale_inv before the product. Sums in float, k in ascending order within each of 8 lanes,
the lanes then added in order; "algorithm" a (the heuristic answers four, 0 to 3) cuts k into a + 1 slices summed
apart and then in order, so that two algorithms give different bits, as cuBLASLt's may, and a choice of algorithm
matters (llmc/gemm.cuh's -gemm_autotune and its choices file).
What it refuses, as cuBLASLt does on Hopper (CUBLAS_STATUS_NOT_SUPPORTED at the call): an FP8 GEMM that is not TN,
with m, n or k not a multiple of 16, with A or B or a scale pointer not 16-byte aligned; block scales on a non-FP8
operand, with k not a multiple of 128, with fast accumulation, with a bias, or with both operands in 128x128 tiles.
What it is not: cuBLASLt's bits. Its summation order, FP8 fast accumulation (kept here at full float precision)
and rounding inside are not emulated; a test that compares GPU against CPU within a derived tolerance holds here, one
that compares two GPU runs holds when they run the same algorithms, as on a GPU.
*/
#ifndef GPTFP8_CUBLAS_EMULATION_H
#define GPTFP8_CUBLAS_EMULATION_H

#include <cublasLt.h>
#include <cublas_v2.h>

#define CUBLASLT_EMULATION_ALGOS 4
#define CUBLASLT_EMULATION_ALGO_TAG 0x656d756c61746564ull  // "emulated": data[1] of an algorithm this file answered

typedef struct {
    int trans_a, trans_b, fast_accum;
    int32_t a_scale_mode, b_scale_mode;
    const float* a_scale;
    const float* b_scale;
    cublasLtEpilogue_t epilogue;
    cudaDataType_t bias_type;
    const void* bias;
} CublasLtEmulationDesc;

typedef struct {
    cudaDataType_t type;
    uint64_t rows, cols;
    int64_t ld;
} CublasLtEmulationLayout;

static inline int cublaslt_emulation_is_fp8(cudaDataType_t t) { return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2; }

static inline int cublaslt_emulation_is_block(int32_t mode) {
    return mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F || mode == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
}

// Every FP8 byte as a float, in both formats (CUDA's host conversions), made once: C++ makes a function's static
// thread-safe on first use, which the GEMMs' OpenMP threads may be.
typedef struct {
    float e4m3[256], e5m2[256];
} CublasEmulationFp8Table;
static const CublasEmulationFp8Table& cublaslt_emulation_fp8_table(void) {
    static const CublasEmulationFp8Table table = []() {
        CublasEmulationFp8Table t;
        for (int b = 0; b < 256; b++) {
            __nv_fp8_e4m3 x;
            __nv_fp8_e5m2 y;
            x.__x = (__nv_fp8_storage_t)b;
            y.__x = (__nv_fp8_storage_t)b;
            t.e4m3[b] = (float)x;
            t.e5m2[b] = (float)y;
        }
        return t;
    }();
    return table;
}

// An element of a matrix in one of the types above, as a float.
static inline float cublaslt_emulation_load(const void* p, cudaDataType_t type, size_t i) {
    switch (type) {
        case CUDA_R_8F_E4M3: return cublaslt_emulation_fp8_table().e4m3[((const uint8_t*)p)[i]];
        case CUDA_R_8F_E5M2: return cublaslt_emulation_fp8_table().e5m2[((const uint8_t*)p)[i]];
        case CUDA_R_16BF: return __bfloat162float(((const __nv_bfloat16*)p)[i]);
        default: return ((const float*)p)[i];
    }
}

// op(X) as `outer` rows of k contiguous floats: X is stored (outer, k) column-major when k_inner is 0 (element (o, kk)
// at o + kk * ld), else (k, outer) (at kk + o * ld); block scales (scale_mode) multiply each element.
static std::vector<float> cublaslt_emulation_rows(const void* x, cudaDataType_t type, int64_t ld, int k_inner,
                                                  size_t outer, size_t k, int32_t scale_mode, const float* scale) {
    std::vector<float> rows(outer * k);
    size_t k_blocks = (k + 127) / 128;
    for (size_t o = 0; o < outer; o++) {
        for (size_t kk = 0; kk < k; kk++) {
            float v = cublaslt_emulation_load(x, type, k_inner ? kk + o * (size_t)ld : o + kk * (size_t)ld);
            if (scale_mode == CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F) {
                v *= scale[kk / 128 * ((outer + 3) / 4 * 4) + o];
            } else if (scale_mode == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F) {
                v *= scale[o / 128 * ((k_blocks + 3) / 4 * 4) + kk / 128];
            }
            rows[o * k + kk] = v;
        }
    }
    return rows;
}

// The dot products of R k-long rows a[r * k ...] with one row b, as algorithm `algo` sums each (the top): out[r].
// R rows at once only so that b is loaded once for them; a row's sum is the same alone. Eight lanes are one vector
// (GCC's vector extension: a multiply, then an add, per lane); compiled for AVX2 too where the CPU has it, which with
// no contraction (-ffp-contract=off) gives the same bits.
typedef float CublasEmulationLanes __attribute__((vector_size(32)));

template <int R>
__attribute__((always_inline)) static inline void cublaslt_emulation_dots(const float* a, const float* b, size_t k,
                                                                           int algo, float* out) {
    int slices = algo + 1;
    float total[R];
    for (int r = 0; r < R; r++) { total[r] = 0.0f; }
    for (int s = 0; s < slices; s++) {
        size_t begin = k * s / slices / 16 * 16, end = s + 1 == slices ? k : k * (s + 1) / slices / 16 * 16;
        CublasEmulationLanes lanes[R];
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) { lanes[r] = CublasEmulationLanes{0, 0, 0, 0, 0, 0, 0, 0}; }
        size_t kk = begin;
        for (; kk + 8 <= end; kk += 8) {
            CublasEmulationLanes bv, av;
            memcpy(&bv, b + kk, sizeof(bv));
#pragma GCC unroll 4
            for (int r = 0; r < R; r++) {
                memcpy(&av, a + r * k + kk, sizeof(av));
                lanes[r] += av * bv;
            }
        }
        for (int r = 0; r < R; r++) {
            float lane[8];
            memcpy(lane, &lanes[r], sizeof(lane));
            for (size_t t = kk; t < end; t++) { lane[t % 8] += a[r * k + t] * b[t]; }
            float sum = 0.0f;
            for (int l = 0; l < 8; l++) { sum += lane[l]; }
            total[r] += sum;
        }
    }
    for (int r = 0; r < R; r++) { out[r] = total[r]; }
}
__attribute__((target_clones("avx2", "default")))
static void cublaslt_emulation_dots4(const float* a, const float* b, size_t k, int algo, float* out) {
    cublaslt_emulation_dots<4>(a, b, k, algo, out);
}
__attribute__((target_clones("avx2", "default")))
static void cublaslt_emulation_dots1(const float* a, const float* b, size_t k, int algo, float* out) {
    cublaslt_emulation_dots<1>(a, b, k, algo, out);
}

typedef struct {
    CublasLtEmulationDesc desc;
    CublasLtEmulationLayout a, b, c, d;
    float alpha, beta;
    const void *a_data, *b_data, *c_data;
    void* d_data;
    int algo;
} CublasLtEmulationCall;

// One GEMM, when the queue gets to it (everything it reads from the device is read now).
static void cublaslt_emulation_run(const CublasLtEmulationCall* call) {
    const CublasLtEmulationDesc* desc = &call->desc;
    size_t m = call->d.rows, n = call->d.cols, k = desc->trans_a ? call->a.rows : call->a.cols;
    std::vector<float> a = cublaslt_emulation_rows(call->a_data, call->a.type, call->a.ld, desc->trans_a, m, k,
                                                   desc->a_scale_mode, desc->a_scale);
    std::vector<float> b = cublaslt_emulation_rows(call->b_data, call->b.type, call->b.ld, !desc->trans_b, n, k,
                                                   desc->b_scale_mode, desc->b_scale);
    float scale = call->alpha;
    if (cublaslt_emulation_is_fp8(call->a.type) && !cublaslt_emulation_is_block(desc->a_scale_mode) && desc->a_scale) {
        scale *= *desc->a_scale;
    }
    if (cublaslt_emulation_is_fp8(call->b.type) && !cublaslt_emulation_is_block(desc->b_scale_mode) && desc->b_scale) {
        scale *= *desc->b_scale;
    }
    const float* a_rows = a.data();
    const float* b_rows = b.data();
#pragma omp parallel for schedule(static)
    for (long long j = 0; j < (long long)n; j++) {
        float dots[4];
        for (size_t i = 0; i < m; i++) {
            if (i % 4 == 0 && m - i >= 4) {
                cublaslt_emulation_dots4(a_rows + i * k, b_rows + (size_t)j * k, k, call->algo, dots);
            } else if (i % 4 == 0) {
                for (size_t r = 0; i + r < m; r++) {
                    cublaslt_emulation_dots1(a_rows + (i + r) * k, b_rows + (size_t)j * k, k, call->algo, &dots[r]);
                }
            }
            float v = scale * dots[i % 4];
            if (call->beta != 0.0f) {
                v += call->beta * cublaslt_emulation_load(call->c_data, call->c.type, i + (size_t)j * call->c.ld);
            }
            if (desc->epilogue == CUBLASLT_EPILOGUE_BIAS) {
                v += cublaslt_emulation_load(desc->bias, desc->bias_type, i);
            }
            size_t at = i + (size_t)j * call->d.ld;
            if (call->d.type == CUDA_R_16BF) {
                ((__nv_bfloat16*)call->d_data)[at] = __float2bfloat16(v);
            } else {
                ((float*)call->d_data)[at] = v;
            }
        }
    }
}

// Whether cuBLASLt on Hopper runs this problem (the top's refusals): CUBLAS_STATUS_SUCCESS or NOT_SUPPORTED.
static cublasStatus_t cublaslt_emulation_supported(const CublasLtEmulationDesc* desc, const CublasLtEmulationLayout* a,
                                                   const CublasLtEmulationLayout* b, const CublasLtEmulationLayout* d,
                                                   const void* a_data, const void* b_data) {
    uint64_t m = d->rows, n = d->cols, k = desc->trans_a ? a->rows : a->cols;
    uint64_t a_m = desc->trans_a ? a->cols : a->rows, b_k = desc->trans_b ? b->cols : b->rows;
    uint64_t b_n = desc->trans_b ? b->rows : b->cols;
    if (a_m != m || b_k != k || b_n != n) { return CUBLAS_STATUS_INVALID_VALUE; }
    if (d->type != CUDA_R_16BF && d->type != CUDA_R_32F) { return CUBLAS_STATUS_NOT_SUPPORTED; }
    int fp8 = cublaslt_emulation_is_fp8(a->type) || cublaslt_emulation_is_fp8(b->type);
    int block = cublaslt_emulation_is_block(desc->a_scale_mode) || cublaslt_emulation_is_block(desc->b_scale_mode);
    if (!fp8 && !block) { return a->type == b->type ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_SUPPORTED; }
    if (!cublaslt_emulation_is_fp8(a->type) || !cublaslt_emulation_is_fp8(b->type)) {
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    if (!desc->trans_a || desc->trans_b || m % 16 || n % 16 || k % 16) { return CUBLAS_STATUS_NOT_SUPPORTED; }
    if (((uintptr_t)a_data | (uintptr_t)b_data | (uintptr_t)desc->a_scale | (uintptr_t)desc->b_scale) % 16) {
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    int32_t a_mode = desc->a_scale_mode, b_mode = desc->b_scale_mode;
    if (block && (!cublaslt_emulation_is_block(a_mode) || !cublaslt_emulation_is_block(b_mode) || k % 128 ||
                  desc->fast_accum || desc->epilogue != CUBLASLT_EPILOGUE_DEFAULT || !desc->a_scale ||
                  !desc->b_scale || (a_mode == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F &&
                                     b_mode == CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F))) {
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    return CUBLAS_STATUS_SUCCESS;
}

// cuBLAS's batched GEMM (llmc/attention.cuh): C (m, n) = alpha * op(A) @ op(B) + beta * C per batch entry, bf16 in and
// out, summed as the first algorithm above.
typedef struct {
    cublasOperation_t trans_a, trans_b;
    int m, n, k, lda, ldb, ldc, batch;
    long long stride_a, stride_b, stride_c;
    float alpha, beta;
    const void *a, *b;
    void* c;
} CublasEmulationBatched;

static void cublas_emulation_run_batched(const CublasEmulationBatched* g) {
    for (int e = 0; e < g->batch; e++) {
        const __nv_bfloat16* a = (const __nv_bfloat16*)g->a + e * g->stride_a;
        const __nv_bfloat16* b = (const __nv_bfloat16*)g->b + e * g->stride_b;
        __nv_bfloat16* c = (__nv_bfloat16*)g->c + e * g->stride_c;
        std::vector<float> a_rows = cublaslt_emulation_rows(a, CUDA_R_16BF, g->lda, g->trans_a == CUBLAS_OP_T,
                                                            (size_t)g->m, (size_t)g->k, 0, NULL);
        std::vector<float> b_rows = cublaslt_emulation_rows(b, CUDA_R_16BF, g->ldb, g->trans_b != CUBLAS_OP_T,
                                                            (size_t)g->n, (size_t)g->k, 0, NULL);
        for (int j = 0; j < g->n; j++) {
            for (int i = 0; i < g->m; i++) {
                float dot;
                cublaslt_emulation_dots1(&a_rows[(size_t)i * g->k], &b_rows[(size_t)j * g->k], (size_t)g->k, 0, &dot);
                float v = g->alpha * dot;
                __nv_bfloat16* out = &c[i + (size_t)j * g->ldc];
                if (g->beta != 0.0f) { v += g->beta * __bfloat162float(*out); }
                *out = __float2bfloat16(v);
            }
        }
    }
}

extern "C" {
cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
    *handle = (cublasHandle_t) new cudaStream_t(0);  // the stream its calls are queued on
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
    delete (cudaStream_t*)handle;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
    *(cudaStream_t*)handle = stream;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t, void*, size_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t trans_a, cublasOperation_t trans_b,
                                          int m, int n, int k, const void* alpha, const void* a, cudaDataType a_type,
                                          int lda, long long stride_a, const void* b, cudaDataType b_type, int ldb,
                                          long long stride_b, const void* beta, void* c, cudaDataType c_type, int ldc,
                                          long long stride_c, int batch, cublasComputeType_t compute,
                                          cublasGemmAlgo_t) {
    if (a_type != CUDA_R_16BF || b_type != CUDA_R_16BF || c_type != CUDA_R_16BF || compute != CUBLAS_COMPUTE_32F) {
        return CUBLAS_STATUS_NOT_SUPPORTED;  // the one kind of batched GEMM emulated
    }
    if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < (trans_a == CUBLAS_OP_T ? k : m) ||
        ldb < (trans_b == CUBLAS_OP_T ? n : k) || ldc < m) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    CublasEmulationBatched g = {trans_a, trans_b, m, n, k, lda, ldb, ldc, batch, stride_a, stride_b, stride_c,
                                *(const float*)alpha, *(const float*)beta, a, b, c};
    if (cuda_emulation_enqueue(*(cudaStream_t*)handle, [g]() { cublas_emulation_run_batched(&g); }) != cudaSuccess) {
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}
const char* cublasGetStatusName(cublasStatus_t status) {
    switch (status) {
        case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
        case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
        case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
        default: return "CUBLAS_STATUS (other)";
    }
}
const char* cublasGetStatusString(cublasStatus_t status) { return cublasGetStatusName(status); }
size_t cublasLtGetVersion(void) { return 130100; }  // block-scaled GEMMs from 12.9 on (llmc/gemm.cuh)
cublasStatus_t cublasLtCreate(cublasLtHandle_t* handle) {
    *handle = (cublasLtHandle_t) new int(0);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
    delete (int*)handle;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute, cudaDataType_t scale) {
    if (compute != CUBLAS_COMPUTE_32F || scale != CUDA_R_32F) { return CUBLAS_STATUS_NOT_SUPPORTED; }
    CublasLtEmulationDesc* d = new CublasLtEmulationDesc();
    d->epilogue = CUBLASLT_EPILOGUE_DEFAULT;
    d->bias_type = CUDA_R_16BF;
    *desc = (cublasLtMatmulDesc_t)d;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
    delete (CublasLtEmulationDesc*)desc;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t bytes) {
    CublasLtEmulationDesc* d = (CublasLtEmulationDesc*)desc;
    int32_t i32 = 0;
    if (bytes == 4) { memcpy(&i32, buf, 4); }
    switch (attr) {  // (each attribute's size as cuBLASLt takes it: int32, int8 for FAST_ACCUM, or a pointer)
        case CUBLASLT_MATMUL_DESC_TRANSA: d->trans_a = i32 == CUBLAS_OP_T; break;
        case CUBLASLT_MATMUL_DESC_TRANSB: d->trans_b = i32 == CUBLAS_OP_T; break;
        case CUBLASLT_MATMUL_DESC_FAST_ACCUM: d->fast_accum = *(const int8_t*)buf != 0; return CUBLAS_STATUS_SUCCESS;
        case CUBLASLT_MATMUL_DESC_A_SCALE_MODE: d->a_scale_mode = i32; break;
        case CUBLASLT_MATMUL_DESC_B_SCALE_MODE: d->b_scale_mode = i32; break;
        case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: d->bias_type = (cudaDataType_t)i32; break;
        case CUBLASLT_MATMUL_DESC_EPILOGUE:
            d->epilogue = (cublasLtEpilogue_t)i32;
            if (d->epilogue != CUBLASLT_EPILOGUE_DEFAULT && d->epilogue != CUBLASLT_EPILOGUE_BIAS) {
                return CUBLAS_STATUS_NOT_SUPPORTED;  // an epilogue this emulation does not compute
            }
            break;
        case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
        case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
        case CUBLASLT_MATMUL_DESC_BIAS_POINTER: {
            if (bytes != sizeof(void*)) { return CUBLAS_STATUS_INVALID_VALUE; }
            const void** to = attr == CUBLASLT_MATMUL_DESC_BIAS_POINTER ? &d->bias
                              : attr == CUBLASLT_MATMUL_DESC_A_SCALE_POINTER ? (const void**)&d->a_scale
                                                                               : (const void**)&d->b_scale;
            memcpy(to, buf, sizeof(void*));
            return CUBLAS_STATUS_SUCCESS;
        }
        default: return CUBLAS_STATUS_NOT_SUPPORTED;  // an attribute this emulation does not compute
    }
    return bytes == 4 ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_INVALID_VALUE;
}
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
    if (ld < (int64_t)rows) { return CUBLAS_STATUS_INVALID_VALUE; }
    *layout = (cublasLtMatrixLayout_t) new CublasLtEmulationLayout{type, rows, cols, ld};
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
    delete (CublasLtEmulationLayout*)layout;
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
    *pref = (cublasLtMatmulPreference_t) new int(0);
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t, cublasLtMatmulPreferenceAttributes_t,
                                                    const void*, size_t) {
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
    delete (int*)pref;
    return CUBLAS_STATUS_SUCCESS;
}
// The heuristic: the four algorithms (the top) for a problem it runs, in order; NOT_SUPPORTED when it runs none.
// Pointers are not known here, so alignment is judged when the GEMM is called.
cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t,
                                              cublasLtMatrixLayout_t d, cublasLtMatmulPreference_t, int requested,
                                              cublasLtMatmulHeuristicResult_t results[], int* found) {
    *found = 0;
    const CublasLtEmulationDesc* ds = (const CublasLtEmulationDesc*)desc;
    cublasStatus_t status = cublaslt_emulation_supported(ds, (const CublasLtEmulationLayout*)a,
                                                         (const CublasLtEmulationLayout*)b,
                                                         (const CublasLtEmulationLayout*)d, NULL, NULL);
    if (status != CUBLAS_STATUS_SUCCESS) { return status; }
    for (int i = 0; i < requested && i < CUBLASLT_EMULATION_ALGOS; i++) {
        memset(&results[i], 0, sizeof(results[i]));
        results[i].algo.data[0] = (uint64_t)i;
        results[i].algo.data[1] = CUBLASLT_EMULATION_ALGO_TAG;
        results[i].state = CUBLAS_STATUS_SUCCESS;
        results[i].wavesCount = 1.0f;
        (*found)++;
    }
    return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                                       cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t, cublasLtMatrixLayout_t d,
                                       const cublasLtMatmulAlgo_t* algo, cublasLtMatmulHeuristicResult_t* result) {
    if (algo->data[1] != CUBLASLT_EMULATION_ALGO_TAG || algo->data[0] >= CUBLASLT_EMULATION_ALGOS) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    cublasStatus_t status = cublaslt_emulation_supported((const CublasLtEmulationDesc*)desc,
                                                         (const CublasLtEmulationLayout*)a,
                                                         (const CublasLtEmulationLayout*)b,
                                                         (const CublasLtEmulationLayout*)d, NULL, NULL);
    memset(result, 0, sizeof(*result));
    result->algo = *algo;
    result->state = status;
    return status;
}
cublasStatus_t cublasLtMatmul(cublasLtHandle_t, cublasLtMatmulDesc_t desc, const void* alpha, const void* a,
                              cublasLtMatrixLayout_t a_layout, const void* b, cublasLtMatrixLayout_t b_layout,
                              const void* beta, const void* c, cublasLtMatrixLayout_t c_layout, void* d,
                              cublasLtMatrixLayout_t d_layout, const cublasLtMatmulAlgo_t* algo, void*, size_t,
                              cudaStream_t stream) {
    CublasLtEmulationCall call;
    call.desc = *(const CublasLtEmulationDesc*)desc;  // the descriptor as it is now: the caller may change it next
    call.a = *(const CublasLtEmulationLayout*)a_layout;
    call.b = *(const CublasLtEmulationLayout*)b_layout;
    call.c = *(const CublasLtEmulationLayout*)c_layout;
    call.d = *(const CublasLtEmulationLayout*)d_layout;
    call.alpha = *(const float*)alpha;
    call.beta = *(const float*)beta;
    call.a_data = a;
    call.b_data = b;
    call.c_data = c;
    call.d_data = d;
    if (!algo || algo->data[1] != CUBLASLT_EMULATION_ALGO_TAG || algo->data[0] >= CUBLASLT_EMULATION_ALGOS) {
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    call.algo = (int)algo->data[0];
    if (call.c.rows != call.d.rows || call.c.cols != call.d.cols) { return CUBLAS_STATUS_INVALID_VALUE; }
    cublasStatus_t status = cublaslt_emulation_supported(&call.desc, &call.a, &call.b, &call.d, a, b);
    if (status != CUBLAS_STATUS_SUCCESS) { return status; }
    if (cuda_emulation_enqueue(stream, [call]() { cublaslt_emulation_run(&call); }) != cudaSuccess) {
        return CUBLAS_STATUS_EXECUTION_FAILED;
    }
    return CUBLAS_STATUS_SUCCESS;
}
}  // extern "C"

#endif  // GPTFP8_CUBLAS_EMULATION_H
