#include "augment/kernels/cpu_blur.h"

#include <algorithm>
#include <cmath>

namespace augmentd::kernels {

namespace {
// Python 3 round(): half to even.
double PyRound(double v) { return std::nearbyint(v); }
}  // namespace

int GaussianKernelSize(double sigma, double truncate) {
  const double n = sigma * truncate + 0.5;
  const double r = PyRound(n);
  const int64_t ri = static_cast<int64_t>(r);
  if (((ri % 2) + 2) % 2 == 1) return static_cast<int>(ri);
  return static_cast<int>(n - r >= 0 ? ri + 1 : ri - 1);
}

std::vector<float> GaussianKernel1D(double sigma, double truncate) {
  const int k = GaussianKernelSize(sigma, truncate);
  const float half = static_cast<float>((k - 1) * 0.5);
  const float s = static_cast<float>(sigma);
  std::vector<float> w(k);
  float sum = 0.0f;
  for (int i = 0; i < k; ++i) {
    const float x = -half + static_cast<float>(i);
    const float q = x / s;
    w[i] = std::exp(-0.5f * (q * q));
    sum += w[i];
  }
  for (float& v : w) v = v / sum;
  return w;
}

void BlurAxis(float* x, const int64_t* shape, int ndim, int axis, const float* kernel, int ksize,
              std::vector<float>& scratch) {
  const int64_t n = shape[axis];
  const int r = ksize / 2;
  int64_t inner = 1, outer = 1;
  for (int d = axis + 1; d < ndim; ++d) inner *= shape[d];
  for (int d = 0; d < axis; ++d) outer *= shape[d];
  auto reflect = [n](int64_t i) -> int64_t {
    if (i < 0) return -i;
    if (i >= n) return 2 * (n - 1) - i;
    return i;
  };
  if (inner == 1) {
    // contiguous lines (last axis)
    scratch.resize(static_cast<size_t>(n + 2 * r));
    for (int64_t o = 0; o < outer; ++o) {
      float* line = x + o * n;
      for (int64_t i = -r; i < n + r; ++i) scratch[i + r] = line[reflect(i)];
      for (int64_t i = 0; i < n; ++i) {
        float acc = 0.0f;
        for (int t = 0; t < ksize; ++t) acc += scratch[i + t] * kernel[t];
        line[i] = acc;
      }
    }
    return;
  }
  // strided axis: process whole planes of `inner` contiguous values so memory access stays sequential.
  scratch.resize(static_cast<size_t>(n * inner));
  for (int64_t o = 0; o < outer; ++o) {
    float* block = x + o * n * inner;
    std::copy(block, block + n * inner, scratch.begin());
    for (int64_t i = 0; i < n; ++i) {
      float* dst = block + i * inner;
      for (int64_t q = 0; q < inner; ++q) dst[q] = 0.0f;
      for (int t = 0; t < ksize; ++t) {
        const float w = kernel[t];
        const float* src = scratch.data() + reflect(i + t - r) * inner;
        for (int64_t q = 0; q < inner; ++q) dst[q] += src[q] * w;
      }
    }
  }
}

}  // namespace augmentd::kernels
