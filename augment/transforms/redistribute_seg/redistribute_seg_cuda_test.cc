// GPU test of redistribute_seg's chain stage (redistribute_seg_cuda.cc, redistribute_seg.cu) against the CPU
// transform (redistribute_seg.h): random batches (B = 1, 3, 8; 1 and 2 channels; 1 and 2 seg channels), images
// N(0.5, 2) with a few NaN / Inf voxels, labels in boxes (a -1 slab, 1..3 inside; every fourth sample without
// foreground: AugLab's early exit), parameters from the CPU transform's own Draw, every third sample without params
// (it must stay untouched), the stage driven directly on device buffers through ParamArena / ChainWorkspace, twice
// per configuration (the second batch reuses both). Tolerance |gpu − cpu| <= 2e-4 · (1 + |cpu|): the float math is
// shared (kernels/common/redistribute_seg_math.h), expf (CUDA vs glibc) and the double reductions' order differ. 2D
// samples (X, Y): the stage on the chain's (1, X, Y), parameters as drawn. ctest: cuda_redistribute_seg_stage_test (label
// gpu, skipped without a GPU), cuda_redistribute_seg_stage_host_test (factory and Prepare's checks, no GPU).
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/registry.h"
#include "augment/testing/stage_harness.h"
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

struct RsCase {
  json config;
  int min_channels;
  int seg_channels;
};

TEST(CudaRedistributeSegStage, EqualsCpuTransform) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  const std::vector<RsCase> cases = {
      {json::object(), 1, 1},                                                               // AugLab's JSON
      {{{"in_seg", 1.0}, {"retain_stats", true}}, 1, 1},
      {{{"in_seg", 0.0}}, 1, 2},                                                            // two regions
      {{{"apply_to_channel", {1, 0}}, {"in_seg", 0.5}, {"retain_stats", true}}, 2, 2},
  };
  const std::vector<std::vector<int64_t>> shapes = {{13, 11, 9}, {5, 4, 6}, {2, 17, 3}, {9, 8}, {1, 7}};
  testing::TestStream stream;
  ASSERT_TRUE(stream.ok());
  testing::Sweep sweep;  // every third sample without params; the labels must come back as they went in
  sweep.shapes = shapes;
  sweep.labels = testing::LabelCheck::kUnchanged;
  sweep.sample.make_sample = [](const testing::BatchSpec& spec, int b, uint32_t data_seed) {
    return BoxSample(spec.channels, spec.shape, spec.seg_channels, b % 4 != 3, data_seed);
  };
  // The float math is shared; expf and the reductions' order differ. NaN / Inf inputs stay NaN / Inf on both.
  const testing::Tolerance tol = testing::Tolerance(2e-4f).WithSpecials();
  uint64_t seed = 1;
  for (const RsCase& c : cases)
    testing::SweepCase({"redistribute_seg", c.config, tol, c.min_channels, c.seg_channels}, sweep, seed, stream.get());
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
