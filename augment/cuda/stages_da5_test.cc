// GPU tests of the DA5 chain stages (stages_da5*.cc) against the CPU transforms: fresh random batches
// (B = 1, 2, 8; 1 and 2 channels; odd sizes), parameters from the CPU transform's own Draw (every fourth sample
// without params: it must stay untouched), the stage driven directly on device buffers through its ParamArena and
// ChainWorkspace, twice per configuration (the second batch reuses arena and workspace). Skipped without a GPU.
// 2D cases (image (B, C, X, Y), nnU-Net's "2d"): the CPU transform on the 2D sample vs the stage on (B, C, 1, X, Y)
// with the parameters lifted as the chain does (cuda/chain_2d.h).
// ctest name: cuda_da5_stages_test (label gpu).
#include <memory>
#include <string>
#include <vector>

#include "augment/cuda/backend.h"
#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/registry.h"
#include "augment/testing/stage_harness.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace augmentd {
namespace {

using json = nlohmann::json;

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

// DA5's batches: no labels, every fourth sample without params, sample b's values from data seed `seed * 31 + b`.
testing::BatchSpec Da5Sample() {
  testing::BatchSpec spec;
  spec.data_seed_multiplier = 31;
  spec.label_lo = spec.label_hi = 0;
  spec.skip = [](int b) { return b % 4 == 3; };
  return spec;
}

// Every case at its shape, each batch size, 1 and 2 channels, twice (testing::SweepCase; tol 0: bit for bit, else
// |gpu − cpu| <= tol · (1 + |cpu|)); the CPU transform must change some voxel of each case.
void CompareCases(const std::vector<Case>& cases, const std::vector<int>& batches, uint64_t seed) {
  testing::TestStream stream;
  ASSERT_TRUE(stream.ok());
  for (const Case& c : cases) {
    testing::Sweep sweep;
    sweep.shapes = {c.shape};
    sweep.batches = batches;
    sweep.labels = testing::LabelCheck::kIgnore;
    sweep.sample = Da5Sample();
    sweep.stage_index = 3;
    const testing::SweepTotals m =
        testing::SweepCase({c.name, c.config, testing::Tolerance::BitsOrRelative(c.tol)}, sweep, seed, stream.get());
    EXPECT_GT(m.changed, 0) << Label(c) << " " << c.config.dump() << ": the CPU transform never changed a voxel";
  }
}

TEST(CudaDa5Stages, EqualCpuTransforms) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  CompareCases(Cases(), {1, 2, 8}, 1);
}

// 2D samples (image (B, C, X, Y)) through the stages as (B, C, 1, X, Y) with lifted parameters vs the CPU transform's
// 2D result: labels of failures name the stage, the shape and "2D".
TEST(CudaDa5Stages, EqualCpuTransformsOn2dSamples) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  CompareCases(Cases2D(), {1, 2, 4}, 500);
}

TEST(CudaDa5Stages, PrepareWithoutGpu) {
  // Prepare only packs host records into the arena: every case (3D and lifted 2D), all batch sizes, no device.
  uint64_t seed = 100;
  std::vector<Case> cases = Cases();
  for (Case& c : Cases2D()) cases.push_back(std::move(c));
  for (const Case& c : cases) {
    const testing::BuiltStage k = testing::BuildStage(c.name, c.config, 3);
    ASSERT_NE(k.stage, nullptr) << c.name;
    ParamArena arena;
    for (int batch : {1, 2, 8})
      for (int channels : {1, 2}) {
        testing::BatchSpec spec = Da5Sample();
        spec.shape = c.shape;
        spec.batch = batch;
        spec.channels = channels;
        spec.seed = seed++;
        const testing::HostBatch in = testing::MakeHostBatch(*k.transform, spec, Label(c));
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
