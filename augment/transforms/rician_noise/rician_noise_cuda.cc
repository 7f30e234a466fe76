// rician_noise's CUDA stage on the generic chain (augment/cuda/stage.h; DA5's shared helpers in
// augment/cuda/stages_da5_internal.h, kernels in augment/kernels/cuda/da5_kernels.h). Registered in
// augment/cuda/backends.cc.
#include <vector>

#include "augment/cuda/stage.h"
#include "augment/cuda/stages_da5_internal.h"
#include "augment/kernels/cuda/da5_kernels.h"
#include "augment/status_macros.h"
#include "augment/transforms/common/common.h"
#include "augment/transforms/rician_noise/rician_noise.h"

namespace augmentd {
namespace {
namespace da5 = cuda::da5;
using transforms_internal::ParamsAs;

// rician_noise: per sample (all channels together): moments → noisy magnitude → moments → rescale.
class RicianStage final : public CudaStage {
 public:
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    samples_.assign(static_cast<size_t>(t.batch), da5::RicianSample{});
    any_ = false;
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const RicianNoiseParams* p, ParamsAs<RicianNoiseParams>(*params[b], "rician_noise"));
      da5::RicianSample& s = samples_[b];
      s.re = MakeStreamKey(p->seed, p->sample_index, p->transform_index, 1);
      s.im = MakeStreamKey(p->seed, p->sample_index, p->transform_index, 2);
      s.sigma = static_cast<float>(p->variance);
      s.active = 1;
      any_ = true;
    }
    if (any_) offset_ = arena.AppendArray(samples_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    using da5_stage_internal::EnqueueMoments;
    const int64_t len = t.channels * t.voxels();
    const auto* p = arena.device_as<da5::RicianSample>(offset_);
    ASSIGN_OR_RETURN(const da5::SliceMoments* in,
                     EnqueueMoments(t.image, len, t.batch, da5_stage_internal::kSlotMomentsA, ws, stream));
    RETURN_IF_ERROR(CudaStatus(da5::LaunchRicianField(t.image, p, in, t.batch, len, stream), "rician_noise"));
    ASSIGN_OR_RETURN(const da5::SliceMoments* r,
                     EnqueueMoments(t.image, len, t.batch, da5_stage_internal::kSlotMomentsB, ws, stream));
    return CudaStatus(da5::LaunchRicianRescale(t.image, p, in, r, t.batch, len, stream), "rician_noise");
  }

 private:
  std::vector<da5::RicianSample> samples_;
  bool any_ = false;
  size_t offset_ = 0;
};

}  // namespace

CudaStageOrError MakeRicianNoiseStage(const Transform&, size_t) {
  return std::unique_ptr<CudaStage>(new RicianStage());
}

}  // namespace augmentd
