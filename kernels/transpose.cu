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
