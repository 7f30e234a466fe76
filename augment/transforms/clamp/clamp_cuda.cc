// clamp's CUDA stage on the generic chain (augment/cuda/stage.h): one DaextSlice per selected (sample, channel) with
// the CPU transform's drawn q_lo / q_hi. Enqueue: a copy of the image (AugLab's guard restores from it), [moments
// before], each selected slice sorted (CUB radix sort, host loop over the selected slices), one launch for the
// thresholds (daext_math.h QuantileRank / Lerp, the CPU's torch.quantile) and the clamp, then retain_stats and the
// guard (stages_daext_internal.h). Registered in augment/cuda/backends.cc.
#include <memory>
#include <vector>

#include "augment/cuda/stages_daext_internal.h"
#include "augment/transforms/clamp/clamp.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace {
namespace dx = cuda::daext;
using transforms_internal::ParamsAs;

class ClampStage final : public CudaStage {
 public:
  ClampStage(const ClampTransform& t, size_t index) : retain_(t.config().retain_stats), index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    slices_.assign(static_cast<size_t>(t.batch) * t.channels, dx::DaextSlice{});
    any_ = false;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const auto* p, ParamsAs<ClampParams>(*params[b], "clamp"));
      const size_t n = p->apply_to_channel.size();
      if (p->min_percentile.size() != n || p->max_percentile.size() != n)
        return da5_stage_internal::Invalid(index_, "clamp", "params: one min / max percentile per channel");
      for (size_t i = 0; i < n; ++i) {
        ASSIGN_OR_RETURN(dx::DaextSlice * s,
                         daext_stage_internal::SliceOf(slices_, t, b, p->apply_to_channel[i], index_, "clamp"));
        s->on = 1;
        s->retain = retain_ ? 1 : 0;
        s->a = p->min_percentile[i];
        s->b = p->max_percentile[i];
        any_ = true;
      }
    }
    if (any_) offset_ = arena.AppendArray(slices_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    const int slices = t.batch * t.channels;
    const int64_t n = t.voxels();
    const auto* p = arena.device_as<dx::DaextSlice>(offset_);
    ASSIGN_OR_RETURN(float* orig, da5_stage_internal::EnqueueImageCopy(t, ws, stream));
    const cuda::da5::SliceMoments* before = nullptr;
    if (retain_) {
      ASSIGN_OR_RETURN(before, da5_stage_internal::EnqueueMoments(orig, n, slices, da5_stage_internal::kSlotMomentsA,
                                                                  ws, stream));
    }
    ASSIGN_OR_RETURN(void* sorted_v, ws.Scratch(daext_stage_internal::kSlotSorted,
                                                static_cast<size_t>(slices) * static_cast<size_t>(n) * sizeof(float)));
    const size_t temp_bytes = dx::SortTempBytes(n);
    ASSIGN_OR_RETURN(void* temp, ws.Scratch(daext_stage_internal::kSlotSortTemp, temp_bytes));
    float* sorted = static_cast<float*>(sorted_v);
    for (int s = 0; s < slices; ++s) {
      if (!slices_[static_cast<size_t>(s)].on) continue;
      const int64_t off = static_cast<int64_t>(s) * n;
      RETURN_IF_ERROR(CudaStatus(dx::SortSlice(orig + off, sorted + off, n, temp, temp_bytes, stream), "clamp sort"));
    }
    ASSIGN_OR_RETURN(void* thr, ws.Scratch(daext_stage_internal::kSlotThresholds,
                                           static_cast<size_t>(slices) * 2 * sizeof(float)));
    RETURN_IF_ERROR(
        CudaStatus(dx::LaunchClamp(t.image, sorted, n, slices, p, static_cast<float*>(thr), stream), "clamp"));
    return daext_stage_internal::EnqueueRetainAndGuard(t, p, retain_, before, orig, ws, stream, "clamp");
  }

 private:
  bool retain_;
  size_t index_;
  std::vector<dx::DaextSlice> slices_;
  bool any_ = false;
  size_t offset_ = 0;
};

}  // namespace

CudaStageOrError MakeClampStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new ClampStage(static_cast<const ClampTransform&>(t), index));
}

}  // namespace augmentd
