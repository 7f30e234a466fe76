// augment/dataset/batch_loader.h — turns sampler decisions into host batches: plans each slot (case, forced
// foreground, box) and crops data (float32, pad 0) and segmentation (int16, pad −1) out of the case files,
// like nnUNetDataLoader.generate_train_batch without the transforms.
//
//   ASSIGN_OR_RETURN(std::shared_ptr<NnunetDataset> ds, NnunetDataset::Open(opt));
//   ASSIGN_OR_RETURN(Split fold, ds->Fold(0));
//   TrainerDefaults t = DefaultTrainerSettings(ds->plans().patch_size);
//   SamplerOptions so = SamplerOptions::ForTraining(ds->plans().patch_size, t.initial_patch_size,
//                                                   ds->plans().batch_size, ds->labels().ignore_label.has_value());
//   ASSIGN_OR_RETURN(PatchSampler sampler, PatchSampler::Create(so, fold.train, seed));
//   BatchLoader loader(ds, std::move(sampler));
//   ASSIGN_OR_RETURN(HostBatch b, loader.LoadBatch(batch_index));   // b.data: (B, C, *patch) float32
//
// Two steps, so a cache layer can sit between them: Plan(batch) needs only case headers and foreground
// locations; LoadSample(plan) reads one box (from disk here; a GPU/pinned cache can serve the same plan).
// Crops follow acvl_utils.crop_and_pad_nd, including its quirk that a box missing the image entirely along
// some axis yields zeros (not the pad value) — nnU-Net's bounds never produce such a box.
// 2D configurations: the singleton slice axis is dropped from the output shape (as nnU-Net does).
// Thread-safety: const methods, safe to call concurrently (e.g. one sample per pool thread).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/dataset/nnunet_dataset.h"
#include "augment/dataset/sampler.h"

namespace augmentd::dataset {

// The decisions for one slot of a batch.
struct SamplePlan {
  int64_t slot = 0;        // j
  int64_t case_index = 0;  // into the sampler's case ids
  std::string case_id;
  bool force_fg = false;
  int key_index = -1;  // class key centred on (-1: random box)
  Box box;             // spatial box [lb, ub), 3 axes
  Shape case_shape;    // (C, X, Y, Z) of the case data
};

struct HostBatch {
  std::vector<SamplePlan> samples;
  Shape data_shape;  // (B, C, *patch)
  Shape seg_shape;   // (B, 1, *patch)
  std::vector<float> data;
  std::vector<int16_t> seg;
};

class BatchLoader {
 public:
  BatchLoader(std::shared_ptr<const NnunetDataset> dataset, PatchSampler sampler)
      : dataset_(std::move(dataset)), sampler_(std::move(sampler)) {}

  const NnunetDataset& dataset() const { return *dataset_; }
  const PatchSampler& sampler() const { return sampler_; }

  // Per-sample output shapes for a case with `channels` data channels: (C, *patch) and (1, *patch).
  Shape SampleDataShape(int64_t channels) const;
  Shape SampleSegShape() const;

  // Decides slot j of batch `batch_index` (opens the case for its shape; computes/caches foreground
  // locations when the box needs them).
  absl::StatusOr<SamplePlan> PlanSample(uint64_t batch_index, int64_t j) const;
  absl::StatusOr<std::vector<SamplePlan>> PlanBatch(uint64_t batch_index) const;

  // Crops one planned sample into caller buffers (sizes in elements; data: C·prod(patch), seg: prod(patch)).
  absl::Status LoadSample(const SamplePlan& plan, const CaseHandle& c, float* data, size_t data_elems, int16_t* seg,
                          size_t seg_elems) const;
  absl::Status LoadSample(const SamplePlan& plan, float* data, size_t data_elems, int16_t* seg, size_t seg_elems) const;

  // Plans and loads a whole batch into owned buffers. FAILED_PRECONDITION if cases differ in channels.
  absl::StatusOr<HostBatch> LoadBatch(uint64_t batch_index) const;

 private:
  // PlanSample that also hands back the opened case (LoadBatch reuses it for the crop).
  absl::StatusOr<SamplePlan> PlanSample(uint64_t batch_index, int64_t j,
                                        std::shared_ptr<const CaseHandle>* opened) const;

  std::shared_ptr<const NnunetDataset> dataset_;
  PatchSampler sampler_;
};

}  // namespace augmentd::dataset
