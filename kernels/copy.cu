// Device-to-device copy: the bandwidth baseline transpose is measured against (bytes read
// plus bytes written). float4 when both pointers are 16-byte aligned, grid-stride loop.
extern "C" __global__ void copy_kernel(const float* __restrict__ in, float* __restrict__ out, long long n) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const long long n4 = n / 4;
    const float4* in4 = reinterpret_cast<const float4*>(in);
    float4* out4 = reinterpret_cast<float4*>(out);
    for (long long v = i; v < n4; v += stride) out4[v] = in4[v];
    for (long long t = n4 * 4 + i; t < n; t += stride) out[t] = in[t];
}
