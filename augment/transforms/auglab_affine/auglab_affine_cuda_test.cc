// GPU = CPU test of auglab_affine's chain stage (auglab_affine_cuda.cc) against AuglabAffineTransform::Apply: random
// batches (B = 1, 3, 8; 1 and 2 channels; 1 seg channel; odd and tiny shapes, a one-voxel axis), parameters from the
// CPU transform's own Draw (every third sample without parameters: it must stay untouched), the stage driven directly
// on device buffers through ParamArena / ChainWorkspace (the second batch of a configuration reuses both). Both
// backends run auglab_affine_math.h's explicitly rounded float32 code: image within 1e-5 relative, labels equal but
// for at most 1 in 10^4 voxels (a nearest tie). Skipped without a GPU. ctest name: auglab_affine_cuda_test (label gpu).
#include <cuda_runtime.h>

#include <algorithm>
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

// One batch through `stage` and through the CPU transform; the mismatching image + label voxels.
int64_t CompareBatch(const Transform& t, CudaStage& stage, ParamArena& arena, ChainWorkspace& ws,
                     const std::vector<int64_t>& shape, int batch, int channels, uint64_t seed, cudaStream_t stream,
                     const std::string& label) {
  const int seg_channels = 1;
  const int64_t voxels = shape[0] * shape[1] * shape[2], n = channels * voxels, ns = seg_channels * voxels;
  std::vector<float> in(static_cast<size_t>(batch * n)), want(in.size()), got(in.size());
  std::vector<int16_t> seg(static_cast<size_t>(batch * ns)), want_seg(seg.size()), got_seg(seg.size());
  std::vector<std::unique_ptr<TransformParams>> owned(static_cast<size_t>(batch));
  std::vector<const TransformParams*> params(static_cast<size_t>(batch), nullptr);
  for (int b = 0; b < batch; ++b) {
    SampleData s = testing::RandomSample(channels, shape, seg_channels, -1, 3, static_cast<uint32_t>(seed * 97 + b));
    std::copy(s.image.begin(), s.image.end(), in.begin() + b * n);
    std::copy(s.seg.begin(), s.seg.end(), seg.begin() + b * ns);
    if (b % 3 != 2) {
      owned[b] = testing::DrawFor(t, s.layout(), seed, static_cast<uint64_t>(b));
      if (owned[b] == nullptr) return 1;
      EXPECT_TRUE(t.Apply(*owned[b], s).ok());
      params[b] = owned[b].get();
    }
    std::copy(s.image.begin(), s.image.end(), want.begin() + b * n);
    std::copy(s.seg.begin(), s.seg.end(), want_seg.begin() + b * ns);
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
  for (int d = 0; d < 3; ++d) tensors.shape[d] = static_cast<int32_t>(shape[d]);
  arena.Reset();
  absl::Status st = stage.Prepare(params, tensors, arena);
  if (st.ok()) st = arena.Upload(stream);
  if (st.ok()) st = stage.Enqueue(tensors, arena, ws, stream);
  EXPECT_TRUE(st.ok()) << label << ": " << st;
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(got.data(), image, got.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(got_seg.data(), labels, got_seg.size() * sizeof(int16_t), cudaMemcpyDeviceToHost),
            cudaSuccess);
  cudaFree(image);
  cudaFree(labels);
  int64_t bad = 0, label_bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::abs(got[i] - want[i]) <= 1e-5f * (1.0f + std::abs(want[i]))) continue;
    if (bad++ < 3) ADD_FAILURE() << label << ": image voxel " << i << ": gpu " << got[i] << " cpu " << want[i];
  }
  for (size_t i = 0; i < want_seg.size(); ++i) label_bad += got_seg[i] != want_seg[i];
  if (label_bad * 10000 > static_cast<int64_t>(want_seg.size())) {
    ADD_FAILURE() << label << ": " << label_bad << " of " << want_seg.size() << " labels differ";
    bad += label_bad;
  }
  return bad;
}

TEST(AuglabAffineCuda, EqualsCpuTransform) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) GTEST_SKIP() << "no CUDA device";
  cudaStream_t stream;
  ASSERT_EQ(cudaStreamCreate(&stream), cudaSuccess);
  uint64_t seed = 1;
  for (const nlohmann::json& cfg :
       {nlohmann::json::object(), nlohmann::json({{"resample", "nearest"}}),
        nlohmann::json({{"degrees", {-30, 30, -30, 30, -30, 30}}, {"scale", {0.7, 1.4, 0.7, 1.4, 0.7, 1.4}},
                        {"translate", {0.2, 0.2, 0.2}}})}) {
    auto t = TransformFromJson("auglab_affine", cfg);
    ASSERT_TRUE(t.ok()) << t.status();
    auto stage = MakeCudaStage(**t, 2);
    ASSERT_TRUE(stage.ok() && *stage != nullptr) << stage.status();
    ParamArena arena;
    ChainWorkspace ws;
    for (const std::vector<int64_t>& shape : {std::vector<int64_t>{13, 11, 9}, std::vector<int64_t>{3, 5, 4},
                                             std::vector<int64_t>{1, 7, 6}})
      for (int batch : {1, 3, 8})
        for (int channels = 1; channels <= 2; ++channels)
          for (int rep = 0; rep < 2; ++rep) {
            const std::string label = cfg.dump() + " (" + std::to_string(shape[0]) + ", " + std::to_string(shape[1]) +
                                      ", " + std::to_string(shape[2]) + ") B=" + std::to_string(batch) +
                                      " C=" + std::to_string(channels);
            EXPECT_EQ(CompareBatch(**t, **stage, arena, ws, shape, batch, channels, seed++, stream, label), 0)
                << label;
          }
  }
  cudaStreamDestroy(stream);
}

// No GPU needed: the stage is registered (GetServerInfo cuda=true) and 2D samples are refused (AugLab is 3D only).
TEST(AuglabAffineCuda, RegisteredFor3dOnly) {
  EXPECT_TRUE(HasCudaImplementation(TransformKind::kAuglabAffine));
  EXPECT_EQ(CheckStage2D(TransformKind::kAuglabAffine, 0).code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace augmentd
