// augment/transforms/mask_image/mask_image.h — bgv2 `MaskImageTransform` (nnunet_masking.py): for every listed image
// channel, voxels where seg[channel_idx_in_seg] < 0 are set to `set_outside_to` (bgv2 ≥ 0.3.2: listed channels
// only). Runs after spatial + mirroring, so it sees the resampled −1 border/outside-mask labels.
//
//   auto t = MaskImageTransform::Create({/*apply_to_channels=*/{0}, 0, 0.0});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transforms/common/deterministic.h"

namespace augmentd {

struct MaskImageConfig {
  std::vector<int64_t> apply_to_channels;
  int64_t channel_idx_in_seg = 0;
  double set_outside_to = 0;
};

class MaskImageTransform final : public DeterministicTransform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const MaskImageConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (MaskImageConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<MaskImageConfig>& Schema();
  const MaskImageConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kMaskImage; }
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit MaskImageTransform(MaskImageConfig c) : config_(std::move(c)) {}
  MaskImageConfig config_;
};

}  // namespace augmentd
