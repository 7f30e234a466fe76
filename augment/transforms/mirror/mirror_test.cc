#include "augment/transforms/mirror/mirror.h"

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(Mirror, FlipTwiceIsIdentityAndFlipMovesVoxels) {
  SampleData s = testing::RandomSample(2, {4, 5, 6});
  const SampleData orig = s;
  auto t = MirrorTransform::Create({{0, 1, 2}});
  ASSERT_TRUE(t.ok());
  MirrorParams p;
  p.axes = {0, 2};
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  // voxel (c=1, 0, 1, 2) moves to (1, 3, 1, 3); seg likewise.
  const auto at = [](const std::vector<float>& v, int c, int i, int j, int k) {
    return v[((c * 4 + i) * 5 + j) * 6 + k];
  };
  EXPECT_EQ(at(s.image, 1, 3, 1, 3), at(orig.image, 1, 0, 1, 2));
  EXPECT_EQ(s.seg[(3 * 5 + 1) * 6 + 3], orig.seg[(0 * 5 + 1) * 6 + 2]);
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  EXPECT_EQ(s.image, orig.image);
  EXPECT_EQ(s.seg, orig.seg);
}

TEST(Mirror, EachAxisFlippedWithProbabilityHalf) {
  auto t = MirrorTransform::Create({{0, 1, 2}});
  int count[3] = {0, 0, 0};
  const int n = 3000;
  for (int k = 0; k < n; ++k) {
    auto p = testing::DrawFor(**t, {1, {4, 4, 4}, 1}, 21, k);
    for (int64_t a : static_cast<const MirrorParams&>(*p).axes) ++count[a];
  }
  for (int a = 0; a < 3; ++a) EXPECT_NEAR(count[a] / static_cast<double>(n), 0.5, 0.03);
  EXPECT_EQ(MirrorTransform::Create({{3}}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
