#include "augment/transforms/local_gamma/local_gamma.h"

#include <algorithm>
#include <cmath>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {
using transforms_internal::LocalGaussianKernel;
using transforms_internal::LocalScalar;

TEST(LocalGamma, BlendsGammaThroughKernelAndKeepsRange) {
  LocalGammaConfig c;
  c.scale = LocalScalar::AxisSizeLogUniform(6, 1);
  c.loc = LocalScalar::Uniform(-0.5, 1.5);
  c.gamma = LocalScalar::Mixture({{0.5, 0.01, 0.8}, {0.5, 1.5, 4}});
  c.same_for_all_channels = false;
  c.p_per_channel = 0.5;
  auto t = LocalGammaTransform::Create(c);
  ASSERT_TRUE(t.ok());
  SampleData s = testing::RandomSample(2, {8, 9, 10});
  const std::vector<float> x = s.image;
  LocalGammaParams p;
  p.specs = {LocalKernelSpec{{3.0, 4.0, 5.0}, {2.0, 3.0, 2.0}, 1}, std::nullopt};
  p.dense = {nullptr, nullptr};
  p.gammas = {2.0, std::nullopt};
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  std::vector<float> k(720);
  LocalGaussianKernel({8, 9, 10}, {3.0, 4.0, 5.0}, {2.0, 3.0, 2.0}, k.data());
  const auto [a, b] = std::minmax_element(x.begin(), x.begin() + 720);
  const double mn = *a, r = *b - *a;
  for (int i = 0; i < 720; ++i) {
    const double nrm = (x[i] - mn) / r;
    EXPECT_NEAR(s.image[i], (std::pow(nrm, 2.0) * k[i] + (1 - k[i]) * nrm) * r + mn, 1e-4);
    EXPECT_EQ(s.image[720 + i], x[720 + i]);
  }
  int hi = 0, n = 0;
  for (uint64_t q = 0; q < 400; ++q) {
    auto d = testing::DrawFor(**t, {2, {12, 12, 12}, 1}, 2, q);
    for (const auto& g : static_cast<const LocalGammaParams&>(*d).gammas) {
      if (!g) continue;
      ++n;
      hi += *g >= 1.5;
      EXPECT_TRUE((*g >= 0.01 && *g <= 0.8) || (*g >= 1.5 && *g <= 4));
    }
  }
  EXPECT_NEAR(static_cast<double>(hi) / n, 0.5, 0.08);
}

}  // namespace
}  // namespace augmentd
