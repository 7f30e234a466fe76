#include "augment/rng.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "augment/kernels/cpu_intensity.h"
#include "gtest/gtest.h"

namespace augmentd {
namespace {

TEST(Rng, StreamsAreKeyedAndReproducible) {
  RandomStream a(7, 100, 3), b(7, 100, 3), c(7, 101, 3), d(7, 100, 4);
  const double x = a.Uniform();
  EXPECT_EQ(x, b.Uniform());
  EXPECT_NE(x, c.Uniform());
  EXPECT_NE(x, d.Uniform());
  EXPECT_EQ(RandomStream(1, 2, 3).Uniform(0.5, 0.5), 0.5);
}

TEST(Rng, DeviceIndependentLogAndCosAreAccurate) {
  double max_log = 0, max_cos = 0, max_sin = 0;
  for (uint32_t a = 0; a < (1u << 24); a += 97) {
    const float u = (static_cast<float>(a) + 1.0f) * (1.0f / 16777216.0f);
    const double l = std::log(static_cast<double>(u));
    max_log = std::max(max_log, std::fabs(LogUnit(u) - l) / std::max(1e-30, std::fabs(l)));
    max_cos = std::max(max_cos, std::fabs(CosTwoPi(u) - std::cos(2 * M_PI * static_cast<double>(u))));
    float c, sn;
    CosSinTwoPi(u, c, sn);
    EXPECT_EQ(FloatAsBits(c), FloatAsBits(CosTwoPi(u)));
    max_sin = std::max(max_sin, std::fabs(sn - std::sin(2 * M_PI * static_cast<double>(u))));
  }
  EXPECT_LT(max_log, 2e-7);
  EXPECT_LT(max_cos, 2e-7);
  EXPECT_LT(max_sin, 2e-7);
}

TEST(Rng, NormalAtHasUnitMoments) {
  const StreamKey key = MakeStreamKey(11, 22, 3, 1);
  const int n = 1 << 20;
  double s = 0, ss = 0, s4 = 0;
  for (int i = 0; i < n; ++i) {
    const double v = NormalAt(key, i);
    s += v;
    ss += v * v;
    s4 += v * v * v * v;
  }
  EXPECT_NEAR(s / n, 0.0, 0.005);
  EXPECT_NEAR(ss / n, 1.0, 0.005);
  EXPECT_NEAR(s4 / n, 3.0, 0.05);
}

// The per-voxel device path (NormalAt: one element of block i / 4) and the vectorised CPU bulk path
// (kernels::FillNormalField / AddGaussianNoise: every block once) must give the same bits for any key and index,
// including fields that start mid-block and blocks whose counter crosses 2^32.
TEST(Rng, NormalAtEqualsBulkFieldBitForBit) {
  std::mt19937_64 gen(20261129);
  int64_t compared = 0;
  for (int trial = 0; trial < 40; ++trial) {
    const StreamKey key = MakeStreamKey(gen(), gen(), static_cast<uint32_t>(gen() % 4096),
                                        static_cast<uint32_t>(gen() % (1u << 20)));
    const uint64_t starts[] = {0, 1, 2, 3, gen() % 100000, (uint64_t{1} << 34) - 4 * 70 - 1, gen() >> 3};
    const int64_t n = static_cast<int64_t>(1 + gen() % 3000);
    const uint64_t first = starts[trial % 7];
    std::vector<float> bulk(static_cast<size_t>(n));
    kernels::FillNormalField(key, first, n, bulk.data());
    for (int64_t k = 0; k < n; ++k) {
      const float v = NormalAt(key, first + static_cast<uint64_t>(k));
      ASSERT_EQ(FloatAsBits(v), FloatAsBits(bulk[k])) << "trial " << trial << " element " << first + k;
      float block[4];
      NormalBlock(key, (first + static_cast<uint64_t>(k)) / 4, block);
      ASSERT_EQ(FloatAsBits(v), FloatAsBits(block[(first + static_cast<uint64_t>(k)) % 4]));
    }
    compared += n;
  }
  // The noise kernel: x + sigma·NormalAt(key, i), rounded like the CUDA kernel (__fadd_rn(x, __fmul_rn(σ, N))).
  const StreamKey key = MakeStreamKey(5, 6, 7, 2);
  const int64_t n = 100003;
  std::vector<float> x(static_cast<size_t>(n));
  std::normal_distribution<float> nd(0.3f, 2.0f);
  for (float& v : x) v = nd(gen);
  std::vector<float> y = x;
  kernels::AddGaussianNoise(y.data(), n, 0.0731f, key);
  for (int64_t i = 0; i < n; ++i) {
    const float e = RnAdd(x[i], RnMul(0.0731f, NormalAt(key, static_cast<uint64_t>(i))));
    ASSERT_EQ(FloatAsBits(e), FloatAsBits(y[i])) << i;
  }
  EXPECT_GT(compared, 10000);
}

// The bulk field is N(0, 1): Kolmogorov–Smirnov against Φ, moments, and no correlation between neighbours
// (cos/sin partners of one pair, and elements of different pairs).
TEST(Rng, NormalFieldIsStandardNormal) {
  const int64_t n = 1 << 20;
  std::vector<float> f(static_cast<size_t>(n));
  kernels::FillNormalField(MakeStreamKey(123, 456, 7, 1), 0, n, f.data());
  double s = 0, ss = 0, s3 = 0, s4 = 0, lag1 = 0, lag2 = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = f[i];
    s += v;
    ss += v * v;
    s3 += v * v * v;
    s4 += v * v * v * v;
    if (i + 1 < n) lag1 += v * f[i + 1];
    if (i + 2 < n) lag2 += v * f[i + 2];
  }
  EXPECT_NEAR(s / n, 0.0, 0.005);
  EXPECT_NEAR(ss / n, 1.0, 0.005);
  EXPECT_NEAR(s3 / n, 0.0, 0.02);
  EXPECT_NEAR(s4 / n, 3.0, 0.05);
  EXPECT_NEAR(lag1 / n, 0.0, 0.005);
  EXPECT_NEAR(lag2 / n, 0.0, 0.005);
  std::sort(f.begin(), f.end());
  double d = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double cdf = 0.5 * std::erfc(-static_cast<double>(f[i]) / std::sqrt(2.0));
    d = std::max(d, std::max(cdf - static_cast<double>(i) / n, static_cast<double>(i + 1) / n - cdf));
  }
  EXPECT_LT(d, 1.63 / std::sqrt(static_cast<double>(n)));  // KS critical value for p = 0.01
}

}  // namespace
}  // namespace augmentd
