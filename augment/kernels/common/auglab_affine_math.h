// augment/kernels/common/auglab_affine_math.h — the per-voxel float32 arithmetic of AugLab's RandomAffine3DCustom
// (augment/transforms/auglab_affine/auglab_affine.h): the source point of an output voxel through the 3×4 source map,
// and torch grid_sample's align_corners=True, padding_mode="zeros" sampling at it (trilinear: each of the 8 corners
// that lies outside the volume contributes 0; nearest: rint — half to even — of the coordinate, 0 outside). Written
// once as `__host__ __device__` functions with explicitly rounded operations (rng.h Rn*: no FMA contraction on the
// device), so the CPU transform and the CUDA stage (auglab_affine.cu) compute the same values.
//
//   float sx, sy, sz;
//   auglab_affine_math::SourcePoint(map, x, y, z, sx, sy, sz);              // x: W index, y: H index, z: D index
//   out = auglab_affine_math::SampleLinear(plane, d, h, w, sx, sy, sz);
//
// Header-only, no CUDA headers: usable from plain C++.
#pragma once

#include <cmath>
#include <cstdint>

#include "augment/rng.h"

namespace augmentd::auglab_affine_math {

// (sx, sy, sz) = M·(x, y, z, 1), M row-major 3×4 (rows: source x, y, z).
AUGMENTD_HD void SourcePoint(const float* m, float x, float y, float z, float& sx, float& sy, float& sz) {
  sx = RnAdd(RnAdd(RnAdd(RnMul(m[0], x), RnMul(m[1], y)), RnMul(m[2], z)), m[3]);
  sy = RnAdd(RnAdd(RnAdd(RnMul(m[4], x), RnMul(m[5], y)), RnMul(m[6], z)), m[7]);
  sz = RnAdd(RnAdd(RnAdd(RnMul(m[8], x), RnMul(m[9], y)), RnMul(m[10], z)), m[11]);
}

// Trilinear sample of the (d, h, w) volume `v` at (sx, sy, sz) with zero padding (grid_sample's rule, corner by
// corner). Corners in a fixed order, weights (1 − t, t) per axis.
template <typename T>
AUGMENTD_HD float SampleLinear(const T* v, int32_t d, int32_t h, int32_t w, float sx, float sy, float sz) {
  const float fx = floorf(sx), fy = floorf(sy), fz = floorf(sz);
  const float tx = RnSub(sx, fx), ty = RnSub(sy, fy), tz = RnSub(sz, fz);
  // Out-of-range coordinates (far outside, or NaN) contribute nothing; clamp before the integer cast.
  if (!(fx >= -1.0f && fx <= static_cast<float>(w)) || !(fy >= -1.0f && fy <= static_cast<float>(h)) ||
      !(fz >= -1.0f && fz <= static_cast<float>(d)))
    return 0.0f;
  const int32_t x0 = static_cast<int32_t>(fx), y0 = static_cast<int32_t>(fy), z0 = static_cast<int32_t>(fz);
  const float wx[2] = {RnSub(1.0f, tx), tx}, wy[2] = {RnSub(1.0f, ty), ty}, wz[2] = {RnSub(1.0f, tz), tz};
  float acc = 0.0f;
  for (int32_t a = 0; a < 2; ++a) {
    const int32_t zi = z0 + a;
    if (zi < 0 || zi >= d) continue;
    for (int32_t b = 0; b < 2; ++b) {
      const int32_t yi = y0 + b;
      if (yi < 0 || yi >= h) continue;
      const float wzy = RnMul(wz[a], wy[b]);
      for (int32_t c = 0; c < 2; ++c) {
        const int32_t xi = x0 + c;
        if (xi < 0 || xi >= w) continue;
        const float val = static_cast<float>(v[(static_cast<int64_t>(zi) * h + yi) * w + xi]);
        acc = RnAdd(acc, RnMul(val, RnMul(wzy, wx[c])));
      }
    }
  }
  return acc;
}

// The source voxel's linear index of a nearest sample at (sx, sy, sz), or −1 outside the volume (zero padding).
AUGMENTD_HD int64_t NearestIndex(int32_t d, int32_t h, int32_t w, float sx, float sy, float sz) {
  const float rx = rintf(sx), ry = rintf(sy), rz = rintf(sz);
  if (!(rx >= 0.0f && rx < static_cast<float>(w)) || !(ry >= 0.0f && ry < static_cast<float>(h)) ||
      !(rz >= 0.0f && rz < static_cast<float>(d)))
    return -1;
  return (static_cast<int64_t>(rz) * h + static_cast<int64_t>(ry)) * w + static_cast<int64_t>(rx);
}

}  // namespace augmentd::auglab_affine_math
