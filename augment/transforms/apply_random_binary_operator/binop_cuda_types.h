// augment/transforms/apply_random_binary_operator/binop_cuda_types.h — the records apply_random_binary_operator's
// CUDA stage (apply_random_binary_operator_cuda.cc) packs and its kernels (apply_random_binary_operator.cu) read, and
// the round launcher. Plain C++ (no device code). Layout: image (B, C, d0, d1, d2) float32; masks (B, n) bytes;
// pair (B, n) uint16.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace augmentd::cuda::chain {

enum : int32_t { kBinopNone = 0, kBinopDilate = 1, kBinopErode = 2 };

// One sample's applied channel in one round. dilation: pass1 dilate; erosion: pass1 erode; opening: erode then
// dilate; closing: dilate then erode. The footprint of radius r is given by its per-axis costs
// (binary_operator_internal::AxisCosts(r, ndim): k float64 at costs_offset of the round's cost array) and r2 = r·r:
// element j is in it iff (h[j2] + h[j1]) + h[j0] ≤ r2 (2D: h[j2] + h[j1]), origin floor((k − 1) / 2) per axis.
struct BinopSample {
  uint64_t others = 0;  // bit c: channel c is another channel of channel_idx (zeroed where the operator added)
  double r2 = 0;
  int32_t on = 0;
  int32_t channel = 0;  // the resolved applied channel a
  int32_t pass1 = kBinopNone, pass2 = kBinopNone;
  int32_t k = 1;             // footprint size per axis
  int32_t ndim = 3;          // 2: a 2D sample as (1, X, Y), its leading axis is no footprint axis
  int32_t costs_offset = 0;  // into the round's cost array
  int32_t split = 0;         // binop::BinopSplit of the costs (binop_passes.h): the passes scan outward from it
  int32_t unimodal = 0;      // 1: the passes may stop early (binop_passes.h); 0: every j is visited
  int32_t pad = 0;
};

// One round on every sample with recs[b].on: `m0`, `r1`, `nearest` hold B · n bytes, `pair` B · n uint16, `boxes`
// 2 · B · 6 int32 (the passes' input boxes, binop_passes.h; device scratch); `second_pass` when any sample has
// pass2. Launches: a memset of the boxes and the first pass's box kernel, then row, column and plane kernels per
// pass; the last pass's plane kernel writes the image itself (no separate apply launch). n < 2^31 per sample.
// Enqueues only (no host synchronisation); returns the launch error.
// Diagnostics (bench/cuda_chain_bench --kernel-times; the stage passes nullptr): with `kernel_marks`, event
// kernel_marks[0] is recorded before the box memset, kernel_marks[1 + 3p + j] before kernel j (row, column, plane)
// of pass p, and one after the last (5 events for one pass, 8 for two).
cudaError_t LaunchBinaryOperatorRound(int32_t batch, int32_t channels, const int32_t shape[3], float* x,
                                      const BinopSample* recs, const double* costs, bool second_pass, uint8_t* m0,
                                      uint8_t* r1, uint8_t* nearest, uint16_t* pair, int32_t* boxes,
                                      cudaStream_t stream, const cudaEvent_t* kernel_marks = nullptr);

}  // namespace augmentd::cuda::chain
