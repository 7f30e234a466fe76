// augment/transforms/auglab_flip/auglab_flip.h — AugLab's `RandomFlipTransformGPU` (auglab/transforms/gpu/spatial.py,
// with its FlipGenerator3D), image and labels, 3D samples only (AugLab's GPU transforms take (B, C, D, H, W)).
//
// Its draw differs from bgv2's MirrorTransform (augment/transforms/mirror/): three coins u_a ~ U(0, 1), flag_a =
// u_a > 0.5, for the axes a = 0, 1, 2 whatever `flip_axis` holds; when no flag is set, one axis of `flip_axis` is
// chosen uniformly and flagged. Then the axes with flag_a = 1 that are in `flip_axis` are flipped (so with
// flip_axis = [0] axis 0 flips with p = 0.5 + 0.125, and not at all when only a coin of axis 1 or 2 came up).
// With same_on_batch (AugLab's per-batch draws) augmentd shares the whole draw; AugLab shares the coins but draws the
// fallback axis per sample (torch.randint inside its per-sample loop) — differs only for flip_axis of 2+ axes.
//
//   auto t = AuglabFlipTransform::Create({/*flip_axis=*/{0}});
//   // params (AugLab's): {"flip": [f0, f1, f2]} with f_a in {0, 1}
//
// Thread-safety: immutable after construction (Transform's contract).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct AuglabFlipConfig {
  std::vector<int64_t> flip_axis = {0, 1, 2};  // AugLab's constructor default; its GPU JSON uses [0]
};

// AugLab's params["flip"] of one sample: the drawn flag of each spatial axis (also for axes outside flip_axis).
struct AuglabFlipParams : TransformParams {
  std::array<int, 3> flip{0, 0, 0};
};

class AuglabFlipTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const AuglabFlipConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (AuglabFlipConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<AuglabFlipConfig>& Schema();
  const AuglabFlipConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kAuglabFlip; }
  // INVALID_ARGUMENT for samples that are not 3D.
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;
  // Which spatial axes `params` flips: flag set and the axis in flip_axis (shared by the CPU and CUDA backends).
  std::array<bool, 3> FlippedAxes(const AuglabFlipParams& params) const;

 private:
  explicit AuglabFlipTransform(AuglabFlipConfig c) : config_(std::move(c)) {}
  AuglabFlipConfig config_;
};

}  // namespace augmentd
