// Microbenchmark (issue 18, docs/model.md item 24): a few warps an SM, each reading its own
// row of a shared table by a runtime stride (every lane of a warp on gcd(stride, 32) ways
// of one bank: stride 65 none, 64 all 32) beside a broadcast of the same column, into one
// FFMA chain: the loop of flash-attention-minimal's S = QK^T, written for this project. A
// runtime stride and offset keep the loads scalar LDS (ptxas cannot prove them aligned), and
// a runtime row length n keeps them in the loop (flash's d).
// One block an SM (the manifest reserves most of the SM's shared memory); the block's warps
// are the SM's.
extern "C" __global__ void conflicted(const float* in, float* out, int stride, int off,
                                      int n, int iters) {
    extern __shared__ float s[];
    int lane = threadIdx.x % 32;
    for (int i = threadIdx.x; i < 32 * 96; i += blockDim.x)
        s[i] = in[i];
    __syncthreads();
    const float* row = s + lane * stride + off;
    const float* col = s + off;
    float sum = 0.f;
    for (int k = 0; k < iters; k++) {
        for (int x = 0; x < n; x++)
            sum += row[x] * col[x];
    }
    out[blockIdx.x * blockDim.x + threadIdx.x] = sum;
}
