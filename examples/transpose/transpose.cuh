// A user's templated transpose (out = in^T, n x n floats): a TILE x TILE tile staged in
// shared memory, ROWS rows of threads each moving TILE / ROWS elements, the tile padded
// by PAD floats per row (PAD = 1 removes the 32-way bank conflict of the column read).
#pragma once

template <int TILE, int ROWS, int PAD>
__global__ void __launch_bounds__(TILE * ROWS)
transpose_tiled(const float* __restrict__ in, float* __restrict__ out, int n) {
  __shared__ float tile[TILE][TILE + PAD];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS)
    if (x < n && y + j < n) tile[threadIdx.y + j][threadIdx.x] = in[(size_t)(y + j) * n + x];
  __syncthreads();
  x = blockIdx.y * TILE + threadIdx.x;
  y = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
  for (int j = 0; j < TILE; j += ROWS)
    if (x < n && y + j < n) out[(size_t)(y + j) * n + x] = tile[threadIdx.x][threadIdx.y + j];
}
