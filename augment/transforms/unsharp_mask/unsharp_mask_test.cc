#include "augment/transforms/unsharp_mask/unsharp_mask.h"

#include <cmath>

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(UnsharpMask, ConstantStaysAndDrawsFollowSigma) {
  SampleData s = testing::RandomSample(1, {5, 6, 7});
  std::fill(s.image.begin(), s.image.end(), 3.0f);
  auto t = UnsharpMaskTransform::FromJson({{"sigma", 0.8}, {"unsharp_amount", 1.5}});
  ASSERT_TRUE(t.ok()) << t.status();
  auto p = (*t)->ParamsFromJson({{"sigma", {0.3, 0.6, 0.9}}}, {1, {5, 6, 7}, 1});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  for (float v : s.image) EXPECT_NEAR(v, 3.0f, 1e-5f);  // blur of a constant is the constant
  for (uint64_t k = 0; k < 40; ++k) {
    RandomStream rng(3, k, 0);
    DrawContext ctx{rng, 3, k, 0};
    auto d = (*t)->Draw(ctx, {1, {5, 6, 7}, 1});
    ASSERT_TRUE(d.ok());
    for (float sg : static_cast<const UnsharpMaskParams&>(**d).sigma) {
      EXPECT_GE(sg, 0.0f);
      EXPECT_LT(sg, 0.8f);
    }
  }
}

TEST(UnsharpMask, ZeroSigmaLeavesTheChannel) {
  SampleData s = testing::RandomSample(1, {4, 4, 4});
  const std::vector<float> x = s.image;
  auto t = UnsharpMaskTransform::FromJson({});
  auto p = (*t)->ParamsFromJson({{"sigma", {0.0, 0.5, 0.5}}}, {1, {4, 4, 4}, 1});
  ASSERT_TRUE((*t)->Apply(**p, s).ok());  // 0/0 in the kernel: NaN, AugLab's guard keeps the input
  EXPECT_EQ(s.image, x);
  EXPECT_EQ((*t)->ParamsFromJson({{"sigma", {0.5}}}, {1, {4, 4, 4}, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
