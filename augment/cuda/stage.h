// augment/cuda/stage.h — internal to the CUDA engine: one transform of the *generic* CUDA chain.
//
// The fused kernels (pipeline_cuda.h) cover nnU-Net's default order only. Every other pipeline (nnUNetTrainerDA5,
// regions, several seg channels, apply_probability < 1 on intensity transforms, MRI artefacts, user orders) runs as
// a chain: the spatial kernel writes float32 image + int16 seg scratch of the patch shape, then one CudaStage per
// pipeline entry, in spec order, transforms that scratch in place (one or a few launches per batch, per-sample
// parameter arrays, no host loop over samples), then the output conversion and the deep-supervision pyramid.
//
// A stage is used in two phases per batch so that all per-sample parameters travel in ONE host→device copy:
//   1. Prepare(): packs what the kernels need from each sample's drawn parameters (the CPU transform's own Draw,
//      so GPU and CPU engines see identical parameters) into the batch's ParamArena; remembers the offsets.
//   2. Enqueue(): after the arena was uploaded, launches the kernels on `stream` reading arena.device(offset).
// Stages never allocate in the steady state: scratch comes from ChainWorkspace (grows only for a larger batch).
//
//   // in the chain executor (cuda/chain.cc), per batch:
//   arena.Reset();
//   for (i...) RETURN_IF_ERROR(stages[i]->Prepare(params_of_entry_i, shape, arena));
//   RETURN_IF_ERROR(arena.Upload(stream));
//   for (i...) RETURN_IF_ERROR(stages[i]->Enqueue(tensors, arena, workspace, stream));
//
// Thread-safety: a stage belongs to one CudaAugmenter (one stream); Prepare/Enqueue of one batch are not concurrent.
// Semantics: each stage equals its CPU transform (augment/transforms/<name>.h) on every sample within float
// tolerance (exact for label and permutation stages) — tested against the CPU engine on the GPU machine.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "augment/cuda/status.h"
#include "augment/transform.h"

namespace augmentd {

// The batch scratch the chain stages transform in place. All samples share one spatial shape.
struct ChainTensors {
  float* image = nullptr;     // (batch, channels, d0, d1, d2) float32, C order
  int16_t* seg = nullptr;     // (batch, seg_channels, d0, d1, d2) int16; nullptr when seg_channels == 0
  int32_t batch = 0;
  int32_t channels = 0;       // may grow in a stage (move_seg_as_one_hot_to_data); capacity below
  int32_t channel_capacity = 0;  // image channels the `image` buffer can hold (>= channels)
  int32_t seg_channels = 0;   // may change in a stage (convert_segmentation_to_regions, move_seg_as_one_hot_to_data)
  int32_t seg_capacity = 0;   // seg channels the `seg` buffer can hold
  int32_t shape[3] = {0, 0, 0};
  bool seg_is_bool = false;   // set by convert_segmentation_to_regions
  bool two_d = false;         // 2D samples as (1, X, Y): stages whose CPU form depends on the rank (disk vs ball)
  // The caller's outputs when the tensors already have their final layout (the executor sets them, or leaves them
  // null): a float32 image buffer of the output's size and the full-resolution int16 label level. A stage that writes
  // a whole new tensor (PermuteStage) may write it there instead of a slot and point `image` / `seg` at it; the
  // executor then skips its final copy. Null in channel views.
  float* final_image = nullptr;
  int16_t* final_seg = nullptr;
  int64_t voxels() const { return int64_t{shape[0]} * shape[1] * shape[2]; }
};

// Host-packed per-sample parameters of one batch, uploaded in one copy (pinned host + device buffer, both grown
// only when a batch needs more, then at least doubled from 64 KiB). Offsets are 16-byte aligned.
class ParamArena {
 public:
  ParamArena() = default;
  ~ParamArena();
  ParamArena(const ParamArena&) = delete;
  ParamArena& operator=(const ParamArena&) = delete;

  void Reset();
  // Appends `bytes` from `data`; returns the offset to pass to device() after Upload.
  size_t Append(const void* data, size_t bytes);
  template <typename T>
  size_t AppendArray(const std::vector<T>& v) { return Append(v.data(), v.size() * sizeof(T)); }
  // Copies the packed bytes to the device on `stream` (waits on the host for the previous upload of this arena to
  // finish before reusing its pinned buffer). RESOURCE_EXHAUSTED when memory runs out.
  absl::Status Upload(cudaStream_t stream);
  // Device address of the bytes appended at `offset` (valid after Upload, until the next Reset).
  const void* device(size_t offset) const;
  template <typename T>
  const T* device_as(size_t offset) const { return static_cast<const T*>(device(offset)); }

 private:
  std::vector<unsigned char> host_;  // staging before the pinned copy
  void* pinned_ = nullptr;
  size_t pinned_bytes_ = 0;
  void* device_ = nullptr;
  size_t device_bytes_ = 0;
  cudaEvent_t uploaded_ = nullptr;
};

// Device scratch shared by the stages of one chain: `slot` names an independent buffer (a stage uses its own slot
// numbers from kSlotStage.. upward; slots below are the executor's). A stage may give a tensor a new buffer only by
// exchanging slots (Exchange). Grows only when a larger size is requested; contents are not preserved across a grow.
class ChainWorkspace {
 public:
  static constexpr int kSlotStage = 4;
  ChainWorkspace() = default;
  ~ChainWorkspace();
  ChainWorkspace(const ChainWorkspace&) = delete;
  ChainWorkspace& operator=(const ChainWorkspace&) = delete;
  // At least `bytes` of device memory, 256-byte aligned. RESOURCE_EXHAUSTED when it cannot be allocated.
  absl::StatusOr<void*> Scratch(int slot, size_t bytes);
  // The capacity of the slot whose buffer starts at `p`; 0 when no slot's does.
  size_t CapacityOf(const void* p) const;
  // Swaps the buffers of `slot` and of the slot whose buffer starts at `held`, when both are of one capacity: the
  // tensor at `held` then lives in `slot`'s old buffer, still in its own slot (so what held it keeps a slot's base
  // pointer), and `slot` holds `held`'s old buffer. Returns the held slot's new buffer, or nullptr (nothing swapped)
  // when no other slot's buffer starts at `held` or the capacities differ: the caller copies instead.
  void* Exchange(int slot, const void* held);

 private:
  std::vector<std::pair<void*, size_t>> slots_;
};

// One pipeline entry on the GPU.
class CudaStage {
 public:
  virtual ~CudaStage() = default;
  // params[b]: sample b's parameters as the CPU engine drew them (SampleRecord), nullptr when the entry was not
  // applied to sample b (apply_probability / one-of). `t` describes the scratch at this point of the chain.
  virtual absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                               ParamArena& arena) = 0;
  // Launches the kernels for the batch prepared last (may change t.seg_channels / t.seg_is_bool / t.channels and
  // t.seg: move_seg_as_one_hot_to_data grows the image within t.channel_capacity; t.image / t.seg may move to another
  // buffer of their slot, ChainWorkspace::Exchange: the caller reads them from `t` afterwards, never from a copy).
  virtual absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) = 0;
};

using CudaStageOrError = absl::StatusOr<std::unique_ptr<CudaStage>>;

// The stage for pipeline entry `index` (transform `t`): its kind's CudaBackend::make_stage (augment/cuda/backends.cc),
// or UNIMPLEMENTED naming the index, the transform and the option the GPU chain does not cover. Spatial and
// downsample_seg_for_ds are not stages (the executor runs them).
CudaStageOrError MakeCudaStage(const Transform& t, size_t index);


}  // namespace augmentd
