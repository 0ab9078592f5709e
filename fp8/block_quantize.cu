// fp8/block_quantize.cu — the block casts' kernels and launchers compiled once, into fp8/block_quantize.o, which make
// links into every program that casts blocks (fp8/block_quantize.cuh, "Where the kernels are compiled", says why).
#undef FP8_BLOCK_CASTS_EXTERN
#define FP8_BLOCK_CASTS_DEFINE
#include "block_quantize.cuh"
