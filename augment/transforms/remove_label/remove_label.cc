#include "augment/transforms/remove_label/remove_label.h"

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_label.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::RequireSeg;

const ConfigSchema<RemoveLabelConfig>& RemoveLabelTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<RemoveLabelConfig>("remove_label"))
           ->Add("label_value", &RemoveLabelConfig::label_value, "label replaced in the segmentation",
                 Required(InRange(-32768, 32767)))
           .Add("set_to", &RemoveLabelConfig::set_to, "label written instead", Required(InRange(-32768, 32767)))
           .Custom(
               "segmentation_channels", "int | int[] | null", "segmentation channels it applies to (null: all)",
               [](const nlohmann::json& j, RemoveLabelConfig& c, const std::string& w) -> absl::Status {
                 if (!j.contains("segmentation_channels") || j["segmentation_channels"].is_null())
                   return absl::OkStatus();
                 if (j["segmentation_channels"].is_number_integer()) {
                   c.segmentation_channels = std::vector<int64_t>{j["segmentation_channels"].get<int64_t>()};
                   return absl::OkStatus();
                 }
                 ASSIGN_OR_RETURN(auto v, ju::AsInts(j["segmentation_channels"], w + ".segmentation_channels"));
                 c.segmentation_channels = v;
                 return absl::OkStatus();
               },
               [](const RemoveLabelConfig& c) {
                 return c.segmentation_channels ? nlohmann::json(*c.segmentation_channels) : nlohmann::json();
               });
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> RemoveLabelTransform::Create(const RemoveLabelConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  if (c.segmentation_channels)
    for (int64_t a : *c.segmentation_channels)
      if (a < 0) return ju::Invalid("remove_label.segmentation_channels", "must be >= 0");
  return std::shared_ptr<const Transform>(new RemoveLabelTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> RemoveLabelTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(RemoveLabelConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json RemoveLabelTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::Status RemoveLabelTransform::Apply(const TransformParams&, SampleData& s) const {
  if (s.seg_channels == 0) return absl::OkStatus();  // bgv2 SegOnlyTransform: no segmentation, nothing to do
  RETURN_IF_ERROR(RequireSeg(s, "remove_label"));
  const int64_t n = s.voxels();
  std::vector<int64_t> channels;
  if (config_.segmentation_channels) {
    channels = *config_.segmentation_channels;
  } else {
    for (int64_t c = 0; c < s.seg_channels; ++c) channels.push_back(c);
  }
  for (int64_t c : channels) {
    if (c >= s.seg_channels)
      return ju::Invalid("remove_label.segmentation_channels", absl::StrCat("channel ", c, " out of range"));
    kernels::ReplaceValue(s.seg.data() + c * n, n, static_cast<int16_t>(config_.label_value),
                          static_cast<int16_t>(config_.set_to));
  }
  return absl::OkStatus();
}

}  // namespace augmentd
