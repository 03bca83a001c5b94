// A stand-in for PyTorch's <torch/types.h>, which flash.cu (tspeterkim/flash-attention-minimal
// 00f8f46, unchanged) includes for its host function forward(), a PyTorch extension. The
// corpus times forward_kernel alone, launched from its manifest as forward() launches it;
// this declares only the names forward() uses, so the file compiles without PyTorch.
// Nothing here is defined or run: forward() is compiled (to a cubin) and never called.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>

namespace torch {
enum DeviceType { kCUDA };
struct Device {
    explicit Device(DeviceType type);
};
struct Tensor {
    int64_t size(int64_t dim) const;
    template <typename T> T* data_ptr() const;
    Tensor to(Device device) const;
};
Tensor zeros_like(const Tensor& like);
Tensor zeros(std::initializer_list<int64_t> sizes);
Tensor full(std::initializer_list<int64_t> sizes, float value);
}  // namespace torch
