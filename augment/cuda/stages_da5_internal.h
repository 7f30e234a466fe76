// augment/cuda/stages_da5_internal.h — what the DA5 chain stages (augment/transforms/<name>/<name>_cuda.cc,
// cuda/stages_da5_local.cc) and the AugLab ones share: scratch slots, the moments helper, error wording. Internal to the CUDA engine.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "augment/cuda/stage.h"
#include "augment/kernels/common/da5_math.h"
#include "augment/transform.h"

namespace augmentd::da5_stage_internal {

// ChainWorkspace slots of the DA5 stages (contents live only during one Enqueue; stages reuse them in turn).
inline constexpr int kSlotCopy = ChainWorkspace::kSlotStage;          // a copy of the image (stencils read it)
inline constexpr int kSlotPartials = ChainWorkspace::kSlotStage + 1;  // moments partials
inline constexpr int kSlotMomentsA = ChainWorkspace::kSlotStage + 2;  // moments results
inline constexpr int kSlotMomentsB = ChainWorkspace::kSlotStage + 3;

// INVALID_ARGUMENT "CUDA engine: transform <index> (<transform>): <problem>" (the chain's wording).
absl::Status Invalid(size_t index, std::string_view transform, std::string_view problem);

// Enqueues the moments of `slices` slices of `len` floats of `x` into slot `result_slot`; returns their device
// address (valid until that slot is requested again).
absl::StatusOr<const cuda::da5::SliceMoments*> EnqueueMoments(const float* x, int64_t len, int slices, int result_slot,
                                                              ChainWorkspace& ws, cudaStream_t stream);

// Enqueues a copy of the whole image into kSlotCopy and returns it.
absl::StatusOr<float*> EnqueueImageCopy(const ChainTensors& t, ChainWorkspace& ws, cudaStream_t stream);

// Channels of params that apply (the CPU transforms stop at the shorter of the image and the params).
inline int64_t ParamChannels(const ChainTensors& t, size_t n) {
  return std::min<int64_t>(t.channels, static_cast<int64_t>(n));
}

}  // namespace augmentd::da5_stage_internal
