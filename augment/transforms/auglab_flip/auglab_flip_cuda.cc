// auglab_flip's CUDA stage on the generic chain (augment/cuda/stage.h): one signed permutation record per sample (the
// identity permutation with the axes AuglabFlipTransform::FlippedAxes gives) on the chain's shared permutation stage
// (slice_stage.h PermuteStage, as mirror / rot90 / transpose_axes). Samples without parameters get "off" records.
// Registered by its line in augment/transforms/kinds.inc.
#include <array>

#include "augment/cuda/slice_stage.h"
#include "augment/kernels/cuda/chain_kernels.h"
#include "augment/transforms/auglab_flip/auglab_flip.h"

namespace augmentd {
namespace {
namespace ch = cuda::chain;

class AuglabFlipStage final : public stage_internal::PermuteStage {
 public:
  AuglabFlipStage(const AuglabFlipTransform& t, size_t index) : PermuteStage(t, index), t_(t) {}

 private:
  absl::StatusOr<ch::PermuteSample> SampleOf(const TransformParams& params, const ChainTensors&) const override {
    const auto* p = dynamic_cast<const AuglabFlipParams*>(&params);
    if (p == nullptr) return absl::InvalidArgumentError("wrong parameter type");
    const std::array<bool, 3> axes = t_.FlippedAxes(*p);
    ch::PermuteSample s;
    for (int d = 0; d < 3; ++d) {
      s.flip[d] = axes[static_cast<size_t>(d)] ? 1 : 0;
      s.on |= s.flip[d];
    }
    return s;
  }
  const AuglabFlipTransform& t_;
};

}  // namespace

CudaStageOrError MakeAuglabFlipStage(const Transform& t, size_t index) {
  const auto* flip = dynamic_cast<const AuglabFlipTransform*>(&t);
  if (flip == nullptr) return absl::InvalidArgumentError("auglab_flip: not an auglab_flip transform");
  return std::unique_ptr<CudaStage>(new AuglabFlipStage(*flip, index));
}

}  // namespace augmentd
