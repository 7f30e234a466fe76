// brightness_additive's CUDA stage on the generic chain (augment/cuda/stage.h): the drawn shift per selected channel,
// one launch per batch (chain_kernels.h LaunchScaleShift, shared with multiplicative_brightness). Registered in
// augment/cuda/backends.cc.
#include "augment/cuda/slice_stage.h"
#include "augment/transforms/brightness_additive/brightness_additive.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::ImageDims;
using stage_internal::SliceStage;

// ---- brightness_additive: x + shift[c] per selected channel ----------------------------------------------------
class BrightnessAdditiveStage final : public SliceStage<ch::ScaleShiftSlice> {
 public:
  using SliceStage::SliceStage;
  absl::Status Fill(const TransformParams& tp, const ChainTensors& t, ch::ScaleShiftSlice* row) override {
    const auto& p = static_cast<const BrightnessAdditiveParams&>(tp);
    if (p.shift.empty() || p.apply_to_channel.empty()) return absl::OkStatus();
    if (static_cast<int64_t>(p.shift.size()) != t.channels) return Invalid("params.shift needs one entry per channel");
    for (int64_t c : p.apply_to_channel) {
      RETURN_IF_ERROR(CheckChannel(c, t));
      row[c].add = p.shift[static_cast<size_t>(c)];
      row[c].on = 1;
    }
    return absl::OkStatus();
  }
  absl::Status Launch(ChainTensors& t, const ch::ScaleShiftSlice* d, const ParamArena&, ChainWorkspace&,
                      cudaStream_t s) override {
    return CudaStatus(ch::LaunchScaleShift(ImageDims(t), t.image, d, s), name_.c_str());
  }
};

}  // namespace

CudaStageOrError MakeBrightnessAdditiveStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new BrightnessAdditiveStage(t, index));
}

}  // namespace augmentd
