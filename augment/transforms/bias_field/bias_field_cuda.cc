// bias_field's CUDA stage on the generic chain (augment/cuda/stage.h): one multiplicative polynomial field per
// sample (augment/kernels/cuda/mri_kernels.h LaunchBiasField, the CPU transform's drawn coefficients). Registered in
// augment/cuda/backends.cc.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "augment/cuda/stage.h"
#include "augment/kernels/cuda/mri_kernels.h"
#include "augment/status_macros.h"
#include "augment/transforms/bias_field/bias_field.h"
#include "augment/transforms/common/common.h"

namespace augmentd {
namespace {
namespace mk = cuda::mri;
using transforms_internal::ParamsAs;

absl::Status Invalid(size_t index, std::string_view transform, std::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("pipeline entry ", index, " (", std::string(transform), "): ", std::string(problem)));
}

// bias_field: one multiplicative polynomial field per sample.
class BiasFieldStage final : public CudaStage {
 public:
  explicit BiasFieldStage(size_t index) : index_(index) {}
  absl::Status Prepare(const std::vector<const TransformParams*>& params, const ChainTensors& t,
                       ParamArena& arena) override {
    samples_.assign(static_cast<size_t>(t.batch), mk::BiasSample{-1, 0});
    coefs_.clear();
    for (int32_t b = 0; b < t.batch && b < static_cast<int32_t>(params.size()); ++b) {
      if (params[b] == nullptr) continue;
      ASSIGN_OR_RETURN(const BiasFieldParams* p, ParamsAs<BiasFieldParams>(*params[b], "bias_field"));
      if (static_cast<int64_t>(p->coefficients.size()) != BiasFieldNumCoefficients(p->order))
        return Invalid(index_, "bias_field", "params.coefficients: count does not match order");
      samples_[b] = {p->order, static_cast<int32_t>(coefs_.size())};
      coefs_.insert(coefs_.end(), p->coefficients.begin(), p->coefficients.end());
    }
    any_ = !coefs_.empty();
    if (any_) {
      samples_offset_ = arena.AppendArray(samples_);
      coefs_offset_ = arena.AppendArray(coefs_);
    }
    return absl::OkStatus();
  }
  absl::Status Enqueue(ChainTensors& t, const ParamArena& arena, ChainWorkspace&, cudaStream_t stream) override {
    if (!any_) return absl::OkStatus();
    return CudaStatus(mk::LaunchBiasField(t.image, arena.device_as<mk::BiasSample>(samples_offset_),
                                     arena.device_as<double>(coefs_offset_), t.batch, t.channels, t.shape, stream),
                 "bias_field");
  }

 private:
  size_t index_;
  std::vector<mk::BiasSample> samples_;
  std::vector<double> coefs_;
  bool any_ = false;
  size_t samples_offset_ = 0, coefs_offset_ = 0;
};

}  // namespace

CudaStageOrError MakeBiasFieldStage(const Transform&, size_t index) {
  return std::unique_ptr<CudaStage>(new BiasFieldStage(index));
}

}  // namespace augmentd
