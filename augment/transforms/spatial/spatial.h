// augment/transforms/spatial/spatial.h — bgv2 `SpatialTransform` (rotation, scaling, elastic deformation, centre crop to
// the patch size), optionally wrapped in nnU-Net's dummy-2D handling. Both resampling semantics are available,
// chosen by `bgv2_version` (default "0.3.6", what `pip install nnunetv2` installs today; the draws are the same):
//  * "0.3.6": segmentation padded first and resampled after (the padding label votes wherever the kernel reaches
//    outside the image), `seg_tiebreak` ('nearest' default, 'lowest', 'highest'), constant image padding by
//    shifting values, no out-of-bounds fill.
//  * "0.3.5": fp16 argmax with lowest-label ties, out-of-bounds voxels (bgv2's mask with its swapped-threshold
//    quirk) filled with the constant, bg_style_seg_sampling threshold mode.
//
//   SpatialConfig c;
//   c.patch_size = {128, 128, 128};
//   c.p_rotation = 0.2; c.rotation = RandomScalar::Uniform(-0.5236, 0.5236);
//   c.p_scaling = 0.2;  c.scaling = RandomScalar::Uniform(0.7, 1.4); c.p_synchronize_scaling_across_axes = 1;
//   c.bg_style_seg_sampling = false; c.border_mode_seg = "constant"; c.padding_value_seg = -1;
//   auto t = SpatialTransform::Create(c);                   // StatusOr<std::shared_ptr<const Transform>>
//
// Output voxel j samples input coordinate x = A·(j − (p−1)/2 + offsets) + (S−1)/2 (+ the bgv2 quirks documented
// in reference §4.1): trilinear image sampling with zero padding; segmentation by fused per-label linear
// interpolation with fp16 argmax and lowest-label ties; constant border with bgv2's out-of-bounds mask. When
// nothing is drawn the output is the integer crop starting at floor(S/2) − p//2 (half-voxel quirk included).
//
// `dummy_2d` (augmentd extension): the sample (C, X, Y, Z) is viewed as (C·X, Y, Z) for a 2D `patch_size`
// (= nnU-Net's Convert3DTo2DTransform → SpatialTransform → Convert2DTo3DTransform).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "augment/random_scalar.h"
#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

// bgv2 SpatialTransform constructor arguments (same names and defaults).
struct SpatialConfig {
  std::vector<int64_t> patch_size;
  std::vector<double> patch_center_dist_from_border = {0};  // one value broadcasts
  bool random_crop = false;
  double p_elastic_deform = 0;
  RandomScalar elastic_deform_scale = RandomScalar::Uniform(0, 0.2);
  RandomScalar elastic_deform_magnitude = RandomScalar::Uniform(0, 0.2);
  double p_synchronize_def_scale_across_axes = 0;
  double p_rotation = 0;
  RandomScalar rotation = RandomScalar::Uniform(0, 6.283185307179586);
  double p_rot_per_axis = 1;
  double p_scaling = 0;
  RandomScalar scaling = RandomScalar::Uniform(0.7, 1.3);
  double p_synchronize_scaling_across_axes = 0;
  bool bg_style_seg_sampling = false;     // bgv2 0.3.6's default (0.3.5's is true; FromJson follows the version)
  std::string mode_seg = "bilinear";      // "bilinear" | "nearest"
  std::string border_mode_seg = "zeros";  // "zeros" | "constant"
  bool center_deformation = true;
  std::string mode_image = "bilinear";       // "bilinear" | "nearest"
  std::string padding_mode_image = "zeros";  // "zeros" | "constant"
  double padding_value_seg = 0;
  double padding_value_image = 0;
  bool align_corners = false;  // only false is supported (nnU-Net)
  bool dummy_2d = false;       // augmentd: fold axis 0 into channels around this transform
  std::string bgv2_version = "0.3.6";  // resampling semantics: one of SupportedBgv2Versions()
  std::string seg_tiebreak;            // "nearest" | "lowest" | "highest" (0.3.6); empty: the version's default
};

// The bgv2 releases whose SpatialTransform semantics augmentd implements ({"0.3.5", "0.3.6"}), oldest first.
const std::vector<std::string>& SupportedBgv2Versions();
// Whether `c` follows bgv2 0.3.6's pad-first segmentation resampling (every version after 0.3.5).
bool SegPadFirst(const SpatialConfig& c);
// `c.seg_tiebreak` or, when empty, the version's rule ("nearest" for 0.3.6, "lowest" for 0.3.5).
std::string ResolvedSegTiebreak(const SpatialConfig& c);

// bgv2 get_parameters(): {"affine", "elastic_offsets", "center_location_in_pixels"} (the grid is derived).
struct SpatialParams : TransformParams {
  int ndim = 3;                                       // spatial dims the transform works in (2 for dummy-2D)
  std::optional<std::vector<double>> affine;          // ndim×ndim row-major, float64 as numpy builds it; none = crop
  std::optional<std::vector<float>> elastic_offsets;  // (*patch_size, ndim) C order (injected); wins over `elastic`
  std::vector<double> center_location_in_pixels;
  // A drawn elastic deformation as its recipe: component d is the white noise NormalAt(MakeStreamKey(seed,
  // sample_index, transform_index, 1 + d), voxel) smoothed by SmoothElasticComponent(sigma[d], magnitude[d]). The
  // offsets are materialised from it on demand (Apply, ParamsToJson: SpatialTransform::ElasticOffsets), so an
  // engine that generates the field itself (CUDA) never computes it on the host.
  struct ElasticRecipe {
    uint64_t seed = 0;
    uint64_t sample_index = 0;
    uint32_t transform_index = 0;
    std::vector<double> sigma;      // per component, in pixels (def_scale[d] · patch_size[d])
    std::vector<double> magnitude;  // per component: max |offset|
  };
  std::optional<ElasticRecipe> elastic;
};

class SpatialTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const SpatialConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (SpatialConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<SpatialConfig>& Schema();

  const SpatialConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kSpatial; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;
  std::vector<int64_t> OutputShape(const std::vector<int64_t>& in) const override;

  // bgv2 create_affine_matrix_3d / _2d: Rz(a2)·Ry(a1)·Rx(a0)·diag(s) (3D), R(a)·diag(s) (2D), row-major.
  static std::vector<double> AffineMatrix(const std::vector<double>& angles, const std::vector<double>& scales);
  // The elastic offsets of `p`, (*patch_size, ndim) C order: the injected ones, those of its recipe, or empty.
  std::vector<float> ElasticOffsets(const SpatialParams& p) const;
  // INVALID_ARGUMENT naming the field for parameters no engine accepts (Apply and the CUDA chain both check):
  // center_location_in_pixels not `nd` finite values with |c| <= 1e7, an affine not nd×nd finite values with
  // |a| <= 1e4, injected elastic offsets not finite with |o| <= 1e5.
  static absl::Status ValidateParams(const SpatialParams& p, int nd);

 private:
  explicit SpatialTransform(SpatialConfig c) : config_(std::move(c)) {}
  // Working (possibly folded) layout: returns ndim and fills shape/channel multipliers.
  absl::Status WorkingLayout(const SampleLayout& layout, std::vector<int64_t>& shape, int64_t& fold) const;
  SpatialConfig config_;
};

}  // namespace augmentd
