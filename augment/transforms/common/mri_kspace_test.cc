// Ghosting and spike against a naive reference: separable O(n²) DFTs and an explicit numpy-style fftshift.
#include <cmath>

#include "augment/fft.h"
#include "augment/testing/test_util.h"
#include "augment/transforms/ghosting/ghosting.h"
#include "augment/transforms/spike/spike.h"

namespace augmentd {
namespace {
using fft::Complex;
using Vol = std::vector<Complex>;
using S3 = std::array<int64_t, 3>;

int64_t At(const S3& s, int64_t i, int64_t j, int64_t k) { return (i * s[1] + j) * s[2] + k; }

Vol NaiveFftN(Vol x, const S3& s, bool inverse) {
  for (int a = 0; a < 3; ++a)
    for (int64_t i = 0; i < s[0]; ++i)
      for (int64_t j = 0; j < s[1]; ++j)
        for (int64_t k = 0; k < s[2]; ++k) {
          int64_t idx[3] = {i, j, k};
          if (idx[a] != 0) continue;  // one line per start point
          Vol line(static_cast<size_t>(s[static_cast<size_t>(a)]));
          for (int64_t q = 0; q < s[static_cast<size_t>(a)]; ++q) {
            idx[a] = q;
            line[static_cast<size_t>(q)] = x[static_cast<size_t>(At(s, idx[0], idx[1], idx[2]))];
          }
          line = fft::NaiveDft(line, inverse);
          for (int64_t q = 0; q < s[static_cast<size_t>(a)]; ++q) {
            idx[a] = q;
            x[static_cast<size_t>(At(s, idx[0], idx[1], idx[2]))] = line[static_cast<size_t>(q)];
          }
        }
  return x;
}

// numpy.fft.fftshift (shift = +n//2) or ifftshift (−n//2) on every axis.
Vol Shift(const Vol& x, const S3& s, bool inverse) {
  Vol y(x.size());
  for (int64_t i = 0; i < s[0]; ++i)
    for (int64_t j = 0; j < s[1]; ++j)
      for (int64_t k = 0; k < s[2]; ++k) {
        auto sh = [&](int64_t v, int64_t n) { return inverse ? (v - n / 2 + n) % n : (v + n / 2) % n; };
        y[static_cast<size_t>(At(s, sh(i, s[0]), sh(j, s[1]), sh(k, s[2])))] = x[static_cast<size_t>(At(s, i, j, k))];
      }
  return y;
}

Vol ShiftedSpectrum(const float* x, const S3& s) {
  Vol v(static_cast<size_t>(s[0] * s[1] * s[2]));
  for (size_t i = 0; i < v.size(); ++i) v[i] = x[i];
  return Shift(NaiveFftN(v, s, false), s, false);
}

void ExpectImageFromShifted(const Vol& shifted, const S3& s, const float* got) {
  const Vol back = NaiveFftN(Shift(shifted, s, true), s, true);
  for (size_t i = 0; i < back.size(); ++i) EXPECT_NEAR(got[i], back[i].real(), 1e-4) << i;
}

TEST(Ghosting, MatchesNaiveShiftedSpectrumReference) {
  const S3 s = {6, 7, 5};
  for (auto [ng, axis, restore] : {std::tuple<int, int, double>{2, 0, -1}, {3, 1, 0.5}, {1, 2, 0.3}, {4, 2, -1}}) {
    nlohmann::json params = {{"num_ghosts", ng}, {"axis", axis}, {"intensity", 0.8}, {"restore", nullptr}};
    if (restore >= 0) params["restore"] = restore;
    auto t = GhostingTransform::FromJson({});
    ASSERT_TRUE(t.ok());
    SampleData smp = testing::RandomSample(2, {s[0], s[1], s[2]});
    const std::vector<float> x = smp.image;
    auto p = (*t)->ParseParams(params, smp.layout());
    ASSERT_TRUE(p.ok()) << p.status();
    ASSERT_TRUE((*t)->Apply(**p, smp).ok());
    const int64_t n = s[static_cast<size_t>(axis)], mid = n / 2;
    int64_t lo = mid, hi = mid + 1;
    if (restore >= 0) {
      const int64_t size = std::lround(restore * n);
      lo = mid - size / 2;
      hi = mid + size / 2;
    }
    for (int64_t c = 0; c < 2; ++c) {
      Vol spec = ShiftedSpectrum(x.data() + c * 210, s);
      for (int64_t i = 0; i < s[0]; ++i)
        for (int64_t j = 0; j < s[1]; ++j)
          for (int64_t k = 0; k < s[2]; ++k) {
            const int64_t q = axis == 0 ? i : axis == 1 ? j : k;
            if (q % ng == 0 && (q < lo || q >= hi)) spec[static_cast<size_t>(At(s, i, j, k))] *= 0.2;
          }
      ExpectImageFromShifted(spec, s, smp.image.data() + c * 210);
    }
  }
}

TEST(Ghosting, DrawsInRangeAndZeroIntensityIsIdentity) {
  auto t = GhostingTransform::FromJson({{"num_ghosts", {2, 5}}, {"axes", {0, 2}}, {"intensity", 0.9},
                                        {"restore", 0.4}});
  ASSERT_TRUE(t.ok()) << t.status();
  SampleLayout l{1, {8, 8, 8}, 0};
  for (uint64_t i = 0; i < 50; ++i) {
    auto p = testing::DrawFor(**t, l, 5, i);
    const auto& g = static_cast<const GhostingParams&>(*p);
    EXPECT_TRUE(g.num_ghosts >= 2 && g.num_ghosts <= 5);
    EXPECT_TRUE(g.axis == 0 || g.axis == 2);
    EXPECT_TRUE(g.intensity >= 0 && g.intensity < 0.9);
    ASSERT_TRUE(g.restore.has_value());
    EXPECT_TRUE(*g.restore >= 0 && *g.restore < 0.4);
  }
  SampleData smp = testing::RandomSample(1, {8, 8, 8});
  const std::vector<float> x = smp.image;
  auto p = (*t)->ParseParams({{"num_ghosts", 3}, {"axis", 0}, {"intensity", 0.0}}, smp.layout());
  ASSERT_TRUE(p.ok());
  ASSERT_TRUE((*t)->Apply(**p, smp).ok());
  EXPECT_EQ(smp.image, x);
  EXPECT_FALSE(GhostingTransform::FromJson({{"axes", {3}}}).ok());
  EXPECT_FALSE(GhostingTransform::FromJson({{"restore", 1.5}}).ok());
}

TEST(Spike, MatchesNaiveShiftedSpectrumReference) {
  const S3 s = {6, 5, 7};
  auto t = SpikeTransform::FromJson({{"num_spikes", {0, 3}}, {"intensity", 2.0}});
  ASSERT_TRUE(t.ok()) << t.status();
  SampleData smp = testing::RandomSample(2, {s[0], s[1], s[2]});
  const std::vector<float> x = smp.image;
  const nlohmann::json params = {{"spikes_positions", {{0.1, 0.9, 0.5}, {0.1, 0.9, 0.5}, {0.7, 0.2, 0.0}}},
                                 {"intensity", -0.7}};
  auto p = (*t)->ParseParams(params, smp.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, smp).ok());
  for (int64_t c = 0; c < 2; ++c) {
    Vol spec = ShiftedSpectrum(x.data() + c * 210, s);
    for (const auto& pos : params["spikes_positions"]) {
      double m = 0;
      for (const Complex& z : spec) m = std::max(m, std::abs(z));
      const auto i = static_cast<int64_t>(std::floor(pos[0].get<double>() * s[0]));
      const auto j = static_cast<int64_t>(std::floor(pos[1].get<double>() * s[1]));
      const auto k = static_cast<int64_t>(std::floor(pos[2].get<double>() * s[2]));
      spec[static_cast<size_t>(At(s, i, j, k))] += m * -0.7;
    }
    ExpectImageFromShifted(spec, s, smp.image.data() + c * 210);
  }
  for (uint64_t i = 0; i < 30; ++i) {
    auto d = testing::DrawFor(**t, smp.layout(), 9, i);
    const auto& sp = static_cast<const SpikeParams&>(*d);
    EXPECT_LE(sp.positions.size(), 3u);
    EXPECT_TRUE(sp.intensity >= -2.0 && sp.intensity < 2.0);  // a single number d: (−d, d), as TorchIO
    for (const auto& q : sp.positions)
      for (double v : q) EXPECT_TRUE(v >= 0 && v < 1);
  }
  EXPECT_FALSE((*t)->ParseParams({{"spikes_positions", {{0.1, 1.0, 0.5}}}, {"intensity", 1}}, smp.layout()).ok());
}

}  // namespace
}  // namespace augmentd
