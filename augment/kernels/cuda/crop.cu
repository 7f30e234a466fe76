#include "augment/kernels/cuda/crop.h"

namespace augmentd::cuda {
namespace {

// One thread per output voxel (grid-stride); all channels of that voxel plus its label. Consecutive threads
// read and write consecutive z, so both sides are coalesced.
template <typename SegT>
__global__ void CropKernel(const float* __restrict__ src_data, const SegT* __restrict__ src_seg, int64_t channels,
                           int64_t s0, int64_t s1, int64_t s2, int64_t lb0, int64_t lb1, int64_t lb2, int64_t p0,
                           int64_t p1, int64_t p2, bool misses, float* __restrict__ dst_data,
                           int16_t* __restrict__ dst_seg) {
  const int64_t pv = p0 * p1 * p2, sv = s0 * s1 * s2;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < pv;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t z = i % p2, y = (i / p2) % p1, x = i / (p1 * p2);
    const int64_t sx = lb0 + x, sy = lb1 + y, sz = lb2 + z;
    const bool inside = !misses && sx >= 0 && sx < s0 && sy >= 0 && sy < s1 && sz >= 0 && sz < s2;
    const int64_t src = (sx * s1 + sy) * s2 + sz;
    for (int64_t c = 0; c < channels; ++c) dst_data[c * pv + i] = inside ? src_data[c * sv + src] : 0.0f;
    dst_seg[i] = inside ? static_cast<int16_t>(src_seg[src]) : static_cast<int16_t>(misses ? 0 : -1);
  }
}

}  // namespace

cudaError_t LaunchCropSample(const CropArgs& a, cudaStream_t stream) {
  const int64_t pv = a.patch[0] * a.patch[1] * a.patch[2];
  if (pv <= 0) return cudaSuccess;
  constexpr int kThreads = 256;
  const int64_t blocks = (pv + kThreads - 1) / kThreads;
  const unsigned grid = static_cast<unsigned>(blocks < (1 << 20) ? blocks : (1 << 20));
  if (a.seg_is_int8) {
    CropKernel<int8_t><<<grid, kThreads, 0, stream>>>(
        a.src_data, static_cast<const int8_t*>(a.src_seg), a.channels, a.shape[0], a.shape[1], a.shape[2], a.lb[0],
        a.lb[1], a.lb[2], a.patch[0], a.patch[1], a.patch[2], a.misses, a.dst_data, a.dst_seg);
  } else {
    CropKernel<int16_t><<<grid, kThreads, 0, stream>>>(
        a.src_data, static_cast<const int16_t*>(a.src_seg), a.channels, a.shape[0], a.shape[1], a.shape[2], a.lb[0],
        a.lb[1], a.lb[2], a.patch[0], a.patch[1], a.patch[2], a.misses, a.dst_data, a.dst_seg);
  }
  return cudaGetLastError();
}

}  // namespace augmentd::cuda
