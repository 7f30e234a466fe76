// augment/transforms/redistribute_seg/redistribute_seg.h — AugLab's RandomRedistributeSegGPU (neuropoly/AugLab
// `auglab/transforms/gpu/fromSeg.py`, auglab 20260109; transform_params_gpu.json "RedistributeSegTransform": in_seg
// 0.2, retain_stats false, probability 0.3): segmentation-guided intensity redistribution.
//
// Per sample and channel c of `apply_to_channel` (default [0]), with R = the segmentation's channel count (one
// region per seg channel; nnU-Net's label map: R = 1, region = label != 0):
//   x ← nan_to_num(x) (NaN, ±Inf → 0);  μ₀, σ₀ = mean, population std (retain_stats);
//   x ← (x − min)/max(max − min, 1e-6);
//   no voxel with label > 0: the channel becomes this normalised x and nothing else happens (AugLab's early exit);
//   per region r: mask_r = seg_r != 0, ring_r = dilate(mask_r, 3 × 3×3×3 max-pool) ∧ ¬mask_r,
//     m_r, s_r = mean, population std of x over mask_r; m'_r, s'_r over ring_r (counts clamped to ≥ 1),
//     σ_r = max(jitter_r + 0.4·|(m_r − m'_r)·s_r/(s'_r + 1e-6)|, 0.01),
//     add += a_r·N(x; m_r, σ_r) over the whole image, or only inside mask_r when `in_seg` fell
//     (N(x; m, σ) = (1/(σ + 1e-6))/√(2π)·exp(−½((x − m)/(σ + 1e-6))²));
//   if max(add) − min(add) > 1e-8: x ← x + 2·(add − min)/(max − min + 1e-6);
//   retain_stats: x ← (x − mean)/max(std, 1e-7)·σ₀ + μ₀ (population std);
//   NaN / Inf in the result: the channel stays as it was before the transform.
// Draws (AugLab's torch.rand order, per channel): u < in_seg ("<=" in AugLab), jitter_r = 0.2·U for r < R, then
// a_r = 2·U − 1 for r < R. AugLab draws them only for samples with foreground; augmentd always draws (the values
// are unused otherwise). Statistics in double (torch: float32 reductions; they agree to float32 rounding).
//
//   auto t = RedistributeSegTransform::FromJson({{"in_seg", 0.2}, {"retain_stats", false}});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct RedistributeSegConfig {
  double in_seg = 0.2;  // in [0, 1]
  std::vector<int64_t> apply_to_channel = {0};
  bool retain_stats = false;
};

// {"apply_to_channel": [..], "in_seg": [bool per channel], "jitter": [[R per channel]], "amplitude": [[R ...]]}
struct RedistributeSegParams : TransformParams {
  std::vector<int64_t> apply_to_channel;
  std::vector<bool> in_seg;
  std::vector<std::vector<float>> jitter, amplitude;
};

class RedistributeSegTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const RedistributeSegConfig& config);
  // Every config field once: name, rule, one-line doc (augment/schema.h); FromJson = Schema().Parse + Create.
  static const ConfigSchema<RedistributeSegConfig>& Schema();
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  const RedistributeSegConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kRedistributeSeg; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit RedistributeSegTransform(RedistributeSegConfig c) : config_(std::move(c)) {}
  RedistributeSegConfig config_;
};

namespace redistribute_seg_internal {
// 3 iterations of a 3×3×3 max-pool (stride 1, padding 1) of a 0/1 mask = a 7×7×7 box dilation (3D shape s).
std::vector<uint8_t> Dilate3(const std::vector<uint8_t>& mask, const int64_t* s);
}  // namespace redistribute_seg_internal

}  // namespace augmentd
