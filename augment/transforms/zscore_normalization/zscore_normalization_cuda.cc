// zscore_normalization's CUDA stage on the generic chain (augment/cuda/stage.h): one DaextSlice per configured channel
// the sample has (AugLab skips the others, as the CPU transform does) of every sample the entry applies to. Enqueue:
// a copy of the image (the guard's), the slices' moments (deterministic, fp64 sums: mean and unbiased std; the
// population std is derived from it), one pointwise launch x ← (x − mean) / max(std, 1e-8), then AugLab's guard
// (stages_daext_internal.h). Registered in augment/cuda/backends.cc.
#include <memory>
#include <vector>

#include "augment/cuda/stages_daext_internal.h"
#include "augment/transforms/zscore_normalization/zscore_normalization.h"

namespace augmentd {
namespace {
namespace dx = cuda::daext;

class ZscoreNormalizationStage final : public CudaStage {
 public:
  explicit ZscoreNormalizationStage(const ZscoreNormalizationTransform& t) : config_(t.config()) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    slices_.assign(static_cast<size_t>(t.batch) * t.channels, dx::DaextSlice{});
    any_ = false;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      for (int64_t c : config_.apply_to_channel) {
        if (c < 0 || c >= t.channels) continue;  // AugLab skips channel indices the sample does not have
        dx::DaextSlice& s = slices_[static_cast<size_t>(b) * t.channels + static_cast<size_t>(c)];
        s.on = 1;
        s.mode = config_.unbiased ? 1 : 0;
        any_ = true;
      }
    }
    if (any_) offset_ = arena.AppendArray(slices_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    const int slices = t.batch * t.channels;
    const auto* p = arena.device_as<dx::DaextSlice>(offset_);
    ASSIGN_OR_RETURN(float* orig, da5_stage_internal::EnqueueImageCopy(t, ws, stream));
    ASSIGN_OR_RETURN(const cuda::da5::SliceMoments* stats,
                     da5_stage_internal::EnqueueMoments(orig, t.voxels(), slices, da5_stage_internal::kSlotMomentsA,
                                                        ws, stream));
    RETURN_IF_ERROR(
        CudaStatus(dx::LaunchZscore(t.image, t.voxels(), slices, p, stats, stream), "zscore_normalization"));
    return daext_stage_internal::EnqueueRetainAndGuard(t, p, false, nullptr, orig, ws, stream,
                                                       "zscore_normalization");
  }

 private:
  ZscoreNormalizationConfig config_;
  std::vector<dx::DaextSlice> slices_;
  bool any_ = false;
  size_t offset_ = 0;
};

}  // namespace

CudaStageOrError MakeZscoreNormalizationStage(const Transform& t, size_t) {
  return std::unique_ptr<CudaStage>(
      new ZscoreNormalizationStage(static_cast<const ZscoreNormalizationTransform&>(t)));
}

}  // namespace augmentd
