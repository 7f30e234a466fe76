// GPU tests (label gpu): the MRI artefact stages (cuda/stages_mri.cc) against the CPU transforms, per sample, on a
// batch with per-sample parameters, one sample not applied (must stay bit-identical), odd / non-power-of-two shapes;
// and on 2D samples (CudaMriStages.*2d*: the CPU's 2D result vs the stage on (1, X, Y) with lifted parameters).
// Without a CUDA device every test skips.
#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/registry.h"
#include "augment/testing/stage_harness.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

// False when the build found no cuFFT (the k-space stages are then UNIMPLEMENTED, by design).
bool HaveCufft() {
  auto t = TransformFromJson("spike", nlohmann::json::object());
  return t.ok() && MakeCudaStage(**t, 0).ok();
}

// CPU reference and GPU result of one batch (input `host`, C order (B, C, spatial)).
struct Run {
  std::vector<float> host, want, got;
  int64_t p = 0;  // voxels per channel
};

// Runs `kind` with `config` through its stage and through the CPU transform. `shape` has 3 dims, or 2 for a 2D
// sample: the CPU transform then sees (X, Y) and the stage the chain's form (1, X, Y) with the parameters lifted by
// LiftParams2D (cuda/chain_2d.h). Sample `skip` (< 0: none) is not applied.
Run RunBatch(const std::string& kind, const nlohmann::json& config, const std::vector<int32_t>& shape, int batch,
             int channels, uint64_t seed, int skip) {
  Run r;
  const testing::BuiltStage k = testing::BuildStage(kind, config, 0);
  if (k.stage == nullptr) return r;  // the failure is recorded
  testing::BatchSpec spec;
  spec.shape.assign(shape.begin(), shape.end());
  spec.batch = batch;
  spec.channels = channels;
  spec.seed = seed;
  spec.skip = [skip](int b) { return b == skip; };  // not applied: must come back unchanged
  // The batch's values: one N(1, 2) stream over (B, C, spatial), sample after sample.
  const int64_t p = spec.shape.size() == 2 ? int64_t{shape[0]} * shape[1] : int64_t{shape[0]} * shape[1] * shape[2];
  std::mt19937 g(static_cast<uint32_t>(seed));
  std::normal_distribution<float> n(1.0f, 2.0f);
  std::vector<float> values(static_cast<size_t>(batch * channels * p));
  for (float& v : values) v = n(g);
  spec.make_sample = [&values, p](const testing::BatchSpec& sp, int b, uint32_t) {
    SampleData s;
    s.channels = sp.channels;
    s.shape = sp.shape;
    s.image.assign(values.begin() + b * sp.channels * p, values.begin() + (b + 1) * sp.channels * p);
    return s;
  };
  const testing::HostBatch in = testing::MakeHostBatch(*k.transform, spec, kind);
  if (!in.drawn) return r;
  r.host = in.image;
  r.want = in.want;
  r.p = in.voxels;
  testing::TestStream stream;
  testing::DeviceBatch dev(in);
  ParamArena arena;
  ChainWorkspace ws;
  for (int rep = 0; rep < 2; ++rep) {  // second pass: cached plan and workspace (steady state)
    dev.Upload();
    dev.Run(*k.stage, arena, ws, stream.get(), kind);
    r.got = dev.DownloadImage();
  }
  if (skip >= 0 && skip < batch) {  // the skipped sample untouched, bit for bit
    for (int64_t i = skip * channels * p; i < (skip + 1) * channels * p; ++i)
      EXPECT_EQ(r.got[static_cast<size_t>(i)], r.host[static_cast<size_t>(i)]) << kind << " voxel " << i;
  }
  return r;
}

// max |gpu − cpu| / max |cpu| of a batch (3D shape), sample 1 not applied.
double RelativeError(const std::string& kind, const nlohmann::json& config, const std::vector<int32_t>& shape,
                     int batch, int channels, uint64_t seed) {
  const Run r = RunBatch(kind, config, shape, batch, channels, seed, 1);
  if (r.got.empty()) return 1.0;
  double max_err = 0, max_ref = 0;
  for (size_t i = 0; i < r.got.size(); ++i) {
    max_err = std::max(max_err, std::abs(static_cast<double>(r.got[i]) - r.want[i]));
    max_ref = std::max(max_ref, std::abs(static_cast<double>(r.want[i])));
  }
  return max_err / max_ref;
}

// 2D samples (X, Y), every sample applied, B = 1 and 2, 1 and 2 channels, odd sizes: every voxel within
// rel_tol · max |cpu| of the CPU's 2D result; a failure names the stage, the case and the first mismatch.
void Expect2dEqualsCpu(const std::string& kind, const nlohmann::json& config, double rel_tol, uint64_t seed) {
  for (const std::vector<int32_t>& shape : {std::vector<int32_t>{37, 45}, std::vector<int32_t>{33, 28}})
    for (int batch : {1, 2})
      for (int channels : {1, 2}) {
        const std::string label = kind + " " + config.dump() + " 2D (" + std::to_string(shape[0]) + ", " +
                                  std::to_string(shape[1]) + ") B=" + std::to_string(batch) +
                                  " C=" + std::to_string(channels);
        const Run r = RunBatch(kind, config, shape, batch, channels, seed++, -1);
        ASSERT_EQ(r.got.size(), r.want.size()) << label;
        double max_ref = 0;
        for (float v : r.want) max_ref = std::max(max_ref, std::abs(static_cast<double>(v)));
        int64_t bad = 0;
        for (size_t i = 0; i < r.got.size(); ++i) {
          const double err = std::abs(static_cast<double>(r.got[i]) - r.want[i]);
          if (err <= rel_tol * max_ref) continue;
          if (bad++ == 0) {
            const int64_t v = static_cast<int64_t>(i) % r.p, sc = static_cast<int64_t>(i) / r.p;
            ADD_FAILURE() << label << ": first mismatch at sample " << sc / channels << " channel " << sc % channels
                          << " (x " << v / shape[1] << ", y " << v % shape[1] << "): gpu " << r.got[i] << " cpu "
                          << r.want[i] << " (|diff| " << err << " > " << rel_tol << " · max|cpu| " << max_ref << ")";
          }
        }
        EXPECT_EQ(bad, 0) << label << ": mismatching voxels";
      }
}

TEST(CudaMriStages, BiasFieldEqualsCpu) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  EXPECT_LT(RelativeError("bias_field", {{"coefficients", 0.5}, {"order", 3}}, {20, 23, 17}, 3, 2, 1), 1e-6);
  EXPECT_LT(RelativeError("bias_field", {{"coefficients", {-0.3, 0.8}}, {"order", 5}}, {16, 16, 16}, 3, 1, 2), 1e-6);
}

TEST(CudaMriStages, GhostingEqualsCpu) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  if (!HaveCufft()) GTEST_SKIP() << "built without cuFFT";
  EXPECT_LT(RelativeError("ghosting", nlohmann::json::object(), {20, 23, 17}, 3, 2, 3), 2e-5);
  EXPECT_LT(RelativeError("ghosting", {{"num_ghosts", {1, 3}}, {"restore", 0.3}}, {32, 30, 41}, 4, 1, 4), 2e-5);
}

TEST(CudaMriStages, SpikeEqualsCpu) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  if (!HaveCufft()) GTEST_SKIP() << "built without cuFFT";
  EXPECT_LT(RelativeError("spike", nlohmann::json::object(), {20, 23, 17}, 3, 2, 5), 2e-5);
  EXPECT_LT(RelativeError("spike", {{"num_spikes", {0, 4}}, {"intensity", 2}}, {32, 30, 41}, 4, 1, 6), 2e-5);
}

TEST(CudaMriStages, MotionEqualsCpu) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  if (!HaveCufft()) GTEST_SKIP() << "built without cuFFT";
  EXPECT_LT(RelativeError("motion", nlohmann::json::object(), {20, 23, 17}, 3, 2, 7), 2e-5);
  EXPECT_LT(RelativeError("motion", {{"degrees", 4}, {"translation", 3}, {"num_transforms", 4}}, {32, 30, 41}, 4, 1, 8),
            2e-5);
}

// 2D samples (nnU-Net's "2d" configuration) on the chain's (1, X, Y) form, parameters lifted (cuda/chain_2d.h).
TEST(CudaMriStages, BiasField2dEqualsCpu) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  Expect2dEqualsCpu("bias_field", {{"coefficients", 0.5}, {"order", 3}}, 1e-6, 11);
  Expect2dEqualsCpu("bias_field", {{"coefficients", {-0.3, 0.8}}, {"order", 5}}, 1e-6, 21);
}

TEST(CudaMriStages, Ghosting2dEqualsCpu) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  if (!HaveCufft()) GTEST_SKIP() << "built without cuFFT";
  Expect2dEqualsCpu("ghosting", {{"axes", {0}}}, 2e-5, 31);
  Expect2dEqualsCpu("ghosting", {{"axes", {1}}, {"num_ghosts", {1, 3}}, {"restore", 0.3}}, 2e-5, 41);
  Expect2dEqualsCpu("ghosting", nlohmann::json::object(), 2e-5, 51);  // axes (0, 1, 2): 2 dropped in 2D
}

TEST(CudaMriStages, Spike2dEqualsCpu) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  if (!HaveCufft()) GTEST_SKIP() << "built without cuFFT";
  Expect2dEqualsCpu("spike", nlohmann::json::object(), 2e-5, 61);
  Expect2dEqualsCpu("spike", {{"num_spikes", {1, 4}}, {"intensity", 2}}, 2e-5, 71);
}

TEST(CudaMriStages, Motion2dEqualsCpu) {
  if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
  if (!HaveCufft()) GTEST_SKIP() << "built without cuFFT";
  Expect2dEqualsCpu("motion", nlohmann::json::object(), 2e-5, 81);
  Expect2dEqualsCpu("motion", {{"degrees", 25}, {"translation", 6}, {"num_transforms", 4}}, 2e-5, 91);
  Expect2dEqualsCpu("motion", {{"degrees", 10}, {"translation", 3}, {"num_transforms", 1}}, 2e-5, 101);
}

}  // namespace
}  // namespace augmentd
