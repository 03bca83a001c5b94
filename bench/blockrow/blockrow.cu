// A block per row, copied: how much of DRAM a copy reaches when the warp stores that leave a
// 32-B sector partly written (a row that does not start on a 128-B line) are completed by
// the same warp's next store or by another warp's (issue 18: llm.c's softmax 7 walks its
// rows at 2.5-2.7 TB/s, bench/results/h200-softmax-ncu). Written here, not taken from any
// repository.
//   STRIDED 1: the block steps over its row U x blockDim floats at a time, thread t at
//              i + u * blockDim (softmax 7's pattern): the next 32 floats after a warp's
//              store are the next warp's, stored about the same time.
//   STRIDED 0: warp w owns a contiguous part of the row and steps over it 32 x U floats at a
//              time, lane l at i + 32 u: the next 32 floats are its own next store.
// Host: `blockrow C BLOCK U STRIDED [SMEM]` copies N = 8192 rows of C floats (SMEM: bytes of
// dynamic shared memory a block reserves and never uses, to hold fewer blocks an SM),
// checks 64 sampled rows element by element, and prints the median of 10 event-timed runs
// after 2 warm-ups.
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

template <int U, int STRIDED>
__global__ void copyrow(float* __restrict__ out, const float* __restrict__ inp, int C) {
    const float* x = inp + (size_t)blockIdx.x * C;
    float* y = out + (size_t)blockIdx.x * C;
    if (STRIDED) {
        for (int i = threadIdx.x; i < C; i += blockDim.x * U) {
            float v[U];
#pragma unroll
            for (int u = 0; u < U; u++) v[u] = i + u * (int)blockDim.x < C ? x[i + u * blockDim.x] : 0.f;
#pragma unroll
            for (int u = 0; u < U; u++)
                if (i + u * (int)blockDim.x < C) y[i + u * blockDim.x] = v[u];
        }
    } else {
        const int warps = blockDim.x / 32, w = threadIdx.x / 32, lane = threadIdx.x % 32;
        const int chunk = (C + warps - 1) / warps;
        const int lo = w * chunk, hi = min(C, lo + chunk);
        for (int i = lo + lane; i < hi; i += 32 * U) {
            float v[U];
#pragma unroll
            for (int u = 0; u < U; u++) v[u] = i + 32 * u < hi ? x[i + 32 * u] : 0.f;
#pragma unroll
            for (int u = 0; u < U; u++)
                if (i + 32 * u < hi) y[i + 32 * u] = v[u];
        }
    }
}

typedef void (*kern_t)(float*, const float*, int);

static kern_t pick(int u, int strided) {
    if (strided) return u == 1 ? copyrow<1, 1> : u == 2 ? copyrow<2, 1> : copyrow<8, 1>;
    return u == 1 ? copyrow<1, 0> : u == 2 ? copyrow<2, 0> : copyrow<8, 0>;
}

int main(int argc, char** argv) {
    if (argc != 5 && argc != 6) {
        fprintf(stderr, "usage: blockrow C BLOCK U STRIDED [SMEM]\n"); return 2;
    }
    const int C = atoi(argv[1]), block = atoi(argv[2]), u = atoi(argv[3]), strided = atoi(argv[4]);
    const int smem = argc == 6 ? atoi(argv[5]) : 0;
    const int N = 8192;
    if (C < 32 || C > 1 << 20 || block < 32 || block > 1024 || block % 32 ||
        (u != 1 && u != 2 && u != 8) || smem < 0 || smem > 200 * 1024) {
        fprintf(stderr, "blockrow: bad arguments\n"); return 2;
    }
    const size_t n = (size_t)N * C;
    std::vector<float> h(n);
    for (size_t i = 0; i < n; i++) h[i] = (float)((i * 2654435761u) % 1000003u) * 1e-3f;
    float *in, *out;
    cudaMalloc(&in, n * sizeof(float));
    cudaMalloc(&out, n * sizeof(float));
    cudaMemcpy(in, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemset(out, 0xff, n * sizeof(float));  // NaN: a row left unwritten shows
    kern_t k = pick(u, strided);
    if (smem > 48 * 1024)
        cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> ms;
    for (int r = 0; r < 12; r++) {
        cudaEventRecord(e0);
        k<<<N, block, smem>>>(out, in, C);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float t = 0;
        cudaEventElapsedTime(&t, e0, e1);
        if (r >= 2) ms.push_back(t);
    }
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) { fprintf(stderr, "blockrow: %s\n", cudaGetErrorString(err)); return 1; }
    std::sort(ms.begin(), ms.end());
    bool ok = true;
    std::vector<float> row(C);
    for (int s = 0; s < 64 && ok; s++) {
        size_t r = (size_t)s * 127 % N;
        cudaMemcpy(row.data(), out + r * C, C * sizeof(float), cudaMemcpyDeviceToHost);
        for (int i = 0; i < C; i++) if (row[i] != h[r * C + i]) { ok = false; break; }
    }
    int occ = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, block, smem);
    double tbs = 2.0 * n * sizeof(float) / (ms[ms.size() / 2] * 1e-3) / 1e12;
    printf("C=%d block=%d u=%d strided=%d smem=%d blocks_per_sm=%d median_ms=%.4f min_ms=%.4f "
           "tb_s=%.3f check=%s\n", C, block, u, strided, smem, occ, ms[ms.size() / 2], ms[0],
           tbs, ok ? "ok" : "FAILED");
    return ok ? 0 : 1;
}
