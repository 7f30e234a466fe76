// gaussian_blur's CUDA stage on the generic chain (augment/cuda/stage.h): the CPU's own float taps (GaussianKernel1D)
// per slice and axis, one separable launch per batch (chain_kernels.h LaunchBlur). Registered in
// augment/cuda/backends.cc.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/slice_stage.h"
#include "augment/kernels/cpu_blur.h"
#include "augment/transforms/gaussian_blur/gaussian_blur.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::FlagStage;
using stage_internal::ImageDims;
using stage_internal::NamedStage;
using stage_internal::NotCovered;
using stage_internal::SegDims;
using stage_internal::SliceStage;

// ---- gaussian_blur: the CPU's own float taps (GaussianKernel1D) per slice and axis --------------------------------
class BlurStage final : public SliceStage<ch::BlurSlice> {
 public:
  using SliceStage::SliceStage;
  absl::Status BeginBatch(const ChainTensors&) override {
    weights_.clear();
    return absl::OkStatus();
  }
  absl::Status Fill(const TransformParams& tp, const ChainTensors& t, ch::BlurSlice* row) override {
    const auto& p = static_cast<const GaussianBlurParams&>(tp);
    if (p.sigmas.size() != p.apply_to_channel.size()) return Invalid("one sigma list per selected channel");
    for (size_t k = 0; k < p.apply_to_channel.size(); ++k) {
      const int64_t c = p.apply_to_channel[k];
      RETURN_IF_ERROR(CheckChannel(c, t));
      if (p.sigmas[k].size() != 3) return Invalid("needs 3 sigmas per channel");
      for (int d = 0; d < 3; ++d) {
        const std::vector<float> taps = kernels::GaussianKernel1D(p.sigmas[k][d]);
        const int ks = static_cast<int>(taps.size());
        if (t.shape[d] <= ks / 2) {
          return Invalid(absl::StrCat("kernel of ", ks, " taps needs axis ", d, " longer than ", ks / 2,
                                      " (reflect padding)"));
        }
        row[c].offset[d] = static_cast<int32_t>(weights_.size());
        row[c].taps[d] = ks;
        weights_.insert(weights_.end(), taps.begin(), taps.end());
      }
      row[c].on = 1;
    }
    return absl::OkStatus();
  }
  void AppendExtra(ParamArena& arena) override { weights_offset_ = arena.AppendArray(weights_); }
  absl::Status Launch(ChainTensors& t, const ch::BlurSlice* d, const ParamArena& arena, ChainWorkspace& ws,
                      cudaStream_t s) override {
    const ch::Dims dims = ImageDims(t);
    ASSIGN_OR_RETURN(void* tmp,
                     ws.Scratch(ChainWorkspace::kSlotStage, 2 * sizeof(float) * dims.slices() * dims.voxels()));
    return CudaStatus(
        ch::LaunchBlur(dims, t.image, d, arena.device_as<float>(weights_offset_), static_cast<float*>(tmp), s),
        "gaussian_blur");
  }

 private:
  std::vector<float> weights_;
  size_t weights_offset_ = 0;
};

}  // namespace

CudaStageOrError MakeGaussianBlurStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new BlurStage(t, index));
}

}  // namespace augmentd
