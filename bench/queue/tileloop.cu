// A tile loop whose resident blocks wait on their own loads (bench/queue/tileloop.py,
// docs/model.md item 36): each tile one coalesced load a thread that misses L2 (a new
// stretch of the buffer every tile and, through `offset`, every run), a store to shared
// memory, a barrier, ITERS x 8 independent FFMAs a thread on a neighbour's value, a
// barrier. LOAD = 0 replaces the load with a register value (the compute alone).
template <int ITERS, int LOAD>
__global__ void tileloop(const float* __restrict__ src, float* __restrict__ out, int tiles,
                         long long stride, long long n, long long offset) {
  extern __shared__ float sh[];
  float acc[8];
  for (int j = 0; j < 8; j++) acc[j] = 0.0f;
  long long base = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  for (int t = 0; t < tiles; t++) {
    float v = LOAD ? src[(base + (long long)t * stride + offset) % n] : (float)(t + 1);
    sh[threadIdx.x] = v;
    __syncthreads();
    float x = sh[(threadIdx.x + 1) % blockDim.x] * 0.5f;
#pragma unroll 4
    for (int i = 0; i < ITERS; i++) {
#pragma unroll
      for (int j = 0; j < 8; j++) acc[j] = fmaf(acc[j], 0.999f, x);
    }
    __syncthreads();
  }
  float s = 0.0f;
  for (int j = 0; j < 8; j++) s += acc[j];
  out[base] = s;
}
