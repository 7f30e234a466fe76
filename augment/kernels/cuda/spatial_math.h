// augment/kernels/cuda/spatial_math.h — exact arithmetic shortcuts of the spatial kernel (spatial.cu), host and device
// (host tests: spatial_math_test.cc):
//  * the float16 rounding of the label vote without conversion instructions: bgv2 compares the per-label scores after
//    `.half()`, so the kernel needs fl16(v) only to compare scores, and the integer form below costs a few integer
//    operations instead of two conversions (which issue at a quarter of the rate of float arithmetic);
//  * the IEEE quotient u / d by a per-launch constant d from its reciprocal: 3 instructions instead of the ~10 of a
//    division (reciprocal, refinement, range check and branch);
//  * the 0.3.5 label vote over the 8 corners (LabelVote035: one- and two-label paths before the triangular vote;
//    LabelVote035BranchFree: one path for both, from the corners' label range CornerLabelRange) and the one-label test
//    (InBoundsLabelRange); the s9 vote stays as TriangularVote035, the reference;
//  * grid_sample's 8 corners (CornersAt, NearestCorner) and bgv2 0.3.6's vote over them (PadFirstVote;
//    PadFirstVoteKeys, its packed-key form).
#pragma once

#include <cstdint>

#include "augment/kernels/cpu_half.h"

#include <cmath>

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace augmentd::cuda {

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

AUGMENTD_KERNEL_HD float VoteSub(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// The float32 bits of fl16(v) (round to nearest even) for 0 <= v < 65520 (scores are <= 1000): comparing two results
// as unsigned integers compares the rounded values (non-negative floats order like their bits). Normal halves
// (v >= 2^-14) keep the top 10 mantissa bits with ties to even. Below 2^-14 (half subnormals, and every zero score)
// fl16(v) is v rounded to a multiple of 2^-24: the exact conversion behind a branch, or with kBranchFree (the
// branch-free 0.3.5 vote, s18) RN(v + 0.5) − 0.5 selected without one — floats in [0.5, 1) are spaced 2^-24 and
// 0.5's last mantissa bit is even, so ties go to the even multiple, and subtracting 0.5 again is exact (Sterbenz).
// The branch was taken by every zero score (18 instructions a voxel of the 1-channel kernel, s18 profile).
template <bool kBranchFree = false>
AUGMENTD_KERNEL_HD uint32_t HalfRoundedBits(float v) {
  const uint32_t x = kernels::FloatBits(v);
  if constexpr (kBranchFree) {
    const uint32_t normal = (x + 0x0FFFu + ((x >> 13) & 1u)) & ~0x1FFFu;
    const uint32_t subnormal = kernels::FloatBits(VoteSub(VoteAdd(v, 0.5f), 0.5f));
    return x < 0x38800000u ? subnormal : normal;
  } else {
    if (x < 0x38800000u) {  // below 2^-14: half subnormals (exact conversion)
#if defined(__CUDA_ARCH__)
      return kernels::FloatBits(__half2float(__float2half_rn(v)));
#else
      return kernels::FloatBits(kernels::RoundToHalf(v));
#endif
    }
    return (x + 0x0FFFu + ((x >> 13) & 1u)) & ~0x1FFFu;
  }
}

// The vote rounds its scores to float16 with packed conversions on the device (HalfRoundedKeys), with HalfRoundedBits'
// integer rounding on the host (session 27: all-on B=2 C=1 −1.1 % alone, −5.8 % with the kernel's raw out-of-bounds
// labels). The GPU test augment_cuda_spatial_vote_test compares the device's labels with the host's.
#if defined(__CUDA_ARCH__)
inline constexpr bool kHalf2Keys = true;
#else
inline constexpr bool kHalf2Keys = false;
#endif

// fl16(a) and fl16(b) as order keys: comparing two keys as unsigned integers compares the rounded values. On the
// device, one cvt.rn.f16x2.f32 (round to nearest even, half subnormals kept: fl16 itself) and the keys are the halves'
// bits (non-negative halves order like their bits); on the host HalfRoundedBits of each, float bits.
// Keys compare only with keys of the same build of this function; the labels a vote picks with them are the same.
template <bool kBranchFree = false>
AUGMENTD_KERNEL_HD void HalfRoundedKeys(float a, float b, uint32_t& ka, uint32_t& kb) {
#if defined(__CUDA_ARCH__)  // kHalf2Keys
  const __half2_raw h = static_cast<__half2_raw>(__floats2half2_rn(a, b));  // x = fl16(a), y = fl16(b)
  ka = h.x;
  kb = h.y;
#else
  ka = HalfRoundedBits<kBranchFree>(a);
  kb = HalfRoundedBits<kBranchFree>(b);
#endif
}

// The triangular label vote over the 8 trilinear corners: `lab` is a corner's label (out of bounds: INT32_MIN,
// skipped; with kBranchFree, LabelVote035BranchFree's kVoteOutOfBounds, a zero-score candidate that never wins, and
// no skip), `x1000` the weight it gives its label (1000·w, +0 out of bounds; all >= +0), `lowest` the patch's lowest
// label. Corner q sums the corners m >= q of its label in corner order (0 + x is exact, so starting at x[q] is the
// sum from 0). For the first corner of a label this is the label's value; a later corner yields a partial sum <= it
// (non-negative terms, monotone rounding), which can neither exceed the running best nor win a tie the label's first
// corner did not already win: the result is the largest (fl16 score, then the lowest label) among (0, `lowest`) and
// every label's (fl16 of its corner-order sum, label) — a maximum under a total order, so it does not depend on the
// order in which the labels are visited. 28 instead of 64 terms.
template <bool kBranchFree = false>  // HalfRoundedBits' form, and the out-of-bounds label
AUGMENTD_KERNEL_HD int TriangularVoteCore(const int* lab, const float* x1000, int lowest) {
  uint32_t best_h = 0;
  int best_l = lowest;
  if constexpr (kBranchFree && kHalf2Keys) {  // corners in pairs, one packed rounding a pair, taken in corner order
    const auto sum_from = [&](int q) {  // corner q's label summed over corners q … 7
      float v = x1000[q];
      AUGMENTD_VOTE_UNROLL
      for (int m = q + 1; m < 8; ++m) {
        if (lab[m] == lab[q]) v = VoteAdd(v, x1000[m]);
      }
      return v;
    };
    const auto take = [&](uint32_t h, int l) {
      if (h > best_h || (h == best_h && l < best_l)) {
        best_h = h;
        best_l = l;
      }
    };
    AUGMENTD_VOTE_UNROLL
    for (int q = 0; q < 8; q += 2) {
      uint32_t h0, h1;
      HalfRoundedKeys<true>(sum_from(q), sum_from(q + 1), h0, h1);
      take(h0, lab[q]);
      take(h1, lab[q + 1]);
    }
  } else {
    AUGMENTD_VOTE_UNROLL
    for (int q = 0; q < 8; ++q) {
      if (!kBranchFree && lab[q] == INT32_MIN) continue;
      float v = x1000[q];
      AUGMENTD_VOTE_UNROLL
      for (int m = q + 1; m < 8; ++m) {
        if (lab[m] == lab[q]) v = VoteAdd(v, x1000[m]);
      }
      const uint32_t h = HalfRoundedBits<kBranchFree>(v);
      if (h > best_h || (h == best_h && lab[q] < best_l)) {
        best_h = h;
        best_l = lab[q];
      }
    }
  }
  return best_l;
}

// bgv2 0.3.5's vote of the fused spatial kernel (spatial.cu) as it was computed up to session 9, kept as the reference
// of LabelVote035 (host test): one label among the in-bounds corners: that label when fl16(Σ x1000) > 0, else
// `lowest`; otherwise the triangular vote.
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
  return TriangularVoteCore(lab, x1000, lowest);
}

// The smallest and largest in-bounds corner label (lab[m] == INT32_MIN: out of bounds); lo = INT32_MAX, hi = INT32_MIN
// when no corner is in bounds, so `lo == hi` is "one label among the in-bounds corners" (the vote's fast path).
AUGMENTD_KERNEL_HD void InBoundsLabelRange(const int* lab, int& lo, int& hi) {
  lo = INT32_MAX;
  hi = INT32_MIN;
  AUGMENTD_VOTE_UNROLL
  for (int m = 0; m < 8; ++m) {
    const int l = lab[m];
    const int l_lo = l == INT32_MIN ? INT32_MAX : l;
    lo = l_lo < lo ? l_lo : lo;
    hi = l > hi ? l : hi;
  }
}

// A two-label voxel's scores, summed from +0 over all 8 corners in corner order: va of lo's corners
// (a = lab == lo ? x1000 : +0), vb of the others' (x1000 − a: exact, x − x = +0 and x − 0 = x; out-of-bounds corners
// give +0), which is each label's triangular-vote sum from its first corner (0 + x and s + 0 are exact for s, x >= +0).
AUGMENTD_KERNEL_HD void TwoLabelSums(const int* lab, const float* x1000, int lo, float& va, float& vb) {
  va = 0.f;
  vb = 0.f;
  AUGMENTD_VOTE_UNROLL
  for (int m = 0; m < 8; ++m) {
    const float a = lab[m] == lo ? x1000[m] : 0.f;
    va = VoteAdd(va, a);
    vb = VoteAdd(vb, VoteSub(x1000[m], a));
  }
}

// The labels of TriangularVote035 with fewer instructions (the kernel's 0.3.5 vote since session 10; since session 19
// that of the multi-channel and permuted 0.3.5 builds; the 1-channel ones, split or not, run LabelVote035BranchFree):
//  * the one-label test as the smallest and largest in-bounds label (15 min/max and 8 selects; the s9 loop with its
//    `first` and `uniform` state compiled to ≈ 70 instructions of predicate packing at the 64-register cap);
//  * two labels lo < hi (a voxel on one label boundary): each score is the corner-order sum over all 8 corners of
//    (label matches ? x1000 : +0) — lo's terms a = (lab == lo ? x : +0), hi's x − a (exact: x − x = +0, x − 0 = x; the
//    out-of-bounds corners give +0) — which is the triangular vote's sum from the label's first corner (0 + x and s + 0
//    are exact for s, x >= +0), then the largest of (0, lowest), (fl16(lo's), lo), (fl16(hi's), hi) as in
//    TriangularVoteCore (order-free); ≈ 60 instead of ≈ 180 instructions;
//  * three or more labels (a corner of three label regions): TriangularVoteCore.
// Host test: spatial_math_test.cc (every corner pattern of up to 4 labels, random and tied weights).
AUGMENTD_KERNEL_HD int LabelVote035(const int* lab, const float* x1000, int lowest) {
  int lo, hi;
  InBoundsLabelRange(lab, lo, hi);
  if (lo >= hi) {  // one label (lo == hi) or none in bounds (lo = INT32_MAX > hi = INT32_MIN)
    float v = 0.f;
    AUGMENTD_VOTE_UNROLL
    for (int m = 0; m < 8; ++m) v = VoteAdd(v, x1000[m]);
    return (lo == hi && HalfRoundsPositive(v)) ? lo : lowest;
  }
  bool two = true;
  AUGMENTD_VOTE_UNROLL
  for (int m = 0; m < 8; ++m) two &= lab[m] == INT32_MIN || lab[m] == lo || lab[m] == hi;
  if (!two) return TriangularVoteCore(lab, x1000, lowest);
  float va, vb;
  TwoLabelSums(lab, x1000, lo, va, vb);
  // (0, lowest) against lo, then the winner against hi. hi never wins a tie: the winner so far is lo < hi, or
  // `lowest` with fl16(lo's) = 0 and lo >= lowest, so hi > lowest.
  const uint32_t ha = HalfRoundedBits(va), hb = HalfRoundedBits(vb);
  const bool lo_wins = ha > 0u || lo < lowest;
  const uint32_t best_h = lo_wins ? ha : 0u;
  return hb > best_h ? hi : (lo_wins ? lo : lowest);
}

// The label an out-of-bounds corner carries into LabelVote035BranchFree (its x1000 is +0): above every int16 label.
// Its candidate (0, kVoteOutOfBounds) never wins: with no in-bounds corner the one-label rule returns `lowest`, and
// otherwise an in-bounds label (score >= 0, label <= 32767) outranks it in the vote's order (score, then lower label).
inline constexpr int kVoteOutOfBounds = 32768;

// Corner labels as LabelVote035 takes them (INT32_MIN out of bounds) into those of LabelVote035BranchFree
// (kVoteOutOfBounds out of bounds): the tests give both votes the same corners.
AUGMENTD_KERNEL_HD void BranchFreeVoteLabels(const int* lab, int* out) {
  AUGMENTD_VOTE_UNROLL
  for (int m = 0; m < 8; ++m) out[m] = lab[m] == INT32_MIN ? kVoteOutOfBounds : lab[m];
}

// The smallest and largest of the 8 corner labels (LabelVote035BranchFree's first step; the kernel's kUniformVote
// test reads lo == hi before the rest of the vote).
AUGMENTD_KERNEL_HD void CornerLabelRange(const int* lab, int& lo, int& hi) {
  lo = lab[0];
  hi = lab[0];
  AUGMENTD_VOTE_UNROLL
  for (int m = 1; m < 8; ++m) {
    lo = lab[m] < lo ? lab[m] : lo;
    hi = lab[m] > hi ? lab[m] : hi;
  }
}

// LabelVote035's labels in one branch-free path for one or two labels (s18; the vote of the fused kernel's 1-channel
// 0.3.5 builds, the split ones since s19, not permuted). `lab`: the corner labels, kVoteOutOfBounds (not INT32_MIN)
// out of bounds (BranchFreeVoteLabels maps one to the other); then, for x1000 finite and >= +0 (+0 out of bounds),
//   LabelVote035BranchFree(lab, x1000, lowest) == LabelVote035(lab with INT32_MIN for kVoteOutOfBounds, x1000, lowest).
//  * lo, hi: the smallest and largest corner label (14 min/max, without InBoundsLabelRange's per-corner select);
//  * every corner lo or hi: lo's and hi's scores as in LabelVote035's two-label path (the out-of-bounds corners add
//    +0). One label among the in-bounds corners (lo == hi, or hi the sentinel; none in bounds: both the sentinel, lo's
//    sum +0): lo when fl16(lo's) > 0, else lowest — LabelVote035's one-label path. Two: the largest of (0, lowest),
//    (fl16(lo's), lo), (fl16(hi's), hi). LabelVote035 branches into a one-label and a two-label path, and on a label
//    boundary nearly every warp takes both (s18 profile of the 1-channel kernel: 269 of 679 instructions a voxel were
//    the labels and the vote; this form: 631 in all, −2.4 % all-on B=2 C=1);
//  * three or more labels (a corner of three label regions, or two and out-of-bounds corners): TriangularVoteCore,
//    where the sentinel's (0, kVoteOutOfBounds) candidates never win.
// Raw labels: the out-of-bounds corners (x1000 = +0) may carry any labels instead of the sentinel, and the result is
// the same, when every corner label is >= lowest or some in-bounds label's fl16 score is positive: a zero-score
// candidate then never outranks the winner, and +0 terms leave every sum as it was (the kernel's
// kRawOutLabels). Not otherwise: an in-bounds label below `lowest` alone with score 0 gives `lowest` (the
// one-label rule), beside another label it wins the zero-score tie. Host test: spatial_math_test.cc (every corner
// pattern of up to 4 labels and out of bounds, random and tied weights; raw labels under the contract, and cases
// outside it that differ). This form takes lo and hi from CornerLabelRange(lab, lo, hi); the 3-argument one below
// computes them.
AUGMENTD_KERNEL_HD int LabelVote035BranchFree(const int* lab, const float* x1000, int lowest, int lo, int hi) {
  bool two = true;
  AUGMENTD_VOTE_UNROLL
  for (int m = 0; m < 8; ++m) two &= lab[m] == lo || lab[m] == hi;
  if (!two) return TriangularVoteCore<true>(lab, x1000, lowest);
  float va, vb;
  TwoLabelSums(lab, x1000, lo, va, vb);
  uint32_t ha, hb;
  HalfRoundedKeys<true>(va, vb, ha, hb);
  const bool one = hi == lo || hi == kVoteOutOfBounds;
  const bool lo_wins = ha > 0u || (!one && lo < lowest);
  const bool hi_wins = !one && hb > (lo_wins ? ha : 0u);  // as in LabelVote035: hi never wins a tie
  return hi_wins ? hi : (lo_wins ? lo : lowest);
}

AUGMENTD_KERNEL_HD int LabelVote035BranchFree(const int* lab, const float* x1000, int lowest) {
  int lo, hi;
  CornerLabelRange(lab, lo, hi);
  return LabelVote035BranchFree(lab, x1000, lowest, lo, hi);
}

// RN(a·b) without contraction on either side (the corner weights).
AUGMENTD_KERNEL_HD float VoteMul(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

// v clamped into [0, hi].
AUGMENTD_KERNEL_HD int ClampIndex(int v, int hi) {
#if defined(__CUDA_ARCH__)
  return min(max(v, 0), hi);
#else
  return v < 0 ? 0 : (v > hi ? hi : v);
#endif
}

// grid_sample's 8 corners at ix (array axes 0, 1, 2 = its z, y, x), corner m = (m >> 2 & 1, m >> 1 & 1, m & 1) along
// (z, y, x), for the spatial kernel (spatial.cu) and the host test that compares its vote with the CPU engine's
// (spatial_math_test.cc). Per axis: the two corner indices clamped into the volume (always loadable), whether each is
// in bounds, and its weight zeroed when it is not. A corner's weight (wx·wy)·wz is then its grid_sample weight when it
// is in bounds and 0 otherwise, so the image sum over all 8 corners in corner order equals the sum over the in-bounds
// corners (adding ±0 to the running sum, which starts at +0, is exact for finite inputs) without a predicate per
// corner; the vote sees out-of-bounds corners with the label at their clamped offset (the branch-free 0.3.5 vote,
// kRawOutLabels in SpatialKernel) or as INT32_MIN, a label no int16 label is.
struct TrilinearCorners {
  float fx, fy, fz;          // floor(ix[2]), floor(ix[1]), floor(ix[0])
  bool vx[2], vy[2], vz[2];  // corner index in bounds, per axis
  float w[8];
  int off[8];  // < 2^31: RunPipeline rejects larger inputs
};

AUGMENTD_KERNEL_HD TrilinearCorners CornersAt(const float ix[3], const int S[3]) {
  TrilinearCorners c;
  c.fz = floorf(ix[0]);
  c.fy = floorf(ix[1]);
  c.fx = floorf(ix[2]);
  const int z0 = static_cast<int>(c.fz), y0 = static_cast<int>(c.fy), x0 = static_cast<int>(c.fx);
  c.vx[0] = static_cast<unsigned>(x0) < static_cast<unsigned>(S[2]);
  c.vx[1] = static_cast<unsigned>(x0 + 1) < static_cast<unsigned>(S[2]);
  c.vy[0] = static_cast<unsigned>(y0) < static_cast<unsigned>(S[1]);
  c.vy[1] = static_cast<unsigned>(y0 + 1) < static_cast<unsigned>(S[1]);
  c.vz[0] = static_cast<unsigned>(z0) < static_cast<unsigned>(S[0]);
  c.vz[1] = static_cast<unsigned>(z0 + 1) < static_cast<unsigned>(S[0]);
  const float wx[2] = {c.vx[0] ? VoteSub(VoteAdd(c.fx, 1.f), ix[2]) : 0.f, c.vx[1] ? VoteSub(ix[2], c.fx) : 0.f};
  const float wy[2] = {c.vy[0] ? VoteSub(VoteAdd(c.fy, 1.f), ix[1]) : 0.f, c.vy[1] ? VoteSub(ix[1], c.fy) : 0.f};
  const float wz[2] = {c.vz[0] ? VoteSub(VoteAdd(c.fz, 1.f), ix[0]) : 0.f, c.vz[1] ? VoteSub(ix[0], c.fz) : 0.f};
  const int cx[2] = {ClampIndex(x0, S[2] - 1), ClampIndex(x0 + 1, S[2] - 1)};
  const int cy[2] = {ClampIndex(y0, S[1] - 1), ClampIndex(y0 + 1, S[1] - 1)};
  const int cz[2] = {ClampIndex(z0, S[0] - 1), ClampIndex(z0 + 1, S[0] - 1)};
  AUGMENTD_VOTE_UNROLL
  for (int m = 0; m < 8; ++m) {
    const int mx = m & 1, my = (m >> 1) & 1, mz = (m >> 2) & 1;
    c.w[m] = VoteMul(VoteMul(wx[mx], wy[my]), wz[mz]);
    c.off[m] = (cz[mz] * S[1] + cy[my]) * S[2] + cx[mx];
  }
  return c;
}

// bgv2 0.3.6's nearest neighbour of ix among its corners (tiebreak 1): the corner index m of CornersAt.
AUGMENTD_KERNEL_HD int NearestCorner(const float ix[3], const TrilinearCorners& c) {
  return (rintf(ix[2]) != c.fx ? 1 : 0) | (rintf(ix[1]) != c.fy ? 2 : 0) | (rintf(ix[0]) != c.fz ? 4 : 0);
}

// Whether corner m of c is in bounds on every axis, and whether all 8 are.
AUGMENTD_KERNEL_HD bool CornerInBounds(const TrilinearCorners& c, int m) {
  return c.vx[m & 1] && c.vy[(m >> 1) & 1] && c.vz[(m >> 2) & 1];
}

AUGMENTD_KERNEL_HD bool AllCornersInBounds(const TrilinearCorners& c) {
  return c.vx[0] && c.vx[1] && c.vy[0] && c.vy[1] && c.vz[0] && c.vz[1];
}

// Whether the 8 corner labels are one label (kDeferVote's fast test on the raw, clamped labels).
AUGMENTD_KERNEL_HD bool OneLabel(const int* lab) {
  bool one = true;
  AUGMENTD_VOTE_UNROLL
  for (int m = 1; m < 8; ++m) one = one && lab[m] == lab[0];
  return one;
}

// The 0.3.6 vote where one label is among the in-bounds corners (and, with pad votes, every corner is in bounds):
// that label if its corner-order sum rounds to a positive half, else `lowest`; PadFirstVote's arithmetic
// (out-of-bounds corners add an exact +0).
AUGMENTD_KERNEL_HD int SoleLabelVote(const float* x1000, int label, int lowest) {
  float v = 0.f;
  AUGMENTD_VOTE_UNROLL
  for (int m = 0; m < 8; ++m) v = VoteAdd(v, x1000[m]);
  return HalfRoundsPositive(v) ? label : lowest;
}

// Whether no corner of c is in bounds: some axis has neither of its two corner indices inside.
AUGMENTD_KERNEL_HD bool NoCornerInBounds(const TrilinearCorners& c) {
  return !(c.vx[0] || c.vx[1]) || !(c.vy[0] || c.vy[1]) || !(c.vz[0] || c.vz[1]);
}

// bgv2 0.3.6's vote (PadFirstVote's label) in one branch-free path, where that is cheap to know; returns whether it
// decided, and then sets `label`. The kernel's inline 0.3.6 vote since session 35 (kFewVote in spatial.cu); it queues
// the undecided voxels for PadFirstVote. Inputs as the kernel has them:
//  * `raw`: the 8 corner labels loaded at the clamped offsets. Where every axis has an in-bounds corner index, clamping
//    moves each out-of-bounds corner onto an in-bounds one, so the raw labels are the in-bounds corners' labels; where
//    some axis has none (`none_in`), they may be any labels;
//  * `x1000`: 1000·weight, +0 out of bounds (so an out-of-bounds corner adds +0 to every sum, as in PadFirstVote);
//  * `pad_decide`: whether to decide one or two labels with pad votes. Correct with any corners out of bounds (session
//    36); the kernel passes true (session 37), or `all_in` (every corner in bounds) with -DAUGMENTD_PF_FEW_OOB=0.
// Decided:
//  * pad votes with no corner in bounds: the padding label (it scores 1000 − 0; no other label has a corner);
//  * the corners hold one or two labels lo <= hi, and pad votes are off or `pad_decide`. A label's score is its
//    corner-order sum (TwoLabelSums: the triangular sum from its first corner). With pad votes the padding label scores
//    1000 − Σ of the other labels' corners, clamped at 0: where it is lo or hi that Σ is the other one's sum
//    (PadFirstVote's `others`), else Σ of all 8, and then Σ must round to at least 999, so that the padding label's
//    score is below the larger of lo's and hi's (else undecided: only with corners out of bounds). Any bound above
//    ≈ 667 is exact (host tests pass at 700 and fail at 660); 700 decides more voxels but was not faster (H100, session
//    37: +0.4 % on the 0.3.6 rows). The larger rounded score wins. A tie at a positive score goes to lo under
//    tiebreak 0, to hi under 2, and is undecided under 1 (the nearest neighbour's label). No positive score gives
//    `lowest` without pad votes and is undecided with them (it cannot happen there: the padding label, or the test on
//    Σ, has a score).
// Host test: spatial_math_test.cc (equal to PadFirstVote wherever it decides, on random corner sets and on the lattice
// against the CPU engine); device: spatial_vote_test.cc.
AUGMENTD_KERNEL_HD bool FewLabelVote036(const int* raw, const float* x1000, int pad, bool votes, bool pad_decide,
                                        bool none_in, int tiebreak, int lowest, int& label) {
  int lo, hi;
  CornerLabelRange(raw, lo, hi);
  bool two = true;
  float va = 0.f, vb = 0.f;  // lo's and hi's sums (TwoLabelSums)
  AUGMENTD_VOTE_UNROLL
  for (int m = 0; m < 8; ++m) {
    two = two && (raw[m] == lo || raw[m] == hi);
    const float a = raw[m] == lo ? x1000[m] : 0.f;
    va = VoteAdd(va, a);
    vb = VoteAdd(vb, VoteSub(x1000[m], a));
  }
  const bool pad_lo = votes && lo == pad, pad_hi = votes && hi == pad && hi != lo;
  const float s_lo = pad_lo ? fmaxf(VoteAdd(-vb, 1000.f), 0.f) : va;
  const float s_hi = pad_hi ? fmaxf(VoteAdd(-va, 1000.f), 0.f) : vb;
  uint32_t k_lo, k_hi;
  HalfRoundedKeys(s_lo, s_hi, k_lo, k_hi);
  const uint32_t top = k_lo > k_hi ? k_lo : k_hi;
  const bool tie = k_lo == k_hi;
  const bool pad_below = !votes || pad_lo || pad_hi || VoteAdd(va, vb) >= 999.f;
  const bool decided = two && (!votes || pad_decide) && pad_below && (top != 0u ? !(tie && tiebreak == 1) : !votes);
  const bool pad_alone = votes && none_in;
  label = pad_alone ? pad : (top == 0u ? lowest : ((k_lo > k_hi || (tie && tiebreak != 2)) ? lo : hi));
  return pad_alone || decided;
}

// bgv2 0.3.6's vote over the 8 corners (cpu_spatial.cc DecideLabelPadFirst, without its two-label shortcut: that
// differs only where fp16(score) is within an ulp of 500): `lab` (INT32_MIN out of bounds), `x1000` (1000·weight,
// +0 out of bounds), `nn_m` the nearest corner. With `votes` the padding label scores 1000 − Σ of the other labels'
// corners (bgv2 samples (ind − 1)·1000 and adds 1000); ties go to the lowest / highest label or (tiebreak 1) to the
// nearest neighbour's label when it is among the tied; no positive score gives `lowest` under every tiebreak (until
// session 34 a tie at 0 gave tiebreaks 1 and 2 a label: spatial_math_test.cc). Same triangular sums as the 0.3.5 vote.
AUGMENTD_KERNEL_HD int PadFirstVote(const int* lab, const float* x1000, int nn_m, int pad, bool votes, int tiebreak,
                                    int lowest) {
  uint32_t best_h = 0;
  int best_l = lowest;
  if (votes) {
    float others = 0.f;
    AUGMENTD_VOTE_UNROLL
    for (int m = 0; m < 8; ++m) {
      if (lab[m] != pad) others = VoteAdd(others, x1000[m]);
    }
    best_h = HalfRoundedBits(fmaxf(VoteAdd(-others, 1000.f), 0.f));
    best_l = pad;
  }
  bool tied = false;
  AUGMENTD_VOTE_UNROLL
  for (int q = 0; q < 8; ++q) {
    if (lab[q] == INT32_MIN || (votes && lab[q] == pad)) continue;
    float v = x1000[q];
    AUGMENTD_VOTE_UNROLL
    for (int m = q + 1; m < 8; ++m) {
      if (lab[m] == lab[q]) v = VoteAdd(v, x1000[m]);
    }
    const uint32_t h = HalfRoundedBits(v);
    if (h > best_h) {
      best_h = h;
      best_l = lab[q];
      tied = false;
    } else if (h == best_h && h != 0u && lab[q] != best_l) {  // a tie at 0 is no vote: `lowest` (the CPU: top > 0)
      tied = true;
      if (tiebreak == 2 ? lab[q] > best_l : lab[q] < best_l) best_l = lab[q];
    }
  }
  if (tiebreak == 1 && tied) {  // rare: only voxels with a shared top score pay for the nearest neighbour's score
    int nn = pad;  // selected without a dynamic index (that would put `lab` in local memory)
    AUGMENTD_VOTE_UNROLL
    for (int m = 0; m < 8; ++m) {
      if (m == nn_m && lab[m] != INT32_MIN) nn = lab[m];
    }
    float s = 0.f;
    if (votes && nn == pad) {
      float others = 0.f;
      AUGMENTD_VOTE_UNROLL
      for (int m = 0; m < 8; ++m) {
        if (lab[m] != pad) others = VoteAdd(others, x1000[m]);
      }
      s = fmaxf(VoteAdd(-others, 1000.f), 0.f);
    } else {
      AUGMENTD_VOTE_UNROLL
      for (int m = 0; m < 8; ++m) {
        if (lab[m] == nn) s = VoteAdd(s, x1000[m]);
      }
    }
    if (HalfRoundedBits(s) == best_h) best_l = nn;
  }
  return best_l;
}

// PadFirstVote's label with its scores rounded two at a time (HalfRoundedKeys: one cvt.rn.f16x2.f32 on the device,
// no branch for the subnormal ones) and no branch per corner: every corner's triangular sum is formed, and a corner
// that is no candidate (out of bounds, or the padding label with pad votes) is masked out of the comparisons. Keys
// order and tie as the rounded scores do, so the label is PadFirstVote's (spatial_math_test.cc on the host, where the
// keys are HalfRoundedBits; spatial_vote_test.cc on the device). The kernel runs it with the bench switch
// AUGMENTD_PF_PACKED_KEYS (spatial.cu; written in session 34, timed in session 35 and not kept).
AUGMENTD_KERNEL_HD int PadFirstVoteKeys(const int* lab, const float* x1000, int nn_m, int pad, bool votes, int tiebreak,
                                        int lowest) {
  float others = 0.f;
  AUGMENTD_VOTE_UNROLL
  for (int m = 0; m < 8; ++m) {
    if (lab[m] != pad) others = VoteAdd(others, x1000[m]);
  }
  const float pad_score = fmaxf(VoteAdd(-others, 1000.f), 0.f);
  float v[8];
  AUGMENTD_VOTE_UNROLL
  for (int q = 0; q < 8; ++q) {
    v[q] = x1000[q];
    AUGMENTD_VOTE_UNROLL
    for (int m = q + 1; m < 8; ++m) {
      if (lab[m] == lab[q]) v[q] = VoteAdd(v[q], x1000[m]);
    }
  }
  uint32_t key[8], pad_key, unused;
  AUGMENTD_VOTE_UNROLL
  for (int q = 0; q < 8; q += 2) HalfRoundedKeys(v[q], v[q + 1], key[q], key[q + 1]);
  HalfRoundedKeys(pad_score, 0.f, pad_key, unused);
  uint32_t best_h = votes ? pad_key : 0u;
  int best_l = votes ? pad : lowest;
  bool tied = false;
  AUGMENTD_VOTE_UNROLL
  for (int q = 0; q < 8; ++q) {
    const bool candidate = lab[q] != INT32_MIN && !(votes && lab[q] == pad);
    const uint32_t h = key[q];
    if (candidate && h > best_h) {
      best_h = h;
      best_l = lab[q];
      tied = false;
    } else if (candidate && h == best_h && h != 0u && lab[q] != best_l) {
      tied = true;
      if (tiebreak == 2 ? lab[q] > best_l : lab[q] < best_l) best_l = lab[q];
    }
  }
  if (tiebreak == 1 && tied) {
    int nn = pad;
    AUGMENTD_VOTE_UNROLL
    for (int m = 0; m < 8; ++m) {
      if (m == nn_m && lab[m] != INT32_MIN) nn = lab[m];
    }
    float s = 0.f;
    if (votes && nn == pad) {
      s = pad_score;
    } else {
      AUGMENTD_VOTE_UNROLL
      for (int m = 0; m < 8; ++m) {
        if (lab[m] == nn) s = VoteAdd(s, x1000[m]);
      }
    }
    uint32_t ks, ks_unused;
    HalfRoundedKeys(s, s, ks, ks_unused);
    if (ks == best_h) best_l = nn;
  }
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

// The integer quotient n / d for 0 <= n < 2^23 and d >= 1, given rcp = RN(1/d) (1.f / d on the host, __frcp_rn on the
// device): RN(RN(n)·rcp) is within a relative 2^-23 + 2^-48 of n/d (two roundings of 2^-24), an absolute error below
// 1, so its truncation is within one of the quotient and one correction makes it exact. The spatial kernel's brick row
// and the split build's sample (spatial.cu) without a 32-bit division.
AUGMENTD_KERNEL_HD int DivSmall(int n, int d, float rcp) {
#if defined(__CUDA_ARCH__)
  int q = __float2int_rz(__fmul_rn(__int2float_rn(n), rcp));
#else
  int q = static_cast<int>(static_cast<float>(n) * rcp);
#endif
  const int r = n - q * d;
  return q + (r >= d ? 1 : 0) - (r < 0 ? 1 : 0);
}

}  // namespace augmentd::cuda
