// Host-only checks (no GPU, no CUDA headers) of da5_math.h — the per-voxel math the DA5 CUDA stages run — against
// the CPU transforms on small random volumes. The emulations below walk voxels exactly as the kernels index them
// (median: reflect-padded key tile, window at the output's own position), so a wrong border or origin rule fails.
#include "augment/kernels/common/da5_math.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "augment/testing/test_util.h"
#include "augment/transforms/brightness_gradient_additive/brightness_gradient_additive.h"
#include "augment/transforms/local_gamma/local_gamma.h"
#include "augment/transforms/common/local_kernel.h"
#include "augment/transforms/median_filter/median_filter.h"
#include "augment/transforms/rician_noise/rician_noise.h"
#include "augment/transforms/sharpening/sharpening.h"
#include "gtest/gtest.h"

namespace augmentd::cuda::da5 {
namespace {

using augmentd::testing::RandomSample;

bool SameBits(float a, float b) { return std::memcmp(&a, &b, sizeof(float)) == 0; }

// Counts voxels whose bits differ (reports the first).
int64_t BitMismatches(const std::vector<float>& got, const std::vector<float>& want) {
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    if (SameBits(got[i], want[i])) continue;
    if (bad++ == 0) ADD_FAILURE() << "voxel " << i << ": " << got[i] << " != " << want[i];
  }
  return bad;
}

// The bin bytes of a key tile as the kernel makes them: the kTileBins − 1 lowest of its kTileSamples samples,
// sorted by their stable ranks (TileSampleRank, the device's scatter) as boundaries, then QuantileBin per key.
std::vector<uint8_t> TileBins(const std::vector<uint32_t>& keys) {
  const int halo = static_cast<int>(keys.size());
  uint32_t bounds[kTileSamples];
  for (int t = 0; t < kTileSamples; ++t) bounds[TileSampleRank(keys.data(), halo, t)] = keys[TileSampleIndex(t, halo)];
  std::vector<uint8_t> bins(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) bins[i] = static_cast<uint8_t>(QuantileBin(keys[i], bounds));
  return bins;
}

// The median kernel on the host: the whole channel as one tile, halo by ReflectIndex, bin bytes over the tile's
// range, the kernel's per-voxel dispatch MedianKey3Any (register network for k ≤ 3, tile-binned selection above).
std::vector<float> EmulateMedian(const float* x, const int d[3], int k) {
  const int before = k / 2, h0 = d[0] + k - 1, h1 = d[1] + k - 1, h2 = d[2] + k - 1;
  std::vector<uint32_t> keys(static_cast<size_t>(h0) * h1 * h2);
  for (int a = 0; a < h0; ++a)
    for (int b = 0; b < h1; ++b)
      for (int c = 0; c < h2; ++c) {
        const int i = ReflectIndex(a - before, d[0]), j = ReflectIndex(b - before, d[1]);
        const int l = ReflectIndex(c - before, d[2]);
        keys[(static_cast<size_t>(a) * h1 + b) * h2 + c] = OrderedKey(x[(i * d[1] + j) * d[2] + l]);
      }
  const std::vector<uint8_t> bins = TileBins(keys);
  std::vector<float> out(static_cast<size_t>(d[0]) * d[1] * d[2]);
  uint32_t hist[kSelectHistBins];
  for (int i = 0; i < d[0]; ++i)
    for (int j = 0; j < d[1]; ++j)
      for (int l = 0; l < d[2]; ++l) {
        const size_t at = (static_cast<size_t>(i) * h1 + j) * h2 + l;
        out[(i * d[1] + j) * d[2] + l] = KeyToFloat(MedianKey3Any(&keys[at], &bins[at], k, h1 * h2, h2, hist, 1));
      }
  return out;
}

TEST(Da5Math, OrderedKeysSortLikeFloats) {
  const float v[] = {-3.5f, -1e-30f, 0.0f, 1e-30f, 2.0f, 7.25f, 1e30f};
  for (size_t i = 0; i + 1 < std::size(v); ++i) {
    EXPECT_LT(OrderedKey(v[i]), OrderedKey(v[i + 1]));
    EXPECT_TRUE(SameBits(KeyToFloat(OrderedKey(v[i])), v[i]));
  }
}

// A window over a plain vector of keys (any length).
struct VecWindow {
  const std::vector<uint32_t>* keys;
  template <typename F>
  void ForEach(F&& f) const {
    for (uint32_t v : *keys) f(v);
  }
};

// SelectRankKeyHist = SelectRankKey = std::nth_element at every rank, over windows built to hit each of its
// exits: smooth data spanning both signs, heavy ties (few distinct values), one outlier per window (the first
// level's bins collapse), geometric spreads (one key per level), ±0 / ±inf / denormals, and a single key.
TEST(Da5Math, HistogramSelectionEqualsSortedRank) {
  std::mt19937 rng(12345);
  std::normal_distribution<float> normal(0.3f, 1.0f);
  const int sizes[] = {1, 2, 8, 27, 64, 125, 343, 1000};
  int windows = 0;
  for (int kind = 0; kind < 7; ++kind)
    for (int n : sizes)
      for (int rep = 0; rep < 6; ++rep) {
        std::vector<float> x(static_cast<size_t>(n));
        for (int i = 0; i < n; ++i) {
          const float g = normal(rng);
          switch (kind) {
            case 0: x[i] = g; break;                                        // smooth, both signs
            case 1: x[i] = std::round(g * 1.5f) + 0.0f; break;              // ties
            case 2: x[i] = i == rep % n ? 1e30f : 0.5f + 1e-3f * g; break;  // one outlier
            case 3: x[i] = std::ldexp(1.0f, (i * 7 + rep) % 120 - 60) * (g < 0 ? -1.f : 1.f); break;  // geometric
            case 4: {
              const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, 1e-42f, -1e-42f, 1.0f};
              x[i] = specials[static_cast<size_t>(rng() % 7)];
              break;
            }
            case 5: x[i] = 2.0f; break;                                     // one key
            default: x[i] = 1.0f + std::ldexp(static_cast<float>(rng() % 40), -23); break;  // adjacent keys
          }
        }
        std::vector<uint32_t> keys(x.size());
        for (size_t i = 0; i < x.size(); ++i) keys[i] = OrderedKey(x[i]);
        std::vector<uint32_t> sorted = keys;
        std::sort(sorted.begin(), sorted.end());
        std::vector<uint32_t> hist(static_cast<size_t>(kSelectHistBins) * 3, 7u);  // stride 3, dirty on entry
        const VecWindow w{&keys};
        for (int r = 0; r < n; ++r) {
          const uint32_t got = SelectRankKeyHist(w, static_cast<uint32_t>(r), hist.data() + 1, 3);
          ASSERT_EQ(got, sorted[r]) << "kind " << kind << " n " << n << " rank " << r;
          ASSERT_EQ(got, SelectRankKey(w, static_cast<uint32_t>(r))) << "kind " << kind << " n " << n;
          ASSERT_EQ(SelectRankKeyHist16(w, static_cast<uint32_t>(r), hist.data() + 1, 3), sorted[r])
              << "packed: kind " << kind << " n " << n << " rank " << r;
        }
        ++windows;
      }
  EXPECT_EQ(windows, 7 * 8 * 6);
}

// SortNetwork<N> sorts every 0/1 input (the 0-1 principle: then it sorts every input) for N ≤ 16 exhaustively, and
// random 0/1 and key inputs for the sizes the median uses (8, 27) and its neighbours.
template <int N>
void ExpectSortsAll(std::mt19937& rng) {
  auto check = [](std::vector<uint32_t> in) {
    uint32_t v[N] = {};
    // An indexed copy (in.size() == N): GCC 13 flags std::copy's memcpy into v[1] as out of bounds (-Warray-bounds).
    for (int i = 0; i < N; ++i) v[i] = in[static_cast<size_t>(i)];
    SortNetwork<N>(v);
    std::sort(in.begin(), in.end());
    ASSERT_TRUE(std::equal(in.begin(), in.end(), v)) << "N " << N;
  };
  std::vector<uint32_t> in(N);
  if (N <= 16) {
    for (uint32_t bits = 0; bits < (1u << N); ++bits) {
      for (int i = 0; i < N; ++i) in[i] = (bits >> i) & 1u;
      check(in);
    }
  }
  for (int rep = 0; rep < 20000; ++rep) {
    for (int i = 0; i < N; ++i) in[i] = rep % 2 ? rng() & 1u : rng() % 7u * 0x28F5C28Fu;
    check(in);
  }
}

TEST(Da5Math, BatcherNetworkSortsEverySize) {
  std::mt19937 rng(7);
  ExpectSortsAll<1>(rng);
  ExpectSortsAll<2>(rng);
  ExpectSortsAll<3>(rng);
  ExpectSortsAll<5>(rng);
  ExpectSortsAll<8>(rng);
  ExpectSortsAll<11>(rng);
  ExpectSortsAll<16>(rng);
  ExpectSortsAll<17>(rng);
  ExpectSortsAll<27>(rng);
  ExpectSortsAll<32>(rng);
  EXPECT_EQ(BatcherCount(8), 19);    // Batcher's 8-key network
  EXPECT_EQ(BatcherCount(16), 63);   // and 16
  EXPECT_EQ(BatcherCount(32), 191);  // and 32
}

// MedianKey3Any (the kernel's per-voxel dispatch) = std::nth_element on windows cut out of a larger key block
// (strides ≠ k) with the block's bin bytes, for every compiled size and two run-time ones: noisy data (most windows
// gather ≤ 24 keys of one bin), ties, outliers inside the window, outliers outside it (the window sits in one or
// two tile bins: the fallback levels), an infinity in the block (no usable tile range: every key in bin 0).
TEST(Da5Math, MedianKeyDispatchEqualsSortedRank) {
  std::mt19937 rng(99);
  std::normal_distribution<float> normal(0.3f, 1.0f);
  int gathered = 0, fell_back = 0;
  for (int k = 1; k <= 9; ++k)
    for (int kind = 0; kind < 5; ++kind)
      for (int rep = 0; rep < 20; ++rep) {
        const int sb = k + 3, sa = sb * (k + 2);  // rows of k + 3 keys, planes of k + 2 rows
        std::vector<uint32_t> block(static_cast<size_t>(sa) * k);
        for (uint32_t& v : block) {
          const float g = normal(rng);
          v = OrderedKey(kind == 1 ? std::round(g) + 0.0f : kind == 2 ? (rng() % 5 == 0 ? 1e30f : 0.5f) : g);
        }
        if (kind == 3) {  // outside every window (the last two positions of the block)
          block[block.size() - 1] = OrderedKey(1e6f);
          block[block.size() - 2] = OrderedKey(-1e6f);
        }
        if (kind == 4) block[block.size() - 1] = OrderedKey(INFINITY);
        const std::vector<uint8_t> bins = TileBins(block);
        const int off = rep % 3;  // window start inside the block
        std::vector<uint32_t> win;
        for (int a = 0; a < k; ++a)
          for (int b = 0; b < k; ++b)
            for (int c = 0; c < k; ++c) win.push_back(block[off + a * sa + b * sb + c]);
        std::nth_element(win.begin(), win.begin() + win.size() / 2, win.end());
        uint32_t hist[kSelectHistBins * 2];
        ASSERT_EQ(MedianKey3Any(block.data() + off, bins.data() + off, k, sa, sb, hist + 1, 2), win[win.size() / 2])
            << "k " << k << " kind " << kind << " rep " << rep;
        if (k >= kMedianMinBinnedSize) {  // which way the binned selection went (both must be exercised)
          std::vector<int> count(kTileBins, 0);
          for (int a = 0; a < k; ++a)
            for (int b = 0; b < k; ++b)
              for (int c = 0; c < k; ++c) ++count[bins[off + a * sa + b * sb + c]];
          int acc = 0, bin = 0;
          while (acc + count[bin] <= k * k * k / 2) acc += count[bin++];
          (count[bin] <= TileMaxCand(k <= kMedianMaxCompiledSize ? k : 0) ? gathered : fell_back) += 1;
        }
      }
  EXPECT_GT(gathered, 50);
  EXPECT_GT(fell_back, 50);
}

// The sample ranks sort the samples (a permutation, ties by index), QuantileBin counts the boundaries below a key
// (= std::lower_bound over them, so monotone in the key order), and the bins split a tile into about equal shares:
// also a bimodal one (an edge), where bins linear in value would leave one or two bins per mode.
TEST(Da5Math, QuantileBinsSortAndAreMonotone) {
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int rep = 0; rep < 300; ++rep) {
    const int halo = 64 + static_cast<int>(rng() % 3000);
    std::vector<uint32_t> keys(static_cast<size_t>(halo));
    for (uint32_t& v : keys) {
      const float g = normal(rng);
      v = OrderedKey(rep % 3 == 0 ? std::round(g) + 0.0f : rep % 3 == 1 ? (rng() % 2 ? 3.0f : 0.0f) + 0.05f * g : g);
    }
    std::vector<uint32_t> bounds(kTileSamples, 0), samples(kTileSamples);
    std::vector<int> seen(kTileSamples, 0);
    for (int t = 0; t < kTileSamples; ++t) {
      const int r = TileSampleRank(keys.data(), halo, t);
      ASSERT_TRUE(r >= 0 && r < kTileSamples);
      ++seen[r];
      bounds[r] = samples[t] = keys[TileSampleIndex(t, halo)];
    }
    std::sort(samples.begin(), samples.end());
    ASSERT_EQ(bounds, samples) << rep;
    for (int c : seen) ASSERT_EQ(c, 1);
    std::vector<uint32_t> sorted = keys;
    std::sort(sorted.begin(), sorted.end());
    uint32_t prev = 0;
    std::vector<int> share(kTileBins, 0);
    for (uint32_t key : sorted) {
      const uint32_t b = QuantileBin(key, bounds.data());
      ASSERT_EQ(b, static_cast<uint32_t>(std::lower_bound(bounds.begin(), bounds.begin() + kTileBins - 1, key) -
                                         bounds.begin()));
      ASSERT_GE(b, prev);
      prev = b;
      ++share[b];
    }
    if (rep % 3 != 0) {  // no heavy ties: no bin holds more than 10 bins' worth of the tile (≈ 16 %; value-linear
      // bins put ≈ 19 % of the bimodal tiles into each mode's centre bin)
      for (int c : share) EXPECT_LE(c, 10 * halo / kTileBins + 8) << rep;
    }
  }
}

// A random 2-channel sample; `quantised`: many ties, so the rank rule matters (+ 0.0f: no −0, whose order against
// +0 is arbitrary).
SampleData MedianInput(const std::vector<int64_t>& shape, bool quantised, uint32_t seed) {
  SampleData s = RandomSample(2, shape, 0, 0, 0, seed);
  if (quantised)
    for (float& v : s.image) v = std::round(v) + 0.0f;
  return s;
}

// The CPU transform's median (size k) of both channels of `s`, in place.
void CpuMedian(SampleData& s, int64_t k) {
  auto t = MedianFilterTransform::Create({{k, k}, true, 0, 1});
  ASSERT_TRUE(t.ok());
  MedianFilterParams p;
  p.filter_sizes = {k, k};
  p.apply_channel = {true, true};
  ASSERT_TRUE((*t)->Apply(p, s).ok());
}

TEST(Da5Math, MedianEqualsCpuTransformBitForBit) {
  const std::vector<std::vector<int64_t>> shapes = {{5, 6, 7}, {2, 3, 9}, {1, 4, 5}, {9, 8, 3}};
  for (const auto& shape : shapes)
    for (int k = 2; k <= 9; ++k)  // every compiled size (2…7) and the run-time path (8, 9)
      for (bool quantised : {false, true}) {
        SampleData s = MedianInput(shape, quantised, 100 * k + static_cast<uint32_t>(shape[0]));
        const int d[3] = {static_cast<int>(shape[0]), static_cast<int>(shape[1]), static_cast<int>(shape[2])};
        const int64_t n = s.voxels();
        std::vector<float> want;
        for (int c = 0; c < 2; ++c) {
          const auto e = EmulateMedian(s.image.data() + c * n, d, k);
          want.insert(want.end(), e.begin(), e.end());
        }
        CpuMedian(s, k);
        EXPECT_EQ(BitMismatches(want, s.image), 0) << "k=" << k << " shape " << d[0] << "x" << d[1] << "x" << d[2];
      }
}

// The CPU transform's sharpening of both channels of `s` (strengths 0.37 / 0.91, clamped or not), in place.
SharpeningParams CpuSharpen(SampleData& s, bool clamp) {
  auto t = SharpeningTransform::Create({RandomScalar::Constant(0.7), 0, 1, 0});
  EXPECT_TRUE(t.ok());
  SharpeningParams p;
  p.strengths = {0.37, 0.91};
  p.clamp_intensities = {clamp, clamp};
  p.apply_channel = {true, true};
  EXPECT_TRUE(t.ok() && (*t)->Apply(p, s).ok());
  return p;
}

TEST(Da5Math, SharpenEqualsCpuTransformBitForBit) {
  for (bool clamp : {false, true}) {
    SampleData s = RandomSample(2, {6, 5, 7}, 0, 0, 0, clamp ? 3 : 4);
    const SampleData in = s;
    const SharpeningParams p = CpuSharpen(s, clamp);
    const int64_t n = in.voxels();
    std::vector<float> want(in.image.size());
    for (int c = 0; c < 2; ++c) {
      const float* x = in.image.data() + c * n;
      const float lo = *std::min_element(x, x + n), hi = *std::max_element(x, x + n);
      for (int i = 0; i < 6; ++i)
        for (int j = 0; j < 5; ++j)
          for (int l = 0; l < 7; ++l) {
            float v = SharpenAt(x, 6, 5, 7, i, j, l, static_cast<float>(p.strengths[c]));
            if (clamp) v = ClampF(v, lo, hi);
            want[c * n + (i * 5 + j) * 7 + l] = v;
          }
    }
    EXPECT_EQ(BitMismatches(want, s.image), 0);
  }
}

// The planar median kernel (d0 = 1) on the host: k×k windows of the reflect-padded plane.
std::vector<float> EmulatePlanarMedian(const float* x, int d1, int d2, int k) {
  const int before = k / 2, h1 = d1 + k - 1, h2 = d2 + k - 1;
  std::vector<uint32_t> keys(static_cast<size_t>(h1) * h2);
  for (int b = 0; b < h1; ++b)
    for (int c = 0; c < h2; ++c)
      keys[static_cast<size_t>(b) * h2 + c] =
          OrderedKey(x[ReflectIndex(b - before, d1) * d2 + ReflectIndex(c - before, d2)]);
  std::vector<float> out(static_cast<size_t>(d1) * d2);
  uint32_t hist[kSelectHistBins];
  for (int j = 0; j < d1; ++j)
    for (int l = 0; l < d2; ++l) {
      const Window2 w{&keys[static_cast<size_t>(j) * h2 + l], k, h2};
      out[j * d2 + l] = KeyToFloat(SelectRankKeyHist(w, static_cast<uint32_t>(k * k / 2), hist, 1));
    }
  return out;
}

// 2D samples run as (1, X, Y): the planar path and the k³ path on the unit axis both equal the CPU's 2D median.
TEST(Da5Math, PlanarMedianEqualsCpu2dTransformBitForBit) {
  const std::vector<std::vector<int64_t>> shapes = {{6, 7}, {1, 5}, {9, 4}, {17, 3}};
  for (const auto& shape : shapes)
    for (int k = 2; k <= 9; ++k)
      for (bool quantised : {false, true}) {
        SampleData s = MedianInput(shape, quantised, 1000 * k + static_cast<uint32_t>(shape[0]));
        const int d[3] = {1, static_cast<int>(shape[0]), static_cast<int>(shape[1])};
        const int64_t n = s.voxels();
        std::vector<float> planar, cube;
        for (int c = 0; c < 2; ++c) {
          const auto p = EmulatePlanarMedian(s.image.data() + c * n, d[1], d[2], k);
          const auto e = EmulateMedian(s.image.data() + c * n, d, k);
          planar.insert(planar.end(), p.begin(), p.end());
          cube.insert(cube.end(), e.begin(), e.end());
        }
        CpuMedian(s, k);
        EXPECT_EQ(BitMismatches(planar, s.image), 0) << "planar k=" << k << " shape " << d[1] << "x" << d[2];
        EXPECT_EQ(BitMismatches(cube, s.image), 0) << "k^3 k=" << k << " shape " << d[1] << "x" << d[2];
      }
}

// The planar form equals the CPU's 2D sharpening; the 3D form on the unit axis does not (why 2D needs it).
TEST(Da5Math, PlanarSharpenEqualsCpu2dTransformBitForBit) {
  for (bool clamp : {false, true}) {
    SampleData s = RandomSample(2, {9, 7}, 0, 0, 0, clamp ? 5 : 6);
    const SampleData in = s;
    const SharpeningParams p = CpuSharpen(s, clamp);
    const int64_t n = in.voxels();
    std::vector<float> want(in.image.size()), cube(in.image.size());
    for (int c = 0; c < 2; ++c) {
      const float* x = in.image.data() + c * n;
      const float lo = *std::min_element(x, x + n), hi = *std::max_element(x, x + n);
      for (int j = 0; j < 9; ++j)
        for (int l = 0; l < 7; ++l) {
          const float st = static_cast<float>(p.strengths[c]);
          float v = SharpenAt(x, 1, 9, 7, 0, j, l, st, true), u = SharpenAt(x, 1, 9, 7, 0, j, l, st);
          if (clamp) {
            v = ClampF(v, lo, hi);
            u = ClampF(u, lo, hi);
          }
          want[c * n + j * 7 + l] = v;
          cube[c * n + j * 7 + l] = u;
        }
    }
    EXPECT_EQ(BitMismatches(want, s.image), 0);
    int64_t differ = 0;
    for (size_t i = 0; i < cube.size(); ++i) differ += !SameBits(cube[i], s.image[i]);
    EXPECT_GT(differ, 0) << "the 3D form on a unit axis happened to match: the test input is too tame";
  }
}

// The moments the GPU computes (shifted one-pass sums in double), sequentially.
SliceMoments HostMoments(const float* x, int64_t n) {
  MomentsPartial p{0, 0, INFINITY, -INFINITY};
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - x[0];
    p.s += d;
    p.q += d * d;
    p.mn = std::min(p.mn, x[i]);
    p.mx = std::max(p.mx, x[i]);
  }
  return FinalizeMoments(x[0], p, n);
}

TEST(Da5Math, RicianMatchesCpuTransform) {
  SampleData s = RandomSample(2, {7, 6, 5}, 0, 0, 0, 9);
  std::vector<float> x = s.image;
  auto t = RicianNoiseTransform::Create({{0.0, 0.1}});
  ASSERT_TRUE(t.ok());
  RicianNoiseParams p;
  p.variance = 0.8;  // large, so the noise dominates and a wrong field shows
  p.seed = 77;
  p.sample_index = 3;
  p.transform_index = 5;
  p.key_given = true;
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  const int64_t n = static_cast<int64_t>(x.size());
  const SliceMoments in = HostMoments(x.data(), n);
  const StreamKey re = MakeStreamKey(77, 3, 5, 1), im = MakeStreamKey(77, 3, 5, 2);
  for (int64_t i = 0; i < n; ++i)
    x[i] = RicianMagnitude(x[i], in.mn, NormalAt(re, static_cast<uint64_t>(i)), NormalAt(im, static_cast<uint64_t>(i)),
                           0.8f);
  const SliceMoments r = HostMoments(x.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    const float v = RicianRescale(x[i], in, r);
    ASSERT_NEAR(v, s.image[i], 4e-7 * (1 + std::fabs(s.image[i]))) << "voxel " << i;
  }
}

// Factors, range and (gradient) max|K| of one drawn kernel, as the stages pack them.
struct Packed {
  std::vector<float> f[3];
  LocalSlice s;
  float raw_max = 0;
};
Packed Pack(const LocalKernelSpec& spec, const std::vector<int64_t>& shape) {
  Packed k;
  for (int d = 0; d < 3; ++d) k.f[d] = transforms_internal::LocalGaussianAxis(shape[d], spec.loc_px[d], spec.scale[d]);
  k.raw_max = SetGeneratedRange(k.f[0].data(), static_cast<int>(shape[0]), k.f[1].data(), static_cast<int>(shape[1]),
                                k.f[2].data(), static_cast<int>(shape[2]), k.s);
  return k;
}

std::vector<LocalKernelSpec> Specs(const std::vector<int64_t>& shape) {
  std::mt19937 gen(5);
  std::vector<LocalKernelSpec> specs;
  for (int r = 0; r < 12; ++r) {
    LocalKernelSpec s;
    for (int64_t n : shape) {
      const double a = static_cast<double>(n);
      s.loc_px.push_back(std::uniform_real_distribution<double>(-0.5, 1.5)(gen) * a);
      s.scale.push_back(std::exp(
          std::uniform_real_distribution<double>(std::log(std::max(1.0, std::floor(a / 6))), std::log(a))(gen)));
    }
    s.factor = r % 2 ? 3.5 : -2.25;
    specs.push_back(s);
  }
  LocalKernelSpec far;  // far outside: every factor underflows to 0, a degenerate kernel
  far.loc_px = {-4000, -4000, -4000};
  far.scale = {0.5, 0.5, 0.5};
  far.factor = 2;
  specs.push_back(far);
  return specs;
}

TEST(Da5Math, LocalKernelValuesEqualLocalGaussianKernel) {
  const std::vector<int64_t> shape = {9, 7, 11};
  for (const LocalKernelSpec& spec : Specs(shape)) {
    std::vector<float> want(9 * 7 * 11);
    transforms_internal::LocalGaussianKernel(shape, spec.loc_px, spec.scale, want.data());
    const Packed k = Pack(spec, shape);
    std::vector<float> got;
    for (int i = 0; i < 9; ++i)
      for (int j = 0; j < 7; ++j)
        for (int l = 0; l < 11; ++l) got.push_back(LocalKernelValue(k.f[0][i], k.f[1][j], k.f[2][l], k.s.kmn, k.s.top));
    EXPECT_EQ(BitMismatches(got, want), 0);
  }
}

TEST(Da5Math, GradientEqualsCpuTransformBitForBit) {
  const std::vector<int64_t> shape = {8, 5, 9};
  for (bool centered : {false, true})
    for (const LocalKernelSpec& spec : Specs(shape)) {
      BrightnessGradientAdditiveConfig cfg;
      cfg.mean_centered = centered;
      auto t = BrightnessGradientAdditiveTransform::Create(cfg);
      ASSERT_TRUE(t.ok());
      SampleData s = RandomSample(1, shape, 0, 0, 0, 21);
      std::vector<float> want = s.image;
      BrightnessGradientAdditiveParams p;
      p.specs = {spec};
      p.dense.resize(1);
      ASSERT_TRUE((*t)->Apply(p, s).ok());
      Packed k = Pack(spec, shape);
      k.s.centered = centered;
      if (centered) {
        std::vector<float> vol(want.size());
        transforms_internal::LocalGaussianKernel(shape, spec.loc_px, spec.scale, vol.data());
        double sum = 0;
        for (float v : vol) sum += v;
        k.s.mean = static_cast<float>(sum / static_cast<double>(vol.size()));
      }
      k.s.max_abs = GradientMaxAbs(k.s, k.raw_max);
      k.s.strength = static_cast<float>(spec.factor);
      if (static_cast<double>(k.s.max_abs) >= 1e-8) {
        for (int i = 0; i < 8; ++i)
          for (int j = 0; j < 5; ++j)
            for (int l = 0; l < 9; ++l) {
              float& x = want[(i * 5 + j) * 9 + l];
              x = GradientAdd(x, LocalKernelValue(k.f[0][i], k.f[1][j], k.f[2][l], k.s.kmn, k.s.top), k.s);
            }
      }
      EXPECT_EQ(BitMismatches(want, s.image), 0) << "centered " << centered;
    }
}

TEST(Da5Math, LocalGammaEqualsCpuTransformOnTheHost) {
  const std::vector<int64_t> shape = {7, 9, 6};
  int spec_index = 0;
  for (const LocalKernelSpec& spec : Specs(shape)) {
    const double gamma = spec_index++ % 2 ? 0.3 : 2.7;
    auto t = LocalGammaTransform::Create({});
    ASSERT_TRUE(t.ok());
    SampleData s = RandomSample(1, shape, 0, 0, 0, 31);
    std::vector<float> want = s.image;
    LocalGammaParams p;
    p.specs = {spec};
    p.dense.resize(1);
    p.gammas = {gamma};
    ASSERT_TRUE((*t)->Apply(p, s).ok());
    const Packed k = Pack(spec, shape);
    const float mn = *std::min_element(want.begin(), want.end()), mx = *std::max_element(want.begin(), want.end());
    const float r = std::max(mx - mn, 1e-8f);
    for (int i = 0; i < 7; ++i)
      for (int j = 0; j < 9; ++j)
        for (int l = 0; l < 6; ++l) {
          float& x = want[(i * 9 + j) * 6 + l];
          x = LocalGammaBlend(x, LocalKernelValue(k.f[0][i], k.f[1][j], k.f[2][l], k.s.kmn, k.s.top), mn, r,
                              static_cast<float>(gamma));
        }
    EXPECT_EQ(BitMismatches(want, s.image), 0);
  }
}

}  // namespace
}  // namespace augmentd::cuda::da5
