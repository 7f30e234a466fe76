// augment/transforms/clamp/clamp.h — AugLab's RandomClampGPU (neuropoly/AugLab `auglab/transforms/gpu/contrast.py`;
// `transform_params_gpu.json` "ClampTransform", probability 0 in the default JSON): per sample and channel c of
// `apply_to_channel`, two draws (in this order, channel by channel)
//   q_lo = U[0, 1) · max_clamp_amount,   q_hi = 1 − U[0, 1) · max_clamp_amount
// then x ← clamp(x, quantile(x, q_lo), quantile(x, q_hi)) with torch.quantile's 'linear' rule in float32 (rank
// q·(n − 1), lerp of the two neighbouring order statistics), and with retain_stats x ← (x − mean)/(std + 1e-8)·σ₀
// + μ₀ (unbiased std, statistics before the clamp). A result with NaN / Inf leaves the channel as it was (AugLab's
// guard). Per-sample draws (AugLab's same_on_batch=False branch); in_seg / out_seg / mix_in_out: the
// pipeline entry's region_mode (augment/region_mode.h).
//
//   auto t = ClampTransform::FromJson({{"max_clamp_amount", 0.2}, {"retain_stats", true}});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct ClampConfig {
  double max_clamp_amount = 0.2;  // in [0, 0.5]
  std::vector<int64_t> apply_to_channel = {0};
  bool retain_stats = false;
};

// {"apply_to_channel": [..], "min_percentile": [q_lo per channel], "max_percentile": [q_hi per channel]}
struct ClampParams : TransformParams {
  std::vector<int64_t> apply_to_channel;
  std::vector<float> min_percentile, max_percentile;
};

class ClampTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const ClampConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (ClampConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<ClampConfig>& Schema();
  const ClampConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kClamp; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit ClampTransform(ClampConfig c) : config_(std::move(c)) {}
  ClampConfig config_;
};

// torch.quantile(x, q) ('linear', float32) of n values; `scratch` is reordered.
float Quantile(std::vector<float>& scratch, float q);

}  // namespace augmentd
