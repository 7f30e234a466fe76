// augment/dataset/batch_loader.h — turns sampler decisions into batches: plans each slot (case, forced
// foreground, box) and crops data (float32, pad 0) and segmentation (int16, pad −1) out of the cases, like
// nnUNetDataLoader.generate_train_batch without the transforms — into host buffers, or (CUDA path) straight
// into device buffers from the GPU-resident cache tier.
//
//   ASSIGN_OR_RETURN(std::shared_ptr<NnunetDataset> ds, NnunetDataset::Open(opt));
//   ASSIGN_OR_RETURN(Split fold, ds->Fold(0));
//   TrainerDefaults t = DefaultTrainerSettings(ds->plans().patch_size);
//   SamplerOptions so = SamplerOptions::ForTraining(ds->plans().patch_size, t.initial_patch_size,
//                                                   ds->plans().batch_size, ds->labels().ignore_label.has_value());
//   ASSIGN_OR_RETURN(PatchSampler sampler, PatchSampler::Create(so, fold.train, seed));
//   LoaderOptions lo;  lo.echo_factor = 2;  lo.cache = cache;  lo.prefetch_batches = 4;   // all optional
//   BatchLoader loader(ds, std::move(sampler), lo);
//   ASSIGN_OR_RETURN(HostBatch b, loader.LoadBatch(batch_index));   // b.data: (B, C, *patch) float32
//
// Data echoing (LoaderOptions::echo_factor = E ≥ 1): global sample i = batch_index·B + j is cut from *load*
// L(i) = floor(i / E), and load L is what the sampler decides for its slot (L mod B) of its batch floor(L / B)
// (case, forced foreground, box — PatchSampler keyed by (seed, L)). So E consecutive global samples share one
// crop (same case and box) while the augmentation random streams stay keyed by the global sample index i
// (the caller passes first_sample_index = batch_index·B as without echoing) and differ. Batches stay a pure
// function of (config, seed, batch index): resuming at any batch index reproduces the bytes. E = 1 is exactly
// the loader without echoing. With E > 1 the per-position foreground rule applies to load slots (L mod B), so
// the forced-foreground fraction over many batches is unchanged while single batches may be all-forced or
// none-forced.
//
// Two steps, so the cache tiers (case_cache.h) sit between them: Plan(batch) needs only case headers and
// foreground locations; the crop reads one box from the host tier (in-memory case), the device tier (CUDA
// crop kernel) or disk. Every path gives the same bytes.
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
#include "augment/dataset/case_cache.h"
#include "augment/dataset/nnunet_dataset.h"
#include "augment/dataset/sampler.h"

struct CUstream_st;  // cudaStream_t

namespace augmentd::dataset {

// The decisions for one slot of a batch.
struct SamplePlan {
  int64_t slot = 0;        // j
  uint64_t load_index = 0;  // floor((batch_index·B + j) / echo_factor): the sampler decision it comes from
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

struct LoaderOptions {
  int64_t echo_factor = 1;            // augmented samples per load (values < 1 mean 1)
  std::shared_ptr<CaseCache> cache;   // null: crop from disk
  int64_t prefetch_batches = 0;       // LoadBatch*(b) first queues the cases of b+1 … b+n for prefetch
  int load_threads = 1;               // LoadBatch / LoadBatchInto: threads cropping one batch's samples (the
                                      // calling thread is one); the bytes do not depend on it
};

// Device buffers of one batch (e.g. a worker's CUDA IPC slot or staging for CudaAugmenter::Run).
struct DeviceBatchBuffers {
  float* image = nullptr;   // (B, C, *patch) float32, device memory
  size_t image_elems = 0;   // capacity in elements
  int16_t* seg = nullptr;   // (B, 1, *patch) int16, device memory
  size_t seg_elems = 0;
};

struct DeviceBatch {
  std::vector<SamplePlan> samples;
  Shape data_shape;  // (B, C, *patch)
  Shape seg_shape;   // (B, 1, *patch)
  int64_t cropped_on_device = 0;   // samples cut from GPU-resident cases
  int64_t copied_from_host = 0;    // samples cropped on the host and copied (case not resident)
  int64_t echoed = 0;              // samples copied from the previous slot (same load)
};

class BatchLoader {
 public:
  BatchLoader(std::shared_ptr<const NnunetDataset> dataset, PatchSampler sampler, LoaderOptions options = {});

  const NnunetDataset& dataset() const { return *dataset_; }
  const PatchSampler& sampler() const { return sampler_; }
  const LoaderOptions& options() const { return options_; }
  int64_t batch_size() const { return sampler_.options().batch_size; }

  // Per-sample output shapes for a case with `channels` data channels: (C, *patch) and (1, *patch) — (2, *patch) in a
  // cascade (DatasetOptions::previous_stage_dir: channel 1 is the previous stage's segmentation).
  Shape SampleDataShape(int64_t channels) const;
  Shape SampleSegShape() const;

  // The load index of slot j of batch `batch_index` (see "Data echoing").
  uint64_t LoadIndex(uint64_t batch_index, int64_t j) const;

  // Decides slot j of batch `batch_index` (opens the case for its shape; computes/caches foreground
  // locations when the box needs them).
  absl::StatusOr<SamplePlan> PlanSample(uint64_t batch_index, int64_t j) const;
  absl::StatusOr<std::vector<SamplePlan>> PlanBatch(uint64_t batch_index) const;

  // Crops one planned sample into caller buffers (sizes in elements; data: C·prod(patch), seg: prod(patch)).
  // The overload without a case reads through the host cache tier when there is one, else from disk.
  absl::Status LoadSample(const SamplePlan& plan, const CaseHandle& c, float* data, size_t data_elems, int16_t* seg,
                          size_t seg_elems) const;
  absl::Status LoadSample(const SamplePlan& plan, float* data, size_t data_elems, int16_t* seg, size_t seg_elems) const;

  // Plans and loads a whole batch into owned buffers. FAILED_PRECONDITION if cases differ in channels.
  absl::StatusOr<HostBatch> LoadBatch(uint64_t batch_index) const;
  // The same into caller buffers (e.g. reused per worker, or a host shared-memory slot): `data` holds
  // `data_elems` floats for (B, C, *patch), `seg` `seg_elems` int16 for (B, 1, *patch); INVALID_ARGUMENT when
  // too small. The returned HostBatch has samples and shapes but empty data/seg vectors.
  absl::StatusOr<HostBatch> LoadBatchInto(uint64_t batch_index, float* data, size_t data_elems, int16_t* seg,
                                          size_t seg_elems) const;

  // CUDA path (a session on cuda:N whose loader has a cache with a GPU tier):
  //   DeviceBatchBuffers dst{d_image, B·C·P, d_seg, B·P};            // the worker's device input buffers
  //   ASSIGN_OR_RETURN(DeviceBatch db, loader.LoadBatchToDevice(b, dst, stream));
  //   CudaBatchInput in{d_image, d_seg, db.data_shape};              // augment/cuda/engine.h
  //   RETURN_IF_ERROR(augmenter.Run(in, out, options /* first_sample_index = b·B */, stream));
  // Plans batch `batch_index` and writes it into `dst` on `stream`: samples of GPU-resident cases
  // are cropped by the kernel (the case is uploaded first on a device-tier miss), other samples are cropped on
  // the host and copied (synchronously). Returns once every crop is enqueued; the data is ready in stream
  // order. INVALID_ARGUMENT when `dst` is too small, FAILED_PRECONDITION without a cache that has a device tier.
  absl::StatusOr<DeviceBatch> LoadBatchToDevice(uint64_t batch_index, const DeviceBatchBuffers& dst,
                                                CUstream_st* stream) const;

  // Queues the cases of batches [first, first + count) for prefetch into the cache (no-op without a cache).
  void PrefetchBatches(uint64_t first, uint64_t count) const;

 private:
  // PlanSample that also hands back the opened case (the batch loads reuse it for the crop).
  absl::StatusOr<SamplePlan> PlanSample(uint64_t batch_index, int64_t j,
                                        std::shared_ptr<const CaseHandle>* opened) const;
  // Every slot planned, with the opened cases and the batch shapes.
  struct PlannedBatch {
    std::vector<SamplePlan> samples;
    std::vector<std::shared_ptr<const CaseHandle>> cases;
    Shape data_shape, seg_shape;      // (B, C, *patch), (B, 1, *patch)
    size_t per_data = 0, per_seg = 0;  // elements per sample
  };
  // Plans every slot (after queueing prefetches); FAILED_PRECONDITION if cases differ in channels.
  absl::StatusOr<PlannedBatch> PlanAll(uint64_t batch_index) const;
  absl::StatusOr<std::shared_ptr<const CaseHandle>> OpenForCrop(const std::string& id) const;

  std::shared_ptr<const NnunetDataset> dataset_;
  PatchSampler sampler_;
  LoaderOptions options_;
};

}  // namespace augmentd::dataset
