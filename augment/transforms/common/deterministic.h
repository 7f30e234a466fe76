// augment/transforms/common/deterministic.h — base for transforms without random parameters (internal).
//
// mask_image, remove_label, convert_segmentation_to_regions and downsample_seg_for_ds draw nothing; their
// parameter dict is `{}` (bgv2's get_parameters() returns an empty dict).
#pragma once

#include <memory>

#include "augment/transform.h"

namespace augmentd {

struct EmptyParams : TransformParams {};

class DeterministicTransform : public Transform {
 public:
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext&, const SampleLayout&) const override {
    return std::unique_ptr<TransformParams>(new EmptyParams());
  }
  nlohmann::json ParamsToJson(const TransformParams&) const override { return nlohmann::json::object(); }
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout&) const override {
    if (!j.is_null() && !(j.is_object() && j.empty())) {
      return absl::InvalidArgumentError(std::string("params: ") + std::string(name()) + " takes no parameters");
    }
    return std::unique_ptr<TransformParams>(new EmptyParams());
  }
};

}  // namespace augmentd
