// bench/dram/rowwalk.cu: how much of DRAM's bandwidth a kernel reaches when each warp walks
// its own row (llm.c's softmaxes, layernorms) against a grid-stride stream over the same
// bytes. Written for this project (issue 18); no code taken from elsewhere.
//
// walk<U, MODE>: warp w of block b owns row b * warps + w of C floats; each lane reads
// x[i], x[i + 32], ... U loads a step (all issued before the first is used).
//   MODE 0: one pass that reads the row (1x its bytes)
//   MODE 1: a pass that reads it, then a pass that reads it again and writes the output
//           scaled by the first pass's lane sum (the online softmax's shape: 3x where the
//           re-read misses L2)
//   MODE 2: one pass that reads and writes (a copy, 2x)
// stream<U, MODE>: the array as one row walked by every thread of the grid, U loads a step
// (MODE 0 reads, MODE 2 copies).
template <int U, int MODE>
__global__ void walk(float* __restrict__ out, const float* __restrict__ inp, int N, int C) {
    const int warps = blockDim.x / 32;
    const int row = blockIdx.x * warps + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= N) return;
    const float* x = inp + (size_t)row * C;
    float* y = out + (size_t)row * C;
    float acc = 1.0f;
    if (MODE != 2) {
        acc = 0.0f;
        for (int i = lane; i < C; i += 32 * U) {
            float v[U];
#pragma unroll
            for (int u = 0; u < U; u++) v[u] = i + 32 * u < C ? x[i + 32 * u] : 0.0f;
#pragma unroll
            for (int u = 0; u < U; u++) acc += v[u];
        }
        if (MODE == 0) {
            y[lane] = acc;
            return;
        }
    }
    for (int i = lane; i < C; i += 32 * U) {
        float v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = i + 32 * u < C ? x[i + 32 * u] : 0.0f;
#pragma unroll
        for (int u = 0; u < U; u++)
            if (i + 32 * u < C) y[i + 32 * u] = v[u] * acc;
    }
}

template <int U, int MODE>
__global__ void stream(float* __restrict__ out, const float* __restrict__ inp, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride * U) {
        float v[U];
#pragma unroll
        for (int u = 0; u < U; u++) v[u] = i + stride * u < n ? inp[i + stride * u] : 0.0f;
#pragma unroll
        for (int u = 0; u < U; u++) {
            if (MODE == 2) {
                if (i + stride * u < n) out[i + stride * u] = v[u];
            } else {
                acc += v[u];
            }
        }
    }
    if (MODE == 0) out[(long long)blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
