#include "augment/transforms/motion/motion.h"

#include <cmath>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(Motion, NoMotionIsIdentity) {
  auto t = MotionTransform::FromJson({});
  ASSERT_TRUE(t.ok()) << t.status();
  SampleData s = testing::RandomSample(2, {8, 9, 10});
  const std::vector<float> x = s.image;
  auto p = (*t)->ParseParams({{"degrees", {{0, 0, 0}, {0, 0, 0}}}, {"translation", {{0, 0, 0}, {0, 0, 0}}},
                              {"times", {0.3, 0.6}}},
                             s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(s.image[i], x[i], 1e-5);
}

TEST(Motion, IntegerTranslationShiftsWithMinimumFill) {
  // TorchIO's LPS flip: a translation of +1 along x reads input index i + D·t = i − 1 (D = diag(−1, −1, 1)).
  const std::array<int64_t, 3> s = {4, 3, 2};
  std::vector<float> in(24), out(24);
  for (int i = 0; i < 24; ++i) in[static_cast<size_t>(i)] = static_cast<float>(i + 1);
  MotionResample(in.data(), s, MotionIndexAffine({0, 0, 0}, {1, 0, 0}), -5.f, out.data());
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t r = 0; r < 6; ++r)
      EXPECT_EQ(out[static_cast<size_t>(i * 6 + r)], i == 0 ? -5.f : in[static_cast<size_t>((i - 1) * 6 + r)]);
  MotionResample(in.data(), s, MotionIndexAffine({0, 0, 0}, {0, 0, 0.5}), -5.f, out.data());  // half voxel in z
  EXPECT_FLOAT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -5.f);       // reads z = 1.5 = n − 0.5: outside ITK's buffer [−0.5, n − 0.5)
  MotionResample(in.data(), s, MotionIndexAffine({0, 0, 0}, {0, 0, 0.25}), -5.f, out.data());
  EXPECT_FLOAT_EQ(out[1], 2.f);  // z = 1.25: inside, upper neighbour clamped to the last voxel
}

TEST(Motion, RotationIsOrthonormalAndSegmentsFollowTorchio) {
  const MotionAffine a = MotionIndexAffine({10, 20, 30}, {1, 2, 3});
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      double d = 0;
      for (int k = 0; k < 3; ++k) d += a.m[k * 3 + i] * a.m[k * 3 + j];
      EXPECT_NEAR(d, i == j ? 1.0 : 0.0, 1e-12);
    }
  EXPECT_DOUBLE_EQ(a.b[0], -1);
  EXPECT_DOUBLE_EQ(a.b[2], 3);
  MotionParams p;
  p.times = {0.3f, 0.7f};
  const auto seg = MotionSegments(p, 10);
  ASSERT_EQ(seg.size(), 3u);
  EXPECT_EQ(seg[0].image, 1);  // input swapped into the slot holding t = 0.5
  EXPECT_EQ(seg[1].image, 0);
  EXPECT_EQ(seg[1].lo, 3);
  EXPECT_EQ(seg[1].hi, 7);
  EXPECT_EQ(seg[2].hi, 10);
  p.times = {0.2f, 0.4f};
  EXPECT_EQ(MotionSegments(p, 10)[2].image, 0);
}

TEST(Motion, DrawsTorchioRangesAndTimes) {
  auto t = MotionTransform::FromJson({{"degrees", 5}, {"translation", {-2, 3}}, {"num_transforms", 3}});
  ASSERT_TRUE(t.ok()) << t.status();
  for (uint64_t i = 0; i < 40; ++i) {
    auto p = testing::DrawFor(**t, SampleLayout{1, {8, 8}, 0}, 4, i);
    const auto& m = static_cast<const MotionParams&>(*p);
    ASSERT_EQ(m.times.size(), 3u);
    for (int k = 0; k < 3; ++k) {
      EXPECT_NEAR(m.times[static_cast<size_t>(k)], 0.25 * (k + 1), 0.075 + 1e-6);
      EXPECT_EQ(m.degrees[static_cast<size_t>(k)][0], 0);  // 2D: rotation about the last axis only
      EXPECT_TRUE(std::abs(m.degrees[static_cast<size_t>(k)][2]) <= 5);
      EXPECT_EQ(m.translation[static_cast<size_t>(k)][2], 0);
      EXPECT_TRUE(m.translation[static_cast<size_t>(k)][0] >= -2 && m.translation[static_cast<size_t>(k)][0] <= 3);
    }
  }
  EXPECT_FALSE(MotionTransform::FromJson({{"num_transforms", 0}}).ok());
  EXPECT_FALSE(MotionTransform::FromJson({{"image_interpolation", "bspline"}}).ok());
}

}  // namespace
}  // namespace augmentd
