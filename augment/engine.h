// augment/engine.h — the batch API: run a pipeline over B samples on a CPU thread pool (torch-free).
//
//   augmentd::BatchInput in;
//   in.image = {img_ptr, {B, C, 205, 205, 205}, augmentd::DType::kFloat32};
//   in.seg   = {seg_ptr, {B, 1, 205, 205, 205}, augmentd::DType::kInt16};
//   augmentd::RunOptions opt;
//   opt.seed = 1234; opt.first_sample_index = step * B; opt.num_threads = 8;
//   ASSIGN_OR_RETURN(augmentd::BatchResult out, augmentd::AugmentBatch(spec, in, opt));
//   // out.image: (B, C, 128, 128, 128) float32; out.seg[k]: DS level k, (B, 1, *level) int16 (bool for regions)
//
// Randomness: transform t of global sample s draws from RandomStream(seed, s, t); draw 0 is the apply decision
// (u < apply_probability) and the transform's own draws follow. A sample's result therefore does not depend on
// batch size, thread count or order. Parameters may be injected per sample and transform (bgv2 JSON format).
// Errors: INVALID_ARGUMENT naming the field (image.shape, seg.dtype, params[...]...); RESOURCE_EXHAUSTED on
// allocation failure; nothing aborts (every exception is caught here).
// Thread-safety: AugmentBatch is reentrant; the inputs are only read.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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
  // (augment/cuda_engine.h), same parameters and results within tolerance. UNIMPLEMENTED on CUDA for transforms
  // or options neither the fused kernels nor the generic chain cover; FAILED_PRECONDITION in builds without CUDA.
  std::string device = "cpu";
};

struct AppliedTransform {
  TransformKind kind = TransformKind::kSpatial;
  bool applied = false;
  std::shared_ptr<const TransformParams> params;  // null when not applied
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

absl::StatusOr<BatchResult> AugmentBatch(const PipelineSpec& spec, const BatchInput& input, const RunOptions& options);

// Runs `spec` on one sample in place (what AugmentBatch does per sample). `injected` as in RunOptions (may be null).
absl::Status AugmentSample(const PipelineSpec& spec, uint64_t seed, uint64_t sample_index,
                           const std::vector<nlohmann::json>* injected, SampleData& sample, SampleRecord& record);

// Draws one sample's parameters for every transform of `spec` without applying them (exactly the draws
// AugmentSample makes; `layout` is the sample's input layout, its shape is advanced through each applied transform's
// OutputShape). Used by the CUDA engine, which applies them in fused kernels.
absl::Status DrawSampleParams(const PipelineSpec& spec, uint64_t seed, uint64_t sample_index,
                              const std::vector<nlohmann::json>* injected, SampleLayout layout, SampleRecord& record);

// Builds a SampleData from one sample's views: image (C, *spatial) float types; seg (S, *spatial) int8/int16 or
// data == nullptr. INVALID_ARGUMENT naming `image`/`seg` on bad rank/dtype/shape. With `borrow`, float32 images
// and int16 labels are referenced (SampleData::external_*) instead of copied; the views must outlive the sample.
absl::StatusOr<SampleData> SampleFromViews(const TensorView& image, const TensorView& seg, bool borrow = false);

}  // namespace augmentd
