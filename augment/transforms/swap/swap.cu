// augment/transforms/swap/swap.cu — LaunchSwap (swap_kernels.h): TorchIO's patch swaps, one block per (sample,
// channel), the sample's swaps in order. Per swap: both patches to the block's scratch, a block barrier, the second
// patch written from the first's snapshot (SecondSource: the CPU's element-by-element in-place copy, which can read
// its own writes when the patches overlap), a barrier, the first patch from the second's snapshot, a barrier.
// Barriers make the block's global writes visible to its other threads (x is read without __ldg for that reason).
#include "augment/kernels/common/swap_math.h"
#include "augment/transforms/swap/swap_kernels.h"

namespace augmentd::cuda::swap {
namespace {

constexpr int kThreads = 512;

__device__ __forceinline__ int64_t VolumeAddress(const int32_t* o, int64_t t, const int32_t* e, const int32_t* s) {
  const int64_t k = t % e[2], j = (t / e[2]) % e[1], i = t / (static_cast<int64_t>(e[2]) * e[1]);
  return ((o[0] + i) * s[1] + o[1] + j) * s[2] + o[2] + k;
}

__global__ void SwapKernel(float* image, int32_t channels, int32_t s0, int32_t s1, int32_t s2,
                           const SwapSample* samples, const SwapPair* pairs, int64_t max_patch, float* scratch) {
  const int32_t b = static_cast<int32_t>(blockIdx.y), c = static_cast<int32_t>(blockIdx.x);
  const SwapSample smp = samples[b];
  if (smp.count <= 0) return;
  const int32_t shape[3] = {s0, s1, s2};
  const int64_t n = static_cast<int64_t>(s0) * s1 * s2;
  float* x = image + (static_cast<int64_t>(b) * channels + c) * n;
  float* first = scratch + (static_cast<int64_t>(b) * channels + c) * 2 * max_patch;
  float* second = first + max_patch;
  const int64_t pv = static_cast<int64_t>(smp.extent[0]) * smp.extent[1] * smp.extent[2];
  for (int32_t it = 0; it < smp.count; ++it) {
    const SwapPair pr = pairs[smp.first + it];
    const int32_t d[3] = {pr.g[0] - pr.f[0], pr.g[1] - pr.f[1], pr.g[2] - pr.f[2]};
    const bool forward = swap_math::CornerAddress(pr.f, shape) < swap_math::CornerAddress(pr.g, shape);
    for (int64_t t = threadIdx.x; t < pv; t += blockDim.x) {
      first[t] = x[VolumeAddress(pr.f, t, smp.extent, shape)];
      second[t] = x[VolumeAddress(pr.g, t, smp.extent, shape)];
    }
    __syncthreads();
    for (int64_t t = threadIdx.x; t < pv; t += blockDim.x)
      x[VolumeAddress(pr.g, t, smp.extent, shape)] = first[swap_math::SecondSource(t, d, smp.extent, forward)];
    __syncthreads();
    for (int64_t t = threadIdx.x; t < pv; t += blockDim.x) x[VolumeAddress(pr.f, t, smp.extent, shape)] = second[t];
    __syncthreads();
  }
}

}  // namespace

cudaError_t LaunchSwap(float* image, int32_t batch, int32_t channels, const int32_t shape[3],
                       const SwapSample* samples, const SwapPair* pairs, int64_t max_patch, float* scratch,
                       cudaStream_t stream) {
  if (batch <= 0 || channels <= 0) return cudaSuccess;
  SwapKernel<<<dim3(static_cast<unsigned>(channels), static_cast<unsigned>(batch)), kThreads, 0, stream>>>(
      image, channels, shape[0], shape[1], shape[2], samples, pairs, max_patch, scratch);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::swap
