// augment/transforms/random_convolution/random_convolution.h — AugLab's RandomConvTransformGPU with kernel_type "RandConv"
// (neuropoly/AugLab `auglab/transforms/gpu/contrast.py`, after Xu et al. 2021 "Robust and generalizable visual
// representation learning via random convolutions"; trainer nnUNetTrainerDAExtGPU, config
// `transform_params_gpu.json` "RandomConvTransform": kernel_sizes [1, 3, 5, 7], mix_prob 0.2, retain_stats false,
// probability 0.1).
//
// Per sample and per channel c of apply_to_channel (AugLab's default [0]), in this draw order:
//   k ~ uniform choice of kernel_sizes;  w[a, b, c] ~ N(0, 1)/k  (k³ weights, C order; AugLab: randn·1/sqrt(k·k));
//   mix ~ U[0, 1) < mix_prob;  if mix: alpha ~ U[0, 1).
// Apply: y = conv3d(reflect-pad(x, k/2), w)  (cross-correlation, torch "reflect" padding);
//   mix: y ← alpha·x + (1 − alpha)·y;   retain_stats: y ← (y − mean(y))/(std(y) + 1e-8)·σ₀ + μ₀.
// AugLab draws its kernels per sample too (a loop over the batch) but shares its probability coin across the batch
// (container same_on_batch=True): the pipeline entry's "same_on_batch": "decision" (pipeline.h). AugLab's probability
// is the pipeline entry's apply_probability (0.1). Axes shorter than k/2 + 1 reflect repeatedly (torch raises there); a
// 2D sample reads as 1 × d0 × d1. in_seg / out_seg / mix_in_out (+ seg_channel): auglab_region.h — one region per
// applied channel, drawn after all the draws above (region of the result after mix and retain_stats); default off. Not
// covered: the NaN/Inf guard.
//
//   auto t = RandomConvolutionTransform::FromJson({{"kernel_sizes", {1, 3, 5, 7}}, {"mix_prob", 0.2}});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"
#include "augment/transforms/common/auglab_region.h"

namespace augmentd {

struct RandomConvolutionConfig {
  std::vector<int64_t> apply_to_channel = {0};
  std::vector<int64_t> kernel_sizes = {1, 3, 5, 7};  // odd, 1..15
  double mix_prob = 0.2;
  bool retain_stats = false;
  AuglabRegionConfig region;  // in_seg, out_seg, mix_in_out, seg_channel
};

// {"apply_to_channel": [n], "kernel_size": [n], "kernel": [n lists of k³ floats], "mix": [n bools],
//  "alpha": [n floats]} (one entry per applied channel; alpha is ignored where mix is false), plus "region" /
//  "region_labels" ([n]) when the config enables regions.
struct RandomConvolutionParams : TransformParams {
  std::vector<int64_t> apply_to_channel;
  std::vector<int32_t> kernel_size;
  std::vector<std::vector<float>> kernel;
  std::vector<bool> mix;
  std::vector<float> alpha;
  std::vector<AuglabRegion> region;  // empty: every channel whole
};

class RandomConvolutionTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const RandomConvolutionConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (RandomConvolutionConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<RandomConvolutionConfig>& Schema();
  const RandomConvolutionConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kRandomConvolution; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;
  // Reads the labels only with regions enabled (in_seg / out_seg > 0, auglab_region.h).
  bool UsesLabels() const override { return config_.region.enabled(); }

 private:
  explicit RandomConvolutionTransform(RandomConvolutionConfig c) : config_(std::move(c)) {}
  RandomConvolutionConfig config_;
};

}  // namespace augmentd
