// augment/transforms/rician_noise/rician_noise.h — bgv2 `RicianNoiseTransform` (MRI magnitude noise).
//
// v ~ U(noise_variance) is used as the standard deviation (as bgv2 does). Over the whole sample (all channels):
//   m = min(x);  r = sqrt((x − m + n_re)² + n_im²) + m,  n_re, n_im ~ N(0, v²) per element;
//   r ← (r − mean(r)) / std(r) · std(x) + mean(x)   (unbiased std; r ← mean(x) if std(r) = 0).
// The noise fields are augmentd::NormalAt(key(seed, sample, transform, substream 1 / 2), element) — device-
// independent; they cannot equal torch's generator, so parity tests compare statistics.
//
//   auto t = RicianNoiseTransform::Create({{0.0, 0.1}});
#pragma once

#include <array>
#include <memory>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct RicianNoiseConfig {
  std::array<double, 2> noise_variance{0.0, 0.1};  // np.random.uniform(lo, hi)
};

// bgv2: {"variance": v} plus augmentd's "noise_key": {"seed", "sample_index", "transform_index"}.
struct RicianNoiseParams : TransformParams {
  double variance = 0;
  uint64_t seed = 0, sample_index = 0;
  uint32_t transform_index = 0;
  bool key_given = false;  // false: injected without "noise_key" (the engine binds the sample's own key)
};

class RicianNoiseTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const RicianNoiseConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (RicianNoiseConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<RicianNoiseConfig>& Schema();
  const RicianNoiseConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kRicianNoise; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;
  void CompleteInjected(TransformParams& params, const DrawContext& ctx) const override;

 private:
  explicit RicianNoiseTransform(RicianNoiseConfig c) : config_(c) {}
  RicianNoiseConfig config_;
};

}  // namespace augmentd
