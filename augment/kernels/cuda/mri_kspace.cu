// MRI artefact kernels (mri_kernels.h): bias field, spectrum preparation / read-back, ghost planes, spikes and the
// motion composite. Per-slice grids: blockIdx.y = slice, blocks along x grid-stride over the slice's voxels.
#include <algorithm>

#include "augment/kernels/cuda/mri_kernels.h"

namespace augmentd::cuda::mri {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxOrder = 10;

dim3 Grid(int64_t voxels, int slices) {
  const int64_t bx = std::clamp<int64_t>((voxels + 4 * kThreads - 1) / (4 * kThreads), 1, 1024);
  return dim3(static_cast<unsigned>(bx), static_cast<unsigned>(slices));
}

#define MRI_FOR_VOXELS(v, n) \
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < (n); v += int64_t{gridDim.x} * blockDim.x)

__device__ __forceinline__ void Unravel(int64_t v, int d1, int d2, int& i, int& j, int& l) {
  const int64_t row = v / d2;
  l = static_cast<int>(v - row * d2);
  i = static_cast<int>(row / d1);
  j = static_cast<int>(row - static_cast<int64_t>(i) * d1);
}

// TorchIO's normalised coordinate (mri_bias_field.cc AxisCoordinates).
__device__ __forceinline__ double AxisCoord(int i, int n) {
  const double max = (static_cast<double>(n) - 1.0) / 2.0;
  const double v = __dadd_rn(__dadd_rn(-static_cast<double>(n) / 2.0, static_cast<double>(i)), 0.5);
  return max > 0 ? v / max : v;
}

__global__ void BiasFieldKernel(float* x, const BiasSample* samples, const double* coef, int channels, int d0, int d1,
                                int d2) {
  const int s = blockIdx.y;
  const BiasSample p = samples[s / channels];
  if (p.order < 0) return;
  const int64_t n = int64_t{d0} * d1 * d2;
  float* xs = x + s * n;
  MRI_FOR_VOXELS(v, n) {
    int i, j, l;
    Unravel(v, d1, d2, i, j, l);
    double px[kMaxOrder + 1], py[kMaxOrder + 1], pz[kMaxOrder + 1];
    const double cx = AxisCoord(i, d0), cy = AxisCoord(j, d1), cz = AxisCoord(l, d2);
    px[0] = py[0] = pz[0] = 1.0;
    for (int e = 1; e <= p.order; ++e) {
      px[e] = __dmul_rn(px[e - 1], cx);
      py[e] = __dmul_rn(py[e - 1], cy);
      pz[e] = __dmul_rn(pz[e - 1], cz);
    }
    double f = 0;
    int t = p.first;
    for (int a = 0; a <= p.order; ++a)
      for (int b = 0; b <= p.order - a; ++b)
        for (int c = 0; c <= p.order - a - b; ++c, ++t)
          f = __dadd_rn(f, __dmul_rn(__dmul_rn(__dmul_rn(coef[t], px[a]), py[b]), pz[c]));
    xs[v] = __fmul_rn(xs[v], static_cast<float>(exp(f)));
  }
}

__global__ void ToComplexKernel(const float* x, cuFloatComplex* spec, int64_t n) {
  const int64_t base = int64_t{blockIdx.y} * n;
  MRI_FOR_VOXELS(v, n) spec[base + v] = make_cuFloatComplex(x[base + v], 0.f);
}

__global__ void ToRealKernel(const cuFloatComplex* spec, float* x, const int32_t* active, int channels, int64_t n,
                             float scale) {
  if (active[blockIdx.y / channels] == 0) return;
  const int64_t base = int64_t{blockIdx.y} * n;
  MRI_FOR_VOXELS(v, n) x[base + v] = __fmul_rn(cuCrealf(spec[base + v]), scale);
}

__global__ void GhostKernel(cuFloatComplex* spec, const GhostSample* samples, const float* factors, int channels, int d0,
                            int d1, int d2) {
  const GhostSample p = samples[blockIdx.y / channels];
  if (p.axis < 0) return;
  const int64_t n = int64_t{d0} * d1 * d2;
  cuFloatComplex* ss = spec + int64_t{blockIdx.y} * n;
  MRI_FOR_VOXELS(v, n) {
    int i, j, l;
    Unravel(v, d1, d2, i, j, l);
    const float f = factors[p.first + (p.axis == 0 ? i : p.axis == 1 ? j : l)];
    ss[v] = make_cuFloatComplex(cuCrealf(ss[v]) * f, cuCimagf(ss[v]) * f);
  }
}

__global__ void SpikeMaxKernel(const cuFloatComplex* spec, const SpikeSample* samples, int k, int channels, int64_t n,
                               unsigned int* max_bits) {
  if (samples[blockIdx.y / channels].count <= k) return;
  const cuFloatComplex* ss = spec + int64_t{blockIdx.y} * n;
  float m = 0.f;
  MRI_FOR_VOXELS(v, n) m = fmaxf(m, cuCabsf(ss[v]));
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_down_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) atomicMax(max_bits + blockIdx.y, __float_as_uint(m));  // m >= 0: bits order = value order
}

__global__ void SpikeAddKernel(cuFloatComplex* spec, const SpikeSample* samples, const int64_t* indices, int k,
                               int slices, int channels, int64_t n, const unsigned int* max_bits) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= slices) return;
  const SpikeSample p = samples[s / channels];
  if (p.count <= k) return;
  cuFloatComplex& z = spec[int64_t{s} * n + indices[p.first + k]];
  z = make_cuFloatComplex(cuCrealf(z) + __uint_as_float(max_bits[s]) * p.intensity, cuCimagf(z));
}

// Order-preserving key of a float (smaller float ↔ smaller key).
__device__ __forceinline__ unsigned int MinKey(float f) {
  const unsigned int b = __float_as_uint(f);
  return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ float FromMinKey(unsigned int k) {
  return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}

__global__ void SliceMinKernel(const float* x, int64_t n, unsigned int* min_key) {
  const float* xs = x + int64_t{blockIdx.y} * n;
  unsigned int m = 0xffffffffu;
  MRI_FOR_VOXELS(v, n) m = min(m, MinKey(xs[v]));
  for (int o = 16; o > 0; o >>= 1) m = min(m, __shfl_down_sync(0xffffffffu, m, o));
  if ((threadIdx.x & 31) == 0) atomicMin(min_key + blockIdx.y, m);
}

__global__ void MotionImageKernel(const float* x, const MotionSample* samples, const double* affines, int num_transforms,
                                  int t, const unsigned int* min_key, int channels, int d0, int d1, int d2,
                                  cuFloatComplex* out) {
  const int s = blockIdx.y, b = s / channels;
  if (samples[b].active == 0) return;
  const int64_t n = int64_t{d0} * d1 * d2;
  const float* xs = x + s * n;
  cuFloatComplex* os = out + s * n;
  if (t == 0) {
    MRI_FOR_VOXELS(v, n) os[v] = make_cuFloatComplex(xs[v], 0.f);
    return;
  }
  const double* a = affines + (int64_t{b} * num_transforms + (t - 1)) * 12;
  const float fill = FromMinKey(min_key[s]);
  const int dims[3] = {d0, d1, d2};
  MRI_FOR_VOXELS(v, n) {
    int i, j, l;
    Unravel(v, d1, d2, i, j, l);
    double ci[3];
    bool inside = true;
    for (int r = 0; r < 3; ++r) {
      ci[r] = __dadd_rn(__dadd_rn(__dadd_rn(__dmul_rn(a[r * 3], i), __dmul_rn(a[r * 3 + 1], j)), __dmul_rn(a[r * 3 + 2], l)),
                        a[9 + r]);
      inside = inside && ci[r] >= -0.5 && ci[r] < dims[r] - 0.5;
    }
    if (!inside) {
      os[v] = make_cuFloatComplex(fill, 0.f);
      continue;
    }
    int lo[3], hi[3];
    double w[3];
    for (int r = 0; r < 3; ++r) {
      const double f = floor(ci[r]);
      w[r] = ci[r] - f;
      lo[r] = min(max(static_cast<int>(f), 0), dims[r] - 1);
      hi[r] = min(max(static_cast<int>(f) + 1, 0), dims[r] - 1);
    }
    double acc = 0;
    for (int c = 0; c < 8; ++c) {
      const int xi = (c & 4) ? hi[0] : lo[0], yi = (c & 2) ? hi[1] : lo[1], zi = (c & 1) ? hi[2] : lo[2];
      const double wt = __dmul_rn(__dmul_rn((c & 4) ? w[0] : 1 - w[0], (c & 2) ? w[1] : 1 - w[1]),
                                  (c & 1) ? w[2] : 1 - w[2]);
      acc = __dadd_rn(acc, __dmul_rn(wt, static_cast<double>(xs[(int64_t{xi} * d1 + yi) * d2 + zi])));
    }
    os[v] = make_cuFloatComplex(static_cast<float>(acc), 0.f);
  }
}

__global__ void MotionCopyKernel(const cuFloatComplex* spec, const MotionSample* samples,
                                 const MotionSegmentDev* segments, int t, int channels, int d0, int d2, int64_t n,
                                 cuFloatComplex* result) {
  const MotionSample p = samples[blockIdx.y / channels];
  if (p.active == 0) return;
  const MotionSegmentDev seg = segments[p.first_segment + t];
  if (seg.hi <= seg.lo) return;
  const int64_t base = int64_t{blockIdx.y} * n;
  const bool last = p.seg_axis != 0;
  const int m = last ? d2 : d0;  // planes along the segment axis
  const int64_t plane = n / d0;  // voxels per index of axis 0
  MRI_FOR_VOXELS(v, n) {
    const int k = static_cast<int>(last ? v % d2 : v / plane);
    const int sk = (k + m / 2) % m;  // fftshift index of plane k
    if (sk >= seg.lo && sk < seg.hi) result[base + v] = spec[base + v];
  }
}

}  // namespace

cudaError_t LaunchBiasField(float* x, const BiasSample* samples, const double* coefficients, int batch, int channels,
                            const int32_t shape[3], cudaStream_t stream) {
  const int64_t n = int64_t{shape[0]} * shape[1] * shape[2];
  BiasFieldKernel<<<Grid(n, batch * channels), kThreads, 0, stream>>>(x, samples, coefficients, channels, shape[0],
                                                                       shape[1], shape[2]);
  return cudaGetLastError();
}

cudaError_t LaunchToComplex(const float* x, cuFloatComplex* spec, int slices, int64_t voxels, cudaStream_t stream) {
  ToComplexKernel<<<Grid(voxels, slices), kThreads, 0, stream>>>(x, spec, voxels);
  return cudaGetLastError();
}

cudaError_t LaunchToReal(const cuFloatComplex* spec, float* x, const int32_t* active, int slices, int channels,
                         int64_t voxels, float scale, cudaStream_t stream) {
  ToRealKernel<<<Grid(voxels, slices), kThreads, 0, stream>>>(spec, x, active, channels, voxels, scale);
  return cudaGetLastError();
}

cudaError_t LaunchGhostPlanes(cuFloatComplex* spec, const GhostSample* samples, const float* factors, int batch,
                              int channels, const int32_t shape[3], cudaStream_t stream) {
  const int64_t n = int64_t{shape[0]} * shape[1] * shape[2];
  GhostKernel<<<Grid(n, batch * channels), kThreads, 0, stream>>>(spec, samples, factors, channels, shape[0], shape[1],
                                                                   shape[2]);
  return cudaGetLastError();
}

cudaError_t LaunchSpikeMax(const cuFloatComplex* spec, const SpikeSample* samples, int k, int slices, int channels,
                           int64_t voxels, unsigned int* max_bits, cudaStream_t stream) {
  SpikeMaxKernel<<<Grid(voxels, slices), kThreads, 0, stream>>>(spec, samples, k, channels, voxels, max_bits);
  return cudaGetLastError();
}

cudaError_t LaunchSpikeAdd(cuFloatComplex* spec, const SpikeSample* samples, const int64_t* indices, int k,
                           int slices, int channels, int64_t voxels, const unsigned int* max_bits,
                           cudaStream_t stream) {
  SpikeAddKernel<<<(slices + 127) / 128, 128, 0, stream>>>(spec, samples, indices, k, slices, channels, voxels,
                                                           max_bits);
  return cudaGetLastError();
}

cudaError_t LaunchSliceMin(const float* x, int slices, int64_t voxels, unsigned int* min_key, cudaStream_t stream) {
  SliceMinKernel<<<Grid(voxels, slices), kThreads, 0, stream>>>(x, voxels, min_key);
  return cudaGetLastError();
}

cudaError_t LaunchMotionImage(const float* x, const MotionSample* samples, const double* affines, int num_transforms,
                              int t, const unsigned int* min_key, int batch, int channels, const int32_t shape[3],
                              cuFloatComplex* out, cudaStream_t stream) {
  const int64_t n = int64_t{shape[0]} * shape[1] * shape[2];
  MotionImageKernel<<<Grid(n, batch * channels), kThreads, 0, stream>>>(x, samples, affines, num_transforms, t, min_key,
                                                                         channels, shape[0], shape[1], shape[2], out);
  return cudaGetLastError();
}

cudaError_t LaunchMotionCopySegment(const cuFloatComplex* spec, const MotionSample* samples,
                                    const MotionSegmentDev* segments, int t, int batch, int channels,
                                    const int32_t shape[3], cuFloatComplex* result, cudaStream_t stream) {
  const int64_t n = int64_t{shape[0]} * shape[1] * shape[2];
  MotionCopyKernel<<<Grid(n, batch * channels), kThreads, 0, stream>>>(spec, samples, segments, t, channels, shape[0],
                                                                        shape[2], n, result);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::mri
