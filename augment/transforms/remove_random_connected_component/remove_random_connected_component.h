// augment/transforms/remove_random_connected_component/remove_random_connected_component.h — bgv2
// `RemoveRandomConnectedComponentFromOneHotEncodingTransform` (nnU-Net's cascade: drops one connected component of
// the previous stage's one-hot channels).
//
// Draw: shuffle channel_idx; one coin per channel (< p_per_label) in the shuffled order. Apply, per applied channel a
// in that order, when x[a] has any non-zero voxel: label the components of (x[a] != 0) with full connectivity
// (skimage.measure.label's default: 8-neighbourhood in 2D, 26 in 3D; labels 1, 2, ... in raster order of their first
// voxel); the valid components are those with size < N · dont_do_if_covers_more_than_x_percent (N = voxels of the
// sample); if there is one, component valid[⌊u_c · |valid|⌋] is set to 0 in x[a] and, when u_f <
// fill_with_other_class_p and channel_idx has other channels, set to 1 in other[⌊u_o · |other|⌋] (other = channel_idx
// without a, in configuration order). bgv2 draws the three choices inside apply with np.random (they need the
// labels); augmentd draws u_c, u_f, u_o per applied channel up front so the choice is a parameter that can be
// injected (params keys component_draw, fill_draw, other_class_draw, one per applied channel, each in [0, 1)).
// channel_idx entries may be negative (nnU-Net passes range(−K, 0)).
//
//   RemoveRandomConnectedComponentConfig c{{-2, -1}, /*fill_with_other_class_p=*/0, 0.15, /*p_per_label=*/0.5};
//   auto t = RemoveRandomConnectedComponentTransform::Create(c);
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct RemoveRandomConnectedComponentConfig {
  std::vector<int64_t> channel_idx;  // non-empty; negative = from the end
  double fill_with_other_class_p = 0.25;
  double dont_do_if_covers_more_than_x_percent = 0.25;  // a fraction, despite the name (bgv2)
  double p_per_label = 1;
};

struct RemoveRandomConnectedComponentParams : TransformParams {
  std::vector<int64_t> apply_to_channels;  // entries of channel_idx, in application order
  std::vector<double> component_draw;      // u_c per applied channel
  std::vector<double> fill_draw;           // u_f
  std::vector<double> other_class_draw;    // u_o
};

namespace connected_components_internal {
// Labels the components of the 0/1 mask `m` (2 or 3 spatial dims) with full connectivity: `labels` gets 0 for
// background and 1..K in raster order of each component's first voxel; returns the size of each (index k − 1).
std::vector<int64_t> Label(const std::vector<uint8_t>& m, const std::vector<int64_t>& shape,
                           std::vector<int32_t>& labels);
}  // namespace connected_components_internal

class RemoveRandomConnectedComponentTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const RemoveRandomConnectedComponentConfig& config);
  // Every config field once: name, rule, one-line doc (augment/schema.h); FromJson = Schema().Parse + Create.
  static const ConfigSchema<RemoveRandomConnectedComponentConfig>& Schema();
  // Keys: channel_idx (int or list, required), fill_with_other_class_p (0.25), dont_do_if_covers_more_than_x_percent
  // (0.25), p_per_label (1).
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  const RemoveRandomConnectedComponentConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kRemoveRandomConnectedComponent; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit RemoveRandomConnectedComponentTransform(RemoveRandomConnectedComponentConfig c) : config_(std::move(c)) {}
  RemoveRandomConnectedComponentConfig config_;
};

}  // namespace augmentd
