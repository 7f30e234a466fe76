// augment/transforms/zscore_normalization/zscore_normalization.h — AugLab's ZscoreNormalizationGPU
// (neuropoly/AugLab `auglab/transforms/gpu/contrast.py`; `transform_params_gpu.json` "ZscoreNormalization",
// probability 0 in the default JSON): per sample, each channel of `apply_to_channel` becomes
//   x ← (x − mean(x)) / max(std(x), 1e-8)        (population std, statistics of that sample's channel)
// With `unbiased` the std is torch.std's (n − 1): AugLab's CPU-side ZscoreNormalization, which nnUNetTrainerDAExtGPU
// runs in its CPU loader (`auglab/transforms/cpu/contrast.py`, channel 0, no guard needed there).
// Channels outside the sample are skipped, as AugLab does; a result with NaN / Inf leaves the channel as it was
// (AugLab's guard). Nothing is drawn: the entry's apply_probability is AugLab's p. in_seg / out_seg / mix_in_out:
// the entry's region_mode (augment/region_mode.h).
//
//   auto t = ZscoreNormalizationTransform::FromJson({{"apply_to_channel", {0}}});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transforms/common/deterministic.h"

namespace augmentd {

struct ZscoreNormalizationConfig {
  std::vector<int64_t> apply_to_channel = {0};  // AugLab's default
  bool unbiased = false;                        // std with n − 1 (AugLab's CPU ZscoreNormalization)
};

class ZscoreNormalizationTransform final : public DeterministicTransform {
 public:
  // INVALID_ARGUMENT for a negative channel index.
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const ZscoreNormalizationConfig& config);
  // {"apply_to_channel": [..], "unbiased": false} (a single integer is accepted for apply_to_channel too).
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (ZscoreNormalizationConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<ZscoreNormalizationConfig>& Schema();
  const ZscoreNormalizationConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kZscoreNormalization; }
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit ZscoreNormalizationTransform(ZscoreNormalizationConfig c) : config_(std::move(c)) {}
  ZscoreNormalizationConfig config_;
};

}  // namespace augmentd
