#include "augment/kernels/cpu_intensity.h"

#include <algorithm>
#include <cmath>

namespace augmentd::kernels {

ChannelStats ComputeStats(const float* x, int64_t n, bool with_std) {
  ChannelStats s;
  if (n == 0) return s;
  double sum = 0;
  float mn = x[0], mx = x[0];
  for (int64_t i = 0; i < n; ++i) {
    sum += x[i];
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  s.mean = sum / static_cast<double>(n);
  s.min = mn;
  s.max = mx;
  if (with_std && n > 1) {
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double d = x[i] - s.mean;
      ss += d * d;
    }
    s.std_unbiased = std::sqrt(ss / static_cast<double>(n - 1));
  } else if (with_std) {
    s.std_unbiased = std::nan("");  // torch.std of one element is nan
  }
  return s;
}

void AddGaussianNoise(float* x, int64_t n, float sigma, const StreamKey& key) {
  for (int64_t i = 0; i < n; ++i) x[i] += sigma * NormalAt(key, static_cast<uint64_t>(i));
}

void MultiplyChannel(float* x, int64_t n, float m) {
  for (int64_t i = 0; i < n; ++i) x[i] *= m;
}

void ApplyContrast(float* x, int64_t n, float m, bool preserve_range) {
  const ChannelStats s = ComputeStats(x, n, false);
  const float mean = static_cast<float>(s.mean);
  for (int64_t i = 0; i < n; ++i) {
    float v = (x[i] - mean) * m + mean;
    if (preserve_range) v = std::min(std::max(v, s.min), s.max);
    x[i] = v;
  }
}

void ApplyGamma(float* x, int64_t n, float gamma, bool invert, bool retain_stats) {
  constexpr float kEps = 1e-7f;
  if (invert)
    for (int64_t i = 0; i < n; ++i) x[i] = -x[i];
  const ChannelStats before = ComputeStats(x, n, retain_stats);
  const float minm = before.min;
  const float rnge = before.max - before.min;
  const float denom = std::max(rnge, kEps);
  for (int64_t i = 0; i < n; ++i) x[i] = std::pow((x[i] - minm) / denom, gamma) * rnge + minm;
  if (retain_stats) {
    const ChannelStats after = ComputeStats(x, n, true);
    const float mean_here = static_cast<float>(after.mean);
    const float factor =
        static_cast<float>(before.std_unbiased) / std::max(static_cast<float>(after.std_unbiased), kEps);
    const float mean = static_cast<float>(before.mean);
    for (int64_t i = 0; i < n; ++i) x[i] = (x[i] - mean_here) * factor + mean;
  }
  if (invert)
    for (int64_t i = 0; i < n; ++i) x[i] = -x[i];
}

}  // namespace augmentd::kernels
