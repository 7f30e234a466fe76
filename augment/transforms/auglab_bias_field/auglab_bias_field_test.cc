#include "augment/transforms/auglab_bias_field/auglab_bias_field.h"

#include <cmath>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(AuglabBiasField, CoefficientCountsAndLinspace) {
  EXPECT_EQ(AuglabBiasFieldTransform::NumCoefficients(3, 3), 20);
  EXPECT_EQ(AuglabBiasFieldTransform::NumCoefficients(3, 2), 10);
  EXPECT_EQ(AuglabBiasFieldTransform::NumCoefficients(0, 3), 1);
  const auto v = TorchLinspace(-1, 1, 5);
  EXPECT_EQ(v, (std::vector<float>{-1, -0.5f, 0, 0.5f, 1}));
  EXPECT_EQ(TorchLinspace(-1, 1, 1), std::vector<float>{-1});
}

TEST(AuglabBiasField, OneMonomialGivesItsExponentialField) {
  // order 1, 3D: monomials in AugLab's order (xo, yo, zo) = (0,0,0), (0,0,1), (0,1,0), (1,0,0).
  auto t = AuglabBiasFieldTransform::FromJson({{"order", 1}, {"apply_to_channel", {1}}});
  ASSERT_TRUE(t.ok()) << t.status();
  SampleData s = testing::RandomSample(2, {3, 4, 5});
  const std::vector<float> x = s.image;
  auto p = (*t)->ParseParams({{"coefficients", {0.0, 0.0, 0.0, 0.3}}}, s.layout());  // 0.3·x, x = last axis
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  const int64_t n = s.voxels();
  const auto xs = TorchLinspace(-1, 1, 5);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(s.image[i], x[i]);
    EXPECT_NEAR(s.image[n + i], x[n + i] * std::exp(0.3f * xs[i % 5]), 1e-5 * std::abs(x[n + i]) + 1e-7);
  }
  EXPECT_EQ((*t)->ParseParams({{"coefficients", {0.0, 0.1}}}, s.layout()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AuglabBiasField, DrawsAreInRange) {
  auto t = AuglabBiasFieldTransform::FromJson({{"coefficients", 0.2}});
  ASSERT_TRUE(t.ok());
  RandomStream rng(1, 2, 3);
  DrawContext ctx{rng, 1, 2, 3};
  auto p = (*t)->Draw(ctx, {1, {4, 4, 4}, 0});
  ASSERT_TRUE(p.ok());
  const auto& bp = static_cast<const AuglabBiasFieldParams&>(**p);
  ASSERT_EQ(bp.coefficients.size(), 20u);
  for (float c : bp.coefficients) EXPECT_TRUE(c >= -0.2f && c <= 0.2f);
  EXPECT_EQ(AuglabBiasFieldTransform::FromJson({{"order", -1}}).status().code(), absl::StatusCode::kInvalidArgument);
}

// The schema (augment/schema.h) keeps the accepted keys, the defaults and the error field names.
TEST(AuglabBiasField, ConfigSchemaKeepsKeysDefaultsAndErrorFields) {
  auto t = AuglabBiasFieldTransform::FromJson(nlohmann::json::object());
  ASSERT_TRUE(t.ok()) << t.status();
  const nlohmann::json full = {{"coefficients", {-0.5, 0.5}}, {"order", 3}, {"invert", false}, {"retain_stats", false},
                                {"apply_to_channel", {0}}};
  EXPECT_EQ((*t)->ConfigToJson(), full);
  auto again = AuglabBiasFieldTransform::FromJson((*t)->ConfigToJson());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->ConfigToJson(), full);
  auto c = AuglabBiasFieldTransform::FromJson({{"coefficients", 0.2}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ((*c)->ConfigToJson()["coefficients"], nlohmann::json({-0.2, 0.2}));
  auto range = AuglabBiasFieldTransform::FromJson({{"coefficients", {0.1, 0.3}}});
  ASSERT_TRUE(range.ok()) << range.status();
  EXPECT_EQ((*range)->ConfigToJson()["coefficients"], nlohmann::json({0.1, 0.3}));
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {{{"coefficients", {0.1, 0.2, 0.3}}}, "coefficients"},
      {{{"coefficients", {0.5, -0.5}}}, "coefficients"},
      {{{"coefficients", "x"}}, "coefficients"},
      {{{"order", 11}}, "order"},
      {{{"order", -1}}, "order"},
      {{{"invert", "x"}}, "invert"},
      {{{"apply_to_channel", {-1}}}, "apply_to_channel"},
      {{{"in_seg", 0.5}}, "in_seg"},
  };
  for (const auto& [config, field] : bad) {
    auto r = AuglabBiasFieldTransform::FromJson(config);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << config;
    EXPECT_NE(r.status().message().find("auglab_bias_field." + field), std::string::npos)
        << config << ": " << r.status();
  }
}

}  // namespace
}  // namespace augmentd
