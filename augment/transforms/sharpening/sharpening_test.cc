#include "augment/transforms/sharpening/sharpening.h"

#include <algorithm>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(Sharpening, LaplacianWithReplicateBorder3D) {
  SampleData s = testing::RandomSample(1, {4, 5, 6});
  const std::vector<float> x = s.image;
  auto t = SharpeningTransform::Create({RandomScalar::Uniform(0.1, 1), 0, 1, 0});
  ASSERT_TRUE(t.ok());
  SharpeningParams p;
  p.strengths = {0.5};
  p.clamp_intensities = {false};
  p.apply_channel = {true};
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  auto at = [&](int64_t a, int64_t b, int64_t c) {
    a = std::clamp<int64_t>(a, 0, 3);
    b = std::clamp<int64_t>(b, 0, 4);
    c = std::clamp<int64_t>(c, 0, 5);
    return static_cast<double>(x[(a * 5 + b) * 6 + c]);
  };
  for (int64_t a = 0; a < 4; ++a)
    for (int64_t b = 0; b < 5; ++b)
      for (int64_t c = 0; c < 6; ++c) {
        const double lap = 6 * at(a, b, c) - at(a - 1, b, c) - at(a + 1, b, c) - at(a, b - 1, c) - at(a, b + 1, c) -
                           at(a, b, c - 1) - at(a, b, c + 1);
        EXPECT_NEAR(s.image[(a * 5 + b) * 6 + c], at(a, b, c) + 0.5 * lap, 1e-4);
      }
}

TEST(Sharpening, ClampKeepsRangeAndUnpickedChannelsUntouched) {
  SampleData s = testing::RandomSample(2, {7, 9});
  const std::vector<float> x = s.image;
  auto t = SharpeningTransform::Create({RandomScalar::Constant(2.0), 0, 1, 1});
  ASSERT_TRUE(t.ok());
  SharpeningParams p;
  p.strengths = {2.0, 2.0};
  p.clamp_intensities = {true, true};
  p.apply_channel = {true, false};
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  const auto [mn, mx] = std::minmax_element(x.begin(), x.begin() + 63);
  for (int i = 0; i < 63; ++i) {
    EXPECT_GE(s.image[i], *mn);
    EXPECT_LE(s.image[i], *mx);
    EXPECT_EQ(s.image[63 + i], x[63 + i]);
  }
}

}  // namespace
}  // namespace augmentd
