#include "augment/transforms/local_gamma/local_gamma.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::LocalGaussianKernel;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

namespace {
constexpr char kW[] = "local_gamma";
}  // namespace

const ConfigSchema<LocalGammaConfig>& LocalGammaTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<LocalGammaConfig>("local_gamma"))
           ->Add("scale", &LocalGammaConfig::scale, "Gaussian bump width in voxels, per axis", Required())
           .Add("loc", &LocalGammaConfig::loc, "bump centre as a fraction of the axis size, per axis")
           .Add("gamma", &LocalGammaConfig::gamma, "gamma at the bump's peak (blended towards 1 outside)")
           .Add("same_for_all_channels", &LocalGammaConfig::same_for_all_channels,
                "one bump and gamma for all channels")
           .Add("p_per_channel", &LocalGammaConfig::p_per_channel, "probability that a channel is selected",
                Probability());
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> LocalGammaTransform::Create(const LocalGammaConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const std::string w = kW;
  RETURN_IF_ERROR(transforms_internal::ValidateLocalArgs(c.scale, c.loc, c.gamma, w, "gamma"));
  return std::shared_ptr<const Transform>(new LocalGammaTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> LocalGammaTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(LocalGammaConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json LocalGammaTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> LocalGammaTransform::Draw(DrawContext& ctx,
                                                                           const SampleLayout& layout) const {
  const int64_t C = layout.channels;
  auto p = std::make_unique<LocalGammaParams>();
  p->specs.resize(C);
  p->dense.resize(C);
  p->gammas.resize(C);
  std::vector<bool> apply(C);
  bool any = false;
  for (int64_t c = 0; c < C; ++c) any |= (apply[c] = ctx.rng.Uniform() < config_.p_per_channel);
  if (!any) return std::unique_ptr<TransformParams>(std::move(p));
  const std::string w = kW;
  auto one = [&](LocalKernelSpec& spec, double& gamma) -> absl::Status {
    ASSIGN_OR_RETURN(spec, transforms_internal::DrawKernelSpec(ctx.rng, config_.loc, config_.scale, layout.shape, w));
    ASSIGN_OR_RETURN(gamma, config_.gamma.Sample(ctx.rng, 0, w + ".gamma"));
    return absl::OkStatus();
  };
  if (config_.same_for_all_channels) {
    LocalKernelSpec spec;
    double g = 1;
    RETURN_IF_ERROR(one(spec, g));
    for (int64_t c = 0; c < C; ++c)
      if (apply[c]) {
        p->specs[c] = spec;
        p->gammas[c] = g;
      }
  } else {
    for (int64_t c = 0; c < C; ++c) {
      if (!apply[c]) continue;
      LocalKernelSpec spec;
      double g = 1;
      RETURN_IF_ERROR(one(spec, g));
      p->specs[c] = std::move(spec);
      p->gammas[c] = g;
    }
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status LocalGammaTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const LocalGammaParams* p, ParamsAs<LocalGammaParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  const int64_t n = s.voxels();
  std::vector<float> tmp;
  for (int64_t c = 0; c < s.channels && c < static_cast<int64_t>(p->gammas.size()); ++c) {
    if (!p->gammas[c]) continue;
    const std::vector<float>* k = p->dense[c].get();
    if (k == nullptr) {
      if (!p->specs[c]) continue;  // bgv2: kernel None → channel skipped
      if (p->specs[c]->loc_px.size() != s.shape.size()) return ju::Invalid("params.kernel_params", "one loc per axis");
      tmp.resize(static_cast<size_t>(n));
      LocalGaussianKernel(s.shape, p->specs[c]->loc_px, p->specs[c]->scale, tmp.data());
      k = &tmp;
    }
    if (static_cast<int64_t>(k->size()) != n) return ju::Invalid("params.kernels", "kernel shape != image shape");
    float* x = s.image.data() + c * n;
    const auto [a, b] = std::minmax_element(x, x + n);
    const float mn = *a;
    const float r = std::max(*b - mn, 1e-8f);  // Python max(float32, 1e-8): the float32 range unless tiny
    const float g = static_cast<float>(*p->gammas[c]);
    for (int64_t i = 0; i < n; ++i) {
      const float norm = (x[i] - mn) / r;
      const float kv = (*k)[i];
      const float blended = std::pow(norm, g) * kv + (1.0f - kv) * norm;
      x[i] = blended * r + mn;
    }
  }
  return absl::OkStatus();
}

nlohmann::json LocalGammaTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const LocalGammaParams&>(params);
  nlohmann::json k = nlohmann::json::array(), g = nlohmann::json::array();
  for (size_t c = 0; c < p.gammas.size(); ++c) {
    if (!p.gammas[c] || !p.specs[c]) {
      k.push_back(nullptr);
      g.push_back(nullptr);
    } else {
      k.push_back({{"loc", p.specs[c]->loc_px}, {"scale", p.specs[c]->scale}});
      g.push_back(*p.gammas[c]);
    }
  }
  return {{"kernel_params", k}, {"gammas", g}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> LocalGammaTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                     const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"kernels", "kernel_params", "gammas"}, "params"));
  const int64_t C = layout.channels;
  auto p = std::make_unique<LocalGammaParams>();
  p->specs.resize(C);
  p->dense.resize(C);
  p->gammas.resize(C);
  const nlohmann::json g = j.value("gammas", nlohmann::json());
  if (!g.is_array() || static_cast<int64_t>(g.size()) != C)
    return ju::Invalid("params.gammas", absl::StrCat("needs ", C, " entries (one per channel, null = untouched)"));
  for (int64_t c = 0; c < C; ++c) {
    if (g[c].is_null()) continue;
    if (!g[c].is_number() || !std::isfinite(g[c].get<double>()) || g[c].get<double>() < 0)
      return ju::Invalid("params.gammas", "expected finite numbers >= 0 or null");
    p->gammas[c] = g[c].get<double>();
  }
  if (j.contains("kernel_params")) {
    const auto& kp = j["kernel_params"];
    if (!kp.is_array() || static_cast<int64_t>(kp.size()) != C)
      return ju::Invalid("params.kernel_params", absl::StrCat("needs ", C, " entries (one per channel)"));
    for (int64_t c = 0; c < C; ++c) {
      if (kp[c].is_null()) continue;
      if (!kp[c].is_object()) return ju::Invalid("params.kernel_params", "expected {loc, scale} or null");
      ASSIGN_OR_RETURN(LocalKernelSpec s, transforms_internal::KernelSpecFromJson(kp[c]));
      RETURN_IF_ERROR(transforms_internal::CheckKernelSpec(s, layout.shape));
      p->specs[c] = std::move(s);
    }
    return std::unique_ptr<TransformParams>(std::move(p));
  }
  const nlohmann::json k = j.value("kernels", nlohmann::json());
  RETURN_IF_ERROR(transforms_internal::DenseKernelsFromJson(k, layout.shape, C, p->dense));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
