// sharpening's CUDA stage on the generic chain (augment/cuda/stage.h; DA5's shared helpers in
// augment/cuda/stages_da5_internal.h, kernels in augment/kernels/cuda/da5_kernels.h). Registered in
// augment/cuda/backends.cc.
#include <vector>

#include "augment/cuda/chain_2d.h"
#include "augment/cuda/stage.h"
#include "augment/cuda/stages_da5_internal.h"
#include "augment/kernels/cuda/da5_kernels.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/sharpening/sharpening.h"

namespace augmentd {
namespace {
namespace da5 = cuda::da5;
using da5_stage_internal::Invalid;
using da5_stage_internal::ParamChannels;
using transforms_internal::ParamsAs;

// sharpening: per slice strength / apply / clamp; the clamp range is the slice's pre-sharpening [min, max]. 2D
// samples (PlanarSharpeningParams, cuda/chain_2d.h) take the kernel's 4-neighbour form.
class SharpenStage final : public CudaStage {
 public:
  explicit SharpenStage(size_t index) : index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    slices_.assign(static_cast<size_t>(t.batch) * t.channels, da5::SharpenSlice{});
    any_ = any_clamp_ = false;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const SharpeningParams* p, ParamsAs<SharpeningParams>(*params[b], "sharpening"));
      if (p->strengths.size() < p->apply_channel.size() || p->clamp_intensities.size() < p->apply_channel.size())
        return Invalid(index_, "sharpening", "params: strengths / clamp_intensities need one entry per channel");
      for (int64_t c = 0; c < ParamChannels(t, p->apply_channel.size()); ++c) {
        if (!p->apply_channel[c]) continue;
        da5::SharpenSlice& s = slices_[b * t.channels + c];
        s.apply = 1;
        s.strength = static_cast<float>(p->strengths[c]);
        s.clamp = p->clamp_intensities[c] ? 1 : 0;
        s.planar = dynamic_cast<const PlanarSharpeningParams*>(p) != nullptr ? 1 : 0;  // a 2D sample
        any_ = true;
        any_clamp_ |= s.clamp != 0;
      }
    }
    if (any_) offset_ = arena.AppendArray(slices_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    const int slices = t.batch * t.channels;
    ASSIGN_OR_RETURN(float* copy, da5_stage_internal::EnqueueImageCopy(t, ws, stream));
    const da5::SliceMoments* stats = nullptr;
    if (any_clamp_) {
      ASSIGN_OR_RETURN(stats, da5_stage_internal::EnqueueMoments(copy, t.voxels(), slices,
                                                                 da5_stage_internal::kSlotMomentsA, ws, stream));
    }
    return CudaStatus(
        da5::LaunchSharpen(copy, t.image, arena.device_as<da5::SharpenSlice>(offset_), stats, slices, t.shape, stream),
        "sharpening");
  }

 private:
  size_t index_;
  std::vector<da5::SharpenSlice> slices_;
  bool any_ = false, any_clamp_ = false;
  size_t offset_ = 0;
};

}  // namespace

CudaStageOrError MakeSharpeningStage(const Transform&, size_t index) {
  return std::unique_ptr<CudaStage>(new SharpenStage(index));
}

}  // namespace augmentd
