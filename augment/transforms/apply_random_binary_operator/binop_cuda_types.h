// augment/transforms/apply_random_binary_operator/binop_cuda_types.h — the records apply_random_binary_operator's
// CUDA stage (apply_random_binary_operator_cuda.cc) packs and its kernels (apply_random_binary_operator.cu) read, and
// the round launcher. Plain C++ (no device code). Layout: image (B, C, d0, d1, d2) float32; masks (B, n) bytes;
// prefix (B, d0·d1, d2 + 1) int32.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace augmentd::cuda::chain {

enum : int32_t { kBinopNone = 0, kBinopDilate = 1, kBinopErode = 2 };

// One footprint run along the last axis: row offset (d0, d1) from the origin, columns lo..hi (inclusive) relative to
// it (the CPU's Dilate3 runs, origin floor((f − 1) / 2) per axis).
struct BinopRun {
  int32_t d0 = 0, d1 = 0, lo = 0, hi = 0;
};

// One sample's applied channel in one round. dilation: pass1 dilate; erosion: pass1 erode; opening: erode then
// dilate; closing: dilate then erode.
struct BinopSample {
  uint64_t others = 0;  // bit c: channel c is another channel of channel_idx (zeroed where the operator added)
  int32_t on = 0;
  int32_t channel = 0;  // the resolved applied channel a
  int32_t pass1 = kBinopNone, pass2 = kBinopNone;
  int32_t runs_offset = 0, runs_count = 0;  // into the round's run array
};

// One round on every sample with recs[b].on: `m0`, `r1`, `r2` hold B · n bytes, `prefix` B · d0 · d1 · (d2 + 1)
// int32 (device scratch); `second_pass` when any sample has pass2. Enqueues only; returns the launch error.
cudaError_t LaunchBinaryOperatorRound(int32_t batch, int32_t channels, const int32_t shape[3], float* x,
                                      const BinopSample* recs, const BinopRun* runs, bool second_pass, uint8_t* m0,
                                      uint8_t* r1, uint8_t* r2, int32_t* prefix, cudaStream_t stream);

}  // namespace augmentd::cuda::chain
