// augment/transforms/gaussian_noise/gaussian_noise.h — bgv2 `GaussianNoiseTransform`: x_c += N(0, σ²) per voxel.
//
// `noise_variance` is used as the standard deviation σ (bgv2 samples σ ~ U(0, 0.1) and calls normal_(0, σ)).
// Channels with p_per_channel; one σ for all selected channels (synchronize_channels) or one per channel.
// The per-voxel field is augmentd::NormalAt(key(seed, sample, transform, substream = 1 + channel), voxel), so
// the CUDA path reproduces it exactly; it cannot equal torch's generator, so parity tests compare statistics.
// The CPU op (kernels::AddGaussianNoise) computes the same bits block-wise (4 normals per Philox block, vectorised).
//
//   auto t = GaussianNoiseTransform::Create({RandomScalar::Uniform(0, 0.1), 1, /*synchronize_channels=*/true});
#pragma once

#include <memory>
#include <vector>

#include "augment/random_scalar.h"
#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct GaussianNoiseConfig {
  RandomScalar noise_variance = RandomScalar::Uniform(0, 0.1);
  double p_per_channel = 1;
  bool synchronize_channels = false;
};

// bgv2: {"apply_mask": [bool]*C, "apply_idx": [idx], "num_apply": n, "sigmas": σ | [σ per channel] | null}
// plus augmentd's "noise_key": {"seed", "sample_index", "transform_index"} naming the noise field.
struct GaussianNoiseParams : TransformParams {
  std::vector<int64_t> apply_idx;
  std::vector<float> sigmas;  // one per selected channel (a synchronised σ is repeated)
  int64_t channels = 0;
  uint64_t seed = 0, sample_index = 0;
  uint32_t transform_index = 0;
  bool key_given = false;  // false: injected without "noise_key" (the engine binds the sample's own key)
};

class GaussianNoiseTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const GaussianNoiseConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (GaussianNoiseConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<GaussianNoiseConfig>& Schema();
  const GaussianNoiseConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kGaussianNoise; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;
  void CompleteInjected(TransformParams& params, const DrawContext& ctx) const override;

 private:
  explicit GaussianNoiseTransform(GaussianNoiseConfig c) : config_(c) {}
  GaussianNoiseConfig config_;
};

}  // namespace augmentd
