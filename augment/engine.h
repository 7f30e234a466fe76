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
#include "augment/batch.h"
#include "augment/pipeline.h"
#include "augment/transform.h"
#include "augment/types.h"
#include "nlohmann/json.hpp"

namespace augmentd {

absl::StatusOr<BatchResult> AugmentBatch(const PipelineSpec& spec, const BatchInput& input, const RunOptions& options);

// Runs `spec` on one sample in place (what AugmentBatch does per sample). `injected` as in RunOptions (may be null).
// `batch_first_index`: the batch's first sample index, for same_on_batch entries (batch.h kNoBatchIndex: drawn alone).
absl::Status AugmentSample(const PipelineSpec& spec, uint64_t seed, uint64_t sample_index,
                           const std::vector<nlohmann::json>* injected, SampleData& sample, SampleRecord& record,
                           uint64_t batch_first_index = kNoBatchIndex);

// Builds a SampleData from one sample's views: image (C, *spatial) float types; seg (S, *spatial) int8/int16 or
// data == nullptr. INVALID_ARGUMENT naming `image`/`seg` on bad rank/dtype/shape. With `borrow`, float32 images
// and int16 labels are referenced (SampleData::external_*) instead of copied; the views must outlive the sample.
absl::StatusOr<SampleData> SampleFromViews(const TensorView& image, const TensorView& seg, bool borrow = false);

}  // namespace augmentd
