// augment/kernels/cuda/crop.h — the dataset-mode crop kernel: one planned box of a GPU-resident case into a
// sample of a device batch (augment/dataset/device_tier.h calls it; built into augment_dataset in CUDA builds).
//
//   CropArgs a{...};                               // source case, box lower corner, patch extents, outputs
//   cudaError_t e = LaunchCropSample(a, stream);   // asynchronous
//
// Semantics = acvl_utils.crop_and_pad_nd as nnU-Net's loader uses it: voxels of the box inside the case are
// copied (data as float32, seg converted to int16), voxels outside get 0 (data) / −1 (seg); if the box misses
// the case entirely along some axis (`misses`), the whole sample is 0 in both (the CPU crop's quirk).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace augmentd::cuda {

struct CropArgs {
  const float* src_data = nullptr;  // (C, S0, S1, S2)
  const void* src_seg = nullptr;    // (1, S0, S1, S2), int8 or int16
  bool seg_is_int8 = false;
  int64_t channels = 1;
  int64_t shape[3] = {0, 0, 0};     // S0, S1, S2
  int64_t lb[3] = {0, 0, 0};        // box lower corner (may be negative)
  int64_t patch[3] = {0, 0, 0};     // box extents
  bool misses = false;              // box outside the case on some axis: all zeros
  float* dst_data = nullptr;        // (C, P0, P1, P2)
  int16_t* dst_seg = nullptr;       // (1, P0, P1, P2)
};

cudaError_t LaunchCropSample(const CropArgs& args, cudaStream_t stream);

}  // namespace augmentd::cuda
