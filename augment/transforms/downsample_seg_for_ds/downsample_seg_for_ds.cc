#include "augment/transforms/downsample_seg_for_ds/downsample_seg_for_ds.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_resample.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::RequireSeg;

const ConfigSchema<DownsampleSegForDsConfig>& DownsampleSegForDsTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<DownsampleSegForDsConfig>("downsample_seg_for_ds"))
           ->Custom(
               "ds_scales", "(double | double[])[]",
               "one scale per deep-supervision output (a number or one per spatial axis)",
               [](const nlohmann::json& j, DownsampleSegForDsConfig& c, const std::string& w) -> absl::Status {
                 if (!j.contains("ds_scales") || !j["ds_scales"].is_array())
                   return ju::Invalid(w + ".ds_scales", "expected a list");
                 for (const auto& s : j["ds_scales"]) {
                   if (s.is_number()) {
                     c.ds_scales.push_back({s.get<double>()});
                   } else {
                     ASSIGN_OR_RETURN(auto v, ju::AsDoubles(s, w + ".ds_scales"));
                     c.ds_scales.push_back(v);
                   }
                 }
                 return absl::OkStatus();
               },
               [](const DownsampleSegForDsConfig& c) {
                 nlohmann::json arr = nlohmann::json::array();
                 for (const auto& s : c.ds_scales)
                   arr.push_back(s.size() == 1 ? nlohmann::json(s[0]) : nlohmann::json(s));
                 return arr;
               },
               /*required=*/true);
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> DownsampleSegForDsTransform::Create(
    const DownsampleSegForDsConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  if (c.ds_scales.empty()) return ju::Invalid("downsample_seg_for_ds.ds_scales", "must not be empty");
  for (const auto& s : c.ds_scales) {
    if (s.empty() || s.size() > 3)
      return ju::Invalid("downsample_seg_for_ds.ds_scales", "each scale needs 1..3 entries");
    for (double v : s)
      if (!std::isfinite(v) || v <= 0 || v > 1)
        return ju::Invalid("downsample_seg_for_ds.ds_scales", "scales must be in (0, 1]");
  }
  return std::shared_ptr<const Transform>(new DownsampleSegForDsTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> DownsampleSegForDsTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(DownsampleSegForDsConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json DownsampleSegForDsTransform::ConfigToJson() const { return Schema().ToJson(config_); }

std::vector<int64_t> DownsampleSegForDsTransform::LevelShape(const std::vector<int64_t>& full, size_t level) const {
  const auto& s = config_.ds_scales[level];
  std::vector<int64_t> out(full.size());
  for (size_t d = 0; d < full.size(); ++d) {
    const double f = s.size() == 1 ? s[0] : s[d];
    out[d] = f == 1.0 ? full[d] : kernels::PyRoundToInt(static_cast<double>(full[d]) * f);
  }
  return out;
}

absl::Status DownsampleSegForDsTransform::Apply(const TransformParams&, SampleData& s) const {
  if (s.seg_channels == 0) return absl::OkStatus();  // bgv2 SegOnlyTransform: no segmentation, nothing to do
  RETURN_IF_ERROR(RequireSeg(s, "downsample_seg_for_ds"));
  const int nd = static_cast<int>(s.shape.size());
  const int64_t n = s.voxels();
  std::vector<LabelLevel> pyramid;
  for (size_t level = 0; level < config_.ds_scales.size(); ++level) {
    const auto& sc = config_.ds_scales[level];
    if (sc.size() != 1 && static_cast<int>(sc.size()) != nd) {
      return ju::Invalid("downsample_seg_for_ds.ds_scales", absl::StrCat("scale needs 1 or ", nd, " entries"));
    }
    LabelLevel lv;
    lv.shape = LevelShape(s.shape, level);
    int64_t m = 1;
    for (int64_t v : lv.shape) {
      if (v < 1) return ju::Invalid("downsample_seg_for_ds.ds_scales", "a scale rounds an axis to size 0");
      m *= v;
    }
    bool identity = true;
    for (double v : sc) identity = identity && v == 1.0;
    if (identity) {
      lv.shape = s.shape;
      lv.data = s.seg;
    } else {
      lv.data.resize(static_cast<size_t>(m * s.seg_channels));
      for (int64_t c = 0; c < s.seg_channels; ++c) {
        kernels::NearestExactResize<int16_t>(s.seg.data() + c * n, s.shape.data(), lv.data.data() + c * m,
                                             lv.shape.data(), nd);
      }
    }
    pyramid.push_back(std::move(lv));
  }
  s.seg_pyramid = std::move(pyramid);
  s.seg.clear();
  return absl::OkStatus();
}

}  // namespace augmentd
