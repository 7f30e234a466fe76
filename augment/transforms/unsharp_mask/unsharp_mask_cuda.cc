// unsharp_mask's CUDA stage on the generic chain (augment/cuda/stage.h): per sample its 3×3×3 kernel from the drawn
// sigmas (daext_math.h UnsharpKernel on the host: the CPU transform's very weights) in the arena, one DaextSlice per
// selected (sample, channel). Enqueue: a copy of the image (the stencil's source and the guard's), [moments before],
// one launch x ← x + a·(x − K ⋆ x), then retain_stats and the guard (stages_daext_internal.h; σ = 0 gives NaN
// weights, so the guard leaves the channel as it was, as on the CPU). 2D samples run on the chain's (1, X, Y) form as
// the CPU transform runs them. Registered in augment/cuda/backends.cc.
#include <memory>
#include <vector>

#include "augment/cuda/stages_daext_internal.h"
#include "augment/kernels/common/daext_math.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/unsharp_mask/unsharp_mask.h"

namespace augmentd {
namespace {
namespace dx = cuda::daext;
using transforms_internal::ParamsAs;

class UnsharpMaskStage final : public CudaStage {
 public:
  UnsharpMaskStage(const UnsharpMaskTransform& t, size_t index) : config_(t.config()), index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    slices_.assign(static_cast<size_t>(t.batch) * t.channels, dx::DaextSlice{});
    weights_.clear();
    any_ = false;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const auto* p, ParamsAs<UnsharpMaskParams>(*params[b], "unsharp_mask"));
      const int64_t off = static_cast<int64_t>(weights_.size());
      weights_.resize(weights_.size() + 27);
      dx::UnsharpKernel(p->sigma.data(), weights_.data() + off);
      for (int64_t c : config_.apply_to_channel) {
        ASSIGN_OR_RETURN(dx::DaextSlice * s, daext_stage_internal::SliceOf(slices_, t, b, c, index_, "unsharp_mask"));
        s->on = 1;
        s->retain = config_.retain_stats ? 1 : 0;
        s->off = off;
        any_ = true;
      }
    }
    if (any_) {
      offset_ = arena.AppendArray(slices_);
      weights_offset_ = arena.AppendArray(weights_);
    }
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    const int slices = t.batch * t.channels;
    const auto* p = arena.device_as<dx::DaextSlice>(offset_);
    ASSIGN_OR_RETURN(float* copy, da5_stage_internal::EnqueueImageCopy(t, ws, stream));
    const cuda::da5::SliceMoments* before = nullptr;
    if (config_.retain_stats) {
      ASSIGN_OR_RETURN(before, da5_stage_internal::EnqueueMoments(copy, t.voxels(), slices,
                                                                  da5_stage_internal::kSlotMomentsA, ws, stream));
    }
    RETURN_IF_ERROR(CudaStatus(dx::LaunchUnsharpMask(copy, t.image, t.shape, slices, p,
                                                     arena.device_as<float>(weights_offset_),
                                                     static_cast<float>(config_.unsharp_amount), stream),
                               "unsharp_mask"));
    return daext_stage_internal::EnqueueRetainAndGuard(t, p, config_.retain_stats, before, copy, ws, stream,
                                                       "unsharp_mask");
  }

 private:
  UnsharpMaskConfig config_;
  size_t index_;
  std::vector<float> weights_;
  std::vector<dx::DaextSlice> slices_;
  bool any_ = false;
  size_t offset_ = 0, weights_offset_ = 0;
};

}  // namespace

CudaStageOrError MakeUnsharpMaskStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new UnsharpMaskStage(static_cast<const UnsharpMaskTransform&>(t), index));
}

}  // namespace augmentd
