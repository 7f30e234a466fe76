// augment/cuda/stages_daext_internal.h — what the CUDA stages of the DAExt AugLab kinds share (clamp,
// zscore_normalization, auglab_bias_field, edge_convolution, unsharp_mask: augment/transforms/<name>/<name>_cuda.cc):
// the per-slice record table, the workspace slots, and the tail every one of them runs after its step —
// retain_stats (statistics of the result, then the affine map of auglab_math.h) and AugLab's guard (a slice whose
// result holds NaN / Inf goes back to the copy taken before the step), in the CPU transforms' order.
// Internal to the CUDA engine; header-only.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "augment/cuda/stage.h"
#include "augment/cuda/stages_da5_internal.h"
#include "augment/kernels/cuda/daext_kernels.h"
#include "augment/status_macros.h"

namespace augmentd::daext_stage_internal {

// Workspace slots beyond the DA5 (stage + 0..3) and AugLab (stage + 4, 5) ones.
inline constexpr int kSlotFlags = ChainWorkspace::kSlotStage + 6;       // the guard's per-slice flags
inline constexpr int kSlotSorted = ChainWorkspace::kSlotStage + 7;      // clamp: the sorted slices
inline constexpr int kSlotSortTemp = ChainWorkspace::kSlotStage + 8;    // clamp: CUB's temporary storage
inline constexpr int kSlotThresholds = ChainWorkspace::kSlotStage + 9;  // clamp: (lo, hi) per slice

// The record of (b, c), or INVALID_ARGUMENT (the chain's wording) when c is not a channel of the scratch.
inline absl::StatusOr<cuda::daext::DaextSlice*> SliceOf(std::vector<cuda::daext::DaextSlice>& slices,
                                                        const ChainTensors& t, int32_t b, int64_t c, size_t index,
                                                        std::string_view name) {
  if (c < 0 || c >= t.channels)
    return da5_stage_internal::Invalid(index, name,
                                       absl::StrCat("apply_to_channel ", c, " >= the sample's ", t.channels,
                                                    " channels"));
  return &slices[static_cast<size_t>(b) * t.channels + static_cast<size_t>(c)];
}

// After the step wrote the slices' results into t.image: retain_stats of the slices with on && retain (`before`:
// their moments before the step; may be null when `retain` is false), then the guard against `orig` (the image
// before the step, same layout).
inline absl::Status EnqueueRetainAndGuard(ChainTensors& t, const cuda::daext::DaextSlice* p, bool retain,
                                          const cuda::da5::SliceMoments* before, const float* orig,
                                          ChainWorkspace& ws, cudaStream_t stream, std::string_view name) {
  const int slices = t.batch * t.channels;
  if (retain) {
    ASSIGN_OR_RETURN(const cuda::da5::SliceMoments* after,
                     da5_stage_internal::EnqueueMoments(t.image, t.voxels(), slices, da5_stage_internal::kSlotMomentsB,
                                                        ws, stream));
    const std::string what = std::string(name) + " retain_stats";
    RETURN_IF_ERROR(CudaStatus(cuda::daext::LaunchDaextRetain(t.image, t.voxels(), slices, p, before, after, stream),
                               what.c_str()));
  }
  ASSIGN_OR_RETURN(void* flags, ws.Scratch(kSlotFlags, static_cast<size_t>(slices) * sizeof(int)));
  const std::string what = std::string(name) + " guard";
  return CudaStatus(
      cuda::daext::LaunchFiniteGuard(t.image, orig, t.voxels(), slices, p, static_cast<int*>(flags), stream),
      what.c_str());
}

}  // namespace augmentd::daext_stage_internal
