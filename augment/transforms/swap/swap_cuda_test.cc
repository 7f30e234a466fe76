// GPU test of swap's chain stage (swap_cuda.cc, swap.cu) against the CPU transform (swap.h): random batches (B = 1,
// 3, 8; 1 and 2 channels), parameters from the CPU transform's own Draw — small volumes and large patches, so most
// swaps overlap each other and themselves — every third sample without params (it must stay untouched), the stage
// driven directly on device buffers through ParamArena / ChainWorkspace, twice per configuration (the second batch
// reuses both). Swaps only copy values: GPU and CPU must agree bit for bit. 2D samples (X, Y): the CPU's 2D result vs
// the stage on the chain's (1, X, Y) form through LiftParams2D. ctest: cuda_swap_stage_test (label gpu, skipped
// without a GPU), cuda_swap_stage_host_test (Prepare's checks, no GPU).
#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/registry.h"
#include "augment/testing/test_util.h"
#include "augment/transforms/swap/swap.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace augmentd {
namespace {

using json = nlohmann::json;

ChainTensors Tensors(float* image, int batch, int channels, const std::vector<int64_t>& shape3) {
  ChainTensors t;
  t.image = image;
  t.batch = batch;
  t.channels = channels;
  for (int d = 0; d < 3; ++d) t.shape[d] = static_cast<int32_t>(shape3[d]);
  return t;
}

// Mismatching values of one batch (the first three reported with `label`).
int64_t CompareBatch(const Transform& t, CudaStage& stage, ParamArena& arena, ChainWorkspace& ws,
                     const std::vector<int64_t>& shape, int batch, int channels, uint64_t seed, cudaStream_t stream,
                     const std::string& label) {
  const std::vector<int64_t> shape3 = shape.size() == 2 ? std::vector<int64_t>{1, shape[0], shape[1]} : shape;
  const int64_t voxels = shape3[0] * shape3[1] * shape3[2], n = channels * voxels;
  std::vector<float> in(static_cast<size_t>(batch * n)), want(in.size()), got(in.size());
  std::vector<std::unique_ptr<TransformParams>> owned(batch);
  std::vector<const TransformParams*> params(batch, nullptr);
  for (int b = 0; b < batch; ++b) {
    SampleData s = testing::RandomSample(channels, shape, 1, 0, 3, static_cast<uint32_t>(seed * 131 + b));
    std::copy(s.image.begin(), s.image.end(), in.begin() + b * n);
    if (b % 3 != 2) {
      owned[b] = testing::DrawFor(t, s.layout(), seed, static_cast<uint64_t>(b));
      if (owned[b] == nullptr) return 1;
      EXPECT_TRUE(t.Apply(*owned[b], s).ok());
      if (shape.size() == 2) {
        auto lifted = LiftParams2D(t.kind(), *owned[b]);
        EXPECT_TRUE(lifted.ok()) << label << ": " << lifted.status();
        if (lifted.ok() && *lifted != nullptr) owned[b] = std::move(*lifted);
      }
      params[b] = owned[b].get();
    }
    std::copy(s.image.begin(), s.image.end(), want.begin() + b * n);
  }
  void* image = nullptr;
  EXPECT_EQ(cudaMalloc(&image, in.size() * sizeof(float)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(image, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ChainTensors tensors = Tensors(static_cast<float*>(image), batch, channels, shape3);
  arena.Reset();
  absl::Status st = stage.Prepare(params, tensors, arena);
  if (st.ok()) st = arena.Upload(stream);
  if (st.ok()) st = stage.Enqueue(tensors, arena, ws, stream);
  EXPECT_TRUE(st.ok()) << label << ": " << st;
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(got.data(), image, got.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(image);
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (bad++ < 3)
      ADD_FAILURE() << label << ": sample " << i / n << " channel " << (i % n) / voxels << " voxel " << i % voxels
                    << ": gpu " << got[i] << " cpu " << want[i];
  }
  return bad;
}

struct SwapCase {
  json config;
  std::vector<std::vector<int64_t>> shapes;  // 2 dims: 2D samples
};

TEST(CudaSwapStage, EqualsCpuTransform) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device";
  const std::vector<SwapCase> cases = {
      {{{"patch_size", 3}, {"num_iterations", 40}}, {{13, 11, 9}, {5, 4, 6}}},
      {{{"patch_size", {5, 4, 3}}, {"num_iterations", 25}}, {{7, 6, 5}, {9, 4, 3}}},  // patches overlap mostly
      {{{"patch_size", {2, 7, 1}}, {"num_iterations", 10}}, {{3, 9, 1}, {6, 8, 2}}},
      {{{"patch_size", 15}, {"num_iterations", 100}}, {{33, 20, 17}}},                  // TorchIO's defaults
      {{{"patch_size", {3, 4, 1}}, {"num_iterations", 30}}, {{9, 8}, {5, 13}}},         // 2D samples
      {{{"patch_size", {6, 1, 1}}, {"num_iterations", 12}}, {{8, 3}}},                  // 2D, overlaps along X
  };
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  uint64_t seed = 1;
  for (const SwapCase& c : cases) {
    auto t = TransformFromJson("swap", c.config);
    ASSERT_TRUE(t.ok()) << t.status();
    auto stage = MakeCudaStage(**t, 2);
    ASSERT_TRUE(stage.ok() && *stage != nullptr) << stage.status();
    ParamArena arena;
    ChainWorkspace ws;
    for (const auto& shape : c.shapes)
      for (int batch : {1, 3, 8})
        for (int channels = 1; channels <= 2; ++channels)
          for (int rep = 0; rep < 2; ++rep) {
            std::string label = "swap " + c.config.dump() + (shape.size() == 2 ? " 2D (" : " (");
            for (size_t d = 0; d < shape.size(); ++d) label += (d > 0 ? ", " : "") + std::to_string(shape[d]);
            label += ") B=" + std::to_string(batch) + " C=" + std::to_string(channels);
            EXPECT_EQ(CompareBatch(**t, **stage, arena, ws, shape, batch, channels, seed++, stream, label), 0)
                << label;
          }
  }
  cudaStreamDestroy(stream);
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
  ChainTensors ok = Tensors(nullptr, 2, 1, {3, 5, 1});
  EXPECT_TRUE((*stage)->Prepare({&p, nullptr}, ok, arena).ok());
  ChainTensors small = Tensors(nullptr, 1, 1, {2, 4, 1});  // corner 2 on axis 1 leaves the extent 4
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
