// augment/kernels/cuda/intensity.cu — the intensity chain after the spatial kernel and the blur (blur.cu), one
// launch per stage per batch; blocks of slices a stage does not touch exit at once, or, with slice shares
// (common.cuh SliceBlocks), serve the slices it does touch.
//
//  low-res   mid: trilinear up (align_corners=False) of the low-res image, whose samples are brightness/contrast(V1)
//            at the nearest-exact picks (src = floor((i + 0.5)·P/Q)), gathered from V1 where the up-sampling needs
//            them, into the other scratch buffer (V3Buffer), and stats of V3; slices without low-res only reduce the
//            stats of BC(V1) (read-only, and only for a gamma).
//  gamma     per slot: (maybe −x) → ((x − min)/max(r, 1e-7))^γ·r + min → retain mean and unbiased std
//            (stats passes), → (maybe −x). Statistics are deterministic per-slice reductions; slot 1's input
//            statistics follow from slot 0's (GammaOutStats), and, in batches where slot 1 never runs alone, its
//            output statistics from slot 0's pass too (FusedY1): the second pass then reads only degenerate slices.
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

// Where the mid pass writes a low-res slice's V3: the scratch buffer that does not hold its V1 (it gathers V1 while
// it writes V3).
__device__ __forceinline__ float* V3Target(const Workspace& ws, const ChannelParams& cp, bool blur_active) {
  return CurBuffer(ws, cp, blur_active) == ws.x1 ? ws.x2 : ws.x1;
}

// A slice's buffer after the mid pass: V3 for low-res slices, V1 for the others (the later passes apply
// brightness/contrast to it: Chain::V3).
__device__ __forceinline__ float* V3Buffer(const Workspace& ws, const ChannelParams& cp, const Dims& d,
                                           const ChainState& st) {
  return st.mid_done && LowResOn(cp, d) ? V3Target(ws, cp, st.blur_active) : CurBuffer(ws, cp, st.blur_active);
}

// Extents up to this use MidKernel's per-block tables (the output's P0 and the low-res Q0).
constexpr int kPickTable = 512;

// The four low-res samples of low-res plane `a` that one output column (fixed j1, j2) interpolates between: rows
// b0 / b1 of the plane at columns c0 / c1. A low-res sample (a, b, c) is BC(V1) at V1's voxel (pick0(a), pick1(b),
// pick2(c)) (nearest-exact: NearestExactSrc), so the taps hold V1 element offsets: r00 … r11 within a V1 plane, and
// the plane's own offset pick0(a)·P1·P2 comes from the caller.
struct ColumnTaps {
  int r00, r01, r10, r11;
  float hb, lb, hc, lc;
};

// The samples of the low-res plane whose V1 plane starts at `plane` (BC applied: the same operations on the same V1
// values as a low-res image computed first, so the same bits).
__device__ __forceinline__ void LoadPlaneTaps(const float* v1, int plane, const ColumnTaps& t, const BCConsts& bc,
                                              float* x) {
  x[0] = ApplyBC(__ldg(v1 + (plane + t.r00)), bc);
  x[1] = ApplyBC(__ldg(v1 + (plane + t.r01)), bc);
  x[2] = ApplyBC(__ldg(v1 + (plane + t.r10)), bc);
  x[3] = ApplyBC(__ldg(v1 + (plane + t.r11)), bc);
}

// A plane's value at the column: along axis 2, then 1 (ATen's upsample_trilinear3d order).
__device__ __forceinline__ float PlaneValue(const float* x, const ColumnTaps& t) {
  const float v00 = __fadd_rn(__fmul_rn(t.hc, x[0]), __fmul_rn(t.lc, x[1]));
  const float v01 = __fadd_rn(__fmul_rn(t.hc, x[2]), __fmul_rn(t.lc, x[3]));
  return __fadd_rn(__fmul_rn(t.hb, v00), __fmul_rn(t.lb, v01));
}

// One output index's trilinear source along an axis (LinearSrc), with its lower weight 1 − l1 (16 bytes).
struct AxisSrc {
  int i0, i1;
  float l1, h1;
};

__device__ __forceinline__ AxisSrc AxisSource(int i, int in, int out, float ratio) {
  AxisSrc s;
  LinearSrc(i, in, out, ratio, s.i0, s.i1, s.l1);
  s.h1 = __fsub_rn(1.f, s.l1);
  return s;
}

// Trilinear up-sampling (align_corners=False) of one low-res slice into `out`, its samples gathered from the slice's
// V1 (`v1`) at the nearest-exact picks with brightness/contrast applied (LoadPlaneTaps). Work unit: (column tile, j0)
// with j0 fastest; a block takes a contiguous range of units (an even share of the slice), a warp one output row j1
// of the tile and a lane one j2 (coalesced stores). Along a run of consecutive j0 the lower axis-0 source a0 only
// moves up, one plane at a time (Q0 <= P0), so each thread holds the values of planes a0 and a0 + 1 at its column
// (`PlaneValue`: along axis 2, then 1) and the four samples of plane a0 + 2, loaded one step or more before they are
// needed: per output voxel one axis-0 interpolation and, a0 moving up on ≈ Q0/P0 of the steps, one plane (4 loads, 3
// interpolations), instead of 8 loads and 7 interpolations. The same rounded operations in the same order as ATen
// (axis 2, then 1, then 0), so the same values. j0 is block-uniform, so every branch on the axis-0 source is; its
// sources and the low-res planes' V1 offsets come from per-block tables (kTabled: `src0`, `plane0`; P0 <= kPickTable)
// or are computed per step (a build of its own, so that the common one carries no registers for it).
template <bool kShare, bool kTabled>
__device__ __forceinline__ void UpSampleSlice(const float* v1, const int* Q, const int* P, const float* ratio,
                                              const AxisSrc* src0, const int* plane0, const BCConsts& bc,
                                              const SliceBlocks<kShare>& sb, float* out, Partial& part) {
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int tiles2 = (P[2] + 31) / 32, tiles1 = (P[1] + kWarps - 1) / kWarps;
  const int units = tiles2 * tiles1 * P[0];  // ≤ 2^30 + small: RunPipeline rejects patches over 2^30 voxels
  const int begin = static_cast<int>(static_cast<int64_t>(units) * sb.block() / sb.count());
  const int end = static_cast<int>(static_cast<int64_t>(units) * (sb.block() + 1) / sb.count());
  const int plane_n = P[1] * P[2];  // V1 elements per plane (< 2^30)
  const auto plane_of = [&](int a) { return kTabled ? plane0[a] : NearestExactSrc(a, P[0], Q[0]) * plane_n; };
  for (int u = begin; u < end;) {
    const int tile = u / P[0];
    int j0 = u - tile * P[0];
    const int run_end = min(end, (tile + 1) * P[0]);
    const int j1 = (tile / tiles2) * kWarps + warp, j2 = (tile % tiles2) * 32 + lane;
    const bool in_patch = j1 < P[1] && j2 < P[2];
    ColumnTaps t;
    {
      const AxisSrc s1 = AxisSource(min(j1, P[1] - 1), Q[1], P[1], ratio[1]);
      const AxisSrc s2 = AxisSource(min(j2, P[2] - 1), Q[2], P[2], ratio[2]);
      t.lb = s1.l1;
      t.hb = s1.h1;
      t.lc = s2.l1;
      t.hc = s2.h1;
      const int row0 = NearestExactSrc(s1.i0, P[1], Q[1]) * P[2], row1 = NearestExactSrc(s1.i1, P[1], Q[1]) * P[2];
      const int col0 = NearestExactSrc(s2.i0, P[2], Q[2]), col1 = NearestExactSrc(s2.i1, P[2], Q[2]);
      t.r00 = row0 + col0;
      t.r01 = row0 + col1;
      t.r10 = row1 + col0;
      t.r11 = row1 + col1;
    }
    int a = -2;                     // the plane whose value v_lo holds (v_hi: plane a + 1; xn: the samples of a + 2)
    float v_lo = 0.f, v_hi = 0.f, xn[4] = {0.f, 0.f, 0.f, 0.f};
    float* out_col = out + static_cast<int64_t>(j0 * P[1] + j1) * P[2] + j2;
    for (; u < run_end; ++u, ++j0, out_col += plane_n) {
      const AxisSrc s0 = kTabled ? src0[j0] : AxisSource(j0, Q[0], P[0], ratio[0]);
      if (s0.i0 != a) {
        if (s0.i0 == a + 1) {  // moved up one plane: the held planes shift, the prefetched one becomes the upper
          v_lo = v_hi;
          v_hi = PlaneValue(xn, t);
        } else {  // the run's first step (or any other move of a0, which LinearSrc never makes for Q0 <= P0)
          float x[4];
          LoadPlaneTaps(v1, plane_of(s0.i0), t, bc, x);
          v_lo = PlaneValue(x, t);
          if (s0.i0 + 1 < Q[0]) {
            LoadPlaneTaps(v1, plane_of(s0.i0 + 1), t, bc, x);
            v_hi = PlaneValue(x, t);
          }
        }
        a = s0.i0;
        if (a + 2 < Q[0]) LoadPlaneTaps(v1, plane_of(a + 2), t, bc, xn);
      }
      // i1 == i0 at the last plane and when Q0 == P0 (then l1 = 0): the upper sample is the lower plane's.
      const float v = __fadd_rn(__fmul_rn(s0.h1, v_lo), __fmul_rn(s0.l1, s0.i1 == s0.i0 ? v_lo : v_hi));
      if (in_patch) {
        *out_col = v;
        Accumulate(part, v);
      }
    }
  }
}

// Low-res slices: V3 (the up-sampled low-res image, gathered from V1) into the other scratch buffer (V3Buffer) and
// V3's statistics. This needs no low-res image of its own, hence no pass before this one: the picks are read where
// the up-sampling needs them and brightness/contrast applied on the way, which only V1's statistics (final after the
// spatial or blur pass) parameterise. Other slices keep V1 (the later passes apply brightness/contrast themselves:
// Chain::V3) and only reduce V3 = BC(V1)'s statistics, which only a gamma slot reads: a slice with neither returns at
// once. 5 blocks per SM (48 registers): without the bound ptxas takes 59 registers, which leaves 4; with it 40-44
// bytes spill, in the per-run setup of UpSampleSlice (the step loop has no local-memory access: SASS, s23).
// Before s23 a low-res down pass of its own wrote the low-res image first (and the blur kernel picked blurred slices'
// samples in its epilogue). Without it (H200, NOTES.md s23; every transform on, against s22's tree in the same call,
// this session's PowFtz in both figures): B=2 C=1 -1.1 %, C=4 -2.6 %, B=8 C=1 -2.3 %, where PowFtz alone measured
// -1.2 … -1.8 %, -1.7 … -1.9 %, -1.4 % in two other calls; and two scratch images instead of three (workspace, B=2
// C=1 128³: 52 → 36 MB).
template <bool kShare>
__global__ void __launch_bounds__(kThreads, 5)
    MidKernel(Dims d, const SampleParams* params, Workspace ws, ChainState st) {
  const BlockClockScope clocks(kClockMid);  // block_clocks.cuh
  SliceBlocks<kShare> sb;
  const auto has_work = [&](const ChannelParams& q) { return (SlicePasses(q, d.out) & kPassMid) != 0; };
  if (!sb.Take(d, params, has_work)) {
    ChainWait();
    return;
  }
  const int slice = sb.slice();
  const int b = slice / d.c, c = slice % d.c;
  const ChannelParams& cp = params[b].ch[c];
  const bool lowres_on = LowResOn(cp, d);
  if (!kShare && !lowres_on && cp.gamma[0] == 0.f && cp.gamma[1] == 0.f) {  // slice-uniform: !has_work(cp)
    ChainWait();
    return;
  }
  float* cur = CurBuffer(ws, cp, st.blur_active) + static_cast<int64_t>(slice) * d.out_n;
  const int P[3] = {d.out[0], d.out[1], d.out[2]};
  const int out_n = static_cast<int>(d.out_n);
  Partial part = EmptyPartial();
  ChainWait();  // V1's statistics and V1 are the spatial or blur pass's
  const BCConsts bc = MakeBC(cp, ws.slot[kSlotV1].result + slice);
  if (lowres_on) {
    // The slice's V1 base pointer through shared memory: opaque to the compiler, it stays in one register pair
    // (UpSampleSlice's gathers are then one wide multiply-add each).
    // The brightness/contrast constants too, read where a plane's samples arrive (held in registers they spilled
    // 44-48 bytes, some in the step loop).
    __shared__ const float* sh_v1;
    __shared__ BCConsts sh_bc;
    if (threadIdx.x == 0) {
      sh_v1 = cur;
      sh_bc = bc;
    }
    const int Q[3] = {cp.lowres_shape[0], cp.lowres_shape[1], cp.lowres_shape[2]};
    const float ratio[3] = {static_cast<float>(Q[0]) / static_cast<float>(P[0]),
                            static_cast<float>(Q[1]) / static_cast<float>(P[1]),
                            static_cast<float>(Q[2]) / static_cast<float>(P[2])};
    // The axis-0 sources and the low-res planes' V1 offsets once per block (the branch is slice-uniform; Q0 <= P0).
    __shared__ AxisSrc sh_src0[kPickTable];
    __shared__ int sh_plane0[kPickTable];
    const bool tabled = P[0] <= kPickTable;
    if (tabled) {
      for (int i = threadIdx.x; i < P[0]; i += kThreads) sh_src0[i] = AxisSource(i, Q[0], P[0], ratio[0]);
      for (int i = threadIdx.x; i < Q[0]; i += kThreads) sh_plane0[i] = NearestExactSrc(i, P[0], Q[0]) * P[1] * P[2];
    }
    __syncthreads();
    float* v3 = V3Target(ws, cp, st.blur_active) + static_cast<int64_t>(slice) * d.out_n;
    if (tabled) {
      UpSampleSlice<kShare, true>(sh_v1, Q, P, ratio, sh_src0, sh_plane0, sh_bc, sb, v3, part);
    } else {
      UpSampleSlice<kShare, false>(sh_v1, Q, P, ratio, nullptr, nullptr, sh_bc, sb, v3, part);
    }
  }
  for (int chunk = sb.block(); chunk < d.nchunks && !lowres_on; chunk += sb.count()) {  // statistics of BC(V1) only
    const int base = chunk * kChunk + threadIdx.x;
    float v[kVoxPerThread];
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k) v[k] = base + k * kThreads < out_n ? cur[base + k * kThreads] : 0.f;
#pragma unroll
    for (int k = 0; k < kVoxPerThread; ++k) {
      if (base + k * kThreads < out_n) Accumulate(part, ApplyBC(v[k], bc));
    }
  }
  ChainTrigger();  // after the voxel loop (common.cuh)
  const Partial red = BlockReduce(part);
  CommitPartial(ws.slot[kSlotV3], slice, sb.block(), sb.count(), red, d.out_n);
}

// The pointwise chain of one slice from its current buffer value to V5, with the statistics known so far.
struct Chain {
  bool cur_is_v3;  // the buffer the later passes read (V3Buffer) holds V3 (the mid pass up-sampled the low-res image)
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
template <bool kShare, typename F>
__device__ __forceinline__ void ForSliceValues(const float* cur, const Dims& d, const SliceBlocks<kShare>& sb, F&& f) {
  const int out_n = static_cast<int>(d.out_n);
  if ((out_n & 3) == 0) {
    const float4* c4 = reinterpret_cast<const float4*>(cur);
    const int n4 = out_n >> 2;
    for (int chunk = sb.block(); chunk < d.nchunks; chunk += sb.count()) {
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
  for (int chunk = sb.block(); chunk < d.nchunks; chunk += sb.count()) {
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

// Slot 1's statistics from slot 0's pass. Slot 1's input is x1 = ±(α·y0 + β) with α >= 0 (slot 0's retain-stats,
// or α = 1, β = 0), + when both slots invert or neither does. Where x1's range r1 is at least the 1e-7 floor, slot 1's
// base (x1 − min x1)/r1 is then, in exact arithmetic, y0's position in its own range: with y0 = p0·r0 + min0 and
// p0 = GammaPower (0 at the slice's minimum, p0max at its maximum), q = p0/p0max (+) or 1 − p0/p0max (−), whatever α
// and β are. So the mode-0 pass, which knows neither α nor β, reduces the statistics of p1 = q^γ1 beside those of y0,
// and y1 = p1·r1 + min x1 makes slot 1's statistics affine images of p1's (FusedY1Stats), in floats that differ from
// the direct pass's by rounding (≈ 1e-7 of the range). The mode-2 pass reduces y1 itself where that does not hold:
// r1 < 1e-7 (the floor then is not the range), p0max = 0 (a constant slice), or r1 under 2^-8 of x1's magnitude
// (x1's rounding, ulp(|x1|) ≈ 2^-23·|x1|, would then be more than 2^-15 of its range: slot 1's direct base is
// visibly quantised where q is not), and in slices without slot 0 (no p1 was reduced).
struct FusedY1 {
  float k;    // 1 / p0max
  bool flip;  // x1 decreases with y0
  float g1;
};

__device__ __forceinline__ float GammaPowerMax(const GammaConsts& g0) {  // GammaPower at the slice's maximum
  return PowFtz(fmaxf(__fmul_rn(g0.r, g0.inv_r), 0.f), g0.g);
}

__device__ __forceinline__ FusedY1 MakeFusedY1(const GammaConsts& g0, const ChannelParams& cp) {
  return FusedY1{1.f / GammaPowerMax(g0), (cp.gamma_invert[0] != 0) != (cp.gamma_invert[1] != 0), cp.gamma[1]};
}

// Whether the fused mode-0 pass's p1 statistics stand for slot 1's (ch: slot 0 with retain, slot 1 without).
__device__ __forceinline__ bool FusedY1Valid(const Chain& ch) {
  const float magnitude = fmaxf(fabsf(ch.g1.mn), fabsf(__fadd_rn(ch.g1.mn, ch.g1.r)));
  return ch.g0.on && ch.g1.on && ch.g1.retain && GammaPowerMax(ch.g0) > 0.f &&
         ch.g1.r >= fmaxf(1e-7f, 0x1p-8f * magnitude);
}

// y1 = p1·r1 + min x1, voxel by voxel: the statistics of y1 from those of p1 (r1 >= 1e-7 > 0).
__device__ __forceinline__ Stats FusedY1Stats(const Stats& p, const GammaConsts& g1) {
  Stats y;
  y.mean = __fadd_rn(__fmul_rn(p.mean, g1.r), g1.mn);
  y.std = __fmul_rn(p.std, g1.r);
  y.mn = __fadd_rn(__fmul_rn(p.mn, g1.r), g1.mn);
  y.mx = __fadd_rn(__fmul_rn(p.mx, g1.r), g1.mn);
  return y;
}

// mode 0: statistics of gamma slot 0's core output y0 (retain-stats of slot 0, and the input statistics of slot 1
// via GammaOutStats); mode 2: of slot 1's core output y1. (Slot 1's input V4 needs no pass of its own.)
// kFused (batches where every slice that runs slot 1 with retain-stats runs slot 0 too: no kStageGamma1Alone): mode
// 0 also reduces slot 1's p1 into slot 1's result (FusedY1), and mode 2, launched narrow, converts those into y1's
// where they stand for them, else reduces y1 itself. Other batches run the passes as before fusion: fusing there
// made the mode-0 pass longer (≈ 14 → 21 µs a batch) while a slice with slot 1 alone kept the mode-2 pass at full
// width. Register bounds: 8 blocks per SM (32 registers, no spills) but the fused mode 0, at 6 (40 registers; with
// nvcc 13.0 its spills lie outside the voxel loop, in MakeChain and the reduction and commit: 4 bytes per-slice, 40
// with slice shares since s50's commit tail; at 32 registers, 28 bytes spilled inside the loop).
template <int mode, bool kFused, bool kShare>
__global__ void __launch_bounds__(kThreads, mode == 0 && kFused ? 6 : 8)
    GammaStatsKernel(Dims d, const SampleParams* params, Workspace ws, ChainState st) {
  const BlockClockScope clocks(mode == 0 ? kClockGamma0 : kClockGamma2);  // block_clocks.cuh
  SliceBlocks<kShare> sb;
  const auto has_work = [&](const ChannelParams& q) {
    return (SlicePasses(q, d.out) & (mode == 0 ? kPassGamma0 : kPassGamma1)) != 0;
  };
  if (!sb.Take(d, params, has_work)) {
    ChainWait();
    return;
  }
  const int slice = sb.slice();
  const int b = slice / d.c, c = slice % d.c;
  const ChannelParams& cp = params[b].ch[c];
  // Per-slice blocks: !has_work(cp), in the form the passes had before slice shares (the same machine code).
  if (!kShare && mode == 0 && (cp.gamma[0] == 0.f || (!cp.gamma_retain[0] && cp.gamma[1] == 0.f))) {
    ChainWait();
    return;
  }
  if (!kShare && mode == 2 && (cp.gamma[1] == 0.f || !cp.gamma_retain[1])) {
    ChainWait();
    return;
  }
  const float* cur = V3Buffer(ws, cp, d, st) + static_cast<int64_t>(slice) * d.out_n;
  ChainWait();  // the statistics and the image are the earlier passes'
  const Chain ch = MakeChain(ws, cp, d, slice, st, mode == 2, mode == 2, false);
  if (kFused && mode == 2 && FusedY1Valid(ch)) {  // slice-uniform: the mode-0 pass reduced p1
    if (sb.block() == 0 && threadIdx.x == 0) {
      Stats* y1 = ws.slot[kSlotY1].result + slice;
      *y1 = FusedY1Stats(*y1, ch.g1);
    }
    return;
  }
  if (kFused && mode == 0 && cp.gamma[1] != 0.f && cp.gamma_retain[1]) {  // slice-uniform
    const FusedY1 f = MakeFusedY1(ch.g0, cp);
    Partial y0 = EmptyPartial(), p1 = EmptyPartial();
    ForSliceValues(cur, d, sb, [&](float v) {
      const float p0 = GammaPower(ch.V3(v), ch.g0);
      Accumulate(y0, __fadd_rn(__fmul_rn(p0, ch.g0.r), ch.g0.mn));  // GammaCore
      const float t = __fmul_rn(p0, f.k);
      Accumulate(p1, PowFtz(fmaxf(f.flip ? __fsub_rn(1.f, t) : t, 0.f), f.g1));
    });
    ChainTrigger();  // after the voxel loop (common.cuh)
    // y0 and p1 under one ticket (y0's counter; the mode-2 pass's own reduction of y1 keeps slot 1's at 0): one
    // acq_rel ticket a block, one last-block tail, the bits of two CommitPartial calls (s47, timed s50).
    Partial red[2] = {y0, p1};
    BlockReduceN<2>(red);
    const StatsSlot slots[2] = {ws.slot[kSlotY0], ws.slot[kSlotY1]};
    CommitPartials<2>(slots, slice, sb.block(), sb.count(), red, d.out_n);
    return;
  }
  Partial part = EmptyPartial();
  if (mode == 0) {
    ForSliceValues(cur, d, sb, [&](float v) { Accumulate(part, GammaCore(ch.V3(v), ch.g0)); });
  } else {
    ForSliceValues(cur, d, sb, [&](float v) { Accumulate(part, GammaCore(GammaFull(ch.V3(v), ch.g0), ch.g1)); });
  }
  ChainTrigger();  // after the voxel loop (common.cuh)
  const Partial red = BlockReduce(part);
  CommitPartial(ws.slot[mode == 0 ? kSlotY0 : kSlotY1], slice, sb.block(), sb.count(), red, d.out_n);
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

// The final pass's vectorised stages: the thread's 4·kG values pass each stage together, and every per-slice flag
// (low-res done, contrast, a gamma slot's on / invert / retain) is tested once per chunk and compiled into the stage
// instead of being tested, selected and branched around per voxel. Each voxel still gets the same operations in the
// same order as ch.V3 then GammaFull twice: the same bits (s30 in NOTES.md; s32 on the H100: every transform on B=2
// C=1 −1.1 %, C=4 −1.6 %, default probabilities B=2 C=1 −5.3 %).
template <bool kContrast, int kN>
__device__ __forceinline__ void BCStageAs(float (&x)[kN], BCConsts k) {
  k.contrast = kContrast;
#pragma unroll
  for (int i = 0; i < kN; ++i) x[i] = ApplyBC(x[i], k);
}

template <bool kInv, bool kRetain, int kN>
__device__ __forceinline__ void GammaStageAs(float (&x)[kN], GammaConsts c) {
  c.on = true;
  c.inv = kInv;
  c.retain = kRetain;
#pragma unroll
  for (int i = 0; i < kN; ++i) x[i] = GammaFull(x[i], c);
}

template <int kN>
__device__ __forceinline__ void GammaStage(float (&x)[kN], const GammaConsts& c) {
  if (!c.on) return;
  if (c.inv) {
    c.retain ? GammaStageAs<true, true>(x, c) : GammaStageAs<true, false>(x, c);
  } else {
    c.retain ? GammaStageAs<false, true>(x, c) : GammaStageAs<false, false>(x, c);
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
  // The thread's first group of each chunk as (j0, j1, j2), advanced by the grid's stride of chunks, and the stride
  // within a chunk unravelled once: not two integer divisions each per chunk.
  IndexWalker at(blockIdx.x * (kChunk / 4) + threadIdx.x, P4, gridDim.x * (kChunk / 4));
  int t[3];
  Unravel(kThreads, P4, t[0], t[1], t[2]);
  for (int chunk = blockIdx.x; chunk < d.nchunks; chunk += gridDim.x, at.Step(P4)) {
    const int base = chunk * (kChunk / 4) + threadIdx.x;
    int src[kG];
    IndexWalker walk = at;
    walk.s0 = t[0];
    walk.s1 = t[1];
    walk.s2 = t[2];
#pragma unroll
    for (int k = 0; k < kG; ++k, walk.Step(P4)) {
      const int o = base + k * kThreads;
      src[k] = o >= n4 ? 0 : (mirror ? MirrorIndex(walk.j0, walk.j1, walk.j2, P4, mirror) : o);
    }
    float x[4 * kG];
    uchar4 m[kG];
#pragma unroll
    for (int k = 0; k < kG; ++k) {
      const bool in = base + k * kThreads < n4;
      float4 v = in ? __ldg(c4 + src[k]) : make_float4(0.f, 0.f, 0.f, 0.f);
      if (mirror & 4) v = make_float4(v.w, v.z, v.y, v.x);
      x[4 * k] = v.x;
      x[4 * k + 1] = v.y;
      x[4 * k + 2] = v.z;
      x[4 * k + 3] = v.w;
      m[k] = (in && m4) ? m4[base + k * kThreads] : make_uchar4(0, 0, 0, 0);
    }
    if (!ch.cur_is_v3) ch.bc.contrast ? BCStageAs<true>(x, ch.bc) : BCStageAs<false>(x, ch.bc);
    GammaStage(x, ch.g0);
    GammaStage(x, ch.g1);
#pragma unroll
    for (int k = 0; k < kG; ++k) {
      const int o = base + k * kThreads;
      if (o >= n4) continue;
      float4 r;
      r.x = m[k].x ? 0.f : x[4 * k];
      r.y = m[k].y ? 0.f : x[4 * k + 1];
      r.z = m[k].z ? 0.f : x[4 * k + 2];
      r.w = m[k].w ? 0.f : x[4 * k + 3];
      StoreOut4(out, dt, out_base + 4 * static_cast<int64_t>(o), r);
    }
  }
}

// The final pass of slice `slice` one voxel at a time (rows that are not whole float4 groups: FinalVec4's fallback).
__device__ __forceinline__ void FinalScalar(const Dims& d, const Chain& ch, const float* cur, const uint8_t* mask_b,
                                            int mirror, void* out, OutDType dt, int slice) {
  const int P[3] = {d.out[0], d.out[1], d.out[2]};
  const int out_n = static_cast<int>(d.out_n);
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

// The deep-supervision picks of every level and sample as one run of chunks, (level, sample, chunk) in that order,
// dealt to the launch's blocks by their linear index after each has done its share of its slice: no block rows of
// their own (the former B·levels rows of one wave's width started after the slices' blocks, most to return at once).
__device__ __forceinline__ void DsShare(const DsArgs& ds, int samples) {
  const int nblocks = gridDim.x * gridDim.y;
  int k = blockIdx.y * gridDim.x + blockIdx.x;
  for (int l = 0; l < ds.num_ds; ++l) {
    const int chunks = (ds.ds[l][0] * ds.ds[l][1] * ds.ds[l][2] + kChunk - 1) / kChunk;
    const int level_n = chunks * samples;
    for (; k < level_n; k += nblocks) DsPicks(ds, l, k / chunks, k % chunks);
    k -= level_n;  // the same stride run, counted from the next level's first chunk
  }
}

// Block row blockIdx.y: slice blockIdx.y's final pass, then the block's deal of the deep-supervision picks (DsShare:
// no launch or block rows of their own; s30 in NOTES.md, s32 on the H100: default probabilities B=2 C=1 −2.0 %,
// every transform on +0.3 %).
__global__ void __launch_bounds__(kThreads) FinalKernel(Dims d, const SampleParams* params, Workspace ws, ChainState st,
                                                        void* out, OutDType dt, const uint8_t* mask, int vec4,
                                                        const DsArgs ds) {
  const BlockClockScope clocks(kClockFinal);  // block_clocks.cuh
  if (ds.io_dev != nullptr) out = ds.io_dev->out_image;  // graph replay: this batch's buffers
  const int slice = blockIdx.y;
  const int b = slice / d.c, c = slice % d.c;
  const SampleParams& sp = params[b];
  const ChannelParams& cp = sp.ch[c];
  const float* cur = V3Buffer(ws, cp, d, st) + static_cast<int64_t>(slice) * d.out_n;
  ChainWait();  // the chain's statistics and image; the seg (DsShare) is the spatial kernel's
  const Chain ch = MakeChain(ws, cp, d, slice, st, true, true, true);
  const bool do_mask = mask != nullptr && cp.mask != 0;
  const int mirror = sp.mirror_mask;
  const int out_n = static_cast<int>(d.out_n);
  const uint8_t* mask_b = do_mask ? mask + static_cast<int64_t>(b) * out_n : nullptr;
  if (vec4) {
    FinalVec4(d, ch, cur, mask_b, mirror, out, dt, static_cast<int64_t>(slice) * out_n);
  } else {
    FinalScalar(d, ch, cur, mask_b, mirror, out, dt, slice);
  }
  DsShare(ds, d.b);
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

// Launches a slice pass (all three take (Dims, params, Workspace, ChainState)) with at most `max_per_slice` blocks a
// slice: per-slice blocks, grid (per slice, slices), or, with ChainState::slice_share, one row of per slice · slices
// blocks that the slices with work deal out among themselves (common.cuh SliceBlocks). Each build's own wave.
template <auto kPerSlice, auto kShared>
cudaError_t LaunchSlicePass(const Dims& d, int max_per_slice, const SampleParams* d_params, const Workspace& ws,
                            const ChainState& st, bool chain, cudaStream_t stream) {
  const int slices = d.b * d.c;
  if (st.slice_share) {
    const int per_slice = std::min(WaveGrid<kShared>(d), max_per_slice);
    return LaunchChained(kShared, dim3(static_cast<unsigned int>(per_slice * slices)), kThreads, stream, chain, d,
                         d_params, ws, st);
  }
  const int per_slice = std::min(WaveGrid<kPerSlice>(d), max_per_slice);
  return LaunchChained(kPerSlice, dim3(per_slice, slices), kThreads, stream, chain, d, d_params, ws, st);
}
}  // namespace

cudaError_t LaunchMid(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws, const ChainState& st,
                      bool chain, cudaStream_t stream) {
  const Dims d = MakeDims(shape);
  return LaunchSlicePass<MidKernel<false>, MidKernel<true>>(d, d.nchunks, d_params, ws, st, chain, stream);
}

// The fused mode-2 pass has work only in degenerate slices (FusedY1): a few blocks a slice, so that a launch whose
// blocks all return at once stays short (ncu, all-on B=2 C=1 128³: 4.2 µs; 4.7 at the full wave of 1,056 blocks).
constexpr int kDegenerateBlocks = 16;

template <int mode, bool kFused>
cudaError_t LaunchGammaStatsBuild(const Dims& d, const SampleParams* d_params, const Workspace& ws,
                                  const ChainState& st, cudaStream_t stream) {
  return LaunchSlicePass<GammaStatsKernel<mode, kFused, false>, GammaStatsKernel<mode, kFused, true>>(
      d, mode == 2 && kFused ? kDegenerateBlocks : d.nchunks, d_params, ws, st, /*chain=*/true, stream);
}

cudaError_t LaunchGammaStats(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws,
                             const ChainState& st, int mode, cudaStream_t stream) {
  const Dims d = MakeDims(shape);
  if (mode == 0) {
    return st.gamma_fused ? LaunchGammaStatsBuild<0, true>(d, d_params, ws, st, stream)
                          : LaunchGammaStatsBuild<0, false>(d, d_params, ws, st, stream);
  }
  return st.gamma_fused ? LaunchGammaStatsBuild<2, true>(d, d_params, ws, st, stream)
                        : LaunchGammaStatsBuild<2, false>(d, d_params, ws, st, stream);
}

cudaError_t LaunchFinal(const BatchShape& shape, const SampleParams* d_params, const PipelineIO& io,
                        const PipelineIO* d_io, const Workspace& ws, const ChainState& st, bool with_mask,
                        cudaStream_t stream) {
  const Dims d = MakeDims(shape);
  const int vec4 = (shape.out[2] % 4 == 0 && reinterpret_cast<uintptr_t>(io.out_image) % 16 == 0) ? 1 : 0;
  return LaunchChained(FinalKernel, dim3(WaveGrid<FinalKernel>(d), shape.batch * shape.channels), kThreads, stream,
                       /*chain=*/true, d, d_params, ws, st, io.out_image, shape.out_dtype,
                       with_mask ? ws.mask : nullptr, vec4, MakeDsArgs(shape, io, d_io));
}

}  // namespace augmentd::cuda::internal
