// augment/kernels/cuda/common.cuh — internal helpers shared by the pipeline kernels: error checks,
// workspace layout, deterministic per-slice statistics, index rules of PyTorch's interpolation, and the
// pointwise intensity chain (brightness, contrast, gamma) evaluated identically by every pass.
//
// Numerics: pointwise transforms use explicitly rounded float ops (__fmul_rn, __fadd_rn, ...) so the
// compiler does not contract them into FMAs; that keeps them bit-identical to PyTorch's CPU kernels,
// which bgv2 runs.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <utility>

#include "augment/kernels/cuda/block_clocks.cuh"
#include "augment/kernels/cuda/pipeline_cuda.h"

#define AUGMENTD_CUDA_RETURN_IF_ERROR(expr) \
  do {                                      \
    const cudaError_t err_ = (expr);        \
    if (err_ != cudaSuccess) return err_;   \
  } while (0)

// After every launch: a launch-configuration error surfaces here (asynchronous faults surface later).
#define AUGMENTD_CUDA_RETURN_IF_LAUNCH_ERROR() AUGMENTD_CUDA_RETURN_IF_ERROR(cudaGetLastError())

namespace augmentd::cuda::internal {

inline constexpr int kThreads = 256;                     // threads per block of every slice kernel
inline constexpr int kVoxPerThread = 8;                  // voxels per thread
inline constexpr int kChunk = kThreads * kVoxPerThread;  // voxels per block

// Per-block partial statistics of one (sample, channel) slice.
struct Partial {
  double sum;
  double sumsq;
  float mn;
  float mx;
};

// Finalised statistics of one slice: mean, unbiased std (torch.std), min, max.
struct Stats {
  float mean;
  float std;
  float mn;
  float mx;
};

// One reduction target: partials [slices][max_blocks], counters [slices], results [slices].
struct StatsSlot {
  Partial* partials;
  unsigned int* counters;
  Stats* result;
  int max_blocks;
};

enum SlotId { kSlotV1 = 0, kSlotV3 = 1, kSlotY0 = 2, kSlotV4 = 3, kSlotY1 = 4, kNumSlots = 5 };

// Per (sample, component) statistics of the smoothed elastic field: max |f| (float bits, f >= 0 compares as
// unsigned) and the sum of f (for the grid mean).
struct ElasticStat {
  double sum;
  unsigned int max_bits;
  unsigned int pad;
};
inline constexpr int kElasticOutPerThread = 8;  // outputs per thread of the smoothing kernel (register window)
// Circular taps stored doubled (t[i] = K[i mod n], i < 2n + kElasticOutPerThread) so no modulo is needed.
inline constexpr int kElasticTapStride = 2 * kMaxElasticAxis + kElasticOutPerThread;

struct Workspace {
  float* x1;        // (B, C, P) scratch image
  float* x2;        // (B, C, P) scratch image
  uint8_t* mask;    // (B, P) seg < 0 at the final (mirrored) position
  int32_t* lowest;  // (B) lowest labels
  StatsSlot slot[kNumSlots];
  // Elastic deformation (only when BatchShape::elastic): fields (B, 3, P) and their ping-pong scratch, the
  // smoothing taps (B, 3 components, 3 axes, kElasticTapStride) and per-(sample, component) max/sum.
  float* field;
  float* field_tmp;
  float* taps;
  ElasticStat* estat;
  float* elastic_partial_max;   // (B·3, tiles of the last smoothing pass)
  double* elastic_partial_sum;
  size_t bytes;
};

inline size_t AlignUp(size_t v) { return (v + 255) / 256 * 256; }

// Partial statistics entries of the elastic smoothing (elastic.cu); 0 without BatchShape::elastic.
int64_t ElasticPartials(const BatchShape& shape);

inline int64_t Prod(const int32_t* s) { return int64_t{s[0]} * s[1] * s[2]; }

inline int BlocksPerSlice(const BatchShape& shape) { return static_cast<int>((Prod(shape.out) + kChunk - 1) / kChunk); }

// The spatial kernel walks bricks of kBrickZ x kBrickY x kBrickX output voxels (a warp covers 4 x 8 in
// (axis 1, axis 2), so its sampling points stay compact in the input: fewer cache lines per gather).
inline constexpr int kBrickZ = kVoxPerThread, kBrickY = 16, kBrickX = 16;
struct BrickGrid {
  int nbx, nby, nbz;  // bricks along axes 2, 1 and 0; the spatial kernel's grid is (nbx·nby, nbz, B or B·C)
};
inline BrickGrid SpatialBrickGrid(const BatchShape& s) {
  return {(s.out[2] + kBrickX - 1) / kBrickX, (s.out[1] + kBrickY - 1) / kBrickY, (s.out[0] + kBrickZ - 1) / kBrickZ};
}
inline int SpatialBricks(const BatchShape& s) {  // a sample's bricks (its statistics partials)
  const BrickGrid g = SpatialBrickGrid(s);
  return g.nbx * g.nby * g.nbz;
}
// Whether the spatial kernel's grid holds the shape: nbz <= 65535 (grid.y: patch axis 0 <= 524,280) and blockIdx.x =
// by·nbx + bx < 2^23 (DivSmall's contract). Pipelines always fit (SpatialConfig's patch axes are <= 4096: nbz <= 512,
// nbx·nby <= 65,536); ValidShape checks it for RunPipeline's direct callers.
inline bool SpatialGridFits(const BatchShape& s) {
  const BrickGrid g = SpatialBrickGrid(s);
  return g.nbz <= 65535 && int64_t{g.nbx} * g.nby < (int64_t{1} << 23);
}

// Carves the workspace (base may be null to only compute the size).
inline Workspace CarveWorkspace(const BatchShape& shape, void* base) {
  Workspace ws{};
  const size_t slices = static_cast<size_t>(shape.batch) * shape.channels;
  const size_t n = slices * static_cast<size_t>(Prod(shape.out));
  const int max_blocks = std::max(BlocksPerSlice(shape), SpatialBricks(shape));
  char* p = static_cast<char*>(base);
  size_t off = 0;
  auto take = [&](size_t bytes) {
    char* r = p ? p + off : nullptr;
    off += AlignUp(bytes);
    return r;
  };
  ws.x1 = reinterpret_cast<float*>(take(n * sizeof(float)));
  ws.x2 = reinterpret_cast<float*>(take(n * sizeof(float)));
  ws.mask = reinterpret_cast<uint8_t*>(take(static_cast<size_t>(shape.batch) * Prod(shape.out)));
  ws.lowest = reinterpret_cast<int32_t*>(take(static_cast<size_t>(shape.batch) * sizeof(int32_t)));
  for (int s = 0; s < kNumSlots; ++s) {
    ws.slot[s].partials = reinterpret_cast<Partial*>(take(slices * max_blocks * sizeof(Partial)));
    ws.slot[s].counters = reinterpret_cast<unsigned int*>(take(slices * sizeof(unsigned int)));
    ws.slot[s].result = reinterpret_cast<Stats*>(take(slices * sizeof(Stats)));
    ws.slot[s].max_blocks = max_blocks;
  }
  if (shape.elastic) {
    const size_t fn = static_cast<size_t>(shape.batch) * 3 * static_cast<size_t>(Prod(shape.out));
    ws.field = reinterpret_cast<float*>(take(fn * sizeof(float)));
    ws.field_tmp = reinterpret_cast<float*>(take(fn * sizeof(float)));
    ws.taps = reinterpret_cast<float*>(take(static_cast<size_t>(shape.batch) * 9 * kElasticTapStride * sizeof(float)));
    ws.estat = reinterpret_cast<ElasticStat*>(take(static_cast<size_t>(shape.batch) * 3 * sizeof(ElasticStat)));
    const size_t parts = static_cast<size_t>(ElasticPartials(shape));
    ws.elastic_partial_max = reinterpret_cast<float*>(take(parts * sizeof(float)));
    ws.elastic_partial_sum = reinterpret_cast<double*>(take(parts * sizeof(double)));
  }
  ws.bytes = off;
  return ws;
}

// ---------------------------------------------------------------------------------------------------
// Deterministic block reduction and last-block finalisation.

__device__ __forceinline__ void WarpReduce(Partial& p) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    p.sum += __shfl_down_sync(0xffffffffu, p.sum, o);
    p.sumsq += __shfl_down_sync(0xffffffffu, p.sumsq, o);
    p.mn = fminf(p.mn, __shfl_down_sync(0xffffffffu, p.mn, o));
    p.mx = fmaxf(p.mx, __shfl_down_sync(0xffffffffu, p.mx, o));
  }
}

__device__ __forceinline__ Partial EmptyPartial() { return Partial{0.0, 0.0, INFINITY, -INFINITY}; }

// Block-wide reduction (blockDim.x == kThreads); the result is valid in thread 0. Fixed order.
__device__ __forceinline__ Partial BlockReduce(Partial p) {
  __shared__ Partial warp_part[kThreads / 32];
  WarpReduce(p);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();  // warp_part may still be read by a previous call
  if (lane == 0) warp_part[warp] = p;
  __syncthreads();
  if (warp == 0) {
    p = lane < kThreads / 32 ? warp_part[lane] : EmptyPartial();
    WarpReduce(p);
  }
  return p;
}

// A slice's Stats from the reduction of its partials over `count` voxels (mean, unbiased std, min, max).
__device__ __forceinline__ Stats SliceStats(const Partial& acc, int64_t count) {
  const double n = static_cast<double>(count);
  const double mean = acc.sum / n;
  const double var = count > 1 ? (acc.sumsq - acc.sum * mean) / (n - 1.0) : 0.0;
  Stats s;
  s.mean = static_cast<float>(mean);
  s.std = static_cast<float>(sqrt(var > 0.0 ? var : 0.0));
  s.mn = acc.mn;
  s.mx = acc.mx;
  return s;
}

// The slice's last-block tail (CommitPartials below; s50, NOTES.md): the block timeline measured it at ≈ 3 µs a
// commit on the chain's critical path with an SC fence before each ticket, another in every thread of the last
// block, and one partial loaded at a time; ≈ 1.4 µs with the ticket an acq_rel add and the loads issued together
// (every transform on B=2 C=1 −1.4 %, H100, the same bits).
template <int kN>
inline constexpr int TailLoads = kN == 1 ? 2 : 1;  // partials a thread loads before adding (24 bytes each). kN = 2
                                                   // stays at 1: at 2, under the fused gamma pass's 40-register
                                                   // bound, nvcc interleaved the loads and adds again.

__device__ __forceinline__ Partial LoadPartialCg(const Partial* q) {
  return Partial{__ldcg(&q->sum), __ldcg(&q->sumsq), __ldcg(&q->mn), __ldcg(&q->mx)};
}

// One partial into another: the sums added, the extremes kept (the slices' tails here, chain_stats.cu's finalize).
__device__ __forceinline__ void AddPartial(Partial& acc, const Partial& q) {
  acc.sum += q.sum;
  acc.sumsq += q.sumsq;
  acc.mn = fminf(acc.mn, q.mn);
  acc.mx = fmaxf(acc.mx, q.mx);
}

// The slice's ticket (thread 0): this block's place among the slice's commits, nblocks - 1 for the last. Its release
// half publishes this thread's partial stores; its acquire half, in the last block, every earlier block's.
__device__ __forceinline__ unsigned int TakeTicket(unsigned int* counter) {
  unsigned int old;
  asm volatile("atom.add.acq_rel.gpu.u32 %0, [%1], 1;" : "=r"(old) : "l"(counter) : "memory");
  return old;
}

// Block-wide reductions of kN partials side by side (blockDim.x == kThreads); the results are valid in thread 0.
// Fixed order, each partial's the same as alone: reducing two together gives BlockReduce's bits for each, with
// two barriers instead of four.
template <int kN>
__device__ __forceinline__ void BlockReduceN(Partial (&p)[kN]) {
  __shared__ Partial warp_part[kN][kThreads / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int k = 0; k < kN; ++k) WarpReduce(p[k]);
  __syncthreads();  // warp_part may still be read by a previous call
  if (lane == 0) {
#pragma unroll
    for (int k = 0; k < kN; ++k) warp_part[k][warp] = p[k];
  }
  __syncthreads();
  if (warp == 0) {
#pragma unroll
    for (int k = 0; k < kN; ++k) {
      p[k] = lane < kThreads / 32 ? warp_part[k][lane] : EmptyPartial();
      WarpReduce(p[k]);
    }
  }
}

// Stores this block's partials p[k] (valid in thread 0) into slots[k] for `slice` under one ticket, slots[0]'s
// counter: the slice's last block reduces each slot's partials in a fixed order (whichever block is last, the same
// bits; kN = 2 gives two CommitPartial calls' bits), writes its Stats over `count` voxels and re-arms the counter.
template <int kN>
__device__ __forceinline__ void CommitPartials(const StatsSlot (&slots)[kN], int slice, int block, int nblocks,
                                               const Partial (&p)[kN], int64_t count) {
  __shared__ bool is_last;
  if (threadIdx.x == 0) {
#pragma unroll
    for (int k = 0; k < kN; ++k) slots[k].partials[static_cast<int64_t>(slice) * slots[k].max_blocks + block] = p[k];
    const unsigned int ticket = TakeTicket(slots[0].counters + slice);
    is_last = ticket == static_cast<unsigned int>(nblocks - 1);
  }
  __syncthreads();
  if (!is_last) return;  // the ticket's acquire (thread 0) and the barrier order this block's loads after every partial
  Partial acc[kN];
  const Partial* parts[kN];
#pragma unroll
  for (int k = 0; k < kN; ++k) {
    acc[k] = EmptyPartial();
    parts[k] = slots[k].partials + static_cast<int64_t>(slice) * slots[k].max_blocks;
  }
  // Thread t adds partials t, t + kThreads, t + 2·kThreads, ... in that order (whichever block is last, the same
  // bits); kL of them are loaded before any is added, so their loads are in flight together.
  constexpr int kL = TailLoads<kN>;
  for (int i0 = threadIdx.x; i0 < nblocks; i0 += kL * kThreads) {
    Partial q[kL][kN];
#pragma unroll
    for (int l = 0; l < kL; ++l) {
#pragma unroll
      for (int k = 0; k < kN; ++k) q[l][k] = i0 + l * kThreads < nblocks ? LoadPartialCg(parts[k] + i0 + l * kThreads)
                                                                          : EmptyPartial();
    }
#pragma unroll
    for (int l = 0; l < kL; ++l) {
#pragma unroll
      for (int k = 0; k < kN; ++k) {
        if (i0 + l * kThreads < nblocks) AddPartial(acc[k], q[l][k]);
      }
    }
  }
  BlockReduceN<kN>(acc);
  if (threadIdx.x == 0) {
#pragma unroll
    for (int k = 0; k < kN; ++k) slots[k].result[slice] = SliceStats(acc[k], count);
    slots[0].counters[slice] = 0u;
  }
}

// Stores this block's partial (p valid in thread 0) for `slice`; the last block of the slice reduces all
// partials in a fixed order, writes the slice's Stats over `count` voxels and re-arms the counter.
__device__ __forceinline__ void CommitPartial(const StatsSlot& slot, int slice, int block, int nblocks,
                                              const Partial& p, int64_t count) {
  const StatsSlot slots[1] = {slot};
  const Partial ps[1] = {p};
  CommitPartials<1>(slots, slice, block, nblocks, ps, count);
}

__device__ __forceinline__ void Accumulate(Partial& p, float v) {
  p.sum += static_cast<double>(v);
  p.sumsq += static_cast<double>(v) * static_cast<double>(v);
  p.mn = fminf(p.mn, v);
  p.mx = fmaxf(p.mx, v);
}

// ---------------------------------------------------------------------------------------------------
// PyTorch index rules (ATen/native/UpSample.h).

// nearest-exact: src = min(floor((i + 0.5) * scale), in − 1), scale = float(in) / out, product in double
// then narrowed to float as in ATen.
__host__ __device__ __forceinline__ int NearestExactSrc(int i, int in, int out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const int s = static_cast<int>(floorf(static_cast<float>((i + 0.5) * static_cast<double>(scale))));
  return s < in - 1 ? s : in - 1;
}

// Trilinear (align_corners=False) source index and weight of the upper neighbour along one axis;
// ratio = float(in) / out (precomputed per block).
__device__ __forceinline__ void LinearSrc(int i, int in, int out, float ratio, int& i0, int& i1, float& l1) {
  if (in == out) {
    i0 = i1 = i;
    l1 = 0.f;
    return;
  }
  float src = __fsub_rn(__fmul_rn(ratio, __fadd_rn(static_cast<float>(i), 0.5f)), 0.5f);
  if (src < 0.f) src = 0.f;
  i0 = min(static_cast<int>(floorf(src)), in - 1);
  l1 = fminf(fmaxf(__fsub_rn(src, static_cast<float>(i0)), 0.f), 1.f);
  i1 = i0 + (i0 < in - 1 ? 1 : 0);
}

// ---------------------------------------------------------------------------------------------------
// Pointwise chain. Stage values: V1 (after blur) -> V2 (brightness, contrast) -> V3 (after low-res)
// -> V4 (gamma slot 0) -> V5 (gamma slot 1). Per-slice constants are built once per block.

// Brightness, then contrast with preserve_range. Stats of brightness·V1 follow from those of V1 (fl(m·x)
// is monotone in x for m > 0, so min/max are exact; the mean is within an ulp).
struct BCConsts {
  float m;
  bool contrast;
  float mean, mn, mx, factor;
};

__device__ __forceinline__ BCConsts MakeBC(const ChannelParams& cp, const Stats* s_v1) {
  BCConsts k;
  k.m = cp.brightness;
  k.contrast = cp.contrast != 0.f;
  k.factor = cp.contrast;
  k.mean = k.mn = k.mx = 0.f;
  if (k.contrast) {
    const Stats s = *s_v1;
    k.mean = __fmul_rn(s.mean, k.m);
    k.mn = __fmul_rn(s.mn, k.m);
    k.mx = __fmul_rn(s.mx, k.m);
  }
  return k;
}

__device__ __forceinline__ float ApplyBC(float v, const BCConsts& k) {
  v = __fmul_rn(v, k.m);
  if (k.contrast) {
    v = __fadd_rn(__fmul_rn(__fsub_rn(v, k.mean), k.factor), k.mean);
    v = fminf(fmaxf(v, k.mn), k.mx);
  }
  return v;
}

// Gamma slot: x = (inverted ? −v : v); y = ((x − min)/max(r, 1e-7))^γ·r + min; retain: (y − mean(y))·σ_x/
// max(σ_y, 1e-7) + μ_x; result un-inverted. Fast-math pow (ex2/lg2): relative error ~1e-6 of the range.
struct GammaConsts {
  bool on, inv, retain;
  float g, mn, r, inv_r;
  float mu, mean_y, scale;
};

__device__ __forceinline__ GammaConsts MakeGammaCore(const ChannelParams& cp, int k, const Stats* s_in) {
  GammaConsts c{};
  c.on = cp.gamma[k] != 0.f;
  if (!c.on) return c;
  c.inv = cp.gamma_invert[k] != 0;
  c.retain = cp.gamma_retain[k] != 0;
  c.g = cp.gamma[k];
  const Stats s = *s_in;
  c.mn = c.inv ? -s.mx : s.mn;
  const float mx = c.inv ? -s.mn : s.mx;
  c.r = __fsub_rn(mx, c.mn);
  c.inv_r = 1.f / fmaxf(c.r, 1e-7f);
  c.mu = c.inv ? -s.mean : s.mean;
  c.scale = s.std;  // completed by AddRetain
  return c;
}

__device__ __forceinline__ void AddRetain(GammaConsts& c, const Stats* s_y) {
  if (!c.on || !c.retain) return;
  const Stats s = *s_y;
  c.mean_y = s.mean;
  c.scale = c.scale / fmaxf(s.std, 1e-7f);
}

// x^g for x >= 0, as __powf computes it (ex2(g · lg2 x) on the special-function unit, ≈ 1e-6 relative) but with the
// approximations' flush-to-zero forms: __powf's non-ftz forms cost 6 more instructions (a compare and a predicated
// rescale around each MUFU) for a denormal base or result. The bits are __powf's wherever base and result are normal;
// a base or result under 2^-126 gives +0 instead: a difference under (2^-126)^g · r in a gamma slot's output (g in
// [0.7, 1.5] in nnU-Net's draws: at most ≈ 2^-88 · r).
// -DAUGMENTD_POW_FTZ=0 (bench A/B only) builds __powf.
#ifndef AUGMENTD_POW_FTZ
#define AUGMENTD_POW_FTZ 1
#endif
__device__ __forceinline__ float PowFtz(float x, float g) {
#if AUGMENTD_POW_FTZ
  float l, r;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(l) : "f"(x));
  const float t = __fmul_rn(l, g);  // __powf's multiply (mul.rn, not flushed)
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(t));
  return r;
#else
  return __powf(x, g);
#endif
}

// ((x − min)/max(r, 1e-7))^γ: the core output before it is scaled back to the range.
__device__ __forceinline__ float GammaPower(float v, const GammaConsts& c) {
  const float x = c.inv ? -v : v;
  return PowFtz(fmaxf(__fmul_rn(__fsub_rn(x, c.mn), c.inv_r), 0.f), c.g);
}

__device__ __forceinline__ float GammaCore(float v, const GammaConsts& c) {
  return __fadd_rn(__fmul_rn(GammaPower(v, c), c.r), c.mn);
}

__device__ __forceinline__ float GammaFull(float v, const GammaConsts& c) {
  if (!c.on) return v;
  float y = GammaCore(v, c);
  if (c.retain) y = __fadd_rn(__fmul_rn(__fsub_rn(y, c.mean_y), c.scale), c.mu);
  return c.inv ? -y : y;
}

// ---------------------------------------------------------------------------------------------------
// Output conversion.

template <typename T>
__device__ __forceinline__ T FromFloat(float v);
template <>
__device__ __forceinline__ float FromFloat<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half FromFloat<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

__device__ __forceinline__ void StoreOut(void* out, OutDType dt, int64_t idx, float v) {
  switch (dt) {
    case OutDType::kFloat16:
      static_cast<__half*>(out)[idx] = FromFloat<__half>(v);
      break;
    case OutDType::kBFloat16:
      static_cast<__nv_bfloat16*>(out)[idx] = FromFloat<__nv_bfloat16>(v);
      break;
    default:
      static_cast<float*>(out)[idx] = v;
      break;
  }
}

// Linear index helpers.
__device__ __forceinline__ void Unravel(int j, const int* p, int& j0, int& j1, int& j2) {
  j2 = j % p[2];
  const int t = j / p[2];
  j1 = t % p[1];
  j0 = t / p[1];
}

// Walks (j0, j1, j2) of the linear index j = first + k·kThreads without divisions in the loop.
struct IndexWalker {
  int j0, j1, j2;
  int s0, s1, s2;
  __device__ __forceinline__ IndexWalker(int first, const int* p, int stride = kThreads) {
    Unravel(first, p, j0, j1, j2);
    Unravel(stride, p, s0, s1, s2);
  }
  __device__ __forceinline__ void Step(const int* p) {
    j2 += s2;
    if (j2 >= p[2]) {
      j2 -= p[2];
      ++j1;
    }
    j1 += s1;
    while (j1 >= p[1]) {
      j1 -= p[1];
      ++j0;
    }
    j0 += s0;
  }
};

__device__ __forceinline__ int MirrorIndex(int j0, int j1, int j2, const int* p, int mirror_mask) {
  if (mirror_mask & 1) j0 = p[0] - 1 - j0;
  if (mirror_mask & 2) j1 = p[1] - 1 - j1;
  if (mirror_mask & 4) j2 = p[2] - 1 - j2;
  return (j0 * p[1] + j1) * p[2] + j2;
}

// Deep-supervision targets: nearest-exact picks of the final seg (B, 1, P) into one (B, 1, Q_l) array per level.
struct DsArgs {
  int P[3];
  int num_ds;
  int ds[kMaxDsLevels][3];
  const int16_t* seg;
  int16_t* out_ds[kMaxDsLevels];
  const PipelineIO* io_dev;  // non-null: seg / out_ds are read from here when the kernel runs (graph replay)
};

inline DsArgs MakeDsArgs(const BatchShape& shape, const PipelineIO& io, const PipelineIO* d_io) {
  DsArgs da{};
  da.io_dev = d_io;
  for (int d = 0; d < 3; ++d) da.P[d] = shape.out[d];
  da.num_ds = shape.num_ds;
  da.seg = io.out_seg;
  for (int l = 0; l < shape.num_ds; ++l) {
    for (int d = 0; d < 3; ++d) da.ds[l][d] = shape.ds[l][d];
    da.out_ds[l] = io.out_ds[l];
  }
  return da;
}

// Chunks of kChunk picks of the largest DS level.
inline int DsChunks(const BatchShape& shape) {
  int64_t max_q = 1;
  for (int l = 0; l < shape.num_ds; ++l) max_q = std::max(max_q, Prod(shape.ds[l]));
  return static_cast<int>((max_q + kChunk - 1) / kChunk);
}

// The picks of chunk `chunk` of level l, sample b (block-wide; blocks past the level's end return).
__device__ __forceinline__ void DsPicks(const DsArgs& a, int l, int b, int chunk) {
  const int Q[3] = {a.ds[l][0], a.ds[l][1], a.ds[l][2]};
  const int qn = Q[0] * Q[1] * Q[2];
  const int pn = a.P[0] * a.P[1] * a.P[2];
  const int base = chunk * kChunk + threadIdx.x;
  if (base >= qn) return;
  IndexWalker walk(base, Q);
  const int16_t* seg_b = (a.io_dev ? a.io_dev->out_seg : a.seg) + static_cast<int64_t>(b) * pn;
  int16_t* dst = (a.io_dev ? a.io_dev->out_ds[l] : a.out_ds[l]) + static_cast<int64_t>(b) * qn;
  int src[kVoxPerThread];
#pragma unroll
  for (int k = 0; k < kVoxPerThread; ++k, walk.Step(Q)) {
    src[k] = (NearestExactSrc(walk.j0, a.P[0], Q[0]) * a.P[1] + NearestExactSrc(walk.j1, a.P[1], Q[1])) * a.P[2] +
             NearestExactSrc(walk.j2, a.P[2], Q[2]);
  }
  int16_t v[kVoxPerThread];
#pragma unroll
  for (int k = 0; k < kVoxPerThread; ++k) v[k] = base + k * kThreads < qn ? __ldg(seg_b + src[k]) : int16_t{0};
#pragma unroll
  for (int k = 0; k < kVoxPerThread; ++k) {
    if (base + k * kThreads < qn) dst[base + k * kThreads] = v[k];
  }
}

// Shape arguments passed by value to every kernel.
struct Dims {
  int b, c;
  int in[3];
  int out[3];
  int64_t in_n;   // prod(in)
  int64_t out_n;  // prod(out)
  int nchunks;    // chunks of kChunk voxels per slice
  int grid;       // blocks per slice of the slice kernels (each loops over chunks, grid-stride)
};

// Multiprocessor count of the current device (cached; sizes the grid-stride launches).
inline int DeviceSmCount() {
  static const int count = [] {
    int dev = 0, n = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess) {
      n = 132;
    }
    return n > 0 ? n : 132;
  }();
  return count;
}

inline Dims MakeDims(const BatchShape& s) {
  Dims d{};
  d.b = s.batch;
  d.c = s.channels;
  for (int i = 0; i < 3; ++i) {
    d.in[i] = s.in[i];
    d.out[i] = s.out[i];
  }
  d.in_n = Prod(s.in);
  d.out_n = Prod(s.out);
  d.nchunks = BlocksPerSlice(s);
  // About four resident blocks per SM over the whole batch; every block then loops over several chunks, so
  // the per-block reduction and its fence are amortised and the grid is one wave.
  const int slices = s.batch * s.channels;
  const int target = (4 * DeviceSmCount() + slices - 1) / slices;
  d.grid = std::max(1, std::min(d.nchunks, target));
  return d;
}

// ---------------------------------------------------------------------------------------------------
// Chained launches (programmatic dependent launch, sm_90; NOTES.md s42). The fused chain's passes after the spatial
// kernel (blur, mid, gamma statistics, final) launch with cudaLaunchAttributeProgrammaticStreamSerialization (all but
// the mid pass right after the crops build in small batches with low-res: RunPipelineFromDevice, NOTES.md s43): a pass
// may start once every block of the kernel before it has called ChainTrigger (or exited), runs its prologue
// (parameters, slice shares, the blur's taps: nothing a kernel of this batch writes) while that kernel drains, and
// waits in ChainWait for it to complete.
// Contract for a kernel launched through LaunchChained:
//   - every block calls ChainWait before its first access to memory that an earlier kernel of the batch writes
//     (images, statistics, seg), and on every path, early exits included; so a kernel completes only after the one
//     before it did, and completion stays transitive along the chain;
//   - before ChainWait it reads only what the host wrote before the batch (parameters, PipelineIO) and writes nothing
//     but shared memory.
// ChainTrigger's places: the spatial kernel's entry (several waves: the next pass launches once the last wave has
// started) and, in the blur, mid and gamma statistics passes, after the voxel loop, before the block's reduction and
// commit, so that the next pass's launch and prologue overlap the commits and the last block's reduction, which the
// dependency waits for (s24). (The slice passes are one wave; the blur is one at B=2 128³ and several at B=8.)
// H100, against plain launches in the same call (two calls, s42): every transform on B=2 C=1 −3.6 % / −2.4 %, C=4
// −1.6 / −0.9 %, B=8 −1.6 / −0.8 %, default probabilities −2.3 / −2.0 % over the mean of the 16 parameter sets but
// +4.2 / +3.8 % at the median, which lies near set 0's time (crops with low-res: +4.8 / +6.5 %; s43 launches that
// mid pass plainly at B·C <= 2); outputs bit-identical. Tried and dropped: the trigger at every kernel's entry (s16's
// place; −2.7 % all-on B=2 C=1), none in the spatial kernel, and per-slice grids with the slice as the fastest block
// index (s42).
// -DAUGMENTD_CHAINED=0 (bench A/B) launches plainly: the helpers compile to nothing, and the machine code is
// session 41's.
#ifndef AUGMENTD_CHAINED
#define AUGMENTD_CHAINED 1
#endif

// Lets the stream's next chained kernel launch once every block of this one has called it or exited.
__device__ __forceinline__ void ChainTrigger() {
#if AUGMENTD_CHAINED && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
  ClockMark(kMarkTriggered);  // block_clocks.cuh (a bench build's timeline; nothing otherwise)
}

// Waits until the stream's previous kernel has completed and its writes are visible (returns at once outside a
// chained launch).
__device__ __forceinline__ void ChainWait() {
#if AUGMENTD_CHAINED && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  ClockMark(kMarkWaited);
}

// Whether the device has programmatic dependent launch (compute capability 9.0 and later; the kernels' waits exist
// only in their sm_90+ code, and augment/kernels/cuda/CMakeLists.txt builds with AUGMENTD_CHAINED=0 when
// AUGMENTD_CUDA_KERNEL_ARCHS has no architecture of 90 or more). Queried once per process, on the device current at
// the first call, like DeviceSmCount: a process that mixes devices of different generations gets the first one's.
inline bool DeviceChains() {
  static const bool on = [] {
    int dev = 0, major = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) {
      (void)cudaGetLastError();
      return false;
    }
    return major >= 9;
  }();
  return on;
}

// `kernel`<<<grid, block, 0, stream>>>(args...), chained to the stream's previous kernel (on a device that chains)
// when `chain`; launched plainly otherwise: its waits then return at once, and its ChainTrigger still lets a chained
// kernel after it start early.
template <typename... Params, typename... Args>
cudaError_t LaunchChained(void (*kernel)(Params...), dim3 grid, dim3 block, cudaStream_t stream, bool chain,
                          Args&&... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.stream = stream;
  cfg.attrs = &attr;
  cfg.numAttrs = AUGMENTD_CHAINED && chain && DeviceChains() ? 1 : 0;
  const cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
  if (err != cudaSuccess) (void)cudaGetLastError();  // as <<<>>> + cudaGetLastError: the next launch starts clean
  return err;
}

// Blocks of the slice passes that run in some slices only (MidKernel, GammaStatsKernel).
// Per-slice blocks (kShare = false): the grid is (per slice, slices) and a slice without work in the pass leaves its
// blocks idle. Slice shares (kShare = true; ChainState::slice_share: kStageSliceIdle and more than two slices): the
// launch is one row of per slice · slices blocks dealt out among the slices with work in the pass, which only the
// device knows (the parameters live there). TakeSliceShare evaluates has_work(slice) for every slice (slice-uniform,
// the same in every block) and, with n such slices, gives block x block x / n of the (x mod n)-th of them; each gets
// min(gridDim.x / n, max_blocks) blocks and the blocks past those return. The share lives in shared memory, read where
// it is used (held in registers it spilled in the 32-register gamma passes). H200 (NOTES.md s22): in batches of 8
// slices where a few run a gamma or low-res, the passes' parallelism was the limit (default probabilities B=2 C=4
// −6 %); in batches of two, shares gained nothing and the ballots cost (+2 … +8 % on those sets), and in batches where
// every slice runs every pass the one-row grid alone cost ≈ 1 %: hence the hint and the slice count.
inline constexpr int kSliceShareMinSlices = 3;
// Whether a batch of this shape has enough slices for shares (ActiveStages' hint and RunPipeline's use of it).
inline bool SliceSharesApply(const BatchShape& s) { return s.batch * s.channels >= kSliceShareMinSlices; }

struct SliceShare {
  int slice;    // b·C + c
  int block;    // this block among the slice's blocks (CommitPartial's block; a grid-stride loop's start)
  int nblocks;  // the slice's blocks (CommitPartial's count; a grid-stride loop's stride)
};

// Called once per kernel by every thread of a block of >= 32 threads, on a one-row grid of at least `slices` blocks
// (so every slice with work gets a block); the returned share is block-uniform (null: this block has none).
template <typename HasWork>
__device__ __forceinline__ const SliceShare* TakeSliceShare(int slices, int max_blocks, HasWork has_work) {
  __shared__ SliceShare sh_share;
  __shared__ bool sh_on;
  if (threadIdx.x < 32) {  // warp 0: ballots over groups of 32 slices
    const int lane = static_cast<int>(threadIdx.x);
    int n = 0;
    for (int s0 = 0; s0 < slices; s0 += 32) {
      n += __popc(__ballot_sync(0xffffffffu, s0 + lane < slices && has_work(s0 + lane)));
    }
    int slice = -1;
    if (n > 0) {
      int k = static_cast<int>(blockIdx.x) % n;  // this block serves the k-th slice with work
      for (int s0 = 0; s0 < slices && slice < 0; s0 += 32) {
        const unsigned int m = __ballot_sync(0xffffffffu, s0 + lane < slices && has_work(s0 + lane));
        const int here = __popc(m);
        if (k < here) {
          const bool kth = ((m >> lane) & 1u) && __popc(m & ((1u << lane) - 1u)) == k;
          slice = s0 + __ffs(__ballot_sync(0xffffffffu, kth)) - 1;
        }
        k -= here;
      }
    }
    if (lane == 0) {
      const int nblocks = n > 0 ? min(static_cast<int>(gridDim.x) / n, max_blocks) : 0;
      const int block = n > 0 ? static_cast<int>(blockIdx.x) / n : 0;
      sh_share = SliceShare{slice, block, nblocks};
      sh_on = block < nblocks;
    }
  }
  __syncthreads();
  return sh_on ? &sh_share : nullptr;
}

// A slice pass's view of its block: the slice, this block among the slice's blocks, and their count; per-slice
// blocks read the block indices (the code the passes ran before slice shares), shares read shared memory.
template <bool kShare>
struct SliceBlocks {
  const SliceShare* share = nullptr;
  // Slice shares: whether TakeSliceShare found this block a share, has_work(ChannelParams) deciding which slices
  // have work. Per-slice blocks: true (the pass then returns where has_work(its slice's parameters) does not hold).
  template <typename HasWork>
  __device__ __forceinline__ bool Take(const Dims& d, const SampleParams* params, HasWork has_work) {
    if constexpr (kShare) {
      share = TakeSliceShare(d.b * d.c, d.nchunks, [&](int s) { return has_work(params[s / d.c].ch[s % d.c]); });
      return share != nullptr;
    } else {
      return true;
    }
  }
  __device__ __forceinline__ int slice() const { return kShare ? share->slice : static_cast<int>(blockIdx.y); }
  __device__ __forceinline__ int block() const { return kShare ? share->block : static_cast<int>(blockIdx.x); }
  __device__ __forceinline__ int count() const { return kShare ? share->nblocks : static_cast<int>(gridDim.x); }
};

// Low-res is on for a slice when its drawn shape is valid (0 < Q_d <= P_d, `out` = P).
__host__ __device__ __forceinline__ bool LowResOn(const ChannelParams& cp, const int32_t* out) {
  return cp.lowres_shape[0] > 0 && cp.lowres_shape[1] > 0 && cp.lowres_shape[2] > 0 && cp.lowres_shape[0] <= out[0] &&
         cp.lowres_shape[1] <= out[1] && cp.lowres_shape[2] <= out[2];
}
__device__ __forceinline__ bool LowResOn(const ChannelParams& cp, const Dims& d) { return LowResOn(cp, d.out); }

// The slice passes one slice (its channel's parameters, patch `out`) runs: mid (low-res (LowResOn) or a gamma slot),
// gamma slot 0's statistics (slot 0 on, with retain-stats or slot 1 on), slot 1's (slot 1 on, with retain-stats).
// ActiveStages' kStageSliceIdle and the slice shares' has_work both read it (intensity.cu).
enum SlicePass : uint32_t { kPassMid = 2u, kPassGamma0 = 4u, kPassGamma1 = 8u };
__host__ __device__ __forceinline__ uint32_t SlicePasses(const ChannelParams& cp, const int32_t* out) {
  const bool mid = LowResOn(cp, out) || cp.gamma[0] != 0.f || cp.gamma[1] != 0.f;
  const bool g0 = cp.gamma[0] != 0.f && (cp.gamma_retain[0] || cp.gamma[1] != 0.f);
  const bool g1 = cp.gamma[1] != 0.f && cp.gamma_retain[1];
  return (mid ? kPassMid : 0u) | (g0 ? kPassGamma0 : 0u) | (g1 ? kPassGamma1 : 0u);
}

}  // namespace augmentd::cuda::internal
