#include "augment/dataset/sampler.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "augment/rng.h"

namespace augmentd::dataset {
namespace {

// Python's floor division and modulo (the bounds use them on possibly negative operands).
int64_t FloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t FloorMod(int64_t a, int64_t b) { return a - FloorDiv(a, b) * b; }

std::vector<int64_t> Pseudo3d(const std::vector<int64_t>& p) {
  if (p.size() != 2) return p;
  return {1, p[0], p[1]};
}

}  // namespace

SamplerOptions SamplerOptions::ForTraining(const std::vector<int64_t>& plan_patch_size,
                                           const std::vector<int64_t>& initial_patch_size, int64_t batch_size,
                                           bool has_ignore_label) {
  SamplerOptions o;
  o.patch_size = initial_patch_size;
  o.final_patch_size = plan_patch_size;
  o.batch_size = batch_size;
  o.has_ignore_label = has_ignore_label;
  return o;
}

SamplerOptions SamplerOptions::ForValidation(const std::vector<int64_t>& plan_patch_size, int64_t batch_size,
                                             bool has_ignore_label) {
  return ForTraining(plan_patch_size, plan_patch_size, batch_size, has_ignore_label);
}

bool IsForcedForegroundSlot(int64_t j, int64_t batch_size, double percent) {
  // Python: round(batch_size * (1 - percent)); round() on a float rounds half to even, as nearbyint does
  // in the default rounding mode.
  const double threshold = std::nearbyint(static_cast<double>(batch_size) * (1.0 - percent));
  return !(static_cast<double>(j) < threshold);
}

BoxRange ComputeBoxRange(const Shape& spatial_shape, const std::vector<int64_t>& patch_size,
                         const std::vector<int64_t>& need_to_pad) {
  BoxRange r;
  r.need_to_pad = need_to_pad;
  const size_t dim = spatial_shape.size();
  r.lb.resize(dim);
  r.ub.resize(dim);
  for (size_t d = 0; d < dim; ++d) {
    int64_t& n = r.need_to_pad[d];
    // The image plus padding must at least hold the patch; pad more (on both sides) otherwise.
    if (n + spatial_shape[d] < patch_size[d]) n = patch_size[d] - spatial_shape[d];
    r.lb[d] = FloorDiv(-n, 2);
    r.ub[d] = spatial_shape[d] + FloorDiv(n, 2) + FloorMod(n, 2) - patch_size[d];
  }
  return r;
}

absl::StatusOr<PatchSampler> PatchSampler::Create(SamplerOptions options, std::vector<std::string> case_ids,
                                                  uint64_t seed) {
  if (case_ids.empty()) return absl::InvalidArgumentError("case_ids: no cases to sample from");
  if (options.batch_size < 1) return absl::InvalidArgumentError("batch_size: must be >= 1");
  if (!(options.oversample_foreground_percent >= 0.0 && options.oversample_foreground_percent <= 1.0)) {
    return absl::InvalidArgumentError("oversample_foreground_percent: must be in [0, 1]");
  }
  const size_t rank = options.patch_size.size();
  if (rank != 2 && rank != 3) return absl::InvalidArgumentError("patch_size: expected 2 or 3 entries");
  if (options.final_patch_size.size() != rank) {
    return absl::InvalidArgumentError("final_patch_size: must have as many entries as patch_size");
  }
  if (!options.pad_sides.empty() && options.pad_sides.size() != rank) {
    return absl::InvalidArgumentError("pad_sides: must be empty or have as many entries as patch_size");
  }
  for (size_t d = 0; d < rank; ++d) {
    if (options.final_patch_size[d] < 1) return absl::InvalidArgumentError("final_patch_size: must be positive");
    if (options.patch_size[d] < options.final_patch_size[d]) {
      return absl::InvalidArgumentError(absl::StrCat("patch_size: entry ", d, " (", options.patch_size[d],
                                                     ") is smaller than final_patch_size (",
                                                     options.final_patch_size[d], ")"));
    }
  }
  PatchSampler s;
  s.patch_was_2d_ = rank == 2;
  s.patch_ = Pseudo3d(options.patch_size);
  const std::vector<int64_t> final_patch = Pseudo3d(options.final_patch_size);
  s.need_to_pad_.resize(3);
  for (size_t d = 0; d < 3; ++d) s.need_to_pad_[d] = s.patch_[d] - final_patch[d];
  if (!options.pad_sides.empty()) {
    const std::vector<int64_t> pad = Pseudo3d(options.pad_sides);
    for (size_t d = 0; d < 3; ++d) s.need_to_pad_[d] += (s.patch_was_2d_ && d == 0) ? 0 : pad[d];
  }
  s.options_ = std::move(options);
  s.case_ids_ = std::move(case_ids);
  s.seed_ = seed;
  return s;
}

int64_t PatchSampler::ChooseCase(uint64_t batch_index, int64_t j) const {
  RandomStream rng(seed_, SampleIndex(batch_index, j), kSamplerTransformIndex, kCaseSubstream);
  return rng.UniformInt(0, static_cast<int64_t>(case_ids_.size()) - 1);
}

bool PatchSampler::ForceForeground(uint64_t batch_index, int64_t j) const {
  if (options_.probabilistic_oversampling) {
    RandomStream rng(seed_, SampleIndex(batch_index, j), kSamplerTransformIndex, kOversampleSubstream);
    return rng.Uniform() < options_.oversample_foreground_percent;
  }
  return IsForcedForegroundSlot(j, options_.batch_size, options_.oversample_foreground_percent);
}

BoxChoice PatchSampler::ChooseBox(uint64_t batch_index, int64_t j, const Shape& spatial_shape, bool force_fg,
                                  const ClassLocations* locations) const {
  RandomStream rng(seed_, SampleIndex(batch_index, j), kSamplerTransformIndex, kBoxSubstream);
  const BoxRange range = ComputeBoxRange(spatial_shape, patch_, need_to_pad_);
  const size_t dim = spatial_shape.size();
  BoxChoice choice;
  choice.box.lb.resize(dim);
  choice.box.ub.resize(dim);

  int key = -1;
  if (force_fg && locations != nullptr) {
    // Keys with at least one stored voxel; the annotated key only if nothing else is eligible.
    std::vector<int> eligible;
    int annotated = -1;
    for (size_t k = 0; k < locations->NumKeys(); ++k) {
      if (locations->Count(k) == 0) continue;
      if (locations->keys[k].annotated) annotated = static_cast<int>(eligible.size());
      eligible.push_back(static_cast<int>(k));
    }
    if (annotated >= 0 && eligible.size() > 1) eligible.erase(eligible.begin() + annotated);
    if (!eligible.empty())
      key = eligible[static_cast<size_t>(rng.UniformInt(0, static_cast<int64_t>(eligible.size()) - 1))];
  } else if (!force_fg && options_.has_ignore_label && locations != nullptr) {
    for (size_t k = 0; k < locations->NumKeys(); ++k) {
      if (locations->keys[k].annotated && locations->Count(k) > 0) key = static_cast<int>(k);
    }
  }

  if (key >= 0) {
    const int64_t n = locations->Count(static_cast<size_t>(key));
    const int32_t* v = locations->Voxel(static_cast<size_t>(key), rng.UniformInt(0, n - 1));
    choice.key_index = key;
    choice.voxel.assign(v, v + locations->spatial_rank);
    for (size_t d = 0; d < dim; ++d) {
      choice.box.lb[d] = std::max(range.lb[d], static_cast<int64_t>(v[d]) - FloorDiv(patch_[d], 2));
    }
  } else {
    for (size_t d = 0; d < dim; ++d) choice.box.lb[d] = rng.UniformInt(range.lb[d], range.ub[d]);
  }
  for (size_t d = 0; d < dim; ++d) choice.box.ub[d] = choice.box.lb[d] + patch_[d];
  return choice;
}

}  // namespace augmentd::dataset
