// Host-side tests (no GPU) of cuda/chain_2d.h for nnUNetTrainerDA5's local stages: which kinds take 2D samples and
// the lifts of their 2D parameters, checked against the CPU transforms' own 2D arithmetic where the lift claims
// bit equality (the local kernels' unit-axis factor, the bump volume). The GPU results of the lifted stages vs the
// CPU engine are in cuda/stages_da5_test.cc (CudaDa5Stages.EqualCpuTransformsOn2dSamples, label gpu).
#include "augment/cuda/chain_2d.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "augment/testing/kind_list.h"
#include "augment/transforms/blank_rectangle/blank_rectangle.h"
#include "augment/transforms/brightness_gradient_additive/brightness_gradient_additive.h"
#include "augment/transforms/local_gamma/local_gamma.h"
#include "augment/transforms/common/local_kernel.h"
#include "augment/transforms/median_filter/median_filter.h"
#include "augment/transforms/rician_noise/rician_noise.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

constexpr TransformKind kDa5Local[] = {TransformKind::kMedianFilter,   TransformKind::kSharpening,
                                       TransformKind::kBlankRectangle, TransformKind::kBrightnessGradientAdditive,
                                       TransformKind::kLocalGamma,     TransformKind::kRicianNoise};

TEST(Chain2dDa5, LocalStagesTake2dSamples) {
  for (TransformKind k : kDa5Local) EXPECT_TRUE(CheckStage2D(k, 3).ok()) << TransformKindName(k);
  // Every kind of today has a 2D form on CUDA (a kind added to the CPU engine without one fails here until it is
  // given one or deliberately refused).
  // CPU-only kinds (no CUDA stage at all: the CUDA engine refuses the pipeline, the CPU engine runs it) are exempt.
  // The list's CPU_ONLY kinds (no backend) and NO_2D kinds answer UNIMPLEMENTED (augment/transforms/kinds.inc).
  for (const testing::KindRow& row : testing::kKindRows) {
    if (!row.cuda_2d()) {
      EXPECT_EQ(CheckStage2D(row.kind, 7).code(), absl::StatusCode::kUnimplemented) << row.name;
      continue;
    }
    EXPECT_TRUE(CheckStage2D(row.kind, 7).ok()) << row.name << ": " << CheckStage2D(row.kind, 7);
  }
}

TEST(Chain2dDa5, MedianAndRicianRunAsDrawn) {
  MedianFilterParams m;
  m.filter_sizes = {3, 5};
  m.apply_channel = {true, false};
  auto lm = LiftParams2D(TransformKind::kMedianFilter, m);
  ASSERT_TRUE(lm.ok()) << lm.status();
  EXPECT_EQ(*lm, nullptr);
  RicianNoiseParams r;
  r.variance = 0.3;
  auto lr = LiftParams2D(TransformKind::kRicianNoise, r);
  ASSERT_TRUE(lr.ok()) << lr.status();
  EXPECT_EQ(*lr, nullptr);
}

TEST(Chain2dDa5, SharpeningBecomesPlanar) {
  SharpeningParams p;
  p.strengths = {0.25, 0.75};
  p.clamp_intensities = {false, true};
  p.apply_channel = {true, true};
  auto l = LiftParams2D(TransformKind::kSharpening, p);
  ASSERT_TRUE(l.ok()) << l.status();
  const auto* q = dynamic_cast<const PlanarSharpeningParams*>(l->get());
  ASSERT_NE(q, nullptr) << "2D sharpening parameters must select the planar kernel";
  EXPECT_EQ(q->strengths, p.strengths);
  EXPECT_EQ(q->clamp_intensities, p.clamp_intensities);
  EXPECT_EQ(q->apply_channel, p.apply_channel);
}

TEST(Chain2dDa5, BlankRectanglesCoverTheUnitAxis) {
  BlankRectangleParams p;
  p.apply_channel = {true, false};
  p.rectangles = {{{{2, 3}, {5, 4}}, {{0, 0}, {1, 7}}}, {}};
  p.values = {{1.5, -2.0}, {}};
  auto l = LiftParams2D(TransformKind::kBlankRectangle, p);
  ASSERT_TRUE(l.ok() && *l != nullptr) << l.status();
  const auto& q = static_cast<const BlankRectangleParams&>(**l);
  ASSERT_EQ(q.rectangles.size(), 2u);
  ASSERT_EQ(q.rectangles[0].size(), 2u);
  EXPECT_EQ(q.rectangles[0][0].lb, (std::vector<int64_t>{0, 2, 3}));
  EXPECT_EQ(q.rectangles[0][0].ub, (std::vector<int64_t>{1, 5, 4}));
  EXPECT_EQ(q.rectangles[0][1].lb, (std::vector<int64_t>{0, 0, 0}));
  EXPECT_EQ(q.rectangles[0][1].ub, (std::vector<int64_t>{1, 1, 7}));
  EXPECT_TRUE(q.rectangles[1].empty());
  EXPECT_EQ(q.values, p.values);
  EXPECT_EQ(q.apply_channel, p.apply_channel);
  EXPECT_EQ(p.rectangles[0][0].lb.size(), 2u);  // the drawn params are untouched
  p.rectangles[0][1].ub = {1, 7, 2};
  const absl::Status st = LiftParams2D(TransformKind::kBlankRectangle, p).status();
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_NE(st.message().find("params.rectangles"), std::string::npos) << st;
}

bool SameBits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST(Chain2dDa5, UnitAxisLocalFactorIsExactlyOne) {
  EXPECT_TRUE(SameBits(transforms_internal::LocalGaussianAxis(1, 0.0, kUnitAxisLocalScale), {1.0f}));
}

// The lifted spec's 3D bump on (1, X, Y) equals the CPU's 2D bump bit for bit (the stages build theirs from the
// same 1D factors, and the brightness gradient's mean from this very volume).
TEST(Chain2dDa5, LiftedLocalKernelsEqualThe2dBump) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<double> loc(-0.5, 1.5), scale(0.5, 30);
  const std::vector<std::vector<int64_t>> shapes = {{13, 11}, {7, 9}, {1, 7}, {40, 3}};
  for (const auto& shape : shapes)
    for (int rep = 0; rep < 8; ++rep) {
      LocalKernelSpec spec;
      for (int64_t s : shape) {
        spec.loc_px.push_back(loc(gen) * static_cast<double>(s));
        spec.scale.push_back(scale(gen));
      }
      spec.factor = 2.5;
      BrightnessGradientAdditiveParams g;
      g.specs = {spec, std::nullopt};
      const size_t n = static_cast<size_t>(shape[0] * shape[1]);
      g.dense = {nullptr, std::make_shared<const std::vector<float>>(n, 0.5f)};
      auto lg = LiftParams2D(TransformKind::kBrightnessGradientAdditive, g);
      ASSERT_TRUE(lg.ok() && *lg != nullptr) << lg.status();
      const auto& q = static_cast<const BrightnessGradientAdditiveParams&>(**lg);
      ASSERT_TRUE(q.specs[0].has_value());
      EXPECT_FALSE(q.specs[1].has_value());
      EXPECT_EQ(q.dense[1], g.dense[1]);  // dense kernels: same C order on (1, X, Y)
      EXPECT_EQ(q.specs[0]->factor, 2.5);
      EXPECT_EQ(q.specs[0]->loc_px, (std::vector<double>{0.0, spec.loc_px[0], spec.loc_px[1]}));
      EXPECT_EQ(q.specs[0]->scale, (std::vector<double>{kUnitAxisLocalScale, spec.scale[0], spec.scale[1]}));

      std::vector<float> want(n), got(n);
      transforms_internal::LocalGaussianKernel(shape, spec.loc_px, spec.scale, want.data());
      transforms_internal::LocalGaussianKernel({1, shape[0], shape[1]}, q.specs[0]->loc_px, q.specs[0]->scale,
                                               got.data());
      EXPECT_TRUE(SameBits(got, want)) << "shape " << shape[0] << "x" << shape[1] << " rep " << rep;

      LocalGammaParams lgp;
      lgp.specs = {std::nullopt, spec};
      lgp.dense = {nullptr, nullptr};
      lgp.gammas = {std::nullopt, 0.5};
      auto ll = LiftParams2D(TransformKind::kLocalGamma, lgp);
      ASSERT_TRUE(ll.ok() && *ll != nullptr) << ll.status();
      const auto& r = static_cast<const LocalGammaParams&>(**ll);
      EXPECT_FALSE(r.specs[0].has_value());
      ASSERT_TRUE(r.specs[1].has_value());
      EXPECT_EQ(r.specs[1]->loc_px, q.specs[0]->loc_px);
      EXPECT_EQ(r.specs[1]->scale, q.specs[0]->scale);
      EXPECT_EQ(r.gammas, lgp.gammas);
    }
}

TEST(Chain2dDa5, LocalKernelSpecsMustBe2d) {
  LocalKernelSpec spec;
  spec.loc_px = {1, 2, 3};
  spec.scale = {1, 1, 1};
  LocalGammaParams p;
  p.specs = {spec};
  p.dense = {nullptr};
  p.gammas = {1.5};
  const absl::Status st = LiftParams2D(TransformKind::kLocalGamma, p).status();
  EXPECT_TRUE(absl::IsInvalidArgument(st)) << st;
  EXPECT_NE(st.message().find("local_gamma: params.kernel_params"), std::string::npos) << st;
  BrightnessGradientAdditiveParams g;
  g.specs = {spec};
  g.dense = {nullptr};
  EXPECT_TRUE(absl::IsInvalidArgument(LiftParams2D(TransformKind::kBrightnessGradientAdditive, g).status()));
}

}  // namespace
}  // namespace augmentd
