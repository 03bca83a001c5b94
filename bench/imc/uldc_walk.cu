// Microbenchmark (issue 18): what a warp pays for reading a __constant__ table through
// ULDC (the uniform datapath, served by the immediate constant cache) when the table is
// larger than that cache. Every thread walks the whole table in order (the index is the
// loop counter, the same in every lane, so ptxas keeps it in a uniform register and reads
// with ULDC c[0x3][UR+imm]); each entry is used by the TILE points a thread holds. The
// loop is kept rolled (unrolled by 8 at most) at every table size, so the instruction form
// does not change with WORDS. Written for this project, not taken from any kernel.
// Build: nvcc -O3 -arch=sm_90 -DWORDS=4096 -DTILE=1 uldc_walk.cu
// Run: ./a.out N BLOCK...  or  ./a.out N BLOCK:SMEM... (SMEM: dynamic shared memory bytes a
// block reserves and never uses, to hold fewer blocks on an SM)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#ifndef WORDS
#define WORDS 4096
#endif
#ifndef TILE
#define TILE 1
#endif
#ifndef PASSES  // walks over the table per thread (a small table walked many times)
#define PASSES 1
#endif
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

__constant__ float table[WORDS];

__global__ void walk(const float* in, int* out, int n) {
  extern __shared__ float reserved[];  // never read: only its reservation counts
  int i = blockIdx.x * blockDim.x * TILE + threadIdx.x;
  float p[TILE];
  int c[TILE];
#pragma unroll
  for (int t = 0; t < TILE; t++) {
    p[t] = i + t * (int)blockDim.x < n ? in[i + t * blockDim.x] : 0.f;
    c[t] = 0;
  }
#pragma unroll 1
  for (int r = 0; r < PASSES; r++) {
#pragma unroll 8
    for (int j = 0; j < WORDS; j++) {
      float v = table[j];
#pragma unroll
      for (int t = 0; t < TILE; t++)
        if (p[t] < v) c[t] = !c[t];
    }
  }
#pragma unroll
  for (int t = 0; t < TILE; t++)
    if (i + t * (int)blockDim.x < n) out[i + t * blockDim.x] = c[t];
}

int main(int argc, char** argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
  std::vector<float> h(WORDS), hin(n);
  srand(12345);
  for (int j = 0; j < WORDS; j++) h[j] = rand() / (float)RAND_MAX;
  for (int k = 0; k < n; k++) hin[k] = rand() / (float)RAND_MAX;
  CHECK(cudaMemcpyToSymbol(table, h.data(), WORDS * sizeof(float)));
  float* in; int* out;
  CHECK(cudaMalloc(&in, n * sizeof(float)));
  CHECK(cudaMalloc(&out, n * sizeof(int)));
  CHECK(cudaMemcpy(in, hin.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  int sms; CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<int> got(n);
  for (int a = 2; a < argc || a == 2; a++) {
    int block = argc > 2 ? atoi(argv[a]) : 256, smem = 0;
    if (argc > 2 && strchr(argv[a], ':')) smem = atoi(strchr(argv[a], ':') + 1);
    int grid = (n + block * TILE - 1) / (block * TILE);
    int blocks_per_sm = 0;
    CHECK(cudaFuncSetAttribute(walk, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, walk, block, smem));
    CHECK(cudaMemset(out, 0xff, n * sizeof(int)));  // poison: every output must be written
    cudaEvent_t e0, e1; CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
    for (int r = 0; r < 3; r++) walk<<<grid, block, smem>>>(in, out, n);
    CHECK(cudaGetLastError()); CHECK(cudaDeviceSynchronize());
    std::vector<float> ms(15);
    for (auto& m : ms) {
      CHECK(cudaEventRecord(e0)); walk<<<grid, block, smem>>>(in, out, n); CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1)); CHECK(cudaEventElapsedTime(&m, e0, e1));
    }
    CHECK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    CHECK(cudaMemcpy(got.data(), out, n * sizeof(int), cudaMemcpyDeviceToHost));
    int bad = 0;
    for (int k = 0; k < n; k += n / 997 + 1) {  // ~1000 points, each against the whole table
      int c = 0;
      for (int r = 0; r < PASSES; r++)
        for (int j = 0; j < WORDS; j++) if (hin[k] < h[j]) c = !c;
      bad += got[k] != c;
    }
    for (int k = 0; k < n; k++) bad += got[k] != 0 && got[k] != 1;  // unwritten: 0xffffffff
    double warp_iters_per_sm = (double)n / 32 / TILE * WORDS * PASSES / sms;  // warp-wide reads
    printf("passes=%d words=%d bytes=%d tile=%d block=%d smem=%d blocks_per_sm=%d warps_per_sm=%d n=%d "
           "median_ms=%.4f min_ms=%.4f grid=%d ns_per_warp_read_per_sm=%.3f check=%s\n", PASSES, WORDS,
           WORDS * 4, TILE, block, smem, blocks_per_sm, blocks_per_sm * block / 32, n,
           ms[ms.size() / 2], ms[0], grid,
           ms[ms.size() / 2] * 1e6 / warp_iters_per_sm, bad ? "WRONG" : "ok");
    CHECK(cudaEventDestroy(e0)); CHECK(cudaEventDestroy(e1));
  }
  return 0;
}
