#include "augment/transforms/redistribute_seg/redistribute_seg.h"

#include <cmath>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(RedistributeSeg, DilationIsASevenVoxelBox) {
  const int64_t s[3] = {9, 9, 9};
  std::vector<uint8_t> m(729, 0);
  m[(4 * 9 + 4) * 9 + 4] = 1;
  const auto d = redistribute_seg_internal::Dilate3(m, s);
  for (int64_t a = 0; a < 9; ++a)
    for (int64_t b = 0; b < 9; ++b)
      for (int64_t c = 0; c < 9; ++c) {
        const bool in = std::abs(a - 4) <= 3 && std::abs(b - 4) <= 3 && std::abs(c - 4) <= 3;
        ASSERT_EQ(d[(a * 9 + b) * 9 + c], in ? 1 : 0) << a << b << c;
      }
}

TEST(RedistributeSeg, NoForegroundLeavesTheNormalisedImage) {
  auto t = RedistributeSegTransform::FromJson(nlohmann::json::object());
  ASSERT_TRUE(t.ok()) << t.status();
  SampleData s = testing::RandomSample(1, {5, 6, 7}, 1, 0, 0);  // all labels 0
  const std::vector<float> x = s.image;
  auto p = (*t)->ParseParams({{"in_seg", {false}}, {"jitter", {{0.1}}}, {"amplitude", {{0.5}}}}, s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  const float mn = *std::min_element(x.begin(), x.end()), mx = *std::max_element(x.begin(), x.end());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_FLOAT_EQ(s.image[i], (x[i] - mn) / (mx - mn));
}

TEST(RedistributeSeg, InSegChangesOnlyTheRegionRelativeToTheGlobalShiftAndRetainStatsKeepsMoments) {
  auto t = RedistributeSegTransform::FromJson({{"retain_stats", true}});
  ASSERT_TRUE(t.ok());
  SampleData s = testing::RandomSample(1, {8, 8, 8}, 1, 0, 1, 4);
  const std::vector<float> x = s.image;
  auto p = (*t)->ParseParams({{"in_seg", {true}}, {"jitter", {{0.05}}}, {"amplitude", {{0.8}}}}, s.layout());
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  double m0 = 0, m1 = 0, q0 = 0, q1 = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    m0 += x[i];
    m1 += s.image[i];
  }
  m0 /= x.size();
  m1 /= x.size();
  for (size_t i = 0; i < x.size(); ++i) {
    q0 += (x[i] - m0) * (x[i] - m0);
    q1 += (s.image[i] - m1) * (s.image[i] - m1);
  }
  EXPECT_NEAR(m1, m0, 1e-4);
  EXPECT_NEAR(std::sqrt(q1), std::sqrt(q0), 1e-3 * std::sqrt(q0));
  // Background voxels keep their order relative to each other (one affine map outside the region).
  EXPECT_EQ((*t)->ParseParams({{"in_seg", {true, false}}, {"jitter", {{0.1}}}, {"amplitude", {{0.1}}}}, s.layout())
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RedistributeSeg, DrawsFollowAuglabsRanges) {
  auto t = RedistributeSegTransform::FromJson({{"in_seg", 0.25}});
  ASSERT_TRUE(t.ok());
  int in = 0;
  for (uint64_t sample = 0; sample < 400; ++sample) {
    RandomStream rng(5, sample, 0);
    DrawContext ctx{rng, 5, sample, 0};
    auto p = (*t)->Draw(ctx, {1, {4, 4, 4}, 2});
    ASSERT_TRUE(p.ok());
    const auto& rp = static_cast<const RedistributeSegParams&>(**p);
    ASSERT_EQ(rp.jitter[0].size(), 2u);
    for (float v : rp.jitter[0]) EXPECT_TRUE(v >= 0 && v < 0.2f);
    for (float v : rp.amplitude[0]) EXPECT_TRUE(v >= -1 && v < 1);
    in += rp.in_seg[0];
  }
  EXPECT_NEAR(in / 400.0, 0.25, 0.07);
  RandomStream rng(5, 0, 0);
  DrawContext ctx{rng, 5, 0, 0};
  EXPECT_EQ((*t)->Draw(ctx, {1, {4, 4, 4}, 0}).status().code(), absl::StatusCode::kInvalidArgument);
}

// The schema (augment/schema.h) keeps the accepted keys, the defaults and the error field names.
TEST(RedistributeSeg, ConfigSchemaKeepsKeysDefaultsAndErrorFields) {
  auto t = RedistributeSegTransform::FromJson(nlohmann::json::object());
  ASSERT_TRUE(t.ok()) << t.status();
  const nlohmann::json full = {{"in_seg", 0.2}, {"apply_to_channel", {0}}, {"retain_stats", false}};
  EXPECT_EQ((*t)->ConfigToJson(), full);
  auto again = RedistributeSegTransform::FromJson((*t)->ConfigToJson());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->ConfigToJson(), full);
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {{{"in_seg", 1.5}}, "in_seg"},
      {{{"in_seg", "x"}}, "in_seg"},
      {{{"apply_to_channel", {-1}}}, "apply_to_channel"},
      {{{"apply_to_channel", {0, 0}}}, "apply_to_channel"},
      {{{"retain_stats", "x"}}, "retain_stats"},
      {{{"sigma", 1}}, "sigma"},
  };
  for (const auto& [config, field] : bad) {
    auto r = RedistributeSegTransform::FromJson(config);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << config;
    EXPECT_NE(r.status().message().find("redistribute_seg." + field), std::string::npos)
        << config << ": " << r.status();
  }
}

}  // namespace
}  // namespace augmentd
