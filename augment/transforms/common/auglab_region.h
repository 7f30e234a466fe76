// augment/transforms/common/auglab_region.h — AugLab's segmentation-restricted application (`in_seg`, `out_seg`,
// `mix_in_out`; neuropoly/AugLab `auglab/transforms/gpu/contrast.py` _choose_region_mode / _apply_region_mode),
// shared by the AugLab transforms (histogram_equalization, random_convolution, intensity_function).
//
// Config keys (all optional; the defaults leave the transform exactly as without them — nothing is drawn):
//   in_seg       probability of the "inside" coin (default 0)
//   out_seg      probability of the "outside" coin (default 0)
//   mix_in_out   restrict the region to a random half of the labels (default false)
//   seg_channel  the segmentation channel that defines the region (default 0)
// Draw, per region slot (each applied channel; for intensity_function each step × channel), after every other draw
// of the transform and only when in_seg > 0 or out_seg > 0: u_in = U[0, 1), u_out = U[0, 1); in = u_in < in_seg,
// out = u_out < out_seg; mode = "in" if only in, "out" if only out, else "all" (AugLab draws both coins the same way).
// With mix_in_out and mode != "all": keep = NextU32() | NextU32() << 32 (label l is kept iff bit l mod 64 is set,
// i.e. each label with probability 1/2); otherwise keep = all labels.
// Apply: the step runs on the whole channel as without regions (its statistics and retain_stats included), then
// voxels outside the region get their value from before the step back. Foreground = seg[seg_channel] > 0 and kept
// (labels <= 0, e.g. nnU-Net's −1 padding, are background); "in" transforms the foreground only, "out" the rest.
//
// Differences from AugLab (intent rather than letter): AugLab's mask is argmax(seg, axis=1) > 0 over the seg
// channels, which is always false for nnU-Net's single-channel label map (so "in" selects nothing there); augmentd
// uses seg channel `seg_channel` > 0. AugLab's mix_in_out keeps a random half of the seg *channels* (one-hot
// classes); augmentd keeps a random half of the label values. AugLab draws the coins once per batch and channel;
// augmentd per sample. A sample without segmentation is transformed everywhere (AugLab: no mask → "all"). Some
// AugLab versions rescale the transformed channel to the original's min/max before blending (normalize=True);
// augmentd does not (the newer default). AugLab 20260109's own rule (rescale, blend by label values) is the pipeline
// entry's `region_mode` (augment/region_mode.h), which works on any intensity kind.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "augment/kernels/common/auglab_math.h"
#include "augment/rng.h"
#include "augment/schema.h"
#include "augment/transform.h"
#include "nlohmann/json.hpp"

namespace augmentd {

struct AuglabRegionConfig {
  double in_seg = 0;
  double out_seg = 0;
  bool mix_in_out = false;
  int64_t seg_channel = 0;
  bool enabled() const { return in_seg > 0 || out_seg > 0; }
};

// One slot's draw. mode: cuda::auglab::RegionMode (0 all, 1 in, 2 out); keep: label mask (bit l mod 64).
struct AuglabRegion {
  int32_t mode = cuda::auglab::kRegionAll;
  uint64_t keep = cuda::auglab::kKeepAllLabels;
};

namespace auglab_region {

// `own` plus the config keys above, for CheckKeys.
std::vector<std::string> WithConfigKeys(std::vector<std::string> own);
// INVALID_ARGUMENT "<where>.in_seg: ..." etc. for probabilities outside [0, 1] or seg_channel outside [0, 4096).
absl::Status Validate(const AuglabRegionConfig& c, const std::string& where);
// Reads (and validates) the keys of `j`; absent keys keep the defaults.
absl::StatusOr<AuglabRegionConfig> FromConfigJson(const nlohmann::json& j, const std::string& where);
// Adds the keys that differ from the defaults to `out` (so default configs serialise as before).
void ToConfigJson(const AuglabRegionConfig& c, nlohmann::json& out);

// The four region fields of a transform's schema (augment/schema.h), stored in `C::*region`; like ToConfigJson they
// are written only when they differ from the defaults. Validate (cross-field) stays in the transform's Create.
template <class C>
void AddConfigFields(ConfigSchema<C>& s, AuglabRegionConfig C::*region) {
  s.template AddAt<double>(
       "in_seg", [region](C& c) -> double& { return (c.*region).in_seg; },
       "probability that a slot applies only inside the labels", OmitDefault(Probability()))
      .template AddAt<double>(
          "out_seg", [region](C& c) -> double& { return (c.*region).out_seg; },
          "probability that a slot applies only outside the labels", OmitDefault(Probability()))
      .template AddAt<bool>(
          "mix_in_out", [region](C& c) -> bool& { return (c.*region).mix_in_out; },
          "in / out region draws mixed per slot", OmitDefault())
      .template AddAt<int64_t>(
          "seg_channel", [region](C& c) -> int64_t& { return (c.*region).seg_channel; },
          "segmentation channel whose labels define the region", OmitDefault(AtLeast(0)));
}

// INVALID_ARGUMENT "<where>.seg_channel: ..." when regions are enabled and the sample has segmentation channels but
// not seg_channel. Checked when applying (the seg channels at that point of the pipeline, e.g. after
// convert_segmentation_to_regions), not when drawing.
absl::Status CheckSegChannel(const AuglabRegionConfig& c, int64_t seg_channels, const std::string& where);
// `slots` draws in the documented order (call only when c.enabled()).
std::vector<AuglabRegion> Draw(const AuglabRegionConfig& c, size_t slots, RandomStream& rng);

// Params JSON: {"region": ["all" | "in" | "out", ...], "region_labels": [keep, ...]}, added only when `r` is
// non-empty; FromParamsJson returns an empty list when "region" is absent (every slot "all") and
// INVALID_ARGUMENT "params.region..." for a wrong length or name.
void ToParamsJson(const std::vector<AuglabRegion>& r, nlohmann::json& out);
absl::StatusOr<std::vector<AuglabRegion>> FromParamsJson(const nlohmann::json& j, size_t slots);
// The region of slot i (all when the list is empty).
inline AuglabRegion At(const std::vector<AuglabRegion>& r, size_t i) { return r.empty() ? AuglabRegion{} : r[i]; }

// Puts orig[v] back into x[v] for every voxel v outside region `r` of sample `s` (its seg channel c.seg_channel);
// no-op for mode "all" or a sample without segmentation. INVALID_ARGUMENT "<where>.seg_channel" when the sample
// lacks that seg channel.
absl::Status RestoreOutside(float* x, const float* orig, const SampleData& s, const AuglabRegionConfig& c,
                            AuglabRegion r, const std::string& where);

// INVALID_ARGUMENT "params.region: ..." unless `r` is empty or has `slots` entries.
absl::Status CheckSlots(const std::vector<AuglabRegion>& r, size_t slots);

// Runs `step()` (which transforms the n voxels at x in place) restricted to region `r`: keeps a copy of x in
// `scratch` when r is not "all", then RestoreOutside.
template <typename Step>
absl::Status RunInRegion(float* x, int64_t n, const SampleData& s, const AuglabRegionConfig& c, AuglabRegion r,
                         const std::string& where, std::vector<float>& scratch, Step&& step) {
  if (r.mode == cuda::auglab::kRegionAll) {
    step();
    return absl::OkStatus();
  }
  scratch.assign(x, x + n);
  step();
  return RestoreOutside(x, scratch.data(), s, c, r, where);
}

}  // namespace auglab_region
}  // namespace augmentd
