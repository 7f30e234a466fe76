#include "augment/transforms/multiplicative_brightness/multiplicative_brightness.h"

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

const ConfigSchema<MultiplicativeBrightnessConfig>& MultiplicativeBrightnessTransform::Schema() {
  static const auto* const s = &(new ConfigSchema<MultiplicativeBrightnessConfig>("multiplicative_brightness"))
                                    ->Add("multiplier_range", &MultiplicativeBrightnessConfig::multiplier_range,
                                          "multiplier drawn per selected channel", Required())
                                    .Add("synchronize_channels", &MultiplicativeBrightnessConfig::synchronize_channels,
                                         "one multiplier for all selected channels", Required())
                                    .Add("p_per_channel", &MultiplicativeBrightnessConfig::p_per_channel,
                                         "probability that a channel is selected", Probability());
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> MultiplicativeBrightnessTransform::Create(
    const MultiplicativeBrightnessConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  return std::shared_ptr<const Transform>(new MultiplicativeBrightnessTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> MultiplicativeBrightnessTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(MultiplicativeBrightnessConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json MultiplicativeBrightnessTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> MultiplicativeBrightnessTransform::Draw(
    DrawContext& ctx, const SampleLayout& layout) const {
  auto p = std::make_unique<MultiplicativeBrightnessParams>();
  p->apply_to_channel = SelectChannels(ctx.rng, layout.channels, config_.p_per_channel);
  const size_t n = p->apply_to_channel.size();
  p->multipliers = SamplePerChannel(ctx.rng, config_.multiplier_range, n, config_.synchronize_channels);
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status MultiplicativeBrightnessTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const MultiplicativeBrightnessParams* p,
                   ParamsAs<MultiplicativeBrightnessParams>(params, "multiplicative_brightness"));
  RETURN_IF_ERROR(RequireImage(s, "multiplicative_brightness"));
  const int64_t n = s.voxels();
  for (size_t k = 0; k < p->apply_to_channel.size(); ++k) {
    kernels::MultiplyChannel(s.image.data() + p->apply_to_channel[k] * n, n, p->multipliers[k]);
  }
  return absl::OkStatus();
}

nlohmann::json MultiplicativeBrightnessTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const MultiplicativeBrightnessParams&>(params);
  return {{"apply_to_channel", p.apply_to_channel}, {"multipliers", p.multipliers}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> MultiplicativeBrightnessTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channel", "multipliers"}, "params"));
  auto p = std::make_unique<MultiplicativeBrightnessParams>();
  ASSIGN_OR_RETURN(p->apply_to_channel, ChannelIndicesFromJson(j.value("apply_to_channel", nlohmann::json()),
                                                               layout.channels, "params.apply_to_channel"));
  ASSIGN_OR_RETURN(p->multipliers,
                   transforms_internal::PerChannelFloatsFromJson(j, "multipliers", p->apply_to_channel.size()));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
