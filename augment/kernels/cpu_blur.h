// augment/kernels/cpu_blur.h — separable Gaussian blur with reflect padding (bgv2 GaussianBlurTransform).
//
//   std::vector<float> k = GaussianKernel1D(0.7);      // 5 taps (k = nearest_odd(6σ + 0.5))
//   BlurAxis(x, shape, 3, /*axis=*/0, k.data(), k.size(), tmp);
#pragma once

#include <cstdint>
#include <vector>

namespace augmentd::kernels {

// bgv2 `_compute_kernel_size(σ, truncate=6)`: nearest odd of 6σ + 0.5 with Python's banker's round().
int GaussianKernelSize(double sigma, double truncate = 6.0);
// bgv2 `_build_kernel(σ, 6)`: taps at −(k−1)/2 … (k−1)/2, exp(−(x/σ)²/2), normalised to sum 1 (float32).
std::vector<float> GaussianKernel1D(double sigma, double truncate = 6.0);

// One channel `x` with spatial `shape` (ndim dims): correlate along `axis` with `kernel` (odd length) on a
// reflect-padded copy ('reflect' = mirror without repeating the edge voxel). Requires shape[axis] > len/2.
// `scratch` is resized as needed; x is overwritten with the result.
void BlurAxis(float* x, const int64_t* shape, int ndim, int axis, const float* kernel, int ksize,
              std::vector<float>& scratch);

}  // namespace augmentd::kernels
