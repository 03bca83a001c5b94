// Transpose out = in^T of a rows x cols row-major float32 matrix (out is cols x rows), any
// size. A block of TILE x BLOCK_ROWS threads moves a TILE x TILE tile, each thread
// TILE / BLOCK_ROWS elements (seed 001: 32 x 8 threads for a 32 x 32 tile).

#ifndef TILE
#define TILE 32
#endif
#ifndef BLOCK_ROWS
#define BLOCK_ROWS 8
#endif

// Reads coalesced, writes strided by `rows`: each warp's store touches 32 sectors.
extern "C" __global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out,
                                           int rows, int cols) {
    const int x = blockIdx.x * TILE + threadIdx.x;
    const int y = blockIdx.y * TILE + threadIdx.y;
    if (x >= cols) return;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (y + j < rows) out[(size_t)x * rows + y + j] = in[(size_t)(y + j) * cols + x];
}

// Through shared memory: both global reads and writes coalesced. PAD = 0 reads a column of
// tile[TILE][TILE] (a 32-way bank conflict); PAD = 1 makes the row pitch 33 words and the
// column read conflict-free.
template <int PAD>
__device__ __forceinline__ void transpose_smem(const float* __restrict__ in, float* __restrict__ out,
                                               int rows, int cols) {
    __shared__ float tile[TILE][TILE + PAD];
    int x = blockIdx.x * TILE + threadIdx.x;
    int y = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (x < cols && y + j < rows) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * cols + x];
    __syncthreads();
    x = blockIdx.y * TILE + threadIdx.x;  // swapped block: now indexes out's columns
    y = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += BLOCK_ROWS)
        if (x < rows && y + j < cols) out[(size_t)(y + j) * rows + x] = tile[threadIdx.x][threadIdx.y + j];
}

extern "C" __global__ void transpose_tiled(const float* __restrict__ in, float* __restrict__ out,
                                           int rows, int cols) {
    transpose_smem<0>(in, out, rows, cols);
}

extern "C" __global__ void transpose_padded(const float* __restrict__ in, float* __restrict__ out,
                                            int rows, int cols) {
    transpose_smem<1>(in, out, rows, cols);
}

// Wide tiles, 16-byte global accesses: a 16 x VBY block moves a 64 x 64 tile; each thread
// loads 64 / VBY float4 from as many rows and stores as many float4 to rows of the output
// (n % 4 == 0; otherwise guarded scalar accesses). Row pitch 65 words keeps the
// transposed shared-memory reads at most 2-way conflicted. STREAM = 1 uses evict-first
// loads and stores (__ldcs / __stcs): each byte is touched once.
#define VT 64
#ifndef VBY
#define VBY 16
#endif
#ifndef STREAM
#define STREAM 0
#endif
#if STREAM
#define LOAD4(p) __ldcs(reinterpret_cast<const float4*>(p))
#define STORE4(p, v) __stcs(reinterpret_cast<float4*>(p), v)
#else
#define LOAD4(p) (*reinterpret_cast<const float4*>(p))
#define STORE4(p, v) (*reinterpret_cast<float4*>(p) = (v))
#endif
#ifndef SWAP
#define SWAP 0  // 1: consecutive blocks walk down the input's columns (writes stay adjacent)
#endif
#ifndef PERSIST
#define PERSIST 0  // 1: a 1-D grid of resident blocks loops over the tiles
#endif
extern "C" __global__ void __launch_bounds__(16 * VBY)
transpose_vec(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[VT][VT + 1];
    const int tx = threadIdx.x, ty = threadIdx.y;  // 16 x VBY
    const bool vec = ((rows | cols) & 3) == 0;
    const int tiles_x = (cols + VT - 1) / VT, tiles_y = (rows + VT - 1) / VT;
#if PERSIST
    for (int t = blockIdx.x; t < tiles_x * tiles_y; t += gridDim.x) {
#else
    {
        const int t = SWAP ? blockIdx.x * tiles_y + blockIdx.y : blockIdx.y * tiles_x + blockIdx.x;
#endif
        const int bx = SWAP ? t / tiles_y : t % tiles_x;
        const int by = SWAP ? t % tiles_y : t / tiles_x;
        const int r0 = by * VT, c0 = bx * VT;
#pragma unroll
        for (int k = 0; k < VT / VBY; ++k) {
            const int r = ty + VBY * k, gr = r0 + r, gc = c0 + 4 * tx;
            float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
            if (gr < rows) {
                const float* p = in + (size_t)gr * cols + gc;
                if (vec) {
                    if (gc < cols) v = LOAD4(p);
                } else {
                    if (gc < cols) v.x = p[0];
                    if (gc + 1 < cols) v.y = p[1];
                    if (gc + 2 < cols) v.z = p[2];
                    if (gc + 3 < cols) v.w = p[3];
                }
            }
            tile[r][4 * tx + 0] = v.x;
            tile[r][4 * tx + 1] = v.y;
            tile[r][4 * tx + 2] = v.z;
            tile[r][4 * tx + 3] = v.w;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < VT / VBY; ++k) {
            const int c = ty + VBY * k;          // output row (input column) within the tile
            const int orow = c0 + c, ocol = r0 + 4 * tx;
            if (orow >= cols) continue;
            const float4 v = make_float4(tile[4 * tx + 0][c], tile[4 * tx + 1][c],
                                         tile[4 * tx + 2][c], tile[4 * tx + 3][c]);
            float* p = out + (size_t)orow * rows + ocol;
            if (vec) {
                if (ocol < rows) STORE4(p, v);
            } else {
                if (ocol < rows) p[0] = v.x;
                if (ocol + 1 < rows) p[1] = v.y;
                if (ocol + 2 < rows) p[2] = v.z;
                if (ocol + 3 < rows) p[3] = v.w;
            }
        }
        __syncthreads();  // the tile is reused by the next iteration (PERSIST)
    }
}

// Tall tiles: a block moves 128 input rows x 64 input columns, so every output row segment
// it writes is 128 floats (512 B) long. Loads and stores are float4. Shared memory rows
// are padded to 65 words and the column index is XOR-swizzled by the row's quad,
// (r >> 2) & 31: the transposed column reads are conflict-free, the row stores 2-way
// (occupancy banks finds these; a pitch of 64 alone would be 32-way on the reads).
#define TT_R 128
#define TT_C 64
extern "C" __global__ void __launch_bounds__(256)
transpose_tall(const float* __restrict__ in, float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[TT_R][TT_C + 1];
    const int f = threadIdx.y * blockDim.x + threadIdx.x;  // 0..255
    const int r0 = blockIdx.y * TT_R, c0 = blockIdx.x * TT_C;
    const bool vec = ((rows | cols) & 3) == 0;
    // Read: 16 threads cover a 64-float row segment; 16 rows per pass, 8 passes.
    const int tx = f % 16, ty = f / 16;
#pragma unroll
    for (int k = 0; k < TT_R / 16; ++k) {
        const int r = ty + 16 * k, gr = r0 + r, gc = c0 + 4 * tx;
        float4 v = make_float4(0.f, 0.f, 0.f, 0.f);
        if (gr < rows) {
            const float* p = in + (size_t)gr * cols + gc;
            if (vec) {
                if (gc < cols) v = *reinterpret_cast<const float4*>(p);
            } else {
                if (gc < cols) v.x = p[0];
                if (gc + 1 < cols) v.y = p[1];
                if (gc + 2 < cols) v.z = p[2];
                if (gc + 3 < cols) v.w = p[3];
            }
        }
        const int s = (r >> 2) & 31;
        tile[r][(4 * tx + 0) ^ s] = v.x;
        tile[r][(4 * tx + 1) ^ s] = v.y;
        tile[r][(4 * tx + 2) ^ s] = v.z;
        tile[r][(4 * tx + 3) ^ s] = v.w;
    }
    __syncthreads();
    // Write: 32 threads cover a 128-float output row segment; 8 rows per pass, 8 passes.
    const int q4 = f % 32, cy = f / 32;
#pragma unroll
    for (int k = 0; k < TT_C / 8; ++k) {
        const int c = cy + 8 * k;  // output row within the tile (input column)
        const int orow = c0 + c, ocol = r0 + 4 * q4;
        if (orow >= cols) continue;
        const int s = q4 & 31;  // ((4 * q4 + i) >> 2) & 31 for i in 0..3
        const float4 v = make_float4(tile[4 * q4 + 0][c ^ s], tile[4 * q4 + 1][c ^ s],
                                     tile[4 * q4 + 2][c ^ s], tile[4 * q4 + 3][c ^ s]);
        float* p = out + (size_t)orow * rows + ocol;
        if (vec) {
            if (ocol < rows) *reinterpret_cast<float4*>(p) = v;
        } else {
            if (ocol < rows) p[0] = v.x;
            if (ocol + 1 < rows) p[1] = v.y;
            if (ocol + 2 < rows) p[2] = v.z;
            if (ocol + 3 < rows) p[3] = v.w;
        }
    }
}
