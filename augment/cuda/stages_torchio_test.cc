// GPU tests of the TorchIO / AugLab resampling stages (augment/transforms/{anisotropy,auglab_low_resolution,
// torchio_affine,elastic_deformation}/<name>_cuda.cc) against the CPU transforms: random batches (B = 1, 3; 1 and 2
// channels; 0, 1 or 2 label channels; odd and tiny shapes), parameters from the CPU transform's own Draw (every third
// sample without params: it must stay untouched), the stage driven directly on device buffers through ParamArena /
// ChainWorkspace, twice per configuration (the second batch reuses both). Images: |gpu − cpu| <= tol·(1 + |cpu|);
// labels: mismatch fraction <= 1e-4 (both engines run sitk_math.h's per-voxel code, so the labels are expected to be
// identical; the allowance only keeps the verdict CPU-independent). 2D samples (X, Y): the CPU's 2D result vs the
// stage on the chain's (1, X, Y) form (parameters through LiftParams2D, cuda/chain_2d.h).
// Skipped without a GPU. ctest names: cuda_torchio_stages_test (label gpu), cuda_torchio_stages_coverage_test.
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

struct TorchioCase {
  std::string kind;
  json config;
  float tol;  // image: |gpu − cpu| <= tol · (1 + |cpu|)
  bool three_d_only = false;
};

std::vector<TorchioCase> TorchioCases() {
  return {
      {"anisotropy", json::object(), 1e-5f},
      {"anisotropy", {{"downsampling", {1.0, 7.0}}, {"image_interpolation", "nearest"}, {"scalars_only", false}}, 0.0f},
      {"anisotropy", {{"axes", {1}}, {"downsampling", 3.3}, {"scalars_only", false}}, 1e-5f},
      {"torchio_affine", json::object(), 1e-5f},
      {"torchio_affine",
       {{"degrees", 30}, {"translation", {1.5, 2.0, 0.5}}, {"scales", {0.7, 1.3}}, {"default_pad_value", -3.5},
        {"default_pad_label", 2}},
       1e-5f},
      {"torchio_affine",
       {{"degrees", {-20, 20}}, {"scales", 0.2}, {"isotropic", true}, {"center", "origin"},
        {"image_interpolation", "nearest"}},
       0.0f},
      {"elastic_deformation", {{"num_control_points", 7}, {"max_displacement", 4}}, 1e-5f},
      {"elastic_deformation",
       {{"num_control_points", {5, 6, 4}}, {"max_displacement", {2.5, 1, 3}}, {"locked_borders", 1},
        {"image_interpolation", "nearest"}},
       0.0f},
      {"auglab_low_resolution", json::object(), 0.0f, true},
      {"auglab_low_resolution", {{"scale", {0.5, 1.0}}, {"crop", {0.8, 1.0}}, {"scale_axes", {0, 2}}}, 0.0f, true},
      {"auglab_low_resolution", {{"mode", "acq"}, {"scale", {0.2, 1.0}}, {"scale_axes", {1}}}, 1e-6f, true},
      {"auglab_low_resolution",
       {{"mode", "acq"}, {"scale", {0.3, 0.9}}, {"apply_to_channel", {0}}, {"scale_axes", {0, 1, 2}}},
       1e-6f,
       true},
  };
}

struct Mismatches {
  int64_t image = 0, labels = 0, label_voxels = 0;
};

// One batch through `stage` and through the CPU transform.
Mismatches CompareBatch(const Transform& t, CudaStage& stage, ParamArena& arena, ChainWorkspace& ws, float tol,
                        const std::vector<int64_t>& shape, int batch, int channels, int seg_channels, uint64_t seed,
                        cudaStream_t stream, const std::string& label) {
  Mismatches m;
  const std::vector<int64_t> shape3 = shape.size() == 2 ? std::vector<int64_t>{1, shape[0], shape[1]} : shape;
  const int64_t voxels = shape3[0] * shape3[1] * shape3[2], n = channels * voxels, ns = seg_channels * voxels;
  std::vector<float> in(static_cast<size_t>(batch * n)), want(in.size()), got(in.size());
  std::vector<int16_t> seg(static_cast<size_t>(batch * ns)), want_seg(seg.size()), got_seg(seg.size());
  std::vector<std::unique_ptr<TransformParams>> owned(batch);
  std::vector<const TransformParams*> params(batch, nullptr);
  for (int b = 0; b < batch; ++b) {
    SampleData s = testing::RandomSample(channels, shape, seg_channels, 0, 4, static_cast<uint32_t>(seed * 97 + b));
    std::copy(s.image.begin(), s.image.end(), in.begin() + b * n);
    std::copy(s.seg.begin(), s.seg.end(), seg.begin() + b * ns);
    if (b % 3 != 2) {
      owned[b] = testing::DrawFor(t, s.layout(), seed, static_cast<uint64_t>(b));
      if (owned[b] == nullptr) {
        m.image = 1;
        return m;
      }
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
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i]))) continue;
    if (m.image++ < 3)
      ADD_FAILURE() << label << ": sample " << i / n << " channel " << (i % n) / voxels << " voxel " << i % voxels
                    << ": gpu " << got[i] << " cpu " << want[i];
  }
  m.label_voxels = static_cast<int64_t>(want_seg.size());
  for (size_t i = 0; i < want_seg.size(); ++i) {
    if (got_seg[i] == want_seg[i]) continue;
    if (m.labels++ < 3)
      std::cerr << label << ": label mismatch at sample " << i / ns << " voxel " << i % ns << ": gpu " << got_seg[i]
                << " cpu " << want_seg[i] << "\n";
  }
  return m;
}

void CompareCases(const std::vector<TorchioCase>& cases, const std::vector<std::vector<int64_t>>& shapes,
                  const std::vector<int>& batches, int reps, uint64_t seed) {
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  for (const TorchioCase& c : cases) {
    auto t = TransformFromJson(c.kind, c.config);
    ASSERT_TRUE(t.ok()) << c.kind << ": " << t.status();
    auto stage = MakeCudaStage(**t, 2);
    ASSERT_TRUE(stage.ok() && *stage != nullptr) << c.kind << ": " << stage.status();
    ParamArena arena;
    ChainWorkspace ws;
    int64_t label_bad = 0, label_all = 0;
    for (const std::vector<int64_t>& shape : shapes) {
      if (c.three_d_only && shape.size() != 3) continue;
      std::string dims = shape.size() == 2 ? " 2D (" : " (";
      for (size_t d = 0; d < shape.size(); ++d) dims += (d > 0 ? ", " : "") + std::to_string(shape[d]);
      for (int batch : batches)
        for (int channels = 1; channels <= 2; ++channels)
          for (int seg_channels = 0; seg_channels <= 2; ++seg_channels)
            for (int rep = 0; rep < reps; ++rep) {
              const std::string label = c.kind + " " + c.config.dump() + dims + ") B=" + std::to_string(batch) +
                                        " C=" + std::to_string(channels) + " S=" + std::to_string(seg_channels);
              const Mismatches m = CompareBatch(**t, **stage, arena, ws, c.tol, shape, batch, channels, seg_channels,
                                                seed++, stream, label);
              EXPECT_EQ(m.image, 0) << label;
              label_bad += m.labels;
              label_all += m.label_voxels;
            }
    }
    EXPECT_LE(static_cast<double>(label_bad), 1e-4 * static_cast<double>(label_all))
        << c.kind << " " << c.config.dump() << ": " << label_bad << " of " << label_all << " labels differ";
  }
  cudaStreamDestroy(stream);
}

bool HaveGpu() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

TEST(CudaTorchioStages, EqualCpuTransforms) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  CompareCases(TorchioCases(), {{13, 11, 9}, {3, 5, 4}, {1, 7, 6}}, {1, 3}, 2, 1);
}

TEST(CudaTorchioStages, TwoDEqualCpu) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  std::vector<TorchioCase> cases;
  for (const TorchioCase& c : TorchioCases()) {
    if (c.three_d_only) continue;
    auto t = TransformFromJson(c.kind, c.config);
    ASSERT_TRUE(t.ok()) << c.kind << ": " << t.status();
    EXPECT_TRUE(CheckStage2D((*t)->kind(), 2).ok()) << c.kind;
    cases.push_back(c);  // 2D samples have no axis 2: anisotropy draws among the remaining axes
  }
  CompareCases(cases, {{37, 45}, {5, 3}}, {1, 2}, 1, 1000);
}

TEST(CudaTorchioStages, CoverageWithoutGpu) {
  // No GPU needed: the factory only inspects the configuration; Prepare only packs host records.
  for (const TorchioCase& c : TorchioCases()) {
    auto t = TransformFromJson(c.kind, c.config);
    ASSERT_TRUE(t.ok()) << c.kind << ": " << t.status();
    auto stage = MakeCudaStage(**t, 0);
    ASSERT_TRUE(stage.ok()) << c.kind << ": " << stage.status();
    ASSERT_NE(*stage, nullptr) << c.kind;
    SampleData s = testing::RandomSample(1, {6, 5, 4}, 1, 0, 3, 1);
    auto params = testing::DrawFor(**t, s.layout(), 1);
    ASSERT_NE(params, nullptr);
    ChainTensors tensors;
    tensors.batch = 2;
    tensors.channels = 1;
    tensors.seg_channels = tensors.seg_capacity = 1;
    tensors.shape[0] = 6;
    tensors.shape[1] = 5;
    tensors.shape[2] = 4;
    ParamArena arena;
    const absl::Status st = (*stage)->Prepare({params.get(), nullptr}, tensors, arena);
    EXPECT_TRUE(st.ok()) << c.kind << ": " << st;
  }
}

}  // namespace
}  // namespace augmentd
