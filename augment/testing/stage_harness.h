// augment/testing/stage_harness.h — the GPU = CPU stage-test harness (test-only; needs the CUDA runtime and
// augment_core): one chain stage (augment/cuda/stage.h) driven directly on device buffers against its CPU
// transform, on a random batch whose parameters come from the CPU transform's own Draw.
//
// The pieces, from the whole sweep down to one comparison:
//   if (!testing::HaveGpu()) GTEST_SKIP() << testing::kNoGpu;
//   testing::TestStream stream;
//   ASSERT_TRUE(stream.ok());
//   testing::Sweep sweep;                           // shapes × batch sizes × channels × seg channels × reps
//   sweep.shapes = {{13, 11, 9}, {37, 45}};         // 2 dims: a 2D sample, run as the chain's (1, X, Y)
//   uint64_t seed = 1;
//   testing::SweepCase({"clamp", json::object(), 1e-6f}, sweep, seed, stream.get());
// or, one batch at a time:
//   testing::BuiltStage k = testing::BuildStage("clamp", json::object(), 2);
//   testing::HostBatch b = testing::MakeHostBatch(*k.transform, spec, label);   // inputs, draws, CPU result
//   testing::DeviceBatch d(b);                                                  // device copy of the inputs
//   d.Run(*k.stage, arena, ws, stream.get(), label);                            // Prepare, Upload, Enqueue, sync
//   EXPECT_EQ(testing::CountImageMismatches(d.DownloadImage(), b, testing::Tolerance::Relative(1e-5f), label), 0);
//
// Failures are gtest failures (EXPECT / ADD_FAILURE) that carry the caller's label; nothing here returns early on
// a failed CUDA call except where the next step would read what it did not produce. Single-threaded; every device
// call runs on the caller's stream or is synchronous.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "augment/cuda/stage.h"
#include "augment/testing/have_gpu.h"
#include "augment/transform.h"
#include "nlohmann/json.hpp"

namespace augmentd::testing {

// What a GPU test says when it skips: `if (!HaveGpu()) GTEST_SKIP() << kNoGpu;`.
inline constexpr char kNoGpu[] = "no CUDA device";

// A CUDA stream for one test (created in the constructor, destroyed in the destructor; a failure is recorded).
class TestStream {
 public:
  TestStream();
  ~TestStream();
  TestStream(const TestStream&) = delete;
  TestStream& operator=(const TestStream&) = delete;
  bool ok() const { return ok_; }
  cudaStream_t get() const { return stream_; }

 private:
  cudaStream_t stream_ = nullptr;
  bool ok_ = false;
};

// A case's CPU transform and its CUDA stage (stage null, with a failure recorded, when either cannot be built).
struct BuiltStage {
  std::shared_ptr<const Transform> transform;
  std::unique_ptr<CudaStage> stage;
};
// `index`: the stage's position in a chain (it only appears in error messages).
BuiltStage BuildStage(const std::string& kind, const nlohmann::json& config, size_t index);

// How GPU values are held against the CPU's.
struct Tolerance {
  enum class Kind {
    kRelative,  // |gpu − cpu| <= rel · (1 + |cpu|) (rel 0: equal values; NaN never matches; an infinite cpu
                // value accepts any gpu value but NaN, as the tests this replaced did)
    kEqual,     // gpu == cpu
    kSameBits,  // the same float32 bits (0 and −0 differ, NaN matches its own bits)
  };
  // A float is a relative tolerance: `Tolerance t = 1e-5f;`.
  Tolerance(float relative = 0) : rel(relative) {}  // NOLINT(google-explicit-constructor)
  static Tolerance Equal();
  static Tolerance SameBits();
  // DA5's convention: 0 is bit for bit, anything else relative.
  static Tolerance BitsOrRelative(float rel);
  // With `same_specials`: NaN vs NaN and the same infinity on both sides match too (inputs that hold them).
  Tolerance WithSpecials() const;

  bool Accepts(float gpu, float cpu) const;
  std::string ToString() const;

  Kind kind = Kind::kRelative;
  float rel = 0;
  bool same_specials = false;
};

// The stage's view of a batch with no device buffers (image / seg null): what Prepare, which only packs host
// records, needs. `shape`: (d0, d1, d2), or (X, Y) as (1, X, Y). seg_capacity = seg_channels.
ChainTensors HostTensors(int batch, int channels, int seg_channels, const std::vector<int64_t>& shape);

// The per-sample settings of a random batch.
struct BatchSpec {
  std::vector<int64_t> shape;  // (d0, d1, d2), or (X, Y): a 2D sample the CPU sees as (X, Y), the stage as (1, X, Y)
  int batch = 1;
  int channels = 1;
  int seg_channels = 0;     // label channels of each sample (what Draw and the CPU Apply see)
  bool upload_seg = true;   // false: the stage gets no labels (ChainTensors seg null, 0 seg channels)
  uint64_t seed = 1;        // the draws' seed (sample b draws (seed, b, transform 0))
  uint32_t data_seed_multiplier = 97;  // sample b's values come from data seed `seed * multiplier + b`
  int label_lo = -1, label_hi = 3;     // RandomSample's label range
  // Samples that get no parameters (they must come back untouched); default: every third.
  std::function<bool(int b)> skip = [](int b) { return b % 3 == 2; };
  // Replaces RandomSample(channels, shape, seg_channels, label_lo, label_hi, data_seed) when set.
  std::function<SampleData(const BatchSpec& spec, int b, uint32_t data_seed)> make_sample;
};

// A random batch on the host with its draws and the CPU result; C order (B, C, d0, d1, d2) and (B, S, ...).
struct HostBatch {
  std::vector<float> image, want;       // the input and the CPU transform's result
  std::vector<int16_t> seg, want_seg;   // the same for the labels (empty without labels)
  std::vector<std::unique_ptr<TransformParams>> owned;  // the draws (2D samples: lifted to the chain's form)
  std::vector<const TransformParams*> params;          // one per sample; null: not applied
  ChainTensors tensors;   // the stage's view; image / seg stay null until a DeviceBatch sets them
  std::vector<int64_t> shape3;  // the stage's (d0, d1, d2)
  int64_t voxels = 0;           // per channel
  int channels = 0, seg_channels = 0;  // per sample, as built (seg_channels even when not uploaded)
  bool drawn = true;            // false: a draw failed (recorded); the batch stops at that sample
};
// Builds the batch: per sample its values, its draw (unless `spec.skip`), the CPU Apply (EXPECTed ok) and, for a
// 2D sample, the parameters LiftParams2D gives (EXPECTed ok). No device needed.
HostBatch MakeHostBatch(const Transform& t, const BatchSpec& spec, const std::string& label);

// The device copy of a HostBatch's inputs (owned; freed in the destructor). The HostBatch must outlive it.
class DeviceBatch {
 public:
  explicit DeviceBatch(const HostBatch& b);  // allocates and uploads (synchronously)
  ~DeviceBatch();
  DeviceBatch(const DeviceBatch&) = delete;
  DeviceBatch& operator=(const DeviceBatch&) = delete;

  // Copies the host inputs again (a repeated run on the same input).
  void Upload();
  // arena.Reset, stage.Prepare, arena.Upload, stage.Enqueue on `stream`, then a stream sync; EXPECTs each ok and
  // returns false on the first failure.
  bool Run(CudaStage& stage, ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream, const std::string& label);
  std::vector<float> DownloadImage() const;
  std::vector<int16_t> DownloadSeg() const;  // empty when no labels were uploaded

 private:
  const HostBatch& host_;
  ChainTensors tensors_;
  size_t seg_elements_ = 0;
};

// The image elements where `got` and b.want disagree under `tol`; the first `report` become failures naming the
// label, sample, channel, voxel (d0, d1, d2), the two values and the input.
int64_t CountImageMismatches(const std::vector<float>& got, const HostBatch& b, const Tolerance& tol,
                             const std::string& label, int report = 3);

// How labels are checked.
enum class LabelCheck {
  kIgnore,     // not downloaded
  kExact,      // equal to the CPU's labels; every mismatch counts as a failure
  kCount,      // counted against the CPU's labels and logged, not failed (the caller bounds the fraction)
  kUnchanged,  // equal to the input labels (a stage that must not touch them); mismatches are failures
};
// Label elements of `got` that differ from `want` (the first `report` failed or logged per `how`).
int64_t CountLabelMismatches(const std::vector<int16_t>& got, const std::vector<int16_t>& want, const HostBatch& b,
                             LabelCheck how, const std::string& label, int report = 3);

struct Mismatches {
  int64_t image = 0;         // image elements out of tolerance (1 when the batch could not be drawn)
  int64_t labels = 0;        // label elements that differ
  int64_t label_voxels = 0;  // label elements compared
  int64_t changed = 0;       // image elements the CPU transform changed (a case that never changes is vacuous)
};
// One batch through `stage` and through the CPU transform: MakeHostBatch, DeviceBatch, Run, the comparisons.
Mismatches CompareStageBatch(const Transform& t, CudaStage& stage, ParamArena& arena, ChainWorkspace& ws,
                             const BatchSpec& spec, const Tolerance& tol, LabelCheck labels, cudaStream_t stream,
                             const std::string& label);

// A configuration to sweep: registry name, JSON, tolerance, the fewest image channels it runs with (configurations
// naming channel 1 need 2) and its label channels.
struct StageCase {
  std::string kind;
  nlohmann::json config;
  Tolerance tol;
  int min_channels = 1;
  int seg_channels = 0;
};

// A sweep: each shape × batch size × channels (min_channels .. max_channels) × seg channels × rep, in that order,
// one seed per batch; one stage, arena and workspace per case (later batches reuse them).
struct Sweep {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int> batches = {1, 3, 8};
  int max_channels = 2;
  std::vector<int> seg_channels;  // empty: the case's own
  int reps = 2;
  LabelCheck labels = LabelCheck::kExact;
  BatchSpec sample;               // per-sample settings; shape, batch, channels, seg_channels and seed are the sweep's
  size_t stage_index = 2;
};
struct SweepTotals {
  int64_t labels = 0, label_voxels = 0, changed = 0;
};
// Runs the case's sweep: per batch EXPECT 0 image mismatches, and 0 label mismatches unless labels is kCount
// (then only totalled). `seed` is the next batch's seed and advances by one per batch.
SweepTotals SweepCase(const StageCase& c, const Sweep& sweep, uint64_t& seed, cudaStream_t stream);

// SweepCase over every case, one stream (created here), seeds from `seed` on.
void SweepCases(const std::vector<StageCase>& cases, const Sweep& sweep, uint64_t seed);

// " (13, 11, 9)" / " 2D (37, 45)": a shape as failure labels name it.
std::string ShapeLabel(const std::vector<int64_t>& shape);

}  // namespace augmentd::testing
