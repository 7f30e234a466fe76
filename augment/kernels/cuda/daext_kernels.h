// augment/kernels/cuda/daext_kernels.h — launchers of the DAExt AugLab kinds on the generic chain's scratch
// (augment/cuda/stage.h): clamp, zscore_normalization, auglab_bias_field, shape_crop, edge_convolution, unsharp_mask
// (their stages: augment/transforms/<name>/<name>_cuda.cc), plus the retain_stats map and AugLab's NaN / Inf guard
// they share. One or a few launches per batch; per-slice records in device memory (the uploaded ParamArena); every
// launcher enqueues on `stream`, never synchronises or allocates (scratch is passed in), and returns the launch
// error. Per-voxel math: daext_math.h / auglab_math.h (shared with the CPU transforms).
//
// Layout: image (B, C, d0, d1, d2) float32, C order; slice s = b·C + c covers x + s·n, n = d0·d1·d2.
// Statistics (`SliceMoments`) come from da5::LaunchSliceMoments (deterministic).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "augment/kernels/common/da5_math.h"

namespace augmentd::cuda::daext {

// One (sample, channel) of one stage. 32 bytes.
struct DaextSlice {
  int32_t on = 0;      // 0: slice untouched
  int32_t retain = 0;  // retain_stats after the step
  float a = 0;         // clamp: q_lo
  float b = 0;         // clamp: q_hi
  int32_t mode = 0;    // bias field: 3 (3D) or 2 (2D: x = axis 2, y = axis 1); edge: kernel count (1 or 3)
  int32_t pad = 0;
  int64_t off = 0;     // first float of the slice's data in the stage's float array (bias coefficients / weights)
};
static_assert(sizeof(DaextSlice) == 32, "DaextSlice is packed into the ParamArena as is");

// One sample's kept box of shape_crop: voxels outside [lo, hi) per axis become 0. 32 bytes.
struct CropBox {
  int32_t on = 0;
  int32_t lo[3] = {0, 0, 0};
  int32_t hi[3] = {0, 0, 0};
  int32_t pad = 0;
};
static_assert(sizeof(CropBox) == 32, "CropBox is packed into the ParamArena as is");

// ---- clamp ----------------------------------------------------------------------------------------------------
// Temporary bytes SortSlice needs for n values.
size_t SortTempBytes(int64_t n);
// dst[0, n) = src[0, n) sorted ascending (CUB radix sort; exact order statistics).
cudaError_t SortSlice(const float* src, float* dst, int64_t n, void* temp, size_t temp_bytes, cudaStream_t stream);
// For p[s].on: thresholds[2s], [2s + 1] = torch.quantile of slice s at p[s].a, p[s].b from its sorted copy
// (sorted + s·n), then x ← ClampTo(x, lo, hi).
cudaError_t LaunchClamp(float* x, const float* sorted, int64_t n, int slices, const DaextSlice* p, float* thresholds,
                        cudaStream_t stream);

// ---- zscore_normalization ---------------------------------------------------------------------------------------
// For p[s].on: x ← (x − mean) / max(std, 1e-8), std the population (p[s].mode == 0) or unbiased (mode == 1) std of
// stats[s] (the slice's moments before).
cudaError_t LaunchZscore(float* x, int64_t n, int slices, const DaextSlice* p, const da5::SliceMoments* stats,
                         cudaStream_t stream);

// ---- auglab_bias_field ------------------------------------------------------------------------------------------
// For p[s].on: x ← x · BiasField(BiasExponent(coeffs + p[s].off, order, p[s].mode == 3, x_l, y_j, z_i), invert),
// coordinates LinspaceAt(−1, 1, ·) of axes 2, 1, 0.
cudaError_t LaunchAuglabBiasField(float* x, const int32_t shape[3], int slices, const DaextSlice* p,
                                  const float* coeffs, int order, bool invert, cudaStream_t stream);

// ---- shape_crop -------------------------------------------------------------------------------------------------
// For boxes[b].on: every voxel of sample b's `channels` slices outside its box becomes 0 (image and labels).
cudaError_t LaunchCropZeroImage(float* x, const int32_t shape[3], int batch, int channels, const CropBox* boxes,
                                cudaStream_t stream);
cudaError_t LaunchCropZeroSeg(int16_t* seg, const int32_t shape[3], int batch, int channels, const CropBox* boxes,
                              cudaStream_t stream);

// ---- edge_convolution / unsharp_mask ----------------------------------------------------------------------------
// For p[s].on: dst = Σ_k [|·|](ConvAt(src, weights + p[s].off + 27k, 3)) over p[s].mode kernels (one kernel: its
// response as is). `src` must not alias `dst`.
cudaError_t LaunchEdgeConvolution(const float* src, float* dst, const int32_t shape[3], int slices,
                                  const DaextSlice* p, const float* weights, bool absolute, cudaStream_t stream);
// For p[s].on: dst = Unsharp(src, ConvAt(src, weights + p[s].off, 3), amount).
cudaError_t LaunchUnsharpMask(const float* src, float* dst, const int32_t shape[3], int slices, const DaextSlice* p,
                              const float* weights, float amount, cudaStream_t stream);

// ---- shared -----------------------------------------------------------------------------------------------------
// retain_stats for p[s].on && p[s].retain: x ← Retain(x, MakeRetain(before[s], after[s])) (auglab_math.h).
cudaError_t LaunchDaextRetain(float* x, int64_t n, int slices, const DaextSlice* p, const da5::SliceMoments* before,
                              const da5::SliceMoments* after, cudaStream_t stream);
// AugLab's guard: a slice with p[s].on holding a NaN / Inf goes back to `orig` (same layout as x). `flags`: `slices`
// ints of scratch.
cudaError_t LaunchFiniteGuard(float* x, const float* orig, int64_t n, int slices, const DaextSlice* p, int* flags,
                              cudaStream_t stream);

}  // namespace augmentd::cuda::daext
