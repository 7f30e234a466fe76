// augment/transforms/elastic_deformation/elastic_deformation.h — TorchIO `RandomElasticDeformation` /
// `ElasticDeformation` (AugLab's nnUNetTrainerDAExt `SpatialCustomTransform(elastic=True)` calls
// `tio.RandomElasticDeformation(max_displacement=40)`: 7 control points per axis, 2 locked borders).
//
// Draw (TorchIO 1.2.1 get_params): a (n0, n1, n2, 3) grid of displacements (2·U[0, 1) − 1)·max_displacement[d]
// (float32, C order), then for i < locked_borders the planes i and n − 1 − i of grid axes 0 and 1 are zeroed
// (TorchIO never locks grid axis 2). One grid per sample, shared by every channel and the labels.
// Apply (ElasticDeformation with SimpleITK, spacing 1, identity RAS affine → LPS point p = D·i, D = diag(−1, −1, 1)):
// BSplineTransformInitializer(image, n − 3) spans the pixel-centre bounding box grown by 0.5 + 2⁻³ per side with an
// identity grid direction: per axis origin_a = min_a − 0.625, grid spacing h_a = (S_a + 0.25)/(n_a − 3), grid node
// g at origin_a + (g − 1)·h_a; the grid values are the drawn displacements (ITK's parameters = the grid flattened in
// Fortran order), in LPS. Displacement at p: Σ over the 4×4×4 nodes from floor(u − 1), u_a = (p_a − origin_a)/h_a + 1,
// of the cubic B-spline weights B3(u_a − g_a). Input index = D·(p + displacement); images: linear, fill = the
// channel minimum; labels: nearest, fill = their minimum (TorchIO: component.min()). 2D samples (TorchIO's
// (W, H, 1)) take no displacement along axis 2. Interpolation rules: sitk_resample.h (per voxel: the B-spline is
// not a linear transform, so ITK does not use the scanline path).
// Parameters are Philox draws (augmentd's stream), injected as {"num_control_points": [n0, n1, n2],
// "control_points": [n0·n1·n2·3 values, C order of (x, y, z, component)]}.
//
//   auto t = ElasticDeformationTransform::FromJson({{"num_control_points", 7}, {"max_displacement", 40}});
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct ElasticDeformationConfig {
  std::array<int64_t, 3> num_control_points{7, 7, 7};  // each in [4, 64]
  std::array<double, 3> max_displacement{7.5, 7.5, 7.5};  // >= 0
  int locked_borders = 2;                               // 0, 1 or 2 (2 needs > 4 control points)
  bool linear = true;                                   // image_interpolation "linear" (else "nearest")
};

struct ElasticDeformationParams : TransformParams {
  std::array<int64_t, 3> num_control_points{4, 4, 4};
  std::vector<float> control_points;  // n0·n1·n2·3, C order (x, y, z, component), LPS displacements
};

class ElasticDeformationTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const ElasticDeformationConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // num_control_points, max_displacement, locked_borders, image_interpolation, label_interpolation
  static const ConfigSchema<ElasticDeformationConfig>& Schema();
  const ElasticDeformationConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kElasticDeformation; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit ElasticDeformationTransform(ElasticDeformationConfig c) : config_(c) {}
  ElasticDeformationConfig config_;
};

namespace elastic_internal {
// Per voxel index along one axis of `size` voxels with `nodes` control points and LPS direction `dir` (±1): the first
// of its 4 grid nodes and their cubic B-spline weights (shared by the CPU transform and its CUDA stage).
struct AxisWeights {
  std::vector<int64_t> start;
  std::vector<std::array<double, 4>> w;
};
AxisWeights Weights(int64_t size, int64_t nodes, double dir);
}  // namespace elastic_internal

}  // namespace augmentd
