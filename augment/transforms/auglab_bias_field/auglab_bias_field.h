// augment/transforms/auglab_bias_field/auglab_bias_field.h — AugLab's RandomBiasFieldGPU (neuropoly/AugLab
// `auglab/transforms/gpu/contrast.py`, auglab 20260109; transform_params_gpu.json "BiasFieldTransform": coefficients
// 0.5, retain_stats false, probability 0.2). Not TorchIO's RandomBiasField (`bias_field`): other coordinates.
//
// Per sample: n coefficients c_k ~ U(lo, hi) (float32 lo + U·(hi − lo); `coefficients` c means (−c, c)), n = the
// number of monomials of total degree <= order in the spatial dims (3D, order 3: 20). Coordinates are
// torch.linspace(−1, 1, S) per axis, with AugLab's names x = axis 2 (last), y = axis 1, z = axis 0 (2D: x = axis 1,
// y = axis 0). The field, in AugLab's loop order (k increases innermost-last):
//   3D: for xo in 0..order, yo in 0..order − xo, zo in 0..order − xo − yo:  B += c_k·x^xo·y^yo·z^zo
//   2D: for xo in 0..order, yo in 0..order − xo:                            B += c_k·x^xo·y^yo
//   field = exp(B) (invert: 1/(field + 1e-8)).
// Each channel of `apply_to_channel` (default [0]) is multiplied by the field; retain_stats then
// x ← (x − mean)/(std + 1e-8)·σ₀ + μ₀ (unbiased std, statistics before). NaN / Inf leaves the channel as it was.
// in_seg / out_seg / mix_in_out: the entry's region_mode (augment/region_mode.h).
//
//   auto t = AuglabBiasFieldTransform::FromJson({{"coefficients", 0.5}, {"order", 3}});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct AuglabBiasFieldConfig {
  double lo = -0.5, hi = 0.5;  // coefficient range
  int64_t order = 3;           // in [0, 10]
  bool invert = false;
  bool retain_stats = false;
  std::vector<int64_t> apply_to_channel = {0};
};

// {"coefficients": [n values in AugLab's loop order]}
struct AuglabBiasFieldParams : TransformParams {
  std::vector<float> coefficients;
};

class AuglabBiasFieldTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const AuglabBiasFieldConfig& config);
  // Every config field once: name, rule, one-line doc (augment/schema.h); FromJson = Schema().Parse + Create.
  static const ConfigSchema<AuglabBiasFieldConfig>& Schema();
  // {"coefficients": c | [lo, hi], "order", "invert", "retain_stats", "apply_to_channel"}
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  const AuglabBiasFieldConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kAuglabBiasField; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;
  // Monomials of total degree <= order in `dims` (2 or 3) variables.
  static int64_t NumCoefficients(int64_t order, int dims);

 private:
  explicit AuglabBiasFieldTransform(AuglabBiasFieldConfig c) : config_(std::move(c)) {}
  AuglabBiasFieldConfig config_;
};

// torch.linspace(−1, 1, n) in float32 (ATen: start + i·step for i < n/2, end − (n − 1 − i)·step after).
std::vector<float> TorchLinspace(float start, float end, int64_t n);

}  // namespace augmentd
