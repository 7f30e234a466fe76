#include "augment/transforms/rician_noise/rician_noise.h"

#include <cmath>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(RicianNoise, KeepsMeanAndStdAndIsReproducible) {
  auto t = RicianNoiseTransform::Create({{0.05, 0.1}});
  ASSERT_TRUE(t.ok());
  SampleData s = testing::RandomSample(2, {10, 11, 12});
  const std::vector<float> x = s.image;
  auto p = testing::DrawFor(**t, s.layout(), 3, 7);
  ASSERT_TRUE((*t)->Apply(*p, s).ok());
  auto stats = [](const std::vector<float>& v) {
    double m = 0, q = 0;
    for (float a : v) m += a;
    m /= v.size();
    for (float a : v) q += (a - m) * (a - m);
    return std::make_pair(m, std::sqrt(q / (v.size() - 1)));
  };
  EXPECT_NEAR(stats(s.image).first, stats(x).first, 1e-4);
  EXPECT_NEAR(stats(s.image).second, stats(x).second, 1e-4);
  EXPECT_NE(s.image, x);
  SampleData s2 = testing::RandomSample(2, {10, 11, 12});
  auto again = (*t)->ParseParams((*t)->ParamsToJson(*p), s2.layout());
  ASSERT_TRUE(again.ok());
  ASSERT_TRUE((*t)->Apply(**again, s2).ok());
  EXPECT_EQ(s2.image, s.image);
  EXPECT_FALSE(RicianNoiseTransform::Create({{0.2, 0.1}}).ok());
}

}  // namespace
}  // namespace augmentd
