#include "augment/transforms/move_seg_as_one_hot_to_data/move_seg_as_one_hot_to_data.h"

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(MoveSegAsOneHotToData, AppendsOneChannelPerLabelAndDropsTheSource) {
  SampleData s = testing::RandomSample(2, {5, 6, 7}, 2, -1, 3);
  const SampleData x = s;
  auto t = MoveSegAsOneHotToDataTransform::Create({1, {1, 3, 7}, true});
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_TRUE((*t)->Apply(EmptyParams(), s).ok());
  const int64_t n = x.voxels();
  ASSERT_EQ(s.channels, 5);
  ASSERT_EQ(s.seg_channels, 1);
  ASSERT_EQ(s.image.size(), static_cast<size_t>(5 * n));
  ASSERT_EQ(s.seg.size(), static_cast<size_t>(n));
  for (int64_t v = 0; v < 2 * n; ++v) EXPECT_EQ(s.image[v], x.image[v]);
  const int16_t labels[] = {1, 3, 7};
  for (int k = 0; k < 3; ++k)
    for (int64_t v = 0; v < n; ++v) EXPECT_EQ(s.image[(2 + k) * n + v], x.seg[n + v] == labels[k] ? 1.0f : 0.0f);
  for (int64_t v = 0; v < n; ++v) EXPECT_EQ(s.seg[v], x.seg[v]);  // channel 0 kept
}

TEST(MoveSegAsOneHotToData, KeepsTheSourceWhenAskedAndChecksTheChannel) {
  SampleData s = testing::RandomSample(1, {4, 4}, 1, 0, 2);
  auto keep = MoveSegAsOneHotToDataTransform::FromJson({{"source_channel_idx", 0}, {"all_labels", {2}},
                                                        {"remove_channel_from_source", false}});
  ASSERT_TRUE(keep.ok()) << keep.status();
  ASSERT_TRUE((*keep)->Apply(EmptyParams(), s).ok());
  EXPECT_EQ(s.channels, 2);
  EXPECT_EQ(s.seg_channels, 1);
  auto bad = MoveSegAsOneHotToDataTransform::FromJson({{"source_channel_idx", 3}, {"all_labels", {1}}});
  ASSERT_TRUE(bad.ok());
  EXPECT_EQ((*bad)->Apply(EmptyParams(), s).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MoveSegAsOneHotToDataTransform::FromJson({{"source_channel_idx", 1}}).status().code(),
            absl::StatusCode::kInvalidArgument);  // all_labels is required
}

// The schema (augment/schema.h) keeps the accepted keys, the defaults and the error field names.
TEST(MoveSegAsOneHotToData, ConfigSchemaKeepsKeysDefaultsAndErrorFields) {
  auto t = MoveSegAsOneHotToDataTransform::FromJson({{"source_channel_idx", 0}, {"all_labels", {1, 2}}});
  ASSERT_TRUE(t.ok()) << t.status();
  const nlohmann::json full = {{"source_channel_idx", 0}, {"all_labels", {1, 2}}, {"remove_channel_from_source", true}};
  EXPECT_EQ((*t)->ConfigToJson(), full);
  auto again = MoveSegAsOneHotToDataTransform::FromJson((*t)->ConfigToJson());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->ConfigToJson(), full);
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {{{"all_labels", {1}}}, "source_channel_idx"},
      {{{"source_channel_idx", 0}}, "all_labels"},
      {{{"source_channel_idx", 64}, {"all_labels", {1}}}, "source_channel_idx"},
      {{{"source_channel_idx", -1}, {"all_labels", {1}}}, "source_channel_idx"},
      {{{"source_channel_idx", 0}, {"all_labels", {40000}}}, "all_labels"},
      {{{"source_channel_idx", 0}, {"all_labels", std::vector<int64_t>(4097, 1)}}, "all_labels"},
      {{{"source_channel_idx", 0}, {"all_labels", {1}}, {"remove_channel_from_source", "x"}},
       "remove_channel_from_source"},
      {{{"source_channel_idx", 0}, {"all_labels", {1}}, {"labels", {1}}}, "labels"},
  };
  for (const auto& [config, field] : bad) {
    auto r = MoveSegAsOneHotToDataTransform::FromJson(config);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << config;
    EXPECT_NE(r.status().message().find("move_seg_as_one_hot_to_data." + field), std::string::npos)
        << config << ": " << r.status();
  }
}

}  // namespace
}  // namespace augmentd
