// augment/kernels/cuda/intensity.cu — the intensity chain after the spatial kernel and the blur (blur.cu), one
// launch per stage per batch; blocks of slices a stage does not touch exit at once.
//
//  low-res   down: brightness/contrast(V1) at the nearest-exact picks (src = floor((i + 0.5)·P/Q)) into `low`
//            (blurred slices: in place over the blur kernel's raw picks); mid: trilinear up (align_corners=False)
//            and stats of V3; slices without low-res only reduce the stats of BC(V1) (read-only, and only for a gamma).
//  gamma     per slot: (maybe −x) → ((x − min)/max(r, 1e-7))^γ·r + min → retain mean and unbiased std
//            (stats passes), → (maybe −x). Statistics are deterministic per-slice reductions; slot 1's input
//            statistics follow from slot 0's (GammaOutStats), so two stats passes serve both slots.
//  final     pointwise rest of the chain, mirroring (index map), mask, dtype conversion (float4 groups when
//            the rows allow).
// The slice passes are memory-latency bound: each thread issues all its loads (kVoxPerThread voxels) before it
// uses any of them, and the grid is one wave at the kernel's occupancy.
#include <algorithm>
#include <cstdint>

#include "augment/kernels/cuda/common.cuh"
#include "augment/kernels/cuda/kernels.h"

namespace augmentd::cuda::internal {
namespace {

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
  const bool picked = st.blur_active && cp.blur_sigma[0] != 0.f;  // the blur kernel's epilogue picked raw V1
  for (int chunk = blockIdx.x; chunk * kChunk < qn; chunk += gridDim.x) {
    const int base = chunk * kChunk + threadIdx.x;
    if (picked) {
      float v[kVoxPerThread];
#pragma unroll
      for (int k = 0; k < kVoxPerThread; ++k) v[k] = base + k * kThreads < qn ? low[base + k * kThreads] : 0.f;
#pragma unroll
      for (int k = 0; k < kVoxPerThread; ++k) {
        if (base + k * kThreads < qn) low[base + k * kThreads] = ApplyBC(v[k], bc);
      }
      continue;
    }
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

// Trilinear up-sampling (align_corners=False) of one output row (j0, j1) of a low-res slice: the axis-0/1 source
// rows and weights once per row (a warp per row), axis 2 per voxel, lanes along the row (coalesced stores).
// Same operations and order as ATen's upsample_trilinear3d: along axis 2, then 1, then 0.
__device__ __forceinline__ void UpSampleRow(const float* low, const int* Q, const int* P, const float* ratio, int j0,
                                            int j1, float* out_row, Partial& part) {
  int a0, a1, b0, b1;
  float la, lb;
  LinearSrc(j0, Q[0], P[0], ratio[0], a0, a1, la);
  LinearSrc(j1, Q[1], P[1], ratio[1], b0, b1, lb);
  const float ha = __fsub_rn(1.f, la), hb = __fsub_rn(1.f, lb);
  // 32-bit element offsets from one base pointer: each gather is an add and one wide multiply-add (64-bit row
  // pointers cost ~5 address instructions per gather).
  const int l00 = (a0 * Q[1] + b0) * Q[2], l01 = (a0 * Q[1] + b1) * Q[2];
  const int l10 = (a1 * Q[1] + b0) * Q[2], l11 = (a1 * Q[1] + b1) * Q[2];
#pragma unroll 4
  for (int j2 = threadIdx.x & 31; j2 < P[2]; j2 += 32) {
    int c0, c1;
    float lc;
    LinearSrc(j2, Q[2], P[2], ratio[2], c0, c1, lc);
    const float hc = __fsub_rn(1.f, lc);
    const float x000 = __ldg(low + (l00 + c0)), x001 = __ldg(low + (l00 + c1)), x010 = __ldg(low + (l01 + c0)),
                x011 = __ldg(low + (l01 + c1)), x100 = __ldg(low + (l10 + c0)), x101 = __ldg(low + (l10 + c1)),
                x110 = __ldg(low + (l11 + c0)), x111 = __ldg(low + (l11 + c1));
    const float v00 = __fadd_rn(__fmul_rn(hc, x000), __fmul_rn(lc, x001));
    const float v01 = __fadd_rn(__fmul_rn(hc, x010), __fmul_rn(lc, x011));
    const float v10 = __fadd_rn(__fmul_rn(hc, x100), __fmul_rn(lc, x101));
    const float v11 = __fadd_rn(__fmul_rn(hc, x110), __fmul_rn(lc, x111));
    const float v0 = __fadd_rn(__fmul_rn(hb, v00), __fmul_rn(lb, v01));
    const float v1 = __fadd_rn(__fmul_rn(hb, v10), __fmul_rn(lb, v11));
    const float v = __fadd_rn(__fmul_rn(ha, v0), __fmul_rn(la, v1));
    out_row[j2] = v;
    Accumulate(part, v);
  }
}

// Low-res slices: cur becomes V3 (the up-sampled low-res image) and V3's statistics are reduced. Other slices keep V1
// in cur (the later passes apply brightness/contrast themselves: Chain::V3) and only reduce V3 = BC(V1)'s statistics,
// which only a gamma slot reads: a slice with neither returns at once.
__global__ void __launch_bounds__(kThreads) MidKernel(Dims d, const SampleParams* params, Workspace ws, ChainState st) {
  const int slice = blockIdx.y;
  const int b = slice / d.c, c = slice % d.c;
  const ChannelParams& cp = params[b].ch[c];
  const bool lowres_on = LowResOn(cp, d);
  if (!lowres_on && cp.gamma[0] == 0.f && cp.gamma[1] == 0.f) return;  // slice-uniform
  float* cur = CurBuffer(ws, cp, st.blur_active) + static_cast<int64_t>(slice) * d.out_n;
  const int P[3] = {d.out[0], d.out[1], d.out[2]};
  const int out_n = static_cast<int>(d.out_n);
  Partial part = EmptyPartial();
  const BCConsts bc = lowres_on ? BCConsts{} : MakeBC(cp, ws.slot[kSlotV1].result + slice);
  // The slice's low-res base pointer through shared memory: opaque to the compiler, it stays in one register pair
  // (UpSampleRow's gathers are then one wide multiply-add each).
  __shared__ const float* sh_low;
  if (threadIdx.x == 0) sh_low = ws.low + static_cast<int64_t>(slice) * d.out_n;
  __syncthreads();
  if (lowres_on) {
    const float* low = sh_low;
    const int Q[3] = {cp.lowres_shape[0], cp.lowres_shape[1], cp.lowres_shape[2]};
    const float ratio[3] = {static_cast<float>(Q[0]) / static_cast<float>(P[0]),
                            static_cast<float>(Q[1]) / static_cast<float>(P[1]),
                            static_cast<float>(Q[2]) / static_cast<float>(P[2])};
    constexpr int kWarps = kThreads / 32;
    for (int row = blockIdx.x * kWarps + (threadIdx.x >> 5); row < P[0] * P[1]; row += gridDim.x * kWarps) {
      UpSampleRow(low, Q, P, ratio, row / P[1], row % P[1], cur + static_cast<int64_t>(row) * P[2], part);
    }
  }
  for (int chunk = blockIdx.x; chunk < d.nchunks && !lowres_on; chunk += gridDim.x) {  // statistics of BC(V1) only
    const int base = chunk * kChunk + threadIdx.x;
    float v[kVoxPerThread];
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k) v[k] = base + k * kThreads < out_n ? cur[base + k * kThreads] : 0.f;
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k) {
      if (base + k * kThreads < out_n) Accumulate(part, ApplyBC(v[k], bc));
    }
  }
  const Partial red = BlockReduce(part);
  CommitPartial(ws.slot[kSlotV3], slice, blockIdx.x, gridDim.x, red, d.out_n);
}

// The pointwise chain of one slice from its current buffer value to V5, with the statistics known so far.
struct Chain {
  bool cur_is_v3;  // this slice's buffer holds V3 (the mid pass up-sampled its low-res image)
  BCConsts bc;
  GammaConsts g0, g1;
  __device__ __forceinline__ float V3(float cur) const { return cur_is_v3 ? cur : ApplyBC(cur, bc); }
};

// Statistics of a gamma slot's output from those of its core output y, without a pass over the output: the slot
// returns ±z with z = (y − mean_y)·scale + μ under retain-stats (z = y otherwise). scale >= 0 makes z monotone in
// y (each rounded operation is), so min/max are exact images of y's; mean(z) = μ and std(z) = scale·std(y) up to
// rounding.
__device__ __forceinline__ Stats GammaOutStats(const GammaConsts& g, const Stats& y) {
  Stats z = y;
  if (g.retain) {
    z.mn = __fadd_rn(__fmul_rn(__fsub_rn(y.mn, g.mean_y), g.scale), g.mu);
    z.mx = __fadd_rn(__fmul_rn(__fsub_rn(y.mx, g.mean_y), g.scale), g.mu);
    z.mean = g.mu;
    z.std = __fmul_rn(g.scale, y.std);
  }
  if (!g.inv) return z;
  Stats r;
  r.mean = -z.mean;
  r.std = z.std;
  r.mn = -z.mx;
  r.mx = -z.mn;
  return r;
}

__device__ __forceinline__ Chain MakeChain(const Workspace& ws, const ChannelParams& cp, const Dims& d, int slice,
                                           const ChainState& st, bool with_g0_retain, bool with_g1,
                                           bool with_g1_retain) {
  Chain ch;
  ch.cur_is_v3 = st.mid_done && LowResOn(cp, d);  // the mid pass writes only low-res slices (MidKernel)
  ch.bc = ch.cur_is_v3 ? BCConsts{} : MakeBC(cp, ws.slot[kSlotV1].result + slice);
  ch.g0 = MakeGammaCore(cp, 0, ws.slot[kSlotV3].result + slice);
  if (with_g0_retain) AddRetain(ch.g0, ws.slot[kSlotY0].result + slice);
  ch.g1 = GammaConsts{};
  if (with_g1 && cp.gamma[1] != 0.f) {  // off: nothing to read (MidKernel skips slices without a gamma slot)
    // Input of slot 1: V4, whose statistics follow from those of slot 0's core output (or V3 when slot 0 is off).
    const Stats s4 = ch.g0.on ? GammaOutStats(ch.g0, ws.slot[kSlotY0].result[slice]) : ws.slot[kSlotV3].result[slice];
    ch.g1 = MakeGammaCore(cp, 1, &s4);
    if (with_g1_retain) AddRetain(ch.g1, ws.slot[kSlotY1].result + slice);
  }
  return ch;
}

// Calls f(value) for every voxel of this block's chunks of one read-only slice (any order): float4 loads when the
// slice length is a multiple of 4 (every slice then starts 16-byte aligned in the workspace), scalar otherwise.
template <typename F>
__device__ __forceinline__ void ForSliceValues(const float* cur, const Dims& d, F&& f) {
  const int out_n = static_cast<int>(d.out_n);
  if ((out_n & 3) == 0) {
    const float4* c4 = reinterpret_cast<const float4*>(cur);
    const int n4 = out_n >> 2;
    for (int chunk = blockIdx.x; chunk < d.nchunks; chunk += gridDim.x) {
      const int base = chunk * (kChunk / 4) + threadIdx.x;
      float4 v[kVoxPerThread / 4];
#pragma unroll
      for (int k = 0; k < kVoxPerThread / 4; ++k) {
        v[k] = base + k * kThreads < n4 ? __ldg(c4 + base + k * kThreads) : make_float4(0.f, 0.f, 0.f, 0.f);
      }
#pragma unroll
      for (int k = 0; k < kVoxPerThread / 4; ++k) {
        if (base + k * kThreads >= n4) continue;
        f(v[k].x);
        f(v[k].y);
        f(v[k].z);
        f(v[k].w);
      }
    }
    return;
  }
  for (int chunk = blockIdx.x; chunk < d.nchunks; chunk += gridDim.x) {
    const int base = chunk * kChunk + threadIdx.x;
    float v[kVoxPerThread];
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k) v[k] = base + k * kThreads < out_n ? __ldg(cur + base + k * kThreads) : 0.f;
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k) {
      if (base + k * kThreads < out_n) f(v[k]);
    }
  }
}

// mode 0: statistics of gamma slot 0's core output y0 (retain-stats of slot 0, and the input statistics of slot 1
// via GammaOutStats); mode 2: of slot 1's core output y1. (Slot 1's input V4 needs no pass of its own.)
__global__ void __launch_bounds__(kThreads)
    GammaStatsKernel(Dims d, const SampleParams* params, Workspace ws, ChainState st, int mode) {
  const int slice = blockIdx.y;
  const int b = slice / d.c, c = slice % d.c;
  const ChannelParams& cp = params[b].ch[c];
  if (mode == 0 && (cp.gamma[0] == 0.f || (!cp.gamma_retain[0] && cp.gamma[1] == 0.f))) return;  // slice-uniform
  if (mode == 2 && (cp.gamma[1] == 0.f || !cp.gamma_retain[1])) return;
  const float* cur = CurBuffer(ws, cp, st.blur_active) + static_cast<int64_t>(slice) * d.out_n;
  const Chain ch = MakeChain(ws, cp, d, slice, st, mode == 2, mode == 2, false);
  Partial part = EmptyPartial();
  if (mode == 0) {
    ForSliceValues(cur, d, [&](float v) { Accumulate(part, GammaCore(ch.V3(v), ch.g0)); });
  } else {
    ForSliceValues(cur, d, [&](float v) { Accumulate(part, GammaCore(GammaFull(ch.V3(v), ch.g0), ch.g1)); });
  }
  const Partial red = BlockReduce(part);
  CommitPartial(ws.slot[mode == 0 ? kSlotY0 : kSlotY1], slice, blockIdx.x, gridDim.x, red, d.out_n);
}

// Four consecutive voxels of one output row (vectorised final pass).
__device__ __forceinline__ __half2 Pack2(float a, float b, __half) { return __floats2half2_rn(a, b); }
__device__ __forceinline__ __nv_bfloat162 Pack2(float a, float b, __nv_bfloat16) { return __floats2bfloat162_rn(a, b); }

template <typename H>
__device__ __forceinline__ void StoreHalf4(void* out, int64_t idx, const float4& v) {
  const auto lo = Pack2(v.x, v.y, H{}), hi = Pack2(v.z, v.w, H{});
  uint2 u;
  u.x = *reinterpret_cast<const unsigned int*>(&lo);
  u.y = *reinterpret_cast<const unsigned int*>(&hi);
  *reinterpret_cast<uint2*>(static_cast<H*>(out) + idx) = u;
}

__device__ __forceinline__ void StoreOut4(void* out, OutDType dt, int64_t idx, const float4& v) {
  switch (dt) {
    case OutDType::kFloat16:
      StoreHalf4<__half>(out, idx, v);
      break;
    case OutDType::kBFloat16:
      StoreHalf4<__nv_bfloat16>(out, idx, v);
      break;
    default:
      *reinterpret_cast<float4*>(static_cast<float*>(out) + idx) = v;
      break;
  }
}

// Final pass over groups of four voxels of a row (P2 % 4 == 0, 16-byte aligned output): a mirrored row maps
// groups onto groups (reversed when axis 2 flips), so loads, mask bytes and stores stay vectors.
__device__ __forceinline__ void FinalVec4(const Dims& d, const Chain& ch, const float* cur, const uint8_t* mask_b,
                                          int mirror, void* out, OutDType dt, int64_t out_base) {
  const int P4[3] = {d.out[0], d.out[1], d.out[2] >> 2};
  const int n4 = static_cast<int>(d.out_n >> 2);
  const float4* c4 = reinterpret_cast<const float4*>(cur);
  const uchar4* m4 = reinterpret_cast<const uchar4*>(mask_b);
  constexpr int kG = kVoxPerThread / 4;
  for (int chunk = blockIdx.x; chunk < d.nchunks; chunk += gridDim.x) {
    const int base = chunk * (kChunk / 4) + threadIdx.x;
    int src[kG];
    IndexWalker walk(base, P4);
#pragma unroll
    for (int k = 0; k < kG; ++k, walk.Step(P4)) {
      const int o = base + k * kThreads;
      src[k] = o >= n4 ? 0 : (mirror ? MirrorIndex(walk.j0, walk.j1, walk.j2, P4, mirror) : o);
    }
    float4 v[kG];
    uchar4 m[kG];
#pragma unroll
    for (int k = 0; k < kG; ++k) {
      const bool in = base + k * kThreads < n4;
      v[k] = in ? __ldg(c4 + src[k]) : make_float4(0.f, 0.f, 0.f, 0.f);
      m[k] = (in && m4) ? m4[base + k * kThreads] : make_uchar4(0, 0, 0, 0);
    }
#pragma unroll
    for (int k = 0; k < kG; ++k) {
      const int o = base + k * kThreads;
      if (o >= n4) continue;
      if (mirror & 4) v[k] = make_float4(v[k].w, v[k].z, v[k].y, v[k].x);
      float4 r;
      r.x = m[k].x ? 0.f : GammaFull(GammaFull(ch.V3(v[k].x), ch.g0), ch.g1);
      r.y = m[k].y ? 0.f : GammaFull(GammaFull(ch.V3(v[k].y), ch.g0), ch.g1);
      r.z = m[k].z ? 0.f : GammaFull(GammaFull(ch.V3(v[k].z), ch.g0), ch.g1);
      r.w = m[k].w ? 0.f : GammaFull(GammaFull(ch.V3(v[k].w), ch.g0), ch.g1);
      StoreOut4(out, dt, out_base + 4 * static_cast<int64_t>(o), r);
    }
  }
}

// blockIdx.y < B·C: the slice's final pass; beyond: the deep-supervision picks of (level, sample) =
// divmod(blockIdx.y − B·C, B) (no launch of their own: they share this one's wave).
__global__ void __launch_bounds__(kThreads) FinalKernel(Dims d, const SampleParams* params, Workspace ws, ChainState st,
                                                        void* out, OutDType dt, const uint8_t* mask, int vec4,
                                                        const DsArgs ds) {
  if (ds.io_dev != nullptr) out = ds.io_dev->out_image;  // graph replay: this batch's buffers
  const int slice = blockIdx.y;
  if (slice >= d.b * d.c) {
    const int idx = slice - d.b * d.c, l = idx / d.b, b = idx % d.b;
    const int qn = ds.ds[l][0] * ds.ds[l][1] * ds.ds[l][2];
    for (int chunk = blockIdx.x; chunk * kChunk < qn; chunk += gridDim.x) DsPicks(ds, l, b, chunk);
    return;
  }
  const int b = slice / d.c, c = slice % d.c;
  const SampleParams& sp = params[b];
  const ChannelParams& cp = sp.ch[c];
  const float* cur = CurBuffer(ws, cp, st.blur_active) + static_cast<int64_t>(slice) * d.out_n;
  const Chain ch = MakeChain(ws, cp, d, slice, st, true, true, true);
  const bool do_mask = mask != nullptr && cp.mask != 0;
  const int mirror = sp.mirror_mask;
  const int P[3] = {d.out[0], d.out[1], d.out[2]};
  const int out_n = static_cast<int>(d.out_n);
  const uint8_t* mask_b = do_mask ? mask + static_cast<int64_t>(b) * out_n : nullptr;
  if (vec4) {
    FinalVec4(d, ch, cur, mask_b, mirror, out, dt, static_cast<int64_t>(slice) * out_n);
    return;
  }
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


namespace {
// Blocks per slice for the grid-stride slice kernels: one wave of `kKernel` at its occupancy (queried once), shared by
// the slices of the batch, at most one block per chunk. Rounded down: a block each grid-strides over a fixed share of
// its slice, so blocks beyond the wave would run their whole share after it (the s13 profile: 5 blocks per SM × 132
// SMs over 8 slices rounded up to 83 per slice put 4 blocks in a second wave and doubled the mid pass at B·C = 8).
template <auto kKernel>
int WaveGrid(const Dims& d) {
  static const int per_sm = [] {
    int n = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, kKernel, kThreads, 0) != cudaSuccess || n < 1) {
      (void)cudaGetLastError();
      n = 4;
    }
    return n;
  }();
  const int slices = d.b * d.c;
  return std::max(1, std::min(d.nchunks, per_sm * DeviceSmCount() / slices));
}
}  // namespace

cudaError_t LaunchLowResDown(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws,
                             const ChainState& st, cudaStream_t stream) {
  const Dims d = MakeDims(shape);
  LowResDownKernel<<<dim3(WaveGrid<LowResDownKernel>(d), shape.batch * shape.channels), kThreads, 0, stream>>>(
      d, d_params, ws, st);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  return cudaSuccess;
}

cudaError_t LaunchMid(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws, const ChainState& st,
                      bool /*lowres_active*/, cudaStream_t stream) {
  const Dims d = MakeDims(shape);
  MidKernel<<<dim3(WaveGrid<MidKernel>(d), shape.batch * shape.channels), kThreads, 0, stream>>>(d, d_params, ws, st);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  return cudaSuccess;
}

cudaError_t LaunchGammaStats(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws,
                             const ChainState& st, int mode, cudaStream_t stream) {
  const Dims d = MakeDims(shape);
  GammaStatsKernel<<<dim3(WaveGrid<GammaStatsKernel>(d), shape.batch * shape.channels), kThreads, 0, stream>>>(
      d, d_params, ws, st, mode);
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  return cudaSuccess;
}

cudaError_t LaunchFinal(const BatchShape& shape, const SampleParams* d_params, const PipelineIO& io,
                        const PipelineIO* d_io, const Workspace& ws, const ChainState& st, bool with_mask,
                        cudaStream_t stream) {
  const Dims d = MakeDims(shape);
  const int vec4 = (shape.out[2] % 4 == 0 && reinterpret_cast<uintptr_t>(io.out_image) % 16 == 0) ? 1 : 0;
  const int rows = shape.batch * shape.channels + shape.batch * shape.num_ds;  // slices, then DS (level, sample)
  FinalKernel<<<dim3(WaveGrid<FinalKernel>(d), rows), kThreads, 0, stream>>>(
      d, d_params, ws, st, io.out_image, shape.out_dtype, with_mask ? ws.mask : nullptr, vec4,
      MakeDsArgs(shape, io, d_io));
  AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR();
  return cudaSuccess;
}

}  // namespace augmentd::cuda::internal
