// Cluster occupancy probe: asks the CUDA runtime what cuda_occupancy.h cannot answer.
// stdin lines "q KERNEL THREADS DYN_SMEM CARVEOUT CX CY CZ"; stdout per line:
// "r ERR_BLOCKS BLOCKS ERR_CLUSTERS CLUSTERS ERR_POTENTIAL POTENTIAL_CLUSTER_SIZE".
// First it prints "attr KERNEL REGS STATIC_SMEM MAX_THREADS" for every kernel.
#include <cuda_runtime.h>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

extern "C" __global__ void k_light(float* x) {
  extern __shared__ float s[];
  if (x) {
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    x[threadIdx.x] = s[threadIdx.x ^ 1];
  }
}

template <int N>
__global__ void k_heavy(float* x, int k) {
  float a[N];
#pragma unroll
  for (int i = 0; i < N; ++i) a[i] = x[i * blockDim.x + threadIdx.x];
  float acc = 0.f;
#pragma unroll
  for (int i = 0; i < N; ++i) acc += a[i] * a[(i * 7 + 3) % N] + (float)k;
  x[threadIdx.x] = acc;
}

template <int N>
__global__ void k_static(float* x) {
  __shared__ float s[N];
  s[threadIdx.x % N] = x[threadIdx.x];
  __syncthreads();
  x[threadIdx.x] = s[(threadIdx.x + 1) % N];
}

static const void* kFuncs[] = {(const void*)k_light, (const void*)k_heavy<16>, (const void*)k_heavy<48>,
                               (const void*)k_heavy<96>, (const void*)k_static<4096>,
                               (const void*)k_static<11000>};
static const int kCount = sizeof(kFuncs) / sizeof(kFuncs[0]);

int main() {
  cudaFree(0);
  for (int i = 0; i < kCount; ++i) {
    cudaFuncAttributes a;
    cudaFuncGetAttributes(&a, kFuncs[i]);
    std::printf("attr %d %d %zu %d\n", i, a.numRegs, a.sharedSizeBytes, a.maxThreadsPerBlock);
  }
  std::string line;
  while (std::getline(std::cin, line)) {
    std::istringstream in(line);
    std::string cmd;
    int id, threads, carveout, cx, cy, cz;
    long long dyn;
    in >> cmd >> id >> threads >> dyn >> carveout >> cx >> cy >> cz;
    const void* f = kFuncs[id];
    cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)dyn);
    cudaFuncSetAttribute(f, cudaFuncAttributePreferredSharedMemoryCarveout, carveout);
    cudaFuncSetAttribute(f, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    cudaGetLastError();
    int blocks = -1;
    int eb = (int)cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, threads, (size_t)dyn);
    cudaGetLastError();
    cudaLaunchConfig_t cfg = {};
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cx;
    attr[0].val.clusterDim.y = cy;
    attr[0].val.clusterDim.z = cz;
    cfg.gridDim = dim3(cx * 64, cy, cz);
    cfg.blockDim = dim3(threads, 1, 1);
    cfg.dynamicSmemBytes = (size_t)dyn;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    int clusters = -1;
    int ec = (int)cudaOccupancyMaxActiveClusters(&clusters, f, &cfg);
    cudaGetLastError();
    cudaLaunchConfig_t pcfg = cfg;
    pcfg.numAttrs = 0;
    pcfg.gridDim = dim3(16 * 64, 1, 1);
    int potential = -1;
    int ep = (int)cudaOccupancyMaxPotentialClusterSize(&potential, f, &pcfg);
    cudaGetLastError();
    std::printf("r %d %d %d %d %d %d\n", eb, blocks, ec, clusters, ep, potential);
  }
  return 0;
}
