#include "augment/transforms/gaussian_noise/gaussian_noise.h"

#include <cmath>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(GaussianNoise, SigmaIsTheStandardDeviationOfTheAddedField) {
  SampleData s = testing::RandomSample(2, {40, 40, 40});
  const std::vector<float> x = s.image;
  auto t = GaussianNoiseTransform::Create({RandomScalar::Uniform(0, 0.1), 1, true});
  ASSERT_TRUE(t.ok());
  GaussianNoiseParams p;
  p.apply_idx = {1};
  p.sigmas = {0.08f};
  p.seed = 3;
  p.sample_index = 9;
  p.transform_index = 1;
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  const int64_t n = s.voxels();
  double sum = 0, ss = 0;
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(s.image[i], x[i]);  // channel 0 untouched
    const double d = s.image[n + i] - x[n + i];
    sum += d;
    ss += d * d;
  }
  const double mean = sum / n, sd = std::sqrt(ss / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.002);
  EXPECT_NEAR(sd, 0.08, 0.002);
}

TEST(GaussianNoise, FieldIsAPureFunctionOfTheKey) {
  auto t = GaussianNoiseTransform::Create({RandomScalar::Uniform(0, 0.1), 1, true});
  SampleData a = testing::RandomSample(1, {6, 6, 6}), b = a;
  GaussianNoiseParams p;
  p.apply_idx = {0};
  p.sigmas = {0.05f};
  p.seed = 1;
  p.sample_index = 2;
  ASSERT_TRUE((*t)->Apply(p, a).ok());
  ASSERT_TRUE((*t)->Apply(p, b).ok());
  EXPECT_EQ(a.image, b.image);
}

// Apply (vectorised bulk generator) = x + σ·NormalAt(key(seed, sample, transform, 1 + channel), voxel) bit for bit:
// the expression the CUDA kernel evaluates per voxel.
TEST(GaussianNoise, ApplyEqualsThePerVoxelDeviceExpression) {
  SampleData s = testing::RandomSample(3, {17, 19, 23});
  const std::vector<float> x = s.image;
  auto t = GaussianNoiseTransform::Create({RandomScalar::Uniform(0, 0.1), 1, false});
  ASSERT_TRUE(t.ok());
  GaussianNoiseParams p;
  p.apply_idx = {0, 2};
  p.sigmas = {0.03f, 0.09f};
  p.seed = 99;
  p.sample_index = 12345;
  p.transform_index = 4;
  p.key_given = true;
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  const int64_t n = s.voxels();
  for (size_t k = 0; k < p.apply_idx.size(); ++k) {
    const int64_t c = p.apply_idx[k];
    const StreamKey key = MakeStreamKey(p.seed, p.sample_index, p.transform_index, 1u + static_cast<uint32_t>(c));
    for (int64_t i = 0; i < n; ++i) {
      const float e = RnAdd(x[c * n + i], RnMul(p.sigmas[k], NormalAt(key, static_cast<uint64_t>(i))));
      ASSERT_EQ(FloatAsBits(e), FloatAsBits(s.image[c * n + i])) << "channel " << c << " voxel " << i;
    }
  }
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(s.image[n + i], x[n + i]);  // channel 1 untouched
}

TEST(GaussianNoise, DrawsSigmaUniformly) {
  auto t = GaussianNoiseTransform::Create({RandomScalar::Uniform(0, 0.1), 1, true});
  double sum = 0;
  const int n = 4000;
  for (int k = 0; k < n; ++k) {
    auto p = testing::DrawFor(**t, {2, {4, 4, 4}, 1}, 17, k);
    const auto& g = static_cast<const GaussianNoiseParams&>(*p);
    ASSERT_EQ(g.sigmas.size(), 2u);
    EXPECT_EQ(g.sigmas[0], g.sigmas[1]);
    EXPECT_GE(g.sigmas[0], 0.0f);
    EXPECT_LT(g.sigmas[0], 0.1f);
    sum += g.sigmas[0];
  }
  EXPECT_NEAR(sum / n, 0.05, 0.002);
}

}  // namespace
}  // namespace augmentd
