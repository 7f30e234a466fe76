#include "augment/transforms/brightness_gradient_additive/brightness_gradient_additive.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {
using transforms_internal::LocalGaussianKernel;
using transforms_internal::LocalScalar;

BrightnessGradientAdditiveConfig Da5() {
  BrightnessGradientAdditiveConfig c;
  c.scale = LocalScalar::AxisSizeLogUniform(6, 1);
  c.loc = LocalScalar::Uniform(-0.5, 1.5);
  c.max_strength = LocalScalar::Mixture({{0.5, -5, -1}, {0.5, 1, 5}});
  c.mean_centered = false;
  c.same_for_all_channels = false;
  c.p_per_channel = 0.5;
  return c;
}

// The draw's max|K| test without the volume equals the volume's max (random bumps, 2D and 3D, degenerate ones:
// a loc far outside with a tiny scale makes every factor 0).
TEST(LocalKernel, MaxWithoutTheVolumeEqualsTheVolumesMax) {
  std::mt19937 gen(17);
  std::uniform_real_distribution<double> u(0, 1);
  int degenerate = 0;
  for (int it = 0; it < 300; ++it) {
    const size_t nd = it % 3 == 0 ? 2 : 3;
    std::vector<int64_t> shape;
    std::vector<double> loc, scale;
    for (size_t d = 0; d < nd; ++d) {
      shape.push_back(1 + static_cast<int64_t>(u(gen) * 40));
      loc.push_back((u(gen) * 3 - 1) * shape.back() + (it % 7 == 0 ? 1e3 : 0));
      scale.push_back(it % 7 == 0 ? 1e-3 : 0.5 + u(gen) * shape.back());
    }
    int64_t n = 1;
    for (int64_t v : shape) n *= v;
    std::vector<float> k(static_cast<size_t>(n));
    LocalGaussianKernel(shape, loc, scale, k.data());
    const float want = *std::max_element(k.begin(), k.end());
    degenerate += want == 0.0f;
    EXPECT_EQ(transforms_internal::LocalGaussianKernelMax(shape, loc, scale), want) << it;
  }
  EXPECT_GT(degenerate, 0);  // the degenerate branch was exercised
}

// The draw's shortcut (two voxels of different value prove the 1) ties where cancellation in a far tail zeroes
// the factors it looks at while others stay non-zero: a loc far below axis 0 (every cdf near 1). There the whole
// factors decide, and must still give the volume's max. The test's own copy of the two voxels' indices counts the
// ties, so that the path is known to run.
TEST(LocalKernel, MaxWhereTheTwoVoxelsTieButTheKernelIsNotFlat) {
  std::mt19937 gen(23);
  std::uniform_real_distribution<double> u(0, 1);
  int ties = 0;
  for (int it = 0; it < 500; ++it) {
    const std::vector<int64_t> shape = {2 + static_cast<int64_t>(u(gen) * 28), 2 + static_cast<int64_t>(u(gen) * 28)};
    const std::vector<double> loc = {-250 + 100 * u(gen), u(gen) * static_cast<double>(shape[1])};
    const std::vector<double> scale = {20 + 10 * u(gen), 0.5 + u(gen) * static_cast<double>(shape[1])};
    std::vector<float> k(static_cast<size_t>(shape[0] * shape[1]));
    LocalGaussianKernel(shape, loc, scale, k.data());
    const float want = *std::max_element(k.begin(), k.end());
    EXPECT_EQ(transforms_internal::LocalGaussianKernelMax(shape, loc, scale), want) << it;
    float near = 1.0f, far = 1.0f;
    for (size_t d = 0; d < 2; ++d) {
      const std::vector<float> f = transforms_internal::LocalGaussianAxis(shape[d], loc[d], scale[d]);
      const int64_t last = shape[d] - 1;
      const int64_t c = std::clamp<int64_t>(static_cast<int64_t>(std::floor(loc[d] + 0.5)), 0, last);
      const int64_t o = std::fabs(loc[d]) > std::fabs(static_cast<double>(last) - loc[d]) ? 0 : last;
      near = d == 0 ? f[c] : near * f[c];
      far = d == 0 ? f[o] : far * f[o];
    }
    ties += near == far && want == 1.0f;
  }
  EXPECT_GT(ties, 0);  // the whole factors decided a non-flat kernel
}

TEST(LocalKernel, IsSeparableBumpNormalisedToUnitRange) {
  std::vector<float> k(6 * 7 * 8);
  LocalGaussianKernel({6, 7, 8}, {2.5, 1.0, 9.0}, {2.0, 3.0, 4.0}, k.data());
  const auto [mn, mx] = std::minmax_element(k.begin(), k.end());
  EXPECT_EQ(*mn, 0.0f);
  EXPECT_EQ(*mx, 1.0f);
  EXPECT_EQ(std::max_element(k.begin(), k.end()) - k.begin(), (2 * 7 + 1) * 8 + 7);  // peak nearest the loc
}

TEST(BrightnessGradientAdditive, AddsStrengthTimesBumpAndReplaysFromKernelParams) {
  auto t = BrightnessGradientAdditiveTransform::Create(Da5());
  ASSERT_TRUE(t.ok());
  SampleData s = testing::RandomSample(2, {9, 10, 11});
  const std::vector<float> x = s.image;
  auto p = testing::DrawFor(**t, s.layout(), 4, 1);
  auto& bp = static_cast<BrightnessGradientAdditiveParams&>(*p);
  bp.specs[0] = LocalKernelSpec{{4.0, 5.0, 6.0}, {2.0, 2.0, 3.0}, -3.0};
  bp.dense[0] = nullptr;
  bp.specs[1].reset();
  bp.dense[1] = nullptr;
  ASSERT_TRUE((*t)->Apply(*p, s).ok());
  std::vector<float> k(990);
  LocalGaussianKernel({9, 10, 11}, {4.0, 5.0, 6.0}, {2.0, 2.0, 3.0}, k.data());
  float lo = 0;
  for (int i = 0; i < 990; ++i) {
    EXPECT_FLOAT_EQ(s.image[i], x[i] + k[i] * -3.0f);
    EXPECT_EQ(s.image[990 + i], x[990 + i]);
    lo = std::min(lo, s.image[i] - x[i]);
  }
  EXPECT_FLOAT_EQ(lo, -3.0f);
  // Round trip through the compact JSON form.
  auto again = (*t)->ParseParams((*t)->ParamsToJson(*p), s.layout());
  ASSERT_TRUE(again.ok()) << again.status();
  SampleData s2 = testing::RandomSample(2, {9, 10, 11});
  ASSERT_TRUE((*t)->Apply(**again, s2).ok());
  EXPECT_EQ(s2.image, s.image);
}

TEST(BrightnessGradientAdditive, StrengthMixtureAndTooSmallAxes) {
  auto t = BrightnessGradientAdditiveTransform::Create(Da5());
  ASSERT_TRUE(t.ok());
  int neg = 0, n = 0;
  for (uint64_t k = 0; k < 300; ++k) {
    auto p = testing::DrawFor(**t, {3, {12, 12, 12}, 1}, 8, k);
    for (const auto& s : static_cast<const BrightnessGradientAdditiveParams&>(*p).specs) {
      if (!s) continue;
      ++n;
      neg += s->factor < 0;
      EXPECT_TRUE((s->factor >= -5 && s->factor <= -1) || (s->factor >= 1 && s->factor <= 5));
      for (double sc : s->scale) EXPECT_TRUE(sc >= 2.0 && sc <= 12.0) << sc;
    }
  }
  EXPECT_NEAR(static_cast<double>(neg) / n, 0.5, 0.08);
  RandomStream rng(1, 0, 0);
  DrawContext ctx{rng, 1, 0, 0};
  BrightnessGradientAdditiveConfig all = Da5();
  all.p_per_channel = 1;
  auto t1 = BrightnessGradientAdditiveTransform::Create(all);
  EXPECT_EQ((*t1)->Draw(ctx, {1, {5, 12, 12}, 1}).status().code(), absl::StatusCode::kInvalidArgument);  // 5 // 6 = 0
}

}  // namespace
}  // namespace augmentd
