// Microbenchmark (issue 18): how much of a loop's shared loads and its FFMAs overlap when
// few warps share an SM. Each iteration of the k loop loads TM + TN floats from shared
// memory as float4 (LDS.128, conflict-free) and does the TM x TN outer product into its
// accumulators (TM * TN FFMAs), the inner step of a register-blocked SGEMM. ROLLED keeps the
// k loop rolled (`#pragma unroll 1`: each warp waits for its own loads before its FFMAs);
// otherwise it is unrolled by 4 (ptxas can issue the next loads early). Warps per SM are
// set by the block size and an unused dynamic shared-memory reservation. Written for this
// project, not taken from any kernel.
// -DSYNC=S puts a barrier after every S steps (a tiled kernel's, without its tile loads);
// -DREFILL adds a tile load before each (global loads stored to shared memory, a barrier);
// -DBTILE a B tile too; -DPATTERN reads the tables as SGEMM_CUDA's warptiling kernel does
// (lanes share float4s); -DDOT counts k from 0 a tile; -DHOIST reads REFILL's matrix
// address once (else once a tile, a global load its tile loads wait for); -DBATCH=T
// (T threads a block, launched only so) issues each tile's loads before its stores;
// -DPLAIN stores REFILL's A tile as it came (float4s, no bank conflict); -DHALF loads
// half its rows; -DPTR (with -DDOT) and -DCHAIN give the rolled k loop either SASS form
// (docs/model.md item 45: shared-load addresses ready at a step's top, or computed there).
// Run: ./a.out BLOCK:SMEM[:WAVES]...
// Build: nvcc -O3 -arch=sm_90 -DTM=8 -DTN=8 [-DROLLED] [-DSYNC=S] lds_ffma.cu; run: ./a.out BLOCK:SMEM...
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#define K 2048
#define ROWS 16  // float4 rows of each shared table per float4 of a thread (16 KB at TM = 8)
#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { \
  printf("CUDA error %s at %s:%d\n", cudaGetErrorString(e), __FILE__, __LINE__); exit(1); } } while (0)

// which float4 of a table row a lane reads: its own, or with -DPATTERN SGEMM_CUDA
// warptiling's (TM = TN = 8, one warp 8 x 4 threads: 4 lanes share an A float4, 8 a B one)
#ifdef PATTERN
#define A_COL(lane, i) ((lane) / 4 * (TM / 4) + (i))
#define B_COL(lane, j) ((lane) % 4 * (TN / 4) + (j))
#else
#define A_COL(lane, i) (lane)
#define B_COL(lane, j) (lane)
#endif
// one k step (both loop forms below). -DCHAIN computes its row from k through a multiply
// by a value known at run time only (1), so that ptxas computes the step's shared-load
// addresses from the k counter at the top of each step; -DPTR (with -DDOT) steps two
// pointers instead, so that the addresses are ready at the top of each step.
#if defined(PTR) && (defined(CHAIN) || !defined(DOT))
#error "-DPTR needs -DDOT and excludes -DCHAIN"
#endif
#ifdef CHAIN
#define ROW_OF(k) ((k) * row_step & (ROWS - 1))
#else
#define ROW_OF(k) ((k) % ROWS)
#endif
// the step itself: the A and B float4s at A_AT(i) and B_AT(j), then the outer product
#define OUTER(A_AT, B_AT) do {                                                           \
    float a[TM], b[TN];                                                                  \
    _Pragma("unroll")                                                                    \
    for (int i = 0; i < TM / 4; i++) {                                                   \
      float4 v = A_AT(i);                                                                \
      a[4 * i] = v.x; a[4 * i + 1] = v.y; a[4 * i + 2] = v.z; a[4 * i + 3] = v.w;        \
    }                                                                                    \
    _Pragma("unroll")                                                                    \
    for (int j = 0; j < TN / 4; j++) {                                                   \
      float4 v = B_AT(j);                                                                \
      b[4 * j] = v.x; b[4 * j + 1] = v.y; b[4 * j + 2] = v.z; b[4 * j + 3] = v.w;        \
    }                                                                                    \
    _Pragma("unroll")                                                                    \
    for (int i = 0; i < TM; i++)                                                         \
    _Pragma("unroll")                                                                    \
      for (int j = 0; j < TN; j++) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);              \
  } while (0)
#define A_TABLE(i) As[row * (TM / 4) + i][A_COL(lane, i)]
#define B_TABLE(j) Bs[row * (TN / 4) + j][B_COL(lane, j)]
#define STEP(k) do { int row = ROW_OF(k); OUTER(A_TABLE, B_TABLE); } while (0)
// -DPTR's step: the rows at a_row and b_row, then both pointers a row on
#define A_PTR(i) a_row[(i) * 32 + A_COL(lane, i)]
#define B_PTR(j) b_row[(j) * 32 + B_COL(lane, j)]
#define STEP_PTR() do {                                                                  \
    OUTER(A_PTR, B_PTR);                                                                 \
    a_row += (TM / 4) * 32; b_row += (TN / 4) * 32;                                      \
  } while (0)

#ifdef REFILL
__device__ const float* g_tiles;  // the 2048 x 2048 matrix REFILL's tiles come from
#ifdef BATCH  // the block's threads known at compile time: each tile's loads issued together
#define THREADS BATCH  // before its stores, as warptiling's (one round trip a tile)
#define TILE_UNROLL _Pragma("unroll")
#else  // the block's threads at run time: a loop of load, stores, load, stores... a tile
#define THREADS blockDim.x
#define TILE_UNROLL
#endif
#ifdef HALF  // half the A tile's rows loaded (and stored): half the bytes a tile returns
#define A_ROWS 64
#else
#define A_ROWS 128
#endif
#ifdef HOIST  // its address read once, before the k loop, as a kernel argument would be
#define TILES tiles_at
#else  // read again after every barrier: a global load the tile's loads depend on
#define TILES g_tiles
#endif
#endif

__device__ int g_row_step;  // -DCHAIN's multiplier: 1, set by the host

__global__ void outer(const float4* a_in, const float4* b_in, float* out) {
  __shared__ float4 As[ROWS * (TM / 4)][32];
  __shared__ float4 Bs[ROWS * (TN / 4)][32];
  extern __shared__ float reserved[];  // never read: only its reservation counts
#ifdef REFILL
  __shared__ __align__(16) float tile[128 * SYNC];
#endif
#ifdef BTILE
  __shared__ __align__(16) float tile_b[SYNC * 128];
#endif
  int lane = threadIdx.x % 32;
  for (int r = threadIdx.x / 32; r < ROWS * (TM / 4); r += blockDim.x / 32) As[r][lane] = a_in[r * 32 + lane];
  for (int r = threadIdx.x / 32; r < ROWS * (TN / 4); r += blockDim.x / 32) Bs[r][lane] = b_in[r * 32 + lane];
  __syncthreads();
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) acc[i][j] = 0.f;
#ifdef ROLLED
#define UNROLL _Pragma("unroll 1")
#else
#define UNROLL _Pragma("unroll 4")
#endif
#ifdef HOIST
  const float* tiles_at = g_tiles;
#endif
#ifdef CHAIN
  const int row_step = g_row_step;
#endif
#ifdef SYNC
  // a barrier every SYNC steps, as a tiled kernel has between its tiles (no tile is
  // loaded: only the barrier's effect on when the block's warps wait is measured)
  for (int k0 = 0; k0 < K; k0 += SYNC) {
#ifdef REFILL
    {  // SYNC columns of a 128-row A tile, loaded as SGEMM_CUDA's warptiling kernel loads
       // its A tile: float4s from global memory (L2 holds the matrix after the first wave),
       // stored transposed (each scalar store SYNC / 4-way bank-conflicted); never read
      const int cols4 = SYNC / 4, rows = THREADS / cols4;
      const int r = threadIdx.x / cols4, c = threadIdx.x % cols4;
      TILE_UNROLL
      for (int off = 0; off + rows <= A_ROWS; off += rows) {
        const float4 t = *reinterpret_cast<const float4*>(
            &TILES[(size_t)((blockIdx.x % 16) * 128 + r + off) * 2048 + k0 + c * 4]);
#ifdef PLAIN  // stored as it came, a float4 a lane: no bank conflict
        reinterpret_cast<float4*>(tile)[(r + off) * cols4 + c] = t;
#else
        tile[(c * 4 + 0) * 128 + r + off] = t.x;
        tile[(c * 4 + 1) * 128 + r + off] = t.y;
        tile[(c * 4 + 2) * 128 + r + off] = t.z;
        tile[(c * 4 + 3) * 128 + r + off] = t.w;
#endif
      }
#ifdef BTILE
      // and SYNC rows of a 128-column B tile, as warptiling loads it: float4s stored as float4s
      const int rb = threadIdx.x / 32, cb = threadIdx.x % 32, rows_b = THREADS / 32;
      TILE_UNROLL
      for (int off = 0; off + rows_b <= SYNC; off += rows_b)
        reinterpret_cast<float4*>(tile_b)[(rb + off) * 32 + cb] = *reinterpret_cast<const float4*>(
            &TILES[(size_t)(k0 + rb + off) * 2048 + (blockIdx.x % 16) * 128 + cb * 4]);
#endif
      __syncthreads();
    }
#endif
#if defined(DOT) && defined(PTR)  // SYNC == ROWS: a tile's steps walk the tables once
    const float4* a_row = &As[0][0];
    const float4* b_row = &Bs[0][0];
    UNROLL
    for (int d = 0; d < SYNC; d++) STEP_PTR();
#elif defined(DOT)  // counted from 0 a tile, as SGEMM_CUDA's dotIdx (SYNC a multiple of ROWS)
    UNROLL
    for (int d = 0; d < SYNC; d++) STEP(d);
#else
    UNROLL
    for (int k = k0; k < k0 + SYNC; k++) STEP(k);
#endif
    __syncthreads();
  }
#else
  UNROLL
  for (int k = 0; k < K; k++) STEP(k);
#endif
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < TM; i++)
#pragma unroll
    for (int j = 0; j < TN; j++) s += acc[i][j] * (1 + i * TN + j);
#ifdef REFILL
  s += 0.0f * tile[threadIdx.x];  // the tile's stores stay (the matrix holds zeros)
#ifdef BTILE
  s += 0.0f * tile_b[threadIdx.x];
#endif
#endif
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

int main(int argc, char** argv) {
  int na = ROWS * (TM / 4) * 32, nb = ROWS * (TN / 4) * 32;
  std::vector<float4> ha(na), hb(nb);
  srand(7);
  auto rnd = [] { return rand() / (float)RAND_MAX - 0.5f; };
  for (auto& v : ha) v = make_float4(rnd(), rnd(), rnd(), rnd());
  for (auto& v : hb) v = make_float4(rnd(), rnd(), rnd(), rnd());
  float4 *a, *b; float* out;
  CHECK(cudaMalloc(&a, na * sizeof(float4))); CHECK(cudaMalloc(&b, nb * sizeof(float4)));
  CHECK(cudaMemcpy(a, ha.data(), na * sizeof(float4), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(b, hb.data(), nb * sizeof(float4), cudaMemcpyHostToDevice));
#ifdef REFILL
  float* tiles; CHECK(cudaMalloc(&tiles, 2048 * 2048 * sizeof(float)));
  CHECK(cudaMemset(tiles, 0, 2048 * 2048 * sizeof(float)));
  CHECK(cudaMemcpyToSymbol(g_tiles, &tiles, sizeof(tiles)));
  const int refill = 1;
#else
  const int refill = 0;
#endif
#ifdef HALF
  const int half = 1;
#else
  const int half = 0;
#endif
#ifdef PLAIN
  const int plain = 1;
#else
  const int plain = 0;
#endif
#ifdef BATCH
  const int batch = 1;
#else
  const int batch = 0;
#endif
#ifdef HOIST
  const int hoist = 1;
#else
  const int hoist = 0;
#endif
#ifdef BTILE
  const int btile = 1;
#else
  const int btile = 0;
#endif
#ifdef PATTERN
  const int pattern = 1;
#else
  const int pattern = 0;
#endif
  const int one = 1;
  CHECK(cudaMemcpyToSymbol(g_row_step, &one, sizeof(one)));
#if defined(CHAIN)
  const int form = 2;
#elif defined(PTR)
  const int form = 1;
  static_assert(SYNC == ROWS, "-DPTR walks the tables once a tile");
#else
  const int form = 0;
#endif
  int sms; CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  // one thread's result on the host (lane 5): the same fmaf order
  double want = 0; {
    int lane = 5; float acc[TM][TN] = {};
    for (int k = 0; k < K; k++) {
      int row = k % ROWS; float av[TM], bv[TN];
      for (int i = 0; i < TM / 4; i++) { float4 v = ha[(row * (TM / 4) + i) * 32 + A_COL(lane, i)];
        av[4*i] = v.x; av[4*i+1] = v.y; av[4*i+2] = v.z; av[4*i+3] = v.w; }
      for (int j = 0; j < TN / 4; j++) { float4 v = hb[(row * (TN / 4) + j) * 32 + B_COL(lane, j)];
        bv[4*j] = v.x; bv[4*j+1] = v.y; bv[4*j+2] = v.z; bv[4*j+3] = v.w; }
      for (int i = 0; i < TM; i++) for (int j = 0; j < TN; j++) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
    }
    for (int i = 0; i < TM; i++) for (int j = 0; j < TN; j++) want += acc[i][j] * (1 + i * TN + j);
  }
  for (int ai = 1; ai < argc; ai++) {
    int block = atoi(argv[ai]), smem = strchr(argv[ai], ':') ? atoi(strchr(argv[ai], ':') + 1) : 0;
    const char* w = strchr(argv[ai], ':') ? strchr(strchr(argv[ai], ':') + 1, ':') : nullptr;
    int waves = w ? atoi(w + 1) : 4;  // BLOCK:SMEM:WAVES, four full waves unless given
    CHECK(cudaFuncSetAttribute(outer, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int per_sm = 0;
    CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, outer, block, smem));
    int grid = per_sm * sms * waves;
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
#ifdef ROLLED
    const int rolled = 1;
#else
    const int rolled = 0;
#endif
#ifdef SYNC
    const int sync = SYNC;
#else
    const int sync = 0;
#endif
    printf("form=%d rolled=%d sync=%d refill=%d half=%d plain=%d batch=%d hoist=%d btile=%d pattern=%d waves=%d tm=%d tn=%d block=%d smem=%d warps_per_sm=%d median_ms=%.4f "
           "ns_per_warp_iter_per_sm=%.4f check=%s\n", form, rolled, sync, refill, half, plain, batch, hoist, btile, pattern, waves, TM, TN, block, smem,
           per_sm * block / 32, ms[ms.size() / 2], ms[ms.size() / 2] * 1e6 / warp_iters_per_sm,
           fabs(got - want) <= 1e-3 * fabs(want) + 1e-3 ? "ok" : "WRONG");
    CHECK(cudaFree(out)); CHECK(cudaEventDestroy(e0)); CHECK(cudaEventDestroy(e1));
  }
  return 0;
}
