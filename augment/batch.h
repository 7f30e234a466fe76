// augment/batch.h — the pipeline layer both engines share: a batch's inputs, options and per-sample records, and the
// drawing of every sample's parameters (torch-free, no CUDA header).
//
// The CPU engine (augment/engine.h: AugmentBatch / AugmentSample) and the CUDA engine (augment/cuda/engine.h) both
// draw through DrawEntry / DrawSampleParams, so a sample's parameters are the same on every device; they depend on
// this file, never on each other's headers (engine.cc routes "cuda:N" to the CUDA engine; the CUDA engine never
// includes engine.h).
//
//   augmentd::SampleRecord rec;
//   RETURN_IF_ERROR(augmentd::DrawSampleParams(spec, seed, sample_index, /*injected=*/nullptr, layout, rec));
//
// Thread-safety: every function is reentrant; the inputs are only read.
#pragma once

#include <cstdint>
#include <exception>
#include <new>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "augment/pipeline.h"
#include "augment/transform.h"
#include "augment/types.h"
#include "nlohmann/json.hpp"

namespace augmentd {

struct BatchInput {
  TensorView image;  // (B, C, *spatial) float32 | float16 | bfloat16, spatial = 2 or 3 dims
  TensorView seg;    // (B, S, *spatial) int8 | int16; data == nullptr: no segmentation
};

struct RunOptions {
  uint64_t seed = 0;
  uint64_t first_sample_index = 0;      // sample b of the batch is global sample first_sample_index + b
  int num_threads = 1;                  // <= 0: all hardware threads
  DType image_dtype = DType::kFloat32;  // output image dtype (float32 | float16 | bfloat16)
  // Optional injection: injected[b][t] = {"applied": bool, "params": {...bgv2 format...}} or null (draw).
  const std::vector<std::vector<nlohmann::json>>* injected = nullptr;
  // Where the batch runs: "cpu" (this thread pool) or "cuda:N" / "cuda" (= cuda:0): the CUDA engine
  // (augment/cuda/engine.h), same parameters and results within tolerance. UNIMPLEMENTED on CUDA for transforms
  // or options neither the fused kernels nor the generic chain cover; FAILED_PRECONDITION in builds without CUDA.
  std::string device = "cpu";
};

struct AppliedTransform {
  TransformKind kind = TransformKind::kSpatial;
  bool applied = false;
  std::shared_ptr<const TransformParams> params;  // null when not applied
  RegionDraw region;  // the entry's region mode draw (augment/region_mode.h); mode "all" when off or not applied
};

struct SampleRecord {
  uint64_t sample_index = 0;
  std::vector<AppliedTransform> transforms;  // one per pipeline entry
};

struct BatchResult {
  HostTensor image;             // (B, C, *out_spatial)
  std::vector<HostTensor> seg;  // label pyramid (level 0 first); one entry without DS; empty without seg
  std::vector<SampleRecord> samples;

  // [{"sample_index": i, "transforms": [{"kind", "applied", "params"}...]}...] (params in bgv2 format).
  nlohmann::json ParamsJson(const PipelineSpec& spec) const;
};

// Draws one sample's parameters for every transform of `spec` without applying them (exactly the draws
// AugmentSample makes; `layout` is the sample's input layout, its shape is advanced through each applied transform's
// OutputShape). Used by the CUDA engine, which applies them in fused kernels.
// `batch_first_index`: the batch's first sample (entries with same_on_batch draw from its stream); kNoBatchIndex: the
// sample is drawn alone (its own stream for every entry).
inline constexpr uint64_t kNoBatchIndex = ~uint64_t{0};
absl::Status DrawSampleParams(const PipelineSpec& spec, uint64_t seed, uint64_t sample_index,
                              const std::vector<nlohmann::json>* injected, SampleLayout layout, SampleRecord& record,
                              uint64_t batch_first_index = kNoBatchIndex);

// Applies entry `ts`'s drawn `params` to `sample` (CPU): Transform::Apply, or — with a channel selection
// (TransformSpec::channels) — Apply on a sample of the selected channels (gathered in the selection's order, the
// labels moved in and back), its planes written back; the other channels are untouched. `sample` is materialised.
absl::Status ApplyEntry(const TransformSpec& ts, const TransformParams& params, SampleData& sample);

// One entry's apply decision and parameters for one sample: drawn from RandomStream(seed, sample_index, t) (draw 0 is
// the apply decision, the transform's own draws follow, then the region mode's (region_mode.h); OneOf groups
// honoured; TransformSpec::same_on_batch moves the decision, or decision and parameters, to the batch's first sample's
// stream) or taken from injected[t] ({"applied", "params", "region"}). The draw
// half of AugmentSample; `layout` is the sample's layout entering entry `t`. Errors carry WithSampleContext.
absl::Status DrawEntry(const TransformSpec& ts, size_t t, uint64_t seed, uint64_t sample_index,
                       const std::vector<nlohmann::json>* injected, const SampleLayout& layout, AppliedTransform& at,
                       uint64_t batch_first_index = kNoBatchIndex);

// `s` prefixed with "sample <sample>, transform <t> (<name>): " (OK stays OK): the engines' error context.
absl::Status WithSampleContext(const absl::Status& s, uint64_t sample, size_t t, std::string_view name);

// Parses RunOptions::device: "cpu" → -1, "cuda" → 0, "cuda:N" → N. INVALID_ARGUMENT naming `device` otherwise.
absl::StatusOr<int> ParseCudaOrdinal(std::string_view device);

namespace engine_internal {
// Runs `f`, turning exceptions into statuses (bad_alloc: RESOURCE_EXHAUSTED; others: INTERNAL): the engines' API
// boundary (nothing throws through it).
template <typename F>
absl::Status Guard(F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError("out of host memory");
  } catch (const std::exception& e) {  // includes c10::Error should a dependency throw one
    return absl::InternalError(absl::StrCat("engine error: ", e.what()));
  }
}
}  // namespace engine_internal

}  // namespace augmentd
