#include "augment/transforms/gamma/gamma.h"

#include "absl/strings/str_cat.h"
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

const ConfigSchema<GammaConfig>& GammaTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<GammaConfig>("gamma"))
           ->Add("gamma", &GammaConfig::gamma, "exponent g of the power map, drawn per selected channel",
                 Required(Above(0)))
           .Add("p_invert_image", &GammaConfig::p_invert_image, "probability of mapping -x instead of x",
                Required(Probability()))
           .Add("synchronize_channels", &GammaConfig::synchronize_channels, "one g for all selected channels",
                Required())
           .Add("p_per_channel", &GammaConfig::p_per_channel, "probability that a channel is selected",
                Required(Probability()))
           .Add("p_retain_stats", &GammaConfig::p_retain_stats,
                "probability of restoring the channel's mean and std afterwards", Required(Probability()));
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> GammaTransform::Create(const GammaConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  return std::shared_ptr<const Transform>(new GammaTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> GammaTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(GammaConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json GammaTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> GammaTransform::Draw(DrawContext& ctx,
                                                                      const SampleLayout& layout) const {
  auto p = std::make_unique<GammaParams>();
  p->apply_to_channel = SelectChannels(ctx.rng, layout.channels, config_.p_per_channel);
  const size_t n = p->apply_to_channel.size();
  if (n == 0) return std::unique_ptr<TransformParams>(std::move(p));
  for (size_t i = 0; i < n; ++i) p->retain_stats.push_back(ctx.rng.Uniform() < config_.p_retain_stats);
  for (size_t i = 0; i < n; ++i) p->invert_image.push_back(ctx.rng.Uniform() < config_.p_invert_image);
  p->gamma = SamplePerChannel(ctx.rng, config_.gamma, n, config_.synchronize_channels);
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status GammaTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const GammaParams* p, ParamsAs<GammaParams>(params, "gamma"));
  RETURN_IF_ERROR(RequireImage(s, "gamma"));
  const int64_t n = s.voxels();
  for (size_t k = 0; k < p->apply_to_channel.size(); ++k) {
    const int64_t c = p->apply_to_channel[k];
    if (c < 0 || c >= s.channels) return ju::Invalid("params.apply_to_channel", "channel out of range");
    kernels::ApplyGamma(s.image.data() + c * n, n, p->gamma[k], p->invert_image[k], p->retain_stats[k]);
  }
  return absl::OkStatus();
}

nlohmann::json GammaTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const GammaParams&>(params);
  nlohmann::json j;
  j["apply_to_channel"] = p.apply_to_channel;
  if (p.apply_to_channel.empty()) {
    j["retain_stats"] = nullptr;
    j["invert_image"] = nullptr;
    j["gamma"] = nullptr;
  } else {
    j["retain_stats"] = p.retain_stats;
    j["invert_image"] = p.invert_image;
    j["gamma"] = p.gamma;
  }
  return j;
}

absl::StatusOr<std::unique_ptr<TransformParams>> GammaTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channel", "retain_stats", "invert_image", "gamma"}, "params"));
  auto p = std::make_unique<GammaParams>();
  ASSIGN_OR_RETURN(p->apply_to_channel, ChannelIndicesFromJson(j.value("apply_to_channel", nlohmann::json()),
                                                               layout.channels, "params.apply_to_channel"));
  const size_t n = p->apply_to_channel.size();
  if (n == 0) return std::unique_ptr<TransformParams>(std::move(p));
  for (const char* key : {"retain_stats", "invert_image", "gamma"}) {
    if (!j.contains(key) || !j[key].is_array() || j[key].size() != n) {
      return ju::Invalid(absl::StrCat("params.", key), absl::StrCat("needs ", n, " entries (one per applied channel)"));
    }
  }
  ASSIGN_OR_RETURN(p->retain_stats, ju::AsBools(j["retain_stats"], "params.retain_stats"));
  ASSIGN_OR_RETURN(p->invert_image, ju::AsBools(j["invert_image"], "params.invert_image"));
  ASSIGN_OR_RETURN(auto g, ju::AsDoubles(j["gamma"], "params.gamma"));
  for (double v : g) {
    if (v <= 0 || v > 100) return ju::Invalid("params.gamma", "must be in (0, 100]");
    p->gamma.push_back(static_cast<float>(v));
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
