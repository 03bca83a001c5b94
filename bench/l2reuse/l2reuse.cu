// bench/l2reuse/l2reuse.cu: how much of a re-read L2 still holds, by the bytes the whole GPU
// moves between a line's two reads (the footprint). Written for this project (issue 18,
// docs/model.md item 32); no code taken from elsewhere.
//
// reread<MODE>: warp w of block b owns row b * warps + w of C floats (rows on 128-B lines);
// each lane reads x[i], x[i + 32], ... 4 loads a step.
//   MODE 0: a pass that sums the row, then a pass that sums it again: between a line's two
//           reads the warp reads its whole row (C * 4 bytes); every resident warp of the GPU
//           does as much, so the footprint is resident warps x C x 4.
//   MODE 1: the same first pass, then a pass that reads the row and writes it scaled, then a
//           pass that reads the output back: each re-read (of the input in the second pass,
//           of the output in the third) has between one and two rows of distinct bytes in
//           between by where its line sits, 1.5 rows (C x 6 bytes) a warp on average.
// Each warp writes its sums to sums[row] (MODE 0) or the scaled row and the sum (MODE 1).
// `pad` bytes of dynamic shared memory a block, never used, hold fewer blocks on an SM.
template <int MODE>
__global__ void reread(float* __restrict__ out, float* __restrict__ sums,
                       const float* __restrict__ inp, int N, int C) {
    extern __shared__ float pad[];
    const int warps = blockDim.x / 32;
    const int row = blockIdx.x * warps + threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    if (row >= N) return;
    const float* x = inp + (size_t)row * C;
    float* y = out + (size_t)row * C;
    float a = 0.0f, b = 0.0f;
    for (int i = lane; i < C; i += 128) {
        float v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) v[u] = i + 32 * u < C ? x[i + 32 * u] : 0.0f;
#pragma unroll
        for (int u = 0; u < 4; u++) a += v[u];
    }
    for (int i = lane; i < C; i += 128) {
        float v[4];
#pragma unroll
        for (int u = 0; u < 4; u++) v[u] = i + 32 * u < C ? x[i + 32 * u] : 0.0f;
#pragma unroll
        for (int u = 0; u < 4; u++) {
            if (MODE == 0) {
                b += v[u];
            } else if (i + 32 * u < C) {
                y[i + 32 * u] = v[u] * 0.5f;
            }
        }
    }
    if (MODE == 1) {
        for (int i = lane; i < C; i += 128) {
            float v[4];
#pragma unroll
            for (int u = 0; u < 4; u++) v[u] = i + 32 * u < C ? y[i + 32 * u] : 0.0f;
#pragma unroll
            for (int u = 0; u < 4; u++) b += v[u];
        }
    }
    for (int o = 16; o; o >>= 1) {
        a += __shfl_xor_sync(0xffffffffu, a, o);
        b += __shfl_xor_sync(0xffffffffu, b, o);
    }
    if (lane == 0) {
        sums[2 * row] = a;
        sums[2 * row + 1] = b;
    }
}
