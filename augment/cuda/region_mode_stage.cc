// RegionModeStage (region_mode_stage.h): the wrapped stage, then the region blend on the samples that drew in / out.
#include "augment/cuda/region_mode_stage.h"

#include "augment/status_macros.h"

namespace augmentd {

absl::Status RegionModeStage::Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                                      ParamArena& arena) {
  RETURN_IF_ERROR(inner_->Prepare(params, t, arena));
  recs_.assign(static_cast<size_t>(t.batch), cuda::region::RegionRec{});
  any_ = false;
  if (t.seg == nullptr || t.seg_channels == 0) return absl::OkStatus();  // no labels: the step everywhere
  for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(regions_.size()); ++b) {
    if (b >= static_cast<int32_t>(params.size()) || params[b] == nullptr) continue;
    const RegionDraw& r = regions_[b];
    if (r.mode == region_mode::kAll) continue;
    if (r.seg_channels != std::min<int32_t>(t.seg_channels, region_mode::kMaxSegChannels))
      return absl::InvalidArgumentError("region_mode: the sample's seg channels changed since the draw");
    recs_[b].mode = r.mode;
    recs_[b].keep = r.keep;
    any_ = true;
  }
  if (any_) offset_ = arena.AppendArray(recs_);
  return absl::OkStatus();
}

absl::Status RegionModeStage::Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws,
                                      cudaStream_t stream) {
  if (!any_) return inner_->Enqueue(t, arena, ws, stream);
  const size_t bytes = static_cast<size_t>(t.batch) * t.channels * static_cast<size_t>(t.voxels()) * sizeof(float);
  ASSIGN_OR_RETURN(void* orig, ws.Scratch(kSlotOrig, bytes));
  AUGMENTD_CUDA_OK(cudaMemcpyAsync(orig, t.image, bytes, cudaMemcpyDeviceToDevice, stream));
  const int32_t channels = t.channels;
  RETURN_IF_ERROR(inner_->Enqueue(t, arena, ws, stream));
  if (t.channels != channels || t.seg == nullptr)
    return absl::InvalidArgumentError("region_mode: the wrapped stage changed the layout (intensity kinds only)");
  ASSIGN_OR_RETURN(void* keys, ws.Scratch(kSlotKeys, cuda::region::RegionScratchBytes(t.batch * t.channels)));
  return CudaStatus(cuda::region::LaunchRegionBlend(t.image, static_cast<const float*>(orig), t.seg, t.batch,
                                                    t.channels, std::min<int32_t>(t.seg_channels, 64), t.voxels(),
                                                    arena.device_as<cuda::region::RegionRec>(offset_), keys, stream),
                    "region_mode blend");
}

}  // namespace augmentd
