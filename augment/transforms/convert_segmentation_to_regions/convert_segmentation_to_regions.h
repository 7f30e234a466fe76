// augment/transforms/convert_segmentation_to_regions/convert_segmentation_to_regions.h — bgv2
// `ConvertSegmentationToRegionsTransform`: output channel k = isin(seg[channel_in_seg], regions[k]) as bool (nnU-Net
// appends the ignore label as the last region). After it the sample's segmentation is boolean
// (SampleData::seg_is_bool).
//
//   auto t = ConvertSegmentationToRegionsTransform::Create({{{1, 2, 3}, {2, 3}, {3}}, 0});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transforms/common/deterministic.h"

namespace augmentd {

struct ConvertSegmentationToRegionsConfig {
  std::vector<std::vector<int64_t>> regions;  // an int region is a one-element list
  int64_t channel_in_seg = 0;
};

class ConvertSegmentationToRegionsTransform final : public DeterministicTransform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const ConvertSegmentationToRegionsConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (ConvertSegmentationToRegionsConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<ConvertSegmentationToRegionsConfig>& Schema();
  const ConvertSegmentationToRegionsConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kConvertSegmentationToRegions; }
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit ConvertSegmentationToRegionsTransform(ConvertSegmentationToRegionsConfig c) : config_(std::move(c)) {}
  ConvertSegmentationToRegionsConfig config_;
};

}  // namespace augmentd
