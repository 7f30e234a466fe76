// augment/kernels/common/redistribute_seg_math.h — the per-voxel and per-region float32 arithmetic of AugLab's
// RedistributeSeg (augment/transforms/redistribute_seg/redistribute_seg.h), written once as `__host__ __device__`
// functions with explicitly rounded operations (rng.h Rn*: no FMA contraction on the device): the CPU transform and
// the CUDA stage (augment/transforms/redistribute_seg/redistribute_seg.cu) run the same code, so they differ only by
// expf (CUDA vs glibc, within 2 ulp) and the reduction order of the double statistics.
//
//   const float sigma = redistribute_seg_math::Sigma(jitter, in_mean, in_std, ring_mean, ring_std);
//   add = RnAdd(add, RnMul(redistribute_seg_math::NormalPdf(x, in_mean, sigma), amplitude));
//
// Header-only, no CUDA headers: usable from plain C++.
#pragma once

#include <cmath>

#include "augment/rng.h"

namespace augmentd::redistribute_seg_math {

// std::max(a, b) (a when neither is smaller, NaN included).
AUGMENTD_HD float Max(float a, float b) { return a < b ? b : a; }

// (x − min) / max(max − min, 1e-6)
AUGMENTD_HD float Denominator(float mn, float mx) { return Max(RnSub(mx, mn), 1e-6f); }
AUGMENTD_HD float Normalize(float x, float mn, float denom) { return RnDiv(RnSub(x, mn), denom); }

// σ = max(jitter + 0.4·|(m − m')·s / (s' + 1e-6)|, 0.01)
AUGMENTD_HD float Sigma(float jitter, float in_mean, float in_std, float ring_mean, float ring_std) {
  const float t = RnDiv(RnMul(RnSub(in_mean, ring_mean), in_std), RnAdd(ring_std, 1e-6f));
  return Max(RnAdd(jitter, RnMul(0.4f, fabsf(t))), 0.01f);
}

// N(x; m, σ) = (1/(σ + 1e-6))/√(2π) · exp(−½ z²), z = (x − m)/(σ + 1e-6)
AUGMENTD_HD float NormalPdf(float x, float mean, float sigma) {
  const float inv = RnDiv(1.0f, RnAdd(sigma, 1e-6f));
  const float sqrt_2pi = RnSqrt(static_cast<float>(2.0 * 3.141592653589793));  // correctly rounded on both sides
  const float z = RnMul(RnSub(x, mean), inv);
  return RnMul(RnDiv(inv, sqrt_2pi), expf(RnMul(-0.5f, RnMul(z, z))));
}

// x + 2·(add − min)/(max − min + 1e-6)
AUGMENTD_HD float Redistribute(float x, float add, float tmin, float tmax) {
  return RnAdd(x, RnDiv(RnMul(2.0f, RnSub(add, tmin)), RnAdd(RnSub(tmax, tmin), 1e-6f)));
}

// retain_stats: (x − mean)/sd · σ₀ + μ₀ with sd = max(std, 1e-7)
AUGMENTD_HD float Retain(float x, float mean, float sd, float old_std, float old_mean) {
  return RnAdd(RnMul(RnDiv(RnSub(x, mean), sd), old_std), old_mean);
}

}  // namespace augmentd::redistribute_seg_math
