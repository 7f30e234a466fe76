#include "augment/transforms/torchio_affine/torchio_affine.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

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
constexpr char kW[] = "torchio_affine";
constexpr double kPi = 3.14159265358979323846;

// TorchIO's parse_params(make_ranges=True) with `around` (1 for scales, 0 otherwise).
absl::StatusOr<std::array<double, 6>> Sextet(const nlohmann::json& v, double around, const std::string& field) {
  std::vector<double> x;
  if (v.is_number()) {
    x = {v.get<double>()};
  } else {
    ASSIGN_OR_RETURN(x, ju::AsDoubles(v, field));
  }
  for (double d : x)
    if (!std::isfinite(d)) return ju::Invalid(field, "must be finite");
  if (x.size() == 1 || x.size() == 2) {
    const std::vector<double> one = x;
    for (int r = 1; r < 3; ++r) x.insert(x.end(), one.begin(), one.end());
  }
  if (x.size() == 3) {
    std::vector<double> ranges;
    for (double d : x) {
      if (d < 0) return ju::Invalid(field, "a single value per axis must be >= 0");
      ranges.push_back(around - d);
      ranges.push_back(around + d);
    }
    x = ranges;
  }
  if (x.size() != 6) return ju::Invalid(field, "expected 1, 2, 3 or 6 values");
  std::array<double, 6> r;
  for (size_t i = 0; i < 6; i += 2) {
    if (x[i] > x[i + 1]) return ju::Invalid(field, "each range needs lo <= hi");
    r[i] = x[i];
    r[i + 1] = x[i + 1];
  }
  return r;
}

absl::StatusOr<std::array<double, 3>> Triple(const nlohmann::json& j, const char* key) {
  const std::string field = std::string("params.") + key;
  if (!j.contains(key)) return ju::Invalid(field, "required (3 values)");
  ASSIGN_OR_RETURN(auto v, ju::AsDoubles(j[key], field));
  if (v.size() != 3) return ju::Invalid(field, "expected 3 values");
  for (double d : v)
    if (!std::isfinite(d)) return ju::Invalid(field, "must be finite");
  return std::array<double, 3>{v[0], v[1], v[2]};
}

}  // namespace

sitk::IndexAffine TorchioAffineIndexMap(const TorchioAffineParams& p, const std::array<int64_t, 3>& shape,
                                        bool center_image, bool is_2d) {
  std::array<double, 3> s = p.scales, deg = p.degrees;
  if (is_2d) {
    s[2] = 1;
    deg[0] = deg[1] = 0;
  }
  // ITK Euler3DTransform (ComputeZYX off) of the LPS angles: R = Rz · Rx · Ry.
  const double rx = -deg[0] * kPi / 180.0, ry = -deg[1] * kPi / 180.0, rz = deg[2] * kPi / 180.0;
  const double cx = std::cos(rx), sx = std::sin(rx), cy = std::cos(ry), sy = std::sin(ry);
  const double cz = std::cos(rz), sz = std::sin(rz);
  const double r[9] = {cz * cy - sz * sx * sy, -sz * cx, cz * sy + sz * sx * cy,
                       sz * cy + cz * sx * sy, cz * cx,  sz * sy - cz * sx * cy,
                       -cx * sy,               sx,       cx * cy};
  const double d[3] = {-1, -1, 1};
  std::array<double, 3> c{0, 0, 0};
  if (center_image)
    for (size_t a = 0; a < 3; ++a) c[a] = (shape[a] - 1) / 2.0;
  // ci = M·diag(1/s)·i + (c − M·(diag(1/s)·c + t)),  M[a][b] = d_a · R[b][a] · d_b.
  sitk::IndexAffine out;
  for (size_t a = 0; a < 3; ++a) {
    double off = c[a];
    for (size_t b = 0; b < 3; ++b) {
      const double m = d[a] * r[b * 3 + a] * d[b];
      out.m[a * 3 + b] = m / s[b];
      off -= m * (c[b] / s[b] + p.translation[b]);
    }
    out.b[a] = off;
  }
  return out;
}

namespace {
// A two-word string field ("image" / "origin", "linear" / "nearest"; absent: `yes`), stored as `member` = (v == yes).
template <bool TorchioAffineConfig::*member>
ConfigSchema<TorchioAffineConfig>& AddChoice(ConfigSchema<TorchioAffineConfig>& s, const char* name, const char* yes,
                                              const char* no, const char* doc, const char* error) {
  return s.Custom(
      name, "string", doc,
      [=](const nlohmann::json& j, TorchioAffineConfig& c, const std::string& w) -> absl::Status {
        ASSIGN_OR_RETURN(const std::string v, ju::GetString(j, name, yes, w));
        if (v != yes && v != no) return ju::Invalid(w + "." + name, error);
        c.*member = v == yes;
        return absl::OkStatus();
      },
      [=](const TorchioAffineConfig& c) { return nlohmann::json(c.*member ? yes : no); });
}
}  // namespace

const ConfigSchema<TorchioAffineConfig>& TorchioAffineTransform::Schema() {
  static const auto* const s = [] {
    auto* s = new ConfigSchema<TorchioAffineConfig>("torchio_affine");
    s->AddParsed("scales", "double | double[2|3|6]", &TorchioAffineConfig::scales,
                 "scale ranges (TorchIO parse_params around 1), each within (0, 100]",
                 [](const nlohmann::json& v, const std::string& f) { return Sextet(v, 1, f); })
        .AddParsed("degrees", "double | double[2|3|6]", &TorchioAffineConfig::degrees,
                   "rotation ranges in degrees (around 0), |values| <= 10000",
                   [](const nlohmann::json& v, const std::string& f) { return Sextet(v, 0, f); })
        .AddParsed("translation", "double | double[2|3|6]", &TorchioAffineConfig::translation,
                   "translation ranges in voxels (around 0), |values| <= 1e6",
                   [](const nlohmann::json& v, const std::string& f) { return Sextet(v, 0, f); })
        .Add("isotropic", &TorchioAffineConfig::isotropic, "one scale drawn for all axes");
    AddChoice<&TorchioAffineConfig::center_image>(*s, "center", "image", "origin",
                                                  "rotation centre: \"image\" (its centre) or \"origin\"",
                                                  "must be \"image\" or \"origin\"");
    s->Custom(
        "default_pad_value", "\"minimum\" | double", "image fill outside the input (\"minimum\": the image's minimum)",
        [](const nlohmann::json& j, TorchioAffineConfig& c, const std::string& w) -> absl::Status {
          if (!j.contains("default_pad_value") || j["default_pad_value"].is_null()) return absl::OkStatus();
          const auto& v = j["default_pad_value"];
          if (v.is_number()) {
            c.pad_value = v.get<double>();
          } else if (!(v.is_string() && v.get<std::string>() == "minimum")) {
            return ju::Invalid(w + ".default_pad_value", "supported: \"minimum\" or a number");
          }
          return absl::OkStatus();
        },
        [](const TorchioAffineConfig& c) {
          return c.pad_value ? nlohmann::json(*c.pad_value) : nlohmann::json("minimum");
        });
    s->Add("default_pad_label", &TorchioAffineConfig::pad_label, "label fill outside the input (an int16 label)");
    AddChoice<&TorchioAffineConfig::linear>(*s, "image_interpolation", "linear", "nearest",
                                            "image interpolation: \"linear\" or \"nearest\"",
                                            "supported: \"linear\", \"nearest\"");
    s->Custom(
        "label_interpolation", "string", "label interpolation: only \"nearest\"",
        [](const nlohmann::json& j, TorchioAffineConfig&, const std::string& w) -> absl::Status {
          ASSIGN_OR_RETURN(const std::string v, ju::GetString(j, "label_interpolation", "nearest", w));
          if (v != "nearest") return ju::Invalid(w + ".label_interpolation", "supported: \"nearest\"");
          return absl::OkStatus();
        },
        [](const TorchioAffineConfig&) { return nlohmann::json("nearest"); });
    return s;
  }();
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> TorchioAffineTransform::Create(const TorchioAffineConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  for (size_t i = 0; i < 6; i += 2) {
    if (!(c.scales[i] > 0) || !(c.scales[i] <= c.scales[i + 1]) || !(c.scales[i + 1] <= 100))
      return ju::Invalid("torchio_affine.scales", "each range must satisfy 0 < lo <= hi <= 100");
    if (!(c.degrees[i] <= c.degrees[i + 1]) || std::abs(c.degrees[i]) > 1e4 || std::abs(c.degrees[i + 1]) > 1e4)
      return ju::Invalid("torchio_affine.degrees", "each range needs lo <= hi, |values| <= 10000");
    if (!(c.translation[i] <= c.translation[i + 1]) || std::abs(c.translation[i]) > 1e6 ||
        std::abs(c.translation[i + 1]) > 1e6)
      return ju::Invalid("torchio_affine.translation", "each range needs lo <= hi, |values| <= 1e6");
  }
  if (c.isotropic && (c.scales[0] != c.scales[2] || c.scales[0] != c.scales[4] || c.scales[1] != c.scales[3] ||
                      c.scales[1] != c.scales[5]))
    return ju::Invalid("torchio_affine.scales", "isotropic needs one range for all axes");
  if (c.pad_value.has_value() && !std::isfinite(*c.pad_value))
    return ju::Invalid("torchio_affine.default_pad_value", "must be finite");
  if (!std::isfinite(c.pad_label) || c.pad_label != std::floor(c.pad_label) || std::abs(c.pad_label) > 32767)
    return ju::Invalid("torchio_affine.default_pad_label", "must be an int16 label");
  return std::shared_ptr<const Transform>(new TorchioAffineTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> TorchioAffineTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(TorchioAffineConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json TorchioAffineTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> TorchioAffineTransform::Draw(DrawContext& ctx,
                                                                              const SampleLayout&) const {
  auto p = std::make_unique<TorchioAffineParams>();
  for (size_t a = 0; a < 3; ++a) p->scales[a] = ctx.rng.Uniform(config_.scales[2 * a], config_.scales[2 * a + 1]);
  if (config_.isotropic) p->scales[1] = p->scales[2] = p->scales[0];
  for (size_t a = 0; a < 3; ++a)
    p->degrees[a] = ctx.rng.Uniform(config_.degrees[2 * a], config_.degrees[2 * a + 1]);
  for (size_t a = 0; a < 3; ++a)
    p->translation[a] = ctx.rng.Uniform(config_.translation[2 * a], config_.translation[2 * a + 1]);
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status TorchioAffineTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const TorchioAffineParams* p, ParamsAs<TorchioAffineParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  ASSIGN_OR_RETURN(const mri::Shape3 s3, mri::ToShape3(s.shape, kW));
  for (double v : p->scales)
    if (!(v > 0) || !(v <= 100)) return ju::Invalid("params.scales", "must be in (0, 100]");
  s.Materialize();
  const sitk::IndexAffine a = TorchioAffineIndexMap(*p, s3, config_.center_image, s.shape.size() == 2);
  const int64_t n = mri::Voxels(s3);
  for (int64_t c = 0; c < s.channels; ++c) {
    float* x = s.image.data() + c * n;
    const std::vector<float> in(x, x + n);
    const float fill =
        config_.pad_value.has_value() ? static_cast<float>(*config_.pad_value) : *std::min_element(in.begin(), in.end());
    sitk::Resample(in.data(), s3, a, config_.linear ? sitk::Interpolation::kLinear : sitk::Interpolation::kNearest,
                   fill, x, s3);
  }
  for (int64_t c = 0; c < s.seg_channels && !s.seg.empty(); ++c) {
    int16_t* x = s.seg.data() + c * n;
    const std::vector<int16_t> in(x, x + n);
    sitk::Resample(in.data(), s3, a, sitk::Interpolation::kNearest, static_cast<int16_t>(config_.pad_label), x, s3);
  }
  return absl::OkStatus();
}

nlohmann::json TorchioAffineTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const TorchioAffineParams&>(params);
  return {{"scales", p.scales}, {"degrees", p.degrees}, {"translation", p.translation}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> TorchioAffineTransform::ParamsFromJson(
    const nlohmann::json& j, const SampleLayout&) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"scales", "degrees", "translation"}, "params"));
  auto p = std::make_unique<TorchioAffineParams>();
  ASSIGN_OR_RETURN(p->scales, Triple(j, "scales"));
  ASSIGN_OR_RETURN(p->degrees, Triple(j, "degrees"));
  ASSIGN_OR_RETURN(p->translation, Triple(j, "translation"));
  for (double v : p->scales)
    if (!(v > 0) || !(v <= 100)) return ju::Invalid("params.scales", "must be in (0, 100]");
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
