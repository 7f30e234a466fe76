#include "augment/transforms/auglab_flip/auglab_flip.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_label.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;

const ConfigSchema<AuglabFlipConfig>& AuglabFlipTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<AuglabFlipConfig>("auglab_flip"))
           ->Add("flip_axis", &AuglabFlipConfig::flip_axis,
                 "spatial axes that may be flipped (AugLab RandomFlipTransformGPU: a coin per axis, at least one "
                 "flag per sample)",
                 InRange(0, 2));
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> AuglabFlipTransform::Create(const AuglabFlipConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  return std::shared_ptr<const Transform>(new AuglabFlipTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> AuglabFlipTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(AuglabFlipConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json AuglabFlipTransform::ConfigToJson() const { return Schema().ToJson(config_); }

std::array<bool, 3> AuglabFlipTransform::FlippedAxes(const AuglabFlipParams& p) const {
  std::array<bool, 3> out{false, false, false};
  for (int64_t a : config_.flip_axis)
    if (a >= 0 && a < 3 && p.flip[static_cast<size_t>(a)] == 1) out[static_cast<size_t>(a)] = true;
  return out;
}

absl::StatusOr<std::unique_ptr<TransformParams>> AuglabFlipTransform::Draw(DrawContext& ctx,
                                                                           const SampleLayout& layout) const {
  if (layout.shape.size() != 3) return ju::Invalid("auglab_flip", "3D samples only (AugLab's GPU transforms)");
  auto p = std::make_unique<AuglabFlipParams>();
  // FlipGenerator3D: (U(0, 1) > 0.5) per axis, then one allowed axis when none came up.
  for (int a = 0; a < 3; ++a) p->flip[static_cast<size_t>(a)] = ctx.rng.Uniform() > 0.5 ? 1 : 0;
  if (p->flip[0] + p->flip[1] + p->flip[2] == 0 && !config_.flip_axis.empty()) {
    const int64_t n = static_cast<int64_t>(config_.flip_axis.size());
    const int64_t choice = std::min<int64_t>(n - 1, static_cast<int64_t>(ctx.rng.Uniform() * static_cast<double>(n)));
    p->flip[static_cast<size_t>(config_.flip_axis[static_cast<size_t>(choice)])] = 1;
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status AuglabFlipTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const AuglabFlipParams* p, ParamsAs<AuglabFlipParams>(params, "auglab_flip"));
  if (s.shape.size() != 3) return ju::Invalid("auglab_flip", "3D samples only (AugLab's GPU transforms)");
  const std::array<bool, 3> axes = FlippedAxes(*p);
  if (!axes[0] && !axes[1] && !axes[2]) return absl::OkStatus();
  const bool flip[3] = {axes[0], axes[1], axes[2]};
  if (s.channels > 0) kernels::Flip<float>(s.image.data(), s.channels, s.shape.data(), 3, flip);
  if (s.seg_channels > 0 && !s.seg.empty()) {
    kernels::Flip<int16_t>(s.seg.data(), s.seg_channels, s.shape.data(), 3, flip);
  }
  return absl::OkStatus();
}

nlohmann::json AuglabFlipTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const AuglabFlipParams&>(params);
  return {{"flip", {p.flip[0], p.flip[1], p.flip[2]}}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> AuglabFlipTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                     const SampleLayout&) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"flip"}, "params"));
  if (!j.contains("flip")) return ju::Invalid("params.flip", "required (one 0/1 flag per spatial axis)");
  ASSIGN_OR_RETURN(std::vector<int64_t> flags, ju::AsInts(j["flip"], "params.flip"));
  if (flags.size() != 3) return ju::Invalid("params.flip", "expected 3 flags (z, y, x)");
  auto p = std::make_unique<AuglabFlipParams>();
  for (size_t a = 0; a < 3; ++a) {
    if (flags[a] != 0 && flags[a] != 1) return ju::Invalid("params.flip", absl::StrCat("flag ", flags[a], " not 0/1"));
    p->flip[a] = static_cast<int>(flags[a]);
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
