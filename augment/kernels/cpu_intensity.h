// augment/kernels/cpu_intensity.h — per-channel intensity kernels (pure; one channel = n contiguous floats).
//
// Each function mirrors one bgv2 0.3.5 `_apply_to_image` for a single channel with float32 element arithmetic in
// bgv2's operation order; reductions (mean, std, min, max) accumulate in double.
//
//   AddGaussianNoise(x, n, sigma, key);        // x += sigma * NormalAt(key, i)
//   ApplyGamma(x, n, 1.2f, /*invert=*/false, /*retain_stats=*/true);
#pragma once

#include <cstdint>

#include "augment/rng.h"

namespace augmentd::kernels {

struct ChannelStats {
  double mean = 0;
  double std_unbiased = 0;  // torch.std (N−1); 0 when n < 2
  float min = 0, max = 0;
};
ChannelStats ComputeStats(const float* x, int64_t n, bool with_std);

// out[k] = NormalAt(key, first + k) for k < n, bit for bit, computing each Philox block once (vectorised).
void FillNormalField(const StreamKey& key, uint64_t first, int64_t n, float* out);

// x[i] += sigma · NormalAt(key, i)  (bgv2: noise.normal_(0, σ); the field comes from the counter-based RNG).
// Same bits as the per-voxel loop (and the CUDA kernel), through the vectorised block generator.
void AddGaussianNoise(float* x, int64_t n, float sigma, const StreamKey& key);

// x *= m
void MultiplyChannel(float* x, int64_t n, float m);

// bgv2 ContrastTransform: x = (x − mean)·m + mean, then (preserve_range) clamp to the channel's prior [min, max].
void ApplyContrast(float* x, int64_t n, float m, bool preserve_range);

// bgv2 GammaTransform for one channel (see augment/transforms/gamma/gamma.h for the math). The power is
// exp2(γ·log2 t) with vectorised float polynomials for γ > 0 (library pow otherwise): < 2e-7 of the range from double
// pow.
void ApplyGamma(float* x, int64_t n, float gamma, bool invert, bool retain_stats);

}  // namespace augmentd::kernels
