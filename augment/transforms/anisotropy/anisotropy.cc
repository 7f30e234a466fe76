#include "augment/transforms/anisotropy/anisotropy.h"

#include <algorithm>
#include <cmath>

#include "augment/json_util.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/common/mri_common.h"
#include "augment/transforms/common/sitk_resample.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;
using transforms_internal::RequireImage;

namespace anisotropy_internal {
DownUpMaps MapsOf(const std::array<int64_t, 3>& s, int64_t axis, double m) {
  const size_t a = static_cast<size_t>(axis);
  const int64_t n = s[a];
  const int64_t nd = n == 1 ? 1 : std::max<int64_t>(1, static_cast<int64_t>(std::floor(static_cast<double>(n) / m)));
  const double c = (n - 1) / 2.0;
  const double origin = c - (nd - 1) / 2.0 * m;  // input index of the downsampled voxel 0
  DownUpMaps maps;
  maps.low_shape = s;
  maps.low_shape[a] = nd;
  maps.down.m[a * 4] = m;
  maps.down.b[a] = origin;
  maps.up.m[a * 4] = 1.0 / m;
  maps.up.b[a] = -origin / m;
  return maps;
}
}  // namespace anisotropy_internal

namespace {
constexpr char kW[] = "anisotropy";

// Down (nearest) then up (`interp`) along `axis` of every channel of `x`, in place.
template <typename T>
void DownUp(T* x, int64_t channels, const mri::Shape3& s, int64_t axis, double m, sitk::Interpolation interp) {
  const anisotropy_internal::DownUpMaps maps = anisotropy_internal::MapsOf(s, axis, m);
  const mri::Shape3& ds = maps.low_shape;
  const int64_t v = s[0] * s[1] * s[2];
  std::vector<T> low(static_cast<size_t>(ds[0] * ds[1] * ds[2]));
  for (int64_t ch = 0; ch < channels; ++ch) {
    T* xc = x + ch * v;
    const std::vector<T> in(xc, xc + v);
    sitk::Resample(in.data(), s, maps.down, sitk::Interpolation::kNearest, T(0), low.data(), ds);
    sitk::Resample(low.data(), ds, maps.up, interp, T(0), xc, s);
  }
}
}  // namespace

const ConfigSchema<AnisotropyConfig>& AnisotropyTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<AnisotropyConfig>("anisotropy"))
           ->AddParsed("axes", "int | int[]", &AnisotropyConfig::axes,
                       "spatial axes (0, 1, 2) one of which is downsampled per sample",
                       [](const nlohmann::json& v, const std::string& f) -> absl::StatusOr<std::vector<int64_t>> {
                         if (v.is_number_integer()) return std::vector<int64_t>{v.get<int64_t>()};
                         return ju::AsInts(v, f);
                       })
           .AddParsed("downsampling", "double | [double] | [double, double]", &AnisotropyConfig::downsampling,
                      "downsampling factor drawn from U(lo, hi), 1 <= lo <= hi <= 10000",
                      [](const nlohmann::json& d, const std::string& f) {
                        // a number, [d] (the proto's repeated field) or [lo, hi]
                        return mri::ParseRange(d.is_array() && d.size() == 1 ? d[0] : d, f, 1.0, std::nullopt, false);
                      })
           .Custom(
               "image_interpolation", "string", "upsampling interpolation of the image: \"linear\" or \"nearest\"",
               [](const nlohmann::json& j, AnisotropyConfig& c, const std::string& w) -> absl::Status {
                 ASSIGN_OR_RETURN(const std::string interp, ju::GetString(j, "image_interpolation", "linear", w));
                 if (interp != "linear" && interp != "nearest")
                   return ju::Invalid(w + ".image_interpolation", "supported: \"linear\", \"nearest\"");
                 c.linear = interp == "linear";
                 return absl::OkStatus();
               },
               [](const AnisotropyConfig& c) { return nlohmann::json(c.linear ? "linear" : "nearest"); })
           .Add("scalars_only", &AnisotropyConfig::scalars_only, "leave the labels untouched (TorchIO's default)");
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> AnisotropyTransform::Create(const AnisotropyConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  if (c.axes.empty()) return ju::Invalid("anisotropy.axes", "needs at least one axis");
  for (int64_t a : c.axes)
    if (a < 0 || a > 2) return ju::Invalid("anisotropy.axes", "all axes must be 0, 1 or 2");
  if (!(c.downsampling[0] >= 1) || !(c.downsampling[1] >= c.downsampling[0]) || !(c.downsampling[1] <= 1e4))
    return ju::Invalid("anisotropy.downsampling", "expected 1 <= lo <= hi <= 10000");
  return std::shared_ptr<const Transform>(new AnisotropyTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> AnisotropyTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(AnisotropyConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json AnisotropyTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> AnisotropyTransform::Draw(DrawContext& ctx,
                                                                           const SampleLayout& layout) const {
  std::vector<int64_t> axes = config_.axes;
  if (layout.shape.size() == 2) axes.erase(std::remove(axes.begin(), axes.end(), 2), axes.end());
  if (axes.empty()) return ju::Invalid("anisotropy.axes", "only axis 2, which a 2D sample does not have");
  auto p = std::make_unique<AnisotropyParams>();
  p->axis = axes[static_cast<size_t>(ctx.rng.UniformInt(0, static_cast<int64_t>(axes.size()) - 1))];
  p->downsampling = ctx.rng.Uniform(config_.downsampling[0], config_.downsampling[1]);
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status AnisotropyTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const AnisotropyParams* p, ParamsAs<AnisotropyParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  ASSIGN_OR_RETURN(const mri::Shape3 s3, mri::ToShape3(s.shape, kW));
  if (p->axis < 0 || p->axis >= static_cast<int64_t>(s.shape.size()))
    return ju::Invalid("params.axis", "not a spatial axis of the sample");
  if (!(p->downsampling >= 1) || !(p->downsampling <= 1e4))
    return ju::Invalid("params.downsampling", "must be in [1, 10000]");
  s.Materialize();
  DownUp(s.image.data(), s.channels, s3, p->axis, p->downsampling,
         config_.linear ? sitk::Interpolation::kLinear : sitk::Interpolation::kNearest);
  if (!config_.scalars_only && !s.seg.empty())
    DownUp(s.seg.data(), s.seg_channels, s3, p->axis, p->downsampling, sitk::Interpolation::kNearest);
  return absl::OkStatus();
}

nlohmann::json AnisotropyTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const AnisotropyParams&>(params);
  return {{"axis", p.axis}, {"downsampling", p.downsampling}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> AnisotropyTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout& layout) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"axis", "downsampling"}, "params"));
  auto p = std::make_unique<AnisotropyParams>();
  ASSIGN_OR_RETURN(p->axis, ju::GetInt(j, "axis", std::nullopt, "params"));
  ASSIGN_OR_RETURN(p->downsampling, ju::GetDouble(j, "downsampling", std::nullopt, "params"));
  if (p->axis < 0 || p->axis >= static_cast<int64_t>(layout.shape.size()))
    return ju::Invalid("params.axis", "not a spatial axis of the sample");
  if (!(p->downsampling >= 1) || !(p->downsampling <= 1e4))
    return ju::Invalid("params.downsampling", "must be in [1, 10000]");
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
