#include "augment/transforms/zscore_normalization/zscore_normalization.h"

#include <cmath>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(ZscoreNormalization, ListedChannelsGetZeroMeanUnitPopulationStd) {
  SampleData s = testing::RandomSample(3, {7, 6, 5});
  for (float& v : s.image) v = 3.0f * v + 10.0f;
  const std::vector<float> x = s.image;
  auto t = ZscoreNormalizationTransform::FromJson({{"apply_to_channel", {0, 2, 7}}});  // 7: skipped
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE((*t)->Apply(EmptyParams(), s).ok());
  const int64_t n = s.voxels();
  for (int64_t c : {0, 2}) {
    double m = 0, q = 0;
    for (int64_t i = 0; i < n; ++i) m += s.image[c * n + i];
    m /= static_cast<double>(n);
    for (int64_t i = 0; i < n; ++i) q += (s.image[c * n + i] - m) * (s.image[c * n + i] - m);
    EXPECT_NEAR(m, 0.0, 1e-6);
    EXPECT_NEAR(std::sqrt(q / static_cast<double>(n)), 1.0, 1e-5);
  }
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(s.image[n + i], x[n + i]);  // channel 1 untouched
}

TEST(ZscoreNormalization, UnbiasedUsesTheSampleStd) {
  SampleData s = testing::RandomSample(1, {4, 5, 3});
  auto t = ZscoreNormalizationTransform::FromJson({{"unbiased", true}});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE((*t)->Apply(EmptyParams(), s).ok());
  const int64_t n = s.voxels();
  double m = 0, q = 0;
  for (int64_t i = 0; i < n; ++i) m += s.image[i];
  m /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) q += (s.image[i] - m) * (s.image[i] - m);
  EXPECT_NEAR(std::sqrt(q / static_cast<double>(n - 1)), 1.0, 1e-5);
}

TEST(ZscoreNormalization, ConstantChannelUsesTheStdFloor) {
  SampleData s = testing::RandomSample(1, {4, 4, 4});
  std::fill(s.image.begin(), s.image.end(), 2.5f);
  ASSERT_TRUE((*ZscoreNormalizationTransform::Create({}))->Apply(EmptyParams(), s).ok());
  for (float v : s.image) EXPECT_EQ(v, 0.0f);  // (x − mean) = 0 exactly, std floored at 1e-8
}

TEST(ZscoreNormalization, BadConfigIsInvalidArgument) {
  EXPECT_EQ(ZscoreNormalizationTransform::FromJson({{"apply_to_channel", {-1}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ZscoreNormalizationTransform::FromJson({{"in_seg", 0.5}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto t = ZscoreNormalizationTransform::FromJson({{"apply_to_channel", 1}});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)->ConfigToJson()["apply_to_channel"], nlohmann::json::array({1}));
}

}  // namespace
}  // namespace augmentd
