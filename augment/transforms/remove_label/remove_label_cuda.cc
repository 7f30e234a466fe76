// remove_label's CUDA stage on the generic chain (augment/cuda/stage.h): per-sample applied flags; LaunchReplaceLabel
// maps label_value to set_to on the selected seg channels (chain_kernels.h). Registered in augment/cuda/backends.cc.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/slice_stage.h"
#include "augment/transforms/remove_label/remove_label.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::FlagStage;
using stage_internal::ImageDims;
using stage_internal::NamedStage;
using stage_internal::NotCovered;
using stage_internal::SegDims;
using stage_internal::SliceStage;

class RemoveLabelStage final : public FlagStage {
 public:
  RemoveLabelStage(const RemoveLabelTransform& t, size_t index) : FlagStage(t, index), c_(t.config()) {}
  absl::Status Check(const ChainTensors& t) const override {
    if (c_.segmentation_channels)
      for (int64_t c : *c_.segmentation_channels)
        if (c >= t.seg_channels && t.seg_channels > 0 && any_)
          return Invalid(absl::StrCat("remove_label.segmentation_channels: channel ", c, " out of range"));
    return absl::OkStatus();
  }
  cudaError_t Launch(ChainTensors& t, const int32_t* on, cudaStream_t stream) const override {
    uint64_t bits = 0;
    if (c_.segmentation_channels) {
      for (int64_t c : *c_.segmentation_channels) bits |= uint64_t{1} << c;
    } else {
      bits = ~uint64_t{0};
    }
    return ch::LaunchReplaceLabel(SegDims(t), t.seg, bits, static_cast<int16_t>(c_.label_value),
                                  static_cast<int16_t>(c_.set_to), on, stream);
  }

 private:
  RemoveLabelConfig c_;
};

}  // namespace

CudaStageOrError MakeRemoveLabelStage(const Transform& t, size_t index) {
  const auto& r = static_cast<const RemoveLabelTransform&>(t);
  const RemoveLabelConfig& c = r.config();
  if (c.label_value < INT16_MIN || c.label_value > INT16_MAX || c.set_to < INT16_MIN || c.set_to > INT16_MAX)
    return NotCovered(t, index, "label values outside int16");
  if (c.segmentation_channels)
    for (int64_t k : *c.segmentation_channels)
      if (k < 0 || k >= 64) return NotCovered(t, index, "segmentation_channels outside 0..63");
  return std::unique_ptr<CudaStage>(new RemoveLabelStage(r, index));
}

}  // namespace augmentd
