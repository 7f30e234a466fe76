#include "augment/transforms/bias_field/bias_field.h"

#include <cmath>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

// Direct per-voxel evaluation of TorchIO's formula (independent of the separable implementation).
double NaiveField(const BiasFieldParams& p, const std::array<int64_t, 3>& s, int64_t i, int64_t j, int64_t k) {
  auto coord = [](int64_t idx, int64_t n) { return n > 1 ? (idx - (n - 1) / 2.0) / ((n - 1) / 2.0) : 0.0; };
  const double x = coord(i, s[0]), y = coord(j, s[1]), z = coord(k, s[2]);
  double f = 0;
  size_t t = 0;
  for (int a = 0; a <= p.order; ++a)
    for (int b = 0; b <= p.order - a; ++b)
      for (int c = 0; c <= p.order - a - b; ++c) f += p.coefficients[t++] * std::pow(x, a) * std::pow(y, b) * std::pow(z, c);
  return f;
}

TEST(BiasField, DrawsTorchioCountAndRangeAndMatchesFormula) {
  auto t = BiasFieldTransform::FromJson({{"coefficients", 0.4}, {"order", 3}});
  ASSERT_TRUE(t.ok()) << t.status();
  for (std::vector<int64_t> shape : {std::vector<int64_t>{5, 6, 7}, std::vector<int64_t>{9, 4}}) {
    SampleData s = testing::RandomSample(2, shape);
    const std::vector<float> x = s.image;
    auto p = testing::DrawFor(**t, s.layout(), 11, 3);
    const auto& bp = static_cast<const BiasFieldParams&>(*p);
    ASSERT_EQ(bp.coefficients.size(), 20u);
    for (double c : bp.coefficients) EXPECT_TRUE(c >= -0.4 && c < 0.4);
    ASSERT_TRUE((*t)->Apply(*p, s).ok());
    const std::array<int64_t, 3> s3 = {shape[0], shape[1], shape.size() == 3 ? shape[2] : 1};
    const int64_t v = s3[0] * s3[1] * s3[2];
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t i = 0; i < s3[0]; ++i)
        for (int64_t j = 0; j < s3[1]; ++j)
          for (int64_t k = 0; k < s3[2]; ++k) {
            const int64_t e = c * v + (i * s3[1] + j) * s3[2] + k;
            const double want = x[e] * std::exp(NaiveField(bp, s3, i, j, k));
            EXPECT_NEAR(s.image[e], want, 1e-5 * (1 + std::abs(want)));
          }
    // JSON round trip reproduces the output.
    SampleData s2 = testing::RandomSample(2, shape);
    auto again = (*t)->ParseParams((*t)->ParamsToJson(*p), s2.layout());
    ASSERT_TRUE(again.ok()) << again.status();
    ASSERT_TRUE((*t)->Apply(**again, s2).ok());
    EXPECT_EQ(s2.image, s.image);
  }
}

TEST(BiasField, RejectsBadConfigAndParams) {
  EXPECT_FALSE(BiasFieldTransform::FromJson({{"order", -1}}).ok());
  EXPECT_FALSE(BiasFieldTransform::FromJson({{"coefficients", {0.5, 0.1}}}).ok());
  EXPECT_FALSE(BiasFieldTransform::FromJson({{"coefficients", -0.5}}).ok());
  EXPECT_FALSE(BiasFieldTransform::FromJson({{"order_", 3}}).ok());
  auto t = BiasFieldTransform::FromJson({{"order", 1}});
  ASSERT_TRUE(t.ok());
  SampleLayout l{1, {4, 4, 4}, 0};
  EXPECT_FALSE((*t)->ParseParams({{"coefficients", {0.1, 0.2}}, {"order", 1}}, l).ok());  // needs 4
  EXPECT_TRUE((*t)->ParseParams({{"coefficients", {0.1, 0.2, 0.3, 0.4}}, {"order", 1}}, l).ok());
}

}  // namespace
}  // namespace augmentd
