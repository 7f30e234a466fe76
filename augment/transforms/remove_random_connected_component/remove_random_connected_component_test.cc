#include "augment/transforms/remove_random_connected_component/remove_random_connected_component.h"

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {
namespace cc = connected_components_internal;

TEST(RemoveRandomConnectedComponent, LabelsWithFullConnectivityInRasterOrder) {
  // 2D: diagonal neighbours join (8-connectivity); a U shape is one component whose arms meet late.
  const std::vector<uint8_t> m = {1, 0, 0, 1,
                                  0, 1, 0, 1,
                                  0, 0, 0, 1,
                                  1, 1, 0, 0};
  std::vector<int32_t> labels;
  auto sizes = cc::Label(m, {4, 4}, labels);
  EXPECT_EQ(sizes, (std::vector<int64_t>{2, 3, 2}));
  EXPECT_EQ(labels, (std::vector<int32_t>{1, 0, 0, 2, 0, 1, 0, 2, 0, 0, 0, 2, 3, 3, 0, 0}));
  const std::vector<uint8_t> u = {1, 0, 1,
                                  1, 0, 1,
                                  1, 1, 1};
  EXPECT_EQ(cc::Label(u, {3, 3}, labels), (std::vector<int64_t>{7}));
  // 3D: a corner-only (26-) neighbour joins.
  std::vector<uint8_t> v(27, 0);
  v[0] = 1;
  v[13] = 1;
  v[26] = 1;
  EXPECT_EQ(cc::Label(v, {3, 3, 3}, labels), (std::vector<int64_t>{3}));
}

TEST(RemoveRandomConnectedComponent, RemovesTheChosenSmallComponentAndFills) {
  SampleData s;
  s.channels = 2;
  s.shape = {10, 10};
  s.image.assign(200, 0.0f);
  auto set = [&](int c, int x, int y) { s.image[c * 100 + x * 10 + y] = 1; };
  set(0, 0, 0);                                          // component 1 (size 1)
  for (int y = 5; y < 8; ++y) set(0, 2, y);              // component 2 (size 3)
  for (int x = 5; x < 10; ++x)
    for (int y = 0; y < 10; ++y) set(0, x, y);           // component 3 (size 50): covers ≥ 15 %, never removed
  const std::vector<float> x0 = s.image;
  auto t = RemoveRandomConnectedComponentTransform::FromJson(
      {{"channel_idx", {0, 1}}, {"fill_with_other_class_p", 0.5}, {"dont_do_if_covers_more_than_x_percent", 0.15}});
  ASSERT_TRUE(t.ok()) << t.status();
  // component_draw 0.7 of 2 valid components → the second (label 2); fill_draw 0.2 < 0.5 → fill channel 1.
  auto p = (*t)->ParseParams({{"apply_to_channels", {0}}, {"component_draw", {0.7}}, {"fill_draw", {0.2}},
                              {"other_class_draw", {0.9}}}, {2, {10, 10}, 0});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  for (int y = 5; y < 8; ++y) {
    EXPECT_EQ(s.image[2 * 10 + y], 0.0f);
    EXPECT_EQ(s.image[100 + 2 * 10 + y], 1.0f);
  }
  float moved = 0;
  for (int v = 0; v < 100; ++v) moved += x0[v] - s.image[v];
  EXPECT_EQ(moved, 3);
  EXPECT_EQ(s.image[0], 1.0f);
}

TEST(RemoveRandomConnectedComponent, DrawsOneCoinPerChannel) {
  auto t = RemoveRandomConnectedComponentTransform::FromJson({{"channel_idx", {-2, -1}}, {"p_per_label", 0.25}});
  ASSERT_TRUE(t.ok());
  int applied = 0;
  for (int i = 0; i < 2000; ++i) {
    auto p = testing::DrawFor(**t, {3, {4, 4, 4}, 1}, 2, i);
    const auto& q = static_cast<const RemoveRandomConnectedComponentParams&>(*p);
    applied += static_cast<int>(q.apply_to_channels.size());
    ASSERT_EQ(q.component_draw.size(), q.apply_to_channels.size());
  }
  EXPECT_NEAR(applied / 4000.0, 0.25, 0.03);
  EXPECT_EQ(RemoveRandomConnectedComponentTransform::FromJson({{"channel_idx", {0}}, {"p_per_label", 2}})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

// The schema (augment/schema.h) keeps the accepted keys, the defaults and the error field names.
TEST(RemoveRandomConnectedComponent, ConfigSchemaKeepsKeysDefaultsAndErrorFields) {
  auto t = RemoveRandomConnectedComponentTransform::FromJson({{"channel_idx", {0, 1}}});
  ASSERT_TRUE(t.ok()) << t.status();
  const nlohmann::json full = {{"channel_idx", {0, 1}},
                                {"fill_with_other_class_p", 0.25},
                                {"dont_do_if_covers_more_than_x_percent", 0.25},
                                {"p_per_label", 1.0}};
  EXPECT_EQ((*t)->ConfigToJson(), full);
  auto again = RemoveRandomConnectedComponentTransform::FromJson((*t)->ConfigToJson());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->ConfigToJson(), full);
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {nlohmann::json::object(), "channel_idx"},
      {{{"channel_idx", nlohmann::json::array()}}, "channel_idx"},
      {{{"channel_idx", {-5000}}}, "channel_idx"},
      {{{"channel_idx", 0}, {"fill_with_other_class_p", 2}}, "fill_with_other_class_p"},
      {{{"channel_idx", 0}, {"dont_do_if_covers_more_than_x_percent", -0.1}}, "dont_do_if_covers_more_than_x_percent"},
      {{{"channel_idx", 0}, {"p_per_label", -1}}, "p_per_label"},
      {{{"channel_idx", 0}, {"p", 1}}, "p"},
  };
  for (const auto& [config, field] : bad) {
    auto r = RemoveRandomConnectedComponentTransform::FromJson(config);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << config;
    EXPECT_NE(r.status().message().find("remove_random_connected_component." + field), std::string::npos)
        << config << ": " << r.status();
  }
}

}  // namespace
}  // namespace augmentd
