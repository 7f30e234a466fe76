// augment/transforms/simulate_low_resolution/simulate_low_resolution.h — bgv2 `SimulateLowResolutionTransform`.
//
// Per selected channel (p_per_channel, or the listed allowed_channels each with p_per_channel) a scale s per axis
// (one for all axes with synchronize_axes; shared by channels with synchronize_channels); axes in ignore_axes get
// 1. The channel is resized to round(S_d · s_d) (banker's rounding, s in float32) with nearest-exact and back to S
// with (tri)linear interpolation (align_corners=False).
//
//   SimulateLowResolutionConfig c; c.scale = RandomScalar::Uniform(0.5, 1); c.synchronize_axes = true;
//   c.p_per_channel = 0.5;  // c.ignore_axes = {0} for dummy-2D
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "augment/random_scalar.h"
#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct SimulateLowResolutionConfig {
  RandomScalar scale = RandomScalar::Uniform(0.5, 1);
  bool synchronize_channels = false;
  bool synchronize_axes = true;
  std::optional<std::vector<int64_t>> ignore_axes;       // None in bgv2 = no axis ignored
  std::optional<std::vector<int64_t>> allowed_channels;  // None = all channels
  double p_per_channel = 1;
};

// bgv2: {"apply_to_channel": [idx], "scales": [[s per axis] per selected channel]} (float32 scales).
struct SimulateLowResolutionParams : TransformParams {
  std::vector<int64_t> apply_to_channel;
  std::vector<std::vector<float>> scales;
};

class SimulateLowResolutionTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const SimulateLowResolutionConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (SimulateLowResolutionConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<SimulateLowResolutionConfig>& Schema();
  const SimulateLowResolutionConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kSimulateLowResolution; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit SimulateLowResolutionTransform(SimulateLowResolutionConfig c) : config_(std::move(c)) {}
  SimulateLowResolutionConfig config_;
};

}  // namespace augmentd
