// augment/cuda/stages.h — internal to the CUDA chain: host-side packing helpers of the stages in cuda/stages.cc that
// tests check without a GPU (the kernels are in augment/kernels/cuda/chain_kernels.h).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "augment/kernels/cuda/chain_kernels.h"
#include "augment/transform.h"

namespace augmentd {

// One sample's signed axis permutation for a mirror / rot90 / transpose_axes entry (`params` drawn by `t`) on a
// scratch of spatial `shape`; `on` = 0 when it is the identity. INVALID_ARGUMENT (as the CPU transform) when the
// parameters would exchange axes of different sizes.
absl::StatusOr<cuda::chain::PermuteSample> PermuteOf(const Transform& t, const TransformParams& params,
                                                     const int32_t shape[3]);

}  // namespace augmentd
