// augment/transforms/gaussian_blur/gaussian_blur.h — bgv2 `GaussianBlurTransform`: separable Gaussian blur, reflect
// padding.
//
// Channels with p_per_channel; σ per selected channel and axis (nnU-Net: U(0.5, 1) each, independent), or shared
// per axis (synchronize_channels) / across axes (synchronize_axes). Axes are blurred 0, 1, 2 in turn with a
// k = nearest_odd(6σ + 0.5)-tap kernel (k = 3 for σ < 0.5833, 5 below 0.9167, else 7 in nnU-Net's range).
// bgv2's `benchmark` only chooses conv vs FFT (same result up to rounding) and is accepted and ignored.
//
//   auto t = GaussianBlurTransform::Create({RandomScalar::Uniform(0.5, 1.0), false, false, 0.5, true});
#pragma once

#include <memory>
#include <vector>

#include "augment/random_scalar.h"
#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct GaussianBlurConfig {
  RandomScalar blur_sigma = RandomScalar::Uniform(1, 5);
  bool synchronize_channels = false;
  bool synchronize_axes = false;
  double p_per_channel = 1;
  bool benchmark = false;
};

// bgv2: {"apply_to_channel": [bool]*C, "sigmas": [[σ per axis] per selected channel]}
// (synchronize_channels: "sigmas" is one flat [σ per axis] list shared by all selected channels).
struct GaussianBlurParams : TransformParams {
  int64_t channels = 0;
  std::vector<int64_t> apply_to_channel;
  std::vector<std::vector<double>> sigmas;  // per selected channel, per axis (expanded when synchronised)
};

class GaussianBlurTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const GaussianBlurConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (GaussianBlurConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<GaussianBlurConfig>& Schema();
  const GaussianBlurConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kGaussianBlur; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;

 private:
  explicit GaussianBlurTransform(GaussianBlurConfig c) : config_(c) {}
  GaussianBlurConfig config_;
};

}  // namespace augmentd
