// augment/kernels/cuda/region_mode.h — the CUDA half of a pipeline entry's region mode (augment/region_mode.h): the
// post-step the chain's RegionModeStage (augment/cuda/region_mode_stage.h) runs after the wrapped stage. Per-voxel
// math: augment/kernels/common/region_mode_math.h (shared with the CPU engine).
//
// Layout: image / orig (B, C, V) float32, seg (B, S, V) int16, C order. Enqueues on `stream`, never synchronises or
// allocates (`scratch`: RegionScratchBytes(B·C) bytes), returns the launch error.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace augmentd::cuda::region {

// One sample's draw. 16 bytes.
struct RegionRec {
  int32_t mode = 0;  // region_mode::Mode; 0 ("all"): the sample keeps the step's output
  int32_t pad = 0;
  uint64_t keep = ~uint64_t{0};
};
static_assert(sizeof(RegionRec) == 16, "RegionRec is packed into the ParamArena as is");

size_t RegionScratchBytes(int slices);

// For every sample b with rec[b].mode != 0 and every channel c whose data the step changed (image != orig anywhere):
// image ← RegionBlend(m, RegionRescale(image, min/max of image, min/max of orig), orig), m = RegionWeight over the
// seg channels. Min / max are exact (order-independent), so the result is deterministic.
cudaError_t LaunchRegionBlend(float* image, const float* orig, const int16_t* seg, int batch, int channels,
                              int seg_channels, int64_t voxels, const RegionRec* rec, void* scratch,
                              cudaStream_t stream);

}  // namespace augmentd::cuda::region
