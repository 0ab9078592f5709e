/*
llmc/cuda_utils.cuh — one way to check every CUDA, cuBLAS(Lt), cuDNN and NCCL status: a macro per library that, on
failure, prints file, line and the library's own message, then exits. Also the "no CUDA device" check every GPU
program starts with, so that on a machine without a GPU it says so in one line and exits non-zero.
*/
#ifndef GPTFP8_CUDA_UTILS_CUH
#define GPTFP8_CUDA_UTILS_CUH

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

static inline void cuda_check_impl(cudaError_t status, const char* file, int line) {
    if (status != cudaSuccess) {
        fprintf(stderr, "error: CUDA at %s:%d: %s (%s)\n", file, line, cudaGetErrorString(status), cudaGetErrorName(status));
        exit(1);
    }
}
#define cudaCheck(call) cuda_check_impl((call), __FILE__, __LINE__)

static inline void cublas_check_impl(cublasStatus_t status, const char* file, int line) {
    if (status != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "error: cuBLAS at %s:%d: %s (%s)\n", file, line, cublasGetStatusString(status),
                cublasGetStatusName(status));
        exit(1);
    }
}
#define cublasCheck(call) cublas_check_impl((call), __FILE__, __LINE__)

// Exits with one line when there is no usable CUDA device; returns the device's SM count otherwise.
static inline int require_cuda_device(const char* program) {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0) {
        fprintf(stderr, "%s: no CUDA device found (%s)\n", program,
                status != cudaSuccess ? cudaGetErrorString(status) : "0 devices");
        exit(1);
    }
    int sms = 0;
    cudaCheck(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    return sms;
}

#endif  // GPTFP8_CUDA_UTILS_CUH
