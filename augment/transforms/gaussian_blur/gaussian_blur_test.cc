#include "augment/transforms/gaussian_blur/gaussian_blur.h"

#include <numeric>

#include "augment/kernels/cpu_blur.h"
#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(GaussianBlur, KernelSizesFollowBankersRoundingRule) {
  // Reference §11: σ 0.5→3, 0.58→3, 0.6→5, 0.9→5, 0.92→7, 1.0→7; DA5 up to 9 from σ ≥ 1.25.
  EXPECT_EQ(kernels::GaussianKernelSize(0.5), 3);
  EXPECT_EQ(kernels::GaussianKernelSize(0.58), 3);
  EXPECT_EQ(kernels::GaussianKernelSize(0.6), 5);
  EXPECT_EQ(kernels::GaussianKernelSize(0.9), 5);
  EXPECT_EQ(kernels::GaussianKernelSize(0.92), 7);
  EXPECT_EQ(kernels::GaussianKernelSize(1.0), 7);
  EXPECT_EQ(kernels::GaussianKernelSize(1.25), 9);
  const auto k = kernels::GaussianKernel1D(0.7);
  EXPECT_EQ(k.size(), 5u);
  EXPECT_NEAR(std::accumulate(k.begin(), k.end(), 0.0), 1.0, 1e-6);
  EXPECT_EQ(k[0], k[4]);
}

TEST(GaussianBlur, ReflectPaddingAndConstantPreservation) {
  // A constant image stays constant (weights sum to 1, reflect padding).
  SampleData s = testing::RandomSample(1, {6, 7, 8});
  std::fill(s.image.begin(), s.image.end(), 2.5f);
  GaussianBlurParams p;
  p.channels = 1;
  p.apply_to_channel = {0};
  p.sigmas = {{0.5, 0.75, 1.0}};
  auto t = GaussianBlurTransform::Create({});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  for (float v : s.image) EXPECT_NEAR(v, 2.5f, 1e-5f);
}

TEST(GaussianBlur, OneDimensionalReflectMatchesHandComputation) {
  // Line [a b c d], kernel [w0 w1 w0] (σ = 0.5): out[0] = w0·b + w1·a + w0·b (reflect: index -1 -> 1).
  std::vector<float> x = {1.0f, 4.0f, -2.0f, 3.0f};
  const auto k = kernels::GaussianKernel1D(0.5);
  ASSERT_EQ(k.size(), 3u);
  const int64_t shape[1] = {4};
  std::vector<float> scratch;
  std::vector<float> y = x;
  kernels::BlurAxis(y.data(), shape, 1, 0, k.data(), 3, scratch);
  EXPECT_NEAR(y[0], k[0] * 4 + k[1] * 1 + k[2] * 4, 1e-6);
  EXPECT_NEAR(y[3], k[0] * -2 + k[1] * 3 + k[2] * -2, 1e-6);
  EXPECT_NEAR(y[1], k[0] * 1 + k[1] * 4 + k[2] * -2, 1e-6);
}

TEST(GaussianBlur, PerChannelPerAxisSigmasAreDrawn) {
  auto t = GaussianBlurTransform::Create({RandomScalar::Uniform(0.5, 1.0), false, false, 0.5, true});
  ASSERT_TRUE(t.ok());
  int selected = 0;
  for (int k = 0; k < 1000; ++k) {
    auto p = testing::DrawFor(**t, {2, {8, 8, 8}, 1}, 3, k);
    const auto& b = static_cast<const GaussianBlurParams&>(*p);
    selected += static_cast<int>(b.apply_to_channel.size());
    for (const auto& s : b.sigmas) {
      ASSERT_EQ(s.size(), 3u);
      for (double v : s) {
        EXPECT_GE(v, 0.5);
        EXPECT_LT(v, 1.0);
      }
    }
  }
  EXPECT_NEAR(selected / 2000.0, 0.5, 0.05);
}

}  // namespace
}  // namespace augmentd
