// augment/transforms/anisotropy/anisotropy.h — TorchIO `RandomAnisotropy` (AugLab's nnUNetTrainerDAExt
// `SpatialCustomTransform(anisotropy=True)` calls `tio.RandomAnisotropy(downsampling=7)`, i.e. m ~ U(1, 7)).
//
// Draw (TorchIO 1.2.1 get_params): axis = axes[randint(len(axes))] (2D samples drop axis 2), then m ~ U(lo, hi)
// (`downsampling` d gives (1, d), TorchIO's _parse_range with min_constraint 1). One draw per sample.
// Apply (spacing 1, identity affine, antialias off): along `axis` of extent n, Resample(target spacing m) with
// nearest: n' = floor(n / m) voxels (kept at n' = 1 when n == 1; TorchIO would fail for n' = 0, augmentd keeps 1)
// centred on the image, output voxel j at input index c − (n' − 1)/2·m + j·m with c = (n − 1)/2; then Resample
// back onto the original grid with `image_interpolation`: input continuous index (i − c)/m + (n' − 1)/2, ITK's
// inside rule, fill 0 (ResampleImageFilter's default pixel value). See sitk_resample.h for the interpolation.
// Every image channel gets the same (axis, m); labels only when scalars_only is false (nearest both ways, fill 0).
// Parameters are Philox draws (augmentd's stream), injected as {"axis": a, "downsampling": m}.
//
//   auto t = AnisotropyTransform::FromJson({{"axes", {0, 1, 2}}, {"downsampling", {1.5, 5}}});
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"
#include "augment/transforms/common/sitk_resample.h"

namespace augmentd {

struct AnisotropyConfig {
  std::vector<int64_t> axes{0, 1, 2};
  std::array<double, 2> downsampling{1.5, 5.0};  // 1 <= lo <= hi
  bool linear = true;                            // image_interpolation "linear" (else "nearest")
  bool scalars_only = true;
};

struct AnisotropyParams : TransformParams {
  int64_t axis = 0;
  double downsampling = 1;
};

class AnisotropyTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const AnisotropyConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  static const ConfigSchema<AnisotropyConfig>& Schema();  // axes, downsampling, image_interpolation, scalars_only
  const AnisotropyConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kAnisotropy; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;
  bool UsesLabels() const override { return !config_.scalars_only; }

 private:
  explicit AnisotropyTransform(AnisotropyConfig c) : config_(std::move(c)) {}
  AnisotropyConfig config_;
};

namespace anisotropy_internal {
// The two resamplings of one sample (shape `s`, drawn axis and factor m): nearest onto `low_shape` through `down`,
// then back onto `s` through `up` (index affines of sitk_resample.h; shared by the CPU transform and its CUDA stage).
struct DownUpMaps {
  std::array<int64_t, 3> low_shape{1, 1, 1};
  sitk::IndexAffine down, up;
};
DownUpMaps MapsOf(const std::array<int64_t, 3>& s, int64_t axis, double m);
}  // namespace anisotropy_internal

}  // namespace augmentd
