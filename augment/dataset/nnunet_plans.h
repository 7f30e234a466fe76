// augment/dataset/nnunet_plans.h — the parts of an nnU-Net plans file, splits file and trainer defaults that
// dataset mode needs (nnunetv2/utilities/plans_handling/plans_handler.py, nnUNetTrainer.py).
//
//   ASSIGN_OR_RETURN(PlansConfig cfg, ParsePlans(plans_text, "3d_fullres", "nnUNetPlans.json"));
//   TrainerDefaults t = DefaultTrainerSettings(cfg.patch_size);   // initial_patch_size (205³ for 128³), ...
//   ASSIGN_OR_RETURN(std::vector<Split> splits, ParseSplits(splits_text, "splits_final.json"));
//
// Errors are INVALID_ARGUMENT naming the file and field; an unknown configuration is NOT_FOUND listing the
// ones the plans define. Thread-safety: plain values and free functions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace augmentd::dataset {

// One configuration of a plans file after resolving "inherits_from".
struct PlansConfig {
  std::string plans_name;       // top-level "plans_name"
  std::string configuration;    // e.g. "3d_fullres"
  std::string data_identifier;  // folder of the preprocessed arrays, e.g. "nnUNetPlans_3d_fullres"
  int64_t batch_size = 0;
  std::vector<int64_t> patch_size;  // 2 (2d) or 3 entries
  std::vector<double> spacing;
  std::vector<std::string> normalization_schemes;
  std::vector<bool> use_mask_for_norm;
  std::vector<std::vector<int64_t>> strides;  // architecture.arch_kwargs.strides (pool op kernel sizes)
  std::string previous_stage;                 // cascade: name of the previous stage configuration, or ""
  std::vector<int64_t> transpose_forward;     // top-level "transpose_forward"
};

// Parses `configuration` out of a plans document.
absl::StatusOr<PlansConfig> ParsePlans(const std::string& plans_text, const std::string& configuration,
                                       const std::string& name);

// What nnUNetTrainer derives from the plans for data loading (default trainer, no DDP).
struct TrainerDefaults {
  std::vector<int64_t> initial_patch_size;  // the box the training loader samples
  bool do_dummy_2d_data_aug = false;
  double rotation_max_rad = 0;  // rotation_for_DA = (-r, r)
  std::vector<int> mirror_axes;
  double oversample_foreground_percent = 0.33;
  bool probabilistic_oversampling = false;
};

// configure_rotation_dummyDA_mirroring_and_inital_patch_size: dummy 2D iff max(p)/p[0] > 3 (3D); rotation
// ±180° (dummy 2D / isotropic-ish 2D) or ±30° (3D) / ±15° (2D with max/min > 1.5); initial patch size =
// get_patch_size(p, r, r, r, (0.85, 1.25)) — the patch vector rotated about each axis alone by min(r, 90°),
// element-wise max of |·| with p, divided by 0.85, truncated — with axis 0 reset to p[0] for dummy 2D.
TrainerDefaults DefaultTrainerSettings(const std::vector<int64_t>& patch_size);

// get_patch_size(final_patch_size, rot, rot, rot, (min_scale, ...)) for a 2D or 3D patch.
std::vector<int64_t> RotatedPatchSize(const std::vector<int64_t>& patch_size, double rot_rad, double min_scale);

// Deep-supervision scales: 1 / cumprod(strides) per stage, dropping the last (coarsest) entry.
std::vector<std::vector<double>> DeepSupervisionScales(const std::vector<std::vector<int64_t>>& strides);

// One fold of splits_final.json.
struct Split {
  std::vector<std::string> train;
  std::vector<std::string> val;
};

absl::StatusOr<std::vector<Split>> ParseSplits(const std::string& splits_text, const std::string& name);

}  // namespace augmentd::dataset
