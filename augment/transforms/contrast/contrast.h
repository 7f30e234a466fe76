// augment/transforms/contrast/contrast.h — bgv2 `ContrastTransform`: x ← (x − μ)·m + μ per selected channel.
//
// μ = mean over all voxels of the channel; with preserve_range the result is clamped to the channel's min/max
// taken before the change. m ~ contrast_range (BGContrast((0.75, 1.25)) in nnU-Net), one per selected channel
// or one shared value (synchronize_channels).
//
//   auto t = ContrastTransform::Create({RandomScalar::BGContrast(0.75, 1.25), /*preserve_range=*/true, false, 1});
#pragma once

#include <memory>
#include <vector>

#include "augment/random_scalar.h"
#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct ContrastConfig {
  RandomScalar contrast_range = RandomScalar::BGContrast(0.75, 1.25);
  bool preserve_range = true;
  bool synchronize_channels = false;
  double p_per_channel = 1;
};

// bgv2: {"apply_to_channel": [idx], "multipliers": [m per selected channel] or null}.
struct ContrastParams : TransformParams {
  std::vector<int64_t> apply_to_channel;
  std::vector<float> multipliers;
};

class ContrastTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const ContrastConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (ContrastConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<ContrastConfig>& Schema();
  const ContrastConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kContrast; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit ContrastTransform(ContrastConfig c) : config_(c) {}
  ContrastConfig config_;
};

}  // namespace augmentd
