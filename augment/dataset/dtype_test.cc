// augment/dataset/dtype.h: element conversion and fill — misaligned sources and destinations (byte offsets into
// mapped files and slots), floating-point values outside an integer type's range (saturating, NaN -> 0, the same on
// every CPU), and the plain conversions.
#include "augment/dataset/dtype.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace augmentd::dataset {
namespace {

TEST(DTypeConvert, MisalignedSourceAndDestination) {
  const float values[] = {1.5f, -2.25f, 3.0f, 100.75f};
  std::vector<unsigned char> src(sizeof(values) + 1), dst(4 * sizeof(double) + 3);
  std::memcpy(src.data() + 1, values, sizeof(values));
  ConvertElements(DType::kFloat32, src.data() + 1, DType::kFloat64, dst.data() + 3, 4);
  for (int i = 0; i < 4; ++i) {
    double d;
    std::memcpy(&d, dst.data() + 3 + i * sizeof(double), sizeof(double));
    EXPECT_EQ(d, static_cast<double>(values[i]));
  }
}

TEST(DTypeConvert, FloatToIntegerIsDefinedEverywhere) {
  // Integral values convert like integers (wrap), fractions truncate toward zero, huge values saturate, NaN is 0.
  const float values[] = {300.f, -300.f, 127.9f, -128.5f, std::nanf(""), 5.7f, -5.7f,
                          std::numeric_limits<float>::infinity(), -1e30f};
  int8_t out[9];
  ConvertElements(DType::kFloat32, values, DType::kInt8, out, 9);
  EXPECT_EQ(out[0], static_cast<int8_t>(300 - 256));
  EXPECT_EQ(out[1], static_cast<int8_t>(-300 + 256));
  EXPECT_EQ(out[2], 127);
  EXPECT_EQ(out[3], -128);
  EXPECT_EQ(out[4], 0);
  EXPECT_EQ(out[5], 5);
  EXPECT_EQ(out[6], -5);
  EXPECT_EQ(out[7], 127);
  EXPECT_EQ(out[8], -128);
  uint8_t u[2];
  const double d[] = {-1.0, 256.0};
  ConvertElements(DType::kFloat64, d, DType::kUInt8, u, 2);
  EXPECT_EQ(u[0], 255);  // the segmentation pad -1 in a uint8 output, as an integer conversion gives
  EXPECT_EQ(u[1], 0);
}

TEST(DTypeConvert, IntegerConversionsAreThePlainOnes) {
  const int16_t values[] = {-1, 255, 256, 32767};
  int32_t wide[4];
  ConvertElements(DType::kInt16, values, DType::kInt32, wide, 4);
  EXPECT_EQ(wide[0], -1);
  EXPECT_EQ(wide[3], 32767);
  float f[4];
  ConvertElements(DType::kInt16, values, DType::kFloat32, f, 4);
  EXPECT_EQ(f[1], 255.f);
}

TEST(DTypeFill, Misaligned) {
  std::vector<unsigned char> buf(3 * sizeof(int16_t) + 1);
  FillElements(DType::kInt16, buf.data() + 1, 3, -1.0);
  for (int i = 0; i < 3; ++i) {
    int16_t v;
    std::memcpy(&v, buf.data() + 1 + i * sizeof(int16_t), sizeof(int16_t));
    EXPECT_EQ(v, -1);
  }
  uint64_t big;
  FillElements(DType::kInt64, &big, 1, 1e300);
  EXPECT_EQ(static_cast<int64_t>(big), std::numeric_limits<int64_t>::max());
  float f[2];
  FillElements(DType::kFloat32, f, 2, -1.0);
  EXPECT_EQ(f[0], -1.f);
  EXPECT_EQ(f[1], -1.f);
}

}  // namespace
}  // namespace augmentd::dataset
