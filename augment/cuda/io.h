// augment/cuda/io.h — the device-side batch I/O of the CUDA engine (augment/cuda/engine.h) and its chain
// (augment/cuda/chain.h): caller-owned device buffers, their layout, the graph counters. Plain structs, no CUDA header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "augment/types.h"

namespace augmentd {

// Device input of one batch (device pointers, C-contiguous).
struct CudaBatchInput {
  const float* image = nullptr;      // (B, C, S0, S1, S2) float32
  const int16_t* seg = nullptr;      // (B, seg_channels, S0, S1, S2) int16; nullptr: image-only batch
  std::vector<int64_t> image_shape;  // {B, C, S0, S1, S2}
  int64_t seg_channels = 1;          // label channels of `seg` (ignored when seg is null)
};

// Caller-provided device outputs (e.g. the service's IPC slots), laid out as OutputLayout says.
struct CudaBatchOutput {
  void* image = nullptr;      // (B, C, *P) in RunOptions::image_dtype
  std::vector<int16_t*> seg;  // one per label level (BatchResult::seg order), (B, S, *level) in
                              // CudaOutputLayout::seg_dtype (for kBool the pointer addresses 0/1 bytes)
};

// Shapes and byte sizes of a batch's outputs.
struct CudaOutputLayout {
  std::vector<int64_t> image_shape;  // {B, C, *P}
  size_t image_bytes = 0;
  std::vector<std::vector<int64_t>> seg_shapes;  // per level {B, S, *Q} (none for image-only batches)
  std::vector<size_t> seg_bytes;
  DType seg_dtype = DType::kInt16;  // kBool after convert_segmentation_to_regions (as the CPU engine)
};

// How the fused batches of a CudaAugmenter ran (CUDA graphs, see CudaAugmenter).
struct CudaGraphCounters {
  int64_t eager = 0;             // batches launched kernel by kernel
  int64_t captures = 0;          // graphs captured and instantiated
  int64_t replays = 0;           // batches run as one graph launch (captures included)
  int64_t capture_failures = 0;  // captures that failed (that key then runs eagerly)
  int64_t split = 0;             // fused batches run in two parts on two streams (cuda/engine.h "Two parts")
};

}  // namespace augmentd
