#include "augment/transforms/mask_image/mask_image.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_label.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::RequireImage;
using transforms_internal::RequireSeg;

absl::StatusOr<std::shared_ptr<const Transform>> MaskImageTransform::Create(const MaskImageConfig& c) {
  for (int64_t a : c.apply_to_channels)
    if (a < 0) return ju::Invalid("mask_image.apply_to_channels", "must be >= 0");
  if (c.channel_idx_in_seg < 0) return ju::Invalid("mask_image.channel_idx_in_seg", "must be >= 0");
  if (!std::isfinite(c.set_outside_to)) return ju::Invalid("mask_image.set_outside_to", "must be finite");
  return std::shared_ptr<const Transform>(new MaskImageTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> MaskImageTransform::FromJson(const nlohmann::json& j) {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channels", "channel_idx_in_seg", "set_outside_to"}, "mask_image"));
  MaskImageConfig c;
  if (!j.contains("apply_to_channels")) return ju::Invalid("mask_image.apply_to_channels", "required");
  ASSIGN_OR_RETURN(c.apply_to_channels, ju::AsInts(j["apply_to_channels"], "mask_image.apply_to_channels"));
  ASSIGN_OR_RETURN(c.channel_idx_in_seg, ju::GetInt(j, "channel_idx_in_seg", 0, "mask_image"));
  ASSIGN_OR_RETURN(c.set_outside_to, ju::GetDouble(j, "set_outside_to", 0.0, "mask_image"));
  return Create(c);
}

nlohmann::json MaskImageTransform::ConfigToJson() const {
  return {{"apply_to_channels", config_.apply_to_channels},
          {"channel_idx_in_seg", config_.channel_idx_in_seg},
          {"set_outside_to", config_.set_outside_to}};
}

absl::Status MaskImageTransform::Apply(const TransformParams&, SampleData& s) const {
  if (config_.apply_to_channels.empty()) return absl::OkStatus();
  RETURN_IF_ERROR(RequireImage(s, "mask_image"));
  RETURN_IF_ERROR(RequireSeg(s, "mask_image"));
  if (config_.channel_idx_in_seg >= s.seg_channels) return ju::Invalid("mask_image.channel_idx_in_seg", "out of range");
  const int64_t n = s.voxels();
  const int16_t* mask = s.seg.data() + config_.channel_idx_in_seg * n;
  for (int64_t c : config_.apply_to_channels) {
    if (c >= s.channels)
      return ju::Invalid("mask_image.apply_to_channels", absl::StrCat("channel ", c, " out of range"));
    kernels::MaskWhereNegative(s.image.data() + c * n, mask, n, static_cast<float>(config_.set_outside_to));
  }
  return absl::OkStatus();
}

}  // namespace augmentd
