// augment/transforms/common/local_kernel.h — what bgv2's `LocalTransform` family shares (internal): the per-axis scalar
// sampler of its `loc` / `scale` / strength / gamma arguments and the Gaussian-bump kernel `_generate_kernel`.
//
// Used by brightness_gradient_additive and local_gamma (nnUNetTrainerDA5, reference §5.1):
//   LocalScalar scale = LocalScalar::AxisSizeLogUniform(6, 1);   // exp(U(ln(S_d // 6), ln(S_d // 1)))
//   double s = scale.Sample(rng, shape[d]);
//   LocalGaussianKernel(shape, loc_px, scales, out);             // float32, min→0, max→1
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/rng.h"
#include "augment/schema.h"
#include "nlohmann/json.hpp"

namespace augmentd {

// One drawn kernel of a LocalTransform: per axis the centre in voxels and the Gaussian scale.
struct LocalKernelSpec {
  std::vector<double> loc_px;  // loc · S_d
  std::vector<double> scale;
  double factor = 1;  // strength (brightness gradient) — unused by local gamma
};

}  // namespace augmentd

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

}  // namespace augmentd::transforms_internal

// LocalScalar as a schema field type (augment/schema.h); its cross-field checks are ValidateLocalArgs's.
namespace augmentd::schema_internal {
template <>
struct Codec<transforms_internal::LocalScalar> {
  static constexpr const char* kType = "local_scalar";
  static absl::StatusOr<transforms_internal::LocalScalar> Read(const nlohmann::json& o, const std::string& key,
                                                               const std::string& where) {
    return transforms_internal::LocalScalar::FromJson(o.at(key), where + "." + key);
  }
  static nlohmann::json Write(const transforms_internal::LocalScalar& v) { return v.ToJson(); }
  static absl::Status Check(const transforms_internal::LocalScalar&, const FieldRule&, const std::string&,
                            const std::string&) {
    return absl::OkStatus();
  }
};
}  // namespace augmentd::schema_internal

namespace augmentd::transforms_internal {

// The 1D factor of axis d of LocalGaussianKernel below: diff(Φ((e − loc_px) / scale)) over the voxel edges
// e = −0.5 … size − 0.5 (float64, cast to float32). The CUDA stages build the 3D kernel from these on the fly.
std::vector<float> LocalGaussianAxis(int64_t size, double loc_px, double scale);

// bgv2 LocalTransform._generate_kernel with the draws done: per axis d the 1D kernel
// diff(Φ((e − loc_px[d]) / scale[d])) over the voxel edges e = −0.5 … S_d − 0.5 (float64, cast to float32), their
// outer product in float32, then kernel −= min; kernel /= max (if max > 0). `out` has prod(shape) floats.
void LocalGaussianKernel(const std::vector<int64_t>& shape, const std::vector<double>& loc_px,
                         const std::vector<double>& scale, float* out);

// max over the volume LocalGaussianKernel(shape, loc_px, scale) writes, without the volume: 1 when the product's
// max exceeds its min (then (max − min) / (max − min) is exactly 1 and every value lies in [0, 1]), else 0 (K ≡ 0).
// Two voxels of different value prove the 1 (the one nearest loc and the corner farthest from it: 12 cdf values);
// where they tie, the product's extremes come from the whole 1D factors (rounding is monotone;
// cuda::da5::ProductMinMax). The same result either way.
float LocalGaussianKernelMax(const std::vector<int64_t>& shape, const std::vector<double>& loc_px,
                             const std::vector<double>& scale);

// Flattens bgv2's dense kernel (a nested list of exactly `shape`, C order) into `out` (from axis `d`).
absl::Status FlattenDense(const nlohmann::json& v, const std::vector<int64_t>& shape, size_t d, std::vector<float>& out,
                          const std::string& field);

// Validates a LocalTransform's `scale`, `loc` and per-kernel `value` (max_strength / gamma, named `value_name`)
// for transform `what`; only `scale` may depend on the axis size (errors name "<what>.loc" for the others).
absl::Status ValidateLocalArgs(const LocalScalar& scale, const LocalScalar& loc, const LocalScalar& value,
                               const std::string& what, const std::string& value_name);

// Reads a LocalTransform's "scale" (required), "loc" and `value_name` (optional: left as they are when absent)
// from the JSON config `j` of transform `what`.
absl::Status LocalArgsFromJson(const nlohmann::json& j, const std::string& what, const std::string& value_name,
                               LocalScalar& scale, LocalScalar& loc, LocalScalar& value);

// Draws one kernel spec: for each axis d in order loc_d ~ `loc` (stored × S_d), then scale_d ~ `scale`.
// `what` names the transform in errors ("<what>.loc", "<what>.scale").
absl::StatusOr<LocalKernelSpec> DrawKernelSpec(RandomStream& rng, const LocalScalar& loc, const LocalScalar& scale,
                                               const std::vector<int64_t>& shape, const std::string& what);

// Reads {"loc": [...], "scale": [...]} of one channel's injected `kernel_params` entry (other keys are the caller's).
absl::StatusOr<LocalKernelSpec> KernelSpecFromJson(const nlohmann::json& e);

// INVALID_ARGUMENT unless loc and scale have one entry per spatial axis of `shape` and every scale is > 0.
absl::Status CheckKernelSpec(const LocalKernelSpec& s, const std::vector<int64_t>& shape);

// Reads injected dense `kernels` (an array of `channels` entries, each null or a nested list of exactly `shape`)
// into `dense` (already sized `channels`; null entries are left untouched).
absl::Status DenseKernelsFromJson(const nlohmann::json& k, const std::vector<int64_t>& shape, int64_t channels,
                                  std::vector<std::shared_ptr<const std::vector<float>>>& dense);

}  // namespace augmentd::transforms_internal
