// auglab_bias_field's CUDA stage on the generic chain (augment/cuda/stage.h): per sample its drawn coefficients
// (one float array in the arena), one DaextSlice per configured channel the sample has (the CPU skips the others).
// 2D samples arrive as (1, X, Y) with the 2D draw's coefficients (fewer monomials than a 3D draw for order >= 1):
// the slice's mode says which polynomial (daext_math.h BiasExponent) the kernel evaluates, so no lift is needed.
// Enqueue: a copy of the image (the guard's), [moments before], one launch (the field per voxel, x ← x · field), then
// retain_stats and the guard (stages_daext_internal.h). Registered in augment/cuda/backends.cc.
#include <memory>
#include <vector>

#include "augment/cuda/stages_daext_internal.h"
#include "augment/transforms/auglab_bias_field/auglab_bias_field.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace {
namespace dx = cuda::daext;
using transforms_internal::ParamsAs;

class AuglabBiasFieldStage final : public CudaStage {
 public:
  AuglabBiasFieldStage(const AuglabBiasFieldTransform& t, size_t index) : config_(t.config()), index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    slices_.assign(static_cast<size_t>(t.batch) * t.channels, dx::DaextSlice{});
    coeffs_.clear();
    any_ = false;
    const size_t n3 = static_cast<size_t>(AuglabBiasFieldTransform::NumCoefficients(config_.order, 3));
    const size_t n2 = static_cast<size_t>(AuglabBiasFieldTransform::NumCoefficients(config_.order, 2));
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const auto* p, ParamsAs<AuglabBiasFieldParams>(*params[b], "auglab_bias_field"));
      int32_t mode = 0;
      if (p->coefficients.size() == n3) {
        mode = 3;
      } else if (p->coefficients.size() == n2 && t.shape[0] == 1) {
        mode = 2;  // a 2D sample on the chain's (1, X, Y) form
      } else {
        return da5_stage_internal::Invalid(index_, "auglab_bias_field",
                                           "params.coefficients: one value per monomial of degree <= order");
      }
      const int64_t off = static_cast<int64_t>(coeffs_.size());
      coeffs_.insert(coeffs_.end(), p->coefficients.begin(), p->coefficients.end());
      for (int64_t c : config_.apply_to_channel) {
        if (c < 0 || c >= t.channels) continue;  // AugLab skips invalid channels
        dx::DaextSlice& s = slices_[static_cast<size_t>(b) * t.channels + static_cast<size_t>(c)];
        s.on = 1;
        s.retain = config_.retain_stats ? 1 : 0;
        s.mode = mode;
        s.off = off;
        any_ = true;
      }
    }
    if (any_) {
      offset_ = arena.AppendArray(slices_);
      coeffs_offset_ = arena.AppendArray(coeffs_);
    }
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace& ws, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    const int slices = t.batch * t.channels;
    const auto* p = arena.device_as<dx::DaextSlice>(offset_);
    ASSIGN_OR_RETURN(float* orig, da5_stage_internal::EnqueueImageCopy(t, ws, stream));
    const cuda::da5::SliceMoments* before = nullptr;
    if (config_.retain_stats) {
      ASSIGN_OR_RETURN(before, da5_stage_internal::EnqueueMoments(orig, t.voxels(), slices,
                                                                  da5_stage_internal::kSlotMomentsA, ws, stream));
    }
    RETURN_IF_ERROR(CudaStatus(dx::LaunchAuglabBiasField(t.image, t.shape, slices, p,
                                                         arena.device_as<float>(coeffs_offset_),
                                                         static_cast<int>(config_.order), config_.invert, stream),
                               "auglab_bias_field"));
    return daext_stage_internal::EnqueueRetainAndGuard(t, p, config_.retain_stats, before, orig, ws, stream,
                                                       "auglab_bias_field");
  }

 private:
  AuglabBiasFieldConfig config_;
  size_t index_;
  std::vector<dx::DaextSlice> slices_;
  std::vector<float> coeffs_;
  bool any_ = false;
  size_t offset_ = 0, coeffs_offset_ = 0;
};

}  // namespace

CudaStageOrError MakeAuglabBiasFieldStage(const Transform& t, size_t index) {
  return std::unique_ptr<CudaStage>(
      new AuglabBiasFieldStage(static_cast<const AuglabBiasFieldTransform&>(t), index));
}

}  // namespace augmentd
