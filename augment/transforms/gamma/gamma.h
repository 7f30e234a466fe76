// augment/transforms/gamma/gamma.h — bgv2 `GammaTransform` (optionally inverted, optionally retaining statistics).
//
// Per selected channel (p_per_channel), with g ~ gamma (BGContrast((0.7, 1.5)) in nnU-Net):
//   1. invert: x ← −x;   2. retain: μ = mean(x), σ = std(x) (unbiased, N−1);
//   3. r = max − min;  x ← ((x − min) / max(r, 1e-7))^g · r + min;
//   4. retain: x ← (x − mean(x)) · σ / max(std(x), 1e-7) + μ;   5. invert: x ← −x.
// Draw order: channel coins, retain coins, invert coins, then g (one if synchronize_channels, else per channel).
//
//   GammaConfig c{RandomScalar::BGContrast(0.7, 1.5), /*p_invert_image=*/1, false, 1, 1};
//   auto t = GammaTransform::Create(c);
#pragma once

#include <memory>
#include <vector>

#include "augment/random_scalar.h"
#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct GammaConfig {
  RandomScalar gamma = RandomScalar::BGContrast(0.7, 1.5);
  double p_invert_image = 0;
  bool synchronize_channels = false;
  double p_per_channel = 1;
  double p_retain_stats = 1;
};

// bgv2: {"apply_to_channel", "retain_stats", "invert_image", "gamma"} (one entry per selected channel).
struct GammaParams : TransformParams {
  std::vector<int64_t> apply_to_channel;
  std::vector<bool> retain_stats;
  std::vector<bool> invert_image;
  std::vector<float> gamma;  // float32 like bgv2 (dtype of the image)
};

class GammaTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const GammaConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (GammaConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<GammaConfig>& Schema();
  const GammaConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kGamma; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit GammaTransform(GammaConfig c) : config_(c) {}
  GammaConfig config_;
};

}  // namespace augmentd
