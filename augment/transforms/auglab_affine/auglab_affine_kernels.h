// augment/transforms/auglab_affine/auglab_affine_kernels.h — the CUDA kernel of auglab_affine's chain stage
// (auglab_affine_cuda.cc; kernel in auglab_affine.cu): every output voxel of every applied sample samples the input
// copy at its source point (auglab_affine_math.h, the CPU's arithmetic), image trilinear or nearest, labels nearest,
// zero outside. One launch per batch; samples whose record is off are left alone. Internal to the CUDA engine.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace augmentd::cuda::auglab_affine {

// One sample's source map (AuglabAffineSourceMap), 3×4 row-major.
struct AffineSample {
  float m[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  int32_t on = 0;
  int32_t pad[3] = {0, 0, 0};
};

// `src` / `src_seg`: copies of `image` (B, C, D, H, W) / `seg` (B, R, D, H, W) (seg may be null, then R is ignored).
// `samples`: B records on the device. Returns the launch error.
cudaError_t LaunchAuglabAffine(const float* src, float* image, const int16_t* src_seg, int16_t* seg, int32_t batch,
                               int32_t channels, int32_t seg_channels, const int32_t shape[3], bool linear,
                               const AffineSample* samples, cudaStream_t stream);

}  // namespace augmentd::cuda::auglab_affine
