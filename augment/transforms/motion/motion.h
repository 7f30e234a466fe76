// augment/transforms/motion/motion.h — TorchIO `RandomMotion` / `Motion` (rigid motion during k-space acquisition).
//
// Draw (RandomMotion.get_params, in this order): degrees (N × 3, U(lo, hi), `degrees` d gives (−d, d)),
// translation (N × 3, likewise, in voxels = mm at unit spacing), then N noise values U(−0.3·step, 0.3·step) with
// step = 1/(N+1); times[i] = float32((i+1)·step) + noise[i]. A 2D sample (d0, d1) is TorchIO's (d0, d1, 1): the
// first two angles and the third translation are zeroed. N = num_transforms, all channels share the draw.
// Apply (Motion.add_artifact, per channel): image 0 is the input, image t (1..N) the input resampled through
// TorchIO's rigid transform t. TorchIO builds an Euler3DTransform about the image centre but then rebuilds it from
// (matrix, translation) only, so the effective map rotates about the physical origin (voxel 0): with its RAS→LPS
// flip D = diag(−1, −1, 1) and R = Rz·Rx·Ry (ITK's Euler3D, ZXY) the input continuous index of output voxel i is
// D·R·D·i + D·t. Outside [−0.5, n−0.5) on any axis the value is min(input channel) (ITK's default pixel value).
// Spectra (fftshift(fftn)) are swapped so that the input's spectrum takes slot j = first i with times[i] > 0.5
// (else N); along the LAST axis, shifted planes [b_{j−1}, b_j) come from slot j, b_j = int(float32(n2)·times[j]),
// b_{−1} = 0, b_N = n2; image ← float32(real(ifftn(ifftshift(...)))).
// Resampling: trilinear in float64 with neighbour indices clamped to the volume, inside iff −0.5 <= ci < n − 0.5 on
// every axis — SimpleITK's LinearInterpolateImageFunction and ResampleImageFilter conventions (checked against
// SimpleITK 2.5 at half-voxel border offsets). Differences from TorchIO are rounding only: ITK evaluates the
// interpolation as nested lerps (v0 + (v1 − v0)·d) where augmentd sums eight weighted corners, and TorchIO's FFTs
// are complex64 where augmentd's CPU reference is complex128 (measured: tests/python/test_mri_parity.py).
// Injected as {"degrees": [[3] × N], "translation": [[3] × N], "times": [N]} (times non-decreasing in [0, 1]).
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct MotionConfig {
  std::array<double, 2> degrees{-10, 10};
  std::array<double, 2> translation{-10, 10};
  int num_transforms = 2;  // 1..16
};

struct MotionParams : TransformParams {
  std::vector<std::array<double, 3>> degrees, translation;
  std::vector<float> times;
};

// Input continuous index = m · (i, j, k) + b for rigid transform t (row-major 3×3 then 3).
struct MotionAffine {
  double m[9];
  double b[3];
};
MotionAffine MotionIndexAffine(const std::array<double, 3>& degrees, const std::array<double, 3>& translation);

// Per slot j (0..N) of the composite: which image fills it (0 = input) and its shifted last-axis planes [lo, hi).
struct MotionSegment {
  int image;
  int64_t lo, hi;
};
std::vector<MotionSegment> MotionSegments(const MotionParams& p, int64_t last_axis);

// One channel resampled through `a` (trilinear, default value `fill` outside); `in`/`out` (d0, d1, d2) C order.
void MotionResample(const float* in, const std::array<int64_t, 3>& shape, const MotionAffine& a, float fill, float* out);

class MotionTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const MotionConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (MotionConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<MotionConfig>& Schema();
  const MotionConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kMotion; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit MotionTransform(MotionConfig c) : config_(c) {}
  MotionConfig config_;
};

}  // namespace augmentd
