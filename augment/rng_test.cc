#include "augment/rng.h"

#include <cmath>

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
  double max_log = 0, max_cos = 0;
  for (uint32_t a = 0; a < (1u << 24); a += 97) {
    const float u = (static_cast<float>(a) + 1.0f) * (1.0f / 16777216.0f);
    const double l = std::log(static_cast<double>(u));
    max_log = std::max(max_log, std::fabs(LogUnit(u) - l) / std::max(1e-30, std::fabs(l)));
    max_cos = std::max(max_cos, std::fabs(CosTwoPi(u) - std::cos(2 * M_PI * static_cast<double>(u))));
  }
  EXPECT_LT(max_log, 2e-7);
  EXPECT_LT(max_cos, 2e-7);
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

}  // namespace
}  // namespace augmentd
