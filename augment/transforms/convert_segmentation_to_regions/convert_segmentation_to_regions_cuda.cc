// convert_segmentation_to_regions's CUDA stage on the generic chain (augment/cuda/stage.h): the region label lists
// packed once per batch, bool region channels written from the int16 labels (chain_kernels.h LaunchRegions). Registered
// in augment/cuda/backends.cc.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/slice_stage.h"
#include "augment/transforms/convert_segmentation_to_regions/convert_segmentation_to_regions.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::FlagStage;
using stage_internal::ImageDims;
using stage_internal::NamedStage;
using stage_internal::NotCovered;
using stage_internal::SegDims;
using stage_internal::SliceStage;

// ---- convert_segmentation_to_regions: every sample (the executor refuses apply_probability < 1) -------------------
class RegionsStage final : public NamedStage {
 public:
  RegionsStage(const ConvertSegmentationToRegionsTransform& t, size_t index)
      : NamedStage(t, index), c_(t.config()) {
    offsets_.push_back(0);
    for (const auto& r : c_.regions) {
      for (int64_t l : r) labels_.push_back(static_cast<int16_t>(l));
      offsets_.push_back(static_cast<int32_t>(labels_.size()));
    }
  }
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    for (const TransformParams* p : params)
      if (p == nullptr) return absl::UnimplementedError(absl::StrCat(
                            "CUDA chain: transform ", index_, " (", name_, "): apply_probability < 1"));
    if (t.seg_channels > 0 && c_.channel_in_seg >= t.seg_channels)
      return Invalid("convert_segmentation_to_regions.channel_in_seg out of range");
    offsets_offset_ = arena.AppendArray(offsets_);
    labels_offset_ = arena.AppendArray(labels_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (t.seg == nullptr || t.seg_channels == 0) return absl::OkStatus();
    const int32_t regions = static_cast<int32_t>(c_.regions.size());
    if (regions > t.seg_capacity) return absl::InternalError("CUDA chain: seg scratch smaller than the regions");
    const int64_t n = t.voxels();
    ASSIGN_OR_RETURN(void* src, ws.Scratch(ChainWorkspace::kSlotStage, sizeof(int16_t) * t.batch * n));
    auto* s = static_cast<int16_t*>(src);
    AUGMENTD_CUDA_OK(ch::LaunchSegChannelCopy(t.batch, t.seg_channels, n,
                                                    static_cast<int32_t>(c_.channel_in_seg), t.seg, s, false, stream));
    AUGMENTD_CUDA_OK(ch::LaunchRegions(t.batch, n, s, t.seg, regions, arena.device_as<int32_t>(offsets_offset_),
                                             arena.device_as<int16_t>(labels_offset_), stream));
    t.seg_channels = regions;
    t.seg_is_bool = true;
    return absl::OkStatus();
  }

 private:
  ConvertSegmentationToRegionsConfig c_;
  std::vector<int32_t> offsets_;
  std::vector<int16_t> labels_;
  size_t offsets_offset_ = 0, labels_offset_ = 0;
};

}  // namespace

CudaStageOrError MakeConvertSegmentationToRegionsStage(const Transform& t, size_t index) {
  const auto& r = static_cast<const ConvertSegmentationToRegionsTransform&>(t);
  for (const auto& region : r.config().regions)
    for (int64_t l : region)
      if (l < INT16_MIN || l > INT16_MAX) return NotCovered(t, index, "region labels outside int16");
  return std::unique_ptr<CudaStage>(new RegionsStage(r, index));
}

}  // namespace augmentd
