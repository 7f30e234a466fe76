// Region-mode post-step (region_mode.h): per-slice min / max of the step's input and output and a "changed" flag
// (atomics on order-preserving integer keys: exact), then one pointwise blend over the batch.
#include "augment/kernels/common/region_mode_math.h"
#include "augment/kernels/cuda/region_mode.h"

namespace augmentd::cuda::region {
namespace {

constexpr int kThreads = 256;

// Keys whose signed order is the floats' order.
__device__ __forceinline__ int32_t Key(float f) {
  const int32_t i = __float_as_int(f);
  return i >= 0 ? i : i ^ 0x7fffffff;
}
__device__ __forceinline__ float Unkey(int32_t k) { return __int_as_float(k >= 0 ? k : k ^ 0x7fffffff); }

struct SliceKeys {
  int32_t x_lo, x_hi, t_lo, t_hi, changed, pad[3];
};

__global__ void InitKeys(SliceKeys* k, int slices) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s < slices) k[s] = SliceKeys{INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0, {0, 0, 0}};
}

// grid (blocks per slice, slices)
__global__ void SliceMinMax(const float* image, const float* orig, int channels, int64_t n, const RegionRec* rec,
                            SliceKeys* keys) {
  const int s = blockIdx.y;
  if (rec[s / channels].mode == region_mode::kAll) return;
  const float* t = image + int64_t{s} * n;
  const float* x = orig + int64_t{s} * n;
  int32_t xl = INT32_MAX, xh = INT32_MIN, tl = INT32_MAX, th = INT32_MIN, ch = 0;
  for (int64_t v = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; v < n; v += int64_t{gridDim.x} * blockDim.x) {
    const float a = x[v], b = t[v];
    const int32_t ka = Key(a), kb = Key(b);
    xl = min(xl, ka);
    xh = max(xh, ka);
    tl = min(tl, kb);
    th = max(th, kb);
    ch |= __float_as_int(a) != __float_as_int(b) ? 1 : 0;
  }
  for (int o = 16; o > 0; o >>= 1) {
    xl = min(xl, __shfl_xor_sync(0xffffffffu, xl, o));
    xh = max(xh, __shfl_xor_sync(0xffffffffu, xh, o));
    tl = min(tl, __shfl_xor_sync(0xffffffffu, tl, o));
    th = max(th, __shfl_xor_sync(0xffffffffu, th, o));
    ch |= __shfl_xor_sync(0xffffffffu, ch, o);
  }
  if ((threadIdx.x & 31) == 0) {
    atomicMin(&keys[s].x_lo, xl);
    atomicMax(&keys[s].x_hi, xh);
    atomicMin(&keys[s].t_lo, tl);
    atomicMax(&keys[s].t_hi, th);
    if (ch) atomicOr(&keys[s].changed, 1);
  }
}

__global__ void Blend(float* image, const float* orig, const int16_t* seg, int channels, int seg_channels, int64_t n,
                      int64_t total, const RegionRec* rec, const SliceKeys* keys) {
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < total; i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t s = i / n, v = i - s * n;
    const int64_t b = s / channels;
    const RegionRec r = rec[b];
    if (r.mode == region_mode::kAll || keys[s].changed == 0) continue;
    const SliceKeys k = keys[s];
    const region_mode::MinMax ts{Unkey(k.t_lo), Unkey(k.t_hi)}, xs{Unkey(k.x_lo), Unkey(k.x_hi)};
    const float m = region_mode::RegionWeight(seg + b * seg_channels * n, v, n, seg_channels, r.mode, r.keep);
    image[i] = region_mode::RegionBlend(m, region_mode::RegionRescale(image[i], ts, xs), orig[i]);
  }
}

}  // namespace

size_t RegionScratchBytes(int slices) { return static_cast<size_t>(slices) * sizeof(SliceKeys); }

cudaError_t LaunchRegionBlend(float* image, const float* orig, const int16_t* seg, int batch, int channels,
                              int seg_channels, int64_t voxels, const RegionRec* rec, void* scratch,
                              cudaStream_t stream) {
  const int slices = batch * channels;
  if (slices == 0 || voxels == 0 || seg == nullptr || seg_channels == 0) return cudaSuccess;
  auto* keys = static_cast<SliceKeys*>(scratch);
  InitKeys<<<(slices + kThreads - 1) / kThreads, kThreads, 0, stream>>>(keys, slices);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  const int64_t per_slice = (voxels + kThreads - 1) / kThreads;
  const int bx = static_cast<int>(per_slice < 256 ? per_slice : 256);
  SliceMinMax<<<dim3(bx, slices), kThreads, 0, stream>>>(image, orig, channels, voxels, rec, keys);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  const int64_t total = int64_t{slices} * voxels;
  const int64_t blocks = (total + kThreads - 1) / kThreads;
  Blend<<<static_cast<int>(blocks < 8192 ? blocks : 8192), kThreads, 0, stream>>>(image, orig, seg, channels,
                                                                                  seg_channels, voxels, total, rec,
                                                                                  keys);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::region
