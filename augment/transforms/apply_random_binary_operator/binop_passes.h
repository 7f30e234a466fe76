// augment/transforms/apply_random_binary_operator/binop_passes.h — the per-voxel logic of the binary operator's CUDA
// passes (apply_random_binary_operator.cu), as __host__ __device__ functions so that a host emulation of the kernels
// is tested against the CPU reference (apply_random_binary_operator_test.cc). Plain C++ without nvcc.
//
// A pass dilates the set s (erosion: ¬s) by the footprint {j : (h[j2] + h[j1]) + h[j0] ≤ r2} (h = AxisCosts, k
// entries, origin o = (k − 1) / 2) and only needs [D ≤ r2], D = the CPU's min-plus value. Three facts make it cheaper
// than the full k-entry min per axis, without changing a bit of the result:
//   * h is unimodal around its first minimum `split` (AxisCosts squares a non-decreasing grid; fl is monotone):
//     non-increasing before it, non-decreasing after it. Scanning outward from `split` visits each side in order of
//     non-decreasing cost, so a side stops at its first hit (row), or once h[j] ≥ the best sum found, since
//     fl(x + h[j]) ≥ h[j] for x ≥ 0 (column), or at the first sum ≤ r2 (plane: only the test D ≤ r2 matters).
//   * a partial sum above r2 can never come back under it (every later term is ≥ 0): such candidates count as none,
//     and a side stops at the first h[j] > r2.
//   * only the values h[v] reach the later passes (the pair's cost is recomputed from its two indices), so any
//     minimiser is as good as the CPU's.
// BinopSplit checks unimodality on the host; when it fails (it never does for AxisCosts, the test checks r in
// (0, 32]) the passes scan every j without stopping early (split 0, unimodal 0): the plain minimum.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define AUGMENTD_BINOP_HD __host__ __device__ __forceinline__
#else
#define AUGMENTD_BINOP_HD inline
#endif

namespace augmentd::cuda::chain::binop {

inline constexpr uint8_t kNone = 255;        // no voxel of the set in the row window (k ≤ 254)
inline constexpr uint16_t kNoPair = 0xffff;  // no voxel of the set in the column window (within r2)

// IEEE float64 addition, round to nearest, never contracted into an FMA (the CPU's `a + b`).
AUGMENTD_BINOP_HD double Add(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

// One footprint axis as the passes read it.
struct Axis {
  const double* h = nullptr;  // k costs
  int32_t k = 1;
  int32_t split = 0;     // first index of min h (0 when not unimodal)
  int32_t unimodal = 0;  // 1: sides may stop early (header comment)
  double r2 = 0;
};

// Host: the first argmin of h[0..k) into *split; true when h is non-increasing up to it and non-decreasing after.
inline bool BinopSplit(const double* h, int32_t k, int32_t* split) {
  int32_t s = 0;
  for (int32_t j = 1; j < k; ++j)
    if (h[j] < h[s]) s = j;
  bool ok = true;
  for (int32_t j = 1; j <= s; ++j) ok = ok && h[j] <= h[j - 1];
  for (int32_t j = s + 1; j < k; ++j) ok = ok && h[j] >= h[j - 1];
  for (int32_t j = 0; j < k; ++j) ok = ok && h[j] >= 0;  // sums only grow (fl(x + h) ≥ x)
  *split = ok ? s : 0;
  return ok;
}

// Visits j = from, from + step, … (step ±1) while j ∈ [lo, hi), calling visit(j, load(j)) in order until it
// returns false. The loads are issued kScanGroup at a time before their visits (a far voxel's scan otherwise waits
// one memory round trip per j behind the previous visit's branch); a group's loads past the stopping j are
// discarded, and every load stays inside [lo, hi) (the caller's window inside the volume). stop(j): whether visit(j,
// ·) would return false whatever it loads (checked before a group's loads, so that a side that ends at once — a
// voxel inside the set — costs none). The visits, and so the result, are exactly the one-at-a-time loop's.
inline constexpr int32_t kScanGroup = 4;

#if defined(__CUDA_ARCH__)  // the device pass only (the host compilers do not know the pragma)
#define AUGMENTD_BINOP_UNROLL _Pragma("unroll")
#else
#define AUGMENTD_BINOP_UNROLL
#endif

template <typename Stop, typename Load, typename Visit>
AUGMENTD_BINOP_HD void ScanGroups(int32_t from, int32_t step, int32_t lo, int32_t hi, Stop stop, Load load,
                                  Visit visit) {
  using V = decltype(load(from));
  for (int32_t j = from; j >= lo && j < hi; j += kScanGroup * step) {
    if (stop(j)) return;
    V v[kScanGroup];
    AUGMENTD_BINOP_UNROLL
    for (int32_t u = 0; u < kScanGroup; ++u) {
      const int32_t ju = j + u * step;
      v[u] = ju >= lo && ju < hi ? load(ju) : V{};
    }
    AUGMENTD_BINOP_UNROLL
    for (int32_t u = 0; u < kScanGroup; ++u) {
      const int32_t ju = j + u * step;
      if (ju < lo || ju >= hi || !visit(ju, v[u])) return;
    }
  }
}

// Row pass (last axis) at position z of a row of length len: the window index j (q = z + j − o inside the row)
// minimising h[j] over q with in(q) == want and h[j] ≤ r2, kNone when there is none. in(q): the pass input at row
// position q.
template <typename In>
AUGMENTD_BINOP_HD uint8_t RowNearest(const Axis& ax, int32_t z, int32_t len, bool want, In in) {
  const int32_t o = (ax.k - 1) / 2;
  const int32_t j_lo = o - z > 0 ? o - z : 0, j_hi = ax.k < len + o - z ? ax.k : len + o - z;
  int32_t best = kNone;
  const auto load = [&](int32_t j) -> bool { return in(z + j - o); };
  const auto up_stop = [&](int32_t j) { return ax.unimodal && ax.h[j] > ax.r2; };
  const auto down_stop = [&](int32_t j) {
    return ax.unimodal && (ax.h[j] > ax.r2 || (best != kNone && ax.h[j] >= ax.h[best]));
  };
  // Costs non-decreasing from split upward: the first hit is the side's best.
  ScanGroups(ax.split > j_lo ? ax.split : j_lo, 1, j_lo, j_hi, up_stop, load, [&](int32_t j, bool set) -> bool {
    if (ax.h[j] > ax.r2) return !ax.unimodal;
    if (set == want && (best == kNone || ax.h[j] < ax.h[best])) {
      best = j;
      if (ax.unimodal) return false;
    }
    return true;
  });
  // Non-decreasing downward too: stop at the first hit or once h[j] ≥ the best.
  ScanGroups(ax.split - 1 < j_hi - 1 ? ax.split - 1 : j_hi - 1, -1, j_lo, j_hi, down_stop, load,
             [&](int32_t j, bool set) -> bool {
    const double hj = ax.h[j];
    if (hj > ax.r2 || (ax.unimodal && best != kNone && hj >= ax.h[best])) return !ax.unimodal;
    if (set == want && (best == kNone || hj < ax.h[best])) {
      best = j;
      if (ax.unimodal) return false;
    }
    return true;
  });
  return static_cast<uint8_t>(best);
}

// Column pass at position y of a column of length len: the pair (v << 8 | j) minimising fl(h[v] + h[j]) ≤ r2 over
// v = nearest(y + j − o) != kNone, kNoPair when there is none. nearest(q): the row pass's result at column position q.
template <typename Nearest>
AUGMENTD_BINOP_HD uint16_t ColumnPair(const Axis& ax, int32_t y, int32_t len, Nearest nearest) {
  const int32_t o = (ax.k - 1) / 2;
  const int32_t j_lo = o - y > 0 ? o - y : 0, j_hi = ax.k < len + o - y ? ax.k : len + o - y;
  double best = 0;
  uint16_t pair = kNoPair;
  const auto visit = [&](int32_t j, uint8_t v) -> bool {  // false: stop this side
    const double hj = ax.h[j];
    if (hj > ax.r2 || (ax.unimodal && pair != kNoPair && hj >= best)) return !ax.unimodal;
    if (v == kNone) return true;
    const double c = Add(ax.h[v], hj);
    if (c <= ax.r2 && (pair == kNoPair || c < best)) {
      best = c;
      pair = static_cast<uint16_t>((v << 8) | j);
    }
    return true;
  };
  const auto load = [&](int32_t j) -> uint8_t { return nearest(y + j - o); };
  const auto stop = [&](int32_t j) {
    return ax.unimodal && (ax.h[j] > ax.r2 || (pair != kNoPair && ax.h[j] >= best));
  };
  ScanGroups(ax.split > j_lo ? ax.split : j_lo, 1, j_lo, j_hi, stop, load, visit);
  ScanGroups(ax.split - 1 < j_hi - 1 ? ax.split - 1 : j_hi - 1, -1, j_lo, j_hi, stop, load, visit);
  return pair;
}

// The float64 value fl(h[j2] + h[j1]) of a pair (only called on a pair != kNoPair).
AUGMENTD_BINOP_HD double PairCost(const double* h, uint16_t p) { return Add(h[p >> 8], h[p & 0xff]); }

// Plane pass (axis 0) at position a of an axis of length len: whether some fl(cost(pair(a + j − o)) + h[j]) ≤ r2
// (the CPU's D ≤ r2). pair(q): the column pass's result at axis-0 position q.
template <typename Pair>
AUGMENTD_BINOP_HD bool PlaneHit(const Axis& ax, int32_t a, int32_t len, Pair pair) {
  const int32_t o = (ax.k - 1) / 2;
  const int32_t j_lo = o - a > 0 ? o - a : 0, j_hi = ax.k < len + o - a ? ax.k : len + o - a;
  bool found = false;
  const auto visit = [&](int32_t j, uint16_t p) -> bool {  // false: stop this side
    const double hj = ax.h[j];
    if (hj > ax.r2) return !ax.unimodal;
    if (p != kNoPair && Add(PairCost(ax.h, p), hj) <= ax.r2) {
      found = true;
      return false;
    }
    return true;
  };
  const auto load = [&](int32_t j) -> uint16_t { return pair(a + j - o); };
  const auto stop = [&](int32_t j) { return ax.unimodal && ax.h[j] > ax.r2; };
  ScanGroups(ax.split > j_lo ? ax.split : j_lo, 1, j_lo, j_hi, stop, load, visit);
  if (found) return true;
  ScanGroups(ax.split - 1 < j_hi - 1 ? ax.split - 1 : j_hi - 1, -1, j_lo, j_hi, stop, load, visit);
  return found;
}

// 2D samples (1, X, Y): no plane axis, D = the column pass's value.
AUGMENTD_BINOP_HD bool PairHit(const Axis& ax, uint16_t p) { return p != kNoPair && PairCost(ax.h, p) <= ax.r2; }

// The box of a pass's input set (every voxel where the pass input equals `want`): per axis d the smallest
// coordinate v[d] and the negated largest v[3 + d], so that all six are minima (atomicMin on the device) starting
// from kBoxInit (the bytes of cudaMemsetAsync(0x7f)); an empty set keeps them, and every test below then fails.
// A voxel whose footprint window misses the box along some axis reads no voxel of the set in that kernel, so its
// result is known without a scan: kNone (row), kNoPair (column), no hit (plane) — exactly what the scan returns.
// Only voxels near the set are scanned: on a sparse set (an eroded mask, the complement of a dilated one, the
// previous stage's small lesions) most voxels skip every scan.
inline constexpr int32_t kBoxInit = 0x7f7f7f7f;

struct Box {
  int32_t v[6];
};

AUGMENTD_BINOP_HD void BoxReset(Box& b) {
  for (int32_t& x : b.v) x = kBoxInit;
}

// Adds voxel (a, y, z) to the box.
AUGMENTD_BINOP_HD void BoxAdd(Box& b, int32_t a, int32_t y, int32_t z) {
  const int32_t c[3] = {a, y, z};
  for (int d = 0; d < 3; ++d) {
    b.v[d] = c[d] < b.v[d] ? c[d] : b.v[d];
    b.v[3 + d] = -c[d] < b.v[3 + d] ? -c[d] : b.v[3 + d];
  }
}

// Whether coordinate c's window c + j − o (j ∈ [0, k), o = (k − 1) / 2) meets [v[d], −v[3 + d]] along axis d.
AUGMENTD_BINOP_HD bool WindowMeets(const Box& b, int d, int32_t c, int32_t k) {
  const int32_t o = (k - 1) / 2;
  return c - o <= -b.v[3 + d] && c - o + k - 1 >= b.v[d];
}

// Whether coordinate c lies in the box along axis d.
AUGMENTD_BINOP_HD bool InsideAlong(const Box& b, int d, int32_t c) { return c >= b.v[d] && c <= -b.v[3 + d]; }

// Row pass at (a, y, z): only its own row along the last axis.
AUGMENTD_BINOP_HD bool RowMayHit(const Box& b, int32_t a, int32_t y, int32_t z, int32_t k) {
  return InsideAlong(b, 0, a) && InsideAlong(b, 1, y) && WindowMeets(b, 2, z, k);
}

// Column pass at (a, y, z): the rows at y + j − o of plane a.
AUGMENTD_BINOP_HD bool ColumnMayHit(const Box& b, int32_t a, int32_t y, int32_t z, int32_t k) {
  return InsideAlong(b, 0, a) && WindowMeets(b, 1, y, k) && WindowMeets(b, 2, z, k);
}

// Plane pass at (a, y, z) (3D: the columns at a + j − o; 2D samples, ndim 2: the column pass's own value).
AUGMENTD_BINOP_HD bool PlaneMayHit(const Box& b, int32_t a, int32_t y, int32_t z, int32_t k, int32_t ndim) {
  return (ndim == 2 ? InsideAlong(b, 0, a) : WindowMeets(b, 0, a, k)) && WindowMeets(b, 1, y, k) &&
         WindowMeets(b, 2, z, k);
}

}  // namespace augmentd::cuda::chain::binop
