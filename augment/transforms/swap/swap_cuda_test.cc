// GPU test of swap's chain stage (swap_cuda.cc, swap.cu) against the CPU transform (swap.h): random batches (B = 1,
// 3, 8; 1 and 2 channels), parameters from the CPU transform's own Draw — small volumes and large patches, so most
// swaps overlap each other and themselves — every third sample without params (it must stay untouched), the stage
// driven directly on device buffers through ParamArena / ChainWorkspace, twice per configuration (the second batch
// reuses both). Swaps only copy values: GPU and CPU must agree bit for bit. 2D samples (X, Y): the CPU's 2D result vs
// the stage on the chain's (1, X, Y) form through LiftParams2D. ctest: cuda_swap_stage_test (label gpu, skipped
// without a GPU), cuda_swap_stage_host_test (Prepare's checks, no GPU).
#include <array>
#include <string>
#include <vector>

#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/registry.h"
#include "augment/testing/stage_harness.h"
#include "augment/transforms/swap/swap.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace augmentd {
namespace {

using json = nlohmann::json;

struct SwapCase {
  json config;
  std::vector<std::vector<int64_t>> shapes;  // 2 dims: 2D samples
};

TEST(CudaSwapStage, EqualsCpuTransform) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  const std::vector<SwapCase> cases = {
      {{{"patch_size", 3}, {"num_iterations", 40}}, {{13, 11, 9}, {5, 4, 6}}},
      {{{"patch_size", {5, 4, 3}}, {"num_iterations", 25}}, {{7, 6, 5}, {9, 4, 3}}},  // patches overlap mostly
      {{{"patch_size", {2, 7, 1}}, {"num_iterations", 10}}, {{3, 9, 1}, {6, 8, 2}}},
      {{{"patch_size", 15}, {"num_iterations", 100}}, {{33, 20, 17}}},                  // TorchIO's defaults
      {{{"patch_size", {3, 4, 1}}, {"num_iterations", 30}}, {{9, 8}, {5, 13}}},         // 2D samples
      {{{"patch_size", {6, 1, 1}}, {"num_iterations", 12}}, {{8, 3}}},                  // 2D, overlaps along X
  };
  testing::TestStream stream;
  ASSERT_TRUE(stream.ok());
  uint64_t seed = 1;
  for (const SwapCase& c : cases) {
    testing::Sweep sweep;  // every third sample without params; values compared exactly
    sweep.shapes = c.shapes;
    sweep.labels = testing::LabelCheck::kIgnore;
    sweep.sample.upload_seg = false;  // samples carry 1 label channel (labels 0..3) for Draw; the stage sees none
    sweep.sample.data_seed_multiplier = 131;
    sweep.sample.label_lo = 0;
    testing::SweepCase({"swap", c.config, testing::Tolerance::Equal(), 1, 1}, sweep, seed, stream.get());
  }
}

// Host only: the factory, the 2D lift's checks and Prepare's range checks (no GPU needed: Prepare only packs).
TEST(CudaSwapStage, HostPrepareChecksAndLift) {
  auto t = TransformFromJson("swap", {{"patch_size", {2, 3, 1}}, {"num_iterations", 1}});
  ASSERT_TRUE(t.ok()) << t.status();
  auto stage = MakeCudaStage(**t, 4);
  ASSERT_TRUE(stage.ok()) << stage.status();
  EXPECT_TRUE(CheckStage2D(TransformKind::kSwap, 4).ok());
  ParamArena arena;
  SwapParams p;
  p.patch_size = {2, 3, 1};
  p.locations = {{{{0, 0, 0}, {1, 2, 0}}}};
  const ChainTensors ok = testing::HostTensors(2, 1, 0, {3, 5, 1});
  EXPECT_TRUE((*stage)->Prepare({&p, nullptr}, ok, arena).ok());
  const ChainTensors small = testing::HostTensors(1, 1, 0, {2, 4, 1});  // corner 2 on axis 1 leaves the extent 4
  absl::Status st = (*stage)->Prepare({&p}, small, arena);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("transform 4 (swap)"), std::string::npos) << st;
  // 2D lift: (X, Y, 1) → (1, X, Y); a third extent other than 1 is not 2D.
  auto lifted = LiftParams2D(TransformKind::kSwap, p);
  ASSERT_TRUE(lifted.ok()) << lifted.status();
  ASSERT_NE(*lifted, nullptr);
  const auto& l = static_cast<const SwapParams&>(**lifted);
  EXPECT_EQ(l.patch_size, (std::array<int64_t, 3>{1, 2, 3}));
  EXPECT_EQ(l.locations[0][1], (std::array<int64_t, 3>{0, 1, 2}));
  p.patch_size = {2, 3, 2};
  EXPECT_EQ(LiftParams2D(TransformKind::kSwap, p).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
