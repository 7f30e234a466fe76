// augment/transforms/brightness_gradient_additive/brightness_gradient_additive.h — bgv2 `BrightnessGradientAdditiveTransform` (DA5: a smooth
// additive Gaussian bump per channel).
//
// Per kernel: for each axis d (in order) loc_d ~ `loc` (× S_d), scale_d ~ `scale` (axis-aware); K = the
// separable normalised bump of local_kernel.h; if mean_centered K −= mean(K); m = max|K|; m < 1e-8 → no-op
// (no strength drawn); strength ~ `max_strength`; strength == 0 → no-op; K ← K / m · strength; x_c ← x_c + K.
// clip_intensities clamps the whole image to its pre-transform [min, max].
// Draw order: C apply coins (U < p_per_channel); nothing else if none; then one kernel (+ strength) shared by all
// applied channels (same_for_all_channels) or one per applied channel, in channel order.
// nnU-Net DA5: scale = {"axis_size_log_uniform": [6, 1]}, loc = [-0.5, 1.5], max_strength = mixture
// ½·U(−5, −1) + ½·U(1, 5), mean_centered = false, same_for_all_channels = false, p_per_channel = 0.5.
//
// Params: bgv2's {"kernels": [C × (spatial nested list | null)]} is accepted; augmentd reports (and also accepts)
// the compact generator form {"kernel_params": [C × ({"loc": [px per axis], "scale": [...], "strength": s} |
// null)]} from which the kernel is rebuilt bit-identically (the dense kernels of a 128³ patch would be ~20 MB of
// JSON per sample).
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"
#include "augment/transforms/common/local_kernel.h"

namespace augmentd {

struct BrightnessGradientAdditiveConfig {
  transforms_internal::LocalScalar scale = transforms_internal::LocalScalar::Uniform(5, 15);
  transforms_internal::LocalScalar loc = transforms_internal::LocalScalar::Uniform(-1, 2);
  transforms_internal::LocalScalar max_strength = transforms_internal::LocalScalar::Constant(1.0);
  bool same_for_all_channels = true;
  bool mean_centered = true;
  bool clip_intensities = false;
  double p_per_channel = 1;
};

struct BrightnessGradientAdditiveParams : TransformParams {
  // Per channel: none (not applied / degenerate), a generator spec, or an explicit dense kernel (bgv2 form).
  std::vector<std::optional<LocalKernelSpec>> specs;
  std::vector<std::shared_ptr<const std::vector<float>>> dense;  // per channel; null unless injected (bgv2 form)
};

class BrightnessGradientAdditiveTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const BrightnessGradientAdditiveConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (BrightnessGradientAdditiveConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<BrightnessGradientAdditiveConfig>& Schema();
  const BrightnessGradientAdditiveConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kBrightnessGradientAdditive; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit BrightnessGradientAdditiveTransform(BrightnessGradientAdditiveConfig c) : config_(std::move(c)) {}
  BrightnessGradientAdditiveConfig config_;
};

}  // namespace augmentd
