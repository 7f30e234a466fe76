// Host tests of the spatial kernel's arithmetic shortcuts (spatial_math.h): the integer float16 rounding (both forms)
// against the reference conversion (kernels/cpu_half.h) at every tie point and its neighbours in [2^-26, 1024], random
// scores and the order property; the division by a reciprocal against IEEE division for every divisor S/2 of the
// kernel; the 0.3.5 votes; bgv2 0.3.6's vote (PadFirstVote) on hand-built corners.
#include "augment/kernels/cuda/spatial_math.h"
#include "augment/kernels/cuda/vote036_cases.h"

#include "augment/kernels/cpu_spatial.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <random>
#include <vector>

#include "gtest/gtest.h"

namespace augmentd::cuda {
namespace {

uint32_t Reference(float v) { return kernels::FloatBits(kernels::RoundToHalf(v)); }

TEST(SpatialMath, HalfRoundedBitsMatchesConversionAtTiesAndNeighbours) {
  // Half values h and the midpoints between neighbours, over every binade used by the vote, +-2 ulps of float.
  int checked = 0;
  for (int e = -26; e <= 10; ++e) {
    for (int m = 0; m < 1024; m += (e < -10 ? 1 : 7)) {
      const float h = std::ldexp(1.f + m / 1024.f, e);
      const float mid = std::ldexp(1.f + (m + 0.5f) / 1024.f, e);
      for (float c : {h, mid}) {
        float v = c;
        for (int k = 0; k < 2; ++k) v = std::nextafter(v, 0.f);
        for (int k = 0; k < 5; ++k, v = std::nextafter(v, INFINITY)) {
          ASSERT_EQ(HalfRoundedBits(v), Reference(v)) << "v = " << v;
          ASSERT_EQ(HalfRoundedBits<true>(v), Reference(v)) << "v = " << v << " (branch-free)";
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 50000);
  EXPECT_EQ(HalfRoundedBits(0.f), 0u);
  EXPECT_EQ(HalfRoundedBits<true>(0.f), 0u);
}

TEST(SpatialMath, HalfRoundedBitsRandomScoresAndOrder) {
  std::mt19937_64 g(std::random_device{}());
  std::uniform_real_distribution<float> u(0.f, 1000.f);
  std::uniform_int_distribution<uint32_t> bits(0u, 0x447A0000u);  // every float in [0, 1000]
  for (int i = 0; i < 200000; ++i) {
    const float a = i % 2 ? u(g) : kernels::BitsToFloat(bits(g));
    const float b = u(g);
    ASSERT_EQ(HalfRoundedBits(a), Reference(a)) << a;
    ASSERT_EQ(HalfRoundedBits<true>(a), Reference(a)) << a << " (branch-free)";
    // Comparing the bits compares the rounded values.
    ASSERT_EQ(HalfRoundedBits(a) > HalfRoundedBits(b), kernels::RoundToHalf(a) > kernels::RoundToHalf(b));
  }
}

TEST(SpatialMath, HalfRoundsPositiveAtTheSmallestSubnormal) {
  const float tie = std::ldexp(1.f, -25);
  EXPECT_FALSE(HalfRoundsPositive(0.f));
  EXPECT_FALSE(HalfRoundsPositive(tie));
  EXPECT_TRUE(HalfRoundsPositive(std::nextafter(tie, 1.f)));
  std::mt19937_64 g(std::random_device{}());
  std::uniform_int_distribution<uint32_t> bits(0u, 0x447A0000u);
  for (int i = 0; i < 100000; ++i) {
    const float v = kernels::BitsToFloat(bits(g));
    ASSERT_EQ(HalfRoundsPositive(v), kernels::RoundToHalf(v) > 0.f) << v;
  }
}

TEST(SpatialMath, DivSmallIsTheIntegerQuotient) {
  // Every n below 2^16 (d <= 64; below 2^10 for larger d) and, further up to 2^23 − 1, random n and the neighbours
  // of random multiples of d. The first wrong quotient of each d is reported (not every one of them).
  std::mt19937_64 g(52);  // a fixed seed: the same cases on every machine
  std::uniform_int_distribution<int> big(0, (1 << 23) - 1);
  int64_t checked = 0;
  for (int d = 1; d <= 4096; d += (d < 300 ? 1 : 37)) {
    const volatile float rcp = 1.f / static_cast<float>(d);
    int wrong = -1;  // the first n whose quotient is wrong
    const auto check = [&](int n) {
      if (n < 0 || n >= (1 << 23) || wrong >= 0) return;
      if (DivSmall(n, d, rcp) != n / d) wrong = n;
      ++checked;
    };
    const int dense = d <= 64 ? 1 << 16 : 1 << 10;
    for (int n = 0; n < dense; ++n) check(n);
    for (int i = 0; i < 2000; ++i) {
      const int n = big(g), k = n / d;
      check(n);
      check(k * d - 1);
      check(k * d);
      check(k * d + d - 1);
    }
    ASSERT_EQ(wrong, -1) << wrong << " / " << d << ": " << DivSmall(wrong, d, rcp) << ", not " << wrong / d;
  }
  EXPECT_GT(checked, 6000000);
  EXPECT_EQ(DivSmall((1 << 23) - 1, 1, 1.f), (1 << 23) - 1);
}

TEST(SpatialMath, DivByReciprocalIsTheIeeeQuotient) {
  // Compiled without FMA contraction of `u / d`; std::fma is exact by definition.
  std::mt19937_64 g(std::random_device{}());
  std::uniform_real_distribution<float> mag(-24.f, 24.f);
  std::uniform_int_distribution<uint32_t> mant(0u, 0x7FFFFFu);
  int64_t checked = 0;
  for (int S = 1; S <= 4096; S += (S < 600 ? 1 : 7)) {
    const volatile float d = static_cast<float>(S) * 0.5f;
    const volatile float rcp = 1.f / d;
    for (int i = 0; i < 400; ++i) {
      // Random sign, exponent in [2^-24, 2^24], random mantissa; plus integers and half-integers (grid points).
      float u = std::ldexp(1.f + mant(g) * 0x1p-23f, static_cast<int>(mag(g)));
      if (i % 4 == 1) u = static_cast<float>(static_cast<int>(mant(g) % 8192) - 4096) * 0.5f;
      if (i % 2) u = -u;
      const volatile float expect = u / d;
      const float got = DivByReciprocal(u, d, rcp);
      if (expect == 0.f) {
        ASSERT_EQ(got, 0.f) << u << " / " << d;  // -0 / d gives +0 (documented; the kernel adds 1 to it)
      } else {
        ASSERT_EQ(kernels::FloatBits(got), kernels::FloatBits(expect)) << u << " / " << d;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 300000);
  EXPECT_EQ(DivByReciprocal(0.f, 3.f, 1.f / 3.f), 0.f);
}

// Independent reference of the 0.3.5 vote: per label (in first-corner order) its score summed from 0 in corner order,
// rounded by the reference conversion; the largest score wins, ties to the lowest label, starting from (0, lowest);
// one label among the in-bounds corners: that label when fl16(Σ x1000) > 0.
int ReferenceVote(const int* lab, const float* x1000, int lowest) {
  int labels[8], n = 0;
  for (int m = 0; m < 8; ++m) {
    if (lab[m] == INT32_MIN) continue;
    bool seen = false;
    for (int i = 0; i < n; ++i) seen |= labels[i] == lab[m];
    if (!seen) labels[n++] = lab[m];
  }
  if (n == 1) {
    float v = 0.f;
    for (int m = 0; m < 8; ++m) v += x1000[m];
    return kernels::RoundToHalf(v) > 0.f ? labels[0] : lowest;
  }
  float best = 0.f;
  int best_l = lowest;
  for (int i = 0; i < n; ++i) {
    float v = 0.f;
    for (int m = 0; m < 8; ++m) {
      if (lab[m] == labels[i]) v += x1000[m];
    }
    const float h = kernels::RoundToHalf(v);
    if (h > best || (h == best && labels[i] < best_l)) {
      best = h;
      best_l = labels[i];
    }
  }
  return best_l;
}

// The corner patterns of the vote tests: two label sets (index 0: out of bounds), small labels, some below the patch's
// lowest label, and the int16 extremes beside the branch-free vote's sentinel 32768, with lowest labels up to
// INT32_MAX.
constexpr int kLabelSets[2][5] = {{INT32_MIN, 2, 0, 5, -1}, {INT32_MIN, 32767, -32768, 0, 32766}};
constexpr int kLowestSets[2][3] = {{0, -1, 3}, {-32768, 32767, INT32_MAX}};

// 1000·(trilinear weight) of each corner (+0 out of bounds) for weight set `set` of `pattern`: random fractions, equal
// weights (ties between labels of equal corner counts), fractions near 0 and 1 (zero and half-subnormal scores, the
// fl16(v) > 0 threshold), one-axis-degenerate weights. Products in the kernel's order.
void CornerScores(const int* lab, int pattern, int set, std::mt19937_64& g, float* x1000) {
  std::uniform_real_distribution<float> frac(0.f, 1.f);
  float f[3];
  for (int d = 0; d < 3; ++d) {
    switch (set) {
      case 0: f[d] = frac(g); break;
      case 1: f[d] = 0.5f; break;
      case 2: f[d] = (pattern + d) % 2 ? 3e-7f * frac(g) : 1.f - 6e-8f * static_cast<float>(d + 1); break;
      default: f[d] = d == pattern % 3 ? 0.f : frac(g); break;
    }
  }
  for (int m = 0; m < 8; ++m) {
    const float wx = (m & 1) ? f[2] : 1.f - f[2], wy = (m & 2) ? f[1] : 1.f - f[1], wz = (m & 4) ? f[0] : 1.f - f[0];
    const volatile float w = (wx * wy) * wz;  // the kernel's product order
    x1000[m] = lab[m] == INT32_MIN ? 0.f : 1000.f * w;
  }
}

TEST(SpatialMath, LabelVote035BothFormsEqualTheTriangularVoteOnEveryCornerPattern) {
  // Every assignment of {out of bounds, 4 labels} to the 8 corners (5^8 patterns), each under trilinear weights from
  // random fractions, equal weights (ties between labels of equal corner counts), fractions near 0 and 1 (zero and
  // half-subnormal scores, the fl16(v) > 0 threshold) and one-axis-degenerate weights; the labels include some below
  // the patch's lowest label.
  std::mt19937_64 g(std::random_device{}());
  int64_t checked = 0, two_label = 0, two_label_equal_w = 0;
  for (int pattern = 0; pattern < 2 * 390625; ++pattern) {
    const int* label_of = kLabelSets[pattern / 390625];
    const int* lowest_of = kLowestSets[pattern / 390625];
    int lab[8];
    for (int m = 0, p = pattern; m < 8; ++m, p /= 5) lab[m] = label_of[p % 5];
    const int lowest = lowest_of[pattern % 3];
    {
      // The one-label test of LabelVote035 and the 0.3.6 vote (InBoundsLabelRange) against the s9 kernel's loop.
      bool uniform = true;
      int first = INT32_MIN;
      for (int m = 0; m < 8; ++m) {
        if (lab[m] == INT32_MIN) continue;
        if (first == INT32_MIN) first = lab[m];
        uniform &= lab[m] == first;
      }
      int lo, hi;
      InBoundsLabelRange(lab, lo, hi);
      ASSERT_EQ(lo == hi, uniform && first != INT32_MIN) << "pattern " << pattern;
      if (lo == hi) {
        ASSERT_EQ(lo, first) << "pattern " << pattern;
      }
    }
    for (int set = 0; set < 4; ++set) {
      float x1000[8];
      CornerScores(lab, pattern, set, g, x1000);
      const int want = TriangularVote035(lab, x1000, lowest);
      ASSERT_EQ(ReferenceVote(lab, x1000, lowest), want) << "pattern " << pattern << " set " << set;
      ASSERT_EQ(LabelVote035(lab, x1000, lowest), want) << "pattern " << pattern << " set " << set;
      int lab_sentinel[8];  // LabelVote035BranchFree's out-of-bounds label
      BranchFreeVoteLabels(lab, lab_sentinel);
      ASSERT_EQ(LabelVote035BranchFree(lab_sentinel, x1000, lowest), want) << "pattern " << pattern << " set " << set;
      int distinct = 0;
      for (int i = 1; i < 5; ++i) {
        bool any = false;
        for (int m = 0; m < 8; ++m) any |= lab[m] == label_of[i];
        distinct += any;
      }
      two_label += distinct == 2;
      two_label_equal_w += distinct == 2 && set == 1;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2 * 4 * 390625);
  EXPECT_GT(two_label, 10000);
  EXPECT_GT(two_label_equal_w, 1000);
}

// Whether some in-bounds label (INT32_MIN: out of bounds) scores above 0 after the reference float16 rounding.
bool AnyPositiveScore(const int* lab, const float* x1000) {
  for (int q = 0; q < 8; ++q) {
    if (lab[q] == INT32_MIN) continue;
    float v = 0.f;
    for (int m = 0; m < 8; ++m) {
      if (lab[m] == lab[q]) v += x1000[m];
    }
    if (kernels::RoundToHalf(v) > 0.f) return true;
  }
  return false;
}

TEST(SpatialMath, BranchFreeVoteWithRawLabelsOutOfBoundsUnderItsContract) {
  // LabelVote035BranchFree's raw-label contract (the kernel's kRawOutLabels): every pattern with an
  // out-of-bounds corner, those corners given one label of the set each (all the same, and a mix), under the weights of
  // the test above. Inside the contract (every corner label >= lowest, or a positive in-bounds score) the vote is the
  // triangular one's; outside it some votes differ, which is why the kernel holds the contract (spatial.cu).
  std::mt19937_64 g(20261204);  // fixed: the counts below are the same every run
  int64_t inside = 0, outside = 0, outside_differ = 0, raw_below_lowest_inside = 0;
  for (int pattern = 0; pattern < 2 * 390625; ++pattern) {
    const int* label_of = kLabelSets[pattern / 390625];
    int lab[8];
    bool any_out = false;
    for (int m = 0, p = pattern; m < 8; ++m, p /= 5) {
      lab[m] = label_of[p % 5];
      any_out |= lab[m] == INT32_MIN;
    }
    if (!any_out) continue;
    const int lowest = kLowestSets[pattern / 390625][pattern % 3];
    for (int set = 0; set < 4; ++set) {
      float x1000[8];
      CornerScores(lab, pattern, set, g, x1000);
      const int want = TriangularVote035(lab, x1000, lowest);
      const bool positive = AnyPositiveScore(lab, x1000);
      for (int choice = 0; choice < 5; ++choice) {  // 0-3: every out-of-bounds corner takes label 1 + choice; 4: a mix
        int raw[8];
        bool below_lowest = false;
        for (int m = 0; m < 8; ++m) {
          raw[m] = lab[m] != INT32_MIN ? lab[m] : label_of[1 + (choice < 4 ? choice : (m + pattern) % 4)];
          below_lowest |= raw[m] < lowest;
        }
        const int got = LabelVote035BranchFree(raw, x1000, lowest);
        if (!below_lowest || positive) {
          ASSERT_EQ(got, want) << "pattern " << pattern << " set " << set << " choice " << choice;
          ++inside;
          raw_below_lowest_inside += below_lowest;
        } else {
          ++outside;
          outside_differ += got != want;
        }
      }
    }
  }
  EXPECT_GT(inside, 10000000);
  EXPECT_GT(raw_below_lowest_inside, 100000);  // the "positive score" half of the contract is exercised
  EXPECT_GT(outside, 1000);
  EXPECT_GT(outside_differ, 100);  // the contract is needed: a zero-score raw label below `lowest` can win
}

TEST(SpatialMath, EveryVoxelTheMinusOneFillKeepsHasAnInBoundsCornerOfWeightAtLeastOneEighth) {
  // The kernel side of the raw-label contract with the −1 border (spatial.cu, kRawOutLabels): a voxel whose
  // normalised coordinate n lies within [lo, hi] on every axis (not filled with −1) has, per axis, an in-bounds corner
  // of 1-D weight >= 0.5: so never all 8 corners out of bounds, and its heaviest corner weighs >= 1/8 (a label scores
  // >= 125). The kernel's float arithmetic: lo/hi from the other axis' size (bgv2's swapped thresholds, LaunchSpatial),
  // ix = ((n + 1)·S − 1)/2. Fails if the thresholds widen by half a voxel.
  const int sizes[] = {1, 2, 3, 7, 64, 128, 205, 2047, 2048};
  int64_t checked = 0;
  std::mt19937_64 g(20261204);
  for (int S : sizes) {
    for (int other : sizes) {
      const float lo = static_cast<float>(-1.0 + 1.0 / other), hi = static_cast<float>(1.0 - 1.0 / other);
      const float sf = static_cast<float>(S);
      std::vector<float> ns;
      float a = lo, b = hi;
      for (int k = 0; k < 64; ++k, a = std::nextafter(a, 1.f), b = std::nextafter(b, -1.f)) {
        ns.push_back(a);
        ns.push_back(b);
      }
      std::uniform_real_distribution<float> in(lo, hi);
      for (int k = 0; k < 2000; ++k) ns.push_back(in(g));
      for (float n : ns) {
        if (n < lo || n > hi) continue;
        const volatile float t1 = n + 1.f;
        const volatile float t2 = t1 * sf;
        const volatile float t3 = t2 - 1.f;
        const float ix = t3 * 0.5f;
        const float fx = std::floor(ix);
        const int x0 = static_cast<int>(fx);
        const volatile float w0 = (fx + 1.f) - ix;
        const volatile float w1 = ix - fx;
        const float best = std::max(x0 >= 0 && x0 < S ? static_cast<float>(w0) : 0.f,
                                    x0 + 1 >= 0 && x0 + 1 < S ? static_cast<float>(w1) : 0.f);
        ASSERT_GE(best, 0.5f) << "S " << S << " other " << other << " n " << n << " ix " << ix;
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 150000);
}

// bgv2 0.3.6's vote (PadFirstVote) on hand-built corners, each expectation the CPU engine's rule (cpu_spatial.cc
// DecideLabelPadFirst): scores are the corner-order sums per label rounded to float16, the padding label with pad votes
// scores 1000 − Σ of the other labels' corners, ties go by the tiebreak (0 lowest, 1 nearest neighbour, 2 highest), and
// no positive score gives the patch's lowest label.
constexpr int kOut = INT32_MIN;  // an out-of-bounds corner (weight +0)

TEST(SpatialMath, PadFirstVoteWithNoPositiveScoreIsTheLowestLabelUnderEveryTiebreak) {
  // Two labels among the in-bounds corners, all of weight 0 (a coordinate on the input's face, ix = −1 along an
  // axis), or so small that their sums round to half 0; no pad votes. The CPU returns `lowest` (`!(top > 0)`); a tie
  // at 0 must not hand the voxel to the highest label or the nearest neighbour's. (The pipeline does not produce
  // this: pad votes are off only where every coordinate is inside the input, MayReachOutsideAffine. The function's
  // contract is the CPU rule on its whole domain.)
  const int lab[8] = {3, 5, kOut, kOut, 3, 5, kOut, kOut};
  for (const float w : {0.f, 1e-8f}) {
    const float x1000[8] = {w, w, 0.f, 0.f, w, w, 0.f, 0.f};
    for (int tiebreak = 0; tiebreak < 3; ++tiebreak) {
      for (int nn_m = 0; nn_m < 8; ++nn_m) {
        EXPECT_EQ(PadFirstVote(lab, x1000, nn_m, 0, false, tiebreak, 1), 1)
            << "weight " << w << " tiebreak " << tiebreak << " nearest corner " << nn_m;
      }
    }
  }
}

TEST(SpatialMath, PadFirstVoteTiesGoByTheTiebreak) {
  const int lab[8] = {3, 5, 3, 5, kOut, kOut, kOut, kOut};
  const float tie[8] = {250.f, 250.f, 250.f, 250.f, 0.f, 0.f, 0.f, 0.f};  // 3 and 5 both score 500
  EXPECT_EQ(PadFirstVote(lab, tie, 0, 0, false, 0, 0), 3);
  EXPECT_EQ(PadFirstVote(lab, tie, 0, 0, false, 2, 0), 5);
  EXPECT_EQ(PadFirstVote(lab, tie, 1, 0, false, 1, 0), 5);  // the nearest corner holds 5, which is among the tied
  EXPECT_EQ(PadFirstVote(lab, tie, 2, 0, false, 1, 0), 3);
  EXPECT_EQ(PadFirstVote(lab, tie, 4, 0, false, 1, 0), 3);  // nearest out of bounds: the pad label, not tied: lowest
  const float three[8] = {400.f, 100.f, 200.f, 300.f, 0.f, 0.f, 0.f, 0.f};  // 3: 600, 5: 400
  for (int tiebreak = 0; tiebreak < 3; ++tiebreak) EXPECT_EQ(PadFirstVote(lab, three, 1, 0, false, tiebreak, 0), 3);
}

TEST(SpatialMath, PadFirstVotePadLabelScoresWhatTheOtherLabelsLeave) {
  {
    const int lab[8] = {0, 4, 4, kOut, kOut, kOut, kOut, kOut};
    const float x1000[8] = {300.f, 300.f, 400.f, 0.f, 0.f, 0.f, 0.f, 0.f};  // 4: 700, the pad label 0: 300
    EXPECT_EQ(PadFirstVote(lab, x1000, 0, 0, true, 0, 0), 4);
  }
  {
    const int lab[8] = {4, kOut, kOut, kOut, kOut, kOut, kOut, kOut};
    const float x1000[8] = {300.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};  // the out-of-bounds mass votes for the pad
    EXPECT_EQ(PadFirstVote(lab, x1000, 0, 0, true, 0, 0), 0);
    EXPECT_EQ(PadFirstVote(lab, x1000, 0, -1, true, 0, 0), -1);  // the −1 border
    EXPECT_EQ(PadFirstVote(lab, x1000, 0, 0, false, 0, 0), 4);   // without pad votes, only corners vote
  }
  {
    const int lab[8] = {4, 4, kOut, kOut, kOut, kOut, kOut, kOut};
    const float x1000[8] = {250.f, 250.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};  // 4 and the pad label 0 both 500
    EXPECT_EQ(PadFirstVote(lab, x1000, 0, 0, true, 0, 0), 0);
    EXPECT_EQ(PadFirstVote(lab, x1000, 0, 0, true, 2, 0), 4);
    EXPECT_EQ(PadFirstVote(lab, x1000, 0, 0, true, 1, 0), 4);  // the nearest corner holds 4
    EXPECT_EQ(PadFirstVote(lab, x1000, 2, 0, true, 1, 0), 0);  // nearest out of bounds: the pad label, tied: it wins
  }
}

TEST(SpatialMath, PadFirstVoteKeysIsPadFirstVoteOnRandomCorners) {
  std::mt19937 rng(36);
  int differ = 0;
  for (int i = 0; i < 2000000; ++i) {
    const Vote036Case c = RandomVote036Case(rng);
    const int want = PadFirstVote(c.lab, c.x1000, c.nn_m, c.pad, c.votes, c.tiebreak, c.lowest);
    const int got = PadFirstVoteKeys(c.lab, c.x1000, c.nn_m, c.pad, c.votes, c.tiebreak, c.lowest);
    if (got != want && ++differ <= 5) ADD_FAILURE() << "case " << i << ": " << got << " != " << want;
  }
  EXPECT_EQ(differ, 0);
}

// FewLabelVote036 decides PadFirstVote's label wherever it decides, and decides what it documents: pad votes with no
// corner in bounds, and one or two labels (with pad votes where `pad_decide`: each case is run with `all_in`, the
// kernel's form under -DAUGMENTD_PF_FEW_OOB=0, and with true, its default), but for a tie under tiebreak 1 and, with
// pad votes, a padding label outside the two whose score 1000 − RN(Σ) may exceed 1. The counts keep the test from
// passing on a vote that never decides.
TEST(SpatialMath, FewLabelVote036IsPadFirstVoteWhereItDecides) {
  std::mt19937 rng(35);
  int differ = 0, missed = 0;
  int64_t decided = 0, two_label = 0, partly_out = 0;
  constexpr int kCases = 2000000;
  for (int i = 0; i < kCases; ++i) {
    const Vote036Case c = RandomVote036Case(rng);
    const int want = PadFirstVote(c.lab, c.x1000, c.nn_m, c.pad, c.votes, c.tiebreak, c.lowest);
    for (const bool pad_decide : {c.all_in, true}) {
      int got = INT32_MIN;
      if (!FewLabelVote036(c.raw, c.x1000, c.pad, c.votes, pad_decide, c.none_in, c.tiebreak, c.lowest, got)) {
        // Undecided: expected only outside the documented domain, or at its documented exceptions.
        int lo = c.raw[0], hi = c.raw[0];
        for (const int l : c.raw) {
          lo = std::min(lo, l);
          hi = std::max(hi, l);
        }
        bool two = true;
        for (const int l : c.raw) two = two && (l == lo || l == hi);
        if (two && !c.none_in && (!c.votes || pad_decide)) {
          float s[2] = {0.f, 0.f};  // the two labels' scores as PadFirstVote forms them
          for (int m = 0; m < 8; ++m) s[c.raw[m] == lo ? 0 : 1] = VoteAdd(s[c.raw[m] == lo ? 0 : 1], c.x1000[m]);
          const bool pad_in = c.votes && (lo == c.pad || hi == c.pad);
          const bool pad_may_win = c.votes && !pad_in && !(VoteAdd(s[0], s[1]) >= 999.f);
          if (pad_in) {
            const int p = lo == c.pad ? 0 : 1;
            s[p] = std::fmax(VoteAdd(-s[1 - p], 1000.f), 0.f);
          }
          const uint32_t k0 = HalfRoundedBits(s[0]), k1 = HalfRoundedBits(s[1]);
          const bool excused = (k0 == k1 && k0 != 0u && c.tiebreak == 1) || pad_may_win;
          if (!excused && ++missed <= 5) ADD_FAILURE() << "case " << i << " pad_decide " << pad_decide << ": undecided";
        }
        continue;
      }
      if (c.votes && !pad_decide && !c.none_in && ++differ <= 5) {
        ADD_FAILURE() << "case " << i << ": decided with pad votes, some corners out of bounds and !pad_decide";
      }
      ++decided;
      two_label += c.raw[0] != c.raw[7];
      partly_out += c.votes && !c.all_in && !c.none_in;  // pad_decide true only
      if (got != want && ++differ <= 5) {
        ADD_FAILURE() << "case " << i << " pad_decide " << pad_decide << ": " << got << " != " << want;
      }
    }
  }
  EXPECT_EQ(differ, 0);
  EXPECT_EQ(missed, 0);
  // The generator draws from up to 6 labels: about 1.5 % of its cases are one or two labels (decided twice).
  EXPECT_GT(decided, kCases / 100);
  EXPECT_GT(two_label, decided / 4) << two_label << " of " << decided;
  EXPECT_GT(partly_out, decided / 20) << partly_out << " of " << decided;
}

// The padding label as the higher of two (a seg with −1 beside the 0 padding), with pad votes and weights that need not
// sum to 1000, so that its score 1000 − lo's sum and its own corners' sum round apart near 500: FewLabelVote036 must
// score it as PadFirstVote does. Odd cases put a quarter of the corners out of bounds, as the kernel has them (weight
// +0, the raw label an in-bounds corner's), with pad_decide true (the kernel's default).
TEST(SpatialMath, FewLabelVote036ScoresThePaddingLabelAsTheHigherOfTwo) {
  std::mt19937 rng(3506);
  std::uniform_int_distribution<int> coin(0, 1), tb(0, 2), quarter(0, 3);
  std::uniform_real_distribution<float> w(100.f, 150.f);
  int differ = 0;
  int64_t decided = 0, decided_out = 0;
  for (int i = 0; i < 200000; ++i) {
    int lab[8], raw[8];
    float x1000[8];
    for (int m = 0; m < 8; ++m) {
      lab[m] = coin(rng) ? 0 : -1;
      x1000[m] = w(rng);
      raw[m] = lab[m];
    }
    bool out = false;
    if (i & 1) {
      for (int m = 1; m < 8; ++m) {  // corner 0 stays in bounds
        if (quarter(rng) != 0) continue;
        lab[m] = INT32_MIN;
        x1000[m] = 0.f;
        raw[m] = raw[0];
        out = true;
      }
    }
    const int tiebreak = tb(rng);
    const int want = PadFirstVote(lab, x1000, 0, 0, true, tiebreak, -1);
    int got;
    if (!FewLabelVote036(raw, x1000, 0, true, true, false, tiebreak, -1, got)) continue;
    ++decided;
    decided_out += out;
    if (got != want && ++differ <= 5) ADD_FAILURE() << "case " << i << ": " << got << " != " << want;
  }
  EXPECT_EQ(differ, 0);
  EXPECT_GT(decided, 190000);
  EXPECT_GT(decided_out, 80000);
}

// The label the spatial kernel's 0.3.6 builds give a voxel at ix (kDeferVote's builds: the raw-label fast check, else
// the vote the queue's flush runs), from the same helpers (spatial_math.h).
int KernelLabel036(const float ix[3], const int S[3], const int16_t* seg, int pad, bool votes, int tiebreak,
                   int lowest, bool packed, bool few_oob) {
  const TrilinearCorners c = CornersAt(ix, S);
  int raw[8], lab[8];
  float x1000[8];
  for (int m = 0; m < 8; ++m) {
    raw[m] = seg[c.off[m]];
    lab[m] = CornerInBounds(c, m) ? raw[m] : INT32_MIN;
    x1000[m] = VoteMul(1000.f, c.w[m]);
  }
  int few;
  if (FewLabelVote036(raw, x1000, pad, votes, few_oob || AllCornersInBounds(c), NoCornerInBounds(c), tiebreak, lowest,
                      few)) {
    return few;
  }
  const int nn_m = NearestCorner(ix, c);
  return packed ? PadFirstVoteKeys(lab, x1000, nn_m, pad, votes, tiebreak, lowest)
                : PadFirstVote(lab, x1000, nn_m, pad, votes, tiebreak, lowest);
}

// The kernel's 0.3.6 label against the CPU engine's (kernels::SampleLabels, pad_first) at every point of a
// quarter-voxel lattice from two voxels outside the input to two beyond it: faces, corners, half-way points and exact
// ties, pad votes on and off (off outside the input too: the function's whole domain), both padding labels, every
// tiebreak. The sizes are powers of two, so every coordinate, weight and score is exact in float whatever the compiler
// contracts: the same verdict on every machine. Four labels, so the CPU's two-label shortcut (which the kernel leaves
// out) is not taken.
TEST(SpatialMath, KernelVote036EqualsTheCpuEngineOnAQuarterVoxelLattice) {
  const int S[3] = {4, 8, 4};
  const int n_in = S[0] * S[1] * S[2];
  std::vector<int16_t> seg(n_in);
  std::mt19937 rng(2026);
  std::uniform_int_distribution<int> label(0, 3);
  for (int i = 0; i < n_in; ++i) seg[i] = static_cast<int16_t>(i < 4 ? i : label(rng));
  std::vector<float> ixs[3];
  for (int d = 0; d < 3; ++d) {
    for (int q = -8; q <= 4 * (S[d] + 1); ++q) ixs[d].push_back(static_cast<float>(q) / 4.f);
  }
  const int64_t n_out = static_cast<int64_t>(ixs[0].size() * ixs[1].size() * ixs[2].size());
  kernels::GridSpec g;
  g.ndim = 3;
  for (int d = 0; d < 3; ++d) g.in_shape[d] = S[d];
  g.out_shape[0] = n_out;
  std::vector<float> grid, ix_of;  // normalised coordinates n = (2·ix + 1) / S − 1, exact; and the kernel's ix of n
  for (const float z : ixs[0]) {
    for (const float y : ixs[1]) {
      for (const float x : ixs[2]) {
        const float v[3] = {z, y, x};
        for (int d = 0; d < 3; ++d) {
          const float n = (2.f * v[d] + 1.f) / static_cast<float>(S[d]) - 1.f;
          grid.push_back(n);
          ix_of.push_back(VoteMul(VoteSub(VoteMul(VoteAdd(n, 1.f), static_cast<float>(S[d])), 1.f), 0.5f));
          ASSERT_EQ(ix_of.back(), v[d]);  // the lattice survives the round trip
        }
      }
    }
  }
  std::vector<int16_t> cpu(n_out);
  int64_t compared = 0, differ = 0;
  for (const int pad : {0, -1}) {
    for (const bool votes : {false, true}) {
      for (int tiebreak = 0; tiebreak < 3; ++tiebreak) {
        kernels::LabelSampleOptions opt;
        opt.mode = kernels::InterpMode::kLinear;
        opt.pad_first = true;
        opt.pad_label = static_cast<int16_t>(pad);
        opt.pad_votes = votes;
        opt.tiebreak = static_cast<kernels::SegTiebreak>(tiebreak);  // kLowest, kNearest, kHighest
        const bool pad_is_new = votes && pad == -1;                 // the padding label joins the label set
        kernels::SampleLabels(g, seg.data(), grid.data(), static_cast<int16_t>(pad_is_new ? -1 : 0),
                              pad_is_new ? 5 : 4, opt, cpu.data());
        const int kernel_tiebreak = tiebreak == 0 ? 0 : (tiebreak == 1 ? 1 : 2);
        for (int64_t v = 0; v < n_out; ++v) {
          for (const bool packed : {false, true}) {
            for (const bool few_oob : {false, true}) {  // -DAUGMENTD_PF_FEW_OOB=0 and 1
              const int got =
                  KernelLabel036(&ix_of[3 * v], S, seg.data(), pad, votes, kernel_tiebreak, 0, packed, few_oob);
              ++compared;
              if (got != cpu[v] && ++differ <= 5) {
                ADD_FAILURE() << "ix (" << ix_of[3 * v] << ", " << ix_of[3 * v + 1] << ", " << ix_of[3 * v + 2]
                              << ") pad " << pad << " votes " << votes << " tiebreak " << tiebreak << " packed "
                              << packed << " few_oob " << few_oob << ": kernel " << got << ", CPU " << cpu[v];
              }
            }
          }
        }
      }
    }
  }
  EXPECT_EQ(differ, 0) << "of " << compared;
}

// The spatial kernel's warp-wide fast path (kUniformVote in spatial.cu, the branch-free 0.3.5 vote): where the 8 raw
// corner labels are one label L (CornerLabelRange's lo == hi), SoleLabelVote(x1000, L, lowest) is
// LabelVote035BranchFree's label and the triangular vote's, on every out-of-bounds pattern of the corners, each weight
// set of the 0.3.5 tests, the labels and lowest labels of kLabelSets / kLowestSets, and scores at the float16
// threshold 2^-25 and the floats beside it. The counts keep the test from passing on cases that all go one way. (The
// kernel's call site, which labels and scores it passes, is checked by the GPU tests against the CPU engine.)
TEST(SpatialMath, UniformWarpVoteIsTheFullVoteOnOneLabel) {
  std::mt19937_64 g(20261206);
  int64_t checked = 0, took_label = 0, took_lowest = 0;
  for (int set_of_labels = 0; set_of_labels < 2; ++set_of_labels) {
    for (int li = 1; li < 5; ++li) {
      const int L = kLabelSets[set_of_labels][li];
      for (int out_mask = 0; out_mask < 256; ++out_mask) {
        int lab[8], raw[8];
        for (int m = 0; m < 8; ++m) {
          lab[m] = (out_mask >> m) & 1 ? INT32_MIN : L;
          raw[m] = L;  // the clamped offsets' labels: L wherever the 8 raw labels are one label
        }
        int lo, hi;
        CornerLabelRange(raw, lo, hi);
        ASSERT_TRUE(lo == L && hi == L && OneLabel(raw));
        for (const int lowest : kLowestSets[set_of_labels]) {
          for (int set = 0; set < 4; ++set) {
            float x1000[8];
            CornerScores(lab, out_mask + li, set, g, x1000);
            const int got = SoleLabelVote(x1000, lo, lowest);
            ASSERT_EQ(got, LabelVote035BranchFree(raw, x1000, lowest, lo, hi))
                << "label " << L << " out " << out_mask << " lowest " << lowest << " set " << set;
            ASSERT_EQ(got, TriangularVote035(lab, x1000, lowest))
                << "label " << L << " out " << out_mask << " lowest " << lowest << " set " << set;
            took_label += got == L && L != lowest;
            took_lowest += got == lowest && L != lowest;
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_EQ(checked, 2 * 4 * 256 * 3 * 4);
  EXPECT_GT(took_label, checked / 4);
  EXPECT_GT(took_lowest, 500);  // every corner out of bounds, or scores that round to half 0
  // One in-bounds corner whose score is at the threshold (fl16(2^-25) = 0: ties to even) or a float beside it.
  const float t = std::ldexp(1.f, -25);
  for (const float v : {std::nextafter(t, 0.f), t, std::nextafter(t, 1.f), 0.f, 1000.f}) {
    const int one_in[8] = {4, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN};
    const int raw4[8] = {4, 4, 4, 4, 4, 4, 4, 4};
    const float x1000[8] = {v, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f, 0.f};
    const int want = v > t ? 4 : 1;
    EXPECT_EQ(SoleLabelVote(x1000, 4, 1), want) << v;
    EXPECT_EQ(LabelVote035BranchFree(raw4, x1000, 1, 4, 4), want) << v;
    EXPECT_EQ(TriangularVote035(one_in, x1000, 1), want) << v;
  }
  // Two labels: lo != hi, and the 5-argument form is the vote's.
  const int two[8] = {3, 5, 3, 3, 5, 5, 3, 5};
  const float x1000[8] = {100.f, 200.f, 50.f, 50.f, 200.f, 100.f, 200.f, 100.f};
  int lo, hi;
  CornerLabelRange(two, lo, hi);
  EXPECT_EQ(lo, 3);
  EXPECT_EQ(hi, 5);
  EXPECT_EQ(LabelVote035BranchFree(two, x1000, 0, lo, hi), 5);  // 5: 600, 3: 400
}

}  // namespace
}  // namespace augmentd::cuda
