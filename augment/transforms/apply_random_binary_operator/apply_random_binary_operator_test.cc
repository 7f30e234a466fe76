#include "augment/transforms/apply_random_binary_operator/apply_random_binary_operator.h"

#include <cmath>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {
namespace bo = binary_operator_internal;

// Brute-force cross-correlation dilation, the definition the fast path implements.
std::vector<uint8_t> NaiveDilate(const std::vector<uint8_t>& m, const std::vector<int64_t>& d,
                                 const std::vector<uint8_t>& fp, const std::vector<int64_t>& f) {
  std::vector<uint8_t> out(m.size(), 0);
  const int64_t o0 = (f[0] - 1) / 2, o1 = (f[1] - 1) / 2, o2 = (f[2] - 1) / 2;
  for (int64_t a = 0; a < d[0]; ++a)
    for (int64_t b = 0; b < d[1]; ++b)
      for (int64_t c = 0; c < d[2]; ++c)
        for (int64_t i = 0; i < f[0]; ++i)
          for (int64_t j = 0; j < f[1]; ++j)
            for (int64_t k = 0; k < f[2]; ++k) {
              if (!fp[(i * f[1] + j) * f[2] + k]) continue;
              const int64_t x = a + i - o0, y = b + j - o1, z = c + k - o2;
              if (x < 0 || y < 0 || z < 0 || x >= d[0] || y >= d[1] || z >= d[2]) continue;
              if (m[(x * d[1] + y) * d[2] + z]) out[(a * d[1] + b) * d[2] + c] = 1;
            }
  return out;
}

TEST(ApplyRandomBinaryOperator, FootprintsAreSkimages) {
  std::vector<int64_t> dims;
  auto b1 = bo::Footprint(1, 3, dims);  // ball(1): the 6-neighbourhood cross
  ASSERT_EQ(dims, (std::vector<int64_t>{3, 3, 3}));
  int count = 0;
  for (uint8_t v : b1) count += v;
  EXPECT_EQ(count, 7);
  auto b = bo::Footprint(3.7, 3, dims);  // int(8.4) = 8 points: an even-sized ball
  EXPECT_EQ(dims, (std::vector<int64_t>{8, 8, 8}));
  count = 0;
  for (uint8_t v : b) count += v;
  EXPECT_EQ(count, 160);  // skimage 0.26: ball(3.7).sum()
  auto d = bo::Footprint(3.7, 2, dims);  // arange(-3.7, 4.7): 9 points, off-centre
  EXPECT_EQ(dims, (std::vector<int64_t>{9, 9}));
  count = 0;
  for (uint8_t v : d) count += v;
  EXPECT_EQ(count, 41);  // disk(3.7).sum()
  int row1 = 0, row7 = 0;  // rows at offsets -2.7 and 3.3: 5 and 3 elements (asymmetric)
  for (int j = 0; j < 9; ++j) {
    row1 += d[1 * 9 + j];
    row7 += d[7 * 9 + j];
  }
  EXPECT_EQ(row1, 5);
  EXPECT_EQ(row7, 3);
}

TEST(ApplyRandomBinaryOperator, FastDilationEqualsTheDefinition) {
  std::mt19937 gen(3);
  const std::vector<int64_t> shape = {9, 11, 13};
  std::vector<uint8_t> m(9 * 11 * 13);
  for (auto& v : m) v = gen() % 9 == 0;
  for (double r : {1.0, 1.6, 2.3, 3.7}) {
    std::vector<int64_t> f;
    const auto fp = bo::Footprint(r, 3, f);
    EXPECT_EQ(bo::ApplyOperator(BinaryOperator::kDilation, m, shape, fp, f), NaiveDilate(m, shape, fp, f)) << r;
    // erosion = ¬dilation(¬m): outside the image counts as foreground
    std::vector<uint8_t> nm(m.size());
    for (size_t i = 0; i < m.size(); ++i) nm[i] = !m[i];
    auto e = NaiveDilate(nm, shape, fp, f);
    for (auto& v : e) v = !v;
    EXPECT_EQ(bo::ApplyOperator(BinaryOperator::kErosion, m, shape, fp, f), e) << r;
  }
}

TEST(ApplyRandomBinaryOperator, DilationClearsTheAddedVoxelsInTheOtherChannels) {
  SampleData s;
  s.channels = 3;
  s.shape = {7, 7, 7};
  s.image.assign(3 * 343, 0.0f);
  for (int64_t v = 0; v < 343; ++v) s.image[v] = 0.25f;     // channel 0: not in channel_idx
  s.image[343 + (3 * 7 + 3) * 7 + 3] = 1;                   // channel 1: one voxel in the centre
  for (int64_t v = 0; v < 343; ++v) s.image[2 * 343 + v] = v == (3 * 7 + 3) * 7 + 3 ? 0.0f : 1.0f;  // complement
  auto t = ApplyRandomBinaryOperatorTransform::FromJson({{"channel_idx", {-2, -1}}, {"strel_size", 1}});
  ASSERT_TRUE(t.ok()) << t.status();
  auto p = (*t)->ParseParams({{"apply_to_channels", {-2}}, {"operators", {"dilation"}}, {"strel_size", {1}}},
                             {3, {7, 7, 7}, 0});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  float sum1 = 0, sum2 = 0;
  for (int64_t v = 0; v < 343; ++v) {
    EXPECT_EQ(s.image[v], 0.25f);
    sum1 += s.image[343 + v];
    sum2 += s.image[2 * 343 + v];
    EXPECT_EQ(s.image[343 + v] + s.image[2 * 343 + v], 1.0f) << v;  // still one-hot
  }
  EXPECT_EQ(sum1, 7);
  EXPECT_EQ(sum2, 343 - 7);
  EXPECT_EQ((*t)->ParseParams({{"apply_to_channels", {0}}, {"operators", {"dilation"}}, {"strel_size", {1}}},
                              {3, {7, 7, 7}, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);  // 0 is not in channel_idx
}

TEST(ApplyRandomBinaryOperator, DrawsFollowTheConfiguration) {
  auto t = ApplyRandomBinaryOperatorTransform::FromJson(
      {{"channel_idx", {-3, -2, -1}}, {"strel_size", {1, 8}}, {"p_per_label", 0.5}});
  ASSERT_TRUE(t.ok());
  int applied = 0, first_is_minus3 = 0, dilations = 0;
  const int kSamples = 2000;
  for (int i = 0; i < kSamples; ++i) {
    auto p = testing::DrawFor(**t, {4, {8, 8, 8}, 1}, 5, i);
    const auto& q = static_cast<const ApplyRandomBinaryOperatorParams&>(*p);
    applied += static_cast<int>(q.apply_to_channels.size());
    for (size_t k = 0; k < q.strel_size.size(); ++k) {
      EXPECT_GE(q.strel_size[k], 1);
      EXPECT_LT(q.strel_size[k], 8);
      dilations += q.operators[k] == BinaryOperator::kDilation;
    }
    if (q.apply_to_channels.size() == 3) first_is_minus3 += q.apply_to_channels[0] == -3;
  }
  EXPECT_NEAR(applied / (3.0 * kSamples), 0.5, 0.03);
  EXPECT_NEAR(static_cast<double>(dilations) / applied, 0.25, 0.03);
  EXPECT_GT(first_is_minus3, 0);  // shuffled: not always the configured order
}

// The schema (augment/schema.h) keeps the accepted keys, the defaults and the error field names.
TEST(ApplyRandomBinaryOperator, ConfigSchemaKeepsKeysDefaultsAndErrorFields) {
  auto t = ApplyRandomBinaryOperatorTransform::FromJson({{"channel_idx", -1}});
  ASSERT_TRUE(t.ok()) << t.status();
  const nlohmann::json full = {{"channel_idx", {-1}},
                                {"strel_size", RandomScalar::Uniform(1, 10).ToJson()},
                                {"p_per_label", 1.0},
                                {"any_of_these", {"dilation", "erosion", "closing", "opening"}}};
  EXPECT_EQ((*t)->ConfigToJson(), full);
  auto again = ApplyRandomBinaryOperatorTransform::FromJson((*t)->ConfigToJson());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->ConfigToJson(), full);
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {nlohmann::json::object(), "channel_idx"},
      {{{"channel_idx", nlohmann::json::array()}}, "channel_idx"},
      {{{"channel_idx", {5000}}}, "channel_idx"},
      {{{"channel_idx", 0}, {"strel_size", {0, 40}}}, "strel_size"},
      {{{"channel_idx", 0}, {"p_per_label", 2}}, "p_per_label"},
      {{{"channel_idx", 0}, {"any_of_these", {"thinning"}}}, "any_of_these"},
      {{{"channel_idx", 0}, {"any_of_these", nlohmann::json::array()}}, "any_of_these"},
      {{{"channel_idx", 0}, {"any_of_these", "dilation"}}, "any_of_these"},
      {{{"channel_idx", 0}, {"strel", 1}}, "strel"},
  };
  for (const auto& [config, field] : bad) {
    auto r = ApplyRandomBinaryOperatorTransform::FromJson(config);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << config;
    EXPECT_NE(r.status().message().find("apply_random_binary_operator." + field), std::string::npos)
        << config << ": " << r.status();
  }
}

}  // namespace
}  // namespace augmentd
