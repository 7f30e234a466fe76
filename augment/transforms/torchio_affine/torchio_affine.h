// augment/transforms/torchio_affine/torchio_affine.h — TorchIO `RandomAffine` / `Affine` (AugLab's
// nnUNetTrainerDAExt `SpatialCustomTransform(affine=True)` calls `tio.RandomAffine(degrees=10,
// translation=(0.1, 0.1, 0.1), scales=(0.9, 1.1))`).
//
// Ranges (TorchIO's parse_params): `scales` / `degrees` / `translation` are a number x (per axis (1 − x, 1 + x) for
// scales, (−x, x) otherwise), [a, b] (every axis), [x0, x1, x2] (per axis around 1 or 0) or six values
// [a0, b0, a1, b1, a2, b2]. Draw (get_params): three scales U(a_i, b_i) (isotropic: all three take the first),
// three angles, three translations, in that order. One draw per sample; every channel and the labels share it.
// Apply (spacing 1, identity RAS affine, so SimpleITK's LPS flip D = diag(−1, −1, 1) cancels but for the angle
// signs): the resampler maps output index i to the input continuous index
//   ci = M·((i − c)/s − t) + c,   M = D·Rᵀ·D,   R = Rz·Rx·Ry of the LPS angles (−θ0, −θ1, θ2) (ITK Euler3D)
// with c = (n − 1)/2 per axis (center "image") or 0 (center "origin"): the inverse of the composite
// [scale about c, then Euler rotation about c plus translation]. Images: linear (or nearest), fill = the channel
// minimum ("minimum") or a number; labels: nearest, fill default_pad_label. 2D samples are TorchIO's (W, H, 1):
// s2 = 1 and only θ2 is used (t2 still applies, as in TorchIO). See sitk_resample.h for ITK's interpolation rules.
// Parameters are Philox draws (augmentd's stream), injected as {"scales": [3], "degrees": [3], "translation": [3]}.
//
//   auto t = TorchioAffineTransform::FromJson({{"degrees", 10}, {"translation", {0.1, 0.1, 0.1}},
//                                              {"scales", {0.9, 1.1}}});
#pragma once

#include <array>
#include <memory>
#include <optional>

#include "augment/schema.h"
#include "augment/transform.h"
#include "augment/transforms/common/sitk_resample.h"

namespace augmentd {

struct TorchioAffineConfig {
  std::array<double, 6> scales{0.9, 1.1, 0.9, 1.1, 0.9, 1.1};  // each range within (0, 100]
  std::array<double, 6> degrees{-10, 10, -10, 10, -10, 10};
  std::array<double, 6> translation{0, 0, 0, 0, 0, 0};
  bool isotropic = false;
  bool center_image = true;              // "image" (else "origin")
  std::optional<double> pad_value;       // unset: "minimum"
  double pad_label = 0;
  bool linear = true;                    // image_interpolation "linear" (else "nearest")
};

struct TorchioAffineParams : TransformParams {
  std::array<double, 3> scales{1, 1, 1};
  std::array<double, 3> degrees{0, 0, 0};
  std::array<double, 3> translation{0, 0, 0};
};

// The output-index → input-index map of the parameters for a (s0, s1, s2) grid (2D: s2 = 1, `is_2d`).
sitk::IndexAffine TorchioAffineIndexMap(const TorchioAffineParams& p, const std::array<int64_t, 3>& shape,
                                        bool center_image, bool is_2d);

class TorchioAffineTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const TorchioAffineConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // scales, degrees, translation, isotropic, center, default_pad_value, default_pad_label, image_interpolation,
  // label_interpolation
  static const ConfigSchema<TorchioAffineConfig>& Schema();
  const TorchioAffineConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kTorchioAffine; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit TorchioAffineTransform(TorchioAffineConfig c) : config_(c) {}
  TorchioAffineConfig config_;
};

}  // namespace augmentd
