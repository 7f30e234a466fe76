// augment/transforms/local_kernel.h — what bgv2's `LocalTransform` family shares (internal): the per-axis scalar
// sampler of its `loc` / `scale` / strength / gamma arguments and the Gaussian-bump kernel `_generate_kernel`.
//
// Used by brightness_gradient_additive and local_gamma (nnUNetTrainerDA5, reference §5.1):
//   LocalScalar scale = LocalScalar::AxisSizeLogUniform(6, 1);   // exp(U(ln(S_d // 6), ln(S_d // 1)))
//   double s = scale.Sample(rng, shape[d]);
//   LocalGaussianKernel(shape, loc_px, scales, out);             // float32, min→0, max→1
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/rng.h"
#include "nlohmann/json.hpp"

namespace augmentd::transforms_internal {

// bgv2 RandomScalar as the DA5 callables use it. JSON: a number; [lo, hi] (np.random.uniform);
// {"axis_size_log_uniform": [a, b]} = exp(U(ln(S // a), ln(S // b))) for the axis size S
// (nnU-Net's _brightnessadditive_localgamma_transform_scale is [6, 1]);
// {"mixture": [{"weight": w, "range": [lo, hi]}, ...]} = one coin U, the first component whose cumulative
// weight exceeds U (weights summing to 1), then U(lo, hi) of it (DA5's strength and gamma callables).
struct LocalScalar {
  enum class Kind { kConstant, kUniform, kAxisSizeLogUniform, kMixture };
  Kind kind = Kind::kConstant;
  double lo = 0, hi = 0;  // constant (lo), uniform range, or the two divisors
  struct Component {
    double weight, lo, hi;
  };
  std::vector<Component> mixture;

  static LocalScalar Constant(double v) { return {Kind::kConstant, v, v, {}}; }
  static LocalScalar Uniform(double lo, double hi) { return {Kind::kUniform, lo, hi, {}}; }
  static LocalScalar AxisSizeLogUniform(double a, double b) { return {Kind::kAxisSizeLogUniform, a, b, {}}; }
  static LocalScalar Mixture(std::vector<Component> c) { return {Kind::kMixture, 0, 0, std::move(c)}; }

  // `axis_size` only for kAxisSizeLogUniform. INVALID_ARGUMENT where numpy would raise (S // a == 0).
  absl::StatusOr<double> Sample(RandomStream& rng, int64_t axis_size, const std::string& field) const;
  absl::Status Validate(const std::string& field) const;
  nlohmann::json ToJson() const;
  static absl::StatusOr<LocalScalar> FromJson(const nlohmann::json& j, const std::string& field);
};

// bgv2 LocalTransform._generate_kernel with the draws done: per axis d the 1D kernel
// diff(Φ((e − loc_px[d]) / scale[d])) over the voxel edges e = −0.5 … S_d − 0.5 (float64, cast to float32), their
// outer product in float32, then kernel −= min; kernel /= max (if max > 0). `out` has prod(shape) floats.
void LocalGaussianKernel(const std::vector<int64_t>& shape, const std::vector<double>& loc_px,
                         const std::vector<double>& scale, float* out);

// Flattens bgv2's dense kernel (a nested list of exactly `shape`, C order) into `out` (from axis `d`).
absl::Status FlattenDense(const nlohmann::json& v, const std::vector<int64_t>& shape, size_t d, std::vector<float>& out,
                          const std::string& field);

}  // namespace augmentd::transforms_internal
