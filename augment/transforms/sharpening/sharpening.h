// augment/transforms/sharpening/sharpening.h — bgv2 `SharpeningTransform` (Laplacian sharpening, replicate padding).
//
// Per applied channel: lap = conv(replicate_pad(x, 1), K) with K the 6-neighbour (3D) / 4-neighbour (2D)
// Laplacian (centre +6 / +4, face neighbours −1); x ← x + strength·lap (float32, as bgv2's
// `laplace.mul_(strength).add_(x)`); optionally clamped to the channel's original [min, max].
// Draw order (numpy): use_same = U < p_same_for_each_channel; then either one strength + one clamp coin for all
// channels, or per channel C strengths then C clamp coins; then C apply coins (U < p_per_channel).
//
//   auto t = SharpeningTransform::Create({RandomScalar::Uniform(0.1, 1), /*p_same=*/0, /*p_per_channel=*/0.5, 0});
#pragma once

#include <memory>
#include <vector>

#include "augment/random_scalar.h"
#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct SharpeningConfig {
  RandomScalar strength = RandomScalar::Constant(0.2);  // a float or [lo, hi] (U) in bgv2
  double p_same_for_each_channel = 0;
  double p_per_channel = 1;
  double p_clamp_intensities = 0;
};

// bgv2: {"strengths": [C floats], "clamp_intensities": [C bools], "apply_channel": [C bools]}.
struct SharpeningParams : TransformParams {
  std::vector<double> strengths;
  std::vector<bool> clamp_intensities;
  std::vector<bool> apply_channel;
};

class SharpeningTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const SharpeningConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (SharpeningConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<SharpeningConfig>& Schema();
  const SharpeningConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kSharpening; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit SharpeningTransform(SharpeningConfig c) : config_(c) {}
  SharpeningConfig config_;
};

}  // namespace augmentd
