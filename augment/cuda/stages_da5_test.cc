// GPU tests of the DA5 chain stages (stages_da5*.cc) against the CPU transforms: fresh random batches
// (B = 1, 2, 8; 1 and 2 channels; odd sizes), parameters from the CPU transform's own Draw (every fourth sample
// without params: it must stay untouched), the stage driven directly on device buffers through its ParamArena and
// ChainWorkspace, twice per configuration (the second batch reuses arena and workspace). Skipped without a GPU.
// 2D cases (image (B, C, X, Y), nnU-Net's "2d"): the CPU transform on the 2D sample vs the stage on (B, C, 1, X, Y)
// with the parameters lifted as the chain does (cuda/chain_2d.h).
// ctest name: cuda_da5_stages_test (label gpu).
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "augment/cuda/backend.h"
#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
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
  std::vector<int64_t> shape;  // 2 entries: a 2D case
};

// "median_filter 13x11 (2D)": what a failure names.
std::string Label(const Case& c) {
  std::string out = c.name + " ";
  for (size_t d = 0; d < c.shape.size(); ++d) out += (d ? "x" : "") + std::to_string(c.shape[d]);
  return out + (c.shape.size() == 2 ? " (2D)" : " (3D)");
}

json Mixture(double a0, double a1, double b0, double b1) {
  return {{"mixture", json::array({{{"weight", 0.5}, {"range", {a0, a1}}}, {{"weight", 0.5}, {"range", {b0, b1}}}})}};
}

// blank_rectangle configs of one case list: "mean" fill, a constant, and a uniform value with square boxes.
struct RectConfigs {
  json mean, constant, uniform;
};
RectConfigs Rects(const json& sizes, double constant, double p_per_channel) {
  RectConfigs r;
  r.mean = {{"rectangle_size", sizes},
            {"rectangle_value", "mean"},
            {"num_rectangles", {1, 5}},
            {"p_per_channel", p_per_channel}};
  r.constant = r.uniform = r.mean;
  r.constant["rectangle_value"] = constant;
  r.uniform["rectangle_value"] = {-1, 3};
  r.uniform["force_square"] = true;
  return r;
}

// DA5's local-kernel configs (nnU-Net's scale): the gradient plain and drawn per channel, or mean-centred, clipped
// and shared by the channels; local gamma per channel.
json Gradient(bool centered, double p_per_channel) {
  json j = {{"scale", {{"axis_size_log_uniform", {6, 1}}}},
            {"loc", {-0.5, 1.5}},
            {"max_strength", Mixture(-5, -1, 1, 5)},
            {"mean_centered", centered},
            {"same_for_all_channels", centered},
            {"p_per_channel", p_per_channel}};
  if (centered) j["clip_intensities"] = true;
  return j;
}
json Gamma(double p_per_channel) {
  return {{"scale", {{"axis_size_log_uniform", {6, 1}}}},
          {"loc", {-0.5, 1.5}},
          {"gamma", Mixture(0.01, 0.8, 1.5, 4)},
          {"same_for_all_channels", false},
          {"p_per_channel", p_per_channel}};
}

std::vector<Case> Cases() {
  const RectConfigs rect = Rects({{1, 4}, {1, 3}, {1, 3}}, 2.5, 0.8);
  const std::vector<int64_t> odd = {13, 11, 9}, tiny = {3, 5, 4}, tiles = {21, 19, 17};
  std::vector<Case> cases = {
      {"median_filter", {{"filter_size", {2, 8}}, {"p_per_channel", 0.8}}, 0, odd},
      {"median_filter", {{"filter_size", {2, 8}}, {"p_per_channel", 0.8}}, 0, tiny},
      {"median_filter", {{"filter_size", 4}, {"p_same_for_each_channel", 1}}, 0, odd},
      // Windows above da5::kMaxMedianSize (15): the generic kernel (da5_median_large.h); {10, 24} mixes sizes.
      {"median_filter", {{"filter_size", {10, 24}}, {"p_per_channel", 0.8}}, 0, odd},
      {"median_filter", {{"filter_size", 40}}, 0, tiny},
      {"sharpening", {{"strength", {0.1, 1}}, {"p_per_channel", 0.8}, {"p_clamp_intensities", 0.5}}, 0, odd},
      {"sharpening", {{"strength", {0.1, 1}}, {"p_per_channel", 0.8}}, 0, tiny},
      {"rician_noise", {{"noise_variance", {0, 0.1}}}, 1e-6f, odd},
      {"rician_noise", {{"noise_variance", {0.5, 1}}}, 1e-6f, tiny},
      {"blank_rectangle", rect.mean, 1e-6f, odd},
      {"blank_rectangle", rect.constant, 0, odd},
      {"blank_rectangle", rect.uniform, 0, odd},
      {"brightness_gradient_additive", Gradient(false, 0.8), 0, odd},
      {"brightness_gradient_additive", Gradient(true, 0.8), 0, odd},
      {"local_gamma", Gamma(0.8), 1e-5f, odd},
  };
  // Every size DA5 draws (2…7) on its own, each compiled build of the 3D kernel (2, 3: register network; 4…7:
  // tile bins): partial tiles and reflect borders on every face (odd), several whole 4×8×8 tiles (tiles), windows
  // wider than the volume (tiny); 8…15: the run-time build of the same kernel.
  for (int k = 2; k <= 7; ++k) {
    cases.push_back({"median_filter", {{"filter_size", k}}, 0, odd});
    cases.push_back({"median_filter", {{"filter_size", k}}, 0, tiles});
  }
  cases.push_back({"median_filter", {{"filter_size", 7}}, 0, tiny});
  cases.push_back({"median_filter", {{"filter_size", {8, 16}}}, 0, odd});
  return cases;
}

// 2D samples, every sample and channel drawn on (p_per_channel 1); odd sizes.
std::vector<Case> Cases2D() {
  const RectConfigs rect = Rects({{1, 5}, {1, 4}}, -1.5, 1);
  const std::vector<int64_t> odd = {13, 11}, small = {7, 9}, tiny = {3, 5}, line = {1, 7}, wide = {17, 35};
  return {
      {"median_filter", {{"filter_size", {2, 8}}}, 0, odd},
      {"median_filter", {{"filter_size", {2, 8}}}, 0, tiny},
      {"median_filter", {{"filter_size", 3}, {"p_same_for_each_channel", 1}}, 0, line},
      {"median_filter", {{"filter_size", {9, 16}}}, 0, wide},  // several 16×16 tiles, windows up to 15²
      {"median_filter", {{"filter_size", {16, 65}}}, 0, odd},  // the generic kernel, up to the CPU's 64
      {"sharpening", {{"strength", {0.1, 1}}, {"p_clamp_intensities", 0.5}}, 0, odd},
      {"sharpening", {{"strength", {0.1, 1}}, {"p_clamp_intensities", 1}}, 0, tiny},
      {"sharpening", {{"strength", 0.8}}, 0, line},
      {"rician_noise", {{"noise_variance", {0, 0.1}}}, 1e-6f, odd},
      {"rician_noise", {{"noise_variance", {0.5, 1}}}, 1e-6f, tiny},
      {"blank_rectangle", rect.mean, 1e-6f, odd},
      {"blank_rectangle", rect.constant, 0, odd},
      {"blank_rectangle", rect.uniform, 0, small},
      {"brightness_gradient_additive", Gradient(false, 1), 0, odd},
      {"brightness_gradient_additive", Gradient(true, 1), 0, small},
      {"local_gamma", Gamma(1), 1e-5f, odd},
      {"local_gamma", Gamma(1), 1e-5f, small},
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
  std::vector<std::unique_ptr<TransformParams>> owned, lifted;  // lifted: the 3D form of 2D params
  std::vector<const TransformParams*> params;
  ChainTensors tensors;  // image not set
  int64_t sample_len = 0;
};

Batch MakeBatch(const Transform& t, const Case& c, int batch, int channels, uint64_t seed) {
  Batch out;
  out.sample_len = channels;
  for (int64_t v : c.shape) out.sample_len *= v;
  out.owned.resize(batch);
  out.lifted.resize(batch);
  out.params.assign(batch, nullptr);
  for (int b = 0; b < batch; ++b) {
    SampleData s = RandomSample(channels, c.shape, 0, 0, 0, static_cast<uint32_t>(seed * 31 + b));
    out.input.insert(out.input.end(), s.image.begin(), s.image.end());
    if (b % 4 != 3) {
      out.owned[b] = DrawFor(t, s.layout(), seed, static_cast<uint64_t>(b));
      out.params[b] = out.owned[b].get();
      EXPECT_TRUE(t.Apply(*out.owned[b], s).ok()) << Label(c);
      if (c.shape.size() == 2) {  // what the chain hands the stage for a 2D sample
        auto lifted = LiftParams2D(t.kind(), *out.owned[b]);
        EXPECT_TRUE(lifted.ok()) << Label(c) << ": " << lifted.status();
        if (lifted.ok() && *lifted != nullptr) {
          out.lifted[b] = std::move(*lifted);
          out.params[b] = out.lifted[b].get();
        }
      }
    }
    out.want.insert(out.want.end(), s.image.begin(), s.image.end());
  }
  out.tensors.batch = batch;
  out.tensors.channels = channels;
  const int lead = 3 - static_cast<int>(c.shape.size());  // 2D samples run as (1, X, Y)
  for (int d = 0; d < 3; ++d) out.tensors.shape[d] = d < lead ? 1 : static_cast<int32_t>(c.shape[d - lead]);
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
  EXPECT_TRUE(st.ok()) << Label(c) << ": " << st;
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess) << Label(c);
  EXPECT_EQ(cudaMemcpy(host.data(), image, host.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaFree(image), cudaSuccess);
  int64_t bad = 0;
  const std::vector<float>& want = in.want;
  for (size_t i = 0; i < want.size(); ++i) {
    changed += want[i] != in.input[i];
    const bool ok = c.tol == 0 ? std::memcmp(&host[i], &want[i], sizeof(float)) == 0
                               : std::fabs(host[i] - want[i]) <= c.tol * (1 + std::fabs(want[i]));
    if (!ok && bad++ < 3)
      ADD_FAILURE() << Label(c) << " " << c.config.dump() << " B=" << batch << " C=" << channels << " sample "
                    << i / in.sample_len << " element " << i % in.sample_len << " (channel "
                    << i % in.sample_len / (in.sample_len / channels) << "): gpu " << host[i] << " cpu " << want[i]
                    << " input " << in.input[i];
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
  auto stage = MakeCudaStage(*out.transform, 3);
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

// 2D samples (image (B, C, X, Y)) through the stages as (B, C, 1, X, Y) with lifted parameters vs the CPU transform's
// 2D result: labels of failures name the stage, the shape and "(2D)".
TEST(CudaDa5Stages, EqualCpuTransformsOn2dSamples) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  uint64_t seed = 500;
  for (const Case& c : Cases2D()) {
    Built k = Build(c);
    ASSERT_NE(k.stage, nullptr) << Label(c);
    ParamArena arena;
    ChainWorkspace ws;
    int64_t changed = 0;
    for (int batch : {1, 2, 4})
      for (int channels : {1, 2})
        for (int rep = 0; rep < 2; ++rep)
          EXPECT_EQ(RunBatch(*k.transform, *k.stage, arena, ws, c, batch, channels, seed++, stream, changed), 0)
              << Label(c) << " " << c.config.dump() << " B=" << batch << " C=" << channels;
    EXPECT_GT(changed, 0) << Label(c) << " " << c.config.dump() << ": the CPU transform never changed a voxel";
  }
  EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
}

TEST(CudaDa5Stages, PrepareWithoutGpu) {
  // Prepare only packs host records into the arena: every case (3D and lifted 2D), all batch sizes, no device.
  uint64_t seed = 100;
  std::vector<Case> cases = Cases();
  for (Case& c : Cases2D()) cases.push_back(std::move(c));
  for (const Case& c : cases) {
    Built k = Build(c);
    ASSERT_NE(k.stage, nullptr) << c.name;
    ParamArena arena;
    for (int batch : {1, 2, 8})
      for (int channels : {1, 2}) {
        Batch in = MakeBatch(*k.transform, c, batch, channels, seed++);
        arena.Reset();
        const absl::Status st = k.stage->Prepare(in.params, in.tensors, arena);
        EXPECT_TRUE(st.ok()) << Label(c) << ": " << st;
      }
  }
}

TEST(CudaDa5Stages, CoverageAndOwnership) {
  // No GPU needed: the factory only inspects the configuration.
  auto big = TransformFromJson("median_filter", {{"filter_size", {2, 65}}});  // every size the CPU accepts
  ASSERT_TRUE(big.ok());
  const auto st = MakeCudaStage(**big, 4);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_NE(*st, nullptr);
  // Every DA5 kind has its stage registered (augment/cuda/backends.cc).
  for (const char* kind : {"median_filter", "sharpening", "rician_noise", "blank_rectangle",
                           "brightness_gradient_additive", "local_gamma"}) {
    auto k = ParseTransformKind(kind);
    ASSERT_TRUE(k.ok()) << kind;
    const CudaBackend* b = CudaBackendOf(*k);
    ASSERT_NE(b, nullptr) << kind;
    EXPECT_NE(b->make_stage, nullptr) << kind;
  }
}

}  // namespace
}  // namespace augmentd
