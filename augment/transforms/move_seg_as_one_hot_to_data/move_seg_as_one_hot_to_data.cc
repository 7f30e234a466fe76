#include "augment/transforms/move_seg_as_one_hot_to_data/move_seg_as_one_hot_to_data.h"

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::RequireImage;
using transforms_internal::RequireSeg;

absl::StatusOr<std::shared_ptr<const Transform>> MoveSegAsOneHotToDataTransform::Create(
    const MoveSegAsOneHotToDataConfig& c) {
  if (c.source_channel_idx < 0 || c.source_channel_idx >= 64)
    return ju::Invalid("move_seg_as_one_hot_to_data.source_channel_idx", "must be in [0, 64)");
  if (c.all_labels.size() > 4096) return ju::Invalid("move_seg_as_one_hot_to_data.all_labels", "more than 4096 labels");
  for (int64_t l : c.all_labels)
    if (l < -32768 || l > 32767) return ju::Invalid("move_seg_as_one_hot_to_data.all_labels", "must fit int16");
  return std::shared_ptr<const Transform>(new MoveSegAsOneHotToDataTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> MoveSegAsOneHotToDataTransform::FromJson(const nlohmann::json& j) {
  constexpr const char* kWhere = "move_seg_as_one_hot_to_data";
  RETURN_IF_ERROR(ju::CheckKeys(j, {"source_channel_idx", "all_labels", "remove_channel_from_source"}, kWhere));
  MoveSegAsOneHotToDataConfig c;
  ASSIGN_OR_RETURN(c.source_channel_idx, ju::GetInt(j, "source_channel_idx", std::nullopt, kWhere));
  if (!j.contains("all_labels")) return ju::Invalid("move_seg_as_one_hot_to_data.all_labels", "required");
  ASSIGN_OR_RETURN(c.all_labels, ju::AsInts(j["all_labels"], "move_seg_as_one_hot_to_data.all_labels"));
  ASSIGN_OR_RETURN(c.remove_channel_from_source, ju::GetBool(j, "remove_channel_from_source", true, kWhere));
  return Create(c);
}

nlohmann::json MoveSegAsOneHotToDataTransform::ConfigToJson() const {
  return {{"source_channel_idx", config_.source_channel_idx},
          {"all_labels", config_.all_labels},
          {"remove_channel_from_source", config_.remove_channel_from_source}};
}

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
