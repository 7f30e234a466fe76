#include "augment/transforms/move_seg_as_one_hot_to_data/move_seg_as_one_hot_to_data.h"

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::RequireImage;
using transforms_internal::RequireSeg;

const ConfigSchema<MoveSegAsOneHotToDataConfig>& MoveSegAsOneHotToDataTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<MoveSegAsOneHotToDataConfig>("move_seg_as_one_hot_to_data"))
           ->Add("source_channel_idx", &MoveSegAsOneHotToDataConfig::source_channel_idx,
                 "segmentation channel that becomes one-hot image channels", Required(InRange(0, 63)))
           .Add("all_labels", &MoveSegAsOneHotToDataConfig::all_labels,
                "labels (int16), one appended image channel each, in this order (at most 4096)",
                Required(InRange(-32768, 32767)))
           .Add("remove_channel_from_source", &MoveSegAsOneHotToDataConfig::remove_channel_from_source,
                "drop the source channel from the segmentation afterwards");
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> MoveSegAsOneHotToDataTransform::Create(
    const MoveSegAsOneHotToDataConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  if (c.all_labels.size() > 4096) return ju::Invalid("move_seg_as_one_hot_to_data.all_labels", "more than 4096 labels");
  return std::shared_ptr<const Transform>(new MoveSegAsOneHotToDataTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> MoveSegAsOneHotToDataTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(MoveSegAsOneHotToDataConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json MoveSegAsOneHotToDataTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::Status MoveSegAsOneHotToDataTransform::Apply(const TransformParams&, SampleData& s) const {
  RETURN_IF_ERROR(RequireImage(s, "move_seg_as_one_hot_to_data"));
  RETURN_IF_ERROR(RequireSeg(s, "move_seg_as_one_hot_to_data"));
  if (config_.source_channel_idx >= s.seg_channels) {
    return ju::Invalid("move_seg_as_one_hot_to_data.source_channel_idx",
                       absl::StrCat("seg channel ", config_.source_channel_idx, " out of range (sample has ",
                                    s.seg_channels, ")"));
  }
  const int64_t n = s.voxels();
  const int64_t k = static_cast<int64_t>(config_.all_labels.size());
  const int16_t* src = s.seg.data() + config_.source_channel_idx * n;
  s.image.resize(static_cast<size_t>((s.channels + k) * n), 0.0f);
  for (int64_t i = 0; i < k; ++i) {
    const auto l = static_cast<int16_t>(config_.all_labels[i]);
    float* out = s.image.data() + (s.channels + i) * n;
    for (int64_t v = 0; v < n; ++v) out[v] = src[v] == l ? 1.0f : 0.0f;
  }
  s.channels += k;
  if (config_.remove_channel_from_source) {
    s.seg.erase(s.seg.begin() + config_.source_channel_idx * n, s.seg.begin() + (config_.source_channel_idx + 1) * n);
    s.seg_channels -= 1;
  }
  return absl::OkStatus();
}

}  // namespace augmentd
