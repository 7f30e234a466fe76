// apply_random_binary_operator's kernels (its CUDA stage: apply_random_binary_operator_cuda.cc). One "round" handles
// at most one applied channel per sample (the stage runs a round per position of the samples' application lists).
// Each operator pass is the CPU's exact separable dilation (binary_operator_internal::ApplyOperator): with the
// footprint's per-axis costs h (k entries) and the pass input s (m = x[b, a] != 0, or the first pass's result; ¬ of
// it for an erosion pass),
//   1. BinopRowKernel (last axis): nearest[i] = the j minimising h[j] over s(i + j − o) = 1 in the row (255: none);
//   2. BinopColumnKernel (axis 1): the (j2, j1) minimising h[j2] + h[j1] over j2 = nearest(i + (j1 − o)·d2) into
//      `pair` (j2 << 8 | j1, 2 bytes a voxel instead of the float64 value: the plane pass reads 4× less);
//   3. BinopPlaneKernel (axis 0, none for 2D samples): D = min_j0 (h[j2] + h[j1]) + h[j0] over the pairs at
//      i + (j0 − o)·d1·d2; out = D ≤ r2 (¬ of it for erosion) — exactly the footprint's own float64 sum, as the CPU.
//      In the sample's last pass it applies the result itself: other channels of channel_idx ← 0 where out & ¬m,
//      x[b, a] ← out as 1/0 (no separate apply launch: 3 launches a round for one pass, 6 for two).
// The per-voxel logic is binop_passes.h (host-tested against the CPU): each axis is scanned outward from the cost
// minimum and stops as soon as the rest cannot change [D ≤ r2] (first hit, a cost ≥ the best sum, a cost > r2), so a
// voxel next to (or inside) the set costs a few loads instead of 3k (k ≈ 2r + 1; r = 8: 51). Coordinates in 32-bit
// arithmetic (n < 2^31 per sample, the stage checks). Only IEEE float64 additions with round to nearest (__dadd_rn:
// never contracted) and comparisons: GPU = CPU bit for bit.
// Box skips (binop_passes.h, Box): BinopBoxKernel takes the box of the first pass's input set, the first pass's
// plane kernel the box of the second's (from the values it writes); a kernel gives a voxel whose footprint window
// misses the box the no-scan result without reading anything (kNone, kNoPair, no hit). A far voxel's scans were the
// longest (k loads per axis, each behind the previous one's branch: latency, not bandwidth); on a sparse set
// (the second pass of an opening or closing at r ≳ 4 on nnU-Net-like masks, small structures) most voxels skip.
#include <cstdint>

#include "augment/kernels/cuda/chain_common.cuh"
#include "augment/transforms/apply_random_binary_operator/binop_cuda_types.h"
#include "augment/transforms/apply_random_binary_operator/binop_passes.h"

namespace augmentd::cuda::chain {
namespace {

__device__ __forceinline__ int32_t PassOp(const BinopSample& r, int32_t pass) { return pass == 0 ? r.pass1 : r.pass2; }

__device__ __forceinline__ binop::Box LoadBox(const int32_t* b) {
  binop::Box box;
  for (int d = 0; d < 6; ++d) box.v[d] = b[d];
  return box;
}

// The block's box (every thread calls it after its voxel loop) into out[0 .. 6) by atomicMin (a warp reduction, then
// one atomic per block and field).
__device__ void FlushBox(const binop::Box& local, int32_t* out) {
  __shared__ int32_t warp_box[32][6];
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  for (int d = 0; d < 6; ++d) {
    int32_t v = local.v[d];
    for (int off = 16; off > 0; off >>= 1) v = min(v, __shfl_xor_sync(0xffffffffu, v, off));
    if (lane == 0) warp_box[warp][d] = v;
  }
  __syncthreads();
  if (threadIdx.x < 6) {
    int32_t v = binop::kBoxInit;
    for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w) v = min(v, warp_box[w][threadIdx.x]);
    if (v != binop::kBoxInit) atomicMin(out + threadIdx.x, v);
  }
}

// The box of the first pass's input set (x[b, a] != 0, or == 0 for an erosion) into boxes[b] (pass 0's boxes).
__global__ void BinopBoxKernel(const BinopSample* __restrict__ recs, int32_t channels, int32_t d0, int32_t d1,
                               int32_t d2, const float* __restrict__ x, int32_t* __restrict__ boxes) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  const BinopSample r = recs[b];
  if (!r.on || r.pass1 == kBinopNone) return;
  const int64_t n = int64_t{d0} * d1 * d2;
  const bool want = r.pass1 != kBinopErode;
  const float* xa = x + (static_cast<int64_t>(b) * channels + r.channel) * n;
  binop::Box box;
  binop::BoxReset(box);
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    if ((xa[i] != 0.0f) != want) continue;
    const uint32_t ui = static_cast<uint32_t>(i), row = ui / static_cast<uint32_t>(d2);
    binop::BoxAdd(box, static_cast<int32_t>(row / static_cast<uint32_t>(d1)),
                  static_cast<int32_t>(row % static_cast<uint32_t>(d1)),
                  static_cast<int32_t>(ui - row * static_cast<uint32_t>(d2)));
  }
  FlushBox(box, boxes + 6 * b);
}

__device__ __forceinline__ binop::Axis AxisOf(const BinopSample& r, const double* costs) {
  binop::Axis ax;
  ax.h = costs + r.costs_offset;
  ax.k = r.k;
  ax.split = r.split;
  ax.unimodal = r.unimodal;
  ax.r2 = r.r2;
  return ax;
}

// Pass input along the last axis: from the image channel (pass 0, also writes m0) or from the first pass's result.
__global__ void BinopRowKernel(const BinopSample* __restrict__ recs, const double* __restrict__ costs, int32_t pass,
                               int32_t channels, int32_t d0, int32_t d1, int32_t d2, const float* __restrict__ x,
                               const uint8_t* __restrict__ src, uint8_t* __restrict__ m0,
                               uint8_t* __restrict__ nearest, const int32_t* __restrict__ boxes) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  const BinopSample r = recs[b];
  const int32_t op = PassOp(r, pass);
  if (!r.on || op == kBinopNone) return;
  const int64_t n = int64_t{d0} * d1 * d2;
  const bool want = op != kBinopErode;  // erosion dilates ¬s
  const binop::Axis ax = AxisOf(r, costs);
  const float* xa = x + (static_cast<int64_t>(b) * channels + r.channel) * n;
  const uint8_t* sb = pass == 0 ? nullptr : src + static_cast<int64_t>(b) * n;
  const binop::Box box = LoadBox(boxes + 6 * (int64_t{pass} * gridDim.y + b));
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    const uint32_t ui = static_cast<uint32_t>(i), r_i = ui / static_cast<uint32_t>(d2);
    const int32_t z = static_cast<int32_t>(ui - r_i * static_cast<uint32_t>(d2));
    const int32_t y = static_cast<int32_t>(r_i % static_cast<uint32_t>(d1)),
                  a = static_cast<int32_t>(r_i / static_cast<uint32_t>(d1));
    const int64_t row = i - z;
    if (pass == 0) m0[static_cast<int64_t>(b) * n + i] = xa[i] != 0.0f;
    uint8_t v;
    if (!binop::RowMayHit(box, a, y, z, ax.k))
      v = binop::kNone;
    else if (pass == 0)
      v = binop::RowNearest(ax, z, d2, want, [&](int32_t q) { return xa[row + q] != 0.0f; });
    else
      v = binop::RowNearest(ax, z, d2, want, [&](int32_t q) { return sb[row + q] != 0; });
    nearest[static_cast<int64_t>(b) * n + i] = v;
  }
}

__global__ void BinopColumnKernel(const BinopSample* __restrict__ recs, const double* __restrict__ costs,
                                  int32_t pass, int32_t d0, int32_t d1, int32_t d2,
                                  const uint8_t* __restrict__ nearest, uint16_t* __restrict__ pair,
                                  const int32_t* __restrict__ boxes) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  const BinopSample r = recs[b];
  if (!r.on || PassOp(r, pass) == kBinopNone) return;
  const int64_t n = int64_t{d0} * d1 * d2;
  const binop::Axis ax = AxisOf(r, costs);
  const uint8_t* nb = nearest + static_cast<int64_t>(b) * n;
  const binop::Box box = LoadBox(boxes + 6 * (int64_t{pass} * gridDim.y + b));
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    const uint32_t ui = static_cast<uint32_t>(i), r_i = ui / static_cast<uint32_t>(d2);
    const int32_t z = static_cast<int32_t>(ui - r_i * static_cast<uint32_t>(d2));
    const int32_t y = static_cast<int32_t>(r_i % static_cast<uint32_t>(d1)),
                  a = static_cast<int32_t>(r_i / static_cast<uint32_t>(d1));
    const int64_t col = i - int64_t{y} * d2;
    pair[static_cast<int64_t>(b) * n + i] =
        binop::ColumnMayHit(box, a, y, z, ax.k)
            ? binop::ColumnPair(ax, y, d1, [&](int32_t q) { return nb[col + int64_t{q} * d2]; })
            : binop::kNoPair;
  }
}

// The result of the pass at voxel i of sample b; in the sample's last pass it goes into the image (the apply step),
// else into `out` (the next pass's input).
__global__ void BinopPlaneKernel(const BinopSample* __restrict__ recs, const double* __restrict__ costs, int32_t pass,
                                 int32_t channels, int32_t d0, int32_t d1, int32_t d2,
                                 const uint16_t* __restrict__ pair, const uint8_t* __restrict__ m0,
                                 uint8_t* __restrict__ out, float* __restrict__ x, int32_t* __restrict__ boxes) {
  const int32_t b = static_cast<int32_t>(blockIdx.y);
  const BinopSample r = recs[b];
  const int32_t op = PassOp(r, pass);
  if (!r.on || op == kBinopNone) return;
  const bool last = pass == 1 || r.pass2 == kBinopNone;
  const int64_t plane = int64_t{d1} * d2, n = plane * d0;
  const binop::Axis ax = AxisOf(r, costs);
  const uint16_t* pb = pair + static_cast<int64_t>(b) * n;
  const uint8_t* m = m0 + static_cast<int64_t>(b) * n;
  float* xb = x + static_cast<int64_t>(b) * channels * n;
  const binop::Box box = LoadBox(boxes + 6 * (int64_t{pass} * gridDim.y + b));
  const bool want_next = r.pass2 != kBinopErode;  // the second pass's input set (when this is the first)
  binop::Box next;
  binop::BoxReset(next);
  AUGMENTD_CHAIN_FOR_VOXELS(i, n) {
    const uint32_t ui = static_cast<uint32_t>(i);
    const int32_t a = static_cast<int32_t>(ui / static_cast<uint32_t>(plane));
    const int64_t within = i - int64_t{a} * plane;
    const int32_t y = static_cast<int32_t>(static_cast<uint32_t>(within) / static_cast<uint32_t>(d2));
    const int32_t z = static_cast<int32_t>(within - int64_t{y} * d2);
    bool hit;
    if (!binop::PlaneMayHit(box, a, y, z, ax.k, r.ndim))
      hit = false;
    else if (r.ndim == 2)
      hit = binop::PairHit(ax, pb[i]);
    else
      hit = binop::PlaneHit(ax, a, d0, [&](int32_t q) { return pb[within + int64_t{q} * plane]; });
    const bool v = op == kBinopErode ? !hit : hit;
    if (!last) {
      out[static_cast<int64_t>(b) * n + i] = v;
      if (v == want_next) binop::BoxAdd(next, a, y, z);
      continue;
    }
    if (v && !m[i]) {
      for (int32_t c = 0; c < channels; ++c)
        if ((r.others >> c) & 1u) xb[int64_t{c} * n + i] = 0.0f;
    }
    xb[int64_t{r.channel} * n + i] = v ? 1.0f : 0.0f;
  }
  if (!last) FlushBox(next, boxes + 6 * (int64_t{gridDim.y} + b));  // uniform per block (r, pass)
}

}  // namespace

cudaError_t LaunchBinaryOperatorRound(int32_t batch, int32_t channels, const int32_t shape[3], float* x,
                                      const BinopSample* recs, const double* costs, bool second_pass, uint8_t* m0,
                                      uint8_t* r1, uint8_t* nearest, uint16_t* pair, int32_t* boxes,
                                      cudaStream_t stream, const cudaEvent_t* kernel_marks) {
  const int32_t d0 = shape[0], d1 = shape[1], d2 = shape[2];
  const int64_t n = int64_t{d0} * d1 * d2;
  if (n >= (int64_t{1} << 31)) return cudaErrorInvalidValue;
  const dim3 grid = SliceGrid(n, batch);
  const int threads = internal::kThreads;
  int marks = 0;
  const auto mark = [&] {
    if (kernel_marks != nullptr) cudaEventRecord(kernel_marks[marks++], stream);
  };
  mark();
  const cudaError_t set = cudaMemsetAsync(boxes, 0x7f, sizeof(int32_t) * 6 * 2 * static_cast<size_t>(batch), stream);
  if (set != cudaSuccess) return set;
  BinopBoxKernel<<<grid, threads, 0, stream>>>(recs, channels, d0, d1, d2, x, boxes);
  for (int32_t pass = 0; pass < (second_pass ? 2 : 1); ++pass) {
    mark();
    BinopRowKernel<<<grid, threads, 0, stream>>>(recs, costs, pass, channels, d0, d1, d2, x, r1, m0, nearest, boxes);
    mark();
    BinopColumnKernel<<<grid, threads, 0, stream>>>(recs, costs, pass, d0, d1, d2, nearest, pair, boxes);
    mark();
    BinopPlaneKernel<<<grid, threads, 0, stream>>>(recs, costs, pass, channels, d0, d1, d2, pair, m0, r1, x, boxes);
  }
  mark();
  return cudaGetLastError();
}

}  // namespace augmentd::cuda::chain
