// Microbenchmark (issue 18, docs/model.md item 39): what lengthens a warp's wait for its
// shared loads in a tiled GEMM's inner loop. SGEMM_CUDA's vectorized kernel at TM = 16
// waits ~150 clocks a k step on its shared loads under load (bench/results/h200-vec-broadcast,
// h200-sass-stalls), where this project's lds_ffma.cu loop of the same shape waits ~30-45
// (h200-dispatch). The two differ in three ways, each a switch here:
//   BCAST  the A operand is read as a broadcast (every lane of a warp the same float4, as
//          the vectorized kernel reads its transposed A tile), else a float4 a lane;
//   SYNC   1: every ROWS k steps the block meets at a barrier twice (a tiled loop's
//          barriers alone: the tiles' self-copy between them compiles to nothing);
//          2: between the barriers the tiles are reloaded from global memory through L2
//          (__ldcg, LDG.128 then STS.128: a tiled loop's tile loads), every block and tile
//          the same 12-20 KB (L2 holds them; all SMs read the same lines);
//          3: the same from a block's own place in a buffer of NT copies of the tiles, a
//          new one every tile, as a GEMM's blocks walk their panels (NT = 512: 6-10 MB,
//          L2 holds them; NT = 16384: 200-330 MB, they come from DRAM);
//   STAGGER (clocks) blocks start apart, by 0-3 quarters of it (an SM's blocks otherwise
//          begin, and stay, in step);
//   ROLLED the ROWS k steps of a tile kept rolled (a warp waits for each step's loads
//          before its FFMAs), else unrolled (ptxas may issue the next step's loads early).
// Each k step loads TM + TN floats a lane (TM / 4 + TN / 4 LDS.128) and does the TM x TN
// outer product (TM * TN FFMAs). The tiles never change value, so every variant computes
// the same result; lane 5 of block 0 is checked against the host. Warps an SM are set by
// the block size and an unused dynamic shared-memory reservation. Written for this project.
// Build: nvcc -O3 -arch=sm_90 -DTM=16 -DTN=4 [-DBCAST] [-DSYNC=1|2|3] [-DROLLED] lds_bar.cu
// Run:   ./a.out [nt=N] BLOCK:SMEM ...   (one line a configuration)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#ifndef TM
#define TM 16
#endif
#ifndef TN
#define TN 4
#endif
#ifndef SYNC
#define SYNC 0
#endif
#ifdef BCAST
#define ALANE(lane) 0
#define BCAST_ON 1
#else
#define ALANE(lane) (lane)
#define BCAST_ON 0
#endif
#ifdef STAGGER
#define STAGGER_ON STAGGER
#else
#define STAGGER_ON 0
#endif
#define K 2048
#define ROWS 8
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

__global__ void outer(const float4* __restrict__ a_in, const float4* __restrict__ b_in,
                      const float4* __restrict__ a_big, const float4* __restrict__ b_big,
                      int nt, int nsm, float* out) {
  __shared__ float4 As[ROWS * (TM / 4)][32];
  __shared__ float4 Bs[ROWS * (TN / 4)][32];
  extern __shared__ float reserved[];  // never read: only its reservation counts
#ifdef WARPS
  // warps a block fixed at build time: the tile reload's loops unroll, and a warp issues all
  // its loads of a tile before its first store, as a GEMM's tile load does (blockDim.x must
  // be WARPS * 32; main skips other configurations)
  constexpr int warps = WARPS;
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#else
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
#endif
  for (int r = warp; r < ROWS * (TM / 4); r += warps) As[r][lane] = a_in[r * 32 + lane];
  for (int r = warp; r < ROWS * (TN / 4); r += warps) Bs[r][lane] = b_in[r * 32 + lane];
#ifdef STAGGER
  // blocks start apart: block b waits (b / SMs) % 4 quarters of STAGGER clocks first, so
  // the blocks an SM holds (dealt round-robin over the SMs) do not begin in step
  if (threadIdx.x == 0) {
    long long until = clock64() + (long long)STAGGER * ((blockIdx.x / nsm) % 4) / 4;
    while (clock64() < until) {}
  }
#endif
  __syncthreads();
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) acc[i][j] = 0.f;
#pragma unroll 1
  for (int t = 0; t < K / ROWS; t++) {
#ifdef ROLLED
#pragma unroll 1
#else
#pragma unroll
#endif
    for (int row = 0; row < ROWS; row++) {
      int rr = (row + t) & (ROWS - 1);  // moves with t: ptxas cannot hoist the loads
      float a[TM], b[TN];
#pragma unroll
      for (int i = 0; i < TM / 4; i++) {
        float4 v = As[rr * (TM / 4) + i][ALANE(lane)];
        a[4 * i] = v.x; a[4 * i + 1] = v.y; a[4 * i + 2] = v.z; a[4 * i + 3] = v.w;
      }
#pragma unroll
      for (int j = 0; j < TN / 4; j++) {
        float4 v = Bs[rr * (TN / 4) + j][lane];
        b[4 * j] = v.x; b[4 * j + 1] = v.y; b[4 * j + 2] = v.z; b[4 * j + 3] = v.w;
      }
#pragma unroll
      for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
#if SYNC
    __syncthreads();
#if SYNC == 3
    const size_t tile = (size_t)((blockIdx.x * (K / ROWS) + t) % nt);
    const float4* a_src = a_big + tile * (ROWS * (TM / 4) * 32);
    const float4* b_src = b_big + tile * (ROWS * (TN / 4) * 32);
#elif SYNC == 2
    const float4* a_src = a_in;
    const float4* b_src = b_in;
#endif
#pragma unroll
    for (int r = warp; r < ROWS * (TM / 4); r += warps)
#if SYNC >= 2
      As[r][lane] = __ldcg(&a_src[r * 32 + lane]);
#else
      As[r][lane] = As[r][lane];
#endif
#pragma unroll
    for (int r = warp; r < ROWS * (TN / 4); r += warps)
#if SYNC >= 2
      Bs[r][lane] = __ldcg(&b_src[r * 32 + lane]);
#else
      Bs[r][lane] = Bs[r][lane];
#endif
    __syncthreads();
#endif
  }
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) s += acc[i][j] * (1 + i * TN + j);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

int main(int argc, char** argv) {
  int na = ROWS * (TM / 4) * 32, nb = ROWS * (TN / 4) * 32;
  std::vector<float4> ha(na), hb(nb);
  srand(11);
  auto rnd = [] { return rand() / (float)RAND_MAX - 0.5f; };
  for (auto& v : ha) v = make_float4(rnd(), rnd(), rnd(), rnd());
  for (auto& v : hb) v = make_float4(rnd(), rnd(), rnd(), rnd());
  float4 *a, *b; float* out;
  CHECK(cudaMalloc(&a, na * sizeof(float4))); CHECK(cudaMalloc(&b, nb * sizeof(float4)));
  CHECK(cudaMemcpy(a, ha.data(), na * sizeof(float4), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), nb * sizeof(float4), cudaMemcpyHostToDevice));
  int nt = 1, first = 1;  // an optional first argument nt=N: copies of the tiles (SYNC == 3)
  if (argc > 1 && strncmp(argv[1], "nt=", 3) == 0) { nt = atoi(argv[1] + 3); first = 2; }
  if (nt < 1 || nt > 65536) { printf("nt must be 1-65536\n"); return 1; }
  float4 *a_big = a, *b_big = b;
  if (SYNC == 3) {  // nt copies of each tile, end to end
    CHECK(cudaMalloc(&a_big, (size_t)nt * na * sizeof(float4)));
    CHECK(cudaMalloc(&b_big, (size_t)nt * nb * sizeof(float4)));
    for (int c = 0; c < nt; c++) {
      CHECK(cudaMemcpy(a_big + (size_t)c * na, a, na * sizeof(float4), cudaMemcpyDeviceToDevice));
      CHECK(cudaMemcpy(b_big + (size_t)c * nb, b, nb * sizeof(float4), cudaMemcpyDeviceToDevice));
    }
  }
  int sms; CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  double want = 0; {  // lane 5's result on the host, in the kernel's fmaf order
    int lane = 5, la = BCAST_ON ? 0 : lane; float acc[TM][TN] = {};
    for (int k = 0; k < K; k++) {
      int row = (k % ROWS + k / ROWS) % ROWS; float av[TM], bv[TN];
      for (int i = 0; i < TM / 4; i++) { float4 v = ha[(row * (TM / 4) + i) * 32 + la];
        av[4*i] = v.x; av[4*i+1] = v.y; av[4*i+2] = v.z; av[4*i+3] = v.w; }
      for (int j = 0; j < TN / 4; j++) { float4 v = hb[(row * (TN / 4) + j) * 32 + lane];
        bv[4*j] = v.x; bv[4*j+1] = v.y; bv[4*j+2] = v.z; bv[4*j+3] = v.w; }
      for (int i = 0; i < TM; i++) for (int j = 0; j < TN; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    for (int i = 0; i < TM; i++) for (int j = 0; j < TN; j++) want += acc[i][j] * (1 + i * TN + j);
  }
#ifdef ROLLED
  const int rolled = 1;
#else
  const int rolled = 0;
#endif
  for (int ai = first; ai < argc; ai++) {
    int block = atoi(argv[ai]), smem = strchr(argv[ai], ':') ? atoi(strchr(argv[ai], ':') + 1) : 0;
    CHECK(cudaFuncSetAttribute(outer, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, outer, block, smem));
    if (per_sm == 0) { printf("block=%d smem=%d does-not-fit\n", block, smem); continue; }
#ifdef WARPS
    if (block != WARPS * 32) { printf("block=%d smem=%d not-this-build\n", block, smem); continue; }
#endif
    int grid = per_sm * sms * 4;  // four full waves
    CHECK(cudaMalloc(&out, grid * block * sizeof(float)));
    CHECK(cudaMemset(out, 0xff, grid * block * sizeof(float)));  // NaN: an unwritten output fails
    cudaEvent_t e0, e1; CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
    for (int r = 0; r < 3; r++) outer<<<grid, block, smem>>>(a, b, a_big, b_big, nt, sms, out);
    CHECK(cudaGetLastError()); CHECK(cudaDeviceSynchronize());
    std::vector<float> ms(15);
    for (auto& m : ms) {
      CHECK(cudaEventRecord(e0)); outer<<<grid, block, smem>>>(a, b, a_big, b_big, nt, sms, out); CHECK(cudaEventRecord(e1));
      CHECK(cudaEventSynchronize(e1)); CHECK(cudaEventElapsedTime(&m, e0, e1));
    }
    CHECK(cudaGetLastError());
    std::sort(ms.begin(), ms.end());
    std::vector<float> got(grid * block);
    CHECK(cudaMemcpy(got.data(), out, got.size() * sizeof(float), cudaMemcpyDeviceToHost));
    bool ok = std::fabs(got[5] - want) <= 1e-4 * std::fabs(want) + 1e-4;
    for (float g : got) ok = ok && std::isfinite(g);  // every output written
    double warp_iters_per_sm = (double)grid * block / 32 * K / sms;
    printf("tm=%d tn=%d bcast=%d sync=%d nt=%d stagger=%d rolled=%d block=%d smem=%d warps_per_sm=%d "
           "median_ms=%.4f p10_ms=%.4f p90_ms=%.4f ns_per_warp_iter_per_sm=%.4f check=%s\n",
           TM, TN, BCAST_ON, SYNC, nt, STAGGER_ON, rolled, block, smem, per_sm * block / 32, ms[ms.size() / 2],
           ms[1], ms[ms.size() - 2], ms[ms.size() / 2] * 1e6 / warp_iters_per_sm, ok ? "ok" : "WRONG");
    CHECK(cudaFree(out)); CHECK(cudaEventDestroy(e0)); CHECK(cudaEventDestroy(e1));
  }
  return 0;
}
