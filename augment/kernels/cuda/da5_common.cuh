// augment/kernels/cuda/da5_common.cuh — what the DA5 kernels (da5_*.cu) share: launch geometry of the per-slice
// pointwise passes and deterministic block reductions (fixed shuffle order, so results do not depend on timing).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "augment/kernels/common/da5_math.h"

namespace augmentd::cuda::da5::internal {

inline constexpr int kThreads = 256;  // threads per block of the pointwise / reduction kernels

// Blocks along x of a per-slice grid-stride pass over `len` voxels (~4 voxels per thread, at most 1024 blocks).
inline unsigned int SliceBlocks(int64_t len) {
  return static_cast<unsigned int>(std::clamp<int64_t>((len + 4 * kThreads - 1) / (4 * kThreads), 1, 1024));
}

// (i, j, l) of voxel v of a (d0, d1, d2) slice. 32-bit divisions while v fits (every chain slice here): a 64-bit
// division is a ~70-instruction software routine, two of them per voxel dominated the pointwise passes using this.
__device__ __forceinline__ void Unravel(int64_t v, int d1, int d2, int& i, int& j, int& l) {
  if (v <= INT32_MAX) {
    const int v32 = static_cast<int>(v), row = v32 / d2;
    l = v32 - row * d2;
    i = row / d1;
    j = row - i * d1;
    return;
  }
  const int64_t row = v / d2;
  l = static_cast<int>(v - row * d2);
  i = static_cast<int>(row / d1);
  j = static_cast<int>(row - static_cast<int64_t>(i) * d1);
}

__device__ __forceinline__ void MergeMoments(MomentsPartial& a, const MomentsPartial& b) {
  a.s += b.s;
  a.q += b.q;
  a.mn = fminf(a.mn, b.mn);
  a.mx = fmaxf(a.mx, b.mx);
}

// Block-wide sum of `v` (blockDim.x a multiple of 32, <= 1024), valid in every thread. Fixed order.
__device__ __forceinline__ double BlockSum(double v) {
  __shared__ double warp_sum[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();  // warp_sum may still be read by a previous call
  if (lane == 0) warp_sum[warp] = v;
  __syncthreads();
  double total = 0;
  for (int w = 0; w < warps; ++w) total += warp_sum[w];
  return total;
}

// Block-wide moments partial, valid in thread 0. Fixed order.
__device__ __forceinline__ MomentsPartial BlockMoments(MomentsPartial p) {
  __shared__ MomentsPartial warp_part[32];
  for (int o = 16; o > 0; o >>= 1) {
    MomentsPartial q;
    q.s = __shfl_down_sync(0xffffffffu, p.s, o);
    q.q = __shfl_down_sync(0xffffffffu, p.q, o);
    q.mn = __shfl_down_sync(0xffffffffu, p.mn, o);
    q.mx = __shfl_down_sync(0xffffffffu, p.mx, o);
    MergeMoments(p, q);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) warp_part[warp] = p;
  __syncthreads();
  if (threadIdx.x == 0)
    for (int w = 1; w < warps; ++w) MergeMoments(p, warp_part[w]);
  return p;
}

}  // namespace augmentd::cuda::da5::internal
