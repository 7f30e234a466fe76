#include "augment/transforms/motion/motion.h"

#include <algorithm>
#include <cmath>
#include <utility>

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
constexpr char kW[] = "motion";
constexpr int kMaxTransforms = 16;
constexpr double kPi = 3.14159265358979323846;

absl::StatusOr<std::vector<std::array<double, 3>>> Triplets(const nlohmann::json& j, const std::string& key) {
  const std::string field = "params." + key;
  if (!j.contains(key) || !j[key].is_array()) return ju::Invalid(field, "expected [[x, y, z], ...]");
  std::vector<std::array<double, 3>> out;
  for (const auto& row : j[key]) {
    ASSIGN_OR_RETURN(auto v, ju::AsDoubles(row, field));
    if (v.size() != 3) return ju::Invalid(field, "each entry needs 3 values");
    for (double x : v)
      if (!std::isfinite(x)) return ju::Invalid(field, "must be finite");
    out.push_back({v[0], v[1], v[2]});
  }
  return out;
}
}  // namespace

MotionAffine MotionIndexAffine(const std::array<double, 3>& degrees, const std::array<double, 3>& translation) {
  const double rx = degrees[0] * kPi / 180.0, ry = degrees[1] * kPi / 180.0, rz = degrees[2] * kPi / 180.0;
  const double cx = std::cos(rx), sx = std::sin(rx), cy = std::cos(ry), sy = std::sin(ry);
  const double cz = std::cos(rz), sz = std::sin(rz);
  // ITK Euler3DTransform (ComputeZYX off): R = Rz · Rx · Ry.
  const double r[9] = {cz * cy - sz * sx * sy, -sz * cx, cz * sy + sz * sx * cy,
                       sz * cy + cz * sx * sy, cz * cx,  sz * sy - cz * sx * cy,
                       -cx * sy,               sx,       cx * cy};
  const double d[3] = {-1, -1, 1};
  MotionAffine a;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) a.m[i * 3 + j] = d[i] * r[i * 3 + j] * d[j];
    a.b[i] = d[i] * translation[static_cast<size_t>(i)];
  }
  return a;
}

std::vector<MotionSegment> MotionSegments(const MotionParams& p, int64_t last) {
  const int n = static_cast<int>(p.times.size());
  std::vector<int> slot_image(static_cast<size_t>(n + 1));
  for (int i = 0; i <= n; ++i) slot_image[static_cast<size_t>(i)] = i;
  int index = n;
  for (int i = 0; i < n; ++i)
    if (p.times[static_cast<size_t>(i)] > 0.5f) {
      index = i;
      break;
    }
  std::swap(slot_image[0], slot_image[static_cast<size_t>(index)]);
  std::vector<MotionSegment> seg;
  int64_t ini = 0;
  for (int j = 0; j <= n; ++j) {
    int64_t fin = last;
    if (j < n) fin = static_cast<int64_t>(static_cast<float>(last) * p.times[static_cast<size_t>(j)]);
    fin = std::clamp<int64_t>(fin, 0, last);
    seg.push_back({slot_image[static_cast<size_t>(j)], ini, std::max(ini, fin)});
    ini = std::max(ini, fin);
  }
  return seg;
}

void MotionResample(const float* in, const std::array<int64_t, 3>& s, const MotionAffine& a, float fill, float* out) {
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k) {
        const double p[3] = {static_cast<double>(i), static_cast<double>(j), static_cast<double>(k)};
        double ci[3];
        bool inside = true;
        for (int r = 0; r < 3; ++r) {
          ci[r] = a.m[r * 3] * p[0] + a.m[r * 3 + 1] * p[1] + a.m[r * 3 + 2] * p[2] + a.b[r];
          inside = inside && ci[r] >= -0.5 && ci[r] < static_cast<double>(s[static_cast<size_t>(r)]) - 0.5;
        }
        float& o = out[(i * s[1] + j) * s[2] + k];
        if (!inside) {
          o = fill;
          continue;
        }
        int64_t lo[3], hi[3];
        double w[3];
        for (int r = 0; r < 3; ++r) {
          const double f = std::floor(ci[r]);
          w[r] = ci[r] - f;
          const int64_t n = s[static_cast<size_t>(r)];
          lo[r] = std::clamp<int64_t>(static_cast<int64_t>(f), 0, n - 1);
          hi[r] = std::clamp<int64_t>(static_cast<int64_t>(f) + 1, 0, n - 1);
        }
        double v = 0;
        for (int c = 0; c < 8; ++c) {
          const int64_t x = (c & 4) ? hi[0] : lo[0], y = (c & 2) ? hi[1] : lo[1], z = (c & 1) ? hi[2] : lo[2];
          const double wt = ((c & 4) ? w[0] : 1 - w[0]) * ((c & 2) ? w[1] : 1 - w[1]) * ((c & 1) ? w[2] : 1 - w[2]);
          v += wt * static_cast<double>(in[(x * s[1] + y) * s[2] + z]);
        }
        o = static_cast<float>(v);
      }
}

const ConfigSchema<MotionConfig>& MotionTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<MotionConfig>("motion"))
           ->AddParsed("degrees", "double | [double, double]", &MotionConfig::degrees,
                       "rotation angles drawn from U(lo, hi) (a number d: (-d, d))",
                       [](const nlohmann::json& v, const std::string& f) {
                         return mri::ParseRange(v, f, std::nullopt, std::nullopt, false);
                       })
           .AddParsed("translation", "double | [double, double]", &MotionConfig::translation,
                      "translations in voxels drawn from U(lo, hi) (a number d: (-d, d))",
                      [](const nlohmann::json& v, const std::string& f) {
                        return mri::ParseRange(v, f, std::nullopt, std::nullopt, false);
                      })
           .Add("num_transforms", &MotionConfig::num_transforms, "number of movements", InRange(1, 16))
           .Custom(
               "image_interpolation", "string", "TorchIO's resampling of the moved images (only 'linear')",
               [](const nlohmann::json& j, MotionConfig&, const std::string& w) -> absl::Status {
                 ASSIGN_OR_RETURN(std::string interp, ju::GetString(j, "image_interpolation", "linear", w));
                 if (interp != "linear") return ju::Invalid(w + ".image_interpolation", "only 'linear' is implemented");
                 return absl::OkStatus();
               },
               [](const MotionConfig&) { return nlohmann::json("linear"); });
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> MotionTransform::Create(const MotionConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  const std::string w = kW;
  if (!(c.degrees[0] <= c.degrees[1])) return ju::Invalid(w + ".degrees", "expected lo <= hi");
  if (!(c.translation[0] <= c.translation[1])) return ju::Invalid(w + ".translation", "expected lo <= hi");
  return std::shared_ptr<const Transform>(new MotionTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> MotionTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(MotionConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json MotionTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> MotionTransform::Draw(DrawContext& ctx,
                                                                       const SampleLayout& layout) const {
  auto p = std::make_unique<MotionParams>();
  const int n = config_.num_transforms;
  auto draw = [&](const std::array<double, 2>& r) {
    std::vector<std::array<double, 3>> v(static_cast<size_t>(n));
    for (auto& row : v)
      for (double& x : row) x = static_cast<float>(ctx.rng.Uniform(r[0], r[1]));  // torch float32
    return v;
  };
  p->degrees = draw(config_.degrees);
  p->translation = draw(config_.translation);
  if (layout.shape.size() == 2)
    for (int i = 0; i < n; ++i) {
      p->degrees[static_cast<size_t>(i)][0] = p->degrees[static_cast<size_t>(i)][1] = 0;
      p->translation[static_cast<size_t>(i)][2] = 0;
    }
  const double step = 1.0 / (n + 1);
  for (int i = 0; i < n; ++i) {
    const auto noise = static_cast<float>(ctx.rng.Uniform(-step * 0.3, step * 0.3));
    p->times.push_back(static_cast<float>((i + 1) * step) + noise);
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status MotionTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const MotionParams* p, ParamsAs<MotionParams>(params, kW));
  RETURN_IF_ERROR(RequireImage(s, kW));
  ASSIGN_OR_RETURN(mri::Shape3 shape, mri::ToShape3(s.shape, kW));
  const int64_t v = mri::Voxels(shape);
  const std::vector<MotionSegment> segs = MotionSegments(*p, shape[2]);
  std::vector<float> moved(static_cast<size_t>(v));
  for (int64_t c = 0; c < s.channels; ++c) {
    float* x = s.image.data() + c * v;
    const float fill = *std::min_element(x, x + v);
    std::vector<fft::Complex> result(static_cast<size_t>(v));
    for (const MotionSegment& sg : segs) {
      if (sg.hi <= sg.lo) continue;
      const float* src = x;
      if (sg.image > 0) {
        const size_t t = static_cast<size_t>(sg.image - 1);
        MotionResample(x, shape, MotionIndexAffine(p->degrees[t], p->translation[t]), fill, moved.data());
        src = moved.data();
      }
      const std::vector<fft::Complex> spec = mri::Spectrum(src, shape);
      for (int64_t sk = sg.lo; sk < sg.hi; ++sk) {
        const int64_t k = mri::Unshift(sk, shape[2]);
        for (int64_t ij = 0; ij < shape[0] * shape[1]; ++ij)
          result[static_cast<size_t>(ij * shape[2] + k)] = spec[static_cast<size_t>(ij * shape[2] + k)];
      }
    }
    mri::RealInverse(result, shape, x);
  }
  return absl::OkStatus();
}

nlohmann::json MotionTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const MotionParams&>(params);
  nlohmann::json d = nlohmann::json::array(), t = nlohmann::json::array();
  for (const auto& r : p.degrees) d.push_back({r[0], r[1], r[2]});
  for (const auto& r : p.translation) t.push_back({r[0], r[1], r[2]});
  return {{"degrees", d}, {"translation", t}, {"times", p.times}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> MotionTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                 const SampleLayout&) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"degrees", "translation", "times"}, "params"));
  auto p = std::make_unique<MotionParams>();
  ASSIGN_OR_RETURN(p->degrees, Triplets(j, "degrees"));
  ASSIGN_OR_RETURN(p->translation, Triplets(j, "translation"));
  if (!j.contains("times")) return ju::Invalid("params.times", "required");
  ASSIGN_OR_RETURN(auto times, ju::AsDoubles(j["times"], "params.times"));
  if (p->degrees.size() != times.size() || p->translation.size() != times.size() || times.empty() ||
      times.size() > static_cast<size_t>(kMaxTransforms))
    return ju::Invalid("params", "degrees, translation and times need the same length 1..16");
  for (size_t i = 0; i < times.size(); ++i) {
    if (!(times[i] >= 0 && times[i] <= 1) || (i > 0 && times[i] < times[i - 1]))
      return ju::Invalid("params.times", "expected non-decreasing values in [0, 1]");
    p->times.push_back(static_cast<float>(times[i]));
  }
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
