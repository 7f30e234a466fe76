// apply_random_binary_operator's kernels (its CUDA stage: apply_random_binary_operator_cuda.cc). One "round" handles
// at most one applied channel per sample (the stage runs a round per position of the samples' application lists).
// Each operator pass is the CPU's exact separable dilation (binary_operator_internal::ApplyOperator): with the
// footprint's per-axis costs h (k entries) and the pass input s (m = x[b, a] != 0, or the first pass's result; ¬ of
// it for an erosion pass),
//   1. BinopRowKernel (last axis): nearest[i] = the j minimising h[j] over s(i + j − o) = 1 in the row (255: none);
//   2. BinopColumnKernel (axis 1): the (j2, j1) minimising h[j2] + h[j1] over j2 = nearest(i + (j1 − o)·d2) into
//      `pair` (j2 << 8 | j1, 2 bytes a voxel instead of the float64 value: the plane pass reads 4× less);
//   3. BinopPlaneKernel (axis 0, none for 2D samples): D = min_j0 (h[j2] + h[j1]) + h[j0] over the pairs at
//      i + (j0 − o)·d1·d2; out = D ≤ r2 (¬ of it for erosion) — exactly the footprint's own float64 sum, as the CPU;
//   4. BinopApplyKernel: other channels of channel_idx ← 0 where r & ¬m; x[b, a] ← r as 1/0.
// Work per voxel and pass: 3k loads and adds (k ≈ 2r + 1; r = 8: 51), coalesced along the last axis, instead of the
// footprint's ~k²·π/4 row tests. Only IEEE float64 additions with round to nearest (__dadd_rn: never contracted) and
// comparisons: GPU = CPU bit for bit.
#include <cstdint>

#include "augment/kernels/cuda/chain_common.cuh"
#include "augment/transforms/apply_random_binary_operator/binop_cuda_types.h"

namespace augmentd::cuda::chain {
namespace {

constexpr uint8_t kNone = 255;        // no set voxel in the row window (k ≤ 65 < 255 for r ≤ 32)
constexpr uint16_t kNoPair = 0xffff;  // no set voxel in the column window

__device__ __forceinline__ int32_t PassOp(const BinopSample& r, int32_t pass) { return pass == 0 ? r.pass1 : r.pass2; }

// Pass input along the last axis: from the image channel (pass 0, also writes m0) or from the first pass's result.
__global__ void BinopRowKernel(const BinopSample* __restrict__ recs, const double* __restrict__ costs, int32_t pass,
                               int32_t channels, int32_t d0, int32_t d1, int32_t d2, const float* __restrict__ x,
                               const uint8_t* __restrict__ src, uint8_t* __restrict__ m0,
                               uint8_t* __restrict__ nearest) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  const BinopSample r = recs[b];
  const int32_t op = PassOp(r, pass);
  if (!r.on || op == kBinopNone) return;
  const int64_t n = int64_t{d0} * d1 * d2;
  const bool want = op != kBinopErode;  // erosion dilates ¬s
  const double* h = costs + r.costs_offset;
  const int32_t k = r.k, o = (k - 1) / 2;
  const float* xa = x + (static_cast<int64_t>(b) * channels + r.channel) * n;
  const uint8_t* sb = pass == 0 ? nullptr : src + static_cast<int64_t>(b) * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    const int32_t z = static_cast<int32_t>(i % d2);
    const int64_t row = i - z;
    if (pass == 0) m0[static_cast<int64_t>(b) * n + i] = xa[i] != 0.0f;
    const int32_t j_lo = max(0, o - z), j_hi = min(k, d2 + o - z);
    double best = 0;
    int32_t best_j = kNone;
    for (int32_t j = j_lo; j < j_hi; ++j) {
      const int64_t q = row + z + j - o;
      const bool v = pass == 0 ? xa[q] != 0.0f : sb[q] != 0;
      if (v != want) continue;
      const double c = h[j];
      if (best_j == kNone || c < best) {
        best = c;
        best_j = j;
      }
    }
    nearest[static_cast<int64_t>(b) * n + i] = static_cast<uint8_t>(best_j);
  }
}

__global__ void BinopColumnKernel(const BinopSample* __restrict__ recs, const double* __restrict__ costs,
                                  int32_t pass, int32_t d0, int32_t d1, int32_t d2,
                                  const uint8_t* __restrict__ nearest, uint16_t* __restrict__ pair) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  const BinopSample r = recs[b];
  if (!r.on || PassOp(r, pass) == kBinopNone) return;
  const int64_t n = int64_t{d0} * d1 * d2;
  const double* h = costs + r.costs_offset;
  const int32_t k = r.k, o = (k - 1) / 2;
  const uint8_t* nb = nearest + static_cast<int64_t>(b) * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    const int32_t y = static_cast<int32_t>((i / d2) % d1);
    const int32_t j_lo = max(0, o - y), j_hi = min(k, d1 + o - y);
    double best = 0;
    uint16_t best_pair = kNoPair;
    for (int32_t j = j_lo; j < j_hi; ++j) {
      const uint8_t v = nb[i + int64_t{j - o} * d2];
      if (v == kNone) continue;
      const double c = __dadd_rn(h[v], h[j]);
      if (best_pair == kNoPair || c < best) {
        best = c;
        best_pair = static_cast<uint16_t>((v << 8) | j);
      }
    }
    pair[static_cast<int64_t>(b) * n + i] = best_pair;
  }
}

// The float64 value (h[j2] + h[j1]) of a pair, +inf for none.
__device__ __forceinline__ double PairCost(const double* h, uint16_t p) {
  return p == kNoPair ? __longlong_as_double(0x7ff0000000000000LL) : __dadd_rn(h[p >> 8], h[p & 0xff]);
}

__global__ void BinopPlaneKernel(const BinopSample* __restrict__ recs, const double* __restrict__ costs, int32_t pass,
                                 int32_t d0, int32_t d1, int32_t d2, const uint16_t* __restrict__ pair,
                                 uint8_t* __restrict__ out) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  const BinopSample r = recs[b];
  const int32_t op = PassOp(r, pass);
  if (!r.on || op == kBinopNone) return;
  const int64_t plane = int64_t{d1} * d2, n = plane * d0;
  const double* h = costs + r.costs_offset;
  const int32_t k = r.k, o = (k - 1) / 2;
  const uint16_t* pb = pair + static_cast<int64_t>(b) * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    double best;
    if (r.ndim == 2) {
      best = PairCost(h, pb[i]);
    } else {
      const int32_t a = static_cast<int32_t>(i / plane);
      const int32_t j_lo = max(0, o - a), j_hi = min(k, d0 + o - a);
      best = __longlong_as_double(0x7ff0000000000000LL);  // +inf
      for (int32_t j = j_lo; j < j_hi; ++j) {
        const uint16_t p = pb[i + int64_t{j - o} * plane];
        if (p == kNoPair) continue;
        const double c = __dadd_rn(PairCost(h, p), h[j]);
        best = c < best ? c : best;
      }
    }
    const bool hit = best <= r.r2;
    out[static_cast<int64_t>(b) * n + i] = op == kBinopErode ? !hit : hit;
  }
}

__global__ void BinopApplyKernel(const BinopSample* __restrict__ recs, int32_t channels, int64_t n,
                                 const uint8_t* __restrict__ m0, const uint8_t* __restrict__ r1,
                                 const uint8_t* __restrict__ r2, float* __restrict__ x) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  const BinopSample r = recs[b];
  if (!r.on) return;
  const uint8_t* res = (r.pass2 != kBinopNone ? r2 : r1) + static_cast<int64_t>(b) * n;
  const uint8_t* m = m0 + static_cast<int64_t>(b) * n;
  float* xb = x + static_cast<int64_t>(b) * channels * n;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    const bool v = res[i] != 0;
    if (v && !m[i]) {
      for (int32_t c = 0; c < channels; ++c)
        if ((r.others >> c) & 1u) xb[int64_t{c} * n + i] = 0.0f;
    }
    xb[int64_t{r.channel} * n + i] = v ? 1.0f : 0.0f;
  }
}

}  // namespace

cudaError_t LaunchBinaryOperatorRound(int32_t batch, int32_t channels, const int32_t shape[3], float* x,
                                      const BinopSample* recs, const double* costs, bool second_pass, uint8_t* m0,
                                      uint8_t* r1, uint8_t* r2, uint8_t* nearest, uint16_t* pair,
                                      cudaStream_t stream) {
  const int32_t d0 = shape[0], d1 = shape[1], d2 = shape[2];
  const int64_t n = int64_t{d0} * d1 * d2;
  const dim3 grid = SliceGrid(n, batch);
  const int threads = internal::kThreads;
  for (int32_t pass = 0; pass < (second_pass ? 2 : 1); ++pass) {
    BinopRowKernel<<<grid, threads, 0, stream>>>(recs, costs, pass, channels, d0, d1, d2, x, r1, m0, nearest);
    BinopColumnKernel<<<grid, threads, 0, stream>>>(recs, costs, pass, d0, d1, d2, nearest, pair);
    BinopPlaneKernel<<<grid, threads, 0, stream>>>(recs, costs, pass, d0, d1, d2, pair, pass == 0 ? r1 : r2);
  }
  BinopApplyKernel<<<grid, threads, 0, stream>>>(recs, channels, n, m0, r1, r2, x);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::chain
