// GPU tests (label gpu): the MRI artefact stages (cuda_stages_mri.cc) against the CPU transforms, per sample, on a
// batch with per-sample parameters, one sample not applied (must stay bit-identical), odd / non-power-of-two shapes.
// Without a CUDA device every test skips.
#include <cuda_runtime.h>

#include <cmath>
#include <random>
#include <vector>

#include "augment/cuda_stage.h"
#include "augment/registry.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

bool HaveDevice() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

// False when the build found no cuFFT (the k-space stages are then UNIMPLEMENTED, by design).
bool HaveCufft() {
  auto t = TransformFromJson("spike", nlohmann::json::object());
  return t.ok() && MakeMriCudaStage(**t, 0).ok();
}

// Runs `kind` with `config` through its stage and through the CPU transform; returns max |gpu − cpu| / max |cpu|.
double RelativeError(const std::string& kind, const nlohmann::json& config, const std::vector<int32_t>& shape,
                     int batch, int channels, uint64_t seed) {
  auto t = TransformFromJson(kind, config);
  if (!t.ok()) {
    ADD_FAILURE() << t.status();
    return 1.0;
  }
  auto stage = MakeMriCudaStage(**t, 0);
  if (!stage.ok() || *stage == nullptr) {
    ADD_FAILURE() << kind << ": no stage " << stage.status();
    return 1.0;
  }
  const int64_t p = int64_t{shape[0]} * shape[1] * shape[2];
  std::mt19937 g(static_cast<uint32_t>(seed));
  std::normal_distribution<float> n(1.0f, 2.0f);
  std::vector<float> host(static_cast<size_t>(batch * channels * p));
  for (float& v : host) v = n(g);
  std::vector<std::unique_ptr<TransformParams>> owned;
  std::vector<const TransformParams*> params;
  std::vector<float> want = host;
  for (int b = 0; b < batch; ++b) {
    if (b == 1) {  // not applied: must come back unchanged
      params.push_back(nullptr);
      owned.emplace_back();
      continue;
    }
    SampleData s;
    s.channels = channels;
    s.shape = {shape[0], shape[1], shape[2]};
    s.image.assign(host.begin() + b * channels * p, host.begin() + (b + 1) * channels * p);
    RandomStream rng(seed, static_cast<uint64_t>(b), 0);
    DrawContext ctx{rng, seed, static_cast<uint64_t>(b), 0};
    auto drawn = (*t)->Draw(ctx, s.layout());
    EXPECT_TRUE(drawn.ok()) << drawn.status();
    EXPECT_TRUE((*t)->Apply(**drawn, s).ok());
    std::copy(s.image.begin(), s.image.end(), want.begin() + b * channels * p);
    params.push_back(drawn->get());
    owned.push_back(std::move(*drawn));
  }
  float* dev = nullptr;
  EXPECT_EQ(cudaMalloc(&dev, host.size() * sizeof(float)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  ChainTensors ct;
  ct.image = dev;
  ct.batch = batch;
  ct.channels = channels;
  std::copy(shape.begin(), shape.end(), ct.shape);
  ParamArena arena;
  ChainWorkspace ws;
  cudaStream_t stream = nullptr;
  EXPECT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  std::vector<float> got(host.size());
  for (int rep = 0; rep < 2; ++rep) {  // second pass: cached plan and workspace (steady state)
    EXPECT_EQ(cudaMemcpy(dev, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    arena.Reset();
    EXPECT_TRUE((*stage)->Prepare(params, ct, arena).ok());
    EXPECT_TRUE(arena.Upload(stream).ok());
    auto st = (*stage)->Enqueue(ct, arena, ws, stream);
    EXPECT_TRUE(st.ok()) << st;
    EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(got.data(), dev, got.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  }
  cudaStreamDestroy(stream);
  cudaFree(dev);
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_err = std::max(max_err, std::abs(static_cast<double>(got[i]) - want[i]));
    max_ref = std::max(max_ref, std::abs(static_cast<double>(want[i])));
  }
  for (int64_t i = channels * p; i < 2 * channels * p; ++i)  // sample 1 untouched, bit for bit
    EXPECT_EQ(got[static_cast<size_t>(i)], host[static_cast<size_t>(i)]) << kind << " voxel " << i;
  return max_err / max_ref;
}

TEST(CudaMriStages, BiasFieldEqualsCpu) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  EXPECT_LT(RelativeError("bias_field", {{"coefficients", 0.5}, {"order", 3}}, {20, 23, 17}, 3, 2, 1), 1e-6);
  EXPECT_LT(RelativeError("bias_field", {{"coefficients", {-0.3, 0.8}}, {"order", 5}}, {16, 16, 16}, 3, 1, 2), 1e-6);
}

TEST(CudaMriStages, GhostingEqualsCpu) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  if (!HaveCufft()) GTEST_SKIP() << "built without cuFFT";
  EXPECT_LT(RelativeError("ghosting", nlohmann::json::object(), {20, 23, 17}, 3, 2, 3), 2e-5);
  EXPECT_LT(RelativeError("ghosting", {{"num_ghosts", {1, 3}}, {"restore", 0.3}}, {32, 30, 41}, 4, 1, 4), 2e-5);
}

TEST(CudaMriStages, SpikeEqualsCpu) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  if (!HaveCufft()) GTEST_SKIP() << "built without cuFFT";
  EXPECT_LT(RelativeError("spike", nlohmann::json::object(), {20, 23, 17}, 3, 2, 5), 2e-5);
  EXPECT_LT(RelativeError("spike", {{"num_spikes", {0, 4}}, {"intensity", 2}}, {32, 30, 41}, 4, 1, 6), 2e-5);
}

TEST(CudaMriStages, MotionEqualsCpu) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  if (!HaveCufft()) GTEST_SKIP() << "built without cuFFT";
  EXPECT_LT(RelativeError("motion", nlohmann::json::object(), {20, 23, 17}, 3, 2, 7), 2e-5);
  EXPECT_LT(RelativeError("motion", {{"degrees", 4}, {"translation", 3}, {"num_transforms", 4}}, {32, 30, 41}, 4, 1, 8),
            2e-5);
}

}  // namespace
}  // namespace augmentd
