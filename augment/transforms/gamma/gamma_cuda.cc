// gamma's CUDA stage on the generic chain (augment/cuda/stage.h): one GammaSlice per selected channel (the CPU
// transform's drawn gamma, invert and retain coins), one launch per batch (chain_kernels.h LaunchGamma: per-slice
// min / max and, with retain_stats, mean / std in the stats scratch, then the pointwise map of gamma.h).
// Registered in augment/cuda/backends.cc.
#include "augment/cuda/slice_stage.h"
#include "augment/transforms/gamma/gamma.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::ImageDims;
using stage_internal::SliceStage;

// ---- gamma --------------------------------------------------------------------------------------------------------
class GammaStage final : public SliceStage<ch::GammaSlice> {
 public:
  using SliceStage::SliceStage;
  absl::Status Fill(const TransformParams& tp, const ChainTensors& t, ch::GammaSlice* row) override {
    const auto& p = static_cast<const GammaParams&>(tp);
    const size_t n = p.apply_to_channel.size();
    if (p.gamma.size() != n || p.invert_image.size() != n || p.retain_stats.size() != n)
      return Invalid("gamma, invert_image and retain_stats need one entry per selected channel");
    for (size_t k = 0; k < n; ++k) {
      const int64_t c = p.apply_to_channel[k];
      RETURN_IF_ERROR(CheckChannel(c, t));
      row[c] = ch::GammaSlice{p.gamma[k], 1, p.invert_image[k] ? 1 : 0, p.retain_stats[k] ? 1 : 0};
    }
    return absl::OkStatus();
  }
  absl::Status Launch(ChainTensors& t, const ch::GammaSlice* d, const ParamArena&, ChainWorkspace& ws,
                      cudaStream_t s) override {
    ASSIGN_OR_RETURN(void* scratch, ws.Scratch(ChainWorkspace::kSlotStage, ch::StatsScratchBytes(ImageDims(t))));
    return CudaStatus(ch::LaunchGamma(ImageDims(t), t.image, d, scratch, s), "gamma");
  }
};

}  // namespace

CudaStageOrError MakeGammaStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new GammaStage(t, index));
}

}  // namespace augmentd
