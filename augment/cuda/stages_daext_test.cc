// GPU tests of the DAExt AugLab kinds' chain stages (augment/transforms/{clamp,zscore_normalization,
// auglab_bias_field,shape_crop,edge_convolution,unsharp_mask}/<name>_cuda.cc) against the CPU transforms: random
// batches (B = 1, 3, 8; 1 and 2 channels; odd and tiny shapes), parameters from the CPU transform's own Draw (every
// third sample without params: it must stay untouched), the stage driven directly on device buffers through
// ParamArena / ChainWorkspace, twice per configuration (the second batch reuses both). Images within a tolerance
// (|gpu − cpu| <= tol · (1 + |cpu|)), labels exactly (shape_crop zeroes them outside its box). One case per kind
// forces AugLab's NaN guard (unsharp_mask with sigma 0: NaN weights, the channel stays as it was on both engines).
// 2D samples (X, Y) (CudaDaextStages.TwoDEqualCpu): the CPU's 2D result vs the stage on the chain's (1, X, Y) form.
// Skipped without a GPU. ctest names: cuda_daext_stages_test (label gpu), cuda_daext_stages_coverage_test (host).
#include <memory>
#include <string>
#include <vector>

#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/registry.h"
#include "augment/testing/stage_harness.h"
#include "augment/testing/test_util.h"
#include "augment/transforms/auglab_bias_field/auglab_bias_field.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace augmentd {
namespace {

using json = nlohmann::json;

using testing::StageCase;  // kind, config, tolerance (|gpu − cpu| <= tol · (1 + |cpu|)), min_channels, seg

std::vector<StageCase> DaextCases() {
  return {
      {"clamp", json::object(), 1e-6f, 1},
      {"clamp", {{"max_clamp_amount", 0.5}, {"apply_to_channel", {1, 0}}, {"retain_stats", true}}, 1e-5f, 2},
      {"zscore_normalization", json::object(), 1e-5f, 1},
      {"zscore_normalization", {{"apply_to_channel", {1, 0}}, {"unbiased", true}}, 1e-5f, 2},
      {"zscore_normalization", {{"apply_to_channel", {0, 5}}}, 1e-5f, 1},  // channel 5 skipped, as AugLab does
      {"auglab_bias_field", json::object(), 1e-5f, 1},
      {"auglab_bias_field",
       {{"coefficients", {-0.3, 0.6}}, {"order", 5}, {"invert", true}, {"retain_stats", true},
        {"apply_to_channel", {1, 0}}},
       1e-4f,
       2},
      {"auglab_bias_field", {{"order", 0}, {"apply_to_channel", {1}}}, 1e-5f, 2},
      {"shape_crop", json::object(), 0.0f, 1, 1},
      {"shape_crop", {{"shape_min", 2}, {"ignore_axes", {0}}}, 0.0f, 1, 2},
      {"edge_convolution", json::object(), 1e-5f, 1},
      {"edge_convolution", {{"kernel_type", "scharr"}, {"absolute", true}}, 1e-5f, 1},
      {"edge_convolution", {{"kernel_type", "scharr"}, {"apply_to_channel", {1, 0}}, {"retain_stats", true}}, 1e-5f,
       2},
      {"unsharp_mask", json::object(), 1e-5f, 1},
      {"unsharp_mask", {{"sigma", 2.0}, {"unsharp_amount", 1.5}, {"apply_to_channel", {0, 1}}, {"retain_stats", true}},
       1e-5f, 2},
      {"unsharp_mask", {{"sigma", 0.0}}, 0.0f, 1},  // NaN weights: the guard leaves the channel as it was
  };
}

// Every case on each shape (3 dims, or 2: 2D samples, the CPU on (X, Y), the stage on (1, X, Y) with the parameters
// LiftParams2D gives), batch size and channel count, `reps` times each (testing::SweepCase: labels −1..3, every third
// sample without params, images within the case's tolerance, labels exactly).
testing::Sweep DaextSweep(const std::vector<std::vector<int64_t>>& shapes, const std::vector<int>& batches, int reps) {
  testing::Sweep sweep;
  sweep.shapes = shapes;
  sweep.batches = batches;
  sweep.reps = reps;
  return sweep;
}

TEST(CudaDaextStages, EqualCpuTransforms) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  testing::SweepCases(DaextCases(), DaextSweep({{13, 11, 9}, {3, 5, 4}, {1, 7, 6}}, {1, 3, 8}, 2), 1);
}

// 2D samples (nnU-Net's "2d" configuration): every case above, odd shapes, B = 1 and 2.
TEST(CudaDaextStages, TwoDEqualCpu) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  const std::vector<StageCase> cases = DaextCases();
  for (const StageCase& c : cases) {
    auto t = TransformFromJson(c.kind, c.config);
    ASSERT_TRUE(t.ok()) << c.kind << ": " << t.status();
    EXPECT_TRUE(CheckStage2D((*t)->kind(), 2).ok()) << c.kind;
  }
  testing::SweepCases(cases, DaextSweep({{37, 45}, {5, 3}}, {1, 2}, 1), 1000);
}

// No GPU needed: the factories only inspect the configuration, Prepare only packs host records.
TEST(CudaDaextStages, CoverageAndPrepare) {
  // Every GPU case above parses, builds its stage, draws on every shape and channel count the GPU tests use, and
  // Prepare packs those draws (so the GPU tests fail only on what the device computes).
  for (const StageCase& c : DaextCases()) {
    auto t = TransformFromJson(c.kind, c.config);
    ASSERT_TRUE(t.ok()) << c.kind << " " << c.config.dump() << ": " << t.status();
    auto stage = MakeCudaStage(**t, 2);
    ASSERT_TRUE(stage.ok() && *stage != nullptr) << c.kind << ": " << stage.status();
    for (const std::vector<int64_t>& shape :
         std::vector<std::vector<int64_t>>{{13, 11, 9}, {3, 5, 4}, {1, 7, 6}, {37, 45}, {5, 3}})
      for (int channels = c.min_channels; channels <= 2; ++channels) {
        SampleData s = testing::RandomSample(channels, shape, c.seg_channels, -1, 3, 7);
        auto params = testing::DrawFor(**t, s.layout(), 5);
        ASSERT_NE(params, nullptr) << c.kind << " " << c.config.dump();
        EXPECT_TRUE((*t)->Apply(*params, s).ok()) << c.kind << " " << c.config.dump();
        const ChainTensors tensors = testing::HostTensors(1, channels, c.seg_channels, shape);
        ParamArena arena;
        const absl::Status st = (*stage)->Prepare({params.get()}, tensors, arena);
        EXPECT_TRUE(st.ok()) << c.kind << " " << c.config.dump() << ": " << st;
      }
  }
  for (const char* kind : {"clamp", "zscore_normalization", "auglab_bias_field", "shape_crop", "edge_convolution",
                           "unsharp_mask"}) {
    auto t = TransformFromJson(kind, json::object());
    ASSERT_TRUE(t.ok()) << kind;
    EXPECT_TRUE(HasCudaImplementation((*t)->kind())) << kind;
    EXPECT_TRUE(CheckStage2D((*t)->kind(), 0).ok()) << kind;
    auto stage = MakeCudaStage(**t, 0);
    ASSERT_TRUE(stage.ok()) << stage.status();
    ASSERT_NE(*stage, nullptr) << kind;
    // A batch of two samples, the second without params: Prepare packs them (or nothing) without a device.
    SampleData s = testing::RandomSample(1, {4, 5, 6}, 1, -1, 3, 1);
    auto params = testing::DrawFor(**t, s.layout(), 1);
    ASSERT_NE(params, nullptr) << kind;
    const ChainTensors tensors = testing::HostTensors(2, 1, 1, {4, 5, 6});
    ParamArena arena;
    const absl::Status st = (*stage)->Prepare({params.get(), nullptr}, tensors, arena);
    EXPECT_TRUE(st.ok()) << kind << ": " << st;
  }
  // Channels the scratch lacks: INVALID_ARGUMENT, as the CPU Apply (zscore and the bias field skip them instead).
  for (const char* kind : {"clamp", "edge_convolution", "unsharp_mask"}) {
    auto t = TransformFromJson(kind, {{"apply_to_channel", {0, 1}}});
    ASSERT_TRUE(t.ok()) << kind << ": " << t.status();
    auto stage = MakeCudaStage(**t, 3);
    ASSERT_TRUE(stage.ok() && *stage != nullptr) << kind;
    SampleData s = testing::RandomSample(2, {4, 5, 6}, 0, -1, 3, 1);
    auto params = testing::DrawFor(**t, s.layout(), 1);
    ASSERT_NE(params, nullptr) << kind;
    const ChainTensors tensors = testing::HostTensors(1, 1, 0, {4, 5, 6});
    ParamArena arena;
    const absl::Status st = (*stage)->Prepare({params.get()}, tensors, arena);
    EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << kind << ": " << st;
    EXPECT_NE(st.message().find("apply_to_channel"), std::string::npos) << st;
  }
  // auglab_bias_field: a coefficient count that is neither the 3D nor (on a unit leading axis) the 2D one.
  auto t = TransformFromJson("auglab_bias_field", {{"order", 2}});
  ASSERT_TRUE(t.ok());
  auto stage = MakeCudaStage(**t, 4);
  ASSERT_TRUE(stage.ok() && *stage != nullptr);
  AuglabBiasFieldParams bad;
  bad.coefficients.assign(6, 0.1f);  // order 2 in 2D: 6 monomials, but the scratch is 3D (4, 5, 6)
  ChainTensors tensors = testing::HostTensors(1, 1, 0, {4, 5, 6});
  ParamArena arena;
  EXPECT_EQ((*stage)->Prepare({&bad}, tensors, arena).code(), absl::StatusCode::kInvalidArgument);
  tensors.shape[0] = 1;  // the chain's form of a 2D sample: the 2D polynomial
  EXPECT_TRUE((*stage)->Prepare({&bad}, tensors, arena).ok());
}

}  // namespace
}  // namespace augmentd
