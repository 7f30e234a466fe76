// augment/cuda/status.h — the one mapping of a CUDA runtime error onto the engine's status type, used by every raw
// CUDA call of the CUDA engine (augment/cuda/) and the service's CUDA IPC slots (server/cuda_ipc_slots.cc).
//
//   RETURN_IF_ERROR(CudaStatus(cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToDevice, stream), "copy"));
//   AUGMENTD_CUDA_OK(cudaStreamSynchronize(stream));   // `what` is the expression's text
//
// Thread-safety: reentrant (clears the calling thread's non-sticky CUDA error).
#pragma once

#include <cuda_runtime.h>

#include "absl/status/status.h"
#include "augment/status_macros.h"

namespace augmentd {

// OK for cudaSuccess; RESOURCE_EXHAUSTED "CUDA out of memory (<what>)" for cudaErrorMemoryAllocation; INTERNAL naming
// `what` and the CUDA error otherwise. Clears a non-sticky error so the next call starts clean.
absl::Status CudaStatus(cudaError_t e, const char* what);

}  // namespace augmentd

// RETURN_IF_ERROR(CudaStatus(expr, "<expr>")).
#define AUGMENTD_CUDA_OK(expr) RETURN_IF_ERROR(::augmentd::CudaStatus((expr), #expr))
