// augment/kernels/common/region_mode_math.h — the per-voxel math of a pipeline entry's region mode (AugLab 20260109's
// in_seg / out_seg / mix_in_out, augment/region_mode.h), written once as `__host__ __device__` functions: the CPU
// engine (augment/region_mode.cc) and the CUDA chain's region post-step (augment/kernels/cuda/region_mode.cu) run the
// same code. float32 in torch's operation order with explicitly rounded operations (rng.h Rn*: no FMA contraction).
//
//   const float w = RegionWeight(seg, v, voxels, seg_channels, mode, keep);   // m
//   out[v] = RegionBlend(w, RegionRescale(t[v], ts, os), x[v]);              // m·t' + (1 − m)·x
//
// Header-only, no CUDA headers.
#pragma once

#include <cstdint>

#include "augment/rng.h"

namespace augmentd::region_mode {

enum Mode : int32_t {
  kAll = 0,  // the step's output everywhere (no blend)
  kIn = 1,   // m = Σ_k seg_k
  kOut = 2,  // m = Σ_k (1 − seg_k)
};
inline constexpr int kMaxSegChannels = 64;  // keep is a bit mask over the seg channels
inline constexpr uint64_t kKeepAll = ~uint64_t{0};

// Per (sample, channel) min / max of a channel: AugLab's rescale of the transformed channel onto the original's range.
struct MinMax {
  float lo = 0, hi = 0;
};

// m at voxel v: the sum over the kept seg channels k of seg_k(v) ("in") or 1 − seg_k(v) ("out"), in channel order
// (AugLab: seg.to(float), 1 − m for "out", times the per-channel 0/1 mix factor, torch.sum over the channels).
AUGMENTD_HD float RegionWeight(const int16_t* seg, int64_t v, int64_t voxels, int32_t seg_channels, int32_t mode,
                               uint64_t keep) {
  float m = 0.0f;
  for (int32_t k = 0; k < seg_channels; ++k) {
    if (((keep >> (k & 63)) & 1u) == 0) continue;  // mix_in_out dropped the channel: adds 0
    const float s = static_cast<float>(seg[int64_t{k} * voxels + v]);
    m = RnAdd(m, mode == kOut ? RnSub(1.0f, s) : s);
  }
  return m;
}

// (t − t_min) / (t_max − t_min + 1e-8) · (x_max − x_min) + x_min (AugLab's normalize=True, float32).
AUGMENTD_HD float RegionRescale(float t, MinMax ts, MinMax xs) {
  const float den = RnAdd(RnSub(ts.hi, ts.lo), 1e-8f);
  return RnAdd(RnMul(RnDiv(RnSub(t, ts.lo), den), RnSub(xs.hi, xs.lo)), xs.lo);
}

// m·t + (1 − m)·x.
AUGMENTD_HD float RegionBlend(float m, float t, float x) { return RnAdd(RnMul(m, t), RnMul(RnSub(1.0f, m), x)); }

}  // namespace augmentd::region_mode
