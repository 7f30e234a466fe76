// Host-only checks of sitk_math.h (the per-voxel resampling math the TorchIO / AugLab CUDA stages and the CPU
// transforms share): ITK's scanline index, inside rule and rounding, and the acq stage's gather form of torch's
// trilinear resize against kernels::LinearResize (the CPU transform's resize) bit for bit.
#include "augment/kernels/common/sitk_math.h"

#include <cmath>
#include <random>
#include <vector>

#include "augment/kernels/cpu_resample.h"
#include "gtest/gtest.h"

namespace augmentd::sitk_math {
namespace {

TEST(SitkMath, ScanlineIndexIsTheAffineUpToRounding) {
  std::mt19937 g(3);
  std::uniform_real_distribution<double> u(-2, 2);
  for (int rep = 0; rep < 20; ++rep) {
    double m[9], b[3];
    for (double& x : m) x = u(g);
    for (double& x : b) x = 5 * u(g);
    const int64_t n0 = 7;
    for (int64_t i = 0; i < n0; ++i)
      for (int64_t j = 0; j < 4; ++j)
        for (int64_t k = 0; k < 3; ++k) {
          double ci[3];
          LineIndex(m, b, i, j, k, n0, ci);
          for (int r = 0; r < 3; ++r) {
            const double want = m[r * 3] * i + m[r * 3 + 1] * j + m[r * 3 + 2] * k + b[r];
            EXPECT_NEAR(ci[r], want, 1e-12 * (1 + std::fabs(want)));
          }
        }
  }
  // Identity: the line's start (i = 0) is exact.
  const double id[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1}, zero[3] = {0, 0, 0};
  double ci[3];
  LineIndex(id, zero, 0, 2, 3, 5, ci);
  EXPECT_EQ(ci[0], 0.0);
  EXPECT_EQ(ci[1], 2.0);
  EXPECT_EQ(ci[2], 3.0);
}

TEST(SitkMath, InsideRuleRoundingAndTrilinear) {
  const int64_t s[3] = {2, 3, 4};
  std::vector<float> in(24);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) * 0.5f - 3.0f;
  const double at_lo[3] = {-0.5, 0, 0}, at_hi[3] = {1.5, 0, 0}, below[3] = {-0.5000001, 0, 0};
  EXPECT_TRUE(Inside(at_lo, s));
  EXPECT_FALSE(Inside(at_hi, s));
  EXPECT_FALSE(Inside(below, s));
  EXPECT_EQ(Sample(in.data(), s, at_hi, true, 9.0f), 9.0f);
  // RoundHalfIntegerUp: 0.5 → 1, −0.5 → 0 (clamped), 2.5 → 3
  const double half[3] = {0.5, -0.5, 2.5};
  EXPECT_EQ(NearestOffset(half, s), (1 * 3 + 0) * 4 + 3);
  // Linear: exact at voxel centres, the mean halfway (values are linear in the index).
  const double centre[3] = {1, 2, 3}, mid[3] = {0.5, 1.5, 2.5};
  EXPECT_EQ(Sample(in.data(), s, centre, true, 0.0f), in[(1 * 3 + 2) * 4 + 3]);
  const float want = 0.5f * (in[(0 * 3 + 1) * 4 + 2] + in[(1 * 3 + 2) * 4 + 3]);
  EXPECT_NEAR(Sample(in.data(), s, mid, true, 0.0f), want, 1e-6);
  // Border: the upper neighbour clamps into the image (ITK).
  const double edge[3] = {1.25, 0, 0};
  EXPECT_EQ(Sample(in.data(), s, edge, true, 0.0f), in[(1 * 3 + 0) * 4 + 0]);
}

TEST(SitkMath, TorchNearestIndexRules) {
  EXPECT_EQ(TorchNearestIndex(5, 9, 9), 5);
  EXPECT_EQ(TorchNearestIndex(7, 4, 8), 3);
  for (int64_t in = 1; in <= 9; ++in)
    for (int64_t out = 1; out <= 9; ++out)
      for (int64_t d = 0; d < out; ++d) {
        const int64_t v = TorchNearestIndex(d, in, out);
        EXPECT_GE(v, 0);
        EXPECT_LT(v, in);
      }
}

// The acq stage's gather (ComputeTaps + NestedTrilinear per output voxel) is kernels::LinearResize bit for bit.
TEST(SitkMath, NestedTrilinearGatherIsLinearResize) {
  std::mt19937 g(5);
  std::normal_distribution<float> n(0, 3);
  const int64_t is[3] = {5, 7, 6}, os[3] = {3, 9, 6};
  std::vector<float> in(static_cast<size_t>(is[0] * is[1] * is[2]));
  for (float& v : in) v = n(g);
  std::vector<float> want(static_cast<size_t>(os[0] * os[1] * os[2]));
  kernels::LinearResize(in.data(), is, want.data(), os, 3);
  const kernels::LinearTaps t[3] = {kernels::ComputeTaps(is[0], os[0]), kernels::ComputeTaps(is[1], os[1]),
                                    kernels::ComputeTaps(is[2], os[2])};
  for (int64_t a = 0; a < os[0]; ++a)
    for (int64_t b = 0; b < os[1]; ++b)
      for (int64_t c = 0; c < os[2]; ++c) {
        auto at = [&](int64_t x, int64_t y, int64_t z) { return in[static_cast<size_t>((x * is[1] + y) * is[2] + z)]; };
        const int64_t a0 = t[0].i0[a], a1 = t[0].i1[a], b0 = t[1].i0[b], b1 = t[1].i1[b], c0 = t[2].i0[c],
                      c1 = t[2].i1[c];
        const float v[8] = {at(a0, b0, c0), at(a0, b0, c1), at(a0, b1, c0), at(a0, b1, c1),
                            at(a1, b0, c0), at(a1, b0, c1), at(a1, b1, c0), at(a1, b1, c1)};
        const float wa[2] = {t[0].w0[a], t[0].w1[a]}, wb[2] = {t[1].w0[b], t[1].w1[b]},
                    wc[2] = {t[2].w0[c], t[2].w1[c]};
        EXPECT_EQ(NestedTrilinear(v, wa, wb, wc), want[static_cast<size_t>((a * os[1] + b) * os[2] + c)])
            << a << " " << b << " " << c;
      }
}

}  // namespace
}  // namespace augmentd::sitk_math
