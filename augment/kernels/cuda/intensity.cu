// augment/kernels/cuda/intensity.cu — the intensity chain after the spatial kernel, one launch per
// stage per batch; blocks of slices a stage does not touch exit at once.
//
//  blur      three 1-D passes (axis 0, 1, 2 as bgv2), reflect padding (mirror without repeating the edge),
//            kernel size nearest_odd(6σ + 0.5), taps exp(−t²/2σ²) normalised; stats of the result.
//  low-res   down: nearest-exact (src = floor((i + 0.5)·P/Q)) of brightness/contrast(V1) into `low`;
//            mid: trilinear up (align_corners=False) or brightness/contrast, stats of V3.
//  gamma     per slot: (maybe −x) → ((x − min)/max(r, 1e-7))^γ·r + min → retain mean and unbiased std
//            (stats passes), → (maybe −x). Statistics are deterministic per-slice reductions.
//  final     pointwise rest of the chain, mirroring (index map), mask, dtype conversion.
// The passes are memory-latency bound: each thread issues all its loads (kVoxPerThread voxels, or all
// taps of a blur window) before it uses any of them.
#include "augment/kernels/cuda/common.cuh"
#include "augment/kernels/cuda/kernels.h"

namespace augmentd::cuda::internal {
namespace {

// Host+device: nearest odd integer of 6σ + 0.5 with Python's banker's round (bgv2 _build_kernel).
__host__ __device__ inline int KernelSizeFor(double sigma) {
  const double n = 6.0 * sigma + 0.5;
  const double r = nearbyint(n);  // round half to even in the default rounding mode
  long k = static_cast<long>(r);
  if (k % 2 == 0) k += (n > r) ? 1 : -1;
  return static_cast<int>(k);
}

__device__ __forceinline__ int Reflect(int i, int n) {
  if (i < 0) i = -i;
  if (i >= n) i = 2 * (n - 1) - i;
  return min(max(i, 0), n - 1);  // clamp only matters when n <= radius (PyTorch would reject that)
}

template <int kAxis, int kR>
__device__ __forceinline__ void BlurBody(const Dims& d, const float* w, const float* s, float* o, bool want_stats,
                                         Partial& part, int chunk) {
  const int P[3] = {d.out[0], d.out[1], d.out[2]};
  const int n = P[kAxis];
  const int stride = kAxis == 0 ? P[1] * P[2] : (kAxis == 1 ? P[2] : 1);
  const int out_n = static_cast<int>(d.out_n);
  float wr[2 * kR + 1];
#pragma unroll
  for (int t = 0; t < 2 * kR + 1; ++t) wr[t] = w[t];
  const int base = chunk * kChunk + threadIdx.x;
  IndexWalker walk(base, P);
#pragma unroll 2
  for (int k = 0; k < kVoxPerThread; ++k, walk.Step(P)) {
    const int j = base + k * kThreads;
    if (j >= out_n) break;
    const int pos = kAxis == 0 ? walk.j0 : (kAxis == 1 ? walk.j1 : walk.j2);
    const int row = j - pos * stride;
    float v[2 * kR + 1];
    if (pos >= kR && pos + kR < n) {
#pragma unroll
      for (int t = 0; t < 2 * kR + 1; ++t) v[t] = __ldg(s + j + (t - kR) * stride);
    } else {
#pragma unroll
      for (int t = 0; t < 2 * kR + 1; ++t) v[t] = __ldg(s + row + Reflect(pos + t - kR, n) * stride);
    }
    float acc = 0.f;
#pragma unroll
    for (int t = 0; t < 2 * kR + 1; ++t) acc = __fadd_rn(acc, __fmul_rn(wr[t], v[t]));
    o[j] = acc;
    if (want_stats) Accumulate(part, acc);
  }
}

// BlurBody with the compile-time radius kR == `radius` (tried from 0 up; kMaxBlurRadius for anything larger).
template <int kAxis, int kR = 0>
__device__ __forceinline__ void BlurBodyForRadius(int radius, const Dims& d, const float* w, const float* s, float* o,
                                                  bool want_stats, Partial& part, int chunk) {
  if constexpr (kR >= kMaxBlurRadius) {
    BlurBody<kAxis, kMaxBlurRadius>(d, w, s, o, want_stats, part, chunk);
  } else {
    if (radius == kR) {
      BlurBody<kAxis, kR>(d, w, s, o, want_stats, part, chunk);
    } else {
      BlurBodyForRadius<kAxis, kR + 1>(radius, d, w, s, o, want_stats, part, chunk);
    }
  }
}

template <int kAxis>
__global__ void __launch_bounds__(kThreads)
    BlurAxisKernel(Dims d, const SampleParams* params, const float* src, float* dst, int want_stats, StatsSlot slot) {
  const int slice = blockIdx.y;
  const int b = slice / d.c, c = slice % d.c;
  const ChannelParams& cp = params[b].ch[c];
  if (cp.blur_sigma[0] == 0.f) return;  // slice-uniform
  __shared__ float w[2 * kMaxBlurRadius + 1];
  __shared__ int radius;
  if (threadIdx.x == 0) {
    const double sigma = cp.blur_sigma[kAxis];
    int k = KernelSizeFor(sigma);
    if (k > 2 * kMaxBlurRadius + 1) k = 2 * kMaxBlurRadius + 1;
    if (k < 1) k = 1;
    const int r = (k - 1) / 2;
    double tmp[2 * kMaxBlurRadius + 1];
    double sum = 0.0;
    for (int t = 0; t < k; ++t) {
      const double x = static_cast<double>(t - r) / sigma;
      tmp[t] = exp(-0.5 * x * x);
      sum += tmp[t];
    }
    for (int t = 0; t < k; ++t) w[t] = static_cast<float>(tmp[t] / sum);
    radius = r;
  }
  __syncthreads();
  const float* s = src + static_cast<int64_t>(slice) * d.out_n;
  float* o = dst + static_cast<int64_t>(slice) * d.out_n;
  Partial part = EmptyPartial();
  const bool ws = want_stats != 0;
  for (int chunk = blockIdx.x; chunk < d.nchunks; chunk += gridDim.x) {
    BlurBodyForRadius<kAxis>(radius, d, w, s, o, ws, part, chunk);
  }
  if (ws) {
    const Partial red = BlockReduce(part);
    CommitPartial(slot, slice, blockIdx.x, gridDim.x, red, d.out_n);
  }
}

// Low-res is on for a slice when its drawn shape is valid (0 < Q_d <= P_d).
__device__ __forceinline__ bool LowResOn(const ChannelParams& cp, const Dims& d) {
  return cp.lowres_shape[0] > 0 && cp.lowres_shape[1] > 0 && cp.lowres_shape[2] > 0 && cp.lowres_shape[0] <= d.out[0] &&
         cp.lowres_shape[1] <= d.out[1] && cp.lowres_shape[2] <= d.out[2];
}

// Current V1 buffer of a slice: blurred slices live in x2.
__device__ __forceinline__ float* CurBuffer(const Workspace& ws, const ChannelParams& cp, bool blur_active) {
  return (blur_active && cp.blur_sigma[0] != 0.f) ? ws.x2 : ws.x1;
}

__global__ void __launch_bounds__(kThreads)
    LowResDownKernel(Dims d, const SampleParams* params, Workspace ws, ChainState st) {
  const int slice = blockIdx.y;
  const int b = slice / d.c, c = slice % d.c;
  const ChannelParams& cp = params[b].ch[c];
  if (!LowResOn(cp, d)) return;
  const int Q[3] = {cp.lowres_shape[0], cp.lowres_shape[1], cp.lowres_shape[2]};
  const int qn = Q[0] * Q[1] * Q[2];
  const int P[3] = {d.out[0], d.out[1], d.out[2]};
  const float* cur = CurBuffer(ws, cp, st.blur_active) + static_cast<int64_t>(slice) * d.out_n;
  float* low = ws.low + static_cast<int64_t>(slice) * d.out_n;
  const BCConsts bc = MakeBC(cp, ws.slot[kSlotV1].result + slice);
  for (int chunk = blockIdx.x; chunk * kChunk < qn; chunk += gridDim.x) {
    const int base = chunk * kChunk + threadIdx.x;
    IndexWalker walk(base, Q);
    int src[kVoxPerThread];
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k, walk.Step(Q)) {
      src[k] = (NearestExactSrc(walk.j0, P[0], Q[0]) * P[1] + NearestExactSrc(walk.j1, P[1], Q[1])) * P[2] +
               NearestExactSrc(walk.j2, P[2], Q[2]);
    }
    float v[kVoxPerThread];
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k) v[k] = base + k * kThreads < qn ? cur[src[k]] : 0.f;
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k) {
      if (base + k * kThreads < qn) low[base + k * kThreads] = ApplyBC(v[k], bc);
    }
  }
}

__device__ __forceinline__ float UpSample(const float* low, const int* Q, const int* P, const float* ratio, int j0,
                                          int j1, int j2) {
  int a0, a1, b0, b1, c0, c1;
  float la, lb, lc;
  LinearSrc(j0, Q[0], P[0], ratio[0], a0, a1, la);
  LinearSrc(j1, Q[1], P[1], ratio[1], b0, b1, lb);
  LinearSrc(j2, Q[2], P[2], ratio[2], c0, c1, lc);
  const float ha = __fsub_rn(1.f, la), hb = __fsub_rn(1.f, lb), hc = __fsub_rn(1.f, lc);
  const int r00 = (a0 * Q[1] + b0) * Q[2], r01 = (a0 * Q[1] + b1) * Q[2], r10 = (a1 * Q[1] + b0) * Q[2],
            r11 = (a1 * Q[1] + b1) * Q[2];
  const float x000 = __ldg(low + r00 + c0), x001 = __ldg(low + r00 + c1), x010 = __ldg(low + r01 + c0),
              x011 = __ldg(low + r01 + c1), x100 = __ldg(low + r10 + c0), x101 = __ldg(low + r10 + c1),
              x110 = __ldg(low + r11 + c0), x111 = __ldg(low + r11 + c1);
  const float v00 = __fadd_rn(__fmul_rn(hc, x000), __fmul_rn(lc, x001));
  const float v01 = __fadd_rn(__fmul_rn(hc, x010), __fmul_rn(lc, x011));
  const float v10 = __fadd_rn(__fmul_rn(hc, x100), __fmul_rn(lc, x101));
  const float v11 = __fadd_rn(__fmul_rn(hc, x110), __fmul_rn(lc, x111));
  const float v0 = __fadd_rn(__fmul_rn(hb, v00), __fmul_rn(lb, v01));
  const float v1 = __fadd_rn(__fmul_rn(hb, v10), __fmul_rn(lb, v11));
  return __fadd_rn(__fmul_rn(ha, v0), __fmul_rn(la, v1));
}

__global__ void __launch_bounds__(kThreads) MidKernel(Dims d, const SampleParams* params, Workspace ws, ChainState st) {
  const int slice = blockIdx.y;
  const int b = slice / d.c, c = slice % d.c;
  const ChannelParams& cp = params[b].ch[c];
  float* cur = CurBuffer(ws, cp, st.blur_active) + static_cast<int64_t>(slice) * d.out_n;
  const int P[3] = {d.out[0], d.out[1], d.out[2]};
  const int out_n = static_cast<int>(d.out_n);
  Partial part = EmptyPartial();
  const bool lowres_on = LowResOn(cp, d);
  const BCConsts bc = lowres_on ? BCConsts{} : MakeBC(cp, ws.slot[kSlotV1].result + slice);
  for (int chunk = blockIdx.x; chunk < d.nchunks; chunk += gridDim.x) {
    const int base = chunk * kChunk + threadIdx.x;
    if (lowres_on) {
      const float* low = ws.low + static_cast<int64_t>(slice) * d.out_n;
      const int Q[3] = {cp.lowres_shape[0], cp.lowres_shape[1], cp.lowres_shape[2]};
      const float ratio[3] = {static_cast<float>(Q[0]) / static_cast<float>(P[0]),
                              static_cast<float>(Q[1]) / static_cast<float>(P[1]),
                              static_cast<float>(Q[2]) / static_cast<float>(P[2])};
      IndexWalker walk(base, P);
#pragma unroll 2
      for (int k = 0; k < kVoxPerThread; ++k, walk.Step(P)) {
        const int j = base + k * kThreads;
        if (j >= out_n) break;
        const float v = UpSample(low, Q, P, ratio, walk.j0, walk.j1, walk.j2);
        cur[j] = v;
        Accumulate(part, v);
      }
    } else {
      float v[kVoxPerThread];
#pragma unroll
      for (int k = 0; k < kVoxPerThread; ++k) v[k] = base + k * kThreads < out_n ? cur[base + k * kThreads] : 0.f;
#pragma unroll
      for (int k = 0; k < kVoxPerThread; ++k) {
        if (base + k * kThreads >= out_n) continue;
        const float r = ApplyBC(v[k], bc);
        cur[base + k * kThreads] = r;
        Accumulate(part, r);
      }
    }
  }
  const Partial red = BlockReduce(part);
  CommitPartial(ws.slot[kSlotV3], slice, blockIdx.x, gridDim.x, red, d.out_n);
}

// The pointwise chain of one slice from its current buffer value to V5, with the statistics known so far.
struct Chain {
  bool mid_done;
  BCConsts bc;
  GammaConsts g0, g1;
  __device__ __forceinline__ float V3(float cur) const { return mid_done ? cur : ApplyBC(cur, bc); }
};

__device__ __forceinline__ Chain MakeChain(const Workspace& ws, const ChannelParams& cp, int slice,
                                           const ChainState& st, bool with_g0_retain, bool with_g1,
                                           bool with_g1_retain) {
  Chain ch;
  ch.mid_done = st.mid_done;
  ch.bc = st.mid_done ? BCConsts{} : MakeBC(cp, ws.slot[kSlotV1].result + slice);
  ch.g0 = MakeGammaCore(cp, 0, ws.slot[kSlotV3].result + slice);
  if (with_g0_retain) AddRetain(ch.g0, ws.slot[kSlotY0].result + slice);
  ch.g1 = GammaConsts{};
  if (with_g1) {
    ch.g1 = MakeGammaCore(cp, 1, (st.gamma0_active ? ws.slot[kSlotV4].result : ws.slot[kSlotV3].result) + slice);
    if (with_g1_retain) AddRetain(ch.g1, ws.slot[kSlotY1].result + slice);
  }
  return ch;
}

__global__ void __launch_bounds__(kThreads)
    GammaStatsKernel(Dims d, const SampleParams* params, Workspace ws, ChainState st, int mode) {
  const int slice = blockIdx.y;
  const int b = slice / d.c, c = slice % d.c;
  const ChannelParams& cp = params[b].ch[c];
  const int slot_gamma = mode == 0 ? 0 : 1;
  if (cp.gamma[slot_gamma] == 0.f) return;       // slice-uniform
  if (mode == 0 && !cp.gamma_retain[0]) return;  // stats of y only serve retain-stats
  if (mode == 2 && !cp.gamma_retain[1]) return;
  const float* cur = CurBuffer(ws, cp, st.blur_active) + static_cast<int64_t>(slice) * d.out_n;
  const Chain ch = MakeChain(ws, cp, slice, st, mode >= 1, mode == 2, false);
  const int out_n = static_cast<int>(d.out_n);
  Partial part = EmptyPartial();
  for (int chunk = blockIdx.x; chunk < d.nchunks; chunk += gridDim.x) {
    const int base = chunk * kChunk + threadIdx.x;
    float v[kVoxPerThread];
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k) v[k] = base + k * kThreads < out_n ? cur[base + k * kThreads] : 0.f;
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k) {
      if (base + k * kThreads >= out_n) continue;
      const float v3 = ch.V3(v[k]);
      float r;
      if (mode == 0) {
        r = GammaCore(v3, ch.g0);
      } else {
        const float v4 = GammaFull(v3, ch.g0);
        r = mode == 1 ? v4 : GammaCore(v4, ch.g1);
      }
      Accumulate(part, r);
    }
  }
  const Partial red = BlockReduce(part);
  const int slot = mode == 0 ? kSlotY0 : (mode == 1 ? kSlotV4 : kSlotY1);
  CommitPartial(ws.slot[slot], slice, blockIdx.x, gridDim.x, red, d.out_n);
}

__global__ void __launch_bounds__(kThreads) FinalKernel(Dims d, const SampleParams* params, Workspace ws, ChainState st,
                                                        void* out, OutDType dt, const uint8_t* mask) {
  const int slice = blockIdx.y;
  const int b = slice / d.c, c = slice % d.c;
  const SampleParams& sp = params[b];
  const ChannelParams& cp = sp.ch[c];
  const float* cur = CurBuffer(ws, cp, st.blur_active) + static_cast<int64_t>(slice) * d.out_n;
  const Chain ch = MakeChain(ws, cp, slice, st, true, true, true);
  const bool do_mask = mask != nullptr && cp.mask != 0;
  const int mirror = sp.mirror_mask;
  const int P[3] = {d.out[0], d.out[1], d.out[2]};
  const int out_n = static_cast<int>(d.out_n);
  const uint8_t* mask_b = do_mask ? mask + static_cast<int64_t>(b) * out_n : nullptr;
  for (int chunk = blockIdx.x; chunk < d.nchunks; chunk += gridDim.x) {
    const int base = chunk * kChunk + threadIdx.x;
    int src[kVoxPerThread];
    IndexWalker walk(base, P);
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k, walk.Step(P)) {
      const int o = base + k * kThreads;  // output (mirrored) index: coalesced writes
      src[k] = o >= out_n ? 0 : (mirror ? MirrorIndex(walk.j0, walk.j1, walk.j2, P, mirror) : o);
    }
    float v[kVoxPerThread];
    uint8_t m[kVoxPerThread];
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k) {
      const bool in = base + k * kThreads < out_n;
      v[k] = in ? cur[src[k]] : 0.f;
      m[k] = (in && mask_b) ? mask_b[base + k * kThreads] : 0;
    }
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k) {
      const int o = base + k * kThreads;
      if (o >= out_n) continue;
      float r = GammaFull(GammaFull(ch.V3(v[k]), ch.g0), ch.g1);
      if (m[k]) r = 0.f;
      StoreOut(out, dt, static_cast<int64_t>(slice) * out_n + o, r);
    }
  }
}

}  // namespace

int KernelSizeForHost(double sigma) { return KernelSizeFor(sigma); }

cudaError_t LaunchBlur(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws, bool want_stats,
                       cudaStream_t stream) {
  const Dims d = MakeDims(shape);
  const dim3 grid(d.grid, shape.batch * shape.channels);
  BlurAxisKernel<0><<<grid, kThreads, 0, stream>>>(d, d_params, ws.x1, ws.x2, 0, ws.slot[kSlotV1]);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  BlurAxisKernel<1><<<grid, kThreads, 0, stream>>>(d, d_params, ws.x2, ws.x1, 0, ws.slot[kSlotV1]);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  BlurAxisKernel<2><<<grid, kThreads, 0, stream>>>(d, d_params, ws.x1, ws.x2, want_stats ? 1 : 0, ws.slot[kSlotV1]);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  return cudaSuccess;
}

cudaError_t LaunchLowResDown(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws,
                             const ChainState& st, cudaStream_t stream) {
  const Dims d = MakeDims(shape);
  LowResDownKernel<<<dim3(d.grid, shape.batch * shape.channels), kThreads, 0, stream>>>(d, d_params, ws, st);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  return cudaSuccess;
}

cudaError_t LaunchMid(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws, const ChainState& st,
                      bool /*lowres_active*/, cudaStream_t stream) {
  const Dims d = MakeDims(shape);
  MidKernel<<<dim3(d.grid, shape.batch * shape.channels), kThreads, 0, stream>>>(d, d_params, ws, st);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  return cudaSuccess;
}

cudaError_t LaunchGammaStats(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws,
                             const ChainState& st, int mode, cudaStream_t stream) {
  const Dims d = MakeDims(shape);
  GammaStatsKernel<<<dim3(d.grid, shape.batch * shape.channels), kThreads, 0, stream>>>(d, d_params, ws, st, mode);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  return cudaSuccess;
}

cudaError_t LaunchFinal(const BatchShape& shape, const SampleParams* d_params, const PipelineIO& io,
                        const Workspace& ws, const ChainState& st, bool with_mask, cudaStream_t stream) {
  const Dims d = MakeDims(shape);
  FinalKernel<<<dim3(d.grid, shape.batch * shape.channels), kThreads, 0, stream>>>(
      d, d_params, ws, st, io.out_image, shape.out_dtype, with_mask ? ws.mask : nullptr);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  return cudaSuccess;
}

}  // namespace augmentd::cuda::internal
