// augment/kernels/cuda/da5_kernels.h — launchers of nnUNetTrainerDA5's local transforms on the chain scratch
// (augment/cuda/stage.h; the stages in augment/cuda/stages_da5*.cc call them). One or a few launches per batch,
// per-slice / per-sample parameter arrays in device memory (the uploaded ParamArena); all enqueue on `stream` and
// return the launch error (asynchronous faults surface at the next synchronisation).
//
// Layout: image (B, C, d0, d1, d2) float32, C order; slice s = b·C + c covers x + s·P, P = d0·d1·d2.
// The math per voxel is da5_math.h's (shared with the host tests).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "augment/kernels/common/da5_math.h"

namespace augmentd::cuda::da5 {

// Largest median window of the shared-memory tile kernel (larger ones run da5_median_large.h): the k³ windows of a
// 4×8×8 output tile live in shared memory ((3+k)(7+k)² keys + as many bin bytes, 42.5 KiB at k = 15, beside the
// 33 KiB of histogram columns).
inline constexpr int kMaxMedianSize = 15;

// Partials a moments reduction over `slices` slices of `len` values needs (MomentsBlocks(len) per slice).
int MomentsBlocks(int64_t len);

// out[s] = moments of x[s·len, (s+1)·len) for s < slices (deterministic: fixed block split and reduction order).
// `partials` holds slices · MomentsBlocks(len) entries.
cudaError_t LaunchSliceMoments(const float* x, int64_t len, int slices, MomentsPartial* partials, SliceMoments* out,
                               cudaStream_t stream);

// Median filter: dst slice s = median_k[s](src slice s) for k[s] >= 2 (other slices of dst are not written).
// max_k = max of k (sizes the shared tile), <= kMaxMedianSize. shape[0] == 1 (2D samples) runs the k×k planar
// selection, which equals the k³ one there (da5_filters.cu).
cudaError_t LaunchMedian(const float* src, float* dst, const int32_t* k, int slices, const int32_t shape[3], int max_k,
                         cudaStream_t stream);

// Sharpening: dst slice s = sharpen(src slice s) where p[s].apply (the 2D form where p[s].planar), clamped to
// stats[s] where p[s].clamp (stats may be null when no slice clamps).
cudaError_t LaunchSharpen(const float* src, float* dst, const SharpenSlice* p, const SliceMoments* stats, int slices,
                          const int32_t shape[3], cudaStream_t stream);

// Rician noise of the active samples (sample_len = C·P): x ← RicianMagnitude(x, in[b].mn, ...) (pass 1), then
// x ← RicianRescale(x, in[b], r[b]) (pass 2, after the moments r of pass 1's output).
cudaError_t LaunchRicianField(float* x, const RicianSample* p, const SliceMoments* in, int batch, int64_t sample_len,
                              cudaStream_t stream);
cudaError_t LaunchRicianRescale(float* x, const RicianSample* p, const SliceMoments* in, const SliceMoments* r,
                                int batch, int64_t sample_len, cudaStream_t stream);

// Blank rectangles: one block per slice walks its rectangles in order (a box's mean sees the earlier fills).
cudaError_t LaunchBlankRectangles(float* x, const RectSlice* slices_p, const Rect* rects, int slices,
                                  const int32_t shape[3], cudaStream_t stream);

// Brightness gradient: slice s (sample s / channels) gets x + kernel (mode 1 / 2 of p[s]) and, where p[s].clip,
// is clamped to sample_stats[s / channels] (may be null when no slice clips). `block` = the stage's arena block
// (LocalSlice offsets are relative to it).
cudaError_t LaunchGradientAdd(float* x, const LocalSlice* p, const char* block, const SliceMoments* sample_stats,
                              int slices, int channels, const int32_t shape[3], cudaStream_t stream);

// Local gamma: slices with p[s].mode != 0 blended with their gamma, [min, max] from stats[s].
cudaError_t LaunchLocalGamma(float* x, const LocalSlice* p, const char* block, const SliceMoments* stats, int slices,
                             const int32_t shape[3], cudaStream_t stream);

}  // namespace augmentd::cuda::da5
