// GPU tests of AugLab's extras as chain stages (cuda/stages_auglab.cc) against the CPU transforms
// (augment/transforms/{histogram_equalization,random_convolution,intensity_function}/): random batches (B = 1, 3, 8; 1 and 2 channels; odd and tiny shapes), parameters
// from the CPU transform's own Draw (every third sample without params: it must stay untouched), the stage driven
// directly on device buffers through ParamArena / ChainWorkspace, twice per configuration (the second batch reuses
// both). Region cases (in_seg / out_seg / mix_in_out, auglab_region.h) add int16 labels −1..3 (1 or 2 seg channels,
// seg_channel 0 or 1) uploaded as the chain's seg scratch. 2D samples (X, Y) (CudaAuglabStages.TwoDEqualCpu): the
// CPU's 2D result vs the stage on the chain's (1, X, Y) form (parameters through LiftParams2D, cuda/chain_2d.h).
// Skipped without a GPU. ctest names: cuda_auglab_stages_test (label gpu), cuda_auglab_stages_coverage_test.
#include <cuda_runtime.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/registry.h"
#include "augment/testing/test_util.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace augmentd {
namespace {

using json = nlohmann::json;

struct AuglabCase {
  std::string kind;
  json config;
  float tol;         // |gpu − cpu| <= tol · (1 + |cpu|)
  int min_channels;  // configurations naming channel 1 need 2 channels
  int seg_channels = 0;
};

std::vector<AuglabCase> AuglabCases() {
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

// Batch of `batch` samples through `stage` and through the CPU transform; returns the mismatching voxels (the
// first three are reported with `label`). A 2-dim `shape` is a 2D sample: the CPU transform sees (X, Y), the stage
// (1, X, Y) with the parameters LiftParams2D gives (these stages use them as drawn).
int64_t CompareBatch(const Transform& t, CudaStage& stage, ParamArena& arena, ChainWorkspace& ws, float tol,
                     const std::vector<int64_t>& shape, int batch, int channels, int seg_channels, uint64_t seed,
                     cudaStream_t stream, const std::string& label) {
  const std::vector<int64_t> shape3 = shape.size() == 2 ? std::vector<int64_t>{1, shape[0], shape[1]} : shape;
  const int64_t voxels = shape3[0] * shape3[1] * shape3[2], n = channels * voxels, ns = seg_channels * voxels;
  std::vector<float> in(static_cast<size_t>(batch * n)), want(in.size()), got(in.size());
  std::vector<int16_t> seg(static_cast<size_t>(batch * ns));
  std::vector<std::unique_ptr<TransformParams>> owned(batch);
  std::vector<const TransformParams*> params(batch, nullptr);
  for (int b = 0; b < batch; ++b) {
    SampleData s = testing::RandomSample(channels, shape, seg_channels, -1, 3, static_cast<uint32_t>(seed * 97 + b));
    std::copy(s.image.begin(), s.image.end(), in.begin() + b * n);
    std::copy(s.seg.begin(), s.seg.end(), seg.begin() + b * ns);
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
  void* labels = nullptr;
  if (ns > 0) {
    EXPECT_EQ(cudaMalloc(&labels, seg.size() * sizeof(int16_t)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(labels, seg.data(), seg.size() * sizeof(int16_t), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ChainTensors tensors;
  tensors.image = static_cast<float*>(image);
  tensors.seg = static_cast<int16_t*>(labels);
  tensors.batch = batch;
  tensors.channels = channels;
  tensors.seg_channels = seg_channels;
  tensors.seg_capacity = seg_channels;
  for (int d = 0; d < 3; ++d) tensors.shape[d] = static_cast<int32_t>(shape3[d]);
  arena.Reset();
  absl::Status st = stage.Prepare(params, tensors, arena);
  if (st.ok()) st = arena.Upload(stream);
  if (st.ok()) st = stage.Enqueue(tensors, arena, ws, stream);
  EXPECT_TRUE(st.ok()) << label << ": " << st;
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(got.data(), image, got.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(image);
  if (labels != nullptr) cudaFree(labels);
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i]))) continue;
    if (bad++ < 3)
      ADD_FAILURE() << label << ": sample " << i / n << " channel " << (i % n) / voxels << " voxel " << i % voxels
                    << ": gpu " << got[i] << " cpu " << want[i];
  }
  return bad;
}

// Every case through CompareBatch on each shape (3 dims, or 2: 2D samples), batch size and channel count, `reps`
// times each; one stage, arena and workspace per case (later batches reuse them). Failures name the case.
void CompareCases(const std::vector<AuglabCase>& cases, const std::vector<std::vector<int64_t>>& shapes,
                  const std::vector<int>& batches, int reps, uint64_t seed) {
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  for (const AuglabCase& c : cases) {
    auto t = TransformFromJson(c.kind, c.config);
    ASSERT_TRUE(t.ok()) << c.kind << ": " << t.status();
    auto stage = MakeCudaStage(**t, 2);
    ASSERT_TRUE(stage.ok() && *stage != nullptr) << c.kind;
    ParamArena arena;
    ChainWorkspace ws;
    for (const std::vector<int64_t>& shape : shapes) {
      std::string dims = shape.size() == 2 ? " 2D (" : " (";
      for (size_t d = 0; d < shape.size(); ++d) dims += (d > 0 ? ", " : "") + std::to_string(shape[d]);
      for (int batch : batches)
        for (int channels = c.min_channels; channels <= 2; ++channels)
          for (int rep = 0; rep < reps; ++rep) {
            const std::string label = c.kind + " " + c.config.dump() + dims + ") B=" + std::to_string(batch) +
                                      " C=" + std::to_string(channels);
            EXPECT_EQ(CompareBatch(**t, **stage, arena, ws, c.tol, shape, batch, channels, c.seg_channels, seed++,
                                   stream, label),
                      0)
                << label;
          }
    }
  }
  cudaStreamDestroy(stream);
}

TEST(CudaAuglabStages, EqualCpuTransforms) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device";
  CompareCases(AuglabCases(), {{13, 11, 9}, {3, 5, 4}}, {1, 3, 8}, 2, 1);
}

// 2D samples (nnU-Net's "2d" configuration): every case above plus forced-on ones, odd shapes, B = 1 and 2.
TEST(CudaAuglabStages, TwoDEqualCpu) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device";
  std::vector<AuglabCase> cases = AuglabCases();
  const json all_fns = {"log1p", "sqrt", "sin", "exp", "sigmoid", "square"};
  cases.push_back({"intensity_function", {{"functions", all_fns}, {"p_function", 1.0}, {"p_inverse", 1.0}}, 1e-4f, 1});
  cases.push_back({"random_convolution", {{"kernel_sizes", {3, 7, 15}}, {"mix_prob", 0.0}}, 1e-6f, 1});
  cases.push_back({"random_convolution", {{"kernel_sizes", {5}}, {"mix_prob", 1.0}, {"apply_to_channel", {1}}},
                   1e-6f, 2});
  for (const AuglabCase& c : cases) {
    auto t = TransformFromJson(c.kind, c.config);
    ASSERT_TRUE(t.ok()) << c.kind << ": " << t.status();
    EXPECT_TRUE(CheckStage2D((*t)->kind(), 2).ok()) << c.kind;
  }
  CompareCases(cases, {{37, 45}, {5, 3}}, {1, 2}, 1, 1000);
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
      ChainTensors tensors;
      tensors.batch = 1;
      tensors.channels = 1;
      tensors.seg_channels = tensors.seg_capacity = seg_channels;
      tensors.shape[0] = 4;
      tensors.shape[1] = 5;
      tensors.shape[2] = 6;
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
