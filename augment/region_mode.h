// augment/region_mode.h — a pipeline entry's region mode: AugLab 20260109's `in_seg` / `out_seg` / `mix_in_out`
// (auglab/transforms/gpu/contrast.py, _choose_region_mode + _apply_region_mode), applied by the engines around any
// intensity kind instead of inside each transform (semantics: augment/transforms/AUGLAB_DAEXT.md, "Region modes").
//
//   {"kind": "gamma", "apply_probability": 0.3, "config": {...},
//    "region_mode": {"in_seg": 0.5, "out_seg": 0.5, "mix_in_out": true, "per_sample_coins": false}}
//
// Draw (DrawEntry, augment/batch.h), only for an applied entry whose sample has segmentation channels:
// u_in = U[0, 1), u_out = U[0, 1); mode "in" if only u_in < in_seg, "out" if only u_out < out_seg, else "all".
// The coins' stream follows the entry's TransformSpec::same_on_batch (AugLab draws them once per call, i.e. per
// batch, in every GPU class but RandomInverseGPU):
//   per sample: the entry's stream after the transform's own draws;
//   true (per batch): the batch's first sample's entry stream after the transform's own draws (shared);
//   "decision": RandomStream(seed, first sample of the batch, t, kRegionCoinSubstream) (shared);
//   per_sample_coins with either batch mode: RandomStream(seed, sample, t, kRegionCoinSubstream) — per sample, as
//   RandomInverseGPU draws them inside its loop over the batch (no effect in per-sample mode: already per sample).
// With mix_in_out and mode != "all": one U[0, 1) < 0.5 per seg channel (kept when it falls) from the per-sample
// stream RandomStream(seed, sample, t, kRegionMixSubstream) — per sample even with same_on_batch, as AugLab's
// torch.randint loop over the batch.
// Apply (per sample; mode "all" and samples without labels: the step's output unchanged): for every image channel
// the step changed (a channel left bit-identical stays as it was), t' = the step's output rescaled onto the original
// channel's [min, max] (region_mode_math.h RegionRescale), then out = m·t' + (1 − m)·x, with m = Σ over the kept
// seg channels of seg_k ("in") or 1 − seg_k ("out") — the label *values*, not a 0/1 foreground (AugLab's letter).
// Record / injection JSON of an applied entry: "region": {"mode": "all" | "in" | "out", "keep": [bool per seg
// channel]} beside "params" (injected entries without "region": mode "all").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "augment/kernels/common/region_mode_math.h"
#include "augment/rng.h"
#include "augment/transform.h"
#include "nlohmann/json.hpp"

namespace augmentd {

// The entry's configuration; default: off (nothing drawn, output unchanged).
struct RegionModeConfig {
  double in_seg = 0;        // probability of the "inside" coin
  double out_seg = 0;       // probability of the "outside" coin
  bool mix_in_out = false;  // keep a random half of the seg channels (per sample) in "in" / "out"
  bool per_sample_coins = false;  // batch modes: u_in / u_out per sample (AugLab's RandomInverseGPU), see above
  bool enabled() const { return in_seg > 0 || out_seg > 0; }

  // {"in_seg": p, "out_seg": p, "mix_in_out": bool, "per_sample_coins": bool} (absent keys: defaults; ToJson writes
  // per_sample_coins only when set). INVALID_ARGUMENT "<where>.in_seg" ...
  static absl::StatusOr<RegionModeConfig> FromJson(const nlohmann::json& j, const std::string& where);
  nlohmann::json ToJson() const;
};

// One sample's draw.
struct RegionDraw {
  int32_t mode = region_mode::kAll;
  uint64_t keep = region_mode::kKeepAll;  // bit k: seg channel k takes part in m
  int32_t seg_channels = 0;               // at draw time (the length of "keep" in the JSON)
};

inline constexpr uint32_t kRegionMixSubstream = 0x52474Du;   // "RGM": the per-sample mix_in_out stream
inline constexpr uint32_t kRegionCoinSubstream = 0x524743u;  // "RGC": the coins' own stream (see above)

// The draw above: `coins` is the entry's stream after the transform's draws, `mix` the per-sample stream.
RegionDraw DrawRegion(const RegionModeConfig& c, int64_t seg_channels, RandomStream& coins, RandomStream& mix);

nlohmann::json RegionDrawToJson(const RegionDraw& r);
// INVALID_ARGUMENT "region..." for an unknown mode, keep of another length than `seg_channels` or non-booleans.
absl::StatusOr<RegionDraw> RegionDrawFromJson(const nlohmann::json& j, int64_t seg_channels);

// The apply half on one sample (CPU engine): `orig` is the sample's image before the step, `sample` after it.
// No-op for mode "all" or a sample without labels; INVALID_ARGUMENT when the step changed the image's size or the
// draw's seg channels do not match the sample's (the kind is not an intensity kind).
absl::Status ApplyRegion(const RegionDraw& r, const std::vector<float>& orig, SampleData& sample);

}  // namespace augmentd
