// The DA5 median filter for any window size (da5_median_large.h).
#include "augment/kernels/cuda/da5_common.cuh"
#include "augment/kernels/cuda/da5_median_large.h"
#include "augment/kernels/common/da5_math.h"

namespace augmentd::cuda::da5 {
namespace {
using internal::kThreads;

// The k×k×k (planar: k×k) window of output voxel (i, j, l) in global memory, reflect-padded; keys on the fly.
struct GlobalWindow {
  const float* s;
  int d0, d1, d2;
  int i0, j0, l0;  // first window index per axis (output index − k/2)
  int k;
  bool planar;
  template <typename F>
  __device__ void ForEach(F&& f) const {
    const int na = planar ? 1 : k;
    for (int a = 0; a < na; ++a) {
      const int i = planar ? 0 : ReflectIndex(i0 + a, d0);
      for (int b = 0; b < k; ++b) {
        const float* row = s + (static_cast<int64_t>(i) * d1 + ReflectIndex(j0 + b, d1)) * d2;
        for (int c = 0; c < k; ++c) f(OrderedKey(__ldg(row + ReflectIndex(l0 + c, d2))));
      }
    }
  }
};

__global__ void __launch_bounds__(kThreads) MedianLargeKernel(const float* __restrict__ src, float* __restrict__ dst,
                                                              const int32_t* __restrict__ ks, int d0, int d1,
                                                              int d2) {
  const int slice = blockIdx.y;
  const int k = ks[slice];
  if (k <= 1) return;
  const int64_t plane = static_cast<int64_t>(d0) * d1 * d2;
  const bool planar = d0 == 1;
  __shared__ uint32_t hist[kSelectHistBins * kThreads];  // one histogram column per thread
  const uint32_t rank = planar ? static_cast<uint32_t>(k * k / 2) : static_cast<uint32_t>(k * k * k / 2);
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < plane;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    int i, j, l;
    internal::Unravel(v, d1, d2, i, j, l);
    const int before = k / 2;
    const GlobalWindow w{src + slice * plane, d0, d1, d2, i - before, j - before, l - before, k, planar};
    dst[slice * plane + v] = KeyToFloat(SelectRankKeyHist(w, rank, hist + threadIdx.x, kThreads));
  }
}
}  // namespace

cudaError_t LaunchMedianLarge(const float* src, float* dst, const int32_t* k, int slices, const int32_t shape[3],
                              cudaStream_t stream) {
  if (slices <= 0) return cudaSuccess;
  if (slices > 65535) return cudaErrorInvalidValue;
  const int64_t plane = int64_t{shape[0]} * shape[1] * shape[2];
  // One voxel per thread (the per-voxel work is large): blocks = ceil(plane / kThreads), at most 65535.
  const unsigned int blocks =
      static_cast<unsigned int>(std::clamp<int64_t>((plane + kThreads - 1) / kThreads, 1, 65535));
  MedianLargeKernel<<<dim3(blocks, slices), kThreads, 0, stream>>>(src, dst, k, shape[0], shape[1], shape[2]);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::da5
