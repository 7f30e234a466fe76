#include "augment/transforms/rot90/rot90.h"

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(Rot90, MatchesTorchRot90DirectionOnImageAndSeg) {
  auto t = Rot90Transform::Create({RandomScalar::Constant(1), {0, 1, 2, 3}, {0, 1, 2}});
  ASSERT_TRUE(t.ok());
  SampleData s = testing::RandomSample(1, {3, 3, 2});
  const std::vector<float> x = s.image;
  const std::vector<int16_t> g = s.seg;
  Rot90Params p;
  p.num_rot_per_combination = {1};
  p.axis_combinations = {{{1, 2}}};
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  // torch.rot90(k=1, dims=(a, b)): out[a=i, b=j] = x[a=j, b=S−1−i].
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int z = 0; z < 2; ++z) {
        EXPECT_EQ(s.image[(i * 3 + j) * 2 + z], x[(j * 3 + (2 - i)) * 2 + z]);
        EXPECT_EQ(s.seg[(i * 3 + j) * 2 + z], g[(j * 3 + (2 - i)) * 2 + z]);
      }
  // Four quarter turns are the identity; k=3 undoes k=1.
  p.num_rot_per_combination = {3};
  ASSERT_TRUE((*t)->Apply(p, s).ok());
  EXPECT_EQ(s.image, x);
  p.num_rot_per_combination = {1};
  p.axis_combinations = {{{1, 3}}};  // sizes 3 and 2: would change the shape
  EXPECT_EQ((*t)->Apply(p, s).code(), absl::StatusCode::kInvalidArgument);
}

TEST(Rot90, DrawsUniformPairsAndCounts) {
  auto t = Rot90Transform::Create({RandomScalar::Constant(1), {0, 1, 2, 3}, {0, 1, 2}});
  ASSERT_TRUE(t.ok());
  int pairs[3] = {0, 0, 0}, ks[4] = {0, 0, 0, 0};
  for (uint64_t q = 0; q < 3000; ++q) {
    auto d = testing::DrawFor(**t, {1, {4, 4, 4}, 1}, 6, q);
    const auto& r = static_cast<const Rot90Params&>(*d);
    ASSERT_EQ(r.axis_combinations.size(), 1u);
    const auto& a = r.axis_combinations[0];
    ASSERT_LT(a[0], a[1]);
    ++pairs[a[0] + a[1] - 3];  // (1,2) → 0, (1,3) → 1, (2,3) → 2
    ++ks[r.num_rot_per_combination[0]];
  }
  for (int v : pairs) EXPECT_NEAR(v / 3000.0, 1 / 3.0, 0.04);
  for (int v : ks) EXPECT_NEAR(v / 3000.0, 0.25, 0.04);
}

}  // namespace
}  // namespace augmentd
