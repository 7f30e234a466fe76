#include "augment/transforms/elastic_deformation/elastic_deformation.h"

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(ElasticDeformation, ZeroGridIsIdentity) {
  SampleData s = testing::RandomSample(2, {9, 8, 7}, 1, 0, 3);
  const SampleData x = s;
  auto t = ElasticDeformationTransform::FromJson({{"num_control_points", 5}});
  ASSERT_TRUE(t.ok()) << t.status();
  auto p = (*t)->ParamsFromJson({{"control_points", std::vector<double>(5 * 5 * 5 * 3, 0.0)}}, s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  EXPECT_EQ(s.image, x.image);
  EXPECT_EQ(s.seg, x.seg);
}

TEST(ElasticDeformation, UniformGridShiftsByTheDisplacementInLps) {
  // Every node displaced by (0, 0, 1) (LPS z = index axis 2, sign kept): B-spline weights sum to 1 inside the
  // domain, so out[i, j, k] = in[i, j, k + 1]; the last plane samples outside → the channel minimum.
  SampleData s = testing::RandomSample(1, {5, 6, 7}, 1, 1, 3);
  const SampleData x = s;
  auto t = ElasticDeformationTransform::FromJson({{"num_control_points", 6}, {"locked_borders", 0}});
  ASSERT_TRUE(t.ok());
  std::vector<double> cp(6 * 6 * 6 * 3, 0.0);
  for (size_t e = 2; e < cp.size(); e += 3) cp[e] = 1.0;
  auto p = (*t)->ParamsFromJson({{"control_points", cp}}, s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  const float mn = *std::min_element(x.image.begin(), x.image.end());
  for (int64_t r = 0; r < 30; ++r)
    for (int64_t k = 0; k < 7; ++k) {
      const size_t e = static_cast<size_t>(r * 7 + k);
      if (k == 6) {
        EXPECT_EQ(s.image[e], mn);
        continue;
      }
      EXPECT_NEAR(s.image[e], x.image[e + 1], 1e-5);
      EXPECT_EQ(s.seg[e], x.seg[e + 1]);
    }
}

TEST(ElasticDeformation, DrawsInRangeWithTorchiosLockedBorders) {
  auto t = ElasticDeformationTransform::FromJson({{"num_control_points", 7}, {"max_displacement", {4, 5, 6}}});
  ASSERT_TRUE(t.ok());
  auto p = testing::DrawFor(**t, {1, {8, 8, 8}, 0}, 3, 1);
  const auto& ep = static_cast<const ElasticDeformationParams&>(*p);
  ASSERT_EQ(ep.control_points.size(), 7u * 7 * 7 * 3);
  int nonzero_z_border = 0;
  for (int64_t x = 0; x < 7; ++x)
    for (int64_t y = 0; y < 7; ++y)
      for (int64_t z = 0; z < 7; ++z)
        for (int64_t d = 0; d < 3; ++d) {
          const float v = ep.control_points[static_cast<size_t>(((x * 7 + y) * 7 + z) * 3 + d)];
          EXPECT_LE(std::abs(v), 4.0f + static_cast<float>(d));
          const bool locked = x < 2 || x > 4 || y < 2 || y > 4;  // grid axes 0 and 1 only (TorchIO)
          if (locked) {
            EXPECT_EQ(v, 0.0f);
          }
          if (!locked && (z < 2 || z > 4) && v != 0) ++nonzero_z_border;
        }
  EXPECT_GT(nonzero_z_border, 0);
  EXPECT_EQ(ElasticDeformationTransform::FromJson({{"num_control_points", 4}}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
