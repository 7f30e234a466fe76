#include "augment/transforms/multiplicative_brightness/multiplicative_brightness.h"

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(MultiplicativeBrightness, MultipliesSelectedChannelsOnly) {
  SampleData s = testing::RandomSample(3, {5, 6, 7});
  const std::vector<float> x = s.image;
  MultiplicativeBrightnessParams p;
  p.apply_to_channel = {0, 2};
  p.multipliers = {1.25f, 0.8f};
  auto t = MultiplicativeBrightnessTransform::Create({});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  const int64_t n = s.voxels();
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(s.image[i], x[i] * 1.25f);
    EXPECT_EQ(s.image[n + i], x[n + i]);
    EXPECT_EQ(s.image[2 * n + i], x[2 * n + i] * 0.8f);
  }
}

TEST(MultiplicativeBrightness, SynchronizedChannelsShareOneMultiplier) {
  auto t = MultiplicativeBrightnessTransform::Create({RandomScalar::BGContrast(0.75, 1.25), true, 1});
  ASSERT_TRUE(t.ok());
  auto p = testing::DrawFor(**t, {4, {3, 3, 3}, 1}, 5);
  const auto& m = static_cast<const MultiplicativeBrightnessParams&>(*p);
  ASSERT_EQ(m.multipliers.size(), 4u);
  for (float v : m.multipliers) EXPECT_EQ(v, m.multipliers[0]);
}

}  // namespace
}  // namespace augmentd
