// augment/kernels/cuda/auglab.cu — AugLab's GPU extras on the chain scratch (auglab_kernels.h). Histograms are
// integer counts (shared-memory atomics, then one global atomic per bin and block: exact, so deterministic); the
// LUT is built by one thread per slice with auglab_math.h's EqualizationLut; every other pass is pointwise or a
// stencil with the shared math.
#include "augment/kernels/cuda/auglab_kernels.h"
#include "augment/kernels/cuda/da5_common.cuh"

namespace augmentd::cuda::auglab {
namespace {
using da5::SliceMoments;
using da5::internal::kThreads;
using da5::internal::SliceBlocks;

#define AUGLAB_FOR_VOXELS(i, n)                                                          \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)

__device__ __forceinline__ bool Equalizes(const AuglabSlice& q, const SliceMoments& m) { return q.on && m.mx > m.mn; }

__global__ void __launch_bounds__(kThreads)
    HistogramKernel(const float* __restrict__ x, int64_t n, const AuglabSlice* __restrict__ p,
                    const SliceMoments* __restrict__ st, uint32_t* __restrict__ counts) {
  const int s = blockIdx.y;
  const SliceMoments m = st[s];
  if (!Equalizes(p[s], m)) return;
  __shared__ uint32_t local[kHistBins];
  for (int b = threadIdx.x; b < kHistBins; b += blockDim.x) local[b] = 0;
  __syncthreads();
  const float* v = x + static_cast<int64_t>(s) * n;
  AUGLAB_FOR_VOXELS(i, n) atomicAdd(&local[HistcBin(v[i], m.mn, m.mx)], 1u);
  __syncthreads();
  uint32_t* out = counts + static_cast<int64_t>(s) * kHistBins;
  for (int b = threadIdx.x; b < kHistBins; b += blockDim.x)
    if (local[b] != 0) atomicAdd(&out[b], local[b]);
}

__global__ void LutKernel(int slices, const AuglabSlice* __restrict__ p, const SliceMoments* __restrict__ st,
                          const uint32_t* __restrict__ counts, float* __restrict__ luts) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= slices || !Equalizes(p[s], st[s])) return;
  EqualizationLut(counts + static_cast<int64_t>(s) * kHistBins, st[s].mn, st[s].mx,
                  luts + static_cast<int64_t>(s) * kHistBins);
}

__global__ void __launch_bounds__(kThreads)
    EqualizeKernel(float* __restrict__ x, int64_t n, const AuglabSlice* __restrict__ p,
                   const SliceMoments* __restrict__ st, const float* __restrict__ luts) {
  const int s = blockIdx.y;
  const SliceMoments m = st[s];
  if (!Equalizes(p[s], m)) return;
  __shared__ float lut[kHistBins];
  for (int b = threadIdx.x; b < kHistBins; b += blockDim.x) lut[b] = luts[static_cast<int64_t>(s) * kHistBins + b];
  __syncthreads();
  const float den = LookupDenominator(m.mn, m.mx);
  float* v = x + static_cast<int64_t>(s) * n;
  AUGLAB_FOR_VOXELS(i, n) v[i] = lut[LookupBin(v[i], m.mn, den)];
}

__global__ void __launch_bounds__(kThreads)
    ConvKernel(const float* __restrict__ src, float* __restrict__ dst, int d0, int d1, int d2,
               const AuglabSlice* __restrict__ p, const float* __restrict__ weights) {
  const int s = blockIdx.y;
  const AuglabSlice q = p[s];
  if (!q.on) return;
  const int64_t n = static_cast<int64_t>(d0) * d1 * d2;
  const int32_t shape[3] = {d0, d1, d2};
  const float* in = src + static_cast<int64_t>(s) * n;
  float* out = dst + static_cast<int64_t>(s) * n;
  const float* w = weights + q.w_off;
  AUGLAB_FOR_VOXELS(v, n) {
    int i, j, l;
    da5::internal::Unravel(v, d1, d2, i, j, l);
    const float y = ConvAt(in, shape, i, j, l, w, q.k);
    out[v] = q.mix ? MixConv(in[v], y, q.alpha) : y;
  }
}

__global__ void __launch_bounds__(kThreads)
    IntensityKernel(float* __restrict__ x, int64_t n, const AuglabSlice* __restrict__ p,
                    const SliceMoments* __restrict__ st) {
  const int s = blockIdx.y;
  const AuglabSlice q = p[s];
  if (!q.on) return;
  const SliceMoments m = st[s];
  float* v = x + static_cast<int64_t>(s) * n;
  if (q.fn < 0) {
    AUGLAB_FOR_VOXELS(i, n) v[i] = Inverse(v[i], m.mx);
  } else {
    AUGLAB_FOR_VOXELS(i, n) v[i] = ApplyIntensityFn(q.fn, NormalizeMinMax(v[i], m.mn, m.mx));
  }
}

__global__ void __launch_bounds__(kThreads)
    RetainKernel(float* __restrict__ x, int64_t n, const AuglabSlice* __restrict__ p,
                 const SliceMoments* __restrict__ before, const SliceMoments* __restrict__ after) {
  const int s = blockIdx.y;
  if (!p[s].on || !p[s].retain) return;
  const RetainConsts c = MakeRetain(before[s].mean, before[s].std, after[s].mean, after[s].std);
  float* v = x + static_cast<int64_t>(s) * n;
  AUGLAB_FOR_VOXELS(i, n) v[i] = Retain(v[i], c);
}

__global__ void __launch_bounds__(kThreads)
    RegionRestoreKernel(float* __restrict__ x, const float* __restrict__ orig, int64_t n, int channels,
                        const AuglabSlice* __restrict__ p, const int16_t* __restrict__ seg, int seg_channels,
                        int seg_channel) {
  const int s = blockIdx.y;
  const AuglabSlice q = p[s];
  if (!q.on || q.region == kRegionAll) return;
  const int64_t off = static_cast<int64_t>(s) * n;
  const int16_t* labels = seg + (static_cast<int64_t>(s / channels) * seg_channels + seg_channel) * n;
  AUGLAB_FOR_VOXELS(i, n) {
    if (!TakesTransformed(labels[i], q.region, q.keep)) x[off + i] = orig[off + i];
  }
}

}  // namespace

cudaError_t LaunchRegionRestore(float* x, const float* orig, int64_t n, int slices, int channels, const AuglabSlice* p,
                                const int16_t* seg, int seg_channels, int seg_channel, cudaStream_t stream) {
  if (slices <= 0 || n <= 0 || channels <= 0) return cudaSuccess;
  RegionRestoreKernel<<<dim3(SliceBlocks(n), static_cast<unsigned>(slices)), kThreads, 0, stream>>>(
      x, orig, n, channels, p, seg, seg_channels, seg_channel);
  return cudaGetLastError();
}

cudaError_t LaunchHistogramEqualize(float* x, int64_t n, int slices, const AuglabSlice* p, const SliceMoments* stats,
                                    uint32_t* counts, float* luts, cudaStream_t stream) {
  if (slices <= 0 || n <= 0) return cudaSuccess;
  if (const cudaError_t e =
          cudaMemsetAsync(counts, 0, static_cast<size_t>(slices) * kHistBins * sizeof(uint32_t), stream);
      e != cudaSuccess)
    return e;
  const dim3 grid(SliceBlocks(n), static_cast<unsigned>(slices));
  HistogramKernel<<<grid, kThreads, 0, stream>>>(x, n, p, stats, counts);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  LutKernel<<<(slices + 31) / 32, 32, 0, stream>>>(slices, p, stats, counts, luts);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  EqualizeKernel<<<grid, kThreads, 0, stream>>>(x, n, p, stats, luts);
  return cudaGetLastError();
}

cudaError_t LaunchRandomConvolution(const float* src, float* dst, const int32_t shape[3], int slices,
                                    const AuglabSlice* p, const float* weights, cudaStream_t stream) {
  const int64_t n = static_cast<int64_t>(shape[0]) * shape[1] * shape[2];
  if (slices <= 0 || n <= 0) return cudaSuccess;
  ConvKernel<<<dim3(SliceBlocks(n), static_cast<unsigned>(slices)), kThreads, 0, stream>>>(src, dst, shape[0], shape[1],
                                                                                           shape[2], p, weights);
  return cudaGetLastError();
}

cudaError_t LaunchIntensityStep(float* x, int64_t n, int slices, const AuglabSlice* p, const SliceMoments* stats,
                                cudaStream_t stream) {
  if (slices <= 0 || n <= 0) return cudaSuccess;
  IntensityKernel<<<dim3(SliceBlocks(n), static_cast<unsigned>(slices)), kThreads, 0, stream>>>(x, n, p, stats);
  return cudaGetLastError();
}

cudaError_t LaunchRetain(float* x, int64_t n, int slices, const AuglabSlice* p, const SliceMoments* before,
                         const SliceMoments* after, cudaStream_t stream) {
  if (slices <= 0 || n <= 0) return cudaSuccess;
  RetainKernel<<<dim3(SliceBlocks(n), static_cast<unsigned>(slices)), kThreads, 0, stream>>>(x, n, p, before, after);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::auglab
