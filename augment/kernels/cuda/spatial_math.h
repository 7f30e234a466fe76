// augment/kernels/cuda/spatial_math.h — exact arithmetic shortcuts of the spatial kernel (spatial.cu), host and device
// (host tests: spatial_math_test.cc):
//  * the float16 rounding of the label vote without conversion instructions: bgv2 compares the per-label scores after
//    `.half()`, so the kernel needs fl16(v) only to compare scores, and the integer form below costs a few integer
//    operations instead of two conversions (which issue at a quarter of the rate of float arithmetic);
//  * the IEEE quotient u / d by a per-launch constant d from its reciprocal: 3 instructions instead of the ~10 of a
//    division (reciprocal, refinement, range check and branch).
#pragma once

#include <cstdint>

#include "augment/kernels/cpu_half.h"

#include <cmath>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace augmentd::cuda {

// The float32 bits of fl16(v) (round to nearest even) for 0 <= v < 65520 (scores are <= 1000): comparing two results
// as unsigned integers compares the rounded values (non-negative floats order like their bits). Normal halves
// (v >= 2^-14) keep the top 10 mantissa bits with ties to even; smaller values go through the exact conversion.
AUGMENTD_KERNEL_HD uint32_t HalfRoundedBits(float v) {
  const uint32_t x = kernels::FloatBits(v);
  if (x < 0x38800000u) {  // below 2^-14: half subnormals (rare; exact conversion)
#if defined(__CUDA_ARCH__)
    return kernels::FloatBits(__half2float(__float2half_rn(v)));
#else
    return kernels::FloatBits(kernels::RoundToHalf(v));
#endif
  }
  return (x + 0x0FFFu + ((x >> 13) & 1u)) & ~0x1FFFu;
}

// fl16(v) > 0 for v >= 0, without rounding: v rounds to a positive half exactly when v > 2^-25 (2^-25 itself is the
// tie between 0 and the smallest subnormal 2^-24, which goes to the even 0).
AUGMENTD_KERNEL_HD bool HalfRoundsPositive(float v) { return v > 2.98023223876953125e-08f; }

#if defined(__CUDA_ARCH__)  // device pass only (gcc would warn about the pragma)
#define AUGMENTD_VOTE_UNROLL _Pragma("unroll")
#else
#define AUGMENTD_VOTE_UNROLL
#endif

// RN(a + b) without contraction on either side (the vote's sums; the host test runs the same code).
AUGMENTD_KERNEL_HD float VoteAdd(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// bgv2 0.3.5's vote of the fused spatial kernel (spatial.cu) over the 8 trilinear corners, as it was computed up to
// session 9 (the reference of LabelVote035 below): `lab` is a corner's label (INT32_MIN out of bounds), `x1000` the
// weight it gives its label (1000·w, +0 out of bounds; all >= +0), `lowest` the patch's lowest label.
//  * one label among the in-bounds corners: that label when fl16(Σ x1000) > 0, else `lowest`;
//  * otherwise the triangular vote: corner q sums the corners m >= q of its label in corner order (0 + x is exact, so
//    starting at x[q] is the sum from 0). For the first corner of a label this is the label's value; a later corner
//    yields a partial sum <= it (non-negative terms, monotone rounding), which can neither exceed the running best
//    nor win a tie the label's first corner did not already win: the label with the largest fl16 score, ties to the
//    lowest label, starting from (0, `lowest`); 28 instead of 64 terms.
AUGMENTD_KERNEL_HD int TriangularVote035(const int* lab, const float* x1000, int lowest) {
  bool uniform = true;
  int first = INT32_MIN;
  AUGMENTD_VOTE_UNROLL
  for (int m = 0; m < 8; ++m) {
    if (lab[m] == INT32_MIN) continue;
    if (first == INT32_MIN) first = lab[m];
    uniform &= lab[m] == first;
  }
  if (uniform && first != INT32_MIN) {
    float v = 0.f;
    AUGMENTD_VOTE_UNROLL
    for (int m = 0; m < 8; ++m) v = VoteAdd(v, x1000[m]);
    return HalfRoundsPositive(v) ? first : lowest;
  }
  uint32_t best_h = 0;
  int best_l = lowest;
  AUGMENTD_VOTE_UNROLL
  for (int q = 0; q < 8; ++q) {
    if (lab[q] == INT32_MIN) continue;
    float v = x1000[q];
    AUGMENTD_VOTE_UNROLL
    for (int m = q + 1; m < 8; ++m) {
      if (lab[m] == lab[q]) v = VoteAdd(v, x1000[m]);
    }
    const uint32_t h = HalfRoundedBits(v);
    if (h > best_h || (h == best_h && lab[q] < best_l)) {
      best_h = h;
      best_l = lab[q];
    }
  }
  return best_l;
}

// The same labels as TriangularVote035 with fewer instructions where the in-bounds corners hold at most two labels
// (every voxel of a warp on one label boundary: the benchmark's 8³-block labels put one in most warps, and the
// triangular vote cost ≈ 181 instructions there, NOTES.md s4). A = the first in-bounds label in corner order, B = the
// first other one; each score is Σ over all 8 corners in corner order of (label matches ? x1000 : +0), which is the
// triangular vote's sum from the label's first corner (0 + x and s + 0 are exact for s, x >= +0), and the two updates
// of the triangular vote's running best in first-corner order (A's first corner precedes B's). One label: the uniform
// rule (B's sum is then over the out-of-bounds corners only, +0, and unused). Three or more labels: the triangular vote.
// Host test: spatial_math_test.cc (every corner pattern of up to 4 labels, random and tied weights).
AUGMENTD_KERNEL_HD int LabelVote035(const int* lab, const float* x1000, int lowest) {
  int first = INT32_MIN, second = INT32_MIN;
  bool more = false;
  AUGMENTD_VOTE_UNROLL
  for (int m = 0; m < 8; ++m) {
    const int l = lab[m];
    const bool in = l != INT32_MIN;
    const bool new_first = in && first == INT32_MIN;
    const bool other = in && !new_first && l != first;
    more |= other && second != INT32_MIN && l != second;
    if (other && second == INT32_MIN) second = l;
    if (new_first) first = l;
  }
  if (more) return TriangularVote035(lab, x1000, lowest);  // rare: a corner of three label regions
  float va = 0.f, vb = 0.f;
  AUGMENTD_VOTE_UNROLL
  for (int m = 0; m < 8; ++m) {
    va = VoteAdd(va, lab[m] == first ? x1000[m] : 0.f);
    vb = VoteAdd(vb, lab[m] == second ? x1000[m] : 0.f);
  }
  if (second == INT32_MIN) return (first != INT32_MIN && HalfRoundsPositive(va)) ? first : lowest;
  const uint32_t ha = HalfRoundedBits(va), hb = HalfRoundedBits(vb);
  uint32_t best_h = 0;
  int best_l = lowest;
  if (ha > best_h || (ha == best_h && first < best_l)) {
    best_h = ha;
    best_l = first;
  }
  if (hb > best_h || (hb == best_h && second < best_l)) best_l = second;
  return best_l;
}

// u / d rounded to nearest even, given rcp = RN(1/d) (the float division 1.f / d on the host): q = RN(u·rcp) is within
// one ulp of u/d, so r = u − d·q is exact in a fused multiply-add and RN(q + r·rcp) is the correctly rounded quotient
// (Markstein's theorem) while u, d and u/d are normal floats; with u = ±0 the result is +0 (the kernel only adds 1 to
// it). The spatial kernel divides grid coordinates |u| < 2^24 by S/2 in [0.5, 2048].
AUGMENTD_KERNEL_HD float DivByReciprocal(float u, float d, float rcp) {
#if defined(__CUDA_ARCH__)
  const float q = __fmul_rn(u, rcp);
  return __fmaf_rn(__fmaf_rn(-d, q, u), rcp, q);
#else
  const float q = u * rcp;
  return std::fma(std::fma(-d, q, u), rcp, q);
#endif
}

}  // namespace augmentd::cuda
