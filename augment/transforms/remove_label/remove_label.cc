#include "augment/transforms/remove_label/remove_label.h"

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_label.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::RequireSeg;

namespace {
bool IsInt16(int64_t v) { return v >= -32768 && v <= 32767; }
}  // namespace

absl::StatusOr<std::shared_ptr<const Transform>> RemoveLabelTransform::Create(const RemoveLabelConfig& c) {
  if (!IsInt16(c.label_value)) return ju::Invalid("remove_label.label_value", "must fit int16");
  if (!IsInt16(c.set_to)) return ju::Invalid("remove_label.set_to", "must fit int16");
  if (c.segmentation_channels)
    for (int64_t a : *c.segmentation_channels)
      if (a < 0) return ju::Invalid("remove_label.segmentation_channels", "must be >= 0");
  return std::shared_ptr<const Transform>(new RemoveLabelTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> RemoveLabelTransform::FromJson(const nlohmann::json& j) {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"label_value", "set_to", "segmentation_channels"}, "remove_label"));
  RemoveLabelConfig c;
  ASSIGN_OR_RETURN(c.label_value, ju::GetInt(j, "label_value", std::nullopt, "remove_label"));
  ASSIGN_OR_RETURN(c.set_to, ju::GetInt(j, "set_to", std::nullopt, "remove_label"));
  if (j.contains("segmentation_channels") && !j["segmentation_channels"].is_null()) {
    if (j["segmentation_channels"].is_number_integer()) {
      c.segmentation_channels = std::vector<int64_t>{j["segmentation_channels"].get<int64_t>()};
    } else {
      ASSIGN_OR_RETURN(auto v, ju::AsInts(j["segmentation_channels"], "remove_label.segmentation_channels"));
      c.segmentation_channels = v;
    }
  }
  return Create(c);
}

nlohmann::json RemoveLabelTransform::ConfigToJson() const {
  nlohmann::json j = {{"label_value", config_.label_value}, {"set_to", config_.set_to}};
  j["segmentation_channels"] =
      config_.segmentation_channels ? nlohmann::json(*config_.segmentation_channels) : nlohmann::json();
  return j;
}

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
