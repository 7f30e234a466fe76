#include "augment/transforms/contrast/contrast.h"

#include "augment/json_util.h"
#include "augment/kernels/cpu_intensity.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ChannelIndicesFromJson;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;
using transforms_internal::SamplePerChannel;
using transforms_internal::SelectChannels;

absl::StatusOr<std::shared_ptr<const Transform>> ContrastTransform::Create(const ContrastConfig& c) {
  RETURN_IF_ERROR(c.contrast_range.Validate("contrast.contrast_range"));
  RETURN_IF_ERROR(ju::CheckProbability(c.p_per_channel, "contrast.p_per_channel"));
  return std::shared_ptr<const Transform>(new ContrastTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> ContrastTransform::FromJson(const nlohmann::json& j) {
  const std::string w = "contrast";
  RETURN_IF_ERROR(ju::CheckKeys(j, {"contrast_range", "preserve_range", "synchronize_channels", "p_per_channel"}, w));
  ContrastConfig c;
  if (!j.contains("contrast_range")) return ju::Invalid(w + ".contrast_range", "required");
  ASSIGN_OR_RETURN(c.contrast_range, RandomScalar::FromJson(j["contrast_range"], w + ".contrast_range"));
  ASSIGN_OR_RETURN(c.preserve_range, ju::GetBool(j, "preserve_range", std::nullopt, w));
  ASSIGN_OR_RETURN(c.synchronize_channels, ju::GetBool(j, "synchronize_channels", std::nullopt, w));
  ASSIGN_OR_RETURN(c.p_per_channel, ju::GetDouble(j, "p_per_channel", 1.0, w));
  return Create(c);
}

nlohmann::json ContrastTransform::ConfigToJson() const {
  return {{"contrast_range", config_.contrast_range.ToJson()},
          {"preserve_range", config_.preserve_range},
          {"synchronize_channels", config_.synchronize_channels},
          {"p_per_channel", config_.p_per_channel}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> ContrastTransform::Draw(DrawContext& ctx,
                                                                         const SampleLayout& layout) const {
  auto p = std::make_unique<ContrastParams>();
  p->apply_to_channel = SelectChannels(ctx.rng, layout.channels, config_.p_per_channel);
  const size_t n = p->apply_to_channel.size();
  if (n == 0) return std::unique_ptr<TransformParams>(std::move(p));
  p->multipliers = SamplePerChannel(ctx.rng, config_.contrast_range, n, config_.synchronize_channels);
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status ContrastTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const ContrastParams* p, ParamsAs<ContrastParams>(params, "contrast"));
  RETURN_IF_ERROR(RequireImage(s, "contrast"));
  const int64_t n = s.voxels();
  for (size_t k = 0; k < p->apply_to_channel.size(); ++k) {
    kernels::ApplyContrast(s.image.data() + p->apply_to_channel[k] * n, n, p->multipliers[k], config_.preserve_range);
  }
  return absl::OkStatus();
}

nlohmann::json ContrastTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const ContrastParams&>(params);
  nlohmann::json j = {{"apply_to_channel", p.apply_to_channel}, {"multipliers", p.multipliers}};
  if (p.apply_to_channel.empty()) j["multipliers"] = nullptr;
  return j;
}

absl::StatusOr<std::unique_ptr<TransformParams>> ContrastTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                   const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channel", "multipliers"}, "params"));
  auto p = std::make_unique<ContrastParams>();
  ASSIGN_OR_RETURN(p->apply_to_channel, ChannelIndicesFromJson(j.value("apply_to_channel", nlohmann::json()),
                                                               layout.channels, "params.apply_to_channel"));
  ASSIGN_OR_RETURN(p->multipliers,
                   transforms_internal::PerChannelFloatsFromJson(j, "multipliers", p->apply_to_channel.size()));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
