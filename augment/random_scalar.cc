#include "augment/random_scalar.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace augmentd {

double RandomScalar::Sample(RandomStream& rng) const {
  switch (kind) {
    case Kind::kConstant:
      return lo;
    case Kind::kUniform:
      return lo == hi ? lo : rng.Uniform(lo, hi);
    case Kind::kBGContrast: {
      // BGContrast.sample_contrast: np.random.random() < 0.5 and lo < 1 → U(lo, 1) else U(max(lo, 1), hi).
      const double coin = rng.Uniform();
      if (coin < 0.5 && lo < 1) return rng.Uniform(lo, 1.0);
      return rng.Uniform(std::max(lo, 1.0), hi);
    }
  }
  return lo;
}

double RandomScalar::Min() const { return lo; }
double RandomScalar::Max() const { return kind == Kind::kBGContrast ? std::max(hi, 1.0) : hi; }

absl::Status RandomScalar::Validate(const std::string& field) const {
  if (!std::isfinite(lo) || !std::isfinite(hi)) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": must be finite"));
  }
  if (kind != Kind::kConstant && lo > hi) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": range [", lo, ", ", hi, "] has lo > hi"));
  }
  return absl::OkStatus();
}

nlohmann::json RandomScalar::ToJson() const {
  switch (kind) {
    case Kind::kConstant:
      return lo;
    case Kind::kUniform:
      return nlohmann::json::array({lo, hi});
    case Kind::kBGContrast:
      return nlohmann::json{{"bg_contrast", nlohmann::json::array({lo, hi})}};
  }
  return nullptr;
}

namespace {
absl::StatusOr<std::pair<double, double>> ParsePair(const nlohmann::json& j, const std::string& field) {
  if (!j.is_array() || j.size() != 2 || !j[0].is_number() || !j[1].is_number()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": expected [lo, hi]"));
  }
  return std::make_pair(j[0].get<double>(), j[1].get<double>());
}
}  // namespace

absl::StatusOr<RandomScalar> RandomScalar::FromJson(const nlohmann::json& j, const std::string& field) {
  RandomScalar r;
  if (j.is_number()) {
    r = Constant(j.get<double>());
  } else if (j.is_array()) {
    auto p = ParsePair(j, field);
    if (!p.ok()) return p.status();
    r = Uniform(p->first, p->second);
  } else if (j.is_object() && j.contains("bg_contrast")) {
    auto p = ParsePair(j["bg_contrast"], field);
    if (!p.ok()) return p.status();
    r = BGContrast(p->first, p->second);
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": expected a number, [lo, hi] or {\"bg_contrast\": [lo, hi]}"));
  }
  absl::Status s = r.Validate(field);
  if (!s.ok()) return s;
  return r;
}

}  // namespace augmentd
