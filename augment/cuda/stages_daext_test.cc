// GPU tests of the DAExt AugLab kinds' chain stages (augment/transforms/{clamp,zscore_normalization,
// auglab_bias_field,shape_crop,edge_convolution,unsharp_mask}/<name>_cuda.cc) against the CPU transforms: random
// batches (B = 1, 3, 8; 1 and 2 channels; odd and tiny shapes), parameters from the CPU transform's own Draw (every
// third sample without params: it must stay untouched), the stage driven directly on device buffers through
// ParamArena / ChainWorkspace, twice per configuration (the second batch reuses both). Images within a tolerance
// (|gpu − cpu| <= tol · (1 + |cpu|)), labels exactly (shape_crop zeroes them outside its box). One case per kind
// forces AugLab's NaN guard (unsharp_mask with sigma 0: NaN weights, the channel stays as it was on both engines).
// 2D samples (X, Y) (CudaDaextStages.TwoDEqualCpu): the CPU's 2D result vs the stage on the chain's (1, X, Y) form.
// Skipped without a GPU. ctest names: cuda_daext_stages_test (label gpu), cuda_daext_stages_coverage_test (host).
#include <cuda_runtime.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/registry.h"
#include "augment/testing/test_util.h"
#include "augment/transforms/auglab_bias_field/auglab_bias_field.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace augmentd {
namespace {

using json = nlohmann::json;

struct DaextCase {
  std::string kind;
  json config;
  float tol;         // |gpu − cpu| <= tol · (1 + |cpu|)
  int min_channels;  // configurations naming channel 1 need 2 channels
  int seg_channels = 0;
};

std::vector<DaextCase> DaextCases() {
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

// Batch of `batch` samples through `stage` and through the CPU transform; returns the mismatching voxels (image and
// labels; the first three are reported with `label`). A 2-dim `shape` is a 2D sample: the CPU transform sees (X, Y),
// the stage (1, X, Y) with the parameters LiftParams2D gives (these stages use them as drawn).
int64_t CompareBatch(const Transform& t, CudaStage& stage, ParamArena& arena, ChainWorkspace& ws, float tol,
                     const std::vector<int64_t>& shape, int batch, int channels, int seg_channels, uint64_t seed,
                     cudaStream_t stream, const std::string& label) {
  const std::vector<int64_t> shape3 = shape.size() == 2 ? std::vector<int64_t>{1, shape[0], shape[1]} : shape;
  const int64_t voxels = shape3[0] * shape3[1] * shape3[2], n = channels * voxels, ns = seg_channels * voxels;
  std::vector<float> in(static_cast<size_t>(batch * n)), want(in.size()), got(in.size());
  std::vector<int16_t> seg(static_cast<size_t>(batch * ns)), want_seg(seg.size()), got_seg(seg.size());
  std::vector<std::unique_ptr<TransformParams>> owned(batch);
  std::vector<const TransformParams*> params(batch, nullptr);
  for (int b = 0; b < batch; ++b) {
    SampleData s = testing::RandomSample(channels, shape, seg_channels, -1, 3, static_cast<uint32_t>(seed * 97 + b));
    std::copy(s.image.begin(), s.image.end(), in.begin() + b * n);
    std::copy(s.seg.begin(), s.seg.end(), seg.begin() + b * ns);
    if (b % 3 != 2) {
      owned[b] = testing::DrawFor(t, s.layout(), seed, static_cast<uint64_t>(b));
      if (owned[b] == nullptr) return 1;
      const absl::Status applied = t.Apply(*owned[b], s);
      EXPECT_TRUE(applied.ok()) << label << ": " << applied;
      if (shape.size() == 2) {
        auto lifted = LiftParams2D(t.kind(), *owned[b]);
        EXPECT_TRUE(lifted.ok()) << label << ": " << lifted.status();
        if (lifted.ok() && *lifted != nullptr) owned[b] = std::move(*lifted);
      }
      params[b] = owned[b].get();
    }
    std::copy(s.image.begin(), s.image.end(), want.begin() + b * n);
    std::copy(s.seg.begin(), s.seg.end(), want_seg.begin() + b * ns);
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
  if (ns > 0) {
    EXPECT_EQ(cudaMemcpy(got_seg.data(), labels, got_seg.size() * sizeof(int16_t), cudaMemcpyDeviceToHost),
              cudaSuccess);
  }
  cudaFree(image);
  if (labels != nullptr) cudaFree(labels);
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i]))) continue;
    if (bad++ < 3)
      ADD_FAILURE() << label << ": sample " << i / n << " channel " << (i % n) / voxels << " voxel " << i % voxels
                    << ": gpu " << got[i] << " cpu " << want[i];
  }
  for (size_t i = 0; i < want_seg.size(); ++i) {
    if (got_seg[i] == want_seg[i]) continue;
    if (bad++ < 3)
      ADD_FAILURE() << label << ": sample " << i / ns << " seg channel " << (i % ns) / voxels << " voxel "
                    << i % voxels << ": gpu " << got_seg[i] << " cpu " << want_seg[i];
  }
  return bad;
}

// Every case through CompareBatch on each shape (3 dims, or 2: 2D samples), batch size and channel count, `reps`
// times each; one stage, arena and workspace per case (later batches reuse them). Failures name the case.
void CompareCases(const std::vector<DaextCase>& cases, const std::vector<std::vector<int64_t>>& shapes,
                  const std::vector<int>& batches, int reps, uint64_t seed) {
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  for (const DaextCase& c : cases) {
    auto t = TransformFromJson(c.kind, c.config);
    ASSERT_TRUE(t.ok()) << c.kind << ": " << t.status();
    auto stage = MakeCudaStage(**t, 2);
    ASSERT_TRUE(stage.ok() && *stage != nullptr) << c.kind << ": " << stage.status();
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

bool HaveGpu() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

TEST(CudaDaextStages, EqualCpuTransforms) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  CompareCases(DaextCases(), {{13, 11, 9}, {3, 5, 4}, {1, 7, 6}}, {1, 3, 8}, 2, 1);
}

// 2D samples (nnU-Net's "2d" configuration): every case above, odd shapes, B = 1 and 2.
TEST(CudaDaextStages, TwoDEqualCpu) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  const std::vector<DaextCase> cases = DaextCases();
  for (const DaextCase& c : cases) {
    auto t = TransformFromJson(c.kind, c.config);
    ASSERT_TRUE(t.ok()) << c.kind << ": " << t.status();
    EXPECT_TRUE(CheckStage2D((*t)->kind(), 2).ok()) << c.kind;
  }
  CompareCases(cases, {{37, 45}, {5, 3}}, {1, 2}, 1, 1000);
}

// No GPU needed: the factories only inspect the configuration, Prepare only packs host records.
TEST(CudaDaextStages, CoverageAndPrepare) {
  // Every GPU case above parses, builds its stage, draws on every shape and channel count the GPU tests use, and
  // Prepare packs those draws (so the GPU tests fail only on what the device computes).
  for (const DaextCase& c : DaextCases()) {
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
        ChainTensors tensors;
        tensors.batch = 1;
        tensors.channels = channels;
        tensors.seg_channels = tensors.seg_capacity = c.seg_channels;
        const std::vector<int64_t> shape3 = shape.size() == 2 ? std::vector<int64_t>{1, shape[0], shape[1]} : shape;
        for (int d = 0; d < 3; ++d) tensors.shape[d] = static_cast<int32_t>(shape3[d]);
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
    ChainTensors tensors;
    tensors.batch = 2;
    tensors.channels = 1;
    tensors.seg_channels = tensors.seg_capacity = 1;
    tensors.shape[0] = 4;
    tensors.shape[1] = 5;
    tensors.shape[2] = 6;
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
    ChainTensors tensors;
    tensors.batch = 1;
    tensors.channels = 1;
    tensors.shape[0] = 4;
    tensors.shape[1] = 5;
    tensors.shape[2] = 6;
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
  ChainTensors tensors;
  tensors.batch = 1;
  tensors.channels = 1;
  tensors.shape[0] = 4;
  tensors.shape[1] = 5;
  tensors.shape[2] = 6;
  ParamArena arena;
  EXPECT_EQ((*stage)->Prepare({&bad}, tensors, arena).code(), absl::StatusCode::kInvalidArgument);
  tensors.shape[0] = 1;  // the chain's form of a 2D sample: the 2D polynomial
  EXPECT_TRUE((*stage)->Prepare({&bad}, tensors, arena).ok());
}

}  // namespace
}  // namespace augmentd
