// What one warp instruction of each kind costs an SM sub-partition (issue 18: the time model
// counted every non-memory instruction as one issue slot). Written here, not taken from any
// repository. Every thread runs CHAINS independent chains of one instruction kind (or of two
// kinds alternating), UNROLL steps a loop iteration, ITERS iterations; the chains are
// independent, so with 64 warps an SM the time is the pipe's throughput, not its latency.
// Host: `pipes KIND ITERS BLOCKS_PER_SM` prints ms (median of 15 after 3 warm-ups) and the
// checksum; run.sh divides by the SASS loop's instruction count.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

#define CHAINS 8
#define UNROLL 8

__device__ __forceinline__ float step_ffma(float x, float a, float b) { return fmaf(x, a, b); }

template <int KIND>
__global__ void pipes(float *out, const float *in, int iters) {
    float a = in[0], b = in[1], c = in[2];
    unsigned ua = __float_as_uint(a), ub = __float_as_uint(b);
    float x[CHAINS];
    unsigned u[CHAINS];
#pragma unroll
    for (int k = 0; k < CHAINS; k++) {
        x[k] = in[3 + k] + threadIdx.x;
        u[k] = __float_as_uint(x[k]) + threadIdx.x;
    }
    for (int i = 0; i < iters; i++) {
#pragma unroll
        for (int s = 0; s < UNROLL; s++) {
#pragma unroll
            for (int k = 0; k < CHAINS; k++) {
                if (KIND == 0) {            // FFMA
                    x[k] = fmaf(x[k], a, b);
                } else if (KIND == 1) {     // FMNMX (float min/max)
                    x[k] = fminf(fmaxf(x[k], a), b);
                } else if (KIND == 2) {     // FSETP + FSEL: a compare and a select
                    x[k] = x[k] > a ? x[k] : b;
                    x[k] = x[k] < c ? x[k] : a;
                } else if (KIND == 3) {     // LOP3 / IADD3: integer logic and adds
                    u[k] = (u[k] ^ ua) + ub;
                } else if (KIND == 4) {     // IMAD: integer multiply-add
                    u[k] = u[k] * ua + ub;
                } else if (KIND == 5) {     // FFMA and FMNMX alternating
                    x[k] = fmaf(x[k], a, b);
                    x[k] = fminf(x[k], c);
                } else if (KIND == 6) {     // FFMA and IMAD alternating
                    x[k] = fmaf(x[k], a, b);
                    u[k] = u[k] * ua + ub;
                } else if (KIND == 7) {     // MUFU: the special-function unit
                    x[k] = __expf(x[k]);
                } else if (KIND == 8) {     // 2 FFMA : 1 FMNMX
                    x[k] = fmaf(x[k], a, b);
                    x[k] = fmaf(x[k], a, c);
                    x[k] = fminf(x[k], c);
                }
            }
        }
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < CHAINS; k++) s += x[k] + __uint_as_float(u[k] & 0x3fffffffu);
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

typedef void (*kern_t)(float *, const float *, int);
static kern_t kernels[] = {pipes<0>, pipes<1>, pipes<2>, pipes<3>, pipes<4>, pipes<5>,
                           pipes<6>, pipes<7>, pipes<8>};

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: pipes KIND ITERS BLOCKS_PER_SM\n"); return 2; }
    int kind = atoi(argv[1]), iters = atoi(argv[2]), per_sm = atoi(argv[3]);
    if (kind < 0 || kind > 8 || iters < 1 || iters > 1 << 20 || per_sm < 1 || per_sm > 32) {
        fprintf(stderr, "pipes: bad arguments\n"); return 2;
    }
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const int threads = 256;
    int blocks = sms * per_sm;
    float *out, *in;
    float h_in[16] = {0.999f, 0.001f, 0.5f, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};
    cudaMalloc(&out, sizeof(float) * blocks * threads);
    cudaMalloc(&in, sizeof(h_in));
    cudaMemcpy(in, h_in, sizeof(h_in), cudaMemcpyHostToDevice);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> ms;
    for (int r = 0; r < 18; r++) {
        cudaEventRecord(e0);
        kernels[kind]<<<blocks, threads>>>(out, in, iters);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float t = 0;
        cudaEventElapsedTime(&t, e0, e1);
        if (r >= 3) ms.push_back(t);
    }
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) { fprintf(stderr, "pipes: %s\n", cudaGetErrorString(err)); return 1; }
    std::sort(ms.begin(), ms.end());
    float h_out[4];
    cudaMemcpy(h_out, out, sizeof(h_out), cudaMemcpyDeviceToHost);
    int occ = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, kernels[kind], threads, 0);
    printf("kind=%d iters=%d sms=%d blocks=%d threads=%d resident_blocks_per_sm=%d median_ms=%.5f "
           "min_ms=%.5f checksum=%g\n", kind, iters, sms, blocks, threads, occ, ms[ms.size() / 2],
           ms[0], h_out[0]);
    return 0;
}
