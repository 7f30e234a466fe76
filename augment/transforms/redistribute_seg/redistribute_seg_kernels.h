// augment/transforms/redistribute_seg/redistribute_seg_kernels.h — the CUDA kernels of redistribute_seg's chain stage
// (redistribute_seg_cuda.cc; kernels in redistribute_seg.cu): AugLab's segmentation-guided intensity redistribution
// (redistribute_seg.h) on the chain's scratch, image (B, C, P) float32 and seg (B, R, P) int16, in place. A job is one
// (sample, selected channel); per job, in the CPU transform's order: nan_to_num, min / max (and the population
// moments for retain_stats), the min-max normalisation; per region r its mask (seg_r != 0) and ring (7³ box
// dilation ∧ ¬mask, the CPU's Dilate3) statistics; the Gaussian sum; the rescaled add; retain_stats; the finiteness
// guard. Statistics are block reductions in double in a fixed order (deterministic); the float math is
// kernels/common/redistribute_seg_math.h, shared with the CPU. Internal to the CUDA engine.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace augmentd::cuda::redistribute_seg {

struct Job {
  int32_t sample = 0;
  int32_t channel = 0;
  int32_t in_seg = 0;  // the Gaussians are added only inside each region's mask
  int32_t pad = 0;
};

struct Dims {
  int32_t batch = 0;
  int32_t channels = 0;
  int32_t regions = 0;  // seg channels R
  int32_t shape[3] = {0, 0, 0};
  int64_t voxels() const { return int64_t{shape[0]} * shape[1] * shape[2]; }
};

// Device scratch sizes of one launch: `bytes_u8` for each of the three B·R·P mask buffers, `bytes_f32` for each of
// the two J·P float buffers, `bytes_small` for the per-job / per-region records.
struct ScratchSizes {
  size_t bytes_u8 = 0, bytes_f32 = 0, bytes_small = 0;
};
ScratchSizes Scratch(const Dims& d, int32_t jobs);

struct Scratches {
  uint8_t* u8[3];
  float* f32[2];
  void* small;
};

// `jobs` (J entries), `jitter` and `amplitude` (J·R each, job-major) on the device. Every job's channel is rewritten
// (the CPU's result, or the channel unchanged where the guard keeps it). Returns the first launch error.
cudaError_t LaunchRedistributeSeg(float* image, const int16_t* seg, const Dims& d, const Job* jobs, int32_t num_jobs,
                                  const float* jitter, const float* amplitude, bool retain_stats, const Scratches& s,
                                  cudaStream_t stream);

}  // namespace augmentd::cuda::redistribute_seg
