# Makefile — builds and tests gptfp8. `make help` lists the targets and variables; `make info` what was detected.
#
#   make                          the programs a user runs: the CPU trainer and the tools (the CUDA trainer too where
#                                 nvcc is found and a GPU answers)
#   make train                    prepare tinyshakespeare, train BF16 and FP8 on it, plot the comparison (the CUDA
#                                 trainer where a GPU answers, else the CPU one with a small model); builds only that
#   make test                     build everything (the CUDA programs too, when nvcc is here) and run every CPU test
#   make deps                     install the Python packages the tests and plots use (requirements.txt, and
#                                 requirements-hf.txt's for the Hugging Face export unless NO_HF=1), xxHash's
#                                 header into deps/xxhash (checkpoint checksums; fetched by the first build otherwise)
#                                 and the cuDNN frontend's headers into deps/cudnn_frontend/include (cuDNN attention)
#   make cuda                     the CUDA trainer, its GPU test and the dev/cuda checks (needs nvcc, not a GPU)
#   make emulate                  the dev/cuda checks of our own kernels, the GPU test and the GPU trainer built to run on
#                                 the CPU (dev/cuda/emulate/; CUDA's headers, no GPU): make test runs the checks and test
#   make test SANITIZE=1          the CPU programs with AddressSanitizer + UndefinedBehaviorSanitizer, the C suites on them
#   make fuzz                     libFuzzer on the six file readers (fuzz/), FUZZ_SECONDS (60) each
#
# Variables: see `make help`.

CC ?= gcc
# -ffp-contract=off: the CPU reference must round every float operation exactly as written, never fuse a*b+c into an
# FMA behind our back, or its FP8/BF16 emulation stops being bit-exact.
# -O3 changes no value either: GCC reorders float arithmetic only under -ffast-math/-fassociative-math, so what it
# vectorizes keeps each result's order (a sum over a loop stays a sum in order).
# -fno-math-errno -fno-trapping-math change no value (no reassociation, no FMA, no approximations, unlike -ffast-math):
# math functions need not set errno (sqrtf becomes one instruction) and float operations are assumed not to trap, so
# the compiler may compute both sides of a select, which lets the element-wise loops (FP8 casts, AdamW) vectorize.
CFLAGS ?= -O3 -std=c11 -Wall -Wextra -Werror -ffp-contract=off -fno-math-errno -fno-trapping-math -D_GNU_SOURCE
LDLIBS ?= -lm
# xxHash's single header (the checkpoints' checksums, llmc/checkpoint.h), header-only: scripts/install_xxhash.sh puts
# it into deps/xxhash (make deps, or the first build that needs it). -isystem: our warnings-as-errors are for our code.
XXHASH_DIR := deps/xxhash
XXHASH_HEADER := $(XXHASH_DIR)/xxhash.h
CFLAGS += -isystem $(XXHASH_DIR)
ifeq ($(NO_OMP),1)
  OMP_FLAGS :=
else
  OMP_FLAGS := -fopenmp
endif
PYTHON ?= python3

# ---------------------------------------------------------------------------------------------------------------------
# CUDA, cuDNN, NCCL detection

NVCC ?= $(shell command -v nvcc 2>/dev/null)
# A `?=` default is expanded wherever it is used, so one that runs a command (nvcc's path, a Python package's folder)
# would run it at every use: 16 Python starts and 5.7 s for each make, and tests call make often (the dataset scripts
# make their tokenizer). `X := $(X)` after it runs the command once; a value given on the command line still wins.
NVCC := $(NVCC)
CUDA_ARCH ?= 90
CUDA_HOME ?= $(if $(NVCC),$(patsubst %/bin/nvcc,%,$(realpath $(NVCC))),/usr/local/cuda)
CUDA_HOME := $(CUDA_HOME)
NVCC_FLAGS ?= -O3 -std=c++17 --generate-code arch=compute_$(CUDA_ARCH),code=[compute_$(CUDA_ARCH),sm_$(CUDA_ARCH)] \
              -Xcompiler -Wall,-Wextra,-Werror,$(OMP_FLAGS) -Werror all-warnings
NVCC_FLAGS += -isystem $(XXHASH_DIR)
# cuBLAS(Lt) from CUDA_HOME's lib64, found there at run time too (rpath), not whichever libcublas the loader meets first
NVCC_LDLIBS ?= $(if $(wildcard $(CUDA_HOME)/lib64),-L$(CUDA_HOME)/lib64 -Xlinker -rpath=$(CUDA_HOME)/lib64) -lcublasLt -lcublas $(if $(OMP_FLAGS),-lgomp) -lm

# A Python package folder (nvidia-cudnn-cu13 / nvidia-nccl-cu13 put include/ and lib/ there), or nothing.
python_pkg_dir = $(shell $(PYTHON) -c "import importlib.util as u, os; s = u.find_spec('$(1)'); print(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else '')" 2>/dev/null)
first_with = $(firstword $(foreach d,$(2),$(if $(wildcard $(d)/include/$(1)),$(d))))
CUDNN_HOME ?= $(call first_with,cudnn_graph.h,$(CUDA_HOME) /usr/local /usr $(call python_pkg_dir,nvidia.cudnn))
NCCL_HOME ?= $(call first_with,nccl.h,$(CUDA_HOME) /usr/local /usr $(call python_pkg_dir,nvidia.nccl))
CUDNN_HOME := $(CUDNN_HOME)
NCCL_HOME := $(NCCL_HOME)

# -l for a library folder that may hold only the versioned file (the pip packages ship libnccl.so.2, no libnccl.so)
lib_flag = $(if $(wildcard $(1)/lib$(2).so $(1)/lib64/lib$(2).so),-l$(2),$(if $(wildcard $(1)/lib/lib$(2).so.$(3)),-l:lib$(2).so.$(3),-l$(2)))
lib_dirs = $(foreach d,lib lib64,$(if $(wildcard $(1)/$(d)),-L$(1)/$(d) -Xlinker -rpath=$(1)/$(d)))

comma := ,

# Multi-GPU: NCCL when found (make NO_MULTI_GPU=1 to leave it out), MPI when mpicc is found (NO_USE_MPI=1).
MULTI_GPU_FLAGS :=
MULTI_GPU_LDLIBS :=
NCCL_LIBRARY := $(firstword $(wildcard $(foreach d,lib lib64 lib/x86_64-linux-gnu,$(NCCL_HOME)/$(d)/libnccl.so*) \
                                       /usr/lib/x86_64-linux-gnu/libnccl.so*))
ifneq ($(NO_MULTI_GPU),1)
  ifneq ($(and $(NCCL_HOME),$(NCCL_LIBRARY)),)
    MULTI_GPU_FLAGS += -DMULTI_GPU -I$(NCCL_HOME)/include
    MULTI_GPU_LDLIBS += $(call lib_dirs,$(NCCL_HOME)) $(call lib_flag,$(NCCL_HOME),nccl,2)
    MPICC ?= $(shell command -v mpicc 2>/dev/null)
    MPICC := $(MPICC)
    ifneq ($(NO_USE_MPI),1)
      ifneq ($(MPICC),)
        MPI_COMPILE := $(shell $(MPICC) --showme:compile 2>/dev/null)
        MPI_LINK := $(shell $(MPICC) --showme:link 2>/dev/null)
        ifneq ($(MPI_LINK),)
          MULTI_GPU_FLAGS += -DUSE_MPI $(MPI_COMPILE)
          MULTI_GPU_LDLIBS += $(patsubst -Wl$(comma)%,-Xlinker %,$(MPI_LINK))
        endif
      endif
    endif
  endif
endif

# cuDNN attention (llmc/cudnn_attention.cpp): cuDNN's headers and library, and the cuDNN frontend's headers (C++,
# header-only): CUDNN_FRONTEND_PATH, else deps/cudnn_frontend/include (make deps puts them there, a folder that can
# travel to a GPU machine without a network), else the installed Python package nvidia-cudnn-frontend. All three
# found and NO_CUDNN unset: the CUDA programs are built with it (ENABLE_CUDNN) and run it by default (-attn cudnn).
# `make deps test` (CI) reads this before deps has run: a deps goal on the command line counts as the headers being in
# deps/ (it puts them there, and llmc/cudnn_attention.o waits for it), so a fresh clone builds with cuDNN in one call.
DEPS_GOAL := $(filter deps,$(MAKECMDGOALS))
ifndef CUDNN_FRONTEND_PATH
  ifneq ($(or $(wildcard deps/cudnn_frontend/include/cudnn_frontend.h),$(DEPS_GOAL)),)
    CUDNN_FRONTEND_PATH := deps/cudnn_frontend/include
  else
    CUDNN_FRONTEND_PATH := $(shell $(PYTHON) -c "import importlib.util as u, os; s = u.find_spec('cudnn'); d = os.path.join(os.path.dirname(os.path.dirname(s.origin)), 'include') if s and s.origin else ''; print(d if d and os.path.isfile(os.path.join(d, 'cudnn_frontend.h')) else '')" 2>/dev/null)
  endif
endif
CUDNN_FRONTEND_FOUND := $(or $(wildcard $(CUDNN_FRONTEND_PATH)/cudnn_frontend.h),$(and $(DEPS_GOAL),$(filter deps/cudnn_frontend/include,$(CUDNN_FRONTEND_PATH))))
CUDNN_LIBRARY := $(firstword $(wildcard $(foreach d,lib lib64 lib/x86_64-linux-gnu,$(CUDNN_HOME)/$(d)/libcudnn.so*)))
CUDNN_FLAGS :=
CUDNN_LDLIBS :=
CUDNN_OBJECT :=
ifeq ($(NO_CUDNN),1)
  CUDNN_STATUS := ✗ cuDNN attention off (NO_CUDNN=1): -attn plain only
else ifeq ($(NVCC),)
  CUDNN_STATUS := ✗ cuDNN attention off: no nvcc
else ifeq ($(and $(CUDNN_HOME),$(CUDNN_LIBRARY)),)
  CUDNN_STATUS := ✗ cuDNN not found (no cudnn_graph.h with a libcudnn beside it: set CUDNN_HOME or pip install nvidia-cudnn-cu13): -attn plain only
else ifeq ($(CUDNN_FRONTEND_FOUND),)
  CUDNN_STATUS := ✗ cuDNN frontend headers not found (make deps, or CUDNN_FRONTEND_PATH=.../include): -attn plain only
else
  CUDNN_STATUS := ✓ cuDNN found, will run with flash-attention (cuDNN $(CUDNN_LIBRARY), frontend $(CUDNN_FRONTEND_PATH))
  CUDNN_OBJECT := llmc/cudnn_attention.o
  CUDNN_FLAGS := -DENABLE_CUDNN
  # the frontend also calls NVRTC (its runtime-compiled engines), which the CUDA toolkit ships
  CUDNN_LDLIBS := $(CUDNN_OBJECT) $(call lib_dirs,$(CUDNN_HOME)) $(call lib_flag,$(CUDNN_HOME),cudnn,9) \
                  $(call lib_dirs,$(CUDA_HOME)) -lnvrtc -lstdc++
endif

# CUPTI (llmc/gpu_idle.h, the trainer's -idle_step: the GPU's idle time in a step): CUDA's activity tracing, where its
# header and library are found (the toolkit's include/ and lib, or extras/CUPTI/); NO_CUPTI=1 leaves it out.
CUPTI_INCLUDE := $(firstword $(foreach d,$(CUDA_HOME)/include $(CUDA_HOME)/extras/CUPTI/include,\
                                       $(if $(wildcard $(d)/cupti.h),$(d))))
CUPTI_LIBDIR := $(firstword $(foreach d,$(CUDA_HOME)/lib64 $(CUDA_HOME)/lib $(CUDA_HOME)/extras/CUPTI/lib64,\
                                      $(if $(wildcard $(d)/libcupti.so*),$(d))))
CUPTI_FLAGS :=
CUPTI_LDLIBS :=
ifeq ($(NO_CUPTI),1)
  CUPTI_STATUS := ✗ off (NO_CUPTI=1): -idle_step refused
else ifeq ($(and $(NVCC),$(CUPTI_INCLUDE),$(CUPTI_LIBDIR)),)
  CUPTI_STATUS := ✗ not found (no cupti.h with a libcupti under CUDA_HOME): -idle_step refused
else
  CUPTI_STATUS := ✓ $(CUPTI_LIBDIR)/libcupti.so: -idle_step measures a step's GPU idle time
  CUPTI_FLAGS := -DENABLE_CUPTI -I$(CUPTI_INCLUDE)
  CUPTI_LDLIBS := -L$(CUPTI_LIBDIR) -Xlinker -rpath=$(CUPTI_LIBDIR) -lcupti
endif

ifeq ($(NVCC),)
  $(info note: nvcc not found: the CUDA programs and the nvcc-compiled tests are skipped (make info says more))
endif

CUDA_PROGRAMS := train_gpt_fp8 test_gpt_fp8

# Does a GPU answer? scripts/has_gpu.sh asks nvidia-smi (it runs no CUDA) and prints "GPU 0: ..." or "no GPU: why".
# It decides what `make` and `make train` build and which trainer `make train` runs; GPU=0|1 on the command line
# overrides it.
GPU_ANSWER := $(shell ./scripts/has_gpu.sh 2>&1)
ifeq ($(origin GPU),undefined)
  GPU := $(if $(filter GPU,$(firstword $(GPU_ANSWER))),1,0)
endif
# OpenMP threads that wait at a barrier sleep instead of spinning, in every program make runs (the tests too), unless
# the environment says otherwise. Why: libgomp's default spins a waiting thread for a while first; on a machine other
# jobs share, the thread it waits for has often been parked by the OS, and the spinning one takes the core it needs,
# so a parallel region can cost a scheduler time slice. Measured with dev/bench_cpu.sh -load 2 (two competing OpenMP
# programs; RESULTS.md, 2026-11-27): the CPU trainer's fp8 step of the small shape went from 0.75-1.10x llm.c's time
# to 0.38-0.40x, and on a quiet machine the two policies measured the same. libgomp reads it once, before main(), so
# it is set where programs are started: here, in scripts/compare_bf16_fp8.sh, and by you (doc/building.md).
OMP_WAIT_POLICY ?= passive
export OMP_WAIT_POLICY
# the trainer `make train` runs: the CUDA one only where it can be built and run
TRAINER ?= $(if $(and $(NVCC),$(filter 1,$(GPU))),train_gpt_fp8,train_gpt_fp8_cpu)

# ---------------------------------------------------------------------------------------------------------------------
# sanitizers: make test SANITIZE=1 builds the CPU programs with AddressSanitizer (LeakSanitizer included) and
# UndefinedBehaviorSanitizer, every report fatal, and runs the CPU suite on them (the nvcc programs and the fuzz smoke
# are left out). The compiler and flags are stamped into .build-flags and every CPU program depends on it, so switching
# SANITIZE on or off rebuilds them all: a plain `make test` after a sanitized one is never silently sanitized.

# -g1: line tables alone, enough for file:line in every report's stack (inlined frames too); full -g took a fifth
# longer to compile, and the sanitized build is rebuilt from scratch in each CI run. -O2 for -O3: a quarter less
# compile (the trainer 32 -> 25 s), and its instrumented runs were no slower (test_train_gpt_fp8.sh 272 s, 270 before).
ifeq ($(SANITIZE),1)
  CFLAGS := $(patsubst -O3,-O2,$(CFLAGS)) -fsanitize=address,undefined -fno-sanitize-recover=all \
            -fno-omit-frame-pointer -g1
endif
BUILD_FLAGS := $(CC) $(CFLAGS) $(OMP_FLAGS) $(LDLIBS)
BUILD_FLAGS_STAMP := .build-flags
$(shell printf '%s\n' '$(BUILD_FLAGS)' | cmp -s - $(BUILD_FLAGS_STAMP) 2>/dev/null || printf '%s\n' '$(BUILD_FLAGS)' >$(BUILD_FLAGS_STAMP))

# fuzzing: one libFuzzer harness per file reader (fuzz/), built with clang (Debian's clang package has libFuzzer) by
# make test and make fuzz; without it they are not built and the fuzz smoke test reports that as a failure
FUZZ_CC ?= $(firstword $(shell command -v clang-14 clang 2>/dev/null))
FUZZ_CC := $(FUZZ_CC)
# (asked only for the goals that use the answer, so a plain make does not pay for the compiler's trial run)
FUZZ_CAN_BUILD := $(if $(and $(FUZZ_CC),$(filter test fuzz info fuzz/%,$(MAKECMDGOALS))),$(shell printf 'int LLVMFuzzerTestOneInput(const char* d, unsigned long n) { (void)d; (void)n; return 0; }\n' | $(FUZZ_CC) -x c -fsanitize=fuzzer - -o /dev/null 2>/dev/null && echo yes))
FUZZ_READERS := shard model state tokenizer manifest run_data
FUZZ_PROGRAMS := $(patsubst %,fuzz/fuzz_%,$(FUZZ_READERS))
FUZZ_FLAGS := -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
              -isystem $(XXHASH_DIR)
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 20

# ---------------------------------------------------------------------------------------------------------------------
# CPU programs and tests

FP8_HEADERS := fp8/fp8.h fp8/recipe.h fp8/recipe_parse.h fp8/meta.h fp8/quantize_cpu.h fp8/current.h fp8/diag.h \
               fp8/cpu_isa.h fp8/block.h
LLMC_HEADERS := llmc/gpt2.h llmc/rand.h llmc/checkpoint.h llmc/checksum.h llmc/schedule.h llmc/dataloader.h \
                llmc/shard_manifest.h llmc/tokenizer.h llmc/utils.h llmc/linear.h llmc/args.h llmc/run.h llmc/run_data.h \
                llmc/run_folder.h llmc/sampling.h llmc/zero.h llmc/gemm_cpu.h llmc/gelu_math.h llmc/gemm_choice.h $(XXHASH_HEADER)
CPU_PROGRAMS := train_gpt_fp8_cpu
CPU_TESTS := fp8/test_fp8 test_gpt_fp8_cpu test_data_parallel llmc/test_multi_process llmc/test_memory_plan \
             llmc/test_gemm_cpu llmc/test_gemm_choice
# fp8_codec: the codec on the command line (its Python test); compare_runs: two runs' logs and FP8 states compared
# step by step (the GPU check's xcheck stage, tested by dev/test_compare_runs.sh); cast_one_tensor: one tensor of a
# checkpoint's next step cast with the four recipes (doc/four_recipes.md's table); model_logits: the trainer's fp32
# logits of a model file on a window of a shard, the reference scripts/test_export_hf.sh holds an HF export to;
# attention_one_layer: one block's FP8 attention of a checkpoint's next step, cast by cast (doc/fp8_attention.md)
CPU_TOOLS := fp8/fp8_codec dev/compare_runs dev/cast_one_tensor dev/model_logits dev/attention_one_layer
CUDA_HOST_TESTS := $(if $(NVCC),fp8/test_fp8_cuda_host llmc/test_kernels_host)
# Standalone GPU kernel checks and benchmarks (llm.c's dev/cuda): built with everything, run on a GPU by hand or by
# the GPU check; without a GPU each says so in one line and exits 1.
DEV_CUDA := dev/cuda/fp8_quantize dev/cuda/fp8_update dev/cuda/fp8_gemm dev/cuda/gemm_shapes dev/cuda/fp8_current_scaling \
            dev/cuda/fp8_block_quantize dev/cuda/fp8_block_gemm dev/cuda/gelu_fp8 dev/cuda/layernorm dev/cuda/layernorm_fp8 \
            dev/cuda/classifier dev/cuda/adamw $(if $(CUDNN_OBJECT),dev/cuda/attention_cudnn dev/cuda/attention_cudnn_fp8)
CUDA_HEADERS := fp8/quantize.cuh fp8/update.cuh fp8/block_quantize.cuh llmc/gemm.cuh llmc/cuda_utils.cuh llmc/cuda_common.cuh
# The same checks of our own kernels (those of DEV_CUDA that call neither cuBLASLt nor cuDNN) run on the CPU, where each
# CUDA thread is a fiber (dev/cuda/emulate/cuda_emulation.h says what that catches and what it cannot), so CI executes
# every kernel against the CPU reference without a GPU. They need CUDA's headers (found with nvcc) and Python.
EMULATED_CHECKS := fp8_block_quantize fp8_update fp8_current_scaling fp8_quantize classifier gelu_fp8 layernorm \
                   layernorm_fp8 adamw
# And the GPU test itself (test_gpt_fp8: the GPU trainer against the CPU's), built without cuDNN and NCCL, its cuBLAS
# and cuBLASLt GEMMs computed on the CPU (dev/cuda/emulate/cublas_emulation.h): every case but cuDNN's.
EMULATED_PROGRAMS := $(if $(NVCC),$(addprefix dev/cuda/emulate/,$(EMULATED_CHECKS) test_cuda_emulation test_gpt_fp8))
# the GPU trainer's kernel families, one header each with its launchers
KERNEL_HEADERS := llmc/encoder.cuh llmc/layernorm.cuh llmc/layernorm_fp8.cuh llmc/gelu.cuh llmc/gelu_fp8.cuh llmc/fused_classifier.cuh llmc/bias.cuh \
                  llmc/global_norm.cuh llmc/adamw.cuh llmc/attention.cuh llmc/attention_fp8.cuh

-include dev/data/data.mk

# A plain `make` builds what a user runs (the data tools come from dev/data/data.mk, included above, hence the
# explicit default goal); `make test` adds the test programs and, where nvcc is, every CUDA program.
RUN_PROGRAMS := $(CPU_PROGRAMS) $(DATA_PROGRAMS) $(CPU_TOOLS) $(filter train_gpt_fp8,$(TRAINER))
TEST_PROGRAMS := $(CPU_TESTS) $(DATA_TEST_PROGRAMS) $(CUDA_HOST_TESTS) $(if $(NVCC),$(DEV_CUDA) $(CUDA_PROGRAMS)) \
                 $(EMULATED_PROGRAMS) $(if $(FUZZ_CAN_BUILD),$(FUZZ_PROGRAMS))
# built by `make test` but run only on a GPU (scripts/gpu_check.sh); the test summary names them
GPU_ONLY_PROGRAMS := $(if $(NVCC),$(CUDA_PROGRAMS) $(DEV_CUDA))

.DEFAULT_GOAL := all
.PHONY: all test test-programs deps info help clean check-nvcc train data cuda emulate fuzz llmc-baseline $(LLMC_TARGETS)
all: $(RUN_PROGRAMS)

cuda: $(CUDA_PROGRAMS) $(DEV_CUDA)

fp8/test_fp8: fp8/test_fp8.c $(FP8_HEADERS) llmc/testing.h $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $(OMP_FLAGS) $< -o $@ $(LDLIBS)

# The CPU reference trainer (train_gpt_fp8 is the CUDA one) and its unit tests, which include it.
train_gpt_fp8_cpu: train_gpt_fp8.c $(FP8_HEADERS) $(LLMC_HEADERS) $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $(OMP_FLAGS) $< -o $@ $(LDLIBS)

test_gpt_fp8_cpu: test_gpt_fp8.c train_gpt_fp8.c test_tiny_model.h $(FP8_HEADERS) $(LLMC_HEADERS) llmc/testing.h \
                  $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $(OMP_FLAGS) $< -o $@ $(LDLIBS)

# data parallelism (ZeRO-1 shards, the amax all-reduce, per-rank checkpoints) on simulated ranks
test_data_parallel: test_data_parallel.c train_gpt_fp8.c test_tiny_model.h $(FP8_HEADERS) $(LLMC_HEADERS) llmc/testing.h \
                    $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $(OMP_FLAGS) $< -o $@ $(LDLIBS)

# ranks from mpirun/Slurm/flags and the NCCL id exchange through a folder or TCP, with forked processes as ranks
llmc/test_multi_process: llmc/test_multi_process.c llmc/multi_process.h llmc/testing.h $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $< -o $@ $(LDLIBS)

# the CPU GEMM's kernels (every instruction set the CPU has) against the naive loop, bit for bit
llmc/test_gemm_cpu: llmc/test_gemm_cpu.c llmc/gemm_cpu.h fp8/cpu_isa.h llmc/rand.h llmc/testing.h $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $(OMP_FLAGS) $< -o $@ $(LDLIBS)

# the file of the GEMM algorithms a GPU run chose by timing (-gemm_autotune), on the CPU
llmc/test_gemm_choice: llmc/test_gemm_choice.c llmc/gemm_choice.h $(LLMC_HEADERS) $(FP8_HEADERS) llmc/testing.h \
                       $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $(OMP_FLAGS) $< -o $@ $(LDLIBS)

# the GPU trainer's memory plan (the estimate it prints before allocating), on the CPU
llmc/test_memory_plan: llmc/test_memory_plan.c llmc/memory_plan.h $(LLMC_HEADERS) $(FP8_HEADERS) llmc/testing.h \
                       $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $(OMP_FLAGS) $< -o $@ $(LDLIBS)

fp8/fp8_codec: fp8/fp8_codec.c $(FP8_HEADERS) $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $(OMP_FLAGS) $< -o $@ $(LDLIBS)

dev/compare_runs: dev/compare_runs.c $(FP8_HEADERS) $(LLMC_HEADERS) $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $(OMP_FLAGS) $< -o $@ $(LDLIBS)

dev/cast_one_tensor: dev/cast_one_tensor.c dev/one_step.h train_gpt_fp8.c $(FP8_HEADERS) $(LLMC_HEADERS) $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $(OMP_FLAGS) $< -o $@ $(LDLIBS)

dev/attention_one_layer: dev/attention_one_layer.c dev/one_step.h train_gpt_fp8.c $(FP8_HEADERS) $(LLMC_HEADERS) $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $(OMP_FLAGS) $< -o $@ $(LDLIBS)

dev/model_logits: dev/model_logits.c train_gpt_fp8.c $(FP8_HEADERS) $(LLMC_HEADERS) $(BUILD_FLAGS_STAMP)
	$(CC) $(CFLAGS) $(OMP_FLAGS) $< -o $@ $(LDLIBS)

# The host-only tests below launch no kernel: their device code is compiled to PTX alone (ptxas, most of their
# compile time, skipped; a GPU would compile the PTX when loading it)
NVCC_HOST_TEST_FLAGS = $(subst code=[compute_$(CUDA_ARCH)$(comma)sm_$(CUDA_ARCH)],code=compute_$(CUDA_ARCH),$(NVCC_FLAGS))

# The block casts' kernels (fp8/block_quantize.cuh), compiled once and linked into every program that casts blocks,
# which is compiled with BLOCK_CASTS_FLAGS: the header then holds no kernel. They were three quarters of the GPU
# trainer's device code, compiled again in each of those programs (the header's "Where the kernels are compiled").
BLOCK_CASTS := fp8/block_quantize.o
BLOCK_CASTS_FLAGS := -DFP8_BLOCK_CASTS_EXTERN
fp8/block_quantize.o: fp8/block_quantize.cu $(CUDA_HEADERS) $(FP8_HEADERS) llmc/layernorm.cuh llmc/gelu_math.h \
                      | check-nvcc
	$(NVCC) $(NVCC_FLAGS) -c $< -o $@

# Host-only: compares fp8.h with cuda_fp8.h's conversions and compiles the shared headers as device code.
fp8/test_fp8_cuda_host: fp8/test_fp8_cuda_host.cu $(CUDA_HEADERS) $(FP8_HEADERS) llmc/testing.h $(BLOCK_CASTS) \
                        | check-nvcc
	$(NVCC) $(NVCC_HOST_TEST_FLAGS) $(BLOCK_CASTS_FLAGS) $< $(BLOCK_CASTS) -o $@ $(NVCC_LDLIBS)

# Host-only: the host helpers of the GPU kernels (no GPU needed)
llmc/test_kernels_host: llmc/test_kernels_host.cu llmc/encoder.cuh llmc/cuda_common.cuh llmc/cuda_utils.cuh llmc/gemm.cuh \
                        llmc/gelu.cuh llmc/gelu_math.h llmc/gelu_fp8.cuh llmc/layernorm.cuh llmc/layernorm_fp8.cuh fp8/quantize.cuh $(FP8_HEADERS) llmc/rand.h llmc/gpu_idle.h \
                        llmc/testing.h | check-nvcc
	$(NVCC) $(NVCC_HOST_TEST_FLAGS) $< -o $@ $(NVCC_LDLIBS)

dev/cuda/%: dev/cuda/%.cu $(CUDA_HEADERS) $(FP8_HEADERS) $(KERNEL_HEADERS) dev/cuda/cast_check.h dev/cuda/bench.h \
            llmc/rand.h llmc/gpt2.h llmc/gelu_math.h llmc/testing.h llmc/tolerance.h | check-nvcc
	$(NVCC) $(NVCC_FLAGS) $(DEV_CUDA_BLOCK_CASTS) $< -o $@ $(NVCC_LDLIBS)
# the two that cast blocks link the block casts' object (above)
dev/cuda/fp8_block_quantize dev/cuda/fp8_block_gemm: $(BLOCK_CASTS)
dev/cuda/fp8_block_quantize dev/cuda/fp8_block_gemm: DEV_CUDA_BLOCK_CASTS = $(BLOCK_CASTS_FLAGS) $(BLOCK_CASTS)

# dev/cuda/emulate: every source rewritten once into EMULATE_BUILD (launches and shared memory, rewrite.py), then each
# check compiled from there by the host compiler with the emulation included first. -ffp-contract=off: no fused
# multiply-adds the source does not write; -fno-strict-aliasing: CUDA code reads a uint4 as eight bf16, which nvcc
# allows; GCC's -Wmaybe-uninitialized misreads the kernels' guarded register arrays, and it knows no #pragma unroll.
EMULATE_BUILD := dev/cuda/emulate/build
EMULATE_SOURCES := $(sort $(wildcard fp8/*.h fp8/*.cuh llmc/*.h llmc/*.cuh dev/cuda/*.h dev/cuda/*.cu dev/cuda/emulate/*.cu) \
                          test_gpt_fp8.cu train_gpt_fp8.cu train_gpt_fp8.c test_tiny_model.h)
EMULATE_CXXFLAGS ?= -O2 -std=c++17 -ffp-contract=off -fno-strict-aliasing -Wall -Wextra -Werror -Wno-unknown-pragmas \
                    -Wno-maybe-uninitialized
EMULATE_COMPILE = $(CXX) $(EMULATE_CXXFLAGS) -isystem $(CUDA_HOME)/include -include dev/cuda/emulate/cuda_emulation.h \
                  -x c++
$(EMULATE_BUILD)/rewritten: $(EMULATE_SOURCES) dev/cuda/emulate/rewrite.py
	@$(PYTHON) dev/cuda/emulate/rewrite.py . $(EMULATE_BUILD) $(EMULATE_SOURCES) >/dev/null
	@touch $@
dev/cuda/emulate/test_cuda_emulation: $(EMULATE_BUILD)/rewritten dev/cuda/emulate/cuda_emulation.h \
                                     dev/cuda/emulate/cublas_emulation.h | check-nvcc
	$(EMULATE_COMPILE) -include dev/cuda/emulate/cublas_emulation.h $(EMULATE_BUILD)/dev/cuda/emulate/test_cuda_emulation.cu \
	    -o $@ -lm
$(addprefix dev/cuda/emulate/,$(EMULATED_CHECKS)): dev/cuda/emulate/%: $(EMULATE_BUILD)/rewritten \
                                                  dev/cuda/emulate/cuda_emulation.h | check-nvcc
	$(EMULATE_COMPILE) $(EMULATE_BUILD)/dev/cuda/$*.cu -o $@ -lm
# The GPU test (make test runs it) and the GPU trainer itself (built by make emulate only: for runs a session without
# a GPU can make of the GPU trainer's whole program, dev/cuda/emulate/run_emulated.sh; too slow for make test, a tiny
# model's step about a second), with the cuBLAS(Lt) emulation.
dev/cuda/emulate/test_gpt_fp8 dev/cuda/emulate/train_gpt_fp8: dev/cuda/emulate/%: $(EMULATE_BUILD)/rewritten \
        dev/cuda/emulate/cuda_emulation.h dev/cuda/emulate/cublas_emulation.h | check-nvcc
	$(EMULATE_COMPILE) $(OMP_FLAGS) -isystem $(XXHASH_DIR) -include dev/cuda/emulate/cublas_emulation.h \
	    $(EMULATE_BUILD)/$*.cu -o $@ -lm
emulate: check-nvcc $(EMULATED_PROGRAMS) $(if $(NVCC),dev/cuda/emulate/train_gpt_fp8)

# cuDNN attention: the one C++ unit, compiled by the host compiler (the frontend is plain C++17). The frontend's and
# CUDA's headers are -isystem: our code is built with every warning as an error, theirs is not ours to fix. -O1: the
# unit builds each shape's graphs once and fills a few pointers per call, while the frontend's templates made -O2 the
# build's longest compile (66 s against 42 s on one core here, doc/building.md). CUDNN_FRONTEND_SKIP_JSON_LIB leaves
# out the frontend's JSON library, which only its graph serialization, printing and errata files use (none of them
# here): the build's longest compile 90 -> 64 s and 2.0 -> 1.1 GB on a 2-core CI machine.
CXX ?= g++
CXXFLAGS ?= -O1 -std=c++17 -Wall -Wextra -Werror
CUDNN_FRONTEND_FLAGS = -DCUDNN_FRONTEND_SKIP_JSON_LIB -isystem $(CUDNN_FRONTEND_PATH)
llmc/cudnn_attention.o: llmc/cudnn_attention.cpp llmc/cudnn_attention.h llmc/cuda_utils.cuh | $(DEPS_GOAL)
	$(CXX) $(CXXFLAGS) $(CUDNN_FRONTEND_FLAGS) -isystem $(CUDNN_HOME)/include -isystem $(CUDA_HOME)/include -c $< -o $@

dev/cuda/attention_cudnn: dev/cuda/attention_cudnn.cu dev/cuda/bench.h llmc/attention.cuh llmc/cuda_common.cuh \
                          llmc/cuda_utils.cuh llmc/cudnn_attention.h llmc/rand.h llmc/tolerance.h $(CUDNN_OBJECT) \
                          | check-nvcc
	@test -n "$(CUDNN_OBJECT)" || { echo "$@ needs cuDNN attention: $(CUDNN_STATUS)"; exit 1; }
	$(NVCC) $(NVCC_FLAGS) $(CUDNN_FLAGS) $< -o $@ $(NVCC_LDLIBS) $(CUDNN_LDLIBS)

dev/cuda/attention_cudnn_fp8: dev/cuda/attention_cudnn_fp8.cu dev/cuda/bench.h fp8/fp8.h llmc/cuda_utils.cuh \
                              llmc/attention_fp8_reference.h llmc/cudnn_attention.h llmc/rand.h llmc/tolerance.h $(CUDNN_OBJECT) | check-nvcc
	@test -n "$(CUDNN_OBJECT)" || { echo "$@ needs cuDNN attention: $(CUDNN_STATUS)"; exit 1; }
	$(NVCC) $(NVCC_FLAGS) $(CUDNN_FLAGS) $< -o $@ $(NVCC_LDLIBS) $(CUDNN_LDLIBS)

# fetched once (network, or a system libxxhash-dev); `make deps` does it too
$(XXHASH_HEADER):
	@PYTHON=$(PYTHON) ./scripts/install_xxhash.sh

# the fuzz harnesses (variables above) and `make fuzz`
fuzz/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz_file.h $(FP8_HEADERS) $(LLMC_HEADERS)
	@test -n "$(FUZZ_CAN_BUILD)" || { echo "no clang with libFuzzer found (apt-get install clang, or FUZZ_CC=...)"; exit 1; }
	$(FUZZ_CC) $(FUZZ_FLAGS) $< -o $@ -lm

fuzz: $(FUZZ_PROGRAMS)
	@./fuzz/run_fuzz.sh $(FUZZ_SECONDS) $(FUZZ_READERS)

# Every test line: a command whose output ends with "<suite>: N passed, M failed". scripts/run_tests.sh runs them all,
# even after a failure, and prints the total. C_TEST_COMMANDS are what SANITIZE=1 runs: every suite whose subject is
# C. SCRIPT_TEST_COMMANDS test Python and shell (plots, the profile summary, the launchers, the GPU check's script, the
# export): the C programs they start are the ones the C suites already run under the sanitizers, so a sanitized
# build would add time (minutes of CI's 20) and no check. For the same reason the sanitized pass trains
# test_train_gpt_fp8.sh's eight learning runs 20 steps instead of 300 (TEST_TRAIN_STEPS; its partial-block runs 20
# instead of 60): the plain pass checks the learning, this one the memory.
# Each list is in order of time taken, longest first (CI's log prints it: "slowest: ..."), since make test runs the
# suites TEST_JOBS at a time in the order given, and a long one started last would end the run alone.
C_TEST_COMMANDS := ./test_train_gpt_fp8.sh \
                   $(DATA_TEST_COMMANDS) \
                   ./scripts/check_run_faults.sh \
                   "$(PYTHON) fp8/test_fp8_blocks.py fp8/fp8_codec" \
                   ./scripts/test_case_selection.sh \
                   ./llmc/test_run_data.sh \
                   ./dev/test_compare_runs.sh \
                   ./fp8/test_fp8 \
                   ./llmc/test_multi_process \
                   ./test_gpt_fp8_cpu \
                   "$(PYTHON) fp8/test_fp8_ml_dtypes.py fp8/fp8_codec" \
                   ./test_data_parallel \
                   ./llmc/test_memory_plan \
                   ./llmc/test_gemm_cpu \
                   ./llmc/test_gemm_choice
SCRIPT_TEST_COMMANDS := ./scripts/test_export_hf.sh \
                        ./scripts/test_gpu_check.sh \
                        ./scripts/test_plot_fp8_diag.sh \
                        ./scripts/test_run_scripts.sh \
                        ./scripts/test_plot_losses.sh \
                        ./scripts/test_profile_step.sh \
                        ./scripts/test_run_tests.sh \
                        ./scripts/test_doc_links.sh
# The emulated checks start first: the kernels' (140-170 s of one core, as long as test_train_gpt_fp8.sh), and the GPU
# test's (test_gpt_fp8 under the emulation, about 200 s: its GEMMs, and AdamW a fiber per parameter).
TEST_COMMANDS := $(if $(NVCC),./dev/cuda/emulate/test_emulated.sh "./dev/cuda/emulate/test_emulated.sh trainer") \
                 $(C_TEST_COMMANDS) $(SCRIPT_TEST_COMMANDS) \
                 $(if $(NVCC),./fp8/test_fp8_cuda_host ./llmc/test_kernels_host ./dev/cuda/test_without_gpu.sh) \
                 "./fuzz/run_fuzz.sh $(FUZZ_SMOKE_SECONDS)"

# `make -jN test-programs` builds what `make test` (or `make test SANITIZE=1`) runs, in parallel; `.ci/run` does that
# first and then runs the tests from a plain `make test`: some tests call make themselves, and under a parallel parent
# each of those would warn that the jobserver is unavailable, in output the tests compare line by line.
ifeq ($(SANITIZE),1)
TEST_BUILD := $(CPU_PROGRAMS) $(CPU_TOOLS) $(CPU_TESTS) $(DATA_PROGRAMS) $(DATA_TEST_PROGRAMS)
else
TEST_BUILD := $(RUN_PROGRAMS) $(TEST_PROGRAMS)
endif
test-programs: $(TEST_BUILD)

# The suites run TEST_JOBS at a time (default: this machine's cores, at most 4; 1 runs them one after the other with
# their output as it comes). They are mostly one thread each: on a 2-core machine two at once took the plain tests
# from 442 to 253 s and the sanitized ones from 395 to 249 s (doc/building.md). Each keeps its files in its own
# temporary folder; the default dataset, which several read, is prepared first (quick when it is up to date; if it
# cannot be, the suites that need it say so). nproc without OMP_NUM_THREADS, which it would otherwise answer with.
TEST_JOBS ?= $(shell n=$$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 1); \
                     echo $$((n > 4 ? 4 : n)))
TEST_DATA = ./dev/data/prepare_tinyshakespeare.sh >/dev/null || true
ifeq ($(SANITIZE),1)
# Reports go to files (expected-error runs included, whose stderr the tests only grep), and the last test line fails
# when there is any. allocator_may_return_null: the trainer's "out of memory" test asks for 256 TB on purpose.
SANITIZER_LOG_DIR := $(CURDIR)/sanitizer-reports
test: $(TEST_BUILD)
	@rm -rf $(SANITIZER_LOG_DIR) && mkdir -p $(SANITIZER_LOG_DIR)
	@$(TEST_DATA)
	@ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1:log_path=$(SANITIZER_LOG_DIR)/asan \
	  UBSAN_OPTIONS=print_stacktrace=1:log_path=$(SANITIZER_LOG_DIR)/ubsan TEST_TRAIN_STEPS=20 \
	  ./scripts/run_tests.sh --jobs $(TEST_JOBS) $(C_TEST_COMMANDS) \
	  --then "./scripts/check_sanitizer_reports.sh $(SANITIZER_LOG_DIR)"
else
test: $(TEST_BUILD)
	@$(TEST_DATA)
	@./scripts/run_tests.sh --built-not-run "$(GPU_ONLY_PROGRAMS)" --gpu $(GPU) --jobs $(TEST_JOBS) $(TEST_COMMANDS)
endif

# The default dataset (tinyshakespeare, our own BPE tokenizer) in data/tinyshakespeare/; INPUT=path/input.txt uses a
# local copy of its text instead of looking for one (see dev/data/prepare_tinyshakespeare.sh). NAME=mytext INPUT=...
# makes data/mytext/ from your own text instead (dev/data/prepare_dataset.sh; INPUT: files and folders of .txt files,
# separated by spaces), with VOCAB, VAL_FRACTION, SHARD_TOKENS, SAMPLE_MB and TOKENIZER passed on when given, and
# FORCE=1 as --force (replace a data/NAME made from other inputs: refused without it).
DATASET_OPTIONS = $(if $(VOCAB),--vocab $(VOCAB)) $(if $(VAL_FRACTION),--val-fraction $(VAL_FRACTION)) \
                  $(if $(SHARD_TOKENS),--shard-tokens $(SHARD_TOKENS)) $(if $(SAMPLE_MB),--sample-mb $(SAMPLE_MB)) \
                  $(if $(TOKENIZER),--tokenizer "$(TOKENIZER)") $(if $(filter 1,$(FORCE)),--force)
data: dev/data/tokenizer
	@$(if $(filter-out tinyshakespeare,$(NAME)),./dev/data/prepare_dataset.sh "$(NAME)" $(foreach i,$(INPUT),"$(i)") $(DATASET_OPTIONS),$(if $(strip $(VOCAB) $(VAL_FRACTION) $(SHARD_TOKENS) $(SAMPLE_MB) $(TOKENIZER)),echo "make data: VOCAB VAL_FRACTION SHARD_TOKENS SAMPLE_MB TOKENIZER are for your own text: NAME=mytext (tinyshakespeare: VOCAB_SIZE=N ./dev/data/prepare_tinyshakespeare.sh)" >&2; exit 1;) ./dev/data/prepare_tinyshakespeare.sh $(if $(INPUT),"$(INPUT)"))

# only what it runs: the tokenizer and one trainer (the script asks has_gpu.sh too, and takes TRAINER from here;
# INPUT, STEPS, OUT and SEED reach it from the command line: the text trained on is checked against INPUT)
train: $(DATA_PROGRAMS) $(TRAINER)
	@TRAINER=./$(TRAINER) $(if $(DATA),DATA="$(DATA)") ./scripts/compare_bf16_fp8.sh

# llm.c's train_gpt2cu beside ours, for issue 56's comparison (scripts/gpu_check.sh's llmc stage): built from a
# checkout of karpathy/llm.c (LLMC_DIR, default third_party/llm.c; neither it nor the build is committed) into
# dev/llmc/ by dev/build_llmc.sh, which says the two lines it changes for CUDA 13; with cuDNN where ours has it.
LLMC_DIR ?= third_party/llm.c
LLMC_CUDNN_CFLAGS := $(if $(CUDNN_OBJECT),-I$(abspath $(CUDNN_FRONTEND_PATH)) -I$(CUDNN_HOME)/include -I$(CUDA_HOME)/include)
LLMC_CUDNN_LDLIBS := $(if $(CUDNN_OBJECT),$(call lib_dirs,$(CUDNN_HOME)) $(call lib_flag,$(CUDNN_HOME),cudnn,9) \
                     $(call lib_dirs,$(CUDA_HOME)) -lnvrtc)
llmc-baseline: | check-nvcc
	@NVCC="$(NVCC)" CUDNN_CFLAGS="$(LLMC_CUDNN_CFLAGS)" CUDNN_LDLIBS="$(LLMC_CUDNN_LDLIBS)" \
	  ./dev/build_llmc.sh "$(LLMC_DIR)" dev/llmc

# llm.c's trainer targets, which llm.c users type: this project's trainers have other names (one line, exit 1)
LLMC_TARGETS := train_gpt2 train_gpt2cu train_gpt2fp32cu
$(LLMC_TARGETS):
	@echo "make $@: llm.c's target; here: make train_gpt_fp8_cpu (CPU), make train_gpt_fp8 (CUDA), or make train (BF16 vs FP8, five runs)" >&2; exit 1

# The frontend's pin in requirements.txt is installed on its own, headers only (scripts/install_cudnn_frontend.sh):
# its Python package would pull in CUTLASS's DSL and more, which nothing here uses. Only where nvcc could build cuDNN
# attention: a CPU-only machine needs neither the headers nor the network to fetch them.
# requirements-hf.txt (torch, transformers, safetensors, tokenizers: the Hugging Face export and its test) too, unless
# NO_HF=1.
DEPS_IMPORTS := ml_dtypes, numpy, matplotlib, xxhash$(if $(filter 1,$(NO_HF)),,$(comma) torch, transformers, safetensors, tokenizers)
deps:
	@$(PYTHON) -c "import $(DEPS_IMPORTS)" 2>/dev/null && echo "deps: Python packages already present" \
	  || { grep -v '^nvidia-cudnn-frontend' requirements.txt >.deps_requirements.txt && \
	       $(if $(filter 1,$(NO_HF)),,cat requirements-hf.txt >>.deps_requirements.txt &&) \
	       $(PYTHON) -m pip install --quiet -r .deps_requirements.txt; rc=$$?; rm -f .deps_requirements.txt; exit $$rc; }
	@PYTHON=$(PYTHON) ./scripts/install_xxhash.sh
	@$(if $(and $(NVCC),$(if $(filter 1,$(NO_CUDNN)),,1)),PYTHON=$(PYTHON) ./scripts/install_cudnn_frontend.sh,echo \
	  "deps: no cuDNN frontend headers: nothing here builds cuDNN attention ($(if $(NVCC),NO_CUDNN=1,no nvcc))")

check-nvcc:
	@test -n "$(NVCC)" || { echo "nvcc not found: install the CUDA toolkit or set NVCC=/path/to/nvcc"; exit 1; }

GPU_TRAINER_HEADERS := $(CUDA_HEADERS) $(FP8_HEADERS) $(LLMC_HEADERS) $(KERNEL_HEADERS) \
                       llmc/multi_gpu.cuh llmc/multi_process.h llmc/memory_plan.h llmc/cudnn_attention.h llmc/gpu_idle.h

# The two GPU programs are compiled to objects and linked in a second rule, so that nvcc compiles them beside the host
# compiler's cudnn_attention.o instead of after it: with every core busy, that object then the test's compile was the
# build's longest chain (GPU machines' device time is short; doc/building.md has the numbers).
GPU_TRAINER_LDLIBS = $(NVCC_LDLIBS) $(MULTI_GPU_LDLIBS) $(CUDNN_LDLIBS) $(CUPTI_LDLIBS)
train_gpt_fp8.o: train_gpt_fp8.cu $(GPU_TRAINER_HEADERS) | check-nvcc
	$(NVCC) $(NVCC_FLAGS) $(MULTI_GPU_FLAGS) $(CUDNN_FLAGS) $(CUPTI_FLAGS) $(BLOCK_CASTS_FLAGS) -c $< -o $@
train_gpt_fp8: train_gpt_fp8.o $(BLOCK_CASTS) $(CUDNN_OBJECT) | check-nvcc
	$(NVCC) $(NVCC_FLAGS) $< $(BLOCK_CASTS) -o $@ $(GPU_TRAINER_LDLIBS)

# the GPU test compiles both trainers into one program and compares them
test_gpt_fp8.o: test_gpt_fp8.cu train_gpt_fp8.cu train_gpt_fp8.c $(GPU_TRAINER_HEADERS) llmc/testing.h llmc/tolerance.h \
                llmc/attention_fp8_reference.h | check-nvcc
	$(NVCC) $(NVCC_FLAGS) $(MULTI_GPU_FLAGS) $(CUDNN_FLAGS) $(CUPTI_FLAGS) $(BLOCK_CASTS_FLAGS) -c $< -o $@
test_gpt_fp8: test_gpt_fp8.o $(BLOCK_CASTS) $(CUDNN_OBJECT) | check-nvcc
	$(NVCC) $(NVCC_FLAGS) $< $(BLOCK_CASTS) -o $@ $(GPU_TRAINER_LDLIBS)

info:
	@echo "CC          $(CC)"
	@echo "NVCC        $(or $(NVCC),not found: CUDA programs and the nvcc tests are skipped)"
	@echo "CUDA_ARCH   sm_$(CUDA_ARCH)"
	@echo "CUDA_HOME   $(CUDA_HOME)"
	@echo "CUDNN_HOME  $(or $(CUDNN_HOME),not found: no cudnn_graph.h; set CUDNN_HOME or pip install nvidia-cudnn-cu13)"
	@echo "NCCL_HOME   $(or $(NCCL_HOME),not found: no nccl.h; set NCCL_HOME or pip install nvidia-nccl-cu13)"
	@echo "cuDNN attn  $(CUDNN_STATUS)"
	@echo "CUPTI       $(CUPTI_STATUS)"
	@echo "multi-GPU   $(if $(findstring MULTI_GPU,$(MULTI_GPU_FLAGS)),NCCL ($(NCCL_LIBRARY))$(if $(findstring USE_MPI,$(MULTI_GPU_FLAGS)), + MPI ($(MPICC)), (no MPI: ids via -pi fs|tcp)),off: $(if $(filter 1,$(NO_MULTI_GPU)),NO_MULTI_GPU=1,no nccl.h with a libnccl beside it))"
	@echo "GPU         $(if $(filter command line,$(origin GPU)),GPU=$(GPU) given (detected: $(GPU_ANSWER)),$(GPU_ANSWER))"
	@echo "make        builds $(RUN_PROGRAMS)"
	@echo "make train  runs $(TRAINER) ($(if $(filter train_gpt_fp8,$(TRAINER)),a GPU answers and nvcc is here,$(if $(filter 1,$(GPU)),nvcc not found,no GPU answers))); builds only it and $(DATA_PROGRAMS)"
	@echo "make test   also builds the tests$(if $(NVCC), and every CUDA program); runs the CPU tests$(if $(GPU_ONLY_PROGRAMS),; builds but does not run $(GPU_ONLY_PROGRAMS) (scripts/gpu_check.sh runs them on a GPU))"
	@echo "make cuda   builds $(CUDA_PROGRAMS) $(DEV_CUDA)$(if $(NVCC),, (needs nvcc: not found))"
	@echo "fuzzing     $(if $(FUZZ_CAN_BUILD),$(FUZZ_CC) with libFuzzer,not available: no clang with libFuzzer (apt-get install clang))"

help:
	@echo "gptfp8: GPT training in C/CUDA in BF16 and FP8 (delayed, current, blockwise and mxfp8 scaling). Targets:"
	@echo "  make                 build what you run: $(RUN_PROGRAMS)"
	@echo "  make train           prepare tinyshakespeare (or DATA), train the same model on the same data and seed in"
	@echo "                       BF16 and FP8 delayed, current, blockwise, mxfp8 (blockwise left out on a GPU but"
	@echo "                       H100/H200; on the CPU a sixth run, delayed with FP8 attention), plot"
	@echo "                       them into OUT (trainer here: $(TRAINER); knobs STEPS OUT SEED INPUT DATA TRAINER"
	@echo "                       PROGRESS RUNS JOBS below)"
	@echo "  make deps            pip install requirements.txt (ml_dtypes, numpy, matplotlib: tests and plots),"
	@echo "                       requirements-hf.txt (torch, transformers: the HF export; NO_HF=1 leaves them out) and"
	@echo "                       xxHash's header and the cuDNN frontend's headers into deps/ (checksums, cuDNN attention)"
	@echo "  make data            prepare data/tinyshakespeare (INPUT=path/to/input.txt, else ../shared, else a download)"
	@echo "  make data NAME=mytext INPUT=path   your own text (a file, several, or folders of .txt files) into data/mytext/:"
	@echo "                       its tokenizer and llm.c shards (VOCAB VAL_FRACTION SHARD_TOKENS SAMPLE_MB TOKENIZER;"
	@echo "                       dev/data/prepare_dataset.sh -h); then make train DATA=mytext. An existing data/mytext"
	@echo "                       made from other INPUT is refused (FORCE=1 replaces it); the same INPUT: kept or remade"
	@echo "  make test            build everything and run every CPU test; the last line is 'N passed, M failed'"
	@echo "  make test SANITIZE=1 the CPU programs under ASan + UBSan, the C suites on them (reports: sanitizer-reports/)"
	@echo "  make -j4 test-programs  only build what make test (SANITIZE=1 too) runs, in parallel; then make test"
	@echo "  make fuzz            libFuzzer on the shard, model, state, tokenizer, manifest and run data readers (clang)"
	@echo "  make cuda            the CUDA trainer, its GPU test, the dev/cuda checks (needs nvcc; runs on a GPU)"
	@echo "  make emulate         our kernels' dev/cuda checks, test_gpt_fp8 and train_gpt_fp8 for the CPU (dev/cuda/emulate)"
	@echo "  make info            what was found: compilers, GPU, cuDNN, NCCL, and what make / make train use"
	@echo "  make clean           remove what make built (not data/ or logs)"
	@echo "  make PROGRAM         one program, e.g. train_gpt_fp8_cpu, train_gpt_fp8, test_gpt_fp8, dev/cuda/fp8_gemm"
	@echo "Variables (make VAR=value ...):"
	@echo "  STEPS=N              make train: steps per run, from 1 (default: the script's, by trainer; see README)"
	@echo "  OUT=DIR              make train: output folder (default log_compare)"
	@echo "  SEED=N               make train: seed of every run (default 1337)"
	@echo "  INPUT=FILE           make data / make train: a local tinyshakespeare input.txt (no network needed;"
	@echo "                       another text is refused); with NAME=: your own text (files and folders, separated by"
	@echo "                       spaces); make train DATA=NAME INPUT=...: checks data/NAME was made from it, as it is now"
	@echo "  FORCE=1              make data NAME=...: make data/NAME anew, even up to date or made from other INPUT"
	@echo "  NAME=NAME            make data: a dataset of your own text in data/NAME (default: tinyshakespeare)"
	@echo "  DATA=NAME            make train: train on data/NAME (made by make data NAME=NAME; default tinyshakespeare)"
	@echo "  TRAINER=NAME         make train: train_gpt_fp8 or train_gpt_fp8_cpu (now: $(TRAINER))"
	@echo "  PROGRESS=bar|lines   make train: one updating line per run (bar: the default on a terminal), or a step"
	@echo "                       line every STEPS/20 steps and every val loss (lines: the default otherwise)"
	@echo "  RUNS=fp8,fp8_current  make train: only these runs beside bf16 (of fp8 fp8_current fp8_blockwise fp8_mxfp8"
	@echo "                       fp8_attention; default all the trainer makes)"
	@echo "  JOBS=N               make train: runs trained at once (default: on the CPU as many as cores, each with"
	@echo "                       cores/N OpenMP threads unless OMP_NUM_THREADS says; on a GPU one)"
	@echo "  GPU=0|1              override the GPU detection (scripts/has_gpu.sh, nvidia-smi; now: $(GPU))"
	@echo "  CUDA_ARCH=90|89      Hopper (default) or Ada"
	@echo "  CUDA_HOME, CUDNN_HOME, NCCL_HOME   folders with include/ and lib/ (found by themselves when standard)"
	@echo "  NO_OMP=1             build the CPU code without OpenMP"
	@echo "  NO_MULTI_GPU=1       the CUDA trainer without NCCL; NO_USE_MPI=1 without MPI (ids via -pi fs|tcp)"
	@echo "  NO_CUDNN=1           the CUDA trainer without cuDNN attention (-attn plain only)"
	@echo "  NO_HF=1              make deps: without torch and transformers (5.6 GB; only the HF export needs them)"
	@echo "  CUDNN_FRONTEND_PATH  the cuDNN frontend's include/ folder (default: what make deps put in deps/)"
	@echo "  TEST_JOBS=N          make test: the suites N at a time (default: the cores, at most 4; now $(TEST_JOBS));"
	@echo "                       1: one after the other, each one's output as it comes"
	@echo "  FUZZ_SECONDS=N       make fuzz: seconds per reader (default 60); FUZZ_SMOKE_SECONDS: the test's (20)"
	@echo "  FUZZ_CC=clang        the compiler of the fuzz harnesses (default clang-14 or clang)"
	@echo "  CC, NVCC, PYTHON     the compilers and the Python to use"

clean:
	rm -f $(CPU_PROGRAMS) $(CPU_TESTS) $(CPU_TOOLS) $(DEV_CUDA) $(CUDA_HOST_TESTS) train_gpt_fp8 test_gpt_fp8 $(DATA_CLEAN) \
	      train_gpt_fp8.o test_gpt_fp8.o fp8/block_quantize.o llmc/cudnn_attention.o dev/cuda/attention_cudnn \
	      dev/cuda/attention_cudnn_fp8 \
	      $(FUZZ_PROGRAMS) $(BUILD_FLAGS_STAMP) $(EMULATED_PROGRAMS) dev/cuda/emulate/train_gpt_fp8
	rm -rf fuzz/work sanitizer-reports $(EMULATE_BUILD)
