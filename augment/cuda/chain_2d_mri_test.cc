// Host-only tests (no GPU): the 2D lifts of the MRI artefacts and AugLab's extras (cuda/chain_2d.h). Each lift is
// checked against the CPU engine itself: the CPU transform's 3D definition with the lifted parameters on the chain's
// (1, X, Y) form must give the CPU's 2D result on (X, Y) — the GPU stages equal those 3D definitions (their 3D
// tests), so this is the host half of the 2D parity; the GPU half is CudaMriStages.*2d* / CudaAuglabStages.TwoDEqualCpu.
#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "augment/cuda/chain_2d.h"
#include "augment/registry.h"
#include "augment/testing/test_util.h"
#include "augment/transforms/bias_field/bias_field.h"
#include "augment/transforms/ghosting/ghosting.h"
#include "augment/transforms/motion/motion.h"
#include "augment/transforms/spike/spike.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

using json = nlohmann::json;

std::shared_ptr<const Transform> Make(const std::string& kind, const json& config) {
  auto t = TransformFromJson(kind, config);
  EXPECT_TRUE(t.ok()) << kind << ": " << t.status();
  return t.ok() ? *t : nullptr;
}

// Number of voxels where |a − b| > tol · max(1, max |b|); the first is reported with `label`.
int64_t Mismatches(const std::vector<float>& a, const std::vector<float>& b, double tol, const std::string& label) {
  EXPECT_EQ(a.size(), b.size()) << label;
  double scale = 1.0;
  for (float v : b) scale = std::max(scale, std::abs(static_cast<double>(v)));
  int64_t bad = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (std::abs(static_cast<double>(a[i]) - b[i]) <= tol * scale) continue;
    if (bad++ == 0) ADD_FAILURE() << label << ": first mismatch at element " << i << ": " << a[i] << " vs " << b[i];
  }
  return bad;
}

// The CPU's 2D result of `t` on a random (X, Y) sample, and the CPU's 3D result on the same values as (1, X, Y) with
// the parameters LiftParams2D gives (the drawn ones where it answers nullptr). Returns {2D, lifted 3D}.
std::pair<std::vector<float>, std::vector<float>> TwoWays(const Transform& t, int64_t x, int64_t y, int64_t channels,
                                                          uint64_t seed, std::unique_ptr<TransformParams>* lifted_out) {
  SampleData s2 = testing::RandomSample(channels, {x, y}, 0, 0, 0, static_cast<uint32_t>(seed));
  SampleData s3 = s2;
  s3.shape = {1, x, y};
  auto drawn = testing::DrawFor(t, s2.layout(), seed);
  if (drawn == nullptr) return {};
  EXPECT_TRUE(t.Apply(*drawn, s2).ok());
  auto lifted = LiftParams2D(t.kind(), *drawn);
  EXPECT_TRUE(lifted.ok()) << lifted.status();
  if (!lifted.ok()) return {};
  const TransformParams& p3 = *lifted != nullptr ? **lifted : *drawn;
  const absl::Status st = t.Apply(p3, s3);
  EXPECT_TRUE(st.ok()) << st;
  if (lifted_out != nullptr) *lifted_out = *lifted != nullptr ? std::move(*lifted) : std::move(drawn);
  return {s2.image, s3.image};
}

TEST(Chain2dMri, SevenStagesTake2dSamples) {
  for (TransformKind k : {TransformKind::kBiasField, TransformKind::kGhosting, TransformKind::kSpike,
                          TransformKind::kMotion, TransformKind::kHistogramEqualization,
                          TransformKind::kRandomConvolution, TransformKind::kIntensityFunction})
    EXPECT_TRUE(CheckStage2D(k, 3).ok()) << TransformKindName(k);
}

// bias_field: bit for bit (same monomials, products and summation order); the drawn (unlifted) coefficients on
// (1, X, Y) would evaluate other monomials.
TEST(Chain2dMri, BiasFieldLiftGivesTheCpu2dField) {
  for (int order : {0, 1, 3, 5, 10})
    for (const auto& xy : {std::pair<int64_t, int64_t>{7, 5}, {1, 6}, {9, 1}, {12, 13}}) {
      auto t = Make("bias_field", {{"coefficients", 0.4}, {"order", order}});
      ASSERT_NE(t, nullptr);
      const std::string label = "bias_field order " + std::to_string(order) + " (" + std::to_string(xy.first) +
                                ", " + std::to_string(xy.second) + ")";
      std::unique_ptr<TransformParams> lifted;
      const auto [two_d, three_d] = TwoWays(*t, xy.first, xy.second, 2, 100 + order, &lifted);
      EXPECT_EQ(Mismatches(three_d, two_d, 0.0, label), 0);
      if (order >= 1 && xy.first > 1 && xy.second > 1) {  // the lift matters
        SampleData s = testing::RandomSample(2, {1, xy.first, xy.second}, 0, 0, 0, static_cast<uint32_t>(100 + order));
        auto drawn = testing::DrawFor(*t, SampleLayout{2, {xy.first, xy.second}, 0}, 100 + order);
        ASSERT_TRUE(t->Apply(*drawn, s).ok());
        EXPECT_NE(s.image, two_d) << label << ": unlifted coefficients should differ";
      }
    }
  BiasFieldParams bad;
  bad.order = 2;
  bad.coefficients = {1.0, 2.0};
  EXPECT_TRUE(absl::IsInvalidArgument(LiftParams2D(TransformKind::kBiasField, bad).status()));
}

// k-space stages: the lifted 3D definition on (1, X, Y) equals the 2D one up to FFT rounding (complex128 here).
TEST(Chain2dMri, GhostingAndSpikeLiftsGiveTheCpu2dResult) {
  const std::vector<std::pair<std::string, json>> cases = {
      {"ghosting", {{"axes", {0}}}},
      {"ghosting", {{"axes", {1}}, {"num_ghosts", {1, 3}}, {"restore", 0.3}}},
      {"ghosting", json::object()},
      {"spike", json::object()},
      {"spike", {{"num_spikes", {2, 4}}, {"intensity", 2}}},
  };
  uint64_t seed = 7;
  for (const auto& [kind, config] : cases)
    for (const auto& xy : {std::pair<int64_t, int64_t>{11, 8}, {15, 15}, {6, 9}}) {
      auto t = Make(kind, config);
      ASSERT_NE(t, nullptr);
      const std::string label = kind + " " + config.dump() + " (" + std::to_string(xy.first) + ", " +
                                std::to_string(xy.second) + ")";
      std::unique_ptr<TransformParams> lifted;
      const auto [two_d, three_d] = TwoWays(*t, xy.first, xy.second, 2, seed++, &lifted);
      EXPECT_EQ(Mismatches(three_d, two_d, 1e-5, label), 0);
      EXPECT_NE(two_d, testing::RandomSample(2, {xy.first, xy.second}, 0, 0, 0, static_cast<uint32_t>(seed - 1)).image)
          << label << ": the artefact changed nothing";
      if (kind == "ghosting") {
        EXPECT_GE(static_cast<const GhostingParams&>(*lifted).axis, 1) << label;
      }
    }
  GhostingParams g;
  g.axis = 2;  // no third axis in 2D
  EXPECT_TRUE(absl::IsInvalidArgument(LiftParams2D(TransformKind::kGhosting, g).status()));
  SpikeParams sp;
  sp.positions = {{0.1, 0.2, 0.3}};
  auto q = LiftParams2D(TransformKind::kSpike, sp);
  ASSERT_TRUE(q.ok() && *q != nullptr);
  EXPECT_EQ((static_cast<const SpikeParams&>(**q).positions[0]), (std::array<double, 3>{0.3, 0.1, 0.2}));
}

// motion: the CPU's 2D form (X, Y, 1) resampled through its affine equals (1, X, Y) resampled through
// PlanarMotionAffine — bit for bit for drawn (in-plane) parameters, to rounding for out-of-plane ones.
TEST(Chain2dMri, MotionPlanarAffineResamplesAsTheCpu2dForm) {
  auto t = Make("motion", {{"degrees", 30}, {"translation", 4}, {"num_transforms", 3}});
  ASSERT_NE(t, nullptr);
  const int64_t x = 13, y = 10;
  SampleData s = testing::RandomSample(1, {x, y}, 0, 0, 0, 5);
  const float fill = *std::min_element(s.image.begin(), s.image.end());
  for (uint64_t seed : {1, 2, 3}) {
    auto drawn = testing::DrawFor(*t, s.layout(), seed);
    ASSERT_NE(drawn, nullptr);
    const auto& p = static_cast<const MotionParams&>(*drawn);
    auto lifted = LiftParams2D(TransformKind::kMotion, p);
    ASSERT_TRUE(lifted.ok() && *lifted != nullptr);
    const auto* planar = dynamic_cast<const PlanarMotionParams*>(lifted->get());
    ASSERT_NE(planar, nullptr) << "motion's 2D lift must mark the parameters planar";
    EXPECT_EQ(planar->times, p.times);
    for (size_t i = 0; i < p.times.size(); ++i) {
      ASSERT_NE(p.degrees[i][2], 0.0);
      const MotionAffine a = MotionIndexAffine(p.degrees[i], p.translation[i]);
      std::vector<float> cpu(s.image.size()), lifted_out(s.image.size());
      MotionResample(s.image.data(), {x, y, 1}, a, fill, cpu.data());
      MotionResample(s.image.data(), {1, x, y}, PlanarMotionAffine(a), fill, lifted_out.data());
      EXPECT_EQ(Mismatches(lifted_out, cpu, 0.0, "motion in-plane transform " + std::to_string(i)), 0);
      EXPECT_NE(cpu, s.image);
    }
    // The CPU's 2D k-space composite segments its unit last axis: one image fills it (the stage's planar mode).
    int filled = 0;
    for (const MotionSegment& sg : MotionSegments(p, 1)) filled += sg.hi > sg.lo ? 1 : 0;
    EXPECT_EQ(filled, 1);
  }
  // Out-of-plane (injected) parameters: the unit axis leaves the plane (fill) or interpolates onto itself.
  const MotionAffine a = MotionIndexAffine({4.0, -3.0, 20.0}, {1.5, -2.0, 0.3});
  std::vector<float> cpu(s.image.size()), lifted_out(s.image.size());
  MotionResample(s.image.data(), {x, y, 1}, a, fill, cpu.data());
  MotionResample(s.image.data(), {1, x, y}, PlanarMotionAffine(a), fill, lifted_out.data());
  EXPECT_EQ(Mismatches(lifted_out, cpu, 1e-6, "motion out-of-plane"), 0);
}

// AugLab's extras read a 2D sample as 1 × X × Y: the drawn parameters, applied as 3D on (1, X, Y), give the 2D
// result bit for bit, and LiftParams2D keeps them (nullptr).
TEST(Chain2dMri, AuglabExtrasUseTheir2dParametersAsDrawn) {
  const std::vector<std::pair<std::string, json>> cases = {
      {"histogram_equalization", {{"retain_stats", true}}},
      {"random_convolution", {{"kernel_sizes", {3, 7}}, {"mix_prob", 0.5}}},
      {"intensity_function", {{"p_function", 1.0}, {"p_inverse", 1.0}}},
  };
  for (const auto& [kind, config] : cases) {
    auto t = Make(kind, config);
    ASSERT_NE(t, nullptr);
    SampleData s = testing::RandomSample(1, {9, 7}, 0, 0, 0, 3);
    auto drawn = testing::DrawFor(*t, s.layout(), 3);
    ASSERT_NE(drawn, nullptr);
    auto lifted = LiftParams2D(t->kind(), *drawn);
    ASSERT_TRUE(lifted.ok());
    EXPECT_EQ(*lifted, nullptr) << kind;
    const auto [two_d, three_d] = TwoWays(*t, 9, 7, 2, 3, nullptr);
    EXPECT_EQ(Mismatches(three_d, two_d, 0.0, kind), 0);
  }
}

}  // namespace
}  // namespace augmentd
