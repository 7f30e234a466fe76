#include "augment/transforms/auglab_low_resolution/auglab_low_resolution.h"

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {
using auglab_lowres_internal::KeptBox;
using auglab_lowres_internal::NearestIndex;

std::shared_ptr<const Transform> Make(const nlohmann::json& j) {
  auto t = AuglabLowResolutionTransform::FromJson(j);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

TEST(AuglabLowResolution, NearestIndexIsTorchsLegacyRule) {
  EXPECT_EQ(NearestIndex(3, 7, 7), 3);   // same size: identity
  EXPECT_EQ(NearestIndex(5, 4, 8), 2);   // twice the size: dst >> 1
  EXPECT_EQ(NearestIndex(2, 10, 4), 5);  // floor(2 · 2.5)
  EXPECT_EQ(NearestIndex(3, 10, 4), 7);  // floor(7.5)
  EXPECT_EQ(NearestIndex(4, 3, 7), 1);   // floor(4 · 0.428…) = 1
  EXPECT_EQ(NearestIndex(6, 3, 7), 2);
}

TEST(AuglabLowResolution, KeptBoxRoundsLikePython) {
  EXPECT_EQ(KeptBox(1.0f, 9), (std::array<int64_t, 2>{0, 9}));
  EXPECT_EQ(KeptBox(0.5f, 10), (std::array<int64_t, 2>{2, 5}));   // keep round(5) = 5, start round(0.5·5) = 2 (even)
  EXPECT_EQ(KeptBox(0.8f, 10), (std::array<int64_t, 2>{2, 8}));   // start round(1.6)
  EXPECT_EQ(KeptBox(0.0f, 6), (std::array<int64_t, 2>{0, 1}));    // at least one voxel
}

TEST(AuglabLowResolution, LowresResamplesImageAndLabelsAndZeroesOutsideTheBox) {
  auto t = Make({{"mode", "lowres"}});
  SampleData s = testing::RandomSample(2, {10, 6, 8}, 1, 0, 3, 5);
  const SampleData before = s;
  auto p = t->ParseParams({{"scale", {0.4, 1.0, 0.5}}, {"crop", {0.8, 1.0, 1.0}}}, s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(t->Apply(**p, s).ok());
  // axis 0: 10 → 4 → 10, kept box start 2, 8 voxels; axes 1, 2: 6 → 6, 8 → 4 → 8.
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t a = 0; a < 10; ++a)
      for (int64_t b = 0; b < 6; ++b)
        for (int64_t k = 0; k < 8; ++k) {
          const int64_t i = ((c * 10 + a) * 6 + b) * 8 + k;
          const bool in = a >= 2 && a < 10;
          const int64_t sa = NearestIndex(NearestIndex(a, 4, 10), 10, 4), sk = NearestIndex(NearestIndex(k, 4, 8), 8, 4);
          const int64_t src = ((c * 10 + sa) * 6 + b) * 8 + sk;
          ASSERT_EQ(s.image[i], in ? before.image[src] : 0.0f) << c << " " << a << " " << b << " " << k;
          if (c == 0) {
            ASSERT_EQ(s.seg[i], in ? before.seg[src] : 0) << a << " " << b << " " << k;
          }
        }
}

TEST(AuglabLowResolution, AcqChangesOnlyTheListedChannelsAndNotTheLabels) {
  auto t = Make({{"mode", "acq"}, {"apply_to_channel", {1}}});
  SampleData s = testing::RandomSample(2, {6, 9, 7}, 1, 0, 2, 11);
  const SampleData before = s;
  auto p = t->ParseParams({{"scale", {1.0, 0.4, 1.0}}, {"crop", {1.0, 1.0, 1.0}}}, s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE(t->Apply(**p, s).ok());
  EXPECT_EQ(s.seg, before.seg);
  const int64_t n = s.voxels();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(s.image[i], before.image[i]);
  int changed = 0;
  for (int64_t i = n; i < 2 * n; ++i) changed += s.image[i] != before.image[i];
  EXPECT_GT(changed, n / 2);
  // AugLab's Acq raises for a crop < 1: refused in the config and in injected params.
  EXPECT_EQ(AuglabLowResolutionTransform::FromJson({{"mode", "acq"}, {"crop", {0.8, 1.0}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(t->ParseParams({{"scale", {1, 1, 1}}, {"crop", {1.0, 0.5, 1.0}}}, s.layout()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(AuglabLowResolution, DrawsFollowTheRangesAndOnlyTheListedAxes) {
  auto t = Make({{"mode", "lowres"}, {"scale", {0.2, 1.0}}, {"crop", {0.6, 0.9}}, {"scale_axes", {1}},
                 {"crop_axes", {0, 2}}});
  for (uint64_t sample = 0; sample < 100; ++sample) {
    RandomStream rng(3, sample, 0);
    DrawContext ctx{rng, 3, sample, 0};
    auto p = t->Draw(ctx, {1, {8, 8, 8}, 1});
    ASSERT_TRUE(p.ok()) << p.status();
    const auto& lp = static_cast<const AuglabLowResolutionParams&>(**p);
    EXPECT_EQ(lp.scale[0], 1.0f);
    EXPECT_EQ(lp.scale[2], 1.0f);
    EXPECT_GE(lp.scale[1], 0.2f);
    EXPECT_LE(lp.scale[1], 1.0f);
    EXPECT_EQ(lp.crop[1], 1.0f);
    for (int a : {0, 2}) {
      EXPECT_GE(lp.crop[a], 0.6f);
      EXPECT_LE(lp.crop[a], 0.9f);
    }
  }
  EXPECT_EQ(AuglabLowResolutionTransform::FromJson({{"scale", {0.0, 1.0}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AuglabLowResolutionTransform::FromJson({{"mode", "x"}}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(AuglabLowResolutionTransform::FromJson({{"scale_axes", {3}}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  RandomStream rng(1, 0, 0);
  DrawContext ctx{rng, 1, 0, 0};
  EXPECT_EQ(t->Draw(ctx, {1, {8, 8}, 0}).status().code(), absl::StatusCode::kInvalidArgument);  // 3D only
}

}  // namespace
}  // namespace augmentd
