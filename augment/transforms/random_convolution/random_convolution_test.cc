#include "augment/transforms/random_convolution/random_convolution.h"

#include <cmath>
#include <vector>

#include "augment/kernels/cpu_intensity.h"
#include "augment/registry.h"
#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

std::shared_ptr<const Transform> Make(const nlohmann::json& j) {
  auto t = RandomConvolutionTransform::FromJson(j);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : nullptr;
}

RandomConvolutionParams OneKernel(int32_t k, std::vector<float> w, bool mix = false, float alpha = 0) {
  RandomConvolutionParams p;
  p.apply_to_channel = {0};
  p.kernel_size = {k};
  p.kernel = {std::move(w)};
  p.mix = {mix};
  p.alpha = {alpha};
  return p;
}

// Independent reference: explicit torch-style reflect-padded volume (p < every axis), then correlation in double.
std::vector<double> Reference(const std::vector<float>& x, const std::vector<int64_t>& sh, const std::vector<float>& w,
                              int k) {
  const int p = k / 2;
  auto refl = [](int64_t i, int64_t n) { return i < 0 ? -i : (i >= n ? 2 * (n - 1) - i : i); };
  const int64_t P0 = sh[0] + 2 * p, P1 = sh[1] + 2 * p, P2 = sh[2] + 2 * p;
  std::vector<double> pad(static_cast<size_t>(P0 * P1 * P2));
  for (int64_t a = 0; a < P0; ++a)
    for (int64_t b = 0; b < P1; ++b)
      for (int64_t c = 0; c < P2; ++c)
        pad[(a * P1 + b) * P2 + c] = x[(refl(a - p, sh[0]) * sh[1] + refl(b - p, sh[1])) * sh[2] + refl(c - p, sh[2])];
  std::vector<double> y(x.size(), 0.0);
  for (int64_t i = 0; i < sh[0]; ++i)
    for (int64_t j = 0; j < sh[1]; ++j)
      for (int64_t l = 0; l < sh[2]; ++l)
        for (int a = 0; a < k; ++a)
          for (int b = 0; b < k; ++b)
            for (int c = 0; c < k; ++c)
              y[(i * sh[1] + j) * sh[2] + l] += w[(a * k + b) * k + c] * pad[((i + a) * P1 + j + b) * P2 + l + c];
  return y;
}

TEST(AuglabRandomConvolution, HandComputedKernels) {
  auto t = Make({});
  SampleData s = testing::RandomSample(2, {3, 4, 5});
  const std::vector<float> x = s.image;
  ASSERT_TRUE(t->Apply(OneKernel(1, {2.0f}), s).ok());  // k = 1: scaling
  for (size_t i = 0; i < 60; ++i) EXPECT_EQ(s.image[i], 2.0f * x[i]);
  for (size_t i = 60; i < x.size(); ++i) EXPECT_EQ(s.image[i], x[i]);  // channel 1 not in apply_to_channel
  s.image = x;
  std::vector<float> shift(27, 0.0f);
  shift[13 + 1] = 1.0f;  // y[.., l] = x[.., reflect(l + 1)]
  ASSERT_TRUE(t->Apply(OneKernel(3, shift), s).ok());
  for (int64_t v = 0; v < 12; ++v) {
    for (int64_t l = 0; l < 4; ++l) EXPECT_EQ(s.image[v * 5 + l], x[v * 5 + l + 1]);
    EXPECT_EQ(s.image[v * 5 + 4], x[v * 5 + 3]);  // reflect, edge not repeated
  }
  s.image = x;
  ASSERT_TRUE(t->Apply(OneKernel(1, {0.0f}, true, 0.25f), s).ok());  // mix: 0.25·x + 0.75·0
  for (size_t i = 0; i < 60; ++i) EXPECT_FLOAT_EQ(s.image[i], 0.25f * x[i]);
}

TEST(AuglabRandomConvolution, DrawnKernelsMatchPaddedReference) {
  auto t = Make({{"kernel_sizes", {3, 5}}, {"mix_prob", 0.0}});
  for (uint64_t k = 0; k < 6; ++k) {
    SampleData s = testing::RandomSample(1, {5, 6, 7}, 1, 0, 3, static_cast<uint32_t>(k + 1));
    const std::vector<float> x = s.image;
    auto p = testing::DrawFor(*t, s.layout(), 21, k);
    const auto& q = static_cast<const RandomConvolutionParams&>(*p);
    ASSERT_TRUE(t->Apply(*p, s).ok());
    const std::vector<double> e = Reference(x, {5, 6, 7}, q.kernel[0], q.kernel_size[0]);
    for (size_t i = 0; i < e.size(); ++i) ASSERT_NEAR(s.image[i], e[i], 1e-4 * (1 + std::fabs(e[i]))) << i;
  }
}

TEST(AuglabRandomConvolution, RetainStats) {
  auto t = Make({{"retain_stats", true}, {"kernel_sizes", {3}}});
  SampleData s = testing::RandomSample(1, {6, 6, 6});
  const auto st0 = kernels::ComputeStats(s.image.data(), s.voxels(), true);
  auto p = testing::DrawFor(*t, s.layout(), 4);
  ASSERT_TRUE(t->Apply(*p, s).ok());
  const auto st1 = kernels::ComputeStats(s.image.data(), s.voxels(), true);
  EXPECT_NEAR(st1.mean, st0.mean, 1e-4);
  EXPECT_NEAR(st1.std_unbiased, st0.std_unbiased, 1e-4);
}

TEST(AuglabRandomConvolution, DrawDistribution) {
  auto t = Make({{"apply_to_channel", {0, 1}}});  // kernel_sizes [1, 3, 5, 7], mix_prob 0.2
  int size_count[8] = {};
  int mixes = 0, n = 0;
  double alpha_sum = 0, w_sum = 0, w_sq = 0;
  int64_t w_n = 0;
  for (uint64_t k = 0; k < 2000; ++k) {
    auto p = testing::DrawFor(*t, {2, {4, 4, 4}, 1}, 17, k);
    const auto& q = static_cast<const RandomConvolutionParams&>(*p);
    ASSERT_EQ(q.kernel_size.size(), 2u);
    for (size_t i = 0; i < 2; ++i, ++n) {
      const int ks = q.kernel_size[i];
      ASSERT_TRUE(ks == 1 || ks == 3 || ks == 5 || ks == 7);
      ASSERT_EQ(q.kernel[i].size(), static_cast<size_t>(ks * ks * ks));
      ++size_count[ks];
      for (float w : q.kernel[i]) {  // w·k ~ N(0, 1)
        w_sum += w * ks;
        w_sq += w * ks * w * ks;
        ++w_n;
      }
      if (q.mix[i]) {
        ++mixes;
        alpha_sum += q.alpha[i];
      }
    }
  }
  for (int ks : {1, 3, 5, 7}) EXPECT_NEAR(size_count[ks] / static_cast<double>(n), 0.25, 0.03) << ks;
  EXPECT_NEAR(mixes / static_cast<double>(n), 0.2, 0.025);
  EXPECT_NEAR(alpha_sum / mixes, 0.5, 0.05);
  EXPECT_NEAR(w_sum / w_n, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(w_sq / w_n), 1.0, 0.01);
}

TEST(AuglabRandomConvolution, JsonRoundTripAndErrors) {
  auto t = TransformFromJson("random_convolution", {{"kernel_sizes", {3}}, {"mix_prob", 1.0}});
  ASSERT_TRUE(t.ok()) << t.status();
  SampleData s = testing::RandomSample(1, {4, 5, 6});
  SampleData s2 = s;
  auto p = testing::DrawFor(**t, s.layout(), 8);
  const nlohmann::json j = (*t)->ParamsToJson(*p);
  auto back = (*t)->ParseParams(j, s.layout());
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ((*t)->ParamsToJson(**back), j);
  ASSERT_TRUE((*t)->Apply(*p, s).ok());
  ASSERT_TRUE((*t)->Apply(**back, s2).ok());
  EXPECT_EQ(s.image, s2.image);
  EXPECT_EQ((*t)->ConfigToJson()["kernel_sizes"], nlohmann::json({3}));
  for (const nlohmann::json& bad : {nlohmann::json{{"kernel_sizes", {2}}}, nlohmann::json{{"kernel_sizes", {17}}},
                                    nlohmann::json{{"kernel_sizes", nlohmann::json::array()}},
                                    nlohmann::json{{"mix_prob", 1.5}}, nlohmann::json{{"sigma", 1}}})
    EXPECT_EQ(TransformFromJson("random_convolution", bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  nlohmann::json wrong = j;
  wrong["kernel"][0].erase(0);
  EXPECT_EQ((*t)->ParseParams(wrong, s.layout()).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
