#include "augment/transforms/common/mri_common.h"

#include <cmath>

#include "augment/json_util.h"

namespace augmentd::mri {
namespace ju = json_util;

absl::StatusOr<Shape3> ToShape3(const std::vector<int64_t>& shape, const std::string& transform) {
  if (shape.size() == 3) return Shape3{shape[0], shape[1], shape[2]};
  if (shape.size() == 2) return Shape3{shape[0], shape[1], 1};
  return ju::Invalid(transform + ".shape", "expected 2 or 3 spatial dims");
}

absl::StatusOr<std::array<double, 2>> ParseRange(const nlohmann::json& v, const std::string& field,
                                                 std::optional<double> min_c, std::optional<double> max_c,
                                                 bool integer) {
  std::array<double, 2> r;
  if (v.is_number()) {
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < 0) return ju::Invalid(field, "a single number must be finite and >= 0");
    r = {min_c.has_value() ? *min_c : -d, d};
  } else {
    auto vals = ju::AsDoubles(v, field);
    if (!vals.ok()) return vals.status();
    if (vals->size() != 2) return ju::Invalid(field, "expected a number or [lo, hi]");
    r = {(*vals)[0], (*vals)[1]};
    if (!std::isfinite(r[0]) || !std::isfinite(r[1]) || r[0] > r[1]) return ju::Invalid(field, "expected lo <= hi");
  }
  if (min_c.has_value() && r[0] < *min_c) return ju::Invalid(field, "lower bound below " + std::to_string(*min_c));
  if (max_c.has_value() && r[1] > *max_c) return ju::Invalid(field, "upper bound above " + std::to_string(*max_c));
  if (integer && (r[0] != std::floor(r[0]) || r[1] != std::floor(r[1])))
    return ju::Invalid(field, "expected integers");
  return r;
}

std::vector<fft::Complex> Spectrum(const float* x, const Shape3& s) {
  std::vector<fft::Complex> spec(static_cast<size_t>(Voxels(s)));
  for (size_t i = 0; i < spec.size(); ++i) spec[i] = fft::Complex(x[i], 0.0);
  fft::FftN(spec, {s[0], s[1], s[2]}, false);
  return spec;
}

void RealInverse(std::vector<fft::Complex>& spec, const Shape3& s, float* out) {
  fft::FftN(spec, {s[0], s[1], s[2]}, true);
  for (size_t i = 0; i < spec.size(); ++i) out[i] = static_cast<float>(spec[i].real());
}

}  // namespace augmentd::mri
