// contrast's CUDA stage on the generic chain (augment/cuda/stage.h): the drawn multiplier per selected channel (and
// preserve_range), one launch per batch (chain_kernels.h LaunchContrast: per-slice mean, min / max in the stats
// scratch, then the pointwise map of contrast.h). Registered in augment/cuda/backends.cc.
#include "augment/cuda/slice_stage.h"
#include "augment/transforms/contrast/contrast.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::ImageDims;
using stage_internal::SliceStage;

// ---- contrast ---------------------------------------------------------------------------------------------------
class ContrastStage final : public SliceStage<ch::ContrastSlice> {
 public:
  ContrastStage(const ContrastTransform& t, size_t index)
      : SliceStage(t, index), preserve_(t.config().preserve_range) {}
  absl::Status Fill(const TransformParams& tp, const ChainTensors& t, ch::ContrastSlice* row) override {
    const auto& p = static_cast<const ContrastParams&>(tp);
    if (p.multipliers.size() != p.apply_to_channel.size()) return Invalid("one multiplier per selected channel");
    for (size_t k = 0; k < p.apply_to_channel.size(); ++k) {
      const int64_t c = p.apply_to_channel[k];
      RETURN_IF_ERROR(CheckChannel(c, t));
      row[c] = ch::ContrastSlice{p.multipliers[k], 1, preserve_ ? 1 : 0, 0};
    }
    return absl::OkStatus();
  }
  absl::Status Launch(ChainTensors& t, const ch::ContrastSlice* d, const ParamArena&, ChainWorkspace& ws,
                      cudaStream_t s) override {
    ASSIGN_OR_RETURN(void* scratch, ws.Scratch(ChainWorkspace::kSlotStage, ch::StatsScratchBytes(ImageDims(t))));
    return CudaStatus(ch::LaunchContrast(ImageDims(t), t.image, d, scratch, s), "contrast");
  }

 private:
  bool preserve_;
};

}  // namespace

CudaStageOrError MakeContrastStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new ContrastStage(static_cast<const ContrastTransform&>(t), index));
}

}  // namespace augmentd
