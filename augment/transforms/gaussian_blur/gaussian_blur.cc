#include "augment/transforms/gaussian_blur/gaussian_blur.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/cpu_blur.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ChannelIndicesFromJson;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;
using transforms_internal::SelectChannels;

const ConfigSchema<GaussianBlurConfig>& GaussianBlurTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<GaussianBlurConfig>("gaussian_blur"))
           ->Add("blur_sigma", &GaussianBlurConfig::blur_sigma, "Gaussian sigma in voxels, drawn per channel / axis",
                 FieldRule{false, 0, 100, /*lo_open=*/true})
           .Add("synchronize_channels", &GaussianBlurConfig::synchronize_channels, "one sigma for all channels")
           .Add("synchronize_axes", &GaussianBlurConfig::synchronize_axes, "one sigma for all spatial axes")
           .Add("p_per_channel", &GaussianBlurConfig::p_per_channel, "probability that a channel is selected",
                Probability())
           .Add("benchmark", &GaussianBlurConfig::benchmark, "bgv2's FFT-vs-direct benchmark flag (ignored)");
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> GaussianBlurTransform::Create(const GaussianBlurConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  return std::shared_ptr<const Transform>(new GaussianBlurTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> GaussianBlurTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(GaussianBlurConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json GaussianBlurTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> GaussianBlurTransform::Draw(DrawContext& ctx,
                                                                             const SampleLayout& layout) const {
  auto p = std::make_unique<GaussianBlurParams>();
  p->channels = layout.channels;
  const int dims = static_cast<int>(layout.shape.size());
  p->apply_to_channel = SelectChannels(ctx.rng, layout.channels, config_.p_per_channel);
  const size_t n = p->apply_to_channel.size();
  RandomStream& rng = ctx.rng;
  if (config_.synchronize_channels) {
    std::vector<double> s(dims);
    if (config_.synchronize_axes) {
      std::fill(s.begin(), s.end(), config_.blur_sigma.Sample(rng));
    } else {
      for (int d = 0; d < dims; ++d) s[d] = config_.blur_sigma.Sample(rng);
    }
    p->sigmas.assign(n, s);
  } else {
    for (size_t i = 0; i < n; ++i) {
      std::vector<double> s(dims);
      if (config_.synchronize_axes) {
        std::fill(s.begin(), s.end(), config_.blur_sigma.Sample(rng));
      } else {
        for (int d = 0; d < dims; ++d) s[d] = config_.blur_sigma.Sample(rng);
      }
      p->sigmas.push_back(s);
    }
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status GaussianBlurTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const GaussianBlurParams* p, ParamsAs<GaussianBlurParams>(params, "gaussian_blur"));
  RETURN_IF_ERROR(RequireImage(s, "gaussian_blur"));
  const int nd = static_cast<int>(s.shape.size());
  const int64_t n = s.voxels();
  std::vector<float> scratch;
  for (size_t k = 0; k < p->apply_to_channel.size(); ++k) {
    const int64_t c = p->apply_to_channel[k];
    if (static_cast<int>(p->sigmas[k].size()) != nd)
      return ju::Invalid("params.sigmas", absl::StrCat("needs ", nd, " sigmas per channel"));
    for (int d = 0; d < nd; ++d) {
      const double sigma = p->sigmas[k][d];
      const std::vector<float> kernel = kernels::GaussianKernel1D(sigma);
      const int ks = static_cast<int>(kernel.size());
      if (s.shape[d] <= ks / 2) {
        return ju::Invalid("gaussian_blur.blur_sigma", absl::StrCat("kernel of ", ks, " taps needs axis ", d,
                                                                    " longer than ", ks / 2, " (reflect padding)"));
      }
      kernels::BlurAxis(s.image.data() + c * n, s.shape.data(), nd, d, kernel.data(), ks, scratch);
    }
  }
  return absl::OkStatus();
}

nlohmann::json GaussianBlurTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const GaussianBlurParams&>(params);
  std::vector<bool> mask(p.channels, false);
  for (int64_t c : p.apply_to_channel) mask[c] = true;
  nlohmann::json j;
  j["apply_to_channel"] = mask;
  if (config_.synchronize_channels) {
    j["sigmas"] = p.sigmas.empty() ? nlohmann::json::array() : nlohmann::json(p.sigmas[0]);
  } else {
    j["sigmas"] = p.sigmas;
  }
  return j;
}

absl::StatusOr<std::unique_ptr<TransformParams>> GaussianBlurTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"apply_to_channel", "sigmas"}, "params"));
  auto p = std::make_unique<GaussianBlurParams>();
  p->channels = layout.channels;
  ASSIGN_OR_RETURN(p->apply_to_channel, ChannelIndicesFromJson(j.value("apply_to_channel", nlohmann::json()),
                                                               layout.channels, "params.apply_to_channel"));
  const size_t n = p->apply_to_channel.size();
  const size_t dims = layout.shape.size();
  const nlohmann::json sig = j.value("sigmas", nlohmann::json::array());
  if (n == 0) return std::unique_ptr<TransformParams>(std::move(p));
  if (!sig.is_array()) return ju::Invalid("params.sigmas", "expected a list");
  const bool flat = !sig.empty() && sig[0].is_number();
  for (size_t i = 0; i < n; ++i) {
    std::vector<double> s;
    if (flat) {
      ASSIGN_OR_RETURN(s, ju::AsDoubles(sig, "params.sigmas"));
    } else {
      if (sig.size() != n) return ju::Invalid("params.sigmas", absl::StrCat("needs ", n, " entries"));
      ASSIGN_OR_RETURN(s, ju::AsDoubles(sig[i], "params.sigmas"));
    }
    if (s.size() != dims) return ju::Invalid("params.sigmas", absl::StrCat("needs ", dims, " sigmas per channel"));
    for (double v : s)
      if (!(v > 0) || v > 100) return ju::Invalid("params.sigmas", "sigma must be in (0, 100]");
    p->sigmas.push_back(s);
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
