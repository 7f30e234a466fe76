// apply_random_binary_operator's kernels (its CUDA stage: apply_random_binary_operator_cuda.cc). One "round" handles
// at most one applied channel per sample (the stage runs a round per position of the samples' application lists):
//   1. BinopPrefix: per line (d0, d1) of each sample, m = (x[b, a] != 0) into `m0` and the prefix counts of m (or of
//      ¬m for an erosion pass) along the last axis into `prefix` (d2 + 1 entries per line);
//   2. BinopDilate: per voxel, OR over the footprint's runs [lo, hi] at row offset (d0, d1) of
//      prefix[line + offset](z + lo .. z + hi) > 0 — the CPU's Dilate3 (zeros outside; erosion = ¬dilation(¬m));
//      a second pass (opening, closing) repeats 1–2 on the first pass's result;
//   3. BinopApply: other channels of channel_idx ← 0 where r & ¬m; x[b, a] ← r as 1/0.
// Integer arithmetic only: the result equals the CPU's exactly.
#include <cstdint>

#include "augment/kernels/cuda/chain_common.cuh"
#include "augment/transforms/apply_random_binary_operator/binop_cuda_types.h"

namespace augmentd::cuda::chain {
namespace {

// Line prefix counts of the pass input: from the image channel (pass 0, also writes m0) or from a mask.
__global__ void BinopPrefixKernel(const BinopSample* __restrict__ recs, int32_t pass, int32_t channels, int32_t d0,
                                  int32_t d1, int32_t d2, const float* __restrict__ x, const uint8_t* __restrict__ src,
                                  uint8_t* __restrict__ m0, int32_t* __restrict__ prefix) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  const BinopSample r = recs[b];
  const int32_t op = pass == 0 ? r.pass1 : r.pass2;
  if (!r.on || op == kBinopNone) return;
  const int64_t n = int64_t{d0} * d1 * d2, lines = int64_t{d0} * d1;
  const bool invert = op == kBinopErode;
  AUGMENTD_CHAIN_FOR_VOXELS(l, lines) {
    int32_t* p = prefix + (static_cast<int64_t>(b) * lines + l) * (d2 + 1);
    int32_t acc = 0;
    p[0] = 0;
    if (pass == 0) {
      const float* xl = x + (static_cast<int64_t>(b) * channels + r.channel) * n + l * d2;
      uint8_t* ml = m0 + static_cast<int64_t>(b) * n + l * d2;
      for (int32_t z = 0; z < d2; ++z) {
        const uint8_t m = xl[z] != 0.0f;
        ml[z] = m;
        acc += invert ? !m : m;
        p[z + 1] = acc;
      }
    } else {
      const uint8_t* sl = src + static_cast<int64_t>(b) * n + l * d2;
      for (int32_t z = 0; z < d2; ++z) {
        acc += invert ? !sl[z] : sl[z] != 0;
        p[z + 1] = acc;
      }
    }
  }
}

__global__ void BinopDilateKernel(const BinopSample* __restrict__ recs, const BinopRun* __restrict__ runs,
                                  int32_t pass, int32_t d0, int32_t d1, int32_t d2,
                                  const int32_t* __restrict__ prefix, uint8_t* __restrict__ out) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  const BinopSample r = recs[b];
  const int32_t op = pass == 0 ? r.pass1 : r.pass2;
  if (!r.on || op == kBinopNone) return;
  const int64_t n = int64_t{d0} * d1 * d2, lines = int64_t{d0} * d1;
  const int32_t* pb = prefix + static_cast<int64_t>(b) * lines * (d2 + 1);
  const BinopRun* rr = runs + r.runs_offset;
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    const int32_t z = static_cast<int32_t>(i % d2);
    const int64_t line = i / d2;
    const int32_t i1 = static_cast<int32_t>(line % d1), i0 = static_cast<int32_t>(line / d1);
    bool hit = false;
    for (int32_t k = 0; k < r.runs_count && !hit; ++k) {
      const BinopRun u = rr[k];
      const int32_t s0 = i0 + u.d0, s1 = i1 + u.d1;
      if (s0 < 0 || s0 >= d0 || s1 < 0 || s1 >= d1) continue;
      const int32_t lo = max(z + u.lo, 0), hi = min(z + u.hi, d2 - 1);
      if (lo > hi) continue;
      const int32_t* p = pb + (int64_t{s0} * d1 + s1) * (d2 + 1);
      hit = p[hi + 1] - p[lo] > 0;
    }
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
                                      const BinopSample* recs, const BinopRun* runs, bool second_pass, uint8_t* m0,
                                      uint8_t* r1, uint8_t* r2, int32_t* prefix, cudaStream_t stream) {
  const int32_t d0 = shape[0], d1 = shape[1], d2 = shape[2];
  const int64_t n = int64_t{d0} * d1 * d2, lines = int64_t{d0} * d1;
  const dim3 line_grid = SliceGrid(lines, batch), voxel_grid = SliceGrid(n, batch);
  const int threads = internal::kThreads;
  BinopPrefixKernel<<<line_grid, threads, 0, stream>>>(recs, 0, channels, d0, d1, d2, x, nullptr, m0, prefix);
  BinopDilateKernel<<<voxel_grid, threads, 0, stream>>>(recs, runs, 0, d0, d1, d2, prefix, r1);
  if (second_pass) {
    BinopPrefixKernel<<<line_grid, threads, 0, stream>>>(recs, 1, channels, d0, d1, d2, nullptr, r1, nullptr, prefix);
    BinopDilateKernel<<<voxel_grid, threads, 0, stream>>>(recs, runs, 1, d0, d1, d2, prefix, r2);
  }
  BinopApplyKernel<<<voxel_grid, threads, 0, stream>>>(recs, channels, n, m0, r1, r2, x);
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::chain
