// ffma.cu with 48 accumulators (64 FFMAs an iteration): more registers for ffma_patch.py to name
extern "C" __global__ void ffma_loop(float* out, const float* in, int iters) {
  float x[8], acc[48];
  int t = threadIdx.x;
#pragma unroll
  for (int i = 0; i < 8; i++) x[i] = in[(t + i) & 63];
#pragma unroll
  for (int i = 0; i < 48; i++) acc[i] = in[(t + 8 + i) & 63];
  for (int it = 0; it < iters; it++) {
#pragma unroll
    for (int j = 0; j < 2; j++)
#pragma unroll
      for (int i = 0; i < 32; i++) acc[i + 16 * j] = fmaf(acc[i + 16 * j], x[(i + j) & 7], x[(i + 2 * j + 1) & 7]);
  }
  float s = 0;
#pragma unroll
  for (int i = 0; i < 48; i++) s += acc[i];
  out[blockIdx.x * blockDim.x + t] = s;
}
