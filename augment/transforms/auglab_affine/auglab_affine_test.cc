#include "augment/transforms/auglab_affine/auglab_affine.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "augment/registry.h"
#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

std::shared_ptr<const Transform> Make(const nlohmann::json& cfg = nlohmann::json::object()) {
  auto t = TransformFromJson("auglab_affine", cfg);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : nullptr;
}

TEST(AuglabAffine, IdentityParamsLeaveTheSampleUnchanged) {
  auto t = Make();
  ASSERT_NE(t, nullptr);
  SampleData s = testing::RandomSample(2, {5, 6, 7});
  const SampleData orig = s;
  AuglabAffineParams p;  // angles 0, scale 1, translations 0, shear 0
  ASSERT_TRUE(t->Apply(p, s).ok());
  EXPECT_EQ(s.image, orig.image);
  EXPECT_EQ(s.seg, orig.seg);
}

// An integer translation moves every channel and the labels by whole voxels; what comes in is 0 (zero padding).
TEST(AuglabAffine, IntegerTranslationShiftsWithZeroPadding) {
  auto t = Make();
  ASSERT_NE(t, nullptr);
  SampleData s = testing::RandomSample(2, {4, 5, 6}, 1, 1, 3);  // labels 1..3: a 0 can only come from padding
  const SampleData orig = s;
  AuglabAffineParams p;
  p.translations = {2, 0, -1};  // x (W) +2, z (D) −1
  ASSERT_TRUE(t->Apply(p, s).ok());
  for (int c = 0; c < 2; ++c)
    for (int z = 0; z < 4; ++z)
      for (int y = 0; y < 5; ++y)
        for (int x = 0; x < 6; ++x) {
          const size_t o = static_cast<size_t>(((c * 4 + z) * 5 + y) * 6 + x);
          const int sx = x - 2, sz = z + 1;
          const bool inside = sx >= 0 && sz < 4;
          const float want = inside ? orig.image[static_cast<size_t>(((c * 4 + sz) * 5 + y) * 6 + sx)] : 0.0f;
          ASSERT_NEAR(s.image[o], want, 1e-5f * (1 + std::abs(want))) << c << " " << z << " " << y << " " << x;
          if (c == 0) {
            const int16_t lw = inside ? orig.seg[static_cast<size_t>((sz * 5 + y) * 6 + sx)] : int16_t{0};
            ASSERT_EQ(s.seg[o], lw) << z << " " << y << " " << x;
          }
        }
}

// roll = 90° (rotation about z, kornia's sign: R(−angle)): output (x, y) samples input (n − 1 − y, x) on a square
// slice, about the centre.
TEST(AuglabAffine, RollOfNinetyDegreesPermutesTheSlice) {
  auto t = Make();
  ASSERT_NE(t, nullptr);
  const int n = 7;
  SampleData s = testing::RandomSample(1, {3, n, n});
  const SampleData orig = s;
  AuglabAffineParams p;
  p.angles = {0, 0, 90};
  ASSERT_TRUE(t->Apply(p, s).ok());
  for (int z = 0; z < 3; ++z)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const size_t o = static_cast<size_t>((z * n + y) * n + x);
        const size_t i = static_cast<size_t>((z * n + x) * n + (n - 1 - y));
        EXPECT_NEAR(s.image[o], orig.image[i], 1e-3f) << z << " " << y << " " << x;
        EXPECT_EQ(s.seg[o], orig.seg[i]) << z << " " << y << " " << x;
      }
}

// The source map inverts kornia's forward matrix (forward of a source point gives the output point back), shear and
// all; a one-voxel axis samples index 0.
TEST(AuglabAffine, SourceMapInvertsTheForwardMatrix) {
  AuglabAffineParams p;
  p.angles = {7, -4, 9};
  p.scale = {0.8, 1.2, 1.05};
  p.translations = {1.5, -2, 0.25};
  p.shear = {5, -3, 8, 2, -6, 4};
  const std::array<int64_t, 3> shape{9, 10, 11};
  const std::array<double, 16> f = AuglabAffineForward(p, shape);
  auto m = AuglabAffineSourceMap(p, shape);
  ASSERT_TRUE(m.ok()) << m.status();
  for (const std::array<double, 3>& q : {std::array<double, 3>{0, 0, 0}, {10, 9, 8}, {3.5, 2, 7}}) {
    double src[3];
    for (int r = 0; r < 3; ++r)
      src[r] = (*m)[r * 4] * q[0] + (*m)[r * 4 + 1] * q[1] + (*m)[r * 4 + 2] * q[2] + (*m)[r * 4 + 3];
    for (int r = 0; r < 3; ++r) {
      const double back = f[r * 4] * src[0] + f[r * 4 + 1] * src[1] + f[r * 4 + 2] * src[2] + f[r * 4 + 3];
      EXPECT_NEAR(back, q[static_cast<size_t>(r)], 1e-4) << r;
    }
  }
  // The shear part is not the identity (kornia's matrix differs from F alone).
  AuglabAffineParams no_shear = p;
  no_shear.shear = {0, 0, 0, 0, 0, 0};
  EXPECT_GT(std::abs(AuglabAffineForward(no_shear, shape)[1] - f[1]), 1e-3);
  auto flat = AuglabAffineSourceMap(p, {1, 10, 11});
  ASSERT_TRUE(flat.ok());
  for (int k = 8; k < 12; ++k) EXPECT_EQ((*flat)[k], 0.0f);
}

TEST(AuglabAffine, NearestImageKeepsInputValues) {
  auto t = Make({{"resample", "nearest"}});
  ASSERT_NE(t, nullptr);
  SampleData s = testing::RandomSample(1, {6, 7, 8});
  const std::set<float> values(s.image.begin(), s.image.end());
  auto p = testing::DrawFor(*t, s.layout(), 3);
  ASSERT_NE(p, nullptr);
  ASSERT_TRUE(t->Apply(*p, s).ok());
  int moved = 0;
  for (float v : s.image) {
    EXPECT_TRUE(v == 0.0f || values.count(v) == 1) << v;
    moved += v == 0.0f;
  }
  EXPECT_GT(moved, 0);  // the draw moved something out of view (translate 0.1, rotations up to 10°)
}

// AffineGenerator3D's ranges: angles, scales and shears uniform in their ranges, translations (2u − 1)·f·size.
TEST(AuglabAffine, DrawsWithinTheRanges) {
  auto t = Make({{"degrees", {-10, 10, 0, 5, -20, -10}}, {"translate", {0.1, 0.2, 0.0}},
                 {"scale", {0.7, 1.4, 1, 1, 0.9, 1.1}}});
  ASSERT_NE(t, nullptr);
  const SampleLayout layout{1, {10, 20, 30}, 1};  // D, H, W
  const int n = 4000;
  double mean_angle[3] = {0, 0, 0}, mean_scale0 = 0, max_t[3] = {0, 0, 0}, mean_abs_t0 = 0;
  for (int k = 0; k < n; ++k) {
    auto p = testing::DrawFor(*t, layout, 2, static_cast<uint64_t>(k));
    ASSERT_NE(p, nullptr);
    const auto& a = static_cast<const AuglabAffineParams&>(*p);
    for (int i = 0; i < 3; ++i) {
      mean_angle[i] += a.angles[i] / n;
      max_t[i] = std::max(max_t[i], std::abs(a.translations[i]));
    }
    mean_scale0 += a.scale[0] / n;
    mean_abs_t0 += std::abs(a.translations[0]) / n;
    EXPECT_EQ(a.scale[1], 1.0);
    for (double sh : a.shear) EXPECT_LE(std::abs(sh), 10.0);
  }
  EXPECT_NEAR(mean_angle[0], 0, 0.4);
  EXPECT_NEAR(mean_angle[1], 2.5, 0.2);
  EXPECT_NEAR(mean_angle[2], -15, 0.2);
  EXPECT_NEAR(mean_scale0, 1.05, 0.01);
  EXPECT_LE(max_t[0], 3.0);   // 0.1 · W
  EXPECT_GT(max_t[0], 2.9);
  EXPECT_LE(max_t[1], 4.0);   // 0.2 · H
  EXPECT_EQ(max_t[2], 0.0);
  EXPECT_NEAR(mean_abs_t0, 1.5, 0.1);
}

TEST(AuglabAffine, ConfigParamsAndErrors) {
  auto t = Make();
  ASSERT_NE(t, nullptr);
  EXPECT_TRUE(t->UsesLabels());
  EXPECT_EQ(t->ConfigToJson()["resample"], "bilinear");
  for (const nlohmann::json& bad :
       {nlohmann::json({{"degrees", {1, 2}}}), nlohmann::json({{"degrees", {10, -10, 0, 0, 0, 0}}}),
        nlohmann::json({{"scale", {0, 1, 1, 1, 1, 1}}}), nlohmann::json({{"translate", {0.1, 0.1}}}),
        nlohmann::json({{"translate", {1.5, 0, 0}}}),
        nlohmann::json({{"shear", {-95, 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}),
        nlohmann::json({{"resample", "bicubic"}}), nlohmann::json({{"degree", 10}})}) {
    EXPECT_EQ(TransformFromJson("auglab_affine", bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad.dump();
  }
  const SampleLayout layout{1, {4, 4, 4}, 1};
  const nlohmann::json pj = {{"angles", {1, 2, 3}}, {"scale", {1, 1.1, 0.9}}, {"translations", {0.5, 0, -1}},
                             {"shear", {1, 2, 3, 4, 5, 6}}};
  auto p = t->ParseParams(pj, layout);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(t->ParamsToJson(**p), pj);
  for (const char* drop : {"angles", "scale", "translations", "shear"}) {
    nlohmann::json bad = pj;
    bad.erase(drop);
    EXPECT_EQ(t->ParseParams(bad, layout).status().code(), absl::StatusCode::kInvalidArgument) << drop;
  }
  nlohmann::json neg = pj;
  neg["scale"] = {1, -1, 1};
  EXPECT_EQ(t->ParseParams(neg, layout).status().code(), absl::StatusCode::kInvalidArgument);
  RandomStream rng(1, 0, 0);
  DrawContext ctx{rng, 1, 0, 0};
  EXPECT_EQ(t->Draw(ctx, {1, {4, 4}, 1}).status().code(), absl::StatusCode::kInvalidArgument);  // 3D only
}

}  // namespace
}  // namespace augmentd
