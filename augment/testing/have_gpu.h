// augment/testing/have_gpu.h — whether a CUDA device is present, for GPU tests that skip without one (test-only,
// header-only; needs the CUDA runtime).
#pragma once

#include <cuda_runtime.h>

namespace augmentd::testing {

inline bool HaveGpu() {
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();  // clear the error a failed query leaves behind
  return ok;
}

}  // namespace augmentd::testing
