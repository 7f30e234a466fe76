#include "augment/transforms/remove_label/remove_label.h"

#include "augment/testing/test_util.h"
#include "augment/transforms/common/deterministic.h"

namespace augmentd {
namespace {

TEST(RemoveLabel, MinusOneBecomesZeroInEveryChannel) {
  SampleData s = testing::RandomSample(1, {6, 6, 6}, 2, -1, 3);
  const std::vector<int16_t> x = s.seg;
  auto t = RemoveLabelTransform::Create({-1, 0, std::nullopt});
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE((*t)->Apply(EmptyParams(), s).ok());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(s.seg[i], x[i] == -1 ? 0 : x[i]);
  EXPECT_EQ(RemoveLabelTransform::Create({70000, 0, std::nullopt}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
