// docs/model.md item 40: what a tiled GEMM's tile loads cost, on this project's own kernel.
// examples/sgemm's 2-D blocktiling (LOAD = 1, VEC = 0 is its loop), with two switches:
//   VEC = 1 loads the tiles as float4 (A stored transposed, as SGEMM_CUDA's kernel 6 does)
//           and reads the A tile a k step contiguously (LDS.128);
//   LOAD = 0 stores values made from the indices instead of loading A and B: the same
//           stores, barriers and inner loop with no global load, so LOAD 1 - LOAD 0 is the
//           time the tile loads add (bench/tilexp/run.sh times both; compare.py).
// tilexp1d below is the same pair for a 1-D blocktiling loop (each thread TM results of a
// column, one element of each tile a thread, the calibration part's SGEMM 1-D shape).
// Written here (no public code); bench/tilexp/tune.yaml is its manifest.
#pragma once

template <int BM, int BN, int BK, int TM, int TN, int VEC, int LOAD>
__global__ void __launch_bounds__((BM * BN) / (TM * TN))
tilexp(int M, int N, int K, float alpha, const float* __restrict__ A,
       const float* __restrict__ B, float beta, float* __restrict__ C) {
  constexpr int kThreads = (BM * BN) / (TM * TN);
  const int cRow = blockIdx.y, cCol = blockIdx.x;
  const int threadCol = threadIdx.x % (BN / TN);
  const int threadRow = threadIdx.x / (BN / TN);
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];
  A += cRow * BM * K;
  B += cCol * BN;
  C += cRow * BM * N + cCol * BN;
  float acc[TM * TN] = {0.0f};
  float regM[TM], regN[TN];
  for (int bk = 0; bk < K; bk += BK) {
    if constexpr (VEC == 0) {
      const int innerRowA = threadIdx.x / BK, innerColA = threadIdx.x % BK;
      constexpr int strideA = kThreads / BK;
      const int innerRowB = threadIdx.x / BN, innerColB = threadIdx.x % BN;
      constexpr int strideB = kThreads / BN;
      for (int off = 0; off < BM; off += strideA)
        As[(innerRowA + off) * BK + innerColA] =
            LOAD ? A[(innerRowA + off) * K + innerColA] : float(innerRowA + off + bk);
      for (int off = 0; off < BK; off += strideB)
        Bs[(innerRowB + off) * BN + innerColB] =
            LOAD ? B[(innerRowB + off) * N + innerColB] : float(innerColB - off - bk);
    } else {
      const int innerRowA = threadIdx.x / (BK / 4), innerColA = threadIdx.x % (BK / 4);
      constexpr int strideA = kThreads * 4 / BK;
      const int innerRowB = threadIdx.x / (BN / 4), innerColB = threadIdx.x % (BN / 4);
      constexpr int strideB = kThreads / (BN / 4);
      for (int off = 0; off < BM; off += strideA) {
        float4 t = LOAD ? reinterpret_cast<const float4*>(&A[(innerRowA + off) * K + innerColA * 4])[0]
                        : make_float4(innerRowA + off + bk, bk, off, innerColA);
        As[(innerColA * 4 + 0) * BM + innerRowA + off] = t.x;
        As[(innerColA * 4 + 1) * BM + innerRowA + off] = t.y;
        As[(innerColA * 4 + 2) * BM + innerRowA + off] = t.z;
        As[(innerColA * 4 + 3) * BM + innerRowA + off] = t.w;
      }
      for (int off = 0; off < BK; off += strideB)
        reinterpret_cast<float4*>(&Bs[(innerRowB + off) * BN + innerColB * 4])[0] =
            LOAD ? reinterpret_cast<const float4*>(&B[(innerRowB + off) * N + innerColB * 4])[0]
                 : make_float4(innerColB - off - bk, off, bk, innerRowB);
    }
    __syncthreads();
    A += BK;
    B += BK * N;
#pragma unroll
    for (int d = 0; d < BK; ++d) {
#pragma unroll
      for (int i = 0; i < TM; ++i)
        regM[i] = VEC ? As[d * BM + threadRow * TM + i] : As[(threadRow * TM + i) * BK + d];
#pragma unroll
      for (int i = 0; i < TN; ++i) regN[i] = Bs[d * BN + threadCol * TN + i];
#pragma unroll
      for (int m = 0; m < TM; ++m)
#pragma unroll
        for (int n = 0; n < TN; ++n) acc[m * TN + n] += regM[m] * regN[n];
    }
    __syncthreads();
  }
#pragma unroll
  for (int m = 0; m < TM; ++m)
#pragma unroll
    for (int n = 0; n < TN; ++n) {
      float* c = &C[(threadRow * TM + m) * N + threadCol * TN + n];
      *c = alpha * acc[m * TN + n] + beta * *c;
    }
}

template <int BM, int BN, int BK, int TM, int LOAD>
__global__ void __launch_bounds__((BM * BN) / TM)
tilexp1d(int M, int N, int K, float alpha, const float* __restrict__ A,
         const float* __restrict__ B, float beta, float* __restrict__ C) {
  const int cRow = blockIdx.y, cCol = blockIdx.x;
  const int threadCol = threadIdx.x % BN, threadRow = threadIdx.x / BN;
  __shared__ float As[BM * BK];
  __shared__ float Bs[BK * BN];
  A += cRow * BM * K;
  B += cCol * BN;
  C += cRow * BM * N + cCol * BN;
  // one element of each tile a thread (BM * BK == BN * BK == the block's threads)
  const int innerColA = threadIdx.x % BK, innerRowA = threadIdx.x / BK;
  const int innerColB = threadIdx.x % BN, innerRowB = threadIdx.x / BN;
  float acc[TM] = {0.0f};
  for (int bk = 0; bk < K; bk += BK) {
    As[innerRowA * BK + innerColA] = LOAD ? A[innerRowA * K + innerColA] : float(innerRowA + bk);
    Bs[innerRowB * BN + innerColB] = LOAD ? B[innerRowB * N + innerColB] : float(innerColB - bk);
    __syncthreads();
    A += BK;
    B += BK * N;
#pragma unroll
    for (int d = 0; d < BK; ++d) {
      const float b = Bs[d * BN + threadCol];
#pragma unroll
      for (int i = 0; i < TM; ++i) acc[i] += As[(threadRow * TM + i) * BK + d] * b;
    }
    __syncthreads();
  }
#pragma unroll
  for (int i = 0; i < TM; ++i) {
    float* c = &C[(threadRow * TM + i) * N + threadCol];
    *c = alpha * acc[i] + beta * *c;
  }
}
