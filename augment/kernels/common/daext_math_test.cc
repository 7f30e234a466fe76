// Host-only checks of daext_math.h (the per-voxel math the DAExt CUDA stages and the CPU transforms clamp,
// auglab_bias_field, edge_convolution, unsharp_mask share): definitions against direct formulas and known values.
#include "augment/kernels/common/daext_math.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "augment/transforms/auglab_bias_field/auglab_bias_field.h"
#include "gtest/gtest.h"

namespace augmentd::cuda::daext {
namespace {

TEST(DaextMath, QuantileOfSortedValuesIsTorchLinear) {
  // 0, 1, ..., 10: the linear quantile is q·10 exactly for these q (rank and lerp are exact in float32).
  std::vector<float> v(11);
  for (int i = 0; i < 11; ++i) v[i] = static_cast<float>(i);
  for (float q : {0.0f, 0.25f, 0.5f, 0.75f, 1.0f}) {
    int64_t lo = -1, hi = -1;
    float w = -1;
    QuantileRank(q, 11, lo, hi, w);
    EXPECT_GE(lo, 0);
    EXPECT_LE(hi, 10);
    EXPECT_LE(hi - lo, 1);
    EXPECT_FLOAT_EQ(Lerp(v[lo], v[hi], w), q * 10) << q;
  }
  int64_t lo = 0, hi = 0;
  float w = 0;
  QuantileRank(1.0f, 1, lo, hi, w);  // one value: both ranks 0
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 0);
  EXPECT_EQ(w, 0.0f);
  QuantileRank(0.3f, 5, lo, hi, w);  // rank 1.2
  EXPECT_EQ(lo, 1);
  EXPECT_EQ(hi, 2);
  EXPECT_NEAR(w, 0.2f, 1e-6f);
  EXPECT_EQ(Lerp(2.0f, 4.0f, 0.0f), 2.0f);
  EXPECT_EQ(Lerp(2.0f, 4.0f, 1.0f), 4.0f);  // the w >= 0.5 branch ends exactly at b
}

TEST(DaextMath, ClampToIsMinOfMax) {
  std::mt19937 gen(3);
  std::normal_distribution<float> n(0, 3);
  for (int i = 0; i < 1000; ++i) {
    const float x = n(gen), a = n(gen), b = a + std::fabs(n(gen));
    EXPECT_EQ(ClampTo(x, a, b), std::min(std::max(x, a), b));
  }
}

TEST(DaextMath, LinspaceIsSymmetricAndHitsTheEnds) {
  for (int64_t n : {2, 3, 5, 8, 13, 128}) {
    EXPECT_EQ(LinspaceAt(-1, 1, n, 0), -1.0f);
    EXPECT_EQ(LinspaceAt(-1, 1, n, n - 1), 1.0f);
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(LinspaceAt(-1, 1, n, i), -1.0 + 2.0 * i / (n - 1), 1e-6) << n << " " << i;
      EXPECT_EQ(LinspaceAt(-1, 1, n, i), -LinspaceAt(-1, 1, n, n - 1 - i)) << n << " " << i;  // ATen's two halves
    }
  }
  EXPECT_EQ(LinspaceAt(-1, 1, 1, 0), -1.0f);
}

TEST(DaextMath, BiasExponentIsThePolynomialInAuglabOrder) {
  for (int dims : {2, 3})
    for (int64_t order : {0, 1, 3}) {
      const int64_t count = AuglabBiasFieldTransform::NumCoefficients(order, dims);
      std::vector<float> c(count);
      for (int64_t k = 0; k < count; ++k) c[k] = 0.1f * static_cast<float>(k + 1);
      const float x = 0.3f, y = -0.7f, z = 0.9f;
      double want = 0;
      int64_t k = 0;
      for (int64_t xo = 0; xo <= order; ++xo)
        for (int64_t yo = 0; yo <= order - xo; ++yo)
          for (int64_t zo = 0; zo <= (dims == 3 ? order - xo - yo : 0); ++zo, ++k)
            want += c[k] * std::pow(x, xo) * std::pow(y, yo) * (dims == 3 ? std::pow(z, zo) : 1.0);
      EXPECT_EQ(k, count);
      EXPECT_NEAR(BiasExponent(c.data(), order, dims == 3, x, y, z), want, 1e-5) << dims << " " << order;
    }
  EXPECT_NEAR(BiasField(0.5f, false), std::exp(0.5f), 1e-6f);
  EXPECT_NEAR(BiasField(0.5f, true), 1.0f / std::exp(0.5f), 1e-6f);
}

TEST(DaextMath, EdgeKernels) {
  float k[3][27];
  ASSERT_EQ(EdgeKernels(false, k), 1);
  float sum = 0;
  for (float w : k[0]) sum += w;
  EXPECT_EQ(sum, 0.0f);  // Laplace: 26 − 26
  EXPECT_EQ(k[0][13], 26.0f);
  ASSERT_EQ(EdgeKernels(true, k), 3);
  // Scharr kernel_x differentiates along axis 2: +w at c = 0, −w at c = 2; kernel_z along axis 0.
  EXPECT_EQ(k[0][(1 * 3 + 1) * 3 + 0], 100.0f);
  EXPECT_EQ(k[0][(1 * 3 + 1) * 3 + 2], -100.0f);
  EXPECT_EQ(k[1][(1 * 3 + 0) * 3 + 1], 100.0f);
  EXPECT_EQ(k[2][(2 * 3 + 1) * 3 + 1], -100.0f);
  EXPECT_EQ(k[2][(0 * 3 + 0) * 3 + 0], 9.0f);
  for (int a = 0; a < 3; ++a) {
    float s = 0;
    for (float w : k[a]) s += w;
    EXPECT_EQ(s, 0.0f) << a;
  }
  EXPECT_EQ(EdgeAccumulate(1.0f, -2.0f, true), 3.0f);
  EXPECT_EQ(EdgeAccumulate(1.0f, -2.0f, false), -1.0f);
}

TEST(DaextMath, UnsharpKernelIsNormalisedAndUncentred) {
  const float sigma[3] = {0.5f, 1.0f, 2.0f};
  float k[27];
  UnsharpKernel(sigma, k);
  double sum = 0;
  for (float w : k) sum += w;
  EXPECT_NEAR(sum, 1.0, 1e-6);
  // Taps t = 0, 1, 2 (AugLab's arange(3)): the weight decreases along each axis from index 0.
  EXPECT_GT(k[0], k[(1 * 3 + 0) * 3 + 0]);
  EXPECT_GT(k[(1 * 3 + 0) * 3 + 0], k[(2 * 3 + 0) * 3 + 0]);
  EXPECT_GT(k[0], k[2]);
  const float zero[3] = {0.0f, 1.0f, 1.0f};
  UnsharpKernel(zero, k);
  EXPECT_TRUE(std::isnan(k[0]));  // σ = 0: 0/0 (the transforms' guard then leaves the channel as it was)
  EXPECT_EQ(Unsharp(2.0f, 1.0f, 1.5f), 3.5f);
}

}  // namespace
}  // namespace augmentd::cuda::daext
