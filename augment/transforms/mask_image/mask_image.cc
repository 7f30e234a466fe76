#include "augment/transforms/mask_image/mask_image.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_label.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::RequireImage;
using transforms_internal::RequireSeg;

const ConfigSchema<MaskImageConfig>& MaskImageTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<MaskImageConfig>("mask_image"))
           ->Add("apply_to_channels", &MaskImageConfig::apply_to_channels, "image channels that are masked",
                 Required(AtLeast(0)))
           .Add("channel_idx_in_seg", &MaskImageConfig::channel_idx_in_seg,
                "segmentation channel whose negative voxels are outside", AtLeast(0))
           .Add("set_outside_to", &MaskImageConfig::set_outside_to, "value written outside the mask");
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> MaskImageTransform::Create(const MaskImageConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  if (!std::isfinite(c.set_outside_to)) return ju::Invalid("mask_image.set_outside_to", "must be finite");
  return std::shared_ptr<const Transform>(new MaskImageTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> MaskImageTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(MaskImageConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json MaskImageTransform::ConfigToJson() const { return Schema().ToJson(config_); }

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
