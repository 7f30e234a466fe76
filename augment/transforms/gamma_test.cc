#include "augment/transforms/gamma.h"

#include <cmath>

#include "augment/kernels/cpu_intensity.h"
#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(Gamma, GammaOneWithoutRetainIsIdentity) {
  SampleData s = testing::RandomSample(2, {6, 7, 8});
  const std::vector<float> before = s.image;
  auto t = GammaTransform::Create({RandomScalar::Constant(1.0), 0, false, 1, 0});
  ASSERT_TRUE(t.ok());
  GammaParams p;
  p.apply_to_channel = {0, 1};
  p.retain_stats = {false, false};
  p.invert_image = {false, false};
  p.gamma = {1.0f, 1.0f};
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  for (size_t i = 0; i < before.size(); ++i) EXPECT_NEAR(s.image[i], before[i], 1e-5f);
}

TEST(Gamma, RetainStatsKeepsMeanAndUnbiasedStd) {
  SampleData s = testing::RandomSample(1, {9, 10, 11});
  const auto st0 = kernels::ComputeStats(s.image.data(), s.voxels(), true);
  GammaParams p;
  p.apply_to_channel = {0};
  p.retain_stats = {true};
  p.invert_image = {true};
  p.gamma = {1.4f};
  auto t = GammaTransform::Create({});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  const auto st1 = kernels::ComputeStats(s.image.data(), s.voxels(), true);
  EXPECT_NEAR(st1.mean, st0.mean, 1e-4);
  EXPECT_NEAR(st1.std_unbiased, st0.std_unbiased, 1e-4);
}

TEST(Gamma, MatchesClosedFormWithoutRetain) {
  SampleData s = testing::RandomSample(1, {4, 5, 6});
  const std::vector<float> x = s.image;
  float mn = x[0], mx = x[0];
  for (float v : x) {
    mn = std::min(mn, v);
    mx = std::max(mx, v);
  }
  GammaParams p;
  p.apply_to_channel = {0};
  p.retain_stats = {false};
  p.invert_image = {false};
  p.gamma = {0.8f};
  auto t = GammaTransform::Create({});
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = std::pow((x[i] - mn) / (mx - mn), 0.8) * (mx - mn) + mn;
    EXPECT_NEAR(s.image[i], e, 1e-4);
  }
}

TEST(Gamma, DrawsBGContrastPerChannelAndRejectsBadConfig) {
  auto t = GammaTransform::Create({RandomScalar::BGContrast(0.7, 1.5), 1, false, 1, 1});
  ASSERT_TRUE(t.ok());
  int below = 0, n = 0;
  for (uint64_t k = 0; k < 2000; ++k) {
    auto p = testing::DrawFor(**t, {3, {4, 4, 4}, 1}, 11, k);
    const auto& g = static_cast<const GammaParams&>(*p);
    ASSERT_EQ(g.gamma.size(), 3u);
    for (float v : g.gamma) {
      EXPECT_GE(v, 0.7f);
      EXPECT_LE(v, 1.5f);
      below += v < 1.0f;
      ++n;
    }
    EXPECT_TRUE(g.invert_image[0]);
  }
  EXPECT_NEAR(static_cast<double>(below) / n, 0.5, 0.03);  // BGContrast: half the draws below 1
  EXPECT_EQ(GammaTransform::Create({RandomScalar::Uniform(0.7, 1.5), 1.5, false, 1, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(GammaTransform::Create({RandomScalar::Uniform(1.5, 0.7), 1, false, 1, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
