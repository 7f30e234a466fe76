// augment/transforms/shape_crop/shape_crop.h — AugLab's CPU `ShapeTransform` (neuropoly/AugLab
// `auglab/transforms/cpu/spatial.py`; nnUNetTrainerDAExt's default JSON: probability 0.4, shape_min 1,
// ignore_axes [1, 2]).
//
// Draw: per spatial axis a in order, unless a is in ignore_axes, new_a = randint(shape_min, S_a) (both ends
// inclusive, Python's random.randint); ignored axes keep S_a and draw nothing. shape_min > S_a is INVALID_ARGUMENT
// (Python would raise).
// Apply: AugLab crops image and segmentation to the box start_a = max(0, S_a//2 − new_a//2), end_a = start_a + new_a
// and returns the smaller array (its nnU-Net pipeline then lets the following SpatialTransform pad back to the patch).
// augmentd keeps every sample's shape (the engine's batches have one shape, as AugLab's GPU crop does): the same
// box keeps its values, every voxel outside it becomes 0 in the image and 0 in the labels. The kept voxels are
// AugLab's crop exactly, at their original positions.
// Parameters are Philox draws (augmentd's stream), injected as {"new_shape": [n0, n1(, n2)]}.
//
//   auto t = ShapeCropTransform::FromJson({{"shape_min", 1}, {"ignore_axes", {1, 2}}});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct ShapeCropConfig {
  int64_t shape_min = 1;             // >= 1
  std::vector<int64_t> ignore_axes;  // spatial axes in [0, 3), no repeats
};

struct ShapeCropParams : TransformParams {
  std::vector<int64_t> new_shape;  // one per spatial axis, in [1, S_a]
};

class ShapeCropTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const ShapeCropConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  static const ConfigSchema<ShapeCropConfig>& Schema();  // shape_min, ignore_axes
  const ShapeCropConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kShapeCrop; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit ShapeCropTransform(ShapeCropConfig c) : config_(std::move(c)) {}
  ShapeCropConfig config_;
};

}  // namespace augmentd
