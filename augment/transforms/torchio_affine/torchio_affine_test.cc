#include "augment/transforms/torchio_affine/torchio_affine.h"

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(TorchioAffine, IdentityKeepsTheSample) {
  SampleData s = testing::RandomSample(2, {5, 6, 7}, 1, 0, 3);
  const SampleData x = s;
  auto t = TorchioAffineTransform::FromJson(nlohmann::json::object());
  ASSERT_TRUE(t.ok()) << t.status();
  auto p = (*t)->ParamsFromJson({{"scales", {1, 1, 1}}, {"degrees", {0, 0, 0}}, {"translation", {0, 0, 0}}},
                                s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  EXPECT_EQ(s.image, x.image);
  EXPECT_EQ(s.seg, x.seg);
}

TEST(TorchioAffine, IntegerTranslationShiftsAndFillsWithTheChannelMinimum) {
  SampleData s = testing::RandomSample(1, {6, 4, 3}, 1, 1, 3);
  const SampleData x = s;
  auto t = TorchioAffineTransform::FromJson(nlohmann::json::object());
  ASSERT_TRUE(t.ok());
  // ci = i − t for axis 2 (LPS flip cancels in index space): t = 1 → out[k] = in[k − 1], k = 0 filled.
  auto p = (*t)->ParamsFromJson({{"scales", {1, 1, 1}}, {"degrees", {0, 0, 0}}, {"translation", {0, 0, 1}}},
                                s.layout());
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  const float mn = *std::min_element(x.image.begin(), x.image.end());
  for (int64_t r = 0; r < 24; ++r)
    for (int64_t k = 0; k < 3; ++k) {
      EXPECT_EQ(s.image[static_cast<size_t>(r * 3 + k)], k == 0 ? mn : x.image[static_cast<size_t>(r * 3 + k - 1)]);
      EXPECT_EQ(s.seg[static_cast<size_t>(r * 3 + k)], k == 0 ? 0 : x.seg[static_cast<size_t>(r * 3 + k - 1)]);
    }
}

TEST(TorchioAffine, IndexMapInvertsScaleThenRotationAboutTheCentre) {
  TorchioAffineParams p;
  p.scales = {2, 1, 1};
  p.degrees = {0, 0, 90};
  const sitk::IndexAffine a = TorchioAffineIndexMap(p, {5, 5, 1}, true, false);
  // The centre maps to itself; a 90° turn about axis 2 swaps the in-plane axes, the scale divides axis 0.
  auto map = [&](double i, double j) {
    return std::array<double, 2>{a.m[0] * i + a.m[1] * j + a.b[0], a.m[3] * i + a.m[4] * j + a.b[1]};
  };
  EXPECT_NEAR(map(2, 2)[0], 2, 1e-12);
  EXPECT_NEAR(map(2, 2)[1], 2, 1e-12);
  const auto d0 = map(4, 2), d1 = map(2, 4);  // a step of 2 along axis 0 moves the source 1 (= 2/s0) along axis 1
  EXPECT_NEAR(std::abs(d0[1] - 2), 1, 1e-12);
  EXPECT_NEAR(d0[0], 2, 1e-12);
  EXPECT_NEAR(std::abs(d1[0] - 2), 2, 1e-12);
  EXPECT_NEAR(d1[1], 2, 1e-12);
}

TEST(TorchioAffine, ParsesTorchioRangesAndDrawsInThem) {
  auto t = TorchioAffineTransform::FromJson({{"scales", {0.9, 1.1}}, {"degrees", 10}, {"translation", {1, 2, 3}},
                                             {"isotropic", true}});
  ASSERT_TRUE(t.ok()) << t.status();
  const auto& c = static_cast<const TorchioAffineTransform&>(**t).config();
  EXPECT_EQ(c.translation, (std::array<double, 6>{-1, 1, -2, 2, -3, 3}));
  EXPECT_EQ(c.degrees, (std::array<double, 6>{-10, 10, -10, 10, -10, 10}));
  for (uint64_t sample = 0; sample < 50; ++sample) {
    auto p = testing::DrawFor(**t, {1, {8, 8, 8}, 0}, 2, sample);
    const auto& ap = static_cast<const TorchioAffineParams&>(*p);
    EXPECT_EQ(ap.scales[0], ap.scales[2]);
    EXPECT_TRUE(ap.scales[0] >= 0.9 && ap.scales[0] < 1.1);
    for (size_t a = 0; a < 3; ++a) EXPECT_LE(std::abs(ap.translation[a]), a + 1.0);
  }
  EXPECT_EQ(TorchioAffineTransform::FromJson({{"default_pad_value", "otsu"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TorchioAffineTransform::FromJson({{"scales", {1, 2, 3, 4, 5}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
