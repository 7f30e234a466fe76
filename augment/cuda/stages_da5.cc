// The helpers the DA5 / AugLab CUDA chain stages share (stages_da5_internal.h). The stages themselves live in their
// transform folders (augment/transforms/<name>/<name>_cuda.cc; brightness_gradient_additive and local_gamma, which
// share LocalPack, in stages_da5_local.cc).
#include <string>

#include "absl/strings/str_cat.h"
#include "augment/cuda/stage.h"
#include "augment/cuda/stages_da5_internal.h"
#include "augment/kernels/cuda/da5_kernels.h"
#include "augment/status_macros.h"

namespace augmentd {
namespace da5_stage_internal {

absl::Status Invalid(size_t index, std::string_view transform, std::string_view problem) {
  return absl::InvalidArgumentError(
      absl::StrCat("CUDA engine: transform ", index, " (", std::string(transform), "): ", std::string(problem)));
}

absl::StatusOr<const cuda::da5::SliceMoments*> EnqueueMoments(const float* x, int64_t len, int slices, int result_slot,
                                                              ChainWorkspace& ws, cudaStream_t stream) {
  namespace da5 = cuda::da5;
  const size_t n = static_cast<size_t>(slices);
  ASSIGN_OR_RETURN(void* partials,
                   ws.Scratch(kSlotPartials, n * da5::MomentsBlocks(len) * sizeof(da5::MomentsPartial)));
  ASSIGN_OR_RETURN(void* out, ws.Scratch(result_slot, n * sizeof(da5::SliceMoments)));
  auto* m = static_cast<da5::SliceMoments*>(out);
  RETURN_IF_ERROR(CudaStatus(
      da5::LaunchSliceMoments(x, len, slices, static_cast<da5::MomentsPartial*>(partials), m, stream), "moments"));
  return m;
}

absl::StatusOr<float*> EnqueueImageCopy(const ChainTensors& t, ChainWorkspace& ws, cudaStream_t stream) {
  const size_t bytes = static_cast<size_t>(t.batch) * t.channels * t.voxels() * sizeof(float);
  ASSIGN_OR_RETURN(void* copy, ws.Scratch(kSlotCopy, bytes));
  RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(copy, t.image, bytes, cudaMemcpyDeviceToDevice, stream), "image copy"));
  return static_cast<float*>(copy);
}

}  // namespace da5_stage_internal

}  // namespace augmentd
