// AuglabBiasFieldTransform. The field is accumulated in float32 in AugLab's loop order; pow by repeated products
// of float32 (torch's pow for small integer exponents is exact to an ulp: parity uses a tolerance).
#include "augment/transforms/auglab_bias_field/auglab_bias_field.h"

#include <cmath>

#include "augment/json_util.h"
#include "augment/kernels/common/daext_math.h"
#include "augment/kernels/cpu_intensity.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/auglab_common.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

std::vector<float> TorchLinspace(float start, float end, int64_t n) {
  std::vector<float> v(n);
  if (n == 1) {
    v[0] = start;
    return v;
  }
  for (int64_t i = 0; i < n; ++i) v[i] = cuda::daext::LinspaceAt(start, end, n, i);
  return v;
}

int64_t AuglabBiasFieldTransform::NumCoefficients(int64_t order, int dims) {
  int64_t count = 0;
  for (int64_t a = 0; a <= order; ++a)
    for (int64_t b = 0; b <= order - a; ++b) count += dims == 3 ? order - a - b + 1 : 1;
  return count;
}

const ConfigSchema<AuglabBiasFieldConfig>& AuglabBiasFieldTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<AuglabBiasFieldConfig>("auglab_bias_field"))
           ->Custom(
               "coefficients", "double | [double, double]",
               "range of the polynomial coefficients: c means (-c, c), or [lo, hi]",
               [](const nlohmann::json& j, AuglabBiasFieldConfig& c, const std::string& w) -> absl::Status {
                 if (!j.contains("coefficients") || j["coefficients"].is_null()) return absl::OkStatus();
                 const std::string f = w + ".coefficients";
                 if (j["coefficients"].is_number()) {
                   c.hi = j["coefficients"].get<double>();
                   c.lo = -c.hi;
                   return absl::OkStatus();
                 }
                 ASSIGN_OR_RETURN(std::vector<double> v, ju::AsDoubles(j["coefficients"], f));
                 if (v.size() != 2) return ju::Invalid(f, "needs a number c or [lo, hi]");
                 c.lo = v[0];
                 c.hi = v[1];
                 return absl::OkStatus();
               },
               [](const AuglabBiasFieldConfig& c) { return nlohmann::json{c.lo, c.hi}; })
           .Add("order", &AuglabBiasFieldConfig::order, "largest total degree of the polynomial's monomials",
                InRange(0, 10))
           .Add("invert", &AuglabBiasFieldConfig::invert, "multiply by 1 / field instead of the field")
           .Add("retain_stats", &AuglabBiasFieldConfig::retain_stats,
                "restore the channel's mean and std afterwards")
           .Custom(
               "apply_to_channel", "int[]", "channels the transform applies to (AugLab's default [0])",
               [](const nlohmann::json& j, AuglabBiasFieldConfig& c, const std::string& w) -> absl::Status {
                 ASSIGN_OR_RETURN(c.apply_to_channel, auglab_internal::ChannelsFromConfig(j, w));
                 return absl::OkStatus();
               },
               [](const AuglabBiasFieldConfig& c) { return nlohmann::json(c.apply_to_channel); });
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> AuglabBiasFieldTransform::Create(const AuglabBiasFieldConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  if (!(std::isfinite(c.lo) && std::isfinite(c.hi) && c.lo <= c.hi))
    return ju::Invalid("auglab_bias_field.coefficients", "needs finite lo <= hi");
  for (int64_t ch : c.apply_to_channel)
    if (ch < 0) return ju::Invalid("auglab_bias_field.apply_to_channel", "channel indices must be >= 0");
  return std::shared_ptr<const Transform>(new AuglabBiasFieldTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> AuglabBiasFieldTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(AuglabBiasFieldConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json AuglabBiasFieldTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> AuglabBiasFieldTransform::Draw(DrawContext& ctx,
                                                                                const SampleLayout& layout) const {
  if (layout.shape.size() != 2 && layout.shape.size() != 3)
    return ju::Invalid("auglab_bias_field", "needs 2D or 3D samples");
  RETURN_IF_ERROR(auglab_internal::CheckChannels(config_.apply_to_channel, layout.channels, "auglab_bias_field"));
  auto p = std::make_unique<AuglabBiasFieldParams>();
  const float lo = static_cast<float>(config_.lo), hi = static_cast<float>(config_.hi);
  const int64_t n = NumCoefficients(config_.order, static_cast<int>(layout.shape.size()));
  for (int64_t k = 0; k < n; ++k) p->coefficients.push_back(lo + static_cast<float>(ctx.rng.Uniform()) * (hi - lo));
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status AuglabBiasFieldTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const AuglabBiasFieldParams* p, ParamsAs<AuglabBiasFieldParams>(params, "auglab_bias_field"));
  RETURN_IF_ERROR(RequireImage(s, "auglab_bias_field"));
  const int dims = static_cast<int>(s.shape.size());
  if (dims != 2 && dims != 3) return ju::Invalid("auglab_bias_field", "needs 2D or 3D samples");
  if (static_cast<int64_t>(p->coefficients.size()) != NumCoefficients(config_.order, dims))
    return ju::Invalid("params.coefficients", "needs one value per monomial of degree <= order");
  const int64_t n = s.voxels(), order = config_.order;
  // Axis grids (3D: z = axis 0, y = axis 1, x = axis 2; 2D: y = axis 0, x = axis 1).
  const int64_t sz = dims == 3 ? s.shape[0] : 1, sy = s.shape[dims - 2], sx = s.shape[dims - 1];
  const std::vector<float> zs = TorchLinspace(-1, 1, sz), ys = TorchLinspace(-1, 1, sy), xs = TorchLinspace(-1, 1, sx);
  // Per voxel the shared math of the CUDA stage (daext_math.h): AugLab's loop order, term = x_term · y_term · z_term
  // (a missing factor is the Python float 1.0), then exp (and 1 / (field + 1e-8) with invert).
  std::vector<float> bias(n);
  for (int64_t a = 0; a < sz; ++a)
    for (int64_t b = 0; b < sy; ++b)
      for (int64_t e = 0; e < sx; ++e)
        bias[(a * sy + b) * sx + e] = cuda::daext::BiasField(
            cuda::daext::BiasExponent(p->coefficients.data(), order, dims == 3, xs[e], ys[b], zs[a]), config_.invert);
  std::vector<float> out(n);
  for (int64_t ch : config_.apply_to_channel) {
    if (ch >= s.channels) continue;  // AugLab skips invalid channels
    float* x = s.image.data() + ch * n;
    const kernels::ChannelStats before = kernels::ComputeStats(x, n, config_.retain_stats);
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * bias[i];
    if (config_.retain_stats) auglab_internal::RetainStats(out.data(), n, before);
    bool finite = true;
    for (int64_t i = 0; i < n && finite; ++i) finite = std::isfinite(out[i]);
    if (finite) std::copy(out.begin(), out.end(), x);
  }
  return absl::OkStatus();
}

nlohmann::json AuglabBiasFieldTransform::ParamsToJson(const TransformParams& params) const {
  return {{"coefficients", static_cast<const AuglabBiasFieldParams&>(params).coefficients}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> AuglabBiasFieldTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"coefficients"}, "params"));
  if (!j.contains("coefficients")) return ju::Invalid("params.coefficients", "required");
  ASSIGN_OR_RETURN(std::vector<double> v, ju::AsDoubles(j["coefficients"], "params.coefficients"));
  const int dims = static_cast<int>(layout.shape.size());
  if ((dims == 2 || dims == 3) && static_cast<int64_t>(v.size()) != NumCoefficients(config_.order, dims))
    return ju::Invalid("params.coefficients", "needs one value per monomial of degree <= order");
  auto p = std::make_unique<AuglabBiasFieldParams>();
  for (double d : v) {
    if (!std::isfinite(d)) return ju::Invalid("params.coefficients", "must be finite");
    p->coefficients.push_back(static_cast<float>(d));
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
