// augment/transforms/remove_random_connected_component/cc_cuda_types.h — the records remove_random_connected_
// component's CUDA stage (remove_random_connected_component_cuda.cc) packs and its kernels
// (remove_random_connected_component.cu) read, and the round launcher. Plain C++ (no device code).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace augmentd::cuda::chain {

// One sample's applied channel in one round (the CPU's per-channel step; its draws come from the CPU Draw).
struct CcSample {
  double limit = 0;           // N · dont_do_if_covers_more_than_x_percent: components of size < limit are removable
  double component_draw = 0;  // u_c: the removed component is valid[min(⌊u_c · |valid|⌋, |valid| − 1)]
  int32_t on = 0;
  int32_t channel = 0;        // the resolved applied channel a
  int32_t fill_channel = -1;  // the resolved channel set to 1 on the removed component; −1: none (the host decides
                              // it: u_f < fill_with_other_class_p and another channel exists, other[⌊u_o · |other|⌋])
  int32_t pad = 0;
};

// Tiles of the valid-root count (CcCount): kCcTile voxels each; CcTiles(n) per sample.
inline constexpr int32_t kCcTile = 4096;
inline int32_t CcTiles(int64_t n) { return static_cast<int32_t>((n + kCcTile - 1) / kCcTile); }

// `rounds` rounds at once (recs: rounds · B records, round-major: slot s = round · B + b is sample s % B), each on
// every sample with recs[s].on, on the image (B, C, d0, d1, d2): labels the components of (x[b, a] != 0) with full
// connectivity (26 in 3D, 8 on a unit leading axis) by lock-free union-find whose root is a component's smallest voxel
// index (its first voxel in raster order: the CPU's/skimage's numbering), counts their sizes, picks the component on
// the device (valid components in raster order of their first voxel, the CPU's selection rule: no host round trip)
// and removes it. Several rounds in one call only when they are independent: no fill channel and distinct channels
// per sample (the caller checks; the CPU's sequential order then gives the same result). Six launches per call, none
// waits for the host. Scratch (device), S = rounds · B slots: `mask` S · n bytes, `labels` and `sizes` S · n int32
// each, `chosen` S int32, `tile_counts` S · CcTiles(n) int32. n < 2^31, S ≤ 65535 (else cudaErrorInvalidValue).
// Enqueues only; returns the launch error. Diagnostics (bench/cuda_chain_bench --kernel-times; the stage passes
// nullptr): with `kernel_marks`, event kernel_marks[k] is recorded before the k-th of the six launches and
// kernel_marks[6] after the last.
cudaError_t LaunchRemoveComponentRound(int32_t batch, int32_t rounds, int32_t channels, const int32_t shape[3],
                                       float* x, const CcSample* recs, uint8_t* mask, int32_t* labels, int32_t* sizes,
                                       int32_t* chosen, int32_t* tile_counts, cudaStream_t stream,
                                       const cudaEvent_t* kernel_marks = nullptr);

}  // namespace augmentd::cuda::chain
