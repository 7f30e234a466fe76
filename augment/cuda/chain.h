// augment/cuda/chain.h — internal to the CUDA engine (cuda/engine.cc): the generic CUDA chain, which runs every
// pipeline the fused kernels (pipeline_cuda.h) do not: nnUNetTrainerDA5, regions, several seg channels, image-only
// batches, apply_probability < 1 on any entry, user orders.
//
// Per batch: draw every sample's parameters on the host (DrawSampleParams, the CPU engine's own draws), pack them
// (the spatial kernel's SampleParams and each stage's records) into two ParamArenas — the spatial step's and the
// entries' up to it, uploaded before the spatial launch; the later entries', packed and uploaded while the spatial
// kernel runs — then on the stream:
//   0. entries before the spatial one (if any) on a copy of the input (input shape);
//   1. spatial (when present): the fused RunPipeline with every intensity stage off, no DS, storing
//      through the permutation entries that directly follow it (rot90, transpose_axes, mirror: ≤ 4 channels),
//      with remove_label's −1 → 0 when nothing but permutations reads the labels between them (folded_remove_index_)
//      → float32 image + int16 label scratch of the patch shape (several seg channels: one launch
//      per sample and channel, a batch of 1, from the input's planes into the scratch's); the options the fused
//      kernel lacks (2D samples, dummy-2D, nearest modes, random_crop, other paddings: ChainSpatial::Needed) run on
//      the generic spatial kernel instead (cuda/chain_spatial.h); no spatial entry: the input is copied into the
//      scratch;
//   2. one CudaStage per later entry, in spec order (MakeCudaStage);
//   (move_seg_as_one_hot_to_data grows the image channels C → C + K and drops its seg channel: the output layout's
//   channels come from the pipeline, as PipelineSpec::OutputChannels says, and the scratch is sized for them; such an
//   entry must follow every spatial entry);
//   3. the image in the output dtype and the label pyramid (nearest-exact; int16, or 0/1 bytes after
//      convert_segmentation_to_regions) into the caller's buffers. The pyramid is stored where downsample_seg_for_ds
//      stands: the entries after it are image-only (PipelineSpec::CheckLayoutStable) and see no labels, as on the
//      CPU engine.
// Staged chains (several spatial entries, or one after convert_segmentation_to_regions): no executor spatial step;
// the scratch starts as a copy of the input and every spatial entry is a ChainSpatialStage (cuda/chain_spatial.h,
// the generic kernel) that resamples it into the next shape, labels included (0/1 region channels stay 0/1).
// Buffers (scratch, stage temporaries, the arena) grow to the largest batch seen and are reused: no allocation in
// the steady state.
//
// 2D samples (image (B, C, X, Y)) run as (B, C, 1, X, Y) through the stages' verified 2D forms (cuda/chain_2d.h:
// every kind of today has one); a kind without one would be refused with UNIMPLEMENTED.
//
// Thread-safety: one CudaChain per CudaAugmenter (one batch in flight; the caller orders batches on the device).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/cuda/chain_spatial.h"
#include "augment/cuda/io.h"
#include "augment/cuda/fused_params.h"
#include "augment/cuda/region_mode_stage.h"
#include "augment/cuda/stage.h"
#include "augment/batch.h"
#include "augment/pipeline.h"

namespace augmentd {

class DownsampleSegForDsTransform;
namespace stage_internal {
class PermuteStage;
}  // namespace stage_internal

// Diagnostics only (bench/cuda_chain_bench --stage-times; never set by the engine): where a batch's GPU time goes.
// While a timer is set on a CudaChain, Run records a CUDA event on its stream at the start of each step (the host
// draws and packing, the spatial step, each entry "<kind>#<index>", the label pyramid, the image store) and one at
// its end; a step's time is the event interval: its kernels' GPU time, or the GPU's idle time while the host was
// still preparing (the first step). Costs one event record per step; a chain without a timer records nothing.
//
//   ChainStageTimer timer;
//   chain->set_stage_timer(&timer);
//   chain->Run(...);  cudaStreamSynchronize(stream);
//   ASSIGN_OR_RETURN(auto steps, timer.Collect());  // {"apply_random_binary_operator#12", 0.41}, ...
class ChainStageTimer {
 public:
  ChainStageTimer() = default;
  ~ChainStageTimer();
  ChainStageTimer(const ChainStageTimer&) = delete;
  ChainStageTimer& operator=(const ChainStageTimer&) = delete;
  // Ends the previous step and starts `name` (an empty name: only ends it). Called by CudaChain::Run.
  absl::Status Mark(std::string name, cudaStream_t stream);
  // Once the marked work has finished (it synchronises on the last event): each step's name and milliseconds, in
  // order; forgets the marks (the events are reused by the next batch).
  absl::StatusOr<std::vector<std::pair<std::string, double>>> Collect();

 private:
  std::vector<cudaEvent_t> events_;
  std::vector<std::string> names_;  // names_[i]: the step starting at events_[i] ("" for the final mark)
  size_t used_ = 0;
};

class CudaChain {
 public:
  // Host-only (no GPU needed). INVALID_ARGUMENT as the CPU engine for what PipelineSpec::CheckLayoutStable refuses
  // (downsample_seg_for_ds / convert_segmentation_to_regions that can be skipped, label entries after DS);
  // UNIMPLEMENTED naming the entry (index, kind, option) for an entry without a CUDA stage. Entries before the
  // (first) spatial one run at the input shape.
  static absl::StatusOr<std::unique_ptr<CudaChain>> Create(const PipelineSpec& spec);
  ~CudaChain();
  CudaChain(const CudaChain&) = delete;
  CudaChain& operator=(const CudaChain&) = delete;

  // Layout of the outputs for an input image {B, C, S0, S1, S2} or, 2D samples, {B, C, S0, S1} with `seg_channels`
  // label channels (0: none). UNIMPLEMENTED naming an entry without a 2D form for 2D samples.
  absl::StatusOr<CudaOutputLayout> OutputLayout(const std::vector<int64_t>& image_shape, DType image_dtype,
                                                int64_t seg_channels) const;

  // Draws (records[b], exactly the CPU engine's draws) and enqueues the batch on `stream` (the device is current).
  absl::Status Run(const CudaBatchInput& input, const CudaBatchOutput& output, const RunOptions& options,
                   cudaStream_t stream, std::vector<SampleRecord>& records);

  // Diagnostics: per-step events of every later Run (ChainStageTimer); nullptr (the default) turns them off. The
  // timer must outlive the runs that use it.
  void set_stage_timer(ChainStageTimer* timer) { timer_ = timer; }

  // The spec index of the remove_label entry the fused spatial kernel applies as it stores the labels (SIZE_MAX: none),
  // and how many batches have run with it folded in (tests read both).
  size_t folded_remove_index() const { return folded_remove_index_; }
  int64_t folded_remove_batches() const { return folded_remove_batches_; }

 private:
  struct Entry {
    size_t index;
    TransformKind kind;
    std::unique_ptr<CudaStage> stage;
    int32_t regions;  // convert_segmentation_to_regions: output channels; else 0
    int32_t image_growth = 0;  // move_seg_as_one_hot_to_data: image channels appended
    int32_t seg_drop = 0;      // move_seg_as_one_hot_to_data with remove_channel_from_source: 1
    RegionModeStage* region = nullptr;  // the entry's region mode wrapper (owned by `stage`), else null
  };
  CudaChain() = default;

  PipelineSpec spec_;
  CudaPlan spatial_plan_;
  // The spatial entry on the generic kernel: every batch when spatial_plan_ is empty, else the batches whose drawn
  // parameters the fused kernel refuses (injected elastic offsets or crop centres).
  std::unique_ptr<ChainSpatial> generic_;
  size_t spatial_index_ = SIZE_MAX;  // entries before it run on input-shaped scratch
  std::vector<Entry> entries_;
  // Staged chain: several spatial entries, or one after convert_segmentation_to_regions. Every spatial entry is then
  // a ChainSpatialStage in entries_ (the scratch starts at the input shape; spatial_index_ stays SIZE_MAX).
  bool staged_ = false;
  std::vector<ChainSpatialStage*> staged_spatial_;  // owned by entries_, in spec order
  // The permutation entries right after the spatial one (rot90, transpose_axes, mirror; linked into one), by the
  // last of them: when the fused spatial kernel runs a batch of ≤ 4 channels, it stores its outputs through their
  // composition and they launch nothing (DA5's rot90 + transpose_axes cost a gather of the batch before).
  stage_internal::PermuteStage* leading_permute_ = nullptr;
  // Entries up to this spec index are prepared into arena_ before the spatial launch (those before it and the run
  // above); the later ones into late_arena_ while the spatial kernel runs. 0 without an executor spatial step.
  size_t early_last_index_ = 0;
  // The remove_label entry (−1 → 0) that the fused spatial kernel applies as it stores the labels (Create: nothing
  // between reads them but signed permutations), by spec index; SIZE_MAX when none can. Folded in a batch whose every
  // sample applies it and whose labels the fused kernel stores in one launch (one seg channel): the entry then
  // launches nothing (≈ 6 µs a batch of 2 at 128³ before).
  size_t folded_remove_index_ = SIZE_MAX;
  int64_t folded_remove_batches_ = 0;
  const DownsampleSegForDsTransform* ds_ = nullptr;
  size_t ds_index_ = SIZE_MAX;  // the label pyramid is stored there; later entries see no labels
  int32_t max_regions_ = 0;  // seg scratch capacity needed by convert_segmentation_to_regions
  int32_t out_regions_ = 0;  // seg channels after the last one
  // Channel growth (move_seg_as_one_hot_to_data, the cascade): image channels appended and seg channels dropped over
  // the whole chain (PipelineSpec::OutputChannels); the image scratch is sized for the final channel count.
  int32_t image_growth_ = 0;
  int32_t seg_drop_ = 0;
  bool bool_seg_ = false;

  ParamArena arena_, late_arena_;
  // late_arena_ is copied on its own stream, concurrently with the spatial kernel (in the batch's stream the copy of
  // a few KiB cost ≈ 4 µs of GPU time between two kernels): after batch_start_ (the previous batch's kernels, which
  // read its device buffer, are done), and the batch's stream waits for late_uploaded_. Created at the first Run.
  cudaStream_t upload_stream_ = nullptr;
  cudaEvent_t batch_start_ = nullptr, late_uploaded_ = nullptr;
  ChainWorkspace ws_;
  void* fused_ws_ = nullptr;  // ws_ slot of the spatial kernel's workspace, initialised for fused_shape_
  cuda::BatchShape fused_shape_{};
  ChainStageTimer* timer_ = nullptr;
};

}  // namespace augmentd
