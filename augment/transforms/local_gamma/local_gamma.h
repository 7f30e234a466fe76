// augment/transforms/local_gamma/local_gamma.h — bgv2 `LocalGammaTransform` (DA5: gamma blended in through a Gaussian bump).
//
// Per applied channel: K = the normalised bump of local_kernel.h (per axis loc_d ~ `loc` · S_d, scale_d ~
// `scale`), g ~ `gamma`; with mn/mx the channel's min/max and r = max(mx − mn, 1e-8), all float32 as numpy:
//   n = (x − mn) / r;   x ← (n^g · K + (1 − K) · n) · r + mn.
// Draw order: C apply coins; nothing else if none; then one (kernel, gamma) shared (same_for_all_channels) or one
// per applied channel in channel order (per axis: loc then scale; then gamma).
// nnU-Net DA5: scale {"axis_size_log_uniform": [6, 1]}, loc [-0.5, 1.5], gamma = mixture ½·U(0.01, 0.8) +
// ½·U(1.5, 4), same_for_all_channels = false, p_per_channel = 0.5.
//
// Params: bgv2's {"kernels": [C × (nested list | null)], "gammas": [C × (g | null)]} is accepted; augmentd reports
// (and accepts) the compact {"kernel_params": [C × ({"loc": [...], "scale": [...]} | null)], "gammas": [...]}.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"
#include "augment/transforms/brightness_gradient_additive/brightness_gradient_additive.h"
#include "augment/transforms/common/local_kernel.h"

namespace augmentd {

struct LocalGammaConfig {
  transforms_internal::LocalScalar scale = transforms_internal::LocalScalar::Uniform(5, 15);
  transforms_internal::LocalScalar loc = transforms_internal::LocalScalar::Uniform(-1, 2);
  transforms_internal::LocalScalar gamma = transforms_internal::LocalScalar::Uniform(0.5, 1);
  bool same_for_all_channels = true;
  double p_per_channel = 1;
};

struct LocalGammaParams : TransformParams {
  std::vector<std::optional<LocalKernelSpec>> specs;             // per channel (factor unused)
  std::vector<std::shared_ptr<const std::vector<float>>> dense;  // per channel; bgv2's explicit kernels
  std::vector<std::optional<double>> gammas;                     // per channel
};

class LocalGammaTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const LocalGammaConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (LocalGammaConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<LocalGammaConfig>& Schema();
  const LocalGammaConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kLocalGamma; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit LocalGammaTransform(LocalGammaConfig c) : config_(std::move(c)) {}
  LocalGammaConfig config_;
};

}  // namespace augmentd
