// multiplicative_brightness's CUDA stage on the generic chain (augment/cuda/stage.h): the drawn multiplier per selected
// channel, one launch per batch (chain_kernels.h LaunchScaleShift, shared with brightness_additive). Registered in
// augment/cuda/backends.cc.
#include "augment/cuda/slice_stage.h"
#include "augment/transforms/multiplicative_brightness/multiplicative_brightness.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::ImageDims;
using stage_internal::SliceStage;

// ---- multiplicative_brightness: x·m per selected channel --------------------------------------------------------
class MultiplicativeBrightnessStage final : public SliceStage<ch::ScaleShiftSlice> {
 public:
  using SliceStage::SliceStage;
  absl::Status Fill(const TransformParams& tp, const ChainTensors& t, ch::ScaleShiftSlice* row) override {
    const auto& p = static_cast<const MultiplicativeBrightnessParams&>(tp);
    if (p.multipliers.size() != p.apply_to_channel.size()) return Invalid("one multiplier per selected channel");
    for (size_t k = 0; k < p.apply_to_channel.size(); ++k) {
      const int64_t c = p.apply_to_channel[k];
      RETURN_IF_ERROR(CheckChannel(c, t));
      row[c].mul = p.multipliers[k];
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

CudaStageOrError MakeMultiplicativeBrightnessStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new MultiplicativeBrightnessStage(t, index));
}

}  // namespace augmentd
