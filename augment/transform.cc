#include "augment/transform.h"

namespace augmentd {

// TransformKindName and Transform::UsesLabels read the kind's registry entry: defined in registry.cc.

absl::StatusOr<std::unique_ptr<TransformParams>> Transform::ParseParams(const nlohmann::json& j,
                                                                        const SampleLayout& layout) const {
  if (j.is_null()) return ParamsFromJson(nlohmann::json::object(), layout);
  if (!j.is_object()) return absl::InvalidArgumentError("params: expected an object (bgv2 get_parameters() dict)");
  return ParamsFromJson(j, layout);
}

void SampleData::Materialize() {
  if (external_image != nullptr) {
    image.assign(external_image, external_image + channels * voxels());
    external_image = nullptr;
  }
  if (external_seg != nullptr) {
    seg.assign(external_seg, external_seg + seg_channels * voxels());
    external_seg = nullptr;
  }
}

int64_t SampleData::voxels() const {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

}  // namespace augmentd
