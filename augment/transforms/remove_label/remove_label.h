// augment/transforms/remove_label/remove_label.h — bgv2 `RemoveLabelTansform`: seg == label_value → set_to in the
// listed seg channels (all when segmentation_channels is None). nnU-Net: (−1 → 0).
//
//   auto t = RemoveLabelTransform::Create({/*label_value=*/-1, /*set_to=*/0, std::nullopt});
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "augment/schema.h"
#include "augment/transforms/common/deterministic.h"

namespace augmentd {

struct RemoveLabelConfig {
  int64_t label_value = -1;
  int64_t set_to = 0;
  std::optional<std::vector<int64_t>> segmentation_channels;
};

class RemoveLabelTransform final : public DeterministicTransform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const RemoveLabelConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (RemoveLabelConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<RemoveLabelConfig>& Schema();
  const RemoveLabelConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kRemoveLabel; }
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit RemoveLabelTransform(RemoveLabelConfig c) : config_(std::move(c)) {}
  RemoveLabelConfig config_;
};

}  // namespace augmentd
