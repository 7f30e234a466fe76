// augment/kernels/common/auglab_math.h — the per-voxel math of AugLab's GPU extras (histogram equalisation, random
// convolution, intensity function / inverse), written once as `__host__ __device__` functions: the CPU transforms
// (augment/transforms/{histogram_equalization,random_convolution,intensity_function}/) and the CUDA kernels (auglab.cu) run the very same code, and a host-only test
// (augment/kernels/common/auglab_math_test.cc) checks it in CI without a GPU.
//
// Source of the definitions: neuropoly/AugLab `auglab/transforms/gpu/contrast.py` (RandomHistogramEqualizationGPU,
// RandomConvTransformGPU kernel_type "RandConv", RandomFunctionGPU, RandomInverseGPU; PyPI auglab 20260109). The
// arithmetic follows torch's float32 order with explicitly rounded operations (rng.h Rn*: no FMA contraction on the
// device), so CPU and GPU agree bit for bit given the same per-slice statistics — except the library functions
// (logf/sinf/expf: CUDA vs glibc within 2 ulp) and reduction order of the statistics.
//
//   const float xn = auglab::NormalizeMinMax(x, mn, mx);           // (x − min)/(max − min + 1e-5)
//   const float y = auglab::ApplyIntensityFn(auglab::kFnSqrt, xn);
//
// Header-only, no CUDA headers: usable from plain C++.
#pragma once

#include <cmath>
#include <cstdint>

#include "augment/rng.h"

namespace augmentd::cuda::auglab {

inline constexpr int kHistBins = 256;      // AugLab: torch.histc(..., bins=256)
inline constexpr int kMaxConvKernel = 15;  // largest random-convolution kernel size the engine accepts (odd)

// ------------------------------------------------------------------------------------------------------------
// retain_stats (all three transforms): y = (x − mean_y) / (std_y + 1e-8) · std_x + mean_x, float32, unbiased std.
struct RetainConsts {
  float new_mean = 0, new_std_eps = 1, old_std = 1, old_mean = 0;
};

AUGMENTD_HD RetainConsts MakeRetain(double old_mean, double old_std, double new_mean, double new_std) {
  RetainConsts c;
  c.new_mean = static_cast<float>(new_mean);
  c.new_std_eps = RnAdd(static_cast<float>(new_std), 1e-8f);
  c.old_std = static_cast<float>(old_std);
  c.old_mean = static_cast<float>(old_mean);
  return c;
}

AUGMENTD_HD float Retain(float y, const RetainConsts& c) {
  return RnAdd(RnMul(RnDiv(RnSub(y, c.new_mean), c.new_std_eps), c.old_std), c.old_mean);
}

// ------------------------------------------------------------------------------------------------------------
// Histogram equalisation over the slice's [mn, mx] (mx > mn; a constant slice is left unchanged, which is what
// AugLab's arithmetic yields for it).

// torch.histc's bin: trunc((x − mn)·256 / (mx − mn)), the maximum in the last bin.
AUGMENTD_HD int HistcBin(float x, float mn, float mx) {
  const int b = static_cast<int>(RnDiv(RnMul(RnSub(x, mn), static_cast<float>(kHistBins)), RnSub(mx, mn)));
  return b < 0 ? 0 : (b >= kHistBins ? kHistBins - 1 : b);
}

// AugLab's lookup index: long((x − mn) / ((mx − mn)/256 + 1e-10)) clamped to [0, 255] (differs from HistcBin only
// at bin edges). `inv_den` is the denominator (mx − mn)/256 + 1e-10 from LookupDenominator.
AUGMENTD_HD float LookupDenominator(float mn, float mx) {
  return RnAdd(RnDiv(RnSub(mx, mn), static_cast<float>(kHistBins)), 1e-10f);
}
AUGMENTD_HD int LookupBin(float x, float mn, float den) {
  const int b = static_cast<int>(RnDiv(RnSub(x, mn), den));
  return b < 0 ? 0 : (b >= kHistBins ? kHistBins - 1 : b);
}

// The equalised value of every bin from the bin counts: cdf = cumsum(counts) (float32, exact below 2^24 voxels),
// cdf_min = the first positive cdf, lut[i] = (cdf[i] − cdf_min)/(cdf[255] − cdf_min + 1e-10)·(mx − mn) + mn.
AUGMENTD_HD void EqualizationLut(const uint32_t* counts, float mn, float mx, float* lut) {
  uint64_t run = 0, first = 0;
  for (int i = 0; i < kHistBins; ++i) {
    run += counts[i];
    if (first == 0) first = run;
  }
  const float cdf_min = static_cast<float>(first), cdf_last = static_cast<float>(run);
  const float den = RnAdd(RnSub(cdf_last, cdf_min), 1e-10f), range = RnSub(mx, mn);
  run = 0;
  for (int i = 0; i < kHistBins; ++i) {
    run += counts[i];
    lut[i] = RnAdd(RnMul(RnDiv(RnSub(static_cast<float>(run), cdf_min), den), range), mn);
  }
}

// ------------------------------------------------------------------------------------------------------------
// Random convolution: torch.nn.functional.pad(mode="reflect") + conv3d (cross-correlation, no kernel flip).

// torch's "reflect" index (the edge is not repeated), folded again for pads longer than the axis (torch raises
// there; the engine keeps going), 0 for a one-voxel axis.
AUGMENTD_HD int ReflectIndex(int i, int n) {
  if (n <= 1) return 0;
  const int period = 2 * (n - 1);
  i %= period;
  if (i < 0) i += period;
  return i < n ? i : period - i;
}

// Correlation of the k×k×k kernel `w` (C order) with slice `x` of `shape` at voxel (i0, i1, i2), reflect-padded by
// k/2 on every side; products summed in the kernel's C order.
AUGMENTD_HD float ConvAt(const float* x, const int32_t shape[3], int i0, int i1, int i2, const float* w, int k) {
  const int p = k / 2;
  float acc = 0.0f;
  for (int a = 0; a < k; ++a) {
    const int64_t r0 = ReflectIndex(i0 + a - p, shape[0]);
    for (int b = 0; b < k; ++b) {
      const int64_t r1 = ReflectIndex(i1 + b - p, shape[1]);
      const float* row = x + (r0 * shape[1] + r1) * shape[2];
      const float* wr = w + (a * k + b) * k;
      for (int c = 0; c < k; ++c) acc = RnAdd(acc, RnMul(wr[c], row[ReflectIndex(i2 + c - p, shape[2])]));
    }
  }
  return acc;
}

// mix_prob branch: alpha·x + (1 − alpha)·conv.
AUGMENTD_HD float MixConv(float x, float conv, float alpha) {
  return RnAdd(RnMul(alpha, x), RnMul(RnSub(1.0f, alpha), conv));
}

// ------------------------------------------------------------------------------------------------------------
// Intensity function / inverse.
enum IntensityFn : int32_t {
  kFnLog1p = 0,    // torch.log(1 + x)
  kFnSqrt = 1,     // torch.sqrt
  kFnSin = 2,      // torch.sin
  kFnExp = 3,      // torch.exp
  kFnSigmoid = 4,  // 1 / (1 + torch.exp(−x))
  kFnSquare = 5,   // x ** 2 (RandomFunctionGPU's default func)
  kNumFns = 6,
};

// (x − min) / (max − min + 1e-5): RandomFunctionGPU's normalisation (per sample here; AugLab: over the batch).
AUGMENTD_HD float NormalizeMinMax(float x, float mn, float mx) {
  return RnDiv(RnSub(x, mn), RnAdd(RnSub(mx, mn), 1e-5f));
}

AUGMENTD_HD float ApplyIntensityFn(int32_t fn, float x) {
  switch (fn) {
    case kFnLog1p:
      return logf(RnAdd(1.0f, x));
    case kFnSqrt:
      return RnSqrt(x);
    case kFnSin:
      return sinf(x);
    case kFnExp:
      return expf(x);
    case kFnSigmoid:
      return RnDiv(1.0f, RnAdd(1.0f, expf(-x)));
    default:
      return RnMul(x, x);
  }
}

// RandomInverseGPU: max − x.
AUGMENTD_HD float Inverse(float x, float mx) { return RnSub(mx, x); }

// ------------------------------------------------------------------------------------------------------------
// Region modes (AugLab's in_seg / out_seg / mix_in_out, augment/transforms/common/auglab_region.h): a step transforms the
// whole channel (statistics, retain_stats included), then every voxel outside the drawn region gets its value from
// before the step back. Foreground = label > 0 in the configured seg channel, restricted by `keep` (bit l mod 64
// keeps label l; all ones without mix_in_out).
enum RegionMode : int32_t {
  kRegionAll = 0,  // the whole channel (AugLab's 'all')
  kRegionIn = 1,   // only the foreground
  kRegionOut = 2,  // only the background (and the labels mix_in_out dropped)
};
inline constexpr uint64_t kKeepAllLabels = ~uint64_t{0};

// AugLab's _choose_region_mode: inside when only the in-coin fell, outside when only the out-coin fell, else all.
AUGMENTD_HD int32_t RegionFromCoins(bool in, bool out) {
  return in && !out ? kRegionIn : (out && !in ? kRegionOut : kRegionAll);
}

// Whether a voxel with seg value `label` keeps the transformed value under (mode, keep).
AUGMENTD_HD bool TakesTransformed(int32_t label, int32_t mode, uint64_t keep) {
  if (mode == kRegionAll) return true;
  const bool fg = label > 0 && ((keep >> (label & 63)) & 1u) != 0;
  return mode == kRegionIn ? fg : !fg;
}

}  // namespace augmentd::cuda::auglab
