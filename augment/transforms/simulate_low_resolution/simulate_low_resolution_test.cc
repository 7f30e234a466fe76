#include "augment/transforms/simulate_low_resolution/simulate_low_resolution.h"

#include "augment/kernels/cpu_resample.h"
#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(SimulateLowResolution, NearestExactIndicesAndBankersRounding) {
  // interpolate(arange(8), size=4, 'nearest-exact') = [1,3,5,7]; arange(12)->3 = [2,6,10] (reference §11).
  for (int i = 0; i < 4; ++i) EXPECT_EQ(kernels::NearestExactIndex(i, 8, 4), 2 * i + 1);
  EXPECT_EQ(kernels::NearestExactIndex(0, 12, 3), 2);
  EXPECT_EQ(kernels::NearestExactIndex(2, 12, 3), 10);
  EXPECT_EQ(kernels::PyRoundToInt(2.5), 2);
  EXPECT_EQ(kernels::PyRoundToInt(3.5), 4);
}

TEST(SimulateLowResolution, ScaleOneIsIdentityAndIgnoreAxesHold) {
  SampleData s = testing::RandomSample(2, {7, 9, 11});
  const std::vector<float> x = s.image;
  SimulateLowResolutionParams p;
  p.apply_to_channel = {1};
  p.scales = {{1.0f, 1.0f, 1.0f}};
  auto t = SimulateLowResolutionTransform::Create({});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(s.image[i], x[i], 1e-6f);

  SimulateLowResolutionConfig c;
  c.ignore_axes = std::vector<int64_t>{0};
  c.p_per_channel = 1;
  auto t2 = SimulateLowResolutionTransform::Create(c);
  ASSERT_TRUE(t2.ok());
  auto d = testing::DrawFor(**t2, {3, {7, 9, 11}, 1}, 2);
  for (const auto& sc : static_cast<const SimulateLowResolutionParams&>(*d).scales) {
    EXPECT_EQ(sc[0], 1.0f);
    EXPECT_EQ(sc[1], sc[2]);  // synchronize_axes
  }
}

TEST(SimulateLowResolution, HalvingThenUpsamplingIsPiecewiseLinear) {
  SampleData s = testing::RandomSample(1, {1, 1, 8});
  for (int i = 0; i < 8; ++i) s.image[i] = static_cast<float>(i);
  SimulateLowResolutionParams p;
  p.apply_to_channel = {0};
  p.scales = {{1.0f, 1.0f, 0.5f}};
  auto t = SimulateLowResolutionTransform::Create({});
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  // down: [1,3,5,7]; up (scale 0.5): src = 0.5(i+0.5)-0.5 clamped at 0 -> 1,1,1.5,2.5,... as values 1,1.5,2,...
  const float expect[8] = {1, 1.5f, 2.5f, 3.5f, 4.5f, 5.5f, 6.5f, 7};
  for (int i = 0; i < 8; ++i) EXPECT_NEAR(s.image[i], expect[i], 1e-5f) << i;
}

}  // namespace
}  // namespace augmentd
