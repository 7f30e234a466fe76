// median_filter's CUDA stage on the generic chain (augment/cuda/stage.h; DA5's shared helpers in
// augment/cuda/stages_da5_internal.h, kernels in augment/kernels/cuda/da5_kernels.h). Registered in
// augment/cuda/backends.cc.
#include <algorithm>
#include <vector>

#include "augment/cuda/stage.h"
#include "augment/cuda/stages_da5_internal.h"
#include "augment/kernels/cuda/da5_kernels.h"
#include "augment/kernels/cuda/da5_median_large.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/median_filter/median_filter.h"

namespace augmentd {
namespace {
namespace da5 = cuda::da5;
using da5_stage_internal::Invalid;
using da5_stage_internal::ParamChannels;
using transforms_internal::ParamsAs;

// median_filter: k per slice (0 = untouched; k = 1 is the identity), then one launch over all tiles of all slices
// (a batch drawing a window above kMaxMedianSize: one launch of the generic da5_median_large.h kernel instead).
class MedianStage final : public CudaStage {
 public:
  explicit MedianStage(size_t index) : index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    ks_.assign(static_cast<size_t>(t.batch) * t.channels, 0);
    max_k_ = 0;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const MedianFilterParams* p, ParamsAs<MedianFilterParams>(*params[b], "median_filter"));
      if (p->filter_sizes.size() < p->apply_channel.size())
        return Invalid(index_, "median_filter", "params.filter_sizes: one entry per channel");
      for (int64_t c = 0; c < ParamChannels(t, p->apply_channel.size()); ++c) {
        const int64_t k = p->filter_sizes[c];
        if (!p->apply_channel[c] || k < 2) continue;
        ks_[b * t.channels + c] = static_cast<int32_t>(k);
        max_k_ = std::max(max_k_, static_cast<int>(k));
      }
    }
    if (max_k_ >= 2) offset_ = arena.AppendArray(ks_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (max_k_ < 2) return absl::OkStatus();
    ASSIGN_OR_RETURN(float* copy, da5_stage_internal::EnqueueImageCopy(t, ws, stream));
    if (max_k_ > da5::kMaxMedianSize)  // a window above the shared-memory tiles: the generic kernel, any k
      return CudaStatus(da5::LaunchMedianLarge(copy, t.image, arena.device_as<int32_t>(offset_), t.batch * t.channels,
                                          t.shape, stream),
                   "median_filter");
    return CudaStatus(da5::LaunchMedian(copy, t.image, arena.device_as<int32_t>(offset_), t.batch * t.channels, t.shape,
                                   max_k_, stream),
                 "median_filter");
  }

 private:
  size_t index_;
  std::vector<int32_t> ks_;
  int max_k_ = 0;
  size_t offset_ = 0;
};

}  // namespace

// median_filter: any size (k > kMaxMedianSize runs LaunchMedianLarge).
CudaStageOrError MakeMedianFilterStage(const Transform&, size_t index) {
  return std::unique_ptr<CudaStage>(new MedianStage(index));
}

}  // namespace augmentd
