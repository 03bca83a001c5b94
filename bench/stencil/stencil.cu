// A 5-point stencil over an n x n grid of floats, one output a thread, in blocks of BX x BY
// threads: does the block's shape move the time where the threads, the grid's blocks and
// every warp's own accesses stay the same? (issue 18: the corpus's Jacobi kernel measures
// 2-4% faster in wide blocks, 256 x 2 over 32 x 16, which the model predicts alike.)
// Written here, not taken from any repository.
//   MODE 0: out = 0.25 (left + right + up + down), plus the residue against the centre
//   MODE 1: out = centre (a copy through the same indexing)
//   MODE 2: out = left + centre + right (the row's neighbours only)
//   MODE 3: out = up + centre + down (the column's neighbours only)
//   MODE 4: a copy whose addresses do not depend on the shape: block b copies the
//           BX x BY elements starting at b x BX x BY, thread t (= y x BX + x) element t
//   MODE 5: a copy through a 32 x (BX x BY / 32) tile whatever the shape: thread t reads
//           row t / 32, column t % 32 of the block's tile (the addresses of a 32-wide block
//           in a block of any shape)
//   MODE 6: a copy of float2s through MODE 1's indexing (a row is n / 2 of them): a block's
//           x threads read 8 B each of a row, twice MODE 1's run at the same shape
//   MODE 7: the same with float4s (16 B a thread, n / 4 a row)
//   MODE 8: a copy of a BX x 4 BY tile a block, each thread 4 elements BY rows apart, its 4
//           loads issued before its stores (a transpose's loads, without the transpose)
//   (MODE 6-8 added for docs/model.md item 51: is the cost of a short run of each row the
//   bytes a block reads of it, whatever a thread loads, and does it hold with 4 loads in
//   flight a thread?)
//   NORM 1: each block sums its squared residues (warp shuffles, then warp 0) and adds the
//           sum to one float with atomicAdd, as the Jacobi kernel does with cub.
// Host: `stencil N MODE NORM [BX BY]` (N a multiple of 1024) times every shape (or the one given) (median of 20 event-timed runs after 3
// warm-ups), checks 4096 sampled interior points against the CPU, and prints one line a shape.
#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <vector>
#include <type_traits>
#include <cuda_runtime.h>

template <int BX, int BY, int MODE, int NORM>
__global__ void __launch_bounds__(BX * BY)
stencil(float* __restrict__ out, const float* __restrict__ in, float* __restrict__ norm, int n) {
    const int t = threadIdx.y * BX + threadIdx.x;
    if (MODE == 6 || MODE == 7) {  // float2 / float4 copies through the 2-D indexing
        typedef typename std::conditional<MODE == 6, float2, float4>::type vec;
        const int w = n / (MODE == 6 ? 2 : 4);  // vectors a row
        const int ix = blockIdx.x * BX + threadIdx.x, iy = blockIdx.y * BY + threadIdx.y + 1;
        if (iy < n - 1 && ix < w) {
            const size_t i = (size_t)iy * w + ix;
            reinterpret_cast<vec*>(out)[i] = reinterpret_cast<const vec*>(in)[i];
        }
        return;
    }
    if (MODE == 8) {  // a BX x 4 BY tile: 4 loads a thread, then 4 stores
        const size_t ix = (size_t)blockIdx.x * BX + threadIdx.x;
        const size_t iy = (size_t)blockIdx.y * 4 * BY + threadIdx.y;
        float v[4];
#pragma unroll
        for (int k = 0; k < 4; k++) v[k] = in[(iy + k * BY) * n + ix];
#pragma unroll
        for (int k = 0; k < 4; k++) out[(iy + k * BY) * n + ix] = v[k];
        return;
    }
    if (MODE >= 4) {  // copies of the whole grid, block b = blockIdx.y x gridDim.x + blockIdx.x
        const size_t b = (size_t)blockIdx.y * gridDim.x + blockIdx.x;
        size_t i;
        if (MODE == 4) {
            i = b * (BX * BY) + t;
        } else {  // the block's tile: 32 columns, BX x BY / 32 rows, tiles laid out as the grid
            const size_t tiles_x = (size_t)n / 32, tx = b % tiles_x, ty = b / tiles_x;
            i = (ty * (BX * BY / 32) + t / 32) * n + tx * 32 + t % 32;
        }
        if (i < (size_t)n * n) out[i] = in[i];
        return;
    }
    const int ix = blockIdx.x * BX + threadIdx.x;
    const int iy = blockIdx.y * BY + threadIdx.y + 1;
    float r2 = 0.f;
    if (iy < n - 1 && ix >= 1 && ix < n - 1) {
        const size_t i = (size_t)iy * n + ix;
        float v;
        if (MODE == 0) v = 0.25f * (in[i + 1] + in[i - 1] + in[i + n] + in[i - n]);
        else if (MODE == 1) v = in[i];
        else if (MODE == 2) v = in[i - 1] + in[i] + in[i + 1];
        else v = in[i - n] + in[i] + in[i + n];
        out[i] = v;
        if (NORM) { float d = v - (MODE == 0 ? in[i] : 0.f); r2 = d * d; }
    }
    if (NORM) {
        __shared__ float part[32];
        for (int o = 16; o; o >>= 1) r2 += __shfl_down_sync(0xffffffffu, r2, o);
        if (t % 32 == 0) part[t / 32] = r2;
        __syncthreads();
        if (t < 32) {
            r2 = t < BX * BY / 32 ? part[t] : 0.f;
            for (int o = 16; o; o >>= 1) r2 += __shfl_down_sync(0xffffffffu, r2, o);
            if (t == 0) atomicAdd(norm, r2);
        }
    }
}

typedef void (*kern_t)(float*, const float*, float*, int);
struct Shape { int bx, by; kern_t k[9][2]; };

#define K(BX, BY, M) {stencil<BX, BY, M, 0>, stencil<BX, BY, M, 1>}
#define S(BX, BY) {BX, BY, {K(BX, BY, 0), K(BX, BY, 1), K(BX, BY, 2), K(BX, BY, 3), \
                           K(BX, BY, 4), K(BX, BY, 5), K(BX, BY, 6), K(BX, BY, 7), \
                           K(BX, BY, 8)}}
static const Shape shapes[] = {
    S(32, 8), S(64, 4), S(256, 1),
    S(32, 16), S(64, 8), S(128, 4), S(256, 2), S(512, 1),
    S(32, 32), S(64, 16), S(128, 8), S(256, 4), S(512, 2), S(1024, 1),
    S(16, 16), S(16, 32), S(16, 64),  // half a warp wide (added with MODE 6-8)
};

static float expect(const std::vector<float>& h, int n, int mode, size_t i) {
    if (mode >= 4) return h[i];  // every copy
    if (mode == 0) return 0.25f * (h[i + 1] + h[i - 1] + h[i + n] + h[i - n]);
    if (mode == 1) return h[i];
    if (mode == 2) return h[i - 1] + h[i] + h[i + 1];
    return h[i - n] + h[i] + h[i + n];
}

int main(int argc, char** argv) {
    if (argc != 4 && argc != 6) { fprintf(stderr, "usage: stencil N MODE NORM [BX BY]\n"); return 2; }
    const int n = atoi(argv[1]), mode = atoi(argv[2]), norm = atoi(argv[3]);
    const int only_bx = argc == 6 ? atoi(argv[4]) : 0, only_by = argc == 6 ? atoi(argv[5]) : 0;
    if (n < 256 || n > 20000 || n % 1024 || mode < 0 || mode > 8 || norm < 0 || norm > 1) {
        fprintf(stderr, "stencil: bad arguments\n"); return 2;
    }
    const size_t cells = (size_t)n * n;
    std::vector<float> h(cells);
    for (size_t i = 0; i < cells; i++) h[i] = (float)((i * 2654435761u) % 1000003u) * 1e-6f;
    float *in, *out, *nrm;
    cudaMalloc(&in, cells * sizeof(float));
    cudaMalloc(&out, cells * sizeof(float));
    cudaMalloc(&nrm, sizeof(float));
    cudaMemcpy(in, h.data(), cells * sizeof(float), cudaMemcpyHostToDevice);
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    int bad = 0;
    for (const Shape& s : shapes) {
        if (only_bx && (s.bx != only_bx || s.by != only_by)) continue;
        kern_t k = s.k[mode][norm];
        // the copies of MODE 4, 5 and 8 cover the whole grid: n x n / (BX x BY) blocks (MODE
        // 8: 4 elements a thread); MODE 6 and 7 read n / 2 and n / 4 vectors a row
        const int row = mode == 6 ? n / 2 : mode == 7 ? n / 4 : n;
        const int whole = mode == 4 || mode == 5 || mode == 8;
        dim3 block(s.bx, s.by), grid((row + s.bx - 1) / s.bx,
                                     mode == 8 ? n / (4 * s.by) : whole ? n / s.by
                                     : (n - 2 + s.by - 1) / s.by);
        cudaMemset(out, 0xff, cells * sizeof(float));
        std::vector<float> ms;
        for (int r = 0; r < 23; r++) {
            cudaMemset(nrm, 0, sizeof(float));
            cudaEventRecord(e0);
            k<<<grid, block>>>(out, in, nrm, n);
            cudaEventRecord(e1);
            cudaEventSynchronize(e1);
            float t = 0;
            cudaEventElapsedTime(&t, e0, e1);
            if (r >= 3) ms.push_back(t);
        }
        cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) { fprintf(stderr, "stencil: %s\n", cudaGetErrorString(err)); return 1; }
        std::sort(ms.begin(), ms.end());
        bool ok = true;
        for (int s2 = 0; s2 < 4096 && ok; s2++) {
            size_t iy = 1 + (size_t)s2 * 7919 % (n - 2), ix = 1 + (size_t)s2 * 104729 % (n - 2);
            size_t i = iy * n + ix;
            float got;
            cudaMemcpy(&got, out + i, sizeof(float), cudaMemcpyDeviceToHost);
            float want = expect(h, n, mode, i);
            if (!(std::abs(got - want) <= 1e-5f * (1.f + std::abs(want)))) ok = false;
        }
        bad += !ok;
        int occ = 0;
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, k, s.bx * s.by, 0);
        printf("n=%d mode=%d norm=%d bx=%d by=%d blocks_per_sm=%d median_ms=%.4f p10_ms=%.4f "
               "p90_ms=%.4f check=%s\n", n, mode, norm, s.bx, s.by, occ, ms[ms.size() / 2],
               ms[ms.size() / 10], ms[ms.size() * 9 / 10], ok ? "ok" : "FAILED");
    }
    return bad ? 1 : 0;
}
