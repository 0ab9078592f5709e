/*
fp8/cpu_isa.h — how the CPU reference's hot loops run: which x86 vector instruction set, picked at run time, so one
binary runs on any x86-64 (its baseline, SSE2) and uses AVX2 or AVX-512 where the CPU has them. The CPU GEMM
(llmc/gemm_cpu.h) and the FP8 casts (fp8/quantize_cpu.h) compile one plain-C body several times, once per target attribute
below, and call the version this header picks. Every version computes the same floats: no FMA (CPU_NO_FMA), and
SIMD only across independent results, never across a sum. And from what size an element-wise loop uses threads.
*/
#ifndef GPTFP8_CPU_ISA_H
#define GPTFP8_CPU_ISA_H

#if defined(__x86_64__) || defined(__i386__)
#define CPU_ISA_X86 1
#else
#define CPU_ISA_X86 0
#endif

// Best last. BASELINE is what the build targets (SSE2 on x86-64); the others exist only on x86.
typedef enum { CPU_ISA_BASELINE = 0, CPU_ISA_AVX2 = 1, CPU_ISA_AVX512 = 2, CPU_NUM_ISAS = 3 } CpuIsa;

// The target attributes of the versions (AVX-512: the foundation plus byte/word and 128/256-bit forms, which every
// AVX-512 CPU since Skylake-SP has).
#define CPU_TARGET_AVX2 __attribute__((target("avx2")))
#define CPU_TARGET_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

// No FMA contraction in a version whatever the command line says: the Makefile's C flags say it already, but the GPU
// test compiles the CPU trainer as C++ through nvcc, where GCC's default is to fuse, and AVX-512 has FMA instructions.
#if defined(__GNUC__) && !defined(__clang__)
#define CPU_NO_FMA __attribute__((optimize("fp-contract=off")))
#else
#define CPU_NO_FMA  // clang: -ffp-contract=off from the Makefile
#endif

// Element-wise loops shorter than this run on one thread: a parallel region costs microseconds on an idle machine
// and a scheduler time slice on a busy one, more than 65536 simple float operations take. (Results never depend on
// it: those loops have no reductions across elements, or reduce in a fixed order.)
#define CPU_PARALLEL_MIN_ELEMENTS ((size_t)1 << 16)

// Passes that stream a tensor once or twice with little arithmetic per element (a bf16 rounding, an FP8 cast or its
// amax, a dequantization, a transpose, a bias gradient's column sums, LayerNorm, GELU's table look-ups) run on one
// thread up to this many elements, as llm.c runs its LayerNorm and GELU: such a pass over a million floats takes well
// under a millisecond on one core, so a second thread saves a few hundred microseconds at most, while on a machine
// other jobs are using, the barrier that ends a parallel region waits for a thread the scheduler has parked, a time
// slice of several milliseconds, every time. A step makes several such passes per linear layer (more in bf16 and fp8
// modes than in fp32): below this they would be most of its barriers. (Results never depend on it either.)
#define CPU_PARALLEL_MIN_PASS_ELEMENTS ((size_t)1 << 20)

// The element-wise layer functions of the CPU trainer, compiled three times (x86-64, AVX2, AVX-512) by GCC's
// function multiversioning, the version picked once when the program loads: their loops vectorize across independent
// results only, so every version gives the same floats.
#if CPU_ISA_X86 && defined(__GNUC__) && !defined(__clang__)
#define CPU_MULTIVERSION __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4"))) CPU_NO_FMA
#else
#define CPU_MULTIVERSION
#endif

static inline const char* cpu_isa_name(CpuIsa isa) {
    return isa == CPU_ISA_AVX512 ? "avx512" : isa == CPU_ISA_AVX2 ? "avx2" : CPU_ISA_X86 ? "sse2" : "baseline";
}

static inline int cpu_isa_supported(CpuIsa isa) {
#if CPU_ISA_X86
    __builtin_cpu_init();
    if (isa == CPU_ISA_AVX512) {
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl");
    }
    if (isa == CPU_ISA_AVX2) { return __builtin_cpu_supports("avx2"); }
#endif
    return isa == CPU_ISA_BASELINE;
}

static inline CpuIsa cpu_isa_best(void) {
    static int best = -1;  // decided once; every thread computes the same value, so a race is harmless
    if (best < 0) {
        best = cpu_isa_supported(CPU_ISA_AVX512) ? CPU_ISA_AVX512
             : cpu_isa_supported(CPU_ISA_AVX2)   ? CPU_ISA_AVX2
                                                 : CPU_ISA_BASELINE;
    }
    return (CpuIsa)best;
}

#endif  // GPTFP8_CPU_ISA_H
