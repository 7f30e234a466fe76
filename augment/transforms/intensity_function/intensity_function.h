// augment/transforms/intensity_function/intensity_function.h — AugLab's intensity functions and inverse: the five
// RandomFunctionGPU entries and the RandomInverseGPU entry that nnUNetTrainerDAExtGPU chains (neuropoly/AugLab
// `auglab/transforms/gpu/contrast.py`, `auglab/transforms/gpu/transforms.py` func_list; config
// `transform_params_gpu.json`: "FunctionTransform" probability 0.05 each, retain_stats false; "InverseTransform"
// probability 0.3, retain_stats false), as one transform.
//
// Per sample, in this draw order: one coin U[0, 1) < p_function per configured function, then U[0, 1) < p_inverse.
// Apply, per channel c of apply_to_channel (AugLab's default [0]), in order:
//   for each function f whose coin fell:  x ← f((x − min)/(max − min + 1e-5))  [retain_stats]
//   if the inverse coin fell:             x ← max − x                          [inverse_retain_stats]
//   retain: x ← (x − mean(x))/(std(x) + 1e-8)·σ₀ + μ₀ with the statistics before that step (unbiased std).
// Functions (AugLab's func_list order): "log1p" log(1 + x), "sqrt", "sin", "exp", "sigmoid" 1/(1 + exp(−x)), and
// "square" (RandomFunctionGPU's default func). Without retain_stats the output stays in f's range (as AugLab).
// Differences: AugLab normalises with the min/max of all samples the step applies to (x.min() over the batch
// slice); augmentd uses each sample's own min/max, and draws its coins per sample (AugLab's container shares them
// with same_on_batch=True: the entry's same_on_batch, pipeline.h). in_seg / out_seg / mix_in_out (+ seg_channel):
// auglab_region.h — AugLab's function and inverse transforms each draw their own region, so augmentd draws one region
// per (step, channel), steps in the order above (functions, then the inverse; every step, whether its coin fell or
// not) × apply_to_channel, after the coins; default off. Not covered: the NaN/Inf guard. Math: augment/kernels/common/auglab_math.h.
//
//   auto t = IntensityFunctionTransform::FromJson({{"p_function", 0.05}, {"p_inverse", 0.3}});
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"
#include "augment/transforms/common/auglab_region.h"

namespace augmentd {

struct IntensityFunctionConfig {
  std::vector<int64_t> apply_to_channel = {0};
  std::vector<int32_t> functions = {0, 1, 2, 3, 4};  // cuda::auglab::IntensityFn codes, in application order
  double p_function = 0.05;
  bool retain_stats = false;
  double p_inverse = 0.3;
  bool inverse_retain_stats = false;
  AuglabRegionConfig region;  // in_seg, out_seg, mix_in_out, seg_channel
};

// {"apply_to_channel": [n], "functions": [one bool per configured function], "inverse": bool}, plus "region" /
// "region_labels" ((functions + 1) · n entries, step-major) when the config enables regions.
struct IntensityFunctionParams : TransformParams {
  std::vector<int64_t> apply_to_channel;
  std::vector<bool> functions;
  bool inverse = false;
  std::vector<AuglabRegion> region;  // empty: every step on whole channels; else [step · n + channel]
};

class IntensityFunctionTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const IntensityFunctionConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // Every configuration field once: name, default (IntensityFunctionConfig{}), range, doc (augment/schema.h).
  static const ConfigSchema<IntensityFunctionConfig>& Schema();
  const IntensityFunctionConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kIntensityFunction; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;
  // Reads the labels only with regions enabled (in_seg / out_seg > 0, auglab_region.h).
  bool UsesLabels() const override { return config_.region.enabled(); }

 private:
  explicit IntensityFunctionTransform(IntensityFunctionConfig c) : config_(std::move(c)) {}
  IntensityFunctionConfig config_;
};

// Names of the function codes ("log1p", ...); INVALID_ARGUMENT for an unknown name.
absl::StatusOr<int32_t> IntensityFnFromName(const std::string& name);
std::string IntensityFnName(int32_t fn);

// Region slots of a sample applying `channels` channels: (functions + 1) · channels (index step · channels + i).
size_t RegionSlots(const IntensityFunctionConfig& c, size_t channels);

// One step on one channel of n voxels: fn >= 0 applies that function, fn < 0 the inverse.
void ApplyIntensityStep(float* x, int64_t n, int32_t fn, bool retain_stats);

}  // namespace augmentd
