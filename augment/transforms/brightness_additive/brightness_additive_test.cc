#include "augment/transforms/brightness_additive/brightness_additive.h"

#include <cmath>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(BrightnessAdditive, AddsShiftToPickedChannelsOnly) {
  SampleData s = testing::RandomSample(3, {4, 5, 6});
  const std::vector<float> x = s.image;
  auto t = BrightnessAdditiveTransform::Create({0, 0.5, false, 0.5});
  ASSERT_TRUE(t.ok());
  BrightnessAdditiveParams p;
  p.apply_to_channel = {0, 2};
  p.shift = {0.25f, 7.0f, -1.5f};
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  const int64_t n = s.voxels();
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(s.image[i], x[i] + 0.25f);
    EXPECT_EQ(s.image[n + i], x[n + i]);
    EXPECT_EQ(s.image[2 * n + i], x[2 * n + i] - 1.5f);
  }
}

TEST(BrightnessAdditive, DrawsNormalPerChannelAndUniformWhenSynchronized) {
  auto t = BrightnessAdditiveTransform::Create({0.2, 0.5, false, 1});
  ASSERT_TRUE(t.ok());
  double sum = 0, sq = 0;
  int n = 0;
  for (uint64_t k = 0; k < 4000; ++k) {
    auto p = testing::DrawFor(**t, {2, {4, 4, 4}, 1}, 3, k);
    const auto& b = static_cast<const BrightnessAdditiveParams&>(*p);
    ASSERT_EQ(b.shift.size(), 2u);
    for (float v : b.shift) {
      sum += v;
      sq += v * v;
      ++n;
    }
  }
  const double mean = sum / n;
  EXPECT_NEAR(mean, 0.2, 0.02);
  EXPECT_NEAR(std::sqrt(sq / n - mean * mean), 0.5, 0.02);
  auto sync = BrightnessAdditiveTransform::Create({0.0, 0.5, true, 1});
  ASSERT_TRUE(sync.ok());
  for (uint64_t k = 0; k < 200; ++k) {
    auto p = testing::DrawFor(**sync, {3, {4, 4, 4}, 1}, 3, k);
    const auto& b = static_cast<const BrightnessAdditiveParams&>(*p);
    EXPECT_GE(b.shift[0], 0.0f);
    EXPECT_LT(b.shift[0], 0.5f);
    EXPECT_EQ(b.shift[0], b.shift[2]);
  }
  EXPECT_FALSE(BrightnessAdditiveTransform::Create({1.0, 0.5, true, 1}).ok());
  EXPECT_FALSE(BrightnessAdditiveTransform::Create({0, 0.5, false, 2}).ok());
}

}  // namespace
}  // namespace augmentd
