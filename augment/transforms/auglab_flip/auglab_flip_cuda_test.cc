// GPU = CPU test of auglab_flip's chain stage (auglab_flip_cuda.cc) against AuglabFlipTransform::Apply: random batches
// (B = 1, 3, 8; 1 and 2 channels; 1 seg channel; odd and tiny shapes), parameters from the CPU transform's own Draw
// (every third sample without parameters: it must stay untouched), the stage driven directly on device buffers
// through ParamArena / ChainWorkspace (the second batch of a configuration reuses both). Flips are copies: image and
// labels must be identical. Skipped without a GPU. ctest name: auglab_flip_cuda_test (label gpu).
#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/registry.h"
#include "augment/testing/stage_harness.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace augmentd {
namespace {

TEST(AuglabFlipCuda, EqualsCpuTransform) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  testing::TestStream stream;
  ASSERT_TRUE(stream.ok());
  testing::Sweep sweep;  // labels −1..3, every third sample without params, image and labels compared exactly
  sweep.shapes = {{13, 11, 9}, {3, 5, 4}, {1, 7, 2}};
  uint64_t seed = 1;
  for (const nlohmann::json& cfg : {nlohmann::json::object(), nlohmann::json({{"flip_axis", {0}}}),
                                    nlohmann::json({{"flip_axis", {2, 1}}})})
    testing::SweepCase({"auglab_flip", cfg, testing::Tolerance::Equal(), 1, 1}, sweep, seed, stream.get());
}

// No GPU needed: the stage is registered (GetServerInfo cuda=true) and 2D samples are refused (AugLab is 3D only).
TEST(AuglabFlipCuda, RegisteredFor3dOnly) {
  EXPECT_TRUE(HasCudaImplementation(TransformKind::kAuglabFlip));
  EXPECT_EQ(CheckStage2D(TransformKind::kAuglabFlip, 0).code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace augmentd
