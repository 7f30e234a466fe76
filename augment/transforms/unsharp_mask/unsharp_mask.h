// augment/transforms/unsharp_mask/unsharp_mask.h — AugLab's RandomConvTransformGPU with kernel_type "UnsharpMask"
// (neuropoly/AugLab `auglab/transforms/gpu/contrast.py`; nnUNetTrainerDAExtGPU's JSON "UnsharpMaskTransform",
// unsharp_amount 1.5 there): per sample three draws σ_d = U[0, 1)·sigma (axes 0, 1, 2), the 3×3×3 kernel
//   g_d(t) = exp(−½ (t/σ_d)²) / Σ_t(…) for t = 0, 1, 2 — AugLab's taps are not centred (arange(3)) —
//   K = g_0 ⊗ g_1 ⊗ g_2 / ΣK,
// and for each channel c of `apply_to_channel`: x ← x + amount·(x − K ⋆ x) (reflect-padded cross-correlation), then
// with retain_stats x ← (x − mean)/(std + 1e-8)·σ₀ + μ₀ (unbiased std). NaN / Inf (e.g. σ = 0) leaves the channel as
// it was (AugLab's guard). AugLab draws one kernel per batch call: the entry's same_on_batch (pipeline.h; per sample
// without it). in_seg / out_seg / mix_in_out: the entry's region_mode (augment/region_mode.h).
//
//   auto t = UnsharpMaskTransform::FromJson({{"sigma", 1.0}, {"unsharp_amount", 1.5}});
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct UnsharpMaskConfig {
  double sigma = 1.0;           // σ_d ~ U(0, sigma)
  double unsharp_amount = 1.0;  // AugLab's constructor default (its GPU trainer JSON: 1.5)
  std::vector<int64_t> apply_to_channel = {0};
  bool retain_stats = false;
};

// {"sigma": [σ_0, σ_1, σ_2]}
struct UnsharpMaskParams : TransformParams {
  std::array<float, 3> sigma = {0, 0, 0};
};

class UnsharpMaskTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const UnsharpMaskConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (UnsharpMaskConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<UnsharpMaskConfig>& Schema();
  const UnsharpMaskConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kUnsharpMask; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit UnsharpMaskTransform(UnsharpMaskConfig c) : config_(std::move(c)) {}
  UnsharpMaskConfig config_;
};

}  // namespace augmentd
