// gaussian_noise's CUDA stage on the generic chain (augment/cuda/stage.h): its σ per selected channel and the CPU's
// noise key per channel (the kernel regenerates the CPU's N(0, 1) field from it: NormalAt), one launch per batch
// (chain_kernels.h LaunchNoise). Registered in augment/cuda/backends.cc.
#include "augment/cuda/slice_stage.h"
#include "augment/rng.h"
#include "augment/transforms/gaussian_noise/gaussian_noise.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::ImageDims;
using stage_internal::SliceStage;

// ---- gaussian_noise: σ per selected channel, the CPU's noise key per channel ----------------------------------
class NoiseStage final : public SliceStage<ch::NoiseSlice> {
 public:
  using SliceStage::SliceStage;
  absl::Status Fill(const TransformParams& tp, const ChainTensors& t, ch::NoiseSlice* row) override {
    const auto& p = static_cast<const GaussianNoiseParams&>(tp);
    if (p.sigmas.size() != p.apply_idx.size()) return Invalid("one sigma per selected channel");
    for (size_t k = 0; k < p.apply_idx.size(); ++k) {
      const int64_t c = p.apply_idx[k];
      RETURN_IF_ERROR(CheckChannel(c, t));
      row[c].key = MakeStreamKey(p.seed, p.sample_index, p.transform_index, 1u + static_cast<uint32_t>(c));
      row[c].sigma = p.sigmas[k];
      row[c].on = 1;
    }
    return absl::OkStatus();
  }
  absl::Status Launch(ChainTensors& t, const ch::NoiseSlice* d, const ParamArena&, ChainWorkspace&,
                      cudaStream_t s) override {
    return CudaStatus(ch::LaunchNoise(ImageDims(t), t.image, d, s), "gaussian_noise");
  }
};

}  // namespace

CudaStageOrError MakeGaussianNoiseStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(new NoiseStage(t, index));
}

}  // namespace augmentd
