// auglab_flip's CUDA stage on the generic chain (augment/cuda/stage.h): one signed permutation record per sample (the
// identity permutation with the axes AuglabFlipTransform::FlippedAxes gives), image and labels in one launch of the
// chain's permute kernel (chain_kernels.h LaunchPermute, shared with mirror / rot90 / transpose_axes). Samples without
// parameters get "off" records. Registered by its line in augment/transforms/kinds.inc.
#include <algorithm>
#include <array>
#include <vector>

#include "augment/cuda/slice_stage.h"
#include "augment/kernels/cuda/chain_kernels.h"
#include "augment/transforms/auglab_flip/auglab_flip.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;
using stage_internal::ImageDims;
using stage_internal::NamedStage;
using stage_internal::SegDims;

class AuglabFlipStage final : public NamedStage {
 public:
  AuglabFlipStage(const AuglabFlipTransform& t, size_t index) : NamedStage(t, index), t_(t) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    host_.assign(static_cast<size_t>(t.batch), ch::PermuteSample{});
    for (size_t b = 0; b < params.size() && b < host_.size(); ++b) {
      if (params[b] == nullptr) continue;
      const auto* p = dynamic_cast<const AuglabFlipParams*>(params[b]);
      if (p == nullptr) return Invalid("wrong parameter type");
      const std::array<bool, 3> axes = t_.FlippedAxes(*p);
      for (int d = 0; d < 3; ++d) {
        host_[b].flip[d] = axes[static_cast<size_t>(d)] ? 1 : 0;
        host_[b].on |= host_[b].flip[d];
      }
    }
    any_ = std::any_of(host_.begin(), host_.end(), [](const ch::PermuteSample& s) { return s.on != 0; });
    offset_ = arena.AppendArray(host_);
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    const ch::Dims img = ImageDims(t), seg = SegDims(t);
    ASSIGN_OR_RETURN(void* itmp, ws.Scratch(ChainWorkspace::kSlotStage, sizeof(float) * img.slices() * img.voxels()));
    void* stmp = nullptr;
    if (t.seg != nullptr && seg.slices() > 0) {
      ASSIGN_OR_RETURN(stmp, ws.Scratch(ChainWorkspace::kSlotStage + 1, sizeof(int16_t) * seg.slices() * seg.voxels()));
    }
    return CudaStatus(ch::LaunchPermute(img, t.image, static_cast<float*>(itmp), seg, t.seg,
                                        static_cast<int16_t*>(stmp), arena.device_as<ch::PermuteSample>(offset_),
                                        stream),
                      "auglab_flip");
  }

 private:
  const AuglabFlipTransform& t_;
  std::vector<ch::PermuteSample> host_;
  bool any_ = false;
  size_t offset_ = 0;
};

}  // namespace

CudaStageOrError MakeAuglabFlipStage(const Transform& t, size_t index) {
  const auto* flip = dynamic_cast<const AuglabFlipTransform*>(&t);
  if (flip == nullptr) return absl::InvalidArgumentError("auglab_flip: not an auglab_flip transform");
  return std::unique_ptr<CudaStage>(new AuglabFlipStage(*flip, index));
}

}  // namespace augmentd
