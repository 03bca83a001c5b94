// A register-blocked SGEMM tile loop whose k loop is unrolled into the tile loop (KU = BK)
// or kept rolled inside it (KU = 1, or 2: a loop of FFMAs nested in the hot loop, the cost
// the model names and does not price, docs/model.md items 45 and 47). This project's own
// space with both forms, measured whole on the GPU, to check `measure --budget`'s doubts
// apart from the public corpus (bench/results/h200-doubts-own). C = A B, row-major, M, N, K
// multiples of the tile.
template <int BM, int BN, int BK, int TM, int TN, int KU>
__global__ void kroll(int M, int N, int K, const float *A, const float *B, float *C) {
  constexpr int threads = BM * BN / (TM * TN);
  __shared__ float As[BK * BM];  // transposed: As[k * BM + m]
  __shared__ float Bs[BK * BN];
  const int col = threadIdx.x % (BN / TN), row = threadIdx.x / (BN / TN);
  A += blockIdx.y * BM * K;
  B += blockIdx.x * BN;
  C += blockIdx.y * BM * N + blockIdx.x * BN;
  float acc[TM * TN] = {0.0f}, a[TM], b[TN];
  for (int t = 0; t < K; t += BK) {
    for (int i = threadIdx.x; i < BM * BK; i += threads) As[(i % BK) * BM + i / BK] = A[(i / BK) * K + i % BK];
    for (int i = threadIdx.x; i < BK * BN; i += threads) Bs[i] = B[(i / BN) * N + i % BN];
    __syncthreads();
    A += BK;
    B += BK * N;
#pragma unroll KU
    for (int k = 0; k < BK; ++k) {
#pragma unroll
      for (int m = 0; m < TM; ++m) a[m] = As[k * BM + row * TM + m];
#pragma unroll
      for (int n = 0; n < TN; ++n) b[n] = Bs[k * BN + col * TN + n];
#pragma unroll
      for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n) acc[m * TN + n] += a[m] * b[n];
    }
    __syncthreads();
  }
  for (int m = 0; m < TM; ++m)
    for (int n = 0; n < TN; ++n) C[(row * TM + m) * N + col * TN + n] = acc[m * TN + n];
}
