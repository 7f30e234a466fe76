// GPU tests of AugLab's extras as chain stages (cuda/stages_auglab.cc) against the CPU transforms
// (augment/transforms/{histogram_equalization,random_convolution,intensity_function}/): random batches (B = 1, 3, 8; 1 and 2 channels; odd and tiny shapes), parameters
// from the CPU transform's own Draw (every third sample without params: it must stay untouched), the stage driven
// directly on device buffers through ParamArena / ChainWorkspace, twice per configuration (the second batch reuses
// both). Region cases (in_seg / out_seg / mix_in_out, auglab_region.h) add int16 labels −1..3 (1 or 2 seg channels,
// seg_channel 0 or 1) uploaded as the chain's seg scratch. 2D samples (X, Y) (CudaAuglabStages.TwoDEqualCpu): the
// CPU's 2D result vs the stage on the chain's (1, X, Y) form (parameters through LiftParams2D, cuda/chain_2d.h).
// Skipped without a GPU. ctest names: cuda_auglab_stages_test (label gpu), cuda_auglab_stages_coverage_test.
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

using testing::StageCase;  // kind, config, tolerance (|gpu − cpu| <= tol · (1 + |cpu|)), min_channels, seg

std::vector<StageCase> AuglabCases() {
  const json all_fns = {"log1p", "sqrt", "sin", "exp", "sigmoid", "square"};
  return {
      {"histogram_equalization", json::object(), 0.0f, 1},
      {"histogram_equalization", {{"apply_to_channel", {1, 0}}, {"retain_stats", true}}, 1e-5f, 2},
      {"random_convolution", json::object(), 1e-6f, 1},
      {"random_convolution", {{"kernel_sizes", {3, 15}}, {"mix_prob", 1.0}, {"retain_stats", true}}, 1e-5f, 1},
      {"intensity_function", {{"functions", all_fns}, {"p_function", 0.5}, {"p_inverse", 0.5}}, 1e-4f, 1},
      {"intensity_function",
       {{"apply_to_channel", {1}},
        {"p_function", 0.6},
        {"p_inverse", 0.6},
        {"retain_stats", true},
        {"inverse_retain_stats", true}},
       1e-4f,
       2},
      // Region modes: always inside; both coins at 1/2 with label masks and retain_stats on seg channel 1 of 2.
      {"histogram_equalization", {{"in_seg", 1.0}}, 0.0f, 1, 1},
      {"histogram_equalization",
       {{"in_seg", 0.5}, {"out_seg", 0.5}, {"mix_in_out", true}, {"retain_stats", true}, {"seg_channel", 1}},
       1e-5f,
       1,
       2},
      {"random_convolution", {{"out_seg", 1.0}, {"mix_prob", 0.5}}, 1e-6f, 1, 1},
      {"random_convolution",
       {{"in_seg", 0.5}, {"out_seg", 0.5}, {"mix_in_out", true}, {"retain_stats", true}, {"seg_channel", 1}},
       1e-5f,
       1,
       2},
      {"intensity_function",
       {{"functions", all_fns},
        {"p_function", 0.5},
        {"p_inverse", 0.5},
        {"in_seg", 0.6},
        {"out_seg", 0.3},
        {"mix_in_out", true}},
       1e-4f,
       1,
       1},
      {"intensity_function",
       {{"apply_to_channel", {1, 0}},
        {"p_function", 0.6},
        {"p_inverse", 0.6},
        {"retain_stats", true},
        {"in_seg", 0.5},
        {"out_seg", 0.5},
        {"seg_channel", 1}},
       1e-4f,
       2,
       2},
  };
}

// Every case on each shape (3 dims, or 2: 2D samples, the CPU on (X, Y), the stage on (1, X, Y) with the parameters
// LiftParams2D gives), batch size and channel count, `reps` times each (testing::SweepCase: labels −1..3 uploaded as
// the seg scratch, every third sample without params, images within the case's tolerance; labels not compared).
testing::Sweep AuglabSweep(const std::vector<std::vector<int64_t>>& shapes, const std::vector<int>& batches, int reps) {
  testing::Sweep sweep;
  sweep.shapes = shapes;
  sweep.batches = batches;
  sweep.reps = reps;
  sweep.labels = testing::LabelCheck::kIgnore;
  return sweep;
}

TEST(CudaAuglabStages, EqualCpuTransforms) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  testing::SweepCases(AuglabCases(), AuglabSweep({{13, 11, 9}, {3, 5, 4}}, {1, 3, 8}, 2), 1);
}

// 2D samples (nnU-Net's "2d" configuration): every case above plus forced-on ones, odd shapes, B = 1 and 2.
TEST(CudaAuglabStages, TwoDEqualCpu) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  std::vector<StageCase> cases = AuglabCases();
  const json all_fns = {"log1p", "sqrt", "sin", "exp", "sigmoid", "square"};
  cases.push_back({"intensity_function", {{"functions", all_fns}, {"p_function", 1.0}, {"p_inverse", 1.0}}, 1e-4f, 1});
  cases.push_back({"random_convolution", {{"kernel_sizes", {3, 7, 15}}, {"mix_prob", 0.0}}, 1e-6f, 1});
  cases.push_back({"random_convolution", {{"kernel_sizes", {5}}, {"mix_prob", 1.0}, {"apply_to_channel", {1}}},
                   1e-6f, 2});
  for (const StageCase& c : cases) {
    auto t = TransformFromJson(c.kind, c.config);
    ASSERT_TRUE(t.ok()) << c.kind << ": " << t.status();
    EXPECT_TRUE(CheckStage2D((*t)->kind(), 2).ok()) << c.kind;
  }
  testing::SweepCases(cases, AuglabSweep({{37, 45}, {5, 3}}, {1, 2}, 1), 1000);
}

TEST(CudaAuglabStages, CoverageAndOwnership) {
  // No GPU needed: the factory only inspects the configuration.
  for (const char* kind : {"histogram_equalization", "random_convolution", "intensity_function"}) {
    auto t = TransformFromJson(kind, json::object());
    ASSERT_TRUE(t.ok()) << kind;
    auto stage = MakeCudaStage(**t, 0);
    ASSERT_TRUE(stage.ok()) << stage.status();
    EXPECT_NE(*stage, nullptr) << kind;
  }
  // Region seg_channel beyond the scratch's seg channels: INVALID_ARGUMENT naming the field, as the CPU Apply
  // (Prepare only packs host records: no GPU needed).
  for (const char* kind : {"histogram_equalization", "random_convolution", "intensity_function"}) {
    json cfg = {{"in_seg", 1.0}, {"seg_channel", 1}};
    if (std::string(kind) == "intensity_function") cfg["p_function"] = 1.0;
    auto t = TransformFromJson(kind, cfg);
    ASSERT_TRUE(t.ok()) << kind << ": " << t.status();
    auto stage = MakeCudaStage(**t, 0);
    ASSERT_TRUE(stage.ok() && *stage != nullptr) << kind;
    for (int seg_channels : {1, 2}) {
      SampleData s = testing::RandomSample(1, {4, 5, 6}, seg_channels, -1, 3, 1);
      auto params = testing::DrawFor(**t, s.layout(), 1);
      const ChainTensors tensors = testing::HostTensors(1, 1, seg_channels, {4, 5, 6});
      ParamArena arena;
      const absl::Status st = (*stage)->Prepare({params.get()}, tensors, arena);
      if (seg_channels == 2) {
        EXPECT_TRUE(st.ok()) << kind << ": " << st;
      } else {
        EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument) << kind;
        EXPECT_NE(st.message().find(std::string(kind) + ".seg_channel"), std::string::npos) << st;
      }
    }
  }
}

}  // namespace
}  // namespace augmentd
