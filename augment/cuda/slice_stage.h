// augment/cuda/slice_stage.h — bases of the chain's CUDA stages (stage.h) that the stage files share, whether in
// augment/cuda/stages*.cc or in a transform's own folder (augment/transforms/<name>/<name>_cuda.cc):
//   NamedStage     errors worded "transform <index> (<name>): ..."
//   SliceStage<S>  one record S per image slice (b·C + c) with an `on` flag: Fill() writes sample b's records,
//                  Launch() runs the kernel once per batch when any record is on.
//   FlagStage      one "applied" flag per sample (deterministic label entries: mask_image, remove_label).
//   PermuteStage   one signed axis permutation per sample (mirror, rot90, transpose_axes, auglab_flip).
//   NotCovered     the UNIMPLEMENTED wording for an option the GPU chain does not cover.
// Internal to the CUDA engine. Thread-safety: as CudaStage (one augmenter, one stream).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "augment/cuda/stage.h"
#include "augment/kernels/cuda/chain_kernels.h"
#include "augment/status_macros.h"
#include "augment/transform.h"

namespace augmentd::stage_internal {

inline cuda::chain::Dims ImageDims(const ChainTensors& t) {
  return cuda::chain::Dims{t.batch, t.channels, {t.shape[0], t.shape[1], t.shape[2]}};
}
inline cuda::chain::Dims SegDims(const ChainTensors& t) {
  return cuda::chain::Dims{t.batch, t.seg_channels, {t.shape[0], t.shape[1], t.shape[2]}};
}

// Shared naming of a stage's errors: "CUDA chain: transform <index> (<name>): ...".
class NamedStage : public CudaStage {
 public:
  NamedStage(const Transform& t, size_t index) : name_(t.name()), index_(index) {}

 protected:
  absl::Status Invalid(const std::string& why) const {
    return absl::InvalidArgumentError(absl::StrCat("transform ", index_, " (", name_, "): ", why));
  }
  absl::Status CheckChannel(int64_t c, const ChainTensors& t) const {
    if (c < 0 || c >= t.channels) return Invalid(absl::StrCat("channel ", c, " outside the ", t.channels, " channels"));
    return absl::OkStatus();
  }
  std::string name_;
  size_t index_;
};

// A stage with one record per image slice (b·C + c): Fill() sets the records of sample b's channels.
template <typename Slice>
class SliceStage : public NamedStage {
 public:
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    host_.assign(static_cast<size_t>(t.batch) * t.channels, Slice{});
    RETURN_IF_ERROR(BeginBatch(t));
    for (size_t b = 0; b < params.size(); ++b) {
      if (params[b] != nullptr) RETURN_IF_ERROR(Fill(*params[b], t, &host_[b * t.channels]));
    }
    any_ = std::any_of(host_.begin(), host_.end(), [](const Slice& s) { return s.on != 0; });
    offset_ = arena.AppendArray(host_);
    AppendExtra(arena);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    return Launch(t, arena.device_as<Slice>(offset_), arena, ws, stream);
  }

 public:
  using NamedStage::NamedStage;

 protected:
  virtual absl::Status BeginBatch(const ChainTensors&) { return absl::OkStatus(); }
  virtual absl::Status Fill(const TransformParams& p, const ChainTensors& t, Slice* row) = 0;
  virtual void AppendExtra(ParamArena&) {}
  virtual absl::Status Launch(ChainTensors& t, const Slice* d, const ParamArena& arena, ChainWorkspace& ws,
                              cudaStream_t stream) = 0;

 private:
  std::vector<Slice> host_;
  bool any_ = false;
  size_t offset_ = 0;
};

// UNIMPLEMENTED "CUDA engine: transform <index> (<name>): <why> (run it on device "cpu")": an option a stage does not
// cover.
inline absl::Status NotCovered(const Transform& t, size_t index, std::string_view why) {
  return absl::UnimplementedError(absl::StrCat("CUDA engine: transform ", index, " (", std::string(t.name()), "): ",
                                               std::string(why), " (run it on device \"cpu\")"));
}

// Per-sample "applied" flags of a deterministic entry (mask_image, remove_label).
class FlagStage : public NamedStage {
 public:
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    on_.assign(static_cast<size_t>(t.batch), 0);
    for (size_t b = 0; b < params.size(); ++b) on_[b] = params[b] != nullptr ? 1 : 0;
    any_ = std::find(on_.begin(), on_.end(), 1) != on_.end();
    offset_ = arena.AppendArray(on_);
    return Check(t);
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace&, cudaStream_t stream) override {
    if (!any_ || t.seg == nullptr || t.seg_channels == 0) return absl::OkStatus();
    return CudaStatus(Launch(t, arena.device_as<int32_t>(offset_), stream), name_.c_str());
  }

 public:
  using NamedStage::NamedStage;

 protected:
  virtual absl::Status Check(const ChainTensors& t) const = 0;
  virtual cudaError_t Launch(ChainTensors& t, const int32_t* on, cudaStream_t stream) const = 0;
  bool any_ = false;

 private:
  std::vector<int32_t> on_;
  size_t offset_ = 0;
};

// One signed axis permutation per sample (chain_kernels.h PermuteSample): the image and labels are gathered into
// the stage's own slots, whose buffers then become the tensors (ChainWorkspace::Exchange; a copy back only when the
// tensors do not start a slot of the same capacity). Two consecutive permutation entries compose (ForwardTo): the
// first launches nothing and the second gathers once through the composition, so rot90 then transpose_axes move the
// batch once.
class PermuteStage : public NamedStage {
 public:
  using NamedStage::NamedStage;
  static constexpr int kSlotImage = ChainWorkspace::kSlotStage + 42, kSlotSeg = kSlotImage + 1;
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) final;
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) final;
  // `next` gathers through this stage's permutations followed by its own; this stage launches nothing. The caller
  // guarantees that `next` is the chain's next entry, on the same tensors (no channel selection on either, no label
  // store between them), and that this stage is prepared first.
  void ForwardTo(PermuteStage& next) {
    forward_ = true;
    next.prev_ = this;
  }
  // After Prepare: this batch's per-sample permutations (composed with the linked entries before this one) for a
  // caller that applies them itself — the chain's fused spatial kernel stores through them (SampleParams::out_axis)
  // when they directly follow the spatial entry; this stage then launches nothing in this batch. Valid until the next
  // Prepare. Null (nothing taken, nothing changed) when this stage forwards to a later one.
  const std::vector<cuda::chain::PermuteSample>* TakePermutations() {
    if (forward_) return nullptr;
    any_ = false;
    return &host_;
  }

 protected:
  // Sample b's permutation for its drawn parameters (`on` = 0 for the identity).
  virtual absl::StatusOr<cuda::chain::PermuteSample> SampleOf(const TransformParams& p,
                                                              const ChainTensors& t) const = 0;

 private:
  PermuteStage* prev_ = nullptr;
  bool forward_ = false;
  std::vector<cuda::chain::PermuteSample> host_;
  bool any_ = false;
  size_t offset_ = 0;
};

// `second` applied after `first` (either may be off: the identity).
cuda::chain::PermuteSample ComposePermutations(const cuda::chain::PermuteSample& first,
                                               const cuda::chain::PermuteSample& second);

// first.ForwardTo(second) when both are permutation stages; nothing otherwise.
void LinkPermutations(CudaStage& first, CudaStage& second);

}  // namespace augmentd::stage_internal
