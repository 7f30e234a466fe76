// GPU tests of the TorchIO / AugLab resampling stages (augment/transforms/{anisotropy,auglab_low_resolution,
// torchio_affine,elastic_deformation}/<name>_cuda.cc) against the CPU transforms: random batches (B = 1, 3; 1 and 2
// channels; 0, 1 or 2 label channels; odd and tiny shapes), parameters from the CPU transform's own Draw (every third
// sample without params: it must stay untouched), the stage driven directly on device buffers through ParamArena /
// ChainWorkspace, twice per configuration (the second batch reuses both). Images: |gpu − cpu| <= tol·(1 + |cpu|);
// labels: mismatch fraction <= 1e-4 (both engines run sitk_math.h's per-voxel code, so the labels are expected to be
// identical; the allowance only keeps the verdict CPU-independent). 2D samples (X, Y): the CPU's 2D result vs the
// stage on the chain's (1, X, Y) form (parameters through LiftParams2D, cuda/chain_2d.h).
// Skipped without a GPU. ctest names: cuda_torchio_stages_test (label gpu), cuda_torchio_stages_coverage_test.
#include <memory>
#include <string>
#include <vector>

#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/registry.h"
#include "augment/testing/stage_harness.h"
#include "augment/testing/test_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace augmentd {
namespace {

using json = nlohmann::json;

struct TorchioCase {
  std::string kind;
  json config;
  float tol;  // image: |gpu − cpu| <= tol · (1 + |cpu|)
  bool three_d_only = false;
};

std::vector<TorchioCase> TorchioCases() {
  return {
      {"anisotropy", json::object(), 1e-5f},
      {"anisotropy", {{"downsampling", {1.0, 7.0}}, {"image_interpolation", "nearest"}, {"scalars_only", false}}, 0.0f},
      {"anisotropy", {{"axes", {1}}, {"downsampling", 3.3}, {"scalars_only", false}}, 1e-5f},
      {"torchio_affine", json::object(), 1e-5f},
      {"torchio_affine",
       {{"degrees", 30}, {"translation", {1.5, 2.0, 0.5}}, {"scales", {0.7, 1.3}}, {"default_pad_value", -3.5},
        {"default_pad_label", 2}},
       1e-5f},
      {"torchio_affine",
       {{"degrees", {-20, 20}}, {"scales", 0.2}, {"isotropic", true}, {"center", "origin"},
        {"image_interpolation", "nearest"}},
       0.0f},
      {"elastic_deformation", {{"num_control_points", 7}, {"max_displacement", 4}}, 1e-5f},
      {"elastic_deformation",
       {{"num_control_points", {5, 6, 4}}, {"max_displacement", {2.5, 1, 3}}, {"locked_borders", 1},
        {"image_interpolation", "nearest"}},
       0.0f},
      {"auglab_low_resolution", json::object(), 0.0f, true},
      {"auglab_low_resolution", {{"scale", {0.5, 1.0}}, {"crop", {0.8, 1.0}}, {"scale_axes", {0, 2}}}, 0.0f, true},
      {"auglab_low_resolution", {{"mode", "acq"}, {"scale", {0.2, 1.0}}, {"scale_axes", {1}}}, 1e-6f, true},
      {"auglab_low_resolution",
       {{"mode", "acq"}, {"scale", {0.3, 0.9}}, {"apply_to_channel", {0}}, {"scale_axes", {0, 1, 2}}},
       1e-6f,
       true},
  };
}

// Every case on each shape (3 dims, or 2: 2D samples; three_d_only cases skip those), batch size, 1 and 2 channels and
// 0, 1 or 2 label channels, `reps` times each (testing::SweepCase: labels 0..4, every third sample without params,
// images within the case's tolerance per batch); per case at most 1e-4 of the label voxels may differ.
void CompareCases(const std::vector<TorchioCase>& cases, const std::vector<std::vector<int64_t>>& shapes,
                  const std::vector<int>& batches, int reps, uint64_t seed) {
  testing::TestStream stream;
  ASSERT_TRUE(stream.ok());
  for (const TorchioCase& c : cases) {
    testing::Sweep sweep;
    for (const std::vector<int64_t>& shape : shapes)
      if (!c.three_d_only || shape.size() == 3) sweep.shapes.push_back(shape);
    sweep.batches = batches;
    sweep.seg_channels = {0, 1, 2};
    sweep.reps = reps;
    sweep.labels = testing::LabelCheck::kCount;
    sweep.sample.label_lo = 0;
    sweep.sample.label_hi = 4;
    const testing::SweepTotals m = testing::SweepCase({c.kind, c.config, c.tol}, sweep, seed, stream.get());
    EXPECT_LE(static_cast<double>(m.labels), 1e-4 * static_cast<double>(m.label_voxels))
        << c.kind << " " << c.config.dump() << ": " << m.labels << " of " << m.label_voxels << " labels differ";
  }
}

TEST(CudaTorchioStages, EqualCpuTransforms) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  CompareCases(TorchioCases(), {{13, 11, 9}, {3, 5, 4}, {1, 7, 6}}, {1, 3}, 2, 1);
}

TEST(CudaTorchioStages, TwoDEqualCpu) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  std::vector<TorchioCase> cases;
  for (const TorchioCase& c : TorchioCases()) {
    if (c.three_d_only) continue;
    auto t = TransformFromJson(c.kind, c.config);
    ASSERT_TRUE(t.ok()) << c.kind << ": " << t.status();
    EXPECT_TRUE(CheckStage2D((*t)->kind(), 2).ok()) << c.kind;
    cases.push_back(c);  // 2D samples have no axis 2: anisotropy draws among the remaining axes
  }
  CompareCases(cases, {{37, 45}, {5, 3}}, {1, 2}, 1, 1000);
}

TEST(CudaTorchioStages, CoverageWithoutGpu) {
  // No GPU needed: the factory only inspects the configuration; Prepare only packs host records.
  for (const TorchioCase& c : TorchioCases()) {
    auto t = TransformFromJson(c.kind, c.config);
    ASSERT_TRUE(t.ok()) << c.kind << ": " << t.status();
    auto stage = MakeCudaStage(**t, 0);
    ASSERT_TRUE(stage.ok()) << c.kind << ": " << stage.status();
    ASSERT_NE(*stage, nullptr) << c.kind;
    SampleData s = testing::RandomSample(1, {6, 5, 4}, 1, 0, 3, 1);
    auto params = testing::DrawFor(**t, s.layout(), 1);
    ASSERT_NE(params, nullptr);
    const ChainTensors tensors = testing::HostTensors(2, 1, 1, {6, 5, 4});
    ParamArena arena;
    const absl::Status st = (*stage)->Prepare({params.get(), nullptr}, tensors, arena);
    EXPECT_TRUE(st.ok()) << c.kind << ": " << st;
  }
}

}  // namespace
}  // namespace augmentd
