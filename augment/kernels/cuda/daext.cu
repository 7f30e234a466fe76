// augment/kernels/cuda/daext.cu — the DAExt AugLab kinds on the chain scratch (daext_kernels.h). Pointwise passes
// and 3×3×3 stencils are per-slice grid-stride loops (grid.y = slice) over the shared math of daext_math.h /
// auglab_math.h; clamp's quantiles come from a CUB radix sort of the slice (exact order statistics, so the
// thresholds equal the CPU's nth_element ones).
#include <cub/device/device_radix_sort.cuh>

#include "augment/kernels/common/auglab_math.h"
#include "augment/kernels/common/daext_math.h"
#include "augment/kernels/cuda/da5_common.cuh"
#include "augment/kernels/cuda/daext_kernels.h"

namespace augmentd::cuda::daext {
namespace {
using da5::SliceMoments;
using da5::internal::kThreads;
using da5::internal::SliceBlocks;

#define DAEXT_FOR_VOXELS(i, n)                                                           \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

dim3 SliceGrid(int64_t n, int slices) { return dim3(SliceBlocks(n), static_cast<unsigned>(slices)); }

__global__ void ClampThresholdKernel(const float* __restrict__ sorted, int64_t n, int slices,
                                     const DaextSlice* __restrict__ p, float* __restrict__ thr) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= slices || !p[s].on) return;
  const float* v = sorted + static_cast<int64_t>(s) * n;
  for (int e = 0; e < 2; ++e) {
    int64_t lo = 0, hi = 0;
    float w = 0;
    QuantileRank(e == 0 ? p[s].a : p[s].b, n, lo, hi, w);
    thr[2 * s + e] = Lerp(v[lo], v[hi], w);
  }
}

__global__ void __launch_bounds__(kThreads)
    ClampKernel(float* __restrict__ x, int64_t n, const DaextSlice* __restrict__ p, const float* __restrict__ thr) {
  const int s = blockIdx.y;
  if (!p[s].on) return;
  const float lo = thr[2 * s], hi = thr[2 * s + 1];
  float* v = x + static_cast<int64_t>(s) * n;
  DAEXT_FOR_VOXELS(i, n) v[i] = ClampTo(v[i], lo, hi);
}

__global__ void __launch_bounds__(kThreads)
    ZscoreKernel(float* __restrict__ x, int64_t n, const DaextSlice* __restrict__ p,
                 const SliceMoments* __restrict__ st) {
  const int s = blockIdx.y;
  if (!p[s].on) return;
  // SliceMoments carries the unbiased std; the population one is std·sqrt((n − 1)/n) (both in double).
  const double var_unbiased = st[s].std * st[s].std;
  const double var = p[s].mode == 1 || n < 2 ? var_unbiased : var_unbiased * static_cast<double>(n - 1) / n;
  const float m = static_cast<float>(st[s].mean);
  const float sd = fmaxf(static_cast<float>(sqrt(var)), 1e-8f);
  float* v = x + static_cast<int64_t>(s) * n;
  DAEXT_FOR_VOXELS(i, n) v[i] = RnDiv(RnSub(v[i], m), sd);
}

__global__ void __launch_bounds__(kThreads)
    BiasFieldKernel(float* __restrict__ x, int d0, int d1, int d2, const DaextSlice* __restrict__ p,
                    const float* __restrict__ coeffs, int order, bool invert) {
  const int s = blockIdx.y;
  const DaextSlice q = p[s];
  if (!q.on) return;
  const int64_t n = static_cast<int64_t>(d0) * d1 * d2;
  float* v = x + static_cast<int64_t>(s) * n;
  const float* c = coeffs + q.off;
  DAEXT_FOR_VOXELS(i, n) {
    int a, b, e;
    da5::internal::Unravel(i, d1, d2, a, b, e);
    const float xs = LinspaceAt(-1.0f, 1.0f, d2, e), ys = LinspaceAt(-1.0f, 1.0f, d1, b);
    const float zs = q.mode == 3 ? LinspaceAt(-1.0f, 1.0f, d0, a) : 0.0f;
    v[i] = RnMul(v[i], BiasField(BiasExponent(c, order, q.mode == 3, xs, ys, zs), invert));
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    CropZeroKernel(T* __restrict__ x, int d0, int d1, int d2, int channels, const CropBox* __restrict__ boxes) {
  const int s = blockIdx.y;
  const CropBox box = boxes[s / channels];
  if (!box.on) return;
  const int64_t n = static_cast<int64_t>(d0) * d1 * d2;
  T* v = x + static_cast<int64_t>(s) * n;
  DAEXT_FOR_VOXELS(i, n) {
    int a, b, e;
    da5::internal::Unravel(i, d1, d2, a, b, e);
    const bool in = a >= box.lo[0] && a < box.hi[0] && b >= box.lo[1] && b < box.hi[1] && e >= box.lo[2] &&
                    e < box.hi[2];
    if (!in) v[i] = T(0);
  }
}

__global__ void __launch_bounds__(kThreads)
    EdgeKernel(const float* __restrict__ src, float* __restrict__ dst, int d0, int d1, int d2,
               const DaextSlice* __restrict__ p, const float* __restrict__ weights, bool absolute) {
  const int s = blockIdx.y;
  const DaextSlice q = p[s];
  if (!q.on) return;
  const int64_t n = static_cast<int64_t>(d0) * d1 * d2;
  const int32_t shape[3] = {d0, d1, d2};
  const float* in = src + static_cast<int64_t>(s) * n;
  float* out = dst + static_cast<int64_t>(s) * n;
  const float* w = weights + q.off;
  DAEXT_FOR_VOXELS(v, n) {
    int i, j, l;
    da5::internal::Unravel(v, d1, d2, i, j, l);
    float y = 0.0f;
    for (int k = 0; k < q.mode; ++k) {
      const float r = auglab::ConvAt(in, shape, i, j, l, w + 27 * k, 3);
      y = q.mode == 1 ? r : EdgeAccumulate(y, r, absolute);
    }
    out[v] = y;
  }
}

__global__ void __launch_bounds__(kThreads)
    UnsharpKernel(const float* __restrict__ src, float* __restrict__ dst, int d0, int d1, int d2,
                  const DaextSlice* __restrict__ p, const float* __restrict__ weights, float amount) {
  const int s = blockIdx.y;
  const DaextSlice q = p[s];
  if (!q.on) return;
  const int64_t n = static_cast<int64_t>(d0) * d1 * d2;
  const int32_t shape[3] = {d0, d1, d2};
  const float* in = src + static_cast<int64_t>(s) * n;
  float* out = dst + static_cast<int64_t>(s) * n;
  const float* w = weights + q.off;
  DAEXT_FOR_VOXELS(v, n) {
    int i, j, l;
    da5::internal::Unravel(v, d1, d2, i, j, l);
    out[v] = Unsharp(in[v], auglab::ConvAt(in, shape, i, j, l, w, 3), amount);
  }
}

__global__ void __launch_bounds__(kThreads)
    RetainKernel(float* __restrict__ x, int64_t n, const DaextSlice* __restrict__ p,
                 const SliceMoments* __restrict__ before, const SliceMoments* __restrict__ after) {
  const int s = blockIdx.y;
  if (!p[s].on || !p[s].retain) return;
  const auglab::RetainConsts c = auglab::MakeRetain(before[s].mean, before[s].std, after[s].mean, after[s].std);
  float* v = x + static_cast<int64_t>(s) * n;
  DAEXT_FOR_VOXELS(i, n) v[i] = auglab::Retain(v[i], c);
}

__global__ void __launch_bounds__(kThreads)
    NonFiniteKernel(const float* __restrict__ x, int64_t n, const DaextSlice* __restrict__ p, int* __restrict__ flags) {
  const int s = blockIdx.y;
  if (!p[s].on) return;
  const float* v = x + static_cast<int64_t>(s) * n;
  bool bad = false;
  DAEXT_FOR_VOXELS(i, n) bad |= !isfinite(v[i]);
  if (__syncthreads_or(bad) && threadIdx.x == 0) flags[s] = 1;  // every writer stores 1: no race on the value
}

__global__ void __launch_bounds__(kThreads)
    RestoreKernel(float* __restrict__ x, const float* __restrict__ orig, int64_t n, const DaextSlice* __restrict__ p,
                  const int* __restrict__ flags) {
  const int s = blockIdx.y;
  if (!p[s].on || flags[s] == 0) return;
  const int64_t off = static_cast<int64_t>(s) * n;
  DAEXT_FOR_VOXELS(i, n) x[off + i] = orig[off + i];
}

}  // namespace

size_t SortTempBytes(int64_t n) {
  size_t bytes = 0;
  cub::DeviceRadixSort::SortKeys(nullptr, bytes, static_cast<const float*>(nullptr), static_cast<float*>(nullptr),
                                 n);
  return bytes;
}

cudaError_t SortSlice(const float* src, float* dst, int64_t n, void* temp, size_t temp_bytes, cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  return cub::DeviceRadixSort::SortKeys(temp, temp_bytes, src, dst, n, 0, static_cast<int>(sizeof(float) * 8),
                                        stream);
}

cudaError_t LaunchClamp(float* x, const float* sorted, int64_t n, int slices, const DaextSlice* p, float* thresholds,
                        cudaStream_t stream) {
  if (slices <= 0 || n <= 0) return cudaSuccess;
  ClampThresholdKernel<<<(slices + 31) / 32, 32, 0, stream>>>(sorted, n, slices, p, thresholds);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  ClampKernel<<<SliceGrid(n, slices), kThreads, 0, stream>>>(x, n, p, thresholds);
  return cudaGetLastError();
}

cudaError_t LaunchZscore(float* x, int64_t n, int slices, const DaextSlice* p, const SliceMoments* stats,
                         cudaStream_t stream) {
  if (slices <= 0 || n <= 0) return cudaSuccess;
  ZscoreKernel<<<SliceGrid(n, slices), kThreads, 0, stream>>>(x, n, p, stats);
  return cudaGetLastError();
}

cudaError_t LaunchAuglabBiasField(float* x, const int32_t shape[3], int slices, const DaextSlice* p,
                                  const float* coeffs, int order, bool invert, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(shape[0]) * shape[1] * shape[2];
  if (slices <= 0 || n <= 0) return cudaSuccess;
  BiasFieldKernel<<<SliceGrid(n, slices), kThreads, 0, stream>>>(x, shape[0], shape[1], shape[2], p, coeffs, order,
                                                                 invert);
  return cudaGetLastError();
}

cudaError_t LaunchCropZeroImage(float* x, const int32_t shape[3], int batch, int channels, const CropBox* boxes,
                                cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(shape[0]) * shape[1] * shape[2];
  if (batch <= 0 || channels <= 0 || n <= 0) return cudaSuccess;
  CropZeroKernel<float><<<SliceGrid(n, batch * channels), kThreads, 0, stream>>>(x, shape[0], shape[1], shape[2],
                                                                                 channels, boxes);
  return cudaGetLastError();
}

cudaError_t LaunchCropZeroSeg(int16_t* seg, const int32_t shape[3], int batch, int channels, const CropBox* boxes,
                              cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(shape[0]) * shape[1] * shape[2];
  if (batch <= 0 || channels <= 0 || n <= 0) return cudaSuccess;
  CropZeroKernel<int16_t><<<SliceGrid(n, batch * channels), kThreads, 0, stream>>>(seg, shape[0], shape[1], shape[2],
                                                                                   channels, boxes);
  return cudaGetLastError();
}

cudaError_t LaunchEdgeConvolution(const float* src, float* dst, const int32_t shape[3], int slices,
                                  const DaextSlice* p, const float* weights, bool absolute, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(shape[0]) * shape[1] * shape[2];
  if (slices <= 0 || n <= 0) return cudaSuccess;
  EdgeKernel<<<SliceGrid(n, slices), kThreads, 0, stream>>>(src, dst, shape[0], shape[1], shape[2], p, weights,
                                                            absolute);
  return cudaGetLastError();
}

cudaError_t LaunchUnsharpMask(const float* src, float* dst, const int32_t shape[3], int slices, const DaextSlice* p,
                              const float* weights, float amount, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(shape[0]) * shape[1] * shape[2];
  if (slices <= 0 || n <= 0) return cudaSuccess;
  UnsharpKernel<<<SliceGrid(n, slices), kThreads, 0, stream>>>(src, dst, shape[0], shape[1], shape[2], p, weights,
                                                               amount);
  return cudaGetLastError();
}

cudaError_t LaunchDaextRetain(float* x, int64_t n, int slices, const DaextSlice* p, const SliceMoments* before,
                              const SliceMoments* after, cudaStream_t stream) {
  if (slices <= 0 || n <= 0) return cudaSuccess;
  RetainKernel<<<SliceGrid(n, slices), kThreads, 0, stream>>>(x, n, p, before, after);
  return cudaGetLastError();
}

cudaError_t LaunchFiniteGuard(float* x, const float* orig, int64_t n, int slices, const DaextSlice* p, int* flags,
                              cudaStream_t stream) {
  if (slices <= 0 || n <= 0) return cudaSuccess;
  if (const cudaError_t e = cudaMemsetAsync(flags, 0, static_cast<size_t>(slices) * sizeof(int), stream);
      e != cudaSuccess)
    return e;
  NonFiniteKernel<<<SliceGrid(n, slices), kThreads, 0, stream>>>(x, n, p, flags);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  RestoreKernel<<<SliceGrid(n, slices), kThreads, 0, stream>>>(x, orig, n, p, flags);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::daext
