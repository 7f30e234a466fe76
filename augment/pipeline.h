// augment/pipeline.h — pipeline specifications: ordered transform lists, nnU-Net presets, initial patch size.
//
// A PipelineSpec is an ordered list of TransformSpecs (kind, apply probability — bgv2's RandomTransform wrapper —
// and the transform built from typed bgv2 constructor arguments). Presets reproduce nnU-Net 2.8.1's
// `get_training_transforms` / `get_validation_transforms` for a trainer configuration (reference §2–§3).
//
//   augmentd::TrainerConfig tc;
//   tc.patch_size = {128, 128, 128};
//   tc.deep_supervision_scales = {{1, 1, 1}, {0.5, 0.5, 0.5}, {0.25, 0.25, 0.25}};
//   ASSIGN_OR_RETURN(augmentd::PipelineSpec spec, augmentd::NnunetDefaultPipeline(tc));
//   // spec.input_patch_size == {205, 205, 205}: crop that box, then augmentd::AugmentBatch (engine.h).
//
// Everything here is torch-free. PipelineSpec is immutable after construction and safe to share across threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/region_mode.h"
#include "augment/transform.h"
#include "nlohmann/json.hpp"

namespace augmentd {

// One entry of a pipeline: bgv2's `RandomTransform(transform, apply_probability)` (p = 1: always applied).
struct TransformSpec {
  TransformKind kind = TransformKind::kSpatial;
  double apply_probability = 1.0;
  std::shared_ptr<const Transform> transform;
  // bgv2 `OneOfTransform`: consecutive entries with the same non-zero group form one OneOf; per sample exactly one
  // member (uniform, np.random.choice) is considered, then its own apply_probability applies. one_of_index /
  // one_of_size are filled by PipelineSpec::ResolveOneOfGroups (FromJson and the presets call it).
  uint32_t one_of_group = 0;
  int32_t one_of_index = 0;
  int32_t one_of_size = 1;
  // How the entry's draws are shared across a batch (AugLab's same_on_batch=True under kornia;
  // augment/transforms/AUGLAB_DAEXT.md has AugLab's per-kind table). JSON "same_on_batch": false | true | "decision".
  //  * kPerSample (false, the default): every draw from RandomStream(seed, sample, t).
  //  * kPerBatch (true): the apply decision (draw 0, and the OneOf choice), every parameter and the region coins come
  //    from RandomStream(seed, first sample of the batch, t) for every sample of the batch — one decision, one draw.
  //  * kPerBatchDecision ("decision"): only the apply decision (and the OneOf choice) comes from the batch's first
  //    sample's stream; the parameters come from the sample's own stream after its draw 0, i.e. they are exactly the
  //    parameters kPerSample draws for that sample (AugLab's RandConv kernels and RedistributeSeg jitter, drawn inside
  //    its per-sample loop). The region coins are still one draw per batch (AugLab's per-call coins), from
  //    RandomStream(seed, first sample, t, kRegionCoinSubstream).
  // In both batch modes RegionModeConfig::per_sample_coins draws the region coins per sample instead (region_mode.h).
  // Per-voxel fields (noise) stay keyed by the sample in every mode. A sample drawn alone (no batch index,
  // DrawSampleParams' kNoBatchIndex) draws as kPerSample. Both engines draw through DrawEntry (batch.h), so the
  // CUDA engine shares exactly these draws.
  enum class BatchMode : uint8_t { kPerSample, kPerBatch, kPerBatchDecision };
  BatchMode same_on_batch = BatchMode::kPerSample;
  // AugLab's in_seg / out_seg / mix_in_out (augment/region_mode.h): the engines blend the entry's output with its
  // input by the drawn region of the labels. Only on intensity kinds (INVALID_ARGUMENT "transform.region_mode"
  // otherwise: spatial, layout- or shape-changing kinds, kinds that read or write the labels except
  // redistribute_seg). Default off.
  RegionModeConfig region_mode;
  // The image channels this entry sees, in this order (AugLab's `apply_to_channel`, the issue's "noise on selected
  // channels"); empty: every channel (the default). Only for kinds that neither use the labels nor change the output
  // layout (FromJson: INVALID_ARGUMENT "transform.channels" otherwise). The entry draws and applies as on a sample
  // holding only those channels; the other channels pass through unchanged. Indices are checked against the
  // sample's channels when drawn (INVALID_ARGUMENT "transform.channels"). Both engines (the CUDA one through its
  // chain: the stage runs on a gathered copy of the selected planes).
  std::vector<int64_t> channels;

  // Whether this entry is its group's member for (seed, sample): U over RandomStream(seed, sample,
  // kOneOfTransformIndex, one_of_group) picks member ⌊U·size⌋. Always true outside a group.
  bool SelectedFor(uint64_t seed, uint64_t sample_index) const;
  // Whether some samples may skip this entry: apply_probability < 1, or a member of a OneOf group of several.
  bool Skippable() const { return apply_probability < 1 || (one_of_group != 0 && one_of_size > 1); }
  static constexpr uint32_t kOneOfTransformIndex = 4095;  // reserved stream (pipelines hold <= 4000 entries)

  // INVALID_ARGUMENT for a null transform or p outside [0, 1].
  static absl::StatusOr<TransformSpec> Make(std::shared_ptr<const Transform> transform, double apply_probability);
  // {"kind": "gamma", "apply_probability": 0.3, "config": {...bgv2 constructor args...}, "one_of_group": 0,
  //  "same_on_batch": false | true | "decision" (INVALID_ARGUMENT "transform.same_on_batch" for anything else),
  //  "region_mode": {"in_seg": 0, "out_seg": 0, "mix_in_out": false, "per_sample_coins": false}, "channels": [0]}
  static absl::StatusOr<TransformSpec> FromJson(const nlohmann::json& j);
  nlohmann::json ToJson() const;
};

struct PipelineSpec {
  std::string name = "custom";
  std::vector<TransformSpec> transforms;
  // Spatial shape nnU-Net's loader crops for this pipeline (initial_patch_size for training, patch_size for
  // validation); empty for user lists. Informational: the engine accepts any input shape (SpatialTransform
  // crops/pads to its patch_size), so callers crop this box and the output has OutputShape(input) voxels.
  std::vector<int64_t> input_patch_size;

  // {"name": ..., "input_patch_size": [...], "transforms": [TransformSpec JSON, ...], "bgv2_version": "0.3.6"}
  // (bgv2_version, optional: the default of every spatial entry whose config names none)
  static absl::StatusOr<PipelineSpec> FromJson(const nlohmann::json& j);
  // Numbers the members of every OneOf group; INVALID_ARGUMENT if a group id is not one consecutive run.
  absl::Status ResolveOneOfGroups();
  // INVALID_ARGUMENT naming pipeline.transforms[i] for an entry that changes the output layout
  // (downsample_seg_for_ds: a label pyramid; convert_segmentation_to_regions: bool region channels) but can be
  // skipped for some samples (apply_probability < 1, or a member of a OneOf group of several): the samples of one
  // batch would disagree on their output layout. Also for an entry after downsample_seg_for_ds that reads, writes
  // or moves the labels (spatial, mirror, rot90, transpose_axes, mask_image, remove_label, regions, another DS,
  // AugLab extras with in_seg / out_seg): the label pyramid is final there (the CPU engine would leave it out of
  // step with the image, or fail per sample). Also for a spatial entry that changes the sample's shape but can be
  // skipped (the samples of one batch would disagree on their shape) — checked against `input_shape` (spatial dims),
  // else `input_patch_size`, and left out when neither is known — and for a spatial entry after
  // convert_segmentation_to_regions whose label fill is not 0 or 1 (padding_value_seg -1 in a 0/1 region channel
  // would turn the out-of-bounds voxels into foreground). FromJson and both engines (AugmentBatch on "cpu" and
  // CudaAugmenter with the batch's shape) check it; an injected {"applied": false} on a layout-changing entry is
  // refused likewise (DrawSampleParams).
  absl::Status CheckLayoutStable(const std::vector<int64_t>& input_shape = {}) const;
  // Whether any entry is Skippable() (then the shape part of CheckLayoutStable depends on the batch's shape).
  bool HasSkippableEntry() const;
  nlohmann::json ToJson() const;
  // Spatial output shape for an input of `in` (walks OutputShape of every transform).
  std::vector<int64_t> OutputShape(const std::vector<int64_t>& in) const;
  // Output image / segmentation channels for inputs with that many (walks OutputChannels of every transform).
  std::pair<int64_t, int64_t> OutputChannels(int64_t image_channels, int64_t seg_channels) const;
};

// Whether entries of kind `k` change the output layout whenever they run (downsample_seg_for_ds: a label pyramid;
// convert_segmentation_to_regions: bool region channels), so no sample of a batch may skip them.
bool ChangesOutputLayout(TransformKind k);

// The parts of an nnU-Net trainer that shape augmentation. Unset optionals are computed like nnU-Net does.
struct TrainerConfig {
  std::vector<int64_t> patch_size;                           // plans patch size (2 or 3 dims)
  std::optional<std::pair<double, double>> rotation_for_da;  // radians; default from the patch size
  std::optional<std::vector<int64_t>> mirror_axes;           // default (0,1,2) / (0,1); empty = no mirroring
  std::optional<bool> do_dummy_2d_data_aug;                  // default max(p)/p[0] > 3 (3D only)
  // Deep supervision scales, full resolution first; unset = no DS. (FromJson also accepts pool_op_kernel_sizes.)
  std::optional<std::vector<std::vector<double>>> deep_supervision_scales;
  std::optional<std::vector<std::vector<int64_t>>> regions;  // region-based training
  std::optional<int64_t> ignore_label;
  std::vector<bool> use_mask_for_norm;  // per input channel
  int64_t num_input_channels = 1;
  std::string bgv2_version = "0.3.6";   // the trainer's batchgeneratorsv2: the presets' SpatialTransform semantics

  // Keys: the field names above, plus "pool_op_kernel_sizes" (strides; DS scales = 1/cumprod, last dropped).
  static absl::StatusOr<TrainerConfig> FromJson(const nlohmann::json& j);
  nlohmann::json ToJson() const;
};

// nnU-Net `get_patch_size` (compute_initial_patch_size.py): rotate the patch-size vector about each axis by
// min(max|range|, 90°), take the element-wise max of the absolute coordinates, divide by min(scale_range), truncate.
std::vector<int64_t> GetPatchSize(const std::vector<int64_t>& final_patch_size, double rot_x, double rot_y,
                                  double rot_z, std::pair<double, double> scale_range);

// nnU-Net `configure_rotation_dummyDA_mirroring_and_inital_patch_size` (+ the trainer's overrides).
struct AugmentationGeometry {
  std::pair<double, double> rotation_for_da;
  bool do_dummy_2d_data_aug = false;
  std::vector<int64_t> initial_patch_size;
  std::vector<int64_t> mirror_axes;
};
// `scale_range` is get_patch_size's (0.85, 1.25) for nnUNetTrainer, (0.7, 1.43) for nnUNetTrainerDA5.
absl::StatusOr<AugmentationGeometry> ConfigureGeometry(const TrainerConfig& config,
                                                       std::pair<double, double> scale_range = {0.85, 1.25});

// nnU-Net 2.8.1 `get_training_transforms` (non-cascade) for `config`; input_patch_size = initial_patch_size.
absl::StatusOr<PipelineSpec> NnunetDefaultPipeline(const TrainerConfig& config);
// nnU-Net `get_validation_transforms`: RemoveLabel(−1→0), regions, DS; input_patch_size = patch_size.
absl::StatusOr<PipelineSpec> NnunetValidationPipeline(const TrainerConfig& config);
// nnU-Net 2.8.1 `nnUNetTrainerDA5.get_training_transforms` (reference §5.1, non-cascade): input_patch_size with
// scale range (0.7, 1.43); its two OneOfTransforms are one_of_group 1 (median filter | blur) and 2 (contrast
// preserving | not preserving the range).
absl::StatusOr<PipelineSpec> NnunetDa5Pipeline(const TrainerConfig& config);
// By name: "nnunet_default" | "nnunet_da5" | "nnunet_validation".
absl::StatusOr<PipelineSpec> PresetPipeline(std::string_view name, const TrainerConfig& config);

}  // namespace augmentd
