#include "augment/transforms/apply_random_binary_operator/apply_random_binary_operator.h"

#include <array>
#include <cmath>
#include <random>

#include "augment/testing/test_util.h"
#include "augment/transforms/apply_random_binary_operator/binop_passes.h"

namespace augmentd {
namespace {
namespace bo = binary_operator_internal;

// Brute-force cross-correlation dilation by the footprint itself, the definition the separable path implements:
// out[i] = OR over footprint elements j of m[i + j − o] (o = floor((f − 1) / 2) per axis, zeros outside). `d`, `f`
// in 3D form (2D: 1 × X × Y with f = 1 × k × k).
std::vector<uint8_t> NaiveDilate(const std::vector<uint8_t>& m, const std::vector<int64_t>& d,
                                 const std::vector<uint8_t>& fp, const std::vector<int64_t>& f) {
  std::vector<uint8_t> out(m.size(), 0);
  const int64_t o0 = (f[0] - 1) / 2, o1 = (f[1] - 1) / 2, o2 = (f[2] - 1) / 2;
  std::vector<std::array<int64_t, 3>> offsets;
  for (int64_t i = 0; i < f[0]; ++i)
    for (int64_t j = 0; j < f[1]; ++j)
      for (int64_t k = 0; k < f[2]; ++k)
        if (fp[(i * f[1] + j) * f[2] + k]) offsets.push_back({i - o0, j - o1, k - o2});
  for (int64_t a = 0; a < d[0]; ++a)
    for (int64_t b = 0; b < d[1]; ++b)
      for (int64_t c = 0; c < d[2]; ++c)
        for (const auto& [i, j, k] : offsets) {
          const int64_t x = a + i, y = b + j, z = c + k;
          if (x < 0 || y < 0 || z < 0 || x >= d[0] || y >= d[1] || z >= d[2]) continue;
          if (m[(x * d[1] + y) * d[2] + z]) {
            out[(a * d[1] + b) * d[2] + c] = 1;
            break;
          }
        }
  return out;
}

std::vector<uint8_t> Not(std::vector<uint8_t> m) {
  for (auto& v : m) v = !v;
  return m;
}

// bgv2's four operators from NaiveDilate: erosion = ¬dilation(¬m) (outside counts as foreground), opening =
// dilation(erosion), closing = erosion(dilation).
std::vector<uint8_t> NaiveOperator(BinaryOperator op, const std::vector<uint8_t>& m, const std::vector<int64_t>& shape,
                                   double r) {
  std::vector<int64_t> fd, d = {1, 1, 1}, f = {1, 1, 1};
  const auto fp = bo::Footprint(r, static_cast<int>(shape.size()), fd);
  for (size_t i = 0; i < shape.size(); ++i) {
    d[3 - shape.size() + i] = shape[i];
    f[3 - shape.size() + i] = fd[i];
  }
  auto dil = [&](const std::vector<uint8_t>& x) { return NaiveDilate(x, d, fp, f); };
  auto ero = [&](const std::vector<uint8_t>& x) { return Not(NaiveDilate(Not(x), d, fp, f)); };
  switch (op) {
    case BinaryOperator::kDilation: return dil(m);
    case BinaryOperator::kErosion: return ero(m);
    case BinaryOperator::kOpening: return dil(ero(m));
    case BinaryOperator::kClosing: return ero(dil(m));
  }
  return m;
}

// Test masks on `shape` (3D form d0 × d1 × d2): sparse noise, blobs (boxes, some cut by the border), a slab filling
// one face, everything, nothing.
std::vector<std::vector<uint8_t>> Masks(const std::vector<int64_t>& shape, std::mt19937& gen) {
  int64_t d[3] = {1, 1, 1};
  for (size_t i = 0; i < shape.size(); ++i) d[3 - shape.size() + i] = shape[i];
  const int64_t n = d[0] * d[1] * d[2];
  std::vector<std::vector<uint8_t>> out;
  std::vector<uint8_t> m(static_cast<size_t>(n));
  for (auto& v : m) v = gen() % 9 == 0;
  out.push_back(m);
  std::fill(m.begin(), m.end(), 0);
  for (int box = 0; box < 6; ++box) {
    int64_t lo[3], hi[3];
    for (int a = 0; a < 3; ++a) {  // a box may start outside: cut by the border
      lo[a] = static_cast<int64_t>(gen() % static_cast<uint32_t>(d[a] + 2)) - 2;
      hi[a] = lo[a] + 1 + static_cast<int64_t>(gen() % static_cast<uint32_t>(std::max<int64_t>(1, d[a] / 2)));
    }
    for (int64_t a = std::max<int64_t>(lo[0], 0); a < std::min(hi[0], d[0]); ++a)
      for (int64_t b = std::max<int64_t>(lo[1], 0); b < std::min(hi[1], d[1]); ++b)
        for (int64_t c = std::max<int64_t>(lo[2], 0); c < std::min(hi[2], d[2]); ++c) m[(a * d[1] + b) * d[2] + c] = 1;
  }
  out.push_back(m);
  std::fill(m.begin(), m.end(), 0);
  for (int64_t a = 0; a < d[0]; ++a)
    for (int64_t b = 0; b < d[1]; ++b)
      for (int64_t c = 0; c < std::min<int64_t>(3, d[2]); ++c) m[(a * d[1] + b) * d[2] + c] = 1;  // touches 5 faces
  out.push_back(m);
  out.emplace_back(static_cast<size_t>(n), 1);
  out.emplace_back(static_cast<size_t>(n), 0);
  // A small object away from the border and a single voxel at a corner: most windows miss the set's box (the box
  // skips of the CUDA passes), the complement's box is the whole volume.
  std::fill(m.begin(), m.end(), 0);
  for (int64_t a = d[0] / 3; a < d[0] / 3 + std::min<int64_t>(2, d[0]); ++a)
    for (int64_t b = d[1] / 2; b < d[1] / 2 + 3 && b < d[1]; ++b)
      for (int64_t c = d[2] / 4; c < d[2] / 4 + 2; ++c) m[(a * d[1] + b) * d[2] + c] = 1;
  m[static_cast<size_t>(n - 1)] = 1;
  out.push_back(m);
  return out;
}

TEST(ApplyRandomBinaryOperator, FootprintsAreSkimages) {
  std::vector<int64_t> dims;
  auto b1 = bo::Footprint(1, 3, dims);  // ball(1): the 6-neighbourhood cross
  ASSERT_EQ(dims, (std::vector<int64_t>{3, 3, 3}));
  int count = 0;
  for (uint8_t v : b1) count += v;
  EXPECT_EQ(count, 7);
  auto b = bo::Footprint(3.7, 3, dims);  // int(8.4) = 8 points: an even-sized ball
  EXPECT_EQ(dims, (std::vector<int64_t>{8, 8, 8}));
  count = 0;
  for (uint8_t v : b) count += v;
  EXPECT_EQ(count, 160);  // skimage 0.26: ball(3.7).sum()
  auto d = bo::Footprint(3.7, 2, dims);  // arange(-3.7, 4.7): 9 points, off-centre
  EXPECT_EQ(dims, (std::vector<int64_t>{9, 9}));
  count = 0;
  for (uint8_t v : d) count += v;
  EXPECT_EQ(count, 41);  // disk(3.7).sum()
  int row1 = 0, row7 = 0;  // rows at offsets -2.7 and 3.3: 5 and 3 elements (asymmetric)
  for (int j = 0; j < 9; ++j) {
    row1 += d[1 * 9 + j];
    row7 += d[7 * 9 + j];
  }
  EXPECT_EQ(row1, 5);
  EXPECT_EQ(row7, 3);
}

// The separable exact method (min-plus passes of the per-axis costs) against the footprint scan: every operator,
// every integer radius 1..8 (nnU-Net's strel_size range) and fractional radii (even-sized, off-centre footprints:
// nnU-Net draws r ~ U(1, 8)), 3D balls and 2D disks, masks touching the border; exact equality.
TEST(ApplyRandomBinaryOperator, SeparableMethodEqualsTheFootprintScan) {
  std::mt19937 gen(3);
  const std::vector<double> radii = {1, 2, 3, 4, 5, 6, 7, 8, 0.3, 0.5, 1.2, 1.6, 2.3, 2.5, 3.7, 4.49, 5.5, 6.01, 7.99};
  const BinaryOperator ops[] = {BinaryOperator::kDilation, BinaryOperator::kErosion, BinaryOperator::kOpening,
                                BinaryOperator::kClosing};
  const std::vector<std::vector<int64_t>> shapes = {{11, 19, 23}, {37, 29}};
  for (const auto& shape : shapes) {
    const auto masks = Masks(shape, gen);
    for (double r : radii)
      for (BinaryOperator op : ops)
        for (size_t k = 0; k < masks.size(); ++k) {
          const auto got = bo::ApplyOperator(op, masks[k], shape, r);
          const auto want = NaiveOperator(op, masks[k], shape, r);
          ASSERT_EQ(got.size(), want.size());
          int64_t diff = 0;
          for (size_t i = 0; i < got.size(); ++i) diff += got[i] != want[i];
          EXPECT_EQ(diff, 0) << BinaryOperatorName(op) << " r=" << r << " mask " << k << " ndim " << shape.size();
        }
  }
}

namespace cb = cuda::chain::binop;

// Host emulation of one CUDA operator pass (apply_random_binary_operator.cu): the kernels' per-voxel functions
// (binop_passes.h) over the whole volume, row → column → plane, as BinopRow/Column/PlaneKernel call them. `early`:
// the outward scans may stop (what the stage sets when BinopSplit accepts the costs); false: every j visited.
// `boxed`: as the kernels, voxels whose window misses the box of the pass's input set take the no-scan result
// (binop_passes.h: RowMayHit, ColumnMayHit, PlaneMayHit).
std::vector<uint8_t> EmulatedPass(const std::vector<uint8_t>& s, const int64_t d[3], int ndim,
                                  const std::vector<double>& h, double r2, bool erode, bool early, bool boxed) {
  cb::Axis ax;
  ax.h = h.data();
  ax.k = static_cast<int32_t>(h.size());
  ax.r2 = r2;
  ax.unimodal = cb::BinopSplit(h.data(), ax.k, &ax.split) ? 1 : 0;
  if (!early) ax.unimodal = ax.split = 0;
  const int64_t n = d[0] * d[1] * d[2], plane = d[1] * d[2];
  std::vector<uint8_t> nearest(static_cast<size_t>(n)), out(static_cast<size_t>(n));
  std::vector<uint16_t> pair(static_cast<size_t>(n));
  cb::Box box;
  cb::BoxReset(box);
  for (int64_t i = 0; i < n; ++i)
    if ((s[i] != 0) == !erode) cb::BoxAdd(box, static_cast<int32_t>(i / plane), static_cast<int32_t>((i / d[2]) % d[1]),
                                          static_cast<int32_t>(i % d[2]));
  const auto coords = [&](int64_t i, int32_t& a, int32_t& y, int32_t& z) {
    a = static_cast<int32_t>(i / plane);
    y = static_cast<int32_t>((i / d[2]) % d[1]);
    z = static_cast<int32_t>(i % d[2]);
  };
  const int32_t k = ax.k;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t z = i % d[2], row = i - z;
    int32_t ca, cy, cz;
    coords(i, ca, cy, cz);
    if (boxed && !cb::RowMayHit(box, ca, cy, cz, k)) {
      nearest[i] = cb::kNone;
      continue;
    }
    nearest[i] = cb::RowNearest(ax, static_cast<int32_t>(z), static_cast<int32_t>(d[2]), !erode,
                                [&](int32_t q) { return s[row + q] != 0; });
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t y = (i / d[2]) % d[1], col = i - y * d[2];
    int32_t ca, cy, cz;
    coords(i, ca, cy, cz);
    if (boxed && !cb::ColumnMayHit(box, ca, cy, cz, k)) {
      pair[i] = cb::kNoPair;
      continue;
    }
    pair[i] = cb::ColumnPair(ax, static_cast<int32_t>(y), static_cast<int32_t>(d[1]),
                             [&](int32_t q) { return nearest[col + int64_t{q} * d[2]]; });
  }
  for (int64_t i = 0; i < n; ++i) {
    bool hit;
    int32_t ca, cy, cz;
    coords(i, ca, cy, cz);
    if (boxed && !cb::PlaneMayHit(box, ca, cy, cz, k, ndim)) {
      hit = false;
    } else if (ndim == 2) {
      hit = cb::PairHit(ax, pair[i]);
    } else {
      const int64_t a = i / plane, within = i - a * plane;
      hit = cb::PlaneHit(ax, static_cast<int32_t>(a), static_cast<int32_t>(d[0]),
                         [&](int32_t q) { return pair[within + int64_t{q} * plane]; });
    }
    out[i] = erode ? !hit : hit;
  }
  return out;
}

std::vector<uint8_t> EmulatedOperator(BinaryOperator op, const std::vector<uint8_t>& m,
                                      const std::vector<int64_t>& shape, double r, bool early, bool boxed = false) {
  int64_t d[3] = {1, 1, 1};
  for (size_t i = 0; i < shape.size(); ++i) d[3 - shape.size() + i] = shape[i];
  const int ndim = static_cast<int>(shape.size());
  const std::vector<double> h = bo::AxisCosts(r, ndim);
  const double r2 = r * r;
  const auto pass = [&](const std::vector<uint8_t>& x, bool erode) {
    return EmulatedPass(x, d, ndim, h, r2, erode, early, boxed);
  };
  switch (op) {
    case BinaryOperator::kDilation: return pass(m, false);
    case BinaryOperator::kErosion: return pass(m, true);
    case BinaryOperator::kOpening: return pass(pass(m, true), false);
    case BinaryOperator::kClosing: return pass(pass(m, false), true);
  }
  return m;
}

// AxisCosts is unimodal around its minimum for every radius (the kernels' early stops rely on it; BinopSplit falls
// back to full scans otherwise), and BinopSplit refuses costs that are not.
TEST(ApplyRandomBinaryOperator, AxisCostsAreUnimodal) {
  for (int ndim : {2, 3})
    for (int i = 1; i <= 3200; ++i) {
      const double r = i / 100.0;
      const std::vector<double> h = bo::AxisCosts(r, ndim);
      int32_t split = -1;
      EXPECT_TRUE(cb::BinopSplit(h.data(), static_cast<int32_t>(h.size()), &split)) << "r=" << r << " ndim " << ndim;
      EXPECT_GE(split, 0);
      EXPECT_LT(split, static_cast<int32_t>(h.size()));
    }
  const std::vector<double> bumpy = {4, 1, 2, 0.5, 3};
  int32_t split = -1;
  EXPECT_FALSE(cb::BinopSplit(bumpy.data(), 5, &split));
  EXPECT_EQ(split, 0);
}

// The CUDA passes' per-voxel logic (early-stopping outward scans, sums above r² dropped, the apply folded into the
// last pass) emulated on the host equals the CPU's separable method and the brute-force footprint scan, bit for bit:
// every operator, radii up to 8 (nnU-Net) and 12.5, fractional (even-sized, off-centre) footprints, 2D and 3D,
// objects cut by the border, a slab on 5 faces, full and empty masks; with and without the early stops and the
// box skips.
TEST(ApplyRandomBinaryOperator, CudaPassLogicEqualsTheCpu) {
  std::mt19937 gen(11);
  const std::vector<double> radii = {1, 2, 3, 5, 8, 0.5, 1.2, 2.5, 3.7, 4.49, 6.01, 7.99, 12.5};
  const BinaryOperator ops[] = {BinaryOperator::kDilation, BinaryOperator::kErosion, BinaryOperator::kOpening,
                                BinaryOperator::kClosing};
  const std::vector<std::vector<int64_t>> shapes = {{11, 19, 23}, {21, 9, 30}, {37, 29}, {1, 40}};
  for (const auto& shape : shapes) {
    const auto masks = Masks(shape, gen);
    for (double r : radii)
      for (BinaryOperator op : ops)
        for (size_t k = 0; k < masks.size(); ++k) {
          const auto want = bo::ApplyOperator(op, masks[k], shape, r);
          for (bool early : {true, false})
            for (bool boxed : {false, true}) {
              const auto got = EmulatedOperator(op, masks[k], shape, r, early, boxed);
              ASSERT_EQ(got.size(), want.size());
              int64_t diff = 0;
              for (size_t i = 0; i < got.size(); ++i) diff += got[i] != want[i];
              EXPECT_EQ(diff, 0) << BinaryOperatorName(op) << " r=" << r << " mask " << k << " shape "
                                 << shape.size() << "D early " << early << " boxed " << boxed;
            }
        }
  }
  // Against the footprint scan itself (the definition), r = 8 on a volume where the ball fits and overhangs.
  const std::vector<int64_t> shape = {18, 21, 20};
  const auto masks = Masks(shape, gen);
  for (BinaryOperator op : ops)
    for (size_t k = 0; k < masks.size(); ++k) {
      const auto want = NaiveOperator(op, masks[k], shape, 8);
      const auto got = EmulatedOperator(op, masks[k], shape, 8, true, true);
      int64_t diff = 0;
      for (size_t i = 0; i < got.size(); ++i) diff += got[i] != want[i];
      EXPECT_EQ(diff, 0) << BinaryOperatorName(op) << " mask " << k;
    }
}

// The tests above would pass for an operator that ignored the radius; pin a few known results of the reference
// semantics: the dilation of one voxel is the footprint itself; erosion keeps voxels at the border (outside counts
// as foreground) but removes a cube of side 2r from the inside.
TEST(ApplyRandomBinaryOperator, OperatorsOnKnownMasks) {
  const std::vector<int64_t> shape = {21, 21, 21};
  std::vector<uint8_t> one(21 * 21 * 21, 0);
  one[(10 * 21 + 10) * 21 + 10] = 1;
  for (double r : {1.0, 3.0, 8.0}) {
    std::vector<int64_t> fd;
    const auto fp = bo::Footprint(r, 3, fd);
    const int64_t k = fd[0], o = (k - 1) / 2;
    const auto d = bo::ApplyOperator(BinaryOperator::kDilation, one, shape, r);
    for (int64_t a = 0; a < 21; ++a)
      for (int64_t b = 0; b < 21; ++b)
        for (int64_t c = 0; c < 21; ++c) {
          // d[i] = fp[10 − i + o] (a cross-correlation): the ball is symmetric for an integer r
          const int64_t ja = 10 - a + o, jb = 10 - b + o, jc = 10 - c + o;
          const bool in = ja >= 0 && jb >= 0 && jc >= 0 && ja < k && jb < k && jc < k && fp[(ja * k + jb) * k + jc];
          ASSERT_EQ(d[(a * 21 + b) * 21 + c], in) << r << " " << a << " " << b << " " << c;
        }
  }
  const std::vector<uint8_t> all(21 * 21 * 21, 1);
  EXPECT_EQ(bo::ApplyOperator(BinaryOperator::kErosion, all, shape, 8), all);  // the border does not erode
  std::vector<uint8_t> hole = all;
  hole[(10 * 21 + 10) * 21 + 10] = 0;
  const auto e = bo::ApplyOperator(BinaryOperator::kErosion, hole, shape, 8);
  EXPECT_EQ(e[(10 * 21 + 10) * 21 + 18], 0);  // 8 away along the last axis: inside ball(8)
  EXPECT_EQ(e[(10 * 21 + 10) * 21 + 19], 1);
  EXPECT_EQ(e[(10 * 21 + 16) * 21 + 16], 1);  // (6, 6): 72 > 64
  EXPECT_EQ(e[(10 * 21 + 15) * 21 + 16], 0);  // (5, 6): 61 ≤ 64
}

TEST(ApplyRandomBinaryOperator, DilationClearsTheAddedVoxelsInTheOtherChannels) {
  SampleData s;
  s.channels = 3;
  s.shape = {7, 7, 7};
  s.image.assign(3 * 343, 0.0f);
  for (int64_t v = 0; v < 343; ++v) s.image[v] = 0.25f;     // channel 0: not in channel_idx
  s.image[343 + (3 * 7 + 3) * 7 + 3] = 1;                   // channel 1: one voxel in the centre
  for (int64_t v = 0; v < 343; ++v) s.image[2 * 343 + v] = v == (3 * 7 + 3) * 7 + 3 ? 0.0f : 1.0f;  // complement
  auto t = ApplyRandomBinaryOperatorTransform::FromJson({{"channel_idx", {-2, -1}}, {"strel_size", 1}});
  ASSERT_TRUE(t.ok()) << t.status();
  auto p = (*t)->ParseParams({{"apply_to_channels", {-2}}, {"operators", {"dilation"}}, {"strel_size", {1}}},
                             {3, {7, 7, 7}, 0});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  float sum1 = 0, sum2 = 0;
  for (int64_t v = 0; v < 343; ++v) {
    EXPECT_EQ(s.image[v], 0.25f);
    sum1 += s.image[343 + v];
    sum2 += s.image[2 * 343 + v];
    EXPECT_EQ(s.image[343 + v] + s.image[2 * 343 + v], 1.0f) << v;  // still one-hot
  }
  EXPECT_EQ(sum1, 7);
  EXPECT_EQ(sum2, 343 - 7);
  EXPECT_EQ((*t)->ParseParams({{"apply_to_channels", {0}}, {"operators", {"dilation"}}, {"strel_size", {1}}},
                              {3, {7, 7, 7}, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);  // 0 is not in channel_idx
}

TEST(ApplyRandomBinaryOperator, DrawsFollowTheConfiguration) {
  auto t = ApplyRandomBinaryOperatorTransform::FromJson(
      {{"channel_idx", {-3, -2, -1}}, {"strel_size", {1, 8}}, {"p_per_label", 0.5}});
  ASSERT_TRUE(t.ok());
  int applied = 0, first_is_minus3 = 0, dilations = 0;
  const int kSamples = 2000;
  for (int i = 0; i < kSamples; ++i) {
    auto p = testing::DrawFor(**t, {4, {8, 8, 8}, 1}, 5, i);
    const auto& q = static_cast<const ApplyRandomBinaryOperatorParams&>(*p);
    applied += static_cast<int>(q.apply_to_channels.size());
    for (size_t k = 0; k < q.strel_size.size(); ++k) {
      EXPECT_GE(q.strel_size[k], 1);
      EXPECT_LT(q.strel_size[k], 8);
      dilations += q.operators[k] == BinaryOperator::kDilation;
    }
    if (q.apply_to_channels.size() == 3) first_is_minus3 += q.apply_to_channels[0] == -3;
  }
  EXPECT_NEAR(applied / (3.0 * kSamples), 0.5, 0.03);
  EXPECT_NEAR(static_cast<double>(dilations) / applied, 0.25, 0.03);
  EXPECT_GT(first_is_minus3, 0);  // shuffled: not always the configured order
}

// The schema (augment/schema.h) keeps the accepted keys, the defaults and the error field names.
TEST(ApplyRandomBinaryOperator, ConfigSchemaKeepsKeysDefaultsAndErrorFields) {
  auto t = ApplyRandomBinaryOperatorTransform::FromJson({{"channel_idx", -1}});
  ASSERT_TRUE(t.ok()) << t.status();
  const nlohmann::json full = {{"channel_idx", {-1}},
                                {"strel_size", RandomScalar::Uniform(1, 10).ToJson()},
                                {"p_per_label", 1.0},
                                {"any_of_these", {"dilation", "erosion", "closing", "opening"}}};
  EXPECT_EQ((*t)->ConfigToJson(), full);
  auto again = ApplyRandomBinaryOperatorTransform::FromJson((*t)->ConfigToJson());
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->ConfigToJson(), full);
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {nlohmann::json::object(), "channel_idx"},
      {{{"channel_idx", nlohmann::json::array()}}, "channel_idx"},
      {{{"channel_idx", {5000}}}, "channel_idx"},
      {{{"channel_idx", 0}, {"strel_size", {0, 40}}}, "strel_size"},
      {{{"channel_idx", 0}, {"p_per_label", 2}}, "p_per_label"},
      {{{"channel_idx", 0}, {"any_of_these", {"thinning"}}}, "any_of_these"},
      {{{"channel_idx", 0}, {"any_of_these", nlohmann::json::array()}}, "any_of_these"},
      {{{"channel_idx", 0}, {"any_of_these", "dilation"}}, "any_of_these"},
      {{{"channel_idx", 0}, {"strel", 1}}, "strel"},
  };
  for (const auto& [config, field] : bad) {
    auto r = ApplyRandomBinaryOperatorTransform::FromJson(config);
    ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << config;
    EXPECT_NE(r.status().message().find("apply_random_binary_operator." + field), std::string::npos)
        << config << ": " << r.status();
  }
}

}  // namespace
}  // namespace augmentd
