// augment/transforms/auglab_low_resolution/auglab_low_resolution.h — AugLab's two resampling transforms of
// nnUNetTrainerDAExtGPU (neuropoly/AugLab `auglab/transforms/gpu/spatial.py`, auglab 20260109), one kind with a
// `mode`:
//   "lowres" — RandomLowResTransformGPU ("SimulateLowResTransform" in transform_params_gpu.json: scale [0.5, 1],
//              crop [0.8, 1], p 0.25): every image channel AND every segmentation channel is resampled
//              nearest-down / nearest-up (torch's legacy "nearest", AugLab's flags override its bilinear default), then
//              everything outside the kept box is set to 0 (image and labels: the zero-outside crop). Region
//              channels (0/1, after convert_segmentation_to_regions) stay 0/1.
//   "acq"    — RandomAcqTransformGPU ("AcqTransform": scale [0.2, 1], crop [1, 1], p 0.4, one_dim=True): the channels
//              of `apply_to_channel` (default [0]) are resampled trilinear-down / trilinear-up (align_corners=False)
//              along the configured axes; labels are untouched. `crop` must be [1, 1] (AugLab's default and
//              JSON): with a crop < 1 AugLab's own code raises (it writes a full-size patch into the smaller box).
// Draw (per sample; AugLab's ShapeGenerator3D order): six U[0, 1) values u_x, u_y, u_z, c_x, c_y, c_z, then
//   scale_a = lo + u·(hi − lo) for the axis of u,  crop_a = lo' + c·(hi' − lo')
// where AugLab's x, y, z are augmentd's spatial axes 2, 1, 0. An axis outside `scale_axes` (`crop_axes`) has the
// range [1, 1] (AugLab's one_dim: it picks the one axis once per run in make_samplers, torch.randint(0, 3); the
// preset / client picks it and lists it here). Apply, per axis a of size S:
//   down_a = max(1, round(scale_a·S)), resample S → down_a → S;
//   keep_a = max(1, round(crop_a·S)), start_a = round(crop_a·(S − keep_a)) (0 when keep_a = S); round: Python's.
// 3D samples only (AugLab's 5D input). Python round of float32 params promoted to double, as AugLab's float(...).
//
//   auto t = AuglabLowResolutionTransform::FromJson({{"mode", "acq"}, {"scale", {0.2, 1.0}}, {"scale_axes", {1}}});
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "augment/schema.h"
#include "augment/transform.h"

namespace augmentd {

struct AuglabLowResolutionConfig {
  enum class Mode { kLowres, kAcq };
  Mode mode = Mode::kLowres;
  std::array<double, 2> scale = {0.3, 1.0};  // in (0, 1]... the downsampled fraction per axis, lo <= hi
  std::array<double, 2> crop = {1.0, 1.0};   // kept fraction per axis, in [0, 1]
  std::vector<int64_t> scale_axes = {0, 1, 2};
  std::vector<int64_t> crop_axes = {0, 1, 2};
  std::vector<int64_t> apply_to_channel = {0};  // acq only ("lowres" resamples every channel)
};

// {"scale": [s0, s1, s2], "crop": [c0, c1, c2]} in augmentd axis order (+ "apply_to_channel" for acq).
struct AuglabLowResolutionParams : TransformParams {
  std::array<float, 3> scale = {1, 1, 1};
  std::array<float, 3> crop = {1, 1, 1};
  std::vector<int64_t> apply_to_channel;
};

class AuglabLowResolutionTransform final : public Transform {
 public:
  static absl::StatusOr<std::shared_ptr<const Transform>> Create(const AuglabLowResolutionConfig& config);
  static absl::StatusOr<std::shared_ptr<const Transform>> FromJson(const nlohmann::json& config);
  // mode, scale, crop, scale_axes, crop_axes, apply_to_channel
  static const ConfigSchema<AuglabLowResolutionConfig>& Schema();
  const AuglabLowResolutionConfig& config() const { return config_; }
  TransformKind kind() const override { return TransformKind::kAuglabLowResolution; }
  absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const override;
  absl::Status Apply(const TransformParams& params, SampleData& sample) const override;
  nlohmann::json ParamsToJson(const TransformParams& params) const override;
  absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                  const SampleLayout& layout) const override;
  nlohmann::json ConfigToJson() const override;
  bool UsesLabels() const override { return config_.mode == AuglabLowResolutionConfig::Mode::kLowres; }

 private:
  explicit AuglabLowResolutionTransform(AuglabLowResolutionConfig c) : config_(std::move(c)) {}
  AuglabLowResolutionConfig config_;
};

namespace auglab_lowres_internal {
// torch's legacy "nearest" source index: min(floor(dst · (float)in/out), in − 1), identity when in == out, dst/2
// when out == 2·in (ATen's nearest_idx).
int64_t NearestIndex(int64_t dst, int64_t in_size, int64_t out_size);
// The kept box along one axis of size s for crop fraction c: {start, keep}.
std::array<int64_t, 2> KeptBox(float c, int64_t s);
}  // namespace auglab_lowres_internal

}  // namespace augmentd
