// augment/transforms/move_seg_as_one_hot_to_data/move_seg_as_one_hot_to_data.h — bgv2
// `MoveSegAsOneHotToDataTransform` (nnU-Net's cascade: the previous stage's segmentation becomes input channels).
//
// Appends one image channel per label l of `all_labels` (in that order): 1 where seg[source_channel_idx] == l, else 0.
// With remove_channel_from_source the seg channel is then dropped (seg_channels − 1; no segmentation left when it was
// the only one). The output layout changes (image channels + K, seg channels − 1), so the entry cannot be skipped per
// sample (kCapChangesOutputLayout) and must run before downsample_seg_for_ds (kCapUsesLabels).
//
//   auto t = MoveSegAsOneHotToDataTransform::Create({/*source_channel_idx=*/1, /*all_labels=*/{1, 2}, true});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transforms/common/deterministic.h"

namespace augmentd {

struct MoveSegAsOneHotToDataConfig {
  int64_t source_channel_idx = 1;
  std::vector<int64_t> all_labels;  // int16 values; may be empty (then only the channel is removed)
  bool remove_channel_from_source = true;
};

class MoveSegAsOneHotToDataTransform final : public DeterministicTransform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const MoveSegAsOneHotToDataConfig& config);
  // Every config field once: name, rule, one-line doc (augment/schema.h); FromJson = Schema().Parse + Create.
  static const ConfigSchema<MoveSegAsOneHotToDataConfig>& Schema();
  // Keys: source_channel_idx (required), all_labels (required), remove_channel_from_source (default true).
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  const MoveSegAsOneHotToDataConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kMoveSegAsOneHotToData; }
  // INVALID_ARGUMENT when the sample has no segmentation or source_channel_idx is not one of its channels.
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ConfigToJson() const override;
  // + |all_labels| image channels; − 1 seg channel with remove_channel_from_source.
  void OutputChannels(int64_t& image_channels, int64_t& seg_channels) const override {
    image_channels += static_cast<int64_t>(config_.all_labels.size());
    if (config_.remove_channel_from_source) seg_channels -= 1;
  }

 private:
  explicit MoveSegAsOneHotToDataTransform(MoveSegAsOneHotToDataConfig c) : config_(std::move(c)) {}
  MoveSegAsOneHotToDataConfig config_;
};

}  // namespace augmentd
