#include "augment/transforms/histogram_equalization/histogram_equalization.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "augment/kernels/cpu_intensity.h"
#include "augment/registry.h"
#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

std::shared_ptr<const Transform> Make(const nlohmann::json& j) {
  auto t = HistogramEqualizationTransform::FromJson(j);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : nullptr;
}

TEST(AuglabHistogramEqualization, HandComputedSkewedChannel) {
  // mn 0, mx 10: histc bins 0 (×3), 25 (1 → 25.6), 255; cdf_min 3, last 5 → lut (cdf − 3)/2·10.
  std::vector<float> x = {0, 0, 0, 1, 10};
  EqualizeHistogram(x.data(), 5, false);
  EXPECT_EQ(x, (std::vector<float>{0, 0, 0, 5, 10}));
}

TEST(AuglabHistogramEqualization, FlattensTheHistogramAndKeepsOrderAndRange) {
  SampleData s = testing::RandomSample(2, {16, 16, 16});
  std::mt19937 gen(9);
  std::uniform_real_distribution<float> u(0.0f, 1.0f);
  for (size_t i = 0; i < 4096; ++i) s.image[i] = std::pow(u(gen), 1.5f);  // quartiles 0.125, 0.35, 0.65
  const std::vector<float> before = s.image;
  auto t = Make({{"apply_to_channel", {0}}});
  auto p = testing::DrawFor(*t, s.layout(), 1);
  ASSERT_TRUE(t->Apply(*p, s).ok());
  const float mn = *std::min_element(before.begin(), before.begin() + 4096);
  const float mx = *std::max_element(before.begin(), before.begin() + 4096);
  std::vector<size_t> order(4096);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return before[a] < before[b]; });
  for (size_t k = 1; k < order.size(); ++k) EXPECT_LE(s.image[order[k - 1]], s.image[order[k]]);
  for (size_t i = 0; i < 4096; ++i) {
    EXPECT_GE(s.image[i], mn);
    EXPECT_LE(s.image[i], mx);
  }
  // Equalised: the quartiles sit near mn + {1/4, 1/2, 3/4}·range (bin 0 holds 2.5% of the mass).
  std::vector<float> y(s.image.begin(), s.image.begin() + 4096);
  std::sort(y.begin(), y.end());
  for (int q = 1; q <= 3; ++q) EXPECT_NEAR((y[q * 1024] - mn) / (mx - mn), q / 4.0, 0.04) << q;
  for (size_t i = 4096; i < before.size(); ++i) ASSERT_EQ(s.image[i], before[i]);  // channel 1 untouched
}

TEST(AuglabHistogramEqualization, RetainStatsAndConstantChannel) {
  SampleData s = testing::RandomSample(1, {8, 9, 10});
  const auto st0 = kernels::ComputeStats(s.image.data(), s.voxels(), true);
  auto t = Make({{"retain_stats", true}});
  auto p = testing::DrawFor(*t, s.layout(), 3);
  ASSERT_TRUE(t->Apply(*p, s).ok());
  const auto st1 = kernels::ComputeStats(s.image.data(), s.voxels(), true);
  EXPECT_NEAR(st1.mean, st0.mean, 1e-4);
  EXPECT_NEAR(st1.std_unbiased, st0.std_unbiased, 1e-4);
  std::vector<float> c(100, 2.5f);
  EqualizeHistogram(c.data(), 100, true);
  for (float v : c) EXPECT_EQ(v, 2.5f);
}

TEST(AuglabHistogramEqualization, JsonRoundTripAndErrors) {
  auto t = TransformFromJson("histogram_equalization", {{"apply_to_channel", {1, 0}}, {"retain_stats", true}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->ConfigToJson(), (nlohmann::json{{"apply_to_channel", {1, 0}}, {"retain_stats", true}}));
  const SampleLayout layout{2, {4, 4, 4}, 1};
  auto p = testing::DrawFor(**t, layout, 5);
  const nlohmann::json j = (*t)->ParamsToJson(*p);
  EXPECT_EQ(j, (nlohmann::json{{"apply_to_channel", {1, 0}}}));
  auto back = (*t)->ParseParams(j, layout);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*t)->ParamsToJson(**back), j);
  EXPECT_EQ(TransformFromJson("histogram_equalization", {{"bins", 3}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TransformFromJson("histogram_equalization", {{"apply_to_channel", {-1}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*t)->ParseParams({{"apply_to_channel", {3}}}, layout).status().code(), absl::StatusCode::kInvalidArgument);
  RandomStream rng(1, 0, 0);
  DrawContext ctx{rng, 1, 0, 0};
  EXPECT_EQ((*t)->Draw(ctx, SampleLayout{1, {4, 4, 4}, 0}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
