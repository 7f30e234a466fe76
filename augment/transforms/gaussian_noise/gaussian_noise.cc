#include "augment/transforms/gaussian_noise/gaussian_noise.h"

#include <cmath>

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

const ConfigSchema<GaussianNoiseConfig>& GaussianNoiseTransform::Schema() {
  static const auto* const s = &(new ConfigSchema<GaussianNoiseConfig>("gaussian_noise"))
                                    ->Add("noise_variance", &GaussianNoiseConfig::noise_variance,
                                          "noise sigma drawn per selected channel (bgv2's name)", AtLeast(0))
                                    .Add("p_per_channel", &GaussianNoiseConfig::p_per_channel,
                                         "probability that a channel is selected", Probability())
                                    .Add("synchronize_channels", &GaussianNoiseConfig::synchronize_channels,
                                         "one sigma for all selected channels");
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> GaussianNoiseTransform::Create(const GaussianNoiseConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  return std::shared_ptr<const Transform>(new GaussianNoiseTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> GaussianNoiseTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(GaussianNoiseConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json GaussianNoiseTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> GaussianNoiseTransform::Draw(DrawContext& ctx,
                                                                              const SampleLayout& layout) const {
  auto p = std::make_unique<GaussianNoiseParams>();
  p->channels = layout.channels;
  transforms_internal::SetNoiseKey(*p, ctx);
  p->apply_idx = SelectChannels(ctx.rng, layout.channels, config_.p_per_channel);
  const size_t n = p->apply_idx.size();
  if (n == 0) return std::unique_ptr<TransformParams>(std::move(p));
  p->sigmas = SamplePerChannel(ctx.rng, config_.noise_variance, n, config_.synchronize_channels);
  return std::unique_ptr<TransformParams>(std::move(p));
}

void GaussianNoiseTransform::CompleteInjected(TransformParams& params, const DrawContext& ctx) const {
  auto* p = dynamic_cast<GaussianNoiseParams*>(&params);
  if (p == nullptr || p->key_given) return;
  transforms_internal::SetNoiseKey(*p, ctx);
}

absl::Status GaussianNoiseTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const GaussianNoiseParams* p, ParamsAs<GaussianNoiseParams>(params, "gaussian_noise"));
  RETURN_IF_ERROR(RequireImage(s, "gaussian_noise"));
  const int64_t n = s.voxels();
  for (size_t k = 0; k < p->apply_idx.size(); ++k) {
    const int64_t c = p->apply_idx[k];
    const StreamKey key = MakeStreamKey(p->seed, p->sample_index, p->transform_index, 1u + static_cast<uint32_t>(c));
    kernels::AddGaussianNoise(s.image.data() + c * n, n, p->sigmas[k], key);
  }
  return absl::OkStatus();
}

nlohmann::json GaussianNoiseTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const GaussianNoiseParams&>(params);
  nlohmann::json j;
  std::vector<bool> mask(p.channels, false);
  for (int64_t c : p.apply_idx) mask[c] = true;
  j["apply_mask"] = mask;
  j["apply_idx"] = p.apply_idx;
  j["num_apply"] = p.apply_idx.size();
  if (p.apply_idx.empty()) {
    j["sigmas"] = nullptr;
  } else if (config_.synchronize_channels) {
    j["sigmas"] = p.sigmas[0];
  } else {
    j["sigmas"] = p.sigmas;
  }
  j["noise_key"] = transforms_internal::NoiseKeyToJson(p);
  return j;
}

absl::StatusOr<std::unique_ptr<TransformParams>> GaussianNoiseTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_mask", "apply_idx", "num_apply", "sigmas", "noise_key"}, "params"));
  auto p = std::make_unique<GaussianNoiseParams>();
  p->channels = layout.channels;
  if (j.contains("apply_idx")) {
    ASSIGN_OR_RETURN(p->apply_idx, ChannelIndicesFromJson(j["apply_idx"], layout.channels, "params.apply_idx"));
  } else {
    ASSIGN_OR_RETURN(p->apply_idx, ChannelIndicesFromJson(j.value("apply_mask", nlohmann::json()), layout.channels,
                                                          "params.apply_mask"));
  }
  const size_t n = p->apply_idx.size();
  if (n > 0) {
    if (!j.contains("sigmas") || j["sigmas"].is_null()) return ju::Invalid("params.sigmas", "required");
    std::vector<double> sig;
    if (j["sigmas"].is_number()) {
      sig.assign(n, j["sigmas"].get<double>());
    } else {
      ASSIGN_OR_RETURN(sig, ju::AsDoubles(j["sigmas"], "params.sigmas"));
    }
    if (sig.size() != n) return ju::Invalid("params.sigmas", absl::StrCat("needs ", n, " entries"));
    for (double v : sig) {
      if (!std::isfinite(v) || v < 0) return ju::Invalid("params.sigmas", "must be finite and >= 0");
      p->sigmas.push_back(static_cast<float>(v));
    }
  }
  RETURN_IF_ERROR(transforms_internal::NoiseKeyFromJson(j, *p));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
