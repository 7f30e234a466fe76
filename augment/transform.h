// augment/transform.h — the interface every augmentation transform implements (torch-free).
//
// A transform is built from its typed configuration (the batchgeneratorsv2 constructor arguments), draws
// per-sample parameters from a counter-based stream (the equivalent of bgv2's `get_parameters()`), and applies
// them to one sample in place (`_apply_to_image` / `_apply_to_segmentation`). Parameters can also be given
// explicitly (JSON in bgv2's own `get_parameters()` dict format), for parity tests and replay.
//
//   const augmentd::Transform& t = ...;                 // e.g. from augmentd::TransformFromJson(...)
//   augmentd::RandomStream rng(seed, sample_index, transform_index);
//   augmentd::DrawContext ctx{rng, seed, sample_index, transform_index};
//   ASSIGN_OR_RETURN(auto params, t.Draw(ctx, sample.layout()));
//   RETURN_IF_ERROR(t.Apply(*params, sample));
//
// Thread-safety: a Transform is immutable after construction; Draw/Apply may run concurrently on different
// samples. A SampleData is owned by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "augment/rng.h"
#include "nlohmann/json.hpp"

namespace augmentd {

// Every transform kind, in pipeline order: one line per kind in augment/transforms/kinds.inc (the one list; its name,
// capabilities and backends are on the same line). k<CamelName>, e.g. kGamma, kConvertSegmentationToRegions.
enum class TransformKind : uint8_t {
#define AUGMENTD_KIND(camel, snake, caps, cuda, lift) k##camel,
#include "augment/transforms/kinds.inc"
#undef AUGMENTD_KIND
};
// The count, derived from the list.
inline constexpr int kNumTransformKinds = 0
#define AUGMENTD_KIND(camel, snake, caps, cuda, lift) +1
#include "augment/transforms/kinds.inc"
#undef AUGMENTD_KIND
    ;

// "spatial", "gaussian_noise", ... (the registry entry's name; "unknown" outside the enum).
std::string_view TransformKindName(TransformKind kind);

// Spatial layout of one sample: `channels` × shape (2 or 3 spatial dims).
struct SampleLayout {
  int64_t channels = 0;
  std::vector<int64_t> shape;  // spatial dims only
  int64_t seg_channels = 0;    // 0: no segmentation
};

// One level of the deep-supervision label pyramid.
struct LabelLevel {
  std::vector<int64_t> shape;  // spatial
  std::vector<int16_t> data;   // seg_channels × prod(shape), C order
};

// One sample while it runs through the pipeline. Images are float32 (bgv2 works in float32); labels int16
// (nnU-Net's seg dtype); region targets are stored as 0/1 in `seg` with `seg_is_bool` set.
struct SampleData {
  int64_t channels = 0;
  std::vector<int64_t> shape;  // spatial shape (3D; 2D inside a dummy-2D spatial step)
  std::vector<float> image;    // channels × prod(shape)
  int64_t seg_channels = 0;    // 0: no segmentation
  std::vector<int16_t> seg;    // seg_channels × prod(shape)
  bool seg_is_bool = false;    // set by convert_segmentation_to_regions
  // Set by downsample_seg_for_ds: the label pyramid (level 0 = full resolution). `seg` is then emptied.
  std::vector<LabelLevel> seg_pyramid;
  // Engine fast path: read-only caller buffers (float32 image, int16 seg) not yet copied into `image`/`seg`.
  // Only transforms that read through image_data()/seg_data() (spatial) accept them; the engine calls
  // Materialize() before any other transform.
  const float* external_image = nullptr;
  const int16_t* external_seg = nullptr;

  int64_t voxels() const;
  const float* image_data() const { return external_image != nullptr ? external_image : image.data(); }
  const int16_t* seg_data() const {
    return external_seg != nullptr ? external_seg : (seg.empty() ? nullptr : seg.data());
  }
  // Copies external buffers into `image`/`seg` (no-op when there are none).
  void Materialize();
  SampleLayout layout() const { return SampleLayout{channels, shape, seg_channels}; }
};

// Base of every per-sample parameter struct (e.g. GammaParams in augment/transforms/gamma/gamma.h).
struct TransformParams {
  virtual ~TransformParams() = default;
};

// What a transform needs to draw its parameters: the stream of (seed, sample, transform) plus the key,
// so per-voxel fields (noise) can be regenerated from augmentd::NormalAt by any device.
struct DrawContext {
  RandomStream& rng;
  uint64_t seed = 0;
  uint64_t sample_index = 0;
  uint32_t transform_index = 0;
};

class Transform {
 public:
  virtual ~Transform() = default;
  virtual TransformKind kind() const = 0;
  std::string_view name() const { return TransformKindName(kind()); }

  // Draws this sample's parameters exactly as bgv2's get_parameters() distributes them.
  virtual absl::StatusOr<std::unique_ptr<TransformParams>> Draw(DrawContext& ctx, const SampleLayout& layout) const = 0;
  // Applies `params` (from Draw or ParamsFromJson of this transform) to `sample` in place.
  virtual absl::Status Apply(const TransformParams& params, SampleData& sample) const = 0;

  // Parameters in bgv2's get_parameters() dict format (see augment/capi.h for every transform's keys).
  virtual nlohmann::json ParamsToJson(const TransformParams& params) const = 0;
  virtual absl::StatusOr<std::unique_ptr<TransformParams>> ParamsFromJson(const nlohmann::json& j,
                                                                          const SampleLayout& layout) const = 0;
  // ParamsFromJson after checking that `j` is an object (null reads as {}); what callers should use.
  absl::StatusOr<std::unique_ptr<TransformParams>> ParseParams(const nlohmann::json& j,
                                                               const SampleLayout& layout) const;
  // Completes injected parameters with what JSON cannot carry, from the stream the sample would have drawn with
  // (Gaussian noise: the noise-field key when "noise_key" was not given). Default: nothing to complete.
  virtual void CompleteInjected(TransformParams& /*params*/, const DrawContext& /*ctx*/) const {}
  // Configuration with bgv2 constructor argument names.
  virtual nlohmann::json ConfigToJson() const = 0;
  // Spatial shape of the output for an input of `in` (only spatial/DS transforms change it).
  virtual std::vector<int64_t> OutputShape(const std::vector<int64_t>& in) const { return in; }
  // Image and segmentation channel counts of the output for inputs of `image_channels` / `seg_channels` (only
  // move_seg_as_one_hot_to_data changes them; regions' label channels are sized by their callers).
  virtual void OutputChannels(int64_t& /*image_channels*/, int64_t& /*seg_channels*/) const {}
  // Whether this entry reads, writes or moves the labels (so it cannot follow downsample_seg_for_ds). Default: the
  // kind's kCapUsesLabels (augment/registry.h); transforms whose configuration decides (AugLab's regions) override.
  virtual bool UsesLabels() const;
};

}  // namespace augmentd
