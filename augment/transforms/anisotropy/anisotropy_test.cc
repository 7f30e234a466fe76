#include "augment/transforms/anisotropy/anisotropy.h"

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

SampleData Row(std::vector<float> v) {
  SampleData s;
  s.channels = 1;
  s.shape = {static_cast<int64_t>(v.size()), 1, 1};
  s.image = std::move(v);
  return s;
}

TEST(Anisotropy, HandComputedDownAndUpAlongOneAxis) {
  auto t = AnisotropyTransform::FromJson({{"downsampling", 7}});
  ASSERT_TRUE(t.ok()) << t.status();
  // n = 8, m = 2.5: n' = floor(3.2) = 3, c = 3.5, voxel j at 3.5 − 2.5 + 2.5 j = 1, 3.5, 6 → nearest 1, 4 (half
  // up), 6. Up: ci = (i − 1)/2.5, inside iff ci >= −0.5 and < 2.5.
  SampleData s = Row({0, 10, 20, 30, 40, 50, 60, 70});
  auto p = (*t)->ParamsFromJson({{"axis", 0}, {"downsampling", 2.5}}, s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  const float low[3] = {10, 40, 60};
  for (int i = 0; i < 8; ++i) {
    const double ci = (i - 1) / 2.5;
    float want = 0;
    if (ci >= -0.5 && ci < 2.5) {
      const int f = static_cast<int>(std::floor(ci));
      const double w = ci - f;
      want = static_cast<float>((1 - w) * low[std::clamp(f, 0, 2)] + w * low[std::clamp(f + 1, 0, 2)]);
    }
    EXPECT_NEAR(s.image[static_cast<size_t>(i)], want, 1e-5) << i;
  }
}

TEST(Anisotropy, FactorOneIsIdentityAndLabelsStayUnlessScalarsOnlyIsOff) {
  SampleData s = testing::RandomSample(2, {6, 7, 5}, 1, 0, 4);
  const SampleData x = s;
  auto t = AnisotropyTransform::FromJson(nlohmann::json::object());
  ASSERT_TRUE(t.ok());
  auto p = (*t)->ParamsFromJson({{"axis", 1}, {"downsampling", 1.0}}, s.layout());
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  EXPECT_EQ(s.image, x.image);
  auto q = (*t)->ParamsFromJson({{"axis", 1}, {"downsampling", 3.0}}, s.layout());
  ASSERT_TRUE((*t)->Apply(**q, s).ok());
  EXPECT_NE(s.image, x.image);
  EXPECT_EQ(s.seg, x.seg);
  auto t2 = AnisotropyTransform::FromJson({{"scalars_only", false}});
  ASSERT_TRUE(t2.ok());
  EXPECT_TRUE((*t2)->UsesLabels());
  SampleData s2 = x;
  ASSERT_TRUE((*t2)->Apply(**q, s2).ok());
  EXPECT_NE(s2.seg, x.seg);
}

TEST(Anisotropy, DrawsAnAllowedAxisAndAFactorInRange) {
  auto t = AnisotropyTransform::FromJson({{"axes", {0, 2}}, {"downsampling", {2, 4}}});
  ASSERT_TRUE(t.ok());
  int axis0 = 0;
  for (uint64_t sample = 0; sample < 200; ++sample) {
    auto p = testing::DrawFor(**t, {1, {8, 8, 8}, 0}, 4, sample);
    const auto& ap = static_cast<const AnisotropyParams&>(*p);
    EXPECT_TRUE(ap.axis == 0 || ap.axis == 2);
    axis0 += ap.axis == 0;
    EXPECT_TRUE(ap.downsampling >= 2 && ap.downsampling < 4);
    auto q = testing::DrawFor(**t, {1, {8, 8}, 0}, 4, sample);  // 2D: axis 2 dropped
    EXPECT_EQ(static_cast<const AnisotropyParams&>(*q).axis, 0);
  }
  EXPECT_GT(axis0, 60);
  EXPECT_LT(axis0, 140);
  EXPECT_EQ(AnisotropyTransform::FromJson({{"downsampling", {0.5, 2}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
