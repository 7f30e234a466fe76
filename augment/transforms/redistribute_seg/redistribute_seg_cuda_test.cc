// GPU test of redistribute_seg's chain stage (redistribute_seg_cuda.cc, redistribute_seg.cu) against the CPU
// transform (redistribute_seg.h): random batches (B = 1, 3, 8; 1 and 2 channels; 1 and 2 seg channels), images
// N(0.5, 2) with a few NaN / Inf voxels, labels in boxes (a -1 slab, 1..3 inside; every fourth sample without
// foreground: AugLab's early exit), parameters from the CPU transform's own Draw, every third sample without params
// (it must stay untouched), the stage driven directly on device buffers through ParamArena / ChainWorkspace, twice
// per configuration (the second batch reuses both). Tolerance |gpu − cpu| <= 2e-4 · (1 + |cpu|): the float math is
// shared (kernels/common/redistribute_seg_math.h), expf (CUDA vs glibc) and the double reductions' order differ. 2D
// samples (X, Y): the stage on the chain's (1, X, Y), parameters as drawn. ctest: cuda_redistribute_seg_stage_test (label
// gpu, skipped without a GPU), cuda_redistribute_seg_stage_host_test (factory and Prepare's checks, no GPU).
#include <cuda_runtime.h>

#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/registry.h"
#include "augment/testing/test_util.h"
#include "augment/transforms/redistribute_seg/redistribute_seg.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace augmentd {
namespace {

using json = nlohmann::json;

// A sample whose labels are boxes: per seg channel a −1 slab and a box of label 1..3 (none when `foreground` is
// false); the image gets a NaN and an Inf when it has at least 8 voxels.
SampleData BoxSample(int channels, const std::vector<int64_t>& shape, int seg_channels, bool foreground,
                     uint32_t seed) {
  SampleData s = testing::RandomSample(channels, shape, seg_channels, 0, 0, seed);
  std::mt19937 gen(seed + 17);
  const std::vector<int64_t> s3 = shape.size() == 2 ? std::vector<int64_t>{1, shape[0], shape[1]} : shape;
  const int64_t n = s3[0] * s3[1] * s3[2];
  for (int r = 0; r < seg_channels; ++r) {
    int64_t lo[3], hi[3];
    for (int a = 0; a < 3; ++a) {
      lo[a] = static_cast<int64_t>(gen() % static_cast<uint32_t>(s3[a]));
      hi[a] = lo[a] + 1 + static_cast<int64_t>(gen() % static_cast<uint32_t>(s3[a] - lo[a]));
    }
    const int16_t label = static_cast<int16_t>(1 + gen() % 3);
    for (int64_t i = 0; i < s3[0]; ++i)
      for (int64_t j = 0; j < s3[1]; ++j)
        for (int64_t k = 0; k < s3[2]; ++k) {
          int16_t& v = s.seg[static_cast<size_t>(r * n + (i * s3[1] + j) * s3[2] + k)];
          if (k == 0 && (j % 3) == 0) v = -1;
          if (foreground && i >= lo[0] && i < hi[0] && j >= lo[1] && j < hi[1] && k >= lo[2] && k < hi[2]) v = label;
        }
  }
  if (n >= 8) {
    s.image[static_cast<size_t>(gen() % static_cast<uint32_t>(n))] = std::numeric_limits<float>::quiet_NaN();
    s.image[static_cast<size_t>(gen() % static_cast<uint32_t>(n))] = std::numeric_limits<float>::infinity();
  }
  return s;
}

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
    SampleData s = BoxSample(channels, shape, seg_channels, b % 4 != 3, static_cast<uint32_t>(seed * 97 + b));
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
  void* labels = nullptr;
  EXPECT_EQ(cudaMalloc(&image, in.size() * sizeof(float)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(image, in.data(), in.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  EXPECT_EQ(cudaMalloc(&labels, seg.size() * sizeof(int16_t)), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(labels, seg.data(), seg.size() * sizeof(int16_t), cudaMemcpyHostToDevice), cudaSuccess);
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
  std::vector<int16_t> seg_after(seg.size());
  EXPECT_EQ(cudaMemcpy(seg_after.data(), labels, seg.size() * sizeof(int16_t), cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(image);
  cudaFree(labels);
  EXPECT_EQ(seg_after, seg) << label << ": the labels must stay as they are";
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const bool same_special = (std::isnan(got[i]) && std::isnan(want[i])) || (std::isinf(want[i]) && got[i] == want[i]);
    if (same_special || std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i]))) continue;
    if (bad++ < 3)
      ADD_FAILURE() << label << ": sample " << i / n << " channel " << (i % n) / voxels << " voxel " << i % voxels
                    << ": gpu " << got[i] << " cpu " << want[i];
  }
  return bad;
}

struct RsCase {
  json config;
  int min_channels;
  int seg_channels;
};

TEST(CudaRedistributeSegStage, EqualsCpuTransform) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device";
  const std::vector<RsCase> cases = {
      {json::object(), 1, 1},                                                               // AugLab's JSON
      {{{"in_seg", 1.0}, {"retain_stats", true}}, 1, 1},
      {{{"in_seg", 0.0}}, 1, 2},                                                            // two regions
      {{{"apply_to_channel", {1, 0}}, {"in_seg", 0.5}, {"retain_stats", true}}, 2, 2},
  };
  const std::vector<std::vector<int64_t>> shapes = {{13, 11, 9}, {5, 4, 6}, {2, 17, 3}, {9, 8}, {1, 7}};
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  uint64_t seed = 1;
  for (const RsCase& c : cases) {
    auto t = TransformFromJson("redistribute_seg", c.config);
    ASSERT_TRUE(t.ok()) << t.status();
    auto stage = MakeCudaStage(**t, 2);
    ASSERT_TRUE(stage.ok() && *stage != nullptr) << stage.status();
    ParamArena arena;
    ChainWorkspace ws;
    for (const auto& shape : shapes)
      for (int batch : {1, 3, 8})
        for (int channels = c.min_channels; channels <= 2; ++channels)
          for (int rep = 0; rep < 2; ++rep) {
            std::string label = "redistribute_seg " + c.config.dump() + (shape.size() == 2 ? " 2D (" : " (");
            for (size_t d = 0; d < shape.size(); ++d) label += (d > 0 ? ", " : "") + std::to_string(shape[d]);
            label += ") B=" + std::to_string(batch) + " C=" + std::to_string(channels) +
                     " R=" + std::to_string(c.seg_channels);
            EXPECT_EQ(CompareBatch(**t, **stage, arena, ws, 2e-4f, shape, batch, channels, c.seg_channels, seed++,
                                   stream, label),
                      0)
                << label;
          }
  }
  cudaStreamDestroy(stream);
}

// Host only: the factory, the 2D check and Prepare's checks (regions vs jitter, segmentation, channels, a channel
// injected twice).
TEST(CudaRedistributeSegStage, HostFactoryAndPrepareChecks) {
  auto t = TransformFromJson("redistribute_seg", json::object());
  ASSERT_TRUE(t.ok()) << t.status();
  auto stage = MakeCudaStage(**t, 3);
  ASSERT_TRUE(stage.ok()) << stage.status();
  EXPECT_TRUE(CheckStage2D(TransformKind::kRedistributeSeg, 3).ok());
  RedistributeSegParams p;
  p.apply_to_channel = {0};
  p.in_seg = {true};
  p.jitter = {{0.1f}};
  p.amplitude = {{0.5f}};
  int16_t fake_seg = 0;  // never dereferenced by Prepare
  ChainTensors ok;
  ok.batch = 2;
  ok.channels = 1;
  ok.seg = &fake_seg;
  ok.seg_channels = 1;
  ok.shape[0] = ok.shape[1] = ok.shape[2] = 4;
  ParamArena arena;
  EXPECT_TRUE((*stage)->Prepare({&p, nullptr}, ok, arena).ok());
  ChainTensors two_regions = ok;
  two_regions.seg_channels = 2;  // one jitter value for two regions
  absl::Status st = (*stage)->Prepare({&p}, two_regions, arena);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("transform 3 (redistribute_seg)"), std::string::npos) << st;
  ChainTensors no_seg = ok;
  no_seg.seg = nullptr;
  no_seg.seg_channels = 0;
  EXPECT_EQ((*stage)->Prepare({&p}, no_seg, arena).code(), absl::StatusCode::kInvalidArgument);
  p.apply_to_channel = {1};  // outside the one channel
  EXPECT_EQ((*stage)->Prepare({&p}, ok, arena).code(), absl::StatusCode::kInvalidArgument);
  ChainTensors two_channels = ok;
  two_channels.channels = 2;
  p.apply_to_channel = {1, 1};  // the stage runs a sample's channels at once
  p.in_seg = {true, false};
  p.jitter = {{0.1f}, {0.2f}};
  p.amplitude = {{0.5f}, {0.6f}};
  EXPECT_EQ((*stage)->Prepare({&p}, two_channels, arena).code(), absl::StatusCode::kInvalidArgument);
  p.apply_to_channel = {1, 0};
  EXPECT_TRUE((*stage)->Prepare({&p}, two_channels, arena).ok());
}

}  // namespace
}  // namespace augmentd
