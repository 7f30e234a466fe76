// Host-only checks of auglab_math.h (the per-voxel math the AugLab CUDA stages and CPU transforms share).
#include "augment/kernels/common/auglab_math.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace augmentd::cuda::auglab {
namespace {

// torch.nn.functional.pad(mode="reflect") index of padded position i (−p <= i < n + p, p < n).
int TorchReflect(int i, int n) {
  if (i < 0) return -i;
  if (i >= n) return 2 * (n - 1) - i;
  return i;
}

TEST(AuglabMath, ReflectIndexMatchesTorchAndFoldsLongPads) {
  for (int n = 2; n <= 6; ++n)
    for (int i = -(n - 1); i < 2 * n - 1; ++i) EXPECT_EQ(ReflectIndex(i, n), TorchReflect(i, n)) << n << " " << i;
  EXPECT_EQ(ReflectIndex(-3, 1), 0);
  EXPECT_EQ(ReflectIndex(5, 1), 0);
  // n = 2, pad 3: period 2 → ... 1 0 1 [0 1] 0 1 0
  EXPECT_EQ(ReflectIndex(-3, 2), 1);
  EXPECT_EQ(ReflectIndex(4, 2), 0);
  EXPECT_EQ(ReflectIndex(-5, 3), 1);  // 3-axis: period 4, −5 ≡ 3 → 4 − 3 = 1
}

TEST(AuglabMath, HistcBinAndLookupBinEdges) {
  EXPECT_EQ(HistcBin(0.0f, 0.0f, 10.0f), 0);
  EXPECT_EQ(HistcBin(10.0f, 0.0f, 10.0f), 255);  // the maximum goes to the last bin
  EXPECT_EQ(HistcBin(1.0f, 0.0f, 10.0f), 25);    // 25.6
  EXPECT_EQ(HistcBin(5.0f, 0.0f, 10.0f), 128);
  const float den = LookupDenominator(0.0f, 10.0f);
  EXPECT_EQ(LookupBin(0.0f, 0.0f, den), 0);
  EXPECT_EQ(LookupBin(10.0f, 0.0f, den), 255);  // 256 clamped
  EXPECT_EQ(LookupBin(1.0f, 0.0f, den), 25);
}

TEST(AuglabMath, EqualizationLutByHand) {
  std::vector<uint32_t> counts(kHistBins, 0);
  counts[0] = 3;
  counts[25] = 1;
  counts[255] = 1;
  std::vector<float> lut(kHistBins);
  EqualizationLut(counts.data(), 0.0f, 10.0f, lut.data());
  // cdf_min = 3, cdf_last = 5: lut = (cdf − 3)/2 · 10
  EXPECT_FLOAT_EQ(lut[0], 0.0f);
  EXPECT_FLOAT_EQ(lut[24], 0.0f);
  EXPECT_FLOAT_EQ(lut[25], 5.0f);
  EXPECT_FLOAT_EQ(lut[254], 5.0f);
  EXPECT_FLOAT_EQ(lut[255], 10.0f);
  // Leading empty bins: cdf_min is the first positive cdf, not cdf[0].
  std::vector<uint32_t> c2(kHistBins, 0);
  c2[10] = 2;
  c2[200] = 2;
  EqualizationLut(c2.data(), -1.0f, 1.0f, lut.data());
  EXPECT_FLOAT_EQ(lut[10], -1.0f);
  EXPECT_FLOAT_EQ(lut[200], 1.0f);
}

TEST(AuglabMath, ConvAtMixAndRetain) {
  const int32_t shape[3] = {1, 1, 4};
  const float x[4] = {1, 2, 3, 4};
  float w[27] = {};
  w[13 - 1] = 1.0f;                                        // tap at offset −1 along axis 2 (centre (1, 1, 1) = 13)
  EXPECT_FLOAT_EQ(ConvAt(x, shape, 0, 0, 0, w, 3), 2.0f);  // reflect: x[−1] = x[1]
  EXPECT_FLOAT_EQ(ConvAt(x, shape, 0, 0, 2, w, 3), 2.0f);
  const float w1 = 3.0f;
  EXPECT_FLOAT_EQ(ConvAt(x, shape, 0, 0, 3, &w1, 1), 12.0f);
  EXPECT_FLOAT_EQ(MixConv(2.0f, 10.0f, 0.25f), 8.0f);
  const RetainConsts c = MakeRetain(5.0, 2.0, 1.0, 0.5);
  EXPECT_NEAR(Retain(1.5f, c), 7.0f, 1e-5f);  // (1.5 − 1)/0.5 · 2 + 5
}

TEST(AuglabMath, IntensityFunctions) {
  const float v = 0.37f;
  EXPECT_NEAR(ApplyIntensityFn(kFnLog1p, v), std::log(1.0 + v), 1e-6);
  EXPECT_NEAR(ApplyIntensityFn(kFnSqrt, v), std::sqrt(v), 1e-6);
  EXPECT_NEAR(ApplyIntensityFn(kFnSin, v), std::sin(v), 1e-6);
  EXPECT_NEAR(ApplyIntensityFn(kFnExp, v), std::exp(v), 1e-6);
  EXPECT_NEAR(ApplyIntensityFn(kFnSigmoid, v), 1.0 / (1.0 + std::exp(-v)), 1e-6);
  EXPECT_NEAR(ApplyIntensityFn(kFnSquare, v), v * v, 1e-6);
  EXPECT_NEAR(NormalizeMinMax(3.0f, 1.0f, 5.0f), 2.0 / (4.0 + 1e-5), 1e-6);
  EXPECT_FLOAT_EQ(Inverse(1.5f, 4.0f), 2.5f);
}

TEST(AuglabMath, RegionModesFromCoinsAndLabels) {
  EXPECT_EQ(RegionFromCoins(false, false), kRegionAll);
  EXPECT_EQ(RegionFromCoins(true, true), kRegionAll);
  EXPECT_EQ(RegionFromCoins(true, false), kRegionIn);
  EXPECT_EQ(RegionFromCoins(false, true), kRegionOut);
  for (int32_t label : {-1, 0, 1, 2, 63, 64, 65, 300}) {
    const bool fg = label > 0;
    EXPECT_TRUE(TakesTransformed(label, kRegionAll, 0)) << label;
    EXPECT_EQ(TakesTransformed(label, kRegionIn, kKeepAllLabels), fg) << label;
    EXPECT_EQ(TakesTransformed(label, kRegionOut, kKeepAllLabels), !fg) << label;
  }
  // keep = bit 2 only: label 2 (and 66 = 2 + 64) are the region; label 1 and 3 count as background.
  const uint64_t keep = uint64_t{1} << 2;
  EXPECT_TRUE(TakesTransformed(2, kRegionIn, keep));
  EXPECT_TRUE(TakesTransformed(66, kRegionIn, keep));
  EXPECT_FALSE(TakesTransformed(1, kRegionIn, keep));
  EXPECT_FALSE(TakesTransformed(3, kRegionIn, keep));
  EXPECT_TRUE(TakesTransformed(1, kRegionOut, keep));
  EXPECT_FALSE(TakesTransformed(2, kRegionOut, keep));
  EXPECT_FALSE(TakesTransformed(0, kRegionIn, kKeepAllLabels));  // bit 0 never makes background foreground
}

}  // namespace
}  // namespace augmentd::cuda::auglab
