#include "augment/transforms/common/local_kernel.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "augment/json_util.h"
#include "augment/kernels/common/da5_math.h"
#include "augment/status_macros.h"

namespace augmentd::transforms_internal {
namespace ju = json_util;

absl::StatusOr<double> LocalScalar::Sample(RandomStream& rng, int64_t axis_size, const std::string& field) const {
  switch (kind) {
    case Kind::kConstant:
      return lo;
    case Kind::kUniform:
      return lo == hi ? lo : rng.Uniform(lo, hi);  // bgv2 sample_scalar: no draw for an empty range
    case Kind::kAxisSizeLogUniform: {
      const double a = std::floor(static_cast<double>(axis_size) / lo);
      const double b = std::floor(static_cast<double>(axis_size) / hi);
      if (a <= 0 || b <= 0) {
        return ju::Invalid(field, absl::StrCat("axis of size ", axis_size, " is too small: log(", axis_size, " // ",
                                               lo, ") is -inf (numpy raises)"));
      }
      return std::exp(std::log(a) + (std::log(b) - std::log(a)) * rng.Uniform());  // np.random.uniform(ln a, ln b)
    }
    case Kind::kMixture: {
      const double u = rng.Uniform();
      double acc = 0;
      for (size_t i = 0; i < mixture.size(); ++i) {
        acc += mixture[i].weight;
        if (u < acc || i + 1 == mixture.size()) return mixture[i].lo + (mixture[i].hi - mixture[i].lo) * rng.Uniform();
      }
      return 0.0;
    }
  }
  return lo;
}

absl::Status LocalScalar::Validate(const std::string& field) const {
  auto finite = [](double v) { return std::isfinite(v); };
  switch (kind) {
    case Kind::kConstant:
      if (!finite(lo)) return ju::Invalid(field, "must be finite");
      break;
    case Kind::kUniform:
      if (!finite(lo) || !finite(hi) || lo > hi) return ju::Invalid(field, "expected finite [lo, hi] with lo <= hi");
      break;
    case Kind::kAxisSizeLogUniform:
      if (!(lo >= 1) || !(hi >= 1) || !finite(lo) || !finite(hi) || hi > lo)
        return ju::Invalid(field, "axis_size_log_uniform: divisors must be finite, >= 1, first >= second");
      break;
    case Kind::kMixture: {
      if (mixture.empty() || mixture.size() > 16) return ju::Invalid(field, "mixture: 1 to 16 components");
      double w = 0;
      for (const Component& c : mixture) {
        if (!finite(c.weight) || c.weight < 0 || !finite(c.lo) || !finite(c.hi) || c.lo > c.hi)
          return ju::Invalid(field, "mixture: weights >= 0, finite ranges with lo <= hi");
        w += c.weight;
      }
      if (std::fabs(w - 1) > 1e-9) return ju::Invalid(field, "mixture: weights must sum to 1");
      break;
    }
  }
  return absl::OkStatus();
}

nlohmann::json LocalScalar::ToJson() const {
  switch (kind) {
    case Kind::kConstant:
      return lo;
    case Kind::kUniform:
      return {lo, hi};
    case Kind::kAxisSizeLogUniform:
      return {{"axis_size_log_uniform", {lo, hi}}};
    case Kind::kMixture: {
      nlohmann::json m = nlohmann::json::array();
      for (const Component& c : mixture) m.push_back({{"weight", c.weight}, {"range", {c.lo, c.hi}}});
      return {{"mixture", m}};
    }
  }
  return nullptr;
}

absl::StatusOr<LocalScalar> LocalScalar::FromJson(const nlohmann::json& j, const std::string& field) {
  LocalScalar s;
  auto pair = [&](const nlohmann::json& v) -> absl::StatusOr<std::pair<double, double>> {
    auto d = ju::AsDoubles(v, field);
    if (!d.ok()) return d.status();
    if (d->size() != 2) return ju::Invalid(field, "expected [lo, hi]");
    return std::make_pair((*d)[0], (*d)[1]);
  };
  if (j.is_number()) {
    s = Constant(j.get<double>());
  } else if (j.is_array()) {
    auto p = pair(j);
    if (!p.ok()) return p.status();
    s = Uniform(p->first, p->second);
  } else if (j.is_object() && j.size() == 1 && j.contains("axis_size_log_uniform")) {
    auto p = pair(j["axis_size_log_uniform"]);
    if (!p.ok()) return p.status();
    s = AxisSizeLogUniform(p->first, p->second);
  } else if (j.is_object() && j.size() == 1 && j.contains("mixture") && j["mixture"].is_array()) {
    std::vector<Component> comps;
    for (const auto& c : j["mixture"]) {
      if (!c.is_object() || !c.contains("weight") || !c["weight"].is_number() || !c.contains("range"))
        return ju::Invalid(field, "mixture entries are {\"weight\": w, \"range\": [lo, hi]}");
      auto p = pair(c["range"]);
      if (!p.ok()) return p.status();
      comps.push_back({c["weight"].get<double>(), p->first, p->second});
    }
    s = Mixture(std::move(comps));
  } else {
    return ju::Invalid(field,
                       "expected a number, [lo, hi], {\"axis_size_log_uniform\": [a, b]} or {\"mixture\": [...]}");
  }
  absl::Status st = s.Validate(field);
  if (!st.ok()) return st;
  return s;
}

// Flattens a nested list of exactly `shape` (C order) into floats.
absl::Status FlattenDense(const nlohmann::json& v, const std::vector<int64_t>& shape, size_t d, std::vector<float>& out,
                          const std::string& field) {
  if (!v.is_array() || static_cast<int64_t>(v.size()) != shape[d])
    return ju::Invalid(field, "kernel shape does not match the image");
  for (const auto& e : v) {
    if (d + 1 == shape.size()) {
      if (!e.is_number()) return ju::Invalid(field, "expected numbers");
      out.push_back(e.get<float>());
    } else {
      absl::Status st = FlattenDense(e, shape, d + 1, out, field);
      if (!st.ok()) return st;
    }
  }
  return absl::OkStatus();
}

namespace {

// scipy.stats.norm.cdf = ndtr((x − loc) / scale) at the float32 voxel edge e − 0.5 promoted to float64.
double AxisCdf(int64_t e, double loc_px, double scale) {
  const double x = static_cast<double>(static_cast<float>(static_cast<double>(e) - 0.5));
  return 0.5 * std::erfc(-((x - loc_px) / scale) / std::sqrt(2.0));
}

// Element i of LocalGaussianAxis(size, loc_px, scale), alone (the same two cdf values, the same difference).
float AxisFactor(int64_t i, double loc_px, double scale) {
  return static_cast<float>(AxisCdf(i + 1, loc_px, scale) - AxisCdf(i, loc_px, scale));
}

}  // namespace

std::vector<float> LocalGaussianAxis(int64_t size, double loc_px, double scale) {
  std::vector<float> k;
  double prev = AxisCdf(0, loc_px, scale);
  for (int64_t i = 0; i < size; ++i) {
    const double next = AxisCdf(i + 1, loc_px, scale);
    k.push_back(static_cast<float>(next - prev));
    prev = next;
  }
  return k;
}

void LocalGaussianKernel(const std::vector<int64_t>& shape, const std::vector<double>& loc_px,
                         const std::vector<double>& scale, float* out) {
  const size_t nd = shape.size();
  std::vector<std::vector<float>> k1(nd);
  for (size_t d = 0; d < nd; ++d) k1[d] = LocalGaussianAxis(shape[d], loc_px[d], scale[d]);
  const int64_t X = shape[0], Y = shape[1], Z = nd == 3 ? shape[2] : 1;
  float mn = 0, mx = 0;
  for (int64_t i = 0; i < X; ++i)
    for (int64_t j = 0; j < Y; ++j) {
      const float xy = k1[0][i] * k1[1][j];
      for (int64_t l = 0; l < Z; ++l) {
        const float v = nd == 3 ? xy * k1[2][l] : xy;
        const int64_t o = (i * Y + j) * Z + l;
        out[o] = v;
        if (o == 0 || v < mn) mn = v;
        if (o == 0 || v > mx) mx = v;
      }
    }
  const int64_t n = X * Y * Z;
  for (int64_t i = 0; i < n; ++i) out[i] -= mn;
  const float top = mx - mn;
  if (top > 0)
    for (int64_t i = 0; i < n; ++i) out[i] /= top;
}

float LocalGaussianKernelMax(const std::vector<int64_t>& shape, const std::vector<double>& loc_px,
                             const std::vector<double>& scale) {
  // Two voxels of the product with different values prove max > min, whatever rounding does elsewhere (the float
  // subtraction is monotone: max − min >= |a − b| > 0): the voxel nearest the centre and the corner farthest from it,
  // 12 cdf values instead of S0 + S1 + S2 + 3 (387 at 128³: ≈ 11 µs a draw, GPU idle time at the start of a DA5
  // chain's batch). Where the two tie (a flat or vanishing kernel, or factors lost to cancellation in a far tail) the
  // factors are computed whole.
  bool finite = shape.size() == 2 || shape.size() == 3;
  for (size_t d = 0; finite && d < shape.size(); ++d) finite = std::isfinite(loc_px[d]) && std::isfinite(scale[d]);
  if (finite) {
    float near = 1.0f, far = 1.0f;
    for (size_t d = 0; d < shape.size(); ++d) {
      const int64_t last = shape[d] - 1;
      const double r = std::floor(loc_px[d] + 0.5);  // clamped before the cast: an injected loc may be far outside
      const int64_t c = r <= 0.0 ? 0 : (r >= static_cast<double>(last) ? last : static_cast<int64_t>(r));
      const int64_t f = std::fabs(loc_px[d]) > std::fabs(static_cast<double>(last) - loc_px[d]) ? 0 : last;
      near = d == 0 ? AxisFactor(c, loc_px[d], scale[d]) : near * AxisFactor(c, loc_px[d], scale[d]);
      far = d == 0 ? AxisFactor(f, loc_px[d], scale[d]) : far * AxisFactor(f, loc_px[d], scale[d]);
    }
    if (std::isfinite(near) && std::isfinite(far) && std::fabs(near - far) > 0.0f) return 1.0f;
  }
  std::vector<float> k[3];
  for (size_t d = 0; d < shape.size(); ++d) k[d] = LocalGaussianAxis(shape[d], loc_px[d], scale[d]);
  if (shape.size() < 3) k[2] = {1.0f};  // fl(xy · 1) = xy: the 2D product
  float mn = 0, mx = 0;
  cuda::da5::ProductMinMax(k[0].data(), static_cast<int>(k[0].size()), k[1].data(), static_cast<int>(k[1].size()),
                           k[2].data(), static_cast<int>(k[2].size()), mn, mx);
  return mx - mn > 0 ? 1.0f : 0.0f;
}

absl::Status ValidateLocalArgs(const LocalScalar& scale, const LocalScalar& loc, const LocalScalar& value,
                               const std::string& what, const std::string& value_name) {
  RETURN_IF_ERROR(scale.Validate(what + ".scale"));
  RETURN_IF_ERROR(loc.Validate(what + ".loc"));
  RETURN_IF_ERROR(value.Validate(what + "." + value_name));
  if (loc.kind == LocalScalar::Kind::kAxisSizeLogUniform || value.kind == LocalScalar::Kind::kAxisSizeLogUniform)
    return ju::Invalid(what + ".loc", "axis_size_log_uniform is only meaningful for scale");
  return absl::OkStatus();
}

absl::Status LocalArgsFromJson(const nlohmann::json& j, const std::string& what, const std::string& value_name,
                               LocalScalar& scale, LocalScalar& loc, LocalScalar& value) {
  if (!j.contains("scale")) return ju::Invalid(what + ".scale", "required");
  ASSIGN_OR_RETURN(scale, LocalScalar::FromJson(j["scale"], what + ".scale"));
  if (j.contains("loc")) {
    ASSIGN_OR_RETURN(loc, LocalScalar::FromJson(j["loc"], what + ".loc"));
  }
  if (j.contains(value_name)) {
    ASSIGN_OR_RETURN(value, LocalScalar::FromJson(j[value_name], what + "." + value_name));
  }
  return absl::OkStatus();
}

absl::StatusOr<LocalKernelSpec> DrawKernelSpec(RandomStream& rng, const LocalScalar& loc, const LocalScalar& scale,
                                               const std::vector<int64_t>& shape, const std::string& what) {
  LocalKernelSpec s;
  for (size_t d = 0; d < shape.size(); ++d) {
    ASSIGN_OR_RETURN(double l, loc.Sample(rng, shape[d], what + ".loc"));
    ASSIGN_OR_RETURN(double sc, scale.Sample(rng, shape[d], what + ".scale"));
    s.loc_px.push_back(l * static_cast<double>(shape[d]));
    s.scale.push_back(sc);
  }
  return s;
}

absl::StatusOr<LocalKernelSpec> KernelSpecFromJson(const nlohmann::json& e) {
  LocalKernelSpec s;
  ASSIGN_OR_RETURN(s.loc_px, ju::AsDoubles(e.value("loc", nlohmann::json()), "params.kernel_params.loc"));
  ASSIGN_OR_RETURN(s.scale, ju::AsDoubles(e.value("scale", nlohmann::json()), "params.kernel_params.scale"));
  return s;
}

absl::Status CheckKernelSpec(const LocalKernelSpec& s, const std::vector<int64_t>& shape) {
  if (s.loc_px.size() != shape.size() || s.scale.size() != shape.size())
    return ju::Invalid("params.kernel_params", "loc and scale need one entry per spatial axis");
  for (double v : s.scale)
    if (!(v > 0)) return ju::Invalid("params.kernel_params.scale", "must be > 0");
  return absl::OkStatus();
}

absl::Status DenseKernelsFromJson(const nlohmann::json& k, const std::vector<int64_t>& shape, int64_t channels,
                                  std::vector<std::shared_ptr<const std::vector<float>>>& dense) {
  if (!k.is_array() || static_cast<int64_t>(k.size()) != channels)
    return ju::Invalid("params.kernels", absl::StrCat("needs ", channels, " entries (one per channel)"));
  for (int64_t c = 0; c < channels; ++c) {
    if (k[c].is_null()) continue;
    auto v = std::make_shared<std::vector<float>>();
    RETURN_IF_ERROR(FlattenDense(k[c], shape, 0, *v, "params.kernels"));
    dense[c] = std::move(v);
  }
  return absl::OkStatus();
}

}  // namespace augmentd::transforms_internal
