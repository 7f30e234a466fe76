#include "augment/transforms/gamma/gamma.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

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

// bgv2's GammaTransform._apply_to_image for one channel in double precision (library pow).
std::vector<double> ReferenceGamma(const std::vector<float>& in, double g, bool invert, bool retain) {
  std::vector<double> x(in.begin(), in.end());
  const double n = static_cast<double>(x.size());
  if (invert)
    for (double& v : x) v = -v;
  auto mean_std = [&](const std::vector<double>& v) {
    double m = 0, q = 0;
    for (double e : v) m += e;
    m /= n;
    for (double e : v) q += (e - m) * (e - m);
    return std::make_pair(m, std::sqrt(q / (n - 1)));
  };
  const auto [mean, sd] = mean_std(x);
  const double mn = *std::min_element(x.begin(), x.end()), mx = *std::max_element(x.begin(), x.end());
  const double rnge = mx - mn, denom = std::max(rnge, 1e-7);
  for (double& v : x) v = std::pow((v - mn) / denom, g) * rnge + mn;
  if (retain) {
    const auto [mh, sh] = mean_std(x);
    for (double& v : x) v = (v - mh) * (sd / std::max(sh, 1e-7)) + mean;
  }
  if (invert)
    for (double& v : x) v = -v;
  return x;
}

// The vectorised exp2(γ·log2 t) power, the fused statistics and the folded inversion against a double-precision
// reference: within 2e-6 of the range (the parity tolerance against bgv2 is 1e-4), for γ across and beyond
// nnU-Net's [0.7, 1.5], with exact zeros of the normalised value, subnormal normalised values and odd lengths.
TEST(Gamma, FastPowerMatchesDoubleReference) {
  std::mt19937 gen(7);
  std::normal_distribution<float> nd(3.0f, 5.0f);
  std::vector<float> x(100003);
  for (float& v : x) v = nd(gen);
  x[17] = x[18] = -40.0f;  // the minimum, twice: (x − min) = 0 exactly
  x[19] = -40.0f + 1e-37f;  // rounds to the minimum in float
  for (float g : {0.05f, 0.7f, 0.93f, 1.0f, 1.25f, 1.5f, 4.0f}) {
    for (int mode = 0; mode < 4; ++mode) {
      const bool invert = mode & 1, retain = mode & 2;
      std::vector<float> y = x;
      kernels::ApplyGamma(y.data(), static_cast<int64_t>(y.size()), g, invert, retain);
      const std::vector<double> e = ReferenceGamma(x, g, invert, retain);
      const double range = *std::max_element(e.begin(), e.end()) - *std::min_element(e.begin(), e.end());
      double worst = 0;
      for (size_t i = 0; i < y.size(); ++i) worst = std::max(worst, std::fabs(y[i] - e[i]));
      EXPECT_LT(worst, 2e-6 * range) << "gamma " << g << " invert " << invert << " retain " << retain;
    }
  }
}

TEST(Gamma, ConstantChannelAndNonPositiveGammaFollowBgv2) {
  for (bool retain : {false, true}) {
    std::vector<float> c(1000, 2.5f);
    kernels::ApplyGamma(c.data(), 1000, 1.3f, false, retain);  // range 0: pow(0, γ) · 0 + min = min
    for (float v : c) EXPECT_EQ(v, 2.5f);
  }
  const std::vector<float> tiny = {0.0f, 1e-40f, 3e-39f, 1e-30f, 1e-7f, 0.5f, 1.0f};  // subnormal normalised values
  for (float g : {0.1f, 0.7f, 1.5f}) {
    std::vector<float> y = tiny;
    kernels::ApplyGamma(y.data(), static_cast<int64_t>(y.size()), g, false, false);
    for (size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], std::pow(static_cast<double>(tiny[i]), g), 2e-6) << g;
  }
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> ud(-1.0f, 1.0f);
  std::vector<float> x(999);
  for (float& v : x) v = ud(gen);
  for (float g : {0.0f, -0.5f}) {  // outside the fast path's domain (library pow)
    std::vector<float> y = x;
    kernels::ApplyGamma(y.data(), 999, g, true, false);
    const std::vector<double> e = ReferenceGamma(x, g, true, false);
    for (size_t i = 0; i < y.size(); ++i) {
      if (std::isfinite(e[i])) {
        EXPECT_NEAR(y[i], e[i], 1e-5 * std::max(1.0, std::fabs(e[i]))) << g << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace augmentd
