#include "augment/kernels/cpu_half.h"

#include <cmath>

#include "gtest/gtest.h"

namespace augmentd::kernels {
namespace {

TEST(CpuHalf, RoundTripsExactValues) {
  for (float v : {0.0f, 1.0f, -2.5f, 1000.0f, 0.5f, 65504.0f, 6.103515625e-05f, 5.9604644775390625e-08f}) {
    EXPECT_EQ(RoundToHalf(v), v) << v;
  }
}

TEST(CpuHalf, RoundsToNearestEven) {
  // Spacing between 512 and 1024 is 0.5: 500.125 -> 500.0 (below half), 500.375 -> 500.5 (above half).
  EXPECT_EQ(RoundToHalf(500.125f), 500.0f);
  EXPECT_EQ(RoundToHalf(500.375f), 500.5f);
  // Exact ties go to the even mantissa: 1 + 2^-11 -> 1, 1 + 3·2^-11 -> 1 + 2^-9.
  EXPECT_EQ(RoundToHalf(1.0f + std::ldexp(1.0f, -11)), 1.0f);
  EXPECT_EQ(RoundToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 1.0f + std::ldexp(1.0f, -9));
  EXPECT_EQ(RoundToHalf(0.1f), 0.0999755859375f);
  EXPECT_EQ(RoundToHalf(333.3333f), 333.25f);
}

TEST(CpuHalf, SubnormalsOverflowAndBFloat16) {
  EXPECT_EQ(RoundToHalf(1e-8f), 0.0f);
  EXPECT_EQ(RoundToHalf(3e-8f), 5.9604644775390625e-08f);
  EXPECT_TRUE(std::isinf(RoundToHalf(70000.0f)));
  EXPECT_EQ(BFloat16BitsToFloat(FloatToBFloat16Bits(1.0f)), 1.0f);
  EXPECT_EQ(BFloat16BitsToFloat(FloatToBFloat16Bits(3.14159f)), 3.140625f);
}

}  // namespace
}  // namespace augmentd::kernels
