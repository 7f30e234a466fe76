// move_seg_as_one_hot_to_data's CUDA stage on the generic chain (augment/cuda/stage.h): the chain's channel growth
// C → C + K (K = |all_labels|) and, with remove_channel_from_source, S → S − 1 seg channels, in place in the chain's
// scratch, which the executor sized for the final channel count (ChainTensors::channel_capacity, the layout from
// PipelineSpec::OutputChannels): a few plane moves and one kernel writing the K one-hot planes per sample
// (move_seg_as_one_hot_to_data.cu). The entry is deterministic and cannot be skipped (it changes the output layout),
// so every sample must carry its params. Registered in augment/cuda/backends.cc.
#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/slice_stage.h"
#include "augment/transforms/move_seg_as_one_hot_to_data/move_seg_as_one_hot_to_data.h"

namespace augmentd {
namespace cuda::chain {
// move_seg_as_one_hot_to_data.cu: in place, image (B, C, n) → (B, C + k, n) within its buffer (capacity ≥ C + k
// channels), channel C + i = (seg[b, src] == labels[i]); with `drop`, seg (B, S, n) → (B, S − 1, n) without channel
// `src`. `labels`: k int16 on the device. Enqueues only.
cudaError_t LaunchMoveSegAsOneHotInPlace(int32_t batch, int32_t channels, int32_t k, int32_t seg_channels, int32_t src,
                                         bool drop, int64_t n, float* image, int16_t* seg, const int16_t* labels,
                                         cudaStream_t stream);
}  // namespace cuda::chain

namespace {
using stage_internal::NamedStage;

class MoveSegAsOneHotStage final : public NamedStage {
 public:
  MoveSegAsOneHotStage(const MoveSegAsOneHotToDataTransform& t, size_t index) : NamedStage(t, index), c_(t.config()) {
    for (int64_t l : c_.all_labels) labels_.push_back(static_cast<int16_t>(l));
  }

  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    for (const TransformParams* p : params)
      if (p == nullptr) return Invalid("skipped for a sample (it changes the output layout; apply_probability 1)");
    if (t.seg == nullptr || t.seg_channels == 0) return Invalid("needs a segmentation");
    if (c_.source_channel_idx >= t.seg_channels)
      return absl::InvalidArgumentError(absl::StrCat("move_seg_as_one_hot_to_data.source_channel_idx: seg channel ",
                                                     c_.source_channel_idx, " out of range (sample has ",
                                                     t.seg_channels, ")"));
    labels_offset_ = arena.AppendArray(labels_);
    return absl::OkStatus();
  }

  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& /*ws*/,
                       cudaStream_t stream) override {
    const int32_t k = static_cast<int32_t>(labels_.size());
    const int32_t c_out = t.channels + k;
    if (c_out > t.channel_capacity)
      return absl::InternalError(absl::StrCat("CUDA chain: ", c_out, " image channels, capacity ", t.channel_capacity));
    const bool drop = c_.remove_channel_from_source;
    const int32_t s_out = t.seg_channels - (drop ? 1 : 0);
    RETURN_IF_ERROR(CudaStatus(
        cuda::chain::LaunchMoveSegAsOneHotInPlace(t.batch, t.channels, k, t.seg_channels,
                                                  static_cast<int32_t>(c_.source_channel_idx), drop, t.voxels(),
                                                  t.image, t.seg,
                                                  k > 0 ? arena.device_as<int16_t>(labels_offset_) : nullptr, stream),
        name_.c_str()));
    t.channels = c_out;
    if (drop) {
      t.seg_channels = s_out;
      if (s_out == 0) t.seg = nullptr;
    }
    return absl::OkStatus();
  }

 private:
  MoveSegAsOneHotToDataConfig c_;
  std::vector<int16_t> labels_;
  size_t labels_offset_ = 0;
};

}  // namespace

CudaStageOrError MakeMoveSegAsOneHotToDataStage(const Transform& t, size_t index) {
  const auto* m = dynamic_cast<const MoveSegAsOneHotToDataTransform*>(&t);
  if (m == nullptr) return stage_internal::NotCovered(t, index, "unknown implementation");
  return std::unique_ptr<CudaStage>(new MoveSegAsOneHotStage(*m, index));
}

}  // namespace augmentd
