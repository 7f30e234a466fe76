#include "augment/transforms/auglab_flip/auglab_flip.h"

#include "augment/registry.h"
#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

const AuglabFlipParams& AsFlip(const std::unique_ptr<TransformParams>& p) {
  return static_cast<const AuglabFlipParams&>(*p);
}

TEST(AuglabFlip, FlipsTheFlaggedAxesOfFlipAxisOnly) {
  const auto at = [](const std::vector<float>& v, int c, int i, int j, int k) {
    return v[static_cast<size_t>(((c * 4 + i) * 5 + j) * 6 + k)];
  };
  SampleData s = testing::RandomSample(2, {4, 5, 6});
  const SampleData orig = s;
  AuglabFlipParams p;
  p.flip = {1, 0, 1};
  auto all = AuglabFlipTransform::Create({{0, 1, 2}});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_TRUE((*all)->Apply(p, s).ok());
  // (c=1, 0, 1, 2) -> (1, 3, 1, 3); labels likewise.
  EXPECT_EQ(at(s.image, 1, 3, 1, 3), at(orig.image, 1, 0, 1, 2));
  EXPECT_EQ(s.seg[(3 * 5 + 1) * 6 + 3], orig.seg[(0 * 5 + 1) * 6 + 2]);
  ASSERT_TRUE((*all)->Apply(p, s).ok());
  EXPECT_EQ(s.image, orig.image);
  // flip_axis = [0]: the flag of axis 2 is ignored (AugLab: `axis in self.flip_axis`).
  auto only0 = AuglabFlipTransform::Create({{0}});
  ASSERT_TRUE(only0.ok());
  SampleData t = orig;
  ASSERT_TRUE((*only0)->Apply(p, t).ok());
  EXPECT_EQ(at(t.image, 0, 3, 1, 2), at(orig.image, 0, 0, 1, 2));
  EXPECT_EQ(t.seg[(3 * 5 + 1) * 6 + 2], orig.seg[(0 * 5 + 1) * 6 + 2]);
  p.flip = {0, 1, 0};  // only a flag outside flip_axis: untouched
  t = orig;
  ASSERT_TRUE((*only0)->Apply(p, t).ok());
  EXPECT_EQ(t.image, orig.image);
  EXPECT_EQ(t.seg, orig.seg);
}

// FlipGenerator3D: a coin per axis, and one axis of flip_axis when none came up. P(axis a flipped) is
// 1/2 + 1/8 · 1/3 for flip_axis = [0, 1, 2]; for [0] axis 0 flips with 1/2 + 1/8 and the other flags still vary.
TEST(AuglabFlip, DrawsAsFlipGenerator3D) {
  const int n = 4000;
  auto all = AuglabFlipTransform::Create({{0, 1, 2}});
  auto only0 = AuglabFlipTransform::Create({{0}});
  ASSERT_TRUE(all.ok() && only0.ok());
  int flagged[3] = {0, 0, 0}, flipped0 = 0, other_flag = 0;
  for (int k = 0; k < n; ++k) {
    auto p = testing::DrawFor(**all, {1, {4, 4, 4}, 1}, 5, k);
    ASSERT_NE(p, nullptr);
    const AuglabFlipParams& f = AsFlip(p);
    EXPECT_GE(f.flip[0] + f.flip[1] + f.flip[2], 1);
    for (int a = 0; a < 3; ++a) flagged[a] += f.flip[static_cast<size_t>(a)];
    auto q = testing::DrawFor(**only0, {1, {4, 4, 4}, 1}, 6, k);
    ASSERT_NE(q, nullptr);
    flipped0 += static_cast<const AuglabFlipTransform&>(**only0).FlippedAxes(AsFlip(q))[0];
    other_flag += AsFlip(q).flip[1] + AsFlip(q).flip[2] > 0;
  }
  for (int a = 0; a < 3; ++a) EXPECT_NEAR(flagged[a] / static_cast<double>(n), 0.5 + 1.0 / 24, 0.03) << a;
  EXPECT_NEAR(flipped0 / static_cast<double>(n), 0.625, 0.03);
  EXPECT_NEAR(other_flag / static_cast<double>(n), 0.75, 0.03);
}

TEST(AuglabFlip, ConfigParamsAndErrors) {
  auto t = TransformFromJson("auglab_flip", {{"flip_axis", {0}}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->ConfigToJson(), nlohmann::json({{"flip_axis", {0}}}));
  EXPECT_EQ((*t)->UsesLabels(), true);
  auto d = TransformFromJson("auglab_flip", {});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ((*d)->ConfigToJson(), nlohmann::json({{"flip_axis", {0, 1, 2}}}));
  EXPECT_EQ(TransformFromJson("auglab_flip", {{"flip_axis", {3}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  const SampleLayout layout{1, {4, 4, 4}, 1};
  auto p = (*t)->ParseParams({{"flip", {1, 0, 1}}}, layout);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ((*t)->ParamsToJson(**p), nlohmann::json({{"flip", {1, 0, 1}}}));
  for (const nlohmann::json& bad : {nlohmann::json({{"flip", {1, 0}}}), nlohmann::json({{"flip", {2, 0, 0}}}),
                                    nlohmann::json::object(), nlohmann::json({{"axes", {0}}})}) {
    auto r = (*t)->ParseParams(bad, layout);
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << bad.dump();
  }
  RandomStream rng(1, 0, 0);
  DrawContext ctx{rng, 1, 0, 0};
  EXPECT_EQ((*t)->Draw(ctx, {1, {4, 4}, 1}).status().code(), absl::StatusCode::kInvalidArgument);  // 3D only
}

}  // namespace
}  // namespace augmentd
