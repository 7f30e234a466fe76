// augment/kernels/cuda/elastic.cu — elastic displacement fields of bgv2's SpatialTransform, generated on the device
// for a whole batch (one launch per step): the CPU reference is SpatialTransform::ElasticOffsets /
// kernels::SmoothElasticComponent (augment/transforms/spatial/spatial.cc, augment/kernels/cpu_spatial.cc).
//
// Per sample b and component d (3 fields per sample, (B, 3, P) floats):
//   1. taps      K_{d,a}(m) = (1/n) Σ_k exp(−2π²σ_d²(k/n)²) cos(2π (k·m mod n)/n), n = P_a (double, like the CPU),
//                stored doubled (t[i] = K[i mod n]) so the circular convolution needs no modulo;
//   2. noise     f = NormalAt(MakeStreamKey(seed, sample, transform, 1 + d), voxel) (bit-identical to the CPU);
//   3. smoothing circular convolution along axis 0, then 1, then 2 (the CPU's order), float accumulation: a block
//                holds W lines of one axis in shared memory, a thread computes 8 consecutive outputs of 4 lines
//                (32 FMAs per float4 + tap load) with a sliding register window over the taps;
//   4. stats     per (b, d): max |f| and Σ f over the final field, from per-block partials reduced in a fixed
//                order (deterministic: the same batch gives the same bits).
// The spatial kernel then reads offset = f / (max|f| / magnitude) and subtracts the grid mean A·mean(offset).
// Differences to the CPU (double accumulation) are float rounding: ~1e-6 of the magnitude.
#include <cmath>

#include "augment/kernels/cuda/common.cuh"
#include "augment/kernels/cuda/kernels.h"
#include "augment/rng.h"

namespace augmentd::cuda::internal {
namespace {

constexpr int kR = kElasticOutPerThread;

struct FieldDims {
  int P[3];
  int64_t n;  // prod(P)
};

FieldDims MakeFieldDims(const BatchShape& s) {
  FieldDims f{};
  for (int d = 0; d < 3; ++d) f.P[d] = s.out[d];
  f.n = Prod(s.out);
  return f;
}

// Lines of one axis: `n` positions, `inner` stride, `outer` blocks of n·inner.
struct AxisLines {
  int n;
  int64_t inner;
  int64_t outer;
  int w;          // lines per block (power of two, 1..32)
  int64_t tiles;  // blocks per field
};

AxisLines MakeAxisLines(const FieldDims& f, int axis) {
  AxisLines l{};
  l.n = f.P[axis];
  l.inner = 1;
  for (int d = axis + 1; d < 3; ++d) l.inner *= f.P[d];
  l.outer = f.n / (l.inner * l.n);
  // As many lines as fit 40 KiB of shared memory, while every thread computes at most one 8 × 4 output tile.
  l.w = 64;
  while (l.w > 4 && (static_cast<int64_t>(l.n) * l.w * sizeof(float) > 40 * 1024 || (kThreads / (l.w / 4)) * kR < l.n))
    l.w /= 2;
  l.tiles = l.inner > 1 ? l.outer * ((l.inner + l.w - 1) / l.w) : (l.outer + l.w - 1) / l.w;
  return l;
}

__global__ void __launch_bounds__(kThreads) ElasticTapsKernel(const SampleParams* params, FieldDims f, float* taps) {
  const int t = blockIdx.x;  // (b, component, axis)
  const int b = t / 9, comp = (t / 3) % 3, axis = t % 3;
  const SampleParams& sp = params[b];
  if (!sp.elastic) return;
  const int n = f.P[axis];
  const double sigma = sp.elastic_sigma[comp];
  const double c = -2.0 * M_PI * M_PI * sigma * sigma;
  // Tables: the Gaussian factor of frequency k and cos(2π j / n); K(m) = (1/n) Σ_k E[k] · C[k·m mod n].
  __shared__ double E[kMaxElasticAxis], C[kMaxElasticAxis], K[kMaxElasticAxis];
  for (int k = threadIdx.x; k < n; k += blockDim.x) {
    const double kk = static_cast<double>(k < (n + 1) / 2 ? k : k - n) / static_cast<double>(n);
    E[k] = exp(c * kk * kk);
    C[k] = cos(2.0 * M_PI * static_cast<double>(k) / static_cast<double>(n));
  }
  __syncthreads();
  for (int m = threadIdx.x; m < n; m += blockDim.x) {
    double s = 0;
    int j = 0;  // k·m mod n, stepped
    for (int k = 0; k < n; ++k) {
      s += E[k] * C[j];
      j += m;
      if (j >= n) j -= n;
    }
    K[m] = s / static_cast<double>(n);
  }
  __syncthreads();
  float* out = taps + static_cast<int64_t>(t) * kElasticTapStride;
  for (int i = threadIdx.x; i < 2 * n + kR; i += blockDim.x) out[i] = static_cast<float>(K[i % n]);
}

__global__ void __launch_bounds__(kThreads) ElasticNoiseKernel(const SampleParams* params, FieldDims f, float* dst) {
  const int fi = blockIdx.y, b = fi / 3, comp = fi % 3;
  const SampleParams& sp = params[b];
  if (!sp.elastic) return;
  const StreamKey key = MakeStreamKey(sp.elastic_seed, sp.elastic_sample_index, sp.elastic_transform_index,
                                      1u + static_cast<uint32_t>(comp));
  float* out = dst + static_cast<int64_t>(fi) * f.n;
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; v < f.n;
       v += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    out[v] = NormalAt(key, static_cast<uint64_t>(v));
  }
}

// Fixed-order (deterministic) reduction over a kThreads block: thread 0 gets the block's max and sum.
__device__ void BlockMaxSum(float& mx, double& sum) {
  __shared__ float red_mx[kThreads];
  __shared__ double red_sum[kThreads];
  red_mx[threadIdx.x] = mx;
  red_sum[threadIdx.x] = sum;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      red_mx[threadIdx.x] = fmaxf(red_mx[threadIdx.x], red_mx[threadIdx.x + s]);
      red_sum[threadIdx.x] += red_sum[threadIdx.x + s];
    }
    __syncthreads();
  }
  mx = red_mx[0];
  sum = red_sum[0];
}

struct SmoothArgs {
  FieldDims f;
  AxisLines l;
  int axis;
  const SampleParams* params;
  const float* src;
  float* dst;
  const float* taps;
  float* partial_max;   // last axis only: (B·3, tiles)
  double* partial_sum;  // last axis only
};

// Element (q, c) of tile `tile` of a field: global offset.
__device__ __forceinline__ int64_t LineOffset(const AxisLines& l, int64_t tile, int q, int c, bool* ok) {
  if (l.inner > 1) {
    const int64_t per = (l.inner + l.w - 1) / l.w;
    const int64_t o = tile / per, i = (tile % per) * l.w + c;
    *ok = i < l.inner;
    return (o * l.n + q) * l.inner + i;
  }
  const int64_t line = tile * l.w + c;
  *ok = line < l.outer;
  return line * l.n + q;
}

__global__ void __launch_bounds__(kThreads) ElasticSmoothKernel(const SmoothArgs a) {
  extern __shared__ float4 smem4[];  // float4: 16-byte aligned rows
  float* smem = reinterpret_cast<float*>(smem4);
  const int fi = blockIdx.y, b = fi / 3;
  if (!a.params[b].elastic) return;
  const AxisLines& l = a.l;
  const int n = l.n, W = l.w;
  float* tile = smem;       // [n][W] lines, then their smoothed values (in place)
  float* tp = smem + n * W;  // [2n + kR] taps
  const int64_t base = static_cast<int64_t>(fi) * a.f.n;
  const float* src = a.src + base;
  // Coalesced load: along the lines' inner index (inner > 1) or along the line itself (inner == 1).
  for (int e = threadIdx.x; e < n * W; e += blockDim.x) {
    const int q = l.inner > 1 ? e / W : e % n;
    const int c = l.inner > 1 ? e % W : e / n;
    bool ok;
    const int64_t off = LineOffset(l, blockIdx.x, q, c, &ok);
    tile[q * W + c] = ok ? __ldg(src + off) : 0.f;
  }
  const float* tg = a.taps + (static_cast<int64_t>(fi) * 3 + a.axis) * kElasticTapStride;
  for (int i = threadIdx.x; i < 2 * n + kR; i += blockDim.x) tp[i] = __ldg(tg + i);
  __syncthreads();
  // Register tile: 8 consecutive outputs (m0..m0+7) of 4 adjacent lines; per tap one float4 and one tap load feed
  // 32 FMAs. The taps slide through a register window: K[(m0 + r − q) mod n] = tp[m0 + r − q + n].
  const int cgs = W / 4;
  const int cg = threadIdx.x % cgs, m0 = (threadIdx.x / cgs) * kR;
  const bool active = m0 < n;  // MakeAxisLines: (threads / cgs) · kR >= n, one tile per thread at most
  float acc[kR][4];
#pragma unroll
  for (int r = 0; r < kR; ++r) acc[r][0] = acc[r][1] = acc[r][2] = acc[r][3] = 0.f;
  if (active) {
    float w[kR];
#pragma unroll
    for (int r = 0; r < kR; ++r) w[r] = tp[m0 + r + n];
#pragma unroll 2
    for (int q = 0; q < n; ++q) {
      const float4 x = *reinterpret_cast<const float4*>(tile + q * W + 4 * cg);
#pragma unroll
      for (int r = 0; r < kR; ++r) {
        acc[r][0] = fmaf(w[r], x.x, acc[r][0]);
        acc[r][1] = fmaf(w[r], x.y, acc[r][1]);
        acc[r][2] = fmaf(w[r], x.z, acc[r][2]);
        acc[r][3] = fmaf(w[r], x.w, acc[r][3]);
      }
#pragma unroll
      for (int r = kR - 1; r > 0; --r) w[r] = w[r - 1];
      w[0] = tp[m0 - q - 1 + n];
    }
  }
  __syncthreads();  // every thread has read the lines: overwrite them with the results
  if (active) {
#pragma unroll
    for (int r = 0; r < kR; ++r) {
      if (m0 + r < n)
        *reinterpret_cast<float4*>(tile + (m0 + r) * W + 4 * cg) =
            make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
    }
  }
  __syncthreads();
  const float* res = tile;
  float* dst = a.dst + base;
  float mx = 0.f;
  double sum = 0.0;
  for (int e = threadIdx.x; e < n * W; e += blockDim.x) {
    const int q = l.inner > 1 ? e / W : e % n;
    const int cc = l.inner > 1 ? e % W : e / n;
    bool ok;
    const int64_t off = LineOffset(l, blockIdx.x, q, cc, &ok);
    if (!ok) continue;
    const float v = res[q * W + cc];
    dst[off] = v;
    if (a.partial_max != nullptr) {
      mx = fmaxf(mx, fabsf(v));
      sum += static_cast<double>(v);
    }
  }
  if (a.partial_max == nullptr) return;
  BlockMaxSum(mx, sum);
  if (threadIdx.x == 0) {
    a.partial_max[static_cast<int64_t>(fi) * l.tiles + blockIdx.x] = mx;
    a.partial_sum[static_cast<int64_t>(fi) * l.tiles + blockIdx.x] = sum;
  }
}

__global__ void __launch_bounds__(kThreads) ElasticStatsKernel(const SampleParams* params, int64_t tiles,
                                                               const float* partial_max, const double* partial_sum,
                                                               ElasticStat* estat) {
  const int fi = blockIdx.x;
  if (!params[fi / 3].elastic) return;
  float mx = 0.f;
  double sum = 0.0;
  for (int64_t i = threadIdx.x; i < tiles; i += blockDim.x) {
    mx = fmaxf(mx, partial_max[fi * tiles + i]);
    sum += partial_sum[fi * tiles + i];
  }
  BlockMaxSum(mx, sum);
  if (threadIdx.x == 0) estat[fi] = ElasticStat{sum, __float_as_uint(mx), 0u};
}

}  // namespace

int64_t ElasticPartials(const BatchShape& shape) {
  if (!shape.elastic) return 0;
  return static_cast<int64_t>(shape.batch) * 3 * MakeAxisLines(MakeFieldDims(shape), 2).tiles;
}

cudaError_t LaunchElasticField(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws,
                               cudaStream_t stream) {
  const FieldDims f = MakeFieldDims(shape);
  for (int d = 0; d < 3; ++d) {
    if (f.P[d] > kMaxElasticAxis) return cudaErrorInvalidValue;
  }
  const int fields = shape.batch * 3;
  ElasticTapsKernel<<<fields * 3, kThreads, 0, stream>>>(d_params, f, ws.taps);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  const int noise_blocks = static_cast<int>(std::min<int64_t>((f.n + kThreads - 1) / kThreads, 4 * DeviceSmCount()));
  ElasticNoiseKernel<<<dim3(noise_blocks, fields), kThreads, 0, stream>>>(d_params, f, ws.field_tmp);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  // tmp → field (axis 0) → tmp (axis 1) → field (axis 2, + partial stats).
  float* bufs[2] = {ws.field_tmp, ws.field};
  for (int axis = 0; axis < 3; ++axis) {
    SmoothArgs a{};
    a.f = f;
    a.l = MakeAxisLines(f, axis);
    a.axis = axis;
    a.params = d_params;
    a.src = bufs[axis % 2];
    a.dst = bufs[(axis + 1) % 2];
    a.taps = ws.taps;
    if (axis == 2) {
      a.partial_max = ws.elastic_partial_max;
      a.partial_sum = ws.elastic_partial_sum;
    }
    const size_t smem = (static_cast<size_t>(a.l.n) * a.l.w + 2 * a.l.n + kR) * sizeof(float);
    if (a.l.tiles > 0x7fffffff) return cudaErrorInvalidValue;
    ElasticSmoothKernel<<<dim3(static_cast<unsigned>(a.l.tiles), fields), kThreads, smem, stream>>>(a);
    AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  }
  const int64_t tiles = MakeAxisLines(f, 2).tiles;
  ElasticStatsKernel<<<fields, kThreads, 0, stream>>>(d_params, tiles, ws.elastic_partial_max,
                                                      ws.elastic_partial_sum, ws.estat);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  return cudaSuccess;
}

}  // namespace augmentd::cuda::internal
