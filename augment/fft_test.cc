#include "augment/fft.h"

#include <random>

#include "gtest/gtest.h"

namespace augmentd::fft {
namespace {

std::vector<Complex> RandomLine(int64_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<double> d;
  std::vector<Complex> x(static_cast<size_t>(n));
  for (auto& v : x) v = Complex(d(g), d(g));
  return x;
}

double MaxAbsDiff(const std::vector<Complex>& a, const std::vector<Complex>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

// Mixed radix (2, 3, 5, 7, 13), Bluestein (prime factors 41, 127, 211), and tiny lengths.
TEST(Fft, MatchesNaiveDftForArbitraryLengths) {
  for (int64_t n : {1, 2, 3, 4, 5, 7, 12, 13, 30, 80, 128, 160, 205, 127, 211, 254, 169}) {
    const std::vector<Complex> x = RandomLine(n, static_cast<uint32_t>(n));
    const Plan plan(n);
    for (bool inverse : {false, true}) {
      std::vector<Complex> y = x;
      plan.Transform(y.data(), inverse);
      const std::vector<Complex> ref = NaiveDft(x, inverse);
      const double scale = inverse ? 1.0 / static_cast<double>(n) : 1.0;
      EXPECT_LT(MaxAbsDiff(y, ref), 1e-10 * static_cast<double>(n) * scale + 1e-12) << "n=" << n;
    }
  }
}

TEST(Fft, RoundTripAndNdMatchesSeparableNaive) {
  const std::vector<int64_t> shape = {6, 5, 17};  // 17 > 13: a Bluestein axis after two mixed-radix ones
  const int64_t total = 6 * 5 * 17;
  const std::vector<Complex> x = RandomLine(total, 7);
  std::vector<Complex> y = x;
  FftN(y, shape, false);
  // Reference: naive DFT along each axis in turn.
  std::vector<Complex> ref = x;
  int64_t inner = total;
  for (int64_t s : shape) {
    inner /= s;
    for (int64_t o = 0; o < total / (s * inner); ++o)
      for (int64_t i = 0; i < inner; ++i) {
        std::vector<Complex> line(static_cast<size_t>(s));
        for (int64_t k = 0; k < s; ++k) line[static_cast<size_t>(k)] = ref[static_cast<size_t>(o * s * inner + k * inner + i)];
        line = NaiveDft(line, false);
        for (int64_t k = 0; k < s; ++k) ref[static_cast<size_t>(o * s * inner + k * inner + i)] = line[static_cast<size_t>(k)];
      }
  }
  EXPECT_LT(MaxAbsDiff(y, ref), 1e-9);
  FftN(y, shape, true);
  EXPECT_LT(MaxAbsDiff(y, x), 1e-12);
  EXPECT_GT(MaxAbsDiff(ref, x), 1.0);  // the transform did something
}

}  // namespace
}  // namespace augmentd::fft
