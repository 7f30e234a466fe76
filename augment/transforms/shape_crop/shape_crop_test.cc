#include "augment/transforms/shape_crop/shape_crop.h"

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(ShapeCrop, KeepsAuglabsCentredBoxAndZeroesTheRest) {
  SampleData s = testing::RandomSample(2, {9, 6, 5}, 1, 1, 3);
  const SampleData x = s;
  auto t = ShapeCropTransform::FromJson({{"shape_min", 1}, {"ignore_axes", {1, 2}}});
  ASSERT_TRUE(t.ok()) << t.status();
  auto p = (*t)->ParamsFromJson({{"new_shape", {4, 6, 5}}}, s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  // axis 0: start = 9 // 2 − 4 // 2 = 2, end 6
  for (int64_t i = 0; i < 9; ++i)
    for (int64_t r = 0; r < 30; ++r) {
      const bool kept = i >= 2 && i < 6;
      for (int64_t c = 0; c < 2; ++c) {
        const size_t e = static_cast<size_t>((c * 9 + i) * 30 + r);
        EXPECT_EQ(s.image[e], kept ? x.image[e] : 0.0f);
      }
      const size_t e = static_cast<size_t>(i * 30 + r);
      EXPECT_EQ(s.seg[e], kept ? x.seg[e] : 0);
    }
}

TEST(ShapeCrop, DrawsRandintInclusiveOnTheFreeAxesOnly) {
  auto t = ShapeCropTransform::FromJson({{"shape_min", 2}, {"ignore_axes", {1}}});
  ASSERT_TRUE(t.ok());
  std::vector<int> seen(8, 0);
  for (uint64_t sample = 0; sample < 400; ++sample) {
    auto p = testing::DrawFor(**t, {1, {5, 7, 3}, 0}, 3, sample);
    const auto& sp = static_cast<const ShapeCropParams&>(*p);
    ASSERT_EQ(sp.new_shape.size(), 3u);
    EXPECT_TRUE(sp.new_shape[0] >= 2 && sp.new_shape[0] <= 5);
    EXPECT_EQ(sp.new_shape[1], 7);
    EXPECT_TRUE(sp.new_shape[2] >= 2 && sp.new_shape[2] <= 3);
    ++seen[static_cast<size_t>(sp.new_shape[0])];
  }
  for (int v = 2; v <= 5; ++v) EXPECT_GT(seen[static_cast<size_t>(v)], 60) << v;  // both ends drawn
  RandomStream rng(1, 0, 0);
  DrawContext ctx{rng, 1, 0, 0};
  EXPECT_EQ((*t)->Draw(ctx, {1, {1, 7, 3}, 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ShapeCropTransform::FromJson({{"ignore_axes", {3}}}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
