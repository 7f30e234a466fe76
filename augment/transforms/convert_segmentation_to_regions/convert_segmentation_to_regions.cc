#include "augment/transforms/convert_segmentation_to_regions/convert_segmentation_to_regions.h"

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_label.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::RequireSeg;

const ConfigSchema<ConvertSegmentationToRegionsConfig>& ConvertSegmentationToRegionsTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<ConvertSegmentationToRegionsConfig>("convert_segmentation_to_regions"))
           ->Custom(
               "regions", "(int | int[])[]", "the output channels: each a label or a list of labels (their union)",
               [](const nlohmann::json& j, ConvertSegmentationToRegionsConfig& c,
                  const std::string& w) -> absl::Status {
                 if (!j.contains("regions") || !j["regions"].is_array())
                   return ju::Invalid(w + ".regions", "expected a list");
                 for (const auto& r : j["regions"]) {
                   if (r.is_number_integer()) {
                     c.regions.push_back({r.get<int64_t>()});
                   } else {
                     ASSIGN_OR_RETURN(auto v, ju::AsInts(r, w + ".regions"));
                     c.regions.push_back(v);
                   }
                 }
                 return absl::OkStatus();
               },
               [](const ConvertSegmentationToRegionsConfig& c) { return nlohmann::json(c.regions); },
               /*required=*/true)
           .Add("channel_in_seg", &ConvertSegmentationToRegionsConfig::channel_in_seg,
                "segmentation channel the labels are read from", AtLeast(0));
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> ConvertSegmentationToRegionsTransform::Create(
    const ConvertSegmentationToRegionsConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const std::string w = "convert_segmentation_to_regions";
  if (c.regions.empty()) return ju::Invalid(w + ".regions", "must not be empty");
  if (c.regions.size() > 1024) return ju::Invalid(w + ".regions", "too many regions (max 1024)");
  for (const auto& r : c.regions) {
    if (r.empty()) return ju::Invalid(w + ".regions", "a region must list at least one label");
    for (int64_t l : r)
      if (l < -32768 || l > 32767) return ju::Invalid(w + ".regions", "labels must fit int16");
  }
  return std::shared_ptr<const Transform>(new ConvertSegmentationToRegionsTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> ConvertSegmentationToRegionsTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(ConvertSegmentationToRegionsConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json ConvertSegmentationToRegionsTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::Status ConvertSegmentationToRegionsTransform::Apply(const TransformParams&, SampleData& s) const {
  if (s.seg_channels == 0) return absl::OkStatus();  // bgv2 SegOnlyTransform: no segmentation, nothing to do
  RETURN_IF_ERROR(RequireSeg(s, "convert_segmentation_to_regions"));
  if (config_.channel_in_seg >= s.seg_channels) {
    return ju::Invalid("convert_segmentation_to_regions.channel_in_seg", "out of range");
  }
  const int64_t n = s.voxels();
  const int64_t k = static_cast<int64_t>(config_.regions.size());
  std::vector<int16_t> out(static_cast<size_t>(k * n));
  const int16_t* src = s.seg.data() + config_.channel_in_seg * n;
  for (int64_t r = 0; r < k; ++r) {
    const auto& labels = config_.regions[r];
    kernels::IsIn(src, n, labels.data(), static_cast<int>(labels.size()), out.data() + r * n);
  }
  s.seg = std::move(out);
  s.seg_channels = k;
  s.seg_is_bool = true;
  return absl::OkStatus();
}

}  // namespace augmentd
