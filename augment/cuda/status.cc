#include "augment/cuda/status.h"

#include "absl/strings/str_cat.h"

namespace augmentd {

absl::Status CudaStatus(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return absl::OkStatus();
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  if (e == cudaErrorMemoryAllocation) {
    return absl::ResourceExhaustedError(absl::StrCat("CUDA out of memory (", what, ")"));
  }
  return absl::InternalError(
      absl::StrCat("CUDA error in ", what, ": ", cudaGetErrorName(e), " (", cudaGetErrorString(e), ")"));
}

}  // namespace augmentd
