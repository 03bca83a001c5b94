constexpr int loop_unroll_factor_0 = LOOP_UNROLL_FACTOR_0;  // kernel_tuner's loop_unroll_factor_0: #pragma unroll takes no macro
#include "examples/cuda/reduction.cu"
