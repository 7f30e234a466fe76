#include "augment/transforms/downsample_seg_for_ds/downsample_seg_for_ds.h"

#include "augment/testing/test_util.h"
#include "augment/transforms/common/deterministic.h"

namespace augmentd {
namespace {

TEST(DownsampleSegForDs, PicksSecondVoxelOfEachPair) {
  SampleData s = testing::RandomSample(1, {8, 12, 10}, 1, 0, 5);
  const std::vector<int16_t> x = s.seg;
  auto t = DownsampleSegForDsTransform::Create({{{1}, {0.5}, {0.25, 0.25, 0.5}}});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Apply(EmptyParams(), s).ok());
  ASSERT_EQ(s.seg_pyramid.size(), 3u);
  EXPECT_EQ(s.seg_pyramid[0].data, x);
  EXPECT_EQ(s.seg_pyramid[1].shape, (std::vector<int64_t>{4, 6, 5}));
  // round(10 · 0.25) = 2 (banker's: 2.5 -> 2), round(8 · 0.25) = 2, round(12 · 0.5)... axis 2 uses 0.5 -> 5.
  EXPECT_EQ(s.seg_pyramid[2].shape, (std::vector<int64_t>{2, 3, 5}));
  const auto& l1 = s.seg_pyramid[1];
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j)
      for (int k = 0; k < 5; ++k)
        EXPECT_EQ(l1.data[(i * 6 + j) * 5 + k], x[((2 * i + 1) * 12 + (2 * j + 1)) * 10 + (2 * k + 1)]);
  const auto& l2 = s.seg_pyramid[2];
  // factor 4 picks 4i+2 along axes 0 and 1.
  EXPECT_EQ(l2.data[(1 * 3 + 2) * 5 + 4], x[((4 * 1 + 2) * 12 + (4 * 2 + 2)) * 10 + (2 * 4 + 1)]);
  EXPECT_EQ(DownsampleSegForDsTransform::Create({{{1.5}}}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
