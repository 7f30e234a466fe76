#include "augment/transforms/ghosting/ghosting.h"

#include <cmath>

#include "augment/json_util.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/common/mri_common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

namespace {
constexpr char kW[] = "ghosting";
}  // namespace

std::vector<float> GhostingPlaneFactors(const GhostingParams& p, int64_t n) {
  const int64_t mid = n / 2;
  int64_t lo = mid, hi = mid + 1;
  if (p.restore.has_value()) {
    const auto size = static_cast<int64_t>(std::nearbyint(*p.restore * static_cast<double>(n)));  // np.round
    lo = mid - size / 2;
    hi = mid + size / 2;
  }
  std::vector<float> f(static_cast<size_t>(n), 1.0f);
  if (p.num_ghosts <= 0) return f;
  const float attenuated = static_cast<float>(1.0 - p.intensity);  // complex64 spectrum times a Python float
  for (int64_t s = 0; s < n; s += p.num_ghosts)
    if (s < lo || s >= hi) f[static_cast<size_t>(mri::Unshift(s, n))] = attenuated;
  return f;
}

const ConfigSchema<GhostingConfig>& GhostingTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<GhostingConfig>("ghosting"))
           ->AddParsed("num_ghosts", "int | [int, int]", &GhostingConfig::num_ghosts,
                       "number of ghosts drawn from randint [lo, hi]",
                       [](const nlohmann::json& v, const std::string& f) {
                         return mri::ParseRange(v, f, 0.0, std::nullopt, true);
                       })
           .AddParsed("axes", "int | int[]", &GhostingConfig::axes, "spatial axes the ghosts may run along",
                      [](const nlohmann::json& a, const std::string& f) -> absl::StatusOr<std::vector<int>> {
                        ASSIGN_OR_RETURN(auto axes, ju::AsInts(a.is_number() ? nlohmann::json::array({a}) : a, f));
                        return std::vector<int>(axes.begin(), axes.end());
                      })
           .AddParsed("intensity", "double | [double, double]", &GhostingConfig::intensity,
                      "ghost intensity drawn from U(lo, hi)",
                      [](const nlohmann::json& v, const std::string& f) {
                        return mri::ParseRange(v, f, 0.0, std::nullopt, false);
                      })
           .Custom(
               "restore", "double | [double, double] | null",
               "fraction of k-space around the centre kept (null: only the central plane)",
               [](const nlohmann::json& j, GhostingConfig& c, const std::string& w) -> absl::Status {
                 if (!j.contains("restore") || j["restore"].is_null()) return absl::OkStatus();
                 ASSIGN_OR_RETURN(c.restore, mri::ParseRange(j["restore"], w + ".restore", 0.0, 1.0, false));
                 return absl::OkStatus();
               },
               [](const GhostingConfig& c) {
                 return c.restore ? nlohmann::json({(*c.restore)[0], (*c.restore)[1]}) : nlohmann::json();
               });
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> GhostingTransform::Create(const GhostingConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const std::string w = kW;
  if (c.num_ghosts[0] < 0 || c.num_ghosts[0] > c.num_ghosts[1]) return ju::Invalid(w + ".num_ghosts", "expected 0 <= lo <= hi");
  if (c.axes.empty()) return ju::Invalid(w + ".axes", "must not be empty");
  for (int a : c.axes)
    if (a < 0 || a > 2) return ju::Invalid(w + ".axes", "axes must be in (0, 1, 2)");
  if (c.intensity[0] < 0 || c.intensity[0] > c.intensity[1]) return ju::Invalid(w + ".intensity", "expected 0 <= lo <= hi");
  if (c.restore.has_value() && ((*c.restore)[0] < 0 || (*c.restore)[1] > 1 || (*c.restore)[0] > (*c.restore)[1]))
    return ju::Invalid(w + ".restore", "expected 0 <= lo <= hi <= 1");
  return std::shared_ptr<const Transform>(new GhostingTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> GhostingTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(GhostingConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json GhostingTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> GhostingTransform::Draw(DrawContext& ctx,
                                                                         const SampleLayout& layout) const {
  std::vector<int> axes;
  for (int a : config_.axes)
    if (layout.shape.size() == 3 || a != 2) axes.push_back(a);  // TorchIO drops axis 2 for 2D images
  if (axes.empty()) return ju::Invalid(std::string(kW) + ".axes", "no axis left for a 2D sample");
  auto p = std::make_unique<GhostingParams>();
  p->num_ghosts = ctx.rng.UniformInt(static_cast<int64_t>(config_.num_ghosts[0]),
                                     static_cast<int64_t>(config_.num_ghosts[1]));
  p->axis = axes[static_cast<size_t>(ctx.rng.UniformInt(0, static_cast<int64_t>(axes.size()) - 1))];
  p->intensity = static_cast<float>(ctx.rng.Uniform(config_.intensity[0], config_.intensity[1]));
  if (config_.restore.has_value())
    p->restore = static_cast<float>(ctx.rng.Uniform((*config_.restore)[0], (*config_.restore)[1]));
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status GhostingTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const GhostingParams* p, ParamsAs<GhostingParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  ASSIGN_OR_RETURN(mri::Shape3 shape, mri::ToShape3(s.shape, kW));
  if (p->num_ghosts == 0 || p->intensity == 0) return absl::OkStatus();
  const std::vector<float> f = GhostingPlaneFactors(*p, shape[static_cast<size_t>(p->axis)]);
  const int64_t v = mri::Voxels(shape);
  for (int64_t c = 0; c < s.channels; ++c) {
    float* x = s.image.data() + c * v;
    std::vector<fft::Complex> spec = mri::Spectrum(x, shape);
    for (int64_t i = 0; i < shape[0]; ++i)
      for (int64_t j = 0; j < shape[1]; ++j)
        for (int64_t k = 0; k < shape[2]; ++k) {
          const int64_t idx[3] = {i, j, k};
          spec[static_cast<size_t>((i * shape[1] + j) * shape[2] + k)] *= f[static_cast<size_t>(idx[p->axis])];
        }
    mri::RealInverse(spec, shape, x);
  }
  return absl::OkStatus();
}

nlohmann::json GhostingTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const GhostingParams&>(params);
  nlohmann::json j = {{"num_ghosts", p.num_ghosts}, {"axis", p.axis}, {"intensity", p.intensity}, {"restore", nullptr}};
  if (p.restore.has_value()) j["restore"] = *p.restore;
  return j;
}

absl::StatusOr<std::unique_ptr<TransformParams>> GhostingTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                   const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"num_ghosts", "axis", "intensity", "restore"}, "params"));
  auto p = std::make_unique<GhostingParams>();
  ASSIGN_OR_RETURN(p->num_ghosts, ju::GetInt(j, "num_ghosts", std::nullopt, "params"));
  if (p->num_ghosts < 0) return ju::Invalid("params.num_ghosts", "must be >= 0");
  ASSIGN_OR_RETURN(int64_t axis, ju::GetInt(j, "axis", std::nullopt, "params"));
  const int64_t max_axis = layout.shape.size() == 2 ? 1 : 2;
  if (axis < 0 || axis > max_axis) return ju::Invalid("params.axis", "out of range for the sample");
  p->axis = static_cast<int>(axis);
  ASSIGN_OR_RETURN(p->intensity, ju::GetDouble(j, "intensity", std::nullopt, "params"));
  if (!std::isfinite(p->intensity)) return ju::Invalid("params.intensity", "must be finite");
  if (j.contains("restore") && !j["restore"].is_null()) {
    ASSIGN_OR_RETURN(double r, ju::GetDouble(j, "restore", std::nullopt, "params"));
    if (!(r >= 0 && r <= 1)) return ju::Invalid("params.restore", "expected 0..1 or null");
    p->restore = r;
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
