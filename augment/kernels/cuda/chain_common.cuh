// augment/kernels/cuda/chain_common.cuh — launch geometry shared by the generic chain's kernels (chain_*.cu):
// grid (blocks per slice, slices) of kThreads, each block grid-strides over its slice's voxels.
#pragma once

#include <algorithm>
#include <cstdint>

#include "augment/kernels/cuda/chain_kernels.h"
#include "augment/kernels/cuda/common.cuh"

namespace augmentd::cuda::chain {

// Blocks per slice: enough for ~8 resident blocks per SM over all slices, at most one per 4·kThreads voxels.
inline int BlocksPerSlice(int64_t voxels, int slices) {
  const int64_t want = (voxels + 4 * internal::kThreads - 1) / (4 * internal::kThreads);
  const int64_t target = (8 * internal::DeviceSmCount() + slices - 1) / std::max(1, slices);
  return static_cast<int>(std::max<int64_t>(1, std::min(want, target)));
}

inline dim3 SliceGrid(int64_t voxels, int slices) {
  return dim3(static_cast<unsigned>(BlocksPerSlice(voxels, slices)), static_cast<unsigned>(slices));
}

// for (i = first voxel of this thread; i < n; i += stride) over one slice.
#define AUGMENTD_CHAIN_FOR_VOXELS(i, n)                                                     \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

}  // namespace augmentd::cuda::chain
