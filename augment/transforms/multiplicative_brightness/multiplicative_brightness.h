// augment/transforms/multiplicative_brightness/multiplicative_brightness.h — bgv2 `MultiplicativeBrightnessTransform`:
// x_c ← x_c · m_c.
//
// Channels with p_per_channel; m ~ multiplier_range (BGContrast((0.75, 1.25)) in nnU-Net), one per selected channel, or
// one shared value when synchronize_channels.
//
//   auto t = MultiplicativeBrightnessTransform::Create({RandomScalar::BGContrast(0.75, 1.25), false, 1});
#pragma once

#include <memory>
#include <vector>

#include "augment/random_scalar.h"
#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct MultiplicativeBrightnessConfig {
  RandomScalar multiplier_range = RandomScalar::BGContrast(0.75, 1.25);
  bool synchronize_channels = false;
  double p_per_channel = 1;
};

// bgv2: {"apply_to_channel": [idx], "multipliers": [m per selected channel]}.
struct MultiplicativeBrightnessParams : TransformParams {
  std::vector<int64_t> apply_to_channel;
  std::vector<float> multipliers;
};

class MultiplicativeBrightnessTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const MultiplicativeBrightnessConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (MultiplicativeBrightnessConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<MultiplicativeBrightnessConfig>& Schema();
  const MultiplicativeBrightnessConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kMultiplicativeBrightness; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit MultiplicativeBrightnessTransform(MultiplicativeBrightnessConfig c) : config_(c) {}
  MultiplicativeBrightnessConfig config_;
};

}  // namespace augmentd
