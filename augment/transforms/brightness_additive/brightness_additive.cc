#include "augment/transforms/brightness_additive/brightness_additive.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ChannelIndicesFromJson;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;
using transforms_internal::SelectChannels;

const ConfigSchema<BrightnessAdditiveConfig>& BrightnessAdditiveTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<BrightnessAdditiveConfig>("brightness_additive"))
           ->Add("mu", &BrightnessAdditiveConfig::mu, "mean of the additive shift", Required())
           .Add("sigma", &BrightnessAdditiveConfig::sigma, "standard deviation of the shift", Required(AtLeast(0)))
           .Add("synchronize_channels", &BrightnessAdditiveConfig::synchronize_channels,
                "one shift for all channels (bgv2 then draws U(mu, sigma))")
           .Add("p_per_channel", &BrightnessAdditiveConfig::p_per_channel, "probability that a channel is selected",
                Probability());
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> BrightnessAdditiveTransform::Create(
    const BrightnessAdditiveConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  if (!std::isfinite(c.mu)) return ju::Invalid("brightness_additive.mu", "must be finite");
  if (!std::isfinite(c.sigma) || c.sigma < 0) return ju::Invalid("brightness_additive.sigma", "must be finite, >= 0");
  if (c.synchronize_channels && c.mu > c.sigma) {
    // bgv2 samples sample_scalar((mu, sigma)) = U(mu, sigma) here and asserts mu <= sigma.
    return ju::Invalid("brightness_additive.mu", "must be <= sigma with synchronize_channels (bgv2 draws U(mu, sigma))");
  }
  return std::shared_ptr<const Transform>(new BrightnessAdditiveTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> BrightnessAdditiveTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(BrightnessAdditiveConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json BrightnessAdditiveTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> BrightnessAdditiveTransform::Draw(DrawContext& ctx,
                                                                                   const SampleLayout& layout) const {
  auto p = std::make_unique<BrightnessAdditiveParams>();
  p->apply_to_channel = SelectChannels(ctx.rng, layout.channels, config_.p_per_channel);
  if (p->apply_to_channel.empty()) return std::unique_ptr<TransformParams>(std::move(p));
  if (config_.synchronize_channels) {
    const double v = config_.mu == config_.sigma ? config_.mu : ctx.rng.Uniform(config_.mu, config_.sigma);
    p->shift.assign(static_cast<size_t>(layout.channels), static_cast<float>(v));
  } else {
    for (int64_t c = 0; c < layout.channels; ++c)
      p->shift.push_back(static_cast<float>(ctx.rng.Normal(config_.mu, config_.sigma)));
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status BrightnessAdditiveTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const BrightnessAdditiveParams* p, ParamsAs<BrightnessAdditiveParams>(params, "brightness_additive"));
  RETURN_IF_ERROR(RequireImage(s, "brightness_additive"));
  if (p->shift.empty() || p->apply_to_channel.empty()) return absl::OkStatus();
  if (static_cast<int64_t>(p->shift.size()) != s.channels) return ju::Invalid("params.shift", "needs one entry per channel");
  const int64_t n = s.voxels();
  for (int64_t c : p->apply_to_channel) {
    if (c < 0 || c >= s.channels) return ju::Invalid("params.apply_to_channel", "channel out of range");
    const float v = p->shift[static_cast<size_t>(c)];
    float* x = s.image.data() + c * n;
    for (int64_t i = 0; i < n; ++i) x[i] += v;
  }
  return absl::OkStatus();
}

nlohmann::json BrightnessAdditiveTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const BrightnessAdditiveParams&>(params);
  nlohmann::json j;
  j["apply_to_channel"] = p.apply_to_channel;
  j["shift"] = p.shift.empty() ? nlohmann::json() : nlohmann::json(p.shift);
  return j;
}

absl::StatusOr<std::unique_ptr<TransformParams>> BrightnessAdditiveTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channel", "shift"}, "params"));
  auto p = std::make_unique<BrightnessAdditiveParams>();
  ASSIGN_OR_RETURN(p->apply_to_channel, ChannelIndicesFromJson(j.value("apply_to_channel", nlohmann::json()),
                                                               layout.channels, "params.apply_to_channel"));
  const nlohmann::json shift = j.value("shift", nlohmann::json());
  if (shift.is_null()) return std::unique_ptr<TransformParams>(std::move(p));
  ASSIGN_OR_RETURN(auto v, ju::AsDoubles(shift, "params.shift"));
  if (static_cast<int64_t>(v.size()) != layout.channels) {
    return ju::Invalid("params.shift", absl::StrCat("needs ", layout.channels, " entries (one per channel)"));
  }
  for (double x : v) p->shift.push_back(static_cast<float>(x));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
