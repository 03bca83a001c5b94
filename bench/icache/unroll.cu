// Microbenchmark (issue 18): does the size of an unrolled loop cost time? The inner step of
// a register-blocked SGEMM (TM + TN floats from shared memory as float4, TM x TN FFMAs into
// accumulators) in a k loop of 2,048 steps unrolled UNROLL times, so the loop's SASS grows
// with UNROLL while the work per step stays the same. The tables hold 128 rows and step k
// reads row k % 128: no two steps of one unrolled trip read the same row, so ptxas cannot
// keep loaded values in registers from one step to a later one (with 16 rows it did, and
// spilled). Lanes read 4 distinct float4 per load (one wavefront). Warps per SM are set by
// the block size and an unused dynamic shared-memory reservation. Written for this project,
// not taken from any kernel.
// Build: nvcc -O3 -arch=sm_90 -DTM=8 -DTN=8 -DUNROLL=4 unroll.cu; run: ./a.out BLOCK:SMEM...
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#ifndef UNROLL
#define UNROLL 4
#endif
#define PRAGMA(x) _Pragma(#x)
#define UNROLL_BY(n) PRAGMA(unroll n)
#define K 2048
#define ROWS 128
#define G 4  // distinct float4 per row and load: lanes g = lane % 4 share one
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

__global__ void outer(const float4* a_in, const float4* b_in, float* out) {
  __shared__ float4 As[ROWS][TM / 4][G];
  __shared__ float4 Bs[ROWS][TN / 4][G];
  extern __shared__ float reserved[];  // never read: only its reservation counts
  int g = threadIdx.x % G;
  for (int r = threadIdx.x; r < ROWS * (TM / 4) * G; r += blockDim.x) (&As[0][0][0])[r] = a_in[r];
  for (int r = threadIdx.x; r < ROWS * (TN / 4) * G; r += blockDim.x) (&Bs[0][0][0])[r] = b_in[r];
  __syncthreads();
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) acc[i][j] = 0.f;
  UNROLL_BY(UNROLL)
  for (int k = 0; k < K; k++) {
    int row = k % ROWS;
    float a[TM], b[TN];
#pragma unroll
    for (int i = 0; i < TM / 4; i++) {
      float4 v = As[row][i][g];
      a[4 * i] = v.x; a[4 * i + 1] = v.y; a[4 * i + 2] = v.z; a[4 * i + 3] = v.w;
    }
#pragma unroll
    for (int j = 0; j < TN / 4; j++) {
      float4 v = Bs[row][j][g];
      b[4 * j] = v.x; b[4 * j + 1] = v.y; b[4 * j + 2] = v.z; b[4 * j + 3] = v.w;
    }
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
      for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
  }
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) s += acc[i][j] * (1 + i * TN + j);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

int main(int argc, char** argv) {
  int na = ROWS * (TM / 4) * G, nb = ROWS * (TN / 4) * G;
  std::vector<float4> ha(na), hb(nb);
  srand(7);
  auto rnd = [] { return rand() / (float)RAND_MAX - 0.5f; };
  for (auto& v : ha) v = make_float4(rnd(), rnd(), rnd(), rnd());
  for (auto& v : hb) v = make_float4(rnd(), rnd(), rnd(), rnd());
  float4 *a, *b; float* out;
  CHECK(cudaMalloc(&a, na * sizeof(float4))); CHECK(cudaMalloc(&b, nb * sizeof(float4)));
  CHECK(cudaMemcpy(a, ha.data(), na * sizeof(float4), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), nb * sizeof(float4), cudaMemcpyHostToDevice));
  int sms; CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // one thread's result on the host (thread 5: g = 1): the same fmaf order
  double want = 0; {
    int g = 5 % G; float acc[TM][TN] = {};
    for (int k = 0; k < K; k++) {
      int row = k % ROWS; float av[TM], bv[TN];
      for (int i = 0; i < TM / 4; i++) { float4 v = ha[(row * (TM / 4) + i) * G + g];
        av[4*i] = v.x; av[4*i+1] = v.y; av[4*i+2] = v.z; av[4*i+3] = v.w; }
      for (int j = 0; j < TN / 4; j++) { float4 v = hb[(row * (TN / 4) + j) * G + g];
        bv[4*j] = v.x; bv[4*j+1] = v.y; bv[4*j+2] = v.z; bv[4*j+3] = v.w; }
      for (int i = 0; i < TM; i++) for (int j = 0; j < TN; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    for (int i = 0; i < TM; i++) for (int j = 0; j < TN; j++) want += acc[i][j] * (1 + i * TN + j);
  }
  for (int ai = 1; ai < argc; ai++) {
    int block = atoi(argv[ai]), smem = strchr(argv[ai], ':') ? atoi(strchr(argv[ai], ':') + 1) : 0;
    CHECK(cudaFuncSetAttribute(outer, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, outer, block, smem));
    if (per_sm == 0) { printf("unroll=%d block=%d smem=%d does-not-fit\n", UNROLL, block, smem); continue; }
    int grid = per_sm * sms * 4;  // four full waves
    CHECK(cudaMalloc(&out, grid * block * sizeof(float)));
    cudaEvent_t e0, e1; CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
    for (int r = 0; r < 3; r++) outer<<<grid, block, smem>>>(a, b, out);
    CHECK(cudaGetLastError()); CHECK(cudaDeviceSynchronize());
    std::vector<float> ms(11);
    for (auto& m : ms) {
      CHECK(cudaEventRecord(e0)); outer<<<grid, block, smem>>>(a, b, out); CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1)); CHECK(cudaEventElapsedTime(&m, e0, e1));
    }
    std::sort(ms.begin(), ms.end());
    float got; CHECK(cudaMemcpy(&got, out + 5, sizeof(float), cudaMemcpyDeviceToHost));
    double warp_iters_per_sm = (double)grid * block / 32 * K / sms;
    printf("unroll=%d tm=%d tn=%d block=%d smem=%d warps_per_sm=%d median_ms=%.4f "
           "ns_per_warp_iter_per_sm=%.4f check=%s\n", UNROLL, TM, TN, block, smem,
           per_sm * block / 32, ms[ms.size() / 2], ms[ms.size() / 2] * 1e6 / warp_iters_per_sm,
           fabs(got - want) <= 1e-3 * fabs(want) + 1e-3 ? "ok" : "WRONG");
    CHECK(cudaFree(out)); CHECK(cudaEventDestroy(e0)); CHECK(cudaEventDestroy(e1));
  }
  return 0;
}
