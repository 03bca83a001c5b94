// Microbenchmark (issue 18): the cost of a loop over a __constant__ table whose index is the
// loop counter, so ptxas reads it with ULDC through the immediate constant cache, as
// kernel_tuner's pnpoly vertex loop does. Each thread handles TILE points; every table
// entry is read once per thread per pass and used by each of its TILE points.
// Build: nvcc -O3 -arch=sm_90 -DVERTS=600 -DTILE=1 [-DROLLED] imc_loop.cu; run: ./a.out N BLOCK
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
#ifndef VERTS
#define VERTS 600
#endif
#ifdef ROLLED  // the trip count a runtime argument: ptxas keeps the loop rolled
#define ROLLED_COUNT verts
#else
#define ROLLED_COUNT VERTS
#endif
#ifndef TILE
#define TILE 1
#endif
__constant__ float2 table[VERTS];
#ifdef ROLLED
#define ROLLED_FLAG 1
#else
#define ROLLED_FLAG 0
#endif

__global__ void passes(const float* in, float* out, int n, int verts) {
  int i = blockIdx.x * blockDim.x * TILE + threadIdx.x;
  float p[TILE], acc[TILE];
#pragma unroll
  for (int t = 0; t < TILE; t++) {
    p[t] = i + t * blockDim.x < n ? in[i + t * blockDim.x] : 0.f;
    acc[t] = 0.f;
  }
  for (int j = 0; j < ROLLED_COUNT; j++) {
    float2 v = table[j];
#pragma unroll
    for (int t = 0; t < TILE; t++) acc[t] += p[t] < v.x ? v.y : 0.f;
  }
#pragma unroll
  for (int t = 0; t < TILE; t++)
    if (i + t * blockDim.x < n) out[i + t * blockDim.x] = acc[t];
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 10000000, block = argc > 2 ? atoi(argv[2]) : 256;
  static float2 h[VERTS];
  for (int j = 0; j < VERTS; j++) h[j] = make_float2((j * 37 % 101) / 101.f, (j % 13) * 0.1f);
  cudaMemcpyToSymbol(table, h, sizeof(h));
  float *in, *out;
  cudaMalloc(&in, n * sizeof(float)); cudaMalloc(&out, n * sizeof(float));
  float* hin = (float*)malloc(n * sizeof(float));
  for (int k = 0; k < n; k++) hin[k] = (k * 7919 % 1000) / 1000.f;
  cudaMemcpy(in, hin, n * sizeof(float), cudaMemcpyHostToDevice);
  int grid = (n + block * TILE - 1) / (block * TILE);
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  for (int r = 0; r < 3; r++) passes<<<grid, block>>>(in, out, n, VERTS);
  float best = 1e9;
  for (int r = 0; r < 10; r++) {
    cudaEventRecord(a); passes<<<grid, block>>>(in, out, n, VERTS); cudaEventRecord(b);
    cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); if (ms < best) best = ms;
  }
  // check one thread's first point against the host
  float first = 0; float got;
  for (int j = 0; j < VERTS; j++) first += hin[0] < h[j].x ? h[j].y : 0.f;
  cudaMemcpy(&got, out, sizeof(float), cudaMemcpyDeviceToHost);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  double warp_iters_per_sm = (double)grid * block / 32 * VERTS / sms;
  printf("rolled=%d verts=%d table_bytes=%d tile=%d block=%d n=%d best_ms=%.4f ns_per_warp_iter_per_sm=%.3f "
         "check=%s err=%s\n", ROLLED_FLAG, VERTS, VERTS * 8, TILE, block, n, best, best * 1e6 / warp_iters_per_sm,
         fabsf(first - got) <= 1e-3f * fabsf(first) + 1e-3f ? "ok" : "WRONG",
         cudaGetErrorString(cudaGetLastError()));
  return 0;
}
