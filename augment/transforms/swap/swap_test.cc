#include "augment/transforms/swap/swap.h"

#include "augment/testing/test_util.h"

namespace augmentd {
namespace {

TEST(Swap, DrawsTorchioCornersDistinctAndInRange) {
  auto t = SwapTransform::FromJson({{"patch_size", {3, 4, 2}}, {"num_iterations", 50}});
  ASSERT_TRUE(t.ok()) << t.status();
  for (uint64_t sample = 0; sample < 20; ++sample) {
    auto p = testing::DrawFor(**t, {1, {8, 6, 3}, 0}, 5, sample);
    const auto& sp = static_cast<const SwapParams&>(*p);
    ASSERT_EQ(sp.locations.size(), 50u);
    for (const auto& l : sp.locations) {
      EXPECT_NE(l[0], l[1]);
      for (const auto& c : l) {
        // torch.randint(size − patch): the last corner size − patch is never drawn, an extent of 0 gives 0.
        EXPECT_TRUE(c[0] >= 0 && c[0] < 5) << c[0];
        EXPECT_TRUE(c[1] >= 0 && c[1] < 2) << c[1];
        EXPECT_TRUE(c[2] >= 0 && c[2] < 1) << c[2];
      }
    }
  }
}

TEST(Swap, SwapsDisjointPatchesInEveryChannelAndLeavesLabels) {
  SampleData s = testing::RandomSample(2, {6, 5, 4});
  const SampleData x = s;
  auto t = SwapTransform::FromJson({{"patch_size", {2, 2, 3}}, {"num_iterations", 1}});
  ASSERT_TRUE(t.ok());
  auto p = (*t)->ParamsFromJson({{"locations", {{{0, 0, 0}, {3, 2, 1}}}}}, s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  auto at = [](const SampleData& d, int64_t c, int64_t i, int64_t j, int64_t k) {
    return d.image[static_cast<size_t>(((c * 6 + i) * 5 + j) * 4 + k)];
  };
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 6; ++i)
      for (int64_t j = 0; j < 5; ++j)
        for (int64_t k = 0; k < 4; ++k) {
          const bool in_a = i < 2 && j < 2 && k < 3, in_b = i >= 3 && i < 5 && j >= 2 && j < 4 && k >= 1;
          float want = at(x, c, i, j, k);
          if (in_a) want = at(x, c, i + 3, j + 2, k + 1);
          if (in_b) want = at(x, c, i - 3, j - 2, k - 1);
          EXPECT_EQ(at(s, c, i, j, k), want) << c << " " << i << " " << j << " " << k;
        }
  EXPECT_EQ(s.seg, x.seg);
}

TEST(Swap, OverlappingPatchesCopyInCOrder) {
  // 1-D row of 6 (shape 1×1×6), patch 4, first at 0, second at 1: second ← first element by element (so the copy
  // reads values it already wrote), then first ← second's values before the step.
  SampleData s;
  s.channels = 1;
  s.shape = {1, 1, 6};
  s.image = {0, 1, 2, 3, 4, 5};
  auto t = SwapTransform::FromJson({{"patch_size", {1, 1, 4}}, {"num_iterations", 1}});
  ASSERT_TRUE(t.ok());
  auto p = (*t)->ParamsFromJson({{"locations", {{{0, 0, 0}, {0, 0, 1}}}}}, s.layout());
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_TRUE((*t)->Apply(**p, s).ok());
  // after the first copy: 0 0 0 0 0 5; then [0, 4) ← old [1, 5) = 1 2 3 4
  EXPECT_EQ(s.image, (std::vector<float>{1, 2, 3, 4, 0, 5}));
}

TEST(Swap, RejectsPatchesThatDoNotFit) {
  auto t = SwapTransform::FromJson({{"patch_size", 15}});
  ASSERT_TRUE(t.ok());
  RandomStream rng(1, 0, 0);
  DrawContext ctx{rng, 1, 0, 0};
  EXPECT_EQ((*t)->Draw(ctx, {1, {10, 20, 20}, 0}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*t)->Draw(ctx, {1, {16, 16, 16}, 0}).status().code(), absl::StatusCode::kInvalidArgument);  // one place
  EXPECT_TRUE((*t)->Draw(ctx, {1, {17, 16, 16}, 0}).ok());
  EXPECT_EQ((*t)->ParamsFromJson({{"locations", {{{0, 0, 0}, {3, 0, 0}}}}}, {1, {17, 16, 16}, 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(SwapTransform::FromJson({{"num_iterations", -1}}).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace augmentd
