#include "augment/transforms/mask_image/mask_image.h"

#include "augment/testing/test_util.h"
#include "augment/transforms/common/deterministic.h"

namespace augmentd {
namespace {

TEST(MaskImage, ZeroesListedChannelsWhereSegIsNegative) {
  SampleData s = testing::RandomSample(3, {5, 6, 7}, 1, -1, 2);
  const std::vector<float> x = s.image;
  auto t = MaskImageTransform::Create({{0, 2}, 0, 0.0});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Apply(EmptyParams(), s).ok());
  const int64_t n = s.voxels();
  for (int64_t i = 0; i < n; ++i) {
    const bool outside = s.seg[i] < 0;
    EXPECT_EQ(s.image[i], outside ? 0.0f : x[i]);
    EXPECT_EQ(s.image[n + i], x[n + i]);  // channel 1 not listed
    EXPECT_EQ(s.image[2 * n + i], outside ? 0.0f : x[2 * n + i]);
  }
  auto bad = MaskImageTransform::Create({{5}, 0, 0.0});
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ((*bad)->Apply(EmptyParams(), s).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
