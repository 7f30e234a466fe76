// augment/kernels/cuda/blur.cu — the Gaussian blur stage of the fused chain (intensity.cu runs the rest): one
// tiled launch per batch, separable in shared memory (axis 2, 1, then 0 from a window of planes), reflect padding
// (mirror without repeating the edge), kernel size nearest_odd(6σ + 0.5), taps exp(−t²/2σ²) normalised (bgv2
// GaussianBlurTransform); statistics of the result (contrast input) in its epilogue. Per-tile plan and the two code
// paths (radius ≤ 3 / up to kMaxBlurRadius): NOTES.md v4, v5.
#include <cstdint>

#include <cuda_pipeline_primitives.h>

#include "augment/kernels/cuda/blur_math.h"
#include "augment/kernels/cuda/common.cuh"
#include "augment/kernels/cuda/kernels.h"

// bench A/B (session 55; not timed yet): 1 = BlurFast's stages padded to kLoads·256 floats and every thread's copies
// unconditional (offset 0, a valid element, for those past the halo plane: they land in the padding), so that a
// plane's copies form one basic block: 3 of the compiler's cp.async hazard guards a plane instead of 6 and no branch;
// the plane loops 216 / 177 / 139 → 210 / 170 / 132 instructions (kR 3 / 2 / 1; NOTES.md s55).
#ifndef AUGMENTD_BLUR_PAD_COPIES
#define AUGMENTD_BLUR_PAD_COPIES 0
#endif
// bench A/B (session 56; not timed yet): 1 = where the volume's rows are whole 16-byte chunks (P2 % 4 == 0, the
// source 16-byte aligned), BlurFast's halo rows come in 16-byte copies, one chunk a thread, the stage's rows 40 floats
// from column x0 − 4 (the reflected chunks at the volume's x edges as four 4-byte copies): ≈ 1 copy a thread a plane
// instead of 3-4 (NOTES.md s56).
#ifndef AUGMENTD_BLUR_VEC_COPIES
#define AUGMENTD_BLUR_VEC_COPIES 0
#endif

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

// Tiled separable blur: one block owns a kBlurTY x kBlurTX column tile of one slice over kBlurTZ planes of axis 0
// and streams the planes it needs (reflected halo of radius r0 along axis 0):
//   per plane: load the (kBlurTY + 2·r1) x (kBlurTX + 2·r2) reflected tile into shared memory (BlurFast: by
//   asynchronous copies two planes ahead), blur along axis 2, then axis 1, and keep the result in a window of
//   2·r0 + 1 planes (BlurFast: registers; BlurGeneral: a shared-memory ring); once the window holds an output plane's,
//   blur along axis 0 and write it.
// Every tap sum runs in tap order with explicitly rounded operations (as the 1-D passes before it did); the
// axis order is 2, 1, 0 (bgv2: 0, 1, 2), a rounding-level difference. In BlurGeneral each thread reads only its own
// ring entries, so that ring needs no barrier. Epilogue: statistics of the result (contrast input).
inline constexpr int kBlurTZ = 16;  // kBlurTX, kBlurTY: blur_math.h
inline constexpr int kBlurRing = 2 * kMaxBlurRadius + 1;
inline constexpr int kBlurHaloY = kBlurTY + 2 * kMaxBlurRadius, kBlurHaloX = kBlurTX + 2 * kMaxBlurRadius;
inline constexpr int kBlurLoadRows = kBlurHaloY / (kThreads / 32), kBlurLoadCols = (kBlurHaloX + 31) / 32;
static_assert(kThreads == kBlurThreads && kBlurTX == 32 && kBlurTY == 2 * (kThreads / 32), "two columns per thread");

struct BlurArgs {
  Dims d;
  const SampleParams* params;
  const float* src;
  float* dst;
  int want_stats;
  StatsSlot slot;
  int tiles_x;
};

// Store and statistics of one blurred voxel.
struct BlurSink {
  float* o;
  int P1, P2;
  bool stats;
  __device__ __forceinline__ void Emit(int z, int y, int x, float v, Partial& part) const {
    o[(static_cast<int64_t>(z) * P1 + y) * P2 + x] = v;
    if (stats) Accumulate(part, v);
  }
};

// Fast path, every radius <= kR: the taps are compile-time (weights zero-padded to radius kR: a zero tap adds an
// exact 0), fused multiply-adds, and the axis-0 window lives in registers (shifted one plane per step). A thread
// owns output rows 2·ty and 2·ty + 1 of the tile (they share 2·kR of their 2·kR + 2 axis-1 taps). The taps of all
// three axes (zero-padded, in `wpad`, each axis's 32 bytes apart: float4 reads) are re-read from shared memory each
// plane (broadcast loads) so that they are live only in their pass, and the halo copies use 32-bit offsets (register
// pressure at 64 registers, 4 blocks per SM; s11 in NOTES.md), each added to the plane's pointer as a 64-bit value
// (the build s55 timed). Per plane (s29; s32 on the H100: every transform on B=2 C=1 −5.0 %, C=4 −4.7 %, B=8 −4.5 %
// against the loop before it, the same output bits):
// - the halo tile is one flat run of kHY·kHX values in shared memory (row stride kHX), so a thread issues
//   ⌈kHY·kHX / 256⌉ copies a plane, not (kHY / 8 rounded up) x (kHX / 32 rounded up) mostly predicated-off ones, each
//   from a 32-bit offset computed once (the reflection of its row and column) plus the plane's;
// - the axis-2 pass gives a thread two adjacent columns of a halo row: its kW + 1 inputs are kR + 1 float2 loads, and
//   the two sums keep the single-column tap order;
// - the outputs are stored through a pointer advanced one plane per output plane, bounds tested once.
// (kVec, the A/B switch AUGMENTD_BLUR_VEC_COPIES: stage rows of 40 floats from column x0 − 4, one 16-byte copy a
// thread a plane, and for odd kR the axis-2 reads start one float early: kR + 2 float2 loads.)
// The halo planes come by asynchronous copies (no registers held) into three stages, two planes ahead, and the axis-2
// results go to two buffers in turn (xb, then xb1), so one barrier a plane suffices (s55; H100: every transform on
// C=4 −2.1 %, B=8 −1.7 %, B=2 C=1 within its rounds' spread, against the register prefetch one plane ahead with two
// barriers a plane). Plane p's barrier follows its axis-2 pass and publishes both that pass and plane p + 1's copies
// (each thread waits for its own first); past it every thread is done reading plane p's stage, which plane p + 3's
// copies then take, and a thread writes plane p's buffer again (plane p + 2) only after the next barrier, which every
// thread reaches after its axis-1 pass of plane p. Stages and xb1 lie in `ring`, which otherwise only BlurGeneral
// uses, past the taps (`wpad`, at its start).
template <int kR, bool kVec>
__device__ __forceinline__ void BlurFast(const BlurArgs& a, const float (*w)[kBlurRing], const int* rad,
                                         float (*xb)[kBlurTX], float* ring, const float* s, const BlurSink& sink,
                                         Partial& part) {
  constexpr int kW = 2 * kR + 1, kHY = kBlurTY + 2 * kR, kHX = kBlurTX + 2 * kR, kN = kHY * kHX;
  constexpr int kLoads = (kN + kThreads - 1) / kThreads;
  constexpr int kXRows = kThreads / (kBlurTX / 2);  // halo rows the axis-2 pass covers a step (16 threads a row)
  constexpr int kXSteps = (kHY + kXRows - 1) / kXRows;
  static_assert(kHX % 2 == 0 && kHY % 2 == 0, "float2 rows; a warp's two rows are both in or both out");
  constexpr int kWStride = 8;  // each axis's taps start 32 bytes apart: read as float4s
  static_assert(kW <= kWStride, "taps of one axis within its stride");
  constexpr bool kPadCopies = AUGMENTD_BLUR_PAD_COPIES != 0;
  // kVec: a stage row is kVX floats from column x0 − 4 (halo column 0 at kS0), kVX / 4 chunks of 16 bytes, one chunk
  // a thread (below); a stage is 256 chunks, so that the threads past the plane's kVChunks copy into its padding.
  constexpr int kVRow = kHaloChunkRow, kVX = 4 * kVRow, kVChunks = kHY * kVRow;
  static_assert(kVX == kBlurTX + 8, "a stage row: the tile and 4 columns either side");
  static_assert(!kVec || (kR <= 4 && kVChunks <= kThreads), "one chunk a thread");
  constexpr int kSX = kVec ? kVX : kHX, kS0 = kVec ? 4 - kR : 0;  // stage row stride, column of halo column 0
  constexpr int kSh = kS0 & 1;                                    // float2 reads start one float early
  constexpr int kPairs = (kW + 2 + kSh) / 2;                      // float2 reads a row step
  constexpr int kStage = kVec ? 4 * kThreads : kPadCopies ? kLoads * kThreads : (kN + 3) / 4 * 4;  // 16-byte aligned
  static_assert(4 * kWStride + 3 * kStage + kHY * kBlurTX <= kBlurRing * kBlurTY * kBlurTX, "fits the ring");
  float* const wpad = ring;
  float* const stages = ring + 4 * kWStride;
  float(*const xb1)[kBlurTX] = reinterpret_cast<float(*)[kBlurTX]>(stages + 3 * kStage);
  if (threadIdx.x < 3 * kW) {
    const int axis = threadIdx.x / kW, off = threadIdx.x % kW - kR;
    wpad[axis * kWStride + off + kR] = (off >= -rad[axis] && off <= rad[axis]) ? w[axis][off + rad[axis]] : 0.f;
  }
  __syncthreads();
  const float* wz = wpad;
  const float* wy = wpad + kWStride;
  const float* wx = wpad + 2 * kWStride;
  const int P0 = a.d.out[0], P1 = a.d.out[1], P2 = a.d.out[2];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const int y0 = (blockIdx.x / a.tiles_x) * kBlurTY, x0 = (blockIdx.x % a.tiles_x) * kBlurTX;
  const int zs = blockIdx.y * kBlurTZ, ze = min(zs + kBlurTZ, P0);
  // Without kVec: the k-th value a thread copies is the tile's element threadIdx.x + 256·k; only the last k can fall
  // past kN.
  // kVec: the thread's 16-byte chunk (PlanHaloChunk, blur_math.h): from chunk.off (or, at the volume's x edges, four
  // reflected columns from chunk.off − chunk.vc) to stage + chunk.dst.
  HaloChunk chunk{};
  int off[kVec ? 1 : kLoads];
  if constexpr (kVec) {
    chunk = PlanHaloChunk(threadIdx.x, kHY, y0 - kR, x0, P1, P2);
  } else {
#pragma unroll
    for (int k = 0; k < kLoads; ++k) {
      const int i = threadIdx.x + kThreads * k;
      off[k] = i < kN ? BlurReflect(y0 - kR + i / kHX, P1) * P2 + BlurReflect(x0 - kR + i % kHX, P2)
                      : (kPadCopies ? 0 : -1);
    }
  }
  const int xc = 2 * (threadIdx.x & 15), xr = threadIdx.x >> 4;
  const int ya = 2 * ty, x = x0 + tx;
  const bool out0 = y0 + ya < P1 && x < P2, out1 = y0 + ya + 1 < P1 && x < P2;
  const int64_t plane_n = static_cast<int64_t>(P1) * P2;
  float* o = sink.o + (static_cast<int64_t>(zs) * P1 + y0 + ya) * P2 + x;
  float zwin[2][kW];
#pragma unroll
  for (int t = 0; t < kW; ++t) zwin[0][t] = zwin[1][t] = 0.f;
  const int p_first = zs - kR, p_last = ze - 1 + kR;
  // Plane p's copies into stage `st`, as one commit group (an empty one past the last plane, so that the waits'
  // counts hold).
  const auto issue = [&](float* st, int p) {
    if (p <= p_last) {
      const float* src = s + BlurReflect(p, P0) * P1 * P2;  // 32-bit offsets (a slice has < 2^30 voxels)
      if constexpr (kVec) {
        float* const d = st + chunk.dst;
        if (chunk.edge) {
          const float* const row = src + (chunk.off - chunk.vc);
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            __pipeline_memcpy_async(d + e, row + BlurReflect(chunk.vc + e, P2), sizeof(float));
          }
        } else {
          __pipeline_memcpy_async(d, src + chunk.off, 4 * sizeof(float));
        }
      } else {
#pragma unroll
        for (int k = 0; k < kLoads; ++k) {
          if (kPadCopies || (k + 1) * kThreads <= kN || off[k] >= 0) {  // in the tile
            __pipeline_memcpy_async(st + threadIdx.x + kThreads * k, src + off[k], sizeof(float));
          }
        }
      }
    }
    __pipeline_commit();
  };
  issue(stages, p_first);
  issue(stages + kStage, p_first + 1);
  issue(stages + 2 * kStage, p_first + 2);
  __pipeline_wait_prior(2);
  __syncthreads();
  float* st = stages;  // plane p's stage, then plane p + 3's
  for (int p = p_first; p <= p_last; ++p) {
    float(*const xbp)[kBlurTX] = ((p - p_first) & 1) ? xb1 : xb;
    {  // axis 2: halo rows of the stage into xbp
      float wt[kW];
#pragma unroll
      for (int t = 0; t < kW; ++t) wt[t] = wx[t];
#pragma unroll
      for (int step = 0; step < kXSteps; ++step) {
        const int i = xr + kXRows * step;
        if (step + 1 < kXSteps || i < kHY) {
          const float2* row = reinterpret_cast<const float2*>(st + i * kSX + xc + kS0 - kSh);
          float u[2 * kPairs];
#pragma unroll
          for (int q = 0; q < kPairs; ++q) {
            const float2 pair = row[q];
            u[2 * q] = pair.x;
            u[2 * q + 1] = pair.y;
          }
          const float* const v = u + kSh;
          float acc0 = 0.f, acc1 = 0.f;
#pragma unroll
          for (int t = 0; t < kW; ++t) {
            acc0 = __fmaf_rn(wt[t], v[t], acc0);
            acc1 = __fmaf_rn(wt[t], v[t + 1], acc1);
          }
          *reinterpret_cast<float2*>(&xbp[i][xc]) = make_float2(acc0, acc1);
        }
      }
    }
    __pipeline_wait_prior(1);  // plane p + 1's copies (plane p + 2's may still be in flight)
    __syncthreads();
    issue(st, p + 3);
    // Axis 1 of the thread's two rows, the axis-0 window's shift and, once the window holds an output plane's, that
    // plane's two outputs.
    float col[kW + 1];
#pragma unroll
    for (int t = 0; t <= kW; ++t) col[t] = xbp[ya + t][tx];
    float v0 = 0.f, v1 = 0.f;
#pragma unroll
    for (int t = 0; t < kW; ++t) {
      v0 = __fmaf_rn(wy[t], col[t], v0);
      v1 = __fmaf_rn(wy[t], col[t + 1], v1);
    }
#pragma unroll
    for (int t = 0; t + 1 < kW; ++t) {
      zwin[0][t] = zwin[0][t + 1];
      zwin[1][t] = zwin[1][t + 1];
    }
    zwin[0][kW - 1] = v0;
    zwin[1][kW - 1] = v1;
    if (p - kR >= zs) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float acc = 0.f;
#pragma unroll
        for (int t = 0; t < kW; ++t) acc = __fmaf_rn(wz[t], zwin[h][t], acc);
        if (h == 0 ? out0 : out1) {
          o[h * P2] = acc;
          if (sink.stats) Accumulate(part, acc);
        }
      }
      o += plane_n;
    }
    st = st == stages + 2 * kStage ? stages : st + kStage;
  }
}

// General path (any radius <= kMaxBlurRadius; rare: sigma > ~1.08): run-time taps, no prefetch (few registers), the
// axis-0 window in a shared-memory ring of 2·r0 + 1 planes; each thread owns rows ty and ty + 8 and reads only its own ring entries (no barrier needed).
__device__ __forceinline__ void BlurGeneral(const BlurArgs& a, const float (*w)[kBlurRing], const int* rad,
                                            float (*tile)[kBlurHaloX], float (*xb)[kBlurTX],
                                            float (*ring)[kBlurTY][kBlurTX], const float* s, const BlurSink& sink,
                                            Partial& part) {
  const int r0 = rad[0], r1 = rad[1], r2 = rad[2];
  const int P0 = a.d.out[0], P1 = a.d.out[1], P2 = a.d.out[2];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const int y0 = (blockIdx.x / a.tiles_x) * kBlurTY, x0 = (blockIdx.x % a.tiles_x) * kBlurTX;
  const int zs = blockIdx.y * kBlurTZ, ze = min(zs + kBlurTZ, P0);
  const int hy = kBlurTY + 2 * r1, hx = kBlurTX + 2 * r2;
  int row_off[kBlurLoadRows], col_off[kBlurLoadCols];
#pragma unroll
  for (int ri = 0; ri < kBlurLoadRows; ++ri) {
    const int i = ty + ri * (kThreads / 32);
    row_off[ri] = i < hy ? BlurReflect(y0 - r1 + i, P1) * P2 : -1;
  }
#pragma unroll
  for (int ci = 0; ci < kBlurLoadCols; ++ci) {
    const int k = tx + ci * 32;
    col_off[ci] = k < hx ? BlurReflect(x0 - r2 + k, P2) : -1;
  }
  const int x = x0 + tx;
  const int nring = 2 * r0 + 1;
  const int p_first = zs - r0, p_last = ze - 1 + r0;
  int slot = 0;
  for (int p = p_first; p <= p_last; ++p) {
    const float* sp = s + static_cast<int64_t>(BlurReflect(p, P0)) * P1 * P2;
    for (int ri = 0; ri < kBlurLoadRows; ++ri) {
      for (int ci = 0; ci < kBlurLoadCols; ++ci) {
        if (row_off[ri] >= 0 && col_off[ci] >= 0) {
          tile[ty + ri * (kThreads / 32)][tx + ci * 32] = __ldg(sp + row_off[ri] + col_off[ci]);
        }
      }
    }
    __syncthreads();
    for (int i = ty; i < hy; i += kThreads / 32) {
      float acc = 0.f;
      for (int t = 0; t <= 2 * r2; ++t) acc = __fmaf_rn(w[2][t], tile[i][tx + t], acc);
      xb[i][tx] = acc;
    }
    __syncthreads();
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int yy = ty + 8 * h;
      float acc = 0.f;
      for (int t = 0; t <= 2 * r1; ++t) acc = __fmaf_rn(w[1][t], xb[yy + t][tx], acc);
      ring[slot][yy][tx] = acc;
    }
    const int zo = p - r0;
    if (zo >= zs) {
      // The window of zo occupies every ring slot, oldest first at slot + 1.
      const int first = slot + 1 == nring ? 0 : slot + 1;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int yy = ty + 8 * h, y = y0 + yy;
        float acc = 0.f;
        int q = first;
        for (int t = 0; t < nring; ++t) {
          acc = __fmaf_rn(w[0][t], ring[q][yy][tx], acc);
          q = q + 1 == nring ? 0 : q + 1;
        }
        if (y < P1 && x < P2) sink.Emit(zo, y, x, acc, part);
      }
    }
    slot = slot + 1 == nring ? 0 : slot + 1;
  }
}

__global__ void __launch_bounds__(kThreads, 4) BlurTiledKernel(const BlurArgs a) {
  const BlockClockScope clocks(kClockBlur);  // block_clocks.cuh
  const int slice = blockIdx.z;
  const int b = slice / a.d.c, c = slice % a.d.c;
  const ChannelParams& cp = a.params[b].ch[c];
  if (cp.blur_sigma[0] == 0.f) {  // slice-uniform
    ChainWait();
    return;
  }
  __shared__ float w[3][kBlurRing];
  __shared__ int rad[3];
  __shared__ __align__(16) float tile[kBlurHaloY][kBlurHaloX];  // BlurGeneral's halo plane
  __shared__ __align__(16) float xb[kBlurHaloY][kBlurTX];
  __shared__ __align__(16) float ring[kBlurRing][kBlurTY][kBlurTX];  // BlurFast: taps (float4s), stages, xb1
  // The taps: w[axis][t] = exp(−x²/2) / Σ exp(−x²/2), x = (t − r) / σ, in double (bgv2's float64 kernel). Each tap's
  // exp in a lane of its own (threads 0 … 3·kBlurRing − 1), not 2·k dependent exps in one lane per axis while the
  // block waits; summed in tap order by one lane per axis, then divided in parallel.
  __shared__ double tap_exp[3][kBlurRing];
  __shared__ double tap_sum[3];
  const auto tap_count = [&](int axis) { return min(max(KernelSizeFor(cp.blur_sigma[axis]), 1), kBlurRing); };
  const int tap_axis = threadIdx.x / kBlurRing, tap = threadIdx.x % kBlurRing;
  int taps = 0;  // k of this thread's axis (threads < 3·kBlurRing)
  if (threadIdx.x < 3 * kBlurRing) {
    const double sigma = cp.blur_sigma[tap_axis];
    taps = tap_count(tap_axis);
    if (tap < taps) {
      const double x = static_cast<double>(tap - (taps - 1) / 2) / sigma;
      tap_exp[tap_axis][tap] = exp(-0.5 * x * x);
    }
  }
  __syncthreads();
  if (threadIdx.x < 3) {
    const int axis = threadIdx.x;
    const int k = tap_count(axis);
    double sum = 0.0;
    for (int t = 0; t < k; ++t) sum += tap_exp[axis][t];
    tap_sum[axis] = sum;
    rad[axis] = (k - 1) / 2;
  }
  __syncthreads();
  if (tap < taps) w[tap_axis][tap] = static_cast<float>(tap_exp[tap_axis][tap] / tap_sum[tap_axis]);
  __syncthreads();
  ChainWait();  // the taps above need only the parameters; the source is the spatial kernel's
  BlurSink sink;
  sink.o = a.dst + static_cast<int64_t>(slice) * a.d.out_n;
  sink.P1 = a.d.out[1];
  sink.P2 = a.d.out[2];
  sink.stats = a.want_stats != 0;
  const float* s = a.src + static_cast<int64_t>(slice) * a.d.out_n;
  Partial part = EmptyPartial();
  const int rmax = max(rad[0], max(rad[1], rad[2]));
#if AUGMENTD_BLUR_VEC_COPIES
  const bool vec = sink.P2 % 4 == 0 && reinterpret_cast<uintptr_t>(s) % 16 == 0;  // whole 16-byte chunks
#else
  constexpr bool vec = false;
#endif
  if (vec && rmax <= 1) {
    BlurFast<1, true>(a, w, rad, xb, &ring[0][0][0], s, sink, part);
  } else if (vec && rmax <= 2) {
    BlurFast<2, true>(a, w, rad, xb, &ring[0][0][0], s, sink, part);
  } else if (vec && rmax <= 3) {
    BlurFast<3, true>(a, w, rad, xb, &ring[0][0][0], s, sink, part);
  } else if (rmax <= 1) {
    BlurFast<1, false>(a, w, rad, xb, &ring[0][0][0], s, sink, part);
  } else if (rmax <= 2) {
    BlurFast<2, false>(a, w, rad, xb, &ring[0][0][0], s, sink, part);
  } else if (rmax <= 3) {
    BlurFast<3, false>(a, w, rad, xb, &ring[0][0][0], s, sink, part);
  } else {
    BlurGeneral(a, w, rad, tile, xb, ring, s, sink, part);
  }
  ChainTrigger();  // after the voxel loop (common.cuh)
  if (sink.stats) {
    const Partial red = BlockReduce(part);
    CommitPartial(a.slot, slice, blockIdx.y * gridDim.x + blockIdx.x, gridDim.x * gridDim.y, red, a.d.out_n);
  }
}

}  // namespace

int KernelSizeForHost(double sigma) { return KernelSizeFor(sigma); }

cudaError_t LaunchBlur(const BatchShape& shape, const SampleParams* d_params, const Workspace& ws, bool want_stats,
                       cudaStream_t stream) {
  BlurArgs a{};
  a.d = MakeDims(shape);
  a.params = d_params;
  a.src = ws.x1;
  a.dst = ws.x2;
  a.want_stats = want_stats ? 1 : 0;
  a.slot = ws.slot[kSlotV1];
  a.tiles_x = (shape.out[2] + kBlurTX - 1) / kBlurTX;
  const int tiles_y = (shape.out[1] + kBlurTY - 1) / kBlurTY;
  const dim3 grid(a.tiles_x * tiles_y, (shape.out[0] + kBlurTZ - 1) / kBlurTZ, shape.batch * shape.channels);
  return LaunchChained(BlurTiledKernel, grid, kThreads, stream, /*chain=*/true, a);
}


}  // namespace augmentd::cuda::internal
