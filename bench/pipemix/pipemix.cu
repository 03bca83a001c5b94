// Loops that mix FFMA, the ALU pipe (FMNMX), IMAD and shared loads (LDS) in known numbers
// (issue 18: the model takes a loop's issue time as its busiest pipe's clocks or its
// instruction count, whichever is larger; bench/results/h200-pipes found loops whose pipes
// are close running 4-13% over that). Written here, not taken from any repository.
// Each thread runs 4 independent chains of each kind; a loop iteration holds NF FFMA (the
// first NL of them take a shared load as their addend), NA FMNMX and NI IMAD; with 32-64
// warps an SM the chains hide every latency, so the time is what the sub-partition issues.
// Host: `pipemix VARIANT ITERS BLOCKS_PER_SM` prints one row (median of 15 after 3 warm-ups).
// -DBROADCAST: the shared loads read one word a warp (a broadcast), not a word a lane.
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
#include <cuda_runtime.h>

template <int NF, int NA, int NI, int NL>
__global__ void pipemix(float *out, const float *in, int iters) {
    __shared__ float sm[2048];
    for (int t = threadIdx.x; t < 2048; t += blockDim.x) sm[t] = in[t & 15] + t;
    __syncthreads();
    const float a = in[0], b = in[1], c = in[2], d = in[3];
    const unsigned ua = __float_as_uint(in[4]) | 1u, ub = __float_as_uint(in[5]);
    float x[4], y[4];
    unsigned u[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        x[k] = in[6 + k] + threadIdx.x;
        y[k] = in[10 + k] - threadIdx.x;
        u[k] = threadIdx.x * 7u + k;
    }
#ifdef BROADCAST  // every lane loads the same word (one address a warp load, as a tile row's)
    const int lane = 0;
#else
    const int lane = threadIdx.x & 31;
#endif
    for (int i = 0; i < iters; i++) {
        const float *p = sm + ((i & 1) << 10) + lane;  // 2 windows of 1,024 floats
#pragma unroll
        for (int k = 0; k < NF; k++)
            x[k & 3] = fmaf(x[k & 3], a, k < NL ? p[k * 32] : b);
#pragma unroll
        for (int k = 0; k < NA / 2; k++)
            y[k & 3] = fminf(fmaxf(y[k & 3], c), d);
#pragma unroll
        for (int k = 0; k < NI; k++)
            u[k & 3] = u[k & 3] * ua + ub;
    }
    float s = 0.f;
#pragma unroll
    for (int k = 0; k < 4; k++) s += x[k] + y[k] + __uint_as_float(u[k] & 0x3fffffffu);
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

typedef void (*kern_t)(float *, const float *, int);
struct Variant { int nf, na, ni, nl; kern_t k; };
#define V(F, A, I, L) {F, A, I, L, pipemix<F, A, I, L>}
#define ROW_A(F, A, L) V(F, A, 0, L), V(F, A, 16, L), V(F, A, 32, L)
#define ROW_F(F, L) ROW_A(F, 0, L), ROW_A(F, 16, L), ROW_A(F, 32, L), ROW_A(F, 48, L)
static const Variant variants[] = {
    ROW_F(32, 0), ROW_F(64, 0), ROW_F(96, 0), ROW_F(32, 16), ROW_F(64, 16), ROW_F(96, 16),
    V(64, 0, 0, 8), V(64, 0, 0, 32), V(64, 16, 0, 8), V(64, 16, 0, 32), V(96, 32, 16, 32),
    V(0, 32, 0, 0), V(0, 0, 32, 0), V(0, 32, 32, 0), V(128, 0, 0, 0), V(128, 64, 0, 0),
};
static const int n_variants = sizeof(variants) / sizeof(variants[0]);

int main(int argc, char **argv) {
    if (argc != 4) { fprintf(stderr, "usage: pipemix VARIANT ITERS BLOCKS_PER_SM\n"); return 2; }
    int v = atoi(argv[1]), iters = atoi(argv[2]), per_sm = atoi(argv[3]);
    if (v == -1) { printf("%d\n", n_variants); return 0; }
    if (v < 0 || v >= n_variants || iters < 1 || iters > 1 << 20 || per_sm < 1 || per_sm > 8) {
        fprintf(stderr, "pipemix: bad arguments\n"); return 2;
    }
    const Variant &var = variants[v];
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
    const int threads = 256;
    int blocks = sms * per_sm;
    float *out, *in;
    float h_in[16] = {0.999f, 0.001f, 0.5f, -0.5f, 3, 5, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
    cudaMalloc(&out, sizeof(float) * blocks * threads);
    cudaMalloc(&in, sizeof(h_in));
    cudaMemcpy(in, h_in, sizeof(h_in), cudaMemcpyHostToDevice);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> ms;
    for (int r = 0; r < 18; r++) {
        cudaEventRecord(e0);
        var.k<<<blocks, threads>>>(out, in, iters);
        cudaEventRecord(e1);
        cudaEventSynchronize(e1);
        float t = 0;
        cudaEventElapsedTime(&t, e0, e1);
        if (r >= 3) ms.push_back(t);
    }
    cudaError_t err = cudaGetLastError();
    if (err != cudaSuccess) { fprintf(stderr, "pipemix: %s\n", cudaGetErrorString(err)); return 1; }
    std::sort(ms.begin(), ms.end());
    int occ = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, var.k, threads, 0);
    float h_out[2];
    cudaMemcpy(h_out, out, sizeof(h_out), cudaMemcpyDeviceToHost);
    printf("variant=%d nf=%d na=%d ni=%d nl=%d iters=%d sms=%d blocks=%d threads=%d "
           "resident_blocks_per_sm=%d median_ms=%.5f min_ms=%.5f checksum=%g\n", v, var.nf,
           var.na, var.ni, var.nl, iters, sms, blocks, threads, occ, ms[ms.size() / 2], ms[0],
           h_out[0]);
    return 0;
}
