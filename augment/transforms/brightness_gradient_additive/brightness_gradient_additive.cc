#include "augment/transforms/brightness_gradient_additive/brightness_gradient_additive.h"

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
constexpr char kW[] = "brightness_gradient_additive";

int64_t Voxels(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// The normalised bump, mean-centred if asked; returns max|K| (float32, as numpy).
float CenteredKernel(const std::vector<int64_t>& shape, const LocalKernelSpec& s, bool mean_centered,
                     std::vector<float>& k) {
  const int64_t n = Voxels(shape);
  k.resize(static_cast<size_t>(n));
  LocalGaussianKernel(shape, s.loc_px, s.scale, k.data());
  if (mean_centered) {
    double sum = 0;
    for (float v : k) sum += v;
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    for (float& v : k) v -= mean;
  }
  float m = 0;
  for (float v : k) m = std::max(m, std::fabs(v));
  return m;
}

// K / max|K| · strength in float32 (numpy: kernel /= max_abs; kernel *= strength).
void Scale(std::vector<float>& k, float max_abs, double strength) {
  const float s = static_cast<float>(strength);
  for (float& v : k) v = (v / max_abs) * s;
}
}  // namespace

const ConfigSchema<BrightnessGradientAdditiveConfig>& BrightnessGradientAdditiveTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<BrightnessGradientAdditiveConfig>("brightness_gradient_additive"))
           ->Add("scale", &BrightnessGradientAdditiveConfig::scale, "Gaussian bump width in voxels, per axis",
                 Required())
           .Add("loc", &BrightnessGradientAdditiveConfig::loc, "bump centre as a fraction of the axis size, per axis")
           .Add("max_strength", &BrightnessGradientAdditiveConfig::max_strength,
                "peak of the additive gradient (after normalising the bump to max 1)")
           .Add("same_for_all_channels", &BrightnessGradientAdditiveConfig::same_for_all_channels,
                "one bump and strength for all channels")
           .Add("mean_centered", &BrightnessGradientAdditiveConfig::mean_centered,
                "subtract the bump's mean before adding it")
           .Add("clip_intensities", &BrightnessGradientAdditiveConfig::clip_intensities,
                "clip to the sample's old [min, max]")
           .Add("p_per_channel", &BrightnessGradientAdditiveConfig::p_per_channel,
                "probability that a channel is selected", Probability());
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> BrightnessGradientAdditiveTransform::Create(
    const BrightnessGradientAdditiveConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const std::string w = kW;
  RETURN_IF_ERROR(transforms_internal::ValidateLocalArgs(c.scale, c.loc, c.max_strength, w, "max_strength"));
  return std::shared_ptr<const Transform>(new BrightnessGradientAdditiveTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> BrightnessGradientAdditiveTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(BrightnessGradientAdditiveConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json BrightnessGradientAdditiveTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> BrightnessGradientAdditiveTransform::Draw(
    DrawContext& ctx, const SampleLayout& layout) const {
  const int64_t C = layout.channels;
  auto p = std::make_unique<BrightnessGradientAdditiveParams>();
  p->specs.resize(C);
  p->dense.resize(C);
  std::vector<bool> apply(C);
  bool any = false;
  for (int64_t c = 0; c < C; ++c) any |= (apply[c] = ctx.rng.Uniform() < config_.p_per_channel);
  if (!any) return std::unique_ptr<TransformParams>(std::move(p));
  const std::string ms = std::string(kW) + ".max_strength";
  // One kernel (+ its strength); returns false for bgv2's early outs (degenerate kernel, zero strength). The
  // kernel is built here (mean_centered only) for the max|K| test and rebuilt (same bits) in Apply: params stay
  // small, since the engine keeps every sample's params until the batch is returned.
  std::vector<float> k;
  auto one = [&](LocalKernelSpec& spec) -> absl::StatusOr<bool> {
    ASSIGN_OR_RETURN(spec, transforms_internal::DrawKernelSpec(ctx.rng, config_.loc, config_.scale, layout.shape, kW));
    // Without centring max|K| needs no volume (≈ 7 ms per 128³ sample-channel saved in the draw).
    const float m = config_.mean_centered ? CenteredKernel(layout.shape, spec, true, k)
                                          : transforms_internal::LocalGaussianKernelMax(layout.shape, spec.loc_px,
                                                                                        spec.scale);
    if (!(static_cast<double>(m) >= 1e-8)) return false;
    ASSIGN_OR_RETURN(spec.factor, config_.max_strength.Sample(ctx.rng, 0, ms));
    return spec.factor != 0.0;
  };
  if (config_.same_for_all_channels) {
    LocalKernelSpec spec;
    ASSIGN_OR_RETURN(bool ok, one(spec));
    if (!ok) return std::unique_ptr<TransformParams>(std::move(p));
    for (int64_t c = 0; c < C; ++c)
      if (apply[c]) p->specs[c] = spec;
  } else {
    for (int64_t c = 0; c < C; ++c) {
      if (!apply[c]) continue;
      LocalKernelSpec spec;
      ASSIGN_OR_RETURN(bool ok, one(spec));
      if (ok) p->specs[c] = spec;
    }
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status BrightnessGradientAdditiveTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const BrightnessGradientAdditiveParams* p, ParamsAs<BrightnessGradientAdditiveParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  const int64_t n = s.voxels();
  float lo = 0, hi = 0;
  if (config_.clip_intensities) {
    const auto [a, b] = std::minmax_element(s.image.begin(), s.image.end());
    lo = *a;
    hi = *b;
  }
  std::vector<float> tmp;
  for (int64_t c = 0; c < s.channels && c < static_cast<int64_t>(p->specs.size()); ++c) {
    const std::vector<float>* k = p->dense[c].get();
    if (k == nullptr) {
      if (!p->specs[c]) continue;
      if (p->specs[c]->loc_px.size() != s.shape.size()) return ju::Invalid("params.kernel_params", "one loc per axis");
      const float m = CenteredKernel(s.shape, *p->specs[c], config_.mean_centered, tmp);
      if (!(static_cast<double>(m) >= 1e-8)) continue;
      Scale(tmp, m, p->specs[c]->factor);
      k = &tmp;
    }
    if (static_cast<int64_t>(k->size()) != n) return ju::Invalid("params.kernels", "kernel shape != image shape");
    float* x = s.image.data() + c * n;
    for (int64_t i = 0; i < n; ++i) x[i] += (*k)[i];
  }
  if (config_.clip_intensities)
    for (float& v : s.image) v = std::min(std::max(v, lo), hi);
  return absl::OkStatus();
}

nlohmann::json BrightnessGradientAdditiveTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const BrightnessGradientAdditiveParams&>(params);
  nlohmann::json k = nlohmann::json::array();
  for (const auto& s : p.specs) {
    if (!s) {
      k.push_back(nullptr);
    } else {
      k.push_back({{"loc", s->loc_px}, {"scale", s->scale}, {"strength", s->factor}});
    }
  }
  return {{"kernel_params", k}};
}


absl::StatusOr<std::unique_ptr<TransformParams>> BrightnessGradientAdditiveTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"kernels", "kernel_params"}, "params"));
  const int64_t C = layout.channels;
  auto p = std::make_unique<BrightnessGradientAdditiveParams>();
  p->specs.resize(C);
  p->dense.resize(C);
  if (j.contains("kernel_params")) {
    const auto& kp = j["kernel_params"];
    if (!kp.is_array() || static_cast<int64_t>(kp.size()) != C)
      return ju::Invalid("params.kernel_params", absl::StrCat("needs ", C, " entries (one per channel)"));
    for (int64_t c = 0; c < C; ++c) {
      if (kp[c].is_null()) continue;
      if (!kp[c].is_object()) return ju::Invalid("params.kernel_params", "expected {loc, scale, strength} or null");
      ASSIGN_OR_RETURN(LocalKernelSpec s, transforms_internal::KernelSpecFromJson(kp[c]));
      ASSIGN_OR_RETURN(s.factor, ju::GetDouble(kp[c], "strength", std::nullopt, "params.kernel_params"));
      RETURN_IF_ERROR(transforms_internal::CheckKernelSpec(s, layout.shape));
      p->specs[c] = std::move(s);
    }
    return std::unique_ptr<TransformParams>(std::move(p));
  }
  const nlohmann::json k = j.value("kernels", nlohmann::json());
  if (k.is_null()) return std::unique_ptr<TransformParams>(std::move(p));
  RETURN_IF_ERROR(transforms_internal::DenseKernelsFromJson(k, layout.shape, C, p->dense));
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
