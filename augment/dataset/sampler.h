// augment/dataset/sampler.h — nnU-Net's patch sampler (nnUNetDataLoader, training/dataloading/data_loader.py),
// re-implemented with counter-based randomness so that (seed, batch index) fully determines a batch.
//
//   SamplerOptions opt;                                   // usually from SamplerOptions::ForTraining(...)
//   opt.patch_size = {205, 205, 205}; opt.final_patch_size = {128, 128, 128}; opt.batch_size = 2;
//   ASSIGN_OR_RETURN(PatchSampler s, PatchSampler::Create(opt, case_ids, /*seed=*/42));
//   int64_t c = s.ChooseCase(batch, j);                   // uniform, with replacement
//   bool fg = s.ForceForeground(batch, j);                // positional (or probabilistic) oversampling
//   Box box = s.ChooseBox(batch, j, case_spatial_shape, fg, &class_locations);
//
// What is reproduced exactly (nnU-Net 2.8.1):
//  * case choice: uniform over the case ids, with replacement, independently per slot;
//  * oversampling: slot j is forced-foreground iff `not j < round(B·(1−p))` (Python's round: ties to even),
//    or, with probabilistic_oversampling, iff uniform() < p;
//  * get_bbox: need_to_pad = patch − final_patch (+pad_sides), raised to patch − shape where the image plus
//    padding would still be smaller than the patch; lb = −need//2 (floor division: −ceil(need/2)),
//    ub = shape + need//2 + need%2 − patch; a random box draws each lower corner uniformly in [lb, ub];
//    a forced box picks a key uniformly among keys with ≥1 stored voxel (the annotated key is dropped when
//    others remain), a stored voxel uniformly, and sets lower = max(lb, voxel − patch//2) — no upper clamp;
//    with an ignore label, unforced boxes are centred the same way on the annotated key (random if empty);
//    a forced slot of a case without eligible keys falls back to a random box;
//  * 2D configurations: a 2-entry patch becomes (1, *patch) and one slice is sampled.
// Not reproduced: numpy's random streams (we use Philox: same distributions, different draws).
//
// Randomness: augment/rng.h RandomStream(seed, sample_index = batch_index·B + j, kSamplerTransformIndex,
// substream) with substreams kCaseSubstream (case), kOversampleSubstream (probabilistic coin), kBoxSubstream
// (key, voxel, random corner). Transform index 4095 is reserved for the sampler (4094: foreground
// locations); augmentation transforms use lower indices, so their draws never collide with the sampler's.
// Thread-safety: a PatchSampler is immutable; all methods are const and may run concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/dataset/case_array.h"
#include "augment/dataset/class_locations.h"

namespace augmentd::dataset {

inline constexpr uint32_t kSamplerTransformIndex = 4095;
inline constexpr uint32_t kCaseSubstream = 0;
inline constexpr uint32_t kOversampleSubstream = 1;
inline constexpr uint32_t kBoxSubstream = 2;

struct SamplerOptions {
  std::vector<int64_t> patch_size;        // box sampled: initial_patch_size (train) or patch_size (val)
  std::vector<int64_t> final_patch_size;  // the plan's patch_size; need_to_pad = patch_size − final_patch_size
  std::vector<int64_t> pad_sides;         // optional, added to need_to_pad (nnU-Net's pad_sides; usually empty)
  int64_t batch_size = 2;
  double oversample_foreground_percent = 0.33;
  bool probabilistic_oversampling = false;
  bool has_ignore_label = false;  // unforced boxes centre on the annotated key

  // Training loader of the default nnUNetTrainer: patch = initial_patch_size, final = plan patch size.
  static SamplerOptions ForTraining(const std::vector<int64_t>& plan_patch_size,
                                    const std::vector<int64_t>& initial_patch_size, int64_t batch_size,
                                    bool has_ignore_label);
  // Validation loader: patch = final = plan patch size (need_to_pad 0), same oversampling.
  static SamplerOptions ForValidation(const std::vector<int64_t>& plan_patch_size, int64_t batch_size,
                                      bool has_ignore_label);
};

// The positional rule: true iff `not j < round(batch_size · (1 − percent))`.
bool IsForcedForegroundSlot(int64_t j, int64_t batch_size, double percent);

// The admissible range of a box's lower corner, per spatial axis (both ends inclusive), and the need_to_pad
// used (after raising it for images smaller than the patch).
struct BoxRange {
  std::vector<int64_t> lb, ub, need_to_pad;
};
BoxRange ComputeBoxRange(const Shape& spatial_shape, const std::vector<int64_t>& patch_size,
                         const std::vector<int64_t>& need_to_pad);

// How a box was chosen (for tests and diagnostics).
struct BoxChoice {
  Box box;
  int key_index = -1;          // index into ClassLocations::keys of the key centred on, or -1 (random)
  std::vector<int32_t> voxel;  // the voxel centred on (empty for random boxes)
};

class PatchSampler {
 public:
  // INVALID_ARGUMENT naming the field for: empty case list, batch_size < 1, patch sizes of different or
  // unsupported rank (2 or 3), patch < final patch, percent outside [0, 1].
  static absl::StatusOr<PatchSampler> Create(SamplerOptions options, std::vector<std::string> case_ids, uint64_t seed);

  const SamplerOptions& options() const { return options_; }
  const std::vector<std::string>& case_ids() const { return case_ids_; }
  uint64_t seed() const { return seed_; }
  // Spatial patch as sampled: 3 entries (a 2D patch is (1, *patch)).
  const std::vector<int64_t>& patch_size() const { return patch_; }
  const std::vector<int64_t>& need_to_pad() const { return need_to_pad_; }
  bool patch_was_2d() const { return patch_was_2d_; }

  // Index into case_ids() of slot j of batch `batch_index`.
  int64_t ChooseCase(uint64_t batch_index, int64_t j) const;
  // Whether slot j is forced to contain foreground.
  bool ForceForeground(uint64_t batch_index, int64_t j) const;
  // get_bbox for slot j on a case of spatial shape `spatial_shape` (3 entries). `locations` may be null
  // when the case has none (then forced/ignore boxes fall back to random).
  BoxChoice ChooseBox(uint64_t batch_index, int64_t j, const Shape& spatial_shape, bool force_fg,
                      const ClassLocations* locations) const;

 private:
  PatchSampler() = default;
  uint64_t SampleIndex(uint64_t batch_index, int64_t j) const {
    return batch_index * static_cast<uint64_t>(options_.batch_size) + static_cast<uint64_t>(j);
  }

  SamplerOptions options_;
  std::vector<std::string> case_ids_;
  uint64_t seed_ = 0;
  std::vector<int64_t> patch_;
  std::vector<int64_t> need_to_pad_;
  bool patch_was_2d_ = false;
};

}  // namespace augmentd::dataset
