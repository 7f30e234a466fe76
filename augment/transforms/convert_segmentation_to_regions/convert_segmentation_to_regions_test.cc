#include "augment/transforms/convert_segmentation_to_regions/convert_segmentation_to_regions.h"

#include "augment/testing/test_util.h"
#include "augment/transforms/common/deterministic.h"

namespace augmentd {
namespace {

TEST(ConvertSegmentationToRegions, IsInPerRegionAsBool) {
  SampleData s = testing::RandomSample(1, {5, 6, 7}, 1, 0, 4);
  const std::vector<int16_t> x = s.seg;
  auto t = ConvertSegmentationToRegionsTransform::Create({{{1, 2, 3}, {2, 3}, {3}, {4}}, 0});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Apply(EmptyParams(), s).ok());
  ASSERT_TRUE(s.seg_is_bool);
  ASSERT_EQ(s.seg_channels, 4);
  const int64_t n = s.voxels();
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(s.seg[i], x[i] >= 1 && x[i] <= 3);
    EXPECT_EQ(s.seg[n + i], x[i] == 2 || x[i] == 3);
    EXPECT_EQ(s.seg[2 * n + i], x[i] == 3);
    EXPECT_EQ(s.seg[3 * n + i], x[i] == 4);
  }
  EXPECT_EQ(ConvertSegmentationToRegionsTransform::Create({{}, 0}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
