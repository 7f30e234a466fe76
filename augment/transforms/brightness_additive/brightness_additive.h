// augment/transforms/brightness_additive/brightness_additive.h — bgv2 `BrightnessAdditiveTransform` (DA5: per-channel
// N(μ, σ) shift).
//
// Channels are picked with p_per_channel (`torch.rand(C) < p`); each picked channel c gets x ← x + shift[c].
//   * synchronize_channels = false: shift ~ N(mu, sigma), one draw for every channel (also unpicked ones), as
//     bgv2's `torch.empty(C).normal_(mu, sigma)`.
//   * synchronize_channels = true: bgv2 calls `sample_scalar((mu, sigma))`, i.e. ONE draw of U(mu, sigma)
//     (not a normal!) shared by all channels; reproduced as is (mu > sigma is rejected, bgv2 asserts).
// Draw order: channel coins, then the shift(s). Nothing is drawn when no channel is picked (shift = null).
//
//   auto t = BrightnessAdditiveTransform::Create({/*mu=*/0, /*sigma=*/0.5, /*synchronize_channels=*/false, 0.5});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct BrightnessAdditiveConfig {
  double mu = 0;
  double sigma = 0.5;
  bool synchronize_channels = true;  // bgv2's default
  double p_per_channel = 1;
};

// bgv2: {"apply_to_channel": [int], "shift": [C floats] | null} (shift indexed by channel, not by pick).
struct BrightnessAdditiveParams : TransformParams {
  std::vector<int64_t> apply_to_channel;
  std::vector<float> shift;  // empty = None
};

class BrightnessAdditiveTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const BrightnessAdditiveConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (BrightnessAdditiveConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<BrightnessAdditiveConfig>& Schema();
  const BrightnessAdditiveConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kBrightnessAdditive; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit BrightnessAdditiveTransform(BrightnessAdditiveConfig c) : config_(c) {}
  BrightnessAdditiveConfig config_;
};

}  // namespace augmentd
