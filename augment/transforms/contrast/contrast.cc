#include "augment/transforms/contrast/contrast.h"

#include "augment/json_util.h"
#include "augment/kernels/cpu_intensity.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ChannelIndicesFromJson;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;
using transforms_internal::SamplePerChannel;
using transforms_internal::SelectChannels;

const ConfigSchema<ContrastConfig>& ContrastTransform::Schema() {
  static const auto* const s = &(new ConfigSchema<ContrastConfig>("contrast"))
                                    ->Add("contrast_range", &ContrastConfig::contrast_range,
                                          "contrast factor drawn per selected channel", Required())
                                    .Add("preserve_range", &ContrastConfig::preserve_range,
                                         "clip the result to the channel's old [min, max]", Required())
                                    .Add("synchronize_channels", &ContrastConfig::synchronize_channels,
                                         "one factor for all selected channels", Required())
                                    .Add("p_per_channel", &ContrastConfig::p_per_channel,
                                         "probability that a channel is selected", Probability());
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> ContrastTransform::Create(const ContrastConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  return std::shared_ptr<const Transform>(new ContrastTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> ContrastTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(ContrastConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json ContrastTransform::ConfigToJson() const { return Schema().ToJson(config_); }

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
