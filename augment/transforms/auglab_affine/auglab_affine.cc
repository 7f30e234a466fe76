#include "augment/transforms/auglab_affine/auglab_affine.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/common/auglab_affine_math.h"
#include "augment/schema.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace ju = json_util;
using transforms_internal::ParamsAs;

namespace {
constexpr double kPi = 3.14159265358979323846;

using Mat4 = std::array<double, 16>;

Mat4 Mul(const Mat4& a, const Mat4& b) {
  Mat4 c{};
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) {
      double s = 0;
      for (int k = 0; k < 4; ++k) s += a[i * 4 + k] * b[k * 4 + j];
      c[i * 4 + j] = s;
    }
  return c;
}

// kornia's _compute_shear_matrix_3d of the six tangents: the 3×3 linear part, row-major.
std::array<double, 9> ShearLinear(const std::array<double, 6>& t) {
  const double a = t[0], b = t[1], c = t[2], d = t[3], e = t[4], f = t[5];  // sxy, sxz, syx, syz, szx, szy
  const double m11 = a * c + 1, m21 = b * c + d;
  return {1, c, c * f + e, a, m11, a * e + f * m11, b, m21, b * e + f * m21 + 1};
}

// Axis-angle (radians) → rotation (kornia's Rodrigues with its 1e-6 guards and first-order branch), row-major.
std::array<double, 9> Rotation(const std::array<double, 3>& v) {
  const double theta2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
  if (!(theta2 > 1e-6)) return {1, -v[2], v[1], v[2], 1, -v[0], -v[1], v[0], 1};
  const double theta = std::sqrt(theta2);
  const double wx = v[0] / (theta + 1e-6), wy = v[1] / (theta + 1e-6), wz = v[2] / (theta + 1e-6);
  const double c = std::cos(theta), s = std::sin(theta), k = 1 - c;
  return {c + wx * wx * k,      wx * wy * k - wz * s, wy * s + wx * wz * k,
          wz * s + wx * wy * k, c + wy * wy * k,      -wx * s + wy * wz * k,
          -wy * s + wx * wz * k, wx * s + wy * wz * k, c + wz * wz * k};
}

absl::Status CheckRanges(const std::vector<double>& v, size_t n, const std::string& field, double lo, double hi,
                         bool open_lo) {
  if (v.size() != n) return ju::Invalid(field, absl::StrCat("expected ", n, " values (lo, hi pairs)"));
  for (size_t i = 0; i < n; i += 2) {
    if (!(v[i] <= v[i + 1])) return ju::Invalid(field, "each range needs lo <= hi");
    for (double x : {v[i], v[i + 1]})
      if (!std::isfinite(x) || (open_lo ? !(x > lo) : !(x >= lo)) || !(x <= hi))
        return ju::Invalid(field, absl::StrCat("values must lie in ", open_lo ? "(" : "[", lo, ", ", hi, "]"));
  }
  return absl::OkStatus();
}
}  // namespace

Mat4 AuglabAffineForward(const AuglabAffineParams& p, const std::array<int64_t, 3>& shape) {
  const double cx = static_cast<double>(shape[2]) / 2 - 0.5, cy = static_cast<double>(shape[1]) / 2 - 0.5,
               cz = static_cast<double>(shape[0]) / 2 - 0.5;
  const double cen[3] = {cx, cy, cz};
  // F = T(c)·[R·diag(s) | 0]·T(−c), plus the translations.
  const std::array<double, 9> r =
      Rotation({-p.angles[0] * kPi / 180, -p.angles[1] * kPi / 180, -p.angles[2] * kPi / 180});
  Mat4 f{};
  for (int i = 0; i < 3; ++i) {
    double off = cen[i] + p.translations[static_cast<size_t>(i)];
    for (int j = 0; j < 3; ++j) {
      const double a = r[static_cast<size_t>(i * 3 + j)] * p.scale[static_cast<size_t>(j)];
      f[static_cast<size_t>(i * 4 + j)] = a;
      off -= a * cen[j];
    }
    f[static_cast<size_t>(i * 4 + 3)] = off;
  }
  f[15] = 1;
  // kornia's shear: linear part from the negated tangents, offset from the positive ones (get_shear_matrix3d).
  std::array<double, 6> tp{}, tn{};
  for (size_t i = 0; i < 6; ++i) {
    tp[i] = std::tan(p.shear[i] * kPi / 180);
    tn[i] = -tp[i];
  }
  const std::array<double, 9> pos = ShearLinear(tp), neg = ShearLinear(tn);
  Mat4 s{};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) s[static_cast<size_t>(i * 4 + j)] = neg[static_cast<size_t>(i * 3 + j)];
  s[3] = pos[1] * cy + pos[2] * cz;
  s[7] = pos[3] * cx + pos[4] * cy + pos[5] * cz - cy;
  s[11] = pos[6] * cx + pos[7] * cy + pos[8] * cz - cz;
  s[15] = 1;
  return Mul(f, s);
}

absl::StatusOr<std::array<float, 12>> AuglabAffineSourceMap(const AuglabAffineParams& p,
                                                            const std::array<int64_t, 3>& shape) {
  const Mat4 m = AuglabAffineForward(p, shape);
  const double a = m[0], b = m[1], c = m[2], d = m[4], e = m[5], f = m[6], g = m[8], h = m[9], i = m[10];
  const double det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g);
  if (!std::isfinite(det) || std::abs(det) < 1e-12) return ju::Invalid("auglab_affine", "singular affine matrix");
  const double inv[9] = {(e * i - f * h) / det, (c * h - b * i) / det, (b * f - c * e) / det,
                         (f * g - d * i) / det, (a * i - c * g) / det, (c * d - a * f) / det,
                         (d * h - e * g) / det, (b * g - a * h) / det, (a * e - b * d) / det};
  std::array<float, 12> out{};
  const int64_t extent[3] = {shape[2], shape[1], shape[0]};  // x, y, z
  for (int r = 0; r < 3; ++r) {
    if (extent[r] == 1) continue;  // a one-voxel axis samples index 0
    double off = 0;
    for (int k = 0; k < 3; ++k) {
      out[static_cast<size_t>(r * 4 + k)] = static_cast<float>(inv[r * 3 + k]);
      off -= inv[r * 3 + k] * m[static_cast<size_t>(k * 4 + 3)];
    }
    out[static_cast<size_t>(r * 4 + 3)] = static_cast<float>(off);
  }
  for (float v : out)
    if (!std::isfinite(v)) return ju::Invalid("auglab_affine", "affine map not finite");
  return out;
}

const ConfigSchema<AuglabAffineConfig>& AuglabAffineTransform::Schema() {
  static const auto* const s =
      &(new ConfigSchema<AuglabAffineConfig>("auglab_affine"))
           ->Add("degrees", &AuglabAffineConfig::degrees,
                 "(lo, hi) of the yaw (x), pitch (y), roll (z) angles in degrees (6 values)", InRange(-360, 360))
           .Add("translate", &AuglabAffineConfig::translate,
                "max |translation| as a fraction of W, H, D (3 values; kornia: t = (2u − 1)·f·size)", InRange(0, 1))
           .Add("scale", &AuglabAffineConfig::scale, "(lo, hi) of the scales along x, y, z (6 values, > 0)",
                InRange(0, 100))
           .Add("shear", &AuglabAffineConfig::shear,
                "(lo, hi) of the shear angles sxy, sxz, syx, syz, szx, szy in degrees (12 values, |.| < 90)",
                InRange(-89.999, 89.999))
           .Add("resample", &AuglabAffineConfig::resample,
                "image interpolation: \"bilinear\" (trilinear) or \"nearest\"; labels are always nearest");
  return *s;
}

absl::StatusOr<std::shared_ptr<const Transform>> AuglabAffineTransform::Create(const AuglabAffineConfig& c) {
  RETURN_IF_ERROR(Schema().Validate(c));
  RETURN_IF_ERROR(CheckRanges(c.degrees, 6, "auglab_affine.degrees", -360, 360, false));
  RETURN_IF_ERROR(CheckRanges(c.scale, 6, "auglab_affine.scale", 0, 100, true));
  RETURN_IF_ERROR(CheckRanges(c.shear, 12, "auglab_affine.shear", -89.999, 89.999, false));
  if (c.translate.size() != 3) return ju::Invalid("auglab_affine.translate", "expected 3 values (x, y, z)");
  if (c.resample != "bilinear" && c.resample != "nearest")
    return ju::Invalid("auglab_affine.resample", "must be \"bilinear\" or \"nearest\"");
  return std::shared_ptr<const Transform>(new AuglabAffineTransform(c));
}

absl::StatusOr<std::shared_ptr<const Transform>> AuglabAffineTransform::FromJson(const nlohmann::json& j) {
  ASSIGN_OR_RETURN(AuglabAffineConfig c, Schema().Parse(j));
  return Create(c);
}

nlohmann::json AuglabAffineTransform::ConfigToJson() const { return Schema().ToJson(config_); }

absl::StatusOr<std::unique_ptr<TransformParams>> AuglabAffineTransform::Draw(DrawContext& ctx,
                                                                             const SampleLayout& layout) const {
  if (layout.shape.size() != 3) return ju::Invalid("auglab_affine", "3D samples only (AugLab's GPU transforms)");
  auto p = std::make_unique<AuglabAffineParams>();
  const auto& c = config_;
  // AffineGenerator3D's order: yaw, pitch, roll; the three scales; the three translations; the six shears.
  for (size_t a = 0; a < 3; ++a) p->angles[a] = ctx.rng.Uniform(c.degrees[2 * a], c.degrees[2 * a + 1]);
  for (size_t a = 0; a < 3; ++a) p->scale[a] = ctx.rng.Uniform(c.scale[2 * a], c.scale[2 * a + 1]);
  const double size[3] = {static_cast<double>(layout.shape[2]), static_cast<double>(layout.shape[1]),
                          static_cast<double>(layout.shape[0])};  // W, H, D
  for (size_t a = 0; a < 3; ++a) p->translations[a] = (ctx.rng.Uniform() - 0.5) * c.translate[a] * size[a] * 2;
  for (size_t a = 0; a < 6; ++a) p->shear[a] = ctx.rng.Uniform(c.shear[2 * a], c.shear[2 * a + 1]);
  return std::unique_ptr<TransformParams>(std::move(p));
}

absl::Status AuglabAffineTransform::Apply(const TransformParams& params, SampleData& s) const {
  ASSIGN_OR_RETURN(const AuglabAffineParams* p, ParamsAs<AuglabAffineParams>(params, "auglab_affine"));
  if (s.shape.size() != 3) return ju::Invalid("auglab_affine", "3D samples only (AugLab's GPU transforms)");
  const std::array<int64_t, 3> shape{s.shape[0], s.shape[1], s.shape[2]};
  using Map = std::array<float, 12>;
  ASSIGN_OR_RETURN(const Map m, AuglabAffineSourceMap(*p, shape));
  namespace am = auglab_affine_math;
  const int32_t d = static_cast<int32_t>(shape[0]), h = static_cast<int32_t>(shape[1]),
                w = static_cast<int32_t>(shape[2]);
  const int64_t n = int64_t{d} * h * w;
  const std::vector<float> img = s.image;
  const std::vector<int16_t> seg = s.seg;
  const bool has_seg = s.seg_channels > 0 && !s.seg.empty();
  const bool lin = linear();
  for (int32_t z = 0; z < d; ++z)
    for (int32_t y = 0; y < h; ++y)
      for (int32_t x = 0; x < w; ++x) {
        const int64_t o = (int64_t{z} * h + y) * w + x;
        float sx, sy, sz;
        am::SourcePoint(m.data(), static_cast<float>(x), static_cast<float>(y), static_cast<float>(z), sx, sy, sz);
        const int64_t ni = am::NearestIndex(d, h, w, sx, sy, sz);
        for (int32_t c = 0; c < s.channels; ++c) {
          const float* src = img.data() + c * n;
          s.image[static_cast<size_t>(c * n + o)] =
              lin ? am::SampleLinear(src, d, h, w, sx, sy, sz) : (ni < 0 ? 0.0f : src[ni]);
        }
        if (has_seg)
          for (int32_t c = 0; c < s.seg_channels; ++c)
            s.seg[static_cast<size_t>(c * n + o)] = ni < 0 ? int16_t{0} : seg[static_cast<size_t>(c * n + ni)];
      }
  return absl::OkStatus();
}

nlohmann::json AuglabAffineTransform::ParamsToJson(const TransformParams& params) const {
  const auto& p = static_cast<const AuglabAffineParams&>(params);
  return {{"angles", p.angles}, {"scale", p.scale}, {"translations", p.translations}, {"shear", p.shear}};
}

absl::StatusOr<std::unique_ptr<TransformParams>> AuglabAffineTransform::ParamsFromJson(const nlohmann::json& j,
                                                                                       const SampleLayout&) const {
  RETURN_IF_ERROR(ju::CheckKeys(j, {"angles", "scale", "translations", "shear"}, "params"));
  auto p = std::make_unique<AuglabAffineParams>();
  const auto read = [&j](const char* key, double* out, size_t n) -> absl::Status {
    const std::string field = absl::StrCat("params.", key);
    if (!j.contains(key)) return ju::Invalid(field, absl::StrCat("required (", n, " numbers)"));
    ASSIGN_OR_RETURN(std::vector<double> v, ju::AsDoubles(j[key], field));
    if (v.size() != n) return ju::Invalid(field, absl::StrCat("expected ", n, " numbers"));
    for (size_t i = 0; i < n; ++i) {
      if (!std::isfinite(v[i])) return ju::Invalid(field, "must be finite");
      out[i] = v[i];
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(read("angles", p->angles.data(), 3));
  RETURN_IF_ERROR(read("scale", p->scale.data(), 3));
  RETURN_IF_ERROR(read("translations", p->translations.data(), 3));
  RETURN_IF_ERROR(read("shear", p->shear.data(), 6));
  for (double v : p->scale)
    if (!(v > 0)) return ju::Invalid("params.scale", "must be > 0");
  for (double v : p->shear)
    if (!(std::abs(v) < 90)) return ju::Invalid("params.shear", "|angle| must be < 90 degrees");
  return std::unique_ptr<TransformParams>(std::move(p));
}

}  // namespace augmentd
