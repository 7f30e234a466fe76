#include "augment/transforms/contrast/contrast.h"

#include <algorithm>

#include "augment/kernels/cpu_intensity.h"
#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(Contrast, KeepsMeanAndPreservesRange) {
  SampleData s = testing::RandomSample(1, {8, 9, 10});
  const auto st0 = kernels::ComputeStats(s.image.data(), s.voxels(), false);
  ContrastParams p;
  p.apply_to_channel = {0};
  p.multipliers = {1.25f};
  auto t = ContrastTransform::Create({RandomScalar::BGContrast(0.75, 1.25), true, false, 1});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  const auto st1 = kernels::ComputeStats(s.image.data(), s.voxels(), false);
  EXPECT_GE(st1.min, st0.min);
  EXPECT_LE(st1.max, st0.max);
  // Without clamping the mean is exactly kept; with it the clamp moves it only a little here.
  EXPECT_NEAR(st1.mean, st0.mean, 0.1);
}

TEST(Contrast, WithoutPreserveRangeScalesAroundMean) {
  SampleData s = testing::RandomSample(1, {5, 5, 5});
  const std::vector<float> x = s.image;
  const double mean = kernels::ComputeStats(x.data(), s.voxels(), false).mean;
  ContrastParams p;
  p.apply_to_channel = {0};
  p.multipliers = {0.5f};
  auto t = ContrastTransform::Create({RandomScalar::Uniform(0.5, 0.5), false, false, 1});
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(s.image[i], (x[i] - mean) * 0.5 + mean, 1e-5);
}

}  // namespace
}  // namespace augmentd
