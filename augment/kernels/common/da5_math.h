// augment/kernels/common/da5_math.h — the per-voxel math of nnUNetTrainerDA5's local transforms on the GPU
// (median filter, Rician noise, blank rectangles, brightness gradient, local gamma, sharpening), written once as
// `__host__ __device__` functions so a host-only test (da5_math_test.cc, no GPU) checks them against the CPU
// transforms (augment/transforms/<name>.cc) and the kernels (da5_*.cu) run the very same code.
//
// Also the POD per-slice parameter records the stages pack into the ParamArena (augment/cuda/stage.h); a "slice"
// is one (sample, channel) of the (B, C, d0, d1, d2) float32 chain scratch, index b·C + c.
//
//   const uint32_t med = SelectRankKey(Window3{keys, k, h1 * h2, h2}, k * k * k / 2);   // exact median key
//   x = KeyToFloat(med);
//
// Numerics: float math uses augmentd's Rn* helpers (rng.h: explicit round-to-nearest, no FMA contraction on the
// device), so pointwise results equal the CPU transforms bit for bit, except powf (local gamma: CUDA's powf is
// within 2 ulp of glibc's) and the reductions (sums in double in another order: means within an ulp).
// Header-only, no CUDA headers: usable from plain C++.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "augment/rng.h"

namespace augmentd::cuda::da5 {

// ------------------------------------------------------------------------------------------------------------
// Parameter records (arena layout; all 4- or 8-byte fields, sizes multiples of 8).

// Sharpening, per slice.
struct SharpenSlice {
  float strength = 0;
  int32_t apply = 0;  // 0: slice untouched
  int32_t clamp = 0;  // clamp to the slice's own pre-sharpening [min, max]
  int32_t planar = 0;  // 1: a 2D sample as (1, X, Y): the CPU's 2D (4-neighbour) form
};

// Rician noise, per sample (the transform works on all channels of a sample together).
struct RicianSample {
  StreamKey re{}, im{};  // NormalAt keys: (seed, sample, transform, substream 1 / 2), as the CPU transform
  float sigma = 0;       // the drawn "variance", used as the standard deviation (as bgv2)
  int32_t active = 0;
};

// One rectangle of blank_rectangle: box [lb, ub) per axis; value used unless use_mean.
struct Rect {
  int32_t lb[3] = {0, 0, 0};
  int32_t ub[3] = {0, 0, 0};
  float value = 0;
  int32_t use_mean = 0;  // fill with torch.mean of the box's current content (earlier rectangles included)
};

// The rectangles of one slice: rects[begin, begin + count), applied in order.
struct RectSlice {
  int32_t begin = 0;
  int32_t count = 0;
};

// brightness_gradient_additive / local_gamma, per slice. Offsets are bytes from the start of the stage's own
// arena block (LocalSlice array first). mode 1: the kernel is the outer product of three 1D factors (floats at
// axes_off: d0 + d1 + d2 of them), normalised with kmn / top as LocalGaussianKernel does; mode 2: a dense
// injected kernel of d0·d1·d2 floats at dense_off.
struct LocalSlice {
  int32_t mode = 0;  // 0: slice untouched (except clip), 1: generated, 2: dense
  int32_t clip = 0;  // gradient: clamp to the sample's pre-transform [min, max] (clip_intensities)
  int64_t axes_off = 0;
  int64_t dense_off = 0;
  float kmn = 0, top = 0;  // min and (max − min) of the raw product (mode 1)
  // gradient (mode 1): K ← ((K − mean) if centered) / max_abs · strength
  int32_t centered = 0;
  float mean = 0, max_abs = 1, strength = 0;
  float gamma = 1;  // local gamma
  int32_t pad = 0;
};

// Host and device compile the records separately: keep their layouts fixed (no implicit padding differences).
static_assert(sizeof(SharpenSlice) == 16 && sizeof(RicianSample) == 40 && sizeof(Rect) == 32 &&
              sizeof(RectSlice) == 8 && sizeof(LocalSlice) == 56);

// Moments of one reduced slice (torch.mean, unbiased torch.std, min, max).
struct SliceMoments {
  double mean;
  double std;
  float mn;
  float mx;
};

// Deterministic partial of the moments reduction: sums of (x − shift) and (x − shift)², shift = the slice's first
// element (keeps the one-pass variance accurate).
struct MomentsPartial {
  double s;
  double q;
  float mn;
  float mx;
};

// ------------------------------------------------------------------------------------------------------------
// Double-precision ops without FMA contraction (the CPU transforms compute these steps in double).
#if defined(__CUDA_ARCH__)
AUGMENTD_HD double RnMulD(double a, double b) { return __dmul_rn(a, b); }
AUGMENTD_HD double RnAddD(double a, double b) { return __dadd_rn(a, b); }
AUGMENTD_HD float PowF(float a, float b) { return powf(a, b); }
#else
AUGMENTD_HD double RnMulD(double a, double b) { return a * b; }
AUGMENTD_HD double RnAddD(double a, double b) { return a + b; }
AUGMENTD_HD float PowF(float a, float b) { return std::pow(a, b); }
#endif

// mean, unbiased std (NaN for n == 1, as the CPU transforms), min, max from the merged partial of n values.
AUGMENTD_HD SliceMoments FinalizeMoments(double shift, const MomentsPartial& p, int64_t n) {
  SliceMoments m;
  const double dn = static_cast<double>(n);
  const double d = p.s / dn;
  m.mean = shift + d;
  const double var = (p.q - p.s * d) / (dn - 1.0);
  m.std = n > 1 ? sqrt(var > 0.0 ? var : 0.0) : NAN;
  m.mn = p.mn;
  m.mx = p.mx;
  return m;
}

// ------------------------------------------------------------------------------------------------------------
// Median filter (scipy.ndimage.median_filter, size k, origin 0, mode 'reflect').

// scipy 'reflect' (half-sample symmetric: d c b a | a b c d | d c b a) index of j for an axis of n voxels.
AUGMENTD_HD int ReflectIndex(int j, int n) {
  if (n == 1) return 0;
  const int period = 2 * n;
  int m = j % period;
  if (m < 0) m += period;
  return m < n ? m : period - 1 - m;
}

// Total order of floats as unsigned keys (−0 sorts just below +0; no NaN in the images).
AUGMENTD_HD uint32_t OrderedKey(float f) {
  const uint32_t u = FloatAsBits(f);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}
AUGMENTD_HD float KeyToFloat(uint32_t k) { return BitsAsFloat((k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k); }

// A k×k×k window of keys: element (a, b, c) at base[a·stride_a + b·stride_b + c].
struct Window3 {
  const uint32_t* base;
  int k;
  int stride_a;
  int stride_b;
  template <typename F>
  AUGMENTD_HD void ForEach(F&& f) const {
    for (int a = 0; a < k; ++a)
      for (int b = 0; b < k; ++b) {
        const uint32_t* row = base + a * stride_a + b * stride_b;
        for (int c = 0; c < k; ++c) f(row[c]);
      }
  }
};

// Unrolled in device code only (gcc warns on an unknown pragma under -Wall).
#ifdef __CUDA_ARCH__
#define AUGMENTD_DA5_UNROLL _Pragma("unroll")
#else
#define AUGMENTD_DA5_UNROLL
#endif
#ifdef __CUDACC__
#define AUGMENTD_HD_CONSTEXPR __host__ __device__ constexpr
#else
#define AUGMENTD_HD_CONSTEXPR constexpr
#endif

// Window3 with the size K fixed at compile time (SelectRankNetwork's k = 2, 3): the loops unroll into shared
// loads at constant offsets when the strides are compile-time constants too (the kernel's tile). Same keys in the
// same order.
template <int K>
struct Window3K {
  const uint32_t* base;
  int stride_a;
  int stride_b;
  template <typename F>
  AUGMENTD_HD void ForEach(F&& f) const {
    for (int a = 0; a < K; ++a) {
      const uint32_t* plane = base + a * stride_a;
      AUGMENTD_DA5_UNROLL
      for (int b = 0; b < K; ++b) {
        AUGMENTD_DA5_UNROLL
        for (int c = 0; c < K; ++c) f(plane[b * stride_b + c]);
      }
    }
  }
};

// A k×k window of keys (the planar median of a d0 = 1 slice): element (b, c) at base[b·stride_b + c].
struct Window2 {
  const uint32_t* base;
  int k;
  int stride_b;
  template <typename F>
  AUGMENTD_HD void ForEach(F&& f) const {
    for (int b = 0; b < k; ++b) {
      const uint32_t* row = base + b * stride_b;
      for (int c = 0; c < k; ++c) f(row[c]);
    }
  }
};

// The key of rank `rank` (0-based, ascending) of the window `w` — exact selection, so the value equals
// std::nth_element's. Digit-wise search on the keys, two bits per pass: with the answer's higher bits fixed in
// `key`, count(keys ≤ key | d·2^lo | (2^lo − 1)) ≥ rank + 1 iff the answer's digit is ≤ d. Passes start at the
// highest bit in which the window's min and max differ (one extra pass finds them).
template <typename W>
AUGMENTD_HD uint32_t SelectRankKey(const W& w, uint32_t rank) {
  uint32_t lo = 0xFFFFFFFFu, hi = 0;
  w.ForEach([&](uint32_t v) {
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  });
  if (lo == hi) return lo;
  int top = 31;
  while (!(((lo ^ hi) >> top) & 1u)) --top;
  const uint32_t above = top == 31 ? 0u : ~((2u << top) - 1u);
  uint32_t key = lo & above;
  const uint32_t need = rank + 1;
  for (int b = top; b >= 0; b -= 2) {
    const int low = b >= 1 ? b - 1 : 0;
    const uint32_t ones = (1u << low) - 1u;
    if (b >= 1) {
      const uint32_t c0 = key | ones, c1 = key | (1u << low) | ones, c2 = key | (2u << low) | ones;
      uint32_t n0 = 0, n1 = 0, n2 = 0;
      w.ForEach([&](uint32_t v) {
        n0 += v <= c0;
        n1 += v <= c1;
        n2 += v <= c2;
      });
      key |= static_cast<uint32_t>((n0 < need) + (n1 < need) + (n2 < need)) << low;
    } else {
      uint32_t n0 = 0;
      w.ForEach([&](uint32_t v) { n0 += v <= key; });
      key |= static_cast<uint32_t>(n0 < need);
    }
  }
  return key;
}

// Bit length of x (0 for 0): 32 − clz.
AUGMENTD_HD int BitLength(uint32_t x) {
#ifdef __CUDA_ARCH__
  return 32 - __clz(static_cast<int>(x));
#else
  return x == 0 ? 0 : 32 - __builtin_clz(x);
#endif
}

// SelectRankKeyHist's histogram: 2^kSelectHistBits bins per level (+ 1 bin for keys outside the level's range).
inline constexpr int kSelectHistBits = 5;
inline constexpr int kSelectHistBins = (1 << kSelectHistBits) + 1;
// At most this many keys left in the chosen bin: gathered and ranked directly instead of another level.
inline constexpr int kSelectMaxCandidates = 16;
// SelectRankKeyHist16 (windows of < 2^16 keys): 2^6 bins of 16-bit counts packed two to a word — the same
// kSelectHistBins words per column — and up to 24 gathered candidates.
inline constexpr int kSelectHist16Bits = 6;
inline constexpr int kSelectHist16MaxCandidates = 24;
static_assert(((1 << kSelectHist16Bits) + 2) / 2 <= kSelectHistBins, "packed bins fit the same column");

// The same key as SelectRankKey(w, rank) (exact rank selection over the same total order), with bounded work:
// one min/max pass, then per level a histogram pass of 2^kBits bins over the current key range
// [lo, hi] (bin = (key − lo) >> shift: monotone, so the answer's bin is the one where the prefix count passes the
// rank) that narrows the range to one bin — ≥ kBits key bits per pass instead of SelectRankKey's 2 — until the bin
// is one key (shift 0) or holds ≤ kMaxCand keys, which one more pass gathers and ranks by counting.
// At most 1 + ⌈32/kBits⌉ + 1 passes for any window (ties included) against SelectRankKey's ≤ 17; smooth data
// typically 3–4 (min/max, 1–2 levels, gather). `hist` holds the counts at hist[0], hist[stride], … (device: one
// column per thread of a shared-memory array, stride = blockDim.x, so no bank conflicts): 2^kBits + 1 bins of 32
// bits, or (kPacked) of 16 bits two to a word (bin b in word b / 2, half b % 2; the window holds < 2^16 keys).
template <int kBits, int kMaxCand, bool kPacked, typename W>
AUGMENTD_HD uint32_t SelectInRange(const W& w, uint32_t lo, uint32_t hi, uint32_t r, uint32_t* hist, int stride,
                                   bool first) {
  constexpr int kBins = (1 << kBits) + 1;
  constexpr int kWords = kPacked ? (kBins + 1) / 2 : kBins;
  auto bump = [&](uint32_t b) {
    if constexpr (kPacked) {
      hist[(b >> 1) * stride] += 1u << ((b & 1u) << 4);
    } else {
      ++hist[b * stride];
    }
  };
  // r: rank among the keys in [lo, hi] (every key below lo is accounted for); `first`: no key outside [lo, hi].
  for (;; first = false) {
    const uint32_t span = hi - lo;  // > 0
    const int len = BitLength(span);
    const int shift = len > kBits ? len - kBits : 0;  // (span >> shift) < 2^kBits
    for (int b = 0; b < kWords; ++b) hist[b * stride] = 0;
    if (first) {  // [lo, hi] is the window's range: no key outside it
      w.ForEach([&](uint32_t v) { bump((v - lo) >> shift); });
    } else {
      w.ForEach([&](uint32_t v) {
        const uint32_t d = v - lo;  // wraps for v < lo: > span
        bump(d > span ? static_cast<uint32_t>(kBins - 1) : d >> shift);
      });
    }
    uint32_t acc = 0, m = 0;
    int b = 0;
    for (;; ++b) {  // terminates: the bins of [lo, hi] hold more than r keys
      if constexpr (kPacked) {
        m = (hist[(b >> 1) * stride] >> ((b & 1) << 4)) & 0xFFFFu;
      } else {
        m = hist[b * stride];
      }
      if (acc + m > r) break;
      acc += m;
    }
    r -= acc;
    const uint32_t width = (1u << shift) - 1u;
    lo += static_cast<uint32_t>(b) << shift;
    hi = hi - lo < width ? hi : lo + width;  // the bin's keys: [lo, hi]
    if (shift == 0 || lo == hi) return lo;
    if (m <= static_cast<uint32_t>(kMaxCand)) break;
  }
  // ≤ kMaxCand keys in [lo, hi]: the one with r keys of the bin below it and more than r at or below.
  uint32_t cand[kMaxCand];
  int n = 0;
  const uint32_t span = hi - lo;
  w.ForEach([&](uint32_t v) {
    if (v - lo <= span && n < kMaxCand) cand[n++] = v;
  });
  for (int i = 0; i < n; ++i) {
    uint32_t less = 0, leq = 0;
    for (int j = 0; j < n; ++j) {
      less += cand[j] < cand[i];
      leq += cand[j] <= cand[i];
    }
    if (less <= r && r < leq) return cand[i];
  }
  return lo;  // not reached: the bin holds the answer
}

template <int kBits, int kMaxCand, bool kPacked, typename W>
AUGMENTD_HD uint32_t SelectRankKeyHistT(const W& w, uint32_t rank, uint32_t* hist, int stride) {
  uint32_t lo = 0xFFFFFFFFu, hi = 0;
  w.ForEach([&](uint32_t v) {
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  });
  if (lo == hi) return lo;
  return SelectInRange<kBits, kMaxCand, kPacked>(w, lo, hi, rank, hist, stride, /*first=*/true);
}

// 32-bit counts, 2^5 bins (≤ 9 passes): any window size (the generic large-window kernel, the planar kernel).
template <typename W>
AUGMENTD_HD uint32_t SelectRankKeyHist(const W& w, uint32_t rank, uint32_t* hist, int stride) {
  return SelectRankKeyHistT<kSelectHistBits, kSelectMaxCandidates, false>(w, rank, hist, stride);
}

// 16-bit counts packed two to a word, 2^6 bins in the same kSelectHistBins-word column (≤ 8 passes): windows of
// < 2^16 keys (the levels inside a crowded tile bin, SelectRankKeyTileBins; k ≤ 40).
template <typename W>
AUGMENTD_HD uint32_t SelectRankKeyHist16(const W& w, uint32_t rank, uint32_t* hist, int stride) {
  return SelectRankKeyHistT<kSelectHist16Bits, kSelectHist16MaxCandidates, true>(w, rank, hist, stride);
}

// Register selection for the small windows (k = 2, 3: 8 and 27 keys). Batcher's odd–even merge sort on N keys, any
// N: the network of the next power of two with every comparator that touches a position ≥ N dropped (= padding with
// +∞ keys, which no comparator moves). Comparator t of the network as positions (i, j), i < j, min to i.
struct Comparator {
  int i, j;
};
// t < 0: the number of comparators; else comparator t.
AUGMENTD_HD_CONSTEXPR Comparator BatcherComparator(int n, int t) {
  int count = 0;
  for (int p = 1; p < n; p *= 2)
    for (int k = p; k >= 1; k /= 2)
      for (int j = k % p; j + k < n; j += 2 * k)
        for (int i = 0; i < k && i + j + k < n; ++i)
          if ((i + j) / (2 * p) == (i + j + k) / (2 * p)) {
            if (count == t) return Comparator{i + j, i + j + k};
            ++count;
          }
  return Comparator{count, -1};
}
AUGMENTD_HD_CONSTEXPR int BatcherCount(int n) { return BatcherComparator(n, -1).i; }

template <int N, int T>
AUGMENTD_HD void CompareSwapAt(uint32_t* v) {
  constexpr Comparator c = BatcherComparator(N, T);
  const uint32_t a = v[c.i], b = v[c.j];
  v[c.i] = a < b ? a : b;
  v[c.j] = a < b ? b : a;
}
template <int N, int... T>
AUGMENTD_HD void SortNetworkImpl(uint32_t* v, std::integer_sequence<int, T...>) {
  (void)v;  // N = 1: no comparator
  (CompareSwapAt<N, T>(v), ...);
}
// Sorts v[0, N) ascending; every index is a compile-time constant, so a local array stays in registers and the
// comparators whose outputs are not used (SelectRankNetwork reads one position) are removed by the compiler.
template <int N>
AUGMENTD_HD void SortNetwork(uint32_t* v) {
  SortNetworkImpl<N>(v, std::make_integer_sequence<int, BatcherCount(N)>{});
}

// The key of rank R (0-based) of the K³ window w (Window3K<K>): loaded into registers once, sorted by the
// network, position R read — the same key as SelectRankKey / std::nth_element (a sort is an exact selection).
template <int K, int R>
AUGMENTD_HD uint32_t SelectRankNetwork(const Window3K<K>& w) {
  constexpr int N = K * K * K;
  static_assert(R >= 0 && R < N, "rank inside the window");
  uint32_t v[N];
  AUGMENTD_DA5_UNROLL
  for (int a = 0; a < K; ++a) {
    AUGMENTD_DA5_UNROLL
    for (int b = 0; b < K; ++b) {
      AUGMENTD_DA5_UNROLL
      for (int c = 0; c < K; ++c) v[(a * K + b) * K + c] = w.base[a * w.stride_a + b * w.stride_b + c];
    }
  }
  SortNetwork<N>(v);
  return v[R];
}

// ------------------------------------------------------------------------------------------------------------
// Tile-binned selection (the 3D median kernel, 2026-12-01 s9): the block's key tile carries one bin byte per key,
// computed once per tile key against kTileBins − 1 boundaries taken from the tile itself (TileBounds: a sorted
// sample of its keys, so the bins hold about equal shares of the tile whatever its distribution — an edge between
// two intensity levels gets half of the bins on each side), instead of every window finding its own range. The
// bin (QuantileBin: how many boundaries lie below the key) is monotone non-decreasing in the key order, so all
// keys of a lower bin sort below all keys of a higher one and the rank-r key lies in the bin where the window's
// prefix count passes r. Per output: one histogram pass over the window's bin bytes (no min/max pass), then
// either (≤ TileMaxCand keys in that bin) one pass gathering them, ranked by a register sorting network; or (a
// bin holding more: ties, or a window much narrower than its tile) one pass for the bin's key range and
// SelectRankKeyHist16's levels inside it. Exact either way.
inline constexpr int kTileBins = 64;      // bin bytes 0..63: 16-bit counts packed in kTileBins / 2 words
inline constexpr int kTileSamples = kTileBins;  // tile keys sampled; the kTileBins − 1 lowest are the boundaries
inline constexpr int kTileMaxCand = 24;   // most keys gathered and sorted in registers (k ≥ 7, run-time k)
// The gather's capacity for a compile-time K (0: run-time k): ≈ 3× a bin's expected share of a window (k³ / 64
// when the window's keys look like its tile's), so the fallback stays rare, while the register sort stays small
// (63 / 132 comparators for 16 / 24 keys).
AUGMENTD_HD_CONSTEXPR int TileMaxCand(int k) { return k >= 4 && k <= 6 ? 16 : kTileMaxCand; }
static_assert(kTileBins / 2 <= kSelectHistBins, "the histogram column of the other selections");

// Index of sample t (0 ≤ t < kTileSamples) in a tile of `halo` < 2^26 keys, spread evenly over the tile (unsigned
// 32-bit: the division is a shift).
AUGMENTD_HD int TileSampleIndex(int t, int halo) {
  return static_cast<int>(static_cast<uint32_t>(t) * static_cast<uint32_t>(halo) / kTileSamples);
}
// The key's bin: the number of boundaries below it, bounds[0, kTileBins − 1) ascending. Branch-free binary search
// (steps 32 … 1 over 63 entries): monotone non-decreasing in the key.
AUGMENTD_HD uint32_t QuantileBin(uint32_t key, const uint32_t* bounds) {
  static_assert(kTileBins == 64, "six steps");
  int pos = 0;
  AUGMENTD_DA5_UNROLL
  for (int step = 32; step >= 1; step >>= 1) pos += bounds[pos + step - 1] < key ? step : 0;
  return static_cast<uint32_t>(pos);
}
// The stable rank of sample t among the kTileSamples samples of the tile `keys` (how many sort before it, ties by
// sample index): the device sorts the samples by writing each to bounds[rank] (one thread per sample).
AUGMENTD_HD int TileSampleRank(const uint32_t* keys, int halo, int t) {
  const uint32_t mine = keys[TileSampleIndex(t, halo)];
  int rank = 0;
  for (int u = 0; u < kTileSamples; ++u) {
    const uint32_t v = keys[TileSampleIndex(u, halo)];
    rank += v < mine || (v == mine && u < t);
  }
  return rank;
}

// A window over a key tile and its bin bytes (same layout): K > 0 compile-time size (inner loops unrolled), K = 0
// run-time k.
template <int K>
struct TileWindow {
  const uint32_t* keys;
  const uint8_t* bins;
  int k;  // == K when K > 0
  int stride_a;
  int stride_b;
  template <typename F>
  AUGMENTD_HD void ForEachIndex(F&& f) const {
    const int n = K > 0 ? K : k;
    for (int a = 0; a < n; ++a) {
      const int plane = a * stride_a;
      if constexpr (K > 0) {
        AUGMENTD_DA5_UNROLL
        for (int b = 0; b < K; ++b) {
          AUGMENTD_DA5_UNROLL
          for (int c = 0; c < K; ++c) f(plane + b * stride_b + c);
        }
      } else {
        for (int b = 0; b < n; ++b)
          for (int c = 0; c < n; ++c) f(plane + b * stride_b + c);
      }
    }
  }
  template <typename F>
  AUGMENTD_HD void ForEach(F&& f) const {  // the keys (a window for SelectRankKeyHistT)
    ForEachIndex([&](int o) { f(keys[o]); });
  }
};

// The key of rank r (0-based) among the n ≤ N keys c[0, n) (c[n, N) ignored): sorted in registers by the network
// with the unused entries as +∞ (they sort last; r < n reads a real key), then position r picked by a select chain.
template <int N>
AUGMENTD_HD uint32_t RankOfFew(const uint32_t* c, int n, uint32_t r) {
  uint32_t v[N];
  AUGMENTD_DA5_UNROLL
  for (int i = 0; i < N; ++i) v[i] = i < n ? c[i] : 0xFFFFFFFFu;
  SortNetwork<N>(v);
  uint32_t out = v[0];
  AUGMENTD_DA5_UNROLL
  for (int i = 1; i < N; ++i) out = static_cast<uint32_t>(i) == r ? v[i] : out;
  return out;
}

// SelectRankKeyHistT's levels from a given key range: the key of rank r among the window's keys in [lo, hi]
// (lo < hi; every key in [lo, hi] counted by r, keys outside it ignored).
// The rank-`rank` key of the window (< 2^16 keys) from its bin bytes: see the section comment. `hist` as
// SelectRankKeyHist's (kTileBins / 2 words used).
template <int K>
AUGMENTD_HD uint32_t SelectRankKeyTileBins(const TileWindow<K>& w, uint32_t rank, uint32_t* hist, int stride) {
  for (int b = 0; b < kTileBins / 2; ++b) hist[b * stride] = 0;
  w.ForEachIndex([&](int o) {
    const uint32_t b = w.bins[o];
    hist[(b >> 1) * stride] += 1u << ((b & 1u) << 4);
  });
  uint32_t acc = 0, m = 0;
  uint32_t bin = 0;
  for (;; ++bin) {  // terminates: the window holds more than rank keys
    m = (hist[(bin >> 1) * stride] >> ((bin & 1u) << 4)) & 0xFFFFu;
    if (acc + m > rank) break;
    acc += m;
  }
  const uint32_t r = rank - acc;  // rank among the window's keys of bin `bin`
  constexpr int kCap = TileMaxCand(K);
  if (m <= static_cast<uint32_t>(kCap)) {
    uint32_t cand[kCap];
    int n = 0;  // ends at m ≤ kCap: the pass visits the same keys the histogram counted
    w.ForEachIndex([&](int o) {
      if (w.bins[o] == bin) cand[n++] = w.keys[o];
    });
    return RankOfFew<kCap>(cand, n, r);
  }
  uint32_t lo = 0xFFFFFFFFu, hi = 0;  // the bin's keys in this window: a contiguous key range (monotone bins)
  w.ForEachIndex([&](int o) {
    if (w.bins[o] != bin) return;
    const uint32_t v = w.keys[o];
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  });
  if (lo == hi) return lo;
  return SelectInRange<kSelectHist16Bits, kSelectHist16MaxCandidates, true>(w, lo, hi, r, hist, stride,
                                                                          /*first=*/false);
}

// The median key (rank ⌊k³/2⌋) of the k³ window at `keys` / `bins` (a key tile and its TileBin bytes, strides as
// Window3), the per-voxel selection of the 3D median kernel: K ≤ 3 the register network (≤ 27 keys; `bins`,
// `hist` unused), else SelectRankKeyTileBins (K = 0: k at run time, k ≤ 40 so the window holds < 2^16 keys).
template <int K>
AUGMENTD_HD uint32_t MedianKey3(const uint32_t* keys, const uint8_t* bins, int k, int stride_a, int stride_b,
                                uint32_t* hist, int stride) {
  if constexpr (K >= 1 && K <= 3) {
    return SelectRankNetwork<K, K * K * K / 2>(Window3K<K>{keys, stride_a, stride_b});
  } else {
    const int n = K > 0 ? K : k;
    return SelectRankKeyTileBins(TileWindow<K>{keys, bins, n, stride_a, stride_b},
                                 static_cast<uint32_t>(n * n * n / 2), hist, stride);
  }
}

// Largest k with a compile-time build of the median kernel (DA5 draws 2…7); larger k run MedianKey3<0>.
inline constexpr int kMedianMaxCompiledSize = 7;
// Smallest k that selects from the tile's bin bytes (below: the register network, which needs no bins).
inline constexpr int kMedianMinBinnedSize = 4;

// MedianKey3 for a run-time k: the compiled build of k if there is one (what the kernel dispatches to).
AUGMENTD_HD uint32_t MedianKey3Any(const uint32_t* keys, const uint8_t* bins, int k, int stride_a, int stride_b,
                                   uint32_t* hist, int stride) {
  switch (k) {
    case 2: return MedianKey3<2>(keys, bins, k, stride_a, stride_b, hist, stride);
    case 3: return MedianKey3<3>(keys, bins, k, stride_a, stride_b, hist, stride);
    case 4: return MedianKey3<4>(keys, bins, k, stride_a, stride_b, hist, stride);
    case 5: return MedianKey3<5>(keys, bins, k, stride_a, stride_b, hist, stride);
    case 6: return MedianKey3<6>(keys, bins, k, stride_a, stride_b, hist, stride);
    case 7: return MedianKey3<7>(keys, bins, k, stride_a, stride_b, hist, stride);
    default: return MedianKey3<0>(keys, bins, k, stride_a, stride_b, hist, stride);
  }
}

// ------------------------------------------------------------------------------------------------------------
// Sharpening: x + strength · (2·nd·x − Σ face neighbours), replicate border (bgv2 SharpeningTransform), in the CPU
// transform's float order. 3D: 6·x minus the 6 face neighbours. Planar (a 2D sample run as (1, X, Y)): 4·x minus
// the 4 neighbours along axes 1 and 2 — the CPU's 2D form. The 3D form on a unit axis 0 is not that: its two
// axis-0 neighbours are x itself and fl(fl(fl(6x) − x) − x) differs from fl(4x) for about a quarter of all floats.
AUGMENTD_HD float SharpenAt(const float* x, int d0, int d1, int d2, int i, int j, int l, float strength,
                            bool planar = false) {
  const int im = i > 0 ? i - 1 : 0, ip = i + 1 < d0 ? i + 1 : d0 - 1;
  const int jm = j > 0 ? j - 1 : 0, jp = j + 1 < d1 ? j + 1 : d1 - 1;
  const int lm = l > 0 ? l - 1 : 0, lp = l + 1 < d2 ? l + 1 : d2 - 1;
  auto at = [&](int a, int b, int c) { return x[(static_cast<int64_t>(a) * d1 + b) * d2 + c]; };
  const float c = at(i, j, l);
  float lap;
  if (planar) {
    lap = RnSub(RnMul(4.0f, c), at(i, jm, l));
  } else {
    lap = RnSub(RnMul(6.0f, c), at(im, j, l));
    lap = RnSub(lap, at(ip, j, l));
    lap = RnSub(lap, at(i, jm, l));
  }
  lap = RnSub(lap, at(i, jp, l));
  lap = RnSub(lap, at(i, j, lm));
  lap = RnSub(lap, at(i, j, lp));
  return RnAdd(RnMul(lap, strength), c);
}

AUGMENTD_HD float ClampF(float v, float lo, float hi) { return v < lo ? lo : (v > hi ? hi : v); }

// ------------------------------------------------------------------------------------------------------------
// Rician noise: sqrt((x − m + σ·n_re)² + (σ·n_im)²) + m, then the moments are restored in double.
AUGMENTD_HD float RicianMagnitude(float x, float mn, float n_re, float n_im, float sigma) {
  const float re = RnAdd(RnSub(x, mn), RnMul(n_re, sigma));
  const float im = RnMul(n_im, sigma);
  return RnAdd(RnSqrt(RnAdd(RnMul(re, re), RnMul(im, im))), mn);
}

// (r − mean_r) / std_r · std_in + mean_in in double (mean_in where std_r is not > 0).
AUGMENTD_HD float RicianRescale(float r, const SliceMoments& in, const SliceMoments& rm) {
  if (!(rm.std > 0)) return static_cast<float>(RnAddD(RnMulD(static_cast<double>(r), 0.0), in.mean));
  return static_cast<float>(RnAddD(RnMulD((static_cast<double>(r) - rm.mean) / rm.std, in.std), in.mean));
}

// ------------------------------------------------------------------------------------------------------------
// Local kernels (brightness_gradient_additive, local_gamma): value of the normalised bump at (i, j, l) from the
// 1D factors, as LocalGaussianKernel: (fl(fl(k0·k1)·k2) − kmn) / top.
AUGMENTD_HD float LocalKernelValue(float k0, float k1, float k2, float kmn, float top) {
  const float v = RnSub(RnMul(RnMul(k0, k1), k2), kmn);
  return top > 0 ? RnDiv(v, top) : v;
}

// Gradient: x + ((K − mean) if centered) / max_abs · strength.
AUGMENTD_HD float GradientAdd(float x, float kv, const LocalSlice& p) {
  if (p.centered) kv = RnSub(kv, p.mean);
  return RnAdd(x, RnMul(RnDiv(kv, p.max_abs), p.strength));
}

// Local gamma: n = (x − mn) / r; (n^γ·K + (1 − K)·n)·r + mn.
AUGMENTD_HD float LocalGammaBlend(float x, float kv, float mn, float r, float gamma) {
  const float n = RnDiv(RnSub(x, mn), r);
  const float blended = RnAdd(RnMul(PowF(n, gamma), kv), RnMul(RnSub(1.0f, kv), n));
  return RnAdd(RnMul(blended, r), mn);
}

// Host: min and max of fl(fl(a_i·b_j)·c_l) over all i, j, l without the product volume. Rounding is monotone and
// a product's extremes over a box lie at its corners, so the extremes are those of the corner products, first
// over (a, b), then with c.
inline void ProductMinMax(const float* a, int na, const float* b, int nb, const float* c, int nc, float& mn,
                          float& mx) {
  auto range = [](const float* v, int n, float& lo, float& hi) {
    lo = *std::min_element(v, v + n);
    hi = *std::max_element(v, v + n);
  };
  auto corners = [](float alo, float ahi, float blo, float bhi, float& lo, float& hi) {
    const float p[4] = {alo * blo, alo * bhi, ahi * blo, ahi * bhi};
    lo = std::min(std::min(p[0], p[1]), std::min(p[2], p[3]));
    hi = std::max(std::max(p[0], p[1]), std::max(p[2], p[3]));
  };
  float alo, ahi, blo, bhi, clo, chi, ablo, abhi;
  range(a, na, alo, ahi);
  range(b, nb, blo, bhi);
  range(c, nc, clo, chi);
  corners(alo, ahi, blo, bhi, ablo, abhi);
  corners(ablo, abhi, clo, chi, mn, mx);
}

// Host: mode-1 normalisation of a bump from its 1D factors (LocalGaussianKernel's min → 0, max → 1): sets
// s.mode, s.kmn and s.top; returns the raw product's max.
inline float SetGeneratedRange(const float* f0, int n0, const float* f1, int n1, const float* f2, int n2,
                               LocalSlice& s) {
  float mx;
  ProductMinMax(f0, n0, f1, n1, f2, n2, s.kmn, mx);
  s.top = mx - s.kmn;
  s.mode = 1;
  return mx;
}

// Host: max|K| of the brightness gradient's kernel K (normalised, minus s.mean when s.centered) as the CPU transform
// computes it over the volume: K is monotone in the raw product, so its extremes are at the product's min / max.
inline float GradientMaxAbs(const LocalSlice& s, float raw_max) {
  float lo = LocalKernelValue(s.kmn, 1.0f, 1.0f, s.kmn, s.top);
  float hi = LocalKernelValue(raw_max, 1.0f, 1.0f, s.kmn, s.top);
  if (s.centered) {
    lo -= s.mean;
    hi -= s.mean;
  }
  return std::max(std::fabs(lo), std::fabs(hi));
}

}  // namespace augmentd::cuda::da5
