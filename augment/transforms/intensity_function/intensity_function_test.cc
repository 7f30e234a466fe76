#include "augment/transforms/intensity_function/intensity_function.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "augment/kernels/cpu_intensity.h"
#include "augment/registry.h"
#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

std::shared_ptr<const Transform> Make(const nlohmann::json& j) {
  auto t = IntensityFunctionTransform::FromJson(j);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : nullptr;
}

// AugLab's step in double: f((x − min)/(max − min + 1e-5)).
std::vector<double> RefStep(const std::vector<double>& x, const std::function<double(double)>& f) {
  const double mn = *std::min_element(x.begin(), x.end()), mx = *std::max_element(x.begin(), x.end());
  std::vector<double> y;
  for (double v : x) y.push_back(f((v - mn) / (mx - mn + 1e-5)));
  return y;
}

TEST(AuglabIntensityFunction, HandComputedSqrtThenInverse) {
  auto t = Make({{"functions", {"sqrt"}}});
  SampleData s;
  s.channels = 1;
  s.shape = {1, 1, 4};
  s.image = {0, 1, 2, 4};
  IntensityFunctionParams p;
  p.apply_to_channel = {0};
  p.functions = {true};
  p.inverse = true;
  ASSERT_TRUE(t->Apply(p, s).ok());
  const double d = 4 + 1e-5, top = std::sqrt(4 / d);
  const double e[4] = {top, top - std::sqrt(1 / d), top - std::sqrt(2 / d), 0.0};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(s.image[i], e[i], 1e-6) << i;
}

TEST(AuglabIntensityFunction, AllFunctionsInOrderMatchDoubleReference) {
  auto t = Make({{"functions", {"log1p", "sqrt", "sin", "exp", "sigmoid", "square"}}});
  SampleData s = testing::RandomSample(1, {5, 6, 7});
  std::vector<double> x(s.image.begin(), s.image.end());
  IntensityFunctionParams p;
  p.apply_to_channel = {0};
  p.functions = {true, false, true, true, true, false};
  p.inverse = false;
  ASSERT_TRUE(t->Apply(p, s).ok());
  x = RefStep(x, [](double v) { return std::log(1 + v); });
  x = RefStep(x, [](double v) { return std::sin(v); });
  x = RefStep(x, [](double v) { return std::exp(v); });
  x = RefStep(x, [](double v) { return 1 / (1 + std::exp(-v)); });
  for (size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(s.image[i], x[i], 2e-5) << i;
}

TEST(AuglabIntensityFunction, RetainStatsPerStep) {
  auto t = Make({{"retain_stats", true}, {"inverse_retain_stats", true}, {"apply_to_channel", {1}}});
  SampleData s = testing::RandomSample(2, {6, 7, 8});
  const std::vector<float> before = s.image;
  const int64_t n = s.voxels();
  const auto st0 = kernels::ComputeStats(s.image.data() + n, n, true);
  IntensityFunctionParams p;
  p.apply_to_channel = {1};
  p.functions = {true, true, false, true, false};
  p.inverse = true;
  ASSERT_TRUE(t->Apply(p, s).ok());
  const auto st1 = kernels::ComputeStats(s.image.data() + n, n, true);
  EXPECT_NEAR(st1.mean, st0.mean, 1e-4);
  EXPECT_NEAR(st1.std_unbiased, st0.std_unbiased, 1e-4);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(s.image[i], before[i]);  // channel 0 untouched
}

TEST(AuglabIntensityFunction, DrawDistributionAndOrder) {
  auto t = Make({{"p_function", 0.3}, {"p_inverse", 0.6}});
  int fn_on[5] = {}, inv_on = 0;
  const int trials = 3000;
  for (uint64_t k = 0; k < trials; ++k) {
    auto p = testing::DrawFor(*t, {1, {4, 4, 4}, 1}, 5, k);
    const auto& q = static_cast<const IntensityFunctionParams&>(*p);
    ASSERT_EQ(q.functions.size(), 5u);
    for (int f = 0; f < 5; ++f) fn_on[f] += q.functions[f];
    inv_on += q.inverse;
    // Draw order: five function coins, then the inverse coin.
    RandomStream rng(5, k, 0);
    for (int f = 0; f < 5; ++f) ASSERT_EQ(q.functions[f], rng.Uniform() < 0.3);
    ASSERT_EQ(q.inverse, rng.Uniform() < 0.6);
  }
  for (int f = 0; f < 5; ++f) EXPECT_NEAR(fn_on[f] / static_cast<double>(trials), 0.3, 0.03) << f;
  EXPECT_NEAR(inv_on / static_cast<double>(trials), 0.6, 0.03);
}

TEST(AuglabIntensityFunction, JsonRoundTripAndErrors) {
  auto t = TransformFromJson("intensity_function", {{"functions", {"exp", "sqrt"}}, {"p_inverse", 1.0}});
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)->ConfigToJson()["functions"], nlohmann::json({"exp", "sqrt"}));
  auto again = TransformFromJson("intensity_function", (*t)->ConfigToJson());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)->ConfigToJson(), (*t)->ConfigToJson());
  const SampleLayout layout{1, {4, 4, 4}, 1};
  auto p = testing::DrawFor(**t, layout, 2);
  const nlohmann::json j = (*t)->ParamsToJson(*p);
  EXPECT_EQ(j["inverse"], true);
  auto back = (*t)->ParseParams(j, layout);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*t)->ParamsToJson(**back), j);
  EXPECT_EQ(TransformFromJson("intensity_function", {{"functions", {"tanh"}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TransformFromJson("intensity_function", {{"p_function", -0.1}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*t)->ParseParams({{"functions", {true}}, {"inverse", false}}, layout).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
