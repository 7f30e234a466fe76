// Pointwise DA5 kernels: Rician noise (two passes around a moments reduction), blank rectangles (sequential per
// slice), brightness gradient and local gamma (the bump rebuilt per voxel from its three 1D factors).
#include "augment/kernels/cuda/da5_common.cuh"
#include "augment/kernels/cuda/da5_kernels.h"

namespace augmentd::cuda::da5 {
namespace {
using internal::kThreads;
constexpr int kRectThreads = 1024;

#define DA5_GRID_STRIDE(v, len)                                                            \
  for (int64_t v = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; v < (len); \
       v += static_cast<int64_t>(gridDim.x) * blockDim.x)

__global__ void RicianFieldKernel(float* __restrict__ x, const RicianSample* __restrict__ p,
                                  const SliceMoments* __restrict__ in, int64_t len) {
  const int b = blockIdx.y;
  const RicianSample q = p[b];
  if (!q.active) return;
  float* s = x + b * len;
  const float mn = in[b].mn;
  DA5_GRID_STRIDE(i, len) {
    const uint64_t e = static_cast<uint64_t>(i);
    s[i] = RicianMagnitude(s[i], mn, NormalAt(q.re, e), NormalAt(q.im, e), q.sigma);
  }
}

__global__ void RicianRescaleKernel(float* __restrict__ x, const RicianSample* __restrict__ p,
                                    const SliceMoments* __restrict__ in, const SliceMoments* __restrict__ r,
                                    int64_t len) {
  const int b = blockIdx.y;
  if (!p[b].active) return;
  float* s = x + b * len;
  const SliceMoments m_in = in[b], m_r = r[b];
  DA5_GRID_STRIDE(i, len) s[i] = RicianRescale(s[i], m_in, m_r);
}

// One block per slice: rectangles in order; a mean box is reduced (double, fixed order) before it is filled.
__global__ void BlankRectanglesKernel(float* __restrict__ x, const RectSlice* __restrict__ sp,
                                      const Rect* __restrict__ rects, int d0, int d1, int d2) {
  const int slice = blockIdx.x;
  const RectSlice rs = sp[slice];
  const int64_t plane = static_cast<int64_t>(d0) * d1 * d2;
  float* s = x + slice * plane;
  __shared__ float fill;
  for (int r = 0; r < rs.count; ++r) {
    const Rect box = rects[rs.begin + r];
    const int w0 = box.ub[0] - box.lb[0], w1 = box.ub[1] - box.lb[1], w2 = box.ub[2] - box.lb[2];
    const int64_t n = (w0 > 0 && w1 > 0 && w2 > 0) ? int64_t{w0} * w1 * w2 : 0;
    auto at = [&](int64_t m) -> float& {
      int i, j, l;
      internal::Unravel(m, w1, w2, i, j, l);
      return s[(static_cast<int64_t>(box.lb[0] + i) * d1 + box.lb[1] + j) * d2 + box.lb[2] + l];
    };
    if (box.use_mean) {
      double sum = 0;
      for (int64_t m = threadIdx.x; m < n; m += blockDim.x) sum += static_cast<double>(at(m));
      sum = internal::BlockSum(sum);
      if (threadIdx.x == 0) fill = n > 0 ? static_cast<float>(sum / static_cast<double>(n)) : NAN;
    } else if (threadIdx.x == 0) {
      fill = box.value;
    }
    __syncthreads();
    const float v = fill;
    for (int64_t m = threadIdx.x; m < n; m += blockDim.x) at(m) = v;
    __syncthreads();  // the next box's mean reads these values; `fill` is rewritten
  }
}

__global__ void GradientAddKernel(float* __restrict__ x, const LocalSlice* __restrict__ p, const char* block,
                                  const SliceMoments* __restrict__ stats, int channels, int d0, int d1, int d2) {
  const int slice = blockIdx.y;
  const LocalSlice q = p[slice];
  if (q.mode == 0 && !q.clip) return;
  const int64_t plane = static_cast<int64_t>(d0) * d1 * d2;
  float* s = x + slice * plane;
  const float* axes = reinterpret_cast<const float*>(block + q.axes_off);
  const float* dense = reinterpret_cast<const float*>(block + q.dense_off);
  const float lo = q.clip ? stats[slice / channels].mn : 0.f, hi = q.clip ? stats[slice / channels].mx : 0.f;
  DA5_GRID_STRIDE(v, plane) {
    float r = s[v];
    if (q.mode == 1) {
      int i, j, l;
      internal::Unravel(v, d1, d2, i, j, l);
      r = GradientAdd(r, LocalKernelValue(axes[i], axes[d0 + j], axes[d0 + d1 + l], q.kmn, q.top), q);
    } else if (q.mode == 2) {
      r = RnAdd(r, dense[v]);
    }
    if (q.clip) r = ClampF(r, lo, hi);
    s[v] = r;
  }
}

__global__ void LocalGammaKernel(float* __restrict__ x, const LocalSlice* __restrict__ p, const char* block,
                                 const SliceMoments* __restrict__ stats, int d0, int d1, int d2) {
  const int slice = blockIdx.y;
  const LocalSlice q = p[slice];
  if (q.mode == 0) return;
  const int64_t plane = static_cast<int64_t>(d0) * d1 * d2;
  float* s = x + slice * plane;
  const float* axes = reinterpret_cast<const float*>(block + q.axes_off);
  const float* dense = reinterpret_cast<const float*>(block + q.dense_off);
  const float mn = stats[slice].mn;
  const float r = fmaxf(RnSub(stats[slice].mx, mn), 1e-8f);  // Python max(float32 range, 1e-8)
  DA5_GRID_STRIDE(v, plane) {
    float kv;
    if (q.mode == 1) {
      int i, j, l;
      internal::Unravel(v, d1, d2, i, j, l);
      kv = LocalKernelValue(axes[i], axes[d0 + j], axes[d0 + d1 + l], q.kmn, q.top);
    } else {
      kv = dense[v];
    }
    s[v] = LocalGammaBlend(s[v], kv, mn, r, q.gamma);
  }
}
#undef DA5_GRID_STRIDE
}  // namespace

cudaError_t LaunchRicianField(float* x, const RicianSample* p, const SliceMoments* in, int batch, int64_t sample_len,
                              cudaStream_t stream) {
  if (batch <= 0) return cudaSuccess;
  RicianFieldKernel<<<dim3(internal::SliceBlocks(sample_len), batch), kThreads, 0, stream>>>(x, p, in, sample_len);
  return cudaGetLastError();
}

cudaError_t LaunchRicianRescale(float* x, const RicianSample* p, const SliceMoments* in, const SliceMoments* r,
                                int batch, int64_t sample_len, cudaStream_t stream) {
  if (batch <= 0) return cudaSuccess;
  RicianRescaleKernel<<<dim3(internal::SliceBlocks(sample_len), batch), kThreads, 0, stream>>>(x, p, in, r, sample_len);
  return cudaGetLastError();
}

cudaError_t LaunchBlankRectangles(float* x, const RectSlice* slices_p, const Rect* rects, int slices,
                                  const int32_t shape[3], cudaStream_t stream) {
  if (slices <= 0) return cudaSuccess;
  BlankRectanglesKernel<<<slices, kRectThreads, 0, stream>>>(x, slices_p, rects, shape[0], shape[1], shape[2]);
  return cudaGetLastError();
}

cudaError_t LaunchGradientAdd(float* x, const LocalSlice* p, const char* block, const SliceMoments* sample_stats,
                              int slices, int channels, const int32_t shape[3], cudaStream_t stream) {
  if (slices <= 0) return cudaSuccess;
  const int64_t plane = int64_t{shape[0]} * shape[1] * shape[2];
  GradientAddKernel<<<dim3(internal::SliceBlocks(plane), slices), kThreads, 0, stream>>>(
      x, p, block, sample_stats, channels, shape[0], shape[1], shape[2]);
  return cudaGetLastError();
}

cudaError_t LaunchLocalGamma(float* x, const LocalSlice* p, const char* block, const SliceMoments* stats, int slices,
                             const int32_t shape[3], cudaStream_t stream) {
  if (slices <= 0) return cudaSuccess;
  const int64_t plane = int64_t{shape[0]} * shape[1] * shape[2];
  LocalGammaKernel<<<dim3(internal::SliceBlocks(plane), slices), kThreads, 0, stream>>>(x, p, block, stats, shape[0],
                                                                                        shape[1], shape[2]);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::da5
