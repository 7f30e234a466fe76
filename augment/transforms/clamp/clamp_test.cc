#include "augment/transforms/clamp/clamp.h"

#include <algorithm>
#include <cmath>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(Clamp, QuantileIsTorchsLinearRule) {
  std::vector<float> v = {5, 1, 4, 2, 3};  // sorted 1..5, n − 1 = 4
  EXPECT_FLOAT_EQ(Quantile(v, 0.0f), 1.0f);
  EXPECT_FLOAT_EQ(Quantile(v, 1.0f), 5.0f);
  EXPECT_FLOAT_EQ(Quantile(v, 0.5f), 3.0f);
  EXPECT_FLOAT_EQ(Quantile(v, 0.1f), 1.4f);   // rank 0.4: 1 + 0.4·(2 − 1)
  EXPECT_FLOAT_EQ(Quantile(v, 0.9f), 4.6f);   // rank 3.6: 5 − (5 − 4)·0.4
}

TEST(Clamp, InjectedPercentilesClampTheListedChannels) {
  SampleData s = testing::RandomSample(2, {6, 7, 8});
  const std::vector<float> x = s.image;
  auto t = ClampTransform::FromJson({{"apply_to_channel", {1}}});
  ASSERT_TRUE(t.ok()) << t.status();
  auto p = (*t)->ParamsFromJson({{"min_percentile", {0.1}}, {"max_percentile", {0.85}}}, {2, {6, 7, 8}, 1});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  const int64_t n = s.voxels();
  std::vector<float> c1(x.begin() + n, x.end());
  const float lo = Quantile(c1, 0.1f), hi = Quantile(c1, 0.85f);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(s.image[i], x[i]);
    EXPECT_EQ(s.image[n + i], std::min(std::max(x[n + i], lo), hi));
  }
}

TEST(Clamp, DrawsStayInTheirRangesAndRetainStatsKeepsMeanAndStd) {
  auto t = ClampTransform::FromJson({{"max_clamp_amount", 0.3}, {"retain_stats", true}});
  ASSERT_TRUE(t.ok());
  for (uint64_t sample = 0; sample < 50; ++sample) {
    RandomStream rng(9, sample, 0);
    DrawContext ctx{rng, 9, sample, 0};
    auto p = (*t)->Draw(ctx, {1, {5, 5, 5}, 0});
    ASSERT_TRUE(p.ok());
    const auto& cp = static_cast<const ClampParams&>(**p);
    ASSERT_EQ(cp.min_percentile.size(), 1u);
    EXPECT_GE(cp.min_percentile[0], 0.0f);
    EXPECT_LT(cp.min_percentile[0], 0.3f);
    EXPECT_GT(cp.max_percentile[0], 0.7f);
    EXPECT_LE(cp.max_percentile[0], 1.0f);
    SampleData s = testing::RandomSample(1, {5, 5, 5}, 0, 0, 0, static_cast<uint32_t>(sample + 1));
    double m0 = 0;
    for (float v : s.image) m0 += v;
    ASSERT_TRUE((*t)->Apply(**p, s).ok());
    double m1 = 0;
    for (float v : s.image) m1 += v;
    EXPECT_NEAR(m1 / 125, m0 / 125, 1e-4);
  }
  EXPECT_EQ(ClampTransform::FromJson({{"max_clamp_amount", 0.7}}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
