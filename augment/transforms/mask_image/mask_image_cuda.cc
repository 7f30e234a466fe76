// mask_image's CUDA stage on the generic chain (augment/cuda/stage.h): per-sample applied flags; LaunchMaskImage sets
// the selected image channels to set_outside_to where seg channel channel_idx_in_seg is outside the mask
// (chain_kernels.h). Registered in augment/cuda/backends.cc.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/slice_stage.h"
#include "augment/transforms/mask_image/mask_image.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::FlagStage;
using stage_internal::ImageDims;
using stage_internal::NamedStage;
using stage_internal::NotCovered;
using stage_internal::SegDims;
using stage_internal::SliceStage;

class MaskImageStage final : public FlagStage {
 public:
  MaskImageStage(const MaskImageTransform& t, size_t index) : FlagStage(t, index), c_(t.config()) {
    for (int64_t c : c_.apply_to_channels)
      if (c >= 0 && c < 64) bits_ |= uint64_t{1} << c;
  }
  absl::Status Check(const ChainTensors& t) const override {
    if (!any_ || c_.apply_to_channels.empty()) return absl::OkStatus();
    if (t.seg_channels == 0) return Invalid("needs a segmentation");
    if (c_.channel_idx_in_seg >= t.seg_channels) return Invalid("mask_image.channel_idx_in_seg out of range");
    for (int64_t c : c_.apply_to_channels)
      if (c >= t.channels) return Invalid(absl::StrCat("mask_image.apply_to_channels: channel ", c, " out of range"));
    return absl::OkStatus();
  }
  cudaError_t Launch(ChainTensors& t, const int32_t* on, cudaStream_t stream) const override {
    if (bits_ == 0) return cudaSuccess;
    return ch::LaunchMaskImage(ImageDims(t), t.image, SegDims(t), t.seg, static_cast<int32_t>(c_.channel_idx_in_seg),
                               bits_, static_cast<float>(c_.set_outside_to), on, stream);
  }

 private:
  MaskImageConfig c_;
  uint64_t bits_ = 0;
};

}  // namespace

CudaStageOrError MakeMaskImageStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new MaskImageStage(static_cast<const MaskImageTransform&>(t), index));
}

}  // namespace augmentd
