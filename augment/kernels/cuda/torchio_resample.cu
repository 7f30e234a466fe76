// augment/kernels/cuda/torchio_resample.cu — the resampling kernels of torchio_kernels.h. Each thread computes one
// output voxel with sitk_math.h's functions (the CPU transforms' own per-voxel code); grid (blocks per plane,
// planes), each block grid-strides over its plane (chain_common.cuh).
#include "augment/kernels/common/sitk_math.h"
#include "augment/kernels/cuda/chain_common.cuh"
#include "augment/kernels/cuda/torchio_kernels.h"

namespace augmentd::cuda::torchio {
namespace {

using chain::SliceGrid;
using internal::kThreads;

// (i, j, k) of linear index v in shape s (C order).
__device__ __forceinline__ void Unravel(int64_t v, const int32_t* s, int64_t& i, int64_t& j, int64_t& k) {
  if (v <= INT32_MAX) {  // 32-bit divisions (a 64-bit one is a ~70-instruction routine)
    const int v32 = static_cast<int>(v), t = v32 / s[2];
    k = v32 - t * s[2];
    j = t % s[1];
    i = t / s[1];
    return;
  }
  k = v % s[2];
  const int64_t t = v / s[2];
  j = t % s[1];
  i = t / s[1];
}

template <typename T>
__global__ void __launch_bounds__(kThreads) AffineKernel(const AffinePlane* recs, const T* in, T* out, const T* mins) {
  const AffinePlane& p = recs[blockIdx.y];
  if (!p.on) return;
  const int64_t is[3] = {p.in_shape[0], p.in_shape[1], p.in_shape[2]};
  const int64_t n = int64_t{p.out_shape[0]} * p.out_shape[1] * p.out_shape[2];
  const T fill = p.min_index >= 0 ? mins[p.min_index] : static_cast<T>(p.fill);
  const T* src = in + p.in_offset;
  T* dst = out + p.out_offset;
  AUGMENTD_CHAIN_FOR_VOXELS(v, n) {
    int64_t i, j, k;
    Unravel(v, p.out_shape, i, j, k);
    double ci[3];
    sitk_math::LineIndex(p.m, p.b, i, j, k, p.out_shape[0], ci);
    dst[v] = sitk_math::Sample(src, is, ci, p.linear != 0, fill);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) BsplineKernel(const BsplinePlane* recs, const int32_t* starts,
                                                          const double* weights, const float* points, const T* in,
                                                          T* out, const T* mins) {
  const BsplinePlane& p = recs[blockIdx.y];
  if (!p.on) return;
  const int64_t s[3] = {p.shape[0], p.shape[1], p.shape[2]};
  const int64_t nodes[3] = {p.nodes[0], p.nodes[1], p.nodes[2]};
  const int64_t n = s[0] * s[1] * s[2];
  const T fill = p.min_index >= 0 ? mins[p.min_index] : static_cast<T>(p.fill);
  const T* src = in + p.in_offset;
  T* dst = out + p.out_offset;
  const float* cp = points + p.grid;
  AUGMENTD_CHAIN_FOR_VOXELS(v, n) {
    int64_t i, j, k;
    Unravel(v, p.shape, i, j, k);
    const int64_t e0 = p.table[0] + i, e1 = p.table[1] + j, e2 = p.table[2] + k;
    const int64_t st[3] = {starts[e0], starts[e1], starts[e2]};
    double ci[3];
    sitk_math::BsplineIndex(i, j, k, st, weights + 4 * e0, weights + 4 * e1, weights + 4 * e2, cp, nodes,
                            p.is_2d != 0, ci);
    dst[v] = sitk_math::Sample(src, s, ci, p.linear != 0, fill);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) NearestBoxKernel(const NearestBoxPlane* recs, const T* in, T* out) {
  const NearestBoxPlane& p = recs[blockIdx.y];
  if (!p.on) return;
  const int64_t n = int64_t{p.shape[0]} * p.shape[1] * p.shape[2];
  const T* src = in + p.offset;
  T* dst = out + p.offset;
  AUGMENTD_CHAIN_FOR_VOXELS(v, n) {
    int64_t q[3];
    Unravel(v, p.shape, q[0], q[1], q[2]);
    bool inside = true;
    int64_t from[3];
    for (int a = 0; a < 3; ++a) {
      inside = inside && q[a] >= p.box_start[a] && q[a] < p.box_start[a] + p.box_keep[a];
      // up: small index of q; down: the full-size source of that small index (the CPU's two passes, composed)
      const int64_t small = sitk_math::TorchNearestIndex(q[a], p.down[a], p.shape[a]);
      from[a] = sitk_math::TorchNearestIndex(small, p.shape[a], p.down[a]);
    }
    dst[v] = inside ? src[(from[0] * p.shape[1] + from[1]) * p.shape[2] + from[2]] : T(0);
  }
}

__global__ void __launch_bounds__(kThreads) LinearKernel(const LinearPlane* recs, const LinearTap* taps,
                                                         const float* in, float* out) {
  const LinearPlane& p = recs[blockIdx.y];
  if (!p.on) return;
  const int64_t n = int64_t{p.out_shape[0]} * p.out_shape[1] * p.out_shape[2];
  const float* src = in + p.in_offset;
  float* dst = out + p.out_offset;
  const int64_t s1 = p.in_shape[1], s2 = p.in_shape[2];
  AUGMENTD_CHAIN_FOR_VOXELS(v, n) {
    int64_t a, b, c;
    Unravel(v, p.out_shape, a, b, c);
    const LinearTap ta = taps[p.taps[0] + a], tb = taps[p.taps[1] + b], tc = taps[p.taps[2] + c];
    const float* r00 = src + (ta.i0 * s1 + tb.i0) * s2;
    const float* r01 = src + (ta.i0 * s1 + tb.i1) * s2;
    const float* r10 = src + (ta.i1 * s1 + tb.i0) * s2;
    const float* r11 = src + (ta.i1 * s1 + tb.i1) * s2;
    const float vals[8] = {r00[tc.i0], r00[tc.i1], r01[tc.i0], r01[tc.i1],
                           r10[tc.i0], r10[tc.i1], r11[tc.i0], r11[tc.i1]};
    const float wa[2] = {ta.w0, ta.w1}, wb[2] = {tb.w0, tb.w1}, wc[2] = {tc.w0, tc.w1};
    dst[v] = sitk_math::NestedTrilinear(vals, wa, wb, wc);
  }
}

template <typename T>
__global__ void __launch_bounds__(kThreads) PlaneMinKernel(int64_t voxels, const T* x, T* mins) {
  __shared__ T part[kThreads];
  const T* p = x + blockIdx.x * voxels;
  T m = p[0];
  for (int64_t v = threadIdx.x; v < voxels; v += blockDim.x) m = p[v] < m ? p[v] : m;
  part[threadIdx.x] = m;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w /= 2) {
    if (static_cast<int>(threadIdx.x) < w && part[threadIdx.x + w] < part[threadIdx.x])
      part[threadIdx.x] = part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) mins[blockIdx.x] = part[0];
}

template <typename T>
cudaError_t PlaneMin(int32_t planes, int64_t voxels, const T* x, T* mins, cudaStream_t stream) {
  if (planes <= 0 || voxels <= 0) return cudaSuccess;
  PlaneMinKernel<T><<<planes, kThreads, 0, stream>>>(voxels, x, mins);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchAffineResample(int32_t planes, int64_t max_out, const AffinePlane* p, const float* in, float* out,
                                 const float* mins, cudaStream_t stream) {
  if (planes <= 0 || max_out <= 0) return cudaSuccess;
  AffineKernel<float><<<SliceGrid(max_out, planes), kThreads, 0, stream>>>(p, in, out, mins);
  return cudaGetLastError();
}
cudaError_t LaunchAffineResample(int32_t planes, int64_t max_out, const AffinePlane* p, const int16_t* in,
                                 int16_t* out, const int16_t* mins, cudaStream_t stream) {
  if (planes <= 0 || max_out <= 0) return cudaSuccess;
  AffineKernel<int16_t><<<SliceGrid(max_out, planes), kThreads, 0, stream>>>(p, in, out, mins);
  return cudaGetLastError();
}
cudaError_t LaunchBsplineResample(int32_t planes, int64_t max_out, const BsplinePlane* p, const int32_t* starts,
                                  const double* weights, const float* points, const float* in, float* out,
                                  const float* mins, cudaStream_t stream) {
  if (planes <= 0 || max_out <= 0) return cudaSuccess;
  BsplineKernel<float><<<SliceGrid(max_out, planes), kThreads, 0, stream>>>(p, starts, weights, points, in, out,
                                                                            mins);
  return cudaGetLastError();
}
cudaError_t LaunchBsplineResample(int32_t planes, int64_t max_out, const BsplinePlane* p, const int32_t* starts,
                                  const double* weights, const float* points, const int16_t* in, int16_t* out,
                                  const int16_t* mins, cudaStream_t stream) {
  if (planes <= 0 || max_out <= 0) return cudaSuccess;
  BsplineKernel<int16_t><<<SliceGrid(max_out, planes), kThreads, 0, stream>>>(p, starts, weights, points, in, out,
                                                                              mins);
  return cudaGetLastError();
}
cudaError_t LaunchNearestBox(int32_t planes, int64_t max_out, const NearestBoxPlane* p, const float* in, float* out,
                             cudaStream_t stream) {
  if (planes <= 0 || max_out <= 0) return cudaSuccess;
  NearestBoxKernel<float><<<SliceGrid(max_out, planes), kThreads, 0, stream>>>(p, in, out);
  return cudaGetLastError();
}
cudaError_t LaunchNearestBox(int32_t planes, int64_t max_out, const NearestBoxPlane* p, const int16_t* in,
                             int16_t* out, cudaStream_t stream) {
  if (planes <= 0 || max_out <= 0) return cudaSuccess;
  NearestBoxKernel<int16_t><<<SliceGrid(max_out, planes), kThreads, 0, stream>>>(p, in, out);
  return cudaGetLastError();
}
cudaError_t LaunchLinearResize(int32_t planes, int64_t max_out, const LinearPlane* p, const LinearTap* taps,
                               const float* in, float* out, cudaStream_t stream) {
  if (planes <= 0 || max_out <= 0) return cudaSuccess;
  LinearKernel<<<SliceGrid(max_out, planes), kThreads, 0, stream>>>(p, taps, in, out);
  return cudaGetLastError();
}
cudaError_t LaunchPlaneMin(int32_t planes, int64_t voxels, const float* x, float* mins, cudaStream_t stream) {
  return PlaneMin(planes, voxels, x, mins, stream);
}
cudaError_t LaunchPlaneMin(int32_t planes, int64_t voxels, const int16_t* x, int16_t* mins, cudaStream_t stream) {
  return PlaneMin(planes, voxels, x, mins, stream);
}

}  // namespace augmentd::cuda::torchio
