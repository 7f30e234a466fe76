// edge_convolution's CUDA stage on the generic chain (augment/cuda/stage.h): the Laplace / Scharr kernels
// (daext_math.h EdgeKernels, the CPU transform's own) in the arena once, one DaextSlice per selected (sample,
// channel). Enqueue: a copy of the image (the stencil's source and the guard's), [moments before], one launch (the
// reflect-padded correlations summed in AugLab's order, auglab_math.h ConvAt), then retain_stats and the guard
// (stages_daext_internal.h). 2D samples run on the chain's (1, X, Y) form as the CPU transform runs them (its 3D view
// of a 2D sample is 1 × X × Y too). Registered in augment/cuda/backends.cc.
#include <memory>
#include <vector>

#include "augment/cuda/stages_daext_internal.h"
#include "augment/kernels/common/daext_math.h"
#include "augment/transforms/common/auglab_common.h"
#include "augment/transforms/edge_convolution/edge_convolution.h"

namespace augmentd {
namespace {
namespace dx = cuda::daext;

class EdgeConvolutionStage final : public CudaStage {
 public:
  EdgeConvolutionStage(const EdgeConvolutionTransform& t, size_t index) : config_(t.config()), index_(index) {
    float k[3][27];
    kernels_ = dx::EdgeKernels(config_.kernel_type == "scharr", k);
    for (int i = 0; i < kernels_; ++i) weights_.insert(weights_.end(), k[i], k[i] + 27);
  }
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    slices_.assign(static_cast<size_t>(t.batch) * t.channels, dx::DaextSlice{});
    any_ = false;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      for (int64_t c : config_.apply_to_channel) {
        ASSIGN_OR_RETURN(dx::DaextSlice * s,
                         daext_stage_internal::SliceOf(slices_, t, b, c, index_, "edge_convolution"));
        s->on = 1;
        s->retain = config_.retain_stats ? 1 : 0;
        s->mode = kernels_;
        s->off = 0;
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
    RETURN_IF_ERROR(CudaStatus(dx::LaunchEdgeConvolution(copy, t.image, t.shape, slices, p,
                                                         arena.device_as<float>(weights_offset_), config_.absolute,
                                                         stream),
                               "edge_convolution"));
    return daext_stage_internal::EnqueueRetainAndGuard(t, p, config_.retain_stats, before, copy, ws, stream,
                                                       "edge_convolution");
  }

 private:
  EdgeConvolutionConfig config_;
  size_t index_;
  int kernels_ = 1;
  std::vector<float> weights_;
  std::vector<dx::DaextSlice> slices_;
  bool any_ = false;
  size_t offset_ = 0, weights_offset_ = 0;
};

}  // namespace

CudaStageOrError MakeEdgeConvolutionStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(
      new EdgeConvolutionStage(static_cast<const EdgeConvolutionTransform&>(t), index));
}

}  // namespace augmentd
