// augment/random_scalar.h — bgv2's `RandomScalar` (a number, a (lo, hi) range, or BGContrast) as a value type.
//
//   RandomScalar s = RandomScalar::BGContrast(0.75, 1.25);
//   double m = s.Sample(rng);
//
// JSON form (augment/capi.h): a number; `[lo, hi]`; or `{"bg_contrast": [lo, hi]}`.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "augment/rng.h"
#include "nlohmann/json.hpp"

namespace augmentd {

struct RandomScalar {
  enum class Kind { kConstant, kUniform, kBGContrast };
  Kind kind = Kind::kConstant;
  double lo = 0, hi = 0;  // kConstant uses lo

  static RandomScalar Constant(double v) { return {Kind::kConstant, v, v}; }
  static RandomScalar Uniform(double lo, double hi) { return {Kind::kUniform, lo, hi}; }
  static RandomScalar BGContrast(double lo, double hi) { return {Kind::kBGContrast, lo, hi}; }

  // bgv2 `sample_scalar`: constant → value; (lo, hi) → U(lo, hi) (lo if equal, no draw);
  // BGContrast → with p=0.5 (only if lo < 1) U(lo, 1), else U(max(lo, 1), hi) (two draws).
  double Sample(RandomStream& rng) const;
  // Smallest / largest value Sample can return.
  double Min() const;
  double Max() const;

  // INVALID_ARGUMENT naming `field` if non-finite or lo > hi.
  absl::Status Validate(const std::string& field) const;
  nlohmann::json ToJson() const;
  static absl::StatusOr<RandomScalar> FromJson(const nlohmann::json& j, const std::string& field);
};

}  // namespace augmentd
