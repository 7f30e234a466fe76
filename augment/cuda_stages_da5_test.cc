// GPU tests of the DA5 chain stages (cuda_stages_da5*.cc) against the CPU transforms: fresh random batches
// (B = 1, 2, 8; 1 and 2 channels; odd sizes), parameters from the CPU transform's own Draw (every fourth sample
// without params: it must stay untouched), the stage driven directly on device buffers through its ParamArena and
// ChainWorkspace, twice per configuration (the second batch reuses arena and workspace). Skipped without a GPU.
// ctest name: cuda_da5_stages_test (label gpu).
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "augment/cuda_stage.h"
#include "augment/registry.h"
#include "augment/testing/test_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace augmentd {
namespace {

using augmentd::testing::DrawFor;
using augmentd::testing::RandomSample;
using json = nlohmann::json;

bool HaveGpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

struct Case {
  std::string name;  // registry name
  json config;
  float tol;  // 0: bit-identical; else |gpu − cpu| <= tol · (1 + |cpu|)
  std::vector<int64_t> shape;
};

json Mixture(double a0, double a1, double b0, double b1) {
  return {{"mixture", json::array({{{"weight", 0.5}, {"range", {a0, a1}}}, {{"weight", 0.5}, {"range", {b0, b1}}}})}};
}

std::vector<Case> Cases() {
  const json scale = {{"axis_size_log_uniform", {6, 1}}};
  const json da5_rect = {{"rectangle_size", {{1, 4}, {1, 3}, {1, 3}}},
                         {"rectangle_value", "mean"},
                         {"num_rectangles", {1, 5}},
                         {"p_per_channel", 0.8}};
  json const_rect = da5_rect, uniform_rect = da5_rect;
  const_rect["rectangle_value"] = 2.5;
  uniform_rect["rectangle_value"] = {-1, 3};
  uniform_rect["force_square"] = true;
  const json gradient = {{"scale", scale},
                         {"loc", {-0.5, 1.5}},
                         {"max_strength", Mixture(-5, -1, 1, 5)},
                         {"mean_centered", false},
                         {"same_for_all_channels", false},
                         {"p_per_channel", 0.8}};
  json centered = gradient;
  centered["mean_centered"] = true;
  centered["clip_intensities"] = true;
  centered["same_for_all_channels"] = true;
  const std::vector<int64_t> odd = {13, 11, 9}, tiny = {3, 5, 4};
  return {
      {"median_filter", {{"filter_size", {2, 8}}, {"p_per_channel", 0.8}}, 0, odd},
      {"median_filter", {{"filter_size", {2, 8}}, {"p_per_channel", 0.8}}, 0, tiny},
      {"median_filter", {{"filter_size", 4}, {"p_same_for_each_channel", 1}}, 0, odd},
      {"sharpening", {{"strength", {0.1, 1}}, {"p_per_channel", 0.8}, {"p_clamp_intensities", 0.5}}, 0, odd},
      {"sharpening", {{"strength", {0.1, 1}}, {"p_per_channel", 0.8}}, 0, tiny},
      {"rician_noise", {{"noise_variance", {0, 0.1}}}, 1e-6f, odd},
      {"rician_noise", {{"noise_variance", {0.5, 1}}}, 1e-6f, tiny},
      {"blank_rectangle", da5_rect, 1e-6f, odd},
      {"blank_rectangle", const_rect, 0, odd},
      {"blank_rectangle", uniform_rect, 0, odd},
      {"brightness_gradient_additive", gradient, 0, odd},
      {"brightness_gradient_additive", centered, 0, odd},
      {"local_gamma",
       {{"scale", scale},
        {"loc", {-0.5, 1.5}},
        {"gamma", Mixture(0.01, 0.8, 1.5, 4)},
        {"same_for_all_channels", false},
        {"p_per_channel", 0.8}},
       1e-5f,
       odd},
  };
}

template <typename T>
T* DeviceAlloc(size_t n) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, n * sizeof(T)), cudaSuccess);
  return static_cast<T*>(p);
}

// A random batch, its params from the CPU transform's Draw (none for every fourth sample) and the CPU result.
struct Batch {
  std::vector<float> input, want;
  std::vector<std::unique_ptr<TransformParams>> owned;
  std::vector<const TransformParams*> params;
  ChainTensors tensors;  // image not set
  int64_t sample_len = 0;
};

Batch MakeBatch(const Transform& t, const Case& c, int batch, int channels, uint64_t seed) {
  Batch out;
  out.sample_len = channels * c.shape[0] * c.shape[1] * c.shape[2];
  out.owned.resize(batch);
  out.params.assign(batch, nullptr);
  for (int b = 0; b < batch; ++b) {
    SampleData s = RandomSample(channels, c.shape, 0, 0, 0, static_cast<uint32_t>(seed * 31 + b));
    out.input.insert(out.input.end(), s.image.begin(), s.image.end());
    if (b % 4 != 3) {
      out.owned[b] = DrawFor(t, s.layout(), seed, static_cast<uint64_t>(b));
      out.params[b] = out.owned[b].get();
      EXPECT_TRUE(t.Apply(*out.owned[b], s).ok());
    }
    out.want.insert(out.want.end(), s.image.begin(), s.image.end());
  }
  out.tensors.batch = batch;
  out.tensors.channels = channels;
  for (int d = 0; d < 3; ++d) out.tensors.shape[d] = static_cast<int32_t>(c.shape[d]);
  return out;
}

// One batch through the stage vs the CPU transform; returns the number of mismatching voxels and adds the number
// of voxels the transform changed to `changed`.
int64_t RunBatch(const Transform& t, CudaStage& stage, ParamArena& arena, ChainWorkspace& ws, const Case& c, int batch,
                 int channels, uint64_t seed, cudaStream_t stream, int64_t& changed) {
  Batch in = MakeBatch(t, c, batch, channels, seed);
  std::vector<float> host = in.input;
  float* image = DeviceAlloc<float>(host.size());
  EXPECT_EQ(cudaMemcpy(image, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  in.tensors.image = image;
  arena.Reset();
  absl::Status st = stage.Prepare(in.params, in.tensors, arena);
  if (st.ok()) st = arena.Upload(stream);
  if (st.ok()) st = stage.Enqueue(in.tensors, arena, ws, stream);
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(host.data(), image, host.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaFree(image), cudaSuccess);
  int64_t bad = 0;
  const std::vector<float>& want = in.want;
  for (size_t i = 0; i < want.size(); ++i) {
    changed += want[i] != in.input[i];
    const bool ok = c.tol == 0 ? std::memcmp(&host[i], &want[i], sizeof(float)) == 0
                               : std::fabs(host[i] - want[i]) <= c.tol * (1 + std::fabs(want[i]));
    if (!ok && bad++ < 3)
      ADD_FAILURE() << c.name << " B=" << batch << " C=" << channels << " sample " << i / in.sample_len << " element "
                    << i % in.sample_len << ": gpu " << host[i] << " cpu " << want[i];
  }
  return bad;
}

// The transform of a case and its stage (stage null, with a failure recorded, when either cannot be built).
struct Built {
  std::shared_ptr<const Transform> transform;
  std::unique_ptr<CudaStage> stage;
};
Built Build(const Case& c) {
  Built out;
  auto t = TransformFromJson(c.name, c.config);
  EXPECT_TRUE(t.ok()) << c.name << ": " << t.status();
  if (!t.ok()) return out;
  out.transform = *t;
  auto stage = MakeDa5CudaStage(*out.transform, 3);
  EXPECT_TRUE(stage.ok()) << stage.status();
  if (stage.ok()) out.stage = std::move(*stage);
  return out;
}

TEST(CudaDa5Stages, EqualCpuTransforms) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  uint64_t seed = 1;
  for (const Case& c : Cases()) {
    Built k = Build(c);
    ASSERT_NE(k.stage, nullptr) << c.name;
    ParamArena arena;
    ChainWorkspace ws;
    int64_t changed = 0;
    for (int batch : {1, 2, 8})
      for (int channels : {1, 2})
        for (int rep = 0; rep < 2; ++rep)
          EXPECT_EQ(RunBatch(*k.transform, *k.stage, arena, ws, c, batch, channels, seed++, stream, changed), 0)
              << c.name << " " << c.config.dump() << " B=" << batch << " C=" << channels;
    EXPECT_GT(changed, 0) << c.name << " " << c.config.dump() << ": the CPU transform never changed a voxel";
  }
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST(CudaDa5Stages, PrepareWithoutGpu) {
  // Prepare only packs host records into the arena: every case, all batch sizes, no device needed.
  uint64_t seed = 100;
  for (const Case& c : Cases()) {
    Built k = Build(c);
    ASSERT_NE(k.stage, nullptr) << c.name;
    ParamArena arena;
    for (int batch : {1, 2, 8})
      for (int channels : {1, 2}) {
        Batch in = MakeBatch(*k.transform, c, batch, channels, seed++);
        arena.Reset();
        const absl::Status st = k.stage->Prepare(in.params, in.tensors, arena);
        EXPECT_TRUE(st.ok()) << c.name << ": " << st;
      }
  }
}

TEST(CudaDa5Stages, CoverageAndOwnership) {
  // No GPU needed: the factory only inspects the configuration.
  auto big = TransformFromJson("median_filter", {{"filter_size", {2, 20}}});
  ASSERT_TRUE(big.ok());
  const auto st = MakeDa5CudaStage(**big, 4);
  EXPECT_EQ(st.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(st.status().message().find("transform 4 (median_filter)"), std::string::npos) << st.status();
  auto gamma = TransformFromJson("gaussian_noise", json::object());
  ASSERT_TRUE(gamma.ok());
  auto none = MakeDa5CudaStage(**gamma, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(*none, nullptr);  // not a DA5 kind: another owner's
}

}  // namespace
}  // namespace augmentd
