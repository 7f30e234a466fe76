// augment/transforms/transpose_axes/transpose_axes.h — bgv2 `TransposeAxesTransform` (DA5: random permutation of the equal-size
// spatial axes of image and segmentation).
//
// Draw: if fewer than 2 allowed axes, the identity order; the allowed axes must have equal sizes (else bgv2 raises:
// INVALID_ARGUMENT); axes = sorted(allowed) + 1, np.random.shuffle(axes) (a uniform permutation), written back into
// the positions of the allowed axes of [0, 1, …, ndim]. Apply: x.permute(axis_order) on image and segmentation.
//
//   auto t = TransposeAxesTransform::Create({/*allowed_axes=*/{1, 2}});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct TransposeAxesConfig {
  std::vector<int64_t> allowed_axes;  // spatial axes; a set (sorted, unique)
};

// bgv2: {"axis_order": [0, ...]} (a permutation of all dims incl. the channel dim 0).
struct TransposeAxesParams : TransformParams {
  std::vector<int64_t> axis_order;
};

// Reorders the spatial axes of every channel of `sample` (image and seg): output voxel o reads input voxel src with
// src[d] = flip[d] ? S_d − 1 − o[perm[d]] : o[perm[d]]; output axis perm[d] has the size of input axis d.
// Shared with rot90 (rot90 = a permutation plus one flip).
void PermuteFlipSpatial(SampleData& sample, const std::vector<int64_t>& perm, const std::vector<bool>& flip);

class TransposeAxesTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const TransposeAxesConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (TransposeAxesConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<TransposeAxesConfig>& Schema();
  const TransposeAxesConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kTransposeAxes; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit TransposeAxesTransform(TransposeAxesConfig c) : config_(std::move(c)) {}
  TransposeAxesConfig config_;
};

}  // namespace augmentd
