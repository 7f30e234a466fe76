// augment/transforms/swap/swap_kernels.h — the CUDA kernel of swap's chain stage (swap_cuda.cc; kernel in swap.cu):
// TorchIO RandomSwap's patch swaps on the chain's (batch, channels, d0, d1, d2) float32 scratch, in place, in the
// order drawn. One block per (sample, channel) runs that sample's swaps one after another (snapshots of both patches
// in `scratch`, then the second patch by kernels/common/swap_math.h SecondSource, then the first patch), so
// overlapping swaps give the CPU's SwapPatches result exactly (only copies: bit-exact). Internal to the CUDA engine.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace augmentd::cuda::swap {

// One sample's swaps: pairs [first, first + count) of the batch's pair array, patch extent per axis.
struct SwapSample {
  int32_t count = 0;
  int32_t first = 0;
  int32_t extent[3] = {1, 1, 1};
  int32_t pad = 0;
};

// First and second corner of one swap (each 0 <= corner[a] <= shape[a] − extent[a]).
struct SwapPair {
  int32_t f[3];
  int32_t g[3];
};

// `samples` (batch entries) and `pairs` on the device; `scratch`: batch · channels · 2 · max_patch floats, max_patch
// >= every sample's extent product. Returns the launch error.
cudaError_t LaunchSwap(float* image, int32_t batch, int32_t channels, const int32_t shape[3],
                       const SwapSample* samples, const SwapPair* pairs, int64_t max_patch, float* scratch,
                       cudaStream_t stream);

}  // namespace augmentd::cuda::swap
