// move_seg_as_one_hot_to_data's kernels (its CUDA stage: move_seg_as_one_hot_to_data_cuda.cc). In place in the chain's
// buffers: the image (B, C, n) becomes (B, C + K, n) within the buffer's capacity, channel C + i = (seg[b, src] ==
// labels[i]) as 1/0; with drop the seg (B, S, n) becomes (B, S − 1, n) without channel src. Plane moves are device
// copies in an order that never overwrites a plane still to be read:
//   image: sample b's plane c goes from b·C + c to b·(C + K) + c (never lower), taken from the last plane down (a
//          destination is above its source and every source not yet moved lies below that source);
//   one-hot planes: one kernel over B · K planes, after the moves (it writes where later samples' planes were) and
//          before the seg moves (it reads channel src);
//   seg: sample b's plane k (≠ src) goes from b·S + k to b·(S − 1) + k − [k > src] (never higher), from the first up.
// For the cascade (B = 2, C = 1, K = 3, S = 2): one 1-plane image move, one kernel writing 6 planes, one 1-plane seg
// move, instead of writing all B · (C + K) planes and S − 1 seg planes out of place and copying both back.
#include <cstdint>

#include "augment/kernels/cuda/chain_common.cuh"

namespace augmentd::cuda::chain {
namespace {

// Grid (·, B · K): plane slice = b · K + i of the one-hot channels.
__global__ void OneHotPlanesKernel(int32_t channels, int32_t k, int32_t seg_channels, int32_t src, int64_t n,
                                   const int16_t* __restrict__ seg, const int16_t* __restrict__ labels,
                                   float* __restrict__ image) {
  const int32_t slice = static_cast<int32_t>(blockIdx.y);
  const int32_t b = slice / k, i = slice % k;
  const int16_t l = labels[i];
  const int16_t* s = seg + (static_cast<int64_t>(b) * seg_channels + src) * n;
  float* o = image + (static_cast<int64_t>(b) * (channels + k) + channels + i) * n;
  AUGMENTD_CHAIN_FOR_VOXELS(v, n) o[v] = s[v] == l ? 1.0f : 0.0f;
}

}  // namespace

// Declared in move_seg_as_one_hot_to_data_cuda.cc.
cudaError_t LaunchMoveSegAsOneHotInPlace(int32_t batch, int32_t channels, int32_t k, int32_t seg_channels, int32_t src,
                                         bool drop, int64_t n, float* image, int16_t* seg, const int16_t* labels,
                                         cudaStream_t stream) {
  const size_t image_plane = sizeof(float) * static_cast<size_t>(n), seg_plane = sizeof(int16_t) * static_cast<size_t>(n);
  if (k > 0) {
    for (int32_t b = batch - 1; b >= 1; --b)
      for (int32_t c = channels - 1; c >= 0; --c) {
        const int64_t from = int64_t{b} * channels + c, to = int64_t{b} * (channels + k) + c;
        const cudaError_t e = cudaMemcpyAsync(image + to * n, image + from * n, image_plane, cudaMemcpyDeviceToDevice,
                                              stream);
        if (e != cudaSuccess) return e;
      }
    OneHotPlanesKernel<<<SliceGrid(n, batch * k), internal::kThreads, 0, stream>>>(channels, k, seg_channels, src, n,
                                                                                   seg, labels, image);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  if (!drop) return cudaSuccess;
  for (int32_t b = 0; b < batch; ++b)
    for (int32_t c = 0; c < seg_channels; ++c) {
      if (c == src) continue;
      const int64_t from = int64_t{b} * seg_channels + c, to = int64_t{b} * (seg_channels - 1) + (c > src ? c - 1 : c);
      if (from == to) continue;
      const cudaError_t e = cudaMemcpyAsync(seg + to * n, seg + from * n, seg_plane, cudaMemcpyDeviceToDevice, stream);
      if (e != cudaSuccess) return e;
    }
  return cudaSuccess;
}

}  // namespace augmentd::cuda::chain
