// augment/transforms/edge_convolution/edge_convolution.h — AugLab's RandomConvTransformGPU with kernel_type
// "Laplace" or "Scharr" (neuropoly/AugLab `auglab/transforms/gpu/contrast.py`; nnUNetTrainerDAExtGPU's JSON
// "ScharrTransform" / the CPU trainer's "ConvTransform"): per sample, each channel c of `apply_to_channel` becomes
//   laplace: K ⋆ x, K the 3×3×3 kernel of −1 with 26 at the centre;
//   scharr:  Σ_axis [abs](S_axis ⋆ x), S the 3×3×3 Scharr derivative kernels (weights 9 / 30 / 100) along axes
//            2, 1, 0 in AugLab's order (kernel_x, kernel_y, kernel_z), abs only with `absolute`;
// (⋆: reflect-padded cross-correlation, torch's F.pad(mode="reflect") + conv3d), then with retain_stats
// x ← (x − mean)/(std + 1e-8)·σ₀ + μ₀ (unbiased std, statistics before). NaN / Inf leaves the channel as it was.
// Nothing is drawn (the entry's apply_probability is AugLab's p). in_seg / out_seg / mix_in_out: the entry's
// region_mode (augment/region_mode.h). Not covered: the CPU trainer's zero-padded ConvTransform (this is the GPU
// definition).
//
//   auto t = EdgeConvolutionTransform::FromJson({{"kernel_type", "scharr"}, {"absolute", true}});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "augment/schema.h"
#include "augment/transforms/common/deterministic.h"

namespace augmentd {

struct EdgeConvolutionConfig {
  std::string kernel_type = "laplace";  // "laplace" | "scharr"
  bool absolute = false;                // scharr: sum of |responses|
  std::vector<int64_t> apply_to_channel = {0};
  bool retain_stats = false;
};

class EdgeConvolutionTransform final : public DeterministicTransform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const EdgeConvolutionConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (EdgeConvolutionConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<EdgeConvolutionConfig>& Schema();
  const EdgeConvolutionConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kEdgeConvolution; }
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit EdgeConvolutionTransform(EdgeConvolutionConfig c) : config_(std::move(c)) {}
  EdgeConvolutionConfig config_;
};

}  // namespace augmentd
