// Matrix multiply C = A * B, row-major float32, n x n, any n (edge tiles are guarded).
// The kernels the seeds teach, plus a register-blocked one; parameters are macros so the
// tile model compiles exactly what `occupancy measure` launches (-DTILE=16, -DBM=128 ...).

#ifndef TILE
#define TILE 16  // shared-memory tile width: blockDim = TILE x TILE
#endif

// One output per thread; every operand read straight from global memory (2 n^3 loads).
extern "C" __global__ void matmul_naive(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int n) {
    const int row = blockIdx.y * blockDim.y + threadIdx.y;
    const int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; ++k) acc += A[row * n + k] * B[k * n + col];
        C[row * n + col] = acc;
    }
}

// The seeds' tiled kernel: each block stages TILE x TILE tiles of A and B in shared memory,
// so each input element is loaded n / TILE times instead of n (2 n^3 / TILE loads in all).
extern "C" __global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int n) {
    __shared__ float As[TILE][TILE];
    __shared__ float Bs[TILE][TILE];
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int row = blockIdx.y * TILE + ty;
    const int col = blockIdx.x * TILE + tx;
    float acc = 0.0f;
    for (int t = 0; t < (n + TILE - 1) / TILE; ++t) {
        const int ak = t * TILE + tx, bk = t * TILE + ty;
        As[ty][tx] = (row < n && ak < n) ? A[row * n + ak] : 0.0f;
        Bs[ty][tx] = (bk < n && col < n) ? B[bk * n + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
        __syncthreads();
    }
    if (row < n && col < n) C[row * n + col] = acc;
}

// Register blocking: a block computes a BM x BN tile of C, each thread a TM x TN sub-tile
// held in registers; K advances BK at a time through double-buffered shared memory, A
// stored transposed so the inner loop reads both operands as float4. Loads are float4
// when n % 4 == 0, scalar and guarded otherwise.
#ifndef BM
#define BM 128
#endif
#ifndef BN
#define BN 128
#endif
#ifndef BK
#define BK 8
#endif
#ifndef TM
#define TM 8
#endif
#ifndef TN
#define TN 8
#endif
#define RB_THREADS ((BM / TM) * (BN / TN))

extern "C" __global__ void __launch_bounds__(RB_THREADS)
matmul_regblock(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C, int n) {
    static_assert(BM % TM == 0 && BN % TN == 0 && TM % 4 == 0 && TN % 4 == 0 && BK % 4 == 0,
                  "tile sizes must divide and be multiples of 4");
    static_assert((BM * BK / 4) % RB_THREADS == 0 && (BK * BN / 4) % RB_THREADS == 0,
                  "every thread loads the same number of float4s");
    constexpr int A_LOADS = BM * BK / 4 / RB_THREADS;
    constexpr int B_LOADS = BK * BN / 4 / RB_THREADS;
    __shared__ __align__(16) float As[2][BK][BM];
    __shared__ __align__(16) float Bs[2][BK][BN];

    const int tid = threadIdx.x;
    // Threads of a warp take neighbouring 4-wide column groups (split in two halves of the
    // tile) so their float4 reads of Bs hit distinct banks.
    const int t_col = tid % (BN / TN);
    const int t_row = tid / (BN / TN);
    const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;
    const bool vec = (n & 3) == 0;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;

    float4 a_next[A_LOADS], b_next[B_LOADS];

    auto load = [&](int k0) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int idx = tid + l * RB_THREADS;
            const int r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
            const int gr = row0 + r, gc = k0 + c;
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (gr < n) {
                if (vec) {
                    if (gc < n) v = *reinterpret_cast<const float4*>(A + (size_t)gr * n + gc);
                } else {
                    const float* p = A + (size_t)gr * n;
                    v.x = gc < n ? p[gc] : 0.f;
                    v.y = gc + 1 < n ? p[gc + 1] : 0.f;
                    v.z = gc + 2 < n ? p[gc + 2] : 0.f;
                    v.w = gc + 3 < n ? p[gc + 3] : 0.f;
                }
            }
            a_next[l] = v;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int idx = tid + l * RB_THREADS;
            const int r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
            const int gr = k0 + r, gc = col0 + c;
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (gr < n) {
                const float* p = B + (size_t)gr * n;
                if (vec) {
                    if (gc < n) v = *reinterpret_cast<const float4*>(p + gc);
                } else {
                    v.x = gc < n ? p[gc] : 0.f;
                    v.y = gc + 1 < n ? p[gc + 1] : 0.f;
                    v.z = gc + 2 < n ? p[gc + 2] : 0.f;
                    v.w = gc + 3 < n ? p[gc + 3] : 0.f;
                }
            }
            b_next[l] = v;
        }
    };
    auto store = [&](int buf) {
#pragma unroll
        for (int l = 0; l < A_LOADS; ++l) {
            const int idx = tid + l * RB_THREADS;
            const int r = idx / (BK / 4), c = (idx % (BK / 4)) * 4;
            As[buf][c + 0][r] = a_next[l].x;
            As[buf][c + 1][r] = a_next[l].y;
            As[buf][c + 2][r] = a_next[l].z;
            As[buf][c + 3][r] = a_next[l].w;
        }
#pragma unroll
        for (int l = 0; l < B_LOADS; ++l) {
            const int idx = tid + l * RB_THREADS;
            const int r = idx / (BN / 4), c = (idx % (BN / 4)) * 4;
            *reinterpret_cast<float4*>(&Bs[buf][r][c]) = b_next[l];
        }
    };

    load(0);
    store(0);
    __syncthreads();
    const int k_tiles = (n + BK - 1) / BK;
    for (int t = 0; t < k_tiles; ++t) {
        const int buf = t & 1;
        if (t + 1 < k_tiles) load((t + 1) * BK);  // global loads in flight during the math
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; i += 4) {
                // rows t_row*4 + {0..3} in the first half, + BM/2 in the second half
                const int r = (i / 4) * (BM / (TM / 4)) + t_row * 4;
                const float4 v = *reinterpret_cast<const float4*>(&As[buf][k][r]);
                a[i] = v.x; a[i + 1] = v.y; a[i + 2] = v.z; a[i + 3] = v.w;
            }
#pragma unroll
            for (int j = 0; j < TN; j += 4) {
                const int c = (j / 4) * (BN / (TN / 4)) + t_col * 4;
                const float4 v = *reinterpret_cast<const float4*>(&Bs[buf][k][c]);
                b[j] = v.x; b[j + 1] = v.y; b[j + 2] = v.z; b[j + 3] = v.w;
            }
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];
        }
        if (t + 1 < k_tiles) store(buf ^ 1);
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int r = row0 + (i / 4) * (BM / (TM / 4)) + t_row * 4 + (i % 4);
        if (r >= n) continue;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int c = col0 + (j / 4) * (BN / (TN / 4)) + t_col * 4;
            float* p = C + (size_t)r * n + c;
            if (vec && c + 3 < n) {
                *reinterpret_cast<float4*>(p) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
            } else {
#pragma unroll
                for (int q = 0; q < 4; ++q)
                    if (c + q < n) p[q] = acc[i][j + q];
            }
        }
    }
}
