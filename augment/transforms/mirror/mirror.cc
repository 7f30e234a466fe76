#include "augment/transforms/mirror/mirror.h"

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_label.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;

const ConfigSchema<MirrorConfig>& MirrorTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<MirrorConfig>("mirror"))
           ->Add("allowed_axes", &MirrorConfig::allowed_axes, "spatial axes that may be flipped (each with p = 0.5)",
                 Required(InRange(0, 2)));
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> MirrorTransform::Create(const MirrorConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  return std::shared_ptr<const Transform>(new MirrorTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> MirrorTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(MirrorConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json MirrorTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> MirrorTransform::Draw(DrawContext& ctx,
                                                                       const SampleLayout& layout) const {
  auto p = std::make_unique<MirrorParams>();
  for (int64_t a : config_.allowed_axes) {
    if (a >= static_cast<int64_t>(layout.shape.size()))
      return ju::Invalid("mirror.allowed_axes", "axis beyond the sample's dims");
    if (ctx.rng.Uniform() < 0.5) p->axes.push_back(a);
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status MirrorTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const MirrorParams* p, ParamsAs<MirrorParams>(params, "mirror"));
  const int nd = static_cast<int>(s.shape.size());
  bool flip[3] = {false, false, false};
  for (int64_t a : p->axes) {
    if (a < 0 || a >= nd) return ju::Invalid("params.axes", absl::StrCat("axis ", a, " out of range"));
    flip[a] = true;
  }
  if (s.channels > 0) kernels::Flip<float>(s.image.data(), s.channels, s.shape.data(), nd, flip);
  if (s.seg_channels > 0 && !s.seg.empty())
    kernels::Flip<int16_t>(s.seg.data(), s.seg_channels, s.shape.data(), nd, flip);
  return absl::OkStatus();
}

nlohmann::json MirrorTransform::ParamsToJson(const TransformParams& params) const {
  return {{"axes", static_cast<const MirrorParams&>(params).axes}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> MirrorTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                 const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"axes"}, "params"));
  auto p = std::make_unique<MirrorParams>();
  if (j.contains("axes")) {
    ASSIGN_OR_RETURN(p->axes, ju::AsInts(j["axes"], "params.axes"));
  }
  for (int64_t a : p->axes)
    if (a < 0 || a >= static_cast<int64_t>(layout.shape.size()))
      return ju::Invalid("params.axes", absl::StrCat("axis ", a, " out of range"));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
