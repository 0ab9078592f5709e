/*
llmc/cuda_utils.cuh — one way to check every CUDA, cuBLAS(Lt), cuDNN and NCCL status: a macro per library that, on
failure, prints file, line and the library's own message, then exits (NCCL's and MPI's are in multi_gpu.cuh, which
alone includes them). Also the "no CUDA device" check every GPU program starts with, so that on a machine without a
GPU it says so in one line and exits non-zero, and the GPUs' peak BF16 throughput for MFU.
*/
#ifndef GPTFP8_CUDA_UTILS_CUH
#define GPTFP8_CUDA_UTILS_CUH

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

// Grid dimensions, computed in 64 bits and checked against CUDA's limits (x: 2^31 - 1 blocks, y and z: 65535): a
// shape too large for a launch exits with one line naming the launch instead of wrapping to a wrong grid.
#define CUDA_GRID_X_MAX 2147483647ull
#define CUDA_GRID_YZ_MAX 65535ull
static inline unsigned int grid_dim_checked(unsigned long long blocks, unsigned long long limit, const char* what) {
    if (blocks > limit) {
        fprintf(stderr, "error: %s needs %llu blocks in one grid dimension, more than CUDA's limit of %llu (use a "
                        "smaller -b or -t)\n", what, blocks, limit);
        exit(1);
    }
    return (unsigned int)blocks;
}

// Whether this machine shows an NVIDIA GPU to the operating system at all (a device node or the driver's list): tells
// "there is no GPU" from "there is one but the CUDA runtime cannot use it" when the runtime fails.
static inline int nvidia_device_visible(void) {
    const char* patterns[2] = {"/dev/nvidia[0-9]*", "/proc/driver/nvidia/gpus/*"};
    int visible = 0;
    for (int i = 0; i < 2 && !visible; i++) {
        glob_t found;
        memset(&found, 0, sizeof(found));
        visible = glob(patterns[i], 0, NULL, &found) == 0 && found.gl_pathc > 0;
        globfree(&found);
    }
    return visible;
}

// The SM count of the current device: the one cudaSetDevice chose for this rank (multi_gpu_init), device 0 before
// any choice. Launch sizes come from it, so a rank on a GPU with other SMs than GPU 0 sizes its grids for its own.
static inline int current_device_sms(void) {
    int device = 0, sms = 0;
    cudaCheck(cudaGetDevice(&device));
    cudaCheck(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    return sms;
}

// Exits with one line when there is no usable CUDA device; returns the current device's SM count otherwise. Without a GPU the
// runtime's own reason ("CUDA driver version is insufficient for CUDA runtime version" when no driver is installed)
// would mislead, so the line says "no CUDA device found"; the runtime's reason is given only when a device is there
// but fails.
static inline int require_cuda_device(const char* program) {
    int count = 0;
    cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaSuccess && count == 0) { status = cudaErrorNoDevice; }
    if (status != cudaSuccess) {
        if (status == cudaErrorNoDevice || !nvidia_device_visible()) {
            fprintf(stderr, "%s: no CUDA device found\n", program);
        } else {
            fprintf(stderr, "%s: a CUDA device is present but unusable: %s (%s)\n", program, cudaGetErrorString(status),
                    cudaGetErrorName(status));
        }
        exit(1);
    }
    return current_device_sms();
}

// Dense BF16 tensor-core peak (FLOP/s, no sparsity) of the GPUs we know, from the vendor's data sheets; -1 for
// others (MFU is then not shown). MFU is always against BF16 peak, FP8 runs included, so the two compare directly.
static inline double gpu_bf16_peak_flops(const cudaDeviceProp* prop) {
    const char* name = prop->name;
    if (strstr(name, "H100") || strstr(name, "H800")) {
        return prop->multiProcessorCount >= 132 ? 989.4e12 : 756.5e12;  // SXM (132 SMs) or PCIe (114 SMs)
    }
    if (strstr(name, "H200") || strstr(name, "GH200")) { return 989.4e12; }
    if (strstr(name, "A100") || strstr(name, "A800")) { return 312e12; }
    if (strstr(name, "L40S")) { return 362.05e12; }
    if (strstr(name, "RTX 4090")) { return 165.2e12; }
    return -1.0;
}

#endif  // GPTFP8_CUDA_UTILS_CUH
