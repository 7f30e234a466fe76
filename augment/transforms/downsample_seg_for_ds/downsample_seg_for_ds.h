// augment/transforms/downsample_seg_for_ds/downsample_seg_for_ds.h — bgv2 `DownsampleSegForDSTransform`: the deep-supervision label
// pyramid. For each scale (a number or one per axis): all ones → the seg itself; else nearest-exact resize to
// round(S · s) (banker's rounding): source index floor((i + 0.5)·in/out), i.e. 2i+1 for factor 2, 4i+2 for 4.
// Not pooling. The result is SampleData::seg_pyramid (level 0 first); `seg` is emptied.
//
//   auto t = DownsampleSegForDsTransform::Create({{{1, 1, 1}, {0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}}});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transforms/common/deterministic.h"

namespace augmentd {

struct DownsampleSegForDsConfig {
  std::vector<std::vector<double>> ds_scales;  // a scalar scale is stored as a one-element list
};

class DownsampleSegForDsTransform final : public DeterministicTransform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const DownsampleSegForDsConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (DownsampleSegForDsConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<DownsampleSegForDsConfig>& Schema();
  const DownsampleSegForDsConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kDownsampleSegForDs; }
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ConfigToJson() const override;
  // Spatial shape of pyramid level `level` for a full-resolution shape.
  std::vector<int64_t> LevelShape(const std::vector<int64_t>& full, size_t level) const;

 private:
  explicit DownsampleSegForDsTransform(DownsampleSegForDsConfig c) : config_(std::move(c)) {}
  DownsampleSegForDsConfig config_;
};

}  // namespace augmentd
