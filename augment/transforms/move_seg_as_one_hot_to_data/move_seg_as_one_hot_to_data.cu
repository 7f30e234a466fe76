// move_seg_as_one_hot_to_data's kernels (its CUDA stage: move_seg_as_one_hot_to_data_cuda.cc). Out of place: the
// image (B, C, n) becomes (B, C + K, n) in `out_image` (the first C channels copied, channel C + i = (seg[b, src] ==
// labels[i]) as 1/0), the seg (B, S, n) loses channel `src` into `out_seg` when drop is set. The stage copies both
// back into the chain scratch (the layouts of consecutive samples overlap in place).
#include <cstdint>

#include "augment/kernels/cuda/chain_common.cuh"

namespace augmentd::cuda::chain {
namespace {

__global__ void OneHotImageKernel(int32_t channels, int32_t k, int32_t seg_channels, int32_t src, int64_t n,
                                  const float* __restrict__ image, const int16_t* __restrict__ seg,
                                  const int16_t* __restrict__ labels, float* __restrict__ out) {
  const int32_t slice = static_cast<int32_t>(blockIdx.y);  // b · (C + K) + c
  const int32_t b = slice / (channels + k), c = slice % (channels + k);
  float* o = out + static_cast<int64_t>(slice) * n;
  if (c < channels) {
    const float* x = image + (static_cast<int64_t>(b) * channels + c) * n;
    AUGMENTD_CHAIN_FOR_VOXELS(i, n) o[i] = x[i];
    return;
  }
  const int16_t l = labels[c - channels];
  const int16_t* s = seg + (static_cast<int64_t>(b) * seg_channels + src) * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) o[i] = s[i] == l ? 1.0f : 0.0f;
}

__global__ void DropSegChannelKernel(int32_t seg_channels, int32_t src, int64_t n, const int16_t* __restrict__ seg,
                                     int16_t* __restrict__ out) {
  const int32_t slice = static_cast<int32_t>(blockIdx.y);  // b · (S − 1) + k'
  const int32_t b = slice / (seg_channels - 1), kk = slice % (seg_channels - 1);
  const int32_t k = kk < src ? kk : kk + 1;
  const int16_t* s = seg + (static_cast<int64_t>(b) * seg_channels + k) * n;
  int16_t* o = out + static_cast<int64_t>(slice) * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) o[i] = s[i];
}

}  // namespace

// Declared in move_seg_as_one_hot_to_data_cuda.cc.
cudaError_t LaunchMoveSegAsOneHot(int32_t batch, int32_t channels, int32_t k, int32_t seg_channels, int32_t src,
                                  int64_t n, const float* image, const int16_t* seg, const int16_t* labels,
                                  float* out_image, int16_t* out_seg, cudaStream_t stream) {
  const int img_slices = batch * (channels + k);
  OneHotImageKernel<<<SliceGrid(n, img_slices), internal::kThreads, 0, stream>>>(channels, k, seg_channels, src, n,
                                                                                 image, seg, labels, out_image);
  if (out_seg != nullptr && seg_channels > 1) {
    const int seg_slices = batch * (seg_channels - 1);
    DropSegChannelKernel<<<SliceGrid(n, seg_slices), internal::kThreads, 0, stream>>>(seg_channels, src, n, seg,
                                                                                      out_seg);
  }
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::chain
