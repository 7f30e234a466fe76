// auglab_affine's CUDA stage on the generic chain (augment/cuda/stage.h): each applied sample's source map is the
// CPU's (AuglabAffineSourceMap, one record per sample uploaded with the chain's parameters); the image (and labels)
// are copied to stage scratch and resampled back in one launch (auglab_affine_kernels.h). Samples without parameters
// get "off" records and stay untouched. Registered by its line in augment/transforms/kinds.inc.
#include <algorithm>
#include <array>
#include <vector>

#include "augment/cuda/slice_stage.h"
#include "augment/transforms/auglab_affine/auglab_affine.h"
#include "augment/transforms/auglab_affine/auglab_affine_kernels.h"

namespace augmentd {
namespace {
namespace ak = cuda::auglab_affine;
using stage_internal::NamedStage;

class AuglabAffineStage final : public NamedStage {
 public:
  AuglabAffineStage(const AuglabAffineTransform& t, size_t index) : NamedStage(t, index), t_(t) {}

  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    host_.assign(static_cast<size_t>(t.batch), ak::AffineSample{});
    const std::array<int64_t, 3> shape{t.shape[0], t.shape[1], t.shape[2]};
    for (size_t b = 0; b < params.size() && b < host_.size(); ++b) {
      if (params[b] == nullptr) continue;
      const auto* p = dynamic_cast<const AuglabAffineParams*>(params[b]);
      if (p == nullptr) return Invalid("wrong parameter type");
      absl::StatusOr<std::array<float, 12>> m = AuglabAffineSourceMap(*p, shape);
      if (!m.ok()) return Invalid(std::string(m.status().message()));
      std::copy(m->begin(), m->end(), host_[b].m);
      host_[b].on = 1;
    }
    any_ = std::any_of(host_.begin(), host_.end(), [](const ak::AffineSample& s) { return s.on != 0; });
    offset_ = arena.AppendArray(host_);
    return absl::OkStatus();
  }

  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t s) override {
    if (!any_) return absl::OkStatus();
    const size_t v = static_cast<size_t>(t.voxels());
    const size_t ibytes = static_cast<size_t>(t.batch) * static_cast<size_t>(t.channels) * v * sizeof(float);
    ASSIGN_OR_RETURN(void* itmp, ws.Scratch(ChainWorkspace::kSlotStage, ibytes));
    RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(itmp, t.image, ibytes, cudaMemcpyDeviceToDevice, s),
                               "auglab_affine copy"));
    void* stmp = nullptr;
    const bool labels = t.seg != nullptr && t.seg_channels > 0;
    if (labels) {
      const size_t sbytes = static_cast<size_t>(t.batch) * static_cast<size_t>(t.seg_channels) * v * sizeof(int16_t);
      ASSIGN_OR_RETURN(stmp, ws.Scratch(ChainWorkspace::kSlotStage + 1, sbytes));
      RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(stmp, t.seg, sbytes, cudaMemcpyDeviceToDevice, s),
                                 "auglab_affine labels copy"));
    }
    return CudaStatus(ak::LaunchAuglabAffine(static_cast<const float*>(itmp), t.image,
                                             static_cast<const int16_t*>(stmp), labels ? t.seg : nullptr, t.batch,
                                             t.channels, t.seg_channels, t.shape, t_.linear(),
                                             arena.device_as<ak::AffineSample>(offset_), s),
                      "auglab_affine");
  }

 private:
  const AuglabAffineTransform& t_;
  std::vector<ak::AffineSample> host_;
  bool any_ = false;
  size_t offset_ = 0;
};

}  // namespace

CudaStageOrError MakeAuglabAffineStage(const Transform& t, size_t index) {
  const auto* affine = dynamic_cast<const AuglabAffineTransform*>(&t);
  if (affine == nullptr) return absl::InvalidArgumentError("auglab_affine: not an auglab_affine transform");
  return std::unique_ptr<CudaStage>(new AuglabAffineStage(*affine, index));
}

}  // namespace augmentd
