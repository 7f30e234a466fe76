// augment/transforms/histogram_equalization/histogram_equalization.h — AugLab's RandomHistogramEqualizationGPU
// (neuropoly/AugLab `auglab/transforms/gpu/contrast.py`; trainer nnUNetTrainerDAExtGPU, config
// `transform_params_gpu.json` "HistogramEqualizationTransform": probability 0.2, retain_stats false).
//
// Per channel c of apply_to_channel (AugLab's default [0]), on the sample's own channel (mn, mx: its min, max):
//   counts = torch.histc(x, 256 bins, mn, mx);  cdf = cumsum(counts);  cdf_min = first positive cdf;
//   lut[i] = (cdf[i] − cdf_min)/(cdf[255] − cdf_min + 1e-10)·(mx − mn) + mn;
//   x ← lut[clamp(long((x − mn)/((mx − mn)/256 + 1e-10)), 0, 255)]
//   retain_stats: x ← (x − mean(x))/(std(x) + 1e-8)·σ₀ + μ₀ (statistics of the channel before, unbiased std).
// A constant channel is left unchanged (AugLab's arithmetic maps it onto itself). Nothing is random: AugLab's
// `probability` is the pipeline entry's apply_probability (0.2 in AugLab's config), drawn per sample (AugLab's
// container uses same_on_batch=True, which shares the coin across the batch: the entry's same_on_batch, pipeline.h).
// AugLab's in_seg / out_seg / mix_in_out (+ seg_channel): auglab_region.h — one region per applied channel, drawn
// after nothing else (this transform draws nothing of its own); default off. Not covered: AugLab's NaN/Inf guard.
// The math is augment/kernels/common/auglab_math.h's (shared with the CUDA stage).
//
//   auto t = HistogramEqualizationTransform::FromJson({{"apply_to_channel", {0}}, {"retain_stats", false}});
#pragma once

#include <memory>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"
#include "augment/transforms/common/auglab_region.h"

namespace augmentd {

struct HistogramEqualizationConfig {
  std::vector<int64_t> apply_to_channel = {0};
  bool retain_stats = false;
  AuglabRegionConfig region;  // in_seg, out_seg, mix_in_out, seg_channel
};

// {"apply_to_channel": [channels]} (the configured list; nothing else is drawn without regions), plus "region" /
// "region_labels" (one per applied channel) when the config enables regions (auglab_region.h).
struct HistogramEqualizationParams : TransformParams {
  std::vector<int64_t> apply_to_channel;
  std::vector<AuglabRegion> region;  // empty: every channel whole
};

class HistogramEqualizationTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const HistogramEqualizationConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (HistogramEqualizationConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<HistogramEqualizationConfig>& Schema();
  const HistogramEqualizationConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kHistogramEqualization; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;
  // Reads the labels only with regions enabled (in_seg / out_seg > 0, auglab_region.h).
  bool UsesLabels() const override { return config_.region.enabled(); }

 private:
  explicit HistogramEqualizationTransform(HistogramEqualizationConfig c) : config_(std::move(c)) {}
  HistogramEqualizationConfig config_;
};

// Equalises one channel of n voxels in place (the per-channel step above; exposed for the GPU tests).
void EqualizeHistogram(float* x, int64_t n, bool retain_stats);

}  // namespace augmentd
