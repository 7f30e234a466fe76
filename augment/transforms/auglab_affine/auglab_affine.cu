// augment/transforms/auglab_affine/auglab_affine.cu — LaunchAuglabAffine (auglab_affine_kernels.h): a grid over
// (voxel blocks, sample); each thread computes its voxel's source point once and samples every image channel and
// every label channel there (auglab_affine_math.h, shared with the CPU transform).
#include "augment/kernels/common/auglab_affine_math.h"
#include "augment/transforms/auglab_affine/auglab_affine_kernels.h"

namespace augmentd::cuda::auglab_affine {
namespace {
namespace am = augmentd::auglab_affine_math;

constexpr int kThreads = 256;

__global__ void AffineKernel(const float* __restrict__ src, float* __restrict__ image, const int16_t* src_seg,
                             int16_t* seg, int32_t channels, int32_t seg_channels, int32_t d, int32_t h, int32_t w,
                             int32_t linear, const AffineSample* __restrict__ samples) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  const AffineSample smp = samples[b];
  if (smp.on == 0) return;
  const int64_t n = static_cast<int64_t>(d) * h * w;
  const int64_t o = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (o >= n) return;
  const int32_t x = static_cast<int32_t>(o % w), y = static_cast<int32_t>((o / w) % h),
                z = static_cast<int32_t>(o / (static_cast<int64_t>(w) * h));
  float sx, sy, sz;
  am::SourcePoint(smp.m, static_cast<float>(x), static_cast<float>(y), static_cast<float>(z), sx, sy, sz);
  const int64_t ni = am::NearestIndex(d, h, w, sx, sy, sz);
  for (int32_t c = 0; c < channels; ++c) {
    const int64_t plane = (static_cast<int64_t>(b) * channels + c) * n;
    image[plane + o] = linear ? am::SampleLinear(src + plane, d, h, w, sx, sy, sz)
                              : (ni < 0 ? 0.0f : src[plane + ni]);
  }
  if (seg != nullptr)
    for (int32_t c = 0; c < seg_channels; ++c) {
      const int64_t plane = (static_cast<int64_t>(b) * seg_channels + c) * n;
      seg[plane + o] = ni < 0 ? int16_t{0} : src_seg[plane + ni];
    }
}

}  // namespace

cudaError_t LaunchAuglabAffine(const float* src, float* image, const int16_t* src_seg, int16_t* seg, int32_t batch,
                               int32_t channels, int32_t seg_channels, const int32_t shape[3], bool linear,
                               const AffineSample* samples, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(shape[0]) * shape[1] * shape[2];
  if (batch <= 0 || n == 0) return cudaSuccess;
  const dim3 grid(static_cast<unsigned>((n + kThreads - 1) / kThreads), static_cast<unsigned>(batch));
  AffineKernel<<<grid, kThreads, 0, stream>>>(src, image, src_seg, seg, channels, seg_channels, shape[0], shape[1],
                                              shape[2], linear ? 1 : 0, samples);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::auglab_affine
