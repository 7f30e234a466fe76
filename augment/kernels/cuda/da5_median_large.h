// augment/kernels/cuda/da5_median_large.h — the DA5 median filter for any window size the CPU transform accepts
// (augment/transforms/median_filter/median_filter.h: k <= 64), the generic (slower) companion of da5_kernels.h's LaunchMedian,
// which stays the fast path for k <= kMaxMedianSize (shared-memory tiles).
//
// One thread per output voxel reads its window straight from global memory (scipy 'reflect' indices, origin 0, as
// LaunchMedian) and selects the exact rank-⌊k³/2⌋ key of the order-preserving integer keys of the floats with
// da5_math.h's SelectRankKeyHist (histogram levels over the
// keys, then the last bin's few keys ranked): bit-identical to scipy and the CPU transform. d0 = 1 slices select
// rank ⌊k²/2⌋ of the k×k window, which equals the k³ one there (da5_filters.cu explains why). Cost: ≤ 9 (typically
// 4) passes × k³ reads per voxel.
//
//   da5::LaunchMedianLarge(copy, image, device_ks, slices, shape, stream);  // dst slice s ← median_{k[s]}(src s)
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace augmentd::cuda::da5 {

// dst slice s = median_k[s](src slice s) for k[s] >= 2 (other slices of dst are not written); any k >= 2.
cudaError_t LaunchMedianLarge(const float* src, float* dst, const int32_t* k, int slices, const int32_t shape[3],
                              cudaStream_t stream);

}  // namespace augmentd::cuda::da5
