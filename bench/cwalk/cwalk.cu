// Microbenchmark (issue 18): when does a loop that walks `__constant__` tables entry by entry
// (every lane at the same entry) leave its issue count for the constant caches' slow regime
// (docs/model.md item 16)? Round 3 of bench/imc: the tables are read in three forms,
//   FORM 0: one float table through ULDC (bench/imc/uldc_walk.cu's form),
//   FORM 1: one float2 table, entries j and j-1 (LDC.64 with a register index),
//   FORM 2: both, a float2 table and a float table (LDC.64 + ULDC, 12 bytes an entry),
// and each entry is used by the TILE points a thread holds (a crossing test: two compares, a
// multiply-add, a compare and a select a point). Written for this project, not taken from
// any kernel. Build: nvcc -O3 -arch=sm_90 cwalk.cu. Run: ./a.out BLOCK:BLOCKS_PER_SM...
// (a block reserves dynamic shared memory it never uses, so that at most BLOCKS_PER_SM
// blocks fit an SM). Prints one line a (form, tile, table size, block, blocks per SM).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>

#define MAXV 1200
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

__constant__ float2 verts[MAXV];
__constant__ float slopes[MAXV];

template <int FORM, int TILE>
__global__ void walk(const float2* pts, int* out, int n, int nv) {
  extern __shared__ float reserved[];  // never read: only its reservation counts
  int i = blockIdx.x * blockDim.x * TILE + threadIdx.x;
  float2 p[TILE];
  int c[TILE];
#pragma unroll
  for (int t = 0; t < TILE; t++) {
    p[t] = i + t * (int)blockDim.x < n ? pts[i + t * blockDim.x] : make_float2(0.f, 0.f);
    c[t] = 0;
  }
  int k = nv - 1;
#pragma unroll 4
  for (int j = 0; j < nv; k = j++) {
    if (FORM == 0) {
      float s = slopes[j];
#pragma unroll
      for (int t = 0; t < TILE; t++)
        if ((p[t].y < s) != (p[t].x < s) && p[t].x < s * p[t].y + s) c[t] = !c[t];
    } else {
      float2 a = verts[j], b = verts[k];
      float s = FORM == 1 ? b.x - a.x : slopes[j];
#pragma unroll
      for (int t = 0; t < TILE; t++)
        if ((a.y > p[t].y) != (b.y > p[t].y) && p[t].x < s * (p[t].y - a.y) + a.x) c[t] = !c[t];
    }
  }
#pragma unroll
  for (int t = 0; t < TILE; t++)
    if (i + t * (int)blockDim.x < n) out[i + t * blockDim.x] = c[t];
}

static std::vector<float2> hv(MAXV);
static std::vector<float> hs(MAXV);

template <int FORM, int TILE>
static int host(float2 q, int nv) {  // the kernel's arithmetic, in the kernel's order
  int c = 0;
  for (int j = 0, k = nv - 1; j < nv; k = j++) {
    if (FORM == 0) {
      float s = hs[j];
      if ((q.y < s) != (q.x < s) && q.x < fmaf(s, q.y, s)) c = !c;
    } else {
      float2 a = hv[j], b = hv[k];
      float s = FORM == 1 ? b.x - a.x : hs[j];
      if ((a.y > q.y) != (b.y > q.y) && q.x < fmaf(s, q.y - a.y, a.x)) c = !c;
    }
  }
  return c;
}

template <int FORM, int TILE>
static void run(int nv, int block, int per_sm, int sms, const float2* d_in, int* d_out,
                const std::vector<float2>& hin, std::vector<int>& got) {
  int n = (int)hin.size();  // 8M points: 4 or more waves of blocks at every tile
  int smem = 233472 / per_sm - 1024 - 256;  // H200: 228 KB an SM, 1 KB reserved a block
  if (smem < 0) smem = 0;
  smem -= smem % 256;
  CHECK(cudaFuncSetAttribute(walk<FORM, TILE>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int got_per_sm = 0;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&got_per_sm, walk<FORM, TILE>, block, smem));
  int grid = (n + block * TILE - 1) / (block * TILE);
  CHECK(cudaMemset(d_out, 0xff, n * sizeof(int)));  // poison: every output must be written
  cudaEvent_t e0, e1; CHECK(cudaEventCreate(&e0)); CHECK(cudaEventCreate(&e1));
  for (int r = 0; r < 2; r++) walk<FORM, TILE><<<grid, block, smem>>>(d_in, d_out, n, nv);
  CHECK(cudaGetLastError()); CHECK(cudaDeviceSynchronize());
  std::vector<float> ms(7);
  for (auto& m : ms) {
    CHECK(cudaEventRecord(e0)); walk<FORM, TILE><<<grid, block, smem>>>(d_in, d_out, n, nv);
    CHECK(cudaEventRecord(e1)); CHECK(cudaEventSynchronize(e1)); CHECK(cudaEventElapsedTime(&m, e0, e1));
  }
  std::sort(ms.begin(), ms.end());
  CHECK(cudaMemcpy(got.data(), d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
  int bad = 0, unwritten = 0;
  for (int q = 0; q < n; q += n / 499 + 1) bad += got[q] != host<FORM, TILE>(hin[q], nv);
  for (int q = 0; q < n; q++) unwritten += got[q] != 0 && got[q] != 1;
  double steps = (double)n / 32 / TILE * nv / sms;  // warp-wide table steps an SM
  printf("form=%d tile=%d entries=%d block=%d blocks_per_sm=%d warps_per_sm=%d smem=%d n=%d "
         "median_ms=%.4f min_ms=%.4f ns_per_warp_step_per_sm=%.3f check=%s\n", FORM, TILE, nv,
         block, got_per_sm, got_per_sm * block / 32, smem, n, ms[ms.size() / 2], ms[0],
         ms[ms.size() / 2] * 1e6 / steps, bad > 2 || unwritten ? "WRONG" : "ok");
  CHECK(cudaEventDestroy(e0)); CHECK(cudaEventDestroy(e1));
}

template <int FORM>
static void tiles(int tile, int nv, int block, int per_sm, int sms, const float2* d_in, int* d_out,
                  const std::vector<float2>& hin, std::vector<int>& got) {
  if (tile == 1) run<FORM, 1>(nv, block, per_sm, sms, d_in, d_out, hin, got);
  if (tile == 2) run<FORM, 2>(nv, block, per_sm, sms, d_in, d_out, hin, got);
  if (tile == 4) run<FORM, 4>(nv, block, per_sm, sms, d_in, d_out, hin, got);
  if (tile == 8) run<FORM, 8>(nv, block, per_sm, sms, d_in, d_out, hin, got);
}

int main(int argc, char** argv) {
  const int N = 8000000;
  srand(12345);
  for (int j = 0; j < MAXV; j++) hs[j] = rand() / (float)RAND_MAX;
  std::vector<float2> hin(N);
  for (auto& q : hin) q = make_float2(2.f * rand() / RAND_MAX - 1.f, 2.f * rand() / RAND_MAX - 1.f);
  float2* d_in; int* d_out;
  CHECK(cudaMalloc(&d_in, N * sizeof(float2)));
  CHECK(cudaMalloc(&d_out, N * sizeof(int)));
  CHECK(cudaMemcpy(d_in, hin.data(), N * sizeof(float2), cudaMemcpyHostToDevice));
  int sms; CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  std::vector<int> got(N);
  int sizes[] = {150, 600, 1200};
  for (int nv : sizes) {
    for (int j = 0; j < nv; j++)  // a circle of nv vertices, its slopes dx/dy (edge j-1 -> j)
      hv[j] = make_float2(cosf(6.2831853f * j / nv), sinf(6.2831853f * j / nv));
    for (int j = 0; j < nv; j++) {
      float2 a = hv[j], b = hv[(j + nv - 1) % nv];
      hs[j] = (b.x - a.x) / (b.y - a.y);
    }
    CHECK(cudaMemcpyToSymbol(verts, hv.data(), MAXV * sizeof(float2)));
    CHECK(cudaMemcpyToSymbol(slopes, hs.data(), MAXV * sizeof(float)));
    for (int form = 0; form < 3; form++)
      for (int tile : {1, 2, 4, 8})
        for (int a = 1; a < argc; a++) {
          int block = atoi(argv[a]), per_sm = atoi(strchr(argv[a], ':') + 1);
          if (form == 0) tiles<0>(tile, nv, block, per_sm, sms, d_in, d_out, hin, got);
          if (form == 1) tiles<1>(tile, nv, block, per_sm, sms, d_in, d_out, hin, got);
          if (form == 2) tiles<2>(tile, nv, block, per_sm, sms, d_in, d_out, hin, got);
        }
  }
  return 0;
}
