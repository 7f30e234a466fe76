#include "augment/transforms/transpose_axes/transpose_axes.h"

#include <map>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(TransposeAxes, PermutesImageAndSeg) {
  auto t = TransposeAxesTransform::Create({{0, 1, 2}});
  ASSERT_TRUE(t.ok());
  SampleData s = testing::RandomSample(2, {4, 4, 4});
  const std::vector<float> x = s.image;
  const std::vector<int16_t> g = s.seg;
  TransposeAxesParams p;
  p.axis_order = {0, 3, 1, 2};  // out[i, j, k] = x[j, k, i]
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  for (int c = 0; c < 2; ++c)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 4; ++k) EXPECT_EQ(s.image[c * 64 + (i * 4 + j) * 4 + k], x[c * 64 + (j * 4 + k) * 4 + i]);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 4; ++k) EXPECT_EQ(s.seg[(i * 4 + j) * 4 + k], g[(j * 4 + k) * 4 + i]);
}

TEST(TransposeAxes, DrawsUniformPermutationsOfAllowedAxes) {
  auto t = TransposeAxesTransform::Create({{1, 2}});
  ASSERT_TRUE(t.ok());
  std::map<std::vector<int64_t>, int> seen;
  for (uint64_t q = 0; q < 2000; ++q) {
    auto d = testing::DrawFor(**t, {1, {3, 5, 5}, 1}, 2, q);
    ++seen[static_cast<const TransposeAxesParams&>(*d).axis_order];
  }
  ASSERT_EQ(seen.size(), 2u);
  const std::vector<int64_t> id = {0, 1, 2, 3}, swapped = {0, 1, 3, 2};
  EXPECT_NEAR(seen[id] / 2000.0, 0.5, 0.05);
  EXPECT_NEAR(seen[swapped] / 2000.0, 0.5, 0.05);
  auto all = TransposeAxesTransform::Create({{0, 1, 2}});
  RandomStream rng(1, 0, 0);
  DrawContext ctx{rng, 1, 0, 0};
  EXPECT_EQ((*all)->Draw(ctx, {1, {3, 5, 5}, 1}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
