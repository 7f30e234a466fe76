// augment/transforms/auglab_affine/auglab_affine.h — AugLab's `RandomAffine3DCustom` (auglab/transforms/gpu/spatial.py:
// kornia's RandomAffine3D with AffineGenerator3D's draw, get_affine_matrix3d and warp_affine3d, align_corners=True,
// zero padding), image and labels, 3D samples only (AugLab's GPU transforms take (B, C, D, H, W)).
//
// Coordinates are kornia's: p = (x, y, z) = (W index, H index, D index), c = ((W − 1)/2, (H − 1)/2, (D − 1)/2).
// Draw (AffineGenerator3D, in its order): angles (yaw, pitch, roll) ~ U(degrees) per axis, scale (s_x, s_y, s_z) ~
// U(scale) per axis, translations t = (2u − 1)·translate·(W, H, D) with u ~ U(0, 1) per axis, then the six shear
// angles (sxy, sxz, syx, syz, szx, szy) ~ U(shear), all in degrees. The forward map (output ← input) is
//   F(p) = A·(p − c) + c + t,  A = R·diag(s),  R = Rodrigues(−angles in radians)   (get_projective_transform)
// composed with kornia's shear matrix on the right, M = F·S (get_shear_matrix3d: the linear part from the negated
// tangents, its offset from the positive ones, about c). The output voxel p samples the input at M⁻¹·p (the inverse
// in double, then float32): trilinear (resample "bilinear") or nearest for the image, nearest for the labels; outside
// the volume the value is 0 (kornia_math: augment/kernels/common/auglab_affine_math.h). An axis of size 1 samples
// index 0 (grid_sample's align_corners unnormalisation of a one-voxel axis).
// AugLab's ranges arrive here as kornia's _tuple_range_reader reads them (the preset converts): a number d is
// (−d, d); six shear numbers s_i give (−s_i, s_i) each (written sorted here: U(a, b) = U(b, a)).
// With same_on_batch augmentd shares the whole draw across the batch, as kornia's generator does.
//
//   auto t = AuglabAffineTransform::FromJson({{"degrees", {-10, 10, -10, 10, -10, 10}}, {"translate", {.1, .1, .1}},
//                                             {"scale", {0.7, 1.4, 0.7, 1.4, 0.7, 1.4}}});
//   // params: {"angles": [3], "scale": [3], "translations": [3] (voxels), "shear": [6] (degrees)}
//
// Thread-safety: immutable after construction (Transform's contract).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct AuglabAffineConfig {
  std::vector<double> degrees = {-10, 10, -10, 10, -10, 10};  // (lo, hi) of yaw (x), pitch (y), roll (z), degrees
  std::vector<double> translate = {0.1, 0.1, 0.1};            // max |shift| as fractions of W, H, D
  std::vector<double> scale = {0.9, 1.1, 0.9, 1.1, 0.9, 1.1};  // (lo, hi) of s_x, s_y, s_z (AugLab's default)
  std::vector<double> shear = {-10, 10, -10, 10, -10, 10, -10, 10, -10, 10, -10, 10};  // (lo, hi) × 6, degrees
  std::string resample = "bilinear";                          // image: "bilinear" or "nearest" (labels: nearest)
};

// AffineGenerator3D's params of one sample (kornia's names; center is derived from the shape).
struct AuglabAffineParams : TransformParams {
  std::array<double, 3> angles{0, 0, 0};        // degrees (yaw, pitch, roll)
  std::array<double, 3> scale{1, 1, 1};         // (s_x, s_y, s_z)
  std::array<double, 3> translations{0, 0, 0};  // voxels (x, y, z)
  std::array<double, 6> shear{0, 0, 0, 0, 0, 0};  // degrees (sxy, sxz, syx, syz, szx, szy)
};

// kornia's 4×4 forward matrix M (output point = M·input point, (x, y, z, 1)), row-major, for a (D, H, W) volume.
std::array<double, 16> AuglabAffineForward(const AuglabAffineParams& p, const std::array<int64_t, 3>& shape);
// The source map M⁻¹ as float32 3×4 rows (auglab_affine_math.h SourcePoint), rows of one-voxel axes zeroed. Shared by
// the CPU and CUDA backends. INVALID_ARGUMENT when M is singular or the map is not finite.
absl::StatusOr<std::array<float, 12>> AuglabAffineSourceMap(const AuglabAffineParams& p,
                                                            const std::array<int64_t, 3>& shape);

class AuglabAffineTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const AuglabAffineConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (AuglabAffineConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<AuglabAffineConfig>& Schema();
  const AuglabAffineConfig& config() const { return config_; }
  bool linear() const { return config_.resample == "bilinear"; }
  TransformKind kind() const override { return TransformKind::kAuglabAffine; }
  // INVALID_ARGUMENT for samples that are not 3D.
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit AuglabAffineTransform(AuglabAffineConfig c) : config_(std::move(c)) {}
  AuglabAffineConfig config_;
};

}  // namespace augmentd
