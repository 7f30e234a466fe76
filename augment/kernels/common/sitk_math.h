// augment/kernels/common/sitk_math.h — the per-voxel math of SimpleITK's ResampleImageFilter in index space
// (augment/transforms/common/sitk_resample.h) and of the other resampling rules of the TorchIO / AugLab spatial
// transforms (anisotropy, torchio_affine, elastic_deformation, auglab_low_resolution), written once as
// `__host__ __device__` functions: the CPU transforms and the CUDA kernels (augment/kernels/cuda/torchio_resample.cu)
// run the very same code. Double arithmetic goes through explicitly rounded operations (no FMA contraction on the
// device), so CPU and GPU agree bit for bit on the continuous index and the interpolated value.
//
//   double ci[3];
//   sitk_math::LineIndex(m, b, i, j, k, n0, ci);                    // ITK's scanline continuous index
//   if (!sitk_math::Inside(ci, s)) out = fill; else out = sitk_math::Linear(in, s, ci);
//
// Header-only, no CUDA headers: usable from plain C++.
#pragma once

#include <cmath>
#include <cstdint>

#include "augment/rng.h"  // AUGMENTD_HD

namespace augmentd::sitk_math {

#if defined(__CUDA_ARCH__)
AUGMENTD_HD double DMul(double a, double b) { return __dmul_rn(a, b); }
AUGMENTD_HD double DAdd(double a, double b) { return __dadd_rn(a, b); }
AUGMENTD_HD double DSub(double a, double b) { return __dsub_rn(a, b); }
AUGMENTD_HD double DDiv(double a, double b) { return __ddiv_rn(a, b); }
#else
AUGMENTD_HD double DMul(double a, double b) { return a * b; }
AUGMENTD_HD double DAdd(double a, double b) { return a + b; }
AUGMENTD_HD double DSub(double a, double b) { return a - b; }
AUGMENTD_HD double DDiv(double a, double b) { return a / b; }
#endif

AUGMENTD_HD int64_t ClampIndex(int64_t v, int64_t n) { return v < 0 ? 0 : (v > n - 1 ? n - 1 : v); }

// The continuous input index of output voxel (i, j, k) under the row-major index affine (m, b), evaluated as ITK's
// linear-transform scanline along axis 0: start + (end − start)·(i / n0), start / end the indices of (0, j, k) and
// (n0, j, k).
AUGMENTD_HD void LineIndex(const double* m, const double* b, int64_t i, int64_t j, int64_t k, int64_t n0,
                           double* ci) {
  const double dn0 = static_cast<double>(n0), alpha = DDiv(static_cast<double>(i), dn0);
  for (int r = 0; r < 3; ++r) {
    const double rest = DAdd(DMul(m[r * 3 + 1], static_cast<double>(j)), DMul(m[r * 3 + 2], static_cast<double>(k)));
    const double start = DAdd(DAdd(DMul(m[r * 3], 0.0), rest), b[r]);
    const double end = DAdd(DAdd(DMul(m[r * 3], dn0), rest), b[r]);
    ci[r] = DAdd(start, DMul(DSub(end, start), alpha));
  }
}

// ITK's interpolator inside rule: −0.5 <= ci_r < n_r − 0.5 on every axis.
AUGMENTD_HD bool Inside(const double* ci, const int64_t* s) {
  bool inside = true;
  for (int r = 0; r < 3; ++r) inside = inside && ci[r] >= -0.5 && ci[r] < static_cast<double>(s[r]) - 0.5;
  return inside;
}

// Nearest neighbour (ITK's RoundHalfIntegerUp, clamped into the image): the linear offset of the source voxel.
AUGMENTD_HD int64_t NearestOffset(const double* ci, const int64_t* s) {
  int64_t q[3];
  for (int r = 0; r < 3; ++r) q[r] = ClampIndex(static_cast<int64_t>(floor(DAdd(ci[r], 0.5))), s[r]);
  return (q[0] * s[1] + q[1]) * s[2] + q[2];
}

// Trilinear of floor(ci) and floor(ci) + 1, both clamped into the image, accumulated in double corner by corner.
template <typename T>
AUGMENTD_HD double Linear(const T* in, const int64_t* s, const double* ci) {
  int64_t lo[3], hi[3];
  double w[3];
  for (int r = 0; r < 3; ++r) {
    const double f = floor(ci[r]);
    w[r] = DSub(ci[r], f);
    lo[r] = ClampIndex(static_cast<int64_t>(f), s[r]);
    hi[r] = ClampIndex(static_cast<int64_t>(f) + 1, s[r]);
  }
  double v = 0;
  for (int c = 0; c < 8; ++c) {
    const int64_t x = (c & 4) ? hi[0] : lo[0], y = (c & 2) ? hi[1] : lo[1], z = (c & 1) ? hi[2] : lo[2];
    const double wt = DMul(DMul((c & 4) ? w[0] : DSub(1.0, w[0]), (c & 2) ? w[1] : DSub(1.0, w[1])),
                           (c & 1) ? w[2] : DSub(1.0, w[2]));
    v = DAdd(v, DMul(wt, static_cast<double>(in[(x * s[1] + y) * s[2] + z])));
  }
  return v;
}

// One output voxel at continuous index ci: fill outside, else nearest or linear (stored as T).
template <typename T>
AUGMENTD_HD T Sample(const T* in, const int64_t* s, const double* ci, bool linear, T fill) {
  if (!Inside(ci, s)) return fill;
  if (!linear) return in[NearestOffset(ci, s)];
  return static_cast<T>(Linear(in, s, ci));
}

// ITK's cubic B-spline kernel (elastic_deformation's control grid).
AUGMENTD_HD double CubicBSpline(double t) {
  t = fabs(t);
  if (t < 1) return DDiv(DAdd(DSub(4.0, DMul(DMul(6.0, t), t)), DMul(DMul(DMul(3.0, t), t), t)), 6.0);
  if (t < 2) return DDiv(DMul(DMul(DSub(2.0, t), DSub(2.0, t)), DSub(2.0, t)), 6.0);
  return 0;
}

// elastic_deformation's input continuous index of voxel (i, j, k): i + D·displacement(D·i), D = diag(−1, −1, 1), the
// displacement summed over the 4×4×4 control nodes from (st0, st1, st2) (nodes outside the n0 × n1 × n2 grid skipped)
// with weights wi[a]·wj[b]·wk[c] (the per-axis cubic B-spline weights of the voxel's index along each axis) times
// the node's 3 float components `cp` (C order (x, y, z, component)). 2D samples take no displacement along axis 2.
AUGMENTD_HD void BsplineIndex(int64_t i, int64_t j, int64_t k, const int64_t* st, const double* wi, const double* wj,
                              const double* wk, const float* cp, const int64_t* n, bool is_2d, double* ci) {
  double disp[3] = {0, 0, 0};
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 4; ++c) {
        const int64_t gx = st[0] + a, gy = st[1] + b, gz = st[2] + c;
        if (gx < 0 || gx >= n[0] || gy < 0 || gy >= n[1] || gz < 0 || gz >= n[2]) continue;
        const double wt = DMul(DMul(wi[a], wj[b]), wk[c]);
        const float* q = cp + ((gx * n[1] + gy) * n[2] + gz) * 3;
        for (int d = 0; d < 3; ++d) disp[d] = DAdd(disp[d], DMul(wt, static_cast<double>(q[d])));
      }
  if (is_2d) disp[2] = 0;
  ci[0] = DSub(static_cast<double>(i), disp[0]);
  ci[1] = DSub(static_cast<double>(j), disp[1]);
  ci[2] = DAdd(static_cast<double>(k), disp[2]);
}

// torch's legacy "nearest" source index (AugLab's low-res): min(floor(dst · (float)in/out), in − 1), identity when
// in == out, dst/2 when out == 2·in (ATen's nearest_idx).
AUGMENTD_HD int64_t TorchNearestIndex(int64_t dst, int64_t in_size, int64_t out_size) {
  if (out_size == in_size) return dst;
  if (out_size == 2 * in_size) return dst >> 1;
  const float scale = RnDiv(static_cast<float>(in_size), static_cast<float>(out_size));
  const int64_t v = static_cast<int64_t>(floorf(RnMul(static_cast<float>(dst), scale)));
  return v < in_size - 1 ? v : in_size - 1;
}

// torch's nested trilinear form (kernels::LinearResize, align_corners=False) from the 8 corner values v[a][b][c] and
// the per-axis weights (w0, w1): w0_a·(w0_b·(w0_c·v000 + w1_c·v001) + …) + w1_a·(…), float32.
AUGMENTD_HD float NestedTrilinear(const float v[8], const float wa[2], const float wb[2], const float wc[2]) {
  const float v0 = RnAdd(RnMul(v[0], wc[0]), RnMul(v[1], wc[1]));
  const float v1 = RnAdd(RnMul(v[2], wc[0]), RnMul(v[3], wc[1]));
  const float u0 = RnAdd(RnMul(v0, wb[0]), RnMul(v1, wb[1]));
  const float v2 = RnAdd(RnMul(v[4], wc[0]), RnMul(v[5], wc[1]));
  const float v3 = RnAdd(RnMul(v[6], wc[0]), RnMul(v[7], wc[1]));
  const float u1 = RnAdd(RnMul(v2, wb[0]), RnMul(v3, wb[1]));
  return RnAdd(RnMul(u0, wa[0]), RnMul(u1, wa[1]));
}

}  // namespace augmentd::sitk_math
