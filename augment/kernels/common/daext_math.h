// augment/kernels/common/daext_math.h — the per-voxel math of the DAExt AugLab kinds that both engines run: clamp
// (torch.quantile's rank and lerp), auglab_bias_field (torch.linspace coordinates, the polynomial's exponent),
// edge_convolution (the Laplace / Scharr kernels), unsharp_mask (the kernel and x + a·(x − blur)). Written once: the
// CPU transforms (augment/transforms/<name>/<name>.cc) and the CUDA kernels (augment/kernels/cuda/daext.cu) call the
// very same code. Float math uses rng.h's Rn* helpers (explicit round-to-nearest, no FMA contraction on the device),
// so GPU = CPU bit for bit given the same inputs, except expf (CUDA vs glibc within 2 ulp) and the statistics'
// reduction order.
//
//   int64_t lo, hi; float w;
//   daext::QuantileRank(q, n, lo, hi, w);  const float v = daext::Lerp(sorted[lo], sorted[hi], w);
//
// Header-only, no CUDA headers: usable from plain C++.
#pragma once

#include <cmath>
#include <cstdint>

#include "augment/rng.h"

namespace augmentd::cuda::daext {

// ------------------------------------------------------------------------------------------------------------
// clamp: torch.quantile(x, q) ('linear', float32) of n values = Lerp(v[lo], v[hi], w) over the sorted values v.
// rank = q·(n − 1) in float32, lo = ⌊rank⌋, hi = ⌈rank⌉ (both clamped to [0, n − 1]), w = rank − lo.
AUGMENTD_HD void QuantileRank(float q, int64_t n, int64_t& lo, int64_t& hi, float& w) {
  const float rank = RnMul(q, static_cast<float>(n - 1));
  lo = static_cast<int64_t>(rank);
  lo = lo < 0 ? 0 : (lo > n - 1 ? n - 1 : lo);
  hi = static_cast<int64_t>(ceilf(rank));
  hi = hi < 0 ? 0 : (hi > n - 1 ? n - 1 : hi);
  w = RnSub(rank, static_cast<float>(lo));
}

// ATen's lerp: w < 0.5 ? a + w·(b − a) : b − (b − a)·(1 − w).
AUGMENTD_HD float Lerp(float a, float b, float w) {
  return w < 0.5f ? RnAdd(a, RnMul(w, RnSub(b, a))) : RnSub(b, RnMul(RnSub(b, a), RnSub(1.0f, w)));
}

// torch.clamp(x, lo, hi) as std::min(std::max(x, lo), hi).
AUGMENTD_HD float ClampTo(float x, float lo, float hi) {
  const float y = x < lo ? lo : x;
  return hi < y ? hi : y;
}

// ------------------------------------------------------------------------------------------------------------
// auglab_bias_field.

// torch.linspace(start, end, n)[i] in float32 (ATen: start + i·step for i < n/2, end − (n − 1 − i)·step after).
AUGMENTD_HD float LinspaceAt(float start, float end, int64_t n, int64_t i) {
  if (n == 1) return start;
  const float step = RnDiv(RnSub(end, start), static_cast<float>(n - 1));
  return i < n / 2 ? RnAdd(start, RnMul(step, static_cast<float>(i)))
                   : RnSub(end, RnMul(step, static_cast<float>(n - 1 - i)));
}

// v^e by repeated float32 products (e >= 0).
AUGMENTD_HD float PowInt(float v, int64_t e) {
  float r = 1.0f;
  for (int64_t i = 0; i < e; ++i) r = RnMul(r, v);
  return r;
}

// The polynomial B at one voxel in AugLab's loop order (coefficient k increases innermost-last):
//   3D: for xo in 0..order, yo in 0..order − xo, zo in 0..order − xo − yo:  B += c_k·(x^xo·y^yo)·z^zo
//   2D: for xo in 0..order, yo in 0..order − xo:                            B += c_k·(x^xo·y^yo)·1
// `c` holds the monomials' coefficients (AuglabBiasFieldTransform::NumCoefficients(order, three_d ? 3 : 2)).
AUGMENTD_HD float BiasExponent(const float* c, int64_t order, bool three_d, float x, float y, float z) {
  float acc = 0.0f;
  int64_t k = 0;
  for (int64_t xo = 0; xo <= order; ++xo)
    for (int64_t yo = 0; yo <= order - xo; ++yo) {
      const float xy = RnMul(PowInt(x, xo), PowInt(y, yo));
      const int64_t zmax = three_d ? order - xo - yo : 0;
      for (int64_t zo = 0; zo <= zmax; ++zo, ++k)
        acc = RnAdd(acc, RnMul(c[k], RnMul(xy, three_d ? PowInt(z, zo) : 1.0f)));
    }
  return acc;
}

// field = exp(B); invert: 1 / (field + 1e-8).
AUGMENTD_HD float BiasField(float exponent, bool invert) {
  const float f = expf(exponent);
  return invert ? RnDiv(1.0f, RnAdd(f, 1e-8f)) : f;
}

// ------------------------------------------------------------------------------------------------------------
// edge_convolution: AugLab's 3×3×3 kernels, C order [axis 0][axis 1][axis 2]. Laplace: one kernel (−1, 26 at the
// centre); Scharr: three (kernel_x: derivative along axis 2, kernel_y: axis 1, kernel_z: axis 0, smoothing weights
// 9 / 30 / 100 over the two other axes). Writes `out[k][27]`, returns the number of kernels (1 or 3).
inline int EdgeKernels(bool scharr, float out[3][27]) {
  if (!scharr) {
    for (int i = 0; i < 27; ++i) out[0][i] = -1.0f;
    out[0][13] = 26.0f;
    return 1;
  }
  const float w[3][3] = {{9, 30, 9}, {30, 100, 30}, {9, 30, 9}};
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 3; ++c) {
        const int i = (a * 3 + b) * 3 + c;
        out[0][i] = (c == 0 ? 1.0f : c == 2 ? -1.0f : 0.0f) * w[a][b];
        out[1][i] = (b == 0 ? 1.0f : b == 2 ? -1.0f : 0.0f) * w[a][c];
        out[2][i] = (a == 0 ? 1.0f : a == 2 ? -1.0f : 0.0f) * w[b][c];
      }
  return 3;
}

// Scharr's sum: acc + [|r|] (the first kernel's response is added to 0, exact).
AUGMENTD_HD float EdgeAccumulate(float acc, float r, bool absolute) { return RnAdd(acc, absolute ? fabsf(r) : r); }

// ------------------------------------------------------------------------------------------------------------
// unsharp_mask: AugLab's get_gaussian_kernel3d(3, sigma) (taps t = 0, 1, 2, not centred): g_d(t) = exp(−½(t/σ_d)²)
// normalised per axis, K = g_0 ⊗ g_1 ⊗ g_2 / ΣK, C order [axis 0][axis 1][axis 2]. Host only (glibc's expf), so
// both engines use the same weights.
inline void UnsharpKernel(const float sigma[3], float k[27]) {
  float g[3][3];
  for (int d = 0; d < 3; ++d) {
    float sum = 0.0f;
    for (int t = 0; t < 3; ++t) {
      const float r = static_cast<float>(t) / sigma[d];
      g[d][t] = std::exp(-0.5f * (r * r));
      sum += g[d][t];
    }
    for (float& v : g[d]) v = v / sum;
  }
  float total = 0.0f;
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 3; ++c) {
        k[(a * 3 + b) * 3 + c] = g[0][a] * g[1][b] * g[2][c];
        total += k[(a * 3 + b) * 3 + c];
      }
  for (int i = 0; i < 27; ++i) k[i] = k[i] / total;
}

// x + amount·(x − blurred).
AUGMENTD_HD float Unsharp(float x, float blurred, float amount) { return RnAdd(x, RnMul(amount, RnSub(x, blurred))); }

}  // namespace augmentd::cuda::daext
